//! A sealed Data packet moved into the other Data form, one level above the crypto layer: the
//! security layer's [`Session`] with the runtime's Noise keys (`crypto::PacketKeys`), a server
//! made by the [`Listener`] as the runtime's endpoint makes it, on a virtual clock. A server's
//! Data packets carry no connection id and a client's do; the id travels in clear, so anyone on
//! the path can add it to a server's packet. Such a copy must fail authentication (its nonce type
//! differs, PROTOCOL.md §13.4), be counted, and leave the replay window alone, so the real packet
//! behind it and the connection's later packets still arrive. With one nonce type for both forms
//! the copy opened, its number went into the client's replay window, the core dropped it (a
//! client takes no Data packet with an id), and the real packet then counted as a replay.

use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::{Hello, Incoming, Listener, ListenerConfig, Received, Session};
use braid_proto::wire::{PacketHeader, PacketType, Reader, Writer};
use braid_proto::{Connection, ConnectionConfig, Instant};
use braid_runtime::crypto::{ClientHandshake, PacketKeys};
use braid_runtime::{Key, ServerAuth};

const ONE_WAY: Duration = Duration::from_millis(10);
const DOWNLOAD: usize = 200_000;

fn addr(host: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, host], port))
}

struct Datagram {
    at: Instant,
    to_server: bool,
    bytes: Vec<u8>,
}

/// What a forger on the path does with a server→client datagram: a copy to deliver first.
type Forge = Box<dyn FnMut(&[u8]) -> Option<Vec<u8>>>;

struct End {
    session: Session<PacketKeys>,
    core: Connection,
}

/// A client and the listener's server over a wire with a fixed one-way delay; the server
/// writes `DOWNLOAD` bytes on one stream.
struct Net {
    now: Instant,
    client: End,
    listener: Listener<ServerAuth>,
    server: Option<End>,
    wire: Vec<Datagram>,
    stream: Option<u64>,
    written: usize,
    read: usize,
    /// What became of each server→client datagram at the client.
    received: Vec<Received>,
    /// Called with each server→client datagram as it leaves; what it returns arrives first.
    forge: Forge,
}

impl Net {
    fn new(key: &Key) -> Net {
        let config = ConnectionConfig { paths: 1, ..ConnectionConfig::default() };
        let core = Connection::client(config, Instant::ZERO, 1);
        let hello = Hello { paths: 1, ..Hello::default() };
        let handshake = ClientHandshake::new(key, core.cid(), &hello);
        let session = Session::client(
            Box::new(handshake),
            1,
            addr(1, 443),
            Duration::from_secs(5),
            Box::new(|| 5),
            Instant::ZERO,
        );
        Net {
            now: Instant::ZERO,
            client: End { session, core },
            listener: Listener::new(
                ServerAuth::Psk(key.clone()),
                ListenerConfig::default(),
                ConnectionConfig::default(),
                Box::new(|| Box::new(|| 3)),
                Instant::ZERO,
            ),
            server: None,
            wire: Vec::new(),
            stream: None,
            written: 0,
            read: 0,
            received: Vec::new(),
            forge: Box::new(|_| None),
        }
    }

    fn round(&mut self) {
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = self.wire.drain(..).partition(|d| d.at <= now);
        self.wire = later;
        for d in due {
            if d.to_server {
                match self.listener.handle_datagram(now, addr(2, 1000), &d.bytes) {
                    Incoming::Connection(_) => {
                        let s = self.server.as_mut().expect("routed to its connection");
                        s.session.handle_datagram(&mut s.core, now, 0, addr(2, 1000), &d.bytes);
                    }
                    Incoming::Accepted(new) => {
                        let new = *new;
                        self.server = Some(End { session: new.session, core: new.core });
                    }
                    _ => {}
                }
            } else {
                let c = &mut self.client;
                let got = c.session.handle_datagram(&mut c.core, now, 0, addr(1, 443), &d.bytes);
                self.received.push(got);
            }
        }
        for end in [Some(&mut self.client), self.server.as_mut()].into_iter().flatten() {
            if end.session.poll_timeout(&end.core).is_some_and(|t| t <= now) {
                end.session.handle_timeout(&mut end.core, now);
            }
        }
        self.application();
        let mut buf = Vec::new();
        let c = &mut self.client;
        while let Some(t) = c.session.poll_transmit(&mut c.core, now, &mut buf) {
            self.wire.push(Datagram { at: now + ONE_WAY, to_server: true, bytes: buf[..t.size].to_vec() });
        }
        if let Some(s) = &mut self.server {
            while let Some(t) = s.session.poll_transmit(&mut s.core, now, &mut buf) {
                let bytes = buf[..t.size].to_vec();
                if let Some(forged) = (self.forge)(&bytes) {
                    self.wire.push(Datagram { at: now + ONE_WAY, to_server: false, bytes: forged });
                }
                self.wire.push(Datagram { at: now + ONE_WAY, to_server: false, bytes });
            }
        }
    }

