//! Symbol headers: what a receiver needs to place a symbol (compact, versioned).
//!
//! Layout, version 1 (all integers are QUIC variable-length integers, RFC 9000 §16, unless noted):
//!
//! | field        | encoding                         | present for                  |
//! |--------------|----------------------------------|------------------------------|
//! | version+kind | 1 byte: `version << 5 \| kind`   | all                          |
//! | block        | varint, < 2^62                   | all                          |
//! | index        | varint, < 2^16                   | kind 0 source                |
//! | first, stride, count | 3 varints                | kind 1 XOR parity            |
//! | span, seed   | varint, 4 bytes big-endian       | kind 2 RLNC, seeded          |
//! | span, coefficients | varint, `span` bytes       | kind 3 RLNC, explicit        |
//! | k, esi       | 2 varints, esi < 2^24            | kind 4 RaptorQ repair        |
//!
//! A source symbol costs 3 bytes of header for blocks below 64 and indices below 64; a seeded
//! RLNC repair costs 7–9. The parser reads only what the kind needs, checks every bound, and never
//! panics on any input.

use crate::CodeFamily;

/// The header version this build writes and reads.
pub const VERSION: u8 = 1;

/// Why a symbol header could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("truncated: needs {needed} more bytes")]
    Truncated { needed: usize },
    #[error("unsupported header version {0} (this build speaks version {v})", v = VERSION)]
    UnsupportedVersion(u8),
    #[error("unknown symbol kind {0}")]
    UnknownKind(u8),
    #[error("field `{field}` is out of range")]
    OutOfRange { field: &'static str },
    #[error("output buffer too small: needs {needed} bytes")]
    BufferTooSmall { needed: usize },
}

const KIND_SOURCE: u8 = 0;
const KIND_XOR: u8 = 1;
const KIND_RLNC_SEED: u8 = 2;
const KIND_RLNC_EXPLICIT: u8 = 3;
const KIND_RAPTORQ: u8 = 4;

/// Largest block id (the varint limit).
pub const MAX_BLOCK_ID: u64 = (1 << 62) - 1;
/// RFC 6330 §3.2: the encoding symbol id is 24 bits.
pub const MAX_ESI: u32 = (1 << 24) - 1;

/// How an RLNC repair symbol's coefficients are conveyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coefficients<'a> {
    /// Expanded by [`crate::rlnc::coefficients_from_seed`] (4 bytes on the wire).
    Seed(u32),
    /// One byte per covered source symbol (what a recoding node must send).
    Explicit(&'a [u8]),
}

/// Which symbol of a block this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolId<'a> {
    /// Source symbol `index`, sent as is (every code here is systematic).
    Source { index: u16 },
    /// XOR of source symbols `first, first + stride, …` (`count` of them).
    XorParity { first: u16, stride: u16, count: u16 },
    /// Σ cᵢ·sourceᵢ over the first `span` source symbols of the block.
    Rlnc { span: u16, coefficients: Coefficients<'a> },
    /// RaptorQ repair symbol `esi` (≥ `source_count`) of a block of `source_count` symbols.
    RaptorQ { source_count: u16, esi: u32 },
}

impl SymbolId<'_> {
    /// The code family of a repair symbol; `None` for a source symbol (it belongs to all).
    pub fn family(&self) -> Option<CodeFamily> {
        match self {
            SymbolId::Source { .. } => None,
            SymbolId::XorParity { .. } => Some(CodeFamily::Xor),
            SymbolId::Rlnc { .. } => Some(CodeFamily::Rlnc),
            SymbolId::RaptorQ { .. } => Some(CodeFamily::RaptorQ),
        }
    }

    pub fn is_source(&self) -> bool {
        matches!(self, SymbolId::Source { .. })
    }
}

/// A block id and a symbol id: everything in front of a symbol's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolHeader<'a> {
    pub block: u64,
    pub id: SymbolId<'a>,
}

impl<'a> SymbolHeader<'a> {
    /// Bytes [`SymbolHeader::write`] will produce.
    pub fn encoded_len(&self) -> usize {
        1 + varint_len(self.block)
            + match self.id {
                SymbolId::Source { index } => varint_len(index.into()),
                SymbolId::XorParity { first, stride, count } => {
                    varint_len(first.into()) + varint_len(stride.into()) + varint_len(count.into())
                }
                SymbolId::Rlnc { span, coefficients: Coefficients::Seed(_) } => varint_len(span.into()) + 4,
                SymbolId::Rlnc { span, coefficients: Coefficients::Explicit(c) } => {
                    varint_len(span.into()) + c.len()
                }
                SymbolId::RaptorQ { source_count, esi } => {
                    varint_len(source_count.into()) + varint_len(esi.into())
                }
            }
    }

