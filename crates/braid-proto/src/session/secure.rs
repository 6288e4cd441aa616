//! One connection's security layer around its core [`Connection`] (PROTOCOL.md §13), sans-IO:
//! datagrams come in with their source address, datagrams go out with their destination, and
//! time is a value. The cryptography is the [`crypto`](super::crypto) traits'.
//!
//! The core connection is not owned here but handed to each call, so a runtime can keep it
//! beside the application's state (behind its own lock) and the simulator or a test can keep
//! it in a plain field. What this layer does, in the order a round does it:
//! - client: the first handshake message, repeated on the §13.2 schedule until answered, and
//!   the handshake's deadline; then every path announced until echoed, and again as the
//!   keep-alive (§13.6);
//! - server: a byte-identical repeat of the first message answered with the same answer (never
//!   more bytes than came in), new addresses challenged and kept within 3× what they sent
//!   until they answer (§13.8);
//! - both: core packets sealed and opened, replays dropped (§13.5), and the core's timer.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use crate::wire::{DatagramType, PacketHeader};
use crate::{Connection, Instant};

use super::crypto::{Initiator, Keys, HELLO_LEN, MAX_HELLO_LEN};
use super::{Announcer, Linger, PathAddress, Probation, Repeater, ReplayWindow, SentClose, CHALLENGE_BIT};

/// A sealed core packet of the base size (PROTOCOL.md §13.7): the room a new address's budget
/// needs before what was in flight goes to it again.
const DATA_ROOM: usize = 1280;

/// A datagram to send: the path it belongs to (the client's socket for that path; a server
/// sends everything from its one socket), its destination; the bytes are in the caller's
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecureTransmit {
    pub path: u8,
    pub to: SocketAddr,
    pub size: usize,
}

/// Why a client's handshake failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeFailure {
    /// An answer came that did not authenticate; the handshake is spent.
    AnswerRejected,
    /// No connection by the deadline. `refused`: the server sent its (unauthenticated) hint
    /// that our first message did not decrypt, so the key is the likely cause.
    TimedOut { refused: bool },
    /// The server's host said no one listens there (ICMP port unreachable) while the handshake
    /// was under way.
    PortUnreachable,
}

/// What the security layer reports, besides the core's own events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    /// Client: the handshake is done; the core's packets now go out sealed.
    KeysReady,
    /// Client: the handshake failed; nothing more is sent.
    Failed(HandshakeFailure),
    /// Server: a path's packets now go to `new`; `announced`: by a path announcement (a path's
    /// first one names its address), else by a newer packet (NAT rebinding); `probation`: `new`
    /// gets at most 3× what it sent until it answers a challenge.
    PathMoved { path: u8, old: Option<SocketAddr>, new: SocketAddr, probation: bool, announced: bool },
    /// Server: a new address answered its challenge.
    AddressValidated { path: u8, addr: SocketAddr },
}

/// What became of one incoming datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// An authenticated, fresh core packet went to the core on this path.
    Packet { path: u8 },
    /// A security-layer message (handshake, announcement, challenge or its echo) was handled.
    Control,
    /// Dropped: not for this side or this connection, or malformed.
    Ignored,
    /// Dropped: did not authenticate.
    Unauthenticated,
    /// Dropped: authenticated but seen before (or older than the replay window).
    Replayed,
}

/// Counts of what was dropped, for tests and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    pub unauthenticated: u64,
    pub replayed: u64,
    /// Core packets not sent because the path's address was on probation and out of budget.
    pub held_back: u64,
}

/// A source of random numbers (challenge tokens).
pub type Random = Box<dyn FnMut() -> u64 + Send>;

enum Side<K> {
    Client {
        handshake: Option<Box<dyn Initiator<Keys = K> + Send>>,
        repeat: Repeater,
        /// The server sent a refusal hint (unauthenticated: only changes the failure's words).
        refused: bool,
        deadline: Instant,
        failed: bool,
        server: SocketAddr,
        /// When the first message first went out (the handshake's round trip, for the core).
        first_sent: Option<Instant>,
    },
    Server {
        /// The client's first message and our answer, to repeat if it comes again.
        first: Vec<u8>,
        response: Vec<u8>,
        /// When the answer was queued, and whether it went again (the round trip to the
        /// client's first core packet, for the core; taken once).
        answered: Option<Instant>,
        repeated: bool,
    },
}

