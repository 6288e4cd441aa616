//! Unit tests of the connection table on the virtual clock (no sockets, no sleeps).

use std::time::Duration;

use super::*;
use crate::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use crate::session::{Hello, ListenerConfig, LINGER};
use crate::ConnectionConfig;

const ONE_WAY: Duration = Duration::from_millis(10);

fn client_addr() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 2], 1000))
}

fn server_addr() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], 443))
}

/// A core in a plain field, with the application's side as two flags.
struct Cell {
    core: Connection,
    poked: bool,
    released: bool,
}

impl CoreCell for Cell {
    type Guard<'a> = &'a mut Connection;
    fn core(&mut self) -> &mut Connection {
        &mut self.core
    }
    fn clear_poke(&mut self) {
        self.poked = false;
    }
    fn is_released(&self) -> bool {
        self.released
    }
}

/// One end's I/O: what it sent (to arrive `ONE_WAY` later) and what the table told it.
#[derive(Default)]
struct Io {
    wire: Vec<(Instant, SocketAddr, Vec<u8>)>,
    /// Every datagram sent.
    sent: Vec<Vec<u8>>,
    driven: Vec<ConnectionId>,
    news: Vec<(ConnectionId, CoreNews)>,
    gone: Vec<ConnectionId>,
    expired: Vec<ConnectionId>,
    failed: bool,
}

impl Host<InsecureKeys, Cell> for Io {
    fn send(&mut self, now: Instant, t: SecureTransmit, data: &[u8]) {
        self.wire.push((now + ONE_WAY, t.to, data[..t.size].to_vec()));
        self.sent.push(data[..t.size].to_vec());
    }
    fn core_events(&mut self, cid: ConnectionId, cell: &mut Cell, _now: Instant) -> CoreNews {
        self.driven.push(cid);
        let mut news = CoreNews::default();
        while let Some(e) = cell.core.poll_event() {
            news.note(&e);
        }
        if news != CoreNews::default() {
            self.news.push((cid, news));
        }
        news
    }
    fn accept(&mut self, _now: Instant, new: NewConnection<InsecureKeys>) -> (Cell, Session<InsecureKeys>) {
        (Cell { core: new.core, poked: false, released: false }, new.session)
    }
    fn session_event(&mut self, _: ConnectionId, _: &mut Cell, _: Instant, event: SessionEvent) {
        self.failed |= matches!(event, SessionEvent::Failed(_));
    }
    fn expired(&mut self, cid: ConnectionId) {
        self.expired.push(cid);
    }
    fn gone(&mut self, cid: ConnectionId, _: Cell, _: Session<InsecureKeys>) {
        self.gone.push(cid);
    }
}

type Table = Sessions<InsecureResponder, Cell>;

/// The application's poke: the flag its cell clears when driven, and the table told.
fn poke(table: &mut Table, cid: ConnectionId) {
    table.cell_mut(&cid).unwrap().poked = true;
    table.poke(&cid);
}
type Loss = Box<dyn FnMut(bool, &[u8]) -> bool>;

/// A client and a server table on a virtual clock; `lose` drops a datagram as it leaves
/// (`true`: towards the server).
struct Net {
    now: Instant,
    client: Table,
    client_io: Io,
    cid: ConnectionId,
    server: Table,
    server_io: Io,
    lose: Loss,
}

impl Net {
    fn new(handshake_timeout: Duration) -> Net {
        Net::with_hello(handshake_timeout, false)
    }

    /// `proposal`: the first message carries the client core's parameters (PROTOCOL.md §13.2).
    fn with_hello(handshake_timeout: Duration, proposal: bool) -> Net {
        let core = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
        let cid = core.cid();
        let params = proposal.then(|| core.params().clone());
        let hello = Hello { paths: 1, params, ..Hello::default() };
        let initiator = InsecureInitiator::new(5, cid, &hello, 9, 0);
        let session = Session::client(
            Box::new(initiator),
            1,
            server_addr(),
            Duration::from_secs(5),
            Box::new(|| 1),
            Instant::ZERO,
        );
        let cell = Cell { core, poked: false, released: false };
        let config = ListenerConfig { handshake_timeout, ..ListenerConfig::default() };
        let listener = Listener::new(
            InsecureResponder { secret: 5 },
            config,
            ConnectionConfig::default(),
            Box::new(|| Box::new(|| 3)),
            Instant::ZERO,
        );
        Net {
            now: Instant::ZERO,
            client: Sessions::client(cid, cell, session),
            client_io: Io::default(),
            cid,
            server: Sessions::server(listener),
            server_io: Io::default(),
            lose: Box::new(|_, _| false),
        }
    }

