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
mod dfec;
mod fmtcp;
mod groups;
mod per_path;
mod sato;
mod tcp_ir;

use std::fmt;
use std::time::Duration;

pub use adaptive::symbols_for;
pub use adaptive::Redundancy;
pub use ctcp::CtcpScheduler;
pub use dfec::Dfec;
pub use fmtcp::{appended_symbols, failure_probability, Fmtcp};
pub use groups::{GroupTracker, RecoveredLoss};
pub use per_path::{PerPath, RepairPlacement};
pub use sato::{Sato, SatoConfig};
pub use tcp_ir::TcpIr;

use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::cc::Congestion;
use crate::Instant;

/// What a redundancy controller may know about the path about to carry a symbol.
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

    /// When the controller needs the connection to act with no event but the passing of time
    /// (CTCP: a symbol in flight turns 1.5 RTT old; TCP-IR: its RTT/4 parity clock); `path` is
    /// the path that would send. The default never.
    fn poll_timeout(&self, _path: &PathView) -> Option<Instant> {
        None
    }

    /// Time passed (the connection's timer fired at `now`); the default ignores it.
    fn handle_timeout(&mut self, _now: Instant) {}

    // Hooks for the XOR modes (TCP-IR, TCP-dFEC, Sato et al.), who decide parity groups when
    // they send and keep track of which losses their parity repaired. All default to "not used".

    /// Whether XOR parity groups are formed at send time by [`Self::parity_covers`] rather than
    /// by the encoder's fixed layout.
    fn groups_at_send_time(&self) -> bool {
        false
    }

    /// Called before each send with the open blocks: which sources already sent get parity
    /// groups now. Only asked when [`Self::groups_at_send_time`]; the covers are applied at once.
    fn parity_covers(
        &mut self,
        _now: Instant,
        _blocks: &mut dyn Iterator<Item = &SendBlock>,
        _path: &PathView,
    ) -> Vec<XorCover> {
        Vec::new()
    }

    /// Whether a due repair may be sent when the congestion window is full (TCP-IR's fixed-rate
    /// parity, which ignores cwnd).
    fn repair_ignores_window(&self) -> bool {
        false
    }

    /// The packet threshold for loss detection (RFC 9002 §6.1.1's 3, TCP's dupACK threshold)
    /// this controller wants on `path` (dFEC: the FEC block size).
    fn packet_threshold(&self, _path: usize) -> Option<u64> {
        None
    }

    /// A packet carrying `symbol`, sent at `sent` on `path`, was declared lost. Returning true
    /// takes the loss over: the connection neither retransmits it nor counts it as congestion;
    /// the controller answers later with [`FecAction`]s (a parity that can still repair it, or
    /// a loss a parity's loss does not make congestion).
    fn take_loss(&mut self, _now: Instant, _path: usize, _symbol: OutgoingSymbol, _sent: Instant) -> bool {
        false
    }

    /// A packet carrying `symbol` was acknowledged.
    fn on_symbol_acked(&mut self, _now: Instant, _symbol: OutgoingSymbol) {}

    /// The receiver holds every block below `block`: forget them.
    fn on_blocks_released(&mut self, _below: u64) {}

    /// What the controller wants done about losses it took over.
    fn poll_action(&mut self) -> Option<FecAction> {
        None
    }
}

/// An XOR mode's answer to a loss it took over (see [`RedundancyController::take_loss`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FecAction {
    /// The parity cannot repair this source: send it again (TCP-style fallback).
    Retransmit { block: u64, index: u16 },
    /// Tell the congestion controller of `path` about a loss of a packet sent at `sent`.
    Congestion { path: usize, sent: Instant, signal: Congestion },
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

/// Helpers for the XOR controllers' unit tests: a manually grouped XOR block sender.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::Duration;

    use braid_fec::{CodeFamily, CodecConfig};

    use super::PathView;
    use crate::blocks::{BlockSender, OutgoingSymbol};
    use crate::wire::Writer;

    /// A sender holding `n` source symbols of one (256-long) XOR block, none sent.
    pub fn sender(n: usize) -> BlockSender {
        let config = CodecConfig { symbol_size: 16, max_block_len: 256, ..CodecConfig::new(CodeFamily::Xor) };
        let mut tx = BlockSender::new(config, 4);
        tx.set_manual_groups();
        for i in 0..n {
            tx.push_source(&[i as u8; 16]).unwrap();
        }
        tx
    }

    /// Sends the next `k` sources.
    pub fn send(tx: &mut BlockSender, k: usize) -> Vec<OutgoingSymbol> {
        (0..k)
            .map(|_| tx.write_next_source(&mut Writer::new(&mut Vec::new())).expect("a source to send"))
            .collect()
    }

    /// Sends the next parity.
    pub fn parity(tx: &mut BlockSender, block: u64) -> OutgoingSymbol {
        tx.write_repair(block, &mut Writer::new(&mut Vec::new())).unwrap().expect("a parity")
    }

    /// A path with a window of `packets` 1000-byte packets and the given smoothed RTT.
    pub fn view(packets: u64, srtt_ms: u64) -> PathView {
        PathView {
            path: 0,
            smoothed_rtt: Duration::from_millis(srtt_ms),
            min_rtt: Duration::from_millis(srtt_ms),
            loss: 0.0,
            loss_long: 0.0,
            window: packets * 1000,
            in_flight: 0,
            mss: 1000,
        }
    }
}
