//! ProbeBW's phases and ProbeRTT of braid's controller (see the parent module), and the return
//! to Startup when the estimate lags.

use std::time::Duration;

use super::*;
use crate::Instant;

/// Probes in a row whose own packets found no queue before Startup runs again
/// (`watch_probe`).
pub(super) const ROOMY_PROBES: u32 = 2;
/// ProbeBW cycles the no-queue rule waits after a Startup it caused found no more than
/// [`LAGGING_GROWTH`] × the estimate it began with; doubled after each such Startup in a row, up
/// to [`MAX_PROBE_BACKOFF`] (`on_startup_end`).
const PROBE_BACKOFF: u64 = 4;
const MAX_PROBE_BACKOFF: u64 = 64;

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
    /// The application left the window unused while UP ran, or one of its packets' ACKs
    /// carried an app-limited rate sample: the probe may not have added what it should have.
    app_limited: bool,
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
                self.on_startup_end();
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
                // The last probe's verdict, if no ACK of a packet sent after it has come (its
                // packets' ACKs brought no RTT sample): on what its packets showed, not dropped.
                if let Some(last) = self.probe.take() {
                    self.judge_probe(last);
                }
                let expected_queue = self.up_probe(bdp) / self.paced_bandwidth().max(1.0);
                self.probe = Some(UpProbe {
                    start: now,
                    end: None,
                    expected_queue: Duration::from_secs_f64(expected_queue.min(60.0)),
                    samples: 0,
                    queued: 0,
                    app_limited: false,
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
        (self.estimate_grew() || self.roomy_probes >= ROOMY_PROBES)
            && !queue
            && !self.competing
            && !self.sample_app_limited
    }

    /// The last cycle's probe raised the estimate by [`LAGGING_GROWTH`] or more.
    pub(super) fn estimate_grew(&self) -> bool {
        self.cycle_bandwidth > 0.0 && self.bandwidth >= LAGGING_GROWTH * self.cycle_bandwidth
    }

    /// Back to Startup from ProbeBW, from the window in use: Startup's full-pipe and delay tests
    /// start over, and a loss bound learned below today's rate is dropped. `by_probes`: the
    /// probes' rule alone caused it (not a lost sibling, not the estimate's own growth), so
    /// `on_startup_end` checks what this Startup finds and backs the rule off if nothing.
    pub(super) fn restart_startup(&mut self, now: Instant, by_probes: bool) {
        self.probe_restart = by_probes.then_some(self.bandwidth);
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
    /// so ProbeBW held a transfer at a third of a 20 Mbit/s path for a whole run. Only ACKs
    /// that bring a new RTT sample are watched (`Ack::rtt_sample`): one that fills holes leaves
    /// the estimator's latest sample as it was, and counting it again let one sample outvote
    /// the rest. Which probes are not judged: `judge_probe`.
    pub(super) fn watch_probe(&mut self, sent: Instant, rtt: Duration) {
        let app_limited = self.sample_app_limited;
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
                p.app_limited |= app_limited;
                return;
            }
        }
        // The first ACK of a packet sent after UP ended: the verdict, on the probe's packets
        // acknowledged by now (those still in flight are not counted).
        let p = *p;
        self.probe = None;
        self.judge_probe(p);
    }

    /// The verdict on a probe (`watch_probe`): it found room if most of its packets' RTT
    /// samples showed less than a quarter of its expected queue. Not judged — and the count of
    /// roomy probes starts over — where UP did not end on its own, where the expected queue is
    /// within timer noise ([`QUEUE_SIGN`] twice), with a competitor (whose queue comes and
    /// goes), where paths share the bottleneck (the probe is a share of the group's), where the
    /// application left the probe's window unused (it could not add
    /// what would have queued), and for [`PROBE_BACKOFF`] cycles or more after a Startup the
    /// rule caused found nothing (`on_startup_end`).
    fn judge_probe(&mut self, p: UpProbe) {
        let judged = p.end.is_some()
            && p.samples >= 4
            && p.expected_queue >= 2 * QUEUE_SIGN
            && !p.app_limited
            && !self.competing
            && self.share() >= 1.0
            && self.cycles >= self.probe_quiet_until;
        // A probe whose packets the path dropped beyond its random loss found a buffer too
        // shallow to queue it, not room (`carried.rs`, `probe_dropped`).
        let room = judged && 2 * p.queued < p.samples && !self.carried.probe_dropped();
        self.roomy_probes = if room { self.roomy_probes + 1 } else { 0 };
    }

    /// The application left the window unused: a probe still running is app-limited.
    pub(super) fn probe_app_limited(&mut self) {
        if self.state == State::Up {
            if let Some(p) = self.probe.as_mut().filter(|p| p.end.is_none()) {
                p.app_limited = true;
            }
        }
    }

    /// Startup ended (Drain emptied its queue). If the probes' rule sent the controller there
    /// and Startup found no more than [`LAGGING_GROWTH`] × the estimate it began with, the
    /// probes' packets showed no queue for another reason than room: a buffer shallower than a
    /// quarter of the probe's queue, or a policer, drops what UP adds instead of queueing it,
    /// and the packets that survive show none. Startup overshoots into that buffer each time,
    /// so the rule waits [`PROBE_BACKOFF`] cycles, twice as many after each such Startup in a
    /// row (binary exponential back-off, as TCP's retransmission timer's, RFC 6298 §5.5); a
    /// Startup that finds more ends the back-off.
    fn on_startup_end(&mut self) {
        let Some(before) = self.probe_restart.take() else { return };
        if self.bandwidth < LAGGING_GROWTH * before {
            self.probe_backoff = (2 * self.probe_backoff).clamp(PROBE_BACKOFF, MAX_PROBE_BACKOFF);
            self.probe_quiet_until = self.cycles + self.probe_backoff;
        } else {
            self.probe_backoff = 0;
        }
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
