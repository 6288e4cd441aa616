//! Unit tests of braid's congestion controller (`cc/model.rs`).

use super::*;

fn ack(now: Instant, rate: f64, in_flight: u64) -> Ack {
    Ack {
        now,
        bytes: 1000,
        largest_sent: now - Duration::from_millis(100),
        in_flight,
        delivery_rate: Some(rate),
        rtt_sample: true,
    }
}

fn rtt(ms: u64) -> RttEstimator {
    let mut rtt = RttEstimator::default();
    rtt.update(Duration::from_millis(ms), Duration::ZERO);
    rtt
}

/// A controller fed 3 s of 2.5 MB/s samples on a 100 ms path (200 kB in flight), and the RTT.
fn settled() -> (ModelCc, RttEstimator) {
    let mut cc = ModelCc::new(1000);
    let r = rtt(100);
    for i in 0..300u64 {
        cc.on_ack(&ack(Instant::from_micros(i * 10_000), 2.5e6, 200_000), &r);
    }
    (cc, r)
}

/// 2.5 MB/s samples with a 100 ms RTT: Startup ends, the window settles near 1.25 BDP.
#[test]
fn learns_the_path_and_keeps_the_window_near_one_bdp() {
    let (cc, r) = settled();
    assert!(!matches!(cc.state, State::Startup | State::Drain), "state {:?}", cc.state);
    let w = cc.window();
    // BDP 250 kB: 1.25 BDP + 2 MSS in cruise, ≤ 2.25 BDP while probing.
    assert!((250_000..=570_000).contains(&w), "window {w}");
    let rate = cc.pacing_rate(&r).unwrap();
    assert!((2_200_000..=3_200_000).contains(&rate), "pacing {rate}");
}

/// Random loss never reaches `on_congestion` (the connection filters it); congestion does,
/// and bounds the window to 0.7 × what was in flight, at most once a round.
#[test]
fn congestion_bounds_in_flight_once_per_round() {
    let (mut cc, r) = settled();
    assert!(cc.startup_end.is_some(), "state {:?}", cc.state);
    let before = cc.window();
    let now = Instant::from_micros(3_000_000);
    // No queue (the RTT at its minimum): random loss, ignored.
    cc.in_flight = 400_000;
    cc.on_congestion(now, now, Congestion::Loss);
    assert_eq!(cc.window(), before, "a loss without a queue moved the window");
    // A queue: 130 ms against 100 ms.
    let mut queued = r;
    queued.update(Duration::from_millis(130), Duration::ZERO);
    cc.on_ack(&ack(now, 2.5e6, 400_000), &queued);
    cc.on_congestion(now, now, Congestion::Loss);
    let w = cc.window();
    // 0.7 × 400 kB, not under 1.25 BDP (≈ 312 kB).
    assert!((280_000..=320_000).contains(&w), "window {w} after congestion with 400 kB in flight");
    cc.in_flight = 1_000_000;
    cc.on_congestion(now, now, Congestion::Loss);
    assert_eq!(cc.window(), w, "a second loss in the same round does not cut again");
}

/// Nonsense inputs: zero and 60 s RTTs, absurd and NaN rates, no samples at all.
#[test]
fn nonsense_stays_within_bounds() {
    let mut cc = ModelCc::new(1200);
    let zero = RttEstimator::default();
    assert!(cc.window() >= 4 * 1200);
    assert!(cc.pacing_rate(&zero).unwrap() > 0);
    let mut huge = RttEstimator::default();
    huge.update(Duration::from_secs(600), Duration::ZERO);
    for (i, rate) in [f64::NAN, f64::INFINITY, 1e30, -5.0, 0.0, 1e-9].into_iter().enumerate() {
        cc.on_ack(&ack(Instant::from_micros((i as u64 + 1) * 1_000_000), rate, u64::MAX / 2), &huge);
        let w = cc.window();
        assert!((4 * 1200..=MAX_WINDOW).contains(&w), "window {w}");
        let p = cc.pacing_rate(&huge).unwrap();
        assert!(p > 0 && (p as f64) <= 3.0 * MAX_RATE, "pacing {p}");
    }
    let mut tiny = RttEstimator::default();
    tiny.update(Duration::ZERO, Duration::ZERO);
    cc.on_ack(&ack(Instant::from_micros((20) * 1_000_000), 1e6, 0), &tiny);
    assert!(cc.window() >= 4 * 1200);
}

