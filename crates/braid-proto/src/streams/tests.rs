use super::*;
use crate::pipe::parse_symbol;

const LIMITS: Limits = Limits { max_data: 10_000, max_stream_data: 4_000, max_streams: 4 };

fn pair() -> (Streams, Streams) {
    (Streams::new(Side::Client, LIMITS, LIMITS), Streams::new(Side::Server, LIMITS, LIMITS))
}

/// Moves everything the sender may send through the pipe, `budget` bytes per frame.
fn pump(tx: &mut Streams, rx: &mut Streams, budget: usize) -> Result<usize, PeerViolation> {
    let mut pipe = Vec::new();
    while tx.write_pipe_frame(budget, &mut Writer::new(&mut pipe)) {}
    let mut result = Ok(pipe.len());
    parse_symbol(&pipe, |f| {
        if let Err(e) = rx.on_pipe_frame(f) {
            result = Err(e);
        }
        Ok(())
    })
    .unwrap();
    result
}

fn read_all(s: &mut Streams, id: u64) -> (Vec<u8>, bool) {
    let mut out = vec![0u8; 100_000];
    let (n, fin) = s.read(id, &mut out).unwrap();
    out.truncate(n);
    (out, fin)
}

#[test]
fn multiplexed_streams_arrive_whole_and_in_order() {
    let (mut c, mut s) = pair();
    let a = c.open().unwrap();
    let b = c.open().unwrap();
    assert_eq!((a, b), (0, 2));
    let da: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let db: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    c.write(a, &da).unwrap();
    c.write(b, &db).unwrap();
    c.finish(b).unwrap();
    pump(&mut c, &mut s, 500).unwrap();
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert_eq!(events.iter().filter(|e| matches!(e, StreamEvent::Opened(_))).count(), 2);
    assert!(events.contains(&StreamEvent::Opened(0)) && events.contains(&StreamEvent::Opened(2)));
    assert!(events.contains(&StreamEvent::Readable(2)));
    assert_eq!(read_all(&mut s, a), (da, false));
    assert_eq!(read_all(&mut s, b), (db, true));
    // Server-opened streams are odd.
    assert_eq!(s.open().unwrap(), 1);
}

#[test]
fn flow_control_blocks_then_resumes_after_reads() {
    let (mut c, mut s) = pair();
    let id = c.open().unwrap();
    c.write(id, &vec![9u8; 9_000]).unwrap();
    pump(&mut c, &mut s, 1200).unwrap();
    // Only the stream window (4 000) may be sent.
    assert_eq!(c.send_buffered(id), 5_000);
    assert!(!c.has_pipe_data());
    let (got, _) = read_all(&mut s, id);
    assert_eq!(got.len(), 4_000);
    // 4 000 of the 10 000-byte connection window read: not yet half, so only the stream's
    // window moves.
    let (data, streams) = s.poll_window_updates();
    assert_eq!(data, None);
    assert_eq!(streams, vec![(id, 8_000)]);
    c.on_max_stream_data(id, 8_000);
    pump(&mut c, &mut s, 1200).unwrap();
    assert_eq!(c.send_buffered(id), 1_000);
    // Reading the next 4 000 passes half the connection window: both move.
    assert_eq!(read_all(&mut s, id).0.len(), 4_000);
    let (data, streams) = s.poll_window_updates();
    assert_eq!(data, Some(18_000));
    assert_eq!(streams, vec![(id, 12_000)]);
}

/// Idle is not blocked: data held back by flow control still counts as buffered.
#[test]
fn buffered_data_is_not_idle_even_when_flow_control_blocks_it() {
    let (mut c, mut s) = pair();
    let id = c.open().unwrap();
    assert!(!c.has_buffered());
    c.write(id, &[1u8; 5_000]).unwrap();
    assert!(c.has_buffered() && c.has_pipe_data());
    pump(&mut c, &mut s, 1200).unwrap();
    // 4 000 went (the stream window), 1 000 wait: blocked, not idle.
    assert!(c.has_buffered() && !c.has_pipe_data());
    // (The rest is drained without a receiver, which never raised its window.)
    let drain = |c: &mut Streams| while c.write_pipe_frame(1200, &mut Writer::new(&mut Vec::new())) {};
    c.on_max_stream_data(id, 8_000);
    drain(&mut c);
    assert!(!c.has_buffered());
    c.finish(id).unwrap();
    assert!(c.has_buffered());
    drain(&mut c);
    assert!(!c.has_buffered());
}

