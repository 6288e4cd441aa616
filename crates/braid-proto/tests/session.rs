//! The security layer (PROTOCOL.md §13) end to end on a virtual clock: a client's and a
//! server's [`Session`] around their core connections, over a wire with a fixed one-way delay,
//! with [`insecure`](braid_proto::session::insecure)'s test double for the cryptography. The
//! server's dispatch (first messages admitted, the rest routed to the connection's session) is
//! its [`Listener`]'s, as in the runtime. No sockets, no sleeps: each test runs in
//! milliseconds and fails the same way every time.

use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::crypto::{INIT_LEN, MAX_HELLO_LEN};
use braid_proto::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use braid_proto::session::{
    Closing, HandshakeFailure, Hello, Incoming, Listener, ListenerConfig, Received, Session, SessionEvent,
    AMPLIFICATION, LINGER,
};
use braid_proto::wire::DatagramType;
use braid_proto::{Connection, ConnectionConfig, Instant};

const ONE_WAY: Duration = Duration::from_millis(10);
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

fn addr(host: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, host], port))
}

const SERVER: u8 = 1;

/// One datagram on the wire: when it arrives, to the server or to a client address, from where.
#[derive(Clone)]
struct Datagram {
    at: Instant,
    to_server: bool,
    to: SocketAddr,
    from: SocketAddr,
    bytes: Vec<u8>,
}

impl Datagram {
    fn ty(&self) -> Option<DatagramType> {
        DatagramType::of(&self.bytes)
    }
}

struct End {
    session: Session<InsecureKeys>,
    core: Connection,
    events: Vec<SessionEvent>,
}

struct Net {
    now: Instant,
    client: End,
    /// Where the client's datagrams appear from, per path (its NAT's public address): a
    /// rebinding changes it, and datagrams to the old one are lost.
    public: Vec<SocketAddr>,
    listener: Listener<InsecureResponder>,
    server: Option<End>,
    /// Connections the server created (a repeat of a first message must create none).
    accepted: usize,
    wire: Vec<Datagram>,
    /// Every datagram sent, as it left (`at`: the send time).
    sent: Vec<Datagram>,
    /// Drops a datagram as it leaves (true: lost).
    lose: Box<dyn FnMut(&Datagram) -> bool>,
    /// Stream bytes the server sends the client, and what the client read so far.
    download: usize,
    stream: Option<u64>,
    written: usize,
    read: usize,
}

fn hello(paths: u8) -> Hello {
    Hello { paths, ..Hello::default() }
}

