//! RaptorQ, the fountain code of RFC 6330, over the `raptorq` crate.
//!
//! FMTCP (Cui et al., "FMTCP: A Fountain Code-based Multipath Transmission Control Protocol")
//! codes each block with a fountain code so that every subflow can keep sending fresh encoding
//! symbols of a block until the receiver has enough, without caring which particular symbols were
//! lost on which path. This module is that code for braid: RFC 6330 RaptorQ, systematic, so the
//! `k` source symbols are encoding symbols 0..k (sent as [`SymbolId::Source`]) and repair symbols
//! carry encoding symbol ids (ESIs) `k, k + 1, …` (RFC 6330 §4.4.2), at most [`MAX_ESI`]
//! (the ESI is 24 bits, §3.2). The block length travels in every repair header
//! ([`SymbolId::RaptorQ`]'s `source_count`), because RaptorQ's repair symbols depend on it.
//!
//! Each braid block is one RaptorQ source block (source block number 0, one sub-block), of at
//! most [`MAX_BLOCK_LEN`] symbols: RFC 6330's K'max (§5.1.2, the last row of Table 2 in §5.6).
//!
//! # Decoding
//!
//! RFC 6330's abstract: a block is recovered "from almost any set of encoding symbols of
//! sufficient cardinality -- in most cases, a set of cardinality equal to the number of source
//! symbols is sufficient; in rare cases, a set of cardinality slightly more". Each symbol beyond
//! `k` cuts the chance of failure by roughly a factor of 256 (the HDPC rows are over GF(2^8)), so
//! `k + 2` distinct symbols all but always suffice. The decoder therefore counts every new
//! distinct symbol as [`Received::Innovative`] — RaptorQ repairs are innovative with
//! overwhelming probability, and which ones are not is only known by solving — so
//! [`Decoder::rank`] counts distinct symbols held, not a proven rank. Once it holds `k` of them
//! it runs the `raptorq` block decoder, and again on each further new symbol if that fails;
//! while the block is incomplete [`Decoder::needed`] never drops below 1, even if a failed
//! attempt left `rank ≥ k`.
//!
//! # Guarding the `raptorq` crate
//!
//! `raptorq` asserts rather than returns errors: on a packet of the wrong length, an ESI of
//! 2^24 or more, a source block number other than the decoder's, more than K'max symbols, a
//! symbol size of 0, or object parameters beyond RFC 6330's limits. Every one of these is
//! checked here before a symbol reaches it, so no input from a peer can panic. A repair symbol
//! whose ESI is below its block length would be taken by `raptorq` as a *source* symbol; it is
//! refused too (the header parser already refuses it; a hand-built [`SymbolId`] might not).
//!
//! Like every erasure code, RaptorQ cannot tell a corrupted payload from a good one: a repair
//! with garbage contents but a valid, new header is accepted and spoils the decode. Integrity
//! is the transport's job (checksums, AEAD) before symbols reach the codec.

use std::collections::HashSet;

use raptorq::{
    EncodingPacket, ObjectTransmissionInformation, PayloadId, SourceBlockDecoder, SourceBlockEncoder,
};

use crate::codec::{check_symbol, CodeFamily, CodecConfig, Decoder, Encoder, Received};
use crate::error::{CodecError, HeaderError};
use crate::header::{SymbolId, MAX_ESI};
use crate::store::SourceStore;

/// Most source symbols per RaptorQ block: K'max of RFC 6330 (§5.1.2).
pub const MAX_BLOCK_LEN: usize = 56403;

/// Repair symbols a decoder keeps beyond the block length; later ones are [`Received::Redundant`].
/// At 32 extra symbols the chance that they still do not suffice is far below 256^-30.
const EXTRA_REPAIRS: usize = 32;

/// Most bytes an encoder reserves for its sources before the first one arrives.
const MAX_RESERVE: usize = 16 << 20;

/// The source block number every braid block uses (one RaptorQ source block per braid block).
const SOURCE_BLOCK: u8 = 0;

/// RFC 6330 symbol alignment `Al`. With a single sub-block `raptorq` never splits symbols, so the
/// alignment only has to divide the symbol size (1 always does) and has no effect on speed.
const ALIGNMENT: u8 = 1;

