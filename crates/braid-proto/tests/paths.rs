//! Path lifecycle at the connection's API (PROTOCOL.md §12): opening and removing paths, their
//! limits, failure and return events, and what a peer may and may not do with path ids. A
//! small harness carries datagrams over 10 Mbit/s links with a fixed delay and a drop-tail
//! queue; a path can be cut in either direction.

use braid_proto::conn::{PathError, PathState};
use braid_proto::wire::{Frame, FrameIter, PacketHeader, Reader};
use braid_proto::{Connection, ConnectionConfig, Event, Instant};

const ONE_WAY_US: u64 = 10_000;
/// Microseconds a byte takes at 10 Mbit/s, ×10 (0.8 µs).
const TENTHS_US_PER_BYTE: u64 = 8;
/// Most queueing delay before the tail is dropped.
const QUEUE_US: u64 = 50_000;

struct Pair {
    client: Connection,
    server: Connection,
    now: u64,
    /// (arrival µs, to the server, path, datagram), in arrival order.
    wire: Vec<(u64, bool, u8, Vec<u8>)>,
    /// When each path's link is free again, per direction (µs).
    free_at: [[u64; 2]; 8],
    /// Per path: client → server cut, server → client cut.
    cut: [(bool, bool); 8],
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    stream: Option<u64>,
    written: usize,
    read: usize,
    /// ACK frames seen on the wire, and those in a packet of another path than theirs.
    acks: usize,
    acks_elsewhere: usize,
}

/// The paths named by the ACK frames of a datagram.
fn ack_paths(datagram: &[u8]) -> Vec<u8> {
    let mut r = Reader::new(datagram);
    let Ok(_) = PacketHeader::parse(&mut r) else { return Vec::new() };
    FrameIter::new(r.rest())
        .filter_map(|f| match f.ok()? {
            Frame::Ack(ack) => Some(ack.path),
            _ => None,
        })
        .collect()
}

fn ms(t: u64) -> Instant {
    Instant::from_micros(t * 1000)
}

impl Pair {
    fn new(paths: u8) -> Pair {
        let config = ConnectionConfig { paths, ..ConnectionConfig::default() };
        Pair {
            client: Connection::client(config.clone(), Instant::ZERO, 1),
            server: Connection::server(config, Instant::ZERO),
            now: 0,
            wire: Vec::new(),
            free_at: [[0; 2]; 8],
            cut: [(false, false); 8],
            client_events: Vec::new(),
            server_events: Vec::new(),
            stream: None,
            written: 0,
            read: 0,
            acks: 0,
            acks_elsewhere: 0,
        }
    }

    /// Runs `duration` ms, 1 ms at a time, the client writing up to `bytes` in total.
    fn run(&mut self, duration: u64, bytes: usize) {
        let mut buf = Vec::new();
        for _ in 0..duration {
            self.now += 1;
            let now = ms(self.now);
            let due: Vec<_> = self.wire.iter().filter(|w| w.0 <= self.now * 1000).cloned().collect();
            self.wire.retain(|w| w.0 > self.now * 1000);
            for (_, to_server, path, d) in due {
                let to = if to_server { &mut self.server } else { &mut self.client };
                to.handle_datagram(now, path, &d);
            }
            for c in [&mut self.client, &mut self.server] {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            }
            if let Some(s) = self.client.streams() {
                let id = *self.stream.get_or_insert_with(|| s.open().unwrap());
                while self.written < bytes && s.send_buffered(id) < 100_000 {
                    let n = (bytes - self.written).min(10_000);
                    s.write(id, &vec![(self.written % 251) as u8; n]).unwrap();
                    self.written += n;
                }
            }
            if let Some(s) = self.server.streams() {
                let mut chunk = vec![0; 65_536];
                let id = self.stream.unwrap_or(0);
                while let Ok((n, _)) = s.read(id, &mut chunk) {
                    if n == 0 {
                        break;
                    }
                    self.read += n;
                }
            }
            for (to_server, c) in [(true, &mut self.client), (false, &mut self.server)] {
                while let Some(t) = c.poll_transmit(now, &mut buf) {
                    let acked = ack_paths(&buf[..t.size]);
                    self.acks += acked.len();
                    self.acks_elsewhere += acked.iter().filter(|&&p| p != t.path).count();
                    let path = usize::from(t.path);
                    let cut = if to_server { self.cut[path].0 } else { self.cut[path].1 };
                    let free = &mut self.free_at[path][usize::from(!to_server)];
                    let start = (*free).max(self.now * 1000);
                    if cut || start - self.now * 1000 > QUEUE_US {
                        continue;
                    }
                    *free = start + (t.size as u64 * TENTHS_US_PER_BYTE).div_ceil(10);
                    self.wire.push((*free + ONE_WAY_US, to_server, t.path, buf[..t.size].to_vec()));
                }
            }
            while let Some(e) = self.client.poll_event() {
                self.client_events.push(e);
            }
            while let Some(e) = self.server.poll_event() {
                if !matches!(e, Event::Stream(_)) {
                    self.server_events.push(e);
                }
            }
        }
    }
}

/// PROTOCOL.md §12.4: a path's ACKs go back on that path only (bundled on whichever path sent
/// next, a slow path's ACKs returned at two different delays and declared spurious losses).
#[test]
fn each_paths_acks_go_back_on_that_path() {
    let mut pair = Pair::new(2);
    pair.run(2000, 1_000_000);
    assert!(pair.read >= 1_000_000, "transfer incomplete: {} bytes", pair.read);
    assert!(pair.acks > 200, "{} ACK frames", pair.acks);
    assert_eq!(pair.acks_elsewhere, 0, "of {} ACK frames", pair.acks);
}

