//! One path: packet numbers, what is in flight, acknowledgement and loss detection (RFC 9002
//! §6 adapted: packet numbers count transmissions, as CTCP's seqno does, so a symbol is never
//! "retransmitted" under its old number), RTT, loss-rate estimation and the congestion
//! controller.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::blocks::OutgoingSymbol;
use crate::cc::{Ack, CongestionController, RttEstimator};
use crate::wire::{write_ack, AckFrame, AckRange, Writer};
use crate::Instant;

/// RFC 9002 §6.1.1: a packet is lost once three later packets are acknowledged…
const PACKET_THRESHOLD: u64 = 3;
/// …or once it is older than 9/8 of the RTT when a later one is acknowledged (§6.1.2).
const TIME_THRESHOLD: f64 = 9.0 / 8.0;
/// Keep at most this many received ranges (older ones are forgotten; see `AckFrame`).
const MAX_RANGES: usize = 32;
/// Consecutive probe timeouts without an ACK after which a path is declared failed (a dead path
/// shows as no ACK for a few RTOs). With the PTO's doubling that is about 7 PTOs of silence.
pub(crate) const FAIL_AFTER_PTOS: u32 = 3;
/// A failed path's PING probes back off from its PTO up to this interval.
const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Probes of a failed path kept awaiting an ACK (older ones are forgotten).
const MAX_PROBES_KEPT: usize = 8;

/// Where a path is in its life (PROTOCOL.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathState {
    /// Carries data (the server: once it has heard on the path).
    #[default]
    Active,
    /// Stopped answering: carries no data, only PING probes at a backed-off interval, until an
    /// ACK of a probe arrives on it.
    Failed,
    /// Removed by either end (PATH_ABANDON); its id is never used again.
    Removed,
}

/// The longest a probe timeout backs off to (unless the base PTO is longer): a lost probe's
/// replacement goes out at least this often, so a live but lossy path is heard from well within
/// the idle timeout (30 s by default).
pub(crate) const MAX_PTO_BACKOFF: Duration = Duration::from_secs(4);

/// What a sent packet carried.
#[derive(Debug, Clone)]
pub(crate) struct SentPacket {
    /// Its packet number on its path (for traces).
    pub number: u64,
    pub time: Instant,
    pub size: u64,
    pub ack_eliciting: bool,
    pub symbols: Vec<OutgoingSymbol>,
    /// It carried flow-control window updates (resent if the packet is lost).
    pub window_update: bool,
    /// PATH_ABANDON frames it carried (bit = path id; resent if the packet is lost).
    pub abandons: u8,
    /// The path's delivered-bytes counter and its time when this packet was sent (for
    /// delivery-rate samples).
    pub delivered: u64,
    pub delivered_time: Instant,
    /// When the newest packet acknowledged before this one was sent had been sent: the start
    /// of this packet's send interval (BBR's `first_sent_time`).
    pub first_sent: Instant,
    /// The application datagrams and their repairs it carried (PROTOCOL.md §15).
    pub datagrams: Option<crate::datagram::SentDatagrams>,
}

/// The outcome of processing an ACK frame, for the connection to act on.
#[derive(Debug, Default)]
pub(crate) struct AckOutcome {
    pub acked: Vec<SentPacket>,
    pub lost: Vec<SentPacket>,
}

/// Loss rate estimate: an exponentially weighted mean over packets (lost = 1), CTCP
/// Algorithm 1's p with μ chosen per packet.
#[derive(Debug, Clone, Copy)]
pub struct LossEstimator {
    rate: f64,
    weight: f64,
}

impl LossEstimator {
    fn new(weight: f64) -> LossEstimator {
        LossEstimator { rate: 0.0, weight }
    }

