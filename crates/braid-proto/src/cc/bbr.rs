//! A model-based controller in the spirit of BBR (Cardwell et al., "BBR: Congestion-Based
//! Congestion Control", ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00 for v1):
//! estimate the bottleneck bandwidth (windowed max of delivery-rate samples over 10 rounds) and
//! the propagation RTT (windowed min over 10 s), pace at gain × bandwidth, cap what is in flight
//! at gain × BDP. Loss is not a congestion signal.
//!
//! braid's difference: delivery-rate samples are scaled by 1 / (1 − p) with the path's
//! random-loss estimate, since randomly lost bytes crossed the bottleneck too, so a 5%-loss path
//! is measured at its full rate, not 95% of it. Kernel BBR measures only acknowledged bytes and
//! so settles lower on a lossy path (17.9 of 20 Mbit/s at 5%, TESTBED.md); a coded transport
//! whose repairs replace the lost bytes can use the whole link.
//!
//! Status: experimental, not the default. In the simulator (CTCP Table IV, seed 1) it finishes
//! every loss rate now that a spurious probe timeout no longer discards its flight, but it
//! trails CUBIC: its Startup overflows a 1-BDP queue (≈ 440 drops at 0% loss) and ProbeBW keeps
//! a standing queue (smoothed RTT 135–148 ms on a 100 ms path at 1–4% loss).
//!
//! Not implemented (yet): ProbeRTT (the min-RTT estimate simply expires after 10 s and is
//! re-learned from the next samples), app-limited sample marking, long-term policing detection.

use std::time::Duration;

use super::{initial_window, Ack, Congestion, CongestionController, RttEstimator, MAXIMUM_WINDOW};
use crate::Instant;

/// 2/ln 2: the smallest gain that doubles the sending rate each round (BBR's Startup).
const STARTUP_GAIN: f64 = 2.885;
/// ProbeBW pacing gains, one phase per min RTT.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BW_WINDOW_ROUNDS: u64 = 10;
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Rate samples above 100 Gbit/s, or not a positive number, are nonsense and ignored: one of
/// them would hold the max filter, and the pacing rate and window with it, for 10 rounds.
const MAX_RATE: f64 = 12.5e9;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Startup,
    Drain,
    ProbeBw,
}

#[derive(Debug, Clone)]
pub struct Bbr {
    mss: u64,
    state: State,
    /// (round, bytes/s) samples of the last rounds, for the max filter.
    samples: Vec<(u64, f64)>,
    bandwidth: f64,
    min_rtt: Option<(Duration, Instant)>,
    round: u64,
    round_start: Instant,
    full_bandwidth: f64,
    full_bandwidth_rounds: u32,
    cycle_index: usize,
    cycle_start: Instant,
    in_flight: u64,
}

impl Bbr {
    pub fn new(mss: u64) -> Bbr {
        Bbr {
            mss,
            state: State::Startup,
            samples: Vec::new(),
            bandwidth: 0.0,
            min_rtt: None,
            round: 0,
            round_start: Instant::ZERO,
            full_bandwidth: 0.0,
            full_bandwidth_rounds: 0,
            cycle_index: 0,
            cycle_start: Instant::ZERO,
            in_flight: 0,
        }
    }

    fn pacing_gain(&self) -> f64 {
        match self.state {
            State::Startup => STARTUP_GAIN,
            State::Drain => 1.0 / STARTUP_GAIN,
            State::ProbeBw => CYCLE[self.cycle_index],
        }
    }

    fn cwnd_gain(&self) -> f64 {
        match self.state {
            State::Startup | State::Drain => STARTUP_GAIN,
            State::ProbeBw => 2.0,
        }
    }

    fn bdp(&self) -> Option<f64> {
        let (rtt, _) = self.min_rtt?;
        (self.bandwidth > 0.0).then_some(self.bandwidth * rtt.as_secs_f64())
    }
}

