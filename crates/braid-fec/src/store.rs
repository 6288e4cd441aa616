//! The source symbols a decoder knows, shared by every family's decoder.
//!
//! Tracks the block's length (fixed when the transport learns it, bounded by the configured
//! maximum before that), which sources are known, and the queue of recovered indices. Sources are
//! appended to an arena in arrival order (no zeroing) and found through an index map.

use std::collections::VecDeque;

use crate::buf::Arena;
use crate::error::CodecError;

const UNKNOWN: u32 = u32::MAX;

pub(crate) struct SourceStore {
    symbol_size: usize,
    max_len: usize,
    arena: Arena,
    /// Arena row of each source index, or `UNKNOWN`.
    row_of: Vec<u32>,
    source_count: Option<usize>,
    /// One past the highest source index any symbol has referred to.
    seen: usize,
    recovered: VecDeque<u16>,
}

impl SourceStore {
    pub(crate) fn new(symbol_size: usize, max_len: usize) -> SourceStore {
        SourceStore {
            symbol_size,
            max_len,
            arena: Arena::with_capacity(symbol_size, 0),
            row_of: Vec::new(),
            source_count: None,
            seen: 0,
            recovered: VecDeque::new(),
        }
    }

    pub(crate) fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    /// The block's length if fixed, else the configured maximum: no index may reach it.
    pub(crate) fn limit(&self) -> usize {
        self.source_count.unwrap_or(self.max_len)
    }

    pub(crate) fn source_count(&self) -> Option<usize> {
        self.source_count
    }

    pub(crate) fn known_count(&self) -> usize {
        self.arena.rows()
    }

    /// One past the highest index referred to so far, or the block length once known.
    pub(crate) fn extent(&self) -> usize {
        self.source_count.unwrap_or(self.seen)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.source_count.is_some_and(|k| self.known_count() == k)
    }

    /// Refuses an index outside the block, and widens the extent to cover it.
    pub(crate) fn check_index(&mut self, index: usize) -> Result<(), CodecError> {
        self.check_span(index + 1)
    }

    /// Refuses a symbol that covers source symbols beyond the block; widens the extent.
    pub(crate) fn check_span(&mut self, span: usize) -> Result<(), CodecError> {
        if span > self.limit() {
            return Err(CodecError::IndexOutOfRange { index: span as u64 - 1, limit: self.limit() as u64 });
        }
        self.seen = self.seen.max(span);
        Ok(())
    }

    pub(crate) fn set_source_count(&mut self, k: usize) -> Result<(), CodecError> {
        match self.source_count {
            Some(current) if current == k => Ok(()),
            Some(_) => Err(CodecError::Inconsistent {
                detail: "the block's length was already set to another value",
            }),
            None if k == 0 || k > self.max_len => {
                Err(CodecError::IndexOutOfRange { index: k as u64, limit: self.max_len as u64 })
            }
            None if k < self.seen => Err(CodecError::Inconsistent {
                detail: "symbols already refer to sources beyond this length",
            }),
            None => {
                self.source_count = Some(k);
                self.row_of.resize(k, UNKNOWN);
                if self.arena.rows() == 0 {
                    // Reserve the whole block once: rows never move afterwards.
                    self.arena = Arena::with_capacity(self.symbol_size, k);
                }
                Ok(())
            }
        }
    }

    pub(crate) fn is_known(&self, index: usize) -> bool {
        self.row_of.get(index).is_some_and(|&r| r != UNKNOWN)
    }

    pub(crate) fn get(&self, index: usize) -> Option<&[u8]> {
        self.is_known(index).then(|| self.arena.row(self.row_of[index] as usize))
    }

    /// Source `index`, which must be known.
    pub(crate) fn row(&self, index: usize) -> &[u8] {
        self.arena.row(self.row_of[index] as usize)
    }

    /// Stores source `index` (received as is); the caller has checked the index and that it is
    /// not yet known.
    pub(crate) fn insert(&mut self, index: usize, data: &[u8]) {
        debug_assert!(!self.is_known(index));
        if self.row_of.len() <= index {
            self.row_of.resize(index + 1, UNKNOWN);
        }
        self.row_of[index] = self.arena.push(data) as u32;
    }

    /// Stores source `index` as recovered by decoding and queues it for `poll_recovered`.
    pub(crate) fn insert_recovered(&mut self, index: usize, data: &[u8]) {
        self.insert(index, data);
        self.recovered.push_back(index as u16);
    }

    pub(crate) fn poll_recovered(&mut self) -> Option<u16> {
        self.recovered.pop_front()
    }

    /// Known indices below `end` and their data, in index order.
    pub(crate) fn known_below(&self, end: usize) -> impl Iterator<Item = (usize, &[u8])> {
        self.row_of[..end.min(self.row_of.len())]
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != UNKNOWN)
            .map(|(i, &r)| (i, self.arena.row(r as usize)))
    }
}
