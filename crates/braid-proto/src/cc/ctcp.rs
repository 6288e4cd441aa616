//! CTCP's token-based congestion control (Kim, Médard et al., "Network Coded TCP (CTCP)"),
//! with its loss estimators.
//!
//! - [`CtcpEstimate`] is CTCP Algorithm 1's per-path loss estimate: short- and long-term
//!   averages `p` and `p_long` of the 0/1 loss sequence, with the multi-loss update for an ACK
//!   that reveals `losses` lost packets, and the long-term deviation `p_stdlong`. (Algorithm 1's
//!   RTT EWMA is the path's smoothed RTT, [`RttEstimator`].)
//! - [`CtcpTokens`] is CTCP Algorithm 2: tokens instead of a congestion window (one token lets
//!   one packet, coded or not, go out; the window is `tokens × MSS`), slow start, then a
//!   Vegas-like avoidance on the ratio of the base RTT to the latest sample, a reduction
//!   when the loss rate spikes above its long-term level, and on a timeout half the tokens
//!   become the slow-start threshold and slow start begins again.
//!
//! A loss is not a congestion signal by itself in CTCP (the code repairs it); only a loss
//! *spike* and a timeout are. The paper gives no values for α, β, μ, ν, the initial tokens or
//! the initial threshold; the ones chosen are the constants below (docs/DEVIATIONS.md).

use super::{
    initial_window, minimum_window, Ack, Congestion, CongestionController, RttEstimator, MAXIMUM_WINDOW,
};
use crate::Instant;

/// μ: weight of the short-term loss average `p` (not given by the paper).
pub const MU: f64 = 1.0 / 32.0;
/// ν < μ: weight of the long-term average `p_long` and its deviation (not given by the paper).
pub const NU: f64 = 1.0 / 512.0;
/// Vegas-like avoidance: grow while δ = 1 − RTT/rtt < α (not given by the paper).
pub const ALPHA: f64 = 0.1;
/// … shrink while δ > β (not given by the paper).
pub const BETA: f64 = 0.2;
/// Slow-start threshold after a timeout, as a fraction of the tokens before it: 1, where
/// Algorithm 2 prints tokens / 2. To CTCP a timeout is mostly an ACK outage (loss is the code's,
/// congestion the Vegas rule's and the loss-spike rule's), and from half the tokens the 1/tokens
/// growth took 20–40 s back to a 20 Mbit/s × 100 ms path, where the paper's testbed shows no
/// lasting harm; the Vegas slow-start exit still stops at a queue (DEVIATIONS.md).
const TIMEOUT_THRESHOLD: f64 = 1.0;

/// CTCP Algorithm 1's loss estimates for one path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CtcpEstimate {
    /// Short-term loss rate `p_i`.
    pub p: f64,
    /// Long-term loss rate `p_long_i`.
    pub p_long: f64,
    /// Long-term mean deviation of `p` from `p_long`, `p_stdlong_i`.
    pub p_stdlong: f64,
    mu: f64,
    nu: f64,
}

impl CtcpEstimate {
    /// `mu` > `nu` (the short-term average has the shorter memory).
    pub fn new(mu: f64, nu: f64) -> CtcpEstimate {
        CtcpEstimate { p: 0.0, p_long: 0.0, p_stdlong: 0.0, mu, nu }
    }

    /// One ACK that reveals `losses` lost packets before the acknowledged one (CTCP
    /// Algorithm 1): exponential smoothing over the 0/1 sequence of one success and `losses`
    /// losses, in closed form, p ← p(1−μ)^(losses+1) + (1 − (1−μ)^losses), likewise p_long
    /// with ν, then p_stdlong ← p_stdlong(1−ν) + ν|p − p_long|.
    pub fn on_ack(&mut self, losses: u64) {
        let n = losses.min(i32::MAX as u64) as i32;
        let smooth = |x: f64, w: f64| x * (1.0 - w).powi(n + 1) + (1.0 - (1.0 - w).powi(n));
        self.p = smooth(self.p, self.mu);
        self.p_long = smooth(self.p_long, self.nu);
        self.p_stdlong = self.p_stdlong * (1.0 - self.nu) + self.nu * (self.p - self.p_long).abs();
    }

