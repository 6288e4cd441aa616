//! The codec's one error type. Every variant is something a peer or a caller can cause; none is
//! a bug in this crate (those are assertions).

use crate::CodeFamily;

/// The header's own error, where the header's parser defines it.
pub use crate::header::HeaderError;

/// Why a symbol, header or parameter was refused. The block it was offered to is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("symbol is {got} bytes, but this block's symbol size is {expected}")]
    WrongLength { expected: usize, got: usize },
    #[error("symbol index {index} is outside the block (limit {limit})")]
    IndexOutOfRange { index: u64, limit: u64 },
    #[error("block already holds its maximum of {max} source symbols")]
    BlockFull { max: usize },
    #[error("block is sealed: no source symbol may be added once repair symbols exist")]
    Sealed,
    #[error("a {got} symbol was offered to a {expected} codec")]
    WrongFamily { expected: CodeFamily, got: CodeFamily },
    #[error("block length conflict: {detail}")]
    Inconsistent { detail: &'static str },
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    #[error("header: {0}")]
    Header(#[from] HeaderError),
}
