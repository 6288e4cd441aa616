//! ProbeBW's phases and ProbeRTT of braid's controller (see the parent module), and the return
//! to Startup when the estimate lags.

use std::time::Duration;

use super::*;
use crate::Instant;

/// Probes in a row whose own packets found no queue before Startup runs again
/// (`watch_probe`).
const ROOMY_PROBES: u32 = 2;

/// One UP's probe, judged by its own packets' RTTs (`watch_probe`).
#[derive(Debug, Clone, Copy)]
pub(super) struct UpProbe {
    /// When UP began and, once it ended on its own, when.
    start: Instant,
    end: Option<Instant>,
    /// The queue the probe leaves where the path is already full: what it adds in flight,
    /// drained at the estimated rate.
    expected_queue: Duration,
    /// RTT samples of its packets, and how many showed a quarter of `expected_queue` or more.
    samples: u32,
    queued: u32,
}

impl ModelCc {
    /// ProbeBW's phases (BBRv3 §4.6.4), on every ACK.
    pub(super) fn probe_bw(&mut self, now: Instant) {
        let Some(bdp) = self.bdp() else { return };
        let min = self.min_rtt().unwrap_or(Duration::from_millis(100));
        let in_flight = self.in_flight as f64;
        let elapsed = now - self.state_start;
        match self.state {
            State::Drain if in_flight <= bdp => {
                self.startup_end = Some(now);
                // Startup's exit may leave the estimate up to BBR's full-pipe growth (25 %)
                // below the path; beyond that it lags.
                self.cycle_bandwidth = FULL_PIPE_GROWTH * self.bandwidth;
                self.enter(State::Down, now);
            }
            State::Down if in_flight <= bdp || elapsed >= 2 * min => {
                self.on_drained();
                self.enter(State::Cruise, now);
            }
            State::Cruise => {
                // BBRv1's cycle (six rounds at gain 1), varied by cycle: BBRv3 waits 2–3 s, which
                // left a bandwidth under-estimated at Startup's exit for seconds.
                let rounds = CRUISE_ROUNDS + self.cycles % 3;
                if self.round >= self.state_round + rounds {
                    self.enter(State::Refill, now);
                }
            }
            State::Refill if self.round > self.state_round => {
                self.cycle_bandwidth = self.bandwidth;
                // UP probes from what the pipe holds, not from the queue the last round still
                // showed: a bandwidth estimate a little high (a lossy path's rate samples, scaled
                // by 1 / (1 − p)) kept ~12 ms of queue standing, and a probe on top of it doubled
                // the bump a request waits behind. Not beside a competitor, whose queue it is.
                let standing = if self.competing { 0.0 } else { self.standing_queue() * bdp };
                self.up_base = (in_flight - standing).max(0.0);
                // Beside a competitor's queue UP ends after one min RTT, before its round does,
                // so the growth of the loss bound below never runs there: a bound that binds
                // makes room for the probe as UP begins instead.
                if self.competing {
                    let probe = self.up_probe(bdp);
                    if let Some(hi) = self.inflight_hi.as_mut().filter(|hi| in_flight >= 0.9 * **hi) {
                        *hi += probe;
                    }
                }
                let expected_queue = self.up_probe(bdp) / self.paced_bandwidth().max(1.0);
                self.probe = Some(UpProbe {
                    start: now,
                    end: None,
                    expected_queue: Duration::from_secs_f64(expected_queue.min(60.0)),
                    samples: 0,
                    queued: 0,
                });
                self.enter(State::Up, now);
            }
            State::Up => {
                // UP ends once it has put UP_PROBE × BDP (at least four datagrams) more in
                // flight than it started with (BBRv3 waits for 1.25 × BDP in all): the probe's rate samples show new
                // bandwidth all the same, and the queue it leaves when there is none stays an
                // eighth of the RTT. Measured from UP's start, what is in flight includes the
                // lost packets not yet declared, so a lossy path probes as far as a clean one.
                let grown = in_flight >= self.up_base + self.up_probe(bdp);
                let queue = self.round_min_rtt.is_some_and(|r| r > min + Self::delay_threshold(min));
                if grown || (elapsed >= min && queue) {
                    self.cycles += 1;
                    if let Some(p) = self.probe.as_mut() {
                        p.end = Some(now);
                    }
                    self.enter(State::Down, now);
                }
                // UP regrows the loss bound by a quarter a round while it binds (BBRv3 grows it
                // exponentially).
                if self.round > self.state_round {
                    let growth = 1.0 + 0.25 * self.share();
                    if let Some(hi) = self.inflight_hi.as_mut().filter(|hi| in_flight >= 0.9 * **hi) {
                        *hi *= growth;
                    }
                    self.state_round = self.round;
                }
            }
            _ => {}
        }
    }

