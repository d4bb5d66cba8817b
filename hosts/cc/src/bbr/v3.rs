//! BBRv3 as draft-ietf-ccwg-bbr-06 ("BBR Congestion Control", Cardwell,
//! Swett, Beshay; July 2026) specifies it. Section numbers below are that
//! draft's; names are its names (`BBR.inflight_longterm` is what Google's
//! code and older drafts call `inflight_hi`, `BBR.inflight_shortterm` and
//! `BBR.bw_shortterm` are `inflight_lo` and `bw_lo`).
//!
//! Volumes are bytes and rates bytes/s (§2 recommends bytes); times are the
//! datapath's ns. The draft specifies no ECN response (§3.7: CE marks MUST
//! count as congestion); the one here is Google's BBRv3 code's
//! (github.com/google/bbr, branch v3, `net/ipv4/tcp_bbr.c`) with its
//! defaults: an EWMA of the CE-marked fraction per round (`ecn_alpha`) cuts
//! `inflight_shortterm` by `alpha/3` in rounds with CE when not probing, a
//! round with over half its data CE-marked ends a bandwidth probe, and two
//! such rounds end STARTUP. It applies only on paths whose min_rtt is at
//! most `ecn_max_rtt_us` (Google: 5 ms, "shallow-threshold ECN").

use std::collections::BTreeMap;

use super::{CaState, ConnMinRtt, RateSample, RateSampler, Rng, SentPacket, WindowedMax};
use crate::params::{ParamInfo, Params};
use crate::window::RttEstimator;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "send_quantum_pkts",
        default: "0",
        doc: "C.send_quantum in packets, which sizes BBR.offload_budget = 3 quanta (§5.5.8.1): 0 = §5.6.3's pacing_rate·1 ms within [2 SMSS, 64 KB]; 1 = one MTU packet (a datapath without TSO/GSO)",
    },
    ParamInfo { name: "ecn", default: "true", doc: "treat CE marks as congestion (§3.7), with Google's BBRv3 ECN response" },
    ParamInfo { name: "ecn_max_rtt_us", default: "5000", doc: "use the ECN response only while min_rtt is at most this, µs; 0 = any RTT (Google's bbr_ecn_max_rtt_us: 5000)" },
    ParamInfo { name: "seed", default: "1", doc: "seed of the randomised bandwidth-probe wait (§5.3.3.8.2); the registry gives each flow its own" },
];

/// §2.5: 4·ln 2 ≈ 2.77.
pub const STARTUP_PACING_GAIN: f64 = 4.0 * std::f64::consts::LN_2;
/// §2.6.
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// §2.5 / §5.3.2.
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// §2.5: pace 1 % below the estimate.
const PACING_MARGIN_PERCENT: f64 = 1.0;
/// §2.8.
pub const LOSS_THRESH: f64 = 0.02;
pub const BETA: f64 = 0.7;
pub const HEADROOM: f64 = 0.15;
/// §2.8: BBR.MinPipeCwnd = 4 SMSS.
const MIN_PIPE_PKTS: f64 = 4.0;
/// §5.3.3.1, §5.3.3.5, §5.6.1.
pub const PROBE_DOWN_PACING_GAIN: f64 = 0.90;
pub const PROBE_UP_PACING_GAIN: f64 = 1.25;
pub const PROBE_UP_CWND_GAIN: f64 = 2.25;
/// §2.11: current and previous ProbeBW cycle.
const MAX_BW_FILTER_LEN: u64 = 2;
/// §2.12: rounds (1 in Startup, §5.5.9).
const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// §2.16.
const MIN_RTT_FILTER_LEN_NS: u64 = 10_000_000_000;
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
const PROBE_RTT_DURATION_NS: u64 = 200_000_000;
const PROBE_RTT_INTERVAL_NS: u64 = 5_000_000_000;
/// §5.3.1.2: growth below 25 % for 3 rounds fills the pipe.
const FULL_BW_GROWTH: f64 = 1.25;
const FULL_BW_COUNT: u32 = 3;
/// §5.3.1.3: BBRStartupFullLossCnt.
const STARTUP_FULL_LOSS_CNT: u32 = 6;
/// §5.3.3.8: T_bbr = 2 s + U[0, 1) s; T_reno bound 62–63 rounds.
const BW_PROBE_BASE_S: f64 = 2.0;
const BW_PROBE_RAND_S: f64 = 1.0;
const BW_PROBE_MAX_ROUNDS: u64 = 63;
/// §5.6.3: send quantum of 1 ms of data, at most 64 KB.
const SEND_QUANTUM_MAX: f64 = 65536.0;
/// Google BBRv3 ECN defaults (`bbr_ecn_alpha_gain`, `_alpha_init`,
/// `_factor`, `_thresh`, `bbr_full_ecn_cnt`, `bbr_ecn_reprobe_gain`).
pub const ECN_ALPHA_GAIN: f64 = 1.0 / 16.0;
const ECN_ALPHA_INIT: f64 = 1.0;
pub const ECN_FACTOR: f64 = 1.0 / 3.0;
pub const ECN_THRESH: f64 = 0.5;
const FULL_ECN_CNT: u32 = 2;
const ECN_REPROBE_GAIN: f64 = 0.5;

/// §5.1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

/// §2.14: BBR.ack_phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

