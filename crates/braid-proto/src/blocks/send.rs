//! The sending side: open blocks, their encoders, and what each block still needs.

use std::collections::VecDeque;

use braid_fec::{BlockEncoder, CodeFamily, CodecConfig, CodecError, Encoder, SymbolId};

use crate::wire::{Writer, MAX_PATHS};
use crate::Instant;
use symbol::write_symbol;
pub use tails::Tail;

/// Most doublings of the release timeout for a block that stays unreleased (see
/// [`BlockSender::release_deadline`]).
const MAX_RELEASE_BACKOFF: u32 = 6;

/// The largest packet number of each path that one received packet acknowledged (`None`: it
/// carried no ACK of that path).
pub type AckedUpTo = [Option<u64>; MAX_PATHS as usize];

/// What was written, for the packet's record (loss detection needs to know which block a lost
/// symbol belonged to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutgoingSymbol {
    pub block: u64,
    /// The source symbol's index, or `None` for a repair symbol.
    pub source: Option<u16>,
    /// An XOR parity's group, by its first member (unique within a block), so that feedback on
    /// the parity can be matched to the group (the XOR modes' recovered/failed bookkeeping).
    pub group: Option<u16>,
}

impl OutgoingSymbol {
    pub fn is_repair(&self) -> bool {
        self.source.is_none()
    }
}

/// One block the sender holds until the receiver decodes it.
pub struct SendBlock {
    pub id: u64,
    encoder: BlockEncoder,
    /// No more source symbols will be added; the length is final.
    pub closed: bool,
    /// Source symbols not yet sent once.
    next_unsent: usize,
    /// Symbols of this block in packets not yet acknowledged or declared lost.
    pub in_flight: u64,
    /// Symbols of this block sent on each path so far, in flight or settled (the connection
    /// counts them as their packets go out: [`BlockSender::on_sent_on`]).
    pub sent_on: [u32; MAX_PATHS as usize],
    /// Symbols of this block acknowledged at packet level. Acknowledged is not innovative: a
    /// duplicate, a repair over sources that all arrived, or a linearly dependent combination
    /// is acknowledged and adds nothing. [`SendBlock::known_dofs`] prefers the receiver's count.
    pub acked: u64,
    /// The receiver's own count of this block's degrees of freedom, from the latest BLOCK_ACK
    /// that named it the lowest undecoded block (authoritative); when that report arrived; and
    /// the symbols acknowledged since that the report cannot hold (see
    /// [`BlockSender::on_symbol_acked_at`]).
    pub reported: Option<u64>,
    report_arrived: Option<Instant>,
    pub acked_since_report: u64,
    /// The largest packet number of each path that the latest report's own packet acknowledged
    /// (`None`: it carried no ACK of that path): the receiver wrote both at once, so a symbol in
    /// a later packet of that path had not reached it, and its ACK counts on top of the report
    /// (see [`BlockSender::on_symbol_acked_in`]).
    report_covers: AckedUpTo,
    /// Source symbols sent more than once (a retransmission, the length owed, a doubted block's
    /// last source): the receiver may hold an earlier copy that a report already counted, so
    /// an acknowledgement of one never counts on top of a report (see
    /// [`BlockSender::on_symbol_acked_in`]).
    resent: Vec<u16>,
    /// A release timeout found this block unreleased with nothing in flight: until the next
    /// report, only the receiver's count (or one short of the length) is believed.
    pub doubted: bool,
    /// Since when the block has waited for the receiver with nothing in flight (see
    /// [`BlockSender::update_waiting`]), and how many release timeouts it has had.
    waiting_since: Option<Instant>,
    release_timeouts: u32,
    /// Symbols of this block declared lost so far (they use up its proactive margin).
    pub lost: u64,
    pub decoded: bool,
    /// The path the block is mapped to, with per-path placement ([`BlockSender::set_per_path`]):
    /// set when its first source symbol goes out; all its symbols then travel on that path.
    pub path: Option<u8>,
    /// Some symbol of the block went out (the peer may know it: it can no longer be re-cut).
    sent_any: bool,
    /// The block ends a burst ([`Tail`]): its repair margin is sized for latency and sent
    /// ahead of new data (see `redundancy::adaptive`). `None` for the blocks of a bulk transfer.
    pub tail: Option<Tail>,
    /// An app-idle tail's path loss estimates (fast, long) when its last source went out
    /// ([`BlockSender::fix_margin_loss`]): its margin is sized with them, or with the path's
    /// later estimates if those are lower, so it never grows once its sources are out (for a
    /// block all of whose symbols went on one path; `redundancy::adaptive`).
    pub margin_loss: Option<(f64, f64)>,
    /// The application went idle at the end of a long burst (a bulk transfer's end) while the
    /// block was not yet decoded ([`BlockSender::on_app_idle`]): the link behind it idles, and
    /// spare capacity carries its repair for a burst of losses (`redundancy::adaptive`).
    pub drained: bool,
    /// The block holds a small write (a request, a response) cut ahead of bulk data already cut
    /// for the wire ([`BlockSender::close_block_as_urgent`]): schedulers that allocate blocks in
    /// order may serve it first.
    pub urgent: bool,
    /// Its source symbols go without their trailing zeros (see `write_symbol`).
    short_sources: bool,
    /// Per-segment placement: the open block of its path, which grows by one source each time
    /// the path is given data ([`BlockSender::push_source_on`]).
    pub growing: bool,
    /// A symbol written after the block closed went out, so it told the receiver the length
    /// (set from the start without per-path placement, whose closed blocks' repairs tell it).
    len_sent: bool,
}

