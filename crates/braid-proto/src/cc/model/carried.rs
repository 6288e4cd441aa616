//! The random-loss rate of braid's controller, learned at rates the path carried (see the parent
//! module's comment, "coding-aware loss", and DEVIATIONS.md, "a shallow buffer").
//!
//! Delivery-rate samples arrive scaled by 1 / (1 − p) with the path's loss estimate, so that a
//! path losing packets at random is measured at its rate. A drop-tail buffer too shallow to show
//! a queue in the RTT drops what is sent above its rate, and those drops pass for random loss:
//! the scaled sample then equals the sending rate, whatever it is, and the estimate climbed with
//! each probe until p reached the cap of 0.5 (on a 20 Mbit/s path with a 0.1-BDP buffer, an
//! estimate of 40 Mbit/s and half the packets dropped). Rates alone cannot tell the two apart;
//! the loss of packets sent no faster than the path has delivered can: a bottleneck fed below
//! its rate never overflows, so what they lose is random loss (the active test of PCC Vivace,
//! Dong et al., NSDI 2018: loss that does not grow with the sending rate). The estimate is then
//! bounded by the best unscaled rate a round delivered over 1 − that loss, which is the path's
//! rate where the loss is random and no more where it is the sender's own.

use std::collections::VecDeque;
use std::time::Duration;

use crate::Instant;

/// Rounds of the unscaled delivery-rate max filter (as the estimate's, `BW_WINDOW_ROUNDS`).
const RAW_WINDOW_ROUNDS: u64 = 10;
/// Packets sent at a carried rate before their loss rate bounds the estimate: at 1 % loss, 100
/// packets put p within about 1 % of it, and 1 / (1 − p) within about 1 %.
const MIN_PACKETS: f64 = 100.0;
/// Past this many packets the counts are halved: the estimate follows a path whose random loss
/// changes within a few thousand packets.
const MAX_PACKETS: f64 = 4000.0;
/// The most of p the bound uses (as the rate sample's own cap, `conn/path/recovery.rs`).
const MAX_LOSS: f64 = 0.5;
/// Loss above the random loss that a round may show before the bound applies: BBRv3's loss
/// threshold (draft-ietf-ccwg-bbr §4.5.10.2, `BBRLossThresh`), above the loss at carried rates
/// and two standard deviations of a round's count.
const LOSS_THRESH: f64 = 0.02;
/// Packets a Startup round must lose before its loss can end Startup (BBRv3's
/// `BBRStartupFullLossCnt`, draft-ietf-ccwg-bbr §4.3.1.3, there counted in loss events).
const STARTUP_FULL_LOSS: f64 = 6.0;
/// Send-time spans kept: a span's packets are acknowledged about a round after it ends, and
/// ProbeBW's cycle has one or two.
const SPANS: usize = 4;

#[derive(Debug, Clone, Default)]
pub(super) struct CarriedLoss {
    /// (round, bytes/s): what rounds not limited by the application delivered, unscaled.
    raw: Vec<(u64, f64)>,
    raw_max: f64,
    /// Send-time spans [start, end] during which the pacer ran no faster than `raw_max`; the
    /// newest may still be open.
    spans: VecDeque<(Instant, Option<Instant>)>,
    /// Packets sent inside a span that were lost, and all those heard of (decayed).
    lost: f64,
    packets: f64,
    /// When the newest packet of the last ACK was sent: the losses that ACK reveals were sent
    /// just before it (three packets before, or an eighth of an RTT).
    acked_sent: Option<Instant>,
    /// Startup's full-pipe test on the unscaled rate: the rate at its last 25 % growth, and
    /// rounds since.
    full_raw: f64,
    full_raw_rounds: u32,
    /// The bound applies until this round: a round lost more than the random loss explains.
    excess_until: u64,
    round: u64,
    /// Packets lost and heard of in the current round, all of them, and in the last one.
    round_lost: f64,
    round_packets: f64,
    last_round: (f64, f64),
    /// A Startup round that grew, counted once the next one grows too.
    pending: Option<(f64, f64)>,
    /// The loss Startup's loss test took as random (`startup_overflow`), standing in for
    /// [`Self::loss`] until enough packets were sent at carried rates.
    startup_loss: Option<f64>,
    /// The last UP's send-time span, and its packets lost and heard of (`probe_dropped`).
    up: Option<(Instant, Option<Instant>)>,
    up_lost: f64,
    up_packets: f64,
}

