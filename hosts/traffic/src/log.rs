//! Flow logs: the files an experiment runner reads (formats in
//! docs/hosts.md). Every timestamp is unix-epoch nanoseconds.
//!
//! * `flows.csv`: one row per flow ([`FLOWS_HEADER`]).
//! * `tput.csv`: per-flow throughput series in fixed bins aligned to
//!   multiples of the bin width in unix time ([`TPUT_HEADER`]).
//! * `rtt.csv`: RTT samples (+ echoed queue depth) ([`RTT_HEADER`]).
//! * `hops.csv` (optional): echoed hop records ([`HOPS_HEADER`]).
//! * `cc_state.csv`: each flow's algorithm's own state and counters at the
//!   flow's end, one row per name ([`CC_STATE_HEADER`]).
//! * `mi.csv` (PCC senders only): each scored monitor interval
//!   ([`MI_HEADER`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub const FLOWS_HEADER: &str = "flow_id,workload,round,datapath,cc,src,dst,size_bytes,start_unix_ns,end_unix_ns,fct_ns,bytes_acked,status,reason,pkts_sent,retx_pkts,rto_count,loss_events,ce_bytes,rtt_samples,mean_rtt_ns,min_rtt_ns,max_qdepth_pkts,ecn";
pub const TPUT_HEADER: &str = "flow_id,bin_start_unix_ns,bin_ns,bytes,mbps";
pub const RTT_HEADER: &str = "flow_id,t_unix_ns,rtt_ns,qdepth_pkts,cwnd_bytes,pacing_bps,inflight_bytes,target_delay_ns";
pub const HOPS_HEADER: &str = "flow_id,t_unix_ns,hop,switch_id,egress_port,enq_qdepth,deq_timedelta_us,egress_ts_us";
pub const CC_STATE_HEADER: &str = "flow_id,name,value";
pub const MI_HEADER: &str = "flow_id,t_unix_ns,mi,phase,rate_bps,duration_ns,sent_pkts,loss,rtt_gradient,utility,next_rate_bps";

#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct LogError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Final facts about one flow (one `flows.csv` row).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowRecord {
    pub flow_id: u32,
    pub workload: String,
    pub round: Option<u32>,
    pub datapath: String,
    pub cc: String,
    pub src: String,
    pub dst: String,
    /// Requested size; None for long flows.
    pub size_bytes: Option<u64>,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub bytes_acked: u64,
    /// "complete", "stopped" (long flow ended by its schedule, all acked),
    /// "peer-gone", "no-receiver", "interrupted", "timeout", "error".
    pub status: String,
    pub reason: String,
    pub pkts_sent: u64,
    pub retx_pkts: u64,
    pub rto_count: u64,
    pub loss_events: u64,
    pub ce_bytes: u64,
    pub rtt_samples: u64,
    pub mean_rtt_ns: Option<u64>,
    pub min_rtt_ns: Option<u64>,
    pub max_qdepth_pkts: Option<u32>,
    /// udp: "ect0" or "off" (what data packets carry); tcp: "negotiated"
    /// or "off" (from TCP_INFO after the handshake).
    pub ecn: String,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// CSV field quoting (reasons may contain commas).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\"").replace('\n', " "))
    } else {
        s.to_string()
    }
}

impl FlowRecord {
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.flow_id,
            self.workload,
            opt(self.round),
            self.datapath,
            csv_field(&self.cc),
            self.src,
            self.dst,
            opt(self.size_bytes),
            self.start_unix_ns,
            self.end_unix_ns,
            self.end_unix_ns.saturating_sub(self.start_unix_ns),
            self.bytes_acked,
            self.status,
            csv_field(&self.reason),
            self.pkts_sent,
            self.retx_pkts,
            self.rto_count,
            self.loss_events,
            self.ce_bytes,
            self.rtt_samples,
            opt(self.mean_rtt_ns),
            opt(self.min_rtt_ns),
            opt(self.max_qdepth_pkts),
            self.ecn,
        )
    }
}

/// Bytes per fixed-width bin, bins aligned to multiples of `bin_ns` in
/// unix time so series of different flows and hosts line up.
#[derive(Debug, Clone)]
pub struct ThroughputSeries {
    pub bin_ns: u64,
    /// Every bin but the open one.
    bins: BTreeMap<u64, u64>,
    /// The bin the last `add` went to, kept apart from `bins`: a sender
    /// adds every ACK's bytes, nearly always to the bin of the one before,
    /// and a map insert with a division each time was a hundred and sixty
    /// instructions an ACK in the simulator.
    open: Option<OpenBin>,
}

