//! LIA, the Linked Increases Algorithm (RFC 6356): MPTCP's coupled congestion control, for
//! paths that may share a bottleneck.
//!
//! Slow start, the reduction on loss (halving, as NewReno) and the timeout are each path's own,
//! unchanged (RFC 6356 §3: "the algorithm only applies to the increase phase of the congestion
//! avoidance state"). In congestion avoidance an ACK of `bytes_acked` on path i grows its window
//! by
//!
//! ```text
//! min(alpha · bytes_acked · MSS_i / cwnd_total, bytes_acked · MSS_i / cwnd_i)      (RFC 6356 §3)
//! alpha = cwnd_total · max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²
//! ```
//!
//! so the connection takes no more than one TCP would on its best path (goal 2), and moves its
//! traffic off the more congested paths (goal 3). The sums need every path's window and RTT:
//! the connection hands them over before each ACK as an [`Aggregate`].

use super::window::{AckPhase, LossWindow};
use super::{Ack, Aggregate, Congestion, CongestionController, RttEstimator};
use crate::Instant;

#[derive(Debug, Clone)]
pub struct Lia {
    w: LossWindow,
    /// The connection's paths as last reported (this one included).
    all: Aggregate,
    /// Sub-byte growth carried between ACKs.
    carry: f64,
}

impl Lia {
    pub fn new(mss: u64) -> Lia {
        Lia { w: LossWindow::new(mss), all: Aggregate::default(), carry: 0.0 }
    }

    /// RFC 6356 §3's alpha over `all` (1 with a single path: plain NewReno's increase).
    pub fn alpha(all: &Aggregate) -> f64 {
        let total: f64 = all.iter().map(|(w, _)| w as f64).sum();
        let rtt = |r: std::time::Duration| r.as_secs_f64().max(1e-6);
        let best = all.iter().map(|(w, r)| w as f64 / (rtt(r) * rtt(r))).fold(0.0, f64::max);
        let sum: f64 = all.iter().map(|(w, r)| w as f64 / rtt(r)).sum();
        if sum <= 0.0 {
            return 1.0;
        }
        total * best / (sum * sum)
    }

    /// The increase, in bytes, RFC 6356 §3 gives an ACK of `bytes_acked` on a path whose window
    /// is `cwnd`, with the connection's paths `all`.
    pub fn increase(all: &Aggregate, cwnd: u64, mss: u64, bytes_acked: u64) -> f64 {
        let total: f64 = all.iter().map(|(w, _)| w as f64).sum::<f64>().max(cwnd as f64).max(1.0);
        let coupled = Self::alpha(all) * bytes_acked as f64 * mss as f64 / total;
        let uncoupled = bytes_acked as f64 * mss as f64 / (cwnd.max(1)) as f64;
        coupled.min(uncoupled)
    }
}