impl CarriedLoss {
    /// A round's end: `rate` is what it delivered, unscaled, per second. A round in which the
    /// application left the window unused may only raise the filter (BBR's rule for app-limited
    /// samples): a forwarder fed by a socket leaves some of it unused in most rounds.
    pub(super) fn on_round(&mut self, round: u64, rate: f64, app_limited: bool) {
        self.last_round = (self.round_lost, self.round_packets);
        self.round_lost = 0.0;
        self.round_packets = 0.0;
        self.round = round;
        let (lost, n) = self.last_round;
        if let Some(p) = self.loss().filter(|_| n >= 10.0) {
            if lost / n > p + 2.0 * (p * (1.0 - p) / n).sqrt() + LOSS_THRESH {
                self.excess_until = round + RAW_WINDOW_ROUNDS;
            }
        }
        if (!app_limited || rate > self.raw_max) && rate.is_finite() && rate > 0.0 {
            self.raw.push((round, rate));
        }
        let oldest = round.saturating_sub(RAW_WINDOW_ROUNDS);
        self.raw.retain(|&(r, _)| r > oldest);
        self.raw_max = self.raw.iter().map(|&(_, b)| b).fold(0.0, f64::max);
    }

    /// A round of Startup delivered `rate`, unscaled: the rounds since it last grew by
    /// `growth` (BBR's full-pipe test, draft-ietf-ccwg-bbr §4.3.1.2, on what was delivered
    /// rather than on the scaled estimate, which a shallow buffer's drops keep growing).
    /// A round that grew delivered what the round before sent, at rates the path carried: its
    /// losses count as random loss once the next round grows too (the round that crosses the
    /// pipe may still grow, and carries its first overflow).
    pub(super) fn startup_round(&mut self, rate: f64, growth: f64) -> u32 {
        if rate >= growth * self.full_raw {
            if let Some((lost, packets)) = self.pending.take() {
                self.count(lost, packets);
            }
            self.pending = (self.full_raw > 0.0).then_some(self.last_round);
            self.full_raw = rate;
            self.full_raw_rounds = 0;
        } else {
            self.pending = None;
            self.full_raw_rounds += 1;
        }
        self.full_raw_rounds
    }

    /// Startup's loss test, at round `round`'s end: the round just ended lost at least
    /// [`STARTUP_FULL_LOSS`] packets and more than the loss counted so far explains (Startup's
    /// rounds before the pipe filled, and any span at carried rates): that loss, smoothed as
    /// (lost + 1) / (packets + 2) and raised by two of its standard deviations (a few counted
    /// packets must not read a random-loss path as lossless), plus two standard deviations of
    /// the round's count, plus [`LOSS_THRESH`]. On a 0 % path with ~100 packets counted the
    /// round must lose ~8 % (Startup's overflow at gain 2.4 loses up to 58 %); with 20 % random
    /// loss and 20 counted, ~55 %. Returns the estimate the path supports, the best unscaled
    /// rate over 1 − the smoothed loss, and keeps the bound on for [`RAW_WINDOW_ROUNDS`].
    pub(super) fn startup_overflow(&mut self, round: u64) -> Option<f64> {
        let (lost, n) = self.last_round;
        if lost < STARTUP_FULL_LOSS || self.raw_max <= 0.0 {
            return None;
        }
        let p = (self.lost + 1.0) / (self.packets + 2.0);
        let p_hi = (p + 2.0 * (p * (1.0 - p) / (self.packets + 2.0)).sqrt()).min(MAX_LOSS);
        if lost / n <= p_hi + 2.0 * (p_hi * (1.0 - p_hi) / n).sqrt() + LOSS_THRESH {
            return None;
        }
        self.excess_until = round + RAW_WINDOW_ROUNDS;
        let p = self.loss().unwrap_or(p).min(MAX_LOSS);
        self.startup_loss = Some(p);
        Some(self.raw_max / (1.0 - p))
    }

    /// Outside Startup: the next Startup's full-pipe test starts over.
    pub(super) fn reset_full_pipe(&mut self) {
        self.pending = None;
        self.full_raw = 0.0;
        self.full_raw_rounds = 0;
    }

    /// The best unscaled rate of the last rounds (0 if none).
    pub(super) fn raw_max(&self) -> f64 {
        self.raw_max
    }

    /// A packet goes out with the pacer at `pacing` bytes/s; `probing`: Startup or UP, which
    /// send above the path's rate on purpose; `up`: UP.
    pub(super) fn on_sent(&mut self, now: Instant, pacing: f64, probing: bool, up: bool) {
        let up_open = self.up.is_some_and(|(_, end)| end.is_none());
        if up && !up_open {
            self.up = Some((now, None));
            self.up_lost = 0.0;
            self.up_packets = 0.0;
        } else if !up && up_open {
            self.up = self.up.map(|(start, _)| (start, Some(now)));
        }
        let carried = !probing && self.raw_max > 0.0 && pacing <= self.raw_max;
        let open = self.spans.back().is_some_and(|(_, end)| end.is_none());
        if carried && !open {
            if self.spans.len() == SPANS {
                self.spans.pop_front();
            }
            self.spans.push_back((now, None));
        } else if !carried && open {
            if let Some(span) = self.spans.back_mut() {
                span.1 = Some(now);
            }
        }
    }