/// One connection's security layer (see the module's documentation).
pub struct Session<K> {
    side: Side<K>,
    keys: Option<K>,
    replay: Vec<ReplayWindow>,
    hello_replay: Vec<ReplayWindow>,
    /// Per path, where its packets go (the server follows the newest packet).
    addresses: Vec<PathAddress>,
    announcer: Announcer,
    /// Security-layer datagrams waiting to go out before the core's.
    queue: VecDeque<(u8, SocketAddr, Vec<u8>)>,
    events: VecDeque<SessionEvent>,
    random: Random,
    opened: Vec<u8>,
    plain: Vec<u8>,
    /// The sealed CLOSE of a closed core, as sent (for [`Closing`](super::Closing)).
    close: Option<SentClose>,
    /// A core packet from the peer authenticated: it holds the keys (a server's proof that the
    /// client read its answer; a client's keys come with the answer itself).
    proven: bool,
    /// Whether the application let go of the connection, and since when.
    linger: Linger,
    pub stats: SessionStats,
}

impl<K: Keys> Session<K> {
    /// A client's layer: `paths` paths, all to `server`; its first message goes out at the
    /// first [`Session::handle_timeout`]; the handshake fails if the core connection is not up
    /// `timeout` after `now`.
    pub fn client(
        handshake: Box<dyn Initiator<Keys = K> + Send>,
        paths: usize,
        server: SocketAddr,
        timeout: Duration,
        random: Random,
        now: Instant,
    ) -> Session<K> {
        let side = Side::Client {
            handshake: Some(handshake),
            repeat: Repeater::new(now),
            refused: false,
            deadline: now + timeout,
            failed: false,
            server,
            first_sent: None,
        };
        Session::new(side, None, vec![PathAddress::validated(server); paths], random, now)
    }

    /// A server's layer for a first message that authenticated (`first`, from `from`), with
    /// its `keys` and `response`; the answer is queued at once. Path 0's address is validated
    /// by the handshake: the client's first sealed packet needs the answer sent there
    /// (RFC 9000 §8.1).
    pub fn server(
        keys: K,
        paths: usize,
        first: &[u8],
        response: Vec<u8>,
        from: SocketAddr,
        random: Random,
        now: Instant,
    ) -> Session<K> {
        let mut addresses = vec![PathAddress::default(); paths];
        addresses[0] = PathAddress::validated(from);
        let side = Side::Server {
            first: first.to_vec(),
            response: response.clone(),
            answered: Some(now),
            repeated: false,
        };
        let mut s = Session::new(side, Some(keys), addresses, random, now);
        s.queue.push_back((0, from, response));
        s
    }

    fn new(
        side: Side<K>,
        keys: Option<K>,
        addresses: Vec<PathAddress>,
        random: Random,
        now: Instant,
    ) -> Self {
        let paths = addresses.len();
        Session {
            side,
            keys,
            replay: vec![ReplayWindow::default(); paths],
            hello_replay: vec![ReplayWindow::default(); paths],
            addresses,
            announcer: Announcer::new(paths, now),
            queue: VecDeque::new(),
            events: VecDeque::new(),
            random,
            opened: Vec::with_capacity(2048),
            plain: Vec::with_capacity(2048),
            close: None,
            proven: false,
            linger: Linger::default(),
            stats: SessionStats::default(),
        }
    }

    fn is_client(&self) -> bool {
        matches!(self.side, Side::Client { .. })
    }

    /// Whether the packet keys exist (client: the handshake is done).
    pub fn has_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// Client: whether the handshake is still under way (neither done nor failed).
    pub fn is_handshaking(&self) -> bool {
        matches!(&self.side, Side::Client { handshake: Some(_), .. })
    }

    /// Whether the peer proved it holds the keys: a client, once it has them; a server, once a
    /// core packet from the client authenticated.
    pub fn peer_proven(&self) -> bool {
        self.proven || (self.is_client() && self.keys.is_some())
    }

    /// Whether the client's handshake failed (nothing more is sent then).
    pub fn has_failed(&self) -> bool {
        matches!(self.side, Side::Client { failed: true, .. })
    }

    /// Where path `path`'s packets go now.
    pub fn remote(&self, path: usize) -> Option<SocketAddr> {
        self.addresses.get(path)?.remote()
    }

    /// Path `path`'s new address on probation, if any (its budget: `sent` ≤ 3 × `received`).
    pub fn probation(&self, path: usize) -> Option<&Probation> {
        self.addresses.get(path)?.probation()
    }

