//! The rate controller both PCC variants share (PCC-Uspace `PccSender`:
//! STARTING → PROBING → DECISION_MADE), with the variant's rule for
//! moving plugged in as a [`Mover`].
//!
//! * Starting: one scored MI at a time; while its utility keeps rising the
//!   rate doubles; on the first MI that scores no higher, fall back to the
//!   best rate and probe (`OnUtilityAvailable`, case STARTING).
//! * Probing: pairs of MIs at `r(1+ε)` and `r(1−ε)` (how many, and ε, the
//!   mover's), the order in each pair random (`MaybeSetSendingRate`); MIs
//!   after the trials run at `r` until all trial results are in, the first
//!   of them the reference the mover may judge a move by. Only pairs that
//!   all agree decide (`CanMakeDecision`); the mover says where to move, or
//!   where to probe next.
//! * Moving: one scored MI at a time; the mover says where to go next or
//!   that the move is over and where to probe.
//! * The floor (`min_rate_bps`, PCC-Uspace `kMinSendingRate`): a move that
//!   would go below it probes at the floor instead (`EnterDecisionMade`),
//!   and a trial at the floor that cannot decide starts up again from the
//!   floor (`OnUtilityAvailable`, case PROBING: `rounds_ > 1` at
//!   `kMinSendingRate` → STARTING). Without the restart, a flow pushed
//!   down by a few noisy trials (at a few packets per MI one loss swings
//!   the utility) climbs back by one small step per trial, and a newcomer
//!   to a full queue can sit at the floor for the rest of its life.
//!
//! Only the scored ("useful") MIs drive the state machine; the others keep
//! the link busy at the current rate while results are on their way, so a
//! phase never changes with one of its scored MIs still outstanding.

use super::CommonParams;
use std::collections::BTreeMap;

/// xorshift64* (Marsaglia/Vigna): deterministic per seed, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero forever.
        Rng(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

/// A randomised controlled trial (PCC, NSDI 2015): pairs of MIs at
/// `base·(1±ε)`, the order within each pair random so that a change in the
/// network during one MI is not mistaken for the effect of the rate.
#[derive(Debug, Clone)]
pub struct Rct {
    pub base: f64,
    pub eps: f64,
    /// +1 / −1 per trial, in sending order.
    plan: Vec<f64>,
    ids: Vec<Option<u64>>,
    utils: Vec<Option<f64>>,
    /// A trial MI came back void: the trial cannot conclude.
    spoiled: bool,
}

/// The verdict of a finished RCT.
#[derive(Debug, Clone, PartialEq)]
pub struct RctOutcome {
    pub base: f64,
    pub eps: f64,
    /// (utility at base(1+ε), utility at base(1−ε)) for each pair.
    pub pairs: Vec<(f64, f64)>,
}

impl RctOutcome {
    /// +1 if every pair prefers the higher rate, −1 if every pair prefers
    /// the lower one, None if they disagree or tie.
    pub fn agreed_direction(&self) -> Option<f64> {
        if self.pairs.iter().all(|(up, down)| up > down) {
            Some(1.0)
        } else if self.pairs.iter().all(|(up, down)| up < down) {
            Some(-1.0)
        } else {
            None
        }
    }
}

impl Rct {
    pub fn new(base: f64, eps: f64, pairs: usize, rng: &mut Rng) -> Self {
        let mut plan = Vec::with_capacity(2 * pairs);
        for _ in 0..pairs {
            if rng.coin() {
                plan.extend([1.0, -1.0]);
            } else {
                plan.extend([-1.0, 1.0]);
            }
        }
        let n = plan.len();
        Rct { base, eps, plan, ids: vec![None; n], utils: vec![None; n], spoiled: false }
    }

    /// Assigns the next planned trial to MI `id`; None once all are sent.
    pub fn next_trial(&mut self, id: u64) -> Option<f64> {
        let i = self.ids.iter().position(Option::is_none)?;
        self.ids[i] = Some(id);
        Some(self.base * (1.0 + self.plan[i] * self.eps))
    }

    /// Records a trial's utility (None = void). False if `id` is not one of
    /// this trial's MIs.
    pub fn record(&mut self, id: u64, utility: Option<f64>) -> bool {
        match self.ids.iter().position(|x| *x == Some(id)) {
            Some(i) => {
                match utility {
                    Some(u) => self.utils[i] = Some(u),
                    None => self.spoiled = true,
                }
                true
            }
            None => false,
        }
    }

    pub fn spoiled(&self) -> bool {
        self.spoiled
    }

    /// The outcome once every trial has a utility.
    pub fn outcome(&self) -> Option<RctOutcome> {
        if self.spoiled {
            return None;
        }
        let mut pairs = Vec::with_capacity(self.plan.len() / 2);
        for (signs, utils) in self.plan.chunks(2).zip(self.utils.chunks(2)) {
            let (a, b) = match utils {
                [Some(a), Some(b)] => (*a, *b),
                _ => return None,
            };
            pairs.push(if signs[0] > 0.0 { (a, b) } else { (b, a) });
        }
        Some(RctOutcome { base: self.base, eps: self.eps, pairs })
    }

    /// Sending order of the trial signs (for tests and logs).
    pub fn plan(&self) -> &[f64] {
        &self.plan
    }
}

/// What a moving MI's result means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Move {
    /// Keep moving: the next scored MI runs at this rate.
    Continue(f64),
    /// The move is over: probe around this rate.
    Probe(f64),
}