    /// Delivers what is due, then a round on each side.
    fn round(&mut self) {
        let now = self.now;
        for to_server in [true, false] {
            let io = if to_server { &mut self.client_io } else { &mut self.server_io };
            let (due, later): (Vec<_>, Vec<_>) = io.wire.drain(..).partition(|d| d.0 <= now);
            io.wire = later;
            for (_, _, bytes) in due {
                if (self.lose)(to_server, &bytes) {
                    continue;
                }
                if to_server {
                    self.server.handle_datagram(now, 0, client_addr(), &bytes, &mut self.server_io);
                } else {
                    self.client.handle_datagram(now, 0, server_addr(), &bytes, &mut self.client_io);
                }
            }
        }
        self.client.handle_timeout(now, &mut self.client_io);
        self.server.handle_timeout(now, &mut self.server_io);
    }

    fn next(&self) -> Option<Instant> {
        let wire = self.client_io.wire.iter().chain(&self.server_io.wire).map(|d| d.0);
        let t = wire.chain(self.client.poll_timeout()).chain(self.server.poll_timeout()).min()?;
        Some(t.max(self.now + Duration::from_micros(1)))
    }

    fn run(&mut self, until: Duration, mut done: impl FnMut(&mut Net) -> bool) {
        self.round();
        while !done(self) {
            let Some(t) = self.next().filter(|t| *t <= Instant::ZERO + until) else { break };
            self.now = t;
            self.round();
        }
    }

    fn server_core(&mut self) -> Option<&mut Connection> {
        let cid = self.cid;
        self.server.cell_mut(&cid).map(|c| &mut c.core)
    }

    fn up(&mut self) -> bool {
        let cid = self.cid;
        let client = self.client.cell(&cid).is_some_and(|c| c.core.is_established());
        client && self.server_core().is_some_and(|c| c.is_established())
    }
}

/// The first message lost once: the client repeats it, the server admits it, and both
/// tables see the core come up; the server's connection no longer counts as half-open.
#[test]
fn a_handshake_through_both_tables_survives_a_lost_first_message() {
    let mut net = Net::new(Duration::from_secs(10));
    let mut lost = 0;
    net.lose = Box::new(move |to_server, d| {
        let first = to_server && DatagramType::of(d) == Some(DatagramType::NoiseInit) && lost == 0;
        lost += usize::from(first);
        first
    });
    net.run(Duration::from_secs(3), Net::up);
    assert!(net.up(), "up by {:?}", net.now);
    assert!(net.now > Instant::ZERO + Duration::from_millis(100), "after a repeat: {:?}", net.now);
    let listener = net.server.listener().unwrap();
    assert_eq!((listener.connections(), listener.half_open()), (1, 0));
    let connected = |io: &Io| io.news.iter().filter(|(_, n)| n.connected).count();
    assert_eq!((connected(&net.client_io), connected(&net.server_io)), (1, 1));
}

/// A client whose first message carries its core's parameters is up one round trip after
/// sending it: the server's core starts from them and its Accept follows the handshake's
/// answer. Without them the core's own Initial and Accept take a second round trip. Both ends
/// come up, and the client's Initial that still follows is answered without harm.
#[test]
fn the_proposal_in_the_first_message_saves_a_round_trip() {
    for (proposal, trips) in [(true, 1), (false, 2)] {
        let mut net = Net::with_hello(Duration::from_secs(10), proposal);
        let cid = net.cid;
        net.run(Duration::from_secs(1), |n| n.client.cell(&cid).is_some_and(|c| c.core.is_established()));
        let took = net.now - Instant::ZERO;
        let rtt = 2 * ONE_WAY;
        assert!(
            took >= rtt * trips && took <= rtt * trips + Duration::from_millis(1),
            "proposal {proposal}: up after {took:?}"
        );
        if proposal {
            // Up from the first message alone, the server's connection is still half-open: no
            // packet sealed with the keys has come from the client yet.
            assert_eq!(net.server.listener().unwrap().half_open(), 1);
        }
        net.run(Duration::from_secs(1), Net::up);
        assert!(net.up(), "proposal {proposal}: the server is up too");
        let core = &mut net.client.cell_mut(&cid).unwrap().core;
        let streams = core.streams().unwrap();
        let id = streams.open().unwrap();
        streams.write(id, b"hello").unwrap();
        poke(&mut net.client, cid);
        net.run(Duration::from_secs(2), |n| {
            n.server_core().and_then(|c| c.streams()).is_some_and(|s| s.recv_buffered() >= 5)
        });
        let server = net.server_core().unwrap().streams().unwrap();
        assert_eq!(server.recv_buffered(), 5, "proposal {proposal}: the data crossed");
        assert_eq!(net.server.listener().unwrap().half_open(), 0, "proposal {proposal}");
    }
}

