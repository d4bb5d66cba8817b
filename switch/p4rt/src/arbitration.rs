//! Primary/backup arbitration (P4Runtime spec §6.4): per (device, role) the
//! primary is the live controller whose election id is the highest ever
//! seen; only it may Write or set the pipeline.
use crate::proto::google::rpc;
use crate::proto::p4::v1::{
    stream_message_response, MasterArbitrationUpdate, Role, StreamMessageResponse, Uint128,
};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::mpsc;
use tonic::{Code, Status};

pub type StreamTx = mpsc::Sender<Result<StreamMessageResponse, Status>>;

struct Controller {
    election_id: Option<u128>,
    tx: StreamTx,
}

#[derive(Default)]
struct RoleState {
    controllers: HashMap<u64, Controller>,
    /// Highest election id ever seen for this (device, role).
    past: Option<u128>,
    /// The stream of the current primary.
    primary: Option<u64>,
    config: Option<prost_types::Any>,
}

/// Which (device, role) a stream arbitrated for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey {
    pub device_id: u64,
    pub role: String,
}

#[derive(Default)]
pub struct Arbiter {
    roles: Mutex<HashMap<StreamKey, RoleState>>,
    streams: Mutex<HashMap<u64, StreamKey>>,
}

pub fn u128_of(e: &Option<Uint128>) -> Option<u128> {
    e.as_ref().map(|e| ((e.high as u128) << 64) | e.low as u128)
}

fn uint128(v: u128) -> Uint128 {
    Uint128 { high: (v >> 64) as u64, low: v as u64 }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Arbiter {
    /// Handles a MasterArbitrationUpdate from stream `stream`. An error
    /// terminates the stream.
    pub fn update(
        &self,
        stream: u64,
        device_id: u64,
        role: Option<&Role>,
        election_id: Option<u128>,
        tx: &StreamTx,
    ) -> Result<(), Status> {
        let role_name = role.map(|r| r.name.clone()).unwrap_or_default();
        let key = StreamKey { device_id, role: role_name };
        let mut streams = lock(&self.streams);
        if let Some(old) = streams.get(&stream) {
            if old.device_id != device_id {
                return Err(Status::failed_precondition(format!(
                    "this stream arbitrated for device {}, not {device_id}",
                    old.device_id
                )));
            }
            if old.role != key.role {
                return Err(Status::failed_precondition(
                    "a stream cannot change its role: open a new stream",
                ));
            }
        }
        let mut roles = lock(&self.roles);
        let rs = roles.entry(key.clone()).or_default();
        if let Some(e) = election_id {
            if rs.controllers.iter().any(|(s, c)| *s != stream && c.election_id == Some(e)) {
                return Err(Status::invalid_argument(format!(
                    "election id {e} is already used by another controller for this device and role"
                )));
            }
        }
        streams.insert(stream, key.clone());
        let was_primary = rs.primary == Some(stream);
        rs.controllers.insert(stream, Controller { election_id, tx: tx.clone() });

        let becomes_primary = match (election_id, rs.past) {
            (Some(e), Some(p)) => e >= p,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if becomes_primary {
            rs.past = election_id;
            rs.primary = Some(stream);
            if let Some(r) = role {
                if r.config.is_some() {
                    rs.config = r.config.clone();
                }
            }
            Self::notify_all(&key, rs);
        } else if was_primary {
            // The primary downgraded itself.
            rs.primary = None;
            Self::notify_all(&key, rs);
        } else {
            Self::notify_one(&key, rs, stream);
        }
        Ok(())
    }

    /// The stream ended.
    pub fn remove(&self, stream: u64) {
        let Some(key) = lock(&self.streams).remove(&stream) else { return };
        let mut roles = lock(&self.roles);
        let Some(rs) = roles.get_mut(&key) else { return };
        rs.controllers.remove(&stream);
        if rs.primary == Some(stream) {
            rs.primary = None;
            Self::notify_all(&key, rs);
        }
        if rs.controllers.is_empty() {
            // Keep `past`: the spec's highest election id survives.
        }
    }

    /// Whether `election_id` names the live primary of (device, role).
    pub fn is_primary(&self, device_id: u64, role: &str, election_id: Option<u128>) -> bool {
        let Some(e) = election_id else { return false };
        let roles = lock(&self.roles);
        let key = StreamKey { device_id, role: role.to_string() };
        match roles.get(&key) {
            Some(rs) => match rs.primary {
                Some(s) => rs.controllers.get(&s).and_then(|c| c.election_id) == Some(e),
                None => false,
            },
            None => false,
        }
    }

    /// The stream of the primary of (device, default role), for packet-in.
    pub fn primary_tx(&self, device_id: u64) -> Option<StreamTx> {
        let roles = lock(&self.roles);
        let rs = roles.get(&StreamKey { device_id, role: String::new() })?;
        let s = rs.primary?;
        rs.controllers.get(&s).map(|c| c.tx.clone())
    }

    fn message(key: &StreamKey, rs: &RoleState, stream: u64) -> StreamMessageResponse {
        let (code, msg) = match rs.primary {
            Some(p) if p == stream => (Code::Ok, "you are the primary"),
            Some(_) => (Code::AlreadyExists, "another controller is the primary"),
            None => (Code::NotFound, "there is no primary"),
        };
        let role = if key.role.is_empty() && rs.config.is_none() {
            None
        } else {
            #[allow(deprecated)]
            Some(Role { id: 0, name: key.role.clone(), config: rs.config.clone() })
        };
        StreamMessageResponse {
            update: Some(stream_message_response::Update::Arbitration(MasterArbitrationUpdate {
                device_id: key.device_id,
                role,
                election_id: rs.past.map(uint128),
                status: Some(rpc::Status { code: code as i32, message: msg.to_string(), details: vec![] }),
            })),
        }
    }

    fn notify_one(key: &StreamKey, rs: &RoleState, stream: u64) {
        if let Some(c) = rs.controllers.get(&stream) {
            let _ = c.tx.try_send(Ok(Self::message(key, rs, stream)));
        }
    }

    fn notify_all(key: &StreamKey, rs: &RoleState) {
        for (s, c) in &rs.controllers {
            let _ = c.tx.try_send(Ok(Self::message(key, rs, *s)));
        }
    }
}