/// The RaptorQ object parameters of one block of `k` symbols, or `None` if `raptorq` would
/// refuse them (it asserts: symbol size in 1..=65535, `k` in 1..=K'max).
fn transmission_info(symbol_size: usize, k: usize) -> Option<ObjectTransmissionInformation> {
    let t = u16::try_from(symbol_size).ok().filter(|&t| t > 0)?;
    if k == 0 || k > MAX_BLOCK_LEN {
        return None;
    }
    // F = k·T ≤ 56403 · 65535 < 2^32, well below RFC 6330's 946270874880-byte limit.
    let transfer_length = (k as u64) * u64::from(t);
    Some(ObjectTransmissionInformation::new(transfer_length, t, 1, 1, ALIGNMENT))
}

fn bad_symbol_size() -> CodecError {
    CodecError::InvalidParameter("symbol_size must be in 1..=65535")
}

/// The sending side of one RaptorQ block.
///
/// Source symbols are appended to one contiguous buffer, which is what `raptorq` takes. (Not an
/// `Arena`: its rows are padded to 64 bytes for braid's GF(2^8) kernels, which RaptorQ never
/// runs, so sealing would need a second, staging copy of the whole block; that copy and the
/// arena's zeroing cost 5–10% of an encode.)
///
/// The first [`Encoder::next_repair`] seals the block: `raptorq` builds the RFC 6330
/// intermediate symbols once (its encoding plan is cached per block length), after which each
/// repair is one `Enc[]` evaluation (§5.3.5.3) plus one copy into the caller's buffer.
pub struct RaptorqEncoder {
    symbol_size: usize,
    max_len: usize,
    /// `count × symbol_size` bytes: source `i` at `i × symbol_size`.
    sources: Vec<u8>,
    count: usize,
    sealed: Option<SourceBlockEncoder>,
    /// Repairs made ahead (see [`RaptorqEncoder::next_batch`]), ESIs `next_esi, next_esi + 1, …`.
    ready: std::vec::IntoIter<EncodingPacket>,
    /// Size of the next batch; doubles up to `batch_cap`.
    batch: u32,
    batch_cap: u32,
    next_esi: u32,
}

impl RaptorqEncoder {
    pub(crate) fn new(config: &CodecConfig) -> Self {
        let max_len = config.max_block_len.min(MAX_BLOCK_LEN);
        // Reserved, not touched: pages are only faulted in as sources arrive, and pushes never
        // reallocate and copy. Past 16 MiB (large blocks of large symbols) the buffer grows instead.
        let initial = max_len.saturating_mul(config.symbol_size).min(MAX_RESERVE);
        RaptorqEncoder {
            symbol_size: config.symbol_size,
            max_len,
            sources: Vec::with_capacity(initial),
            count: 0,
            sealed: None,
            ready: Vec::new().into_iter(),
            batch: 1,
            batch_cap: 1,
            next_esi: 0,
        }
    }

    /// Builds the `raptorq` encoder over the `count` sources pushed so far.
    fn seal(&mut self) -> Result<(), CodecError> {
        let k = self.count;
        let info = transmission_info(self.symbol_size, k).ok_or_else(bad_symbol_size)?;
        self.sealed = Some(SourceBlockEncoder::new(SOURCE_BLOCK, &info, &self.sources));
        self.next_esi = k as u32;
        self.batch_cap = (k / 64).clamp(1, 32) as u32;
        Ok(())
    }

    /// Makes the next few repairs at once. Each `raptorq` call first looks `k` up in RFC 6330's
    /// Table 2 by linear scan, which for large blocks costs a quarter of a 1280-byte repair or
    /// more; a batch pays it once. Batches start at one repair and double up to `k / 64`
    /// (1..=32), so at most as many repairs are made ahead as were already asked for.
    fn next_batch(&mut self) -> bool {
        let Some(encoder) = self.sealed.as_ref() else {
            return false;
        };
        let k = self.count as u32;
        let esi = self.next_esi;
        if esi > MAX_ESI {
            return false;
        }
        // ESIs stay within 24 bits (`raptorq` asserts it).
        let n = self.batch.min(MAX_ESI - esi + 1);
        self.ready = encoder.repair_packets(esi - k, n).into_iter();
        self.batch = (self.batch * 2).min(self.batch_cap);
        true
    }
}

