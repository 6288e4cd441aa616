//! Bursts on one stream of a connection whose second stream was used once (a tunnel's control
//! stream beside a TCP connection's, say) are app-idle bursts, as on a connection of one stream:
//! their last block takes an app-idle tail's margin, not a request's. The request rule of
//! `Connection::fill_pipe` (a small write cut at an app-idle point is a request's tail) must not
//! read the last few KiB of a large write as a small write: the cut runs a few ms ahead of the
//! wire, so every large write ends with a piece under the small-write size. When it did, every
//! burst's tail was a request's and the connection sent 32–47 % more repair (100 kB bursts every
//! 400 ms at 0.5–2 % loss). The seed is in every failure message.

use std::time::Duration;

use braid_proto::streams::StreamEvent;
use braid_proto::{Connection, ConnectionConfig, Event, Instant};
use braid_sim::{Endpoint, LinkConfig, LossModel, Network, PathConfig};

const BURST: u64 = 100_000;
const EVERY: Duration = Duration::from_millis(400);
const BURSTS: usize = 20;

/// Both ends: the client writes a burst every `EVERY` on its first stream (and, with
/// `second_stream`, 8 bytes once on a second); the server reads both.
struct Side {
    conn: Connection,
    client: bool,
    second_stream: bool,
    stream: Option<u64>,
    next: Option<Instant>,
    written: usize,
    read: u64,
}

impl Side {
    fn read(&mut self) {
        let mut buf = [0u8; 65_536];
        while let Some(event) = self.conn.poll_event() {
            let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
            let Some(streams) = self.conn.streams() else { return };
            while let Ok((n, fin)) = streams.read(id, &mut buf) {
                self.read += n as u64;
                if n == 0 || fin {
                    break;
                }
            }
        }
    }

    fn drive(&mut self, now: Instant) {
        self.read();
        if !self.client || !self.conn.is_established() {
            return;
        }
        let Some(streams) = self.conn.streams() else { return };
        let stream = match self.stream {
            Some(id) => id,
            None => {
                let id = streams.open().expect("a stream");
                if self.second_stream {
                    let other = streams.open().expect("a second stream");
                    streams.write(other, &[1u8; 8]).expect("open");
                }
                *self.stream.insert(id)
            }
        };
        let mut at = *self.next.get_or_insert(now);
        while at <= now && self.written < BURSTS {
            streams.write(stream, &vec![0x5a; BURST as usize]).expect("open");
            self.written += 1;
            at += EVERY;
        }
        self.next = Some(at);
    }
}

impl Endpoint for Side {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        self.conn.handle_datagram(now, path as u8, datagram);
        self.drive(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        self.drive(now);
        let mut buf = Vec::new();
        let transmit = self.conn.poll_transmit(now, &mut buf)?;
        buf.truncate(transmit.size);
        Some((usize::from(transmit.path), buf))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let wake = if self.client && self.written < BURSTS { self.next } else { None };
        match (self.conn.poll_timeout(), wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Repair symbols the client sent, over one 20 Mbit/s, 100 ms RTT path at `loss`.
fn repair_sent(loss: f64, seed: u64, second_stream: bool) -> u64 {
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50));
    let paths = [PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link }];
    let config = ConnectionConfig { paths: 1, ..ConnectionConfig::default() };
    let side =
        |conn, client| Side { conn, client, second_stream, stream: None, next: None, written: 0, read: 0 };
    let client = side(Connection::client(config.clone(), Instant::ZERO, seed), true);
    let server = side(Connection::server(config, Instant::ZERO), false);
    let (mut net, c, s) = Network::pair(seed, client, server, &paths).expect("network");
    net.run_until(Instant::ZERO + Duration::from_secs(10));
    let delivered = net.endpoint(s).read;
    let expected = BURSTS as u64 * BURST + if second_stream { 8 } else { 0 };
    assert_eq!(delivered, expected, "seed {seed}, second stream {second_stream}: bytes delivered");
    net.endpoint(c).conn.stats.repair_symbols_sent
}

#[test]
fn a_second_stream_used_once_does_not_turn_bursts_into_requests() {
    for seed in 1..=3 {
        let one = repair_sent(0.02, seed, false);
        let two = repair_sent(0.02, seed, true);
        assert!(
            two as f64 <= one as f64 * 1.1 + 5.0,
            "seed {seed}: {two} repair symbols with a second stream against {one} without"
        );
    }
}
