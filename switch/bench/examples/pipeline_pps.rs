//! (a) The pipeline alone, in process: packets/s of ingress + egress of
//! cc_switch on a UDP frame that hits a forwarding entry (and an ECN
//! threshold on its egress port).
//!
//! With `--queue` each packet also goes through an egress queue and link
//! (ports::EgressPort: enqueue, dequeue, transmit, delivery), as in
//! p4cc-switch: the difference is the switch's own per-packet cost.
//!
//! With `--packets N` it runs exactly N packets instead of for a time:
//! instruction counts (callgrind, `perf stat`) of two such runs differ by
//! the per-packet cost alone, independent of the machine's load.
//!
//! usage: pipeline_pps CC_SWITCH.json [seconds] [frame_bytes] [--queue] [--packets N]
use p4cc_bench::udp_frame;
use pipeline::{ActionCall, Engine, MatchKey, Program, QueueMeta, State, TableEntry};
use std::sync::Arc;
use std::time::Instant;

// The same allocator as p4cc-switch.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[inline]
fn continue_count(n: &mut u64) {
    *n += 1;
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let with_queue = args.iter().any(|a| a == "--queue");
    args.retain(|a| a != "--queue");
    let mut packets: Option<u64> = None;
    if let Some(i) = args.iter().position(|a| a == "--packets") {
        packets = args.get(i + 1).and_then(|s| s.parse().ok());
        if packets.is_none() {
            eprintln!("pipeline_pps: --packets needs a number");
            std::process::exit(2);
        }
        args.drain(i..i + 2);
    }
    let Some(path) = args.get(1) else {
        eprintln!("usage: pipeline_pps CC_SWITCH.json [seconds] [frame_bytes] [--queue] [--packets N]");
        std::process::exit(2);
    };
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let program = Arc::new(Program::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}")));
    let state = Arc::new(State::new(program.clone()));
    let tid = |n: &str| program.table_by_name(n).unwrap_or_else(|| panic!("no table {n}"));
    let aid = |n: &str| program.action_by_name(n).unwrap_or_else(|| panic!("no action {n}"));
    // Forwarding: 10.98.2.0/24 -> port 2; plus 200 other routes.
    let lpm = tid("CcIngress.forwarding.ipv4_lpm");
    let fwd = aid("CcIngress.forwarding.forward");
    for i in 0..200u32 {
        let ip = (10u32 << 24) | ((100 + i / 256) << 16) | ((i % 256) << 8);
        state
            .table_insert(lpm, TableEntry {
                key: vec![MatchKey::Lpm { value: ip.to_be_bytes().to_vec(), prefix_len: 24 }],
                priority: 0,
                action: ActionCall { action: fwd, args: vec![vec![0, 3], vec![2, 0, 0, 0, 0, 3]] },
            })
            .unwrap();
    }
    state
        .table_insert(lpm, TableEntry {
            key: vec![MatchKey::Lpm { value: vec![10, 98, 2, 0], prefix_len: 24 }],
            priority: 0,
            action: ActionCall { action: fwd, args: vec![vec![0, 2], vec![2, 0, 0, 0, 2, 1]] },
        })
        .unwrap();
    if let (Some(t), Some(a)) = (program.table_by_name("CcEgress.ecn.ecn_threshold"), program.action_by_name("CcEgress.ecn.set_threshold")) {
        state
            .table_insert(t, TableEntry { key: vec![MatchKey::Exact(vec![0, 2])], priority: 0, action: ActionCall { action: a, args: vec![vec![0, 0, 0, 20]] } })
            .unwrap();
    }
    let frame = udp_frame([2, 0, 0, 0, 1, 254], [2, 0, 0, 0, 1, 1], [10, 98, 1, 1], [10, 98, 2, 1], 5000, 5001, size);
    let mut engine = Engine::with_seed(state.clone(), 1);
    let mut port: ports::EgressPort<pipeline::Queued> = ports::EgressPort::new(ports::PortSettings::default(), 1);
    let mut out = Vec::with_capacity(8);
    let mut requeue = Vec::with_capacity(8);
    let start = Instant::now();
    let mut n: u64 = 0;
    let mut sent: u64 = 0;
    let mut t = 0u64;
    loop {
        let batch = packets.map_or(1024, |p| p.saturating_sub(n).min(1024));
        for _ in 0..batch {
            t += 1;
            engine.ingress(&frame, 1, t, &mut out);
            if with_queue {
                let now = t * 1000;
                for q in out.drain(..) {
                    let _ = port.enqueue(q, now);
                }
                while let Some((q, m)) = port.dequeue(now) {
                    let qm = QueueMeta {
                        enq_qdepth: m.enq_qdepth,
                        deq_qdepth: m.deq_qdepth,
                        deq_timedelta_us: m.deq_timedelta_us() as u32,
                        enq_timestamp_us: m.enq_timestamp_us(),
                    };
                    if let Some(f) = engine.egress(q, qm, t, &mut requeue) {
                        port.transmit(f, m.deq_ns);
                    }
                    requeue.clear();
                }
                while let Some(f) = port.pop_released(now) {
                    sent += f.len() as u64;
                    engine.recycle_frame(f);
                }
                continue_count(&mut n);
                continue;
            }
            for q in out.drain(..) {
                let qm = QueueMeta { enq_qdepth: (t % 30) as u32, deq_qdepth: 0, deq_timedelta_us: 3, enq_timestamp_us: t };
                if let Some(f) = engine.egress(q, qm, t, &mut requeue) {
                    sent += f.len() as u64;
                    // As the switch does once a frame is sent.
                    engine.recycle_frame(f);
                }
                requeue.clear();
            }
            n += 1;
        }
        if packets.map_or(start.elapsed().as_secs_f64() >= secs, |p| n >= p) {
            break;
        }
    }
    let dt = start.elapsed().as_secs_f64();
    assert!(sent > 0, "no packet came out: the forwarding entry did not match");
    let what = if with_queue { "ingress+queue+egress+link" } else { "ingress+egress" };
    let code = match engine.native_code() {
        Some(Ok(s)) => format!(
            "native pipelines: {} ({} conditions and {} primitives inline, {} + {} + {} on the closures); {} of {} parser states native; deparser native: {}",
            s.pipelines,
            s.native_conds,
            s.native_prims,
            s.helper_conds,
            s.helper_prims,
            s.helper_actions,
            s.native_parse_states,
            s.parse_states,
            s.native_deparser
        ),
        Some(Err(e)) => format!("no native code ({e}): closures"),
        None => "native code off (P4CC_JIT=0): closures".to_string(),
    };
    println!("pipeline_pps: {:.0} packets/s ({:.3} µs/packet, {size}-byte frames, {what}, 1 thread; {code})", n as f64 / dt, dt * 1e6 / n as f64);
}
