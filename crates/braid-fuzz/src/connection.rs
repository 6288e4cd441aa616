//! A whole connection on the virtual clock, the network and a forging peer played by the
//! fuzzer: a client sends a stream of known bytes to a server; each step the fuzzer delivers,
//! drops, duplicates, reorders or corrupts a datagram, moves the clock, or injects a datagram of
//! its own under the connection's id (braid-proto has no integrity check of its own: the
//! runtime's AEAD provides it, so this is what a peer holding the key can send).
//!
//! Checked after every step: no panic; the server's memory for the peer's data within its
//! windows (stream bytes unread ≤ the receive window, decoder symbols ≤ blocks in flight × block
//! length × symbol size, SYMBOL_PART reassembly bounded by construction); the datagrams queued
//! by either end bounded; and, while nothing forged or corrupted has reached the server, every
//! byte it delivers is the byte the client wrote at that offset, never past the end.

use std::collections::VecDeque;

use braid_proto::conn::Mode;
use braid_proto::streams::StreamEvent;
use braid_proto::wire::{PacketHeader, PacketType, TransportParams, Writer, MAX_BLOCKS_IN_FLIGHT};
use braid_proto::{Connection, ConnectionConfig, Event, Instant};

use crate::cursor::Cursor;

/// Steps after the fuzzer's bytes run out, with an honest network, so short inputs still get a
/// connection up and data flowing.
const TAIL_STEPS: usize = 60;
/// Most steps in all (a bound on the time one input takes).
const MAX_STEPS: usize = 3_000;
/// Datagrams in flight each way; more are dropped (as a queue would).
const QUEUE: usize = 256;

/// The byte the client writes at `offset`.
fn pattern(offset: u64) -> u8 {
    (offset.wrapping_mul(131) ^ (offset >> 8)) as u8
}

struct Side {
    conn: Connection,
    inbox: VecDeque<(u8, Vec<u8>)>,
}