/// CRUISE paces under the estimate by the queue the last round showed, at most 10 %, and
/// not at all for a queue of a millisecond or two; a competitor's queue is not drained.
#[test]
fn cruise_drains_the_queue_it_sees() {
    let (mut cc, r) = settled();
    cc.enter(State::Cruise, Instant::from_micros(3_000_000));
    cc.last_round_min_rtt = Some(Duration::from_millis(101));
    let full = cc.pacing_rate(&r).unwrap() as f64;
    assert!((2.45e6..=2.55e6).contains(&full), "pacing {full} with 1 ms of queue");
    cc.last_round_min_rtt = Some(Duration::from_millis(106));
    let drained = cc.pacing_rate(&r).unwrap() as f64;
    assert!(drained < 0.97 * full && drained > 0.93 * full, "pacing {drained} vs {full}");
    cc.last_round_min_rtt = Some(Duration::from_millis(200));
    assert!(cc.pacing_rate(&r).unwrap() as f64 >= 0.9 * full - 1.0, "more than 10 % off");
    cc.competing = true;
    assert_eq!(cc.pacing_rate(&r).unwrap() as f64, full, "a competitor's queue was drained");
}

/// Rounds of 100 ms from `start`, ACKs every 10 ms at a 200 ms RTT (a competitor's queue
/// of a full BDP), with `lost(round)` packets declared lost (and congestion reported) in
/// each round's middle.
fn queued_rounds(cc: &mut ModelCc, start: u64, rounds: u64, lost: impl Fn(u64) -> u64) -> u64 {
    let queued = rtt(200);
    let mut now = 0;
    for round in 0..rounds {
        for step in 0..10u64 {
            now = start + round * 100_000 + step * 10_000;
            let t = Instant::from_micros(now);
            cc.on_ack(&ack(t, 2.5e6, 500_000), &queued);
            if step == 5 && lost(round) > 0 {
                cc.on_lost(t, lost(round));
                cc.on_congestion(t, t, Congestion::Loss);
            }
        }
    }
    now
}

/// Beside a competitor whose queue loses packets round after round (kernel BBRv1, which
/// does not answer loss), a loss no longer cuts; beside one that loses now and then (CUBIC
/// backing off), it still does.
#[test]
fn a_loss_blind_competitor_is_not_yielded_to() {
    let (mut cc, _) = settled();
    cc.competing = true;
    // Two of twelve packets a round: loss rounds, not yet the heavy loss that still cuts.
    let now = queued_rounds(&mut cc, 3_000_000, 16, |_| 2);
    assert!(cc.loss_blind_competitor(), "losses in every round: {:#b}", cc.loss_rounds);
    // The first loss rounds cut, before the competitor showed what it is; later ones not.
    let bound = cc.inflight_hi;
    queued_rounds(&mut cc, now + 10_000, 16, |_| 2);
    assert_eq!(cc.inflight_hi, bound, "a loss-blind competitor's losses still cut");
    // Rounds without overflow (the competitor's ProbeRTT and its refill), then one loss a
    // round: the competitor is still the loss-blind one, and braid does not start cutting.
    let now = queued_rounds(&mut cc, now + 1_700_000, 16, |_| 0);
    assert!(cc.loss_blind_competitor(), "forgotten after quiet rounds: {:#b}", cc.loss_rounds);
    let now = queued_rounds(&mut cc, now + 10_000, 16, |_| 1);
    assert_eq!(cc.inflight_hi, bound, "single losses after the quiet rounds cut");
    // Heavy loss (a quarter of a round's packets) cuts all the same.
    queued_rounds(&mut cc, now + 10_000, 2, |_| 4);
    assert!(cc.inflight_hi < bound, "heavy loss did not cut: {:?} vs {bound:?}", cc.inflight_hi);

    let (mut cc, _) = settled();
    cc.competing = true;
    // One loss round in sixteen: a competitor that backs off.
    queued_rounds(&mut cc, 3_000_000, 16, |round| if round == 8 { 3 } else { 0 });
    assert!(!cc.loss_blind_competitor());
    assert!(cc.inflight_hi.is_some(), "a CUBIC-like competitor's overflow did not cut");
    // A single lost packet a round is what random loss does: not a loss round.
    let (mut single, _) = settled();
    single.competing = true;
    queued_rounds(&mut single, 3_000_000, 16, |_| 1);
    assert!(!single.loss_blind_competitor(), "one loss a round counted: {:#b}", single.loss_rounds);
}