impl Net {
    fn new(paths: u8, client_secret: u64, server_secret: u64) -> Net {
        let config = ConnectionConfig { paths, ..ConnectionConfig::default() };
        let core = Connection::client(config, Instant::ZERO, 1);
        let initiator = InsecureInitiator::new(client_secret, core.cid(), &hello(paths), 9, 0);
        let mut x = 7u64;
        let random = Box::new(move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            x
        });
        let session = Session::client(
            Box::new(initiator),
            paths.into(),
            addr(SERVER, 443),
            HANDSHAKE_TIMEOUT,
            random,
            Instant::ZERO,
        );
        Net {
            now: Instant::ZERO,
            client: End { session, core, events: Vec::new() },
            public: (0..paths).map(|p| addr(2, 1000 + u16::from(p))).collect(),
            listener: Listener::new(
                InsecureResponder { secret: server_secret },
                ListenerConfig::default(),
                ConnectionConfig::default(),
                Box::new(|| Box::new(|| 3)),
                Instant::ZERO,
            ),
            server: None,
            accepted: 0,
            wire: Vec::new(),
            sent: Vec::new(),
            lose: Box::new(|_| false),
            download: 0,
            stream: None,
            written: 0,
            read: 0,
        }
    }

    fn send(&mut self, d: Datagram) {
        self.sent.push(Datagram { at: self.now, ..d.clone() });
        if !(self.lose)(&d) {
            self.wire.push(d);
        }
    }

    /// The server's endpoint: its listener says what each datagram is for.
    fn server_receives(&mut self, d: &Datagram) {
        match self.listener.handle_datagram(self.now, d.from, &d.bytes) {
            Incoming::Connection(_) => {
                let s = self.server.as_mut().expect("the listener routes only to its connection");
                s.session.handle_datagram(&mut s.core, self.now, 0, d.from, &d.bytes);
            }
            Incoming::Accepted(new) => {
                self.accepted += 1;
                let new = *new;
                self.server = Some(End { session: new.session, core: new.core, events: Vec::new() });
            }
            Incoming::Refused { hint } => self.send(Datagram {
                at: self.now + ONE_WAY,
                to_server: false,
                to: d.from,
                from: d.to,
                bytes: hint.to_vec(),
            }),
            Incoming::Dropped(_) => {}
        }
    }

    fn client_receives(&mut self, d: &Datagram) -> Option<Received> {
        let socket = self.public.iter().position(|a| *a == d.to)?;
        let c = &mut self.client;
        Some(c.session.handle_datagram(&mut c.core, self.now, socket, d.from, &d.bytes))
    }

    /// One round at `self.now`: arrivals, timers, the application, then everything to send.
    fn round(&mut self) {
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = self.wire.drain(..).partition(|d| d.at <= now);
        self.wire = later;
        for d in due {
            if d.to_server {
                self.server_receives(&d);
            } else {
                self.client_receives(&d);
            }
        }
        for end in [Some(&mut self.client), self.server.as_mut()].into_iter().flatten() {
            if end.session.poll_timeout(&end.core).is_some_and(|t| t <= now) {
                end.session.handle_timeout(&mut end.core, now);
            }
            while let Some(e) = end.session.poll_event() {
                end.events.push(e);
            }
        }
        self.application();
        let mut buf = Vec::new();
        let c = &mut self.client;
        let mut out = Vec::new();
        while let Some(t) = c.session.poll_transmit(&mut c.core, now, &mut buf) {
            let from = self.public[usize::from(t.path)];
            out.push(Datagram {
                at: now + ONE_WAY,
                to_server: true,
                to: t.to,
                from,
                bytes: buf[..t.size].to_vec(),
            });
        }
        if let Some(s) = &mut self.server {
            while let Some(t) = s.session.poll_transmit(&mut s.core, now, &mut buf) {
                let bytes = buf[..t.size].to_vec();
                out.push(Datagram {
                    at: now + ONE_WAY,
                    to_server: false,
                    to: t.to,
                    from: addr(SERVER, 443),
                    bytes,
                });
            }
        }
        for d in out {
            self.send(d);
        }
    }

    /// The server writes `download` bytes on one stream; the client reads them.
    fn application(&mut self) {
        if let Some(streams) = self.server.as_mut().and_then(|s| s.core.streams()) {
            let id = *self.stream.get_or_insert_with(|| streams.open().unwrap());
            while self.written < self.download && streams.send_buffered(id) < 200_000 {
                let n = streams.write(id, &vec![7; (self.download - self.written).min(10_000)]).unwrap();
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

    /// The next time anything happens: an arrival or a timer (at least 1 µs on).
    fn next(&self) -> Option<Instant> {
        let timers = [Some(&self.client), self.server.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|e| e.session.poll_timeout(&e.core));
        let t = self.wire.iter().map(|d| d.at).chain(timers).min()?;
        Some(t.max(self.now + Duration::from_micros(1)))
    }

    /// Runs rounds until `until` or `done`.
    fn run(&mut self, until: Duration, mut done: impl FnMut(&Net) -> bool) {
        let end = Instant::ZERO + until;
        self.round();
        while !done(self) {
            let Some(t) = self.next().filter(|t| *t <= end) else { break };
            self.now = t;
            self.round();
        }
    }

    fn established(&self) -> bool {
        self.client.core.is_established() && self.server.as_ref().is_some_and(|s| s.core.is_established())
    }

    fn sent_of(&self, to_server: bool, ty: DatagramType) -> Vec<&Datagram> {
        self.sent.iter().filter(|d| d.to_server == to_server && d.ty() == Some(ty)).collect()
    }

    /// When the client's echo of the server's first challenge to `new` (its first datagram
    /// there at or after `since`) arrived at the server. The client's own first datagram from
    /// `new` may be a PathHello too, sent before any challenge: the echo is the first after it.
    fn challenge_echoed_at(&self, new: SocketAddr, since: Instant) -> Instant {
        let challenged_at = self
            .sent
            .iter()
            .find(|d| !d.to_server && d.to == new && d.at >= since)
            .map(|d| d.at)
            .expect("the server sent to the new address");
        self.sent
            .iter()
            .find(|d| {
                d.to_server
                    && d.from == new
                    && d.at > challenged_at
                    && d.ty() == Some(DatagramType::PathHello)
            })
            .map(|d| d.at + ONE_WAY)
            .expect("the client echoed the challenge")
    }

    /// Checks every send of the server's to `new` in [since, until) against the
    /// anti-amplification bound (at most AMPLIFICATION × the bytes that came from `new` by
    /// then); returns the bytes it sent there and how many of those sends carried data (over
    /// 1000 bytes).
    fn sent_within_amplification_bound(
        &self,
        new: SocketAddr,
        since: Instant,
        until: Instant,
    ) -> (u64, usize) {
        let (mut got, mut sent, mut data) = (0u64, 0u64, 0);
        for d in self.sent.iter().filter(|d| d.at >= since && d.at < until) {
            if d.to_server && d.from == new {
                got += d.bytes.len() as u64;
            } else if !d.to_server && d.to == new {
                sent += d.bytes.len() as u64;
                assert!(sent <= AMPLIFICATION * got, "{sent} bytes sent for {got} received");
                data += usize::from(d.bytes.len() > 1000);
            }
        }
        (sent, data)
    }
}

/// A connection 300 kB into a 2 MB download: where the rebinding tests move the client.
fn mid_download() -> Net {
    let mut net = Net::new(1, 5, 5);
    net.download = 2_000_000;
    net.run(Duration::from_secs(20), |n| n.read >= 300_000);
    assert!(net.read >= 300_000 && net.read < net.download, "mid-transfer: {}", net.read);
    net
}

/// A connection that delivered a 1 kB download and has nothing more to send.
fn connected_and_idle() -> Net {
    let mut net = Net::new(1, 5, 5);
    net.download = 1_000;
    net.run(Duration::from_secs(2), |n| n.read == n.download);
    assert_eq!(net.read, 1_000, "connected and idle");
    net
}

fn ms(d: &Datagram) -> u64 {
    d.at.as_micros() / 1000
}

/// The first three first messages are lost: the client repeats it at 0, 100, 300 and 700 ms
/// (§13.2), the fourth gets through and the connection comes up a round trip later.
#[test]
fn a_lost_first_message_is_repeated_on_schedule() {
    let mut net = Net::new(1, 5, 5);
    let mut lost = 0;
    net.lose = Box::new(move |d| {
        let first = d.ty() == Some(DatagramType::NoiseInit) && lost < 3;
        lost += usize::from(first);
        first
    });
    net.run(Duration::from_secs(3), Net::established);
    assert!(net.established(), "the connection comes up");
    let inits: Vec<u64> = net.sent_of(true, DatagramType::NoiseInit).iter().map(|d| ms(d)).collect();
    assert_eq!(inits, [0, 100, 300, 700]);
    assert!(net.sent_of(true, DatagramType::NoiseInit).iter().all(|d| d.bytes.len() == INIT_LEN));
    assert_eq!(net.accepted, 1);
    assert!(net.now < Instant::from_micros(800_000), "up one round trip after the fourth: {:?}", net.now);
}

/// The server's answer is lost: the client repeats its first message, and the server answers
/// the byte-identical repeat with the very same answer, creating nothing new and never sending
/// more bytes than came in.
#[test]
fn a_lost_answer_is_answered_again_with_the_same_bytes() {
    let mut net = Net::new(1, 5, 5);
    let mut lost = false;
    net.lose = Box::new(move |d| {
        let first = d.ty() == Some(DatagramType::NoiseResponse) && !lost;
        lost |= first;
        first
    });
    net.run(Duration::from_secs(3), Net::established);
    assert!(net.established());
    assert_eq!(net.accepted, 1, "the repeat created no second connection");
    let inits = net.sent_of(true, DatagramType::NoiseInit);
    let answers = net.sent_of(false, DatagramType::NoiseResponse);
    assert_eq!(inits.len(), 2);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].bytes, answers[1].bytes, "the same answer");
    for (a, i) in answers.iter().zip(&inits) {
        assert!(a.bytes.len() * 3 <= i.bytes.len(), "an answer is at most a third of its request");
    }
    assert_eq!(ms(answers[1]), 110, "answered when the repeat (100 ms) arrived");
}

