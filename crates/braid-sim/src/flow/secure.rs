//! A bulk transfer through the security layer (PROTOCOL.md §13): each end's [`BulkFlow`] is the
//! one connection of a braid-proto [`Sessions`] table, the same table the runtime's driver runs,
//! so the handshake, its repeats, sealing, replay windows, path announcements, address
//! validation, the server's admission through its [`Listener`], and a closed connection's
//! closing period run in the simulator too. The cryptography is braid-proto's insecure test
//! double (deterministic; the real Noise layer lives in the runtime). The simulator has paths,
//! not addresses: each client path gets an address of its own, and the server's datagrams take
//! the path of their destination.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use braid_proto::session::{
    CoreCell, CoreNews, Hello, Host, Listener, ListenerConfig, NewConnection, SecureTransmit, Session,
    Sessions,
};
use braid_proto::wire::ConnectionId;
use braid_proto::{Connection, ConnectionConfig, Instant};

use super::BulkFlow;
use crate::net::Endpoint;

/// The client's handshake gives up when the connection is not up this long after its start.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 443))
}

/// The client's address on path `path`.
fn client_addr(path: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 1000 + path as u16))
}

/// A deterministic stream of numbers (challenge tokens) from `seed`.
fn numbers(seed: u64) -> braid_proto::session::Random {
    let mut x = seed;
    Box::new(move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z ^ (z >> 31)
    })
}

/// The flow in the table, with what its application's steps said of the connection since the
/// table last asked.
struct FlowCell {
    flow: BulkFlow,
    news: CoreNews,
}

impl CoreCell for FlowCell {
    type Guard<'a> = &'a mut Connection;

    fn core(&mut self) -> &mut Connection {
        &mut self.flow.conn
    }
}

impl FlowCell {
    /// The application's step: write, read and check; the core's events it took are noted.
    fn drive(&mut self, now: Instant) {
        let news = self.flow.drive(now);
        self.news.connected |= news.connected;
        self.news.closed |= news.closed;
        // A sender done writing leaves the core's events in place: take them here.
        while let Some(event) = self.flow.conn.poll_event() {
            self.news.note(&event);
        }
    }
}

/// One end's side of its table: the datagrams it sent, by path, and the flow outside the table
/// (the server's before its client arrives; either's once its connection left).
struct FlowHost {
    is_server: bool,
    /// The connection's id (the server's: once its client's first message authenticated).
    cid: Option<ConnectionId>,
    paths: usize,
    out: VecDeque<(usize, Vec<u8>)>,
    outside: Option<FlowCell>,
    /// The session of a connection that left the table (a client's failed handshake).
    left: Option<Session<InsecureKeys>>,
}

impl Host<InsecureKeys, FlowCell> for FlowHost {
    fn send(&mut self, _now: Instant, t: SecureTransmit, data: &[u8]) {
        // The server's datagram goes where its destination is: the path of that address.
        let path = match self.is_server {
            true => (0..self.paths).find(|&p| client_addr(p) == t.to).unwrap_or(usize::from(t.path)),
            false => usize::from(t.path),
        };
        self.out.push_back((path, data[..t.size].to_vec()));
    }

    fn core_events(&mut self, _cid: ConnectionId, cell: &mut FlowCell, now: Instant) -> CoreNews {
        cell.drive(now);
        std::mem::take(&mut cell.news)
    }

    /// The core stays the flow's own (made at the start, with the scenario's settings, as
    /// without the security layer); the listener's is dropped.
    fn accept(
        &mut self,
        _now: Instant,
        new: NewConnection<InsecureKeys>,
    ) -> (FlowCell, Session<InsecureKeys>) {
        self.paths = new.session.paths();
        self.cid = Some(new.cid);
        let cell = self.outside.take().unwrap_or_else(|| FlowCell {
            // A second client (none in these runs) gets a receiver of its own.
            flow: BulkFlow::receiver(ConnectionConfig::default()),
            news: CoreNews::default(),
        });
        (cell, new.session)
    }

    fn gone(&mut self, _cid: ConnectionId, cell: FlowCell, session: Session<InsecureKeys>) {
        self.outside = Some(cell);
        self.left = Some(session);
    }
}

