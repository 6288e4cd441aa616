//! 64-byte-aligned symbol storage.
//!
//! A block's symbols live in one allocation, each row starting on a 64-byte boundary (a cache
//! line, and the width of an AVX-512 register), so the kernels never split a vector across lines.
//! The alignment is found with `align_offset` on an over-allocated `Vec<u8>`, and rows are only
//! appended within the reserved capacity, so the allocation never moves behind our back: no
//! `unsafe`. Appending ([`Arena::push`]) writes each byte once — a decoder created per block does
//! not pay to zero memory it is about to overwrite.

/// Bytes a row occupies: the symbol size rounded up to a multiple of 64.
pub(crate) fn row_stride(symbol_size: usize) -> usize {
    symbol_size.div_ceil(64) * 64
}

/// Rows of `symbol_size` bytes, each 64-byte aligned.
#[derive(Clone)]
pub(crate) struct Arena {
    /// `offset` bytes of alignment padding, then `rows × stride` bytes; never reallocated by
    /// `Vec` itself (see [`Arena::reserve`]).
    storage: Vec<u8>,
    offset: usize,
    stride: usize,
    symbol_size: usize,
    rows: usize,
}

impl Arena {
    /// `rows` zeroed rows.
    pub(crate) fn new(symbol_size: usize, rows: usize) -> Arena {
        let mut arena = Arena::with_capacity(symbol_size, rows);
        arena.grow(rows);
        arena
    }

    /// No rows yet, room for `capacity` without reallocating.
    pub(crate) fn with_capacity(symbol_size: usize, capacity: usize) -> Arena {
        let stride = row_stride(symbol_size);
        let mut storage: Vec<u8> = Vec::with_capacity(capacity * stride + 64);
        let offset = storage.as_ptr().align_offset(64).min(63);
        storage.resize(offset, 0);
        Arena { storage, offset, stride, symbol_size, rows: 0 }
    }

    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Makes room for `extra` more rows, moving to a new aligned allocation if needed.
    fn reserve(&mut self, extra: usize) {
        if self.storage.capacity() - self.storage.len() >= extra * self.stride {
            return;
        }
        let wanted = (self.rows + extra).max(self.rows * 2);
        let mut bigger = Arena::with_capacity(self.symbol_size, wanted);
        bigger.storage.extend_from_slice(&self.storage[self.offset..]);
        bigger.rows = self.rows;
        *self = bigger;
    }

    /// Appends `extra` zeroed rows.
    pub(crate) fn grow(&mut self, extra: usize) {
        self.reserve(extra);
        self.storage.resize(self.storage.len() + extra * self.stride, 0);
        self.rows += extra;
    }

    /// Appends a row holding `data` (exactly `symbol_size` bytes); returns its index.
    pub(crate) fn push(&mut self, data: &[u8]) -> usize {
        debug_assert_eq!(data.len(), self.symbol_size);
        self.reserve(1);
        self.storage.extend_from_slice(data);
        self.storage.resize(self.storage.len() + self.stride - self.symbol_size, 0);
        self.rows += 1;
        self.rows - 1
    }

    pub(crate) fn row(&self, index: usize) -> &[u8] {
        let start = self.offset + index * self.stride;
        &self.storage[start..start + self.symbol_size]
    }

    pub(crate) fn row_mut(&mut self, index: usize) -> &mut [u8] {
        let start = self.offset + index * self.stride;
        &mut self.storage[start..start + self.symbol_size]
    }

    /// The first `n` rows, mutably and disjointly.
    pub(crate) fn first_rows_mut(&mut self, n: usize) -> Vec<&mut [u8]> {
        let symbol_size = self.symbol_size;
        self.storage[self.offset..]
            .chunks_mut(self.stride)
            .take(n)
            .map(|row| &mut row[..symbol_size])
            .collect()
    }

    /// One row mutably and the other rows readable, for `row ^= f(other rows)`.
    pub(crate) fn split_row_mut(&mut self, index: usize) -> (&mut [u8], RowsExcept<'_>) {
        let start = self.offset + index * self.stride;
        let (before, rest) = self.storage.split_at_mut(start);
        let (row, after) = rest.split_at_mut(self.stride.min(rest.len()));
        (
            &mut row[..self.symbol_size],
            RowsExcept {
                before,
                after,
                offset: self.offset,
                stride: self.stride,
                symbol_size: self.symbol_size,
                index,
            },
        )
    }
}

/// Read access to every row but one (see [`Arena::split_row_mut`]).
pub(crate) struct RowsExcept<'a> {
    before: &'a [u8],
    after: &'a [u8],
    offset: usize,
    stride: usize,
    symbol_size: usize,
    index: usize,
}

impl<'a> RowsExcept<'a> {
    /// Row `i`; panics if `i` is the excluded row.
    pub(crate) fn row(&self, i: usize) -> &'a [u8] {
        assert_ne!(i, self.index, "row is mutably borrowed");
        if i < self.index {
            let start = self.offset + i * self.stride;
            &self.before[start..start + self.symbol_size]
        } else {
            let start = (i - self.index - 1) * self.stride;
            &self.after[start..start + self.symbol_size]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_aligned_and_survive_growth() {
        let mut arena = Arena::new(100, 5);
        for i in 0..5 {
            assert_eq!(arena.row(i).as_ptr() as usize % 64, 0);
            arena.row_mut(i).fill(i as u8 + 1);
        }
        arena.grow(2);
        for i in 0..40 {
            assert_eq!(arena.push(&[0xAB; 100]), 7 + i);
        }
        for i in 0..47 {
            assert_eq!(arena.row(i).as_ptr() as usize % 64, 0);
            let expected = match i {
                0..5 => i as u8 + 1,
                5..7 => 0,
                _ => 0xAB,
            };
            assert!(arena.row(i).iter().all(|&b| b == expected), "row {i}");
        }
        let (row, others) = arena.split_row_mut(2);
        assert!(row.iter().all(|&b| b == 3));
        assert!(others.row(0).iter().all(|&b| b == 1));
        assert!(others.row(4).iter().all(|&b| b == 5));
        assert_eq!(others.row(46).len(), 100);
    }

    #[test]
    fn pushing_within_capacity_never_moves_rows() {
        let mut arena = Arena::with_capacity(1280, 64);
        arena.push(&[1; 1280]);
        let first = arena.row(0).as_ptr();
        for _ in 1..64 {
            arena.push(&[2; 1280]);
        }
        assert_eq!(arena.row(0).as_ptr(), first);
    }
}