    fn sample(&mut self, lost: bool) {
        self.rate += self.weight * (f64::from(u8::from(lost)) - self.rate);
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
}

pub(crate) struct Path {
    pub id: u8,
    pub next_number: u64,
    pub sent: BTreeMap<u64, SentPacket>,
    pub in_flight: u64,
    pub rtt: RttEstimator,
    pub cc: Box<dyn CongestionController>,
    /// Random-loss rate, an EWMA over packets (CTCP Algorithm 1's p).
    pub loss: LossEstimator,
    /// The same over about 8× as many packets: steadier, for repair that must not come up
    /// short when the fast estimate dips between losses (a tail's margin).
    pub loss_long: LossEstimator,
    /// Received packet numbers, as disjoint ranges, highest first.
    received: Vec<AckRange>,
    largest_received_at: Option<Instant>,
    pub ack_pending: bool,
    /// Ack-eliciting packets received since the last ACK was sent.
    pub unacked_eliciting: u32,
    /// Packets acknowledged so far (for the time-threshold rule and statistics).
    largest_acked: Option<u64>,
    pub pto_count: u32,
    /// Earliest time the pacer lets the next packet go.
    pub next_send: Instant,
    /// When the last packet arrived on this path (drives the ACK delay).
    pub last_received: Instant,
    /// Packets acknowledged after one before it is declared lost (the dupACK threshold).
    packet_threshold: u64,
    /// Bytes acknowledged on the path (for delivery-rate samples).
    delivered: u64,
    delivered_time: Instant,
    /// Send time of the newest acknowledged packet (see [`SentPacket::first_sent`]).
    first_sent_time: Instant,
    pub stats: PathStats,
    /// `loss_timeout`'s last answer (asked several times per event; its Duration arithmetic
    /// showed in profiles). What it depends on — `sent`, `rtt`, `largest_acked`, `pto_count` —
    /// changes only in `on_sent`, `on_ack` and `on_timer`, which clear it.
    loss_timeout_cache: Cell<Option<Option<Instant>>>,
    /// This end may send on the path: the client opened it, or the server received a valid
    /// packet on it (a real runtime can only address a path whose peer address it has seen).
    pub heard: bool,
    /// A failed path's next PING probe, and the interval after it.
    probe_due: Option<Instant>,
    probe_interval: Duration,
    /// A PING probe should go out on this (failed) path.
    pub probe_pending: bool,
    /// The peer probed this path: its next ACK goes on this path only (PROTOCOL.md §12.2).
    pub ack_here: bool,
    /// Path MTU discovery (RFC 8899); the connection sets it up (`Connection::new_pmtu`).
    pub pmtu: super::pmtu::Pmtu,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct PathStats {
    pub state: PathState,
    /// Times the path was declared failed, and times it came back.
    pub failures: u64,
    pub recoveries: u64,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_lost: u64,
    pub packets_acked: u64,
    /// Of `packets_lost`, those declared by the packet or time threshold (RFC 9002 §6.1; what
    /// sets off TCP's fast retransmit) rather than by a probe timeout.
    pub fast_losses: u64,
    /// Probe timeouts (RFC 9002 §6.2), each collapsing the window.
    pub timeouts: u64,
    /// Source symbols sent again on this path (the retransmitting modes).
    pub retransmissions: u64,
    /// Fast-recovery episodes, where the congestion controller counts them (`newreno-ns3`).
    pub fast_recoveries: Option<u64>,
}

impl Path {
    pub fn new(id: u8, cc: Box<dyn CongestionController>, now: Instant, heard: bool) -> Path {
        Path {
            id,
            next_number: 0,
            sent: BTreeMap::new(),
            in_flight: 0,
            rtt: RttEstimator::default(),
            cc,
            loss: LossEstimator::new(1.0 / 64.0),
            loss_long: LossEstimator::new(1.0 / 512.0),
            received: Vec::new(),
            largest_received_at: None,
            ack_pending: false,
            unacked_eliciting: 0,
            largest_acked: None,
            pto_count: 0,
            next_send: now,
            last_received: now,
            packet_threshold: PACKET_THRESHOLD,
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            stats: PathStats::default(),
            loss_timeout_cache: Cell::new(None),
            heard,
            probe_due: None,
            probe_interval: Duration::ZERO,
            probe_pending: false,
            ack_here: false,
            pmtu: super::pmtu::Pmtu::new(1280, 1280),
        }
    }

    pub fn state(&self) -> PathState {
        self.stats.state
    }

    /// This end may put data on the path.
    pub fn can_send(&self) -> bool {
        self.heard && self.stats.state == PathState::Active
    }

    /// Declares the path failed: whatever is still in flight is returned as lost (for the
    /// blocks to cover elsewhere), and PING probes start after one more PTO.
    pub fn fail(&mut self, now: Instant) -> Vec<SentPacket> {
        self.probe_interval = self.pto_base().min(MAX_PROBE_INTERVAL);
        self.probe_due = Some(now + self.probe_interval);
        self.stats.state = PathState::Failed;
        self.stats.failures += 1;
        self.take_in_flight()
    }

    /// Removes the path for good; what was in flight is returned as lost.
    pub fn remove(&mut self) -> Vec<SentPacket> {
        self.stats.state = PathState::Removed;
        self.probe_due = None;
        self.probe_pending = false;
        self.ack_pending = false;
        self.take_in_flight()
    }