/// A variant's rule for moving the rate after a decision.
pub trait Mover: Send + std::fmt::Debug {
    /// ε of the next trial around `base` (bits/s).
    fn eps(&self, base: f64) -> f64;
    /// Pairs of MIs in the next trial; `configured` is `rct_pairs`.
    fn pairs(&self, configured: usize) -> usize {
        configured
    }
    /// The trial's pairs disagreed.
    fn on_inconclusive(&mut self);
    /// The trial agreed (`o.agreed_direction()` is Some): where the first
    /// moving MI runs, or where to run the next trial.
    fn on_decision(&mut self, o: &RctOutcome, dir: f64) -> Move;
    /// The first MI sent at the trial's base after its trials scored `u`.
    /// It is scored after the decision, before the first moving MI.
    fn on_reference(&mut self, _rate: f64, _u: f64) {}
    /// A moving MI sent at `rate` scored `u`.
    fn on_move(&mut self, rate: f64, u: f64) -> Move;
    fn export(&self, out: &mut BTreeMap<&'static str, f64>);
}

/// A rule chosen at run time (a variant's `moving` parameter).
impl Mover for Box<dyn Mover> {
    fn eps(&self, base: f64) -> f64 {
        (**self).eps(base)
    }
    fn pairs(&self, configured: usize) -> usize {
        (**self).pairs(configured)
    }
    fn on_inconclusive(&mut self) {
        (**self).on_inconclusive()
    }
    fn on_decision(&mut self, o: &RctOutcome, dir: f64) -> Move {
        (**self).on_decision(o, dir)
    }
    fn on_reference(&mut self, rate: f64, u: f64) {
        (**self).on_reference(rate, u)
    }
    fn on_move(&mut self, rate: f64, u: f64) -> Move {
        (**self).on_move(rate, u)
    }
    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        (**self).export(out)
    }
}

#[derive(Debug, Clone)]
enum Phase {
    /// `best` = (rate, utility) of the last MI that raised utility.
    Starting { best: Option<(f64, f64)> },
    Probing(Rct),
    Moving,
}

/// The shared PCC rate controller.
#[derive(Debug, Clone)]
pub struct Controller<M> {
    pub mover: M,
    c: CommonParams,
    rng: Rng,
    rate: f64,
    phase: Phase,
    /// The scored MI of Starting/Moving still awaiting its result.
    pending: Option<u64>,
    /// The first MI sent at a trial's base after its trials
    /// ([`Mover::on_reference`]).
    reference: Option<u64>,
    last_utility: f64,
    decisions: u64,
    /// Start-ups from the floor.
    restarts: u64,
}

impl<M: Mover> Controller<M> {
    pub fn new(mover: M, c: CommonParams) -> Self {
        Controller {
            mover,
            rng: Rng::new(c.seed),
            rate: c.init_rate_bps,
            phase: Phase::Starting { best: None },
            pending: None,
            reference: None,
            last_utility: 0.0,
            decisions: 0,
            restarts: 0,
            c,
        }
    }