impl CongestionController for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn window(&self) -> u64 {
        match self.bdp() {
            Some(bdp) => ((self.cwnd_gain() * bdp) as u64)
                .saturating_add(3 * self.mss)
                .clamp(4 * self.mss, MAXIMUM_WINDOW.max(4 * self.mss)),
            None => initial_window(self.mss),
        }
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        if self.bandwidth > 0.0 {
            // At least a datagram a second: a path that only carried a few small packets has a
            // tiny estimate, and a rate near zero would hold the next packet for minutes.
            Some(((self.pacing_gain() * self.bandwidth) as u64).max(self.mss))
        } else {
            // No sample yet: the initial window over the RTT, at the startup gain.
            let srtt = rtt.smoothed().as_secs_f64().max(1e-3);
            Some((STARTUP_GAIN * initial_window(self.mss) as f64 / srtt) as u64)
        }
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        self.in_flight = ack.in_flight;
        let now = ack.now;
        // Min RTT, expiring after 10 s.
        let latest = rtt.latest();
        match self.min_rtt {
            Some((min, at)) if latest > min && now - at < MIN_RTT_WINDOW => {}
            _ => self.min_rtt = Some((latest, now)),
        }
        // Rounds: one ends when a packet sent after it began is acknowledged.
        let new_round = ack.largest_sent >= self.round_start;
        if new_round {
            self.round += 1;
            self.round_start = now;
        }
        if let Some(rate) = ack.delivery_rate.filter(|r| r.is_finite() && *r > 0.0 && *r <= MAX_RATE) {
            self.samples.push((self.round, rate));
            let oldest = self.round.saturating_sub(BW_WINDOW_ROUNDS);
            self.samples.retain(|&(r, _)| r > oldest);
            self.bandwidth = self.samples.iter().map(|&(_, b)| b).fold(0.0, f64::max);
        }
        match self.state {
            State::Startup if new_round && self.bandwidth > 0.0 => {
                // Full pipe: three rounds without 25% growth.
                if self.bandwidth >= 1.25 * self.full_bandwidth {
                    self.full_bandwidth = self.bandwidth;
                    self.full_bandwidth_rounds = 0;
                } else {
                    self.full_bandwidth_rounds += 1;
                    if self.full_bandwidth_rounds >= 3 {
                        self.state = State::Drain;
                    }
                }
            }
            State::Drain => {
                if self.bdp().is_some_and(|bdp| ack.in_flight as f64 <= bdp) {
                    self.state = State::ProbeBw;
                    self.cycle_index = 2; // start cruising, as BBR picks a random non-0.75 phase
                    self.cycle_start = now;
                }
            }
            State::ProbeBw => {
                let phase = self.min_rtt.map_or(Duration::from_millis(100), |(r, _)| r);
                if now - self.cycle_start >= phase {
                    self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
                    self.cycle_start = now;
                }
            }
            State::Startup => {}
        }
    }

    fn on_congestion(&mut self, _now: Instant, _sent: Instant, _signal: Congestion) {}

    fn on_timeout(&mut self, _now: Instant) {
        // A silent path keeps its model: the bandwidth filter ages out by itself when the path
        // really got slower, and forgetting it would restart from the initial window on every
        // tail loss (BBR v1 likewise restores its window after an RTO).
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_bandwidth_leaves_startup_and_sizes_the_window() {
        let mut cc = Bbr::new(1000);
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        assert_eq!(cc.window(), initial_window(1000));
        // 2.5 MB/s (20 Mbit/s) samples, one ACK per 10 ms over 1 s (10 rounds).
        for i in 0..100u64 {
            let now = Instant::from_micros(i * 10_000);
            let ack = Ack {
                now,
                bytes: 1000,
                largest_sent: now - Duration::from_millis(100),
                in_flight: 100_000,
                delivery_rate: Some(2.5e6),
                rtt_sample: true,
            };
            cc.on_ack(&ack, &rtt);
        }
        assert_ne!(cc.state, State::Startup, "bandwidth stopped growing: startup must end");
        // BDP = 2.5 MB/s × 100 ms = 250 kB; ProbeBW window 2 × BDP + 3 MSS.
        let w = cc.window();
        assert!((500_000..=760_000).contains(&w), "window {w}");
        assert!(cc.pacing_rate(&rtt).unwrap() >= 2_400_000 / 3);
        // Loss does not move it.
        cc.on_congestion(Instant::from_micros(2_000_000), Instant::from_micros(1_900_000), Congestion::Loss);
        assert_eq!(cc.window(), w);
    }
}
