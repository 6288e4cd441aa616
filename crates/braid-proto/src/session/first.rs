//! The server's memory of first handshake messages (PROTOCOL.md §13.3): a first message is
//! accepted by the clock check for minutes, so one replayed in that time must create nothing.
//! Each accepted first message is remembered by its ephemeral key until it is too old to pass
//! the clock check again, and forgotten then (in the order they came), so the memory follows
//! the handshake rate over that span, not the number of handshakes ever made; it is bounded,
//! and when it is full of recent ones new handshakes wait (a flood of authenticated handshakes
//! needs the key).

use std::collections::{HashMap, VecDeque};
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
    /// The keys in `seen` in the order they came (the times never go back), oldest first.
    order: VecDeque<([u8; 32], Instant)>,
    limit: usize,
    horizon: Duration,
}

impl SeenFirstMessages {
    /// At most `limit` remembered; each for `horizon` (the span the clock check accepts).
    pub fn new(limit: usize, horizon: Duration) -> SeenFirstMessages {
        SeenFirstMessages { seen: HashMap::new(), order: VecDeque::new(), limit, horizon }
    }

    /// First messages remembered now.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Forgets what is `horizon` old at `now`.
    fn expire(&mut self, now: Instant) {
        while let Some(&(key, at)) = self.order.front() {
            if now.saturating_duration_since(at) < self.horizon {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&key);
        }
        // A map emptied by a burst long gone gives its room back.
        if self.seen.capacity() > 64 && self.seen.len() < self.seen.capacity() / 4 {
            self.seen.shrink_to(self.seen.len() * 2);
            self.order.shrink_to(self.seen.len() * 2);
        }
    }

    /// A first message with this ephemeral key authenticated at `now`.
    pub fn insert(&mut self, ephemeral: [u8; 32], now: Instant) -> FirstMessage {
        self.expire(now);
        if self.seen.contains_key(&ephemeral) {
            return FirstMessage::Replayed;
        }
        if self.seen.len() >= self.limit {
            return FirstMessage::TooMany;
        }
        self.seen.insert(ephemeral, now);
        self.order.push_back((ephemeral, now));
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

    /// A server that has made many handshakes remembers only the recent ones: what is past
    /// the horizon is forgotten as new ones come, not when the memory is full.
    #[test]
    fn the_memory_follows_the_rate_not_the_handshakes_ever_made() {
        let horizon = Duration::from_secs(240);
        let mut seen = SeenFirstMessages::new(100_000, horizon);
        let t0 = Instant::from_micros(0);
        // 40 handshakes a second for an hour: 144,000 in all, 9,600 within any horizon.
        let mut most = 0;
        for n in 0..144_000u32 {
            let mut k = [0u8; 32];
            k[..4].copy_from_slice(&n.to_be_bytes());
            let now = t0 + Duration::from_millis(u64::from(n) * 25);
            assert_eq!(seen.insert(k, now), FirstMessage::Fresh);
            most = most.max(seen.len());
        }
        assert_eq!(most, 9_600, "one horizon's handshakes at most");
        // A replay within the horizon is still refused.
        let mut last = [0u8; 32];
        last[..4].copy_from_slice(&143_999u32.to_be_bytes());
        assert_eq!(seen.insert(last, t0 + Duration::from_secs(3_700)), FirstMessage::Replayed);
        // Quiet for a horizon: one new handshake leaves one remembered, and the room is given back.
        let later = t0 + Duration::from_secs(3_600) + horizon;
        assert_eq!(seen.insert(key(7), later), FirstMessage::Fresh);
        assert_eq!(seen.len(), 1);
        assert!(seen.seen.capacity() < 1_000, "capacity {}", seen.seen.capacity());
    }
}
