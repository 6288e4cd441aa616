//! What the loss-based controllers share: the window, slow start (with HyStart++), and
//! RFC 6582's rule of one reduction per round trip.

use super::hystart::HyStart;
use super::{initial_window, minimum_window, Ack, Congestion, RttEstimator, MAXIMUM_WINDOW};
use crate::Instant;

/// What an ACK means for a loss-based controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AckPhase {
    /// It acknowledges a packet sent before the last reduction: ignore it.
    Recovery,
    /// Slow start grew the window already.
    SlowStart,
    /// Congestion avoidance: the controller's own growth rule applies.
    Avoidance,
}

#[derive(Debug, Clone)]
pub(crate) struct LossWindow {
    pub mss: u64,
    pub window: u64,
    pub ssthresh: u64,
    /// Losses of packets sent before this instant belong to the current recovery period.
    recovery_start: Option<Instant>,
    hystart: HyStart,
}

impl LossWindow {
    pub(crate) fn new(mss: u64) -> LossWindow {
        LossWindow {
            mss,
            window: initial_window(mss),
            ssthresh: u64::MAX,
            recovery_start: None,
            hystart: HyStart::default(),
        }
    }

    pub(crate) fn in_recovery(&self, sent: Instant) -> bool {
        self.recovery_start.is_some_and(|start| sent <= start)
    }

    /// Slow start: one MSS per MSS acknowledged (RFC 5681 §3.1, byte counting), left early when
    /// HyStart++ sees the RTT rise.
    pub(crate) fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) -> AckPhase {
        if self.in_recovery(ack.largest_sent) {
            return AckPhase::Recovery;
        }
        if self.window < self.ssthresh && self.hystart.on_rtt(ack.now, ack.largest_sent, rtt.latest()) {
            self.ssthresh = self.window;
        }
        if self.window < self.ssthresh {
            self.grow(ack.bytes);
            return AckPhase::SlowStart;
        }
        AckPhase::Avoidance
    }

    /// Opens the window by `bytes`, up to [`MAXIMUM_WINDOW`].
    pub(crate) fn grow(&mut self, bytes: u64) {
        self.window = self.window.saturating_add(bytes).min(MAXIMUM_WINDOW);
    }

    /// The factor a congestion signal for a packet sent at `sent` calls for: `loss` (the
    /// controller's own) for a loss, the mode's for a repaired loss; `None` inside a recovery
    /// period, which reacts once per round trip (RFC 6582 §3.2).
    pub(crate) fn reduction(&self, sent: Instant, signal: Congestion, loss: f64) -> Option<f64> {
        if self.in_recovery(sent) {
            return None;
        }
        Some(match signal {
            Congestion::Loss => loss,
            Congestion::Repaired { factor } => factor,
        })
    }

    /// window ← factor × window (at least the minimum), ssthresh ← window, and a new recovery
    /// period starts.
    pub(crate) fn reduce(&mut self, now: Instant, factor: f64) {
        self.recovery_start = Some(now);
        self.window = ((self.window as f64 * factor).round() as u64).max(minimum_window(self.mss));
        self.ssthresh = self.window;
    }

    /// Persistent congestion (RFC 5681 §3.1): ssthresh ← factor × window, window ← minimum.
    pub(crate) fn collapse(&mut self, now: Instant, factor: f64) {
        self.ssthresh = ((self.window as f64 * factor) as u64).max(minimum_window(self.mss));
        self.window = minimum_window(self.mss);
        self.recovery_start = Some(now);
    }
}
