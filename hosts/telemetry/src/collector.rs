//! The postcard collector: a UDP socket whose datagrams are postcards,
//! written as CSV rows ([`Postcard::CSV_HEADER`]); with `feed`, it also
//! returns each transport data packet's postcard to the packet's sender
//! ([`crate::feed`]).

use crate::postcard::Postcard;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    #[error("cannot bind UDP {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Output { path: String, source: std::io::Error },
    #[error("socket error: {0}")]
    Socket(std::io::Error),
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CollectorStats {
    pub datagrams: u64,
    pub postcards: u64,
    pub malformed: u64,
    /// Postcards returned to senders (feed mode).
    pub fed: u64,
}

impl CollectorStats {
    pub fn to_json(&self) -> String {
        format!(
            "{{\"datagrams\": {}, \"postcards\": {}, \"malformed\": {}, \"fed\": {}}}",
            self.datagrams, self.postcards, self.malformed, self.fed
        )
    }
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Handles one datagram: appends a row (and returns the postcard) or
/// counts it as malformed.
pub fn handle_datagram<W: Write>(
    buf: &[u8],
    recv_unix_ns: u64,
    out: &mut W,
    stats: &mut CollectorStats,
) -> std::io::Result<Option<Postcard>> {
    stats.datagrams += 1;
    match Postcard::parse(buf) {
        Ok(p) => {
            stats.postcards += 1;
            writeln!(out, "{}", p.csv_row(recv_unix_ns))?;
            Ok(Some(p))
        }
        Err(_) => {
            stats.malformed += 1;
            Ok(None)
        }
    }
}

/// Runs until `stop` is set (checked every 100 ms) or `max_duration`
/// elapses; flushes the CSV at least once per second and on return. With
/// `feed`, each transport data packet's postcard also goes back to its
/// sender from the listening socket.
pub fn run(
    listen: SocketAddr,
    out_path: &Path,
    stop: &AtomicBool,
    max_duration: Option<Duration>,
    feed: bool,
) -> Result<CollectorStats, CollectorError> {
    let sock = UdpSocket::bind(listen).map_err(|source| CollectorError::Bind { addr: listen, source })?;
    sock.set_read_timeout(Some(Duration::from_millis(100))).map_err(CollectorError::Socket)?;
    let oerr = |source| CollectorError::Output { path: out_path.display().to_string(), source };
    let mut out = BufWriter::with_capacity(1 << 20, File::create(out_path).map_err(oerr)?);
    writeln!(out, "{}", Postcard::CSV_HEADER).map_err(oerr)?;
    let mut stats = CollectorStats::default();
    let mut buf = vec![0u8; 65536];
    let start = Instant::now();
    let mut last_flush = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Some(d) = max_duration {
            if start.elapsed() >= d {
                break;
            }
        }
        match sock.recv_from(&mut buf) {
            Ok((n, _from)) => {
                let pc = handle_datagram(&buf[..n], unix_ns(), &mut out, &mut stats).map_err(oerr)?;
                if let Some((to, bytes)) = pc.filter(|_| feed).as_ref().and_then(crate::feed::feed_for) {
                    // A send that fails (no route, buffer full) is a lost
                    // report, as a dropped packet would be.
                    if sock.send_to(&bytes, to).is_ok() {
                        stats.fed += 1;
                    }
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CollectorError::Socket(e)),
        }
        if last_flush.elapsed() >= Duration::from_secs(1) {
            out.flush().map_err(oerr)?;
            last_flush = Instant::now();
        }
    }
    out.flush().map_err(oerr)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn counts_malformed_and_writes_rows() {
        let p = Postcard {
            units: crate::postcard::UNITS_V1MODEL,
            switch_id: 1,
            ingress_port: 1,
            egress_port: 2,
            enq_qdepth: 3,
            deq_qdepth: 4,
            deq_timedelta: 5,
            ingress_ts: 6,
            egress_ts: 7,
            src_ip: Ipv4Addr::new(1, 2, 3, 4),
            dst_ip: Ipv4Addr::new(5, 6, 7, 8),
            protocol: 6,
            ecn: 1,
            src_port: 9,
            dst_port: 10,
            pkt_len: 11,
        };
        let mut out = Vec::new();
        let mut st = CollectorStats::default();
        handle_datagram(&p.encode(), 99, &mut out, &mut st).unwrap();
        handle_datagram(&[1, 2, 3], 99, &mut out, &mut st).unwrap();
        handle_datagram(&[], 99, &mut out, &mut st).unwrap();
        let mut bad = p.encode();
        bad[0] = 0;
        handle_datagram(&bad, 99, &mut out, &mut st).unwrap();
        assert_eq!(st, CollectorStats { datagrams: 4, postcards: 1, malformed: 3, fed: 0 });
        assert_eq!(String::from_utf8(out).unwrap(), "99,1,2,3,4,5,7,1.2.3.4,5.6.7.8,6,9,10,1,11,packets\n");
    }

    #[test]
    fn real_socket() {
        let stop = AtomicBool::new(false);
        let dir = std::env::temp_dir().join(format!("p4cc-collect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pc.csv");
        // find a free port
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        std::thread::scope(|s| {
            let h = s.spawn(|| run(addr, &path, &stop, Some(Duration::from_secs(5)), true));
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            tx.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
            let mut raw = [1u8; 54];
            raw[1] = 0x11;
            let mut p = Postcard::parse(&raw).unwrap();
            // A data packet's postcard from the "sender" tx: fed back to it.
            p.src_ip = std::net::Ipv4Addr::LOCALHOST;
            p.src_port = tx.local_addr().unwrap().port();
            p.dst_port = crate::shim::DATA_PORT;
            p.protocol = 17;
            let mut back = 0;
            let mut rbuf = [0u8; 128];
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(10));
                tx.send_to(&p.encode(), addr).unwrap();
                tx.send_to(b"garbage", addr).unwrap();
                if let Ok((n, _)) = tx.recv_from(&mut rbuf) {
                    assert_eq!(crate::feed::parse(&rbuf[..n]), Some(p));
                    back += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
            let st = h.join().unwrap().unwrap();
            assert!(st.postcards >= 40, "{st:?}");
            assert!(st.malformed >= 40);
            assert!(back >= 40 && st.fed >= 40, "{back} {st:?}");
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("recv_unix_ns,"));
        assert!(text.lines().count() >= 41);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