/// One drain that empties the queue (a BBR competitor's ProbeRTT) does not end competition,
/// nor forget that the competitor is loss-blind; two in a row do. A drain that finds the queue
/// again starts the count over.
#[test]
fn competition_ends_after_two_drains_that_empty_the_queue() {
    let (mut cc, _) = settled();
    let min = cc.min_rtt().unwrap();
    // Competition begins as a drain fails, which starts the count of empty ones over.
    cc.competing = true;
    cc.blind_competitor = true;
    cc.emptied_drains = 0;
    let drain = |cc: &mut ModelCc, queue_ms: u64| {
        cc.down_min_rtt = Some(min + Duration::from_millis(queue_ms));
        cc.on_drained();
    };
    drain(&mut cc, 0);
    assert!(cc.competing && cc.loss_blind_competitor(), "one empty drain ended competition");
    drain(&mut cc, 50);
    drain(&mut cc, 0);
    assert!(cc.competing, "the count did not start over after a drain that found the queue");
    drain(&mut cc, 0);
    assert!(!cc.competing, "two empty drains in a row left competition on");
    assert!(!cc.blind_competitor, "a later competitor inherits the verdict on this one");
}

/// A cut beside a competitor's queue keeps most of braid's rate at the RTT that queue sets
/// (0.85 × bandwidth × that RTT), not the cruising window at the minimum RTT, which at a
/// doubled RTT halves the delivery rate and the estimate with it.
#[test]
fn a_cut_beside_a_competitor_keeps_the_rate_at_its_queue() {
    let (mut cc, _) = settled();
    let now = Instant::from_micros(3_000_000);
    cc.on_ack(&ack(now, 2.5e6, 400_000), &rtt(200));
    cc.last_round_min_rtt = Some(Duration::from_millis(200));
    cc.in_flight = 400_000;
    cc.competing = true;
    cc.on_congestion(now, now, Congestion::Loss);
    // 0.85 × 2.5 MB/s × 200 ms = 425 kB, above 0.85 × 400 kB and 1.25 BDP (312 kB).
    let hi = cc.inflight_hi.unwrap();
    assert!((420_000.0..=430_000.0).contains(&hi), "bound {hi}");
    // Without a competitor the same loss cuts to the cruising window.
    let (mut own, _) = settled();
    own.on_ack(&ack(now, 2.5e6, 400_000), &rtt(200));
    own.last_round_min_rtt = Some(Duration::from_millis(200));
    own.in_flight = 400_000;
    own.on_congestion(now, now, Congestion::Loss);
    let hi = own.inflight_hi.unwrap();
    assert!((300_000.0..=320_000.0).contains(&hi), "bound {hi}");
}

/// App-limited samples below the estimate do not pull it down.
#[test]
fn app_limited_samples_only_raise_the_estimate() {
    let mut cc = ModelCc::new(1000);
    let r = rtt(100);
    for i in 0..50u64 {
        cc.on_ack(&ack(Instant::from_micros(i * 10_000), 2.5e6, 100_000), &r);
    }
    for i in 50..300u64 {
        cc.on_app_limited();
        cc.on_ack(&ack(Instant::from_micros(i * 10_000), 0.2e6, 10), &r);
    }
    assert!(cc.bandwidth >= 2.4e6, "bandwidth fell to {}", cc.bandwidth);
}

/// Feeds `secs` of ACKs every 10 ms from `start_ms` at the rate `rate(i)` with the RTT at its
/// minimum, and returns the first time (ms) the controller was in Startup, if any.
fn run_at(
    cc: &mut ModelCc,
    r: &RttEstimator,
    start_ms: u64,
    secs: u64,
    rate: impl Fn(u64) -> f64,
) -> Option<u64> {
    let mut startup = None;
    for i in 0..secs * 100 {
        let now = start_ms + i * 10;
        cc.on_ack(&ack(Instant::from_micros(now * 1000), rate(i), 200_000), r);
        if cc.state == State::Startup && startup.is_none() {
            startup = Some(now);
        }
    }
    startup
}