/// A core packet from the client, delivered a second time, is dropped before the core sees it.
#[test]
fn a_replayed_packet_is_dropped() {
    let mut net = Net::new(1, 5, 5);
    net.download = 50_000;
    net.run(Duration::from_secs(5), |n| n.read == n.download);
    assert_eq!(net.read, 50_000);
    let packet = net
        .sent
        .iter()
        .rev()
        .find(|d| d.to_server && d.at + ONE_WAY <= net.now && matches!(d.ty(), Some(DatagramType::Packet(_))))
        .expect("the client's packets arrived")
        .clone();
    let s = net.server.as_mut().unwrap();
    let before = s.session.stats;
    let now = net.now + Duration::from_millis(1);
    assert_eq!(
        s.session.handle_datagram(&mut s.core, now, 0, packet.from, &packet.bytes),
        Received::Replayed
    );
    assert_eq!(s.session.stats.replayed, before.replayed + 1);
    // The same bytes with one byte changed do not authenticate.
    let mut forged = packet.bytes.clone();
    *forged.last_mut().unwrap() ^= 1;
    assert_eq!(
        s.session.handle_datagram(&mut s.core, now, 0, packet.from, &forged),
        Received::Unauthenticated
    );
}

/// NAT rebinding in the middle of a download: the client's datagrams start coming from a new
/// port and the old one stops receiving. The server follows at once, sends the new port at
/// most 3x what came from it until the port answers a challenge, then the download completes.
#[test]
fn nat_rebinding_mid_transfer_completes_within_the_budget() {
    let mut net = mid_download();
    let old = net.public[0];
    let new = addr(2, 4000);
    net.public[0] = new;
    let moved_at = net.now;
    net.run(Duration::from_secs(60), |n| n.read == n.download);
    assert_eq!(net.read, net.download, "the download completes");
    let s = net.server.as_ref().unwrap();
    assert_eq!(s.session.remote(0), Some(new));
    assert!(s.session.probation(0).is_none(), "the new address was validated");
    assert!(s.events.iter().any(|e| matches!(e, SessionEvent::PathMoved { old: Some(o), new: n, probation: true, .. } if *o == old && *n == new)));
    let validated = s.events.contains(&SessionEvent::AddressValidated { path: 0, addr: new });
    assert!(validated, "the challenge was answered");
    // Before the challenge's echo arrived, the server never sent the new address more than 3x
    // what came from it, counted at every send on the wire.
    let echo_at = net.challenge_echoed_at(new, moved_at);
    let (sent, _) = net.sent_within_amplification_bound(new, moved_at, echo_at);
    assert!(sent > 0, "the server followed the new address before it was validated");
    assert!(net.sent.iter().any(|d| !d.to_server && d.to == new && d.at >= echo_at && d.bytes.len() > 1000));
}

