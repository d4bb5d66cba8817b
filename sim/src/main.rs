//! p4cc-sim: runs one arm of a scenario plan in virtual time under the
//! control of p4cc's controller (p4cc run --target sim). See src/lib.rs.

use p4cc_sim::plan::Plan;
use p4cc_sim::{control, world::World, SimError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const USAGE: &str = "usage: p4cc-sim PLAN.json --arm NAME --out DIR
  Runs one arm of a p4cc scenario plan in virtual time. The switches serve
  P4Runtime and the admin API; the controller drives the run over
  stdin/stdout (JSON lines, see sim/src/control.rs). p4cc runs it for you:
  p4cc run EXPERIMENT --target sim";

struct Args {
    plan: PathBuf,
    arm: String,
    out: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut plan, mut arm, mut out) = (None, None, None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--arm" => arm = it.next(),
            "--out" => out = it.next().map(PathBuf::from),
            x if x.starts_with('-') => return Err(format!("unknown option '{x}'")),
            x => plan = Some(PathBuf::from(x)),
        }
    }
    Ok(Args {
        plan: plan.ok_or("no plan given")?,
        arm: arm.ok_or("--arm NAME is required")?,
        out: out.ok_or("--out DIR is required")?,
    })
}

fn run(a: Args) -> Result<bool, SimError> {
    let plan = Plan::load(&a.plan)?;
    let arm = plan.arm(&a.arm)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("p4cc-sim-ctl")
        .build()
        .map_err(|e| SimError::Setup(format!("tokio: {e}")))?;
    let world = World::build(&plan, arm, &a.out, &rt)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    let complete = control::serve(world, std::io::stdin().lock(), stop)?;
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(complete)
}

fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("p4cc-sim: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(a) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(130),
        Err(e) => {
            eprintln!("p4cc-sim: error: {e}");
            ExitCode::from(1)
        }
    }
}