    /// The peer's address on this path changed and the new one is proven (see
    /// `Connection::on_peer_address_validated`): what is in flight went to the old address or
    /// was held back, so it is returned as lost and the probe timer starts over unbacked-off. A
    /// failed path is probed at once instead (its probes went to the old address too).
    pub fn readdressed(&mut self, now: Instant) -> Vec<SentPacket> {
        self.pto_count = 0;
        match self.stats.state {
            PathState::Active => self.take_in_flight(),
            PathState::Failed => {
                self.loss_timeout_cache.set(None);
                self.probe_due = Some(now);
                Vec::new()
            }
            PathState::Removed => Vec::new(),
        }
    }

    fn take_in_flight(&mut self) -> Vec<SentPacket> {
        self.loss_timeout_cache.set(None);
        self.in_flight = 0;
        let lost: Vec<SentPacket> = std::mem::take(&mut self.sent).into_values().collect();
        self.stats.packets_lost += lost.len() as u64;
        lost
    }

    /// When a failed path's next probe is due.
    pub fn probe_due(&self) -> Option<Instant> {
        self.probe_due.filter(|_| self.stats.state == PathState::Failed)
    }

    /// The probe timer fired: a PING goes out, the next one after twice the interval (capped).
    pub fn on_probe_timer(&mut self, now: Instant) {
        if self.probe_due().is_some_and(|t| t <= now) {
            self.probe_pending = true;
            self.probe_interval = (self.probe_interval * 2).min(MAX_PROBE_INTERVAL);
            self.probe_due = Some(now + self.probe_interval);
            // Unanswered probes are kept for a late ACK, but not without bound.
            while self.sent.len() >= MAX_PROBES_KEPT {
                if let Some((_, old)) = self.sent.pop_first() {
                    self.in_flight = self.in_flight.saturating_sub(old.size);
                }
            }
        }
    }

    /// Whether `ack` acknowledges any packet still awaiting one.
    pub fn acks_any(&self, ack: &AckFrame) -> bool {
        ack.ranges.iter().any(|r| self.sent.range(r.start..=r.end).next().is_some())
    }

    /// A failed path answered a probe with `ack`: it returns with a fresh congestion controller
    /// and RTT estimate (the path may have changed while it was down; the probe's ACK, processed
    /// next, gives the first RTT sample). Earlier probes that `ack` does not cover are
    /// forgotten, so they cannot count as losses against the new controller. Packet numbers go
    /// on.
    pub fn revive(&mut self, now: Instant, cc: Box<dyn CongestionController>, ack: &AckFrame) {
        self.loss_timeout_cache.set(None);
        let covered = |n: u64| ack.ranges.iter().any(|r| r.start <= n && n <= r.end);
        self.sent.retain(|&n, _| covered(n));
        self.in_flight = self.sent.values().filter(|p| p.ack_eliciting).map(|p| p.size).sum();
        self.cc = cc;
        self.rtt = RttEstimator::default();
        self.loss = LossEstimator::new(1.0 / 64.0);
        self.pto_count = 0;
        self.next_send = now;
        self.delivered_time = now;
        self.first_sent_time = now;
        self.probe_due = None;
        self.probe_pending = false;
        self.stats.state = PathState::Active;
        self.stats.recoveries += 1;
    }

