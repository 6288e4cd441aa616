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
        (0u64..1_000_000, 0u16..64, 1usize..1400, any::<u32>()).prop_map(move |(block, index, len, seed)| {
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
        }),
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
    Frame::Symbol(SymbolFrame { trailing_zeros: 0, ..short }).write(&mut Writer::new(&mut whole)).unwrap();
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

proptest! {
    /// A SYMBOL frame that ends the packet becomes a SYMBOL_TO_END (§8.11) without its payload
    /// length, and parses back as the same frames; one that something follows stays as it is.
    #[test]
    fn symbols_that_end_the_packet_lose_their_length(
        before in proptest::collection::vec(arb_frame(), 0..4),
        after in proptest::option::of(arb_frame()),
        len in 1usize..1500,
        block in 0u64..100_000,
        index in 0u16..300,
    ) {
        let payload = vec![0x5Au8; len];
        let header = SymbolHeader { block, id: SymbolId::Source { index } };
        let symbol = Frame::Symbol(SymbolFrame { header, block_len: None, payload: &payload, trailing_zeros: 0 });
        let mut frames = before.clone();
        frames.push(symbol.clone());
        frames.extend(after.clone());
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        for f in &before {
            f.write(&mut w).unwrap();
        }
        let start = out.len();
        symbol.write(&mut Writer::new(&mut out)).unwrap();
        if let Some(f) = &after {
            f.write(&mut Writer::new(&mut out)).unwrap();
        }
        let written = out.clone();
        let saved = symbol_to_end(&mut out, start);
        if after.is_some() {
            prop_assert_eq!((saved, &out), (0, &written));
        } else {
            prop_assert_eq!(saved, varint_len(len as u64));
            prop_assert_eq!(out.len() + saved, written.len());
            prop_assert_eq!(out[start], SYMBOL_TO_END as u8);
        }
        let parsed: Vec<Frame<'_>> = FrameIter::new(&out).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed, frames);
        // Cut anywhere inside its header, it is refused; cut in its payload, it is a shorter
        // payload (the packet's end is the frame's end), which §3.5 refuses by its size.
        if after.is_none() {
            let header_end = start + 1 + header.encoded_len() + 1;
            for cut in start + 1..header_end {
                let result: Result<Vec<_>, _> = FrameIter::new(&out[..cut]).collect();
                prop_assert!(result.is_err(), "cut {} of a SYMBOL_TO_END parsed", cut);
            }
        }
    }
}

/// SYMBOL_TO_END's own malformed cases (§8.11): no payload at all, a payload above MAX_SYMBOL;
/// and [`symbol_to_end`] leaves alone what is not a SYMBOL frame ending the packet.
#[test]
fn symbols_to_the_end_are_checked() {
    let header = SymbolHeader { block: 70, id: SymbolId::Source { index: 2 } };
    let to_end = |payload: usize| {
        let mut out = vec![SYMBOL_TO_END as u8];
        out.resize(1 + header.encoded_len(), 0);
        header.write(&mut out[1..]).unwrap();
        Writer::new(&mut out).varint(0);
        out.resize(out.len() + payload, 7);
        out
    };
    let frame = to_end(1200);
    let Some(Ok(Frame::Symbol(s))) = FrameIter::new(&frame).next() else { panic!("refused") };
    assert_eq!((s.header, s.block_len, s.payload.len(), s.trailing_zeros), (header, None, 1200, 0));
    assert_eq!(FrameIter::new(&to_end(0)).next().unwrap(), Err(WireError::OutOfRange("symbol length")));
    assert_eq!(FrameIter::new(&to_end(MAX_SYMBOL)).next().unwrap().map(|_| ()), Ok(()));
    let long = to_end(MAX_SYMBOL + 1);
    assert_eq!(FrameIter::new(&long).next().unwrap(), Err(WireError::OutOfRange("symbol length")));
    // A SHORT_SYMBOL, a PING, a SYMBOL with a byte after it, a start past the end: unchanged.
    let short = SymbolFrame { header, block_len: Some(4), payload: &[9; 10], trailing_zeros: 90 };
    let mut out = Vec::new();
    Frame::Symbol(short).write(&mut Writer::new(&mut out)).unwrap();
    let mut ping = vec![PING as u8];
    let mut trailing = Vec::new();
    Frame::Symbol(SymbolFrame { trailing_zeros: 0, ..short }).write(&mut Writer::new(&mut trailing)).unwrap();
    trailing.push(PADDING as u8);
    for packet in [&mut out, &mut ping, &mut trailing] {
        let before = packet.clone();
        assert_eq!(symbol_to_end(packet, 0), 0);
        assert_eq!(symbol_to_end(packet, before.len() + 1), 0);
        assert_eq!(*packet, before);
    }
}
