//! p4cc-switch: the p4cc embedded target. Executes p4c's bmv2 JSON on Linux
//! interfaces and serves P4Runtime like bmv2's simple_switch_grpc, with
//! per-port line rate, propagation delay and random loss.
use node::process::{die, init_logging, parse_log_level, parse_rt_prio, realtime};
use node::{admin, PortShared, Shared, SocketLoop, SwitchCore};
use p4rt::proto::p4::config::v1::P4Info;
use p4rt::{P4RuntimeService, PipelineSlot};
use ports::config::{PortFile, PortTableBuilder};
use ports::{PacketSocket, PortSpec};
use prost::Message;
use std::net::SocketAddr;
use std::process::exit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

// The engine allocates per packet; mimalloc's thread-local free lists make
// that about a third cheaper than glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
p4cc-switch: the p4cc embedded P4 target (bmv2 JSON, P4Runtime, line rate/delay/loss per port)

usage: p4cc-switch [options]

  -i, --interface PORT@IFACE  attach Linux interface IFACE as v1model port PORT (repeatable)
      --grpc-addr ADDR        P4Runtime server address (default 127.0.0.1:9559)
      --device-id N           P4Runtime device id (default 1)
      --admin-addr ADDR       admin HTTP/JSON API address (default 127.0.0.1:9560)
      --json FILE             bmv2 JSON to run at start (else wait for SetForwardingPipelineConfig)
      --p4info FILE           binary P4Info for --json, so P4Runtime works without a push
      --port-config FILE      JSON port file: {\"seed\": 1, \"ports\": [{\"port\": 1, \"iface\": \"veth1\",
                              \"rate_bps\": 100000000, \"delay_us\": 250, \"loss\": 0.0, \"depth_pkts\": 64}]}
      --rate PORT=BPS         line rate in bits/s (100M, 1G, ...; 0 = unlimited)
      --rate-pps PORT=PPS     bmv2-style rate in packets/s (0 = unlimited)
      --delay PORT=US         one-way propagation delay in µs
      --loss PORT=P           random loss probability in [0, 1]
      --depth PORT=PKTS       egress queue depth in packets (default 64, as bmv2)
      --seed N                seed of the loss draws and of P4 random() (default 1)
      --cpu-port N            port number of the CPU port (packet-in/out; default none)
      --clock UNIT            us|ns: the unit of the pipeline's timestamps and queue delays (default
                              us, as bmv2; the admin API's PUT /clock changes it at run time)
      --rt-prio N             run the packet thread as SCHED_FIFO priority N (1-99; root): departures
                              on time beside other load (default: the ordinary scheduler)
      --log-level LEVEL       off|error|info|debug (default info; the packet path logs only at debug)
  -h, --help                  this text
  -V, --version               version

Hosts attached to the switch must turn offloads off:
  ethtool -K IFACE tso off gso off gro off (and tx off for checksum offload)
";

struct Opts {
    grpc_addr: SocketAddr,
    admin_addr: SocketAddr,
    device_id: u64,
    json: Option<String>,
    p4info: Option<String>,
    seed: u64,
    cpu_port: Option<u32>,
    rt_prio: Option<i32>,
    level: log::LevelFilter,
    clock_ns: bool,
    ports: Vec<PortSpec>,
}

fn parse_args(args: Vec<String>) -> Result<Opts, String> {
    let mut b = PortTableBuilder::default();
    let mut port_file: Option<String> = None;
    let mut shortcuts: Vec<(String, String)> = vec![];
    let mut interfaces: Vec<String> = vec![];
    let mut o = Opts {
        grpc_addr: "127.0.0.1:9559".parse().unwrap(),
        admin_addr: "127.0.0.1:9560".parse().unwrap(),
        device_id: 1,
        json: None,
        p4info: None,
        seed: 1,
        cpu_port: None,
        rt_prio: None,
        level: log::LevelFilter::Info,
        clock_ns: false,
        ports: vec![],
    };
    let mut seed_given = false;
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
                println!("p4cc-switch {}", env!("CARGO_PKG_VERSION"));
                exit(0)
            }
            "-i" | "--interface" => interfaces.push(val(&flag)?),
            "--grpc-addr" => {
                let v = val(&flag)?;
                o.grpc_addr = v.parse().map_err(|_| format!("--grpc-addr: '{v}' is not HOST:PORT"))?
            }
            "--admin-addr" => {
                let v = val(&flag)?;
                o.admin_addr = v.parse().map_err(|_| format!("--admin-addr: '{v}' is not HOST:PORT"))?
            }
            "--device-id" => {
                let v = val(&flag)?;
                o.device_id = v.parse().map_err(|_| format!("--device-id: '{v}' is not a number"))?
            }
            "--json" => o.json = Some(val(&flag)?),
            "--p4info" => o.p4info = Some(val(&flag)?),
            "--port-config" => port_file = Some(val(&flag)?),
            "--rate" | "--rate-pps" | "--delay" | "--loss" | "--depth" => {
                let v = val(&flag)?;
                shortcuts.push((flag.trim_start_matches("--").to_string(), v))
            }
            "--seed" => {
                let v = val(&flag)?;
                o.seed = v.parse().map_err(|_| format!("--seed: '{v}' is not a number"))?;
                seed_given = true;
            }
            "--cpu-port" => {
                let v = val(&flag)?;
                o.cpu_port = Some(ports::config::parse_port(&v).map_err(|e| format!("--cpu-port: {e}"))?)
            }
            "--rt-prio" => {
                let v = val(&flag)?;
                o.rt_prio = Some(parse_rt_prio(&v)?);
            }
            "--log-level" => o.level = parse_log_level(&val(&flag)?)?,
            "--clock" => {
                o.clock_ns = match val(&flag)?.as_str() {
                    "ns" => true,
                    "us" => false,
                    x => return Err(format!("--clock: '{x}' is not us or ns")),
                }
            }
            x => return Err(format!("unknown option '{x}' (see --help)")),
        }
    }
    for i in &interfaces {
        b.interface(i).map_err(|e| e.to_string())?;
    }
    if let Some(f) = port_file {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("cannot read port file {f}: {e}"))?;
        let pf = PortFile::parse(&text).map_err(|e| format!("{f}: {e}"))?;
        if let (Some(s), false) = (pf.seed, seed_given) {
            o.seed = s;
        }
        b.file(&pf).map_err(|e| format!("{f}: {e}"))?;
    }
    for (what, v) in shortcuts {
        b.shortcut(&what, &v).map_err(|e| e.to_string())?;
    }
    o.ports = b.build().map_err(|e| e.to_string())?;
    if o.ports.is_empty() {
        return Err("no ports: give at least one --interface PORT@IFACE (or a port file)".into());
    }
    if let Some(c) = o.cpu_port {
        if o.ports.iter().any(|p| p.port == c) {
            return Err(format!("--cpu-port {c} is also an interface port: the CPU port is the controller's"));
        }
    }
    if o.p4info.is_some() && o.json.is_none() {
        return Err("--p4info needs --json".into());
    }
    Ok(o)
}

