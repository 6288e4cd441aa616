//! Hostile datagrams: truncated, wrong version, unknown frames, absurd lengths, bit flips of
//! real packets. The connection drops or refuses them — never panics — and stays usable or
//! closes with a stated reason.

use braid_proto::wire::{
    AckFrame, AckRange, DatagramType, Frame, FrameIter, PacketHeader, PacketType, Reader, SymbolPartFrame,
    Writer, VERSION,
};
use braid_proto::{CloseReason, Connection, ConnectionConfig, Event, Instant};
use proptest::prelude::*;

/// An established pair and a few real datagrams of the client's (data included).
fn established() -> (Connection, Connection, Vec<Vec<u8>>) {
    let mut client = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    let mut buf = Vec::new();
    let mut samples = Vec::new();
    for step in 0..40u64 {
        let now = Instant::from_micros(step * 5_000);
        if client.is_established() && step == 10 {
            let s = client.streams().unwrap();
            let id = s.open().unwrap();
            s.write(id, &[7u8; 5000]).unwrap();
            s.finish(id).unwrap();
        }
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            samples.push(buf[..t.size].to_vec());
            server.handle_datagram(now, t.path, &buf[..t.size]);
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            client.handle_datagram(now, t.path, &buf[..t.size]);
        }
        client.handle_timeout(now);
        server.handle_timeout(now);
    }
    assert!(client.is_established() && server.is_established());
    (client, server, samples)
}

fn closed_reason(c: &mut Connection) -> Option<CloseReason> {
    std::iter::from_fn(|| c.poll_event()).find_map(|e| match e {
        Event::Closed(r) => Some(r),
        _ => None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_bytes_are_dropped(datagrams in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1500), 1..20)) {
        let (_, mut server, _) = established();
        let before = server.stats.datagrams_dropped;
        for d in &datagrams {
            server.handle_datagram(Instant::from_micros(300_000), 0, d);
        }
        // Random bytes almost never carry the connection id: all dropped, connection intact.
        prop_assert!(server.stats.datagrams_dropped >= before + datagrams.len() as u64 - 1);
        prop_assert!(!server.is_closed());
    }

    #[test]
    fn mutated_real_packets_never_panic(which in any::<prop::sample::Index>(), flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6), cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let (_, mut server, samples) = established();
        let mut d = which.get(&samples).clone();
        for (at, x) in &flips {
            let i = at.index(d.len());
            d[i] ^= x;
        }
        if truncate {
            d.truncate(cut.index(d.len() + 1));
        }
        server.handle_datagram(Instant::from_micros(300_000), 0, &d);
        if server.is_closed() {
            // Only a stated violation may close it.
            let reason = closed_reason(&mut server);
            prop_assert!(matches!(reason, Some(CloseReason::Violation(_))), "{reason:?}");
        }
    }
}

#[test]
fn wrong_path_and_version_are_dropped() {
    let (_, mut server, samples) = established();
    let real = samples.last().unwrap().clone();
    let dropped = server.stats.datagrams_dropped;
    server.handle_datagram(Instant::from_micros(300_000), 5, &real); // no such path
    let mut v2 = real.clone();
    v2[0] = DatagramType::of(&real).expect("a packet of this version").first_byte_of_version(VERSION + 1);
    server.handle_datagram(Instant::from_micros(300_000), 0, &v2);
    // The real packet's header, then a frame type no version knows.
    let header = PacketHeader::parse(&mut Reader::new(&real)).unwrap();
    let mut unknown_frame = real[..header.encoded_len()].to_vec();
    unknown_frame.push(0x3f);
    server.handle_datagram(Instant::from_micros(300_000), 0, &unknown_frame);
    assert!(server.stats.datagrams_dropped >= dropped + 2);
    assert!(!server.is_closed());
}