    /// Sent inside a span, `margin` after its start (what the queue held from before it may
    /// still be dropped).
    fn in_span(&self, sent: Instant, margin: Duration) -> bool {
        self.spans.iter().any(|&(start, end)| sent >= start + margin && end.is_none_or(|e| sent <= e))
    }

    /// An ACK of `packets` whose newest was sent at `sent`.
    pub(super) fn on_ack(&mut self, sent: Instant, packets: f64, margin: Duration) {
        self.acked_sent = Some(sent);
        self.round_packets += packets;
        if self.in_span(sent, margin) {
            self.count(0.0, packets);
        }
        if self.in_up(sent, Duration::ZERO) {
            self.up_packets += packets;
        }
    }

    /// Sent during the last UP (or within `margin` after it ended).
    fn in_up(&self, sent: Instant, margin: Duration) -> bool {
        self.up.is_some_and(|(start, end)| sent >= start && end.is_none_or(|e| sent <= e + margin))
    }

    /// The last UP's packets were lost beyond what the loss at carried rates explains (its
    /// count plus two standard deviations, plus two packets): the path dropped what the probe
    /// added instead of queueing it, so the probe's RTTs showing no queue do not mean room. The
    /// loss that grows with the sending rate (PCC Vivace's test), counted as BBRv3 bounds a
    /// probe's loss (draft-ietf-ccwg-bbr §4.5.10.2, `IsInflightTooHigh`), above the random loss.
    pub(super) fn probe_dropped(&self) -> bool {
        let p = self.loss().unwrap_or(0.0);
        let n = self.up_packets;
        self.up_lost > n * p + 2.0 * (n * p * (1.0 - p)).sqrt() + 2.0
    }

    /// `packets` declared lost at the last ACK.
    pub(super) fn on_lost(&mut self, packets: f64, margin: Duration) {
        self.round_lost += packets;
        self.round_packets += packets;
        if self.acked_sent.is_some_and(|sent| self.in_span(sent, margin)) {
            self.count(packets, packets);
        }
        if self.acked_sent.is_some_and(|sent| self.in_up(sent, margin)) {
            self.up_lost += packets;
            self.up_packets += packets;
        }
    }

    fn count(&mut self, lost: f64, packets: f64) {
        self.lost += lost;
        self.packets += packets;
        if self.packets > MAX_PACKETS {
            self.lost /= 2.0;
            self.packets /= 2.0;
        }
    }

    /// The loss rate of packets sent at a carried rate, once enough were.
    pub(super) fn loss(&self) -> Option<f64> {
        (self.packets >= MIN_PACKETS).then(|| self.lost / self.packets)
    }

    /// The highest bandwidth estimate the path's behaviour supports: the best unscaled rate a
    /// round delivered, over 1 − the loss at carried rates. `None` until both are known, and
    /// unless one of the last rounds lost more than that loss explains (`LOSS_THRESH`): where
    /// the loss is random the scaled samples stand, so a host whose timers fire late (its
    /// achieved rate below its pacing rate) does not ratchet the estimate down to what it sent.
    pub(super) fn bound(&self) -> Option<f64> {
        if self.round >= self.excess_until {
            return None;
        }
        self.loss_bound()
    }

