//! Frames: the contents of a packet (PROTOCOL.md §8).

use braid_fec::{SymbolHeader, SymbolId};

use super::datagram::{DatagramFrame, DatagramRepairFrame};
use super::params::{TransportParams, MAX_BLOCKS_IN_FLIGHT};
use super::{varint_len, Reader, WireError, Writer, MAX_VARINT};

/// Most ranges one ACK frame may carry; older ranges are dropped by the sender, which is safe
/// (an unacknowledged packet is only declared lost later).
pub const MAX_ACK_RANGES: usize = 32;
/// Longest close reason accepted.
pub const MAX_REASON: usize = 1024;
/// Longest symbol payload accepted.
pub const MAX_SYMBOL: usize = 16_384;

const PADDING: u64 = 0x00;
const PING: u64 = 0x01;
const ACK: u64 = 0x02;
const BLOCK_ACK: u64 = 0x03;
const SYMBOL: u64 = 0x04;
const FEC_STATUS: u64 = 0x05;
const MAX_DATA: u64 = 0x06;
const MAX_STREAM_DATA: u64 = 0x07;
const CLOSE: u64 = 0x08;
const HANDSHAKE: u64 = 0x09;
const PATH_ABANDON: u64 = 0x0a;
const SYMBOL_PART: u64 = 0x0b;
const SHORT_SYMBOL: u64 = 0x0e;

/// Longest SYMBOL frame a SYMBOL_PART may carry pieces of (§14.4): the largest payload, its
/// length prefix and the symbol header with room to spare.
pub const MAX_PARTED_FRAME: usize = MAX_SYMBOL + 64;

/// Packet numbers `start..=end` of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRange {
    pub start: u64,
    pub end: u64,
}

/// Which packets of a path arrived (§8.3). Ranges are disjoint, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckFrame<'a> {
    pub path: u8,
    /// How long the receiver held the largest packet before acknowledging, in microseconds.
    pub ack_delay_us: u64,
    pub ranges: AckRanges<'a>,
}

/// The ranges of an ACK frame, highest first: either still encoded in the received packet
/// (checked whole when the frame was parsed, decoded again on each iteration, so parsing an
/// ACK allocates nothing) or a slice the caller built.
#[derive(Clone, Copy)]
pub struct AckRanges<'a>(RangesRepr<'a>);

#[derive(Clone, Copy)]
enum RangesRepr<'a> {
    /// The first range and the `extra` (gap, length) varint pairs that follow it (§8.3).
    Wire {
        first: AckRange,
        extra: usize,
        rest: &'a [u8],
    },
    Slice(&'a [AckRange]),
}

