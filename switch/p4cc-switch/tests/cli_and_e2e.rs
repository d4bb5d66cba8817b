//! The p4cc-switch binary: start-up errors, and real packets between two
//! network namespaces through the switch (skipped, saying so, when not root
//! or without `ip netns`).
use p4rt::proto::p4::v1 as p4v1;
use p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use prost::Message;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_p4cc-switch");

/// A free port below the kernel's ephemeral range. A port from that range
/// (what binding port 0 gives) can be taken by any outgoing connection in the
/// gap before the switch binds it — the other test's gRPC client did once;
/// ports below it are only taken by explicit binds.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let lo: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let (first, span) = (10_000u32, lo.saturating_sub(10_000).max(1000));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let start = std::process::id().wrapping_mul(7919) ^ nanos;
    for _ in 0..span {
        let port = first + (start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed) * 101)) % span;
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    panic!("no free TCP port in {first}..{}", first + span)
}

/// Runs the switch expecting it to exit at once; returns (code, stderr).
fn run_fail(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).to_string())
}

fn fixture_files(dir: &std::path::Path) -> (String, String) {
    let json = dir.join("mini.json");
    let info = dir.join("mini.p4info.bin");
    std::fs::write(&json, p4rt::fixture::mini_json()).unwrap();
    std::fs::write(&info, p4rt::fixture::mini_p4info().encode_to_vec()).unwrap();
    (json.to_string_lossy().into(), info.to_string_lossy().into())
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("p4cc-switch-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn startup_errors_are_one_line() {
    let (code, err) = run_fail(&["-i", "1@p4cc-nosuch0", "--admin-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"]);
    assert_eq!(code, 1);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no network interface named 'p4cc-nosuch0'"), "{err}");

    let (code, err) = run_fail(&["--bogus"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown option"), "{err}");
    let (code, err) = run_fail(&[]);
    assert_eq!(code, 2);
    assert!(err.contains("no ports"), "{err}");
    let (code, err) = run_fail(&["-i", "1@lo", "--loss", "1=2"]);
    assert_eq!(code, 2);
    assert!(err.contains("loss"), "{err}");
    for bad in ["0", "100", "fifo"] {
        let (code, err) = run_fail(&["-i", "1@lo", "--rt-prio", bad]);
        assert_eq!(code, 2);
        assert!(err.contains(&format!("--rt-prio: '{bad}' is not a priority from 1 to 99")), "{err}");
    }

    if !is_root() {
        eprintln!("skipped the rest: not root (AF_PACKET needs it)");
        return;
    }
    let dir = tmpdir("cli");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"not\": \"bmv2\"}").unwrap();
    let (code, err) = run_fail(&["-i", "1@lo", "--json", bad.to_str().unwrap(), "--grpc-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"]);
    assert_eq!(code, 1);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("bad.json"), "{err}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = run_fail(&["-i", "1@lo", "--grpc-addr", &addr, "--admin-addr", "127.0.0.1:0"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot listen on") && err.contains(&addr), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn sh(args: &[&str]) -> bool {
    Command::new(args[0]).args(&args[1..]).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

/// Two host namespaces wired to veths in this namespace; removed on drop.
struct Net {
    h1: String,
    h2: String,
    s1: String,
    s2: String,
}

const MAC1: &str = "02:97:00:00:01:01";
const MAC2: &str = "02:97:00:00:02:01";

impl Net {
    fn new(tag: char) -> Option<Net> {
        let id = std::process::id() % 100000;
        let n = Net {
            h1: format!("p4cctest-{id}{tag}-h1"),
            h2: format!("p4cctest-{id}{tag}-h2"),
            s1: format!("p4ct{id}{tag}a"),
            s2: format!("p4ct{id}{tag}b"),
        };
        n.cleanup();
        if !sh(&["ip", "netns", "add", &n.h1]) || !sh(&["ip", "netns", "add", &n.h2]) {
            return None;
        }
        let ok = [
            vec!["ip", "link", "add", &n.s1, "type", "veth", "peer", "name", "eth1", "netns", &n.h1],
            vec!["ip", "link", "add", &n.s2, "type", "veth", "peer", "name", "eth1", "netns", &n.h2],
            vec!["ip", "-n", &n.h1, "link", "set", "eth1", "address", MAC1],
            vec!["ip", "-n", &n.h2, "link", "set", "eth1", "address", MAC2],
            vec!["ip", "-n", &n.h1, "addr", "add", "10.97.1.1/24", "dev", "eth1"],
            vec!["ip", "-n", &n.h2, "addr", "add", "10.97.2.1/24", "dev", "eth1"],
            vec!["ip", "-n", &n.h1, "link", "set", "eth1", "up"],
            vec!["ip", "-n", &n.h2, "link", "set", "eth1", "up"],
            vec!["ip", "link", "set", &n.s1, "up"],
            vec!["ip", "link", "set", &n.s2, "up"],
            vec!["ip", "-n", &n.h1, "route", "add", "default", "via", "10.97.1.254"],
            vec!["ip", "-n", &n.h2, "route", "add", "default", "via", "10.97.2.254"],
            vec!["ip", "-n", &n.h1, "neigh", "replace", "10.97.1.254", "lladdr", "02:97:00:00:00:fe", "dev", "eth1", "nud", "permanent"],
            vec!["ip", "-n", &n.h2, "neigh", "replace", "10.97.2.254", "lladdr", "02:97:00:00:00:fe", "dev", "eth1", "nud", "permanent"],
        ]
        .iter()
        .all(|c| sh(c));
        for (ns, dev) in [(&n.h1, "eth1"), (&n.h2, "eth1")] {
            sh(&["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off"]);
        }
        for dev in [&n.s1, &n.s2] {
            sh(&["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off"]);
        }
        if ok {
            Some(n)
        } else {
            n.cleanup();
            None
        }
    }

    fn cleanup(&self) {
        sh(&["ip", "link", "del", &self.s1]);
        sh(&["ip", "link", "del", &self.s2]);
        sh(&["ip", "netns", "del", &self.h1]);
        sh(&["ip", "netns", "del", &self.h2]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.cleanup();
    }
}

struct Switch(Child);

/// The scheduling policy of the process's thread named `name`
/// (/proc/PID/task/TID/stat field 41: 0 ordinary, 1 SCHED_FIFO).
fn thread_policy(pid: u32, name: &str) -> Option<u32> {
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // Fields after the command, which is in parentheses: state is field 3.
            let rest = &stat[stat.rfind(')')? + 2..];
            return rest.split_whitespace().nth(41 - 3)?.parse().ok();
        }
    }
    None
}

impl Drop for Switch {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (code, body)
}

fn port_field(admin: &str, port: u32, field: &str) -> serde_json::Value {
    let (_, b) = http(admin, "GET", &format!("/ports/{port}"), "");
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    v[field].clone()
}

const RECV_PY: &str = r#"
import socket, time, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', 5001))
s.settimeout(0.2)
end = time.monotonic() + WAIT
n = 0
d = 0.0
first = last = 0.0
print('ready', flush=True)
while time.monotonic() < end and n < EXPECT:
    try:
        b = s.recv(2048)
    except socket.timeout:
        continue
    now = time.monotonic()
    n += 1
    d += now - struct.unpack('!d', b[:8])[0]
    first = first or now
    last = now
print(n, (d / n * 1e6) if n else 0.0, (last - first) * 1e6)
"#;

const SEND_PY: &str = r#"
import socket, time, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(COUNT):
    s.sendto(struct.pack('!d', time.monotonic()) + b'x' * 100, ('10.97.2.1', 5001))
    if GAP > 0:
        time.sleep(GAP)
"#;

/// Sends `n` UDP datagrams from h1 to h2 (2 ms apart) and returns how many
/// arrived and the mean one-way delay (µs, CLOCK_MONOTONIC is shared by the
/// namespaces).
fn send_recv(net: &Net, n: u32, wait_s: f64) -> (u32, f64) {
    let (n, d, _) = send_recv_gap(net, n, wait_s, 0.002);
    (n, d)
}

/// Same, `gap` seconds apart; also returns the first-to-last arrival span (µs).
fn send_recv_gap(net: &Net, n: u32, wait_s: f64, gap: f64) -> (u32, f64, f64) {
    let recv = Command::new("ip")
        .args(["netns", "exec", &net.h2, "python3", "-c"])
        .arg(RECV_PY.replace("WAIT", &wait_s.to_string()).replace("EXPECT", &n.to_string()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut recv = recv;
    let mut out = recv.stdout.take().unwrap();
    let mut first = [0u8; 6];
    out.read_exact(&mut first).unwrap();
    let ok = Command::new("ip")
        .args(["netns", "exec", &net.h1, "python3", "-c"])
        .arg(SEND_PY.replace("COUNT", &n.to_string()).replace("GAP", &gap.to_string()))
        .status()
        .unwrap();
    assert!(ok.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let _ = recv.wait();
    let mut it = rest.split_whitespace();
    (it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn packets_flow_through_the_switch() {
    if !is_root() || !sh(&["ip", "netns", "list"]) || !sh(&["python3", "-c", "pass"]) {
        eprintln!("skipped: needs root, ip netns and python3");
        return;
    }
    let Some(net) = Net::new('e') else {
        eprintln!("skipped: cannot create network namespaces here");
        return;
    };
    let dir = tmpdir("e2e");
    let (json, info) = fixture_files(&dir);
    let (g, a) = (free_port(), free_port());
    let grpc = format!("127.0.0.1:{g}");
    let admin = format!("127.0.0.1:{a}");
    let child = Command::new(BIN)
        .args(["-i", &format!("1@{}", net.s1), "-i", &format!("2@{}", net.s2), "--json", &json, "--p4info", &info])
        .args(["--grpc-addr", &grpc, "--admin-addr", &admin, "--log-level", "error", "--depth", "2=100"])
        // As p4cc's runs start it with P4CC_REALTIME=all|switch (root).
        .args(["--rt-prio", "20"])
        .spawn()
        .unwrap();
    let mut sw = Switch(child);

    // P4Runtime: become primary, add the routes.
    let mut client = None;
    let t0 = Instant::now();
    while client.is_none() && t0.elapsed() < Duration::from_secs(10) {
        client = P4RuntimeClient::connect(format!("http://{grpc}")).await.ok();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = client.expect("switch answers on gRPC");
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let election = Some(p4v1::Uint128 { high: 0, low: 1 });
    tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate { device_id: 1, election_id: election, ..Default::default() })),
    })
    .await
    .unwrap();
    let mut stream = client.stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    stream.message().await.unwrap();
    let route = |net: [u8; 4], port: u8, mac: &str| {
        let mac: Vec<u8> = mac.split(':').map(|x| u8::from_str_radix(x, 16).unwrap()).collect();
        p4v1::Update {
            r#type: p4v1::update::Type::Insert as i32,
            entity: Some(p4v1::Entity {
                entity: Some(p4v1::entity::Entity::TableEntry(p4v1::TableEntry {
                    table_id: p4rt::fixture::T_LPM,
                    r#match: vec![p4v1::FieldMatch {
                        field_id: 1,
                        field_match_type: Some(p4v1::field_match::FieldMatchType::Lpm(p4v1::field_match::Lpm { value: net.to_vec(), prefix_len: 24 })),
                    }],
                    action: Some(p4v1::TableAction {
                        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                            action_id: p4rt::fixture::A_FORWARD,
                            params: vec![p4v1::action::Param { param_id: 1, value: vec![port] }, p4v1::action::Param { param_id: 2, value: mac }],
                        })),
                    }),
                    ..Default::default()
                })),
            }),
        }
    };
    client
        .write(p4v1::WriteRequest { device_id: 1, election_id: election, updates: vec![route([10, 97, 2, 0], 2, MAC2), route([10, 97, 1, 0], 1, MAC1)], ..Default::default() })
        .await
        .unwrap();

    // Forwarding.
    let (n, _) = send_recv(&net, 20, 10.0);
    assert_eq!(n, 20, "all datagrams forwarded");

    // The pipeline replaced while packets flow: the switch keeps running,
    // forwarding stops (no routes in the new pipeline) and resumes.
    let mut flood = Command::new("ip")
        .args(["netns", "exec", &net.h1, "python3", "-c"])
        .arg("import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nend=time.time()+1.0\nwhile time.time()<end:\n    s.sendto(b'y'*200,('10.97.2.1',5002))\n")
        .spawn()
        .unwrap();
    let cfg = p4v1::ForwardingPipelineConfig {
        p4info: Some(p4rt::fixture::mini_p4info()),
        p4_device_config: p4rt::fixture::mini_json().into_bytes(),
        cookie: None,
    };
    for _ in 0..5 {
        client
            .set_forwarding_pipeline_config(p4v1::SetForwardingPipelineConfigRequest {
                device_id: 1,
                election_id: election,
                action: p4v1::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
                config: Some(cfg.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    flood.wait().unwrap();
    assert!(sw.0.try_wait().unwrap().is_none(), "the switch survived pipeline swaps under traffic");
    let (n, _) = send_recv(&net, 5, 2.0);
    assert_eq!(n, 0, "no routes in the new pipeline");
    client
        .write(p4v1::WriteRequest { device_id: 1, election_id: election, updates: vec![route([10, 97, 2, 0], 2, MAC2), route([10, 97, 1, 0], 1, MAC1)], ..Default::default() })
        .await
        .unwrap();
    let (n, _) = send_recv(&net, 10, 10.0);
    assert_eq!(n, 10, "forwarding again after the routes are back");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(port_field(&admin, 2, "tx_pkts").as_u64().unwrap() >= 20);
    assert_eq!(thread_policy(sw.0.id(), "p4cc-packets"), Some(libc::SCHED_FIFO as u32), "--rt-prio 20 applied");
    assert!(port_field(&admin, 1, "rx_pkts").as_u64().unwrap() >= 20);
    assert_eq!(port_field(&admin, 2, "depth_pkts").as_u64().unwrap(), 100, "--depth applied");

    // Propagation delay, set at run time.
    let (code, body) = http(&admin, "PUT", "/ports/2", r#"{"delay_us": 30000}"#);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"delay_us\":30000"), "{body}");
    let (n, delay_us) = send_recv(&net, 5, 10.0);
    assert_eq!(n, 5);
    assert!(delay_us >= 30000.0 && delay_us < 150000.0, "one-way delay {delay_us} µs");

    // Line rate: 150-byte frames at 120 kbit/s take 10 ms each, so a burst
    // of 20 spreads over ~190 ms. With a depth of 5, a burst of 20 keeps
    // 1 on the wire + 5 queued and tail-drops the rest.
    let (code, _) = http(&admin, "PUT", "/ports/2", r#"{"delay_us": 0, "rate_bps": 120000}"#);
    assert_eq!(code, 200);
    let (n, _, span) = send_recv_gap(&net, 20, 10.0, 0.0);
    assert_eq!(n, 20);
    assert!(span > 170_000.0 && span < 400_000.0, "20 frames of 10 ms spread over {span} µs");
    // (12 kbit/s for this one: 100 ms a frame, so even a slow sender's
    // burst arrives well within one frame time.)
    let (code, _) = http(&admin, "PUT", "/ports/2", r#"{"depth_pkts": 5, "rate_bps": 12000}"#);
    assert_eq!(code, 200);
    let drops = port_field(&admin, 2, "tail_drops").as_u64().unwrap();
    let (n, _, _) = send_recv_gap(&net, 20, 3.0, 0.0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let dropped = port_field(&admin, 2, "tail_drops").as_u64().unwrap() - drops;
    assert_eq!(n as u64 + dropped, 20, "every datagram delivered or tail-dropped");
    assert!((5..=10).contains(&n), "{n} delivered through a 5-packet queue");
    let (code, _) = http(&admin, "PUT", "/ports/2", r#"{"depth_pkts": 64, "rate_bps": 0}"#);
    assert_eq!(code, 200);

    // Loss 1: nothing arrives, drops counted.
    let (code, _) = http(&admin, "PUT", "/ports/2", r#"{"delay_us": 0, "loss": 1.0}"#);
    assert_eq!(code, 200);
    let before = port_field(&admin, 2, "link_loss_drops").as_u64().unwrap();
    let (n, _) = send_recv(&net, 10, 2.0);
    assert_eq!(n, 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(port_field(&admin, 2, "link_loss_drops").as_u64().unwrap() - before, 10);

    // Bad admin input: 400 with a one-line JSON error; the settings stay.
    let (code, body) = http(&admin, "PUT", "/ports/2", r#"{"loss": 3}"#);
    assert_eq!(code, 400);
    assert!(body.starts_with("{\"error\":") && !body.trim().contains('\n'), "{body}");
    let (code, _) = http(&admin, "PUT", "/ports/2", r#"{"speed": 3}"#);
    assert_eq!(code, 400);
    let (code, _) = http(&admin, "PUT", "/ports/9", r#"{}"#);
    assert_eq!(code, 404);
    assert_eq!(port_field(&admin, 2, "loss").as_f64().unwrap(), 1.0);
    let (code, body) = http(&admin, "GET", "/ports", "");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    let (code, body) = http(&admin, "GET", "/status", "");
    assert_eq!(code, 200);
    assert!(body.contains("\"pipeline\":true"), "{body}");

    // Clean exit on SIGTERM.
    drop(stream);
    unsafe {
        libc::kill(sw.0.id() as i32, libc::SIGTERM);
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = sw.0.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "switch did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status:?}");
    let _ = std::fs::remove_dir_all(dir);
}

async fn connect_primary(grpc: &str) -> (P4RuntimeClient<tonic::transport::Channel>, tonic::Streaming<p4v1::StreamMessageResponse>, tokio::sync::mpsc::Sender<p4v1::StreamMessageRequest>) {
    let mut client = None;
    let t0 = Instant::now();
    while client.is_none() && t0.elapsed() < Duration::from_secs(10) {
        client = P4RuntimeClient::connect(format!("http://{grpc}")).await.ok();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = client.expect("switch answers on gRPC");
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate {
            device_id: 1,
            election_id: Some(p4v1::Uint128 { high: 0, low: 1 }),
            ..Default::default()
        })),
    })
    .await
    .unwrap();
    let mut stream = client.stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    stream.message().await.unwrap();
    (client, stream, tx)
}

/// Packet-in/out with a program that has controller headers
/// (p4rt/tests/fixtures/packet_io.p4) and `--cpu-port 64`. (Multi-thread:
/// the test blocks on child processes while the client streams.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_in_and_out_through_the_cpu_port() {
    if !is_root() || !sh(&["ip", "netns", "list"]) || !sh(&["python3", "-c", "pass"]) {
        eprintln!("skipped: needs root, ip netns and python3");
        return;
    }
    let Some(net) = Net::new('p') else {
        eprintln!("skipped: cannot create network namespaces here");
        return;
    };
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../p4rt/tests/fixtures");
    let json = fx.join("packet_io.json");
    let info = fx.join("packet_io.p4info.bin");
    let (g, a) = (free_port(), free_port());
    let grpc = format!("127.0.0.1:{g}");
    let child = Command::new(BIN)
        .args(["-i", &format!("1@{}", net.s1), "-i", &format!("2@{}", net.s2), "--cpu-port", "64"])
        .args(["--json", json.to_str().unwrap(), "--p4info", info.to_str().unwrap()])
        .args(["--grpc-addr", &grpc, "--admin-addr", &format!("127.0.0.1:{a}"), "--log-level", "error"])
        .spawn()
        .unwrap();
    let _sw = Switch(child);
    let (_client, mut stream, tx) = connect_primary(&grpc).await;

    // Packet-in: a datagram from h2 reaches the controller, tagged with port 2.
    let ok = Command::new("ip")
        .args(["netns", "exec", &net.h2, "python3", "-c"])
        .arg("import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.sendto(b'hello-cpu',('10.97.2.254',9))")
        .status()
        .unwrap();
    assert!(ok.success());
    // (Interfaces coming up send IPv6 neighbour discovery too: skip that.)
    let pin = loop {
        let m = tokio::time::timeout(Duration::from_secs(5), stream.message()).await.expect("a packet-in").unwrap().unwrap();
        if let Some(p4v1::stream_message_response::Update::Packet(p)) = m.update {
            if p.payload.windows(9).any(|w| w == b"hello-cpu") {
                break p;
            }
        }
    };
    assert_eq!(pin.metadata, vec![
        p4v1::PacketMetadata { metadata_id: 1, value: vec![2] },
        p4v1::PacketMetadata { metadata_id: 2, value: vec![0] },
    ]);
    assert!(pin.payload.windows(9).any(|w| w == b"hello-cpu"), "the frame follows the header");
    assert_eq!(&pin.payload[0..6], &[0x02, 0x97, 0, 0, 0, 0xfe], "destination MAC of the gateway");

    // Packet-out: a UDP datagram for h1, sent out of port 1.
    let recv = Command::new("ip")
        .args(["netns", "exec", &net.h1, "python3", "-c"])
        .arg("import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('0.0.0.0',5003))\ns.settimeout(5)\nprint('ready',flush=True)\nprint(s.recv(100).decode())")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut recv = recv;
    let mut out = recv.stdout.take().unwrap();
    let mut first = [0u8; 6];
    out.read_exact(&mut first).unwrap();
    let mac1: Vec<u8> = MAC1.split(':').map(|x| u8::from_str_radix(x, 16).unwrap()).collect();
    let mut frame = mac1.clone();
    frame.extend_from_slice(&[0x02, 0x97, 0, 0, 0, 0xfe, 0x08, 0x00]);
    let payload = b"from-controller";
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 97, 1, 254, 10, 97, 1, 1];
    let total = (20 + 8 + payload.len()) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let mut sum: u32 = ip.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&[0x13, 0x88, 0x13, 0x8b]);
    frame.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    frame.extend_from_slice(&[0, 0]);
    frame.extend_from_slice(payload);
    tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Packet(p4v1::PacketOut {
            payload: frame,
            metadata: vec![
                p4v1::PacketMetadata { metadata_id: 1, value: vec![1] },
                p4v1::PacketMetadata { metadata_id: 2, value: vec![0] },
            ],
        })),
    })
    .await
    .unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let _ = recv.wait();
    let (_, ports) = http(&format!("127.0.0.1:{a}"), "GET", "/ports", "");
    let (_, status) = http(&format!("127.0.0.1:{a}"), "GET", "/status", "");
    if rest.trim() != "from-controller" {
        while let Ok(Ok(Some(m))) = tokio::time::timeout(Duration::from_millis(500), stream.message()).await {
            eprintln!("stream: {m:?}");
        }
    }
    assert_eq!(rest.trim(), "from-controller", "ports: {ports} status: {status}");

    // A packet-out missing a metadata field is refused on the stream.
    tx.send(p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Packet(p4v1::PacketOut { payload: vec![1, 2, 3], metadata: vec![] })),
    })
    .await
    .unwrap();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(5), stream.message()).await.expect("a stream error").unwrap().unwrap();
        if let Some(p4v1::stream_message_response::Update::Error(e)) = m.update {
            assert_eq!(e.canonical_code, tonic::Code::InvalidArgument as i32);
            break;
        }
    }
}
