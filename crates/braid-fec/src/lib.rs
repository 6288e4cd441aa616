//! # braid-fec: the erasure codes of braid
//!
//! Contract: pure computation. No I/O, no clock, no global state beyond the one-time CPU feature
//! detection in [`gf256::Backend::best`]. Every input from a peer is validated; a bad symbol is an
//! error or a no-op, never a panic, and memory is bounded by the block limits given at
//! construction.
#![deny(unsafe_code)]

pub mod gf256;

mod block;
mod buf;
mod codec;
pub mod error;
pub mod fountain;
pub mod header;
pub mod rlnc;
mod store;
pub mod varint;
pub mod xor;

pub use block::{BlockDecoder, BlockEncoder};
pub use codec::{CodeFamily, CodecConfig, Decoder, Encoder, Received};
pub use error::{CodecError, HeaderError};
pub use header::{Coefficients, SymbolHeader, SymbolId};

/// docs/CODEC.md's example, compiled and run as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/CODEC.md")]
pub struct CodecDocDoctest;