impl SendBlock {
    /// Whether `path` may carry this block's symbols (any path unless the block is mapped).
    pub fn may_carry(&self, path: u8) -> bool {
        self.path.is_none_or(|p| p == path)
    }

    /// Source symbols in the block so far (final once `closed`).
    pub fn len(&self) -> usize {
        self.encoder.source_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Source symbols not yet sent once.
    pub fn unsent_sources(&self) -> u64 {
        (self.len() - self.next_unsent) as u64
    }

    /// Every source symbol has been sent once.
    pub fn all_sources_sent(&self) -> bool {
        self.next_unsent == self.len()
    }

    /// Degrees of freedom the receiver holds, as far as the sender knows, at most the block's
    /// length: the receiver's last report plus what was acknowledged after it arrived, else the
    /// packet-level count; a doubted block only the report, never the whole length.
    pub fn known_dofs(&self) -> u64 {
        let len = self.len() as u64;
        if self.doubted {
            return self.reported.unwrap_or(len).min(len.saturating_sub(1));
        }
        match self.reported {
            Some(dofs) => (dofs + self.acked_since_report).min(len),
            None => self.acked.min(len),
        }
    }

    /// Whether the block waits on the receiver alone: every source sent, nothing in flight,
    /// not released — unless it is still open and the receiver reported all its sources (it
    /// waits for more data then, not for a symbol).
    fn waits_on_receiver(&self) -> bool {
        let confirmed_open = !self.closed && self.reported.is_some_and(|d| d >= self.len() as u64);
        !self.decoded && !self.is_empty() && self.all_sources_sent() && self.in_flight == 0 && !confirmed_open
    }

    /// A symbol of the block went out.
    fn on_sent(&mut self) {
        self.sent_any = true;
        self.in_flight += 1;
        self.waiting_since = None;
    }

    /// Writes source symbol `index` as a SYMBOL frame (`None` if it was never pushed).
    fn write_source(&mut self, index: u16, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        let payload = self.encoder.source(index)?;
        if usize::from(index) < self.next_unsent && !self.resent.contains(&index) {
            self.resent.push(index);
        }
        let short = self.short_sources;
        write_symbol(w, self.id, SymbolId::Source { index }, self.block_len(), payload, short);
        self.len_sent |= self.closed;
        self.on_sent();
        Some(OutgoingSymbol { block: self.id, source: Some(index), group: None })
    }

    /// Writes the first source symbol not yet sent once.
    fn write_next_unsent(&mut self, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        let index = self.next_unsent as u16;
        let sent = self.write_source(index, w)?;
        self.next_unsent += 1;
        Some(sent)
    }

    fn block_len(&self) -> Option<u16> {
        self.closed.then_some(self.len() as u16)
    }

    /// XOR blocks: the sources sent once but not yet covered by any parity group (empty for
    /// other codes).
    pub fn uncovered_sent(&self) -> std::ops::Range<usize> {
        match &self.encoder {
            BlockEncoder::Xor(x) => x.uncovered_start().min(self.next_unsent)..self.next_unsent,
            _ => 0..0,
        }
    }

    /// XOR blocks: parities made ready by a cover but not yet sent (none once decoded: they
    /// could not be sent, see [`BlockSender::write_repair`]).
    pub fn pending_parities(&self) -> u64 {
        match &self.encoder {
            BlockEncoder::Xor(x) if !self.decoded => x.pending_repairs() as u64,
            _ => 0,
        }
    }

    /// Whether [`BlockSender::write_repair`] would write a repair of this block now: any code
    /// but XOR can always make a new one; an XOR block only a parity already grouped.
    pub fn can_write_repair(&self) -> bool {
        !self.decoded
            && match &self.encoder {
                BlockEncoder::Xor(x) => x.pending_repairs() > 0,
                _ => true,
            }
    }
}

/// A parity group decision for sources already sent (see [`BlockSender::cover`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorCover {
    pub block: u64,
    /// Sources `start..end` get `interleave` interleaved groups; uncovered sources before
    /// `start` stay without parity.
    pub start: usize,
    pub end: usize,
    pub interleave: usize,
}

