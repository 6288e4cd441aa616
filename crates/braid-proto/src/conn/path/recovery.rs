//! A path's acknowledgements and loss detection (RFC 9002 §5–6): the peer's ACKs, RTT and
//! delivery-rate samples, the packet and time thresholds, the loss timer and probe timeout, and
//! the loss-rate estimates that drive proactive repair.

use std::time::Duration;

use super::{Path, PathState, SentPacket};
use crate::cc::Ack;
use crate::wire::AckFrame;
use crate::Instant;

/// RFC 9002 §6.1.1: a packet is lost once three later packets are acknowledged…
pub(super) const PACKET_THRESHOLD: u64 = 3;
/// …or once it is older than 9/8 of the RTT when a later one is acknowledged (§6.1.2).
const TIME_THRESHOLD: f64 = 9.0 / 8.0;

/// The longest a probe timeout backs off to (unless the base PTO is longer): a lost probe's
/// replacement goes out at least this often, so a live but lossy path is heard from well within
/// the idle timeout (30 s by default).
pub(crate) const MAX_PTO_BACKOFF: Duration = Duration::from_secs(4);

/// The outcome of processing an ACK frame, for the connection to act on.
#[derive(Debug, Default)]
pub(crate) struct AckOutcome {
    pub acked: Vec<SentPacket>,
    pub lost: Vec<SentPacket>,
    /// With cumulative-ACK recovery: data packets braid's detection found missing, which stay
    /// in flight until the cumulative rules send their segments again (see `cumulative.rs`);
    /// only the mode's parity groups hear of them.
    pub missing: Vec<SentPacket>,
    /// The ACK covers the outstanding PMTU probe (kept out of `sent`, see `send_pmtu_probe`),
    /// for the connection's PMTU search.
    pub pmtu_probe: bool,
}

/// Loss rate estimate: an exponentially weighted mean over packets (lost = 1), CTCP
/// Algorithm 1's p with μ chosen per packet.
#[derive(Debug, Clone, Copy)]
pub struct LossEstimator {
    rate: f64,
    weight: f64,
}

impl LossEstimator {
    pub(super) fn new(weight: f64) -> LossEstimator {
        LossEstimator { rate: 0.0, weight }
    }

    pub(super) fn sample(&mut self, lost: bool) {
        self.rate += self.weight * (f64::from(u8::from(lost)) - self.rate);
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
}

impl Path {
    /// RFC 9002 §6.2.1's PTO before backoff (see `compute_loss_timeout`).
    pub(in crate::conn) fn pto_base(&self) -> Duration {
        let base = self.rtt.rto(Duration::from_millis(10)).max(self.rtt.smoothed().mul_f64(1.5));
        base + Duration::from_millis(5)
    }

    /// Sets the packet threshold of loss detection (`None`: RFC 9002's 3; `Some`: the mode's).
    /// TCP-dFEC §III-A sets the DupACK threshold to the FEC block size.
    pub fn set_packet_threshold(&mut self, threshold: Option<u64>) {
        self.packet_threshold = threshold.unwrap_or(PACKET_THRESHOLD).max(1);
    }

    /// The newest packet number acknowledged on this path, if any.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// When the oldest packet still awaiting an ACK among those sent after the newest one
    /// acknowledged went out: the path has said nothing about any packet since. `None` when
    /// nothing sent after it awaits an ACK.
    pub fn unanswered_since(&self) -> Option<Instant> {
        let from = self.largest_acked.map_or(0, |l| l + 1);
        self.sent.range(from..).next().map(|(_, p)| p.time)
    }

