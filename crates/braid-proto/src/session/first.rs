//! The server's memory of first handshake messages (PROTOCOL.md §13.3): a first message is
//! accepted by the clock check for minutes, so one replayed in that time must create nothing.
//! Each accepted first message is remembered by its ephemeral key until it is too old to pass
//! the clock check again; the memory is bounded, and when it is full of recent ones new
//! handshakes wait (a flood of authenticated handshakes needs the key).

use std::collections::HashMap;
use std::time::Duration;

use crate::Instant;

/// What the server makes of a first message that authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstMessage {
    /// Never seen: go on (it is remembered now).
    Fresh,
    /// Seen before: a replay, ignore it.
    Replayed,
    /// Too many recent handshakes to remember another: ignore it.
    TooMany,
}

/// Ephemeral keys of the first messages accepted lately.
#[derive(Debug, Clone)]
pub struct SeenFirstMessages {
    seen: HashMap<[u8; 32], Instant>,
    limit: usize,
    horizon: Duration,
}

impl SeenFirstMessages {
    /// At most `limit` remembered; each for `horizon` (the span the clock check accepts).
    pub fn new(limit: usize, horizon: Duration) -> SeenFirstMessages {
        SeenFirstMessages { seen: HashMap::new(), limit, horizon }
    }

    /// A first message with this ephemeral key authenticated at `now`.
    pub fn insert(&mut self, ephemeral: [u8; 32], now: Instant) -> FirstMessage {
        if self.seen.contains_key(&ephemeral) {
            return FirstMessage::Replayed;
        }
        if self.seen.len() >= self.limit {
            let horizon = self.horizon;
            self.seen.retain(|_, at| now.saturating_duration_since(*at) < horizon);
            if self.seen.len() >= self.limit {
                return FirstMessage::TooMany;
            }
        }
        self.seen.insert(ephemeral, now);
        FirstMessage::Fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> [u8; 32] {
        [i; 32]
    }

    #[test]
    fn replays_are_refused_and_memory_is_bounded() {
        let horizon = Duration::from_secs(240);
        let mut seen = SeenFirstMessages::new(3, horizon);
        let t0 = Instant::from_micros(0);
        assert_eq!(seen.insert(key(1), t0), FirstMessage::Fresh);
        assert_eq!(seen.insert(key(1), t0 + Duration::from_secs(100)), FirstMessage::Replayed);
        assert_eq!(seen.insert(key(2), t0 + Duration::from_secs(1)), FirstMessage::Fresh);
        assert_eq!(seen.insert(key(3), t0 + Duration::from_secs(2)), FirstMessage::Fresh);
        // Full of recent ones: a new handshake waits.
        assert_eq!(seen.insert(key(4), t0 + Duration::from_secs(3)), FirstMessage::TooMany);
        // Once the first is past the horizon, it is forgotten and room is made.
        assert_eq!(seen.insert(key(4), t0 + horizon), FirstMessage::Fresh);
        assert_eq!(seen.insert(key(2), t0 + horizon), FirstMessage::Replayed);
    }
}
