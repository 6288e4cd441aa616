//! DATAGRAM and DATAGRAM_REPAIR frames: unreliable application datagrams and the repair
//! symbols that cover them (PROTOCOL.md §15).

use super::{Reader, WireError, Writer};

/// Frame type of DATAGRAM.
pub(super) const DATAGRAM: u64 = 0x0c;
/// Frame type of DATAGRAM_REPAIR.
pub(super) const DATAGRAM_REPAIR: u64 = 0x0d;

/// Longest datagram payload accepted (a jumbo TUN packet fits).
pub const MAX_DATAGRAM_PAYLOAD: usize = 16_000;
/// Most datagrams one datagram block may hold (PROTOCOL.md §15.3).
pub const MAX_DATAGRAM_BLOCK_LEN: usize = 64;
/// Bytes in front of a datagram's payload in its coded form (PROTOCOL.md §15.2): length (2),
/// send time in ms (4), deadline in ms (2).
pub const CODED_HEADER: usize = 8;
/// Largest symbol size a DATAGRAM_REPAIR may name.
pub const MAX_DATAGRAM_SYMBOL: usize = MAX_DATAGRAM_PAYLOAD + CODED_HEADER;

/// One application datagram (§15.1), sent once, never retransmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramFrame<'a> {
    /// Datagram block (§15.3) and position in it.
    pub block: u64,
    pub index: u16,
    /// The sender's clock when it sent the datagram, in ms (wraps at 2^32).
    pub sent_ms: u32,
    /// How long after `sent_ms` the datagram is still of use, in ms.
    pub deadline_ms: u16,
    pub data: &'a [u8],
}

/// A repair symbol over the first `span` datagrams of a block (§15.4): the seeded RLNC
/// combination of their coded forms, each zero-padded to `symbol_size` bytes, with the
/// trailing zeros of the combination left out (`payload` is at most `symbol_size` bytes and
/// the receiver extends it with zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramRepairFrame<'a> {
    pub block: u64,
    pub span: u16,
    pub seed: u32,
    pub symbol_size: u16,
    pub payload: &'a [u8],
}

pub(super) fn write_datagram(w: &mut Writer<'_>, d: &DatagramFrame<'_>) -> Result<(), WireError> {
    if d.data.len() > MAX_DATAGRAM_PAYLOAD || usize::from(d.index) >= MAX_DATAGRAM_BLOCK_LEN {
        return Err(WireError::OutOfRange("datagram"));
    }
    w.varint(DATAGRAM);
    w.varint(d.block);
    w.varint(d.index.into());
    w.varint(d.sent_ms.into());
    w.varint(d.deadline_ms.into());
    w.varint(d.data.len() as u64);
    w.put(d.data);
    Ok(())
}

pub(super) fn write_repair(w: &mut Writer<'_>, r: &DatagramRepairFrame<'_>) -> Result<(), WireError> {
    let symbol_size = usize::from(r.symbol_size);
    if r.span == 0
        || usize::from(r.span) > MAX_DATAGRAM_BLOCK_LEN
        || symbol_size > MAX_DATAGRAM_SYMBOL
        || r.payload.len() > symbol_size
    {
        return Err(WireError::OutOfRange("datagram repair"));
    }
    w.varint(DATAGRAM_REPAIR);
    w.varint(r.block);
    w.varint(r.span.into());
    w.put(&r.seed.to_be_bytes());
    w.varint(r.symbol_size.into());
    w.varint(r.payload.len() as u64);
    w.put(r.payload);
    Ok(())
}

/// The body of a DATAGRAM frame (after its type).
pub(super) fn parse_datagram<'a>(r: &mut Reader<'a>) -> Result<DatagramFrame<'a>, WireError> {
    Ok(DatagramFrame {
        block: r.varint()?,
        index: r.varint_max(MAX_DATAGRAM_BLOCK_LEN as u64 - 1, "datagram index")? as u16,
        sent_ms: r.varint_max(u32::MAX.into(), "datagram time")? as u32,
        deadline_ms: r.varint_max(u16::MAX.into(), "datagram deadline")? as u16,
        data: r.bytes(MAX_DATAGRAM_PAYLOAD, "datagram length")?,
    })
}

/// The body of a DATAGRAM_REPAIR frame (after its type).
pub(super) fn parse_repair<'a>(r: &mut Reader<'a>) -> Result<DatagramRepairFrame<'a>, WireError> {
    let block = r.varint()?;
    let span = r.varint_max(MAX_DATAGRAM_BLOCK_LEN as u64, "datagram repair span")? as u16;
    let seed = u32::from_be_bytes(r.array()?);
    let symbol_size = r.varint_max(MAX_DATAGRAM_SYMBOL as u64, "datagram symbol size")? as u16;
    let payload = r.bytes(symbol_size.into(), "datagram repair length")?;
    if span == 0 || usize::from(symbol_size) < CODED_HEADER {
        return Err(WireError::OutOfRange("datagram repair"));
    }
    Ok(DatagramRepairFrame { block, span, seed, symbol_size, payload })
}