    /// Processes an ACK for this path's packets.
    pub fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> AckOutcome {
        self.loss_timeout_cache.set(None);
        let mut outcome = AckOutcome::default();
        let Some(largest) = ack.ranges.first().map(|r| r.end) else { return outcome };
        let probe =
            self.pmtu.outstanding().filter(|&n| ack.ranges.iter().any(|r| r.start <= n && n <= r.end));
        outcome.pmtu_probe = probe.is_some();
        let mut newly_acked_bytes = 0;
        let mut largest_sent = None;
        let mut rate_base: Option<(u64, Instant, Instant, Instant)> = None;
        let mut rtt_sample = false;
        if self.cumulative.is_some() {
            for range in &ack.ranges {
                outcome.acked.extend(self.cumulative_acked_missing(range.start, range.end));
            }
        }
        for range in &ack.ranges {
            // Ranges come highest first: once one ends below everything in flight, so do the
            // rest (most of an ACK re-reports old ranges).
            let Some((&oldest, _)) = self.sent.first_key_value() else { break };
            if range.end < oldest {
                break;
            }
            let (&newest, _) = self.sent.last_key_value().expect("not empty");
            if range.start > newest {
                continue;
            }
            while let Some(entry) = self.sent.range(range.start..=range.end).next() {
                let n = *entry.0;
                let packet = self.sent.remove(&n).expect("listed");
                if packet.ack_eliciting {
                    self.in_flight -= packet.size;
                    newly_acked_bytes += packet.size;
                }
                if n == largest {
                    // RTT sample from the largest newly acknowledged packet (RFC 9002 §5.1).
                    let delay = Duration::from_micros(ack.ack_delay_us.min(25_000_000));
                    self.rtt.update(now - packet.time, delay);
                    rtt_sample = true;
                }
                if largest_sent.is_none_or(|t| packet.time > t) {
                    rate_base =
                        Some((packet.delivered, packet.delivered_time, packet.first_sent, packet.time));
                }
                largest_sent = largest_sent.max(Some(packet.time));
                self.loss.sample(false);
                self.loss_long.sample(false);
                self.stats.packets_acked += 1;
                self.cumulative_on_acked(&packet);
                outcome.acked.push(packet);
            }
        }
        if outcome.acked.is_empty() {
            if let Some(probe) = probe {
                self.pmtu_probe_acked(now, probe, &mut outcome.lost);
            }
            return outcome;
        }
        self.delivered += newly_acked_bytes;
        self.delivered_time = now;
        // Delivery rate over the newest acknowledged packet's lifetime (BBR's rate sample).
        // The interval is the longer of the ACKs' and the sends' (BBR's rate sample): ACKs that
        // arrive compressed would otherwise read faster than the bottleneck.
        let delivery_rate = rate_base.and_then(|(delivered, at, first_sent, sent)| {
            self.first_sent_time = sent;
            let interval = (now - at).max(sent - first_sent).as_secs_f64();
            // Bytes lost at random crossed the bottleneck too (a coded transport replaces them
            // with repair, not by slowing down): scale the acknowledged rate by 1 / (1 − p) with
            // the path's random-loss estimate (see cc/bbr.rs).
            let crossed = 1.0 / (1.0 - self.loss.rate().min(0.5));
            (interval > 0.0).then(|| (self.delivered - delivered) as f64 * crossed / interval)
        });
        self.largest_acked = self.largest_acked.max(Some(largest));
        self.pto_count = 0;
        self.cc.on_ack(
            &Ack {
                now,
                bytes: newly_acked_bytes,
                largest_sent: largest_sent.unwrap_or(now),
                in_flight: self.in_flight,
                delivery_rate,
                rtt_sample,
            },
            &self.rtt,
        );
        self.cumulative_after_ack();
        self.detect_lost(now, &mut outcome.lost);
        if self.cumulative.is_some() {
            // Data packets stay in flight for a sender without SACK; the mode hears of them.
            for p in std::mem::take(&mut outcome.lost) {
                let copy = (!p.symbols.is_empty()).then(|| p.clone());
                match self.cumulative_missing(p) {
                    Some(p) => outcome.lost.push(p),
                    None => outcome.missing.extend(copy),
                }
            }
        }
        outcome
    }

