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
//!
//! The trait is the small core every mode needs. The XOR modes — TCP-IR (`tcp_ir.rs`), TCP-dFEC
//! (`dfec.rs`), Sato et al. (`sato.rs`) — decide parity groups as they send and hold the losses
//! their parity may repair; they are [`GroupingRule`]s run by one adapter, [`XorGroups`], which
//! keeps the groups ([`GroupTracker`]) and answers the connection's [`ParityGroups`] hooks.
//! The views and events the connection hands in ([`PathView`], [`SymbolEvent`]) are shared with
//! the schedulers and live in [`crate::view`].

mod adaptive;
mod ctcp;
mod dfec;
mod early;
mod fmtcp;
mod groups;
mod loss_runs;
mod per_path;
mod sato;
mod tcp_ir;
mod xor;

use std::fmt;

pub use adaptive::symbols_for;
pub use adaptive::{Adaptive, Redundancy};
pub use ctcp::CtcpRepair;
pub use dfec::Dfec;
pub use fmtcp::{appended_symbols, failure_probability, Fmtcp, SubflowLoss};
pub use groups::{GroupTracker, RecoveredLoss};
pub use per_path::{PerPath, RepairPlacement};
pub use sato::{Sato, SatoConfig};
pub use tcp_ir::TcpIr;
pub use xor::{GroupingRule, ParityGroups, XorGroups};

use crate::blocks::SendBlock;
use crate::cc::Congestion;
use crate::view::{PathView, SymbolEvent};
use crate::Instant;

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

    /// Parity symbols this controller adds to a block of `sources` source symbols sent on `path`
    /// and closed as it is (its tail covered too): a block cut for one path fits that path's
    /// window beside them. The default: none tied to a block's length.
    fn parities_for(&self, _path: usize, _sources: u64) -> u64 {
        0
    }

    /// The XOR modes' parity-group hooks ([`ParityGroups`]): `Some` for a controller that forms
    /// XOR parity groups as it sends (TCP-IR, TCP-dFEC, Sato et al., through [`XorGroups`]).
    /// The default, for codes with a fixed layout: `None`.
    fn parity_groups(&mut self) -> Option<&mut dyn ParityGroups> {
        None
    }
}

/// An XOR mode's answer to a loss it took over (see [`ParityGroups::take_loss`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FecAction {
    /// The parity cannot repair this source: send it again (TCP-style fallback).
    Retransmit { block: u64, index: u16 },
    /// Tell the congestion controller of `path` about a loss of a packet sent at `sent`.
    Congestion { path: usize, sent: Instant, signal: Congestion },
    /// The parity rebuilt this source at the receiver (only where asked for, see
    /// [`ParityGroups::report_repairs`]: cumulative-ACK recovery moves its cumulative point).
    Repaired { block: u64, index: u16 },
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

    use crate::blocks::{BlockSender, OutgoingSymbol};
    use crate::view::PathView;
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
