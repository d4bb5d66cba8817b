//! One PCC sender: monitor intervals, a utility function and a rate
//! controller, adapted to [`CongestionControl`] (the shape of PCC-Uspace:
//! one `PccSender`, a pluggable `PccUtilityManager`).

use std::collections::BTreeMap;

use super::control::{Controller, Mover};
use super::monitor::Monitor;
use super::utility::Utility;
use crate::{AckSample, CongestionControl};

pub struct Pcc<M> {
    name: &'static str,
    ctl: Controller<M>,
    mon: Monitor,
    utility: Box<dyn Utility>,
}

impl<M: Mover> Pcc<M> {
    pub fn new(name: &'static str, ctl: Controller<M>, mon: Monitor, utility: Box<dyn Utility>) -> Self {
        Pcc { name, ctl, mon, utility }
    }
    pub fn controller(&self) -> &Controller<M> {
        &self.ctl
    }

    /// Scores MIs whose packets are all settled, in MI order.
    fn score(&mut self, now_ns: u64) {
        for st in self.mon.take_finished(now_ns) {
            let starting = self.ctl.scores_startup(st.id);
            // A non-finite utility (degenerate input) carries no information.
            let u = (!st.is_void()).then(|| self.utility.utility(&st, starting)).filter(|u| u.is_finite());
            self.ctl.on_utility(st.id, st.rate_bps, u);
        }
    }
}

impl<M: Mover> CongestionControl for Pcc<M> {
    fn name(&self) -> &'static str {
        self.name
    }
    /// MIs begin on a send, as in PCC-Uspace (`OnPacketSent`), so every MI
    /// holds at least the packet that opened it.
    fn on_send(&mut self, now_ns: u64, bytes: u64) {
        self.score(now_ns);
        if self.mon.due(now_ns) {
            let rate = self.ctl.next_rate(self.mon.next_id());
            self.mon.open(now_ns, rate);
        }
        self.mon.on_send(now_ns, bytes);
    }
    fn on_packet_acked(&mut self, _now_ns: u64, sent_ns: u64, bytes: u64) {
        self.mon.on_packet_acked(sent_ns, bytes);
    }
    fn on_packet_lost(&mut self, _now_ns: u64, sent_ns: u64, bytes: u64) {
        self.mon.on_packet_lost(sent_ns, bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.mon.on_ack(s);
        self.score(s.now_ns);
    }
    fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        self.mon.on_loss(now_ns, lost_bytes);
        self.score(now_ns);
    }
    /// Losses behind a timeout arrive packet by packet; the timeout itself
    /// changes nothing in PCC's model.
    fn on_rto(&mut self, now_ns: u64) {
        self.score(now_ns);
    }
    fn on_tick(&mut self, now_ns: u64) {
        self.score(now_ns);
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        // Before the first send there is no MI yet: report the rate the
        // first MI will use, so a datapath that waits for a rate before its
        // first send does not wait forever.
        let r = self.mon.current_rate().unwrap_or_else(|| self.ctl.rate());
        Some(r.max(0.0) as u64)
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        if let Some(r) = self.mon.current_rate() {
            m.insert("mi_rate_mbps", r / 1e6);
        }
        m.insert("srtt_us", self.mon.srtt_ns() / 1e3);
        self.ctl.export(&mut m);
        m
    }
}
