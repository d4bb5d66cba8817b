//! The P4Runtime service (`p4.v1.P4Runtime`), as bmv2's simple_switch_grpc
//! serves it: the device config is the bmv2 JSON.
use crate::arbitration::{u128_of, Arbiter};
use crate::binding::Binding;
use crate::entities::{self, UpdErr};
use crate::installed::lock;
pub use crate::installed::{Pipeline, PortForm, PreBook, PreWritten};
use crate::proto::google::rpc;
use crate::proto::p4::config::v1::P4Info;
use crate::proto::p4::v1 as p4v1;
use crate::proto::p4::v1::p4_runtime_server::P4Runtime;
use crate::proto::p4::v1::{
    get_forwarding_pipeline_config_request::ResponseType, set_forwarding_pipeline_config_request::Action as CfgAction,
    stream_message_request, stream_message_response, write_request::Atomicity, CapabilitiesRequest,
    CapabilitiesResponse, ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, ReadRequest, ReadResponse, SetForwardingPipelineConfigRequest,
    SetForwardingPipelineConfigResponse, StreamMessageRequest, StreamMessageResponse, WriteRequest, WriteResponse,
};
use pipeline::{Program, State};
use prost::Message;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::{Code, Request, Response, Status, Streaming};

/// The P4Runtime API version this server implements.
pub const API_VERSION: &str = "1.4.0";
/// Entities per ReadResponse message.
const READ_CHUNK: usize = 1000;

/// Where the packet path picks up the live pipeline. The server replaces
/// it on commit; the packet thread checks [`generation`](Self::generation)
/// between batches and takes the new state when it changed.
#[derive(Default)]
pub struct PipelineSlot {
    generation: AtomicU64,
    current: Mutex<Option<Arc<State>>>,
}