/// A client with the wrong key: the server keeps nothing and answers each first message with
/// the 9-byte hint only; the client fails at its deadline, saying the server refused it, and
/// then sends nothing more.
#[test]
fn a_wrong_key_is_refused() {
    let mut net = Net::new(1, 5, 6);
    net.run(Duration::from_secs(10), |n| n.client.session.has_failed());
    assert!(net.server.is_none() && net.accepted == 0, "the server kept no state");
    let inits = net.sent_of(true, DatagramType::NoiseInit).len();
    let hints = net.sent_of(false, DatagramType::Refused);
    assert_eq!(hints.len(), inits);
    assert!(hints.iter().all(|d| d.bytes.len() == 9));
    assert_eq!(net.client.events, [SessionEvent::Failed(HandshakeFailure::TimedOut { refused: true })]);
    assert_eq!(net.now, Instant::ZERO + HANDSHAKE_TIMEOUT);
    assert!(!net.client.session.has_keys());
    let sent = net.sent.len();
    net.run(Duration::from_secs(20), |_| false);
    assert_eq!(net.sent.len(), sent, "nothing after the failure");
}

/// A client that closes its connection after its handshake deadline has passed: the deadline
/// was the handshake's, so the close is no handshake failure, and its CLOSE reaches the server.
#[test]
fn a_close_after_the_handshake_deadline_is_sent() {
    let mut net = Net::new(1, 5, 5);
    net.run(Duration::from_secs(1), Net::established);
    assert!(net.established());
    net.now = Instant::ZERO + HANDSHAKE_TIMEOUT + Duration::from_secs(1);
    net.client.core.close(0, "bye");
    net.run(HANDSHAKE_TIMEOUT + Duration::from_secs(2), |n| {
        n.server.as_ref().is_some_and(|s| s.core.is_closed())
    });
    assert!(
        !net.client.events.iter().any(|e| matches!(e, SessionEvent::Failed(_))),
        "a closed connection reported a handshake failure: {:?}",
        net.client.events
    );
    assert!(net.server.as_ref().unwrap().core.is_closed(), "the server heard the CLOSE");
}

