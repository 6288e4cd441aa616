//! The receiving side: one decoder per open block, in-order delivery of the pipe.

use std::collections::VecDeque;

use braid_fec::{BlockDecoder, CodecConfig, CodecError, Decoder, Received, SymbolHeader};

use crate::wire::BlockAckFrame;

/// Decoders for blocks `lowest .. lowest + window`, and the in-order delivery cursor.
pub struct BlockReceiver {
    config: CodecConfig,
    window: usize,
    /// Lowest block not yet fully delivered.
    lowest: u64,
    /// Next source symbol of `lowest` to deliver.
    next_symbol: usize,
    blocks: VecDeque<Option<BlockDecoder>>,
    /// Symbols accepted (innovative) and dropped as redundant, for statistics.
    pub innovative: u64,
    pub redundant: u64,
    /// Source symbols recovered by decoding (never received as such).
    pub recovered: u64,
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
            next_symbol: 0,
            blocks: VecDeque::new(),
            innovative: 0,
            redundant: 0,
            recovered: 0,
        }
    }

    pub fn lowest_undecoded(&self) -> u64 {
        self.lowest
    }

    /// Symbols the open blocks' decoders hold (their degrees of freedom, source and repair
    /// alike; a partly delivered block's delivered symbols included, as it keeps them until the
    /// whole block is delivered). Read-only, for memory accounting.
    pub fn held_symbols(&self) -> usize {
        self.blocks.iter().flatten().map(|d| d.rank()).sum()
    }

    /// Of [`held_symbols`](Self::held_symbols), those already delivered (the lowest block's
    /// first symbols, kept until the block is delivered whole).
    pub fn held_delivered(&self) -> usize {
        if matches!(self.blocks.front(), Some(Some(_))) {
            self.next_symbol
        } else {
            0
        }
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
        let decoder = match &mut self.blocks[offset] {
            Some(d) => d,
            slot @ None => {
                if !(16..=self.config.symbol_size).contains(&payload.len()) {
                    return Err(CodecError::WrongLength {
                        expected: self.config.symbol_size,
                        got: payload.len(),
                    }
                    .into());
                }
                let config = CodecConfig { symbol_size: payload.len(), ..self.config.clone() };
                slot.insert(config.decoder(None)?)
            }
        };
        if let Some(k) = block_len {
            decoder.set_source_count(k)?;
        }
        let received = decoder.receive(&header.id, payload)?;
        match received {
            Received::Innovative => self.innovative += 1,
            Received::Redundant => self.redundant += 1,
        }
        Ok(received)
    }

    /// Hands the pipe's next bytes to `deliver`, a symbol at a time, in order, for as long as
    /// the next symbol is known; releases each block once delivered whole. Returns the number
    /// of symbols delivered.
    pub fn deliver(&mut self, mut deliver: impl FnMut(&[u8])) -> usize {
        let mut delivered = 0;
        loop {
            let Some(Some(decoder)) = self.blocks.front_mut() else { return delivered };
            while decoder.poll_recovered().is_some() {
                self.recovered += 1;
            }
            while let Some(symbol) = u16::try_from(self.next_symbol).ok().and_then(|i| decoder.source(i)) {
                deliver(symbol);
                self.next_symbol += 1;
                delivered += 1;
            }
            if decoder.source_count() != Some(self.next_symbol) {
                return delivered;
            }
            self.blocks.pop_front();
            self.lowest += 1;
            self.next_symbol = 0;
        }
    }

    /// The decoder state to report (CTCP's ACK: smallest undecoded block and its dofs; braid
    /// adds a bitmap of decoded blocks beyond it).
    pub fn block_ack(&self) -> BlockAckFrame {
        let dofs = match self.blocks.front() {
            // An incomplete block never reports all its degrees of freedom: a RaptorQ decoder
            // counts distinct symbols, and after a failed solve it can hold k of them and
            // still need more; reporting k would tell the sender to stop (a stall).
            Some(Some(d)) => match d.source_count() {
                Some(k) if !d.is_complete() => d.rank().min(k.saturating_sub(1)) as u64,
                _ => d.rank() as u64,
            },
            _ => 0,
        };
        let mut decoded_beyond = 0u64;
        for (i, block) in self.blocks.iter().enumerate().skip(1).take(62) {
            if block.as_ref().is_some_and(|d| d.is_complete()) {
                decoded_beyond |= 1 << (i - 1);
            }
        }
        BlockAckFrame { lowest_undecoded: self.lowest, dofs, decoded_beyond }
    }
}