impl CongestionController for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn window(&self) -> u64 {
        self.w.window
    }

    fn set_initial_window(&mut self, bytes: u64) {
        self.w.window = bytes.max(super::minimum_window(self.w.mss));
    }

    fn coupled(&self) -> bool {
        true
    }

    fn on_aggregate(&mut self, all: &Aggregate) {
        self.all = *all;
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        if self.w.on_ack(ack, rtt) != AckPhase::Avoidance {
            return;
        }
        // Before the connection reported any aggregate: this path alone.
        let mut all = self.all;
        if all.is_empty() {
            all.push(self.w.window, rtt.smoothed());
        }
        self.carry += Self::increase(&all, self.w.window, self.w.mss, ack.bytes);
        let whole = self.carry.floor();
        self.w.grow(whole as u64);
        self.carry -= whole;
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion) {
        let Some(factor) = self.w.reduction(sent, signal, 0.5) else { return };
        self.w.reduce(now, factor);
        self.carry = 0.0;
    }

    fn on_timeout(&mut self, now: Instant) {
        self.w.collapse(now, 0.5);
        self.carry = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MSS: u64 = 1000;

    fn paths(list: &[(u64, u64)]) -> Aggregate {
        let mut all = Aggregate::default();
        for &(w, rtt_ms) in list {
            all.push(w, Duration::from_millis(rtt_ms));
        }
        all
    }

    #[test]
    fn increase_follows_rfc_6356_formula() {
        // Path 0: 20 MSS at 100 ms; path 1: 10 MSS at 50 ms.
        let all = paths(&[(20_000, 100), (10_000, 50)]);
        // By hand: cwnd_total = 30 000; cwnd/rtt² = 2e6 and 4e6 → max 4e6;
        // Σ cwnd/rtt = 200 000 + 200 000 = 400 000; alpha = 30 000 · 4e6 / 1.6e11 = 0.75.
        assert!((Lia::alpha(&all) - 0.75).abs() < 1e-9, "{}", Lia::alpha(&all));
        // An MSS acknowledged on path 0: min(0.75 · 1000 · 1000 / 30 000, 1000 · 1000 / 20 000)
        // = min(25, 50) = 25 bytes.
        assert!((Lia::increase(&all, 20_000, MSS, MSS) - 25.0).abs() < 1e-9);
        // On path 1: min(25, 100) = 25 bytes — the same coupled step on every path.
        assert!((Lia::increase(&all, 10_000, MSS, MSS) - 25.0).abs() < 1e-9);
        // The cap: a path far smaller than the others never grows faster than Reno would.
        let skewed = paths(&[(100_000, 10), (2_000, 1_000)]);
        let reno = MSS as f64 * MSS as f64 / 2_000.0;
        assert!(Lia::increase(&skewed, 2_000, MSS, MSS) <= reno + 1e-9);
        // Two equal paths: alpha = 1/2, each grows a quarter of Reno's step (together half:
        // RFC 6356 goal 2, no more than one TCP over the pair).
        let equal = paths(&[(10_000, 100), (10_000, 100)]);
        assert!((Lia::alpha(&equal) - 0.5).abs() < 1e-9);
        assert!((Lia::increase(&equal, 10_000, MSS, MSS) - 25.0).abs() < 1e-9);
        // One path: alpha = 1, exactly NewReno's MSS²/cwnd.
        let one = paths(&[(10_000, 100)]);
        assert!((Lia::alpha(&one) - 1.0).abs() < 1e-9);
        assert!((Lia::increase(&one, 10_000, MSS, MSS) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn coupled_avoidance_grows_by_the_linked_step_and_halves_on_loss() {
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        let mut cc = Lia::new(MSS);
        let ack = |now: u64, bytes| Ack {
            now: Instant::from_micros(now),
            bytes,
            largest_sent: Instant::from_micros(now),
            in_flight: 0,
            delivery_rate: None,
            rtt_sample: true,
        };
        // Leave slow start with a loss at 20 MSS → 10 MSS.
        cc.on_ack(&ack(1, 10_000), &rtt);
        assert_eq!(cc.window(), 20_000);
        cc.on_congestion(Instant::from_micros(2), Instant::from_micros(2), Congestion::Loss);
        assert_eq!(cc.window(), 10_000);
        // Coupled with an equal second path: a window of ACKs grows it by a quarter MSS, where
        // NewReno alone would add a whole one.
        cc.on_aggregate(&paths(&[(10_000, 100), (10_000, 100)]));
        for i in 0..10 {
            cc.on_ack(&ack(10 + i, MSS), &rtt);
        }
        // (10 × 25 bytes, less what floating point leaves in the carry.)
        assert!((10_249..=10_250).contains(&cc.window()), "{}", cc.window());
        // Alone again: about NewReno's MSS per window (a little less, as the window grows
        // within it).
        cc.on_aggregate(&paths(&[(10_250, 100)]));
        let before = cc.window();
        for i in 0..10 {
            cc.on_ack(&ack(100 + i, MSS), &rtt);
        }
        assert!((cc.window() - before).abs_diff(MSS) < 80, "{} → {}", before, cc.window());
        cc.on_timeout(Instant::from_micros(1_000));
        assert_eq!(cc.window(), 2 * MSS);
        assert_eq!("LIA".parse::<super::super::CcAlgorithm>(), Ok(super::super::CcAlgorithm::Lia));
    }
}