impl Encoder for RaptorqEncoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::RaptorQ
    }

    fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    #[inline]
    fn source_count(&self) -> usize {
        self.count
    }

    fn push_source(&mut self, symbol: &[u8]) -> Result<SymbolId<'static>, CodecError> {
        if self.sealed.is_some() {
            return Err(CodecError::Sealed);
        }
        if symbol.len() != self.symbol_size {
            return Err(CodecError::WrongLength { expected: self.symbol_size, got: symbol.len() });
        }
        if self.count >= self.max_len {
            return Err(CodecError::BlockFull { max: self.max_len });
        }
        self.sources.extend_from_slice(symbol);
        self.count += 1;
        Ok(SymbolId::Source { index: (self.count - 1) as u16 })
    }

    fn source(&self, index: u16) -> Option<&[u8]> {
        let start = usize::from(index) * self.symbol_size;
        (usize::from(index) < self.count).then(|| &self.sources[start..start + self.symbol_size])
    }

    /// The next repair symbol, ESI `k, k + 1, …`; `None` before the first source and once the
    /// ESI space (24 bits) is exhausted. The first call seals the block.
    fn next_repair(&mut self, out: &mut [u8]) -> Result<Option<SymbolId<'_>>, CodecError> {
        if out.len() != self.symbol_size {
            return Err(CodecError::WrongLength { expected: self.symbol_size, got: out.len() });
        }
        if self.count == 0 {
            return Ok(None);
        }
        if self.sealed.is_none() {
            self.seal()?;
        }
        let packet = match self.ready.next() {
            Some(packet) => packet,
            None => {
                if !self.next_batch() {
                    return Ok(None);
                }
                let Some(packet) = self.ready.next() else { return Ok(None) };
                packet
            }
        };
        let esi = self.next_esi;
        debug_assert_eq!(packet.payload_id().encoding_symbol_id(), esi);
        // `raptorq` hands out repairs only as owned buffers: one copy into `out` is unavoidable.
        out.copy_from_slice(packet.data());
        self.next_esi = esi + 1;
        Ok(Some(SymbolId::RaptorQ { source_count: self.count as u16, esi }))
    }
}

/// The receiving side of one RaptorQ block.
///
/// Source symbols go to the `SourceStore` every family shares; repair symbols wait, one owned
/// buffer each, until the block could be solved (`k` distinct symbols). Then the `raptorq` block
/// decoder is built, given every held symbol at once, and kept: each later new symbol is handed
/// to it directly and triggers another attempt, until one succeeds. Memory is bounded by the
/// block length: at most `k + 32` repairs are kept, and `raptorq` holds a copy of each source it
/// was given. The decoding state is dropped as soon as the block is complete.
pub struct RaptorqDecoder {
    store: SourceStore,
    symbol_size: usize,
    /// ESIs of the repair symbols held (given to `inner` or waiting in `pending`).
    repair_esis: HashSet<u32>,
    /// Repairs not yet given to `inner` (all of them until the first attempt).
    pending: Vec<EncodingPacket>,
    /// Built at the first decode attempt; `None` before and once the block is complete.
    inner: Option<SourceBlockDecoder>,
}

impl RaptorqDecoder {
    pub(crate) fn new(config: &CodecConfig) -> Self {
        let max_len = config.max_block_len.min(MAX_BLOCK_LEN);
        RaptorqDecoder {
            store: SourceStore::new(config.symbol_size, max_len),
            symbol_size: config.symbol_size,
            repair_esis: HashSet::new(),
            pending: Vec::new(),
            inner: None,
        }
    }

    /// Distinct symbols held: sources received as is and repairs.
    fn distinct(&self) -> usize {
        self.store.known_count() + self.repair_esis.len()
    }

    /// Drops the decoding state once every source is known.
    fn finish(&mut self) {
        self.inner = None;
        self.pending = Vec::new();
        self.repair_esis = HashSet::new();
    }