/// The client's CLOSE is lost on its way. Its session recorded the CLOSE as it sent it; kept in
/// the endpoint's [`Closing`] (the connection itself gone), the same bytes go again one probe
/// timeout later, and the server hears them and closes.
#[test]
fn a_lost_close_goes_again_from_the_closing_record() {
    let mut net = Net::new(1, 5, 5);
    net.run(Duration::from_secs(1), Net::established);
    assert!(net.established());
    net.lose = Box::new(|d| d.to_server);
    net.client.core.close(0, "bye");
    net.round();
    let close = net.client.session.take_close().expect("the CLOSE was recorded as sent");
    assert!(net.client.session.take_close().is_none(), "taken once");
    let last = net.sent.iter().rev().find(|d| d.to_server).expect("the CLOSE left");
    assert_eq!((close.datagram.as_slice(), close.sent), (last.bytes.as_slice(), net.now));
    assert!(!net.server.as_ref().unwrap().core.is_closed(), "the CLOSE was lost");

    let mut closing = Closing::new(1);
    closing.insert(net.client.core.cid(), close.clone());
    let repeat = closing.poll_timeout().expect("a repeat is due");
    assert_eq!(repeat, close.sent + close.period / 3);
    net.lose = Box::new(|_| false);
    net.now = repeat;
    closing.handle_timeout(repeat);
    let mut buf = Vec::new();
    let t = closing.poll_transmit(&mut buf).expect("the CLOSE goes again");
    assert_eq!(buf[..t.size], close.datagram[..], "the same sealed bytes");
    let from = net.public[usize::from(t.path)];
    net.send(Datagram {
        at: repeat + ONE_WAY,
        to_server: true,
        to: t.to,
        from,
        bytes: buf[..t.size].to_vec(),
    });
    net.run(Duration::from_secs(10), |n| n.server.as_ref().is_some_and(|s| s.core.is_closed()));
    assert!(net.server.as_ref().unwrap().core.is_closed(), "the server heard the repeated CLOSE");
}