    /// An ACK that acknowledged nothing in `sent` but the outstanding PMTU probe (kept out of
    /// `sent`: RFC 8899 §4.4, see `send_pmtu_probe`): the path still delivered a packet newer
    /// than any acknowledged so far. RFC 9002 (§6.1, Appendix A.7; a probe is one of its sent
    /// packets) sets the largest acknowledged from it, resets the probe-timeout backoff and
    /// runs loss detection: the packets sent well before the probe are lost by the time
    /// threshold now, not at a backed-off probe timeout later (at 5 % bursty loss, 1.3 s of a
    /// 3.6 s stall). The connection reads the probe's ACK for the PMTU search after this.
    fn pmtu_probe_acked(&mut self, now: Instant, probe: u64, lost: &mut Vec<SentPacket>) {
        if self.cumulative.is_some() || self.largest_acked.is_some_and(|l| l >= probe) {
            return;
        }
        self.largest_acked = Some(probe);
        self.pto_count = 0;
        self.detect_lost(now, lost);
    }

    /// RFC 9002 §6.1: declares lost what the packet or time threshold says is.
    fn detect_lost(&mut self, now: Instant, lost: &mut Vec<SentPacket>) {
        let Some(largest_acked) = self.largest_acked else { return };
        let delay = self.loss_delay();
        let numbers: Vec<u64> = self
            .sent
            .range(..largest_acked)
            .filter(|(n, p)| *n + self.packet_threshold <= largest_acked || now - p.time >= delay)
            .map(|(n, _)| *n)
            .collect();
        for n in numbers {
            let packet = self.sent.remove(&n).expect("listed");
            if self.cumulative.is_some() && packet.symbols.iter().any(|s| s.source.is_some()) {
                // Still in flight for a sender without SACK (see `on_ack`).
                lost.push(packet);
                continue;
            }
            if packet.ack_eliciting {
                self.in_flight -= packet.size;
            }
            self.stats.packets_lost += 1;
            self.stats.fast_losses += 1;
            lost.push(packet);
        }
    }

    /// Folds `count` newly detected losses into the loss-rate estimates. Losses the connection
    /// judged to be congestion (a full queue) are left out: the estimate drives proactive
    /// repair, which should track the path's random loss, not the sender's own overshoot.
    pub fn record_losses(&mut self, count: usize, congestion: bool) {
        if !congestion {
            for _ in 0..count {
                self.loss.sample(true);
                self.loss_long.sample(true);
            }
        }
    }

    /// When the next time-threshold loss (RFC 9002 §6.1.2) or probe timeout is due.
    pub fn loss_timeout(&self) -> Option<Instant> {
        if let Some(cached) = self.loss_timeout_cache.get() {
            debug_assert_eq!(cached, self.compute_loss_timeout());
            return cached;
        }
        let timeout = self.compute_loss_timeout();
        self.loss_timeout_cache.set(Some(timeout));
        timeout
    }

    fn compute_loss_timeout(&self) -> Option<Instant> {
        // A failed path's probes run on their own timer (`probe_due`).
        if self.stats.state != PathState::Active {
            return None;
        }
        if self.cumulative.is_some() {
            // TCP without SACK has its retransmission timer only.
            return self.cumulative_timeout();
        }
        // `sent` holds only ack-eliciting packets (see `on_sent`), so the oldest is the first.
        let (&first, oldest) = self.sent.first_key_value()?;
        debug_assert!(oldest.ack_eliciting);
        if self.largest_acked.is_some_and(|largest| first < largest) {
            return Some(oldest.time + self.loss_delay());
        }
        // RFC 9002 §6.2.1: PTO = srtt + max(4·rttvar, granularity) + max_ack_delay; braid also
        // keeps it above 1.5 × srtt, because pacing and queues make single RTTs run long and a
        // spurious timeout collapses the window.
        Some(oldest.time + self.current_pto())
    }

