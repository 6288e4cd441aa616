//! A path's life (PROTOCOL.md §12): declared failed when it stops answering, probed at a
//! backed-off interval while failed, revived by an ACK of a probe, removed for good, and its
//! flight handed back when the peer's address changes.

use std::time::Duration;

use super::recovery::LossEstimator;
use super::{Path, PathState, SentPacket};
use crate::cc::{CongestionController, RttEstimator};
use crate::wire::AckFrame;
use crate::Instant;

/// Consecutive probe timeouts without an ACK after which a path is declared failed (a dead path
/// shows as no ACK for a few RTOs). With the PTO's doubling that is about 7 PTOs of silence.
pub(crate) const FAIL_AFTER_PTOS: u32 = 3;
/// A failed path's PING probes back off from its PTO up to this interval.
const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Probes of a failed path kept awaiting an ACK (older ones are forgotten).
const MAX_PROBES_KEPT: usize = 8;

impl Path {
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

    /// The peer's address on this path changed, or the new one was proven (see
    /// `Connection::on_peer_address_changed`): what is in flight went to the old address or
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
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{leak, packet};
    use super::*;
    use crate::cc::CcAlgorithm;
    use crate::wire::AckRange;

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
}