/// The server's application writes a download and lets go of the connection: the session
/// still delivers every byte, then closes the core as soon as nothing is left (the client
/// hears the CLOSE); with the client unreachable, it closes when the linger is over.
#[test]
fn a_connection_let_go_delivers_then_closes() {
    let mut net = Net::new(1, 5, 5);
    net.download = 400_000;
    net.run(Duration::from_secs(10), |n| n.written == n.download);
    assert!(net.read < net.download, "data still on its way: {}", net.read);
    let s = net.server.as_mut().unwrap();
    s.session.let_go(net.now);
    net.run(Duration::from_secs(20), |n| n.client.core.is_closed());
    assert_eq!(net.read, net.download, "everything was delivered before the close");
    assert!(net.server.as_ref().unwrap().core.is_closed() && net.client.core.is_closed());

    let mut net = Net::new(1, 5, 5);
    net.download = 400_000;
    net.run(Duration::from_secs(10), |n| n.written == n.download);
    net.lose = Box::new(|d| !d.to_server);
    let let_go = net.now;
    net.server.as_mut().unwrap().session.let_go(let_go);
    net.run(Duration::from_secs(20), |n| n.server.as_ref().is_some_and(|s| s.core.is_closed()));
    assert_eq!(net.now, let_go + LINGER, "closed when the linger ran out");
}

/// An ICMP port unreachable during the client's handshake ends it (no server there), and
/// nothing more is sent; once the connection is up, it changes nothing.
#[test]
fn port_unreachable_ends_only_a_handshake() {
    let mut net = Net::new(1, 5, 5);
    net.lose = Box::new(|_| true);
    net.round();
    net.client.session.handle_unreachable();
    net.run(Duration::from_secs(2), |_| false);
    assert_eq!(net.client.events, [SessionEvent::Failed(HandshakeFailure::PortUnreachable)]);
    assert_eq!(net.sent_of(true, DatagramType::NoiseInit).len(), 1, "no repeat after the failure");

    let mut net = Net::new(1, 5, 5);
    net.run(Duration::from_secs(1), Net::established);
    net.client.session.handle_unreachable();
    net.round();
    assert!(!net.client.session.has_failed());
    assert!(!net.client.events.iter().any(|e| matches!(e, SessionEvent::Failed(_))));
}

/// A NAT that keeps moving the client while the client only receives (the runtime's
/// `closes_heard_by_the_server_through_a_moving_relay` on the virtual clock). The server's data
/// goes to the old port and is lost; the client, with nothing to acknowledge, sends only its
/// announcement every 2 s, from which the server learns the new port and proves it with a
/// challenge (one round trip, 20 ms). The NAT moves every 500 ms, 100 ms after each of those
/// announcements among them: time for the challenge and a flight, not for the server's probe
/// timer. The server must send what it holds as soon as the port is proven: the download then
/// finishes at the first announcement after the move. Before, the server waited for that
/// timer (backed off by the sends that were lost), which never fell in such a window, and the
/// connection stalled until the idle timeout.
#[test]
fn a_nat_moving_an_idle_receiver_does_not_stall_the_download() {
    let mut net = connected_and_idle();
    let mut next_move = Instant::ZERO + Duration::from_millis(100);
    while next_move <= net.now {
        next_move += Duration::from_millis(500);
    }
    let mut port = 5000;
    let mut nat_moves = |net: &mut Net| {
        net.run(next_move - Instant::ZERO, |n| n.read == n.download);
        net.now = net.now.max(next_move);
        next_move += Duration::from_millis(500);
        port += 1;
        net.public[0] = addr(2, port);
    };
    // The NAT moves while the connection is idle; then the server has 10 kB to send.
    nat_moves(&mut net);
    let began = net.now;
    net.download += 10_000;
    let mut moves = 1;
    while net.read < net.download && net.now < began + Duration::from_secs(40) {
        nat_moves(&mut net);
        moves += 1;
    }
    let took = net.now - began;
    let s = net.server.as_ref().unwrap();
    assert!(!s.core.is_closed(), "the server timed the connection out");
    assert_eq!(net.read, net.download, "the download stalled: {} of {} in {took:?}", net.read, net.download);
    let validated = s.events.iter().filter(|e| matches!(e, SessionEvent::AddressValidated { .. })).count();
    // `took` counts whole NAT periods (500 ms); the first announcement goes 2 s after the
    // client started.
    assert!(
        took <= Duration::from_secs(2),
        "{took:?} for 10 kB, {moves} NAT moves, {validated} new ports validated"
    );
}

