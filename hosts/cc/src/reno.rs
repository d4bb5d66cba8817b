//! TCP (New)Reno: slow start, additive increase, halve once per window of
//! data on loss, collapse to 1 MSS on timeout (RFC 5681, RFC 6582).

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::window::RenoWindow;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[];

#[derive(Debug, Clone)]
pub struct Reno {
    w: RenoWindow,
}

impl Reno {
    pub fn new(path: &PathInfo) -> Self {
        Reno { w: RenoWindow::new(path) }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let _ = p;
        Ok(Reno::new(path))
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.w.ssthresh
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.w.rec.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.w.on_ack(s.acked_bytes, s.inflight_bytes);
    }
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        self.w.on_loss(lost_bytes);
    }
    fn on_rto(&mut self, _now_ns: u64) {
        self.w.on_rto();
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.w.cwnd)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("cwnd_bytes", self.w.cwnd as f64);
        m.insert("ssthresh_bytes", if self.w.ssthresh == u64::MAX { f64::INFINITY } else { self.w.ssthresh as f64 });
        m.insert("in_recovery", if self.w.rec.active() { 1.0 } else { 0.0 });
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn path() -> PathInfo {
        PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: 10 }
    }

    fn ack(bytes: u64) -> AckSample {
        AckSample { acked_bytes: bytes, acked_pkts: 1, ..Default::default() }
    }

    #[test]
    fn slow_start_doubles_per_window() {
        let mut r = Reno::new(&path());
        for _ in 0..10 {
            r.on_ack(&ack(MSS));
        }
        assert_eq!(r.cwnd_bytes(), Some(20 * MSS));
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut r = Reno::new(&path());
        r.on_send(0, 10 * MSS);
        r.on_loss(0, MSS); // cwnd 10 -> 5 MSS, ssthresh 5 MSS
        for _ in 0..9 {
            r.on_ack(&ack(MSS)); // resolves the 9 remaining pre-cut bytes
        }
        assert_eq!(r.cwnd_bytes(), Some(5 * MSS), "no growth in fast recovery");
        for _ in 0..4 {
            r.on_ack(&ack(MSS));
        }
        assert_eq!(r.cwnd_bytes(), Some(5 * MSS), "4 of 5 MSS acked: no growth yet");
        r.on_ack(&ack(MSS));
        assert_eq!(r.cwnd_bytes(), Some(6 * MSS));
        for _ in 0..6 {
            r.on_ack(&ack(MSS));
        }
        assert_eq!(r.cwnd_bytes(), Some(7 * MSS));
    }

    #[test]
    fn halves_once_per_window_of_data() {
        let mut r = Reno::new(&path());
        r.on_send(0, 10 * MSS);
        r.on_loss(1, MSS);
        assert_eq!(r.cwnd_bytes(), Some(5 * MSS));
        assert_eq!(r.ssthresh_bytes(), 5 * MSS);
        // More losses of data sent before the cut: no further cut.
        r.on_loss(2, MSS);
        r.on_loss(3, MSS);
        assert_eq!(r.cwnd_bytes(), Some(5 * MSS));
        // Retransmit 3 MSS, ack the 7 MSS still outstanding: recovery ends.
        r.on_send(4, 3 * MSS);
        r.on_ack(&ack(7 * MSS));
        assert_eq!(r.cwnd_bytes(), Some(5 * MSS));
        // New data, new loss: a second, separate cut.
        r.on_send(5, 5 * MSS);
        r.on_loss(6, MSS);
        assert_eq!(r.cwnd_bytes(), Some(2500));
        // Floor at 2 MSS.
        r.on_ack(&ack(9 * MSS));
        r.on_send(7, MSS);
        r.on_loss(8, MSS);
        assert_eq!(r.cwnd_bytes(), Some(2 * MSS));
    }

    #[test]
    fn rto_collapses_to_one_mss_and_sets_ssthresh_to_half() {
        let mut r = Reno::new(&path());
        for _ in 0..10 {
            r.on_ack(&ack(MSS));
        }
        r.on_send(0, 20 * MSS);
        r.on_rto(1);
        assert_eq!(r.cwnd_bytes(), Some(MSS));
        assert_eq!(r.ssthresh_bytes(), 10 * MSS);
        // A second timeout for the same data keeps ssthresh.
        r.on_rto(2);
        assert_eq!(r.ssthresh_bytes(), 10 * MSS);
        // Slow start resumes immediately after a timeout.
        r.on_ack(&ack(MSS));
        assert_eq!(r.cwnd_bytes(), Some(2 * MSS));
        // A loss of data sent before the timeout does not cut again.
        r.on_loss(3, MSS);
        assert_eq!(r.cwnd_bytes(), Some(2 * MSS));
        assert_eq!(r.ssthresh_bytes(), 10 * MSS);
    }
}