/// A path of 100 ms at 2.5 MB/s as a probe sees it: ACKs every 10 ms of packets sent 100 ms
/// before, UP adding 6 kB in flight per 10 ms (1.25 × 2.5 MB/s) to the 200 kB of the rest of
/// the cycle, and the RTT of each packet sent in UP `up_queue_ms(probe)` above the minimum
/// (`probe` counts UPs from 1).
struct ProbedPath {
    /// Whether each step's packets were sent in UP, the probe they belonged to, and their
    /// place among its packets (from 0).
    sent: std::collections::VecDeque<(bool, u32, u32)>,
    probes: u32,
    up_steps: u64,
    /// The RTT estimator as the last ACK left it.
    rtt: RttEstimator,
}

impl ProbedPath {
    fn new() -> ProbedPath {
        ProbedPath { sent: std::collections::VecDeque::new(), probes: 0, up_steps: 0, rtt: rtt(100) }
    }

    /// One ACK at `now_ms` with the rate sample `rate`.
    fn step(&mut self, cc: &mut ModelCc, now_ms: u64, rate: f64, up_queue_ms: impl Fn(u32) -> u64) {
        self.step_with(cc, now_ms, rate, |probe, _| up_queue_ms(probe), |_, _, _| true);
    }

    /// As [`Self::step`], the queue of a probe's packet `up_queue_ms(probe, k)` (`k`: its place
    /// in the probe), and `sample(in_up, probe, k)` saying whether the ACK brings a new RTT
    /// sample; one that does not leaves the estimator's latest sample as it was.
    fn step_with(
        &mut self,
        cc: &mut ModelCc,
        now_ms: u64,
        rate: f64,
        up_queue_ms: impl Fn(u32, u32) -> u64,
        sample: impl Fn(bool, u32, u32) -> bool,
    ) {
        let (in_up, probe, k) =
            if self.sent.len() >= 10 { self.sent[self.sent.len() - 10] } else { (false, 0, 0) };
        let fresh = sample(in_up, probe, k);
        if fresh {
            self.rtt = rtt(100 + if in_up { up_queue_ms(probe, k) } else { 0 });
        }
        self.up_steps = if cc.state == State::Up { self.up_steps + 1 } else { 0 };
        let mut a = ack(Instant::from_micros(now_ms * 1000), rate, 200_000 + 6_000 * self.up_steps);
        a.rtt_sample = fresh;
        cc.on_ack(&a, &self.rtt);
        let up = cc.state == State::Up;
        let k = match self.sent.back() {
            Some(&(true, _, k)) if up => k + 1,
            _ => 0,
        };
        if up && !self.sent.back().is_some_and(|s| s.0) {
            self.probes += 1;
        }
        self.sent.push_back((up, self.probes, k));
    }
}

/// As [`run_at`], on a [`ProbedPath`] whose probes' packets see `up_queue_ms` of queue.
fn run_probed(
    cc: &mut ModelCc,
    start_ms: u64,
    secs: u64,
    rate: impl Fn(u64) -> f64,
    up_queue_ms: u64,
) -> Option<u64> {
    let mut path = ProbedPath::new();
    let mut startup = None;
    for i in 0..secs * 100 {
        let now = start_ms + i * 10;
        path.step(cc, now, rate(i), |_| up_queue_ms);
        if cc.state == State::Startup && startup.is_none() {
            startup = Some(now);
        }
    }
    startup
}

/// An estimate far below the path (Startup ended early, or the path got faster): the first
/// probe that finds 10 % more without a queue sends the controller back to Startup, which
/// regrows the window at once; a path at capacity, its samples within ±2 % and its probes'
/// packets queued behind what they added (1/8 BDP, 12.5 ms here), never does.
#[test]
fn a_lagging_estimate_goes_back_to_startup() {
    let (mut steady, _) = settled();
    let jitter = |i: u64| 2.5e6 * (1.0 + 0.02 * ((i % 7) as f64 / 3.0 - 1.0));
    assert_eq!(run_probed(&mut steady, 3_000, 20, jitter, 12), None, "a path at capacity restarted Startup");

    let (mut lagging, r) = settled();
    let before = lagging.window();
    // The path delivers 4 MB/s, 1.6 × the estimate, as the next probe shows.
    let at = run_at(&mut lagging, &r, 3_000, 3, |_| 4e6).expect("never went back to Startup");
    assert!(at <= 3_000 + 1_500, "back to Startup only at {at} ms");
    assert!(lagging.inflight_hi.is_none());
    assert!(lagging.window() > before, "window {} after Startup, {before} before", lagging.window());
}

