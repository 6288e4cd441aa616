//! The timer table: every kind of deadline is set in some run, and `poll_timeout` is always
//! the table's earliest entry. Two connections over two paths (10 and 30 ms one way, every
//! 13th datagram dropped), driven 1 ms at a time; the client writes bursts, sends unreliable
//! datagrams, loses path 0 for good at 1.5 s, and path 1's larger packets start to vanish at 3 s
//! (a PMTU black hole, so symbols cut at the larger size go out in pieces).

use std::collections::HashSet;
use std::mem::{discriminant, Discriminant};

use super::Timer;
use crate::conn::{Connection, ConnectionConfig, Mode};
use crate::Instant;

/// The table of `c`, checking that `poll_timeout` is its earliest entry.
fn table(c: &Connection) -> Vec<(Timer, Instant)> {
    let mut all = Vec::new();
    c.timers(|t, at| all.push((t, at)));
    assert_eq!(c.poll_timeout(), all.iter().map(|&(_, at)| at).min(), "{all:?}");
    all
}

struct Net {
    ends: [Connection; 2],
    /// (arrival µs, to the server, path, datagram).
    wire: Vec<(u64, bool, u8, Vec<u8>)>,
    sent: u64,
    seen: HashSet<Discriminant<Timer>>,
}

impl Net {
    fn new(mode: Mode) -> Net {
        let config = ConnectionConfig { mode, paths: 2, max_plpmtu: 1500, ..ConnectionConfig::default() };
        let client = Connection::client(config.clone(), Instant::ZERO, 7);
        Net {
            ends: [client, Connection::server(config, Instant::ZERO)],
            wire: Vec::new(),
            sent: 0,
            seen: HashSet::new(),
        }
    }

    /// Runs until `until_ms`, writing a 20 kB burst and a datagram every 200 ms.
    fn run(&mut self, until_ms: u64) {
        let mut buf = Vec::new();
        let mut stream = None;
        for ms in 1..=until_ms {
            let now = Instant::from_micros(ms * 1000);
            let due: Vec<_> = self.wire.iter().filter(|w| w.0 <= ms * 1000).cloned().collect();
            self.wire.retain(|w| w.0 > ms * 1000);
            for (_, to_server, path, d) in due {
                let end = &mut self.ends[usize::from(to_server)];
                end.handle_datagram(now, path, &d);
                self.seen.extend(table(end).iter().map(|(t, _)| discriminant(t)));
            }
            if ms.is_multiple_of(200) && self.ends[0].is_established() {
                let _ = self.ends[0].send_datagram(now, &[7; 300]);
                let streams = self.ends[0].streams().expect("established");
                let id = *stream.get_or_insert_with(|| streams.open().expect("a stream"));
                streams.write(id, &[1; 20_000]).expect("room");
            }
            for (i, end) in self.ends.iter_mut().enumerate() {
                if end.poll_timeout().is_some_and(|t| t <= now) {
                    end.handle_timeout(now);
                }
                self.seen.extend(table(end).iter().map(|(t, _)| discriminant(t)));
                while let Some(t) = end.poll_transmit(now, &mut buf) {
                    self.sent += 1;
                    let delay = if t.path == 0 { 10_000 } else { 30_000 };
                    let cut = t.path == 0 && ms >= 1500;
                    let black_hole = t.path == 1 && ms >= 3000 && t.size > 1280;
                    if !self.sent.is_multiple_of(13) && !cut && !black_hole {
                        self.wire.push((ms * 1000 + delay, i == 0, t.path, buf.clone()));
                    }
                    self.seen.extend(table(end).iter().map(|(t, _)| discriminant(t)));
                }
                // Also read what arrived, so flow control moves.
                if let Some(streams) = end.streams() {
                    let mut out = [0; 4096];
                    for id in 0..4 {
                        while streams.read(id, &mut out).is_ok_and(|(n, _)| n > 0) {}
                    }
                }
            }
        }
    }
}

#[test]
fn each_timer_is_set_and_poll_timeout_is_the_earliest() {
    let fresh = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let entries = table(&fresh);
    assert!(entries.contains(&(Timer::Handshake, Instant::ZERO)), "{entries:?}");
    assert_eq!(fresh.poll_timeout(), Some(Instant::ZERO));

    let mut braid = Net::new(Mode::Braid);
    braid.run(4000);
    let mut ctcp = Net::new(Mode::Ctcp);
    ctcp.run(1000);
    let seen: HashSet<_> = braid.seen.union(&ctcp.seen).copied().collect();
    let all = [
        Timer::Idle,
        Timer::Loss(0),
        Timer::Ack(0),
        Timer::NextSymbol,
        Timer::Probe(0),
        Timer::Measure(0),
        Timer::Scheduler,
        Timer::Release,
        Timer::Redundancy(0),
        Timer::Handshake,
        Timer::Datagrams,
        Timer::Pmtu(0),
        Timer::Parts,
        Timer::TailProbe(0),
    ];
    let missing: Vec<_> = all.iter().filter(|t| !seen.contains(&discriminant(*t))).collect();
    assert!(missing.is_empty(), "never set: {missing:?}");
}

#[test]
fn handle_timeout_fires_the_idle_timer_at_its_deadline() {
    let mut c = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let idle = table(&c).iter().find(|(t, _)| *t == Timer::Idle).map(|&(_, at)| at).expect("always set");
    c.handle_timeout(idle - std::time::Duration::from_micros(1));
    assert!(!c.is_closed());
    c.handle_timeout(idle);
    assert!(c.is_closed());
    assert_eq!(c.poll_timeout(), None);
}
