//! Block-level coding between the data pipe and the wire (PROTOCOL.md §11).
//!
//! The connection's data pipe (stream chunks, PROTOCOL.md §10) is cut into symbols of the
//! negotiated size and the symbols into blocks (CTCP §III-A, FMTCP §IV-A). The sender keeps a
//! block until the receiver reports it decoded and answers a shortfall with new repair symbols,
//! never the same packet twice; the receiver decodes blocks and hands the pipe back in order,
//! a symbol at a time, as soon as each symbol is known.

mod recv;
mod send;

pub use recv::BlockReceiver;
pub use send::{AckedUpTo, BlockSender, OutgoingSymbol, SendBlock, Tail, XorCover};
