//! The codec's one error type. Every variant is something a peer or a caller can cause; none is
//! a bug in this crate (those are assertions).

use crate::CodeFamily;

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

/// Why a symbol header could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("truncated: needs {needed} more bytes")]
    Truncated { needed: usize },
    #[error("unsupported header version {0} (this build speaks version {v})", v = crate::header::VERSION)]
    UnsupportedVersion(u8),
    #[error("unknown symbol kind {0}")]
    UnknownKind(u8),
    #[error("field `{field}` is out of range")]
    OutOfRange { field: &'static str },
    #[error("output buffer too small: needs {needed} bytes")]
    BufferTooSmall { needed: usize },
}