/// The open blocks, oldest first.
pub struct BlockSender {
    config: CodecConfig,
    window: usize,
    blocks: VecDeque<SendBlock>,
    next_block: u64,
    scratch: Vec<u8>,
    /// Lost source symbols to send again, for the modes that retransmit, each with the path it
    /// must go on (`None`: any).
    retransmit: VecDeque<(u64, u16, Option<u8>)>,
    /// XOR groups are formed at send time by [`BlockSender::cover`] (the seed papers' modes).
    manual_groups: bool,
    /// Each block is mapped whole onto the path that sends its first source symbol.
    per_path: bool,
    /// The symbol size of blocks opened from now on (PROTOCOL.md §14.3: one size per block).
    next_symbol_size: usize,
    /// Queued retransmissions go out in sequence order (block, index), each once: TCP's resends
    /// from its cumulative point (`conn::LossRecovery::Cumulative`).
    in_order: bool,
    /// Source symbols go without their trailing zeros ([`BlockSender::set_short_sources`]).
    short_sources: bool,
    /// Source symbols pushed since the application was last idle ([`BlockSender::on_app_idle`]).
    burst_sources: u64,
}

impl BlockSender {
    pub fn new(config: CodecConfig, window: usize) -> BlockSender {
        let scratch = vec![0; config.symbol_size];
        BlockSender {
            window,
            blocks: VecDeque::new(),
            next_block: 0,
            scratch,
            retransmit: VecDeque::new(),
            manual_groups: false,
            per_path: false,
            next_symbol_size: config.symbol_size,
            in_order: false,
            short_sources: false,
            burst_sources: 0,
            config,
        }
    }

    /// Sources ending in zero bytes go as SHORT_SYMBOL frames, without those zeros (PROTOCOL.md
    /// §8.10; braid's mode: the seed modes keep their papers' whole symbols).
    pub fn set_short_sources(&mut self) {
        self.short_sources = true;
    }

    /// The symbol size of the blocks opened from now on (PROTOCOL.md §14.3; path MTU
    /// discovery raises it). The open block keeps its own.
    pub fn set_symbol_size(&mut self, size: usize) {
        self.next_symbol_size = size.max(16);
    }

    /// The open block has another symbol size than new blocks would get: it should be closed
    /// before more data goes in, so the new size takes effect.
    pub fn resize_pending(&self) -> bool {
        self.blocks.back().is_some_and(|b| !b.closed && b.encoder.symbol_size() != self.next_symbol_size)
    }

    /// Per-path placement: from now on a block is mapped to the path that sends its first
    /// source symbol, and its sources, repairs and retransmissions travel on that path only
    /// (MPTCP-dFEC's intra-subflow FEC; the block id and index are the DSS-style mapping back
    /// into the connection stream).
    pub fn set_per_path(&mut self) {
        self.per_path = true;
    }

    pub fn is_per_path(&self) -> bool {
        self.per_path
    }

    /// From the next block on, XOR groups are made only by [`BlockSender::cover`].
    pub fn set_manual_groups(&mut self) {
        self.manual_groups = true;
    }

    /// Makes the parity groups `cover` describes over sources already sent; `false` if the block
    /// is unknown, not a manually grouped XOR block, or the range is not its uncovered sent part.
    pub fn cover(&mut self, cover: XorCover) -> bool {
        let Some(b) = self.block_mut(cover.block) else { return false };
        if cover.end > b.next_unsent {
            return false;
        }
        match &mut b.encoder {
            BlockEncoder::Xor(x) => x.cover(cover.start, cover.end, cover.interleave).is_ok(),
            _ => false,
        }
    }