    /// The probe timeout with its exponential backoff (RFC 9002 §6.2.1), the backoff capped at
    /// [`MAX_PTO_BACKOFF`] (never below the base): at 45 % loss a few lost probes in a row
    /// doubled the silence past the 30 s idle timeout, and both ends closed a connection that was
    /// still delivering (the fault campaign's seeds 1192, 5596, ...).
    pub fn current_pto(&self) -> Duration {
        let base = self.pto_base();
        let backed_off = base * 2u32.saturating_pow(self.pto_count.min(10));
        backed_off.min(base.max(MAX_PTO_BACKOFF))
    }

    /// Rounded up to whole microseconds, the resolution of [`Instant`]: the timer set at
    /// `sent + delay` must find the packet `delay` old when it fires, else it finds nothing to
    /// declare lost and counts as a probe timeout.
    fn loss_delay(&self) -> Duration {
        let delay =
            self.rtt.smoothed().max(self.rtt.latest()).mul_f64(TIME_THRESHOLD).max(Duration::from_millis(1));
        Duration::from_micros(delay.as_nanos().div_ceil(1000) as u64)
    }

    /// The loss timer fired: declare time-threshold losses if that is what it was for, else
    /// treat it as a probe timeout.
    /// Returns the lost packets and whether they are a probe timeout's presumption.
    pub fn on_timer(&mut self, now: Instant) -> (Vec<SentPacket>, bool) {
        self.loss_timeout_cache.set(None);
        if self.cumulative.is_some() {
            if self.cumulative_timeout().is_some_and(|t| t <= now) {
                return (self.cumulative_on_timeout(now), true);
            }
            return (Vec::new(), false);
        }
        let mut lost = Vec::new();
        if self.largest_acked.is_some_and(|l| self.sent.first_key_value().is_some_and(|(&n, _)| n < l)) {
            // The timer was armed for a time-threshold loss. If the RTT grew since, the packet
            // is not yet old enough and the timer is simply re-armed: it must never turn into a
            // probe timeout, which would presume everything in flight lost.
            self.detect_lost(now, &mut lost);
            return (lost, false);
        }
        (self.on_loss_timeout(now), true)
    }

    /// The probe timer fired: everything in flight is presumed lost (a coded transport does not
    /// need the exact packets back, only new symbols for their blocks, which also serve as the
    /// probe). A single probe timeout is usually a lost tail, not congestion (RFC 9002 §6.2);
    /// the controller decides (by default only the third in a row — persistent congestion,
    /// §7.6 — collapses the window; CTCP's tokens react to every timeout).
    fn on_loss_timeout(&mut self, now: Instant) -> Vec<SentPacket> {
        self.pto_count += 1;
        self.stats.timeouts += 1;
        self.cc.on_probe_timeout(now, self.pto_count);
        let mut lost = Vec::new();
        for (_, packet) in std::mem::take(&mut self.sent) {
            if packet.ack_eliciting {
                self.in_flight -= packet.size;
            }
            self.stats.packets_lost += 1;
            lost.push(packet);
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{leak, packet};
    use super::*;
    use crate::cc::CcAlgorithm;
    use crate::wire::AckRange;

    /// A time-threshold timer that fires after the RTT grew finds nothing old enough yet: it
    /// re-arms, and must not become a probe timeout that presumes the whole flight lost.
    #[test]
    fn early_time_threshold_timer_is_not_a_probe_timeout() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        for n in 0..3 {
            p.on_sent(Instant::from_micros(n * 1000), n, packet(n * 1000));
        }
        let ack = |end| AckFrame { path: 0, ack_delay_us: 0, ranges: leak(vec![AckRange { start: 1, end }]) };
        // Packet 0 is below the largest acknowledged but only two behind: a time-threshold timer.
        assert!(p.on_ack(Instant::from_micros(100_000), &ack(2)).lost.is_empty());
        let armed = p.loss_timeout().unwrap();
        // Fire a little early (as if the RTT grew after arming): nothing is lost, no timeout.
        let (lost, probe) = p.on_timer(armed - Duration::from_millis(5));
        assert!(lost.is_empty() && !probe);
        assert_eq!((p.stats.timeouts, p.in_flight), (0, 1000));
        // On time: packet 0 is declared lost by the time threshold.
        let (lost, probe) = p.on_timer(armed);
        assert_eq!((lost.len(), probe), (1, false));
        assert_eq!(p.stats.timeouts, 0);
    }

    #[test]
    fn packet_threshold_declares_loss_and_in_flight_balances() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        for n in 0..6 {
            p.on_sent(Instant::from_micros(n * 10), n, packet(n * 10));
        }
        assert_eq!(p.in_flight, 6000);
        // ACK 0 and 2..=5: 1 is three packets behind 5 → lost.
        let ack = AckFrame {
            path: 0,
            ack_delay_us: 0,
            ranges: leak(vec![AckRange { start: 2, end: 5 }, AckRange { start: 0, end: 0 }]),
        };
        let out = p.on_ack(Instant::from_micros(100_000), &ack);
        assert_eq!(out.acked.len(), 5);
        assert_eq!(out.lost.len(), 1);
        assert_eq!(p.in_flight, 0);
        assert!(p.rtt.has_sample());
    }

