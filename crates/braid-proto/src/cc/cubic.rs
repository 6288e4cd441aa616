//! CUBIC (RFC 9438), byte-counted, with the Reno-friendly region and fast convergence.

use std::time::Duration;

use super::window::{AckPhase, LossWindow};
use super::{secs, Ack, Congestion, CongestionController, RttEstimator};
use crate::Instant;

/// RFC 9438 §4.6: β_cubic.
const BETA: f64 = 0.7;
/// RFC 9438 §4.2: C.
const C: f64 = 0.4;

#[derive(Debug, Clone)]
pub struct Cubic {
    w: LossWindow,
    /// Window before the last reduction, in MSS (W_max).
    w_max: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Instant>,
    /// Time for the cubic function to return to W_max (K), seconds.
    k: f64,
    /// Reno-friendly estimate (W_est), in MSS.
    w_est: f64,
    /// Sub-MSS growth carried between ACKs, in bytes.
    carry: f64,
}

impl Cubic {
    pub fn new(mss: u64) -> Cubic {
        Cubic { w: LossWindow::new(mss), w_max: 0.0, epoch_start: None, k: 0.0, w_est: 0.0, carry: 0.0 }
    }

    fn window_mss(&self) -> f64 {
        self.w.window as f64 / self.w.mss as f64
    }
}

impl CongestionController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn window(&self) -> u64 {
        self.w.window
    }

    fn set_initial_window(&mut self, bytes: u64) {
        self.w.window = bytes.max(super::minimum_window(self.w.mss));
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        if self.w.on_ack(ack, rtt) != AckPhase::Avoidance {
            return;
        }
        let cwnd = self.window_mss();
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 §4.2, Eq. 2: K = cbrt(W_max (1 − β) / C); when growing past W_max
            // without a loss, K = 0.
            self.k = if self.w_max > cwnd { ((self.w_max - cwnd) / C).cbrt() } else { 0.0 };
            if self.w_max < cwnd {
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            ack.now
        });
        let t = secs(ack.now.saturating_duration_since(epoch));
        let rtt_s = secs(rtt.smoothed().max(Duration::from_millis(1)));
        // Eq. 1, evaluated one RTT ahead (§4.2): W_cubic(t + RTT).
        let target = C * (t + rtt_s - self.k).powi(3) + self.w_max;
        // §4.3 Reno-friendly region, Eq. 4: W_est += α·(segments acked / cwnd) with
        // α_cubic = 3(1 − β)/(1 + β), so CUBIC is never slower than Reno would be.
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * (ack.bytes as f64 / self.w.mss as f64) / cwnd;
        let goal = target.max(self.w_est).min(1.5 * cwnd);
        if goal > cwnd {
            // §4.4: grow by (target − cwnd)/cwnd MSS per MSS acknowledged.
            self.carry += (goal - cwnd) / cwnd * ack.bytes as f64;
            let whole = self.carry.floor();
            self.w.grow(whole as u64);
            self.carry -= whole;
        }
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion) {
        let Some(factor) = self.w.reduction(sent, signal, BETA) else { return };
        let cwnd = self.window_mss();
        // RFC 9438 §4.7 fast convergence: release bandwidth for new flows.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + factor) / 2.0 } else { cwnd };
        self.w.reduce(now, factor);
        self.epoch_start = None;
        self.carry = 0.0;
    }

    fn on_timeout(&mut self, now: Instant) {
        self.w_max = self.window_mss();
        self.w.collapse(now, BETA);
        self.epoch_start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_by_beta_and_regrows_to_w_max_around_k() {
        let mss = 1000;
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        let mut cc = Cubic::new(mss);
        // Slow start to 100 MSS, then a loss.
        cc.on_ack(
            &Ack {
                now: Instant::ZERO,
                bytes: 90_000,
                largest_sent: Instant::ZERO,
                in_flight: 0,
                delivery_rate: None,
                rtt_sample: true,
            },
            &rtt,
        );
        assert_eq!(cc.window(), 100_000);
        cc.on_congestion(Instant::from_micros(1), Instant::from_micros(1), Congestion::Loss);
        assert_eq!(cc.window(), 70_000);
        // K = cbrt(100 · 0.3 / 0.4) ≈ 4.22 s. Feed one window of ACKs per RTT for 5 s.
        let mut now = Instant::from_micros(2);
        let mut at_k = 0;
        for round in 0..50 {
            now += Duration::from_millis(100);
            let w = cc.window();
            for _ in 0..(w / mss) {
                cc.on_ack(
                    &Ack {
                        now,
                        bytes: mss,
                        largest_sent: now,
                        in_flight: 0,
                        delivery_rate: None,
                        rtt_sample: true,
                    },
                    &rtt,
                );
            }
            if round == 41 {
                at_k = cc.window();
            }
        }
        // Near K the window is back near W_max (100 MSS), concave approach.
        assert!((95_000..=106_000).contains(&at_k), "window at K: {at_k}");
        // And past K it keeps growing (convex region).
        assert!(cc.window() > at_k);
    }
}
