//! What the connection shows its pluggable parts — redundancy controllers
//! ([`crate::redundancy`]) and multipath schedulers ([`crate::sched`]) alike: a small read-only
//! view of a path, and the fate of each symbol sent. Neither part reaches into the connection's
//! own state.

use std::time::Duration;

use crate::Instant;

/// A read-only view of one path, as a controller or scheduler may see it.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathView {
    /// The path's index in the connection.
    pub path: u8,
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
    /// The path's random-loss estimate (CTCP Algorithm 1's p).
    pub loss: f64,
    /// A steadier estimate of the same, over about 8× as many packets (braid's tail margins).
    pub loss_long: f64,
    /// Congestion window and bytes in flight.
    pub window: u64,
    pub in_flight: u64,
    /// Largest datagram.
    pub mss: u64,
}

/// One symbol's fate, with its block and send time, for the parts that track what is in
/// flight per block (CTCP Algorithm 3 and 4 count a block's packets sent less than 1.5 RTT ago).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolEvent {
    /// A symbol of `block` went out on `path` at `at`.
    Sent { block: u64, path: u8, at: Instant },
    /// The packet carrying a symbol of `block`, sent on `path` at `sent_at`, was acknowledged.
    Acked { block: u64, path: u8, sent_at: Instant },
    /// … was declared lost (also a probe timeout's presumption).
    Lost { block: u64, path: u8, sent_at: Instant },
}
