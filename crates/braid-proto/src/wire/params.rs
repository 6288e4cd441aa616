//! Transport parameters, exchanged in the handshake (PROTOCOL.md §9).
//!
//! Encoded as (id: varint, length: varint, value) entries so that a later version can add
//! parameters an older peer skips. A repeated id is an error.

use braid_fec::CodeFamily;

use super::{Reader, WireError, Writer};

/// Most coding blocks a sender may have open at once (bounds the receiver's decoders and the
/// block-ACK bitmap: one bit per block beyond the lowest undecoded one).
pub const MAX_BLOCKS_IN_FLIGHT: u64 = 64;

/// What each side announces about itself. Both sides must agree on the code parameters; the
/// server's `Accept` echoes the values it will use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportParams {
    pub code: CodeFamily,
    /// Bytes per coded symbol. Default 1232: a 1280-byte IPv6-minimum datagram less the packet
    /// header (≤ 14 bytes below 2^30 packets) and the SYMBOL frame's (≤ 14 bytes), with ~20
    /// bytes left for a piggybacked ACK. Every header byte is goodput lost, so the symbol fills
    /// the datagram.
    pub symbol_size: u16,
    /// Largest symbol of a block once path MTU discovery allows more than `symbol_size`
    /// (PROTOCOL.md §14.3): each block's symbols have one size, from 16 to this. 0 (the
    /// default, not sent): `symbol_size`, every block at that size. See
    /// [`TransportParams::max_symbol`].
    pub max_symbol_size: u16,
    /// Most source symbols per block. Default 64 (CTCP uses blocks of tens of packets).
    pub max_block_len: u16,
    /// Blocks the sender may keep open (CTCP's `numblks`). Default 16.
    pub blocks_in_flight: u16,
    /// Bytes of the connection's data pipe the peer may send before a `MAX_DATA`. Default 16 MiB.
    pub initial_max_data: u64,
    /// Per-stream receive window. Default 4 MiB.
    pub initial_max_stream_data: u64,
    /// Streams the peer may open. Default 1024.
    pub max_streams: u64,
    /// Close after this long without a packet from the peer, in ms. Default 30 000.
    pub idle_timeout_ms: u64,
}

impl TransportParams {
    /// These parameters with a receive window of `bytes`: both the connection's and each
    /// stream's flow-control window (what FMTCP calls the receive buffer).
    pub fn with_receive_window(self, bytes: u64) -> TransportParams {
        TransportParams { initial_max_data: bytes, initial_max_stream_data: bytes, ..self }
    }

    /// The largest symbol size in force: `max_symbol_size`, never below `symbol_size`.
    pub fn max_symbol(&self) -> u16 {
        self.max_symbol_size.max(self.symbol_size)
    }
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            code: CodeFamily::Rlnc,
            symbol_size: 1232,
            max_symbol_size: 0,
            max_block_len: 64,
            blocks_in_flight: 16,
            initial_max_data: 16 << 20,
            initial_max_stream_data: 4 << 20,
            max_streams: 1024,
            idle_timeout_ms: 30_000,
        }
    }
}

const CODE: u64 = 1;
const SYMBOL_SIZE: u64 = 2;
const MAX_BLOCK_LEN: u64 = 3;
const BLOCKS_IN_FLIGHT: u64 = 4;
const INITIAL_MAX_DATA: u64 = 5;
const INITIAL_MAX_STREAM_DATA: u64 = 6;
const MAX_STREAMS: u64 = 7;
const IDLE_TIMEOUT: u64 = 8;
const MAX_SYMBOL_SIZE: u64 = 9;

fn code_id(code: CodeFamily) -> u64 {
    match code {
        CodeFamily::Xor => 0,
        CodeFamily::Rlnc => 1,
        CodeFamily::RaptorQ => 2,
    }
}

impl TransportParams {
    pub fn write(&self, w: &mut Writer<'_>) {
        // Parameter 9 only when announced, so a connection without PMTU discovery sends the
        // same bytes as before it existed.
        let max_symbol =
            (self.max_symbol() > self.symbol_size).then_some((MAX_SYMBOL_SIZE, self.max_symbol().into()));
        let entries = [
            (CODE, code_id(self.code)),
            (SYMBOL_SIZE, self.symbol_size.into()),
            (MAX_BLOCK_LEN, self.max_block_len.into()),
            (BLOCKS_IN_FLIGHT, self.blocks_in_flight.into()),
            (INITIAL_MAX_DATA, self.initial_max_data),
            (INITIAL_MAX_STREAM_DATA, self.initial_max_stream_data),
            (MAX_STREAMS, self.max_streams),
            (IDLE_TIMEOUT, self.idle_timeout_ms),
        ];
        w.varint((entries.len() + usize::from(max_symbol.is_some())) as u64);
        for (id, value) in entries.into_iter().chain(max_symbol) {
            w.varint(id);
            w.varint(super::varint_len(value) as u64);
            w.varint(value);
        }
    }

