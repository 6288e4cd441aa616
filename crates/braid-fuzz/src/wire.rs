//! The wire format (PROTOCOL.md §7–§10, §14.4): the packet header and every frame type, ACK
//! ranges, transport parameters, SYMBOL_PART reassembly.
//!
//! Besides "never panics", each parser is checked against its writer: whatever parses writes
//! back (shortest varints) to bytes that parse to the same value.

use braid_proto::conn::{PartReassembly, MAX_PIECES, MAX_REASSEMBLIES};
use braid_proto::wire::{
    write_ack, AckRange, Frame, FrameIter, PacketHeader, Reader, SymbolPartFrame, TransportParams, Writer,
    MAX_PARTED_FRAME,
};

use crate::cursor::Cursor;

/// A datagram as the core reads it: the header, then every frame until the first error.
pub fn packet(data: &[u8]) {
    let mut r = Reader::new(data);
    let payload = match PacketHeader::parse(&mut r) {
        Ok(header) => {
            let mut out = Vec::new();
            header.write(&mut Writer::new(&mut out));
            assert_eq!(out.len(), header.encoded_len());
            assert_eq!(PacketHeader::parse(&mut Reader::new(&out)), Ok(header));
            r.rest()
        }
        // The frames are fuzzed anyway: most inputs are not a valid header.
        Err(_) => data,
    };
    for frame in FrameIter::new(payload) {
        let Ok(frame) = frame else { break };
        round_trip(&frame);
    }
}

/// `frame` written and parsed again is `frame`.
fn round_trip(frame: &Frame<'_>) {
    let mut out = Vec::new();
    frame.write(&mut Writer::new(&mut out)).expect("a parsed frame writes");
    let mut again = FrameIter::new(&out);
    let parsed = again.next().expect("one frame").expect("a written frame parses");
    assert_eq!(&parsed, frame, "round trip of {out:02x?}");
    assert!(again.next().is_none(), "one frame written, more read back");
}

/// An ACK frame (§8.3) from the fuzzer's bytes: its ranges come out highest first, disjoint
/// and separated by at least one missing packet, and write back to the same frame.
pub fn ack_ranges(data: &[u8]) {
    let mut bytes = vec![0x02];
    bytes.extend_from_slice(data);
    let Some(Ok(Frame::Ack(ack))) = FrameIter::new(&bytes).next() else { return };
    let ranges: Vec<AckRange> = ack.ranges.iter().collect();
    assert_eq!(ranges.len(), ack.ranges.len());
    assert_eq!(ranges.first().copied(), ack.ranges.first());
    for r in &ranges {
        assert!(r.start <= r.end, "{ranges:?}");
    }
    for pair in ranges.windows(2) {
        assert!(pair[1].end + 2 <= pair[0].start, "{ranges:?}");
    }
    let mut out = Vec::new();
    write_ack(&mut Writer::new(&mut out), ack.path, ack.ack_delay_us, &ranges).expect("parsed ranges write");
    let Some(Ok(Frame::Ack(again))) = FrameIter::new(&out).next() else {
        panic!("written ACK did not parse")
    };
    assert_eq!(again, ack);
}

/// Transport parameters (§9): parse, and round-trip what parses.
pub fn transport_params(data: &[u8]) {
    let Ok(params) = TransportParams::parse(&mut Reader::new(data)) else { return };
    let mut out = Vec::new();
    params.write(&mut Writer::new(&mut out));
    assert_eq!(TransportParams::parse(&mut Reader::new(&out)), Ok(params));
}

/// SYMBOL_PART pieces (§14.4) of a few frames, in any order, overlapping, inconsistent: the
/// reassembly holds at most its bound, and a frame it returns is made of the pieces given for
/// it, each byte from the piece that covered it.
pub fn symbol_parts(data: &[u8]) {
    let mut c = Cursor::new(data);
    let mut parts = PartReassembly::default();
    // Model: per id, its total and the pieces given since the id was (re)started.
    type Pieces = Vec<(u64, Vec<u8>)>;
    let mut model: Vec<(u64, u64, Pieces)> = Vec::new();
    while !c.is_empty() {
        let id = u64::from(c.u8() % 6);
        let total = if c.u8() < 16 { u64::from(c.u16()) } else { u64::from(c.u8() % 64) + 1 };
        let offset = u64::from(c.u16()) % (total + 1);
        let data = c.bytes(300);
        // What the frame parser lets through.
        if total > MAX_PARTED_FRAME as u64 || data.is_empty() || offset + data.len() as u64 > total {
            continue;
        }
        let whole = parts.insert(SymbolPartFrame { id, total, offset, data });
        assert!(parts.len() <= MAX_REASSEMBLIES);
        assert!(parts.held_bytes() <= MAX_REASSEMBLIES * MAX_PARTED_FRAME);
        match model.iter().position(|m| m.0 == id) {
            Some(i) if model[i].1 == total => model[i].2.push((offset, data.to_vec())),
            Some(_) => {}
            None => {
                if model.len() >= MAX_REASSEMBLIES {
                    model.remove(0);
                }
                model.push((id, total, vec![(offset, data.to_vec())]));
            }
        }
        if let Some(whole) = whole {
            let i = model.iter().position(|m| m.0 == id).expect("a completed frame was being reassembled");
            let (_, total, pieces) = model.remove(i);
            assert_eq!(whole.len() as u64, total);
            let mut covered = vec![false; whole.len()];
            let mut taken = 0;
            for (offset, bytes) in pieces {
                let span = offset as usize..offset as usize + bytes.len();
                if covered[span.clone()].iter().any(|&c| c) || taken >= MAX_PIECES {
                    continue; // an overlapping piece, or one too many, was ignored
                }
                taken += 1;
                assert_eq!(&whole[span.clone()], &bytes[..]);
                covered[span].iter_mut().for_each(|c| *c = true);
            }
            assert!(covered.iter().all(|&c| c), "a byte of the frame came from no piece");
        }
    }
}
