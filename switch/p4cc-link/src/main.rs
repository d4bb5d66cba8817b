//! p4cc-link: a link emulator between pairs of interfaces. A frame that
//! arrives on one interface of a pair leaves on the other after that
//! port's link model — propagation delay, random loss, optionally a line
//! rate — with the embedded target's link code (`node::LinkCore`) and its
//! admin API, so the controller sets a delay here as on the embedded
//! switch, and the fidelity monitor reads release slip and ring drops.
//!
//! p4cc runs one per bmv2 switch whose ports have a delay or a loss, on a
//! veth pair spliced between bmv2's port and its peer (docs/embedded-target.md,
//! "p4cc-link").
use node::process::{die, init_logging, parse_log_level, parse_rt_prio, realtime};
use node::{admin, LinkCore, PortShared, Shared, SocketLoop};
use ports::config::PortTableBuilder;
use ports::{PacketSocket, PortSpec};
use std::net::SocketAddr;
use std::process::exit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
p4cc-link: a link emulator between pairs of interfaces (propagation delay, random loss, line rate)

usage: p4cc-link --pair A@IFACE1,B@IFACE2 [--pair ...] [options]

      --pair A@IF1,B@IF2      wire interface IF1 (port A) to IF2 (port B): a frame arriving on IF1
                              leaves on IF2 after port B's link model, and back (repeatable)
      --admin-addr ADDR       admin HTTP/JSON API (default 127.0.0.1:9561): GET /ports,
                              PUT /ports/N {\"delay_us\": .., \"loss\": .., \"rate_bps\": ..}
      --delay PORT=US         one-way propagation delay of frames leaving on PORT, µs (default 0)
      --loss PORT=P           random loss probability of frames leaving on PORT (default 0)
      --rate PORT=BPS         line rate of PORT (default 0: unlimited; a link has no queue of its own)
      --seed N                seed of the loss draws (default 1)
      --rt-prio N             run the packet thread as SCHED_FIFO priority N (1-99; root)
      --log-level LEVEL       off|error|info|debug (default info)
  -h, --help                  this text
  -V, --version               version

Interfaces must have offloads off (ethtool -K IFACE tso off gso off gro off tx off).
";

struct Opts {
    admin_addr: SocketAddr,
    pairs: Vec<(u32, u32)>,
    ports: Vec<PortSpec>,
    seed: u64,
    rt_prio: Option<i32>,
    level: log::LevelFilter,
}

fn parse_args(args: Vec<String>) -> Result<Opts, String> {
    let mut b = PortTableBuilder::default();
    let mut shortcuts: Vec<(String, String)> = vec![];
    let mut o = Opts {
        admin_addr: SocketAddr::from(([127, 0, 0, 1], 9561)),
        pairs: vec![],
        ports: vec![],
        seed: 1,
        rt_prio: None,
        level: log::LevelFilter::Info,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut val = |name: &str| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().ok_or_else(|| format!("{name} needs a value (see --help)")),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                exit(0)
            }
            "-V" | "--version" => {
                println!("p4cc-link {}", env!("CARGO_PKG_VERSION"));
                exit(0)
            }
            "--pair" => {
                let v = val(&flag)?;
                let (x, y) = v
                    .split_once(',')
                    .ok_or_else(|| format!("--pair: '{v}' is not A@IFACE1,B@IFACE2"))?;
                let mut ends = [0u32; 2];
                for (k, spec) in [x, y].into_iter().enumerate() {
                    b.interface(spec).map_err(|e| format!("--pair {v}: {e}"))?;
                    ends[k] = ports::config::parse_port(spec.split('@').next().unwrap_or(""))
                        .map_err(|e| format!("--pair {v}: {e}"))?;
                }
                o.pairs.push((ends[0], ends[1]));
            }
            "--admin-addr" => {
                let v = val(&flag)?;
                o.admin_addr = v.parse().map_err(|_| format!("--admin-addr: '{v}' is not HOST:PORT"))?
            }
            "--rate" | "--delay" | "--loss" => {
                let v = val(&flag)?;
                shortcuts.push((flag.trim_start_matches("--").to_string(), v))
            }
            "--seed" => {
                let v = val(&flag)?;
                o.seed = v.parse().map_err(|_| format!("--seed: '{v}' is not a number"))?;
            }
            "--rt-prio" => o.rt_prio = Some(parse_rt_prio(&val(&flag)?)?),
            "--log-level" => o.level = parse_log_level(&val(&flag)?)?,
            x => return Err(format!("unknown option '{x}' (see --help)")),
        }
    }
    for (what, v) in shortcuts {
        b.shortcut(&what, &v).map_err(|e| e.to_string())?;
    }
    // A link has no queue of its own: the frames of a burst are on the
    // wire the instant they arrive, however many there are.
    o.ports = b.build().map_err(|e| e.to_string())?;
    for p in &mut o.ports {
        p.settings.depth_pkts = ports::config::MAX_DEPTH_PKTS;
    }
    if o.pairs.is_empty() {
        return Err("no links: give at least one --pair A@IFACE1,B@IFACE2".into());
    }
    Ok(o)
}