    /// The last cycle's probe raised the bandwidth estimate by [`LAGGING_GROWTH`] or more with no
    /// queue to show for it, or the last [`ROOMY_PROBES`] probes' own packets found no queue
    /// (`watch_probe`): the estimate is far below what the path delivers. That happens when
    /// Startup ended early — a delay spike of a few round trips (a stalled router or host, a
    /// radio's retransmissions) passes the delay test while the window is still a fraction of
    /// the pipe — and on a path whose rate rose or whose competitor left. On a path at capacity
    /// a probe finds under 2 %. ProbeBW's probes grow the estimate by ~20 % a cycle of 9–11
    /// rounds: in the simulator, a 160 ms, 10 Mbit/s path left at 0.1 Mbit/s by a stall at 0.2 s
    /// was still at 6.7 Mbit/s 10 s later; Startup finds the rate in a few rounds. BBRv3's UP gets there by staying in UP while the
    /// estimate grows (draft-ietf-ccwg-bbr §4.6.4); braid's UP is short for latency's sake.
    /// Not beside a competitor's queue, whose ebb would read as room.
    pub(super) fn estimate_lags(&self) -> bool {
        let Some(min) = self.min_rtt() else { return false };
        let queue = self.last_round_min_rtt.is_some_and(|r| r > min + Self::delay_threshold(min));
        let grew = self.cycle_bandwidth > 0.0 && self.bandwidth >= LAGGING_GROWTH * self.cycle_bandwidth;
        (grew || self.roomy_probes >= ROOMY_PROBES) && !queue && !self.competing && !self.sample_app_limited
    }

    /// Back to Startup from ProbeBW, from the window in use: Startup's full-pipe and delay tests
    /// start over, and a loss bound learned below today's rate is dropped.
    pub(super) fn restart_startup(&mut self, now: Instant) {
        self.startup_window = self.window();
        self.inflight_hi = None;
        self.probe = None;
        self.roomy_probes = 0;
        self.full_bandwidth = self.bandwidth;
        self.full_bandwidth_rounds = 0;
        self.delayed_samples = 0;
        self.queued_samples = 0;
        self.enter(State::Startup, now);
    }

    /// Judges the last UP by its own packets, on each ACK with an RTT sample (`sent`: when the
    /// newest packet it acknowledges was sent). Where the path is full, what UP adds in flight
    /// queues at the bottleneck, growing to about `expected_queue` as UP ends, so most of its
    /// packets' RTTs show a quarter of that or more; if most show less, the path delivered the
    /// probe without queueing it and has room the estimate does not show (the median, not the
    /// largest: one late timer on a loaded host is not a queue). The estimate's own growth
    /// cannot tell: it is a max filter over rate samples that span a round, of which UP's
    /// fraction of a round at 1.25 × is a small part, and where the sender's achieved rate
    /// trails its pacing rate (a host's timers firing late) the samples stay at the estimate,
    /// so ProbeBW held a transfer at a third of a 20 Mbit/s path for a whole run. Not judged
    /// where the expected queue is within timer noise ([`QUEUE_SIGN`] twice), with a competitor
    /// (whose queue comes and goes), or where paths share the bottleneck (the probe is a share
    /// of the group's).
    pub(super) fn watch_probe(&mut self, sent: Instant, rtt: Duration) {
        let Some(p) = self.probe.as_mut() else { return };
        if sent < p.start {
            return;
        }
        match p.end {
            Some(end) if sent >= end => {}
            // UP ended without its own test (a congestion loss, ProbeRTT, Startup again).
            None if self.state != State::Up => {
                self.probe = None;
                self.roomy_probes = 0;
                return;
            }
            _ => {
                let min = self.min_rtt.map_or(rtt, |(min, _)| min);
                p.samples += 1;
                p.queued += u32::from(rtt > min + p.expected_queue / 4);
                return;
            }
        }
        // The first ACK of a packet sent after UP ended: the verdict, on the probe's packets
        // acknowledged by now (those still in flight are not counted).
        let p = *p;
        self.probe = None;
        let judged =
            p.samples >= 4 && p.expected_queue >= 2 * QUEUE_SIGN && !self.competing && self.share() >= 1.0;
        let room = judged && 2 * p.queued < p.samples;
        self.roomy_probes = if room { self.roomy_probes + 1 } else { 0 };
    }

    /// ProbeRTT (BBRv1 §4.3.4.3, BBRv3 §4.6.5): when the min-RTT estimate has not been
    /// refreshed for [`MIN_RTT_WINDOW`], hold half a BDP in flight for 200 ms and a round.
    pub(super) fn probe_rtt(&mut self, now: Instant) {
        let stale = self.min_rtt.is_some_and(|(_, at)| now - at >= MIN_RTT_WINDOW);
        if self.state != State::ProbeRtt {
            if stale && !matches!(self.state, State::Startup | State::Drain) {
                self.enter(State::ProbeRtt, now);
                self.probe_rtt_done = None;
                // Any sample from now on is the fresh minimum.
                self.min_rtt = self.min_rtt.map(|(rtt, _)| (rtt, now - MIN_RTT_WINDOW));
            }
            return;
        }
        if self.probe_rtt_done.is_none() && self.in_flight <= self.window() {
            self.probe_rtt_done = Some(now + PROBE_RTT_DURATION);
            self.state_round = self.round;
        }
        if self.probe_rtt_done.is_some_and(|t| now >= t) && self.round > self.state_round {
            if let Some((rtt, _)) = self.min_rtt {
                self.min_rtt = Some((rtt, now));
            }
            self.enter(State::Cruise, now);
        }
    }
}
