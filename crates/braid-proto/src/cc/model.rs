//! braid's own congestion controller (`--cc braid`, the braid mode's default): model-based,
//! with a small standing queue, and blind to the random loss the code repairs.
//!
//! The model is BBR's (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
//! 2016), in the shape of BBRv3 (draft-ietf-ccwg-bbr, §4): the bottleneck bandwidth is the
//! windowed maximum of delivery-rate samples, the propagation RTT the windowed minimum of RTT
//! samples, the pacer sends at gain × bandwidth and in flight is capped at gain × BDP. The
//! states are BBRv3's — Startup (cwnd gain 1.5, not 2; pacing gain 2.4, not 2.77), Drain (0.35), ProbeBW's DOWN
//! (0.9) / CRUISE / REFILL / UP (1.25) cycle and ProbeRTT (half a BDP) — and so is the loss
//! bound: a congestion loss sets `inflight_hi` to β = 0.7 of what was in flight, and UP regrows it.
//!
//! Where braid departs (DEVIATIONS.md, "braid's congestion controller"):
//! - **Coding-aware loss.** Only losses the connection judges congestion reach
//!   [`CongestionController::on_congestion`] (the braid mode calls a loss congestion when the
//!   RTT shows a queue, `Mode::loss_is_congestion`); random loss, which the code repairs within
//!   its budget, moves neither the rate nor the window. Delivery-rate samples arrive scaled by
//!   1 / (1 − p) with the path's random-loss estimate (`Path::on_ack`), so a 5 %-loss link is
//!   measured at its rate, not at 95 % of it. This is PCC Vivace's point (Dong et al., NSDI 2018):
//!   loss that does not grow with the sending rate is not a reason to send slower. The scaling
//!   cannot tell a shallow buffer's drops from random loss, so the estimate is bounded by the
//!   best unscaled rate a round delivered over 1 − the loss of packets sent no faster than that
//!   (DOWN's, and Startup's before the pipe fills: `carried.rs`); Startup also ends when the
//!   unscaled rate stops growing or a round loses more than that loss explains (BBRv3's
//!   high-loss exit above the random loss), and a probe that lost more than it explains found
//!   no room.
//! - **A small standing queue.** Outside UP the window is 1.25 × BDP (BBRv3 keeps 2 × BDP), so an
//!   over-estimated bandwidth — a max filter over ACK-compressed samples — cannot build more than
//!   a quarter of an RTT of queue; this is Copa's aim (Arun and Balakrishnan, NSDI 2018) of a
//!   standing queue that stays small. Like Copa's competitive mode, the cap relaxes to 2 × BDP
//!   while the RTT has stayed well above its minimum for several rounds with the cap binding: a
//!   queue this flow is not making belongs to a competitor that fills buffers (CUBIC, BBRv1), and
//!   yielding to it would starve braid. Beside such a queue a loss cut keeps 0.85 of braid's rate
//!   at the RTT the queue sets (a window at the minimum RTT halves the rate when the queue
//!   doubles the RTT), and a competitor whose queue loses packets in most rounds (BBRv1, blind
//!   to loss) is not yielded to at all unless the loss passes BBRv1's own policer threshold;
//!   once judged so, it stays so until competition ends. Competition ends only when two drains
//!   in a row, a cycle apart, empty the queue, not in the few rounds a BBR competitor's
//!   ProbeRTT empties it.
//! - **Draining what it sees.** In CRUISE the pacer runs below the bandwidth estimate by the
//!   queue the last round's smallest RTT shows (as a fraction of the min RTT, at most 10 %):
//!   a max-filtered estimate a little above the path's rate otherwise kept a standing queue of
//!   ~10 ms until the cruising test fired (Copa's target of a queue that drains, as a
//!   proportional rule). UP ends once it has put an eighth of a BDP more in flight than it
//!   began with, less the queue still standing (`phases.rs`), not at 1.25 × BDP: its rate
//!   samples still show new bandwidth, and where there is none the bump in delay is half as high.
//! - **Startup ends on delay too**: when a round's smallest RTT rises by HyStart++'s threshold
//!   (RFC 9406 §4.2: min RTT / 8, clamped to 4–16 ms) — before the queue overflows, so Startup
//!   does not drop a burst into the blocks in flight.
//! - **A gentler end to Startup.** Every signal that the pipe is full comes a round trip late,
//!   so the round that crosses the pipe is sent whole at Startup's rate; what it puts in flight
//!   beyond the BDP is the queue every other stream waits behind. Startup's window is therefore
//!   capped at 1.5 × the estimated BDP (BBRv3: 2), and at 1.25 × once a few RTT samples in a
//!   row show any queue of 4 ms or more (HyStart++'s conservative slow start, RFC 9406 §4.3,
//!   triggered per ACK instead of per round). The window grows as BBR's does before the pipe is
//!   full (by what is acknowledged, never shrinking), and the first flight is paced over 60 % of
//!   the round trip instead of 40 %, so a request on another stream finds room in it. On a
//!   20 Mbit/s, 100 ms path with a 1-BDP queue, a request beside a bulk transfer from its first
//!   moment waited up to 143 ms one way before, 68–80 ms after (stream_fairness).
//! - **Back to Startup when the estimate lags**: a probe that finds 10 % more bandwidth with no
//!   queue behind it means Startup ended far below the path (a delay spike passes its delay
//!   test) or the path got faster; Startup finds the rate in a few rounds where ProbeBW's probes
//!   took a dozen cycles (`estimate_lags`).
//!
//! - **Coupled where paths share a bottleneck** (RFC 6356's goal 2; `coupling.rs`): paths whose
//!   queues match round after round probe with their share of the group's bandwidth, pace at
//!   estimates scaled to the group's own max-filtered delivery rate, and only the one carrying
//!   the most competes with buffer-filling flows.
//!
//! Inputs are clamped so nonsense cannot break it: RTT samples are held to 1 µs – 60 s, rate
//! samples above 100 Gbit/s or not finite are ignored, and the window stays between four
//! datagrams and 1 GiB.

