//! The one API every code family implements, and the configuration that builds them (the
//! families themselves, and the dispatch over them, are in `block`).
//!
//! A transport holds one [`Encoder`] per block it is sending and one [`Decoder`] per block it is
//! receiving. Source symbols pass through unchanged (all codes are systematic); repair symbols
//! are made on demand; a decoder takes symbols in any order and hands back, by index, each source
//! symbol it recovers as soon as it can.

use crate::error::CodecError;
use crate::header::SymbolId;

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