#[derive(Debug, Clone, Copy)]
struct OpenBin {
    bin: u64,
    bytes: u64,
    /// Its span in unix ns, `[lo, hi)`: an add is in it without a division.
    lo: u64,
    hi: u64,
}

impl ThroughputSeries {
    pub fn new(bin_ns: u64) -> Self {
        ThroughputSeries { bin_ns: bin_ns.max(1), bins: BTreeMap::new(), open: None }
    }
    #[inline]
    pub fn add(&mut self, unix_ns: u64, bytes: u64) {
        match &mut self.open {
            Some(o) if (o.lo..o.hi).contains(&unix_ns) => o.bytes += bytes,
            _ => self.reopen(unix_ns, bytes),
        }
    }
    /// Moves the open bin into the map and opens `unix_ns`'s with what it
    /// already held plus `bytes`.
    fn reopen(&mut self, unix_ns: u64, bytes: u64) {
        if let Some(o) = self.open.take() {
            self.bins.insert(o.bin, o.bytes);
        }
        let bin = unix_ns / self.bin_ns;
        let lo = bin * self.bin_ns;
        let had = self.bins.remove(&bin).unwrap_or(0);
        self.open = Some(OpenBin { bin, bytes: had + bytes, lo, hi: lo.saturating_add(self.bin_ns) });
    }
    /// Marks a bin as present (zero bytes) so series cover the flow's life.
    pub fn touch(&mut self, unix_ns: u64) {
        let bin = unix_ns / self.bin_ns;
        if self.open.map(|o| o.bin) != Some(bin) {
            self.bins.entry(bin).or_insert(0);
        }
    }
    pub fn total(&self) -> u64 {
        self.bins.values().sum::<u64>() + self.open.map_or(0, |o| o.bytes)
    }
    /// (bin start unix ns, bytes) for every bin from the first to the last,
    /// zero-filled.
    pub fn rows(&self) -> Vec<(u64, u64)> {
        let mut bins = self.bins.clone();
        if let Some(o) = self.open {
            bins.insert(o.bin, o.bytes);
        }
        let (Some((&first, _)), Some((&last, _))) = (bins.iter().next(), bins.iter().next_back()) else {
            return vec![];
        };
        (first..=last).map(|b| (b * self.bin_ns, bins.get(&b).copied().unwrap_or(0))).collect()
    }
}

/// Writes the four files of a sender process.
pub struct FlowLogger {
    dir: PathBuf,
    flows: BufWriter<File>,
    tput: BufWriter<File>,
    rtt: BufWriter<File>,
    hops: Option<BufWriter<File>>,
    cc_state: BufWriter<File>,
    /// Opened with its first row: only PCC senders have monitor intervals.
    mi: Option<BufWriter<File>>,
    /// Log one RTT sample out of this many (1 = all).
    pub rtt_every: u64,
    rtt_counter: u64,
    pub bin_ns: u64,
}