#[derive(Debug, Clone)]
pub struct BbrV3 {
    smss: f64,
    initial_cwnd: f64,
    quantum_fixed: u64,
    ecn_enabled: bool,
    ecn_max_rtt_s: f64,
    rng: Rng,
    rate: RateSampler,
    started: bool,
    now: u64,
    // Connection state (§2.2, §2.4).
    cwnd: f64,
    pacing_rate: f64,
    send_quantum: f64,
    ca_state: CaState,
    recovery_round: u64,
    srtt: RttEstimator,
    conn_min_rtt: ConnMinRtt,
    cwnd_limited_cur: bool,
    cwnd_limited_prev: bool,
    has_seen_rtt: bool,
    // §2.5–2.7.
    state: State,
    pacing_gain: f64,
    cwnd_gain: f64,
    round_count: u64,
    round_start: bool,
    next_round_delivered: u64,
    idle_restart: bool,
    drain_start_round: u64,
    // §2.9–2.12: the model.
    max_bw_slots: [f64; 2],
    cycle_count: u64,
    bw_shortterm: f64,
    bw: f64,
    min_rtt: f64,
    min_rtt_stamp: u64,
    extra_acked_filter: WindowedMax,
    extra_acked_interval_start: u64,
    extra_acked_delivered: f64,
    inflight_longterm: f64,
    inflight_shortterm: f64,
    bw_latest: f64,
    inflight_latest: f64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    /// Discontiguous lost ranges in this loss round (§5.3.1.3).
    loss_events_in_round: u32,
    last_lost_index: u64,
    // §2.13.
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: f64,
    full_bw_count: u32,
    // §2.14.
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: f64,
    probe_up_acked_per_inc: f64,
    bw_probe_up_rounds: u32,
    rounds_since_probe_up: u64,
    bw_probe_wait_s: f64,
    cycle_stamp: u64,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    // §2.16 and §5.6.4.4.
    prior_cwnd: f64,
    probe_rtt_min_delay: f64,
    probe_rtt_min_stamp: u64,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<u64>,
    probe_rtt_round_done: bool,
    // ECN (Google BBRv3).
    ecn_eligible: bool,
    ecn_alpha: f64,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    ecn_in_round: bool,
    ecn_in_cycle: bool,
    loss_in_cycle: bool,
    startup_ecn_rounds: u32,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl BbrV3 {
    /// `OnInit()` (§5.2.1).
    pub fn new(path: &PathInfo, send_quantum_pkts: u64, ecn: bool, ecn_max_rtt_us: u64, seed: u64) -> Self {
        let smss = f64::from(path.mss.max(1));
        let initial_cwnd = smss * f64::from(path.init_cwnd_pkts.max(1));
        let mut b = BbrV3 {
            smss,
            initial_cwnd,
            quantum_fixed: send_quantum_pkts,
            ecn_enabled: ecn,
            ecn_max_rtt_s: if ecn_max_rtt_us == 0 { f64::INFINITY } else { ecn_max_rtt_us as f64 * 1e-6 },
            rng: Rng::new(seed),
            rate: RateSampler::new(u64::from(path.mss.max(1))),
            started: false,
            now: 0,
            cwnd: initial_cwnd,
            pacing_rate: 0.0,
            send_quantum: 2.0 * smss,
            ca_state: CaState::Open,
            recovery_round: 0,
            srtt: RttEstimator::default(),
            conn_min_rtt: ConnMinRtt::default(),
            cwnd_limited_cur: false,
            cwnd_limited_prev: false,
            has_seen_rtt: false,
            state: State::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            idle_restart: false,
            drain_start_round: 0,
            max_bw_slots: [0.0; 2],
            cycle_count: 0,
            bw_shortterm: f64::INFINITY,
            bw: 0.0,
            min_rtt: f64::INFINITY,
            min_rtt_stamp: 0,
            extra_acked_filter: WindowedMax::default(),
            extra_acked_interval_start: 0,
            extra_acked_delivered: 0.0,
            inflight_longterm: f64::INFINITY,
            inflight_shortterm: f64::INFINITY,
            bw_latest: 0.0,
            inflight_latest: 0.0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            last_lost_index: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0.0,
            full_bw_count: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0.0,
            probe_up_acked_per_inc: f64::INFINITY,
            bw_probe_up_rounds: 0,
            rounds_since_probe_up: 0,
            bw_probe_wait_s: 0.0,
            cycle_stamp: 0,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            prior_cwnd: 0.0,
            probe_rtt_min_delay: f64::INFINITY,
            probe_rtt_min_stamp: 0,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            ecn_eligible: false,
            ecn_alpha: ECN_ALPHA_INIT,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            ecn_in_round: false,
            ecn_in_cycle: false,
            loss_in_cycle: false,
            startup_ecn_rounds: 0,
        };
        b.init_pacing_rate();
        b.enter_startup();
        b
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        Ok(BbrV3::new(
            path,
            p.u64_in("send_quantum_pkts", 0, 1 << 16)?,
            p.bool("ecn")?,
            p.u64_in("ecn_max_rtt_us", 0, 10_000_000)?,
            p.u64_in("seed", 0, u64::MAX)?,
        ))
    }

    pub fn state_name(&self) -> State {
        self.state
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn inflight_longterm(&self) -> f64 {
        self.inflight_longterm
    }
    pub fn inflight_shortterm(&self) -> f64 {
        self.inflight_shortterm
    }
    pub fn bw_shortterm(&self) -> f64 {
        self.bw_shortterm
    }
    pub fn max_bw(&self) -> f64 {
        self.max_bw_slots[0].max(self.max_bw_slots[1])
    }
    pub fn min_rtt_s(&self) -> f64 {
        self.min_rtt
    }
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    pub fn ecn_alpha(&self) -> f64 {
        self.ecn_alpha
    }
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn start(&mut self, now: u64) {
        self.now = now;
        if !self.started {
            self.started = true;
            self.min_rtt_stamp = now;
            self.probe_rtt_min_stamp = now;
            self.extra_acked_interval_start = now;
        }
    }

    fn min_pipe_cwnd(&self) -> f64 {
        MIN_PIPE_PKTS * self.smss
    }

    fn inflight_now(&self) -> f64 {
        self.rate.inflight_bytes as f64
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_cur || self.cwnd_limited_prev
    }

    fn in_loss_recovery(&self) -> bool {
        self.ca_state != CaState::Open
    }

    fn is_in_probe_bw(&self) -> bool {
        matches!(self.state, State::ProbeBwDown | State::ProbeBwCruise | State::ProbeBwRefill | State::ProbeBwUp)
    }

    /// `IsProbingBW()` (§5.3.3.9).
    fn is_probing_bw(&self) -> bool {
        matches!(self.state, State::Startup | State::ProbeBwRefill | State::ProbeBwUp)
    }

    fn set_gains(&mut self, pacing: f64, cwnd: f64) {
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    // ---- §5.6.2 pacing ----

    /// `InitPacingRate()`: StartupPacingGain · InitialCwnd / (srtt or 1 ms).
    fn init_pacing_rate(&mut self) {
        let rtt = match self.srtt.srtt_ns() {
            Some(s) if s > 0.0 => {
                self.has_seen_rtt = true;
                s / 1e9
            }
            _ => 0.001,
        };
        self.pacing_rate = STARTUP_PACING_GAIN * self.initial_cwnd / rtt;
    }

    /// `SetPacingRateWithGain()`.
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = gain * self.bw * (100.0 - PACING_MARGIN_PERCENT) / 100.0;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `SetSendQuantum()` (§5.6.3).
    fn set_send_quantum(&mut self) {
        self.send_quantum = if self.quantum_fixed > 0 {
            self.quantum_fixed as f64 * self.smss
        } else {
            (self.pacing_rate * 0.001).min(SEND_QUANTUM_MAX).max(2.0 * self.smss)
        };
    }

    // ---- §5.6.4 cwnd ----

    fn bdp_of(&self, bw: f64) -> f64 {
        bw * self.min_rtt
    }

    /// `BDPMultiple(bw, gain)`.
    fn bdp_multiple(&self, bw: f64, gain: f64) -> f64 {
        if self.min_rtt.is_infinite() {
            return self.initial_cwnd;
        }
        gain * self.bdp_of(bw)
    }

    /// `QuantizationBudget()`; BBR.offload_budget = 3 · C.send_quantum
    /// (§5.5.8.1).
    fn quantization_budget(&self, inflight_cap: f64) -> f64 {
        let offload_budget = 3.0 * self.send_quantum;
        let mut cap = inflight_cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.state == State::ProbeBwUp {
            cap += 2.0 * self.smss;
        }
        cap
    }

    /// `Inflight(bw, gain)`.
    fn inflight_with(&self, bw: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// `UpdateMaxInflight()`.
    fn max_inflight(&self) -> f64 {
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked_filter.get() as f64;
        self.quantization_budget(cap)
    }

    /// `InflightWithHeadroom()` (§5.3.3.9).
    fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_longterm.is_infinite() {
            return f64::INFINITY;
        }
        let headroom = self.smss.max(HEADROOM * self.inflight_longterm);
        (self.inflight_longterm - headroom).max(self.min_pipe_cwnd())
    }

    /// `TargetInflight()`: the BDP, unless congestion cut cwnd.
    fn target_inflight(&self) -> f64 {
        let bdp = if self.min_rtt.is_infinite() { self.initial_cwnd } else { self.bdp_of(self.bw) };
        bdp.min(self.cwnd)
    }

    /// `ProbeRTTCwnd()` (§5.6.4.5).
    fn probe_rtt_cwnd(&self) -> f64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN).max(self.min_pipe_cwnd())
    }

    /// `SaveCwnd()` (§5.6.4.4).
    fn save_cwnd(&mut self) {
        if !self.in_loss_recovery() && self.state != State::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// `RestoreCwnd()`.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// `SetCwnd()` (§5.6.4.6) with `BoundCwndForProbeRTT()` and
    /// `BoundCwndForModel()` (§5.6.4.7).
    fn set_cwnd(&mut self, newly_acked: f64) {
        let max_inflight = self.max_inflight();
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || (self.rate.delivered_bytes as f64) < self.initial_cwnd {
            self.cwnd += newly_acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        let mut cap = f64::INFINITY;
        if self.is_in_probe_bw() && self.state != State::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if self.state == State::ProbeRtt || self.state == State::ProbeBwCruise {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap).min(1e15);
    }

    // ---- §5.3.1 Startup, §5.3.2 Drain ----

    fn enter_startup(&mut self) {
        self.state = State::Startup;
        self.set_gains(STARTUP_PACING_GAIN, DEFAULT_CWND_GAIN);
    }

    /// `ResetFullBW()`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// `CheckFullBWReached()` (§5.3.1.2).
    fn check_full_bw_reached(&mut self, rs: &RateSample, delivery_rate: f64) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        if delivery_rate >= self.full_bw * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = delivery_rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// The queue is too high in Startup (loss §5.3.1.3, or ECN): the pipe
    /// is full and `inflight_longterm = max(BBR.bdp, BBR.inflight_latest)`.
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        let bdp = if self.min_rtt.is_infinite() { self.initial_cwnd } else { self.bdp_of(self.max_bw()) };
        self.inflight_longterm = bdp.max(self.inflight_latest);
    }

    /// `CheckStartupHighLoss()` (§5.3.1.3): at the end of a loss round
    /// spent in fast recovery, loss above LossThresh in at least
    /// StartupFullLossCnt discontiguous ranges.
    fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if self.loss_round_start
            && self.ca_state == CaState::Recovery
            && self.round_count > self.recovery_round
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_CNT
            && self.is_inflight_too_high(rs.lost_bytes as f64, rs.tx_in_flight_bytes as f64, 0.0, 0.0)
        {
            self.handle_queue_too_high_in_startup();
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `CheckStartupDone()`.
    fn check_startup_done(&mut self, rs: &RateSample) {
        self.check_startup_high_loss(rs);
        if self.state == State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    fn enter_drain(&mut self) {
        self.state = State::Drain;
        self.set_gains(DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN);
        self.drain_start_round = self.round_count;
    }

    /// `CheckDrainDone()`.
    fn check_drain_done(&mut self) {
        if self.state == State::Drain
            && (self.inflight_now() <= self.inflight_with(self.bw, 1.0) || self.round_count > self.drain_start_round + 3)
        {
            self.enter_probe_bw();
        }
    }

    // ---- §5.3.3 ProbeBW ----

    fn enter_probe_bw(&mut self) {
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.start_probe_bw_down();
    }

    /// `StartRound()`.
    fn start_round(&mut self) {
        self.next_round_delivered = self.rate.delivered_bytes;
    }

    /// `ResetCongestionSignals()` (and Google's per-cycle ECN/loss flags).
    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
        self.ecn_in_round = false;
        self.ecn_in_cycle = false;
        self.loss_in_cycle = false;
    }

    /// `ResetShortTermModel()`.
    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = f64::INFINITY;
        self.inflight_shortterm = f64::INFINITY;
    }

    /// `PickProbeWait()`.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = self.rng.below(2);
        self.bw_probe_wait_s = BW_PROBE_BASE_S + BW_PROBE_RAND_S * self.rng.unit();
    }

    fn start_probe_bw_down(&mut self) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = f64::INFINITY;
        self.pick_probe_wait();
        self.cycle_stamp = self.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.state = State::ProbeBwDown;
        self.set_gains(PROBE_DOWN_PACING_GAIN, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_cruise(&mut self) {
        self.state = State::ProbeBwCruise;
        self.set_gains(1.0, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_refill(&mut self, bw_probe_up_rounds: u32) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acked = 0.0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.state = State::ProbeBwRefill;
        self.set_gains(1.0, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_up(&mut self, delivery_rate: f64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = delivery_rate;
        self.state = State::ProbeBwUp;
        self.set_gains(PROBE_UP_PACING_GAIN, PROBE_UP_CWND_GAIN);
        self.raise_inflight_longterm_slope();
    }

    /// `RaiseInflightLongtermSlope()`.
    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = f64::from(1u32 << self.bw_probe_up_rounds.min(30));
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth_this_round).max(self.smss);
    }

    /// `ProbeInflightLongtermUpward()`.
    fn probe_inflight_longterm_upward(&mut self, newly_acked: f64) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = (self.bw_probe_up_acked / self.probe_up_acked_per_inc).floor();
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm += delta * self.smss;
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// `IsInflightTooHigh()` (§5.5.10.2), with Google's ECN condition: more
    /// than ECN_THRESH of the delivered data CE-marked.
    fn is_inflight_too_high(&self, lost: f64, tx_in_flight: f64, delivered_ce: f64, delivered: f64) -> bool {
        if lost > 0.0 && lost > tx_in_flight * LOSS_THRESH {
            return true;
        }
        self.ecn_eligible && delivered_ce > 0.0 && delivered > 0.0 && delivered_ce > delivered * ECN_THRESH
    }

    /// `HandleInflightTooHigh()`.
    fn handle_inflight_too_high(&mut self, is_app_limited: bool, tx_in_flight: f64) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !is_app_limited {
            self.inflight_longterm = tx_in_flight.max(self.target_inflight() * BETA);
        }
        if self.state == State::ProbeBwUp {
            self.start_probe_bw_down();
        }
    }

    /// `AdaptLongTermModel()`; true when it decided a state transition.
    fn adapt_long_term_model(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.is_in_probe_bw() && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.is_in_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill(0);
                return true;
            }
        }
        let (lost, tx) = (rs.lost_bytes as f64, rs.tx_in_flight_bytes as f64);
        let (ce, delivered) = (rs.delivered_ce_bytes as f64, rs.delivered_bytes as f64);
        if rs.has_data && self.is_inflight_too_high(lost, tx, ce, delivered) {
            // The loss case is normally handled per lost packet already;
            // this catches ECN, and losses a datapath reports without
            // per-packet events (Google's bbr_adapt_upper_bounds).
            if self.is_bw_probe_sample {
                self.handle_inflight_too_high(rs.is_app_limited, tx);
            }
            return false;
        }
        if self.inflight_longterm.is_infinite() {
            return false;
        }
        if rs.has_data && tx > self.inflight_longterm {
            self.inflight_longterm = tx;
        }
        if self.state == State::ProbeBwUp {
            self.probe_inflight_longterm_upward(rs.newly_acked_bytes as f64);
        }
        false
    }

