//! Time as a value. The protocol core never reads a clock: every entry point takes `now`, so the
//! simulator, the runtime and the tests drive the very same code.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, in microseconds since an arbitrary origin chosen by the driver (the
/// simulator's start, or the runtime's first `Instant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);

    pub const fn from_micros(micros: u64) -> Instant {
        Instant(micros)
    }

    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time since `earlier`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.as_micros().min(u64::MAX as u128) as u64))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.as_micros().min(u64::MAX as u128) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_micros(1_000);
        assert_eq!((t + Duration::from_millis(2)).as_micros(), 3_000);
        assert_eq!(t - Instant::from_micros(5_000), Duration::ZERO);
        assert_eq!((t - Duration::from_secs(1)), Instant::ZERO);
        assert_eq!(
            Instant::from_micros(u64::MAX - 1) + Duration::from_secs(1),
            Instant::from_micros(u64::MAX)
        );
    }
}
