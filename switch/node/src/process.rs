//! What every p4cc process on real interfaces does the same way: its log
//! lines, a SCHED_FIFO packet thread, one-line fatal errors.
use std::process::exit;
use std::sync::OnceLock;

static NAME: OnceLock<&'static str> = OnceLock::new();

struct Logger;

static LOGGER: Logger = Logger;

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &log::Record) {
        // p4cc's own crates only (p4cc_node, p4cc_p4rt, ...), not its dependencies'.
        if self.enabled(r.metadata()) && r.target().starts_with("p4") {
            let name = NAME.get().copied().unwrap_or("p4cc");
            eprintln!("{name} [{}] {}", r.level().as_str().to_lowercase(), r.args());
        }
    }
    fn flush(&self) {}
}

/// Log lines to stderr as `NAME [level] message`, up to `level`.
pub fn init_logging(name: &'static str, level: log::LevelFilter) {
    let _ = NAME.set(name);
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// `--log-level`'s values.
pub fn parse_log_level(s: &str) -> Result<log::LevelFilter, String> {
    match s {
        "off" => Ok(log::LevelFilter::Off),
        "error" => Ok(log::LevelFilter::Error),
        "info" => Ok(log::LevelFilter::Info),
        "debug" => Ok(log::LevelFilter::Debug),
        x => Err(format!("--log-level: '{x}' is not one of off, error, info, debug")),
    }
}

/// `--rt-prio`'s values: a SCHED_FIFO priority.
pub fn parse_rt_prio(s: &str) -> Result<i32, String> {
    match s.parse::<i32>() {
        Ok(n) if (1..=99).contains(&n) => Ok(n),
        _ => Err(format!("--rt-prio: '{s}' is not a priority from 1 to 99")),
    }
}

/// Makes the calling thread SCHED_FIFO at `prio`: it then runs as soon as
/// it wakes, ahead of every ordinary task, so other load on the machine
/// does not delay departures.
pub fn realtime(prio: i32) -> std::io::Result<()> {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: sched_setscheduler on the calling thread with a valid param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Prints a one-line reason as `NAME: msg` and exits with `code`.
pub fn die(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("{}: {msg}", NAME.get().copied().unwrap_or("p4cc"));
    exit(code)
}