    /// Queues source `index` of `block` to be sent again (a loss the code could not repair), on
    /// the block's path if it is mapped to one.
    pub fn queue_retransmission(&mut self, block: u64, index: u16) {
        if let Some(b) = self.block_mut(block).filter(|b| !b.decoded && usize::from(index) < b.len()) {
            let path = b.path;
            self.push_retransmission((block, index, path));
        }
    }

    /// From now on queued retransmissions go out in sequence order, each queued once (see
    /// `in_order`).
    pub fn set_in_order(&mut self) {
        self.in_order = true;
    }

    fn push_retransmission(&mut self, r: (u64, u16, Option<u8>)) {
        if !self.in_order {
            self.retransmit.push_back(r);
            return;
        }
        let at = self.retransmit.partition_point(|q| (q.0, q.1) < (r.0, r.1));
        if self.retransmit.get(at).is_none_or(|q| (q.0, q.1) != (r.0, r.1)) {
            self.retransmit.insert(at, r);
        }
    }

    /// Forgets the queued retransmissions `moot(block, index)` calls moot (the receiver's
    /// cumulative point passed them).
    pub fn drop_retransmissions(&mut self, moot: impl Fn(u64, u16) -> bool) {
        self.retransmit.retain(|&(block, index, _)| !moot(block, index));
    }

    /// Takes back the newest blocks none of whose symbols went out, if their symbol size is not
    /// the one new blocks get (PROTOCOL.md §14.3: the peer has never heard of them, so they may
    /// be cut again): returns their source symbols in order, each whole (a block closed early
    /// ends in zero bytes, which the pipe reads as padding, §10.1).
    pub fn take_unsent_blocks(&mut self) -> Vec<Vec<u8>> {
        let mut taken = Vec::new();
        while self
            .blocks
            .back()
            .is_some_and(|b| !b.sent_any && b.encoder.symbol_size() != self.next_symbol_size)
        {
            taken.push(self.blocks.pop_back().expect("checked"));
        }
        // Symbol by symbol: a STREAM_TO_END frame runs to the end of its own (PROTOCOL.md §10.1).
        let mut bytes = Vec::new();
        for b in taken.iter().rev() {
            for i in 0..b.len() {
                bytes.push(b.encoder.source(i as u16).expect("pushed").to_vec());
            }
        }
        if let Some(first) = taken.last() {
            self.next_block = first.id;
        }
        bytes
    }

    /// The size of the next source symbol: the open block's, else what a new block gets.
    pub fn symbol_size(&self) -> usize {
        match self.blocks.back() {
            Some(b) if !b.closed => b.encoder.symbol_size(),
            _ => self.next_symbol_size,
        }
    }

    pub fn blocks(&self) -> impl Iterator<Item = &SendBlock> {
        self.blocks.iter()
    }

    /// The open block `id`, if any.
    pub fn block(&self, id: u64) -> Option<&SendBlock> {
        self.blocks.get(self.index_of(id)?)
    }

    pub fn block_mut(&mut self, id: u64) -> Option<&mut SendBlock> {
        let index = self.index_of(id)?;
        self.blocks.get_mut(index)
    }

    /// Where block `id` sits in `blocks` (they are consecutive, oldest first).
    fn index_of(&self, id: u64) -> Option<usize> {
        Some(id.checked_sub(self.blocks.front()?.id)? as usize)
    }

    /// Source symbols cut but not yet sent once, over all blocks: the queue between the pipe and
    /// the wire.
    pub fn unsent_sources(&self) -> usize {
        self.blocks.iter().map(|b| b.unsent_sources() as usize).sum()
    }

    /// Source symbols cut since the application was last idle ([`BlockSender::on_app_idle`]):
    /// 0 while the current burst has not yet been cut at all.
    pub fn burst_len(&self) -> u64 {
        self.burst_sources
    }

    pub fn max_block_len(&self) -> usize {
        self.config.max_block_len
    }

    /// Whether a new source symbol can be accepted now.
    pub fn has_room(&self) -> bool {
        match self.blocks.back() {
            Some(b) if !b.closed => true,
            _ => self.blocks.len() < self.window,
        }
    }