#[test]
fn path_ids_are_limited_and_never_reused() {
    let mut pair = Pair::new(2);
    assert_eq!(pair.client.remove_path(ms(0), 1), Err(PathError::NotEstablished));
    assert_eq!(pair.server.add_path(ms(0)), Err(PathError::ServerCannotOpen));
    pair.run(100, 0);
    assert!(pair.client.is_established());
    for id in 2..8 {
        assert_eq!(pair.client.add_path(ms(100)), Ok(id));
    }
    assert_eq!(pair.client.add_path(ms(100)), Err(PathError::TooManyPaths));
    for id in 1..8 {
        pair.client.remove_path(ms(100), id).unwrap();
    }
    assert_eq!(pair.client.remove_path(ms(100), 3), Err(PathError::NoSuchPath(3)));
    assert_eq!(pair.client.remove_path(ms(100), 0), Err(PathError::LastPath(0)));
    // Removed ids stay used: the next path would be id 8, beyond the limit.
    assert_eq!(pair.client.add_path(ms(100)), Err(PathError::TooManyPaths));
    pair.run(200, 0);
    let states = pair.server.path_states();
    assert_eq!(states.len(), 8, "the server learned of every abandoned id");
    assert!(states[1..].iter().all(|&s| s == PathState::Removed), "{states:?}");
    assert_eq!(pair.server_events.iter().filter(|e| matches!(e, Event::PathRemoved(_))).count(), 7);
}

/// Path 1 is cut both ways mid-transfer: it fails (an event and its state), the transfer goes
/// on over path 0; when it is restored a probe brings it back.
#[test]
fn a_cut_path_fails_and_returns() {
    let mut pair = Pair::new(2);
    pair.run(300, usize::MAX);
    let before = pair.read;
    assert!(before > 0);
    pair.cut[1] = (true, true);
    pair.run(2000, usize::MAX);
    assert_eq!(pair.client.path_states()[1], PathState::Failed);
    assert!(pair.client_events.contains(&Event::PathFailed(1)), "{:?}", pair.client_events);
    let during = pair.read;
    assert!(during > before + 1_000_000, "no progress on the surviving path: {before} → {during}");
    let sent_failed = pair.client.path_stats()[1].packets_sent;
    pair.run(1000, usize::MAX);
    // Only probes, at a backed-off interval (≤ 1 s): a handful of packets in a second.
    let probes = pair.client.path_stats()[1].packets_sent - sent_failed;
    assert!((1..=12).contains(&probes), "{probes} packets on a failed path in 1 s");
    pair.cut[1] = (false, false);
    pair.run(2000, usize::MAX);
    assert_eq!(pair.client.path_states()[1], PathState::Active);
    assert!(pair.client_events.contains(&Event::PathRecovered(1)), "{:?}", pair.client_events);
    assert!(pair.client.path_stats()[1].packets_sent > sent_failed + probes + 100, "not used again");
}

/// A failed path whose reverse direction is still cut does not return, although the server
/// receives the probes: the probe's ACK must come back on the path itself (§12.2).
#[test]
fn a_path_returns_only_when_both_directions_work() {
    let mut pair = Pair::new(2);
    pair.run(300, usize::MAX);
    pair.cut[1] = (true, true);
    pair.run(2000, usize::MAX);
    assert_eq!(pair.client.path_states()[1], PathState::Failed);
    pair.cut[1] = (false, true);
    pair.run(3000, usize::MAX);
    assert_eq!(pair.client.path_states()[1], PathState::Failed, "returned on a one-way path");
    pair.cut[1] = (false, false);
    pair.run(2000, usize::MAX);
    assert_eq!(pair.client.path_states()[1], PathState::Active);
}

/// With a single path nothing is declared failed: there is nowhere else to send.
#[test]
fn the_last_path_never_fails() {
    let mut pair = Pair::new(1);
    pair.run(300, usize::MAX);
    pair.cut[0] = (true, true);
    pair.run(3000, usize::MAX);
    assert_eq!(pair.client.path_states(), vec![PathState::Active]);
    assert!(pair.client.path_stats()[0].timeouts >= 3);
    pair.cut[0] = (false, false);
    let before = pair.read;
    pair.run(10_000, usize::MAX);
    assert!(pair.read > before, "no progress after the outage");
}

/// Datagrams on a removed path are dropped, and a peer cannot open ids beyond the limit.
#[test]
fn removed_and_out_of_range_paths_are_refused() {
    let mut pair = Pair::new(2);
    pair.run(300, 100_000);
    // A real datagram of the client's on path 1, kept for replay after removal: the client
    // writes and the pair runs until path 1 carries some of it (which path the scheduler picks
    // first, and when, is up to the congestion controllers).
    let mut on_path_1 = None;
    for _ in 0..200 {
        pair.run(1, 200_000);
        on_path_1 = pair.wire.iter().find(|w| w.1 && w.2 == 1).map(|w| w.3.clone());
        if on_path_1.is_some() {
            break;
        }
    }
    let replay = on_path_1.expect("path 1 carries data");
    pair.client.remove_path(ms(pair.now), 1).unwrap();
    pair.run(100, 0);
    assert_eq!(pair.server.path_states()[1], PathState::Removed);
    let dropped = pair.server.stats.datagrams_dropped;
    pair.server.handle_datagram(ms(pair.now), 1, &replay);
    assert_eq!(pair.server.stats.datagrams_dropped, dropped + 1);
    // Path id 8 does not exist.
    pair.server.handle_datagram(ms(pair.now), 8, &replay);
    assert_eq!(pair.server.stats.datagrams_dropped, dropped + 2);
    assert!(pair.server.path_states().len() <= 8);
    assert!(!pair.server.is_closed());
}