/// An estimate below the path that the rate samples cannot show: the sender's achieved rate
/// trails its pacing rate (a host's timers fire late), so the samples stay within ±2 % of the
/// estimate through every probe, but UP's packets find no queue. Two such probes in a row send
/// the controller back to Startup. Before, ProbeBW kept the estimate for the whole run (on the
/// testbed, 4.7 of 20 Mbit/s for 30 s); a single probe without a queue is not enough (timer
/// noise can hide one).
#[test]
fn probes_that_find_no_queue_go_back_to_startup() {
    let (mut lagging, _) = settled();
    let flat = |i: u64| 2.5e6 * (1.0 + 0.02 * ((i % 7) as f64 / 3.0 - 1.0));
    let at = run_probed(&mut lagging, 3_000, 20, flat, 0).expect("never went back to Startup");
    assert!(at <= 3_000 + 4_000, "back to Startup only at {at} ms");
    // Every other probe without a queue: never two in a row, no restart.
    let (mut alternate, _) = settled();
    let mut path = ProbedPath::new();
    for i in 0..2_000u64 {
        let now = 3_000 + i * 10;
        path.step(&mut alternate, now, flat(i), |probe| if probe % 2 == 0 { 12 } else { 0 });
        assert_ne!(
            alternate.state,
            State::Startup,
            "single probes without a queue restarted Startup at {now} ms"
        );
    }
    assert!(path.probes >= 10, "{} probes in 20 s", path.probes);
}

/// A path whose smoothed RTT is 1.5 × another's or more carries no request (the scheduler puts
/// those on the path that delivers first), so its Startup window may reach 2.77 × BDP, its
/// pacing gain; a path with no faster companion stops at 1.5 × (one a little faster than
/// another, too).
#[test]
fn a_secondary_path_starts_up_to_its_pacing_gain_in_bdps() {
    let startup_window = |own_ms: u64, other_ms: Option<u64>| {
        let mut all = Aggregate::default();
        if let Some(other) = other_ms {
            all.push(0, Duration::from_millis(other));
        }
        all.push(0, Duration::from_millis(own_ms));
        all.set_own(usize::from(other_ms.is_some()));
        let mut cc = ModelCc::new(1000);
        cc.on_aggregate(&all);
        let r = rtt(own_ms);
        // A BDP of 50 kB. ACKs 1 ms apart: one round, no full-pipe test.
        let rate = 50_000.0 / (own_ms as f64 / 1000.0);
        for i in 0..200u64 {
            cc.on_ack(&ack(Instant::from_micros(1_000_000 + i * 1000), rate, 10_000), &r);
        }
        assert_eq!(cc.state, State::Startup);
        cc.window()
    };
    let secondary = startup_window(500, Some(100));
    assert!((138_500..=139_500).contains(&secondary), "secondary path's window {secondary}");
    for (own, other) in [(500, None), (500, Some(400)), (100, Some(500))] {
        let w = startup_window(own, other);
        assert!((75_000..=76_000).contains(&w), "{own} ms beside {other:?}: window {w}");
    }
}

/// A sibling path that stops carrying data sends a settled path back to Startup at its next
/// round's end, from the window in use; a sibling that was never active, or one that comes
/// back, does not.
#[test]
fn a_failed_sibling_sends_the_path_back_to_startup() {
    let view = |sibling_active: bool| {
        let mut all = Aggregate::default();
        all.push(0, Duration::from_millis(100));
        all.push(0, Duration::from_millis(80));
        all.set_own(0);
        if !sibling_active {
            all.set_inactive(1);
        }
        all
    };
    let after = |views: &[bool]| {
        let (mut cc, r) = settled();
        for &active in views {
            cc.on_aggregate(&view(active));
        }
        let settled_window = cc.window();
        for i in 0..30u64 {
            cc.on_ack(&ack(Instant::from_micros(3_000_000 + i * 10_000), 2.5e6, 200_000), &r);
        }
        (cc.state, settled_window)
    };
    let (state, _) = after(&[true, false]);
    assert_eq!(state, State::Startup, "the sibling failed");
    // Noticed in ProbeRTT, the restart waits for ProbeBW.
    let (mut cc, r) = settled();
    cc.enter(State::ProbeRtt, Instant::from_micros(2_990_000));
    cc.on_aggregate(&view(true));
    cc.on_aggregate(&view(false));
    let mut restarted = false;
    for i in 0..60u64 {
        // Half a BDP in flight or less: ProbeRTT ends after its 200 ms and a round.
        cc.on_ack(&ack(Instant::from_micros(3_000_000 + i * 10_000), 2.5e6, 100_000), &r);
        restarted |= cc.state == State::Startup;
    }
    assert!(restarted, "the failure seen in ProbeRTT was dropped (state {:?})", cc.state);
    for views in [&[false, false][..], &[true, true], &[false, true]] {
        let (state, _) = after(views);
        assert!(!matches!(state, State::Startup | State::Drain), "{views:?}: state {state:?}");
    }
}

