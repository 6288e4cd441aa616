//! NewReno (RFC 5681 slow start and congestion avoidance, RFC 6582 recovery), byte-counted.

use super::window::{AckPhase, LossWindow};
use super::{Ack, Congestion, CongestionController, RttEstimator};
use crate::Instant;

#[derive(Debug, Clone)]
pub struct NewReno {
    w: LossWindow,
    /// Bytes acknowledged in congestion avoidance since the window last grew by one MSS.
    acked_in_avoidance: u64,
}

impl NewReno {
    pub fn new(mss: u64) -> NewReno {
        NewReno { w: LossWindow::new(mss), acked_in_avoidance: 0 }
    }
}

impl CongestionController for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn window(&self) -> u64 {
        self.w.window
    }

    fn set_initial_window(&mut self, bytes: u64) {
        self.w.window = bytes.max(super::minimum_window(self.w.mss));
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        if self.w.on_ack(ack, rtt) == AckPhase::Avoidance {
            // Congestion avoidance: one MSS per window acknowledged.
            self.acked_in_avoidance += ack.bytes;
            if self.acked_in_avoidance >= self.w.window {
                self.acked_in_avoidance -= self.w.window;
                self.w.grow(self.w.mss);
            }
        }
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion) {
        let Some(factor) = self.w.reduction(sent, signal, 0.5) else { return };
        self.w.reduce(now, factor);
        self.acked_in_avoidance = 0;
    }

    fn on_timeout(&mut self, now: Instant) {
        self.w.collapse(now, 0.5);
        self.acked_in_avoidance = 0;
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now: u64, bytes: u64, sent: u64) -> Ack {
        Ack {
            now: Instant::from_micros(now),
            bytes,
            largest_sent: Instant::from_micros(sent),
            in_flight: 0,
            delivery_rate: None,
            rtt_sample: true,
        }
    }

    #[test]
    fn slow_start_then_avoidance_then_one_reduction_per_round() {
        let rtt = RttEstimator::default();
        let mut cc = NewReno::new(1000);
        assert_eq!(cc.window(), 10_000);
        cc.on_ack(&ack(10, 10_000, 5), &rtt);
        assert_eq!(cc.window(), 20_000);
        cc.on_congestion(Instant::from_micros(20), Instant::from_micros(15), Congestion::Loss);
        assert_eq!(cc.window(), 10_000);
        // A second loss from the same flight does not reduce again.
        cc.on_congestion(Instant::from_micros(21), Instant::from_micros(16), Congestion::Loss);
        assert_eq!(cc.window(), 10_000);
        // ACKs of packets sent before the reduction do not grow the window.
        cc.on_ack(&ack(22, 5_000, 19), &rtt);
        assert_eq!(cc.window(), 10_000);
        // Congestion avoidance: +1 MSS per window of ACKs.
        cc.on_ack(&ack(30, 9_999, 25), &rtt);
        assert_eq!(cc.window(), 10_000);
        cc.on_ack(&ack(31, 1, 26), &rtt);
        assert_eq!(cc.window(), 11_000);
        // Sato et al.'s repaired-loss reduction uses the mode's factor.
        cc.on_congestion(
            Instant::from_micros(40),
            Instant::from_micros(35),
            Congestion::Repaired { factor: 0.7 },
        );
        assert_eq!(cc.window(), 7_700);
        cc.on_timeout(Instant::from_micros(50));
        assert_eq!(cc.window(), 2_000);
    }
}