use std::time::Duration;

use super::{initial_window, Ack, Aggregate, Congestion, CongestionController, ModelView, RttEstimator};
use crate::Instant;

mod carried;
mod competition;
mod coupling;
mod phases;
use coupling::Coupling;

/// Startup's pacing gain: 2.4, between slow start's doubling (2) and BBRv3's 4 ln 2 = 2.77
/// (draft-ietf-ccwg-bbr §4.6.1). The delay test ends Startup a round after the queue starts, and
/// at 2.77 that round overflowed a 1-BDP queue (84 drops, probe p99 295 ms on a 20 Mbit/s,
/// 100 ms path); at 2 the second path of a short two-path transfer started too slowly
/// (DEVIATIONS.md).
const STARTUP_PACING_GAIN: f64 = 2.4;
/// The first flight's pacing, in initial windows per RTT: the window goes out over the first
/// 60 % of the round trip and leaves room for another stream's request until the first ACKs.
const FIRST_FLIGHT_PACING_GAIN: f64 = 1.6;
/// Startup's window cap, in estimated BDPs (BBRv3's is 2; see the module comment): the round
/// that crosses the pipe puts up to this much in flight before any signal says it is full.
const STARTUP_CWND_GAIN: f64 = 1.5;
/// Startup on a secondary path, one whose smoothed RTT is at least [`SECONDARY_RTT_RATIO`] ×
/// another path's: BBRv3's pacing gain, 4 ln 2 = 2.77 (draft-ietf-ccwg-bbr §4.6.1), and a window
/// cap of as many estimated BDPs (BBRv3's is 2). The gentler values protect requests from
/// Startup's queue, and a request goes on the path that delivers it first (the arrival-time
/// scheduler), not on a slow one; there the slower ramp only delayed the bulk data. At a cap of
/// 2 × an estimate a round behind, FMTCP Table II's 300 ms second path grew its window 1.6 × a
/// round; the window still grows only by what is acknowledged, so at most 2 × (DEVIATIONS.md).
const SECONDARY_STARTUP_GAIN: f64 = 2.77;
const SECONDARY_RTT_RATIO: f64 = 1.5;
/// The cap once Startup's RTT samples show a queue ([`QUEUE_SIGN`], [`QUEUE_SIGN_SAMPLES`]).
const STARTUP_QUEUE_CWND_GAIN: f64 = 1.25;
/// An RTT this far above the minimum is a queue (HyStart++'s lowest threshold, RFC 9406 §4.2).
const QUEUE_SIGN: Duration = Duration::from_millis(4);
/// Samples in a row above [`QUEUE_SIGN`] before Startup believes it.
const QUEUE_SIGN_SAMPLES: u32 = 4;