/// One end of a bulk transfer with the security layer around its connection.
pub struct SecureFlow {
    table: Sessions<InsecureResponder, FlowCell>,
    host: FlowHost,
    start: Instant,
    /// Datagrams arrived since the last round: the next poll runs one (every datagram of an
    /// instant is in by then, as the runtime reads a batch before its round).
    arrived: bool,
}

impl SecureFlow {
    /// The sending end (the client): its first message goes out at `start`.
    pub fn sender(
        config: ConnectionConfig,
        secret: u64,
        seed: u64,
        bytes: u64,
        start: Instant,
    ) -> SecureFlow {
        let paths = usize::from(config.paths);
        let flow = BulkFlow::sender(config, seed, bytes, start);
        let cid = flow.conn.cid();
        let hello = Hello { paths: paths as u8, ..Hello::default() };
        let initiator = InsecureInitiator::new(secret, cid, &hello, seed, 0);
        let session = Session::client(
            Box::new(initiator),
            paths,
            server_addr(),
            HANDSHAKE_TIMEOUT,
            numbers(seed),
            start,
        );
        let cell = FlowCell { flow, news: CoreNews::default() };
        let host = FlowHost {
            is_server: false,
            cid: Some(cid),
            paths,
            out: VecDeque::new(),
            outside: None,
            left: None,
        };
        SecureFlow { table: Sessions::client(cid, cell, session), host, start, arrived: false }
    }

    /// The receiving end (the server), accepting a client that holds `secret`. Its half-open
    /// expiry is the listener's default (10 s): the one client here has no rival for the cap.
    pub fn receiver(config: ConnectionConfig, secret: u64, seed: u64) -> SecureFlow {
        let flow = BulkFlow::receiver(config.clone());
        let responder = InsecureResponder { secret };
        let random = Box::new(move || numbers(seed));
        let listener = Listener::new(responder, ListenerConfig::default(), config, random, Instant::ZERO);
        let outside = Some(FlowCell { flow, news: CoreNews::default() });
        let host =
            FlowHost { is_server: true, cid: None, paths: 0, out: VecDeque::new(), outside, left: None };
        SecureFlow { table: Sessions::server(listener), host, start: Instant::ZERO, arrived: false }
    }

    fn cell(&self) -> Option<&FlowCell> {
        self.host.cid.and_then(|cid| self.table.cell(&cid)).or(self.host.outside.as_ref())
    }

    pub fn flow(&self) -> &BulkFlow {
        &self.cell().expect("a flow is in the table or outside it").flow
    }

    /// The security layer (the server's: once a client's first message authenticated).
    pub fn session(&self) -> Option<&Session<InsecureKeys>> {
        self.host.cid.and_then(|cid| self.table.session(&cid)).or(self.host.left.as_ref())
    }

    /// The application's step, then the table's round (the connection's timers, its sends).
    /// The application may have written at any step: every round drives the connection (its
    /// session acts only on what is due).
    fn round(&mut self, now: Instant) {
        self.arrived = false;
        if let Some(cid) = self.host.cid {
            if let Some(cell) = self.table.cell_mut(&cid) {
                cell.drive(now);
                self.table.poke(&cid);
            }
        }
        self.table.handle_timeout(now, &mut self.host);
    }
}

impl Endpoint for SecureFlow {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        let from = if self.host.is_server { client_addr(path) } else { server_addr() };
        let socket = if self.host.is_server { 0 } else { path };
        self.table.handle_datagram(now, socket, from, datagram, &mut self.host);
        self.arrived = true;
    }

    fn handle_timeout(&mut self, now: Instant) {
        if now >= self.start {
            self.round(now);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        if (self.arrived || self.host.out.is_empty() && self.table.is_busy()) && now >= self.start {
            self.round(now);
        }
        self.host.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // Datagrams to take in, or a connection that had more to send than one batch: another
        // round at once.
        let busy = (self.arrived || self.table.is_busy()).then_some(self.start);
        busy.or(self.table.poll_timeout()).map(|t| t.max(self.start))
    }
}
