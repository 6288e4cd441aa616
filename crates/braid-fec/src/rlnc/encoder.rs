//! RLNC encoder: keeps the block's source symbols and makes a fresh random combination of them
//! whenever asked (CTCP §III-B: "the sender may send a coded packet from any block it holds").

use crate::buf::Arena;
use crate::codec::{CodeFamily, CodecConfig, Encoder};
use crate::error::CodecError;
use crate::gf256::Backend;
use crate::header::{Coefficients, SymbolId};

pub struct RlncEncoder {
    symbol_size: usize,
    max_len: usize,
    sources: Arena,
    count: usize,
    /// Seeds are `seed_base + n` for the n-th repair, so no two repairs of a block repeat.
    seed_base: u32,
    repairs: u32,
    explicit: bool,
    coefficients: Vec<u8>,
    backend: Backend,
}

impl RlncEncoder {
    pub(crate) fn new(config: &CodecConfig, block: u64) -> RlncEncoder {
        // Different blocks start at unrelated seeds (Fibonacci hashing of the block number).
        let seed_base = (block.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
        RlncEncoder {
            symbol_size: config.symbol_size,
            max_len: config.max_block_len,
            sources: Arena::with_capacity(config.symbol_size, config.max_block_len),
            count: 0,
            seed_base,
            repairs: 0,
            explicit: config.rlnc_explicit_coefficients,
            coefficients: vec![0; config.max_block_len],
            backend: Backend::best(),
        }
    }
}

impl Encoder for RlncEncoder {
    fn family(&self) -> CodeFamily {
        CodeFamily::Rlnc
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
        self.sources.push(symbol);
        self.count += 1;
        Ok(SymbolId::Source { index: (self.count - 1) as u16 })
    }

    fn source(&self, index: u16) -> Option<&[u8]> {
        (usize::from(index) < self.count).then(|| self.sources.row(index.into()))
    }

    /// A combination of every source symbol pushed so far; more sources may follow, and later
    /// repairs cover them too.
    fn next_repair(&mut self, out: &mut [u8]) -> Result<Option<SymbolId<'_>>, CodecError> {
        if out.len() != self.symbol_size {
            return Err(CodecError::WrongLength { expected: self.symbol_size, got: out.len() });
        }
        if self.count == 0 {
            return Ok(None);
        }
        let seed = self.seed_base.wrapping_add(self.repairs);
        self.repairs = self.repairs.wrapping_add(1);
        let span = self.count;
        let coefficients = &mut self.coefficients[..span];
        super::coefficients_from_seed(seed, coefficients);
        let sources: Vec<&[u8]> = (0..span).map(|i| self.sources.row(i)).collect();
        out.fill(0);
        self.backend.dot_add(out, &sources, coefficients);
        let coefficients =
            if self.explicit { Coefficients::Explicit(coefficients) } else { Coefficients::Seed(seed) };
        Ok(Some(SymbolId::Rlnc { span: span as u16, coefficients }))
    }
}