    /// Parses the parameter list; absent parameters keep their defaults, unknown ones are
    /// skipped, values are checked against the limits of this implementation.
    pub fn parse(r: &mut Reader<'_>) -> Result<TransportParams, WireError> {
        let mut p = TransportParams::default();
        let count = r.varint_max(64, "parameter count")?;
        let mut seen = 0u64;
        for _ in 0..count {
            let id = r.varint()?;
            let value = r.bytes(1024, "parameter length")?;
            if (1..64).contains(&id) {
                if seen & (1 << id) != 0 {
                    return Err(WireError::OutOfRange("repeated parameter"));
                }
                seen |= 1 << id;
            }
            let mut v = Reader::new(value);
            let mut number = |max: u64, field| v.varint_max(max, field);
            match id {
                CODE => {
                    p.code = match number(2, "code")? {
                        0 => CodeFamily::Xor,
                        1 => CodeFamily::Rlnc,
                        _ => CodeFamily::RaptorQ,
                    }
                }
                SYMBOL_SIZE => p.symbol_size = number(16_384, "symbol_size")? as u16,
                MAX_BLOCK_LEN => p.max_block_len = number(u16::MAX.into(), "max_block_len")? as u16,
                BLOCKS_IN_FLIGHT => {
                    p.blocks_in_flight = number(MAX_BLOCKS_IN_FLIGHT, "blocks_in_flight")? as u16
                }
                INITIAL_MAX_DATA => p.initial_max_data = number(super::MAX_VARINT, "initial_max_data")?,
                INITIAL_MAX_STREAM_DATA => {
                    p.initial_max_stream_data = number(super::MAX_VARINT, "initial_max_stream_data")?
                }
                MAX_STREAMS => p.max_streams = number(1 << 32, "max_streams")?,
                IDLE_TIMEOUT => p.idle_timeout_ms = number(86_400_000, "idle_timeout")?,
                MAX_SYMBOL_SIZE => p.max_symbol_size = number(16_384, "max_symbol_size")? as u16,
                _ => {}
            }
        }
        if p.symbol_size < 16 || p.max_block_len == 0 || p.blocks_in_flight == 0 {
            return Err(WireError::OutOfRange("transport parameters"));
        }
        if usize::from(p.max_block_len) > p.code.max_block_len() {
            return Err(WireError::OutOfRange("max_block_len"));
        }
        // A maximum at or below the base size means none (what `write` sends for it): kept as
        // 0, so one set of parameters has one value.
        if p.max_symbol_size <= p.symbol_size {
            p.max_symbol_size = 0;
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_defaults_unknown_and_repeats() {
        let p =
            TransportParams { code: CodeFamily::RaptorQ, symbol_size: 1400, ..TransportParams::default() };
        let mut out = Vec::new();
        p.write(&mut Writer::new(&mut out));
        assert_eq!(TransportParams::parse(&mut Reader::new(&out)).unwrap(), p);
        // The maximum symbol size (PROTOCOL.md §14.3) travels only when it exceeds the base.
        let q = TransportParams { max_symbol_size: 8952, ..p.clone() };
        let mut with = Vec::new();
        q.write(&mut Writer::new(&mut with));
        assert_eq!(with.len(), out.len() + 4);
        assert_eq!(TransportParams::parse(&mut Reader::new(&with)).unwrap().max_symbol(), 8952);
        assert_eq!(p.max_symbol(), 1400);

        // Unknown id 40 skipped; missing ones defaulted.
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.varint(2);
        w.varint(40);
        w.bytes(&[1, 2, 3]);
        w.varint(SYMBOL_SIZE);
        w.bytes(&[0x44, 0x00]);
        let parsed = TransportParams::parse(&mut Reader::new(&out)).unwrap();
        assert_eq!(parsed, TransportParams { symbol_size: 1024, ..TransportParams::default() });

        // The same id twice.
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.varint(2);
        for _ in 0..2 {
            w.varint(SYMBOL_SIZE);
            w.bytes(&[0x44, 0x00]);
        }
        assert_eq!(
            TransportParams::parse(&mut Reader::new(&out)),
            Err(WireError::OutOfRange("repeated parameter"))
        );
        // A maximum symbol size below the base one is no maximum: it parses as 0, and the
        // parameters write back to the same value (a finding of the `packet` fuzz target).
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.varint(1);
        w.varint(MAX_SYMBOL_SIZE);
        w.bytes(&[0x01]);
        let parsed = TransportParams::parse(&mut Reader::new(&out)).unwrap();
        assert_eq!(parsed, TransportParams::default());
        // An RLNC block larger than the codec allows.
        let bad = TransportParams { max_block_len: 5000, ..TransportParams::default() };
        let mut out = Vec::new();
        bad.write(&mut Writer::new(&mut out));
        assert_eq!(
            TransportParams::parse(&mut Reader::new(&out)),
            Err(WireError::OutOfRange("max_block_len"))
        );
    }
}