/// A NAT moves an idle client once; then the server has 100 kB for it, and the first six
/// datagrams the server sends the new port are lost: three rounds of the echo of the client's
/// announcement and the server's challenge. Those challenges spent the port's budget (3 × the
/// 34-byte announcement that put it on probation), so the client's later announcements from
/// the same port must widen it (every byte from an address counts, RFC 9000 §8.1), or the
/// server holds the download back until its idle timeout. And while a challenge has no room in
/// its budget its time must not count as a timer: that time passes, and a server whose next
/// timer lies in the past is woken at once, round after round. (100 kB, not 10: with tail
/// probes a 10 kB download completed within the new port's budget after four challenges, all
/// lost, before the six losses this test is about.)
#[test]
fn lost_challenges_do_not_stall_a_download_after_a_nat_rebinding() {
    let mut net = connected_and_idle();
    let t = net.now + Duration::from_millis(300);
    net.run(t - Instant::ZERO, |_| false);
    net.now = t;
    let moved_to = addr(2, 6000);
    net.public[0] = moved_to;
    let moved = net.now;
    net.download += 100_000;
    let mut lost = 0;
    net.lose = Box::new(move |d| {
        let hit = !d.to_server && d.to == moved_to && d.ty() == Some(DatagramType::PathHello) && lost < 6;
        lost += usize::from(hit);
        hit
    });
    let mut rounds = 0;
    net.run(moved - Instant::ZERO + Duration::from_secs(40), |n| {
        rounds += 1;
        n.read == n.download || rounds > 100_000
    });
    let took = net.now - moved;
    let to_new =
        net.sent.iter().filter(|d| d.to == moved_to && d.ty() == Some(DatagramType::PathHello)).count();
    assert!(to_new > 6, "the six losses were all of the server's first control datagrams: {to_new}");
    let s = net.server.as_ref().unwrap();
    assert!(!s.core.is_closed(), "the server timed the connection out");
    assert_eq!(net.read, net.download, "the download stalled: {rounds} rounds, {took:?}");
    // The client announces itself 2 s after the last time, then every 250 ms until echoed.
    assert!(took < Duration::from_secs(3), "{took:?} for 100 kB");
    assert!(rounds < 2_000, "{rounds} rounds in {took:?}: a timer in the past woke the server at once");
}

