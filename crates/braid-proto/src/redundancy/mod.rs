//! Redundancy control: how many repair symbols each block gets, and when.
//!
//! One [`RedundancyController`] per connection, chosen by the mode: braid's adaptive rule
//! (`adaptive.rs`), CTCP's block scheduling (`ctcp.rs`, Algorithm 3), FMTCP's appended symbols
//! (`fmtcp.rs`, Eq. 4), or none (the `tcp` model). The connection asks it, for
//! the path about to send, how many repair symbols a block still wants beyond those in flight,
//! and tells it what happened (symbols sent, packets lost, retransmissions, blocks decoded), so
//! controllers that adapt on feedback — TCP-dFEC's residual-loss ratio, Sato et al.'s
//! cwnd-sized groups — can keep their own statistics. Which losses count as congestion is not
//! decided here but by the mode (see `conn::Mode`).

mod adaptive;
mod ctcp;
mod fmtcp;

use std::fmt;
use std::time::Duration;

pub use adaptive::symbols_for;
pub use adaptive::Redundancy;
pub use ctcp::CtcpScheduler;
pub use fmtcp::{appended_symbols, failure_probability, Fmtcp};

use crate::blocks::SendBlock;
use crate::Instant;

/// What a redundancy controller may know about the path about to carry a symbol.
#[derive(Debug, Clone, Copy)]
pub struct PathView {
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
    /// The path's random-loss estimate (CTCP Algorithm 1's p).
    pub loss: f64,
    /// Congestion window and bytes in flight.
    pub window: u64,
    pub in_flight: u64,
    /// Largest datagram.
    pub mss: u64,
}

/// Something the connection observed, for controllers that adapt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedundancyEvent {
    /// A symbol went out (`repair`: a repair symbol, else a source, first copy or again).
    Sent { repair: bool, retransmission: bool },
    /// A packet carrying a symbol was declared lost.
    Lost { repair: bool },
    /// A packet carrying a symbol was acknowledged.
    Acked { repair: bool },
}

/// One symbol's fate, with its block and send time, for controllers that track what is in
/// flight per block (CTCP Algorithm 3 counts a block's packets sent less than 1.5 RTT ago).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolEvent {
    /// A symbol of `block` went out on `path` at `at`.
    Sent { block: u64, path: u8, at: Instant },
    /// The packet carrying a symbol of `block`, sent on `path` at `sent_at`, was acknowledged.
    Acked { block: u64, path: u8, sent_at: Instant },
    /// … was declared lost (also a probe timeout's presumption).
    Lost { block: u64, path: u8, sent_at: Instant },
}

/// The redundancy half of a mode (the congestion half is a [`crate::cc::CongestionController`]).
pub trait RedundancyController: Send + fmt::Debug {
    fn name(&self) -> &'static str;

    /// Repair symbols `block` should get now beyond what is in flight, if sent on `path`,
    /// ahead of new source symbols.
    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64;

    /// Further repair symbols worth sending when there is no new source symbol to send
    /// (capacity that would otherwise go unused). Default: none.
    fn spare_repairs(&self, _block: &SendBlock, _path: &PathView) -> u64 {
        0
    }

    /// Feedback; the default ignores it.
    fn on_event(&mut self, _now: Instant, _event: RedundancyEvent, _path: &PathView) {}

    /// Per-symbol feedback with block and send time; the default ignores it.
    fn on_symbol(&mut self, _now: Instant, _event: SymbolEvent) {}

    /// When the answers of [`RedundancyController::repairs_wanted`] may change with no event
    /// but the passing of time (CTCP: a symbol in flight turns 1.5 RTT old); `path` is the
    /// path that would send. The default never.
    fn poll_timeout(&self, _path: &PathView) -> Option<Instant> {
        None
    }

    /// Time passed (the connection's timer fired at `now`); the default ignores it.
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// No coding at all: the `tcp` model.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRedundancy;

impl RedundancyController for NoRedundancy {
    fn name(&self) -> &'static str {
        "none"
    }

    fn repairs_wanted(&self, _block: &SendBlock, _path: &PathView) -> u64 {
        0
    }
}
