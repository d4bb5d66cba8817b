//! Test fixture: a small v1model program in the shape p4c-bm2-ss emits
//! (bmv2 JSON) with its P4Info, a P4Runtime server on a loopback port and a
//! tonic client.
#![allow(dead_code)]

pub use p4rt::fixture::*;
use p4rt::proto::p4::v1 as p4v1;
use p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use p4rt::{P4RuntimeService, PipelineSlot};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

pub const DEVICE: u64 = 1;
pub fn config(cookie: u64) -> p4v1::ForwardingPipelineConfig {
    p4v1::ForwardingPipelineConfig {
        p4info: Some(mini_p4info()),
        p4_device_config: mini_json().into_bytes(),
        cookie: Some(p4v1::forwarding_pipeline_config::Cookie { cookie }),
    }
}

pub struct Harness {
    pub client: P4RuntimeClient<Channel>,
    pub slot: Arc<PipelineSlot>,
    pub service: P4RuntimeService,
    pub addr: std::net::SocketAddr,
}

pub async fn start() -> Harness {
    let slot = Arc::new(PipelineSlot::default());
    let service = P4RuntimeService::new(DEVICE, slot.clone(), None, None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let svc = service.clone();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(svc.into_server())
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    let client = connect(addr).await;
    Harness { client, slot, service, addr }
}

pub async fn connect(addr: std::net::SocketAddr) -> P4RuntimeClient<Channel> {
    for _ in 0..50 {
        if let Ok(c) = P4RuntimeClient::connect(format!("http://{addr}")).await {
            return c.max_decoding_message_size(256 << 20);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("cannot connect to {addr}");
}

pub fn eid(v: u64) -> Option<p4v1::Uint128> {
    Some(p4v1::Uint128 { high: 0, low: v })
}

/// An open StreamChannel.
pub struct Stream {
    pub tx: mpsc::Sender<p4v1::StreamMessageRequest>,
    pub rx: tonic::Streaming<p4v1::StreamMessageResponse>,
}

impl Stream {
    pub async fn arbitrate(&self, device: u64, election: u64) {
        self.tx
            .send(p4v1::StreamMessageRequest {
                update: Some(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate {
                    device_id: device,
                    election_id: eid(election),
                    ..Default::default()
                })),
            })
            .await
            .unwrap();
    }

    /// Next message, or None on end/timeout; Err(status) when the server ended the stream.
    pub async fn next(&mut self) -> Option<Result<p4v1::StreamMessageResponse, tonic::Status>> {
        match tokio::time::timeout(std::time::Duration::from_secs(5), self.rx.message()).await {
            Ok(Ok(Some(m))) => Some(Ok(m)),
            Ok(Ok(None)) => None,
            Ok(Err(s)) => Some(Err(s)),
            Err(_) => None,
        }
    }

    /// The status code of the next arbitration notification.
    pub async fn arbitration_code(&mut self) -> i32 {
        match self.next().await {
            Some(Ok(p4v1::StreamMessageResponse {
                update: Some(p4v1::stream_message_response::Update::Arbitration(a)),
            })) => a.status.map(|s| s.code).unwrap_or(-1),
            other => panic!("expected an arbitration update, got {other:?}"),
        }
    }
}

pub async fn open_stream(client: &mut P4RuntimeClient<Channel>) -> Stream {
    let (tx, rx) = mpsc::channel(16);
    let resp = client.stream_channel(ReceiverStream::new(rx)).await.unwrap();
    Stream { tx, rx: resp.into_inner() }
}

/// Opens a stream, becomes primary with `election`, pushes the mini pipeline.
pub async fn primary_with_pipeline(h: &mut Harness, election: u64) -> Stream {
    let mut s = open_stream(&mut h.client).await;
    s.arbitrate(DEVICE, election).await;
    assert_eq!(s.arbitration_code().await, 0);
    h.client
        .set_forwarding_pipeline_config(p4v1::SetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            election_id: eid(election),
            action: p4v1::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
            config: Some(config(7)),
            ..Default::default()
        })
        .await
        .unwrap();
    s
}

pub fn update(ty: p4v1::update::Type, e: p4v1::entity::Entity) -> p4v1::Update {
    p4v1::Update { r#type: ty as i32, entity: Some(p4v1::Entity { entity: Some(e) }) }
}

pub fn lpm_entry(ip: [u8; 4], plen: i32, port: &[u8], mac: &[u8]) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: T_LPM,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Lpm(p4v1::field_match::Lpm {
                value: ip.to_vec(),
                prefix_len: plen,
            })),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: A_FORWARD,
                params: vec![
                    p4v1::action::Param { param_id: 1, value: port.to_vec() },
                    p4v1::action::Param { param_id: 2, value: mac.to_vec() },
                ],
            })),
        }),
        ..Default::default()
    }
}

pub async fn write(
    h: &mut Harness,
    election: u64,
    updates: Vec<p4v1::Update>,
) -> Result<tonic::Response<p4v1::WriteResponse>, tonic::Status> {
    h.client
        .write(p4v1::WriteRequest { device_id: DEVICE, election_id: eid(election), updates, ..Default::default() })
        .await
}

pub async fn read(h: &mut Harness, entities: Vec<p4v1::entity::Entity>) -> Result<Vec<p4v1::Entity>, tonic::Status> {
    let req = p4v1::ReadRequest {
        device_id: DEVICE,
        entities: entities.into_iter().map(|e| p4v1::Entity { entity: Some(e) }).collect(),
        ..Default::default()
    };
    let mut s = h.client.read(req).await?.into_inner();
    let mut out = vec![];
    while let Some(r) = s.message().await? {
        out.extend(r.entities);
    }
    Ok(out)
}

/// The per-update p4.v1.Error codes of a failed batch.
pub fn batch_codes(st: &tonic::Status) -> Vec<i32> {
    use prost::Message;
    let s = p4rt::proto::google::rpc::Status::decode(st.details()).expect("google.rpc.Status in details");
    s.details.iter().map(|a| p4v1::Error::decode(a.value.as_slice()).unwrap().canonical_code).collect()
}