impl PipelineSlot {
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
    pub fn current(&self) -> (u64, Option<Arc<State>>) {
        let g = lock(&self.current);
        (self.generation.load(Ordering::Acquire), g.clone())
    }
    pub fn publish(&self, s: Option<Arc<State>>) {
        let mut g = lock(&self.current);
        *g = s;
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// Packets the controller sends (packet-out), for the packet thread.
#[derive(Debug, Clone)]
pub struct PacketOutFrame {
    pub frame: Vec<u8>,
}

#[derive(Default)]
struct Device {
    committed: Option<Arc<Pipeline>>,
    /// Saved by VERIFY_AND_SAVE, realized by COMMIT; Read and Write use it
    /// meanwhile.
    saved: Option<Arc<Pipeline>>,
}

impl Device {
    fn active(&self) -> Option<Arc<Pipeline>> {
        self.saved.clone().or_else(|| self.committed.clone())
    }
}

struct Inner {
    device_id: u64,
    device: Mutex<Device>,
    /// Serializes Writes and pipeline changes.
    write_lock: tokio::sync::Mutex<()>,
    slot: Arc<PipelineSlot>,
    arbiter: Arbiter,
    next_stream: AtomicU64,
    cpu_port: Option<u32>,
    packet_out: Option<mpsc::Sender<PacketOutFrame>>,
    /// Called after a packet-out is queued (wakes the packet thread).
    packet_out_waker: Mutex<Option<Waker>>,
}

/// Wakes the packet thread.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// The P4Runtime gRPC service of one device.
#[derive(Clone)]
pub struct P4RuntimeService {
    inner: Arc<Inner>,
}

/// Builds a pipeline from a ForwardingPipelineConfig (`INVALID_ARGUMENT`
/// when it cannot be realized).
pub fn build_pipeline(config: &ForwardingPipelineConfig) -> Result<Pipeline, Status> {
    let info = config
        .p4info
        .as_ref()
        .ok_or_else(|| Status::invalid_argument("the ForwardingPipelineConfig has no P4Info"))?;
    let pl = build_from_json(&config.p4_device_config, Some(info))?;
    Ok(Pipeline { config: config.clone(), ..pl })
}

/// Builds a pipeline from bmv2 JSON bytes and an optional P4Info.
pub fn build_from_json(json: &[u8], info: Option<&P4Info>) -> Result<Pipeline, Status> {
    if json.is_empty() {
        return Err(Status::invalid_argument(
            "p4_device_config is empty: it must hold the bmv2 JSON produced by p4c-bm2-ss",
        ));
    }
    let text = std::str::from_utf8(json)
        .map_err(|_| Status::invalid_argument("p4_device_config is not UTF-8 bmv2 JSON"))?;
    // (one program per text in the process: a simulated fabric's switches
    // share it and its compiled code; each gets its own state below)
    let program = catch_unwind(|| Program::from_json_shared(text))
        .map_err(|_| Status::internal("the JSON loader failed unexpectedly"))?
        .map_err(|e| Status::invalid_argument(format!("cannot load the bmv2 JSON: {e}")))?;
    let binding = match info {
        Some(i) => Some(Binding::new(i, &program).map_err(|e| Status::invalid_argument(e.to_string()))?),
        None => None,
    };
    let state = Arc::new(State::new(program.clone()));
    Ok(Pipeline {
        program,
        state,
        binding,
        config: ForwardingPipelineConfig {
            p4info: info.cloned(),
            p4_device_config: json.to_vec(),
            cookie: None,
        },
        pre: Mutex::new(PreBook::default()),
    })
}

fn check_device(inner: &Inner, device_id: u64) -> Result<(), Status> {
    if device_id != inner.device_id {
        return Err(Status::not_found(format!(
            "unknown device id {device_id} (this switch is device {})",
            inner.device_id
        )));
    }
    Ok(())
}

impl P4RuntimeService {
    /// `cpu_port` and `packet_out` enable packet-out/in for programs with
    /// controller headers.
    pub fn new(
        device_id: u64,
        slot: Arc<PipelineSlot>,
        cpu_port: Option<u32>,
        packet_out: Option<mpsc::Sender<PacketOutFrame>>,
    ) -> P4RuntimeService {
        P4RuntimeService {
            inner: Arc::new(Inner {
                device_id,
                device: Mutex::new(Device::default()),
                write_lock: tokio::sync::Mutex::new(()),
                slot,
                arbiter: Arbiter::default(),
                next_stream: AtomicU64::new(1),
                cpu_port,
                packet_out,
                packet_out_waker: Mutex::new(None),
            }),
        }
    }

    /// Sets what to call after a packet-out was queued for the packet thread.
    pub fn set_packet_out_waker(&self, w: Waker) {
        *lock(&self.inner.packet_out_waker) = Some(w);
    }

    /// Installs a pipeline given at start-up (`--json`, optional
    /// `--p4info`), as if committed.
    pub fn install(&self, pl: Pipeline) {
        let pl = Arc::new(pl);
        let mut d = lock(&self.inner.device);
        d.committed = Some(pl.clone());
        d.saved = None;
        self.inner.slot.publish(Some(pl.state.clone()));
    }

    /// The committed pipeline, if any.
    pub fn committed(&self) -> Option<Arc<Pipeline>> {
        lock(&self.inner.device).committed.clone()
    }

    /// A tonic server wrapper with generous message limits (device configs
    /// can be large).
    pub fn into_server(self) -> p4v1::p4_runtime_server::P4RuntimeServer<P4RuntimeService> {
        p4v1::p4_runtime_server::P4RuntimeServer::new(self)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20)
    }

    /// Delivers a frame the pipeline sent to the CPU port as a PacketIn to
    /// the primary controller (dropped when there is none).
    pub fn packet_in(&self, frame: &[u8]) -> bool {
        let Some(pl) = self.committed() else { return false };
        let Some(b) = &pl.binding else { return false };
        let Some(h) = &b.packet_in else { return false };
        let Some(pin) = entities::parse_packet_in(h, frame) else { return false };
        let Some(tx) = self.inner.arbiter.primary_tx(self.inner.device_id) else { return false };
        tx.try_send(Ok(StreamMessageResponse { update: Some(stream_message_response::Update::Packet(pin)) }))
            .is_ok()
    }

    fn set_config(&self, req: SetForwardingPipelineConfigRequest) -> Result<(), Status> {
        let inner = &self.inner;
        check_device(inner, req.device_id)?;
        if !inner.arbiter.is_primary(req.device_id, &req.role, u128_of(&req.election_id)) {
            return Err(Status::permission_denied(
                "only the primary controller may set the pipeline (open a StreamChannel and arbitrate first)",
            ));
        }
        let action = CfgAction::try_from(req.action).unwrap_or(CfgAction::Unspecified);
        let need_config = || {
            req.config.as_ref().ok_or_else(|| Status::invalid_argument("no ForwardingPipelineConfig given"))
        };
        match action {
            CfgAction::Unspecified => Err(Status::invalid_argument("action is UNSPECIFIED")),
            CfgAction::Verify => {
                build_pipeline(need_config()?)?;
                Ok(())
            }
            CfgAction::VerifyAndSave => {
                let pl = build_pipeline(need_config()?)?;
                lock(&inner.device).saved = Some(Arc::new(pl));
                Ok(())
            }
            CfgAction::VerifyAndCommit => {
                let pl = Arc::new(build_pipeline(need_config()?)?);
                let mut d = lock(&inner.device);
                d.committed = Some(pl.clone());
                d.saved = None;
                inner.slot.publish(Some(pl.state.clone()));
                log::info!("pipeline committed");
                Ok(())
            }
            CfgAction::Commit => {
                if req.config.is_some() {
                    return Err(Status::invalid_argument("COMMIT takes no config: it realizes the saved one"));
                }
                let mut d = lock(&inner.device);
                let pl = d.saved.take().ok_or_else(|| Status::not_found("no saved config to commit"))?;
                d.committed = Some(pl.clone());
                inner.slot.publish(Some(pl.state.clone()));
                Ok(())
            }
            CfgAction::ReconcileAndCommit => {
                let pl = Arc::new(build_pipeline(need_config()?)?);
                let old = lock(&inner.device).committed.clone();
                if let Some(old) = old {
                    entities::migrate(&old, &pl).map_err(|e| {
                        Status::invalid_argument(format!("cannot preserve the forwarding state: {e}"))
                    })?;
                }
                let mut d = lock(&inner.device);
                d.committed = Some(pl.clone());
                d.saved = None;
                inner.slot.publish(Some(pl.state.clone()));
                Ok(())
            }
        }
    }

    fn write_sync(&self, req: &WriteRequest) -> Result<(), Status> {
        let inner = &self.inner;
        check_device(inner, req.device_id)?;
        if !inner.arbiter.is_primary(req.device_id, &req.role, u128_of(&req.election_id)) {
            return Err(Status::permission_denied(
                "not the primary controller for this device and role (election id does not match)",
            ));
        }
        let pl = lock(&inner.device)
            .active()
            .ok_or_else(|| Status::failed_precondition("no forwarding pipeline config has been set"))?;
        let Some(binding) = &pl.binding else {
            return Err(Status::failed_precondition(
                "the pipeline was loaded without a P4Info: push one with SetForwardingPipelineConfig",
            ));
        };
        match Atomicity::try_from(req.atomicity) {
            Ok(Atomicity::ContinueOnError) => {}
            Ok(Atomicity::RollbackOnError) | Ok(Atomicity::DataplaneAtomic) => {
                return Err(Status::unimplemented("only CONTINUE_ON_ERROR atomicity is supported"))
            }
            Err(_) => return Err(Status::invalid_argument(format!("unknown atomicity {}", req.atomicity))),
        }
        let mut results: Vec<Result<(), UpdErr>> = Vec::with_capacity(req.updates.len());
        for u in &req.updates {
            let r = catch_unwind(AssertUnwindSafe(|| entities::apply_update(&pl, binding, u)))
                .unwrap_or_else(|_| Err(UpdErr::new(Code::Internal, "internal error applying this update")));
            if let Err(e) = &r {
                log::debug!("write update failed: {:?} {}", e.code, e.msg);
            }
            results.push(r);
        }
        if results.iter().all(|r| r.is_ok()) {
            return Ok(());
        }
        Err(batch_status(&results))
    }

    fn read_sync(&self, req: &ReadRequest) -> Result<Vec<p4v1::Entity>, Status> {
        let inner = &self.inner;
        check_device(inner, req.device_id)?;
        let pl = lock(&inner.device)
            .active()
            .ok_or_else(|| Status::failed_precondition("no forwarding pipeline config has been set"))?;
        let Some(binding) = &pl.binding else {
            return Err(Status::failed_precondition(
                "the pipeline was loaded without a P4Info: push one with SetForwardingPipelineConfig",
            ));
        };
        let mut out = Vec::new();
        for e in &req.entities {
            catch_unwind(AssertUnwindSafe(|| entities::read_entity(&pl, binding, e, &mut out)))
                .unwrap_or_else(|_| Err(UpdErr::new(Code::Internal, "internal error reading")))
                .map_err(|e| Status::new(e.code, e.msg))?;
        }
        Ok(out)
    }
}

/// The status of a batch in which some updates failed (spec §12: code
/// UNKNOWN, one p4.v1.Error per update in the details).
fn batch_status(results: &[Result<(), UpdErr>]) -> Status {
    let mut details = Vec::with_capacity(results.len());
    let mut first_msg = String::new();
    let mut failed = 0;
    for r in results {
        let err = match r {
            Ok(()) => p4v1::Error { canonical_code: 0, ..Default::default() },
            Err(e) => {
                failed += 1;
                if first_msg.is_empty() {
                    first_msg = e.msg.clone();
                }
                p4v1::Error {
                    canonical_code: e.code as i32,
                    message: e.msg.clone(),
                    space: "p4cc".into(),
                    code: 0,
                    details: None,
                }
            }
        };
        details.push(prost_types::Any {
            type_url: "type.googleapis.com/p4.v1.Error".into(),
            value: err.encode_to_vec(),
        });
    }
    let message = if results.len() == 1 {
        first_msg
    } else {
        format!("{failed} of {} updates failed; first: {first_msg}", results.len())
    };
    let st = rpc::Status { code: Code::Unknown as i32, message: message.clone(), details };
    Status::with_details(Code::Unknown, message, st.encode_to_vec().into())
}

type BoxStream<T> = Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl P4Runtime for P4RuntimeService {
    async fn write(&self, request: Request<WriteRequest>) -> Result<Response<WriteResponse>, Status> {
        let req = request.into_inner();
        let _g = self.inner.write_lock.lock().await;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.write_sync(&req))
            .await
            .map_err(|_| Status::internal("write task failed"))??;
        Ok(Response::new(WriteResponse {}))
    }