impl FlowLogger {
    pub fn create(dir: &Path, bin_ns: u64, rtt_every: u64, with_hops: bool) -> Result<FlowLogger, LogError> {
        let err = |p: &Path| {
            let p = p.to_path_buf();
            move |source| LogError { path: p, source }
        };
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let open = |name: &str, header: &str| -> Result<BufWriter<File>, LogError> {
            let p = dir.join(name);
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&p).map_err(err(&p))?);
            writeln!(w, "{header}").map_err(err(&p))?;
            Ok(w)
        };
        Ok(FlowLogger {
            dir: dir.to_path_buf(),
            flows: open("flows.csv", FLOWS_HEADER)?,
            tput: open("tput.csv", TPUT_HEADER)?,
            rtt: open("rtt.csv", RTT_HEADER)?,
            hops: if with_hops { Some(open("hops.csv", HOPS_HEADER)?) } else { None },
            cc_state: open("cc_state.csv", CC_STATE_HEADER)?,
            mi: None,
            rtt_every: rtt_every.max(1),
            rtt_counter: 0,
            bin_ns: bin_ns.max(1),
        })
    }

    fn e(&self, name: &str) -> impl FnOnce(std::io::Error) -> LogError {
        let path = self.dir.join(name);
        move |source| LogError { path, source }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the next RTT sample should be logged (decimation).
    pub fn want_rtt(&mut self) -> bool {
        self.rtt_counter += 1;
        self.rtt_counter.is_multiple_of(self.rtt_every)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn rtt(
        &mut self,
        flow_id: u32,
        t_unix_ns: u64,
        rtt_ns: u64,
        qdepth: Option<u32>,
        cwnd: Option<u64>,
        pacing: Option<u64>,
        inflight: u64,
        target_delay: Option<u64>,
    ) -> Result<(), LogError> {
        let e = self.e("rtt.csv");
        writeln!(
            self.rtt,
            "{},{},{},{},{},{},{},{}",
            flow_id,
            t_unix_ns,
            rtt_ns,
            opt(qdepth),
            opt(cwnd),
            opt(pacing),
            inflight,
            opt(target_delay)
        )
        .map_err(e)
    }

    /// (switch_id, egress_port, enq_qdepth, deq_timedelta_us, egress_ts_us) per hop, newest first.
    pub fn hops(&mut self, flow_id: u32, t_unix_ns: u64, hops: &[(u16, u16, u32, u32, u64)]) -> Result<(), LogError> {
        let path = self.dir.join("hops.csv");
        if let Some(w) = self.hops.as_mut() {
            for (i, h) in hops.iter().enumerate() {
                writeln!(w, "{},{},{},{},{},{},{},{}", flow_id, t_unix_ns, i, h.0, h.1, h.2, h.3, h.4)
                    .map_err(|source| LogError { path: path.clone(), source })?;
            }
        }
        Ok(())
    }

    pub fn has_hops(&self) -> bool {
        self.hops.is_some()
    }

    pub fn flow(&mut self, rec: &FlowRecord, series: &ThroughputSeries) -> Result<(), LogError> {
        let e = self.e("flows.csv");
        writeln!(self.flows, "{}", rec.csv_row()).map_err(e)?;
        let path = self.dir.join("tput.csv");
        for (start, bytes) in series.rows() {
            let mbps = bytes as f64 * 8.0 / series.bin_ns as f64 * 1e3;
            writeln!(self.tput, "{},{},{},{},{:.3}", rec.flow_id, start, series.bin_ns, bytes, mbps)
                .map_err(|source| LogError { path: path.clone(), source })?;
        }
        Ok(())
    }

    /// The flow's algorithm's state at its end (`CongestionControl::state`);
    /// a value that is not a finite number is left empty.
    pub fn cc_state<'a>(&mut self, flow_id: u32, state: impl IntoIterator<Item = (&'a str, f64)>) -> Result<(), LogError> {
        let path = self.dir.join("cc_state.csv");
        for (name, v) in state {
            let v = if v.is_finite() { v.to_string() } else { String::new() };
            writeln!(self.cc_state, "{flow_id},{},{v}", csv_field(name)).map_err(|source| LogError { path: path.clone(), source })?;
        }
        Ok(())
    }

    /// One `mi.csv` row: `values` in [`MI_HEADER`]'s order after
    /// `flow_id` and `t_unix_ns`; a value that is not a finite number is
    /// left empty. The file is created with its first row.
    pub fn mi(&mut self, flow_id: u32, t_unix_ns: u64, values: &[f64]) -> Result<(), LogError> {
        let path = self.dir.join("mi.csv");
        let err = |source| LogError { path: path.clone(), source };
        let w = match &mut self.mi {
            Some(w) => w,
            None => {
                let mut w = BufWriter::with_capacity(1 << 16, File::create(&path).map_err(err)?);
                writeln!(w, "{MI_HEADER}").map_err(err)?;
                self.mi.insert(w)
            }
        };
        write!(w, "{flow_id},{t_unix_ns}").map_err(err)?;
        for v in values {
            if v.is_finite() {
                write!(w, ",{v}").map_err(err)?;
            } else {
                write!(w, ",").map_err(err)?;
            }
        }
        writeln!(w).map_err(err)
    }

    pub fn flush(&mut self) -> Result<(), LogError> {
        self.flows.flush().map_err(self.e("flows.csv"))?;
        self.cc_state.flush().map_err(self.e("cc_state.csv"))?;
        if let Some(w) = self.mi.as_mut() {
            let path = self.dir.join("mi.csv");
            w.flush().map_err(|source| LogError { path, source })?;
        }
        self.tput.flush().map_err(self.e("tput.csv"))?;
        self.rtt.flush().map_err(self.e("rtt.csv"))?;
        if let Some(h) = self.hops.as_mut() {
            let path = self.dir.join("hops.csv");
            h.flush().map_err(|source| LogError { path, source })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_rows_are_aligned_and_zero_filled() {
        let mut s = ThroughputSeries::new(10_000_000);
        s.add(1_000_000_005_000_000, 100);
        s.add(1_000_000_035_000_000, 50);
        s.add(1_000_000_036_000_000, 50);
        assert_eq!(
            s.rows(),
            vec![
                (1_000_000_000_000_000, 100),
                (1_000_000_010_000_000, 0),
                (1_000_000_020_000_000, 0),
                (1_000_000_030_000_000, 100)
            ]
        );
        assert_eq!(s.total(), 200);
    }

    #[test]
    fn a_bin_gets_every_add_whichever_bin_came_between() {
        // Back to an earlier bin, a touch of the open one and of a later
        // one: the same rows a map per add would give.
        let mut s = ThroughputSeries::new(10);
        for (t, b) in [(5, 1), (7, 2), (25, 4), (8, 8), (26, 16), (3, 32)] {
            s.add(t, b);
        }
        s.touch(27);
        s.touch(41);
        assert_eq!(s.rows(), vec![(0, 43), (10, 0), (20, 20), (30, 0), (40, 0)]);
        assert_eq!(s.total(), 63);
        let mut only_touched = ThroughputSeries::new(10);
        only_touched.touch(15);
        assert_eq!(only_touched.rows(), vec![(10, 0)]);
        assert_eq!(ThroughputSeries::new(10).rows(), vec![]);
    }

    #[test]
    fn files_have_headers_and_rows() {
        let dir = std::env::temp_dir().join(format!("p4cc-log-{}", std::process::id()));
        let mut l = FlowLogger::create(&dir, 10_000_000, 1, true).unwrap();
        let mut s = ThroughputSeries::new(10_000_000);
        s.add(20_000_000, 1250);
        let r = FlowRecord {
            flow_id: 3,
            workload: "single".into(),
            datapath: "udp".into(),
            cc: "reno".into(),
            src: "10.99.0.1:5000".into(),
            dst: "10.99.0.2:7360".into(),
            size_bytes: Some(1250),
            start_unix_ns: 20_000_000,
            end_unix_ns: 21_000_000,
            bytes_acked: 1250,
            status: "complete".into(),
            reason: "a, \"b\"".into(),
            ..Default::default()
        };
        l.flow(&r, &s).unwrap();
        l.rtt(3, 20_500_000, 100_000, Some(4), Some(14000), None, 1000, Some(30_000)).unwrap();
        l.hops(3, 20_500_000, &[(1, 2, 3, 4, 5)]).unwrap();
        l.cc_state(3, [("alpha", 0.0625), ("rate, bps", 1.5e9), ("ratio", f64::NAN)]).unwrap();
        // No monitor interval yet: no mi.csv.
        l.flush().unwrap();
        assert!(!dir.join("mi.csv").exists());
        l.mi(3, 20_600_000, &[7.0, 1.0, 9.5e7, 3e7, 250.0, 0.02, -0.001, f64::NAN, 9e7]).unwrap();
        l.mi(3, 20_700_000, &[8.0, 2.0, 9e7, 3e7, 240.0, 0.0, 0.0, 55.5, 9e7]).unwrap();
        l.flush().unwrap();
        let flows = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
        let mut lines = flows.lines();
        assert_eq!(lines.next(), Some(FLOWS_HEADER));
        let row = lines.next().unwrap();
        assert!(row.starts_with("3,single,,udp,reno,10.99.0.1:5000,10.99.0.2:7360,1250,20000000,21000000,1000000,1250,complete,\"a, \"\"b\"\"\""));
        let tput = std::fs::read_to_string(dir.join("tput.csv")).unwrap();
        assert_eq!(tput.lines().nth(1), Some("3,20000000,10000000,1250,1.000"));
        let rtt = std::fs::read_to_string(dir.join("rtt.csv")).unwrap();
        assert_eq!(rtt.lines().nth(1), Some("3,20500000,100000,4,14000,,1000,30000"));
        let hops = std::fs::read_to_string(dir.join("hops.csv")).unwrap();
        assert_eq!(hops.lines().nth(1), Some("3,20500000,0,1,2,3,4,5"));
        let cc = std::fs::read_to_string(dir.join("cc_state.csv")).unwrap();
        let want = [CC_STATE_HEADER, "3,alpha,0.0625", "3,\"rate, bps\",1500000000", "3,ratio,"];
        assert_eq!(cc.lines().collect::<Vec<_>>(), want);
        let mi = std::fs::read_to_string(dir.join("mi.csv")).unwrap();
        let want = [MI_HEADER, "3,20600000,7,1,95000000,30000000,250,0.02,-0.001,,90000000", "3,20700000,8,2,90000000,30000000,240,0,0,55.5,90000000"];
        assert_eq!(mi.lines().collect::<Vec<_>>(), want);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