/// A client whose proposal came in its first message but who never sends a packet sealed with
/// the keys (its address may have been forged, its first message replayed) leaves the server a
/// connection that expires as half-open, though its core came up.
#[test]
fn a_proposal_alone_leaves_the_connection_half_open_until_it_expires() {
    let mut net = Net::with_hello(Duration::from_secs(1), true);
    net.lose = Box::new(|to_server, d| to_server && DatagramType::of(d) != Some(DatagramType::NoiseInit));
    let cid = net.cid;
    net.run(Duration::from_millis(100), |n| n.server_core().is_some_and(|c| c.is_established()));
    assert!(net.server_core().is_some_and(|c| c.is_established()), "the server's core is up");
    assert_eq!(net.server.listener().unwrap().half_open(), 1);
    net.run(Duration::from_secs(3), |n| !n.server_io.expired.is_empty());
    assert_eq!(net.server_io.expired, [cid], "expired as half-open by {:?}", net.now);
}

/// A connection that closes is retired: the table keeps only its CLOSE, the listener frees
/// its place, and a datagram the peer sends after is answered with the same CLOSE.
#[test]
fn a_closed_connection_is_retired_and_its_close_answered() {
    let mut net = Net::new(Duration::from_secs(10));
    net.run(Duration::from_secs(1), Net::up);
    let cid = net.cid;
    net.client.cell_mut(&cid).unwrap().core.close(0, "bye");
    poke(&mut net.client, cid);
    net.round();
    // The client's CLOSE is lost: the server's connection stays up.
    net.client_io.wire.clear();
    assert_eq!((net.client.connections(), net.client.closing()), (0, 1));
    assert_eq!(net.client_io.gone, [cid]);
    let close = net.client_io.sent.last().expect("the CLOSE left").clone();
    // The server's next datagram finds only the closing record, which answers it.
    let streams = net.server_core().unwrap().streams().unwrap();
    let id = streams.open().unwrap();
    streams.write(id, b"late").unwrap();
    poke(&mut net.server, cid);
    net.run(Duration::from_secs(5), |n| n.server_core().is_none());
    assert!(net.server_core().is_none(), "the server heard a CLOSE and retired its connection");
    assert_eq!(net.server.listener().unwrap().connections(), 0);
    let again = net.client_io.sent.iter().filter(|d| **d == close).count();
    assert!(again >= 2, "the same CLOSE went again ({again} in all)");
}

/// A server's connection whose client goes silent after its first message is expired by
/// the listener and leaves the table.
#[test]
fn a_half_open_connection_expires() {
    let mut net = Net::new(Duration::from_secs(2));
    let mut first = true;
    net.lose = Box::new(move |to_server, _| !std::mem::take(&mut first) || !to_server);
    net.run(Duration::from_secs(4), |n| !n.server_io.gone.is_empty());
    assert_eq!(net.server_io.expired, [net.cid]);
    assert_eq!(net.server_io.gone, [net.cid]);
    assert_eq!(net.server.connections(), 0);
    assert_eq!(net.server.listener().unwrap().connections(), 0);
    assert_eq!(net.now, Instant::ZERO + ONE_WAY + Duration::from_secs(2), "its first message came at 10 ms");
}

