//! RLNC decoder: CTCP Algorithm 5 (online Gaussian elimination), in reduced row-echelon form,
//! with the payload arithmetic deferred until a source symbol is actually determined.
//!
//! Each innovative repair's payload is kept exactly as received ("raw"). A coded row is a
//! combination of raw repairs, held as two coefficient vectors side by side:
//! `F` over the block's source symbols and `T` over the raw repairs, with the invariant
//! `Σ_j T[j]·raw_j = Σ_i F[i]·source_i`. Elimination is done on these short vectors only:
//! 1. over the *unknown* columns of `F`, every row has a pivot holding 1 — CTCP's unit
//!    diagonal — and every other row holds 0 in that column (reduced form); a source received
//!    as is simply turns its column from unknown to known (the systematic fast path: known
//!    sources are never eliminated, so only the small lost × lost system is solved);
//! 2. a row whose unknown part is its pivot alone determines that source:
//!    `source_p = Σ_j T[j]·raw_j + Σ_{i known} F[i]·source_i` (characteristic 2: minus is
//!    plus). Every row solved by one event is materialized in a single multi-output dot product
//!    that reads each raw repair and each known source once.
//!
//! With (1), a source is determined by what was received exactly when such a row exists, so each
//! source is handed back as soon as it can be. A symbol whose unknown part reduces to zero is not
//! innovative (Algorithm 5: "discard"): `Received::Redundant`, and its payload is never copied.

use crate::buf::Arena;
use crate::codec::{check_symbol, CodeFamily, CodecConfig, Decoder, Received};
use crate::error::{CodecError, HeaderError};
use crate::gf256::{self, Backend};
use crate::header::{Coefficients, SymbolId};
use crate::store::SourceStore;

pub struct RlncDecoder {
    store: SourceStore,
    /// Columns of `F` and of `T`: the block's maximum length. Raw repairs can outnumber it
    /// (repairs held, then the sources they covered arriving), so when `T` is full the rows are
    /// rebased onto payloads of their own ([`RlncDecoder::rebase_raws`]).
    width: usize,
    raw: Arena,
    /// Row slots, each `[F | T]`, `2 × width` bytes.
    rows: Arena,
    /// Pivot column of each row slot; `None` if the slot is free.
    pivot_of_slot: Vec<Option<usize>>,
    /// Row slot holding each column's pivot.
    slot_of_pivot: Vec<Option<usize>>,
    free: Vec<usize>,
    active: usize,
    /// Materialization outputs.
    scratch: Arena,
    /// Reused buffers of `solve_ready`, so solving allocates nothing in steady state.
    free_columns: Vec<usize>,
    solved: Vec<(usize, usize)>,
    gathered: Vec<u8>,
    coefficient_rows: Vec<u8>,
    backend: Backend,
}

impl RlncDecoder {
    pub(crate) fn new(config: &CodecConfig) -> RlncDecoder {
        let width = config.max_block_len;
        RlncDecoder {
            store: SourceStore::new(config.symbol_size, width),
            width,
            raw: Arena::with_capacity(config.symbol_size, 0),
            rows: Arena::with_capacity(2 * width, 0),
            pivot_of_slot: Vec::new(),
            slot_of_pivot: vec![None; width],
            free: Vec::new(),
            active: 0,
            scratch: Arena::with_capacity(config.symbol_size, 0),
            free_columns: Vec::new(),
            solved: Vec::new(),
            gathered: Vec::new(),
            coefficient_rows: Vec::new(),
            backend: Backend::best(),
        }
    }

    fn alloc_slot(&mut self) -> usize {
        if let Some(slot) = self.free.pop() {
            self.rows.row_mut(slot).fill(0);
            return slot;
        }
        self.rows.grow(1);
        self.pivot_of_slot.push(None);
        self.rows.rows() - 1
    }

    fn release(&mut self, slot: usize) {
        if let Some(pivot) = self.pivot_of_slot[slot].take() {
            self.slot_of_pivot[pivot] = None;
            self.active -= 1;
        }
        self.free.push(slot);
    }

