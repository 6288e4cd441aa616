//! Receive-window auto-tuning: a flow-control window that grows while the application keeps up
//! with it, up to a cap.
//!
//! A fixed window caps a connection at window / RTT. With several paths the receiver must also
//! hold what the fast path delivered while the slower path's data for the bytes before it is
//! still on its way, so the window must cover the slowest path's round trip and queue. On paths
//! of 40 and 160 ms (20 + 10 Mbit/s, `braid demo`'s) a server's 1 MiB window held the sender to
//! 21 of 29 Mbit/s: the arrival-time scheduler had no data far enough ahead for the slow path,
//! which carried 5 of 33 MB, and requests on a second stream waited for window too (p99 217 ms).
//! With 16 MiB: 26 Mbit/s, 10.6 MB on the slow path, p99 72 ms.
//!
//! The rule is the one of dynamic right-sizing in TCP (Fisk and Feng, 2001; Linux's receive
//! buffer auto-tuning): a window the application consumed in less than two round trips was too
//! small for the path, so the next update doubles it, up to the cap. The update itself is
//! RFC 9000 §4.2's usual policy, sent once half the window is consumed: consuming a half in
//! under two round trips means the sender was held to less than a window per four round trips.
//! A window the application reads slowly never grows, so a peer cannot make a receiver hold
//! more than the application's own pace allows, and never more than the cap.

use std::time::Duration;

use crate::Instant;

/// What the windows grow by: the connection's clock and round trip (the slowest path's
/// smoothed RTT), and the cap. Without a time (or with a cap no larger than a window) windows
/// keep their size.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    pub now: Option<Instant>,
    pub rtt: Duration,
    pub cap: u64,
}

/// One window's size (the connection's, or a stream's) and when it was last moved.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// The window's size now: an update advertises what was read plus this.
    pub size: u64,
    updated: Option<Instant>,
}

impl Window {
    pub fn new(size: u64) -> Window {
        Window { size, updated: None }
    }

    /// An update is being made now: doubles the size (up to the cap) if the previous update was
    /// less than two round trips ago. Returns the size to advertise.
    pub fn on_update(&mut self, clock: &Clock) -> u64 {
        if let (Some(at), Some(now)) = (self.updated, clock.now) {
            if self.size < clock.cap && now.saturating_duration_since(at) < 2 * clock.rtt {
                self.size = self.size.saturating_mul(2).min(clock.cap);
            }
        }
        self.updated = clock.now;
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Option<Instant> {
        Some(Instant::ZERO + Duration::from_millis(ms))
    }

    #[test]
    fn grows_only_while_consumed_within_two_round_trips_and_stops_at_the_cap() {
        let mut w = Window::new(1000);
        let clock = |ms| Clock { now: at(ms), rtt: Duration::from_millis(100), cap: 3000 };
        assert_eq!(w.on_update(&clock(0)), 1000, "the first update has nothing to compare with");
        assert_eq!(w.on_update(&clock(150)), 2000, "150 ms < 2 RTT: doubled");
        assert_eq!(w.on_update(&clock(400)), 2000, "250 ms ≥ 2 RTT: the application is the limit");
        assert_eq!(w.on_update(&clock(410)), 3000, "doubled, but not past the cap");
        assert_eq!(w.on_update(&clock(420)), 3000);
    }

    #[test]
    fn without_a_clock_or_a_cap_above_it_a_window_keeps_its_size() {
        let mut w = Window::new(1000);
        let none = Clock { now: None, rtt: Duration::from_millis(100), cap: 1 << 30 };
        assert_eq!(w.on_update(&none), 1000);
        assert_eq!(w.on_update(&none), 1000);
        let capped = |ms| Clock { now: at(ms), rtt: Duration::from_millis(100), cap: 1000 };
        assert_eq!(w.on_update(&capped(0)), 1000);
        assert_eq!(w.on_update(&capped(1)), 1000);
    }
}