/// A NAT moves a client in the middle of a download, and the first datagram the server gets
/// from the new port is the client's announcement (its pending ACK from there is lost). Traffic
/// had stopped for the client, so the announcement is padded to 1,200 bytes: the server may send
/// the new port 3.6 kB before it answers the challenge, and sends the flight it had sent the old
/// port again at once instead of a round trip later. With a 34-byte announcement (102 bytes of
/// room) no data packet fit before the answer; with the room but no resend at the move, the
/// window stayed full of packets sent to the old port and none went either. Under a NAT that
/// moves every few seconds at a round trip of a second or more, that round trip was most of the
/// time the port lasted.
#[test]
fn a_padded_announcement_lets_data_go_to_a_new_port_before_it_is_proven() {
    let mut net = mid_download();
    let new = addr(2, 4000);
    net.public[0] = new;
    let moved_at = net.now;
    net.lose = Box::new(move |d| {
        d.to_server
            && d.from == new
            && d.at < moved_at + Duration::from_secs(3)
            && d.ty() != Some(DatagramType::PathHello)
    });
    net.run(Duration::from_secs(60), |n| n.read == n.download);
    assert_eq!(net.read, net.download, "the download completes");
    let first = net
        .sent
        .iter()
        .find(|d| d.to_server && d.from == new && d.ty() == Some(DatagramType::PathHello))
        .expect("the client announced the new port");
    assert_eq!(first.bytes.len(), MAX_HELLO_LEN, "padded: the client's traffic had stopped");
    let s = net.server.as_ref().unwrap();
    assert!(s.events.contains(&SessionEvent::AddressValidated { path: 0, addr: new }));
    let echo_at = net.challenge_echoed_at(new, moved_at);
    let (_, data) = net.sent_within_amplification_bound(new, moved_at, echo_at);
    assert!(data >= 2, "{data} data packets went to the new port before it was proven");
}

/// The handshake's round trip is each core's first RTT sample (RFC 9002 §5.1): the client's from
/// its first message to the answer, the server's from its answer to the client's first core
/// packet. Without it both cores pace their first flight over the 333 ms default.
#[test]
fn the_handshake_round_trip_is_each_cores_first_rtt_sample() {
    let mut net = Net::new(1, 5, 5);
    assert!(net.client.core.path_state()[0].0 > Duration::from_millis(300), "the default before");
    net.run(Duration::from_secs(1), |n| n.client.session.has_keys());
    assert_eq!(net.client.core.path_state()[0].0, 2 * ONE_WAY, "the client's, at the answer");
    net.run(Duration::from_secs(1), |n| n.server.as_ref().is_some_and(|s| s.session.peer_proven()));
    let server = net.server.as_mut().expect("accepted");
    assert_eq!(server.core.path_state()[0].0, 2 * ONE_WAY, "the server's, at the first core packet");
    // The timers follow the new estimate (a debug build checks the cached loss timeout).
    assert!(server.core.poll_timeout().is_some());
    assert!(net.client.core.poll_timeout().is_some());
}

/// A first message that went twice makes the round trip ambiguous: timed from the first copy it
/// can only be too long, so it is kept while it is below the 333 ms default and dropped above.
#[test]
fn a_repeated_first_message_gives_a_sample_only_below_the_default() {
    for (losses, expected) in [(1, Some(100 + 20)), (3, None)] {
        let mut net = Net::new(1, 5, 5);
        let mut lost = 0;
        net.lose = Box::new(move |d| {
            let first = d.ty() == Some(DatagramType::NoiseInit) && lost < losses;
            lost += usize::from(first);
            first
        });
        net.run(Duration::from_secs(3), |n| n.client.session.has_keys());
        let srtt = net.client.core.path_state()[0].0;
        match expected {
            Some(ms) => assert_eq!(srtt, Duration::from_millis(ms), "{losses} lost"),
            None => assert!(srtt > Duration::from_millis(300), "{losses} lost: {srtt:?}"),
        }
    }
}

/// A core with a packet in flight when the handshake's round trip arrives (the server's Accept,
/// sent behind the answer) drops its cached loss timeout: a debug build checks the cached one
/// against a fresh computation at every poll, and a stale one (from the 333 ms default) panics.
#[test]
fn a_handshake_sample_resets_the_cached_loss_timeout() {
    let client = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    server.accept_proposal(Instant::ZERO, client.cid(), client.params().clone());
    let mut buf = Vec::new();
    assert!(server.poll_transmit(Instant::ZERO, &mut buf).is_some(), "the Accept");
    assert!(server.poll_timeout().is_some());
    server.on_handshake_rtt(0, Duration::from_millis(20));
    assert_eq!(server.path_state()[0].0, Duration::from_millis(20));
    assert!(server.poll_timeout().is_some());
}
