//! The server's handshake rate (PROTOCOL.md §13.3): a token bucket one second deep, taken from
//! before any public-key work, so a flood of first messages costs a lookup each.

use crate::Instant;

/// New handshakes per second: a token bucket as deep as one second's worth (at least one).
#[derive(Debug, Clone)]
pub struct HandshakeRate {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl HandshakeRate {
    /// `rate` handshakes a second, the bucket full at `now`.
    pub fn new(rate: u32, now: Instant) -> HandshakeRate {
        HandshakeRate { rate: f64::from(rate), tokens: f64::from(rate), last: now }
    }

    /// Takes a token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate.max(1.0));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_the_rate_and_a_second_of_burst() {
        let mut b = HandshakeRate::new(10, Instant::ZERO);
        let burst = (0..100).filter(|_| b.take(Instant::ZERO)).count();
        assert_eq!(burst, 10);
        // Over the next ten seconds, ten a second.
        let later = (1..=1000u64).filter(|i| b.take(Instant::from_micros(i * 10_000))).count();
        assert!((99..=101).contains(&later), "{later}");
    }
}