    pub fn paths(&self) -> usize {
        self.addresses.len()
    }

    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    /// The application let go of the connection at `now` (dropped every handle; a later call
    /// keeps the first time): once its data is delivered, or after [`LINGER`](super::LINGER),
    /// [`Session::handle_timeout`] closes the core.
    pub fn let_go(&mut self, now: Instant) {
        self.linger.start(now);
    }

    /// An ICMP port unreachable came back for this connection's datagrams: during the client's
    /// handshake, no server listens there and the handshake fails; later it is ignored (the
    /// core's own timers decide whether a path is gone).
    pub fn handle_unreachable(&mut self) {
        if self.is_handshaking() {
            self.fail(HandshakeFailure::PortUnreachable);
        }
    }

    fn fail(&mut self, why: HandshakeFailure) {
        if let Side::Client { handshake, failed, .. } = &mut self.side {
            *handshake = None;
            *failed = true;
            self.queue.clear();
            self.events.push_back(SessionEvent::Failed(why));
        }
    }

    /// A datagram came from `from` on the client's socket of path `socket` (a server: 0).
    pub fn handle_datagram(
        &mut self,
        core: &mut Connection,
        now: Instant,
        socket: usize,
        from: SocketAddr,
        data: &[u8],
    ) -> Received {
        match DatagramType::of(data) {
            Some(DatagramType::NoiseInit) => self.on_repeated_first(from, data),
            Some(DatagramType::NoiseResponse) => self.on_answer(core, now, data),
            Some(DatagramType::Refused) => {
                let ours = super::crypto::is_refusal_for(data, core.cid());
                match &mut self.side {
                    Side::Client { handshake: Some(_), refused, .. } if ours => *refused = true,
                    _ => return Received::Ignored,
                }
                Received::Control
            }
            Some(DatagramType::PathHello) => self.on_path_hello(core, socket, from, data, now),
            Some(DatagramType::Packet(_)) => self.on_packet(core, socket, from, data, now),
            None => Received::Ignored,
        }
    }

    /// Server: the first message again (its answer was lost): the same answer, nothing else.
    fn on_repeated_first(&mut self, from: SocketAddr, data: &[u8]) -> Received {
        let Side::Server { first, response, repeated, .. } = &mut self.side else { return Received::Ignored };
        if first.as_slice() != data {
            return Received::Ignored;
        }
        *repeated = true;
        self.queue.push_back((0, from, response.clone()));
        Received::Control
    }

    fn on_answer(&mut self, core: &mut Connection, now: Instant, data: &[u8]) -> Received {
        let Side::Client { handshake: Some(h), .. } = &mut self.side else { return Received::Ignored };
        let Some(keys) = h.read_answer(data) else {
            if h.is_spent() {
                self.fail(HandshakeFailure::AnswerRejected);
            }
            return Received::Unauthenticated;
        };
        if let Side::Client { handshake, repeat, first_sent: Some(sent), .. } = &mut self.side {
            *handshake = None;
            handshake_rtt(core, 0, now - *sent, repeat.attempts() > 1);
        }
        self.keys = Some(keys);
        self.announcer.start(now);
        self.events.push_back(SessionEvent::KeysReady);
        Received::Control
    }

    fn on_path_hello(
        &mut self,
        core: &mut Connection,
        socket: usize,
        from: SocketAddr,
        data: &[u8],
        now: Instant,
    ) -> Received {
        let Some((path, counter)) = self.keys.as_ref().and_then(|k| k.open_hello(data)) else {
            self.stats.unauthenticated += 1;
            return Received::Unauthenticated;
        };
        let p = usize::from(path);
        if p >= self.addresses.len() {
            return Received::Ignored;
        }
        let is_client = self.is_client();
        let keys = self.keys.as_ref().expect("opened with them");
        if counter & CHALLENGE_BIT != 0 {
            if !is_client {
                if self.addresses[p].on_challenge_echo(from, counter, data.len()) {
                    self.events.push_back(SessionEvent::AddressValidated { path, addr: from });
                    // What the core holds in flight was held back by the budget (or, before the
                    // move, went to the old address): it goes again now, while the NAT still
                    // maps this address.
                    core.on_peer_address_changed(now, path);
                }
            } else if let Some(to) = self.addresses[p].remote() {
                // A challenge from the server: echoed on the path it names (repeats are
                // harmless: the same sealed bytes again, only ever to the server).
                self.queue.push_back((path, to, keys.seal_hello(path, counter)));
            }
            return Received::Control;
        }
        if !self.hello_replay[p].insert(counter) {
            self.stats.replayed += 1;
            return Received::Replayed;
        }
        if is_client {
            if p == socket {
                self.announcer.on_echo(p);
            }
            return Received::Control;
        }
        let address = &mut self.addresses[p];
        let old = address.remote();
        address.on_announcement(from, data.len(), &mut self.random, now);
        if old != Some(from) {
            let probation = address.probation().is_some_and(|pr| pr.addr == from);
            self.events.push_back(SessionEvent::PathMoved {
                path,
                old,
                new: from,
                probation,
                announced: true,
            });
        }
        let echo = keys.seal_hello(path, counter);
        // Counted against an address on probation (it always fits: the announcement it
        // answers, of the same size, was just counted as received).
        if address.try_send(from, echo.len()) {
            self.queue.push_back((0, from, echo));
        }
        let moved = old.is_some_and(|old| old != from);
        self.resend_after_move(core, now, path, moved);
        Received::Control
    }