    /// CTCP Algorithm 2's congestion sign: a large increase of the loss rate,
    /// p > p_long + p_stdlong.
    pub fn spike(&self) -> bool {
        self.p > self.p_long + self.p_stdlong
    }
}

/// CTCP Algorithm 2: the per-path token controller.
#[derive(Debug, Clone)]
pub struct CtcpTokens {
    mss: u64,
    /// Tokens (packets); fractional, as Algorithm 2's ±1/tokens steps make them.
    tokens: f64,
    /// `ss_threshold_i`: slow start ends once tokens exceed it.
    ss_threshold: f64,
    slow_start: bool,
    estimate: CtcpEstimate,
    /// Losses detected since the last ACK was folded into the estimate (Algorithm 1 counts
    /// them with the next ACK).
    pending_losses: u64,
    /// "Any ACKs for packets sent prior to the timeout have no effect" (§III-C).
    timeout_at: Option<Instant>,
    /// A timeout fired and nothing sent after it was acknowledged yet.
    in_timeout: bool,
    /// In the slow start a timeout began, not yet back at the threshold it set.
    regaining: bool,
}

impl CtcpTokens {
    pub fn new(mss: u64) -> CtcpTokens {
        CtcpTokens {
            mss,
            tokens: Self::initial_tokens(mss),
            ss_threshold: f64::INFINITY,
            slow_start: true,
            estimate: CtcpEstimate::new(MU, NU),
            pending_losses: 0,
            timeout_at: None,
            in_timeout: false,
            regaining: false,
        }
    }

    /// "initial token number": RFC 9002's initial window, in packets (the paper gives none).
    fn initial_tokens(mss: u64) -> f64 {
        (initial_window(mss) / mss) as f64
    }

    fn min_tokens(&self) -> f64 {
        (minimum_window(self.mss) / self.mss) as f64
    }

    /// The most tokens: [`MAXIMUM_WINDOW`]'s worth of packets.
    fn max_tokens(&self) -> f64 {
        (MAXIMUM_WINDOW / self.mss).max(1) as f64
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    pub fn estimate(&self) -> &CtcpEstimate {
        &self.estimate
    }

    /// Algorithm 2's response to one acknowledged packet whose RTT sample gave `delta`
    /// (δ = 1 − RTT/rtt).
    fn on_packet_acked(&mut self, delta: f64, losses: u64) {
        self.estimate.on_ack(losses);
        if self.slow_start {
            self.tokens += 1.0;
            // TCP Vegas's own slow-start exit (Brakmo & Peterson §3.3), not in CTCP's
            // Algorithm 2: without it slow start only ends at a timeout (ss_threshold starts
            // unbounded), and tail-drop queues overflow by the whole window. The delay signal
            // lags a round trip in which slow start doubled the tokens: halve them, back to
            // where the queue began to build.
            if delta > BETA {
                self.tokens /= 2.0;
                self.ss_threshold = self.tokens;
                self.slow_start = false;
            } else if self.tokens > self.ss_threshold {
                self.slow_start = false;
            }
            self.regaining &= self.slow_start;
        } else if delta > BETA {
            self.tokens -= 1.0 / self.tokens;
        } else if delta < ALPHA {
            self.tokens += 1.0 / self.tokens;
        }
        if self.estimate.spike() {
            self.tokens -= (self.estimate.p - self.estimate.p_long) / 2.0;
        }
        self.tokens = self.tokens.clamp(self.min_tokens(), self.max_tokens());
    }
}

impl CongestionController for CtcpTokens {
    fn name(&self) -> &'static str {
        "ctcp"
    }

    fn window(&self) -> u64 {
        (self.tokens * self.mss as f64) as u64
    }

