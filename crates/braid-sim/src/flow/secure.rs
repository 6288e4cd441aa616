//! A bulk transfer through the security layer (PROTOCOL.md §13): each end's [`BulkFlow`] with
//! its core connection inside a [`Session`], so the handshake, its repeats, sealing, replay
//! windows, path announcements and address validation run in the simulator too, and the
//! server admits the client through a [`Listener`], as the runtime's does. The
//! cryptography is braid-proto's insecure test double (deterministic; the real Noise layer
//! lives in the runtime). The simulator has paths, not addresses: each client path gets an
//! address of its own, and the server's datagrams take the path of their destination.

use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use braid_proto::session::{Hello, Incoming, Listener, ListenerConfig, Session};
use braid_proto::{ConnectionConfig, Instant};

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

/// One end of a bulk transfer with the security layer around its connection.
pub struct SecureFlow {
    flow: BulkFlow,
    /// The client's from the start; the server's once a first message authenticates.
    session: Option<Session<InsecureKeys>>,
    /// The server's admission and routing, with the shared secret.
    listener: Option<Listener<InsecureResponder>>,
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
        let hello = Hello { paths: paths as u8, ..Hello::default() };
        let initiator = InsecureInitiator::new(secret, flow.conn.cid(), &hello, seed, 0);
        let session = Session::client(
            Box::new(initiator),
            paths,
            server_addr(),
            HANDSHAKE_TIMEOUT,
            numbers(seed),
            start,
        );
        SecureFlow { flow, session: Some(session), listener: None }
    }

    /// The receiving end (the server), accepting a client that holds `secret`.
    pub fn receiver(config: ConnectionConfig, secret: u64, seed: u64) -> SecureFlow {
        let flow = BulkFlow::receiver(config.clone());
        let responder = InsecureResponder { secret };
        let random = Box::new(move || numbers(seed));
        let listener = Listener::new(responder, ListenerConfig::default(), config, random, Instant::ZERO);
        SecureFlow { flow, session: None, listener: Some(listener) }
    }

    pub fn flow(&self) -> &BulkFlow {
        &self.flow
    }

    /// The security layer (the server's: once a client's first message authenticated).
    pub fn session(&self) -> Option<&Session<InsecureKeys>> {
        self.session.as_ref()
    }

    /// Server: a datagram from the client on `path`, through the listener: to the session, or
    /// the session the listener created. The core stays the flow's own (made at the start,
    /// with the scenario's settings, as without the security layer); the listener's is dropped.
    /// Its half-open expiry is not driven: the one client here has no rival for the cap.
    fn server_receives(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        let Some(listener) = &mut self.listener else { return };
        let from = client_addr(path);
        match listener.handle_datagram(now, from, datagram) {
            Incoming::Connection(_) => {
                if let Some(s) = &mut self.session {
                    s.handle_datagram(&mut self.flow.conn, now, path, from, datagram);
                }
            }
            Incoming::Accepted(new) => self.session = Some(new.session),
            // No answer to a wrong key here: the simulator's client holds the secret.
            Incoming::Refused { .. } | Incoming::Dropped(_) => {}
        }
    }
}

impl Endpoint for SecureFlow {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        if self.listener.is_some() {
            self.server_receives(now, path, datagram);
        } else if let Some(s) = &mut self.session {
            s.handle_datagram(&mut self.flow.conn, now, path, server_addr(), datagram);
        }
        self.flow.drive(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if now < self.flow.start {
            return;
        }
        if let Some(s) = &mut self.session {
            s.handle_timeout(&mut self.flow.conn, now);
        }
        self.flow.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        let mut buf = Vec::new();
        let path = self.poll_transmit_into(now, &mut buf)?;
        Some((path, buf))
    }

    fn poll_transmit_into(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<usize> {
        if now < self.flow.start {
            return None;
        }
        self.flow.drive(now);
        let t = self.session.as_mut()?.poll_transmit(&mut self.flow.conn, now, buf)?;
        buf.truncate(t.size);
        if self.listener.is_none() {
            return Some(usize::from(t.path));
        }
        // The server's datagram goes where its destination is: the path of that address.
        let paths = self.session.as_ref().map_or(0, Session::paths);
        Some((0..paths).find(|&p| client_addr(p) == t.to).unwrap_or(usize::from(t.path)))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let s = self.session.as_ref()?;
        s.poll_timeout(&self.flow.conn).map(|t| t.max(self.flow.start))
    }
}