    /// Hands `packet` (a new distinct symbol) to the decoder if one is running, or starts one if
    /// the block could now be solved; stores the recovered sources on success.
    fn offer(&mut self, packet: Option<EncodingPacket>) {
        let Some(k) = self.store.source_count() else {
            // Only sources so far (a repair fixes k): nothing to solve.
            return;
        };
        let result = match self.inner.as_mut() {
            Some(inner) => match packet {
                Some(packet) => inner.decode(std::iter::once(packet)),
                None => return,
            },
            None => {
                if let Some(packet) = packet {
                    self.pending.push(packet);
                }
                if self.distinct() < k {
                    return;
                }
                let Some(info) = transmission_info(self.symbol_size, k) else {
                    return;
                };
                let mut inner = SourceBlockDecoder::new(SOURCE_BLOCK, &info, info.transfer_length());
                let sources: Vec<EncodingPacket> = self
                    .store
                    .known_below(k)
                    .map(|(i, data)| {
                        EncodingPacket::new(PayloadId::new(SOURCE_BLOCK, i as u32), data.to_vec())
                    })
                    .collect();
                let result = inner.decode(sources.into_iter().chain(self.pending.drain(..)));
                self.inner = Some(inner);
                result
            }
        };
        let t = self.symbol_size;
        // `raptorq` returns the whole block, k·T bytes; anything else counts as a failed attempt.
        let Some(block) = result.filter(|block| block.len() == k * t) else {
            return;
        };
        for (i, data) in block.chunks_exact(t).enumerate() {
            if !self.store.is_known(i) {
                self.store.insert_recovered(i, data);
            }
        }
        self.finish();
    }

    fn receive_source(&mut self, index: usize, payload: &[u8]) -> Result<Received, CodecError> {
        self.store.check_index(index)?;
        if self.store.is_known(index) {
            return Ok(Received::Redundant);
        }
        self.store.insert(index, payload);
        if self.store.is_complete() {
            self.finish();
        } else if self.inner.is_some() {
            let packet = EncodingPacket::new(PayloadId::new(SOURCE_BLOCK, index as u32), payload.to_vec());
            self.offer(Some(packet));
        } else {
            // No decoder yet: a first attempt collects the sources from the store itself.
            self.offer(None);
        }
        Ok(Received::Innovative)
    }

    fn receive_repair(
        &mut self,
        source_count: u16,
        esi: u32,
        payload: &[u8],
    ) -> Result<Received, CodecError> {
        if source_count == 0 {
            return Err(HeaderError::OutOfRange { field: "k" }.into());
        }
        if esi > MAX_ESI || esi < u32::from(source_count) {
            return Err(HeaderError::OutOfRange { field: "esi" }.into());
        }
        let k = usize::from(source_count);
        // Last fallible step: it changes nothing unless it succeeds.
        self.store.set_source_count(k)?;
        if self.store.is_complete()
            || self.repair_esis.contains(&esi)
            || self.repair_esis.len() >= k + EXTRA_REPAIRS
        {
            return Ok(Received::Redundant);
        }
        self.repair_esis.insert(esi);
        self.offer(Some(EncodingPacket::new(PayloadId::new(SOURCE_BLOCK, esi), payload.to_vec())));
        Ok(Received::Innovative)
    }
}

impl Decoder for RaptorqDecoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::RaptorQ
    }

    fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    fn receive(&mut self, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError> {
        check_symbol(CodeFamily::RaptorQ, self.symbol_size, id, payload)?;
        if self.symbol_size == 0 || self.symbol_size > usize::from(u16::MAX) {
            return Err(bad_symbol_size());
        }
        match *id {
            SymbolId::Source { index } => self.receive_source(index.into(), payload),
            SymbolId::RaptorQ { source_count, esi } => self.receive_repair(source_count, esi, payload),
            // `check_symbol` refused every other family.
            _ => Err(CodecError::WrongFamily {
                expected: CodeFamily::RaptorQ,
                got: id.family().unwrap_or(CodeFamily::RaptorQ),
            }),
        }
    }

    fn set_source_count(&mut self, source_count: usize) -> Result<(), CodecError> {
        self.store.set_source_count(source_count)?;
        if self.store.is_complete() {
            self.finish();
        }
        Ok(())
    }

    fn source_count(&self) -> Option<usize> {
        self.store.source_count()
    }

    /// Distinct symbols held (sources received plus repairs), `k` once complete. Not a proven
    /// rank: see the module documentation.
    fn rank(&self) -> usize {
        match self.store.source_count() {
            Some(k) if self.store.is_complete() => k,
            _ => self.distinct(),
        }
    }

    /// `k − rank`, at least 1 while the block is incomplete (also after a failed solve); while
    /// `k` is unknown, counted against the highest source index seen.
    fn needed(&self) -> usize {
        if self.store.is_complete() {
            0
        } else {
            self.store.extent().saturating_sub(self.rank()).max(1)
        }
    }

    fn is_complete(&self) -> bool {
        self.store.is_complete()
    }

    fn poll_recovered(&mut self) -> Option<u16> {
        self.store.poll_recovered()
    }

    fn source(&self, index: u16) -> Option<&[u8]> {
        self.store.get(index.into())
    }
}