/// The application lets go of an established connection: it closes at once when nothing is
/// left to deliver, and the peer hears it.
#[test]
fn a_released_connection_closes() {
    let mut net = Net::new(Duration::from_secs(10));
    net.run(Duration::from_secs(1), Net::up);
    let cid = net.cid;
    net.server.cell_mut(&cid).unwrap().released = true;
    net.server.poke(&cid);
    let at = net.now;
    net.run(Duration::from_secs(5), |n| n.client.connections() == 0 && n.server.connections() == 0);
    assert!(net.now < at + LINGER, "closed at once, not after the linger: {:?}", net.now);
    assert!(net.server_io.news.iter().any(|(_, n)| n.closed));
    assert!(net.client_io.news.iter().any(|(_, n)| n.closed), "the client heard the CLOSE");
}

/// Only connections with something to do are driven: input, the application's poke, an
/// expired timer; an idle connection is left alone.
#[test]
fn only_connections_with_something_to_do_are_driven() {
    let mut net = Net::new(Duration::from_secs(10));
    net.run(Duration::from_secs(1), Net::up);
    net.run(Duration::from_secs(2), |n| n.client_io.wire.is_empty() && n.server_io.wire.is_empty());
    let cid = net.cid;
    let next = net.server.poll_timeout().expect("the core's idle or keep-alive timer");
    let before = net.server_io.driven.len();
    let early = next - Duration::from_micros(1);
    net.server.handle_timeout(early, &mut net.server_io);
    assert_eq!(net.server_io.driven.len(), before, "nothing arrived, nothing due");
    poke(&mut net.server, cid);
    net.server.handle_timeout(early, &mut net.server_io);
    assert_eq!(net.server_io.driven.len(), before + 1, "the application wrote");
    assert!(!net.server.cell_mut(&cid).unwrap().poked, "the poke was taken");
    net.server.handle_timeout(next, &mut net.server_io);
    assert_eq!(net.server_io.driven.len(), before + 2, "timer due");
}

/// A client whose handshake gets ICMP port unreachable fails and leaves its table.
#[test]
fn port_unreachable_fails_the_client_handshake() {
    let mut net = Net::new(Duration::from_secs(10));
    net.lose = Box::new(|_, _| true);
    net.round();
    net.client.handle_unreachable(net.now, &mut net.client_io);
    assert!(net.client_io.failed);
    assert!(net.client.is_empty());
    assert_eq!(net.client_io.gone, [net.cid]);
}

/// What a round must drive, computed the way a full scan would: queued, timer due, or
/// asked every round; none closed.
fn scan_due(table: &Table, now: Instant) -> Vec<ConnectionId> {
    let is_client = table.is_client();
    let mut due: Vec<ConnectionId> = (table.slots.iter())
        .filter(|(_, s)| {
            !s.closed
                && (s.queued || s.next_timeout.is_some_and(|t| t <= now) || s.wants_every_round(is_client))
        })
        .map(|(c, _)| *c)
        .collect();
    due.sort_by_key(|c| c.0);
    due
}

/// `poll_timeout` the way a full scan would compute it.
fn scan_timeout(table: &Table) -> Option<Instant> {
    let slots =
        table.slots.values().filter_map(|s| if s.queued { Some(Instant::ZERO) } else { s.next_timeout });
    let listener = table.listener.as_ref().and_then(Listener::poll_timeout);
    slots.chain(table.closing.poll_timeout()).chain(listener).min()
}

/// The server of the ready-queue test: a listener taking up to 1000 handshakes a second.
fn busy_server() -> Table {
    let listener = Listener::new(
        InsecureResponder { secret: 5 },
        ListenerConfig { handshake_rate: 1000, ..ListenerConfig::default() },
        ConnectionConfig::default(),
        Box::new(|| Box::new(|| 3)),
        Instant::ZERO,
    );
    Table::server(listener)
}

/// `n` clients of [`busy_server`], each a table of one connection, with its I/O and its id.
fn clients_of_busy_server(n: usize) -> Vec<(Table, Io, ConnectionId)> {
    (0..n)
        .map(|i| {
            let core = Connection::client(ConnectionConfig::default(), Instant::ZERO, 10 + i as u64);
            let cid = core.cid();
            let hello = Hello { paths: 1, ..Hello::default() };
            let initiator = InsecureInitiator::new(5, cid, &hello, 20 + i as u64, 0);
            let timeout = Duration::from_secs(5);
            let session = Session::client(
                Box::new(initiator),
                1,
                server_addr(),
                timeout,
                Box::new(|| 1),
                Instant::ZERO,
            );
            let cell = Cell { core, poked: false, released: false };
            (Sessions::client(cid, cell, session), Io::default(), cid)
        })
        .collect()
}

