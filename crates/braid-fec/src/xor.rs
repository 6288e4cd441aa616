//! XOR parity: single-parity groups, optionally interleaved.
//!
//! - TCP-IR (dFEC paper §II): one parity every RTT/4 over what was sent since the last one, at
//!   most 16 packets: `group_len = 16`, `interleave = 1`, and the transport calls
//!   [`Encoder::flush`] on its timer — or, as braid's modes do, hands grouping over with
//!   [`XorEncoder::set_manual`] and makes each group with [`XorEncoder::cover`] when it sends.
//! - TCP-dFEC (§III-A): one parity after every `ratio` data segments: `group_len = ratio`,
//!   changed with [`XorEncoder::set_layout`] as the ratio adapts.
//! - Sato et al. (§3.2–3.4): group size min(cwnd − 1, l) and `g` groups interleaved across a
//!   window, so that a burst of up to `g` consecutive losses hits `g` different groups.
//!
//! Layout: the encoder cuts the block into windows of `interleave × group_len` source symbols;
//! group `j` of the window starting at `w` holds `w + j, w + j + g, w + j + 2g, …`. A parity's
//! header names its group as (first, stride, count), so the decoder needs no layout state and
//! can mix layouts. The decoder peels: a parity with exactly one unknown member recovers it;
//! recovering a symbol may bring another parity down to one unknown, and so on.

use std::collections::VecDeque;

use crate::buf::Arena;
use crate::codec::{check_symbol, CodeFamily, CodecConfig, Decoder, Encoder, Received};
use crate::error::{CodecError, HeaderError};
use crate::gf256::Backend;
use crate::header::SymbolId;
use crate::store::SourceStore;

/// Most source symbols per XOR block (indices fit 16 bits with room for windows).
pub const MAX_BLOCK_LEN: usize = 16_384;
/// Largest group (dFEC clamps its ratio to 256 to bound receiver buffering).
pub const MAX_GROUP_LEN: usize = 256;
/// Most interleaved groups (Sato et al. found g = 2–3 best; more delays recovery).
pub const MAX_INTERLEAVE: usize = 16;

/// A parity group: `first, first + stride, …`, `count` members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    first: usize,
    stride: usize,
    count: usize,
}

impl Group {
    fn members(self) -> impl Iterator<Item = usize> {
        (0..self.count).map(move |t| self.first + t * self.stride)
    }

    fn contains(self, index: usize) -> bool {
        index >= self.first
            && (index - self.first).is_multiple_of(self.stride)
            && (index - self.first) / self.stride < self.count
    }

    fn end(self) -> usize {
        self.first + self.stride * (self.count - 1) + 1
    }

    fn id(self) -> SymbolId<'static> {
        SymbolId::XorParity { first: self.first as u16, stride: self.stride as u16, count: self.count as u16 }
    }
}

pub struct XorEncoder {
    symbol_size: usize,
    max_len: usize,
    sources: Arena,
    count: usize,
    group_len: usize,
    interleave: usize,
    /// Layout to use from the next window on.
    next_layout: (usize, usize),
    window_start: usize,
    ready: VecDeque<Group>,
    backend: Backend,
    /// Groups are made only by [`XorEncoder::cover`] (the transport decides at send time), never
    /// by `push_source` or `flush`.
    manual: bool,
}

impl XorEncoder {
    pub(crate) fn new(config: &CodecConfig) -> XorEncoder {
        XorEncoder {
            symbol_size: config.symbol_size,
            max_len: config.max_block_len,
            sources: Arena::with_capacity(config.symbol_size, config.max_block_len.min(256)),
            count: 0,
            group_len: config.xor_group_len,
            interleave: config.xor_interleave,
            next_layout: (config.xor_group_len, config.xor_interleave),
            window_start: 0,
            ready: VecDeque::new(),
            backend: Backend::best(),
            manual: false,
        }
    }

    /// Hands grouping to the transport: from now on only [`XorEncoder::cover`] makes groups
    /// (`push_source` and `flush` make none). The seed papers decide a group when they send its
    /// parity — TCP-IR on a timer, dFEC after `ratio` segments *sent*, Sato et al. from the cwnd
    /// at that moment — while a transport may push sources into a block well before sending them.
    pub fn set_manual(&mut self) {
        self.manual = true;
    }

    /// The first source not yet covered by a group (the start of the current window).
    pub fn uncovered_start(&self) -> usize {
        self.window_start
    }