fn main() {
    init_logging("p4cc-switch", log::LevelFilter::Info);
    let o = match parse_args(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => die(2, e),
    };
    log::set_max_level(o.level);

    // Interfaces first: a missing one is the most common mistake.
    let mut socks = Vec::new();
    for p in &o.ports {
        match PacketSocket::open(&p.iface, ports::socket::DEFAULT_RING_BYTES) {
            Ok(s) => socks.push((p.port, s)),
            Err(e) => die(1, e),
        }
    }

    let slot = Arc::new(PipelineSlot::default());
    let (po_tx, po_rx) = match o.cpu_port {
        Some(_) => {
            let (t, r) = tokio::sync::mpsc::channel(1024);
            (Some(t), Some(r))
        }
        None => (None, None),
    };
    let service = P4RuntimeService::new(o.device_id, slot.clone(), o.cpu_port, po_tx);

    if let Some(path) = &o.json {
        let json = std::fs::read(path).unwrap_or_else(|e| die(1, format!("cannot read {path}: {e}")));
        let info = o.p4info.as_ref().map(|f| {
            let b = std::fs::read(f).unwrap_or_else(|e| die(1, format!("cannot read {f}: {e}")));
            P4Info::decode(b.as_slice())
                .unwrap_or_else(|e| die(1, format!("{f} is not a binary P4Info (p4c --p4runtime-files x.bin): {e}")))
        });
        match p4rt::build_from_json(&json, info.as_ref()) {
            Ok(pl) => service.install(pl),
            Err(e) => die(1, format!("{path}: {}", e.message())),
        }
    }

    let grpc = std::net::TcpListener::bind(o.grpc_addr)
        .unwrap_or_else(|e| die(1, format!("cannot listen on {} (gRPC): {e}", o.grpc_addr)));
    let admin_l = std::net::TcpListener::bind(o.admin_addr)
        .unwrap_or_else(|e| die(1, format!("cannot listen on {} (admin): {e}", o.admin_addr)));
    grpc.set_nonblocking(true).unwrap_or_else(|e| die(1, e));
    admin_l.set_nonblocking(true).unwrap_or_else(|e| die(1, e));

    let shared = Arc::new(
        Shared::new(
            o.ports.iter().map(|p| Arc::new(PortShared::new(p.port, p.iface.clone(), p.settings))).collect(),
        )
        .unwrap_or_else(|e| die(1, format!("eventfd: {e}"))),
    );
    shared.clock_ns.store(o.clock_ns, Ordering::Relaxed);
    {
        let sh = shared.clone();
        service.set_packet_out_waker(Arc::new(move || sh.wake()));
    }
    let core = SwitchCore::new(shared.clone(), slot, o.seed, o.cpu_port, Some(service.clone()));
    let dp = SocketLoop::new(core, socks.into_iter().map(|(_, s)| s).collect(), shared.clone());
    let mut po_rx = po_rx;
    // Packet-out from the controller: ingress on the CPU port.
    let packet_out = move |core: &mut SwitchCore, now: u64| {
        let Some(rx) = po_rx.as_mut() else { return false };
        let mut any = false;
        while let Ok(f) = rx.try_recv() {
            core.packet_out(&f.frame, now);
            any = true;
        }
        any
    };
    let rt_prio = o.rt_prio;
    let packet_thread = std::thread::Builder::new()
        .name("p4cc-packets".into())
        .spawn(move || {
            if let Some(p) = rt_prio {
                if let Err(e) = realtime(p) {
                    die(1, format!("--rt-prio {p}: cannot run the packet thread as SCHED_FIFO: {e} (needs root or CAP_SYS_NICE)"));
                }
            }
            dp.run(packet_out)
        })
        .unwrap_or_else(|e| die(1, format!("cannot start the packet thread: {e}")));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(4)
        .enable_all()
        .thread_name("p4cc-ctl")
        .build()
        .unwrap_or_else(|e| die(1, format!("tokio: {e}")));

    let admin = admin::Admin { shared: shared.clone(), p4rt: Some(service.clone()), device_id: o.device_id };
    let code = rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let grpc = tokio::net::TcpListener::from_std(grpc).unwrap_or_else(|e| die(1, e));
        let admin_l = tokio::net::TcpListener::from_std(admin_l).unwrap_or_else(|e| die(1, e));
        let mut s1 = stop_rx.clone();
        let grpc_task = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service.into_server())
                .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(grpc), async move {
                    let _ = s1.wait_for(|v| *v).await;
                }),
        );
        let mut s2 = stop_rx.clone();
        let admin_task = tokio::spawn(async move {
            axum::serve(admin_l, admin::router(admin))
                .with_graceful_shutdown(async move {
                    let _ = s2.wait_for(|v| *v).await;
                })
                .await
        });
        log::info!(
            "{} ports; P4Runtime on {} (device {}); admin on {}; packet thread {}",
            o.ports.len(),
            o.grpc_addr,
            o.device_id,
            o.admin_addr,
            o.rt_prio.map_or("on the ordinary scheduler".to_string(), |p| format!("SCHED_FIFO {p}"))
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .unwrap_or_else(|e| die(1, e));
        let code = tokio::select! {
            _ = tokio::signal::ctrl_c() => 0,
            _ = term.recv() => 0,
            r = grpc_task => { log::error!("gRPC server stopped: {r:?}"); 1 }
        };
        log::info!("shutting down");
        let _ = stop_tx.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), admin_task).await;
        code
    });
    shared.stop.store(true, Ordering::Relaxed);
    shared.wake();
    let _ = packet_thread.join();
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    exit(code);
}
