//! The receiving side: one decoder per open block; every source symbol is handed on as soon as
//! it is known (received, or recovered by decoding), in whatever order that happens, once.

use std::collections::VecDeque;

use braid_fec::{BlockDecoder, CodecConfig, CodecError, Decoder, Received, SymbolHeader, SymbolId};

use crate::wire::{BlockAckFrame, SymbolFrame};

/// A block being received: its decoder and which of its source symbols were handed on.
struct Slot {
    decoder: BlockDecoder,
    delivered: Vec<bool>,
    delivered_count: usize,
}

impl Slot {
    fn is_done(&self) -> bool {
        self.decoder.source_count() == Some(self.delivered_count)
    }
}

/// Decoders for blocks `lowest .. lowest + window`, and the symbols known but not yet handed on.
pub struct BlockReceiver {
    config: CodecConfig,
    window: usize,
    /// Lowest block not yet fully delivered.
    lowest: u64,
    blocks: VecDeque<Option<Slot>>,
    /// (block, source index) known and not yet handed on, in the order they became known.
    ready: VecDeque<(u64, u16)>,
    /// Symbols accepted (innovative) and dropped as redundant, for statistics.
    pub innovative: u64,
    pub redundant: u64,
    /// Source symbols recovered by decoding (never received as such).
    pub recovered: u64,
    /// A short source symbol with its trailing zeros put back ([`Self::on_symbol_frame`]).
    scratch: Vec<u8>,
}

/// Why a symbol was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SymbolRejected {
    #[error("block {block} is beyond the receive window (lowest {lowest}, window {window})")]
    BeyondWindow { block: u64, lowest: u64, window: usize },
    #[error(transparent)]
    Codec(#[from] CodecError),
}

impl BlockReceiver {
    /// `window`: the negotiated blocks in flight; bounds memory to `window` decoders.
    /// `config.symbol_size` is the largest symbol accepted: each block's symbol size is that of
    /// its first symbol, 16 to this (PROTOCOL.md §14.3), and every later symbol of the block
    /// must have it.
    pub fn new(config: CodecConfig, window: usize) -> BlockReceiver {
        BlockReceiver {
            config,
            window,
            lowest: 0,
            blocks: VecDeque::new(),
            ready: VecDeque::new(),
            innovative: 0,
            redundant: 0,
            recovered: 0,
            scratch: Vec::new(),
        }
    }

    pub fn lowest_undecoded(&self) -> u64 {
        self.lowest
    }

    /// Symbols the open blocks' decoders hold (their degrees of freedom, source and repair
    /// alike; a partly delivered block's delivered symbols included, as it keeps them until the
    /// whole block is delivered). Read-only, for memory accounting.
    pub fn held_symbols(&self) -> usize {
        self.blocks.iter().flatten().map(|s| s.decoder.rank()).sum()
    }

    /// Of [`held_symbols`](Self::held_symbols), those already delivered (kept until their block
    /// is delivered whole and is the lowest).
    pub fn held_delivered(&self) -> usize {
        self.blocks.iter().flatten().map(|s| s.delivered_count).sum()
    }

    /// Offers a SYMBOL frame's symbol. A source symbol sent without its trailing zero bytes
    /// (SHORT_SYMBOL, PROTOCOL.md §8.10) gets them back first, so the decoder sees the block's
    /// symbol size `T` whatever was left off on the wire; its size must then be the block's like
    /// any other symbol's.
    pub fn on_symbol_frame(&mut self, s: &SymbolFrame<'_>) -> Result<Received, SymbolRejected> {
        let block_len = s.block_len.map(usize::from);
        if s.trailing_zeros == 0 {
            return self.on_symbol(&s.header, block_len, s.payload);
        }
        let mut whole = std::mem::take(&mut self.scratch);
        whole.clear();
        whole.extend_from_slice(s.payload);
        whole.resize(s.symbol_size(), 0);
        let received = self.on_symbol(&s.header, block_len, &whole);
        self.scratch = whole;
        received
    }

