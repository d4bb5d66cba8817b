//! Real sockets on 127.0.0.1: the user-space transport and kernel TCP,
//! end to end, byte-exact, with garbage thrown at the receiver.

use cc::{AckSample, CongestionControl};
use datapath::clock::Clock;
use datapath::tcp::{self, TcpReceiverOptions, TcpSenderOptions};
use datapath::udp::{self, UdpReceiverOptions, UdpSenderOptions};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use traffic::log::FlowLogger;
use traffic::workload::Schedule;
use traffic::FlowSpec;
use transport::receiver::ReceiverConfig;
use transport::RecvStatus;

struct Window(u64, Option<u64>);
impl CongestionControl for Window {
    fn name(&self) -> &'static str {
        "test-window"
    }
    fn on_ack(&mut self, _: &AckSample) {}
    fn on_loss(&mut self, _: u64, _: u64) {}
    fn on_rto(&mut self, _: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.0)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        self.1
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("p4cc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn udp_loopback_byte_exact_with_garbage() {
    let port = free_udp_port();
    let listen = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let dir = tmpdir("udp");
    let clock = Clock::new();
    let stop_rx = AtomicBool::new(false);
    let stop_tx = AtomicBool::new(false);
    let ropts = UdpReceiverOptions {
        listen,
        cfg: ReceiverConfig::default(),
        sock_buf: 4 << 20,
        duration_ns: Some(30_000_000_000),
        max_flows: Some(3),
        out_dir: Some(dir.join("recv")),
        rt_prio: None,
    };
    std::thread::scope(|s| {
        let rx = s.spawn(|| udp::run_receiver(&ropts, &clock, &stop_rx));
        std::thread::sleep(Duration::from_millis(100));
        // garbage at the receiver port: counted, never fatal
        let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..200u32 {
            let len = (i as usize * 37) % 1500;
            let mut v: Vec<u8> = (0..len).map(|k| (k as u32 ^ i) as u8).collect();
            if i % 2 == 0 && len > 8 {
                v[0] = 1; // plausible shim, broken header
                v[1] = (i % 5) as u8;
                v[3] = 0;
            }
            junk.send_to(&v, listen).unwrap();
        }
        let start = clock.now();
        let dst = listen.into();
        let w = Schedule::new(
            "test",
            vec![
                (dst, start, Some(3_000_000), None),
                (dst, start + 10_000_000, Some(1), None),
                (dst, start, None, Some(start + 300_000_000)),
            ],
            1,
            42,
        );
        let logger = FlowLogger::create(&dir.join("send"), 10_000_000, 1, false).unwrap();
        let opts = UdpSenderOptions { cc_label: "test-window".into(), ..Default::default() };
        let make = |f: &FlowSpec| -> Result<Box<dyn CongestionControl>, String> {
            // the long flow is paced at 50 Mb/s
            let rate = f.size.is_none().then_some(50_000_000);
            Ok(Box::new(Window(64 * 1336, rate)))
        };
        let rep = udp::run_sender(&opts, Box::new(w), Box::new(make), logger, &clock, &stop_tx).unwrap();
        assert_eq!(rep.flows_complete, 3, "{rep:?}");
        assert!(rep.pacing.samples > 100, "long flow was paced");
        let rrep = rx.join().unwrap().unwrap();
        stop_rx.store(true, Ordering::Relaxed);
        assert_eq!(rrep.flows.len(), 3);
        for f in &rrep.flows {
            assert_eq!(f.status, RecvStatus::Complete, "{f:?}");
            assert_eq!(Some(f.bytes), f.size);
            assert_eq!(f.corrupt_pkts, 0);
            assert_eq!(f.ecn_pkts[2], f.data_pkts, "every data packet arrived ECT(0)");
        }
        let sizes: Vec<u64> = {
            let mut v: Vec<u64> = rrep.flows.iter().map(|f| f.bytes).collect();
            v.sort();
            v
        };
        assert_eq!(sizes[0], 1);
        assert!(sizes[2].max(sizes[1]) >= 3_000_000);
        assert!(rrep.stats.malformed() >= 150, "{:?}", rrep.stats);
        let flows = std::fs::read_to_string(dir.join("send/flows.csv")).unwrap();
        assert_eq!(flows.lines().count(), 4);
        assert!(flows.lines().skip(1).all(|l| l.contains(",complete,") || l.contains(",stopped,")), "{flows}");
        assert!(flows.contains(",127.0.0.1:"), "source address resolved: {flows}");
        let recv = std::fs::read_to_string(dir.join("recv/recv_flows.csv")).unwrap();
        assert_eq!(recv.lines().count(), 4);
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn udp_sender_reports_missing_receiver() {
    let port = free_udp_port();
    let dir = tmpdir("nore");
    let clock = Clock::new();
    let stop = AtomicBool::new(false);
    let dst = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into();
    let w = Schedule::new("test", vec![(dst, 0, Some(100_000), None)], 1, 1);
    let logger = FlowLogger::create(&dir, 10_000_000, 1, false).unwrap();
    let mut opts = UdpSenderOptions::default();
    opts.sender.give_up_ns = 300_000_000;
    opts.sender.init_rto_ns = 20_000_000;
    let make = |_: &FlowSpec| -> Result<Box<dyn CongestionControl>, String> { Ok(Box::new(Window(10 * 1336, None))) };
    let rep = udp::run_sender(&opts, Box::new(w), Box::new(make), logger, &clock, &stop).unwrap();
    assert_eq!(rep.flows_failed, 1);
    let flows = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
    assert!(flows.contains(",no-receiver,"), "{flows}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kernel_tcp_loopback_cubic() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let dir = tmpdir("tcp");
    let clock = Clock::new();
    let stop = AtomicBool::new(false);
    let ropts = TcpReceiverOptions {
        listen,
        cc: None,
        duration_ns: Some(30_000_000_000),
        max_flows: Some(2),
        out_dir: Some(dir.join("recv")),
        idle_timeout_ns: 10_000_000_000,
    };
    std::thread::scope(|s| {
        let rx = s.spawn(|| tcp::run_receiver(&ropts, &clock, &stop));
        std::thread::sleep(Duration::from_millis(100));
        let dst = listen.into();
        let now = clock.now();
        let mut w = Schedule::new("test", vec![(dst, now, Some(5_000_000), None), (dst, now, None, Some(now + 200_000_000))], 7, 3);
        let mut logger = FlowLogger::create(&dir.join("send"), 10_000_000, 1, false).unwrap();
        let opts = TcpSenderOptions { cc: "cubic".into(), label: "cubic".into(), ..Default::default() };
        let rep = tcp::run_sender(&opts, &mut w, &mut logger, &clock, &AtomicBool::new(false)).unwrap();
        assert_eq!(rep.flows_complete, 2, "{rep:?}");
        let r = rx.join().unwrap().unwrap();
        assert_eq!(r.flows.len(), 2);
        for f in &r.flows {
            assert_eq!(f.status, "complete", "{f:?}");
            assert_eq!(f.corrupt_bytes, 0);
        }
        assert!(r.flows.iter().any(|f| f.bytes == 5_000_000));
        let flows = std::fs::read_to_string(dir.join("send/flows.csv")).unwrap();
        assert!(flows.contains(",tcp,cubic,"), "{flows}");
        let rtt = std::fs::read_to_string(dir.join("send/rtt.csv")).unwrap();
        assert!(rtt.lines().count() > 2, "TCP_INFO samples logged");
    });
    // an unknown congestion control is reported per flow
    let dir2 = tmpdir("tcp2");
    let dst = listen.into();
    let mut w = Schedule::new("test", vec![(dst, 0, Some(1000), None)], 1, 3);
    let mut logger = FlowLogger::create(&dir2, 10_000_000, 1, false).unwrap();
    let opts = TcpSenderOptions { cc: "no_such_cc".into(), label: "x".into(), ..Default::default() };
    let rep = tcp::run_sender(&opts, &mut w, &mut logger, &clock, &AtomicBool::new(false)).unwrap();
    assert_eq!(rep.flows_failed, 1);
    let flows = std::fs::read_to_string(dir2.join("flows.csv")).unwrap();
    assert!(flows.contains("TCP_CONGESTION=no_such_cc"), "{flows}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}
