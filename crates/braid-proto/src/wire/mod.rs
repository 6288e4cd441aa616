//! The wire format: packets, frames and transport parameters (PROTOCOL.md §7–§10).
//!
//! Peer bytes are parsed into `Repr`-style values (smoltcp's habit) by a [`Reader`] that checks
//! every length before it reads: parsing never panics, and never allocates more than the bytes
//! it was given justify.

mod frame;
mod packet;
mod params;

pub use frame::{
    AckFrame, AckRange, BlockAckFrame, CloseFrame, FecStatusFrame, Frame, FrameIter, SymbolFrame,
};
pub use packet::{ConnectionId, PacketHeader, PacketType};
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
pub const MAX_VARINT: u64 = (1 << 62) - 1;

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

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.bytes.len() < n {
            return Err(WireError::Truncated { needed: n - self.bytes.len() });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A QUIC variable-length integer (RFC 9000 §16).
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let first = self.u8()?;
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for &b in self.take(len - 1)? {
            v = v << 8 | u64::from(b);
        }
        Ok(v)
    }

    /// A varint that must be at most `max`.
    pub fn varint_max(&mut self, max: u64, field: &'static str) -> Result<u64, WireError> {
        let v = self.varint()?;
        if v > max {
            return Err(WireError::OutOfRange(field));
        }
        Ok(v)
    }

    /// A length-prefixed byte string of at most `max` bytes.
    pub fn bytes(&mut self, max: usize, field: &'static str) -> Result<&'a [u8], WireError> {
        let len = self.varint_max(max as u64, field)?;
        self.take(len as usize)
    }
}

/// Appends to a buffer.
pub struct Writer<'o> {
    pub out: &'o mut Vec<u8>,
}

impl<'o> Writer<'o> {
    pub fn new(out: &'o mut Vec<u8>) -> Writer<'o> {
        Writer { out }
    }

    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    pub fn put(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// Writes `v` (must be ≤ [`MAX_VARINT`]) in the shortest varint form.
    pub fn varint(&mut self, v: u64) {
        debug_assert!(v <= MAX_VARINT);
        match varint_len(v) {
            1 => self.u8(v as u8),
            2 => self.put(&(v as u16 | 0x4000).to_be_bytes()),
            4 => self.put(&(v as u32 | 0x8000_0000).to_be_bytes()),
            _ => self.put(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
        }
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.put(b);
    }
}

pub use braid_fec::header::varint_len;

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

    #[test]
    fn rfc9000_examples() {
        // RFC 9000 §A.1 sample varints.
        let cases: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(Reader::new(bytes).varint().unwrap(), value);
        }
        assert_eq!(Reader::new(&[0x40, 0x25]).varint().unwrap(), 37);
        assert_eq!(Reader::new(&[0x9d, 0x7f]).varint(), Err(WireError::Truncated { needed: 2 }));
    }
}