    /// The bound itself, whether or not it applies.
    fn loss_bound(&self) -> Option<f64> {
        let p = self.loss().or(self.startup_loss)?.min(MAX_LOSS);
        (self.raw_max > 0.0).then(|| self.raw_max / (1.0 - p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// What packets sent at or below the delivered rate lose bounds the estimate; what packets
    /// sent faster lose (a shallow buffer's overflow) does not count.
    #[test]
    fn only_packets_sent_at_a_carried_rate_set_the_loss() {
        let mut c = CarriedLoss::default();
        assert_eq!(c.bound(), None);
        c.on_round(1, 1e6, false);
        let t0 = Instant::ZERO + Duration::from_secs(1);
        // Sent at twice the delivered rate: half of it lost, none of it counted.
        c.on_sent(t0, 2e6, false, false);
        for i in 0..200u32 {
            c.on_ack(t0 + i * MS, 1.0, 10 * MS);
            c.on_lost(1.0, 10 * MS);
        }
        assert_eq!(c.loss(), None);
        // Then at 0.9 of it: 1 in 50 lost, counted from 10 ms after the span began.
        let t1 = t0 + Duration::from_secs(1);
        c.on_sent(t1, 0.9e6, false, false);
        for i in 0..300u32 {
            c.on_ack(t1 + (10 + i) * MS, 1.0, 10 * MS);
            if i % 50 == 0 {
                c.on_lost(1.0, 10 * MS);
            }
        }
        let p = c.loss().expect("300 packets");
        assert!((p - 6.0 / 306.0).abs() < 1e-9, "{p}");
        let bound = c.loss_bound().expect("known");
        assert!((bound - 1e6 / (1.0 - p)).abs() < 1e-3, "{bound}");
        // An UP that lost 10 of 40 packets dropped its excess; one that lost 1 did not.
        let t2 = t1 + Duration::from_secs(1);
        c.on_sent(t2, 1.25e6, true, true);
        for i in 0..40u32 {
            c.on_ack(t2 + i * MS, 1.0, 10 * MS);
            if i % 4 == 0 {
                c.on_lost(1.0, 10 * MS);
            }
        }
        assert!(c.probe_dropped());
        let t3 = t2 + Duration::from_secs(1);
        c.on_sent(t3, 0.9e6, false, false);
        c.on_sent(t3 + MS, 1.25e6, true, true);
        for i in 0..40u32 {
            c.on_ack(t3 + (1 + i) * MS, 1.0, 10 * MS);
        }
        c.on_lost(1.0, 10 * MS);
        assert!(!c.probe_dropped());
    }

    /// Startup's full-pipe test on the unscaled rate, and its rounds' losses: a round that grew
    /// counts once the next one grows too.
    #[test]
    fn startup_counts_the_rounds_before_the_pipe_filled() {
        let mut c = CarriedLoss::default();
        let t = Instant::ZERO;
        let round = |c: &mut CarriedLoss, n: u64, rate: f64, lost: f64, acked: f64| {
            c.on_ack(t, acked, MS);
            c.on_lost(lost, MS);
            c.on_round(n, rate, false);
            c.startup_round(rate, 1.25)
        };
        assert_eq!(round(&mut c, 1, 1e5, 0.0, 10.0), 0);
        assert_eq!(round(&mut c, 2, 2e5, 1.0, 99.0), 0);
        assert_eq!(round(&mut c, 3, 4e5, 1.0, 199.0), 0);
        assert_eq!(c.loss(), Some(0.01), "round 2 counted once round 3 grew; round 3 waits");
        assert_eq!(round(&mut c, 4, 4.4e5, 300.0, 300.0), 1);
        assert_eq!(c.loss(), Some(0.01), "round 3 crossed the pipe: not counted");
        assert_eq!(round(&mut c, 5, 4.4e5, 300.0, 300.0), 2);
        assert_eq!(round(&mut c, 6, 4.4e5, 300.0, 300.0), 3);
        c.reset_full_pipe();
        let mut c = CarriedLoss::default();
        for (n, rate) in [(1, 1e5), (2, 2e5), (3, 4e5), (4, 8e5)] {
            round(&mut c, n, rate, 1.0, 99.0);
        }
        // Rounds 2 and 3 counted (round 1 set the base, round 4 waits).
        assert_eq!(c.loss(), Some(2.0 / 200.0));
    }

    /// Startup's loss test: a round that overflows a clean path ends Startup and bounds the
    /// estimate by what was delivered; rounds of a 20 %-loss path do not, nor do a few losses.
    #[test]
    fn startup_ends_on_loss_above_what_its_rounds_lost() {
        let t = Instant::ZERO;
        let round = |c: &mut CarriedLoss, n: u64, rate: f64, lost: f64, acked: f64| {
            c.on_ack(t, acked, MS);
            c.on_lost(lost, MS);
            c.on_round(n, rate, false);
            c.startup_round(rate, 1.25);
            c.startup_overflow(n)
        };
        let mut c = CarriedLoss::default();
        for (n, rate, lost, acked) in [(1, 1e5, 0.0, 10.0), (2, 2e5, 0.0, 24.0), (3, 4e5, 1.0, 57.0)] {
            assert_eq!(round(&mut c, n, rate, lost, acked), None, "round {n}");
        }
        assert_eq!(round(&mut c, 4, 8e5, 5.0, 133.0), None, "5 lost: under the count");
        // 9 of 170 (5 %) is within what 1 lost of 82 counted (rounds 2 and 3) allows; 60 of 170
        // is not.
        assert_eq!(round(&mut c, 5, 8.8e5, 9.0, 161.0), None);
        let bound = round(&mut c, 6, 8.8e5, 60.0, 110.0).expect("an overflow");
        let p = 2.0 / (82.0 + 2.0);
        assert!((bound - 8.8e5 / (1.0 - p)).abs() < 1.0, "{bound}");
        assert_eq!(c.bound(), Some(bound), "the bound stands after Startup");
        // 20 % random loss, rounds growing 2.4 × from 10 packets: never the test.
        let mut c = CarriedLoss::default();
        let mut packets = 10.0;
        for n in 1..8 {
            let lost = (packets * 0.2f64).round();
            assert_eq!(round(&mut c, n, packets * 1e4, lost, packets - lost), None, "round {n}");
            packets *= 2.4;
        }
    }
}