    /// The rate the controller aims at, bits/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }
    pub fn is_starting(&self) -> bool {
        matches!(self.phase, Phase::Starting { .. })
    }
    /// The phase as `export` numbers it: 0 starting, 1 probing, 2 moving.
    pub fn phase_code(&self) -> u8 {
        match self.phase {
            Phase::Starting { .. } => 0,
            Phase::Probing(_) => 1,
            Phase::Moving => 2,
        }
    }
    pub fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Starting { .. } => "starting",
            Phase::Probing(_) => "probing",
            Phase::Moving => "moving",
        }
    }
    /// Was MI `id` a start-up MI still being scored?
    pub fn scores_startup(&self, id: u64) -> bool {
        self.is_starting() && self.pending == Some(id)
    }

    fn probe(&mut self, around: f64) {
        self.rate = self.c.clamp(around);
        self.pending = None;
        self.reference = None;
        let eps = self.mover.eps(self.rate);
        let pairs = self.mover.pairs(self.c.pairs).max(1);
        self.phase = Phase::Probing(Rct::new(self.rate, eps, pairs, &mut self.rng));
    }

    /// Moves on to `r`; a move that would pass below the floor probes at
    /// the floor.
    fn move_to(&mut self, r: f64) {
        if r < self.c.min_rate_bps {
            self.probe(self.c.min_rate_bps);
        } else {
            self.rate = self.c.clamp(r);
            self.phase = Phase::Moving;
        }
    }

    /// Start-up again, from the floor.
    fn restart_at_floor(&mut self) {
        self.rate = self.c.min_rate_bps;
        self.pending = None;
        self.phase = Phase::Starting { best: None };
        self.restarts += 1;
    }

    /// MI `id` starts now: its rate, bits/s.
    pub fn next_rate(&mut self, id: u64) -> f64 {
        match &mut self.phase {
            Phase::Probing(rct) => match rct.next_trial(id) {
                Some(r) => self.c.clamp(r),
                None => {
                    if self.reference.is_none() {
                        self.reference = Some(id);
                    }
                    self.rate
                }
            },
            Phase::Starting { .. } | Phase::Moving => {
                if self.pending.is_none() {
                    self.pending = Some(id);
                }
                self.rate
            }
        }
    }

    /// The result of MI `id`, sent at `rate` (None = void MI).
    pub fn on_utility(&mut self, id: u64, rate: f64, u: Option<f64>) {
        if let Some(u) = u {
            self.last_utility = u;
        }
        if self.reference == Some(id) {
            self.reference = None;
            if let (Phase::Moving, Some(u)) = (&self.phase, u) {
                self.mover.on_reference(rate, u);
            }
            return;
        }
        if let Phase::Probing(rct) = &mut self.phase {
            if !rct.record(id, u) {
                return;
            }
            if rct.spoiled() {
                let base = rct.base;
                self.probe(base);
                return;
            }
            let Some(o) = rct.outcome() else { return };
            match o.agreed_direction() {
                Some(dir) => {
                    self.decisions += 1;
                    match self.mover.on_decision(&o, dir) {
                        Move::Continue(r) => self.move_to(r),
                        Move::Probe(r) => self.probe(r),
                    }
                }
                None => {
                    self.mover.on_inconclusive();
                    if o.base <= self.c.min_rate_bps {
                        self.restart_at_floor();
                    } else {
                        self.probe(o.base);
                    }
                }
            }
            return;
        }
        if self.pending != Some(id) {
            return;
        }
        self.pending = None;
        // A void MI tells nothing: the next MI is scored instead.
        let Some(u) = u else { return };
        match &mut self.phase {
            Phase::Starting { best } => match *best {
                Some((r, bu)) if u <= bu => self.probe(r),
                _ => {
                    *best = Some((rate, u));
                    self.rate = self.c.clamp(2.0 * rate);
                }
            },
            Phase::Moving => match self.mover.on_move(rate, u) {
                Move::Continue(r) => self.move_to(r),
                Move::Probe(r) => self.probe(r),
            },
            Phase::Probing(_) => {}
        }
    }

    pub fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        out.insert("rate_mbps", self.rate / 1e6);
        out.insert("utility", self.last_utility);
        out.insert("decisions", self.decisions as f64);
        out.insert("floor_restarts", self.restarts as f64);
        out.insert("phase", f64::from(self.phase_code()));
        self.mover.export(out);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_mixes() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut c = Rng::new(7);
        let heads = (0..1000).filter(|_| c.coin()).count();
        assert!((400..600).contains(&heads), "{heads}");
    }

    #[test]
    fn rct_pairs_are_randomised_and_scored_by_sign() {
        let mut rng = Rng::new(1);
        let plans: Vec<Vec<f64>> = (0..16).map(|_| Rct::new(100.0, 0.01, 2, &mut rng).plan().to_vec()).collect();
        assert!(plans.iter().any(|p| p[0] > 0.0) && plans.iter().any(|p| p[0] < 0.0), "both orders occur");
        for p in &plans {
            assert_eq!(p[0] + p[1], 0.0);
            assert_eq!(p[2] + p[3], 0.0);
        }
        let mut r = Rct::new(100.0, 0.01, 2, &mut rng);
        let rates: Vec<f64> = (0..4).map(|id| r.next_trial(id).unwrap()).collect();
        assert_eq!(r.next_trial(4), None);
        for (id, rate) in rates.iter().enumerate() {
            // Utility equal to the rate: the higher rate always wins.
            assert!(r.record(id as u64, Some(*rate)));
        }
        assert!(!r.record(99, Some(0.0)));
        let o = r.outcome().unwrap();
        assert_eq!(o.pairs, vec![(101.0, 99.0), (101.0, 99.0)]);
        assert_eq!(o.agreed_direction(), Some(1.0));
        let split = RctOutcome { base: 1.0, eps: 0.01, pairs: vec![(2.0, 1.0), (1.0, 2.0)] };
        assert_eq!(split.agreed_direction(), None);
    }

    /// A mover that records what it was told and moves by fixed factors.
    #[derive(Debug, Default)]
    pub(crate) struct Fixed {
        pub inconclusive: u32,
    }
    impl Mover for Fixed {
        fn eps(&self, _: f64) -> f64 {
            0.05
        }
        fn on_inconclusive(&mut self) {
            self.inconclusive += 1;
        }
        fn on_decision(&mut self, o: &RctOutcome, dir: f64) -> Move {
            Move::Continue(o.base * (1.0 + 0.1 * dir))
        }
        fn on_move(&mut self, rate: f64, u: f64) -> Move {
            if u > 0.0 {
                Move::Continue(rate * 1.1)
            } else {
                Move::Probe(rate / 1.1)
            }
        }
        fn export(&self, _: &mut BTreeMap<&'static str, f64>) {}
    }

    /// Moves up by a fifth on every decision, probes with one pair, and
    /// keeps the references it is handed.
    #[derive(Debug, Default)]
    struct OnePair {
        refs: Vec<(f64, f64)>,
    }
    impl Mover for OnePair {
        fn eps(&self, _: f64) -> f64 {
            0.05
        }
        fn pairs(&self, _: usize) -> usize {
            1
        }
        fn on_inconclusive(&mut self) {}
        fn on_decision(&mut self, o: &RctOutcome, _: f64) -> Move {
            Move::Continue(o.base * 1.2)
        }
        fn on_reference(&mut self, rate: f64, u: f64) {
            self.refs.push((rate, u));
        }
        fn on_move(&mut self, rate: f64, _: f64) -> Move {
            Move::Probe(rate)
        }
        fn export(&self, _: &mut BTreeMap<&'static str, f64>) {}
    }

    /// The NSDI-2018 branch probes with one pair in a trend
    /// (`number_of_probes_ = 2`) and judges a move against the MI sent at
    /// the base after the trials (`move_stat.reference_monitor`).
    #[test]
    fn a_trial_has_the_movers_pairs_and_the_mi_after_it_is_the_reference() {
        let mut c = Controller::new(OnePair::default(), common());
        let id = start(&mut c);
        let trials = [c.next_rate(id), c.next_rate(id + 1)];
        let mut sorted = trials;
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted, [19e6, 21e6]);
        // The trials are sent: the next MIs hold the base, the first of
        // them the reference.
        assert_eq!(c.next_rate(id + 2), 20e6);
        assert_eq!(c.next_rate(id + 3), 20e6);
        for (i, r) in trials.iter().enumerate() {
            c.on_utility(id + i as u64, *r, Some(*r));
        }
        assert_eq!(c.phase_name(), "moving");
        assert_eq!(c.rate(), 24e6);
        c.on_utility(id + 2, 20e6, Some(7.0));
        c.on_utility(id + 3, 20e6, Some(8.0));
        assert_eq!(c.mover.refs, vec![(20e6, 7.0)]);
        // A probe forgets a reference it has not seen yet.
        let next = id + 4;
        assert_eq!(c.next_rate(next), 24e6);
        c.on_utility(next, 24e6, Some(1.0));
        assert_eq!(c.phase_name(), "probing");
        c.next_rate(next + 1);
        c.next_rate(next + 2);
        let reference = next + 3;
        assert_eq!(c.next_rate(reference), 24e6);
        c.on_utility(next + 1, 0.0, None); // void trial: probe again
        c.on_utility(reference, 24e6, Some(9.0));
        assert_eq!(c.mover.refs.len(), 1);
    }

    pub(crate) fn common() -> CommonParams {
        CommonParams {
            timing: super::super::monitor::MiTiming {
                rtt_mult: 1.0,
                min_pkts: 10.0,
                max_pkts: 3000.0,
                min_rtt_samples: 4,
                init_rtt_ns: 10e6,
                mss: 1000.0,
            },
            init_rate_bps: 10e6,
            min_rate_bps: 1e5,
            max_rate_bps: 1e12,
            pairs: 2,
            seed: 1,
        }
    }

    /// Start-up up to its exit; returns the next MI id (controller probing
    /// around 20 Mbit/s).
    pub(crate) fn start<M: Mover>(c: &mut Controller<M>) -> u64 {
        // One scored MI at a time; the others hold the rate.
        assert_eq!(c.next_rate(0), 10e6);
        assert_eq!(c.next_rate(1), 10e6);
        c.on_utility(1, 10e6, Some(99.0)); // not the scored MI: ignored
        c.on_utility(0, 10e6, Some(10.0));
        assert_eq!(c.next_rate(2), 20e6);
        c.on_utility(2, 20e6, Some(20.0));
        assert_eq!(c.next_rate(3), 40e6);
        assert!(c.scores_startup(3));
        c.on_utility(3, 40e6, Some(20.0)); // no higher: back to 20 Mbit/s
        assert_eq!(c.phase_name(), "probing");
        assert_eq!(c.rate(), 20e6);
        4
    }

    #[test]
    fn startup_doubles_one_scored_mi_at_a_time_and_falls_back() {
        let mut c = Controller::new(Fixed::default(), common());
        start(&mut c);
    }

    #[test]
    fn void_mis_are_rescored_not_counted() {
        let mut c = Controller::new(Fixed::default(), common());
        c.next_rate(0);
        c.on_utility(0, 10e6, None);
        assert_eq!(c.next_rate(1), 10e6, "void start MI: same rate, scored again");
        c.on_utility(1, 10e6, Some(1.0));
        assert_eq!(c.next_rate(2), 20e6);
    }

    #[test]
    fn probing_holds_the_base_while_trials_are_out_and_decides_on_agreement() {
        let mut c = Controller::new(Fixed::default(), common());
        let id = start(&mut c);
        let rates: Vec<f64> = (0..4).map(|i| c.next_rate(id + i)).collect();
        assert_eq!(c.next_rate(id + 4), 20e6, "hold MI at the base");
        // Split verdict: first pair prefers up, second down.
        for (i, r) in rates.iter().enumerate() {
            let up = *r > 20e6;
            c.on_utility(id + i as u64, *r, Some(if up == (i < 2) { 1.0 } else { 0.0 }));
        }
        assert_eq!(c.mover.inconclusive, 1);
        assert_eq!((c.phase_name(), c.rate()), ("probing", 20e6));
        let id = id + 5;
        let rates: Vec<f64> = (0..4).map(|i| c.next_rate(id + i)).collect();
        for (i, r) in rates.iter().enumerate() {
            c.on_utility(id + i as u64, *r, Some(*r));
        }
        assert_eq!(c.phase_name(), "moving");
        assert!((c.rate() - 22e6).abs() < 1e-6);
        let id = id + 4;
        assert!((c.next_rate(id) - 22e6).abs() < 1e-6);
        c.on_utility(id, 22e6, Some(1.0));
        assert!((c.rate() - 24.2e6).abs() < 1e-6);
        c.next_rate(id + 1);
        c.on_utility(id + 1, 24.2e6, Some(-1.0));
        assert_eq!(c.phase_name(), "probing");
        assert!((c.rate() - 22e6).abs() < 1e-6);
    }

    /// Sends the four trial MIs, scoring the `i`-th, sent at `rate`, with
    /// `score(i, rate)`; returns their rates.
    pub(crate) fn trial_by<M: Mover>(c: &mut Controller<M>, first_id: u64, score: impl Fn(usize, f64) -> f64) -> Vec<f64> {
        let rates: Vec<f64> = (0..4).map(|i| c.next_rate(first_id + i)).collect();
        for (i, r) in rates.iter().enumerate() {
            c.on_utility(first_id + i as u64, *r, Some(score(i, *r)));
        }
        rates
    }

    /// One trial whose `i`-th MI at `rate` scores 1 if `pick(i, rate)`,
    /// else 0; returns the next MI id.
    fn one_trial<M: Mover>(c: &mut Controller<M>, id: u64, pick: impl Fn(usize, f64) -> bool) -> u64 {
        trial_by(c, id, |i, r| if pick(i, r) { 1.0 } else { 0.0 });
        id + 4
    }

    /// PCC-Uspace `PccVivaceSender`: a decision below `kMinSendingRate`
    /// probes at it (`EnterDecisionMade`); a trial there that cannot decide
    /// sends the sender back to STARTING at it (`rounds_ > 1`), which then
    /// doubles as usual.
    #[test]
    fn the_floor_probes_then_starts_up_again() {
        let mut p = common();
        p.min_rate_bps = 19e6;
        let mut c = Controller::new(Fixed::default(), p);
        let id = start(&mut c);
        // Every pair prefers the lower rate: Fixed moves to 20·0.9 = 18,
        // below the 19 Mbit/s floor.
        let id = one_trial(&mut c, id, |_, r| r < 20e6);
        assert_eq!((c.phase_name(), c.rate()), ("probing", 19e6), "a move past the floor probes at it");
        // A decision down at the floor keeps probing there.
        let id = one_trial(&mut c, id, |_, r| r < 19.5e6); // the lower trial is clamped to 19
        assert_eq!((c.phase_name(), c.rate()), ("probing", 19e6));
        // A split trial at the floor: start-up from the floor.
        let id = one_trial(&mut c, id, |i, r| (r > 19e6) == (i < 2));
        assert_eq!((c.phase_name(), c.rate()), ("starting", 19e6));
        let mut m = BTreeMap::new();
        c.export(&mut m);
        assert_eq!(m["floor_restarts"], 1.0);
        assert_eq!(c.next_rate(id), 19e6);
        c.on_utility(id, 19e6, Some(-5.0));
        assert_eq!(c.next_rate(id + 1), 38e6, "start-up doubles from the floor");
        c.on_utility(id + 1, 38e6, Some(-6.0));
        assert_eq!((c.phase_name(), c.rate()), ("probing", 19e6), "and leaves it as usual");
    }

    #[test]
    fn a_void_trial_restarts_the_trial() {
        let mut c = Controller::new(Fixed::default(), common());
        let id = start(&mut c);
        let r = c.next_rate(id);
        c.on_utility(id, r, None);
        assert_eq!(c.phase_name(), "probing");
        assert_eq!(c.mover.inconclusive, 0);
        // A new trial: its first MI is a trial MI again.
        assert_ne!(c.next_rate(id + 1), 20e6);
    }
}
