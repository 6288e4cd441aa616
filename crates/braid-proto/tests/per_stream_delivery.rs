//! Per-stream delivery (PROTOCOL.md §10.1.1): the receiver hands each source symbol's pipe
//! frames to their streams as soon as the symbol is known, so a lost symbol holds back only the
//! streams whose frames it carried. A request written after a bulk stream's data reaches the
//! peer's application although every bulk symbol before it in the pipe is lost.

use braid_proto::{Connection, ConnectionConfig, Instant};

/// The bulk stream's bytes: a pseudo-random pattern of period [`PERIOD`], so each of its source
/// symbols holds [`MARKER`] somewhere and a repair symbol (a combination of several) does not.
const PERIOD: usize = 251;
const BULK: usize = 30_000;
const MARKER: usize = 24;
const REQUEST: &[u8] = b"a request beside the bulk transfer, on a stream of its own";

fn bulk_byte(i: usize) -> u8 {
    ((i % PERIOD) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) as u8
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Reads everything `id` has for the application: (bytes so far, finished).
fn read(conn: &mut Connection, id: u64, into: &mut Vec<u8>) -> bool {
    let Some(s) = conn.streams() else { return false };
    let mut buf = [0u8; 4096];
    loop {
        match s.read(id, &mut buf) {
            Ok((0, fin)) => return fin,
            Ok((n, _)) => into.extend_from_slice(&buf[..n]),
            Err(_) => return false,
        }
    }
}

#[test]
fn a_lost_bulk_symbol_does_not_hold_back_another_stream() {
    let mut client = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    let bulk: Vec<u8> = (0..BULK).map(bulk_byte).collect();
    let marker: Vec<u8> = (0..MARKER).map(bulk_byte).collect();
    let mut buf = Vec::new();
    let (mut ids, mut written_at) = (None, None);
    let (mut bulk_read, mut request_read) = (Vec::new(), Vec::new());
    let (mut dropped, mut request_done) = (0u32, None);
    for step in 0..200u64 {
        let now = Instant::from_micros(step * 1_000);
        if client.is_established() && ids.is_none() {
            let s = client.streams().unwrap();
            let (b, r) = (s.open().unwrap(), s.open().unwrap());
            assert_eq!(s.write(b, &bulk).unwrap(), BULK);
            s.finish(b).unwrap();
            ids = Some((b, r));
        }
        // The request is written once bulk symbols were lost ahead of it in the pipe.
        if let (Some((_, r)), None, true) = (ids, written_at, dropped >= 5) {
            let s = client.streams().unwrap();
            s.write(r, REQUEST).unwrap();
            s.finish(r).unwrap();
            written_at = Some(step);
        }
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            let d = &buf[..t.size];
            // Every datagram with a bulk source symbol is lost, unless it carries the request.
            if ids.is_some() && contains(d, &marker) && !contains(d, REQUEST) {
                dropped += 1;
                continue;
            }
            server.handle_datagram(now, t.path, d);
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            client.handle_datagram(now, t.path, &buf[..t.size]);
        }
        client.handle_timeout(now);
        server.handle_timeout(now);
        if let Some((b, r)) = ids {
            let bulk_done = read(&mut server, b, &mut bulk_read);
            if read(&mut server, r, &mut request_read) && request_done.is_none() {
                request_done = Some(step);
                assert_eq!(request_read, REQUEST, "the request arrived whole");
                // The bulk data ahead of it in the pipe is still missing: an in-order pipe would
                // have held the request behind it.
                assert!(!bulk_done && bulk_read.is_empty(), "bulk bytes read: {}", bulk_read.len());
                break;
            }
        }
    }
    let (written, done) = (written_at.expect("connected"), request_done.expect("the request never arrived"));
    // No link delay here, only the pacer's: the request is there a few polls after it was
    // written (4 ms, at the first flight's pacing rate), with no wait for the bulk symbols'
    // repair.
    assert!(done - written <= 10, "the request took {} ms", done - written);
}