/// Many clients on one server over lossy, reordering links, the applications writing,
/// reading and closing at random: every server round drives exactly the connections a
/// scan of the whole table would pick, `poll_timeout` says what a scan would, and the
/// timer heap stays within its bound.
#[test]
fn the_ready_queue_and_timer_heap_drive_what_a_full_scan_would() {
    const CLIENTS: usize = 12;
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut server = busy_server();
    let mut server_io = Io::default();
    let addr = |i: usize| SocketAddr::from(([192, 0, 2, 2], 1000 + i as u16));
    let mut clients = clients_of_busy_server(CLIENTS);
    let mut now = Instant::ZERO;
    let mut driven_total = 0;
    for step in 0..4000u32 {
        // Datagrams due arrive (some lost), in a random order.
        let mut arrivals = Vec::new();
        for (i, (_, io, _)) in clients.iter_mut().enumerate() {
            let (due, later): (Vec<_>, Vec<_>) = io.wire.drain(..).partition(|d| d.0 <= now);
            io.wire = later;
            arrivals.extend(due.into_iter().map(|d| (i, d.2)));
        }
        for i in (1..arrivals.len()).rev() {
            arrivals.swap(i, rand() as usize % (i + 1));
        }
        for (i, d) in arrivals {
            if rand() % 10 != 0 {
                server.handle_datagram(now, 0, addr(i), &d, &mut server_io);
                assert_eq!(server.poll_timeout(), scan_timeout(&server));
            }
        }
        // The applications: a write now and then, a close late in the run.
        for (i, (table, _, cid)) in clients.iter_mut().enumerate() {
            let Some(cell) = table.cell_mut(cid) else { continue };
            if step > 2500 && rand() % 1500 == 0 {
                cell.core.close(0, "done");
                poke(table, *cid);
            } else if let Some(streams) = cell.core.streams().filter(|_| rand() % 7 == i as u64 % 7) {
                let id = match streams.open() {
                    Ok(id) => id,
                    Err(_) => continue,
                };
                let _ = streams.write(id, &[i as u8; 900]);
                let _ = streams.finish(id);
                poke(table, *cid);
            }
        }
        // The server's applications read what came and sometimes poke without cause.
        let cids: Vec<ConnectionId> = server.slots.keys().copied().collect();
        for cid in cids {
            if rand() % 5 == 0 {
                poke(&mut server, cid);
            }
        }
        let expected = scan_due(&server, now);
        let before = server_io.driven.len();
        server.handle_timeout(now, &mut server_io);
        let mut driven = server_io.driven[before..].to_vec();
        driven.sort_by_key(|c| c.0);
        assert_eq!(driven, expected, "step {step} at {now:?}");
        driven_total += driven.len();
        assert_eq!(server.poll_timeout(), scan_timeout(&server), "step {step}");
        assert!(server.timers.len() <= 2 * server.slots.len() + 64 + CLIENTS, "heap {}", server.timers.len());
        // The server's datagrams, to their client (some lost); the clients' rounds.
        for (at, to, d) in server_io.wire.drain(..) {
            let i = usize::from(to.port() - 1000);
            if at <= now + ONE_WAY && rand() % 10 != 0 {
                let (table, io, _) = &mut clients[i];
                table.handle_datagram(now, 0, server_addr(), &d, io);
            }
        }
        for (table, io, _) in &mut clients {
            table.handle_timeout(now, io);
        }
        // Time moves to the next thing due, or by a little (some steps land on nothing).
        let next = clients.iter().filter_map(|c| c.0.poll_timeout()).chain(server.poll_timeout()).min();
        let jump = Duration::from_micros(50 + rand() % 3000);
        now = next.filter(|t| *t > now).map_or(now + jump, |t| t.min(now + jump));
    }
    let up = clients.iter().filter(|c| c.1.news.iter().any(|(_, n)| n.connected)).count();
    assert_eq!(up, CLIENTS, "every client came up");
    assert!(driven_total > 5000, "the server drove {driven_total} connection rounds");
}