/// BBRv3's Drain gain: drains Startup's queue in about one round.
const DRAIN_PACING_GAIN: f64 = 0.35;
const DOWN_PACING_GAIN: f64 = 0.9;
const UP_PACING_GAIN: f64 = 1.25;
const UP_CWND_GAIN: f64 = 2.25;
/// How much more UP puts in flight than it started with, in BDPs.
const UP_PROBE: f64 = 0.125;
/// The most CRUISE slows below the bandwidth estimate to drain a standing queue.
const CRUISE_MAX_DRAIN: f64 = 0.1;
/// Window outside UP: a quarter BDP of headroom (see the module comment).
const CRUISE_CWND_GAIN: f64 = 1.25;
/// Window while competing with a buffer-filling flow (BBR's usual ProbeBW gain).
const COMPETING_CWND_GAIN: f64 = 2.0;
/// BBRv3's multiplicative decrease of `inflight_hi` on congestion loss.
const BETA: f64 = 0.7;
/// The decrease while a competitor's queue stands (see `on_congestion`).
const COMPETING_BETA: f64 = 0.85;
/// Startup's full-pipe test: the bandwidth estimate still grows if a round raised it by this
/// factor (BBR's 25 %, draft-ietf-ccwg-bbr §4.3.1.2).
const FULL_PIPE_GROWTH: f64 = 1.25;
/// A ProbeBW cycle whose probe raised the bandwidth estimate by this factor, with no queue
/// behind it, found an estimate far below the path: Startup runs again (see `estimate_lags`).
const LAGGING_GROWTH: f64 = 1.1;
/// Rounds at gain 1 between bandwidth probes (plus 0–2, varied by cycle).
const CRUISE_ROUNDS: u64 = 6;
/// Rounds of the bandwidth max filter.
const BW_WINDOW_ROUNDS: u64 = 10;
/// A min-RTT sample older than this is refreshed by ProbeRTT (BBRv1's 10 s; BBRv3 probes every
/// 5 s but keeps 10 s of history, which the single filter here approximates).
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Sanity bounds on samples.
const MAX_RATE: f64 = 12.5e9;
const MIN_RTT_SAMPLE: Duration = Duration::from_micros(1);
const MAX_RTT_SAMPLE: Duration = Duration::from_secs(60);
const MAX_WINDOW: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Startup,
    Drain,
    Down,
    Cruise,
    Refill,
    Up,
    ProbeRtt,
}

#[derive(Debug, Clone)]
pub struct ModelCc {
    mss: u64,
    initial_window: u64,
    state: State,
    /// (round, bytes/s) delivery-rate samples of the last rounds, for the max filter.
    samples: Vec<(u64, f64)>,
    bandwidth: f64,
    min_rtt: Option<(Duration, Instant)>,
    /// Round-trip counting: a round ends when a packet sent after it began is acknowledged.
    round: u64,
    round_start: Instant,
    /// The smallest RTT sample of the current round and of the previous one.
    round_min_rtt: Option<Duration>,
    last_round_min_rtt: Option<Duration>,
    /// RTT samples in a row above the delay threshold, and above [`QUEUE_SIGN`].
    delayed_samples: u32,
    queued_samples: u32,
    /// Startup's window: grows by what each ACK delivers while below Startup's cap (or during
    /// the first initial window) and never shrinks while Startup lasts.
    startup_window: u64,
    /// The smallest RTT sample of the current DOWN phase.
    down_min_rtt: Option<Duration>,
    /// Startup's full-pipe test: bandwidth at the last 25 % growth and rounds since.
    full_bandwidth: f64,
    full_bandwidth_rounds: u32,
    /// When the current state (or ProbeBW phase) began, and in which round.
    state_start: Instant,
    state_round: u64,
    /// ProbeBW cycles so far, to vary CRUISE's length deterministically.
    cycles: u64,
    /// When Drain ended (packets sent before it carry Startup's overshoot).
    startup_end: Option<Instant>,
    /// The newest RTT sample (clamped).
    latest_rtt: Duration,
    /// Upper bound on in flight learned from congestion loss (BBRv3's `inflight_hi`).
    inflight_hi: Option<f64>,
    /// The round of the last reaction to congestion (at most one per round).
    last_congestion_round: Option<u64>,
    /// One bit per recent round, newest lowest: the round lost packets while a queue stood.
    loss_rounds: u32,
    /// Packets lost this round while the RTT showed a queue, and bytes delivered this round.
    round_losses: u64,
    round_delivered: u64,
    /// Rounds in a row with the RTT well above its minimum while cruising, and drains in a row
    /// that did not empty the queue.
    high_rtt_rounds: u32,
    failed_drains: u32,
    /// Drains in a row that emptied the queue.
    emptied_drains: u32,
    competing: bool,
    /// The competitor was seen losing packets round after round (see `on_round_losses`).
    blind_competitor: bool,
    /// Bytes acknowledged so far, and the count up to which samples are app-limited.
    delivered: u64,
    app_limited_until: u64,
    sample_app_limited: bool,
    in_flight: u64,
    /// What was in flight when UP began.
    up_base: f64,
    /// The bandwidth estimate when the last UP began (after Startup, until the first UP:
    /// [`FULL_PIPE_GROWTH`] × the estimate at Startup's exit).
    cycle_bandwidth: f64,
    /// The last UP's packets and the queue their RTTs show, and probes in a row that found
    /// none (`phases.rs`, `watch_probe`).
    probe: Option<phases::UpProbe>,
    roomy_probes: u32,
    /// The bandwidth estimate as the probes' rule last sent the controller back to Startup,
    /// until that Startup ends; the rule's back-off in cycles, and the cycle before which it
    /// is not applied (`phases.rs`, `on_startup_end`).
    probe_restart: Option<f64>,
    probe_backoff: u64,
    probe_quiet_until: u64,
    /// ProbeRTT: when the window first reached its floor.
    probe_rtt_done: Option<Instant>,
    /// The connection's other paths, and which of them share this one's bottleneck.
    coupling: Coupling,
    /// What the last completed round delivered, bytes per second.
    last_round_rate: f64,
    /// Another path's smoothed RTT is at most 1 / [`SECONDARY_RTT_RATIO`] of this one's.
    secondary: bool,
    /// Paths beside this one that can carry data, at the last aggregate view.
    siblings: usize,
    /// A sibling stopped carrying data (failed, or removed) since the last round's end: what
    /// it carried may now come here, beyond what this path's estimate, learned while it shared
    /// the load, allows.
    sibling_lost: bool,
    /// The random-loss rate at rates the path carried, and the bound it sets on the estimate
    /// (`carried.rs`).
    carried: carried::CarriedLoss,
    /// An ACK of the current round carried an app-limited rate sample.
    round_app_limited: bool,
}