    fn application(&mut self) {
        if let Some(streams) = self.server.as_mut().and_then(|s| s.core.streams()) {
            let id = *self.stream.get_or_insert_with(|| streams.open().expect("stream"));
            while self.written < DOWNLOAD && streams.send_buffered(id) < 100_000 {
                let n = streams.write(id, &vec![7; (DOWNLOAD - self.written).min(10_000)]).expect("open");
                self.written += n;
                if n == 0 {
                    break;
                }
            }
        }
        if let (Some(id), Some(streams)) = (self.stream, self.client.core.streams()) {
            let mut chunk = vec![0; 65_536];
            while let Ok((n, _)) = streams.read(id, &mut chunk) {
                if n == 0 {
                    break;
                }
                self.read += n;
            }
        }
    }

    fn run(&mut self, until: Duration) {
        let end = Instant::ZERO + until;
        self.round();
        while self.read < DOWNLOAD {
            let timers = [Some(&self.client), self.server.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|e| e.session.poll_timeout(&e.core));
            let Some(t) = self.wire.iter().map(|d| d.at).chain(timers).min() else { break };
            self.now = t.max(self.now + Duration::from_micros(1));
            if self.now > end {
                break;
            }
            self.round();
        }
    }
}

/// A server's Data packet with the connection id put in: the first byte of the other form, the
/// id, then the packet's own bytes from its path on (the sealed payload unchanged).
fn with_cid(sealed: &[u8], cid: braid_proto::wire::ConnectionId) -> Option<Vec<u8>> {
    let mut r = Reader::new(sealed);
    let header = PacketHeader::parse(&mut r).ok()?;
    if header.ty != PacketType::Data || header.dcid.is_some() {
        return None;
    }
    let header_len = sealed.len() - r.remaining();
    let mut forged = Vec::new();
    PacketHeader { dcid: Some(cid), ..header }.write(&mut Writer::new(&mut forged));
    forged.extend_from_slice(&sealed[header_len..]);
    Some(forged)
}

/// Every server→client Data packet from the 20th on arrives first as a re-framed copy: each copy
/// is refused as unauthenticated and counted, each real packet behind it still goes to the core
/// (none counted as a replay), and the download completes.
#[test]
fn a_reframed_server_data_packet_is_dropped_and_the_real_one_still_arrives() {
    let key = Key::generate().expect("key");
    let mut net = Net::new(&key);
    let cid = net.client.core.cid();
    let mut data_packets = 0;
    net.forge = Box::new(move |sealed| {
        let forged = with_cid(sealed, cid)?;
        data_packets += 1;
        (data_packets >= 20).then_some(forged)
    });
    net.run(Duration::from_secs(10));
    assert_eq!(net.read, DOWNLOAD, "the download completes");
    let forged = net.client.session.stats.unauthenticated;
    assert!(forged >= 20, "copies refused as unauthenticated: {forged}");
    let count = |r: Received| net.received.iter().filter(|&&x| x == r).count() as u64;
    assert_eq!(count(Received::Unauthenticated), forged);
    assert_eq!(net.client.session.stats.replayed, 0, "no real packet counted as a replay");
    assert_eq!(count(Received::Replayed), 0);
    // Each copy came right before its real packet, which was taken.
    for (i, r) in net.received.iter().enumerate() {
        if *r == Received::Unauthenticated {
            assert!(
                matches!(net.received.get(i + 1), Some(Received::Packet { path: 0 })),
                "datagram {i}: the real packet after a refused copy was {:?}",
                net.received.get(i + 1)
            );
        }
    }
}