/// A Data packet on path 0 of `real`'s connection, numbered `number`, holding `frames`.
fn packet_with(real: &[u8], number: u64, frames: &[Frame<'_>]) -> Vec<u8> {
    let header = PacketHeader::parse(&mut Reader::new(real)).unwrap();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    PacketHeader { ty: PacketType::Data, dcid: header.dcid, path: 0, number }.write(&mut w);
    for f in frames {
        f.write(&mut w).unwrap();
    }
    out
}

/// SYMBOL_PART (PROTOCOL.md §14.4): a SYMBOL frame in pieces is taken like the whole frame;
/// pieces of many frames never complete keep bounded state; a reassembled frame that is not one
/// SYMBOL frame closes the connection with the reason.
#[test]
fn symbol_parts_reassemble_stay_bounded_and_must_hold_a_symbol() {
    let (_, mut server, samples) = established();
    let now = Instant::from_micros(300_000);
    // A real SYMBOL frame of the client's, re-encoded, sent again in three pieces.
    let symbol = samples
        .iter()
        .find_map(|d| {
            let mut r = Reader::new(d);
            PacketHeader::parse(&mut r).unwrap();
            FrameIter::new(r.rest()).filter_map(Result::ok).find(|f| matches!(f, Frame::Symbol(_))).map(|f| {
                let mut bytes = Vec::new();
                f.write(&mut Writer::new(&mut bytes)).unwrap();
                bytes
            })
        })
        .expect("the client sent a symbol");
    let real = samples.last().unwrap().clone();
    let total = symbol.len() as u64;
    let before = server.stats.symbols_received;
    let third = symbol.len() / 3;
    for (i, range) in [(2 * third)..symbol.len(), 0..third, third..(2 * third)].into_iter().enumerate() {
        let part = Frame::SymbolPart(SymbolPartFrame {
            id: 7,
            total,
            offset: range.start as u64,
            data: &symbol[range.clone()],
        });
        server.handle_datagram(now, 0, &packet_with(&real, 1_000 + i as u64, &[part]));
    }
    assert_eq!(server.stats.symbols_received, before + 1, "the reassembled symbol was taken");
    assert!(!server.is_closed());
    // Ten thousand frames' first pieces, never completed: dropped along the way, no close.
    for id in 0..10_000u64 {
        let part =
            Frame::SymbolPart(SymbolPartFrame { id: 100 + id, total: 16_000, offset: 0, data: &[1; 600] });
        server.handle_datagram(now, 0, &packet_with(&real, 2_000 + id, &[part]));
    }
    assert!(!server.is_closed());
    // A PING in pieces: not a SYMBOL frame.
    let ping = Frame::SymbolPart(SymbolPartFrame { id: 99_999, total: 1, offset: 0, data: &[0x01] });
    server.handle_datagram(now, 0, &packet_with(&real, 20_000, &[ping]));
    match closed_reason(&mut server) {
        Some(CloseReason::Violation(why)) => assert!(why.contains("SYMBOL_PART"), "{why}"),
        other => panic!("expected a violation, got {other:?}"),
    }
}

/// RFC 9000 §13.1: an ACK for a packet never sent is a protocol violation. Taken as real, it
/// moved the path's largest acknowledged past everything the sender had sent, and the next
/// ACKs' loss detection declared every packet then in flight lost (140 of them in the 40 steps
/// after it here, against none without it).
#[test]
fn an_ack_for_a_packet_never_sent_closes_the_connection() {
    let mut client = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    let mut buf = Vec::new();
    let mut from_server: Vec<Vec<u8>> = Vec::new();
    let mut held: Vec<Vec<u8>> = Vec::new();
    for step in 0..80u64 {
        let now = Instant::from_micros(step * 5_000);
        if client.is_established() && step == 10 {
            let s = client.streams().unwrap();
            let id = s.open().unwrap();
            s.write(id, &[7u8; 2_000_000]).unwrap();
        }
        if step == 40 {
            assert!(!held.is_empty() && !client.is_closed(), "nothing in flight to take as acknowledged");
            let ranges = [AckRange { start: 0, end: 1_000_000_000 }];
            let ack = Frame::Ack(AckFrame { path: 0, ack_delay_us: 0, ranges: (&ranges).into() });
            client.handle_datagram(now, 0, &packet_with(from_server.last().unwrap(), 1_000_000, &[ack]));
        }
        // The client's datagrams arrive a step late, so some are always in flight.
        for d in std::mem::take(&mut held) {
            server.handle_datagram(now, 0, &d);
        }
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            held.push(buf[..t.size].to_vec());
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            from_server.push(buf[..t.size].to_vec());
            client.handle_datagram(now, t.path, &buf[..t.size]);
        }
        client.handle_timeout(now);
        server.handle_timeout(now);
    }
    let lost: u64 = client.path_stats().iter().map(|p| p.packets_lost).sum();
    assert_eq!(lost, 0, "the false ACK made the client declare packets lost");
    match closed_reason(&mut client) {
        Some(CloseReason::Violation(why)) => assert!(why.contains("never sent"), "{why}"),
        other => panic!("expected a violation, got {other:?}"),
    }
}
