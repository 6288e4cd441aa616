//! Per-segment placement (MPTCP-dFEC, Ferlin et al. §III-A): each path has at most one open
//! block, which grows by one source each time the path is given data, so the path's XOR groups
//! run on across its sends as the paper's do over a subflow's segments (a parity names one
//! block's sources on the wire, so groups still end at the block). MPTCP hands a subflow a
//! segment only when it has room; a block cut whole for a path when the scheduler picked it was
//! that path's window, pinned there while the window reopened a round trip later.
//!
//! A block's length reaches the receiver on a symbol written after it closed (PROTOCOL.md §8.5).
//! A growing block usually closes just before its last source is written: at the path's window
//! less dFEC's parities. When the pipe runs dry, the open blocks with every source sent share the
//! pipe's last data, a source each (`Connection::split_last_cut`), so their lengths come with
//! data the receiver needs. A block closed otherwise after its sources went out — a loss with
//! every source sent, a full block window, a new symbol size, its path failed —
//! [`SendBlock::owes_length`]: dFEC gives its tail a parity (which carries the length), and where
//! no parity is due its last source goes again, on the next path to send
//! ([`BlockSender::write_owed_length`]). Without either the receiver could never complete the
//! block, and the blocks behind it stayed unreleased (braid-sim's fault campaign, seed 47).

use braid_fec::{CodecError, Encoder};

use super::{BlockSender, OutgoingSymbol, SendBlock};
use crate::wire::Writer;

impl SendBlock {
    /// The block closed after every source went out, and no symbol written since told the
    /// receiver its length (only with per-path placement; see the module's text).
    pub fn owes_length(&self) -> bool {
        self.closed && !self.len_sent && !self.decoded && self.sent_any && self.all_sources_sent()
    }

    /// The block's symbol size.
    pub fn symbol_size(&self) -> usize {
        self.encoder.symbol_size()
    }

    /// Closes a growing block at its current length.
    pub(super) fn close_growing(&mut self) {
        self.growing = false;
        if !self.closed {
            self.closed = true;
            self.encoder.flush();
        }
    }
}

impl BlockSender {
    /// Where `path`'s open (growing) block sits in `blocks`.
    fn growing_index(&self, path: u8) -> Option<usize> {
        self.blocks.iter().rposition(|b| b.growing && b.path == Some(path))
    }

    /// `path`'s open block, if it has one.
    pub fn growing_on(&self, path: u8) -> Option<&SendBlock> {
        self.blocks.get(self.growing_index(path)?)
    }

    /// Whether `path` may be given a new source: it has an open block, or the block window has
    /// room for one.
    pub fn has_room_on(&self, path: u8) -> bool {
        self.growing_index(path).is_some() || self.blocks.len() < self.window
    }

    /// The size of `path`'s next source symbol: its open block's, else what a new block gets.
    pub fn symbol_size_on(&self, path: u8) -> usize {
        self.growing_on(path).map_or(self.next_symbol_size, |b| b.encoder.symbol_size())
    }

    /// Whether `path`'s open block has another symbol size than new blocks get (PROTOCOL.md
    /// §14.3): it should close before the path is given more data.
    pub fn resize_pending_on(&self, path: u8) -> bool {
        self.growing_on(path).is_some_and(|b| b.encoder.symbol_size() != self.next_symbol_size)
    }

    /// Appends a source symbol to `path`'s open block, opening one mapped to `path` if it has
    /// none; returns the block's length. The block closes at the maximum length.
    pub fn push_source_on(&mut self, path: u8, symbol: &[u8]) -> Result<usize, CodecError> {
        let at = match self.growing_index(path) {
            Some(at) => at,
            None if self.blocks.len() < self.window => {
                self.open_block()?;
                let b = self.blocks.back_mut().expect("just opened");
                (b.path, b.growing) = (Some(path), true);
                self.blocks.len() - 1
            }
            None => return Err(CodecError::BlockFull { max: self.window }),
        };
        let max = self.config.max_block_len;
        let b = &mut self.blocks[at];
        b.encoder.push_source(symbol)?;
        if b.len() == max {
            b.close_growing();
        }
        Ok(b.len())
    }

    /// The open blocks with every source sent, oldest first: were they closed now, no symbol of
    /// theirs would tell the receiver their length.
    pub fn growing_all_sent(&self) -> Vec<u64> {
        self.blocks.iter().filter(|b| b.growing && b.all_sources_sent()).map(|b| b.id).collect()
    }

    /// Appends the last source of open block `block` and closes it (the source then tells the
    /// receiver the length). Unless the block is `carrier`'s, it is unmapped: the pipe's last
    /// data go on the path that sends now, not on a slower one it was mapped to.
    pub fn push_closing_source(&mut self, block: u64, symbol: &[u8], carrier: u8) -> Result<(), CodecError> {
        let b = self.block_mut(block).filter(|b| b.growing).ok_or(CodecError::BlockFull { max: 0 })?;
        b.encoder.push_source(symbol)?;
        b.close_growing();
        if b.path != Some(carrier) {
            b.path = None;
        }
        Ok(())
    }

    /// Closes open block `block`, if it is one.
    pub fn close_growing_id(&mut self, block: u64) {
        if let Some(b) = self.block_mut(block).filter(|b| b.growing) {
            b.close_growing();
        }
    }

    /// Closes `path`'s open block, if it has one.
    pub fn close_growing_on(&mut self, path: u8) {
        if let Some(at) = self.growing_index(path) {
            self.blocks[at].close_growing();
        }
    }

    /// Closes every open block but `keep` (those get their last source, see
    /// [`BlockSender::push_closing_source`]).
    pub fn close_all_growing_but(&mut self, keep: &[u64]) {
        for b in self.blocks.iter_mut().filter(|b| b.growing && !keep.contains(&b.id)) {
            b.close_growing();
        }
    }

    /// Closes every path's open block (the pipe ran dry: nothing more will join them for now).
    pub fn close_all_growing(&mut self) {
        for b in self.blocks.iter_mut().filter(|b| b.growing) {
            b.close_growing();
        }
    }

    /// Whether a block that owes the receiver its length waits for its last source to go again
    /// ([`BlockSender::write_owed_length`]).
    pub(super) fn owes_any_length(&self) -> bool {
        self.per_path && self.blocks.iter().any(|b| self.length_resend_due(b))
    }

    /// `b` owes its length, and no parity of it is ready nor a retransmission of it queued
    /// (either goes out after the close and tells the length at no extra cost).
    fn length_resend_due(&self, b: &SendBlock) -> bool {
        b.owes_length() && b.pending_parities() == 0 && !self.retransmit.iter().any(|r| r.0 == b.id)
    }

    /// Writes the last source of the oldest block that owes its length
    /// ([`Self::length_resend_due`]), on whichever path sends next. Not kept to the block's path:
    /// it is a copy of a symbol already sent there, and the length should reach the receiver no
    /// later than the data still in flight — the pipe's last source waits behind it on the path
    /// that sends it, where on the block's slower path it arrived after the transfer's last
    /// byte (braid-sim's fault campaign checks that every block is complete by then).
    pub(super) fn write_owed_length(&mut self, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        if !self.per_path {
            return None;
        }
        let at = self.blocks.iter().position(|b| self.length_resend_due(b))?;
        let b = &mut self.blocks[at];
        let last = b.len().checked_sub(1)? as u16;
        b.write_source(last, w)
    }
}