    #[test]
    fn the_time_threshold_timer_declares_the_loss_it_was_set_for() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        p.on_sent(Instant::ZERO, 0, packet(0));
        p.on_sent(Instant::from_micros(10), 1, packet(10));
        // RTT 100.001 ms: the loss delay, 9/8 of it, is 112.501125 ms — not whole microseconds.
        let ack = AckFrame { path: 0, ack_delay_us: 0, ranges: leak(vec![AckRange { start: 1, end: 1 }]) };
        let out = p.on_ack(Instant::from_micros(100_011), &ack);
        assert!(out.lost.is_empty());
        let due = p.loss_timeout().unwrap();
        // Firing when due finds packet 0 lost (before the fix it found it a fraction of a
        // microsecond short of the delay and fell through to a probe timeout).
        let (lost, probe) = p.on_timer(due);
        assert_eq!((lost.len(), probe), (1, false));
        assert_eq!(p.stats.timeouts, 0);
    }

    /// A PMTU probe is kept out of `sent`; when an ACK of it is all the path says, the packets
    /// sent well before it are lost by the time threshold and the probe-timeout backoff starts
    /// over (before, the ACK was dropped and the data packet waited for a backed-off PTO: a
    /// 1.3 s wait at 5 % bursty loss, Gilbert–Elliott seed 5).
    #[test]
    fn an_acked_probe_outside_sent_declares_the_older_packets_lost() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        p.on_sent(Instant::ZERO, 0, packet(0));
        let ack =
            |n| AckFrame { path: 0, ack_delay_us: 0, ranges: leak(vec![AckRange { start: n, end: n }]) };
        assert_eq!(p.on_ack(Instant::from_micros(100_000), &ack(0)).acked.len(), 1);
        // Packet 1 (data) goes out and is lost; two probe timeouts back the timer off.
        p.on_sent(Instant::from_micros(200_000), 1, packet(200_000));
        p.pto_count = 2;
        // Packet 2, a PMTU probe, is not recorded in `sent`; its ACK comes 400 ms after 1 left.
        p.pmtu.on_probe_sent(Instant::from_micros(300_000), 2, 1400);
        let out = p.on_ack(Instant::from_micros(600_000), &ack(2));
        assert!(out.acked.is_empty());
        assert_eq!(out.lost.iter().map(|l| l.number).collect::<Vec<_>>(), vec![200_000]);
        assert_eq!((p.largest_acked(), p.pto_count, p.in_flight), (Some(2), 0, 0));
        // An ACK of a packet outside `sent` that is not the probe (an ACK-only packet) changes
        // nothing, nor does a repeated ACK of the probe.
        p.on_sent(Instant::from_micros(700_000), 3, packet(700_000));
        assert!(p.on_ack(Instant::from_micros(900_000), &ack(4)).lost.is_empty());
        assert!(p.on_ack(Instant::from_micros(900_000), &ack(2)).lost.is_empty());
        assert_eq!((p.largest_acked(), p.in_flight), (Some(2), 1000));
    }
}