    /// `IsRenoCoexistenceProbeTime()`: TargetInflight in packets, at most
    /// 63 rounds.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() / self.smss).max(0.0) as u64;
        self.rounds_since_probe_up >= reno_rounds.min(BW_PROBE_MAX_ROUNDS)
    }

    /// `IsTimeToProbeBW()`, with Google's quick re-probe after a cycle with
    /// ECN marks but no loss.
    fn is_time_to_probe_bw(&mut self) -> bool {
        if self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && self.ca_state == CaState::Open {
            let target_pkts = if self.inflight_longterm.is_finite() {
                self.inflight_longterm / self.smss * ECN_REPROBE_GAIN
            } else {
                f64::from(1u32 << 30)
            };
            let n = if target_pkts >= 1.0 { target_pkts.log2().floor().min(30.0) as u32 } else { 0 };
            self.start_probe_bw_refill(n);
            return true;
        }
        let elapsed = self.now.saturating_sub(self.cycle_stamp);
        if secs(elapsed) > self.bw_probe_wait_s || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill(0);
            return true;
        }
        false
    }

    /// `IsTimeToCruise()`.
    fn is_time_to_cruise(&self) -> bool {
        let inflight = self.inflight_now();
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight_with(self.max_bw(), 1.0)
    }

    /// `IsTimeToGoDown()`.
    fn is_time_to_go_down(&mut self, delivery_rate: f64) -> bool {
        if self.prev_probe_too_high && self.inflight_now() >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_longterm {
            self.reset_full_bw();
            self.full_bw = delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// `UpdateProbeBWCyclePhase()`.
    fn update_probe_bw_cycle_phase(&mut self, rs: &RateSample, delivery_rate: f64) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs) {
            return;
        }
        #[allow(clippy::collapsible_match)] // one arm per state, as §5.3.3.9
        match self.state {
            State::ProbeBwDown => {
                if self.is_time_to_probe_bw() {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            State::ProbeBwCruise => {
                self.is_time_to_probe_bw();
            }
            // After one round of REFILL, UP.
            State::ProbeBwRefill if self.round_start => {
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(delivery_rate);
            }
            State::ProbeBwUp => {
                if self.is_time_to_go_down(delivery_rate) {
                    self.prev_probe_too_high = false;
                    self.start_probe_bw_down();
                }
            }
            _ => {}
        }
    }

    // ---- §5.5 the model ----

    /// `UpdateRound()` (§5.5.1).
    fn update_round(&mut self, rs: &RateSample) {
        self.round_start = false;
        if rs.has_data && rs.prior_delivered_bytes >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited_prev = self.cwnd_limited_cur;
            self.cwnd_limited_cur = false;
        }
    }

    /// `UpdateMaxBw()` (§5.5.5) on the two-slot filter of §5.5.6.
    fn update_max_bw(&mut self, rs: &RateSample, delivery_rate: f64) {
        self.update_round(rs);
        if delivery_rate > 0.0 && (delivery_rate >= self.max_bw() || !rs.is_app_limited) {
            let slot = (self.cycle_count % MAX_BW_FILTER_LEN) as usize;
            self.max_bw_slots[slot] = self.max_bw_slots[slot].max(delivery_rate);
        }
    }

    /// `AdvanceMaxBwFilter()`: the previous cycle's slot is forgotten (a
    /// cycle without samples keeps the older one, as Google's code does).
    fn advance_max_bw_filter(&mut self) {
        let cur = (self.cycle_count % MAX_BW_FILTER_LEN) as usize;
        if self.max_bw_slots[cur] == 0.0 {
            return;
        }
        self.cycle_count += 1;
        let next = (self.cycle_count % MAX_BW_FILTER_LEN) as usize;
        self.max_bw_slots[next] = 0.0;
    }

    /// `UpdateLatestDeliverySignals()` (§5.5.10.3).
    fn update_latest_delivery_signals(&mut self, rs: &RateSample, delivery_rate: f64) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered_bytes as f64);
        if rs.has_data && rs.prior_delivered_bytes >= self.loss_round_delivered {
            self.loss_round_delivered = self.rate.delivered_bytes;
            self.loss_round_start = true;
        }
    }

    /// `AdvanceLatestDeliverySignals()`.
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample, delivery_rate: f64) {
        if self.loss_round_start {
            self.bw_latest = delivery_rate;
            self.inflight_latest = rs.delivered_bytes as f64;
        }
    }

    /// Google's `bbr_update_ecn_alpha` (once per round): the EWMA of the
    /// CE-marked fraction, and STARTUP's exit after FULL_ECN_CNT rounds
    /// above ECN_THRESH.
    fn update_ecn_alpha(&mut self) {
        if !self.ecn_eligible && self.ecn_enabled && self.min_rtt <= self.ecn_max_rtt_s {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return;
        }
        let delivered = self.rate.delivered_bytes.saturating_sub(self.alpha_last_delivered);
        let delivered_ce = self.rate.delivered_ce_bytes.saturating_sub(self.alpha_last_delivered_ce);
        if delivered == 0 {
            return;
        }
        let ce_ratio = (delivered_ce as f64 / delivered as f64).min(1.0);
        self.ecn_alpha = ((1.0 - ECN_ALPHA_GAIN) * self.ecn_alpha + ECN_ALPHA_GAIN * ce_ratio).min(1.0);
        self.alpha_last_delivered = self.rate.delivered_bytes;
        self.alpha_last_delivered_ce = self.rate.delivered_ce_bytes;
        if !self.full_bw_reached {
            if ce_ratio >= ECN_THRESH {
                self.startup_ecn_rounds += 1;
            } else {
                self.startup_ecn_rounds = 0;
            }
            if self.startup_ecn_rounds >= FULL_ECN_CNT {
                self.handle_queue_too_high_in_startup();
            }
        }
    }

    /// `UpdateCongestionSignals()`.
    fn update_congestion_signals(&mut self, rs: &RateSample, delivery_rate: f64, ce_bytes: u64) {
        self.update_max_bw(rs, delivery_rate);
        if self.round_start {
            self.update_ecn_alpha();
        }
        self.ecn_in_round |= self.ecn_eligible && ce_bytes > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds_from_congestion();
        self.is_loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `AdaptLowerBoundsFromCongestion()` (once per round), with Google's
    /// ECN cut `inflight_shortterm · (1 − ecn_alpha · ECN_FACTOR)`.
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.is_probing_bw() {
            return;
        }
        let mut ecn_inflight = f64::INFINITY;
        if self.ecn_in_round {
            if self.inflight_shortterm.is_infinite() {
                self.inflight_shortterm = self.cwnd;
            }
            ecn_inflight = self.inflight_shortterm * (1.0 - self.ecn_alpha * ECN_FACTOR);
        }
        if self.is_loss_in_round {
            // InitLowerBounds(), LossLowerBounds().
            if self.bw_shortterm.is_infinite() {
                self.bw_shortterm = self.max_bw();
            }
            if self.inflight_shortterm.is_infinite() {
                self.inflight_shortterm = self.cwnd;
            }
            self.bw_shortterm = self.bw_latest.max(BETA * self.bw_shortterm);
            self.inflight_shortterm = self.inflight_latest.max(BETA * self.inflight_shortterm);
        }
        self.inflight_shortterm = self.inflight_shortterm.min(ecn_inflight);
    }

    /// `UpdateACKAggregation()` (§5.5.9).
    fn update_ack_aggregation(&mut self, newly_acked: f64) {
        let interval = secs(self.now.saturating_sub(self.extra_acked_interval_start));
        let mut expected = self.bw * interval;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0.0;
            self.extra_acked_interval_start = self.now;
            expected = 0.0;
        }
        self.extra_acked_delivered += newly_acked;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd).max(0.0);
        let len = if self.full_bw_reached { EXTRA_ACKED_FILTER_LEN } else { 1 };
        self.extra_acked_filter.update(len, self.round_count, extra as u64);
    }

    /// `NoteLoss()` and `HandleLostPacket(P)` (§5.5.10.2).
    fn handle_lost_packet(&mut self, p: Option<SentPacket>) {
        if !self.is_loss_in_round {
            self.loss_round_delivered = self.rate.delivered_bytes;
            self.save_cwnd(); // SaveStateUponLoss (no undo here)
        }
        self.is_loss_in_round = true;
        self.loss_in_cycle = true;
        let Some(p) = p else { return };
        if p.index != self.last_lost_index.wrapping_add(1) {
            self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
        }
        self.last_lost_index = p.index;
        if !self.is_bw_probe_sample {
            return;
        }
        let tx_in_flight = p.tx_in_flight_bytes as f64;
        let lost = self.rate.lost_bytes.saturating_sub(p.lost_bytes) as f64;
        if self.is_inflight_too_high(lost, tx_in_flight, 0.0, 0.0) {
            let at_loss = self.inflight_at_loss(&p, tx_in_flight, lost);
            self.handle_inflight_too_high(p.app_limited, at_loss);
        }
    }

    /// `InflightAtLoss(P)`: the prefix of P at which the loss rate crossed
    /// LossThresh (never below what was in flight before P).
    fn inflight_at_loss(&self, p: &SentPacket, tx_in_flight: f64, lost: f64) -> f64 {
        let size = p.bytes as f64;
        let inflight_prev = (tx_in_flight - size).max(0.0);
        let lost_prev = (lost - size).max(0.0);
        let lost_prefix = ((LOSS_THRESH * inflight_prev - lost_prev) / (1.0 - LOSS_THRESH)).max(0.0);
        inflight_prev + lost_prefix
    }

    // ---- §5.3.4 ProbeRTT ----

    /// `UpdateMinRTT()`.
    fn update_min_rtt(&mut self, rtt_s: Option<f64>) {
        let now = self.now;
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp.saturating_add(PROBE_RTT_INTERVAL_NS);
        if let Some(rtt) = rtt_s {
            if rtt < self.probe_rtt_min_delay || self.probe_rtt_expired {
                self.probe_rtt_min_delay = rtt;
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp.saturating_add(MIN_RTT_FILTER_LEN_NS);
        if self.probe_rtt_min_delay < self.min_rtt || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min_delay;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    /// `CheckProbeRTT()`.
    fn check_probe_rtt(&mut self, rs: &RateSample) {
        if self.state != State::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.state = State::ProbeRtt;
            self.set_gains(1.0, PROBE_RTT_CWND_GAIN);
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == State::ProbeRtt {
            self.handle_probe_rtt();
        }
        if rs.delivered_bytes > 0 {
            self.idle_restart = false;
        }
    }

    /// `HandleProbeRTT()`.
    fn handle_probe_rtt(&mut self) {
        self.rate.mark_app_limited();
        if self.probe_rtt_done_stamp.is_none() && self.inflight_now() <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(self.now.saturating_add(PROBE_RTT_DURATION_NS));
            self.probe_rtt_round_done = false;
            self.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done();
            }
        }
    }

    /// `CheckProbeRTTDone()`.
    fn check_probe_rtt_done(&mut self) {
        if self.probe_rtt_done_stamp.is_some_and(|d| self.now > d) {
            self.probe_rtt_min_stamp = self.now;
            self.restore_cwnd();
            self.exit_probe_rtt();
        }
    }

    /// `ExitProbeRTT()` (§5.3.4.4).
    fn exit_probe_rtt(&mut self) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down();
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }

    /// Entering fast recovery (`OnEnterFastRecovery()`, §5.6.4.4).
    fn enter_fast_recovery(&mut self, lost_pkts: u64) {
        if self.ca_state == CaState::Open {
            self.save_cwnd();
            self.ca_state = CaState::Recovery;
            self.rate.start_recovery(lost_pkts);
            self.recovery_round = self.round_count;
        }
    }
}