impl<'a> AckRanges<'a> {
    pub fn iter(&self) -> AckRangeIter<'a> {
        match self.0 {
            RangesRepr::Wire { first, extra, rest } => {
                AckRangeIter(IterRepr::Wire { next: Some(first), left: extra, reader: Reader::new(rest) })
            }
            RangesRepr::Slice(s) => AckRangeIter(IterRepr::Slice(s.iter())),
        }
    }

    /// The highest range.
    pub fn first(&self) -> Option<AckRange> {
        match self.0 {
            RangesRepr::Wire { first, .. } => Some(first),
            RangesRepr::Slice(s) => s.first().copied(),
        }
    }

    pub fn len(&self) -> usize {
        match self.0 {
            RangesRepr::Wire { extra, .. } => extra + 1,
            RangesRepr::Slice(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<&'a [AckRange]> for AckRanges<'a> {
    fn from(ranges: &'a [AckRange]) -> AckRanges<'a> {
        AckRanges(RangesRepr::Slice(ranges))
    }
}

impl<'a, const N: usize> From<&'a [AckRange; N]> for AckRanges<'a> {
    fn from(ranges: &'a [AckRange; N]) -> AckRanges<'a> {
        AckRanges(RangesRepr::Slice(ranges))
    }
}

impl<'a> IntoIterator for &AckRanges<'a> {
    type Item = AckRange;
    type IntoIter = AckRangeIter<'a>;

    fn into_iter(self) -> AckRangeIter<'a> {
        self.iter()
    }
}

impl PartialEq for AckRanges<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for AckRanges<'_> {}

impl std::fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterates over [`AckRanges`], highest first.
pub struct AckRangeIter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Wire { next: Option<AckRange>, left: usize, reader: Reader<'a> },
    Slice(std::slice::Iter<'a, AckRange>),
}

impl Iterator for AckRangeIter<'_> {
    type Item = AckRange;

    #[inline]
    fn next(&mut self) -> Option<AckRange> {
        match &mut self.0 {
            IterRepr::Slice(it) => it.next().copied(),
            IterRepr::Wire { next, left, reader } => {
                let current = next.take()?;
                if *left > 0 {
                    *left -= 1;
                    // Checked when the frame was parsed; a failure here ends the iteration.
                    *next = next_range(reader, current.start).ok();
                }
                Some(current)
            }
        }
    }
}

/// The range after one starting at `start`: a (gap, length) pair of §8.3.
#[inline]
fn next_range(r: &mut Reader<'_>, start: u64) -> Result<AckRange, WireError> {
    let gap = r.varint()?;
    let len = r.varint()?;
    let end =
        start.checked_sub(gap).and_then(|s| s.checked_sub(2)).ok_or(WireError::OutOfRange("ack gap"))?;
    let start = end.checked_sub(len).ok_or(WireError::OutOfRange("ack range"))?;
    Ok(AckRange { start, end })
}

/// The decoder's state (§8.4): CTCP's ACK carries the smallest undecoded block and the degrees
/// of freedom received for it; braid adds which later blocks are already decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockAckFrame {
    /// Every block below this one is decoded and delivered.
    pub lowest_undecoded: u64,
    /// Innovative symbols held for `lowest_undecoded`.
    pub dofs: u64,
    /// Bit i set: block `lowest_undecoded + 1 + i` is decoded.
    pub decoded_beyond: u64,
}

impl BlockAckFrame {
    /// Bytes the frame takes on the wire.
    pub fn encoded_len(&self) -> usize {
        varint_len(BLOCK_ACK)
            + varint_len(self.lowest_undecoded)
            + varint_len(self.dofs)
            + varint_len(self.decoded_beyond & MAX_VARINT)
    }
}

/// One coded or source symbol (§8.5), or a source symbol without its trailing zero bytes
/// (SHORT_SYMBOL, §8.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolFrame<'a> {
    pub header: SymbolHeader<'a>,
    /// The block's number of source symbols once the sender has closed it; `None` while open.
    pub block_len: Option<u16>,
    pub payload: &'a [u8],
    /// Zero bytes that end the symbol and are not sent: the symbol is `payload` followed by
    /// this many zeros. Non-zero only for a source symbol (a SHORT_SYMBOL frame).
    pub trailing_zeros: u16,
}

impl SymbolFrame<'_> {
    /// The symbol's size once its trailing zeros are put back (the block's symbol size).
    pub fn symbol_size(&self) -> usize {
        self.payload.len() + usize::from(self.trailing_zeros)
    }

    /// Bytes the frame takes on the wire (SYMBOL, or SHORT_SYMBOL with trailing zeros), so a
    /// packet builder can tell before writing whether it fits or goes in pieces (§14.4).
    pub fn encoded_len(&self) -> usize {
        let short = self.trailing_zeros > 0;
        varint_len(if short { SHORT_SYMBOL } else { SYMBOL })
            + self.header.encoded_len()
            + varint_len(self.block_len.map_or(0, u64::from))
            + if short { varint_len(self.trailing_zeros.into()) } else { 0 }
            + varint_len(self.payload.len() as u64)
            + self.payload.len()
    }
}