impl ModelCc {
    pub fn new(mss: u64) -> ModelCc {
        let mss = mss.max(1);
        ModelCc {
            mss,
            initial_window: initial_window(mss),
            state: State::Startup,
            samples: Vec::new(),
            bandwidth: 0.0,
            min_rtt: None,
            round: 0,
            round_start: Instant::ZERO,
            round_min_rtt: None,
            last_round_min_rtt: None,
            delayed_samples: 0,
            queued_samples: 0,
            startup_window: 0,
            down_min_rtt: None,
            full_bandwidth: 0.0,
            full_bandwidth_rounds: 0,
            state_start: Instant::ZERO,
            state_round: 0,
            cycles: 0,
            latest_rtt: Duration::ZERO,
            startup_end: None,
            inflight_hi: None,
            last_congestion_round: None,
            loss_rounds: 0,
            round_losses: 0,
            round_delivered: 0,
            high_rtt_rounds: 0,
            failed_drains: 0,
            emptied_drains: 0,
            competing: false,
            blind_competitor: false,
            delivered: 0,
            app_limited_until: 0,
            sample_app_limited: false,
            in_flight: 0,
            probe_rtt_done: None,
            up_base: 0.0,
            cycle_bandwidth: 0.0,
            probe: None,
            roomy_probes: 0,
            probe_restart: None,
            probe_backoff: 0,
            probe_quiet_until: 0,
            coupling: Coupling::default(),
            last_round_rate: 0.0,
            secondary: false,
            siblings: 0,
            sibling_lost: false,
            carried: carried::CarriedLoss::default(),
            round_app_limited: false,
        }
    }

    fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(|(rtt, _)| rtt)
    }

    /// Bandwidth × min RTT, in bytes.
    fn bdp(&self) -> Option<f64> {
        let rtt = self.min_rtt()?;
        (self.bandwidth > 0.0).then_some(self.paced_bandwidth() * rtt.as_secs_f64())
    }

    /// The bandwidth estimate the pacer and the window use: in a group of paths through one
    /// bottleneck, scaled so the group's estimates add up to what the group delivers
    /// (`coupling.rs`).
    fn paced_bandwidth(&self) -> f64 {
        self.bandwidth * self.coupling.estimate_scale(self.bandwidth)
    }

    fn pacing_gain(&self) -> f64 {
        match self.state {
            State::Startup if self.secondary => SECONDARY_STARTUP_GAIN,
            State::Startup => STARTUP_PACING_GAIN,
            State::Drain => DRAIN_PACING_GAIN,
            State::Down => self.down_gain(),
            State::Up => 1.0 + (UP_PACING_GAIN - 1.0) * self.share(),
            State::Cruise if !self.competes() => 1.0 - self.standing_queue().min(CRUISE_MAX_DRAIN),
            State::Cruise | State::Refill | State::ProbeRtt => 1.0,
        }
    }

    /// The queue the last round's smallest RTT shows, as a fraction of the min RTT: what this
    /// flow keeps standing at the bottleneck when its bandwidth estimate reads a little high.
    /// Two datagrams' serialization at the estimated rate, and 1 ms of timer noise, do not
    /// count: on a 10 Mbit/s, 20 ms path they alone read as a 10 % queue.
    fn standing_queue(&self) -> f64 {
        let (Some(min), Some(round)) = (self.min_rtt(), self.last_round_min_rtt) else { return 0.0 };
        let serialization = if self.bandwidth > 0.0 { 2.0 * self.mss as f64 / self.bandwidth } else { 0.0 };
        let queue = round.saturating_sub(min).as_secs_f64() - serialization.min(0.01) - 1e-3;
        (queue / min.as_secs_f64().max(1e-6)).max(0.0)
    }

    /// Startup's window after an ACK of `acked` bytes, as BBR sets it (draft-ietf-ccwg-bbr
    /// §4.6.4.5, BBRSetCwnd before the pipe is full): it grows by what is acknowledged while
    /// below Startup's cap or while less than the initial window has been delivered, and never
    /// shrinks. Recomputed from the bandwidth estimate instead, the window fell back to the
    /// initial window for the whole second round: the first round's rate samples span the
    /// handshake's idle and read a fraction of the path.
    fn grow_startup_window(&mut self, acked: u64) {
        if self.state != State::Startup {
            return;
        }
        let base = self.startup_window.max(self.initial_window);
        let cap = self.bdp().map_or(f64::INFINITY, |bdp| self.startup_gain() * bdp);
        let grow = (base as f64) < cap || self.delivered < self.initial_window;
        self.startup_window = if grow { base.saturating_add(acked) } else { base };
    }

    fn startup_gain(&self) -> f64 {
        if self.queue_sign() {
            STARTUP_QUEUE_CWND_GAIN
        } else if self.secondary {
            SECONDARY_STARTUP_GAIN
        } else {
            STARTUP_CWND_GAIN
        }
    }

    /// Startup's RTT samples show a queue of its own ([`QUEUE_SIGN`]).
    fn queue_sign(&self) -> bool {
        self.queued_samples >= QUEUE_SIGN_SAMPLES
    }

    fn cwnd_gain(&self) -> f64 {
        match self.state {
            State::Startup | State::Drain => STARTUP_CWND_GAIN,
            State::Up => UP_CWND_GAIN,
            _ if self.competes() => COMPETING_CWND_GAIN,
            _ => CRUISE_CWND_GAIN,
        }
    }

    fn enter(&mut self, state: State, now: Instant) {
        self.down_min_rtt = None;
        self.state = state;
        self.state_start = now;
        self.state_round = self.round;
    }

    /// The round's RTT threshold: HyStart++'s (RFC 9406 §4.2), min RTT / 8 in 4–16 ms.
    fn delay_threshold(min: Duration) -> Duration {
        (min / 8).clamp(Duration::from_millis(4), Duration::from_millis(16))
    }

    fn on_rtt_sample(&mut self, now: Instant, sample: Duration) {
        let sample = sample.clamp(MIN_RTT_SAMPLE, MAX_RTT_SAMPLE);
        self.latest_rtt = sample;
        if self.state == State::Down {
            self.down_min_rtt = Some(self.down_min_rtt.map_or(sample, |m| m.min(sample)));
        }
        match self.min_rtt {
            Some((min, at)) if sample > min && now - at < MIN_RTT_WINDOW => {}
            _ => self.min_rtt = Some((sample, now)),
        }
        self.round_min_rtt = Some(self.round_min_rtt.map_or(sample, |m| m.min(sample)));
        // Startup's delay test, on every ACK: HyStart++'s threshold (RFC 9406 §4.2) exceeded by
        // 8 samples in a row. A round's minimum (HyStart++'s own test) rises only a round after
        // the queue does, and that round at Startup's rate overflowed a 1-BDP queue.
        let min = self.min_rtt().unwrap_or(sample);
        if sample > min + Self::delay_threshold(min) {
            self.delayed_samples += 1;
        } else {
            self.delayed_samples = 0;
        }
        if sample >= min + QUEUE_SIGN {
            self.queued_samples = self.queued_samples.saturating_add(1);
        } else {
            self.queued_samples = 0;
        }
        if self.state == State::Startup && self.delayed_samples >= 8 {
            self.enter(State::Drain, now);
        }
    }

    fn on_rate_sample(&mut self, rate: f64) {
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE) {
            return;
        }
        // A sample taken while the application left the window unused says little about the
        // path: it may only raise the estimate (BBR's app-limited rule).
        if self.sample_app_limited && rate < self.bandwidth {
            return;
        }
        self.samples.push((self.round, rate));
        let oldest = self.round.saturating_sub(BW_WINDOW_ROUNDS);
        self.samples.retain(|&(r, _)| r > oldest);
        self.refresh_bandwidth();
    }

    /// The estimate: the max filter over the rate samples, bounded by what the path delivered
    /// over 1 − its loss at carried rates (`carried.rs`): the samples' 1 / (1 − p) scaling
    /// counts a shallow buffer's overflow as random loss, and without the bound the estimate
    /// rose with the sending rate.
    fn refresh_bandwidth(&mut self) {
        let filtered = self.samples.iter().map(|&(_, b)| b).fold(0.0, f64::max);
        // Not in the first Startup: its rounds lag the ACKs' samples by half a round, and nothing
        // was yet sent at a rate the path carried.
        let bound =
            self.carried.bound().filter(|_| self.state != State::Startup || self.startup_end.is_some());
        self.bandwidth = bound.map_or(filtered, |bound| filtered.min(bound));
    }

    /// DOWN's pacing gain: BBRv3's 0.9, and while the bound applies no faster than the best
    /// unscaled rate a round delivered, so that DOWN's packets are sent at a rate the path
    /// carried and their loss is its random loss (`carried.rs`).
    fn down_gain(&self) -> f64 {
        let raw = self.carried.raw_max();
        if raw > 0.0 && self.bandwidth > 0.0 && self.carried.bound().is_some() {
            DOWN_PACING_GAIN.min(raw / self.paced_bandwidth().max(1.0))
        } else {
            DOWN_PACING_GAIN
        }
    }

    /// Packets sent this long after a span of carried rates began are counted in it: a loss is
    /// declared at the ACK of a packet sent up to three packets (RFC 9002's packet threshold) or
    /// an eighth of an RTT (its time threshold) after it.
    fn carried_margin(&self) -> Duration {
        let min = self.min_rtt().unwrap_or(Duration::from_millis(100));
        let raw = self.carried.raw_max().max(1.0);
        min / 8 + Duration::from_secs_f64((3 * self.mss) as f64 / raw).min(min)
    }

    /// Once per round: the full-pipe and delay tests of Startup, and the competing-flow test.
    fn on_round_end(&mut self, now: Instant) {
        let Some(min) = self.min_rtt() else { return };
        let high = self.last_round_min_rtt.is_some_and(|r| r > min + Self::delay_threshold(min));
        // A sibling's failure waits out ProbeRTT and Drain; Startup already probes.
        self.sibling_lost &= self.state != State::Startup;
        let lags = self.estimate_lags();
        if matches!(self.state, State::Down | State::Cruise | State::Refill | State::Up)
            && (lags || self.sibling_lost)
        {
            let by_probes = lags && !self.sibling_lost && !self.estimate_grew();
            self.sibling_lost = false;
            self.restart_startup(now, by_probes);
            return;
        }
        match self.state {
            State::Startup if self.bandwidth > 0.0 => self.on_startup_round(high, now),
            State::Cruise | State::Refill => self.on_cruise_round(high, now),
            _ => {}
        }
        if self.state != State::Startup {
            self.carried.reset_full_pipe();
        }
    }

    /// Startup's tests at a round's end: its loss, then the full-pipe tests (on the scaled
    /// estimate and on the unscaled rate) and the delay test (`high`).
    fn on_startup_round(&mut self, high: bool, now: Instant) {
        // BBRv3's high-loss exit (draft-ietf-ccwg-bbr §4.3.1.3), above the loss of the rounds
        // before the pipe filled (`carried.rs`). Taken in app-limited rounds too: an overflow
        // stalls the stream behind its own losses, the forwarder then leaves the window unused
        // in every round, and the tests below never ran (testbed, 20 Mbit/s with a 4-packet
        // queue: Startup held 5 s at 92 Mbit/s, 70 % of its packets dropped). The estimate,
        // scaled by that overflow as if it were random loss, comes down to what the path
        // carried over 1 − the loss before it.
        if let Some(bound) = self.carried.startup_overflow(self.round) {
            for sample in &mut self.samples {
                sample.1 = sample.1.min(bound);
            }
            self.refresh_bandwidth();
            self.enter(State::Drain, now);
            return;
        }
        // A round the application left unfilled says nothing about the pipe being full.
        if self.sample_app_limited {
            return;
        }
        if self.bandwidth >= FULL_PIPE_GROWTH * self.full_bandwidth {
            self.full_bandwidth = self.bandwidth;
            self.full_bandwidth_rounds = 0;
        } else {
            self.full_bandwidth_rounds += 1;
        }
        // The same test on the unscaled rate (`carried.rs`): a shallow buffer's drops raise the
        // scaled estimate with the sending rate while what arrives stays put.
        let raw_rounds = self.carried.startup_round(self.last_round_rate, FULL_PIPE_GROWTH);
        if self.full_bandwidth_rounds >= 3 || raw_rounds >= 3 || high {
            self.enter(State::Drain, now);
        }
    }

    /// What UP adds to what was in flight as it began: [`UP_PROBE`] × BDP, at least four
    /// datagrams.
    fn up_probe(&self, bdp: f64) -> f64 {
        (UP_PROBE * bdp * self.share()).max(4.0 * self.mss as f64)
    }

    /// This path's share of the bandwidth of the connection's paths through its bottleneck, by
    /// which its probes are scaled (1 where it shares it with none; `coupling.rs`).
    fn share(&self) -> f64 {
        self.coupling.share(self.bandwidth)
    }

    /// The queue the last round's smallest RTT shows.
    fn round_queue(&self) -> Option<Duration> {
        Some(self.last_round_min_rtt?.saturating_sub(self.min_rtt()?))
    }

    /// The latest RTT sample shows a queue (HyStart++'s threshold above the minimum).
    fn queue_now(&self) -> bool {
        self.min_rtt().is_some_and(|min| self.latest_rtt > min + Self::delay_threshold(min))
    }
}