    /// Appends a source symbol (exactly the symbol size) to the open block, opening one if
    /// needed; a block closes when it reaches the maximum length.
    pub fn push_source(&mut self, symbol: &[u8]) -> Result<(), CodecError> {
        if !self.has_room() {
            return Err(CodecError::BlockFull { max: self.window });
        }
        if self.blocks.back().is_none_or(|b| b.closed) {
            self.open_block()?;
        }
        let block = self.blocks.back_mut().expect("just ensured");
        block.encoder.push_source(symbol)?;
        self.burst_sources += 1;
        if block.len() == self.config.max_block_len {
            block.closed = true;
            block.encoder.flush();
        }
        Ok(())
    }

    /// Opens a new block at the back (the newest), with the symbol size in force.
    fn open_block(&mut self) -> Result<(), CodecError> {
        let id = self.next_block;
        self.next_block += 1;
        let config = CodecConfig { symbol_size: self.next_symbol_size, ..self.config.clone() };
        let mut encoder = config.encoder(id)?;
        if let (true, BlockEncoder::Xor(x)) = (self.manual_groups, &mut encoder) {
            x.set_manual();
        }
        self.blocks.push_back(SendBlock {
            id,
            encoder,
            closed: false,
            next_unsent: 0,
            in_flight: 0,
            sent_on: [0; MAX_PATHS as usize],
            acked: 0,
            reported: None,
            report_arrived: None,
            acked_since_report: 0,
            report_covers: [None; MAX_PATHS as usize],
            resent: Vec::new(),
            doubted: false,
            waiting_since: None,
            release_timeouts: 0,
            lost: 0,
            decoded: false,
            path: None,
            sent_any: false,
            tail: None,
            margin_loss: None,
            drained: false,
            urgent: false,
            short_sources: self.short_sources,
            growing: false,
            len_sent: !self.per_path,
        });
        Ok(())
    }

    /// Closes the open block at its current length (the application has nothing more to send
    /// for now, and waiting would delay the block's completion).
    pub fn close_block(&mut self) {
        if let Some(block) = self.blocks.back_mut() {
            if !block.closed && !block.is_empty() {
                block.closed = true;
                block.encoder.flush();
            }
        }
    }

    /// Writes the oldest source symbol not yet sent, as a SYMBOL frame.
    pub fn write_next_source(&mut self, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        self.blocks.iter_mut().find(|b| !b.all_sources_sent())?.write_next_unsent(w)
    }

    /// Writes the oldest source symbol not yet sent that `path` may carry; with per-path
    /// placement the block is mapped to `path` if it was not yet (without it no block has a
    /// path, so every path may carry every block).
    pub fn write_next_source_on(&mut self, path: u8, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        let block = self.blocks.iter_mut().find(|b| !b.all_sources_sent() && b.may_carry(path))?;
        if self.per_path {
            block.path = Some(path);
        }
        block.write_next_unsent(w)
    }

    /// Whether a source symbol not yet sent exists that `path` may carry.
    pub fn has_unsent_for(&self, path: u8) -> bool {
        self.blocks.iter().any(|b| !b.all_sources_sent() && b.may_carry(path))
    }

    /// Writes the oldest unsent source symbol of `block` (a scheduler may serve a later block
    /// before an earlier one's sources are all out); `None` if it has none.
    pub fn write_next_source_of(&mut self, block: u64, w: &mut Writer<'_>) -> Option<OutgoingSymbol> {
        self.block_mut(block).filter(|b| !b.all_sources_sent())?.write_next_unsent(w)
    }

    /// A copy of a symbol of `block` already written went out on another path (the redundant
    /// scheduler): one more in flight.
    pub fn on_copy_sent(&mut self, block: u64) {
        if let Some(b) = self.block_mut(block) {
            b.on_sent();
        }
    }

    /// A symbol of `block` written earlier went out on `path` (the packet's path, which the
    /// writes do not know): counted in [`SendBlock::sent_on`].
    pub fn on_sent_on(&mut self, block: u64, path: u8) {
        if let Some(n) = self.block_mut(block).and_then(|b| b.sent_on.get_mut(usize::from(path))) {
            *n = n.saturating_add(1);
        }
    }

    /// Writes source symbol `index` of `block` again (the retransmitting modes: TCP-IR, dFEC and
    /// Sato et al. fall back to retransmission when their XOR cannot repair).
    pub fn write_source_again(
        &mut self,
        block: u64,
        index: u16,
        w: &mut Writer<'_>,
    ) -> Option<OutgoingSymbol> {
        self.block_mut(block)?.write_source(index, w)
    }

