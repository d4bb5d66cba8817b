//! BBRv1 as Linux's `net/ipv4/tcp_bbr.c` behaves (the kernel's `bbr`).
//!
//! The kernel's units and fixed-point arithmetic are kept, so the rounding
//! is the kernel's: the window in packets, times in µs, bandwidth in
//! packets/µs scaled by 2^24 (`BW_SCALE`), gains scaled by 2^8
//! (`BBR_SCALE`, so 2/ln2 is 739/256 and 1/2.885 is 88/256). Function names
//! in the comments are the kernel's.
//!
//! What the kernel reads from the socket is modelled from the events:
//! `tp->delivered`, `tp->lost`, the rate sample and `packets_in_flight` by
//! [`RateSampler`]; the CA state (Open / Recovery / Loss) from losses, RTOs
//! and a recovery point (the packets sent before the state was entered, all
//! settled = `snd_una` passing `high_seq`); the earliest departure time of
//! the next packet (`tcp_wstamp_ns`) from the sends and the pacing rate.
//! See docs/algorithms.md (`## bbr`) for what is simplified.

use std::collections::BTreeMap;

use super::{CaState, ConnMinRtt, RateSample, RateSampler, Rng, WindowedMax};
use crate::params::{ParamInfo, Params};
use crate::window::RttEstimator;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "tso_segs",
        default: "0",
        doc: "segments per send quantum in the in-flight budget (3 quanta, bbr_quantization_budget): 0 = the kernel's bbr_tso_segs_goal (pacing_rate >> 10 bytes, at least 2 above 1.2 Mbit/s, at most 127); 1 = one MTU packet per quantum (a datapath without TSO/GSO)",
    },
    ParamInfo { name: "seed", default: "1", doc: "seed of the random PROBE_BW start phase (the kernel's get_random_u32_below(7)); the registry gives each flow its own" },
];

const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;