/// UP probes an eighth of a BDP above what the pipe holds: a queue the last round still showed
/// (12 ms on a 100 ms, 250 kB path) is not a base to probe on, except beside a competitor,
/// whose queue it is.
#[test]
fn up_probes_from_the_pipe_not_from_a_standing_queue() {
    let (mut cc, _) = settled();
    let start = Instant::from_micros(3_000_000);
    for competing in [false, true] {
        cc.competing = competing;
        cc.enter(State::Refill, start);
        cc.state_round = cc.round - 1;
        cc.last_round_min_rtt = Some(Duration::from_millis(112));
        cc.in_flight = 280_000;
        cc.probe_bw(start);
        assert_eq!(cc.state, State::Up, "competing {competing}");
        // 290 kB: the probe's eighth of a BDP (31 kB) above the 255 kB the pipe holds, but
        // not above the 280 kB in flight as UP began.
        cc.in_flight = 290_000;
        cc.probe_bw(start + Duration::from_millis(1));
        let expected = if competing { State::Up } else { State::Down };
        assert_eq!(cc.state, expected, "competing {competing}: UP with 290 kB in flight");
    }
}

/// An ACK that brings no new RTT sample (it only fills holes below the largest acknowledged)
/// leaves the estimator's latest sample as it was; a probe's verdict counts samples, not ACKs.
/// Here each probe's first packet sees no queue, the ACKs of the next four bring no sample, and
/// the rest see the 12 ms a full path shows. Counted once per ACK, the first sample outvoted
/// the others and two probes in a row sent the controller back to Startup.
#[test]
fn a_probe_counts_rtt_samples_not_acks() {
    let (mut cc, _) = settled();
    let flat = |i: u64| 2.5e6 * (1.0 + 0.02 * ((i % 7) as f64 / 3.0 - 1.0));
    let mut path = ProbedPath::new();
    for i in 0..2_000u64 {
        let now = 3_000 + i * 10;
        let queue = |_, k| if k == 0 { 0 } else { 12 };
        path.step_with(&mut cc, now, flat(i), queue, |up, _, k| !up || !(1..=4).contains(&k));
        assert_ne!(cc.state, State::Startup, "Startup again at {now} ms");
    }
    assert!(path.probes >= 10, "{} probes in 20 s", path.probes);
}

/// Drives `cc` (settled) through one UP from REFILL at `at`: UP's packets' RTTs show `queue`
/// above the minimum, `app_limited` says whether the application left the window unused during
/// it; returns when UP has ended (DOWN), without the verdict.
fn one_up(cc: &mut ModelCc, at: Instant, queue: Duration, app_limited: bool) -> Instant {
    cc.enter(State::Refill, at);
    cc.state_round = cc.round - 1;
    cc.in_flight = 200_000;
    cc.probe_bw(at);
    assert_eq!(cc.state, State::Up);
    let min = cc.min_rtt().expect("settled");
    for k in 1..=6u64 {
        let now = at + Duration::from_millis(k);
        cc.in_flight = 200_000 + 6_000 * k;
        if app_limited && k == 2 {
            cc.on_app_limited();
        }
        cc.watch_probe(now - Duration::from_micros(500), min + queue);
        cc.probe_bw(now);
    }
    assert_eq!(cc.state, State::Down, "UP did not end");
    at + Duration::from_millis(7)
}