    /// Writes the header to the front of `out`; returns its length.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, HeaderError> {
        self.validate()?;
        let needed = self.encoded_len();
        if out.len() < needed {
            return Err(HeaderError::BufferTooSmall { needed });
        }
        let mut w = Writer { out, at: 0 };
        let kind = match self.id {
            SymbolId::Source { .. } => KIND_SOURCE,
            SymbolId::XorParity { .. } => KIND_XOR,
            SymbolId::Rlnc { coefficients: Coefficients::Seed(_), .. } => KIND_RLNC_SEED,
            SymbolId::Rlnc { coefficients: Coefficients::Explicit(_), .. } => KIND_RLNC_EXPLICIT,
            SymbolId::RaptorQ { .. } => KIND_RAPTORQ,
        };
        w.bytes(&[VERSION << 5 | kind]);
        w.varint(self.block);
        match self.id {
            SymbolId::Source { index } => w.varint(index.into()),
            SymbolId::XorParity { first, stride, count } => {
                w.varint(first.into());
                w.varint(stride.into());
                w.varint(count.into());
            }
            SymbolId::Rlnc { span, coefficients } => {
                w.varint(span.into());
                match coefficients {
                    Coefficients::Seed(seed) => w.bytes(&seed.to_be_bytes()),
                    Coefficients::Explicit(c) => w.bytes(c),
                }
            }
            SymbolId::RaptorQ { source_count, esi } => {
                w.varint(source_count.into());
                w.varint(esi.into());
            }
        }
        debug_assert_eq!(w.at, needed);
        Ok(needed)
    }

    /// Parses a header from the front of `bytes`; returns it and the payload after it.
    pub fn parse(bytes: &'a [u8]) -> Result<(SymbolHeader<'a>, &'a [u8]), HeaderError> {
        let mut r = Reader { bytes };
        let first = r.take(1)?[0];
        let version = first >> 5;
        if version != VERSION {
            return Err(HeaderError::UnsupportedVersion(version));
        }
        let block = r.varint()?;
        let id = match first & 0x1f {
            KIND_SOURCE => SymbolId::Source { index: r.u16("index")? },
            KIND_XOR => SymbolId::XorParity {
                first: r.u16("first")?,
                stride: r.u16("stride")?,
                count: r.u16("count")?,
            },
            KIND_RLNC_SEED => {
                let span = r.u16("span")?;
                let seed = r.take(4)?;
                SymbolId::Rlnc {
                    span,
                    coefficients: Coefficients::Seed(u32::from_be_bytes([
                        seed[0], seed[1], seed[2], seed[3],
                    ])),
                }
            }
            KIND_RLNC_EXPLICIT => {
                let span = r.u16("span")?;
                SymbolId::Rlnc { span, coefficients: Coefficients::Explicit(r.take(span.into())?) }
            }
            KIND_RAPTORQ => {
                let source_count = r.u16("k")?;
                let esi = r.varint()?;
                let esi = u32::try_from(esi).map_err(|_| HeaderError::OutOfRange { field: "esi" })?;
                SymbolId::RaptorQ { source_count, esi }
            }
            other => return Err(HeaderError::UnknownKind(other)),
        };
        let header = SymbolHeader { block, id };
        header.validate()?;
        Ok((header, r.bytes))
    }

    /// Bounds that both the writer and the parser enforce.
    fn validate(&self) -> Result<(), HeaderError> {
        let bad = |field| Err(HeaderError::OutOfRange { field });
        if self.block > MAX_BLOCK_ID {
            return bad("block");
        }
        match self.id {
            SymbolId::Source { .. } => {}
            SymbolId::XorParity { first, stride, count } => {
                if stride == 0 {
                    return bad("stride");
                }
                if count == 0 {
                    return bad("count");
                }
                let last = u64::from(first) + u64::from(stride) * (u64::from(count) - 1);
                if last > u64::from(u16::MAX) {
                    return bad("count");
                }
            }
            SymbolId::Rlnc { span, coefficients } => {
                if span == 0 {
                    return bad("span");
                }
                if let Coefficients::Explicit(c) = coefficients {
                    if c.len() != usize::from(span) {
                        return bad("coefficients");
                    }
                }
            }
            SymbolId::RaptorQ { source_count, esi } => {
                if source_count == 0 {
                    return bad("k");
                }
                if esi > MAX_ESI || esi < u32::from(source_count) {
                    return bad("esi");
                }
            }
        }
        Ok(())
    }
}

