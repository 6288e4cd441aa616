//! The wire format: packets, frames and transport parameters (PROTOCOL.md §7–§10).
//!
//! Peer bytes are parsed into `Repr`-style values (smoltcp's habit) by a [`Reader`] that checks
//! every length before it reads: parsing never panics, and never allocates more than the bytes
//! it was given justify.

mod datagram;
mod frame;
mod packet;
mod params;

pub use datagram::{
    DatagramFrame, DatagramRepairFrame, CODED_HEADER, MAX_DATAGRAM_BLOCK_LEN, MAX_DATAGRAM_PAYLOAD,
    MAX_DATAGRAM_SYMBOL,
};
pub use frame::{
    ack_len, symbol_to_end, write_ack, AckFrame, AckRange, AckRangeIter, AckRanges, BlockAckFrame,
    CloseFrame, FecStatusFrame, Frame, FrameIter, SymbolFrame, SymbolPartFrame, MAX_PARTED_FRAME, MAX_SYMBOL,
};
pub use packet::{ConnectionId, DatagramType, PacketHeader, PacketType, MAX_PATHS, PREFIX_LEN, VERSION};
pub use params::{TransportParams, MAX_BLOCKS_IN_FLIGHT};

/// Why bytes from a peer were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: {needed} more bytes needed")]
    Truncated { needed: usize },
    #[error("unsupported version {0}")]
    UnsupportedVersion(u8),
    #[error("unknown packet type {0}")]
    UnknownPacketType(u8),
    #[error("unknown frame type {0:#04x}")]
    UnknownFrame(u64),
    #[error("field `{0}` out of range")]
    OutOfRange(&'static str),
    #[error("symbol: {0}")]
    Symbol(#[from] braid_fec::HeaderError),
}

/// The largest value a QUIC varint can carry (RFC 9000 §16).
pub use braid_fec::varint::MAX as MAX_VARINT;

/// Bounds-checked reading of peer bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.bytes.len() < n {
            return Err(WireError::Truncated { needed: n - self.bytes.len() });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A QUIC variable-length integer (RFC 9000 §16).
    #[inline]
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let (v, n) =
            braid_fec::varint::decode(self.bytes).map_err(|needed| WireError::Truncated { needed })?;
        self.bytes = &self.bytes[n..];
        Ok(v)
    }

    /// A varint that must be at most `max`.
    #[inline]
    pub fn varint_max(&mut self, max: u64, field: &'static str) -> Result<u64, WireError> {
        let v = self.varint()?;
        if v > max {
            return Err(WireError::OutOfRange(field));
        }
        Ok(v)
    }

    /// A length-prefixed byte string of at most `max` bytes.
    #[inline]
    pub fn bytes(&mut self, max: usize, field: &'static str) -> Result<&'a [u8], WireError> {
        let len = self.varint_max(max as u64, field)?;
        self.take(len as usize)
    }
}

/// Appends to a buffer.
pub struct Writer<'o> {
    pub out: &'o mut Vec<u8>,
    /// A packet's limit and where a frame goes that would take `out` past it: a writer that
    /// knows its frame's length before writing (a SYMBOL frame, [`SymbolFrame::encoded_len`])
    /// asks [`Writer::destination`]. `None`: every frame goes to `out`.
    overflow: Option<(usize, &'o mut Vec<u8>)>,
}

impl<'o> Writer<'o> {
    pub fn new(out: &'o mut Vec<u8>) -> Writer<'o> {
        Writer { out, overflow: None }
    }

    /// A writer for a packet of at most `limit` bytes: a frame that asks
    /// [`Writer::destination`] and would not fit goes whole to `overflow` instead (the packet
    /// builder then sends it in pieces, PROTOCOL.md §14.4).
    pub fn with_overflow(out: &'o mut Vec<u8>, limit: usize, overflow: &'o mut Vec<u8>) -> Writer<'o> {
        Writer { out, overflow: Some((limit, overflow)) }
    }

    /// The buffer a frame of `len` bytes goes to: `out` if it fits within the limit (or none
    /// was set), else the overflow buffer.
    pub fn destination(&mut self, len: usize) -> &mut Vec<u8> {
        match &mut self.overflow {
            Some((limit, overflow)) if self.out.len() + len > *limit => overflow,
            _ => self.out,
        }
    }

    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    #[inline]
    pub fn put(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// Writes `v` (must be ≤ [`MAX_VARINT`]) in the shortest varint form.
    #[inline]
    pub fn varint(&mut self, v: u64) {
        let (bytes, n) = braid_fec::varint::encode(v);
        // Fixed-size copies: `extend_from_slice` of a run-time length calls memcpy, which
        // dominated writing ACK frames (32 ranges, two varints each).
        match n {
            1 => self.out.push(bytes[0]),
            2 => self.out.extend_from_slice(&bytes[..2]),
            4 => self.out.extend_from_slice(&bytes[..4]),
            _ => self.out.extend_from_slice(&bytes),
        }
    }

    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.put(b);
    }
}

pub use braid_fec::varint::len as varint_len;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(v in 0..=MAX_VARINT) {
            let mut out = Vec::new();
            Writer::new(&mut out).varint(v);
            prop_assert_eq!(out.len(), varint_len(v));
            let mut r = Reader::new(&out);
            prop_assert_eq!(r.varint().unwrap(), v);
            prop_assert!(r.is_empty());
        }
    }
}
