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
const SYMBOL_TO_END: u64 = 0x0f;

/// Longest SYMBOL frame a SYMBOL_PART may carry pieces of (§14.4): the largest payload, its
/// length prefix and the symbol header with room to spare.
pub const MAX_PARTED_FRAME: usize = MAX_SYMBOL + 64;

mod ack;
#[cfg(test)]
mod tests;

pub use ack::{ack_len, write_ack, AckFrame, AckRange, AckRangeIter, AckRanges};
use ack::{next_range, write_ack_ranges, RangesRepr};

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

/// Rewrites the SYMBOL frame at `packet[start..]` as a SYMBOL_TO_END frame (PROTOCOL.md §8.11)
/// if it is the packet's last frame: the same frame without its payload length, which the end
/// of the packet gives (QUIC's STREAM frame without its LEN bit, RFC 9000 §19.8). Returns the
/// bytes saved (0: not a SYMBOL frame, or something follows it).
pub fn symbol_to_end(packet: &mut Vec<u8>, start: usize) -> usize {
    let Some(frame) = packet.get(start..) else { return 0 };
    let mut r = Reader::new(frame);
    if r.varint() != Ok(SYMBOL) {
        return 0;
    }
    let Ok((_, rest)) = SymbolHeader::parse(r.rest()) else { return 0 };
    let mut r = Reader::new(rest);
    if r.varint().is_err() {
        return 0;
    }
    let length_at = packet.len() - r.remaining();
    match r.varint() {
        Ok(len) if len as usize == r.remaining() && len > 0 => {
            let length_end = packet.len() - r.remaining();
            packet[start] = SYMBOL_TO_END as u8;
            packet.drain(length_at..length_end);
            length_end - length_at
        }
        _ => 0,
    }
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
            SYMBOL | SHORT_SYMBOL | SYMBOL_TO_END => {
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
                let payload = if ty == SYMBOL_TO_END {
                    // §8.11: no length; the payload is the rest of the packet, never empty.
                    if r.is_empty() || r.remaining() > MAX_SYMBOL {
                        return Err(WireError::OutOfRange("symbol length"));
                    }
                    r.take(r.remaining())?
                } else {
                    r.bytes(max, "symbol length")?
                };
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
