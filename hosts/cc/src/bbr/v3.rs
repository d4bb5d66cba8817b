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
    recovery_point: u64,
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
            recovery_point: 0,
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
            State::ProbeBwRefill => {
                if self.round_start {
                    self.is_bw_probe_sample = true;
                    self.start_probe_bw_up(delivery_rate);
                }
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
    fn enter_fast_recovery(&mut self) {
        if self.ca_state == CaState::Open {
            self.save_cwnd();
            self.ca_state = CaState::Recovery;
            self.recovery_point = self.rate.next_index();
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
        if self.in_loss_recovery() && self.rate.oldest_unsettled() >= self.recovery_point {
            self.ca_state = CaState::Open;
            self.restore_cwnd();
        }
        if rs.newly_lost_bytes > 0 || rs.newly_lost_pkts > 0 {
            self.enter_fast_recovery();
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
        if !self.rate.per_packet_losses {
            for p in self.rate.lose_oldest(lost_bytes) {
                self.handle_lost_packet(Some(p));
            }
        }
        self.enter_fast_recovery();
    }

    /// `OnEnterRTO()` (§5.6.4.4): cwnd = inflight + 1 packet.
    fn on_rto(&mut self, now_ns: u64) {
        self.start(now_ns);
        if !self.rate.per_packet_losses {
            for p in self.rate.lose_all() {
                self.handle_lost_packet(Some(p));
            }
        }
        self.rate.clear_pending();
        self.save_cwnd();
        self.cwnd = (self.inflight_now() + self.smss).min(1e15);
        self.ca_state = CaState::Loss;
        self.recovery_point = self.rate.next_index();
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