/// Window length of the bw filter, rounds (`bbr_bw_rtts = CYCLE_LEN + 2`).
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window length of the min_rtt filter (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN_NS: u64 = 10_000_000_000;
/// Minimum time at `CWND_MIN_TARGET` in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_MODE_NS: u64 = 200_000_000;
/// Below this rate TSO goal is one segment (`bbr_min_tso_rate`, bits/s).
const MIN_TSO_RATE: u64 = 1_200_000;
/// Pace 1 % below the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln2 (`bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` = 739).
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// 1/(2/ln2) (`bbr_drain_gain = BBR_UNIT * 1000 / 2885` = 88).
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// Steady-state cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: u64 = BBR_UNIT * 2;
const CYCLE_LEN: usize = 8;
/// The PROBE_BW pacing gain cycle (`bbr_pacing_gain`).
pub const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// Random start phase over this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Minimum packets in flight (`bbr_cwnd_min_target`).
pub const CWND_MIN_TARGET: u64 = 4;
/// Growth that counts as "still growing" (`bbr_full_bw_thresh`, 1.25).
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// Rounds without it before the pipe is full (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Long-term (policer) estimation (`bbr_lt_*`).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50; // lost/delivered > 50/256 ≈ 20 %
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8; // bytes/s
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_*`, `bbr_ack_epoch_acked_reset_thresh`).
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `TCP_INIT_CWND`: the bdp before any RTT sample, and the deliveries
/// below which STARTUP grows cwnd regardless.
const TCP_INIT_CWND: u64 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (64 KiB, less 1, less the
/// 320-byte header reserve of an x86-64 distribution kernel).
const GSO_MAX_BYTES: u64 = 65536 - 1 - 320;
/// `sk_pacing_shift` default: a TSO burst is ~1 ms (2^-10 s) of data.
const PACING_SHIFT: u32 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

#[derive(Debug, Clone)]
pub struct BbrV1 {
    mss: u64,
    tso_fixed: u64,
    rng: Rng,
    rate: RateSampler,
    started: bool,
    // The socket (tcp_sock) as BBR reads and writes it.
    cwnd: u64,
    ssthresh: u64,
    /// `sk_pacing_rate`, bytes/s.
    pacing_rate: u64,
    ca_state: CaState,
    /// Packets sent before `ca_state` was entered (recovery ends when all
    /// are settled).
    srtt: RttEstimator,
    conn_min_rtt: ConnMinRtt,
    /// Earliest departure time of the next packet (`tcp_wstamp_ns`).
    wstamp_ns: u64,
    /// `tp->delivered_mstamp`: time of the latest delivery, ns.
    delivered_mstamp: u64,
    /// Packets declared lost since the last ACK (`rs->losses`).
    pending_losses: u64,
    // struct bbr
    min_rtt_us: u64,
    min_rtt_stamp: u64,
    probe_rtt_done_stamp: Option<u64>,
    bw: WindowedMax,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: u64,
    mode: Mode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: usize,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    full_bw: u64,
    ack_epoch_mstamp: u64,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

impl BbrV1 {
    /// `bbr_init`.
    pub fn new(path: &PathInfo, tso_segs: u64, seed: u64) -> Self {
        let mss = u64::from(path.mss.max(1));
        let cwnd = u64::from(path.init_cwnd_pkts.max(1));
        let mut b = BbrV1 {
            mss,
            tso_fixed: tso_segs,
            rng: Rng::new(seed),
            rate: RateSampler::new(mss),
            started: false,
            cwnd,
            ssthresh: u64::MAX,
            pacing_rate: 0,
            ca_state: CaState::Open,
            srtt: RttEstimator::default(),
            conn_min_rtt: ConnMinRtt::default(),
            wstamp_ns: 0,
            delivered_mstamp: 0,
            pending_losses: 0,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
        };
        b.bw.reset(0, 0);
        b.init_pacing_rate_from_rtt();
        b
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        Ok(BbrV1::new(path, p.u64_in("tso_segs", 0, 127)?, p.u64_in("seed", 0, u64::MAX)?))
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    /// Current pacing gain, scaled by 256.
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }
    /// Current cwnd gain, scaled by 256.
    pub fn cwnd_gain(&self) -> u64 {
        self.cwnd_gain
    }
    pub fn cwnd_pkts(&self) -> u64 {
        self.cwnd
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn rounds(&self) -> u64 {
        self.rtt_cnt
    }
    pub fn min_rtt_us(&self) -> u64 {
        self.min_rtt_us
    }
    /// The bandwidth estimate in bytes/s (`bbr_bw`, no margin).
    pub fn bw_bytes_per_sec(&self) -> u64 {
        mul_div(self.bw_est(), self.mss * 1_000_000, BW_UNIT)
    }
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }

    /// Clocks start with the first event (`bbr_init` runs at connect time).
    fn start(&mut self, now: u64) {
        if !self.started {
            self.started = true;
            self.min_rtt_stamp = now;
            self.ack_epoch_mstamp = now;
            self.delivered_mstamp = now;
            self.cycle_mstamp = now;
        }
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`.
    fn bw_est(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: packets/µs << 24 with a gain, less the
    /// pacing margin, to bytes/s.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64) -> u64 {
        let r = (u128::from(rate) * u128::from(self.mss) * u128::from(gain)) >> BBR_SCALE;
        let r = (r * u128::from(1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT))) >> BW_SCALE;
        u64::try_from(r).unwrap_or(u64::MAX)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · cwnd / srtt (1 ms
    /// before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self) {
        let rtt_us = match self.srtt.srtt_ns() {
            Some(s) => {
                self.has_seen_rtt = true;
                ((s / 1000.0) as u64).max(1)
            }
            None => 1000,
        };
        let bw = (u128::from(self.cwnd) * u128::from(BW_UNIT) / u128::from(rtt_us)).min(u128::from(u64::MAX)) as u64;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: only upward until the pipe is full.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && self.srtt.srtt_ns().is_some() {
            self.init_pacing_rate_from_rtt();
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal` (with `bbr_min_tso_segs`), or the fixed quantum.
    fn tso_segs_goal(&self) -> u64 {
        if self.tso_fixed > 0 {
            return self.tso_fixed;
        }
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(GSO_MAX_BYTES);
        let min_segs = if self.pacing_rate < MIN_TSO_RATE >> 3 { 1 } else { 2 };
        (bytes / self.mss).max(min_segs).min(0x7F)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw · min_rtt · gain) packets.
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt_us == u64::MAX {
            return TCP_INIT_CWND;
        }
        let w = u128::from(bw) * u128::from(self.min_rtt_us);
        let bdp = ((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT));
        u64::try_from(bdp).unwrap_or(u64::MAX)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal());
        cwnd = cwnd.saturating_add(1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, now: u64, inflight_now: u64) -> u64 {
        let edt = self.wstamp_ns.max(now);
        let interval_us = us(edt - now);
        let interval_delivered = ((u128::from(self.bw_est()) * u128::from(interval_us)) >> BW_SCALE) as u64;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt = at_edt.saturating_add(self.tso_segs_goal());
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = mul_div(self.bw_est(), EXTRA_ACKED_MAX_US, BW_UNIT);
        let aggr = self.extra_acked().saturating_mul(EXTRA_ACKED_GAIN) >> BBR_SCALE;
        aggr.min(max_aggr)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`; `Some(cwnd)` when packet
    /// conservation decides the window.
    fn recover_or_restore(&mut self, losses: u64, acked: u64) -> (u64, bool) {
        let state = self.ca_state;
        let prev = self.prev_ca_state;
        let mut cwnd = self.cwnd;
        let inflight = self.rate.inflight_pkts;
        if losses > 0 {
            cwnd = cwnd.saturating_sub(losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation, and a round
            // starts now.
            self.packet_conservation = true;
            self.next_rtt_delivered = self.rate.delivered_pkts;
            cwnd = inflight.saturating_add(acked);
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // Leaving recovery: the window saved on entry comes back.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(inflight.saturating_add(acked)), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, losses: u64, acked: u64, bw: u64, gain: u64) {
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(losses, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target = target.saturating_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = cwnd.saturating_add(acked).min(target);
                } else if cwnd < target || self.rate.delivered_pkts < TCP_INIT_CWND {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        self.cwnd = cwnd.clamp(1, u64::from(u32::MAX));
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, now: u64, rs: &RateSample, losses: u64) -> bool {
        let is_full_length = us(self.delivered_mstamp.saturating_sub(self.cycle_mstamp)) > self.min_rtt_us;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(now, rs.prior_in_flight_pkts);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = self.delivered_mstamp;
    }

    /// `bbr_reset_probe_bw_mode`: a random phase, never the 0.75 one.
    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase();
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp_ms = us(self.delivered_mstamp) / 1000;
        self.lt_last_delivered = self.rate.delivered_pkts;
        self.lt_last_lost = self.rate.lost_pkts;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    /// `bbr_lt_bw_interval_done`.
    fn lt_bw_interval_done(&mut self, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if u128::from(diff) * u128::from(BBR_UNIT) <= u128::from(LT_BW_RATIO) * u128::from(self.lt_bw)
                || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF
            {
                // Two consistent lossy intervals: a policer. Use their mean.
                self.lt_bw = ((u128::from(bw) + u128::from(self.lt_bw)) >> 1) as u64;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval();
    }

    /// `bbr_lt_bw_sampling`.
    fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling();
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval();
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_bw_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling();
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = self.rate.lost_pkts.saturating_sub(self.lt_last_lost);
        let delivered = self.rate.delivered_pkts.saturating_sub(self.lt_last_delivered);
        if delivered == 0 || u128::from(lost) << BBR_SCALE < u128::from(LT_LOSS_THRESH) * u128::from(delivered) {
            return;
        }
        let now_ms = us(self.delivered_mstamp) / 1000;
        let t = now_ms as i64 - self.lt_last_stamp_ms as i64;
        if t < 1 {
            return;
        }
        if t as u64 >= u64::from(u32::MAX) / 1000 {
            self.reset_lt_bw_sampling();
            return;
        }
        let t_us = t as u64 * 1000;
        let bw = (u128::from(delivered) * u128::from(BW_UNIT) / u128::from(t_us)).min(u128::from(u64::MAX)) as u64;
        self.lt_bw_interval_done(bw);
    }

    /// `bbr_update_bw`: round counting, policer sampling, the max filter.
    fn update_bw(&mut self, rs: &RateSample, losses: u64) {
        self.round_start = false;
        let Some(interval_ns) = rs.interval_ns else { return };
        let interval_us = us(interval_ns);
        if !rs.has_data || interval_us == 0 {
            return;
        }
        if rs.prior_delivered_pkts >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.rate.delivered_pkts;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(losses, rs.is_app_limited);
        let bw = (u128::from(rs.delivered_pkts) * u128::from(BW_UNIT) / u128::from(interval_us)).min(u128::from(u64::MAX)) as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, rs: &RateSample) {
        let valid = rs.has_data && rs.interval_ns.is_some_and(|i| us(i) > 0);
        if EXTRA_ACKED_GAIN == 0 || rs.newly_acked_pkts == 0 || !valid {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us(self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp));
        let mut expected = mul_div(self.bw_est(), epoch_us, BW_UNIT);
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked.saturating_add(rs.newly_acked_pkts) >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = self.ack_epoch_acked.saturating_add(rs.newly_acked_pkts).min(0xFFFFF);
        let extra = self.ack_epoch_acked.saturating_sub(expected).min(self.cwnd);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = ((u128::from(self.full_bw) * u128::from(FULL_BW_THRESH)) >> BBR_SCALE) as u64;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, now: u64) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(now, self.rate.inflight_pkts) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: u64) {
        let Some(done) = self.probe_rtt_done_stamp else { return };
        if now <= done {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// `bbr_update_min_rtt`: the 10 s min filter and PROBE_RTT.
    fn update_min_rtt(&mut self, now: u64, rs: &RateSample, rtt_us: Option<u64>) {
        let filter_expired = now > self.min_rtt_stamp.saturating_add(MIN_RTT_WIN_NS);
        if let Some(rtt) = rtt_us {
            // Strictly lower (tcp_bbr.c: `rs->rtt_us < bbr->min_rtt_us`): a
            // sample that only matches min_rtt does not postpone PROBE_RTT.
            if rtt < self.min_rtt_us || filter_expired {
                self.min_rtt_us = rtt;
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            self.rate.mark_app_limited();
            if self.probe_rtt_done_stamp.is_none() && self.rate.inflight_pkts <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now.saturating_add(PROBE_RTT_MODE_NS));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.rate.delivered_pkts;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
        if rs.delivered_pkts > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        match self.mode {
            Mode::Startup => {
                self.pacing_gain = HIGH_GAIN;
                self.cwnd_gain = HIGH_GAIN;
            }
            Mode::Drain => {
                self.pacing_gain = DRAIN_GAIN;
                self.cwnd_gain = HIGH_GAIN;
            }
            Mode::ProbeBw => {
                self.pacing_gain = if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx] };
                self.cwnd_gain = CWND_GAIN;
            }
            Mode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }

    /// Entering fast recovery (`tcp_enter_recovery` → `bbr_ssthresh`).
    fn enter_recovery(&mut self, lost_pkts: u64) {
        if self.ca_state == CaState::Open {
            self.save_cwnd();
            self.ca_state = CaState::Recovery;
            self.rate.start_recovery(lost_pkts);
        }
    }
}

fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    (u128::from(a) * u128::from(b) / u128::from(c.max(1))).min(u128::from(u64::MAX)) as u64
}

impl CongestionControl for BbrV1 {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_send(&mut self, now_ns: u64, bytes: u64) {
        self.start(now_ns);
        // CA_EVENT_TX_START (bbr_cwnd_event): first send with nothing in
        // flight while app-limited.
        if self.rate.inflight_pkts == 0 && self.rate.app_limited != 0 {
            self.idle_restart = true;
            self.ack_epoch_mstamp = now_ns;
            self.ack_epoch_acked = 0;
            if self.mode == Mode::ProbeBw {
                self.set_pacing_rate(self.bw_est(), BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(now_ns);
            }
        }
        self.rate.on_send(now_ns, bytes);
        // EDT: the next packet leaves one pacing gap after this one.
        let gap = if self.pacing_rate > 0 {
            (u128::from(bytes) * 1_000_000_000 / u128::from(self.pacing_rate)).min(u128::from(u64::MAX)) as u64
        } else {
            0
        };
        self.wstamp_ns = self.wstamp_ns.max(now_ns).saturating_add(gap);
    }

    fn on_packet_acked(&mut self, now_ns: u64, sent_ns: u64, bytes: u64) {
        self.start(now_ns);
        self.rate.on_packet_acked(now_ns, sent_ns, bytes);
    }

    fn on_packet_lost(&mut self, now_ns: u64, sent_ns: u64, bytes: u64) {
        self.start(now_ns);
        let pkts = self.rate.lost_pkts;
        self.rate.on_packet_lost(sent_ns, bytes);
        self.pending_losses = self.pending_losses.saturating_add(self.rate.lost_pkts - pkts);
    }

    /// `tcp_ack` → `tcp_rate_gen` → `bbr_main`.
    fn on_ack(&mut self, s: &AckSample) {
        let now = s.now_ns;
        self.start(now);
        if !self.rate.per_packet_acks && s.acked_bytes > 0 {
            self.rate.deliver_oldest(now, s.acked_bytes);
        }
        let mut rs = self.rate.generate(s.ce_bytes.min(s.acked_bytes), None);
        // RTT: the datapath's echo-timestamp sample, else the newest packet
        // this ACK delivered (tcp_ack_update_rtt, which also feeds
        // tcp_min_rtt before tcp_rate_gen runs).
        let rtt_ns = s.rtt_ns.or(rs.has_data.then(|| now.saturating_sub(rs.newest_sent_ns)));
        if let Some(r) = rtt_ns {
            self.srtt.update(r);
            self.conn_min_rtt.update(now, r);
        }
        // tcp_rate_gen: no sample over less than tcp_min_rtt.
        if let (Some(i), Some(m)) = (rs.interval_ns, self.conn_min_rtt.get()) {
            if us(i) < us(m) {
                rs.interval_ns = None;
            }
        }
        if rs.newly_acked_pkts > 0 {
            self.delivered_mstamp = now;
        }
        let losses = std::mem::take(&mut self.pending_losses);
        // tcp_fastretrans_alert: leave recovery once everything sent before
        // it is settled, then enter it on new losses.
        if self.ca_state != CaState::Open && self.rate.recovery_done() {
            self.ca_state = CaState::Open;
        }
        if losses > 0 {
            self.enter_recovery(losses);
        }
        // bbr_main → bbr_update_model.
        let rtt_us = rtt_ns.map(us);
        self.update_bw(&rs, losses);
        self.update_ack_aggregation(&rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(now, &rs, losses) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(&rs);
        self.check_drain(now);
        self.update_min_rtt(now, &rs, rtt_us);
        self.update_gains();
        let bw = self.bw_est();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(losses, rs.newly_acked_pkts, bw, self.cwnd_gain);
    }

    fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        self.start(now_ns);
        if !self.rate.per_packet_losses {
            let before = self.rate.lost_pkts;
            self.rate.lose_oldest(lost_bytes);
            self.pending_losses = self.pending_losses.saturating_add(self.rate.lost_pkts - before);
        }
        self.enter_recovery(self.pending_losses);
    }

    /// `tcp_enter_loss` (→ `bbr_ssthresh`) and `bbr_set_state(TCP_CA_Loss)`.
    fn on_rto(&mut self, now_ns: u64) {
        self.start(now_ns);
        if !self.rate.per_packet_losses {
            self.rate.lose_all();
        }
        // Losses marked by the timer are no ACK's rs->losses.
        let marked = std::mem::take(&mut self.pending_losses);
        self.rate.clear_pending();
        if self.ca_state == CaState::Open {
            self.save_cwnd();
        }
        self.cwnd = self.rate.inflight_pkts.saturating_add(1).min(u64::from(u32::MAX));
        self.ca_state = CaState::Loss;
        self.rate.start_recovery(marked);
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        self.lt_bw_sampling(1, false);
    }

    fn on_app_limited(&mut self, now_ns: u64) {
        self.start(now_ns);
        self.rate.mark_app_limited();
    }

    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.cwnd.max(1).saturating_mul(self.mss))
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.pacing_rate.saturating_mul(8).max(1))
    }

    /// `sk_pacing_rate` as TCP's internal pacing spends it: payload bytes
    /// (Linux `tcp_update_skb_after_send` charges the segment's data).
    fn pacing_counts_payload(&self) -> bool {
        true
    }

    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert(
            "mode",
            match self.mode {
                Mode::Startup => 0.0,
                Mode::Drain => 1.0,
                Mode::ProbeBw => 2.0,
                Mode::ProbeRtt => 3.0,
            },
        );
        m.insert("cycle_idx", self.cycle_idx as f64);
        m.insert("pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64);
        m.insert("cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64);
        m.insert("bw_mbps", self.bw_bytes_per_sec() as f64 * 8e-6);
        m.insert("min_rtt_us", if self.min_rtt_us == u64::MAX { -1.0 } else { self.min_rtt_us as f64 });
        m.insert("cwnd_pkts", self.cwnd as f64);
        m.insert("inflight_pkts", self.rate.inflight_pkts as f64);
        m.insert("rounds", self.rtt_cnt as f64);
        m.insert("full_bw_reached", f64::from(u8::from(self.full_bw_reached)));
        m.insert("lt_use_bw", f64::from(u8::from(self.lt_use_bw)));
        m.insert("extra_acked_pkts", self.extra_acked() as f64);
        m.insert("ca_state", self.ca_state as u8 as f64);
        m
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const MSS: u64 = 1000;
    const MS: u64 = 1_000_000;

    fn bbr(seed: u64) -> BbrV1 {
        BbrV1::new(&PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: 10 }, 0, seed)
    }

    fn ack(b: &mut BbrV1, now: u64, pkts: u64, rtt: u64) {
        b.on_ack(&AckSample {
            now_ns: now,
            acked_bytes: pkts * MSS,
            rtt_ns: Some(rtt),
            inflight_bytes: b.rate.inflight_bytes,
            acked_pkts: pkts as u32,
            ..Default::default()
        });
    }

    /// One packet-timed round: `n` packets sent together at `t` with
    /// nothing in flight, all delivered by one ACK at `t + rtt`; the rate
    /// sample is exactly n packets per rtt.
    fn round(b: &mut BbrV1, t: u64, n: u64, rtt: u64) {
        for _ in 0..n {
            b.on_send(t, MSS);
        }
        for _ in 0..n {
            b.on_packet_acked(t + rtt, t, MSS);
        }
        ack(b, t + rtt, n, rtt);
    }

    /// Rounds of 10, 20, 40 packets per 10 ms, then 49 (< 1.25 × 40).
    fn to_plateau(b: &mut BbrV1) -> u64 {
        let mut t = 0;
        for n in [10, 20, 40] {
            round(b, t, n, 10 * MS);
            t += 20 * MS;
        }
        t
    }

    /// The kernel's constants in its fixed point (`bbr_high_gain`,
    /// `bbr_drain_gain`, `bbr_cwnd_gain`, `bbr_pacing_gain[]`).
    #[test]
    fn gains_are_the_kernels() {
        assert_eq!(HIGH_GAIN, 739, "2/ln2 = 2.885 → 739/256");
        assert_eq!(DRAIN_GAIN, 88, "1/2.885 → 88/256");
        assert_eq!(CWND_GAIN, 512);
        assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        let b = bbr(1);
        assert_eq!((b.mode(), b.pacing_gain(), b.cwnd_gain()), (Mode::Startup, 739, 739));
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · init_cwnd / 1 ms before
    /// any RTT, less the 1 % margin (`bbr_rate_bytes_per_sec`); at the first
    /// RTT sample it is recomputed from srtt.
    #[test]
    fn initial_pacing_rate() {
        let mut b = bbr(1);
        // 10 · 2^24 / 1000 µs = 167772 (pkts/µs << 24), × 1000 B × 739/256,
        // × 990000 >> 24.
        let bw: u64 = 10 * (1 << 24) / 1000;
        let expect = (((bw * 1000 * 739) >> 8) * 990_000) >> 24;
        assert_eq!(b.pacing_rate, expect);
        assert!((expect as f64 / (2.885 * 10.0 * 1000.0 / 1e-3 * 0.99) - 1.0).abs() < 2e-3);
        // srtt 10 ms: a tenth of that.
        b.on_send(0, MSS);
        b.on_packet_acked(10 * MS, 0, MSS);
        ack(&mut b, 10 * MS, 1, 10 * MS);
        assert!(b.has_seen_rtt);
        let bw10: u64 = 10 * (1 << 24) / 10_000;
        assert!(b.pacing_rate >= (((bw10 * 1000 * 739) >> 8) * 990_000) >> 24);
    }

    /// `bbr_check_full_bw_reached`: STARTUP ends after exactly three rounds
    /// whose max bw grew less than 25 % (49 < 1.25·40), and a 25 % growth
    /// (50 = 1.25·40) restarts the count. `bbr_check_drain` then enters
    /// DRAIN, and leaves it at once when nothing is in flight.
    #[test]
    fn startup_exits_after_three_rounds_without_25_percent_growth() {
        let mut b = bbr(1);
        let mut t = to_plateau(&mut b);
        assert_eq!(b.rounds(), 3);
        for i in 0..2 {
            round(&mut b, t, 49, 10 * MS);
            t += 20 * MS;
            assert_eq!((b.mode(), b.full_bw_cnt), (Mode::Startup, i + 1));
        }
        round(&mut b, t, 49, 10 * MS);
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), Mode::ProbeBw, "drained at once: nothing in flight");

        let mut b = bbr(1);
        let mut t = to_plateau(&mut b);
        round(&mut b, t, 49, 10 * MS);
        t += 20 * MS;
        round(&mut b, t, 49, 10 * MS);
        t += 20 * MS;
        assert_eq!(b.full_bw_cnt, 2);
        round(&mut b, t, 50, 10 * MS);
        assert_eq!((b.mode(), b.full_bw_cnt), (Mode::Startup, 0), "1.25× growth resets");
    }

    /// `bbr_check_drain`: DRAIN paces at 88/256 and holds until the packets
    /// in flight fit `bbr_inflight(max_bw, 1.0)` (BDP + quantization budget).
    #[test]
    fn drain_until_inflight_fits_one_bdp() {
        let mut b = bbr(1);
        let mut t = to_plateau(&mut b);
        for _ in 0..2 {
            round(&mut b, t, 40, 10 * MS);
            t += 20 * MS;
        }
        // The third plateau round leaves 100 extra packets in flight.
        for _ in 0..40 {
            b.on_send(t, MSS);
        }
        for _ in 0..100 {
            b.on_send(t + MS, MSS);
        }
        for _ in 0..40 {
            b.on_packet_acked(t + 10 * MS, t, MSS);
        }
        ack(&mut b, t + 10 * MS, 40, 10 * MS);
        assert_eq!((b.mode(), b.pacing_gain()), (Mode::Drain, DRAIN_GAIN));
        assert_eq!(b.cwnd_gain(), HIGH_GAIN, "DRAIN keeps the STARTUP cwnd gain");
        // max_bw = 40 pkts / 10 ms; BDP 40 packets; pacing 0.35·4 MB/s
        // → TSO goal 2 → budget 6 → 46.
        let target = b.inflight(b.max_bw(), BBR_UNIT);
        assert_eq!(target, 46);
        // ACKs from t + 30 ms on, after every scheduled departure
        // (tcp_wstamp_ns) of the extra packets: the EDT correction is nil.
        let mut now = t + 30 * MS;
        assert!(b.wstamp_ns < now);
        while b.rate.inflight_pkts > target {
            assert_eq!(b.mode(), Mode::Drain, "{} in flight", b.rate.inflight_pkts);
            b.on_packet_acked(now, t + MS, MSS);
            ack(&mut b, now, 1, 10 * MS);
            now += 100_000;
        }
        assert_eq!(b.mode(), Mode::ProbeBw, "left DRAIN on the ACK that brought inflight to {target}");
    }

    /// `bbr_reset_probe_bw_mode`: PROBE_BW starts at a random phase among
    /// 7 (`bbr_cycle_rand`) and never at phase 1, the 0.75 drain phase.
    #[test]
    fn probe_bw_starts_at_a_random_phase_but_never_the_draining_one() {
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..400 {
            let mut b = bbr(seed);
            b.full_bw_reached = true;
            b.reset_probe_bw_mode();
            seen[b.cycle_idx()] += 1;
        }
        assert_eq!(seen[1], 0);
        for (i, n) in seen.iter().enumerate() {
            if i != 1 {
                assert!(*n > 30, "phase {i} drawn {n} times of 400");
            }
        }
    }

    /// A drop-tail bottleneck of one packet per 100 µs with a 10 ms
    /// propagation RTT; the sender fills cwnd (and honours pacing only if
    /// asked). ACK times are multiples of 100 µs.
    pub(super) struct Sim {
        pub(super) now: u64,
        pub(super) b: BbrV1,
        free: u64,
        flight: VecDeque<(u64, u64)>,
        paced: bool,
        next_send: u64,
        extra_rtt: u64,
    }

    const TX: u64 = 100_000;


    impl Sim {
        fn new(b: BbrV1, paced: bool) -> Self {
            Sim { b, now: 0, free: 0, flight: VecDeque::new(), paced, next_send: 0, extra_rtt: 0 }
        }
        /// One 100 µs step; returns the times of the ACKs it delivered.
        pub(super) fn step(&mut self, drop_next: &mut bool) -> Vec<u64> {
            let mut acked = vec![];
            while self.flight.front().is_some_and(|f| f.1 <= self.now) {
                let (sent, at) = self.flight.pop_front().unwrap();
                if std::mem::take(drop_next) {
                    self.b.on_packet_lost(at, sent, MSS);
                    self.b.on_loss(at, MSS);
                    continue;
                }
                self.b.on_packet_acked(at, sent, MSS);
                ack(&mut self.b, at, 1, at - sent + self.extra_rtt);
                acked.push(at);
            }
            loop {
                let cwnd = self.b.cwnd_bytes().unwrap();
                if (self.flight.len() as u64 + 1) * MSS > cwnd {
                    break;
                }
                if self.paced {
                    if self.next_send > self.now {
                        break;
                    }
                    let gap = MSS * 8 * 1_000_000_000 / self.b.pacing_rate_bps().unwrap();
                    self.next_send = self.next_send.max(self.now.saturating_sub(TX)) + gap;
                }
                self.b.on_send(self.now, MSS);
                let dep = self.free.max(self.now) + TX;
                self.free = dep;
                self.flight.push_back((self.now, dep + 10 * MS));
            }
            self.now += TX;
            acked
        }
        fn run(&mut self, until: u64) {
            while self.now < until {
                self.step(&mut false);
            }
        }
    }

    /// `bbr_update_cycle_phase` / `bbr_is_next_cycle_phase`: in PROBE_BW the
    /// gains follow 1.25, 0.75, 1 ×6 from the start phase. A phase at gain
    /// 1 ends on the first delivery more than min_rtt (10.1 ms here) after
    /// it began; the 1.25 phase lasts at least that long and until inflight
    /// reaches 1.25·BDP + budget (or a loss); the 0.75 phase ends by then,
    /// or earlier once inflight is down to BDP + budget. ACKs come at
    /// 100 µs steps (a paced sender skips one now and then: ≤ 10.3 ms).
    #[test]
    fn probe_bw_gain_cycle_advances_every_min_rtt() {
        let mut s = Sim::new(bbr(7), true);
        while s.b.mode() != Mode::ProbeBw {
            s.step(&mut false);
        }
        assert_eq!(s.b.min_rtt_us(), 10_100);
        let mut changes: Vec<(u64, usize, u64)> = vec![];
        let mut idx = s.b.cycle_idx();
        let mut last_ack = 0;
        while changes.len() < 25 {
            let acks = s.step(&mut false);
            if let Some(&t) = acks.last() {
                last_ack = t;
            }
            if s.b.cycle_idx() != idx {
                idx = s.b.cycle_idx();
                changes.push((last_ack, idx, s.b.pacing_gain()));
                assert_eq!(s.b.cwnd_gain(), CWND_GAIN);
            }
        }
        let mut seen_probe = 0;
        for w in changes.windows(2) {
            let (len, gain) = (w[1].0 - w[0].0, w[0].2);
            assert_eq!(w[1].1, (w[0].1 + 1) % CYCLE_LEN, "phases in order");
            assert_eq!(w[0].2, PACING_GAIN[w[0].1]);
            match gain {
                256 => assert!(len > 10_100_000 && len <= 10_300_000, "gain 1 phase of {len} ns"),
                320 => {
                    assert!(len > 10_100_000, "1.25 phase of {len} ns");
                    seen_probe += 1;
                }
                192 => assert!(len <= 10_300_000, "0.75 phase of {len} ns"),
                g => panic!("gain {g}"),
            }
        }
        assert!(seen_probe >= 2);
    }

    /// `bbr_update_min_rtt`: PROBE_RTT starts on the first ACK more than
    /// 10 s after min_rtt was last set, caps cwnd at 4 packets
    /// (`bbr_cwnd_min_target`), and ends only after 200 ms at ≤ 4 packets
    /// in flight and a full round, restoring the saved cwnd
    /// (`bbr_check_probe_rtt_done`).
    #[test]
    fn probe_rtt_after_ten_seconds_held_200_ms_and_a_round() {
        let mut s = Sim::new(bbr(3), true);
        s.run(1_000 * MS);
        assert_eq!(s.b.mode(), Mode::ProbeBw);
        s.extra_rtt = 2 * MS; // no RTT sample will match min_rtt again
        let stamp = s.b.min_rtt_stamp;
        let mut last_ack = 0;
        while s.b.mode() != Mode::ProbeRtt {
            if let Some(&t) = s.step(&mut false).last() {
                last_ack = t;
            }
        }
        assert!(last_ack > stamp + 10_000 * MS);
        assert!(last_ack <= stamp + 10_000 * MS + TX, "the first ACK past 10 s");
        let prior = s.b.prior_cwnd;
        assert!(prior > 100);
        assert_eq!(s.b.cwnd_pkts(), 4);
        let mut done_at = None;
        let mut exit = 0;
        while s.b.mode() == Mode::ProbeRtt {
            assert!(s.b.cwnd_pkts() <= 4);
            let acks = s.step(&mut false);
            if done_at.is_none() {
                done_at = s.b.probe_rtt_done_stamp;
                if done_at.is_some() {
                    assert!(s.b.rate.inflight_pkts <= 4);
                }
            }
            if let Some(&t) = acks.last() {
                exit = t;
            }
        }
        let done_at = done_at.unwrap();
        assert!(exit > done_at, "held past the 200 ms stamp");
        assert!(exit - (done_at - PROBE_RTT_MODE_NS) >= 200 * MS);
        assert_eq!(s.b.mode(), Mode::ProbeBw);
        assert!(s.b.cwnd_pkts() >= prior, "cwnd restored: {} vs {prior}", s.b.cwnd_pkts());
        assert_eq!(s.b.min_rtt_stamp, exit, "next PROBE_RTT 10 s from now");
    }

    /// `bbr_update_min_rtt` takes a sample only if it is strictly below
    /// min_rtt (or the filter expired): a flow whose RTT samples keep
    /// matching min_rtt, as an unqueued flow's do, still enters PROBE_RTT
    /// 10 s after min_rtt was set. (A `<=` here let every matching sample
    /// restart the 10 s, so such a flow never probed.)
    #[test]
    fn samples_equal_to_min_rtt_do_not_postpone_probe_rtt() {
        let mut s = Sim::new(bbr(3), true);
        // Every ACK carries exactly the path's RTT: 10 ms + 100 µs.
        let mut rtts = std::collections::BTreeSet::new();
        let mut entered = None;
        while s.now < 12_000 * MS {
            for t in s.step(&mut false) {
                rtts.insert(s.b.min_rtt_us());
                if entered.is_none() && s.b.mode() == Mode::ProbeRtt {
                    entered = Some(t);
                }
            }
        }
        assert_eq!(s.b.min_rtt_us(), 10_100, "{rtts:?}");
        let entered = entered.expect("PROBE_RTT within 12 s");
        let first_ack = 10 * MS + TX;
        assert!(entered > first_ack + 10_000 * MS && entered <= first_ack + 10_000 * MS + 2 * TX,
                "PROBE_RTT at {entered}: 10 s after the first sample set min_rtt");
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: the first ACK of recovery sets
    /// cwnd to packets in flight + newly ACKed (packet conservation) and the
    /// rest of that round holds at least that; leaving recovery restores
    /// the cwnd saved on entry (`bbr_save_cwnd`).
    #[test]
    fn loss_recovery_conserves_packets_then_restores_cwnd() {
        let mut s = Sim::new(bbr(5), true);
        s.run(2_000 * MS);
        let cwnd = s.b.cwnd_pkts();
        let mut drop = true;
        while drop {
            s.step(&mut drop);
        }
        assert_eq!(s.b.ca_state(), CaState::Recovery);
        assert_eq!(s.b.prior_cwnd, cwnd, "saved on entry");
        // The next ACK runs packet conservation.
        let inflight_before = s.b.rate.inflight_pkts;
        while s.step(&mut false).is_empty() {}
        assert!(s.b.packet_conservation);
        assert!(s.b.cwnd_pkts() <= inflight_before + 1, "{} vs {}", s.b.cwnd_pkts(), inflight_before);
        while s.b.ca_state() != CaState::Open {
            s.step(&mut false);
        }
        assert!(!s.b.packet_conservation);
        assert!(s.b.cwnd_pkts() >= cwnd.min(s.b.inflight(s.b.bw_est(), CWND_GAIN)), "restored");
    }

    /// `bbr_lt_bw_sampling` / `bbr_lt_bw_interval_done`: two sampling
    /// intervals of at least 4 rounds, each losing over 20 % (30 of 100
    /// packets a round) at the same delivery rate (70 packets per 20 ms
    /// round = 3.5 packets/ms), mean a policer: lt_bw becomes the bandwidth
    /// and PROBE_BW paces at gain 1.
    #[test]
    fn policer_detected_after_two_consistent_lossy_intervals() {
        let mut b = bbr(1);
        let mut lt_use_at = None;
        for k in 0..8u64 {
            let t = k * 20 * MS;
            for _ in 0..100 {
                b.on_send(t, MSS);
            }
            for _ in 0..70 {
                b.on_packet_acked(t + 10 * MS, t, MSS);
            }
            for _ in 0..30 {
                b.on_packet_lost(t + 10 * MS, t, MSS);
            }
            ack(&mut b, t + 10 * MS, 70, 10 * MS);
            if b.lt_use_bw() && lt_use_at.is_none() {
                lt_use_at = Some(k + 1);
            }
        }
        // Interval 1: rounds 1 (loss starts it) to 4: 210 delivered over
        // 70 − 10 = 60 ms; interval 2: rounds 5–8: 280 over 80 ms.
        assert_eq!(lt_use_at, Some(8));
        let bw1 = 210 * BW_UNIT / 60_000;
        let bw2 = 280 * BW_UNIT / 80_000;
        assert_eq!(b.lt_bw, (bw1 + bw2) / 2);
        assert_eq!(b.mode(), Mode::ProbeBw);
        assert_eq!(b.pacing_gain(), BBR_UNIT);
        assert_eq!(b.bw_est(), b.lt_bw);
        // Pacing at lt_bw, 1 % below (bbr_pacing_margin_percent).
        let expect = (((b.lt_bw * MSS * 256) >> 8) * 990_000) >> 24;
        assert_eq!(b.pacing_rate, expect);
    }
}
