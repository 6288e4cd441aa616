//! How a symbol is written as a frame.

use braid_fec::{SymbolHeader, SymbolId};

use crate::wire::{Frame, SymbolFrame, Writer};

/// A source symbol goes without its trailing zero bytes (the padding after the last pipe frame
/// of a write, PROTOCOL.md §8.10) when leaving them off saves more than their count costs.
pub(super) fn write_symbol(
    w: &mut Writer<'_>,
    block: u64,
    id: SymbolId<'_>,
    block_len: Option<u16>,
    payload: &[u8],
    short: bool,
) {
    let mut trailing_zeros = 0;
    let mut payload = payload;
    if short && matches!(id, SymbolId::Source { .. }) {
        let end = payload.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let zeros = payload.len() - end;
        if crate::wire::varint_len(zeros as u64) < zeros {
            // A symbol is at most MAX_SYMBOL (16384) bytes.
            trailing_zeros = zeros as u16;
            payload = &payload[..end];
        }
    }
    let header = SymbolHeader { block, id };
    let frame = SymbolFrame { header, block_len, payload, trailing_zeros };
    // Sized before it is written: a frame too large for the packet goes to the writer's
    // overflow (the connection sends it as SYMBOL_PART pieces).
    let out = w.destination(frame.encoded_len());
    Frame::Symbol(frame).write(&mut Writer::new(out)).expect("symbol frames built here are valid");
}
