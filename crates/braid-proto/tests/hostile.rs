//! Hostile datagrams: truncated, wrong version, unknown frames, absurd lengths, bit flips of
//! real packets. The connection drops or refuses them — never panics — and stays usable or
//! closes with a stated reason.

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
    v2[0] = (2 << 5) | (v2[0] & 0x1f);
    server.handle_datagram(Instant::from_micros(300_000), 0, &v2);
    let mut unknown_frame = real[..18].to_vec();
    unknown_frame.push(0x3f);
    server.handle_datagram(Instant::from_micros(300_000), 0, &unknown_frame);
    assert!(server.stats.datagrams_dropped >= dropped + 2);
    assert!(!server.is_closed());
}