    /// Writes a new repair symbol of `block`, never one sent before. `None` if the block is
    /// unknown, decoded, or its code has nothing to offer now (XOR with no complete group).
    pub fn write_repair(
        &mut self,
        block: u64,
        w: &mut Writer<'_>,
    ) -> Result<Option<OutgoingSymbol>, CodecError> {
        // Not `block_mut`: the encoder writes into `self.scratch` while `b` is borrowed.
        let Some(b) = self.index_of(block).and_then(|i| self.blocks.get_mut(i)) else { return Ok(None) };
        if b.decoded {
            return Ok(None);
        }
        if !b.closed && b.encoder.family() == CodeFamily::RaptorQ {
            // A RaptorQ block is sealed by its first repair (RFC 6330 encodes a whole source
            // block): close it so later data opens a new block.
            b.closed = true;
        }
        let len = b.block_len();
        self.scratch.resize(b.encoder.symbol_size(), 0);
        let Some(id) = b.encoder.next_repair(&mut self.scratch)? else { return Ok(None) };
        let group = match id {
            SymbolId::XorParity { first, .. } => Some(first),
            _ => None,
        };
        write_symbol(w, block, id, len, &self.scratch, false);
        b.len_sent |= len.is_some();
        b.on_sent();
        Ok(Some(OutgoingSymbol { block, source: None, group }))
    }

    /// Sends the oldest queued retransmission `path` may carry (`None`: whatever path it was
    /// queued for) of a block still open; with none, the last source of a block that owes the
    /// receiver its length, on any path ([`SendBlock::owes_length`]).
    pub fn write_retransmission_on(
        &mut self,
        path: Option<u8>,
        w: &mut Writer<'_>,
    ) -> Option<OutgoingSymbol> {
        self.drop_stale_retransmissions();
        let Some(at) =
            self.retransmit.iter().position(|&(_, _, p)| path.is_none() || p.is_none() || p == path)
        else {
            return self.write_owed_length(w);
        };
        let (block, index, _) = self.retransmit.remove(at).expect("found");
        self.write_source_again(block, index, w)
    }

    /// Forgets queued retransmissions of blocks decoded or released meanwhile.
    fn drop_stale_retransmissions(&mut self) {
        if self.retransmit.is_empty() {
            return;
        }
        let blocks = &self.blocks;
        let open = |id: u64| {
            let index = blocks.front().and_then(|f| id.checked_sub(f.id));
            index.and_then(|i| blocks.get(i as usize)).is_some_and(|b| !b.decoded)
        };
        self.retransmit.retain(|&(block, _, _)| open(block));
    }

    /// Source symbols of `block` queued to be sent again.
    pub fn queued_retransmissions(&self, block: u64) -> u64 {
        self.retransmit.iter().filter(|&&(b, _, _)| b == block).count() as u64
    }

    /// Whether a queued retransmission may go on `path` (queued for it, or for any path), or a
    /// block owes its length (it may go on any path).
    pub fn has_retransmission_for(&self, path: u8) -> bool {
        self.retransmit.iter().any(|&(_, _, p)| p.is_none_or(|p| p == path)) || self.owes_any_length()
    }

    /// Frees what was bound to `path`: its queued retransmissions may go on any path, and the
    /// blocks mapped to it are mapped again by the next path that sends one of their sources
    /// (the path stopped answering: MPTCP reinjects its data on the others).
    pub fn unpin_path(&mut self, path: u8) {
        for r in self.retransmit.iter_mut().filter(|r| r.2 == Some(path)) {
            r.2 = None;
        }
        for b in self.blocks.iter_mut().filter(|b| b.path == Some(path)) {
            if b.growing {
                b.close_growing();
            }
            b.path = None;
        }
    }

    /// Whether a queued retransmission must go on `path` and no other.
    pub fn has_retransmission_only_for(&self, path: u8) -> bool {
        self.retransmit.iter().any(|&(_, _, p)| p == Some(path))
    }

    /// Whether everything pushed has been decoded by the receiver.
    pub fn is_idle(&self) -> bool {
        self.blocks.iter().all(|b| b.decoded)
    }
}

mod feedback;
mod growing;
mod release;
mod symbol;
mod tails;
#[cfg(test)]
mod tests;