/// A probe whose verdict never came (no ACK of a packet sent after it brought an RTT sample
/// before the next probe began) is judged as the next one begins, not dropped: dropped, a probe
/// whose packets showed a queue left the count of roomy probes as it was, and the probes before
/// and after it counted as two in a row.
#[test]
fn a_probe_is_judged_before_the_next_replaces_it() {
    let (mut cc, _) = settled();
    cc.roomy_probes = 1;
    let end = one_up(&mut cc, Instant::from_micros(3_000_000), Duration::from_millis(12), false);
    one_up(&mut cc, end + Duration::from_millis(900), Duration::ZERO, false);
    assert_eq!(cc.roomy_probes, 0, "the queued probe was not counted");
}

/// A probe during which the application left the window unused could not add what would
/// queue: its packets showing no queue is no sign of room, and it is not judged.
#[test]
fn an_app_limited_probe_is_not_judged() {
    for app_limited in [false, true] {
        let (mut cc, _) = settled();
        let end = one_up(&mut cc, Instant::from_micros(3_000_000), Duration::ZERO, app_limited);
        // The first ACK of a packet sent after UP ended: the verdict.
        cc.watch_probe(end, cc.min_rtt().expect("settled"));
        assert_eq!(cc.roomy_probes, u32::from(!app_limited), "app-limited {app_limited}");
    }
}

/// A buffer too shallow to queue what UP adds (or a policer) drops it instead, and the probes'
/// packets that survive show no queue: two such probes send the controller back to Startup,
/// which finds no more. After each such Startup the rule waits twice as many cycles (4, 8, 16,
/// ...): over 60 s of probes that find no queue on a path whose rate does not change, Startup
/// ran again 5 times (at 4.0, 8.5, 16.2, 30.4 and 57.3 s) where it ran 29 times, every 2.1 s,
/// without the back-off. A path that then doubles its rate is still found (the estimate's own
/// growth, which the back-off does not touch).
#[test]
fn probes_on_a_shallow_buffer_back_off() {
    let (mut cc, _) = settled();
    let flat = |i: u64| 2.5e6 * (1.0 + 0.02 * ((i % 7) as f64 / 3.0 - 1.0));
    let mut path = ProbedPath::new();
    let (mut startups, mut was_startup) = (Vec::new(), false);
    for i in 0..6_000u64 {
        let now = 3_000 + i * 10;
        path.step(&mut cc, now, flat(i), |_| 0);
        let startup = cc.state == State::Startup;
        if startup && !was_startup {
            startups.push(now);
        }
        was_startup = startup;
    }
    assert!((2..=5).contains(&startups.len()), "Startup again at {startups:?} ms");
    let gaps: Vec<u64> = startups.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] > g[0]), "back-off does not grow: {startups:?} ms");
    let before = cc.bandwidth;
    let found = (0..1_000u64).find(|i| {
        path.step(&mut cc, 63_000 + i * 10, 2.0 * flat(*i), |_| 0);
        cc.bandwidth >= 1.8 * before
    });
    assert!(found.is_some_and(|i| i <= 500), "the doubled rate found after {found:?} ACKs");
}

/// A Startup is charged to the probes' rule (and backed off if it finds nothing) only when the
/// rule alone caused it: with two probes that found no queue counted, a lost sibling path's
/// restart is not the rule's, and the same count with no sibling lost is.
#[test]
fn only_a_restart_the_probes_caused_is_charged_to_them() {
    let restart = |sibling_lost: bool| {
        let (mut cc, r) = settled();
        let mut all = Aggregate::default();
        all.push(0, Duration::from_millis(100));
        all.push(0, Duration::from_millis(80));
        all.set_own(0);
        cc.on_aggregate(&all);
        if sibling_lost {
            all.set_inactive(1);
            cc.on_aggregate(&all);
        }
        cc.roomy_probes = phases::ROOMY_PROBES;
        for i in 0..30u64 {
            cc.on_ack(&ack(Instant::from_micros(3_000_000 + i * 10_000), 2.5e6, 200_000), &r);
            if cc.state == State::Startup {
                return cc.probe_restart;
            }
        }
        panic!("no Startup again (sibling lost {sibling_lost}; state {:?})", cc.state)
    };
    assert_eq!(restart(true), None, "a lost sibling's restart was charged to the probes");
    assert!(restart(false).is_some(), "the probes' own restart was not charged to them");
}