    fn active_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.pivot_of_slot.iter().enumerate().filter_map(|(slot, p)| p.map(|_| slot))
    }

    /// The first unknown column where row `slot` is non-zero.
    fn leading_unknown(&self, slot: usize) -> Option<usize> {
        let f = &self.rows.row(slot)[..self.store.extent()];
        f.iter().enumerate().position(|(i, &c)| c != 0 && !self.store.is_known(i))
    }

    /// Makes row `slot`'s coefficient at `pivot` 1, clears `pivot` from every other row, and
    /// records the pivot. Returns the rows whose unknown part changed.
    fn install_pivot(&mut self, slot: usize, pivot: usize) -> Vec<usize> {
        let scale = gf256::inv(self.rows.row(slot)[pivot]).expect("pivot is non-zero");
        self.backend.mul_assign(self.rows.row_mut(slot), scale);
        self.pivot_of_slot[slot] = Some(pivot);
        self.slot_of_pivot[pivot] = Some(slot);
        self.active += 1;
        let mut touched = vec![slot];
        for r in 0..self.pivot_of_slot.len() {
            let m = self.rows.row(r)[pivot];
            if r != slot && m != 0 && self.pivot_of_slot[r].is_some() {
                let (row, rest) = self.rows.split_row_mut(r);
                self.backend.mul_add(row, rest.row(slot), m);
                touched.push(r);
            }
        }
        touched
    }

    /// Materializes and stores the source of every candidate row whose unknown part is its
    /// pivot alone, all in one pass over the raw repairs and known sources.
    fn solve_ready(&mut self, candidates: &[usize]) {
        if candidates.is_empty() {
            return;
        }
        let extent = self.store.extent();
        // A row is solved when it is zero in every free column (unknown, and no row's pivot).
        let mut free = std::mem::take(&mut self.free_columns);
        free.clear();
        free.extend((0..extent).filter(|&i| self.slot_of_pivot[i].is_none() && !self.store.is_known(i)));
        let mut solved = std::mem::take(&mut self.solved);
        solved.clear();
        solved.extend(candidates.iter().filter_map(|&slot| {
            let pivot = self.pivot_of_slot[slot]?;
            let row = self.rows.row(slot);
            free.iter().all(|&i| row[i] == 0).then_some((slot, pivot))
        }));
        self.free_columns = free;
        if solved.is_empty() {
            self.solved = solved;
            return;
        }
        // Inputs: every raw repair (coefficients from T), every known source (from F), skipping
        // inputs no solved row uses. Coefficients are gathered output-major into one buffer.
        let outputs_count = solved.len();
        let mut gathered = std::mem::take(&mut self.gathered);
        gathered.clear();
        let mut inputs: Vec<&[u8]> = Vec::with_capacity(self.raw.rows() + self.store.known_count());
        let raw_columns = (0..self.raw.rows()).map(|j| (self.raw.row(j), self.width + j));
        let known_columns = self.store.known_below(extent).map(|(i, data)| (data, i));
        for (data, column) in raw_columns.chain(known_columns) {
            if solved.iter().any(|&(slot, _)| self.rows.row(slot)[column] != 0) {
                inputs.push(data);
                gathered.extend(solved.iter().map(|&(slot, _)| self.rows.row(slot)[column]));
            }
        }
        // `gathered` is input-major; transpose into one row per output.
        let mut coefficients = std::mem::take(&mut self.coefficient_rows);
        coefficients.clear();
        for o in 0..outputs_count {
            coefficients.extend(gathered.iter().skip(o).step_by(outputs_count));
        }
        if self.scratch.rows() < outputs_count {
            self.scratch.grow(outputs_count - self.scratch.rows());
        }
        let mut outputs = self.scratch.first_rows_mut(outputs_count);
        for out in outputs.iter_mut() {
            out.fill(0);
        }
        if !inputs.is_empty() {
            let rows: Vec<&[u8]> = coefficients.chunks_exact(inputs.len()).collect();
            self.backend.dot_add_multi(&mut outputs, &inputs, &rows);
        }
        for (n, &(slot, pivot)) in solved.iter().enumerate() {
            self.store.insert_recovered(pivot, self.scratch.row(n));
            self.release(slot);
        }
        self.solved = solved;
        self.gathered = gathered;
        self.coefficient_rows = coefficients;
    }

    /// Replaces the raw repairs by one payload per active row, `Σ_j T[j]·raw_j`, and makes
    /// each row's `T` the unit vector of its own payload. The invariant holds (each row still
    /// equals `Σ_i F[i]·source_i`) and at most `active < width` raws remain, so `T` has room for
    /// the next repair. Raw repairs are never dropped one at a time because rows refer to them
    /// by column; this is the rare compaction (only after `width` innovative repairs).
    fn rebase_raws(&mut self) {
        let slots: Vec<usize> = self.active_slots().collect();
        let (n, raws) = (slots.len(), self.raw.rows());
        let mut coefficients = Vec::with_capacity(n * raws);
        for &slot in &slots {
            coefficients.extend_from_slice(&self.rows.row(slot)[self.width..self.width + raws]);
        }
        if self.scratch.rows() < n {
            self.scratch.grow(n - self.scratch.rows());
        }
        {
            let inputs: Vec<&[u8]> = (0..raws).map(|j| self.raw.row(j)).collect();
            let mut outputs = self.scratch.first_rows_mut(n);
            for out in outputs.iter_mut() {
                out.fill(0);
            }
            if n > 0 {
                let rows: Vec<&[u8]> = coefficients.chunks_exact(raws).collect();
                self.backend.dot_add_multi(&mut outputs, &inputs, &rows);
            }
        }
        let mut raw = Arena::with_capacity(self.store.symbol_size(), self.width);
        for k in 0..n {
            raw.push(self.scratch.row(k));
        }
        self.raw = raw;
        for (k, &slot) in slots.iter().enumerate() {
            let t = &mut self.rows.row_mut(slot)[self.width..];
            t.fill(0);
            t[k] = 1;
        }
    }

    fn receive_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError> {
        self.store.check_index(index)?;
        if self.store.is_known(index) {
            return Ok(Received::Redundant);
        }
        self.store.insert(index, payload);
        if let Some(slot) = self.slot_of_pivot[index] {
            // The row loses its pivot to the now-known column; its next unknown non-zero column,
            // which (reduced form) no other row pivots on, becomes its pivot.
            self.pivot_of_slot[slot] = None;
            self.slot_of_pivot[index] = None;
            self.active -= 1;
            match self.leading_unknown(slot) {
                Some(pivot) => {
                    let touched = self.install_pivot(slot, pivot);
                    self.solve_ready(&touched);
                }
                None => self.release(slot),
            }
        } else if self.active > 0 {
            let touched: Vec<usize> = self.active_slots().filter(|&r| self.rows.row(r)[index] != 0).collect();
            self.solve_ready(&touched);
        }
        Ok(Received::Innovative)
    }

    fn receive_repair(
        &mut self,
        span: usize,
        coefficients: &Coefficients<'_>,
        payload: &[u8],
    ) -> Result<Received, CodecError> {
        if span == 0 {
            return Err(HeaderError::OutOfRange { field: "span" }.into());
        }
        if let Coefficients::Explicit(c) = coefficients {
            if c.len() != span {
                return Err(HeaderError::OutOfRange { field: "coefficients" }.into());
            }
        }
        self.store.check_span(span)?;
        if self.store.is_complete() {
            return Ok(Received::Redundant);
        }

        if self.raw.rows() == 0 && self.rows.rows() == 0 {
            // First repair of the block: reserve for every source still unknown, the most
            // this block can ever need, so the arenas are not regrown symbol by symbol.
            let unknown = self.store.extent().saturating_sub(self.store.known_count()).max(1);
            self.raw = Arena::with_capacity(self.store.symbol_size(), unknown);
            self.rows = Arena::with_capacity(2 * self.width, unknown + 1);
            self.scratch = Arena::with_capacity(self.store.symbol_size(), unknown);
        }
        if self.raw.rows() >= self.width {
            self.rebase_raws();
        }
        let slot = self.alloc_slot();
        let raw_index = self.raw.rows();
        {
            let row = self.rows.row_mut(slot);
            match coefficients {
                Coefficients::Seed(seed) => super::coefficients_from_seed(*seed, &mut row[..span]),
                Coefficients::Explicit(c) => row[..span].copy_from_slice(c),
            }
            row[self.width + raw_index] = 1;
        }
        // Reduce by the existing rows. In reduced form a pivot row is zero in every other
        // pivot column, so the multipliers are the incoming coefficients themselves and the
        // whole reduction is one dot product.
        let mut pivot_slots = Vec::new();
        let mut multipliers = Vec::new();
        for (column, &m) in self.rows.row(slot)[..span].iter().enumerate() {
            if m != 0 {
                if let Some(r) = self.slot_of_pivot[column] {
                    pivot_slots.push(r);
                    multipliers.push(m);
                }
            }
        }
        if !pivot_slots.is_empty() {
            let (row, rest) = self.rows.split_row_mut(slot);
            let pivot_rows: Vec<&[u8]> = pivot_slots.iter().map(|&r| rest.row(r)).collect();
            self.backend.dot_add(row, &pivot_rows, &multipliers);
        }
        match self.leading_unknown(slot) {
            None => {
                self.release(slot);
                Ok(Received::Redundant)
            }
            Some(pivot) => {
                self.raw.push(payload);
                let touched = self.install_pivot(slot, pivot);
                self.solve_ready(&touched);
                Ok(Received::Innovative)
            }
        }
    }
}

impl Decoder for RlncDecoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::Rlnc
    }

    fn symbol_size(&self) -> usize {
        self.store.symbol_size()
    }

    fn receive(&mut self, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError> {
        check_symbol(CodeFamily::Rlnc, self.store.symbol_size(), id, payload)?;
        match id {
            SymbolId::Source { index } => self.receive_source(usize::from(*index), payload),
            SymbolId::Rlnc { span, coefficients } => {
                self.receive_repair(usize::from(*span), coefficients, payload)
            }
            _ => unreachable!("check_symbol admits only source and RLNC symbols"),
        }
    }

    fn set_source_count(&mut self, source_count: usize) -> Result<(), CodecError> {
        self.store.set_source_count(source_count)
    }

    fn source_count(&self) -> Option<usize> {
        self.store.source_count()
    }

    fn rank(&self) -> usize {
        self.store.known_count() + self.active
    }

    fn needed(&self) -> usize {
        self.store.extent().saturating_sub(self.rank())
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
