//! The one API every code family implements, and the configuration that builds them.
//!
//! A transport holds one [`Encoder`] per block it is sending and one [`Decoder`] per block it is
//! receiving. Source symbols pass through unchanged (all codes are systematic); repair symbols
//! are made on demand; a decoder takes symbols in any order and hands back, by index, each source
//! symbol it recovers as soon as it can.

use crate::error::CodecError;
use crate::header::SymbolId;
use crate::{fountain, rlnc, xor};

/// A family of erasure codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeFamily {
    /// Single-parity XOR groups, optionally interleaved (TCP-IR, TCP-dFEC, Sato et al.).
    Xor,
    /// Systematic random linear network coding over GF(2^8) (CTCP).
    Rlnc,
    /// RaptorQ fountain code, RFC 6330 (FMTCP).
    RaptorQ,
}

impl CodeFamily {
    pub const ALL: [CodeFamily; 3] = [CodeFamily::Xor, CodeFamily::Rlnc, CodeFamily::RaptorQ];

    pub fn name(self) -> &'static str {
        match self {
            CodeFamily::Xor => "xor",
            CodeFamily::Rlnc => "rlnc",
            CodeFamily::RaptorQ => "raptorq",
        }
    }

    /// The most source symbols one block may hold.
    pub fn max_block_len(self) -> usize {
        match self {
            CodeFamily::Xor => xor::MAX_BLOCK_LEN,
            CodeFamily::Rlnc => rlnc::MAX_BLOCK_LEN,
            CodeFamily::RaptorQ => fountain::MAX_BLOCK_LEN,
        }
    }
}

impl std::fmt::Display for CodeFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CodeFamily {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CodeFamily::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown code `{s}` (expected one of: xor, rlnc, raptorq)"))
    }
}

/// What a decoder made of a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// It added a degree of freedom (or, for XOR, a source or a parity that can still help).
    Innovative,
    /// It carried nothing new: a duplicate, a linear combination of what the block holds, or a
    /// symbol for a block that is already complete. Acknowledge it, don't count it.
    Redundant,
}

/// The sending side of one block.
pub trait Encoder {
    fn family(&self) -> CodeFamily;
    fn symbol_size(&self) -> usize;
    /// Source symbols pushed so far.
    fn source_count(&self) -> usize;
    /// Appends the next source symbol (exactly [`Encoder::symbol_size`] bytes) and returns the id
    /// to send it under.
    fn push_source(&mut self, symbol: &[u8]) -> Result<SymbolId<'static>, CodecError>;
    /// A source symbol already pushed, for retransmission.
    fn source(&self, index: u16) -> Option<&[u8]>;
    /// Writes the next repair symbol into `out` (exactly [`Encoder::symbol_size`] bytes) and
    /// returns its id, or `None` if the code has nothing to repair yet (XOR: no group is
    /// complete; any code: no source symbol yet).
    fn next_repair(&mut self, out: &mut [u8]) -> Result<Option<SymbolId<'_>>, CodecError>;
    /// Makes every source symbol pushed so far eligible for repair now. XOR closes its current
    /// window of groups early (TCP-IR's "one parity every RTT/4 over what was sent"); RLNC and
    /// RaptorQ need nothing (their repairs always cover everything pushed; RaptorQ seals the
    /// block at its first repair).
    fn flush(&mut self) {}
}

/// The receiving side of one block.
pub trait Decoder {
    fn family(&self) -> CodeFamily;
    fn symbol_size(&self) -> usize;
    /// Offers a symbol. An `Err` leaves the decoder unchanged.
    fn receive(&mut self, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError>;
    /// Fixes the block's number of source symbols once the transport learns it.
    fn set_source_count(&mut self, source_count: usize) -> Result<(), CodecError>;
    /// The block's number of source symbols, if known.
    fn source_count(&self) -> Option<usize>;
    /// Degrees of freedom held: innovative symbols received (XOR: known sources plus parities
    /// still waiting to recover one).
    fn rank(&self) -> usize;
    /// Innovative symbols still needed to complete the block (a lower bound while the block's
    /// length is unknown).
    fn needed(&self) -> usize;
    /// Every source symbol of the block is known.
    fn is_complete(&self) -> bool;
    /// The index of a source symbol recovered by decoding (never one received as is), each
    /// returned once, as soon as it is recovered.
    fn poll_recovered(&mut self) -> Option<u16>;
    /// A known source symbol, received or recovered.
    fn source(&self, index: u16) -> Option<&[u8]>;
}

/// How to build encoders and decoders; both ends must agree (the transport negotiates it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecConfig {
    /// Default: RLNC.
    pub family: CodeFamily,
    /// Bytes per symbol. Default 1280 (an IPv6-minimum datagram's worth, see PROTOCOL.md).
    pub symbol_size: usize,
    /// Most source symbols per block; bounds a decoder's memory to about
    /// `max_block_len × symbol_size`. Default 64 (CTCP's blksize range).
    pub max_block_len: usize,
    /// XOR only: source symbols per parity group (Sato's l, dFEC's ratio). Default 16 (TCP-IR).
    pub xor_group_len: usize,
    /// XOR only: groups interleaved across a window (Sato §3.4's g). Default 1.
    pub xor_interleave: usize,
    /// RLNC only: send coefficients explicitly rather than as a seed. Default false.
    pub rlnc_explicit_coefficients: bool,
}

impl Default for CodecConfig {
    fn default() -> Self {
        CodecConfig {
            family: CodeFamily::Rlnc,
            symbol_size: 1280,
            max_block_len: 64,
            xor_group_len: 16,
            xor_interleave: 1,
            rlnc_explicit_coefficients: false,
        }
    }
}

impl CodecConfig {
    pub fn new(family: CodeFamily) -> CodecConfig {
        CodecConfig { family, ..CodecConfig::default() }
    }

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

/// Checks shared by every decoder: the payload length, and a repair symbol's family.
pub(crate) fn check_symbol(
    family: CodeFamily,
    symbol_size: usize,
    id: &SymbolId<'_>,
    payload: &[u8],
) -> Result<(), CodecError> {
    if let Some(got) = id.family() {
        if got != family {
            return Err(CodecError::WrongFamily { expected: family, got });
        }
    }
    if payload.len() != symbol_size {
        return Err(CodecError::WrongLength { expected: symbol_size, got: payload.len() });
    }
    Ok(())
}
