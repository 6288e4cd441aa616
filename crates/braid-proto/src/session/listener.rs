//! A server's admission of connections (PROTOCOL.md §13.9), with no I/O and no clock:
//! every datagram that reaches the server's socket comes here with its source address and the
//! time, and the listener says what it is for. A first message passes, in this order, the
//! cheap checks (still accepting, well-formed, not for a connection that exists, the connection
//! cap, the handshake rate), then the [`Responder`]'s authentication, then the memory of first
//! messages (a replay creates nothing); only then is any state kept: the server's core
//! connection and its [`Session`], with the answer queued. Every later datagram is routed by
//! its connection id to the connection's session, which the caller owns.
//!
//! Anti-amplification before an address is validated (at most [`AMPLIFICATION`] × what came
//! from it): a first message is [`INIT_LEN`] bytes, the refusal hint 9, and an answer larger
//! than a third of the first message is never queued (nothing is created then). A connection
//! whose core handshake has not finished [`ListenerConfig::handshake_timeout`] after its first
//! message is reported expired and forgotten, so half-open connections cannot hold the cap.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use crate::wire::{ConnectionId, DatagramType};
use crate::{Connection, ConnectionConfig, Instant};

use super::crypto::{init_cid, is_init, refusal, Accepted, Responder, INIT_LEN};
use super::{
    FirstMessage, HandshakeRate, Hello, Random, SeenFirstMessages, Session, UnknownChoice, AMPLIFICATION,
};

/// What a server admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerConfig {
    /// Most connections at once, half-open ones included. Default 256.
    pub max_connections: usize,
    /// New handshakes a second (a token bucket one second deep), taken before any public-key
    /// work. Default 50.
    pub handshake_rate: u32,
    /// A connection whose core handshake has not finished this long after its first message is
    /// forgotten. Default 10 s.
    pub handshake_timeout: Duration,
    /// First messages remembered at most; when the memory is full of recent ones, new
    /// handshakes wait. Default 100 000.
    pub replay_memory: usize,
    /// How long a first message is remembered: the span in which the [`Responder`]'s clock
    /// check would accept it again. Default 240 s (Noise's ±120 s).
    pub replay_horizon: Duration,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            max_connections: 256,
            handshake_rate: 50,
            handshake_timeout: Duration::from_secs(10),
            replay_memory: 100_000,
            replay_horizon: Duration::from_secs(240),
        }
    }
}

/// Makes each new connection's source of random numbers (its challenge tokens).
pub type RandomSource = Box<dyn FnMut() -> Random + Send>;

/// What a datagram that came to the server is for.
pub enum Incoming<K> {
    /// For this existing connection: hand the datagram to its session.
    Connection(ConnectionId),
    /// A first message authenticated: a new connection, its answer queued in its session.
    Accepted(Box<NewConnection<K>>),
    /// A first message that did not authenticate (wrong key, unknown client, stale clock):
    /// nothing kept; send `hint` (9 bytes, PROTOCOL.md §13.3) back to its source so a client
    /// with the wrong key can say so.
    Refused { hint: [u8; 9] },
    /// Dropped; nothing kept, nothing to send.
    Dropped(Dropped),
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Its first byte is no datagram type of this protocol.
    UnknownType,
    /// Too short for a connection id, or a first message of the wrong length.
    Malformed,
    /// For no connection of this listener.
    UnknownConnection,
    /// A first message after [`Listener::stop_accepting`].
    NotAccepting,
    /// A first message while [`ListenerConfig::max_connections`] connections exist.
    ConnectionLimit,
    /// A first message beyond [`ListenerConfig::handshake_rate`].
    RateLimited,
    /// An authenticated first message seen before: a replay.
    Replayed,
    /// An authenticated first message while the memory of recent ones is full.
    TooManyRecent,
    /// The responder's answer would be more than a third of the first message.
    AnswerTooLarge,
}