fn main() {
    init_logging("p4cc-link", log::LevelFilter::Info);
    let o = parse_args(std::env::args().skip(1).collect()).unwrap_or_else(|e| die(2, e));
    log::set_max_level(o.level);

    let mut socks = Vec::new();
    for p in &o.ports {
        match PacketSocket::open(&p.iface, ports::socket::DEFAULT_RING_BYTES) {
            Ok(s) => socks.push(s),
            Err(e) => die(1, e),
        }
    }
    let admin_l = std::net::TcpListener::bind(o.admin_addr)
        .unwrap_or_else(|e| die(1, format!("cannot listen on {} (admin): {e}", o.admin_addr)));
    admin_l.set_nonblocking(true).unwrap_or_else(|e| die(1, e));
    let shared = Arc::new(
        Shared::new(o.ports.iter().map(|p| Arc::new(PortShared::new(p.port, p.iface.clone(), p.settings))).collect())
            .unwrap_or_else(|e| die(1, format!("eventfd: {e}"))),
    );
    let core = LinkCore::new(shared.clone(), &o.pairs, o.seed).unwrap_or_else(|e| die(2, e));
    let lp = SocketLoop::new(core, socks, shared.clone());
    let rt_prio = o.rt_prio;
    let packet_thread = std::thread::Builder::new()
        .name("p4cc-link".into())
        .spawn(move || {
            if let Some(p) = rt_prio {
                if let Err(e) = realtime(p) {
                    die(1, format!("--rt-prio {p}: cannot run the packet thread as SCHED_FIFO: {e} (needs root or CAP_SYS_NICE)"));
                }
            }
            lp.run(|_, _| false)
        })
        .unwrap_or_else(|e| die(1, format!("cannot start the packet thread: {e}")));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(1, format!("tokio: {e}")));
    let admin = admin::Admin { shared: shared.clone(), p4rt: None, device_id: 0 };
    rt.block_on(async move {
        let admin_l = tokio::net::TcpListener::from_std(admin_l).unwrap_or_else(|e| die(1, e));
        let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
        let server = tokio::spawn(async move {
            axum::serve(admin_l, admin::router(admin))
                .with_graceful_shutdown(async move {
                    let _ = stop_rx.wait_for(|v| *v).await;
                })
                .await
        });
        log::info!(
            "{} links ({}); admin on {}; packet thread {}",
            o.pairs.len(),
            o.ports.iter().map(|p| format!("{}@{}", p.port, p.iface)).collect::<Vec<_>>().join(" "),
            o.admin_addr,
            o.rt_prio.map_or("on the ordinary scheduler".to_string(), |p| format!("SCHED_FIFO {p}"))
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .unwrap_or_else(|e| die(1, e));
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        let _ = stop_tx.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), server).await;
    });
    shared.stop.store(true, Ordering::Relaxed);
    shared.wake();
    let _ = packet_thread.join();
    exit(0);
}