    /// RFC 9002 §6.2.1's PTO before backoff (see `compute_loss_timeout`).
    pub(super) fn pto_base(&self) -> Duration {
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

    /// Room in the congestion window.
    pub fn window_room(&self) -> u64 {
        self.cc.window().saturating_sub(self.in_flight)
    }

    /// Bytes per second the pacer lets out: the controller's own rate, else a window spread
    /// over the smoothed RTT (RFC 9002 §7.7, gain 1.25).
    pub fn pacing_rate(&self) -> u64 {
        self.cc.pacing_rate(&self.rtt).unwrap_or_else(|| {
            let srtt = self.rtt.smoothed().as_secs_f64().max(1e-3);
            (1.25 * self.cc.window() as f64 / srtt) as u64
        })
    }

    pub fn on_sent(&mut self, now: Instant, number: u64, mut packet: SentPacket) {
        self.loss_timeout_cache.set(None);
        packet.delivered = self.delivered;
        packet.delivered_time = self.delivered_time;
        packet.first_sent = self.first_sent_time;
        if packet.ack_eliciting {
            self.in_flight += packet.size;
            self.cc.on_sent(now, packet.size, self.in_flight);
        }
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += packet.size;
        let rate = self.pacing_rate();
        let gap = Duration::from_secs_f64(packet.size as f64 / rate.max(1) as f64);
        self.next_send = self.next_send.max(now - Duration::from_millis(1)) + gap;
        // Packets that elicit no ACK (ACK-only) are never acknowledged on their own; keeping
        // them would grow `sent` without bound.
        if packet.ack_eliciting {
            self.sent.insert(number, packet);
        }
    }

    /// Records a received packet number; returns false for a duplicate.
    pub fn on_received(&mut self, now: Instant, number: u64, ack_eliciting: bool) -> bool {
        // `received` is kept disjoint, non-adjacent and highest first, so the number goes in
        // place: extend the range just above or below it (or join the two), else a new range.
        let below = self.received.iter().position(|r| r.end < number).unwrap_or(self.received.len());
        if below > 0 && self.received[below - 1].start <= number {
            return false;
        }
        self.last_received = now;
        if below == 0 {
            self.largest_received_at = Some(now);
        }
        let joins_above = below > 0 && self.received[below - 1].start == number + 1;
        let joins_below = self.received.get(below).is_some_and(|r| r.end + 1 == number);
        match (joins_above, joins_below) {
            (true, true) => {
                self.received[below - 1].start = self.received[below].start;
                self.received.remove(below);
            }
            (true, false) => self.received[below - 1].start = number,
            (false, true) => self.received[below].end = number,
            (false, false) => self.received.insert(below, AckRange { start: number, end: number }),
        }
        self.received.truncate(MAX_RANGES);
        self.ack_pending |= ack_eliciting;
        self.unacked_eliciting += u32::from(ack_eliciting);
        true
    }

    /// The ACK frame `write_ack` would write (tests only: its ranges are leaked).
    #[cfg(test)]
    pub fn ack_frame(&mut self, now: Instant) -> Option<AckFrame<'static>> {
        if self.received.is_empty() {
            return None;
        }
        self.ack_pending = false;
        self.ack_here = false;
        self.unacked_eliciting = 0;
        let delay = self.largest_received_at.map_or(Duration::ZERO, |t| now - t);
        Some(AckFrame {
            path: self.id,
            ack_delay_us: delay.as_micros() as u64,
            ranges: tests::leak(self.received.clone()),
        })
    }

    /// Writes this path's ACK frame with at most `max_ranges` ranges, like
    /// `Frame::Ack(self.ack_frame(now))` with its ranges truncated, without building the frame.
    /// Returns false (writing nothing) when nothing was received yet.
    pub fn write_ack(&mut self, now: Instant, max_ranges: usize, w: &mut Writer<'_>) -> bool {
        if self.received.is_empty() {
            return false;
        }
        self.ack_pending = false;
        self.ack_here = false;
        self.unacked_eliciting = 0;
        let delay = self.largest_received_at.map_or(Duration::ZERO, |t| now - t);
        let ranges = &self.received[..self.received.len().min(max_ranges)];
        write_ack(w, self.id, delay.as_micros() as u64, ranges).expect("received ranges are valid");
        true
    }