/// A piece of a SYMBOL frame too large for the path it must go on (PROTOCOL.md §14.4): bytes
/// `offset..offset + data.len()` of a SYMBOL frame of `total` bytes, the pieces of one frame
/// sharing the sender's `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolPartFrame<'a> {
    pub id: u64,
    pub total: u64,
    pub offset: u64,
    pub data: &'a [u8],
}

/// The FEC outcome signals of TCP-dFEC ("FEC recovered" / "FEC failed") and Sato et al.'s
/// recovered-loss mark (§8.6), counted since the previous signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FecStatusFrame {
    pub path: u8,
    pub recovered: u64,
    pub failed: u64,
}

/// Closes the connection (§8.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseFrame<'a> {
    pub code: u64,
    pub reason: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    Padding,
    Ping,
    Ack(AckFrame<'a>),
    BlockAck(BlockAckFrame),
    Symbol(SymbolFrame<'a>),
    FecStatus(FecStatusFrame),
    MaxData(u64),
    MaxStreamData {
        stream: u64,
        max: u64,
    },
    Close(CloseFrame<'a>),
    Handshake(TransportParams),
    /// The sender stopped using this path for good (§8.9); its id is never used again.
    PathAbandon(u8),
    /// A piece of a SYMBOL frame (§14.4).
    SymbolPart(SymbolPartFrame<'a>),
    /// An unreliable application datagram (§15).
    Datagram(DatagramFrame<'a>),
    /// A repair symbol over application datagrams (§15.4).
    DatagramRepair(DatagramRepairFrame<'a>),
}

impl Frame<'_> {
    /// Whether receiving this frame obliges the receiver to acknowledge the packet.
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(self, Frame::Padding | Frame::Ack(_) | Frame::BlockAck(_) | Frame::Close(_))
    }

    pub fn write(&self, w: &mut Writer<'_>) -> Result<(), WireError> {
        match self {
            Frame::Padding => w.varint(PADDING),
            Frame::Ping => w.varint(PING),
            Frame::Ack(ack) => {
                write_ack_ranges(w, ack.path, ack.ack_delay_us, ack.ranges.len(), ack.ranges.iter())?
            }
            Frame::BlockAck(b) => {
                w.varint(BLOCK_ACK);
                w.varint(b.lowest_undecoded);
                w.varint(b.dofs);
                // The bitmap is 64 bits but a varint carries 62; blocks in flight are capped
                // below that.
                w.varint(b.decoded_beyond & MAX_VARINT);
            }
            Frame::Symbol(s) => {
                let short = s.trailing_zeros > 0;
                if short && (!matches!(s.header.id, SymbolId::Source { .. }) || s.symbol_size() > MAX_SYMBOL)
                {
                    return Err(WireError::OutOfRange("short symbol"));
                }
                w.varint(if short { SHORT_SYMBOL } else { SYMBOL });
                let start = w.out.len();
                let len = s.header.encoded_len();
                w.out.resize(start + len, 0);
                s.header.write(&mut w.out[start..])?;
                w.varint(s.block_len.map_or(0, u64::from));
                if short {
                    w.varint(s.trailing_zeros.into());
                }
                w.bytes(s.payload);
            }
            Frame::FecStatus(f) => {
                w.varint(FEC_STATUS);
                w.varint(f.path.into());
                w.varint(f.recovered);
                w.varint(f.failed);
            }
            Frame::MaxData(max) => {
                w.varint(MAX_DATA);
                w.varint(*max);
            }
            Frame::MaxStreamData { stream, max } => {
                w.varint(MAX_STREAM_DATA);
                w.varint(*stream);
                w.varint(*max);
            }
            Frame::Close(c) => {
                w.varint(CLOSE);
                w.varint(c.code);
                w.bytes(&c.reason[..c.reason.len().min(MAX_REASON)]);
            }
            Frame::Handshake(p) => {
                w.varint(HANDSHAKE);
                p.write(w);
            }
            Frame::PathAbandon(path) => {
                if u64::from(*path) >= super::packet::MAX_PATHS {
                    return Err(WireError::OutOfRange("abandoned path"));
                }
                w.varint(PATH_ABANDON);
                w.varint((*path).into());
            }
            Frame::SymbolPart(p) => {
                let end = p.offset.checked_add(p.data.len() as u64);
                if p.total as usize > MAX_PARTED_FRAME || end.is_none_or(|e| e > p.total) {
                    return Err(WireError::OutOfRange("symbol part"));
                }
                w.varint(SYMBOL_PART);
                w.varint(p.id);
                w.varint(p.total);
                w.varint(p.offset);
                w.bytes(p.data);
            }
            Frame::Datagram(d) => super::datagram::write_datagram(w, d)?,
            Frame::DatagramRepair(r) => super::datagram::write_repair(w, r)?,
        }
        Ok(())
    }
}

/// Writes an ACK frame (§8.3) straight from a slice of ranges, highest first, with no
/// `AckFrame` to build: the sender's hot path. On error nothing useful was written; the caller
/// truncates.
pub fn write_ack(
    w: &mut Writer<'_>,
    path: u8,
    ack_delay_us: u64,
    ranges: &[AckRange],
) -> Result<(), WireError> {
    write_ack_ranges(w, path, ack_delay_us, ranges.len(), ranges.iter().copied())
}

/// Bytes [`write_ack`] writes for these ranges (valid ones, at most `MAX_ACK_RANGES`;
/// none: 0), so a packet builder can check its room before writing.
pub fn ack_len(path: u8, ack_delay_us: u64, ranges: &[AckRange]) -> usize {
    let Some(first) = ranges.first() else { return 0 };
    let mut len = varint_len(ACK)
        + varint_len(path.into())
        + varint_len(first.end)
        + varint_len(ack_delay_us.min(MAX_VARINT))
        + varint_len(ranges.len() as u64 - 1)
        + varint_len(first.end - first.start);
    let mut previous_start = first.start;
    for range in &ranges[1..] {
        len += varint_len(previous_start.saturating_sub(range.end + 2)) + varint_len(range.end - range.start);
        previous_start = range.start;
    }
    len
}

fn write_ack_ranges(
    w: &mut Writer<'_>,
    path: u8,
    ack_delay_us: u64,
    count: usize,
    mut ranges: impl Iterator<Item = AckRange>,
) -> Result<(), WireError> {
    let first = ranges.next().ok_or(WireError::OutOfRange("ack ranges"))?;
    if count > MAX_ACK_RANGES || first.start > first.end {
        return Err(WireError::OutOfRange("ack ranges"));
    }
    w.varint(ACK);
    w.varint(path.into());
    w.varint(first.end);
    w.varint(ack_delay_us.min(MAX_VARINT));
    w.varint(count as u64 - 1);
    w.varint(first.end - first.start);
    let mut previous_start = first.start;
    for range in ranges {
        // gap: packets skipped between this range and the previous one, minus 2
        // (RFC 9000 §19.3.1: ranges are separated by at least one missing packet).
        if range.start > range.end || range.end + 2 > previous_start {
            return Err(WireError::OutOfRange("ack ranges"));
        }
        w.varint(previous_start - range.end - 2);
        w.varint(range.end - range.start);
        previous_start = range.start;
    }
    Ok(())
}

/// Parses the frames of a packet payload, one at a time; stops at the first error.
pub struct FrameIter<'a> {
    reader: Reader<'a>,
    failed: bool,
}

impl<'a> FrameIter<'a> {
    pub fn new(payload: &'a [u8]) -> FrameIter<'a> {
        FrameIter { reader: Reader::new(payload), failed: false }
    }

    fn parse(&mut self) -> Result<Frame<'a>, WireError> {
        let r = &mut self.reader;
        let ty = r.varint()?;
        Ok(match ty {
            PADDING => Frame::Padding,
            PING => Frame::Ping,
            ACK => {
                let path = r.varint_max(super::packet::MAX_PATHS - 1, "ack path")? as u8;
                let largest = r.varint()?;
                let ack_delay_us = r.varint()?;
                let extra = r.varint_max(MAX_ACK_RANGES as u64 - 1, "ack range count")? as usize;
                let first_len = r.varint()?;
                let first = AckRange {
                    start: largest.checked_sub(first_len).ok_or(WireError::OutOfRange("ack range"))?,
                    end: largest,
                };
                // Check every range now; iterating decodes them again from these bytes.
                let rest = r.rest();
                let mut start = first.start;
                for _ in 0..extra {
                    start = next_range(r, start)?.start;
                }
                let rest = &rest[..rest.len() - r.remaining()];
                Frame::Ack(AckFrame {
                    path,
                    ack_delay_us,
                    ranges: AckRanges(RangesRepr::Wire { first, extra, rest }),
                })
            }
            BLOCK_ACK => Frame::BlockAck(BlockAckFrame {
                lowest_undecoded: r.varint()?,
                dofs: r.varint()?,
                decoded_beyond: r.varint()? & ((1 << MAX_BLOCKS_IN_FLIGHT.min(62)) - 1),
            }),
            SYMBOL | SHORT_SYMBOL => {
                let (header, rest) = SymbolHeader::parse(r.rest())?;
                let consumed = r.remaining() - rest.len();
                r.take(consumed)?;
                let block_len = match r.varint_max(u16::MAX.into(), "block length")? {
                    0 => None,
                    k => Some(k as u16),
                };
                let mut trailing_zeros = 0;
                if ty == SHORT_SYMBOL {
                    // Only a source symbol's zeros may be left off; a repair is always whole.
                    if !matches!(header.id, SymbolId::Source { .. }) {
                        return Err(WireError::OutOfRange("short symbol kind"));
                    }
                    trailing_zeros = r.varint_max(MAX_SYMBOL as u64, "trailing zeros")? as u16;
                    if trailing_zeros == 0 {
                        return Err(WireError::OutOfRange("trailing zeros"));
                    }
                }
                let max = MAX_SYMBOL - usize::from(trailing_zeros);
                let payload = r.bytes(max, "symbol length")?;
                Frame::Symbol(SymbolFrame { header, block_len, payload, trailing_zeros })
            }
            FEC_STATUS => Frame::FecStatus(FecStatusFrame {
                path: r.varint_max(super::packet::MAX_PATHS - 1, "fec path")? as u8,
                recovered: r.varint()?,
                failed: r.varint()?,
            }),
            MAX_DATA => Frame::MaxData(r.varint()?),
            MAX_STREAM_DATA => Frame::MaxStreamData { stream: r.varint()?, max: r.varint()? },
            CLOSE => {
                Frame::Close(CloseFrame { code: r.varint()?, reason: r.bytes(MAX_REASON, "close reason")? })
            }
            HANDSHAKE => Frame::Handshake(TransportParams::parse(r)?),
            PATH_ABANDON => {
                Frame::PathAbandon(r.varint_max(super::packet::MAX_PATHS - 1, "abandoned path")? as u8)
            }
            SYMBOL_PART => {
                let id = r.varint()?;
                let total = r.varint_max(MAX_PARTED_FRAME as u64, "parted frame length")?;
                let offset = r.varint_max(total, "part offset")?;
                let data = r.bytes(MAX_PARTED_FRAME, "part length")?;
                if offset + data.len() as u64 > total || data.is_empty() {
                    return Err(WireError::OutOfRange("symbol part"));
                }
                Frame::SymbolPart(SymbolPartFrame { id, total, offset, data })
            }
            super::datagram::DATAGRAM => Frame::Datagram(super::datagram::parse_datagram(r)?),
            super::datagram::DATAGRAM_REPAIR => Frame::DatagramRepair(super::datagram::parse_repair(r)?),
            other => return Err(WireError::UnknownFrame(other)),
        })
    }
}

impl<'a> Iterator for FrameIter<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.is_empty() {
            return None;
        }
        let frame = self.parse();
        self.failed = frame.is_err();
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_fec::{Coefficients, SymbolId};
    use proptest::prelude::*;

    fn arb_frame() -> impl Strategy<Value = Frame<'static>> {
        let payload: &'static [u8] = Box::leak(vec![0xA5u8; 1400].into_boxed_slice());
        let ranges = proptest::collection::vec((0u64..1000, 0u64..50), 1..MAX_ACK_RANGES).prop_map(|spec| {
            // Build valid descending ranges from (gap, len) pairs.
            let mut end = 1u64 << 40;
            spec.into_iter()
                .map(|(gap, len)| {
                    let range = AckRange { start: end - len, end };
                    end = range.start - gap - 2;
                    range
                })
                .collect::<Vec<_>>()
        });
        prop_oneof![
            Just(Frame::Padding),
            Just(Frame::Ping),
            (0u8..8, 0..MAX_VARINT, ranges).prop_map(|(path, ack_delay_us, ranges)| Frame::Ack(AckFrame {
                path,
                ack_delay_us,
                ranges: AckRanges::from(&*Box::leak(ranges.into_boxed_slice()))
            })),
            (0..MAX_VARINT, 0..MAX_VARINT, 0..(1u64 << 62)).prop_map(
                |(lowest_undecoded, dofs, decoded_beyond)| {
                    Frame::BlockAck(BlockAckFrame { lowest_undecoded, dofs, decoded_beyond })
                }
            ),
            (0u64..1_000_000, 0u16..64, 1usize..1400, any::<u32>()).prop_map(
                move |(block, index, len, seed)| {
                    let id = if seed % 2 == 0 {
                        SymbolId::Source { index }
                    } else {
                        SymbolId::Rlnc { span: index + 1, coefficients: Coefficients::Seed(seed) }
                    };
                    let block_len = (seed % 3 == 0).then_some(index + 1);
                    // Every other source symbol short (SHORT_SYMBOL), by up to 1000 zeros.
                    let trailing_zeros = if seed % 4 == 0 { (seed >> 8) as u16 % 1000 } else { 0 };
                    Frame::Symbol(SymbolFrame {
                        header: SymbolHeader { block, id },
                        block_len,
                        payload: &payload[..len],
                        trailing_zeros,
                    })
                }
            ),
            (0u8..8, 0..MAX_VARINT, 0..MAX_VARINT).prop_map(|(path, recovered, failed)| Frame::FecStatus(
                FecStatusFrame { path, recovered, failed }
            )),
            (0..MAX_VARINT).prop_map(Frame::MaxData),
            (0..MAX_VARINT, 0..MAX_VARINT).prop_map(|(stream, max)| Frame::MaxStreamData { stream, max }),
            (0..MAX_VARINT, 0usize..100)
                .prop_map(move |(code, n)| Frame::Close(CloseFrame { code, reason: &payload[..n] })),
            Just(Frame::Handshake(TransportParams::default())),
            (0u8..8).prop_map(Frame::PathAbandon),
            (0..MAX_VARINT, 1usize..1400, 0u64..4000).prop_map(move |(id, len, extra)| {
                let offset = extra / 2;
                Frame::SymbolPart(SymbolPartFrame {
                    id,
                    total: offset + len as u64 + extra / 2,
                    offset,
                    data: &payload[..len],
                })
            }),
            (0..MAX_VARINT, 0u16..64, any::<u32>(), any::<u16>(), 0usize..1400).prop_map(
                move |(block, index, sent_ms, deadline_ms, len)| Frame::Datagram(DatagramFrame {
                    block,
                    index,
                    sent_ms,
                    deadline_ms,
                    data: &payload[..len],
                })
            ),
            (0..MAX_VARINT, 1u16..=64, any::<u32>(), 8u16..1400, 0usize..1400).prop_map(
                move |(block, span, seed, symbol_size, len)| Frame::DatagramRepair(DatagramRepairFrame {
                    block,
                    span,
                    seed,
                    symbol_size,
                    payload: &payload[..len.min(symbol_size.into())],
                })
            ),
        ]
    }

    proptest! {
    /// The lengths a packet builder checks its room with are the lengths written.
    #[test]
    fn ack_block_ack_and_symbol_lengths_are_the_written_ones(frame in arb_frame()) {
        let mut out = Vec::new();
        let expected = match &frame {
            Frame::Ack(ack) => {
                let ranges: Vec<AckRange> = ack.ranges.iter().collect();
                write_ack(&mut Writer::new(&mut out), ack.path, ack.ack_delay_us, &ranges).unwrap();
                ack_len(ack.path, ack.ack_delay_us, &ranges)
            }
            Frame::BlockAck(b) => {
                frame.write(&mut Writer::new(&mut out)).unwrap();
                b.encoded_len()
            }
            Frame::Symbol(s) => {
                frame.write(&mut Writer::new(&mut out)).unwrap();
                s.encoded_len()
            }
            _ => return Ok(()),
        };
        prop_assert_eq!(out.len(), expected);
    }

        #[test]
        fn frames_round_trip(frames in proptest::collection::vec(arb_frame(), 1..8)) {
            let mut out = Vec::new();
            let mut w = Writer::new(&mut out);
            for f in &frames {
                f.write(&mut w).unwrap();
            }
            let parsed: Vec<Frame<'_>> = FrameIter::new(&out).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(parsed, frames);
        }

        #[test]
        fn parsing_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            for frame in FrameIter::new(&bytes) {
                let _ = frame;
            }
        }

        #[test]
        fn truncation_is_an_error(frame in arb_frame()) {
            let mut out = Vec::new();
            frame.write(&mut Writer::new(&mut out)).unwrap();
            for cut in 1..out.len() {
                let result: Result<Vec<_>, _> = FrameIter::new(&out[..cut]).collect();
                // A cut may fall where a shorter frame sequence is valid only for padding runs.
                if let Ok(frames) = result {
                    prop_assert!(frames.iter().all(|f| *f == Frame::Padding), "cut {} parsed as {:?}", cut, frames);
                }
            }
        }
    }

    #[test]
    fn hostile_ack_ranges_are_refused() {
        // Range count above the bound.
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        for v in [ACK, 0, 100, 0, 1000, 0] {
            w.varint(v);
        }
        assert_eq!(FrameIter::new(&out).next().unwrap(), Err(WireError::OutOfRange("ack range count")));
        // First range longer than the largest packet number.
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        for v in [ACK, 0, 5, 0, 0, 6] {
            w.varint(v);
        }
        assert_eq!(FrameIter::new(&out).next().unwrap(), Err(WireError::OutOfRange("ack range")));
        // A later range running below packet 0: refused when parsed, although the ranges are
        // decoded again only when iterated (AckRanges).
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        for v in [ACK, 0, 100, 0, 2, 10, 50, 1, 30, 6] {
            w.varint(v);
        }
        assert_eq!(FrameIter::new(&out).next().unwrap(), Err(WireError::OutOfRange("ack range")));
        // The same frame with a valid last range parses, and its ranges iterate as written.
        out.truncate(out.len() - 1);
        Writer::new(&mut out).varint(5);
        let Some(Ok(Frame::Ack(ack))) = FrameIter::new(&out).next() else { panic!("valid ACK refused") };
        let ranges: Vec<(u64, u64)> = ack.ranges.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(ranges, [(90, 100), (37, 38), (0, 5)]);
        assert_eq!((ack.ranges.len(), ack.ranges.first()), (3, Some(AckRange { start: 90, end: 100 })));
        // PATH_ABANDON of a path id beyond the limit.
        assert_eq!(
            FrameIter::new(&[PATH_ABANDON as u8, 8]).next().unwrap(),
            Err(WireError::OutOfRange("abandoned path"))
        );
        // Unknown frame type.
        assert_eq!(FrameIter::new(&[0x3f]).next().unwrap(), Err(WireError::UnknownFrame(0x3f)));
        // A symbol length beyond the bound.
        let mut out = Vec::new();
        let sym = Frame::Symbol(SymbolFrame {
            header: SymbolHeader { block: 0, id: SymbolId::Source { index: 0 } },
            block_len: None,
            payload: &[1, 2, 3],
            trailing_zeros: 0,
        });
        sym.write(&mut Writer::new(&mut out)).unwrap();
        let len_at = out.len() - 4;
        out.truncate(len_at);
        Writer::new(&mut out).varint(MAX_SYMBOL as u64 + 1);
        assert_eq!(FrameIter::new(&out).next().unwrap(), Err(WireError::OutOfRange("symbol length")));
    }

    /// A SHORT_SYMBOL frame (§8.10) carries a source symbol only, with at least one zero left
    /// off, and never more than MAX_SYMBOL bytes once its zeros are back; writing one that breaks
    /// a rule is refused too.
    #[test]
    fn short_symbols_are_checked() {
        let source = SymbolHeader { block: 3, id: SymbolId::Source { index: 1 } };
        let short = SymbolFrame { header: source, block_len: Some(4), payload: &[9; 10], trailing_zeros: 90 };
        let mut out = Vec::new();
        Frame::Symbol(short).write(&mut Writer::new(&mut out)).unwrap();
        assert_eq!(out[0], SHORT_SYMBOL as u8);
        let Some(Ok(Frame::Symbol(s))) = FrameIter::new(&out).next() else { panic!("short symbol refused") };
        assert_eq!((s, s.symbol_size()), (short, 100));
        // The same frame with no zeros is a SYMBOL frame, two bytes shorter (the count's varint).
        let mut whole = Vec::new();
        Frame::Symbol(SymbolFrame { trailing_zeros: 0, ..short })
            .write(&mut Writer::new(&mut whole))
            .unwrap();
        assert_eq!((whole[0], whole.len() + 2), (SYMBOL as u8, out.len()));
        // Hand-built SHORT_SYMBOL frames: header, block length 4, the zeros' count, 10 bytes.
        let short_frame = |header: SymbolHeader<'_>, zeros: u64| {
            let mut out = vec![SHORT_SYMBOL as u8];
            out.resize(1 + header.encoded_len(), 0);
            header.write(&mut out[1..]).unwrap();
            let mut w = Writer::new(&mut out);
            for v in [4, zeros, 10] {
                w.varint(v);
            }
            w.put(&[9; 10]);
            out
        };
        assert_eq!(FrameIter::new(&short_frame(source, 90)).next().unwrap(), Ok(Frame::Symbol(short)));
        // A count of zero: malformed (a whole symbol is a SYMBOL frame).
        let zero = short_frame(source, 0);
        assert_eq!(FrameIter::new(&zero).next().unwrap(), Err(WireError::OutOfRange("trailing zeros")));
        // More than MAX_SYMBOL bytes with its zeros back.
        let long = short_frame(source, MAX_SYMBOL as u64 - 5);
        assert_eq!(FrameIter::new(&long).next().unwrap(), Err(WireError::OutOfRange("symbol length")));
        // A repair symbol: refused when parsed and when written.
        let repair =
            SymbolHeader { block: 3, id: SymbolId::Rlnc { span: 4, coefficients: Coefficients::Seed(7) } };
        let bad = short_frame(repair, 90);
        assert_eq!(FrameIter::new(&bad).next().unwrap(), Err(WireError::OutOfRange("short symbol kind")));
        let mut out = Vec::new();
        let frame = Frame::Symbol(SymbolFrame { header: repair, ..short });
        assert_eq!(frame.write(&mut Writer::new(&mut out)), Err(WireError::OutOfRange("short symbol")));
    }
}