    fn on_packet(
        &mut self,
        core: &mut Connection,
        socket: usize,
        from: SocketAddr,
        data: &[u8],
        now: Instant,
    ) -> Received {
        let Some(keys) = &self.keys else { return Received::Ignored };
        let Ok(header) = keys.open(data, &mut self.opened) else {
            self.stats.unauthenticated += 1;
            return Received::Unauthenticated;
        };
        let p = usize::from(header.path);
        let is_client = self.is_client();
        if p >= self.replay.len() || (is_client && p != socket) {
            return Received::Ignored;
        }
        if !self.replay[p].insert(header.number) {
            self.stats.replayed += 1;
            return Received::Replayed;
        }
        self.proven = true;
        let moved = if is_client {
            self.announcer.on_packet(p, now);
            false
        } else {
            self.follow(header, from, data.len(), now)
        };
        core.handle_datagram(now, header.path, &self.opened);
        if let Side::Server { answered, repeated, .. } = &mut self.side {
            // The client sends its first core packet (number 0) as the answer arrives, on path
            // 0; a later one (the first was lost) would time the loss too. After the core took
            // it, which accepts path 0 where the first message carried no proposal.
            if let Some(at) = answered.take().filter(|_| header.path == 0 && header.number == 0) {
                handshake_rtt(core, 0, now - at, *repeated);
            }
        }
        if !is_client {
            // After the packet, so what its ACK covers is not sent again.
            self.resend_after_move(core, now, header.path, moved);
        }
        Received::Packet { path: header.path }
    }

    /// Server: an authenticated datagram came on `path` (`moved`: it moved the path from an
    /// address it had). What the core holds in flight there went to the old address, which a
    /// NAT that moved has left: it goes again to the new one, without waiting for a probe
    /// timeout, as soon as the new address's budget has room for a packet (a padded
    /// announcement makes room for two); at once if the path went back to a proven address.
    fn resend_after_move(&mut self, core: &mut Connection, now: Instant, path: u8, moved: bool) {
        let address = &mut self.addresses[usize::from(path)];
        let due = match address.probation() {
            Some(_) => address.resend_due(DATA_ROOM),
            None => moved,
        };
        if due {
            core.on_peer_address_changed(now, path);
        }
    }

    /// Server: the path's address follows its newest authenticated packet. Returns whether it
    /// moved from an address it had.
    fn follow(&mut self, header: PacketHeader, from: SocketAddr, len: usize, now: Instant) -> bool {
        let address = &mut self.addresses[usize::from(header.path)];
        let before = address.remote();
        address.on_packet(from, header.number, len, &mut self.random, now);
        if address.remote() != before {
            let probation = address.probation().is_some_and(|pr| pr.addr == from);
            let path = header.path;
            self.events.push_back(SessionEvent::PathMoved {
                path,
                old: before,
                new: from,
                probation,
                announced: false,
            });
        }
        before.is_some_and(|b| address.remote() != Some(b))
    }