pub use crate::varint::len as varint_len;

struct Writer<'o> {
    out: &'o mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.out[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }

    fn varint(&mut self, v: u64) {
        let (bytes, n) = crate::varint::encode(v);
        self.bytes(&bytes[..n]);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], HeaderError> {
        if self.bytes.len() < n {
            return Err(HeaderError::Truncated { needed: n - self.bytes.len() });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn varint(&mut self) -> Result<u64, HeaderError> {
        let (v, n) = crate::varint::decode(self.bytes).map_err(|needed| HeaderError::Truncated { needed })?;
        self.bytes = &self.bytes[n..];
        Ok(v)
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, HeaderError> {
        u16::try_from(self.varint()?).map_err(|_| HeaderError::OutOfRange { field })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_id() -> impl Strategy<Value = (u64, SymbolId<'static>)> {
        let coefs: &'static [u8] = Box::leak(vec![7u8; 300].into_boxed_slice());
        (
            0..=MAX_BLOCK_ID,
            prop_oneof![
                any::<u16>().prop_map(|index| SymbolId::Source { index }),
                (any::<u16>(), 1..=u16::MAX, 1..=u16::MAX)
                    .prop_map(|(first, stride, count)| { SymbolId::XorParity { first, stride, count } }),
                (1..=u16::MAX, any::<u32>())
                    .prop_map(|(span, seed)| SymbolId::Rlnc { span, coefficients: Coefficients::Seed(seed) }),
                (1..=300u16).prop_map(move |span| SymbolId::Rlnc {
                    span,
                    coefficients: Coefficients::Explicit(&coefs[..span as usize])
                }),
                (1..=u16::MAX, 0..=MAX_ESI)
                    .prop_map(|(source_count, esi)| SymbolId::RaptorQ { source_count, esi }),
            ],
        )
    }

    proptest! {
        #[test]
        fn round_trips((block, id) in arb_id(), payload in proptest::collection::vec(any::<u8>(), 0..8)) {
            let header = SymbolHeader { block, id };
            let mut buf = vec![0u8; 1024];
            match header.write(&mut buf) {
                Ok(n) => {
                    prop_assert_eq!(n, header.encoded_len());
                    buf.truncate(n);
                    buf.extend_from_slice(&payload);
                    let (parsed, rest) = SymbolHeader::parse(&buf).unwrap();
                    prop_assert_eq!(parsed, header);
                    prop_assert_eq!(rest, &payload[..]);
                    // Every strict prefix of the header is refused as truncated.
                    for cut in 0..n {
                        let truncated = matches!(SymbolHeader::parse(&buf[..cut]), Err(HeaderError::Truncated { .. }));
                        prop_assert!(truncated);
                    }
                }
                // The generator may produce out-of-range combinations; the writer must refuse them.
                Err(HeaderError::OutOfRange { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = SymbolHeader::parse(&bytes);
        }
    }

    #[test]
    fn rejects_bad_version_kind_and_ranges() {
        assert_eq!(SymbolHeader::parse(&[0x40, 0, 0]), Err(HeaderError::UnsupportedVersion(2)));
        assert_eq!(SymbolHeader::parse(&[0x3f, 0, 0]), Err(HeaderError::UnknownKind(31)));
        // index 70000 does not fit a u16
        let mut buf = vec![0x20, 0x00, 0x80, 0x01, 0x11, 0x70];
        assert_eq!(SymbolHeader::parse(&buf), Err(HeaderError::OutOfRange { field: "index" }));
        // XOR with stride 0
        buf = vec![0x21, 0x00, 0x00, 0x00, 0x05];
        assert_eq!(SymbolHeader::parse(&buf), Err(HeaderError::OutOfRange { field: "stride" }));
        // RaptorQ repair esi below k
        buf = vec![0x24, 0x00, 0x10, 0x05];
        assert_eq!(SymbolHeader::parse(&buf), Err(HeaderError::OutOfRange { field: "esi" }));
    }

    #[test]
    fn compact_sizes() {
        let source = SymbolHeader { block: 5, id: SymbolId::Source { index: 17 } };
        assert_eq!(source.encoded_len(), 3);
        let rlnc = SymbolHeader {
            block: 1000,
            id: SymbolId::Rlnc { span: 64, coefficients: Coefficients::Seed(9) },
        };
        assert_eq!(rlnc.encoded_len(), 1 + 2 + 2 + 4);
    }
}