    /// Offers a symbol. `block_len` is the block's number of source symbols when the sender
    /// has closed it (PROTOCOL.md §8.5), else `None`.
    pub fn on_symbol(
        &mut self,
        header: &SymbolHeader<'_>,
        block_len: Option<usize>,
        payload: &[u8],
    ) -> Result<Received, SymbolRejected> {
        if header.block < self.lowest {
            self.redundant += 1;
            return Ok(Received::Redundant);
        }
        let offset = header.block - self.lowest;
        if offset >= self.window as u64 {
            return Err(SymbolRejected::BeyondWindow {
                block: header.block,
                lowest: self.lowest,
                window: self.window,
            });
        }
        let offset = offset as usize;
        if self.blocks.len() <= offset {
            self.blocks.resize_with(offset + 1, || None);
        }
        let slot = match &mut self.blocks[offset] {
            Some(s) => s,
            slot @ None => {
                if !(16..=self.config.symbol_size).contains(&payload.len()) {
                    return Err(CodecError::WrongLength {
                        expected: self.config.symbol_size,
                        got: payload.len(),
                    }
                    .into());
                }
                let config = CodecConfig { symbol_size: payload.len(), ..self.config.clone() };
                slot.insert(Slot {
                    decoder: config.decoder(None)?,
                    delivered: Vec::new(),
                    delivered_count: 0,
                })
            }
        };
        if let Some(k) = block_len {
            slot.decoder.set_source_count(k)?;
        }
        let received = slot.decoder.receive(&header.id, payload)?;
        match received {
            Received::Innovative => self.innovative += 1,
            Received::Redundant => self.redundant += 1,
        }
        if let (Received::Innovative, SymbolId::Source { index }) = (received, &header.id) {
            self.ready.push_back((header.block, *index));
        }
        while let Some(index) = slot.decoder.poll_recovered() {
            self.recovered += 1;
            self.ready.push_back((header.block, index));
        }
        Ok(received)
    }

    /// Hands every source symbol that became known since the last call to `deliver`, once
    /// each, in the order they became known (not block order: the pipe's frames are whole in
    /// every symbol); releases the lowest blocks once delivered whole. Returns the number of
    /// symbols delivered.
    pub fn deliver(&mut self, mut deliver: impl FnMut(&[u8])) -> usize {
        let mut delivered = 0;
        while let Some((block, index)) = self.ready.pop_front() {
            let Some(Some(slot)) =
                block.checked_sub(self.lowest).and_then(|o| self.blocks.get_mut(o as usize))
            else {
                continue;
            };
            // Only an index the decoder knows (so within the block) gets a flag.
            let Some(symbol) = slot.decoder.source(index) else { continue };
            let i = usize::from(index);
            if slot.delivered.len() <= i {
                slot.delivered.resize(i + 1, false);
            }
            if slot.delivered[i] {
                continue;
            }
            deliver(symbol);
            slot.delivered[i] = true;
            slot.delivered_count += 1;
            delivered += 1;
        }
        while let Some(Some(slot)) = self.blocks.front() {
            if !slot.is_done() {
                break;
            }
            self.blocks.pop_front();
            self.lowest += 1;
        }
        delivered
    }

    /// The decoder state to report (CTCP's ACK: smallest undecoded block and its dofs; braid
    /// adds a bitmap of decoded blocks beyond it).
    pub fn block_ack(&self) -> BlockAckFrame {
        let dofs = match self.blocks.front() {
            // An incomplete block never reports all its degrees of freedom: a RaptorQ decoder
            // counts distinct symbols, and after a failed solve it can hold k of them and
            // still need more; reporting k would tell the sender to stop (a stall).
            Some(Some(Slot { decoder: d, .. })) => match d.source_count() {
                Some(k) if !d.is_complete() => d.rank().min(k.saturating_sub(1)) as u64,
                _ => d.rank() as u64,
            },
            _ => 0,
        };
        let mut decoded_beyond = 0u64;
        for (i, block) in self.blocks.iter().enumerate().skip(1).take(62) {
            if block.as_ref().is_some_and(|s| s.decoder.is_complete()) {
                decoded_beyond |= 1 << (i - 1);
            }
        }
        BlockAckFrame { lowest_undecoded: self.lowest, dofs, decoded_beyond }
    }
}