/// A connection the listener created: the caller keeps `core` and `session` and hands them
/// the connection's later datagrams.
pub struct NewConnection<K> {
    pub cid: ConnectionId,
    /// Where the first message came from (path 0's validated address).
    pub from: SocketAddr,
    /// The server's core connection, with the client's choices from its hello.
    pub core: Connection,
    /// Its security layer, the answer to the first message queued.
    pub session: Session<K>,
    pub hello: Hello,
    /// With key pairs: the client's static public key.
    pub client_key: Option<[u8; 32]>,
    /// Client choices the server did not know (its own were used).
    pub unknown: Vec<UnknownChoice>,
}

/// What the listener reports besides the answers to datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerEvent {
    /// The connection's core handshake did not finish in time: forgotten here; drop it.
    HandshakeExpired(ConnectionId),
}

/// A server's admission and routing (see the module's documentation).
pub struct Listener<R: Responder> {
    responder: R,
    config: ListenerConfig,
    transport: ConnectionConfig,
    random: RandomSource,
    /// Every connection, with the time its first message was accepted while it is half-open.
    connections: HashMap<ConnectionId, Option<Instant>>,
    /// The half-open ones by that time, oldest first: expiry and its deadline look at the
    /// oldest, not at every connection.
    half_open: BTreeSet<(Instant, [u8; 8])>,
    rate: HandshakeRate,
    seen: SeenFirstMessages,
    accepting: bool,
    events: VecDeque<ListenerEvent>,
}

impl<R: Responder> Listener<R> {
    /// A listener checking first messages with `responder`; its connections start from
    /// `transport` with each client's choices.
    pub fn new(
        responder: R,
        config: ListenerConfig,
        transport: ConnectionConfig,
        random: RandomSource,
        now: Instant,
    ) -> Listener<R> {
        Listener {
            responder,
            config,
            transport,
            random,
            connections: HashMap::new(),
            half_open: BTreeSet::new(),
            rate: HandshakeRate::new(config.handshake_rate, now),
            seen: SeenFirstMessages::new(config.replay_memory, config.replay_horizon),
            accepting: true,
            events: VecDeque::new(),
        }
    }