    /// Does what is due at `now`: the linger's close, the client's first message or its
    /// deadline, announcements, challenges, and the core's timer (the core runs only once the
    /// keys exist).
    pub fn handle_timeout(&mut self, core: &mut Connection, now: Instant) {
        self.linger.handle_timeout(core, now);
        if let Side::Client { handshake, repeat, refused, deadline, failed, server, first_sent } =
            &mut self.side
        {
            if *failed {
                return;
            }
            // The deadline is the handshake's: a connection that came up and was closed since
            // is not established either, and failing it here would drop its CLOSE unsent.
            if !core.is_established() && !core.is_closed() && now >= *deadline {
                let refused = *refused && handshake.is_some();
                self.fail(HandshakeFailure::TimedOut { refused });
                return;
            }
            if let Some(h) = handshake {
                if repeat.poll(now) {
                    self.queue.push_back((0, *server, h.first_message().to_vec()));
                    first_sent.get_or_insert(now);
                }
            }
        }
        let Some(keys) = &self.keys else { return };
        if self.is_client() {
            let mut due = Vec::new();
            self.announcer.poll(now, &mut due);
            for (p, counter) in due {
                if let Some(to) = self.addresses[usize::from(p)].remote() {
                    let mut hello = keys.seal_hello(p, counter);
                    if self.announcer.pads(usize::from(p), now) {
                        hello.resize(MAX_HELLO_LEN, 0);
                    }
                    self.queue.push_back((p, to, hello));
                }
            }
        } else {
            for (p, address) in self.addresses.iter_mut().enumerate() {
                if let Some((to, token)) = address.poll_challenge(now, HELLO_LEN) {
                    self.queue.push_back((p as u8, to, keys.seal_hello(p as u8, token)));
                }
            }
        }
        if core.poll_timeout().is_some_and(|t| t <= now) {
            core.handle_timeout(now);
        }
    }

    /// The next datagram to send, into `buf`: the layer's own first, then the core's, sealed.
    /// A core packet to an address on probation beyond its budget is not sent (the core sees
    /// it as lost). A closed core sends one datagram more, its CLOSE: recorded for
    /// [`Session::take_close`].
    pub fn poll_transmit(
        &mut self,
        core: &mut Connection,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<SecureTransmit> {
        if let Some((path, to, bytes)) = self.queue.pop_front() {
            buf.clear();
            buf.extend_from_slice(&bytes);
            return Some(SecureTransmit { path, to, size: bytes.len() });
        }
        let keys = self.keys.as_ref()?;
        loop {
            let closing = core.is_closed().then(|| core.closing_period());
            let t = core.poll_transmit(now, &mut self.plain)?;
            if keys.seal(&self.plain[..t.size], buf).is_none() {
                continue;
            }
            let Some(address) = self.addresses.get_mut(usize::from(t.path)) else { continue };
            let Some(to) = address.remote() else { continue };
            if !address.try_send(to, buf.len()) {
                self.stats.held_back += 1;
                continue;
            }
            if let Some(period) = closing {
                self.close = Some(SentClose { path: t.path, to, datagram: buf.clone(), sent: now, period });
            }
            return Some(SecureTransmit { path: t.path, to, size: buf.len() });
        }
    }

    /// The CLOSE the closed core sent through this layer, once: what the endpoint keeps of the
    /// connection for its closing period ([`Closing`](super::Closing)).
    pub fn take_close(&mut self) -> Option<SentClose> {
        self.close.take()
    }

    /// When [`Session::handle_timeout`] has something to do next.
    pub fn poll_timeout(&self, core: &Connection) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        if let Some(t) = self.linger.poll_timeout(core) {
            at(t);
        }
        if let Side::Client { handshake, repeat, deadline, failed, .. } = &self.side {
            if *failed {
                return None;
            }
            if handshake.is_some() {
                at(repeat.next());
            }
            if !core.is_established() && !core.is_closed() {
                at(*deadline);
            }
        }
        if self.keys.is_some() {
            if let Some(t) = core.poll_timeout() {
                at(t);
            }
            if self.is_client() {
                at(self.announcer.timeout());
            }
            // A challenge with no room in its budget waits for bytes from the address, not
            // for its time (which passes, and would wake the caller at once, every round).
            for t in self.addresses.iter().filter_map(|a| a.challenge_at(HELLO_LEN)) {
                at(t);
            }
        }
        next
    }

    /// Whether a datagram is waiting in the layer's own queue (no need to wait for a timer).
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }
}

/// Hands the core a handshake's round trip on `path`. A message that went more than once makes
/// the sample ambiguous (RFC 6298 §3, Karn): timed from the first copy it can only be too long,
/// so it is kept only while it is still below the default it replaces (RFC 9002 §6.2.2).
fn handshake_rtt(core: &mut Connection, path: u8, rtt: Duration, repeated: bool) {
    if !repeated || rtt < crate::cc::INITIAL_RTT {
        core.on_handshake_rtt(path, rtt);
    }
}
