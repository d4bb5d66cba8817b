//! The control protocol: JSON lines on stdin (commands) and stdout
//! (events), so the controller can program the switches while virtual
//! time stands still, read counters and change settings at the plan's
//! instants, and follow progress.
//!
//!   → {"event": "ready", "switches": {name: endpoint}, "unix_base_ns": N}
//!   ← {"cmd": "run", "until_s": 2.0}
//!   → {"event": "progress", "sim_s", "until_s", "events", "events_per_s", "wall_s", "finishing"}  (about 1/s;
//!     finishing: a "finish" runs until the senders are done, until_s is only its cap)
//!   → {"event": "paused", "sim_s": 2.0, "unix_ns": N, "busy_ns": {switch: {port: ns}}}
//!   ← {"cmd": "finish", "grace_s": 15}
//!   → {"event": "done", "complete": true, "sim_s", "events", "wall_s", "cpu_s", "run_cpu_s", "maxrss_kb", "pgo", "agents", "hosts"}
//!
//! SIGINT or SIGTERM stop the run where it is; the results so far are
//! written and "done" says `"complete": false`.

use crate::world::{World, UNIX_BASE_NS};
use crate::SimError;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn emit(v: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn rusage() -> Option<libc::rusage> {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0).then_some(ru)
}

/// CPU time this process used (user + system), for benchmarks on a shared machine.
fn cpu_seconds() -> f64 {
    let Some(ru) = rusage() else { return 0.0 };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The process's peak resident memory, KiB (for the benchmark): VmHWM,
/// this program's own high-water mark. `ru_maxrss` survives execve, so a
/// simulator started by a larger process (the Python runner, hundreds of
/// MB after an analysis) would report its parent's peak.
fn maxrss_kb() -> u64 {
    let hwm = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?.trim().parse().ok())
    });
    hwm.unwrap_or_else(|| rusage().map_or(0, |ru| ru.ru_maxrss.max(0) as u64))
}

fn secs_to_ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

/// Runs `world` as the commands on `input` say until "finish" (or an
/// interrupt); returns whether the run completed.
pub fn serve(mut world: World, input: impl BufRead, stop: Arc<AtomicBool>) -> Result<bool, SimError> {
    let started = Instant::now();
    let endpoints: serde_json::Map<String, serde_json::Value> =
        world.switches.iter().map(|s| (s.name.clone(), s.endpoint())).collect();
    emit(serde_json::json!({"event": "ready", "switches": endpoints, "unix_base_ns": UNIX_BASE_NS}));

    let mut last_report = Instant::now();
    let mut last_events = 0u64;
    let mut complete = true;
    // CPU time inside the event loop alone, the counterpart of ns-3's CPU
    // time in Simulator::Run: without loading the program, serving the
    // controller while it programs the switches, or writing the results.
    let mut run_cpu_s = 0.0;
    let mut lines = input.lines();
    loop {
        let line = match lines.next() {
            Some(Ok(l)) => l,
            Some(Err(e)) => return Err(SimError::Control(format!("reading commands: {e}"))),
            None => return Err(SimError::Control("the controller closed the command channel".into())),
        };
        if line.trim().is_empty() {
            continue;
        }
        let cmd: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| SimError::Control(format!("bad command {line:?}: {e}")))?;
        let (until, finishing) = match cmd["cmd"].as_str() {
            Some("run") => (secs_to_ns(cmd["until_s"].as_f64().unwrap_or(0.0)), false),
            Some("finish") => (world.now + secs_to_ns(cmd["grace_s"].as_f64().unwrap_or(15.0)), true),
            _ => return Err(SimError::Control(format!("unknown command {line:?} (run, finish)"))),
        };
        world.sync_switches();
        let until_s = until as f64 / 1e9;
        let mut check = |w: &World| -> bool {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let el = last_report.elapsed().as_secs_f64();
            if el >= 1.0 {
                emit(serde_json::json!({
                    "event": "progress", "sim_s": w.now as f64 / 1e9, "until_s": until_s,
                    "events": w.stats.events, "events_per_s": ((w.stats.events - last_events) as f64 / el).round(),
                    "wall_s": started.elapsed().as_secs_f64(), "finishing": finishing,
                }));
                last_report = Instant::now();
                last_events = w.stats.events;
            }
            true
        };
        let cpu0 = cpu_seconds();
        let ran = world.run_until(until, finishing, &mut check)?;
        run_cpu_s += cpu_seconds() - cpu0;
        if stop.load(Ordering::Relaxed) {
            complete = false;
            break;
        }
        if finishing {
            let _ = ran;
            break;
        }
        // How long each link has been busy, to the ns, read at this instant
        // with the counters: the executor's utilisation (it cannot exceed 1).
        emit(serde_json::json!({"event": "paused", "sim_s": world.now as f64 / 1e9, "unix_ns": UNIX_BASE_NS + world.now,
                                "busy_ns": world.busy_ns()}));
    }
    let (sim_s, events) = (world.now as f64 / 1e9, world.stats.events);
    let mut done = world.finish()?;
    done["event"] = "done".into();
    done["complete"] = complete.into();
    done["sim_s"] = sim_s.into();
    done["events"] = events.into();
    done["wall_s"] = started.elapsed().as_secs_f64().into();
    done["cpu_s"] = cpu_seconds().into();
    done["run_cpu_s"] = run_cpu_s.into();
    done["maxrss_kb"] = maxrss_kb().into();
    // (`make sim-pgo`'s build: a benchmark's figures depend on it)
    done["pgo"] = cfg!(p4cc_pgo).into();
    emit(done);
    Ok(complete)
}