    /// A datagram came from `from`: what it is for.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) -> Incoming<R::Keys> {
        match DatagramType::of(data) {
            None => Incoming::Dropped(Dropped::UnknownType),
            Some(DatagramType::NoiseInit) => match self.admit(now, data) {
                Ok(cid) => self.authenticate(now, cid, from, data),
                Err(decided) => decided,
            },
            Some(_) => match init_cid(data) {
                Some(cid) if self.connections.contains_key(&cid) => Incoming::Connection(cid),
                Some(_) => Incoming::Dropped(Dropped::UnknownConnection),
                None => Incoming::Dropped(Dropped::Malformed),
            },
        }
    }

    /// The cheap checks of a first message, before any public-key work: a repeat for a
    /// connection that exists goes to its session (which answers a byte-identical one with the
    /// same answer); a new one needs room under the cap and a token of the handshake rate.
    fn admit(&mut self, now: Instant, data: &[u8]) -> Result<ConnectionId, Incoming<R::Keys>> {
        if !self.accepting {
            return Err(Incoming::Dropped(Dropped::NotAccepting));
        }
        let Some(cid) = init_cid(data).filter(|_| is_init(data)) else {
            return Err(Incoming::Dropped(Dropped::Malformed));
        };
        if self.connections.contains_key(&cid) {
            return Err(Incoming::Connection(cid));
        }
        if self.connections.len() >= self.config.max_connections {
            return Err(Incoming::Dropped(Dropped::ConnectionLimit));
        }
        if !self.rate.take(now) {
            return Err(Incoming::Dropped(Dropped::RateLimited));
        }
        Ok(cid)
    }

    /// Authenticates a first message that passed [`Listener::admit`], refuses a replay, and
    /// creates the connection.
    fn authenticate(
        &mut self,
        now: Instant,
        cid: ConnectionId,
        from: SocketAddr,
        data: &[u8],
    ) -> Incoming<R::Keys> {
        let Some(accepted) = self.responder.accept(data) else {
            return match refusal(data) {
                Some(hint) => Incoming::Refused { hint },
                None => Incoming::Dropped(Dropped::Malformed),
            };
        };
        if accepted.response.len() as u64 * AMPLIFICATION > data.len() as u64 {
            return Incoming::Dropped(Dropped::AnswerTooLarge);
        }
        match self.seen.insert(accepted.fingerprint, now) {
            FirstMessage::Fresh => {}
            FirstMessage::Replayed => return Incoming::Dropped(Dropped::Replayed),
            FirstMessage::TooMany => return Incoming::Dropped(Dropped::TooManyRecent),
        }
        Incoming::Accepted(Box::new(self.create(now, cid, from, data, accepted)))
    }

    fn create(
        &mut self,
        now: Instant,
        cid: ConnectionId,
        from: SocketAddr,
        data: &[u8],
        accepted: Accepted<R::Keys>,
    ) -> NewConnection<R::Keys> {
        let Accepted { hello, keys, response, client_key, .. } = accepted;
        let (config, unknown) = hello.apply(&self.transport);
        let paths = usize::from(hello.paths);
        let mut core = Connection::server(config, now);
        if let Some(params) = hello.params.clone() {
            // The client's Initial rode in its first message: the Accept follows the answer.
            core.accept_proposal(now, cid, params);
        }
        let session = Session::server(keys, paths, data, response, from, (self.random)(), now);
        self.connections.insert(cid, Some(now));
        self.half_open.insert((now, cid.0));
        NewConnection { cid, from, core, session, hello, client_key, unknown }
    }

    /// The connection's core handshake finished: it no longer expires.
    pub fn established(&mut self, cid: ConnectionId) {
        if let Some(created) = self.connections.get_mut(&cid).and_then(Option::take) {
            self.half_open.remove(&(created, cid.0));
        }
    }

    /// The connection is gone (closed, or dropped by the caller): its id routes nothing more
    /// and its place under the cap is free. Its first message stays remembered.
    pub fn forget(&mut self, cid: ConnectionId) -> bool {
        let Some(created) = self.connections.remove(&cid) else { return false };
        if let Some(created) = created {
            self.half_open.remove(&(created, cid.0));
        }
        true
    }

    /// New first messages are dropped from now on (the server is shutting down).
    pub fn stop_accepting(&mut self) {
        self.accepting = false;
    }

    pub fn is_accepting(&self) -> bool {
        self.accepting
    }

    /// Connections the listener routes to, half-open ones included.
    pub fn connections(&self) -> usize {
        self.connections.len()
    }

    /// Connections whose core handshake has not finished.
    pub fn half_open(&self) -> usize {
        self.half_open.len()
    }

    pub fn config(&self) -> &ListenerConfig {
        &self.config
    }

    /// When the next half-open connection expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.half_open.first().map(|(created, _)| *created + self.config.handshake_timeout)
    }

    /// Forgets the half-open connections whose time is up at `now` (each reported as
    /// [`ListenerEvent::HandshakeExpired`]).
    pub fn handle_timeout(&mut self, now: Instant) {
        let timeout = self.config.handshake_timeout;
        while let Some(&(created, cid)) = self.half_open.first().filter(|(c, _)| now >= *c + timeout) {
            self.half_open.remove(&(created, cid));
            self.connections.remove(&ConnectionId(cid));
            self.events.push_back(ListenerEvent::HandshakeExpired(ConnectionId(cid)));
        }
    }

    pub fn poll_event(&mut self) -> Option<ListenerEvent> {
        self.events.pop_front()
    }
}

// The refusal hint never amplifies: 9 bytes for a first message of INIT_LEN.
const _: () = assert!(9 * AMPLIFICATION as usize <= INIT_LEN);