impl CongestionController for ModelCc {
    fn name(&self) -> &'static str {
        "braid"
    }

    fn window(&self) -> u64 {
        let floor = 4 * self.mss;
        // Startup grows the window by what is acknowledged, as slow start does, while it is
        // under Startup's cwnd gain × the estimated BDP (BBR's cwnd during Startup,
        // draft-ietf-ccwg-bbr §4.6.4; `grow_startup_window`): uncapped, the window doubled past
        // the pipe each round while the rate samples lagged, and the overshoot became a loss
        // burst and a head-of-line wait a round later.
        let startup = self.initial_window.saturating_add(self.delivered);
        let Some(bdp) = self.bdp() else { return startup.clamp(floor, MAX_WINDOW) };
        let mut window = match self.state {
            // A queue of Startup's own: back to the gentler cap at once.
            State::Startup if self.queue_sign() => {
                let grown = self.startup_window.max(self.initial_window) as f64;
                grown.min((self.startup_gain() * bdp).max(self.initial_window as f64))
            }
            State::Startup => self.startup_window.max(self.initial_window) as f64,
            State::ProbeRtt => bdp / 2.0,
            _ => self.cwnd_gain() * bdp + 2.0 * self.mss as f64,
        };
        if let Some(hi) = self.inflight_hi {
            window = window.min(hi);
        }
        (window as u64).clamp(floor, MAX_WINDOW)
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let rate = self.pacing_gain() * self.paced_bandwidth();
        let rtt = self.min_rtt().unwrap_or_else(|| rtt.smoothed());
        let rtt = rtt.clamp(Duration::from_millis(1), MAX_RTT_SAMPLE).as_secs_f64();
        // Never slower than the initial window per RTT: a path that only ever carried a few
        // small packets (ACKs, an echo) has a tiny bandwidth estimate, and pacing a 16 KiB
        // symbol at it took seconds.
        let floor = match self.state {
            // The first flight after the handshake: the initial window spread over most of the
            // round trip. At Startup's gain it went out in the first 40 % of the round and the
            // window stayed full until the first ACKs: a request written on another stream then
            // waited most of a round trip behind the bulk stream's initial window. Not on a
            // secondary path: a request goes on the faster path there, and a secondary path's
            // round 1 is its first data round after the round of PINGs that measured it, which
            // this floor paced at 1.6 initial windows per (long) RTT.
            State::Startup if self.round <= 1 && !self.secondary => {
                FIRST_FLIGHT_PACING_GAIN * self.initial_window as f64 / rtt
            }
            // Startup: the initial window over the RTT at Startup's gain (BBR's initial pacing
            // rate; early rate samples span the handshake and understate the path). Not the
            // growing window: at 2.77 × window / RTT the last round sent at 5 × the link.
            State::Startup => STARTUP_PACING_GAIN * self.initial_window as f64 / rtt,
            _ => self.initial_window as f64 / rtt,
        };
        Some((rate.max(floor) as u64).max(self.mss))
    }

    fn set_initial_window(&mut self, bytes: u64) {
        self.initial_window = bytes;
    }

    fn coupled(&self) -> bool {
        true
    }

    fn on_aggregate(&mut self, all: &Aggregate) {
        self.coupling.on_aggregate(all);
        let own = all.iter().nth(all.own()).map(|(_, rtt)| rtt.as_secs_f64());
        let fastest = all
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != all.own())
            .map(|(_, (_, rtt))| rtt.as_secs_f64())
            .fold(f64::INFINITY, f64::min);
        self.secondary = own.is_some_and(|own| own >= SECONDARY_RTT_RATIO * fastest);
        // A sibling gone: Startup again from the window in use, as when the estimate lags
        // (`restart_startup`). ProbeBW's UP adds a quarter once a cycle of 6-8 rounds, which on
        // a 500 ms satellite path left to carry a failed cellular path's load took ~10 s to
        // climb from the 0.8 Mbit/s it had while sharing to its 1.4.
        let siblings = (0..all.iter().count()).filter(|&i| i != all.own() && all.is_active(i)).count();
        self.sibling_lost |= siblings < self.siblings;
        self.siblings = siblings;
    }

    fn model_view(&self) -> Option<ModelView> {
        Some(ModelView {
            bandwidth: self.bandwidth,
            queue: self.round_queue(),
            round: self.round,
            round_rate: self.last_round_rate,
        })
    }

    fn shared_with(&self) -> u8 {
        self.coupling.shared_mask()
    }

    fn on_sent(&mut self, now: Instant, _bytes: u64, in_flight: u64) {
        self.in_flight = in_flight;
        let pacing = self.pacing_gain() * self.paced_bandwidth();
        let up = self.state == State::Up;
        self.carried.on_sent(now, pacing, up || self.state == State::Startup, up);
    }

    fn on_app_limited(&mut self) {
        self.app_limited_until = self.delivered + self.in_flight.max(1);
        self.probe_app_limited();
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        let now = ack.now;
        self.in_flight = ack.in_flight;
        // The bytes this ACK covers were in flight when the application last left the window
        // unused: its rate sample is app-limited.
        self.sample_app_limited = self.delivered < self.app_limited_until;
        self.round_app_limited |= self.sample_app_limited;
        self.delivered += ack.bytes;
        let margin = self.carried_margin();
        self.carried.on_ack(ack.largest_sent, ack.bytes as f64 / self.mss as f64, margin);
        self.round_delivered += ack.bytes;
        if rtt.has_sample() {
            self.on_rtt_sample(now, rtt.latest());
        }
        if ack.rtt_sample {
            self.watch_probe(ack.largest_sent, rtt.latest());
        }
        self.grow_startup_window(ack.bytes);
        if ack.largest_sent >= self.round_start {
            self.round += 1;
            let span = now.saturating_duration_since(self.round_start).as_secs_f64();
            self.last_round_rate = if span > 0.0 { self.round_delivered as f64 / span } else { 0.0 };
            self.round_start = now;
            self.last_round_min_rtt = self.round_min_rtt.take();
            self.carried.on_round(self.round, self.last_round_rate, self.round_app_limited);
            self.round_app_limited = false;
            self.refresh_bandwidth();
            self.coupling.on_round_end(self.round_queue(), self.round, self.last_round_rate);
            self.on_round_losses();
            self.on_round_end(now);
        }
        if let Some(rate) = ack.delivery_rate {
            self.on_rate_sample(rate);
        }
        self.probe_bw(now);
        self.probe_rtt(now);
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, _signal: Congestion) {
        // Coding-aware: a loss with no queue behind it is random loss, which the code repairs
        // (the mode's own test may still call it congestion where the RTT's range is small).
        let queue = self.queue_now();
        // Startup overshoots by design and Drain takes its queue away: losses of packets sent
        // before Drain ended would teach a bound from a bandwidth estimate a round behind.
        let startup = self.startup_end.is_none_or(|end| sent <= end);
        if self.last_congestion_round == Some(self.round)
            || !queue
            || (startup && self.state != State::Startup)
        {
            return;
        }
        // Beside a buffer-filling flow every loss comes with a queue: cutting by β on each one
        // starved braid beside kernel BBR (0.08 of its share), ignoring them all starved CUBIC
        // (0.05–0.13). A competitor that loses packets round after round and keeps its queue
        // does not answer loss (BBRv1): yielding to it only hands it the link, so its losses no
        // longer cut (the bound already set stays until UP regrows it; heavy loss still cuts,
        // `on_round_losses`). Any other competitor's queue gets a gentler cut than braid's own.
        if self.loss_blind_competitor() {
            return;
        }
        let beta = if self.competes() { COMPETING_BETA } else { BETA };
        self.last_congestion_round = Some(self.round);
        if self.state == State::Startup {
            self.enter(State::Drain, now);
            return;
        }
        // β × what was in flight, never below the cruising window: the pacer already sends at
        // the measured bandwidth, and a bound under it would shrink the samples that set it
        // (lost packets count in flight until declared lost).
        self.cut_inflight_hi(beta);
        match self.state {
            State::Up | State::Refill => {
                self.cycles += 1;
                self.enter(State::Down, now);
            }
            _ => {}
        }
    }

    fn on_lost(&mut self, _now: Instant, packets: u64) {
        let margin = self.carried_margin();
        self.carried.on_lost(packets as f64, margin);
        if self.queue_now() {
            self.round_losses += packets;
        }
    }

    fn on_timeout(&mut self, _now: Instant) {
        // A silent path keeps its model: the bandwidth filter ages out when the path really got
        // slower, and forgetting it would restart from the initial window on every tail loss.
    }
}

#[cfg(test)]
mod tests;