    /// Makes `interleave` interleaved groups over sources `start..end` (group `j` holds
    /// `start + j, start + j + interleave, …`) and moves the window to `end`. Sources between the
    /// window's start and `start` are left without parity (TCP-IR covers at most the 16 newest
    /// segments). Returns the number of groups made.
    pub fn cover(&mut self, start: usize, end: usize, interleave: usize) -> Result<usize, CodecError> {
        if start < self.window_start || end > self.count || start >= end {
            return Err(CodecError::InvalidParameter("xor cover range must be within the uncovered sources"));
        }
        let span = end - start;
        if interleave == 0 || interleave > MAX_INTERLEAVE || span.div_ceil(interleave) > MAX_GROUP_LEN {
            return Err(CodecError::InvalidParameter("xor cover: at most 16 groups of at most 256"));
        }
        let groups = interleave.min(span);
        for j in 0..groups {
            self.ready.push_back(Group {
                first: start + j,
                stride: interleave,
                count: (span - j).div_ceil(interleave),
            });
        }
        self.window_start = end;
        Ok(groups)
    }

    /// Sets the group length and interleaving depth for the next window (at once if the current
    /// window is still empty). dFEC calls this when its ratio changes, Sato et al. when cwnd does.
    pub fn set_layout(&mut self, group_len: usize, interleave: usize) -> Result<(), CodecError> {
        if group_len == 0 || group_len > MAX_GROUP_LEN {
            return Err(CodecError::InvalidParameter("xor group length must be in 1..=256"));
        }
        if interleave == 0 || interleave > MAX_INTERLEAVE {
            return Err(CodecError::InvalidParameter("xor interleaving depth must be in 1..=16"));
        }
        self.next_layout = (group_len, interleave);
        if self.window_start == self.count {
            (self.group_len, self.interleave) = self.next_layout;
        }
        Ok(())
    }

    /// Groups whose parity has been made ready but not yet taken by `next_repair`.
    pub fn pending_repairs(&self) -> usize {
        self.ready.len()
    }

    fn start_window(&mut self, at: usize) {
        self.window_start = at;
        (self.group_len, self.interleave) = self.next_layout;
    }
}

impl Encoder for XorEncoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::Xor
    }

    fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    #[inline]
    fn source_count(&self) -> usize {
        self.count
    }

    fn push_source(&mut self, symbol: &[u8]) -> Result<SymbolId<'static>, CodecError> {
        if symbol.len() != self.symbol_size {
            return Err(CodecError::WrongLength { expected: self.symbol_size, got: symbol.len() });
        }
        if self.count == self.max_len {
            return Err(CodecError::BlockFull { max: self.max_len });
        }
        let index = self.sources.push(symbol);
        self.count += 1;

        if self.manual {
            return Ok(SymbolId::Source { index: index as u16 });
        }
        let (l, g) = (self.group_len, self.interleave);
        let offset = index - self.window_start;
        if offset / g == l - 1 {
            self.ready.push_back(Group { first: self.window_start + offset % g, stride: g, count: l });
        }
        if offset + 1 == g * l {
            self.start_window(self.count);
        }
        Ok(SymbolId::Source { index: index as u16 })
    }

    fn source(&self, index: u16) -> Option<&[u8]> {
        (usize::from(index) < self.count).then(|| self.sources.row(index.into()))
    }

    /// The parity of the oldest complete group not yet sent; `None` if every complete group has
    /// been covered (call [`Encoder::flush`] to close a partial window).
    fn next_repair(&mut self, out: &mut [u8]) -> Result<Option<SymbolId<'_>>, CodecError> {
        if out.len() != self.symbol_size {
            return Err(CodecError::WrongLength { expected: self.symbol_size, got: out.len() });
        }
        let Some(group) = self.ready.pop_front() else { return Ok(None) };
        let mut members = group.members().map(|i| self.sources.row(i));
        out.copy_from_slice(members.next().expect("groups are never empty"));
        let rest: Vec<&[u8]> = members.collect();
        self.backend.xor_sum(out, &rest);
        Ok(Some(group.id()))
    }

    /// Closes the current window at the sources pushed so far: each of its groups that has a
    /// member gets a parity over the members it has.
    fn flush(&mut self) {
        let filled = self.count - self.window_start;
        if filled == 0 || self.manual {
            return;
        }
        let g = self.interleave;
        for j in 0..g.min(filled) {
            let count = (filled - j).div_ceil(g);
            self.ready.push_back(Group { first: self.window_start + j, stride: g, count });
        }
        self.start_window(self.count);
    }
}

/// A parity that still has two or more unknown members.
struct Pending {
    group: Group,
    slot: usize,
    unknown: usize,
}

pub struct XorDecoder {
    store: SourceStore,
    max_len: usize,
    pending: Vec<Pending>,
    payloads: Arena,
    free: Vec<usize>,
    backend: Backend,
}

impl XorDecoder {
    pub(crate) fn new(config: &CodecConfig) -> XorDecoder {
        XorDecoder {
            store: SourceStore::new(config.symbol_size, config.max_block_len),
            max_len: config.max_block_len,
            pending: Vec::new(),
            payloads: Arena::new(config.symbol_size, 0),
            free: Vec::new(),
            backend: Backend::best(),
        }
    }

    /// Parities held that still wait for a member (each would recover one more loss).
    pub fn pending_parities(&self) -> usize {
        self.pending.len()
    }