    /// Algorithm 2 on an ACK. δ = 1 − RTT/rtt with RTT the path's *minimum* RTT, TCP Vegas's
    /// BaseRTT: the paper writes the short-term average RTT_i, but an average updated on
    /// every ACK follows the samples within a few ACKs, so δ stays near 0 under any standing
    /// queue, slow start never ends and the tokens only stop growing when the queue
    /// overflows (docs/DEVIATIONS.md).
    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        let latest = rtt.latest().as_secs_f64();
        let delta = if latest > 0.0 { 1.0 - rtt.min().as_secs_f64() / latest } else { 0.0 };
        let stale = self.timeout_at.is_some_and(|t| ack.largest_sent < t);
        self.in_timeout &= stale;
        // CTCP's ACKs are per packet; braid's cover `bytes`: one Algorithm 1/2 step per packet,
        // at most 65 535 of them (no ACK of what a window holds comes near; an ACK that claims
        // more, of packets never sent, must not cost a second of steps).
        let packets = ack.bytes.div_ceil(self.mss).clamp(1, u64::from(u16::MAX));
        for i in 0..packets {
            let losses = if i == 0 { std::mem::take(&mut self.pending_losses) } else { 0 };
            if stale {
                self.estimate.on_ack(losses);
            } else {
                self.on_packet_acked(delta, losses);
            }
        }
    }

    fn on_lost(&mut self, _now: Instant, packets: u64) {
        self.pending_losses = self.pending_losses.saturating_add(packets);
    }

    fn loss_estimate(&self) -> Option<f64> {
        Some(self.estimate.p)
    }

    /// A loss is not congestion to CTCP (its reaction is the loss-spike rule, fed by
    /// [`CongestionController::on_lost`]); a mode that reports repaired losses as congestion
    /// gets its factor applied.
    fn on_congestion(&mut self, _now: Instant, _sent: Instant, signal: Congestion) {
        if let Congestion::Repaired { factor } = signal {
            self.tokens = (self.tokens * factor).max(self.min_tokens());
        }
    }

    /// CTCP Algorithm 2's timeout: ss_threshold ← tokens (the listing halves them; see
    /// `TIMEOUT_THRESHOLD`), tokens ← the initial number, slow
    /// start; the network parameters go back to their defaults (§III-A). The timer itself
    /// doubles with each consecutive timeout (the path's backoff).
    ///
    /// A timeout that follows another with no ACK for anything sent since (a burst: the RTO
    /// doubling, one outage) keeps the threshold and estimates the first one set: halving them
    /// again from the initial tokens left a 250 ms ACK outage costing 20–40 s of 1/tokens growth
    /// (Linux TCP likewise sets ssthresh once per loss episode, `tcp_enter_loss`). So does a
    /// timeout in the slow start that follows one, before the tokens are back at its threshold:
    /// the first ACKs after an outage end the burst, and a timeout a round trip later (a lost
    /// probe) took its threshold from the ~20 tokens slow start had regrown, leaving 1/tokens
    /// growth from there (simulator, ctcp-recovery, 5 % loss: never back within 25 s).
    fn on_timeout(&mut self, now: Instant) {
        if !self.in_timeout && !self.regaining {
            self.ss_threshold = self.tokens * TIMEOUT_THRESHOLD;
            self.estimate = CtcpEstimate::new(MU, NU);
        }
        self.in_timeout = true;
        self.regaining = true;
        self.tokens = Self::initial_tokens(self.mss);
        self.slow_start = true;
        self.pending_losses = 0;
        self.timeout_at = Some(now);
    }

    /// Every timeout counts in CTCP (Algorithm 2), not only persistent ones.
    fn on_probe_timeout(&mut self, now: Instant, _consecutive: u32) {
        self.on_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MSS: u64 = 1000;

    fn ack(now_ms: u64, packets: u64, sent_ms: u64) -> Ack {
        Ack {
            now: Instant::from_micros(now_ms * 1000),
            bytes: packets * MSS,
            largest_sent: Instant::from_micros(sent_ms * 1000),
            in_flight: 0,
            delivery_rate: None,
            rtt_sample: true,
        }
    }

    /// An RTT estimator whose minimum is `base` and latest sample `latest` (ms).
    fn rtt(base: u64, latest: u64) -> RttEstimator {
        let mut r = RttEstimator::default();
        r.update(Duration::from_millis(base), Duration::ZERO);
        r.update(Duration::from_millis(latest), Duration::ZERO);
        r
    }

    #[test]
    fn multi_loss_update_matches_algorithm_1() {
        let mut e = CtcpEstimate::new(0.1, 0.01);
        // No loss: p ← p(1 − μ).
        e.p = 0.5;
        e.p_long = 0.5;
        e.on_ack(0);
        assert!((e.p - 0.45).abs() < 1e-12);
        assert!((e.p_long - 0.495).abs() < 1e-12);
        // Two losses then the ACK, worked by hand from p = 0.45, μ = 0.1:
        // 0.45·0.9³ + (1 − 0.9²) = 0.32805 + 0.19 = 0.51805.
        e.on_ack(2);
        assert!((e.p - 0.51805).abs() < 1e-12, "{}", e.p);
        // p_long, ν = 0.01: 0.495·0.99³ + (1 − 0.99²) = 0.480298… + 0.0199 = 0.500198…
        assert!((e.p_long - (0.495 * 0.99f64.powi(3) + 1.0 - 0.99f64.powi(2))).abs() < 1e-12);
        // Identical to smoothing the 0/1 sequence one packet at a time (§III-A, Eq. (2)):
        // a success, then the losses.
        let mut step = 0.45f64;
        for x in [0.0, 1.0, 1.0] {
            step = step * 0.9 + 0.1 * x;
        }
        assert!((e.p - step).abs() < 1e-12);
        // p_stdlong moves towards |p − p_long| with weight ν.
        let mut f = CtcpEstimate::new(0.1, 0.01);
        f.on_ack(1);
        // p = 0·0.9² + 0.1 = 0.1; p_long = 0.01; p_stdlong = 0.01·0.09.
        assert!((f.p - 0.1).abs() < 1e-12 && (f.p_long - 0.01).abs() < 1e-12);
        assert!((f.p_stdlong - 0.0009).abs() < 1e-12);
        assert!(f.spike());
    }

    #[test]
    fn slow_start_adds_a_token_per_ack_then_avoidance_follows_the_rtt_ratio() {
        let mut cc = CtcpTokens::new(MSS);
        assert_eq!(cc.tokens(), 10.0);
        let flat = rtt(100, 100);
        cc.on_ack(&ack(100, 5, 1), &flat);
        assert_eq!(cc.tokens(), 15.0);
        assert!(cc.in_slow_start());
        // A queue builds (rtt 150 ms against a 100 ms base: δ = 1/3 > β): slow start ends,
        // giving back the round trip of growth the delay signal lagged behind.
        let queue = rtt(100, 150);
        let tokens = cc.tokens();
        cc.on_ack(&ack(200, 1, 101), &queue);
        assert!(!cc.in_slow_start());
        assert_eq!(cc.tokens(), (tokens + 1.0) / 2.0);
        // Avoidance, δ > β: −1/tokens per ACK.
        let t = cc.tokens();
        cc.on_ack(&ack(300, 1, 201), &queue);
        assert!((cc.tokens() - (t - 1.0 / t)).abs() < 1e-9);
        // Avoidance, δ < α (no queue): +1/tokens per ACK.
        let t = cc.tokens();
        cc.on_ack(&ack(400, 1, 301), &flat);
        assert!((cc.tokens() - (t + 1.0 / t)).abs() < 1e-9);
        // α ≤ δ ≤ β: unchanged (rtt 115 ms against 100: δ ≈ 0.13).
        let t = cc.tokens();
        cc.on_ack(&ack(500, 1, 401), &rtt(100, 115));
        assert!((cc.tokens() - t).abs() < 1e-9);
        assert_eq!(cc.window(), (cc.tokens() * MSS as f64) as u64);
    }

    #[test]
    fn loss_spike_removes_half_the_excess_per_ack() {
        let mut cc = CtcpTokens::new(MSS);
        cc.slow_start = false;
        cc.tokens = 50.0;
        // A long quiet stretch, then three losses reported with one ACK.
        for i in 0..50 {
            cc.on_ack(&ack(i, 1, i), &rtt(100, 115));
        }
        let before = cc.tokens();
        cc.on_lost(Instant::ZERO, 3);
        let mut expected = *cc.estimate();
        expected.on_ack(3);
        assert!(expected.spike());
        cc.on_ack(&ack(60, 1, 60), &rtt(100, 115));
        let cut = (expected.p - expected.p_long) / 2.0;
        assert!(cut > 0.0);
        assert!((cc.tokens() - (before - cut)).abs() < 1e-9, "{} vs {}", cc.tokens(), before - cut);
        // Without the spike an ACK in that RTT band leaves the tokens alone.
        let mut calm = CtcpTokens::new(MSS);
        calm.slow_start = false;
        calm.tokens = 50.0;
        calm.on_ack(&ack(1, 1, 1), &rtt(100, 115));
        assert_eq!(calm.tokens(), 50.0);
        // A plain loss is no congestion signal.
        calm.on_congestion(Instant::ZERO, Instant::ZERO, Congestion::Loss);
        assert_eq!(calm.tokens(), 50.0);
    }

    #[test]
    fn timeout_keeps_the_threshold_once_per_burst_and_restarts_slow_start() {
        let mut cc = CtcpTokens::new(MSS);
        cc.slow_start = false;
        cc.tokens = 40.0;
        cc.on_lost(Instant::ZERO, 5);
        cc.on_probe_timeout(Instant::from_micros(1_000_000), 1);
        assert!(cc.in_slow_start());
        assert_eq!(cc.tokens(), 10.0);
        assert_eq!(cc.ss_threshold, 40.0 * TIMEOUT_THRESHOLD);
        assert_eq!(cc.estimate().p, 0.0);
        // A second timeout before any ACK for what was sent after the first keeps the threshold.
        cc.on_probe_timeout(Instant::from_micros(2_000_000), 2);
        assert_eq!((cc.tokens(), cc.ss_threshold), (10.0, 40.0 * TIMEOUT_THRESHOLD));
        // ACKs for packets sent before the timeout have no effect.
        cc.on_ack(&ack(2_100, 4, 900), &rtt(100, 100));
        assert_eq!(cc.tokens(), 10.0);
        // Later ones grow slow start until the threshold, then avoidance.
        cc.on_ack(&ack(2_200, 30, 2_100), &rtt(100, 100));
        assert_eq!(cc.tokens(), 40.0);
        assert!(cc.in_slow_start());
        cc.on_ack(&ack(2_300, 1, 2_200), &rtt(100, 100));
        assert!(!cc.in_slow_start());
        // Slow start ended back at the threshold: the next timeout sets the threshold anew.
        let before = cc.tokens();
        cc.on_probe_timeout(Instant::from_micros(3_000_000), 1);
        assert_eq!(cc.ss_threshold, before * TIMEOUT_THRESHOLD);
    }

    #[test]
    fn a_timeout_while_regaining_the_threshold_keeps_it() {
        let mut cc = CtcpTokens::new(MSS);
        cc.slow_start = false;
        cc.tokens = 160.0;
        cc.on_probe_timeout(Instant::from_micros(1_000_000), 1);
        // The ACKs return: new data is acknowledged, slow start regrows 10 tokens to 20.
        cc.on_ack(&ack(1_200, 10, 1_100), &rtt(100, 100));
        assert_eq!((cc.tokens(), cc.in_slow_start()), (20.0, true));
        // A lost probe times out a round trip later, before the tokens are back at 160.
        cc.on_probe_timeout(Instant::from_micros(1_400_000), 1);
        assert_eq!((cc.tokens(), cc.ss_threshold), (10.0, 160.0 * TIMEOUT_THRESHOLD));
        cc.on_ack(&ack(1_600, 151, 1_500), &rtt(100, 100));
        assert_eq!((cc.tokens(), cc.in_slow_start()), (161.0, false));
    }
}
