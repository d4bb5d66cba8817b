//! Run-time admin API (HTTP + JSON, localhost): port settings and counters,
//! of the embedded switch and of the link emulator alike.
//! docs/embedded-target.md documents it.
use crate::shared::{PortShared, Shared};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use p4rt::P4RuntimeService;
use ports::PortUpdate;
use serde_json::{json, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

#[derive(Clone)]
pub struct Admin {
    pub shared: Arc<Shared>,
    /// The switch's P4Runtime service; `None` for a process without a
    /// pipeline (the link emulator).
    pub p4rt: Option<P4RuntimeService>,
    pub device_id: u64,
}

fn err(code: StatusCode, msg: impl Into<String>) -> Response {
    (code, Json(json!({ "error": msg.into() }))).into_response()
}

pub fn port_json(p: &PortShared) -> Value {
    let s = p.settings();
    let st = p.stats();
    let sl = p.slip();
    json!({
        "port": p.port,
        "iface": p.iface,
        "rate_bps": s.rate_bps,
        "rate_pps": s.rate_pps,
        "delay_us": s.delay_us,
        "loss": s.loss,
        "depth_pkts": s.depth_pkts,
        "queue_len": p.queue_len.load(Relaxed),
        "rx_pkts": st.rx_pkts,
        "rx_bytes": st.rx_bytes,
        "rx_dropped": st.rx_dropped,
        "enq_pkts": st.enq_pkts,
        "tx_pkts": st.tx_pkts,
        "tx_bytes": st.tx_bytes,
        "tx_errors": st.tx_errors,
        "tail_drops": st.tail_drops,
        "link_loss_drops": st.link_loss_drops,
        "flushed": st.flushed,
        "ring_drops": st.ring_drops,
        "lag_clamps": st.lag_clamps,
        "slip_ns": {"samples": sl.samples, "p50": sl.p50_ns, "p99": sl.p99_ns, "max": sl.max_ns},
    })
}

#[allow(clippy::result_large_err)]
fn parse_port(s: &str) -> Result<u32, Response> {
    s.parse::<u32>().map_err(|_| err(StatusCode::BAD_REQUEST, format!("'{s}' is not a port number")))
}

async fn list(State(a): State<Admin>) -> Response {
    Json(Value::Array(a.shared.ports.iter().map(|p| port_json(p)).collect())).into_response()
}

async fn get_port(State(a): State<Admin>, Path(n): Path<String>) -> Response {
    let n = match parse_port(&n) {
        Ok(n) => n,
        Err(r) => return r,
    };
    match a.shared.port(n) {
        Some(p) => Json(port_json(p)).into_response(),
        None => err(StatusCode::NOT_FOUND, format!("no port {n}")),
    }
}

async fn put_port(State(a): State<Admin>, Path(n): Path<String>, body: Bytes) -> Response {
    let n = match parse_port(&n) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let Some(p) = a.shared.port(n) else {
        return err(StatusCode::NOT_FOUND, format!("no port {n}"));
    };
    let upd: PortUpdate = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => return err(StatusCode::BAD_REQUEST, format!("bad JSON body: {e}")),
    };
    {
        let mut s = p.settings.lock().unwrap_or_else(|e| e.into_inner());
        match s.updated(&upd) {
            Ok(new) => *s = new,
            Err(e) => return err(StatusCode::BAD_REQUEST, e.to_string()),
        }
    }
    a.shared.settings_gen.fetch_add(1, Relaxed);
    a.shared.wake();
    log::info!("port {n}: settings {:?}", p.settings());
    Json(port_json(p)).into_response()
}

async fn status(State(a): State<Admin>) -> Response {
    let uptime = (ports::socket::monotonic_ns() - a.shared.start_ns) as f64 / 1e9;
    Json(json!({
        "device_id": a.device_id,
        "pipeline": a.p4rt.as_ref().map(|s| s.committed().is_some()),
        "uptime_s": uptime,
        "unknown_port_drops": a.shared.unknown_port_drops.load(Relaxed),
        "no_pipeline_drops": a.shared.no_pipeline_drops.load(Relaxed),
        "ports": a.shared.ports.len(),
        "clock": if a.shared.clock_ns.load(Relaxed) { "ns" } else { "us" },
    }))
    .into_response()
}

/// `PUT /clock {"unit": "ns"|"us"}`: the unit the pipeline's timestamps
/// and queue delays count in from the next packet on.
async fn put_clock(State(a): State<Admin>, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Clock {
        unit: String,
    }
    let c: Clock = match serde_json::from_slice(&body) {
        Ok(c) => c,
        Err(e) => return err(StatusCode::BAD_REQUEST, format!("bad JSON body: {e}")),
    };
    let ns = match c.unit.as_str() {
        "ns" => true,
        "us" => false,
        u => return err(StatusCode::BAD_REQUEST, format!("clock unit '{u}' is not ns or us")),
    };
    if a.p4rt.is_none() {
        return err(StatusCode::BAD_REQUEST, "this process runs no pipeline: it has no clock to set");
    }
    a.shared.clock_ns.store(ns, Relaxed);
    a.shared.wake();
    log::info!("clock: {}", c.unit);
    Json(json!({ "clock": c.unit })).into_response()
}

async fn not_found() -> Response {
    err(StatusCode::NOT_FOUND, "no such endpoint (GET /status, GET /ports, GET|PUT /ports/{n}, PUT /clock)")
}

async fn not_allowed() -> Response {
    err(StatusCode::METHOD_NOT_ALLOWED, "method not allowed (GET /status, GET /ports, GET|PUT /ports/{n}, PUT /clock)")
}

pub fn router(a: Admin) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/ports", get(list))
        .route("/ports/{n}", get(get_port).put(put_port))
        .route("/clock", axum::routing::put(put_clock))
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .with_state(a)
}