    type ReadStream = BoxStream<ReadResponse>;

    async fn read(&self, request: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        let req = request.into_inner();
        let this = self.clone();
        let entities = tokio::task::spawn_blocking(move || this.read_sync(&req))
            .await
            .map_err(|_| Status::internal("read task failed"))??;
        let mut chunks: Vec<Result<ReadResponse, Status>> = Vec::new();
        let mut it = entities.into_iter().peekable();
        while it.peek().is_some() {
            let chunk: Vec<_> = it.by_ref().take(READ_CHUNK).collect();
            chunks.push(Ok(ReadResponse { entities: chunk }));
        }
        if chunks.is_empty() {
            chunks.push(Ok(ReadResponse { entities: vec![] }));
        }
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        let _g = self.inner.write_lock.lock().await;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.set_config(req))
            .await
            .map_err(|_| Status::internal("pipeline task failed"))??;
        Ok(Response::new(SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        check_device(&self.inner, req.device_id)?;
        let pl = lock(&self.inner.device).committed.clone();
        let Some(pl) = pl else {
            return Ok(Response::new(GetForwardingPipelineConfigResponse { config: None }));
        };
        let c = &pl.config;
        let rt = ResponseType::try_from(req.response_type)
            .map_err(|_| Status::invalid_argument(format!("unknown response_type {}", req.response_type)))?;
        let config = match rt {
            ResponseType::All => c.clone(),
            ResponseType::CookieOnly => ForwardingPipelineConfig { cookie: c.cookie, ..Default::default() },
            ResponseType::P4infoAndCookie => {
                ForwardingPipelineConfig { p4info: c.p4info.clone(), cookie: c.cookie, ..Default::default() }
            }
            ResponseType::DeviceConfigAndCookie => ForwardingPipelineConfig {
                p4_device_config: c.p4_device_config.clone(),
                cookie: c.cookie,
                ..Default::default()
            },
        };
        Ok(Response::new(GetForwardingPipelineConfigResponse { config: Some(config) }))
    }

    type StreamChannelStream = ReceiverStream<Result<StreamMessageResponse, Status>>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel::<Result<StreamMessageResponse, Status>>(1024);
        let inner = self.inner.clone();
        let this = self.clone();
        let stream_id = inner.next_stream.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let mut arbitrated = false;
            while let Some(msg) = inbound.next().await {
                let msg = match msg {
                    Ok(m) => m,
                    Err(st) => {
                        // The stream cannot go on, but a close without a
                        // status reads as OK to the client: a primary would
                        // lose its role without being told why.
                        let _ = tx.send(Err(unreadable_request(&st))).await;
                        break;
                    }
                };
                match msg.update {
                    Some(stream_message_request::Update::Arbitration(a)) => {
                        let res = if a.device_id != inner.device_id && !arbitrated {
                            Err(Status::not_found(format!("unknown device id {}", a.device_id)))
                        } else {
                            inner.arbiter.update(stream_id, a.device_id, a.role.as_ref(), u128_of(&a.election_id), &tx)
                        };
                        match res {
                            Ok(()) => arbitrated = true,
                            Err(st) => {
                                let _ = tx.send(Err(st)).await;
                                break;
                            }
                        }
                    }
                    Some(stream_message_request::Update::Packet(p)) => {
                        if !arbitrated {
                            let _ = tx.send(Err(Status::failed_precondition(
                                "send a MasterArbitrationUpdate before anything else",
                            )))
                            .await;
                            break;
                        }
                        if let Err(e) = this.packet_out(&p) {
                            let _ = tx.send(Ok(stream_error(e.code, &e.msg, Some(p)))).await;
                        }
                    }
                    Some(stream_message_request::Update::DigestAck(_)) => {
                        let _ = tx
                            .send(Ok(stream_error(Code::Unimplemented, "digests are not supported", None)))
                            .await;
                    }
                    Some(_) | None => {
                        let _ = tx
                            .send(Ok(stream_error(Code::Unimplemented, "unsupported stream message", None)))
                            .await;
                    }
                }
            }
            inner.arbiter.remove(stream_id);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn capabilities(
        &self,
        request: Request<CapabilitiesRequest>,
    ) -> Result<Response<CapabilitiesResponse>, Status> {
        let d = request.into_inner().device_id;
        if d != 0 {
            check_device(&self.inner, d)?;
        }
        Ok(Response::new(CapabilitiesResponse { p4runtime_api_version: API_VERSION.into(), experimental: None }))
    }
}

/// The status that ends a StreamChannel whose next request could not be
/// read. tonic reports a message that does not decode as a
/// StreamMessageRequest (or a malformed gRPC frame) as INTERNAL, but the
/// fault is in what the client sent: INVALID_ARGUMENT. A message over the
/// size limit keeps tonic's code (OUT_OF_RANGE / RESOURCE_EXHAUSTED). When
/// the transport itself broke, the client is gone and never sees this.
fn unreadable_request(st: &Status) -> Status {
    let code = match st.code() {
        Code::OutOfRange | Code::ResourceExhausted => st.code(),
        _ => Code::InvalidArgument,
    };
    Status::new(code, format!("StreamChannel closed: unreadable StreamMessageRequest: {}", st.message()))
}

fn stream_error(code: Code, msg: &str, p: Option<p4v1::PacketOut>) -> StreamMessageResponse {
    StreamMessageResponse {
        update: Some(stream_message_response::Update::Error(p4v1::StreamError {
            canonical_code: code as i32,
            message: msg.to_string(),
            space: "p4cc".into(),
            code: 0,
            details: p.map(|p| p4v1::stream_error::Details::PacketOut(p4v1::PacketOutError { packet_out: Some(p) })),
        })),
    }
}

impl P4RuntimeService {
    fn packet_out(&self, p: &p4v1::PacketOut) -> Result<(), UpdErr> {
        let pl = self
            .committed()
            .ok_or_else(|| UpdErr::new(Code::FailedPrecondition, "no forwarding pipeline config has been set"))?;
        let b = pl.binding.as_ref().ok_or_else(|| UpdErr::new(Code::FailedPrecondition, "no P4Info"))?;
        let h = b.packet_out.as_ref().ok_or_else(|| {
            UpdErr::new(
                Code::FailedPrecondition,
                "the P4 program has no packet_out controller header (@controller_header(\"packet_out\")): \
                 packet-out is not possible",
            )
        })?;
        let (Some(_), Some(tx)) = (self.inner.cpu_port, &self.inner.packet_out) else {
            return Err(UpdErr::new(Code::Unimplemented, "the switch was started without --cpu-port"));
        };
        let frame = entities::build_packet_out(h, p)?;
        tx.try_send(PacketOutFrame { frame })
            .map_err(|_| UpdErr::new(Code::ResourceExhausted, "packet-out queue is full"))?;
        if let Some(w) = lock(&self.inner.packet_out_waker).as_ref() {
            w();
        }
        Ok(())
    }
}
