//! Reassembly of SYMBOL frames sent in SYMBOL_PART pieces (PROTOCOL.md §14.4).
//!
//! Bounded by construction: at most [`MAX_REASSEMBLIES`] frames at once (a new one evicts the
//! oldest), each at most [`MAX_PARTED_FRAME`] bytes (the frame parser refuses larger totals) and
//! at most [`MAX_PIECES`] pieces.

use std::collections::VecDeque;

use crate::wire::{SymbolPartFrame, MAX_PARTED_FRAME};

/// SYMBOL frames reassembled at once; a new one evicts the oldest (PROTOCOL.md §14.4: bounds the
/// receiver's memory at this many largest frames).
pub const MAX_REASSEMBLIES: usize = 4;
/// Pieces one frame may come in; more are ignored (the frame then never completes and is
/// evicted in time).
pub const MAX_PIECES: usize = 64;

/// The frames being reassembled.
#[derive(Default)]
pub struct PartReassembly {
    frames: VecDeque<PartIn>,
}

/// A SYMBOL frame being reassembled: its bytes and the ranges received.
struct PartIn {
    id: u64,
    buf: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    got: usize,
}

impl PartReassembly {
    /// Stores a piece; returns the whole frame once its last piece is in. A piece that
    /// overlaps one already held, or names another total than its frame's first piece, is
    /// ignored.
    pub fn insert(&mut self, part: SymbolPartFrame<'_>) -> Option<Vec<u8>> {
        let total = part.total as usize;
        let (start, end) = (part.offset as usize, (part.offset as usize).checked_add(part.data.len())?);
        // The parser guarantees these; checked again because this is the memory bound.
        if total > MAX_PARTED_FRAME || end > total || part.data.is_empty() {
            return None;
        }
        let i = match self.frames.iter().position(|p| p.id == part.id) {
            Some(i) => i,
            None => {
                if self.frames.len() >= MAX_REASSEMBLIES {
                    self.frames.pop_front();
                }
                self.frames.push_back(PartIn {
                    id: part.id,
                    buf: vec![0; total],
                    ranges: Vec::new(),
                    got: 0,
                });
                self.frames.len() - 1
            }
        };
        let entry = &mut self.frames[i];
        if entry.buf.len() != total
            || entry.ranges.iter().any(|&(s, e)| start < e && s < end)
            || entry.ranges.len() >= MAX_PIECES
        {
            return None; // a duplicate, or inconsistent with the pieces before it: ignored
        }
        entry.buf[start..end].copy_from_slice(part.data);
        entry.ranges.push((start, end));
        entry.got += part.data.len();
        if entry.got < total {
            return None;
        }
        self.frames.remove(i).map(|p| p.buf)
    }

    /// Frames being reassembled now.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes held for frames not yet whole.
    pub fn held_bytes(&self) -> usize {
        self.frames.iter().map(|p| p.buf.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: u64, total: u64, offset: u64, data: &[u8]) -> SymbolPartFrame<'_> {
        SymbolPartFrame { id, total, offset, data }
    }

    #[test]
    fn pieces_in_any_order_make_the_frame_and_overlaps_are_ignored() {
        let mut r = PartReassembly::default();
        assert_eq!(r.insert(part(7, 6, 3, b"def")), None);
        assert_eq!(r.insert(part(7, 6, 2, b"xx")), None); // overlaps 3..5
        assert_eq!(r.insert(part(7, 5, 0, b"abc")), None); // another total
        assert_eq!(r.insert(part(7, 6, 0, b"abc")).as_deref(), Some(&b"abcdef"[..]));
        assert!(r.is_empty());
    }

    #[test]
    fn state_stays_bounded() {
        let mut r = PartReassembly::default();
        for id in 0..100 {
            r.insert(part(id, MAX_PARTED_FRAME as u64, 0, &[1]));
        }
        assert_eq!(r.len(), MAX_REASSEMBLIES);
        assert_eq!(r.held_bytes(), MAX_REASSEMBLIES * MAX_PARTED_FRAME);
        assert_eq!(r.insert(part(1, u64::MAX, 0, &[1])), None);
    }
}