    /// Processes an ACK for this path's packets.
    pub fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> AckOutcome {
        self.loss_timeout_cache.set(None);
        let mut outcome = AckOutcome::default();
        let Some(largest) = ack.ranges.first().map(|r| r.end) else { return outcome };
        let mut newly_acked_bytes = 0;
        let mut largest_sent = None;
        let mut rate_base: Option<(u64, Instant, Instant, Instant)> = None;
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
                }
                if largest_sent.is_none_or(|t| packet.time > t) {
                    rate_base =
                        Some((packet.delivered, packet.delivered_time, packet.first_sent, packet.time));
                }
                largest_sent = largest_sent.max(Some(packet.time));
                self.loss.sample(false);
                self.loss_long.sample(false);
                self.stats.packets_acked += 1;
                outcome.acked.push(packet);
            }
        }
        if outcome.acked.is_empty() {
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
            },
            &self.rtt,
        );
        self.detect_lost(now, &mut outcome.lost);
        outcome
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
    use super::*;
    use crate::wire::AckRanges;

    /// Test ACK frames own their ranges by leaking them.
    pub(super) fn leak(ranges: Vec<AckRange>) -> AckRanges<'static> {
        AckRanges::from(&*Box::leak(ranges.into_boxed_slice()))
    }
    use crate::cc::CcAlgorithm;

    fn packet(t: u64) -> SentPacket {
        SentPacket {
            number: t,
            time: Instant::from_micros(t),
            size: 1000,
            ack_eliciting: true,
            symbols: Vec::new(),
            window_update: false,
            abandons: 0,
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent: Instant::ZERO,
            datagrams: None,
        }
    }

    /// A failed path hands back what was in flight, sends no data (no loss timer), probes at a
    /// doubling interval capped at `MAX_PROBE_INTERVAL`, keeps a bounded number of probes, and
    /// comes back with a fresh RTT estimate.
    #[test]
    fn failed_path_probes_back_off_and_revive_resets_estimates() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        for n in 0..4 {
            p.on_sent(Instant::from_micros(n * 10), n, packet(n * 10));
        }
        let ack = AckFrame { path: 0, ack_delay_us: 0, ranges: leak(vec![AckRange { start: 0, end: 0 }]) };
        p.on_ack(Instant::from_micros(50_000), &ack);
        let lost = p.fail(Instant::from_micros(100_000));
        assert_eq!((lost.len(), p.in_flight, p.state()), (3, 0, PathState::Failed));
        assert!(!p.can_send() && p.loss_timeout().is_none());
        let mut due = p.probe_due().unwrap();
        let mut gaps = Vec::new();
        let mut last_probe = due;
        for n in 4..24u64 {
            p.on_probe_timer(due - Duration::from_micros(1));
            assert!(!p.probe_pending, "probe before it was due");
            p.on_probe_timer(due);
            assert!(p.probe_pending);
            p.probe_pending = false;
            p.on_sent(due, n, packet(due.as_micros()));
            last_probe = due;
            let next = p.probe_due().unwrap();
            gaps.push(next - due);
            due = next;
        }
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
        assert_eq!(*gaps.last().unwrap(), MAX_PROBE_INTERVAL);
        assert!(p.sent.len() <= MAX_PROBES_KEPT);
        let newest = p.sent.last_key_value().map(|(&n, _)| n).unwrap();
        let ack = AckFrame {
            path: 0,
            ack_delay_us: 0,
            ranges: leak(vec![AckRange { start: newest, end: newest }]),
        };
        assert!(p.acks_any(&ack));
        p.revive(last_probe, CcAlgorithm::NewReno.build(1200), &ack);
        assert_eq!((p.sent.len(), p.in_flight), (1, 1000), "earlier probes are forgotten");
        assert_eq!((p.state(), p.stats.recoveries, p.pto_count), (PathState::Active, 1, 0));
        assert!(!p.rtt.has_sample());
        let out = p.on_ack(last_probe + Duration::from_millis(40), &ack);
        assert_eq!((out.acked.len(), out.lost.len(), p.in_flight), (1, 0, 0));
        assert_eq!(p.rtt.smoothed(), Duration::from_millis(40));
        assert!(p.probe_due().is_none());
    }

    #[test]
    fn ack_ranges_merge_and_detect_duplicates() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        for n in [0, 1, 2, 5, 7, 6, 9] {
            assert!(p.on_received(Instant::ZERO, n, true));
        }
        assert!(!p.on_received(Instant::ZERO, 6, true));
        let ack = p.ack_frame(Instant::ZERO).unwrap();
        let ranges: Vec<(u64, u64)> = ack.ranges.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(ranges, vec![(9, 9), (5, 7), (0, 2)]);
    }

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
    fn ranges_updated_in_place_match_a_sort_and_merge() {
        // The reference: append, sort highest first, merge, keep MAX_RANGES.
        fn reference(ranges: &mut Vec<AckRange>, n: u64) -> bool {
            if ranges.iter().any(|r| r.start <= n && n <= r.end) {
                return false;
            }
            ranges.push(AckRange { start: n, end: n });
            ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
            let mut merged: Vec<AckRange> = Vec::new();
            for r in ranges.drain(..) {
                match merged.last_mut() {
                    Some(last) if r.end + 1 >= last.start => last.start = last.start.min(r.start),
                    _ => merged.push(r),
                }
            }
            merged.truncate(MAX_RANGES);
            *ranges = merged;
            true
        }
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        let mut expected = Vec::new();
        let mut x = 7u64;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Mostly ascending with holes, some reordering and duplicates.
            let n = (i + (x >> 60)).saturating_sub((x >> 40) & 7) / 2;
            assert_eq!(p.on_received(Instant::ZERO, n, true), reference(&mut expected, n), "packet {n}");
            assert_eq!(p.received, expected);
        }
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
}