/// Streams take turns frame by frame: a short write on one stream goes out after at most
/// one frame of another stream's backlog, not after all of it.
#[test]
fn a_short_write_is_served_within_one_turn() {
    let (mut c, _) = pair();
    let bulk = c.open().unwrap();
    let short = c.open().unwrap();
    c.write(bulk, &[0u8; 3_900]).unwrap();
    let mut pipe = Vec::new();
    assert!(c.write_pipe_frame(500, &mut Writer::new(&mut pipe)));
    c.write(short, b"GET /").unwrap();
    let mut frames = Vec::new();
    let mut pipe = Vec::new();
    while c.write_pipe_frame(500, &mut Writer::new(&mut pipe)) {}
    parse_symbol(&pipe, |f| {
        if let PipeFrame::Stream { id, .. } = f {
            frames.push(id);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(frames.iter().position(|&id| id == short), Some(1), "{frames:?}");
}

#[test]
fn reset_reaches_the_reader() {
    let (mut c, mut s) = pair();
    let id = c.open().unwrap();
    c.write(id, b"hello").unwrap();
    pump(&mut c, &mut s, 1200).unwrap();
    c.reset(id, 7).unwrap();
    assert_eq!(c.write(id, b"x"), Err(StreamError::Closed(id)));
    pump(&mut c, &mut s, 1200).unwrap();
    let mut buf = [0u8; 10];
    assert_eq!(s.read(id, &mut buf), Err(StreamError::Reset { id, code: 7 }));
}

#[test]
fn peer_violations_are_caught() {
    let (_, mut s) = pair();
    let frame = |id, offset, len| PipeFrame::Stream { id, offset, fin: false, data: &[0u8; 5000][..len] };
    assert_eq!(s.on_pipe_frame(frame(2, 0, 4001)), Err(PeerViolation::StreamWindow(2)));
    assert_eq!(s.on_pipe_frame(frame(6, 3999, 2)), Err(PeerViolation::StreamWindow(6)));
    assert_eq!(s.on_pipe_frame(frame(8, 0, 1)), Err(PeerViolation::StreamLimit(8)));
    assert_eq!(s.on_pipe_frame(frame(1, 0, 1)), Err(PeerViolation::StreamLimit(1)));
    // Connection window: 3 streams × 4 000 > 10 000.
    s.on_pipe_frame(frame(0, 0, 4000)).unwrap();
    s.on_pipe_frame(frame(2, 0, 4000)).unwrap();
    assert_eq!(s.on_pipe_frame(frame(4, 0, 4000)), Err(PeerViolation::ConnectionWindow));
    let reset = PipeFrame::ResetStream { id: 0, code: 1, final_size: 10 };
    assert_eq!(s.on_pipe_frame(reset), Err(PeerViolation::FinalSize(0)));
}

/// Chunks in any order, overlapping and repeated, come out whole and once; early chunks are
/// not readable until the gap before them fills, and count against flow control as they
/// arrive (by their end).
#[test]
fn chunks_in_any_order_are_reassembled() {
    let (_, mut s) = pair();
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 13) as u8).collect();
    let chunk = |from: usize, to: usize, fin: bool| PipeFrame::Stream {
        id: 0,
        offset: from as u64,
        fin,
        data: &data[from..to],
    };
    s.on_pipe_frame(chunk(2000, 3000, true)).unwrap();
    s.on_pipe_frame(chunk(500, 1500, false)).unwrap();
    s.on_pipe_frame(chunk(1000, 2500, false)).unwrap();
    assert_eq!(read_all(&mut s, 0), (vec![], false), "nothing contiguous yet");
    assert_eq!(s.received_data, 3000, "flow control counts the highest offset");
    s.on_pipe_frame(chunk(0, 700, false)).unwrap();
    s.on_pipe_frame(chunk(0, 700, false)).unwrap();
    assert_eq!(read_all(&mut s, 0), (data.clone(), true));
    assert_eq!(s.recv_buffered(), 0);
    // A final size is one size: no data beyond it, no other FIN.
    assert_eq!(s.on_pipe_frame(chunk(2999, 3000, false)), Ok(()));
    let late = PipeFrame::Stream { id: 0, offset: 3000, fin: false, data: &[1] };
    assert_eq!(s.on_pipe_frame(late), Err(PeerViolation::FinalSize(0)));
    let (_, mut s) = pair();
    s.on_pipe_frame(chunk(1000, 2000, false)).unwrap();
    assert_eq!(s.on_pipe_frame(chunk(0, 500, true)), Err(PeerViolation::FinalSize(0)));
}

proptest::proptest! {
    /// Any delivery order of any cutting of a stream gives back the stream.
    #[test]
    fn any_order_gives_the_stream_back(
        len in 1usize..3_900,
        cuts in proptest::collection::vec(1usize..600, 1..20),
        order in proptest::collection::vec(proptest::prelude::any::<u32>(), 20),
        dup in proptest::prelude::any::<bool>(),
    ) {
        let data: Vec<u8> = (0..len as u32).map(|i| (i * 31 + 7) as u8).collect();
        let mut pieces = Vec::new();
        let mut at = 0;
        for cut in cuts.iter().cycle() {
            if at >= len { break; }
            let end = (at + cut).min(len);
            pieces.push((at, end));
            at = end;
        }
        let mut keyed: Vec<_> = pieces.iter().enumerate().map(|(i, p)| (order[i % order.len()], *p)).collect();
        keyed.sort();
        if dup {
            let again = keyed.clone();
            keyed.extend(again);
        }
        let (_, mut s) = pair();
        for (_, (from, to)) in keyed {
            let frame = PipeFrame::Stream { id: 0, offset: from as u64, fin: to == len, data: &data[from..to] };
            s.on_pipe_frame(frame).unwrap();
        }
        proptest::prop_assert_eq!(read_all(&mut s, 0), (data, true));
    }
}

#[test]
fn a_small_write_beside_bulk_data_is_cut_alone() {
    let (mut tx, mut rx) = pair();
    let bulk = tx.open().unwrap();
    let request = tx.open().unwrap();
    tx.write(request, &[7; 100]).unwrap();
    // Alone it is not "beside" anything: nothing to jump.
    assert_eq!(tx.small_stream(1_000), None);
    tx.write(bulk, &[1; 3_000]).unwrap();
    assert_eq!(tx.small_stream(1_000), Some(request));
    assert_eq!(tx.small_stream(50), None, "100 bytes are not a small write under 50");
    // Its frames alone, although the bulk stream's turn comes first.
    let mut pipe = Vec::new();
    assert!(tx.write_pipe_frame_of(request, 1_000, &mut Writer::new(&mut pipe)));
    assert!(!tx.write_pipe_frame_of(request, 1_000, &mut Writer::new(&mut pipe)), "nothing left");
    parse_symbol(&pipe, |f| {
        rx.on_pipe_frame(f).unwrap();
        Ok(())
    })
    .unwrap();
    assert_eq!(read_all(&mut rx, request), (vec![7; 100], false));
    assert_eq!(read_all(&mut rx, bulk).0.len(), 0);
    // The bulk stream keeps its turn and sends everything.
    pump(&mut tx, &mut rx, 1_000).unwrap();
    assert_eq!(read_all(&mut rx, bulk).0, vec![1; 3_000]);
}

#[test]
fn a_reset_waits_for_room() {
    let (mut tx, mut rx) = pair();
    let id = tx.open().unwrap();
    tx.write(id, b"abc").unwrap();
    tx.reset(id, 9).unwrap();
    let mut pipe = Vec::new();
    assert!(!tx.write_pipe_frame(10, &mut Writer::new(&mut pipe)), "no room for RESET_STREAM");
    assert!(tx.has_pipe_data(), "the reset still waits");
    pump(&mut tx, &mut rx, 100).unwrap();
    assert_eq!(rx.read(id, &mut [0; 8]), Err(StreamError::Reset { id, code: 9 }));
}

/// Symbols filled by `fill_symbol` (PROTOCOL.md §10.1): a stream with more data than a symbol
/// holds fills each one with a STREAM_TO_END frame, two bytes of data more than a STREAM frame
/// leaves room for; the last, partial symbol keeps its lengths and padding; the receiver gets
/// every byte and the FIN, symbols parsed on their own in any order.
#[test]
fn filled_symbols_end_with_a_stream_frame_without_length() {
    let (mut c, mut s) = pair();
    let id = c.open().unwrap();
    let data: Vec<u8> = (0..3_500u32).map(|i| (i * 13) as u8).collect();
    c.write(id, &data).unwrap();
    c.finish(id).unwrap();
    let size = 1_000;
    let mut symbols = Vec::new();
    loop {
        let mut symbol = Vec::new();
        while symbol.len() < size && c.fill_symbol(size - symbol.len(), &mut Writer::new(&mut symbol)) {}
        if symbol.is_empty() {
            break;
        }
        assert!(symbol.len() <= size);
        symbol.resize(size, 0);
        symbols.push(symbol);
    }
    assert_eq!(symbols.len(), 4);
    // Stream 0 at offsets 0, 997, 1993 (headers of 3 and 4 bytes, no length), then its last
    // 511 bytes with a length and the FIN.
    let firsts: Vec<u8> = symbols.iter().map(|s| s[0]).collect();
    assert_eq!(firsts, [0x04, 0x04, 0x04, 0x02]);
    for symbol in symbols.iter().rev() {
        parse_symbol(symbol, |f| {
            s.on_pipe_frame(f).unwrap();
            Ok(())
        })
        .unwrap();
    }
    assert_eq!(read_all(&mut s, id), (data, true));
    // A symbol filled exactly by the stream's last bytes carries its FIN as STREAM_TO_END.
    let (mut c, mut s) = pair();
    let id = c.open().unwrap();
    c.write(id, &[5; 997]).unwrap();
    c.finish(id).unwrap();
    let mut symbol = Vec::new();
    assert!(c.fill_symbol(size, &mut Writer::new(&mut symbol)));
    assert_eq!((symbol.len(), symbol[0]), (size, 0x05));
    parse_symbol(&symbol, |f| {
        s.on_pipe_frame(f).unwrap();
        Ok(())
    })
    .unwrap();
    assert_eq!(read_all(&mut s, id), (vec![5; 997], true));
}
