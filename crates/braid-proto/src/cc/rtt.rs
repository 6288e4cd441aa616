//! Round-trip time estimation (RFC 6298; RFC 9002 §5), per path.

use std::time::Duration;

/// Smoothed RTT, variation and minimum, from ACK samples.
#[derive(Debug, Clone, Copy)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Option<Duration>,
    variation: Duration,
    min: Duration,
    /// The largest sample since the first (or since [`Self::restart_min`]).
    max: Duration,
    /// The only sample so far came from outside the core ([`Self::seed`]): the first of the
    /// core's own replaces its minimum and maximum.
    seeded: bool,
}

/// RFC 9002 §6.2.2: before any sample, assume 333 ms.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            latest: INITIAL_RTT,
            smoothed: None,
            variation: INITIAL_RTT / 2,
            min: Duration::MAX,
            max: Duration::ZERO,
            seeded: false,
        }
    }
}

impl RttEstimator {
    /// Folds in a sample; `ack_delay` is what the peer reports it held the packet.
    pub fn update(&mut self, sample: Duration, ack_delay: Duration) {
        if std::mem::take(&mut self.seeded) {
            self.min = Duration::MAX;
            self.max = Duration::ZERO;
        }
        self.latest = sample;
        self.min = self.min.min(sample);
        self.max = self.max.max(sample);
        // RFC 9002 §5.3: subtract the peer's ack delay unless that would go below min_rtt.
        let adjusted = if sample >= self.min + ack_delay { sample - ack_delay } else { sample };
        match self.smoothed {
            None => {
                self.smoothed = Some(adjusted);
                self.variation = adjusted / 2;
            }
            Some(srtt) => {
                let deviation = srtt.abs_diff(adjusted);
                self.variation = (3 * self.variation + deviation) / 4;
                self.smoothed = Some((7 * srtt + adjusted) / 8);
            }
        }
    }

    /// A first sample measured outside the core (the security layer's handshake): it sets the
    /// smoothed RTT and its variation as a first ACK sample would (RFC 6298 §2.2), but the
    /// minimum and maximum start again from the first ACK sample, so a handshake timed long
    /// (a repeated message, the peer's key exchange) cannot widen the range `max − min` the
    /// queue estimates read. No effect once there is a sample.
    pub fn seed(&mut self, sample: Duration) {
        if self.smoothed.is_none() {
            self.update(sample, Duration::ZERO);
            self.seeded = true;
        }
    }

    pub fn has_sample(&self) -> bool {
        self.smoothed.is_some()
    }

    pub fn smoothed(&self) -> Duration {
        self.smoothed.unwrap_or(INITIAL_RTT)
    }

    pub fn variation(&self) -> Duration {
        self.variation
    }

    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The smallest sample seen (the propagation delay estimate); the initial RTT before any.
    pub fn min(&self) -> Duration {
        if self.min == Duration::MAX {
            INITIAL_RTT
        } else {
            self.min
        }
    }

    /// The largest sample seen (since the last [`Self::restart_min`]); the initial RTT before
    /// any. `max − min` is how far this path's queue has been seen to fill.
    pub fn max(&self) -> Duration {
        if self.smoothed.is_none() {
            INITIAL_RTT
        } else {
            self.max
        }
    }

    /// Starts the minimum (and maximum) over from the latest sample. For when the route of this path's ACKs
    /// may have changed: a receiver may return a path's ACKs on another path, so a path that
    /// fails takes the others' fastest return route with it, and a minimum learned over it
    /// would stay below every sample from then on (a delay-based controller would read it as a
    /// standing queue).
    pub fn restart_min(&mut self) {
        if self.has_sample() {
            self.min = self.latest;
            self.max = self.latest;
        }
    }

    /// RFC 6298 §2.3: RTO = SRTT + max(G, 4·RTTVAR), at least `floor`.
    pub fn rto(&self, floor: Duration) -> Duration {
        (self.smoothed() + (4 * self.variation).max(Duration::from_millis(1))).max(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_sets_the_smoothed_rtt_but_not_the_range() {
        let ms = Duration::from_millis;
        let mut rtt = RttEstimator::default();
        rtt.seed(ms(120));
        assert_eq!((rtt.smoothed(), rtt.min(), rtt.max()), (ms(120), ms(120), ms(120)));
        rtt.update(ms(20), Duration::ZERO);
        assert_eq!((rtt.min(), rtt.max()), (ms(20), ms(20)), "the range is the core's own");
        assert_eq!(rtt.smoothed(), (7 * ms(120) + ms(20)) / 8, "folded as a second sample");
        rtt.seed(ms(5));
        assert_eq!(rtt.min(), ms(20), "no effect once there is a sample");
    }

    #[test]
    fn follows_rfc6298() {
        let mut r = RttEstimator::default();
        assert_eq!(r.smoothed(), INITIAL_RTT);
        r.update(Duration::from_millis(100), Duration::ZERO);
        assert_eq!(r.smoothed(), Duration::from_millis(100));
        assert_eq!(r.variation(), Duration::from_millis(50));
        r.update(Duration::from_millis(200), Duration::ZERO);
        // srtt = 7/8·100 + 1/8·200 = 112.5; rttvar = 3/4·50 + 1/4·100 = 62.5
        assert_eq!(r.smoothed(), Duration::from_micros(112_500));
        assert_eq!(r.variation(), Duration::from_micros(62_500));
        assert_eq!(r.min(), Duration::from_millis(100));
        assert_eq!(r.rto(Duration::from_millis(200)), Duration::from_micros(362_500));
        // Ack delay is subtracted only while the result stays above min_rtt.
        r.update(Duration::from_millis(130), Duration::from_millis(20));
        assert_eq!(r.latest(), Duration::from_millis(130));
        r.restart_min();
        assert_eq!(r.min(), Duration::from_millis(130));
        r.update(Duration::from_millis(120), Duration::ZERO);
        assert_eq!(r.min(), Duration::from_millis(120));
    }
}