impl CongestionControl for BbrV3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// `OnTransmit()` → `HandleRestartFromIdle()` (§5.4), then the
    /// per-packet state of §4.1.2.2.
    fn on_send(&mut self, now_ns: u64, bytes: u64) {
        self.start(now_ns);
        if self.rate.inflight_bytes == 0 && self.rate.app_limited != 0 {
            self.idle_restart = true;
            self.extra_acked_interval_start = now_ns;
            if self.is_in_probe_bw() {
                self.set_pacing_rate_with_gain(1.0);
            } else if self.state == State::ProbeRtt {
                self.check_probe_rtt_done();
            }
        }
        self.rate.on_send(now_ns, bytes);
        if self.rate.inflight_bytes as f64 + self.smss > self.cwnd {
            self.cwnd_limited_cur = true;
        }
    }

    fn on_packet_acked(&mut self, now_ns: u64, sent_ns: u64, bytes: u64) {
        self.start(now_ns);
        self.rate.on_packet_acked(now_ns, sent_ns, bytes);
    }

    fn on_packet_lost(&mut self, now_ns: u64, sent_ns: u64, bytes: u64) {
        self.start(now_ns);
        let p = self.rate.on_packet_lost(sent_ns, bytes);
        self.handle_lost_packet(p);
    }

    /// `UpdateOnACK()` (§5.2.3).
    fn on_ack(&mut self, s: &AckSample) {
        self.start(s.now_ns);
        let now = s.now_ns;
        if !self.rate.per_packet_acks && s.acked_bytes > 0 {
            self.rate.deliver_oldest(now, s.acked_bytes);
        }
        let ce = s.ce_bytes.min(s.acked_bytes);
        let mut rs = self.rate.generate(ce, None);
        let rtt_ns = s.rtt_ns.or(rs.has_data.then(|| now.saturating_sub(rs.newest_sent_ns)));
        if let Some(r) = rtt_ns {
            self.srtt.update(r);
            self.conn_min_rtt.update(now, r);
        }
        if let (Some(i), Some(m)) = (rs.interval_ns, self.conn_min_rtt.get()) {
            if i < m {
                rs.interval_ns = None;
            }
        }
        let delivery_rate = match rs.interval_ns {
            Some(i) if i > 0 && rs.has_data => rs.delivered_bytes as f64 / secs(i),
            _ => 0.0,
        };
        // Loss recovery (§5.6.4.4): leave once everything sent before it is
        // settled; enter on newly marked losses.
        if self.in_loss_recovery() && self.rate.recovery_done() {
            self.ca_state = CaState::Open;
            self.restore_cwnd();
        }
        if rs.newly_lost_pkts > 0 {
            self.enter_fast_recovery(rs.newly_lost_pkts);
        }
        // UpdateModelAndState().
        self.update_latest_delivery_signals(&rs, delivery_rate);
        self.update_congestion_signals(&rs, delivery_rate, ce);
        self.update_ack_aggregation(rs.newly_acked_bytes as f64);
        self.check_full_bw_reached(&rs, delivery_rate);
        self.check_startup_done(&rs);
        self.check_drain_done();
        self.update_probe_bw_cycle_phase(&rs, delivery_rate);
        self.update_min_rtt(rtt_ns.map(secs));
        self.check_probe_rtt(&rs);
        self.advance_latest_delivery_signals(&rs, delivery_rate);
        self.bw = self.max_bw().min(self.bw_shortterm);
        // UpdateControlParameters().
        if !self.has_seen_rtt && self.srtt.srtt_ns().is_some() {
            self.init_pacing_rate();
        }
        self.set_pacing_rate_with_gain(self.pacing_gain);
        self.set_send_quantum();
        self.set_cwnd(rs.newly_acked_bytes as f64);
        self.loss_in_cycle |= rs.newly_lost_bytes > 0;
        self.ecn_in_cycle |= ce > 0;
    }

    fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        self.start(now_ns);
        let mut marked = 0;
        if !self.rate.per_packet_losses {
            for p in self.rate.lose_oldest(lost_bytes) {
                marked += p.pkts;
                self.handle_lost_packet(Some(p));
            }
        }
        self.enter_fast_recovery(marked);
    }

    /// `OnEnterRTO()` (§5.6.4.4): cwnd = inflight + 1 packet.
    fn on_rto(&mut self, now_ns: u64) {
        self.start(now_ns);
        if !self.rate.per_packet_losses {
            for p in self.rate.lose_all() {
                self.handle_lost_packet(Some(p));
            }
        }
        // Losses marked by the timer are no ACK's RS.newly_lost.
        let marked = self.rate.pending_lost_pkts();
        self.rate.clear_pending();
        self.save_cwnd();
        self.cwnd = (self.inflight_now() + self.smss).min(1e15);
        self.ca_state = CaState::Loss;
        self.rate.start_recovery(marked);
    }

    fn on_app_limited(&mut self, now_ns: u64) {
        self.start(now_ns);
        self.rate.mark_app_limited();
    }

    fn cwnd_bytes(&self) -> Option<u64> {
        Some((self.cwnd.round() as u64).max(1))
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(((self.pacing_rate * 8.0).round() as u64).max(1))
    }

    /// `sk_pacing_rate` as TCP's internal pacing spends it: payload bytes
    /// (Linux `tcp_update_skb_after_send` charges the segment's data).
    fn pacing_counts_payload(&self) -> bool {
        true
    }

    fn state(&self) -> BTreeMap<&'static str, f64> {
        let finite = |x: f64| if x.is_finite() { x } else { -1.0 };
        let mut m = BTreeMap::new();
        m.insert(
            "state",
            match self.state {
                State::Startup => 0.0,
                State::Drain => 1.0,
                State::ProbeBwDown => 2.0,
                State::ProbeBwCruise => 3.0,
                State::ProbeBwRefill => 4.0,
                State::ProbeBwUp => 5.0,
                State::ProbeRtt => 6.0,
            },
        );
        m.insert("pacing_gain", self.pacing_gain);
        m.insert("cwnd_gain", self.cwnd_gain);
        m.insert("max_bw_mbps", self.max_bw() * 8e-6);
        m.insert("bw_mbps", self.bw * 8e-6);
        m.insert("bw_shortterm_mbps", finite(self.bw_shortterm * 8e-6));
        m.insert("min_rtt_us", finite(self.min_rtt * 1e6));
        m.insert("cwnd_bytes", self.cwnd);
        m.insert("inflight_bytes", self.rate.inflight_bytes as f64);
        m.insert("inflight_longterm", finite(self.inflight_longterm));
        m.insert("inflight_shortterm", finite(self.inflight_shortterm));
        m.insert("rounds", self.round_count as f64);
        m.insert("full_bw_reached", f64::from(u8::from(self.full_bw_reached)));
        m.insert("ecn_alpha", self.ecn_alpha);
        m.insert("extra_acked_bytes", self.extra_acked_filter.get() as f64);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const MS: u64 = 1_000_000;

    fn bbr3(ecn_max_rtt_us: u64) -> BbrV3 {
        BbrV3::new(&PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: 10 }, 0, true, ecn_max_rtt_us, 1)
    }

    fn ack(b: &mut BbrV3, now: u64, pkts: u64, ce_pkts: u64, rtt: u64) {
        b.on_ack(&AckSample {
            now_ns: now,
            acked_bytes: pkts * MSS,
            ce_bytes: ce_pkts * MSS,
            rtt_ns: Some(rtt),
            acked_pkts: pkts as u32,
            ..Default::default()
        });
    }

    /// One packet-timed round: `n` packets sent at `t` with nothing in
    /// flight; `lost` of them declared lost and the rest delivered by one
    /// ACK at `t + rtt` (`ce` of those CE-marked). The delivery rate sample
    /// is (n − lost) packets per rtt.
    fn round(b: &mut BbrV3, t: u64, n: u64, lost: u64, ce: u64, rtt: u64) {
        for _ in 0..n {
            b.on_send(t, MSS);
        }
        for _ in 0..n - lost {
            b.on_packet_acked(t + rtt, t, MSS);
        }
        for _ in 0..lost {
            b.on_packet_lost(t + rtt, t, MSS);
        }
        ack(b, t + rtt, n - lost, ce, rtt);
    }

    /// Startup at 10, 20, 40 packets per 10 ms round, then three rounds of
    /// 49 (less than 1.25 × 40): the pipe is full (rounds every 20 ms from
    /// t = 0; returns the next round's start).
    fn to_probe_bw(b: &mut BbrV3) -> u64 {
        let mut t = 0;
        for n in [10, 20, 40, 49, 49, 49] {
            round(b, t, n, 0, 0, 10 * MS);
            t += 20 * MS;
        }
        t
    }

    /// §2.5, §2.6, §2.8, §2.16, §5.6.1: the draft's constants and the
    /// gains of each state.
    #[test]
    fn constants_and_gains_are_the_drafts() {
        assert!((STARTUP_PACING_GAIN - 2.77).abs() < 0.003);
        assert_eq!((DEFAULT_CWND_GAIN, DRAIN_PACING_GAIN), (2.0, 0.5));
        assert_eq!((LOSS_THRESH, BETA, HEADROOM), (0.02, 0.7, 0.15));
        assert_eq!((PROBE_DOWN_PACING_GAIN, PROBE_UP_PACING_GAIN, PROBE_UP_CWND_GAIN), (0.90, 1.25, 2.25));
        assert_eq!(PROBE_RTT_CWND_GAIN, 0.5);
        assert_eq!((PROBE_RTT_INTERVAL_NS, PROBE_RTT_DURATION_NS, MIN_RTT_FILTER_LEN_NS), (5_000_000_000, 200_000_000, 10_000_000_000));
        let mut b = bbr3(5000);
        assert_eq!((b.state_name(), b.pacing_gain(), b.cwnd_gain()), (State::Startup, STARTUP_PACING_GAIN, 2.0));
        // InitPacingRate (§5.6.2): 2.77 · 10 packets / 1 ms.
        assert!((b.pacing_rate - STARTUP_PACING_GAIN * 10_000.0 / 0.001).abs() < 1e-6);
        b.enter_drain();
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (0.5, 2.0));
        b.start_probe_bw_down();
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (0.9, 2.0));
        b.start_probe_bw_cruise();
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0, 2.0));
        b.start_probe_bw_refill(0);
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0, 2.0));
        b.start_probe_bw_up(0.0);
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.25, 2.25));
    }

    /// §5.3.1.2 `CheckFullBWReached()`: three round starts whose delivery
    /// rate grew less than 25 % fill the pipe; §5.3.2 Drain then ends at
    /// once (nothing in flight ≤ `Inflight(1.0)`), ProbeBW begins in DOWN
    /// and, inflight being under the BDP, cruises (§5.3.3.1).
    #[test]
    fn startup_exits_after_three_rounds_without_growth() {
        let mut b = bbr3(5000);
        let mut t = 0;
        for (i, n) in [10u64, 20, 40, 49, 49].into_iter().enumerate() {
            round(&mut b, t, n, 0, 0, 10 * MS);
            t += 20 * MS;
            assert_eq!(b.state_name(), State::Startup, "round {}", i + 1);
        }
        assert_eq!(b.full_bw_count, 2);
        assert_eq!(b.full_bw, 4_000_000.0, "40 packets per 10 ms");
        round(&mut b, t, 49, 0, 0, 10 * MS);
        assert!(b.full_bw_reached());
        assert_eq!(b.state_name(), State::ProbeBwCruise);
        assert_eq!(b.max_bw(), 4_900_000.0);
        assert_eq!(b.min_rtt_s(), 0.010);
    }

    /// §5.3.2 `CheckDrainDone()`: Drain paces at 0.5 and, when inflight
    /// stays above `Inflight(1.0)`, still leaves after 3 rounds
    /// (`round_count > drain_start_round + 3`).
    #[test]
    fn drain_gives_up_after_three_rounds() {
        let mut b = bbr3(5000);
        let mut t = 0;
        for n in [10u64, 20, 40, 49, 49] {
            round(&mut b, t, n, 0, 0, 10 * MS);
            t += 20 * MS;
        }
        // 200 packets stay in flight from here on.
        for _ in 0..200 {
            b.on_send(t, MSS);
        }
        round(&mut b, t + MS, 49, 0, 0, 10 * MS);
        assert_eq!((b.state_name(), b.pacing_gain()), (State::Drain, 0.5));
        let start = b.drain_start_round;
        for k in 1..=4u64 {
            t += 20 * MS;
            round(&mut b, t, 10, 0, 0, 10 * MS);
            if k <= 3 {
                assert_eq!(b.state_name(), State::Drain, "{k} rounds in Drain");
            }
        }
        assert_eq!(b.round_count(), start + 4);
        assert_eq!(b.state_name(), State::ProbeBwDown, "inflight 200 packets: no headroom to cruise");
    }

    /// §5.3.3.1 `IsTimeToCruise()`: DOWN holds until inflight is at most
    /// `inflight_longterm − max(SMSS, 0.15·inflight_longterm)` (and the
    /// BDP); with inflight_longterm = 40 packets that is 34 packets.
    #[test]
    fn down_to_cruise_at_the_headroom_target() {
        let mut b = bbr3(5000);
        let t = to_probe_bw(&mut b);
        // Back to DOWN within the same cycle (no new probe wait, no filter
        // advance).
        b.state = State::ProbeBwDown;
        b.set_gains(PROBE_DOWN_PACING_GAIN, DEFAULT_CWND_GAIN);
        for _ in 0..60 {
            b.on_send(t, MSS);
        }
        b.inflight_longterm = 40_000.0;
        assert_eq!(b.inflight_with_headroom(), 34_000.0);
        assert!(b.inflight_with(b.max_bw(), 1.0) >= 49_000.0);
        let mut now = t + 10 * MS;
        loop {
            let before = b.rate.inflight_bytes;
            b.on_packet_acked(now, t, MSS);
            ack(&mut b, now, 1, 0, 10 * MS);
            if before - MSS > 34_000 {
                assert_eq!(b.state_name(), State::ProbeBwDown, "{} in flight", before - MSS);
            } else {
                assert_eq!(b.state_name(), State::ProbeBwCruise);
                assert_eq!(b.rate.inflight_bytes, 34_000);
                break;
            }
            now += 100_000;
        }
    }

    /// §5.5.10.2 `HandleLostPacket()` / `InflightAtLoss()` /
    /// `HandleInflightTooHigh()`: in ProbeBW_UP, the first lost packet that
    /// takes the loss rate since its send past 2 % sets inflight_longterm
    /// to the inflight at which the 2 % was crossed, and ends the probe.
    #[test]
    fn loss_above_two_percent_in_up_sets_inflight_longterm() {
        let mut b = bbr3(5000);
        let t = to_probe_bw(&mut b);
        b.start_probe_bw_refill(0);
        b.start_probe_bw_up(4_900_000.0);
        b.is_bw_probe_sample = true;
        for _ in 0..100 {
            b.on_send(t, MSS);
        }
        let t_lost = t + 10 * MS;
        // All were sent at t: each report settles the oldest unsettled one.
        for _ in 0..59 {
            b.on_packet_acked(t_lost, t, MSS);
        }
        // Packet 60 lost: 1000 of 60000 in flight at its send, < 2 %.
        b.on_packet_lost(t_lost, t, MSS);
        assert_eq!(b.state_name(), State::ProbeBwUp);
        assert!(b.inflight_longterm().is_infinite());
        // Packet 61 lost: 2000 > 2 % of 61000. Before it 60000 were in
        // flight and 1000 lost: the loss rate crossed 2 % after
        // (0.02·60000 − 1000)/(1 − 0.02) = 204.08 more bytes.
        b.on_packet_lost(t_lost, t, MSS);
        let expect = 60_000.0 + (0.02 * 60_000.0 - 1000.0) / 0.98;
        assert!((b.inflight_longterm() - expect).abs() < 1e-6, "{}", b.inflight_longterm());
        assert!(b.prev_probe_too_high);
        assert_eq!(b.state_name(), State::ProbeBwDown);
        // Once per probe: the next loss changes nothing.
        b.on_packet_lost(t_lost, t, MSS);
        assert!((b.inflight_longterm() - expect).abs() < 1e-6);
    }

    /// §5.5.10.3: a loss while cruising cuts the short-term model once, at
    /// the end of the round it happened in: `bw_shortterm =
    /// max(bw_latest, 0.7·max_bw)`, `inflight_shortterm =
    /// max(inflight_latest, 0.7·cwnd)`.
    #[test]
    fn loss_when_not_probing_cuts_short_term_model_by_beta() {
        let mut b = bbr3(5000);
        let mut t = to_probe_bw(&mut b);
        assert_eq!(b.state_name(), State::ProbeBwCruise);
        round(&mut b, t, 20, 0, 0, 10 * MS); // bw_latest = 2 MB/s
        t += 20 * MS;
        round(&mut b, t, 20, 2, 0, 10 * MS); // 2 lost
        t += 20 * MS;
        assert!(b.bw_shortterm().is_infinite(), "not before the round ends");
        let cwnd = b.cwnd();
        round(&mut b, t, 20, 0, 0, 10 * MS);
        assert!((b.bw_shortterm() - 0.7 * 4_900_000.0).abs() < 1e-6, "{}", b.bw_shortterm());
        assert!((b.inflight_shortterm() - (0.7 * cwnd).max(20_000.0)).abs() < 1e-6);
        assert_eq!(b.bw, b.bw_shortterm());
        assert!((b.pacing_rate - 0.7 * 4_900_000.0 * 0.99).abs() < 1e-3);
    }

    /// §5.3.4.3 / §5.3.4.4: ProbeRTT starts on the first ACK more than 5 s
    /// after `probe_rtt_min_stamp` (the first 10 ms sample, at 10 ms),
    /// with cwnd_gain 0.5; it is held 200 ms and a round, then ProbeBW
    /// resumes in CRUISE with the short-term model reset.
    #[test]
    fn probe_rtt_every_five_seconds_held_200_ms_and_a_round() {
        let mut b = bbr3(5000);
        let mut t = to_probe_bw(&mut b);
        assert_eq!(b.probe_rtt_min_stamp, 10 * MS);
        b.bw_shortterm = 1e6; // to see it reset on exit
        let mut entered = None;
        let mut exited = None;
        while exited.is_none() {
            round(&mut b, t, 20, 0, 0, 12 * MS);
            let at = t + 12 * MS;
            match (entered, b.state_name()) {
                (None, State::ProbeRtt) => {
                    entered = Some(at);
                    assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0, 0.5));
                    assert!(b.cwnd() <= b.probe_rtt_cwnd());
                    assert_eq!(b.probe_rtt_cwnd(), (0.5 * b.bw * 0.010).max(4000.0));
                }
                (Some(_), State::ProbeRtt) => {}
                (Some(_), _) => exited = Some(at),
                (None, _) => assert!(at <= 5_010 * MS, "late at {at}"),
            }
            t += 20 * MS;
        }
        // Rounds start at 120 ms + 20k ms, ACKed 12 ms later: the first ACK
        // past 5.010 s is at 5.012 s; ProbeRTT is done after 5.212 s, i.e.
        // at the ACK of 5.232 s.
        assert_eq!(entered, Some(5_012 * MS));
        assert_eq!(exited, Some(5_232 * MS));
        assert_eq!(b.state_name(), State::ProbeBwCruise);
        assert!(b.bw_shortterm().is_infinite());
        // The sender idles between rounds: the first send after the done
        // stamp, at 5.220 s, ends ProbeRTT (HandleRestartFromIdle, §5.4.1).
        assert_eq!(b.probe_rtt_min_stamp, 5_220 * MS);
    }

    /// §5.3.3.8 `IsTimeToProbeBW()`: CRUISE turns to REFILL once
    /// `bw_probe_wait` (2–3 s) has elapsed since the cycle began (rounds
    /// 100 ms apart keep the Reno bound of min(BDP, 63) = 49 rounds
    /// farther); §5.3.3.3: after one round of REFILL, UP.
    #[test]
    fn refill_after_probe_wait_then_up_after_a_round() {
        let mut b = bbr3(5000);
        let mut t = to_probe_bw(&mut b);
        let (stamp, wait) = (b.cycle_stamp, b.bw_probe_wait_s);
        assert!((2.0..3.0).contains(&wait));
        let mut prev_ack = 0;
        while b.state_name() == State::ProbeBwCruise {
            prev_ack = t + 10 * MS;
            round(&mut b, t, 49, 0, 0, 10 * MS);
            t += 100 * MS;
        }
        let at = t - 100 * MS + 10 * MS;
        assert_eq!(b.state_name(), State::ProbeBwRefill);
        assert!(secs(at - stamp) > wait);
        assert!(secs(at - 100 * MS - stamp) <= wait, "the first ACK past the wait ({prev_ack})");
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.0, 2.0));
        round(&mut b, t, 49, 0, 0, 10 * MS);
        assert_eq!(b.state_name(), State::ProbeBwUp);
        assert!(b.is_bw_probe_sample);
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (1.25, 2.25));
    }

    /// Google BBRv3's ECN response (`bbr_update_ecn_alpha`,
    /// `bbr_adapt_lower_bounds`): alpha is an EWMA (gain 1/16) of the CE
    /// fraction per round, and a round with CE while cruising cuts
    /// inflight_shortterm to cwnd·(1 − alpha/3).
    #[test]
    fn ce_marks_cut_inflight_shortterm_by_alpha_over_three() {
        let mut b = bbr3(20_000);
        let t = to_probe_bw(&mut b);
        // Eligible from round 2 on (min_rtt known): five unmarked rounds.
        assert!(b.ecn_eligible);
        let alpha0 = (15.0f64 / 16.0).powi(5);
        assert!((b.ecn_alpha() - alpha0).abs() < 1e-12);
        let cwnd = b.cwnd();
        round(&mut b, t, 20, 0, 20, 10 * MS);
        let alpha = alpha0 * 15.0 / 16.0 + 1.0 / 16.0;
        assert!((b.ecn_alpha() - alpha).abs() < 1e-12);
        assert!((b.inflight_shortterm() - cwnd * (1.0 - alpha / 3.0)).abs() < 1e-6);
        assert!(b.bw_shortterm().is_infinite(), "ECN bounds inflight only");
    }

    /// Google BBRv3 (`bbr_check_ecn_too_high_in_startup`): two rounds with
    /// at least half the data CE-marked end STARTUP, with
    /// inflight_longterm = max(BDP, inflight_latest) (as §5.3.1.3 does for
    /// loss). Off by default beyond 5 ms of min_rtt.
    #[test]
    fn ce_in_two_startup_rounds_ends_startup() {
        let mut b = bbr3(20_000);
        round(&mut b, 0, 10, 0, 0, 10 * MS);
        round(&mut b, 20 * MS, 20, 0, 20, 10 * MS); // 20 of 30: 0.67
        assert_eq!(b.state_name(), State::Startup);
        round(&mut b, 40 * MS, 40, 0, 40, 10 * MS); // 40 of 40
        assert!(b.full_bw_reached());
        assert_eq!(b.inflight_longterm(), 40_000.0);
        assert_ne!(b.state_name(), State::Startup);

        let mut b = bbr3(5000); // min_rtt 10 ms > 5 ms: not eligible
        round(&mut b, 0, 10, 0, 0, 10 * MS);
        round(&mut b, 20 * MS, 20, 0, 20, 10 * MS);
        round(&mut b, 40 * MS, 40, 0, 40, 10 * MS);
        assert_eq!(b.state_name(), State::Startup);
    }

    /// §5.3.1.3 `CheckStartupHighLoss()`: a round of fast recovery in
    /// STARTUP with over 2 % loss in at least 6 discontiguous ranges ends
    /// STARTUP.
    #[test]
    fn startup_ends_on_high_loss_in_six_ranges() {
        let mut b = bbr3(5000);
        round(&mut b, 0, 10, 0, 0, 10 * MS);
        round(&mut b, 20 * MS, 20, 0, 0, 10 * MS);
        // 40 sent; every 5th lost (8 ranges), the others delivered.
        let t = 40 * MS;
        for _ in 0..40 {
            b.on_send(t, MSS);
        }
        let sent: Vec<SentPacket> = b.rate.queue.iter().copied().collect();
        for p in &sent {
            if p.index % 5 == 0 {
                b.on_packet_lost(t + 10 * MS, p.sent_ns, MSS);
            } else {
                b.on_packet_acked(t + 10 * MS, p.sent_ns, MSS);
            }
        }
        ack(&mut b, t + 10 * MS, 32, 0, 10 * MS);
        assert_eq!(b.state_name(), State::Startup, "the loss round is not over");
        assert_eq!(b.loss_events_in_round, 8);
        // The next flight: its first ACK delivers 4 packets (short of the
        // 8 repairs recovery needs) and shows 4 more lost: it ends the loss
        // round with RS.lost = 4 of RS.tx_in_flight = 4 packets (> 2 %).
        let t = 60 * MS;
        for _ in 0..40 {
            b.on_send(t, MSS);
        }
        for _ in 0..4 {
            b.on_packet_acked(t + 10 * MS, t, MSS);
        }
        for _ in 0..4 {
            b.on_packet_lost(t + 10 * MS, t, MSS);
        }
        ack(&mut b, t + 10 * MS, 4, 0, 10 * MS);
        assert_eq!(b.ca_state, CaState::Recovery);
        assert!(b.full_bw_reached());
        assert_ne!(b.state_name(), State::Startup);
    }
}