pub fn connection(data: &[u8]) {
    let mut c = Cursor::new(data);
    let mode = Mode::ALL[c.below(Mode::ALL.len())];
    let window = 16u64 << 10 << c.below(4);
    let config = ConnectionConfig {
        mode,
        paths: 1 + c.below(3) as u8,
        params: TransportParams::default().with_receive_window(window),
        ..ConnectionConfig::default()
    };
    let total = 1 + c.below(48 << 10) as u64;
    let mut now = Instant::ZERO;
    let mut client = Side { conn: Connection::client(config.clone(), now, c.u64()), inbox: VecDeque::new() };
    let mut server = Side { conn: Connection::server(config, now), inbox: VecDeque::new() };
    let cid = client.conn.cid();

    let mut stream: Option<u64> = None;
    let mut written = 0u64;
    let mut delivered = 0u64;
    let mut tainted = false;
    let mut buf = Vec::new();
    let mut read_buf = vec![0u8; 64 << 10];
    let mut tail = 0;
    for _ in 0..MAX_STEPS {
        if c.is_empty() {
            tail += 1;
            if tail > TAIL_STEPS {
                break;
            }
            // Honest network: everything in flight arrives, then the clock moves to the next timer.
            deliver_all(&mut client, &mut server, now);
            let next = [client.conn.poll_timeout(), server.conn.poll_timeout()].into_iter().flatten().min();
            now = next.map_or(now, |t| t.max(now)).max(now + std::time::Duration::from_millis(1));
        } else {
            match c.u8() % 14 {
                0..=3 => deliver_one(&mut server, now),
                4 | 5 => deliver_one(&mut client, now),
                6 => {
                    let side = if c.u8() & 1 == 0 { &mut server } else { &mut client };
                    side.inbox.pop_front();
                }
                7 => {
                    let side = if c.u8() & 1 == 0 { &mut server } else { &mut client };
                    if let Some(d) = side.inbox.front().cloned() {
                        side.inbox.push_back(d);
                    }
                }
                8 => {
                    let side = if c.u8() & 1 == 0 { &mut server } else { &mut client };
                    if !side.inbox.is_empty() {
                        let j = c.below(side.inbox.len());
                        side.inbox.swap(0, j);
                    }
                }
                9 => now += std::time::Duration::from_micros(u64::from(c.u16()) * 50),
                10 => {
                    if let Some(t) =
                        [client.conn.poll_timeout(), server.conn.poll_timeout()].into_iter().flatten().min()
                    {
                        now = t.max(now);
                    }
                }
                // A datagram of the peer's own under the connection's id: any frames.
                11 | 12 => {
                    let to_server = c.u8() & 1 == 0;
                    let ty = [PacketType::Data, PacketType::Initial, PacketType::Accept][c.below(3)];
                    let header = PacketHeader {
                        ty,
                        // A server's Data packets go without it (PROTOCOL.md §7.4).
                        dcid: (to_server || ty != PacketType::Data).then_some(cid),
                        path: c.u8() % 4,
                        number: u64::from(c.u16()),
                    };
                    let mut d = Vec::new();
                    header.write(&mut Writer::new(&mut d));
                    d.extend_from_slice(c.bytes(1500));
                    let side = if to_server { &mut server } else { &mut client };
                    side.inbox.push_front((header.path, d));
                    tainted |= to_server;
                }
                _ => {
                    let to_server = c.u8() & 1 == 0;
                    let side = if to_server { &mut server } else { &mut client };
                    if let Some((_, d)) = side.inbox.front_mut() {
                        if !d.is_empty() {
                            let at = c.below(d.len());
                            d[at] ^= c.u8() | 1;
                            if c.u8() & 1 == 1 {
                                d.truncate(at);
                            }
                            tainted |= to_server;
                        }
                    }
                }
            }
        }

        // The client writes the stream as its windows allow.
        if client.conn.is_established() && written < total {
            if let Some(streams) = client.conn.streams() {
                if stream.is_none() {
                    stream = streams.open().ok();
                }
            }
            if let (Some(streams), Some(id)) = (client.conn.streams(), stream) {
                let chunk: Vec<u8> = (written..total.min(written + 8192)).map(pattern).collect();
                if let Ok(n) = streams.write(id, &chunk) {
                    written += n as u64;
                    if written == total {
                        let _ = streams.finish(id);
                    }
                }
            }
        }
        for side in [&mut client, &mut server] {
            if side.conn.poll_timeout().is_some_and(|t| t <= now) {
                side.conn.handle_timeout(now);
            }
        }
        transmit(&mut client, &mut server, now, &mut buf);
        transmit(&mut server, &mut client, now, &mut buf);

        // Memory for the peer's data stays within what the server announced.
        let held = server.conn.receive_buffered();
        let params = server.conn.params().clone();
        assert!(held.stream_bytes <= window, "{} stream bytes held, window {window}", held.stream_bytes);
        let decoder_bound =
            MAX_BLOCKS_IN_FLIGHT * u64::from(params.max_block_len) * u64::from(params.max_symbol());
        assert!(held.decoder_bytes <= decoder_bound, "{} decoder bytes held", held.decoder_bytes);

        // The server reads everything; until something forged reached it, it is the client's bytes.
        while let Some(event) = server.conn.poll_event() {
            let (Event::Stream(StreamEvent::Readable(id)) | Event::Stream(StreamEvent::Opened(id))) = event
            else {
                continue;
            };
            let Some(streams) = server.conn.streams() else { break };
            while let Ok((n, _fin)) = streams.read(id, &mut read_buf) {
                if n == 0 {
                    break;
                }
                if !tainted {
                    for (i, &b) in read_buf[..n].iter().enumerate() {
                        let offset = delivered + i as u64;
                        assert!(offset < total, "byte {offset} delivered, {total} sent");
                        assert_eq!(b, pattern(offset), "byte {offset} delivered is not the byte sent");
                    }
                }
                delivered += n as u64;
            }
        }
        while client.conn.poll_event().is_some() {}
    }
}

/// Everything `from` sends now goes to `to`'s inbox (bounded: the oldest are dropped).
fn transmit(from: &mut Side, to: &mut Side, now: Instant, buf: &mut Vec<u8>) {
    for _ in 0..QUEUE {
        let Some(t) = from.conn.poll_transmit(now, buf) else { break };
        assert!(t.size <= buf.len());
        if to.inbox.len() >= QUEUE {
            to.inbox.pop_front();
        }
        to.inbox.push_back((t.path, buf[..t.size].to_vec()));
    }
}

fn deliver_one(side: &mut Side, now: Instant) {
    if let Some((path, d)) = side.inbox.pop_front() {
        side.conn.handle_datagram(now, path, &d);
    }
}

fn deliver_all(a: &mut Side, b: &mut Side, now: Instant) {
    while let Some((path, d)) = a.inbox.pop_front() {
        a.conn.handle_datagram(now, path, &d);
    }
    while let Some((path, d)) = b.inbox.pop_front() {
        b.conn.handle_datagram(now, path, &d);
    }
}