    fn alloc_slot(&mut self) -> usize {
        if let Some(slot) = self.free.pop() {
            return slot;
        }
        let old = self.payloads.rows();
        let new = (old * 2).max(4);
        self.payloads.grow(new - old);
        self.free.extend((old + 1..new).rev());
        old
    }

    /// Turns the parity in `slot` into its single unknown member `missing` and stores it.
    fn recover(&mut self, group: Group, slot: usize, missing: usize) {
        let (row, _) = self.payloads.split_row_mut(slot);
        let known: Vec<&[u8]> =
            group.members().filter(|&i| i != missing).map(|i| self.store.row(i)).collect();
        self.backend.xor_sum(row, &known);
        self.store.insert_recovered(missing, self.payloads.row(slot));
        self.free.push(slot);
    }

    /// Source `index` just became known: update the parities that cover it, peeling on.
    fn propagate(&mut self, index: usize) {
        let mut newly_known = vec![index];
        while let Some(known) = newly_known.pop() {
            let mut i = 0;
            while i < self.pending.len() {
                if !self.pending[i].group.contains(known) {
                    i += 1;
                    continue;
                }
                self.pending[i].unknown -= 1;
                match self.pending[i].unknown {
                    0 => {
                        let done = self.pending.swap_remove(i);
                        self.free.push(done.slot);
                    }
                    1 => {
                        let done = self.pending.swap_remove(i);
                        // The count can be stale: a member recovered earlier in this same
                        // propagation (still queued in `newly_known`) is counted as unknown until
                        // it is popped. Then no member is unknown and the parity is spent.
                        match done.group.members().find(|&m| !self.store.is_known(m)) {
                            Some(missing) => {
                                self.recover(done.group, done.slot, missing);
                                newly_known.push(missing);
                            }
                            None => self.free.push(done.slot),
                        }
                    }
                    _ => i += 1,
                }
            }
        }
    }
}

impl Decoder for XorDecoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::Xor
    }

    fn symbol_size(&self) -> usize {
        self.store.symbol_size()
    }

    fn receive(&mut self, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError> {
        check_symbol(CodeFamily::Xor, self.store.symbol_size(), id, payload)?;
        match *id {
            SymbolId::Source { index } => {
                let index = usize::from(index);
                self.store.check_index(index)?;
                if self.store.is_known(index) {
                    return Ok(Received::Redundant);
                }
                self.store.insert(index, payload);
                self.propagate(index);
                Ok(Received::Innovative)
            }
            SymbolId::XorParity { first, stride, count } => {
                if stride == 0 || count == 0 {
                    return Err(HeaderError::OutOfRange {
                        field: if stride == 0 { "stride" } else { "count" },
                    }
                    .into());
                }
                let group = Group { first: first.into(), stride: stride.into(), count: count.into() };
                self.store.check_span(group.end())?;
                let unknown = group.members().filter(|&i| !self.store.is_known(i)).count();
                let duplicate = self.pending.iter().any(|p| p.group == group);
                // A parity with no unknown member, a repeat, or one that would have to be held
                // beyond the memory bound (one pending parity per source symbol) carries nothing
                // usable. A parity with one unknown member is never held, so the bound does not
                // apply to it.
                let full = unknown > 1 && self.pending.len() >= self.max_len;
                if unknown == 0 || duplicate || full {
                    return Ok(Received::Redundant);
                }
                let slot = self.alloc_slot();
                self.payloads.row_mut(slot).copy_from_slice(payload);
                if unknown == 1 {
                    let missing = group.members().find(|&m| !self.store.is_known(m)).expect("one unknown");
                    self.recover(group, slot, missing);
                    self.propagate(missing);
                } else {
                    self.pending.push(Pending { group, slot, unknown });
                }
                Ok(Received::Innovative)
            }
            _ => unreachable!("check_symbol admits only source and XOR symbols"),
        }
    }

    fn set_source_count(&mut self, source_count: usize) -> Result<(), CodecError> {
        self.store.set_source_count(source_count)
    }

    fn source_count(&self) -> Option<usize> {
        self.store.source_count()
    }

    fn rank(&self) -> usize {
        self.store.known_count() + self.pending.len()
    }

    /// Held parities may be linearly dependent (two parities with the same unknown members) or
    /// independent yet beyond peeling ({0,1}, {1,2}, {0,1,2}), so `rank` can reach the block
    /// length before the block is complete: once the length is known, an incomplete block still
    /// needs at least one symbol.
    fn needed(&self) -> usize {
        let needed = self.store.extent().saturating_sub(self.rank());
        if self.store.source_count().is_some() && !self.store.is_complete() {
            needed.max(1)
        } else {
            needed
        }
    }

    fn is_complete(&self) -> bool {
        self.store.is_complete()
    }

    fn poll_recovered(&mut self) -> Option<u16> {
        self.store.poll_recovered()
    }

    fn source(&self, index: u16) -> Option<&[u8]> {
        self.store.get(usize::from(index))
    }
}
