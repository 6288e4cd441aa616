//! From a [`CodecConfig`] to a concrete code: the family limits, the factory methods, and
//! [`BlockEncoder`]/[`BlockDecoder`], any family's encoder or decoder dispatched by `match`.
//! The one module that knows every family; the families know only `codec`.

use crate::codec::{CodeFamily, CodecConfig, Decoder, Encoder, Received};
use crate::error::CodecError;
use crate::header::SymbolId;
use crate::{fountain, rlnc, xor};

impl CodeFamily {
    /// The most source symbols one block may hold.
    pub fn max_block_len(self) -> usize {
        match self {
            CodeFamily::Xor => xor::MAX_BLOCK_LEN,
            CodeFamily::Rlnc => rlnc::MAX_BLOCK_LEN,
            CodeFamily::RaptorQ => fountain::MAX_BLOCK_LEN,
        }
    }
}

impl CodecConfig {
    /// Checks the parameters against the family's limits.
    pub fn validate(&self) -> Result<(), CodecError> {
        if self.symbol_size == 0 || self.symbol_size > usize::from(u16::MAX) {
            return Err(CodecError::InvalidParameter("symbol_size must be in 1..=65535"));
        }
        if self.max_block_len == 0 || self.max_block_len > self.family.max_block_len() {
            return Err(CodecError::InvalidParameter(match self.family {
                CodeFamily::Xor => "max_block_len must be in 1..=16384 for xor",
                CodeFamily::Rlnc => "max_block_len must be in 1..=1024 for rlnc",
                CodeFamily::RaptorQ => "max_block_len must be in 1..=56403 for raptorq",
            }));
        }
        if self.family == CodeFamily::Xor {
            if self.xor_group_len == 0 || self.xor_group_len > xor::MAX_GROUP_LEN {
                return Err(CodecError::InvalidParameter("xor_group_len must be in 1..=256"));
            }
            if self.xor_interleave == 0 || self.xor_interleave > xor::MAX_INTERLEAVE {
                return Err(CodecError::InvalidParameter("xor_interleave must be in 1..=16"));
            }
        }
        Ok(())
    }

    /// An encoder for block number `block` (the number varies RLNC seeds between blocks).
    pub fn encoder(&self, block: u64) -> Result<BlockEncoder, CodecError> {
        self.validate()?;
        Ok(match self.family {
            CodeFamily::Xor => BlockEncoder::Xor(xor::XorEncoder::new(self)),
            CodeFamily::Rlnc => BlockEncoder::Rlnc(rlnc::RlncEncoder::new(self, block)),
            CodeFamily::RaptorQ => BlockEncoder::RaptorQ(fountain::RaptorqEncoder::new(self)),
        })
    }

    /// A decoder; `source_count` is the block's length if the transport already knows it.
    pub fn decoder(&self, source_count: Option<usize>) -> Result<BlockDecoder, CodecError> {
        self.validate()?;
        let mut decoder = match self.family {
            CodeFamily::Xor => BlockDecoder::Xor(xor::XorDecoder::new(self)),
            CodeFamily::Rlnc => BlockDecoder::Rlnc(rlnc::RlncDecoder::new(self)),
            CodeFamily::RaptorQ => BlockDecoder::RaptorQ(fountain::RaptorqDecoder::new(self)),
        };
        if let Some(k) = source_count {
            decoder.set_source_count(k)?;
        }
        Ok(decoder)
    }
}

/// Any family's encoder, dispatched by `match` (no vtable on the per-packet path).
pub enum BlockEncoder {
    Xor(xor::XorEncoder),
    Rlnc(rlnc::RlncEncoder),
    RaptorQ(fountain::RaptorqEncoder),
}

/// Any family's decoder, dispatched by `match`.
pub enum BlockDecoder {
    Xor(xor::XorDecoder),
    Rlnc(rlnc::RlncDecoder),
    RaptorQ(fountain::RaptorqDecoder),
}

macro_rules! dispatch {
    ($self:ident, $inner:ident => $body:expr) => {
        match $self {
            Self::Xor($inner) => $body,
            Self::Rlnc($inner) => $body,
            Self::RaptorQ($inner) => $body,
        }
    };
}

impl Encoder for BlockEncoder {
    #[inline]
    fn family(&self) -> CodeFamily {
        dispatch!(self, e => e.family())
    }
    fn symbol_size(&self) -> usize {
        dispatch!(self, e => e.symbol_size())
    }
    #[inline]
    fn source_count(&self) -> usize {
        dispatch!(self, e => e.source_count())
    }
    fn push_source(&mut self, symbol: &[u8]) -> Result<SymbolId<'static>, CodecError> {
        dispatch!(self, e => e.push_source(symbol))
    }
    fn source(&self, index: u16) -> Option<&[u8]> {
        dispatch!(self, e => e.source(index))
    }
    fn next_repair(&mut self, out: &mut [u8]) -> Result<Option<SymbolId<'_>>, CodecError> {
        dispatch!(self, e => e.next_repair(out))
    }
    fn flush(&mut self) {
        dispatch!(self, e => e.flush())
    }
}

impl Decoder for BlockDecoder {
    fn family(&self) -> CodeFamily {
        dispatch!(self, d => d.family())
    }
    fn symbol_size(&self) -> usize {
        dispatch!(self, d => d.symbol_size())
    }
    fn receive(&mut self, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError> {
        dispatch!(self, d => d.receive(id, payload))
    }
    fn set_source_count(&mut self, source_count: usize) -> Result<(), CodecError> {
        dispatch!(self, d => d.set_source_count(source_count))
    }
    fn source_count(&self) -> Option<usize> {
        dispatch!(self, d => d.source_count())
    }
    fn rank(&self) -> usize {
        dispatch!(self, d => d.rank())
    }
    fn needed(&self) -> usize {
        dispatch!(self, d => d.needed())
    }
    fn is_complete(&self) -> bool {
        dispatch!(self, d => d.is_complete())
    }
    fn poll_recovered(&mut self) -> Option<u16> {
        dispatch!(self, d => d.poll_recovered())
    }
    fn source(&self, index: u16) -> Option<&[u8]> {
        dispatch!(self, d => d.source(index))
    }
}
