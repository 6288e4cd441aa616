//! The driver task: owns the sockets, feeds datagrams and timeouts to each core connection,
//! sends what the cores produce, and wakes the application's tasks. One task per endpoint.
//!
//! Time: the core's `Instant` is microseconds since the driver started (`epoch`), read from
//! tokio's clock; the core itself never reads a clock.

use std::collections::HashMap;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::sched::SchedulerKind;
use braid_proto::session::{Announcer, PathAddress, Repeater, ReplayWindow, CHALLENGE_BIT};
use braid_proto::streams::StreamEvent;
use braid_proto::wire::{ConnectionId, DatagramType};
use braid_proto::{CloseReason, ConnectionConfig, Event, Instant};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::connection::Connection;
use crate::crypto::{self, ClientAuth, ClientHandshake, Hello, PacketKeys, ServerAuth, HELLO_LEN};
use crate::emulate::{EmulatedLink, Emulation};
use crate::gso::{Batcher, Received, RECV_BUFFER};
use crate::limits::{HandshakeBucket, Limit, LimitLog, Limits, ServerCounters};
use crate::shared::{Ended, Handle, Registry, STREAM_SEND_BUFFER};
use crate::Error;

/// Datagrams sent per connection per round before the driver reads its sockets again.
const SEND_BATCH: usize = 256;
/// Datagrams read per round before the driver sends again.
const RECV_BATCH: usize = 256;
/// A server forgets a connection whose core handshake has not finished after this long.
const SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Once the application dropped every handle, undelivered data gets this long before closing.
const LINGER: Duration = Duration::from_secs(3);

pub(crate) struct ClientSetup {
    pub auth: ClientAuth,
    pub transport: ConnectionConfig,
    pub sockets: Vec<UdpSocket>,
    pub emulate: Vec<Option<Emulation>>,
    pub server: SocketAddr,
    pub handshake_timeout: Duration,
    pub ready: oneshot::Sender<Result<(), Error>>,
}

pub(crate) struct ServerSetup {
    pub auth: ServerAuth,
    pub transport: ConnectionConfig,
    pub socket: UdpSocket,
    pub emulate: Option<Emulation>,
    pub limits: Limits,
    pub counters: Arc<ServerCounters>,
    pub registry: Registry,
    pub incoming: mpsc::UnboundedSender<Connection>,
}

struct PathSocket {
    udp: UdpSocket,
    batch: Batcher,
    /// Emulated impairment: datagrams leaving / arriving on this path (the server's: on its socket).
    egress: Option<EmulatedLink>,
    ingress: Option<EmulatedLink>,
}

/// The client's side of the Noise handshake, until it completes.
struct ClientNoise {
    noise: ClientHandshake,
    repeat: Repeater,
    /// The server sent a refusal hint (unauthenticated: only changes the error message).
    refused: bool,
    /// Key pairs (the refusal then names --server-key and --authorized).
    pair: bool,
}

// One per driver, built once and never moved on a hot path: boxing the server's fields would
// only add an indirection.
#[allow(clippy::large_enum_variant)]
enum Role {
    Client {
        server: SocketAddr,
        ready: Option<oneshot::Sender<Result<(), Error>>>,
        noise: Option<Box<ClientNoise>>,
        deadline: Instant,
        timeout: Duration,
    },
    Server {
        auth: ServerAuth,
        transport: ConnectionConfig,
        limits: Limits,
        registry: Registry,
        incoming: mpsc::UnboundedSender<Connection>,
    },
}

/// Driver-private state of one connection.
struct Entry {
    handle: Handle,
    keys: Option<PacketKeys>,
    replay: Vec<ReplayWindow>,
    hello_replay: Vec<ReplayWindow>,
    /// Per path, where its packets go. The server follows the newest packet (NAT rebinding
    /// keeps the connection), a new address within its budget until it answers a challenge.
    addresses: Vec<PathAddress>,
    /// Client: its path announcements.
    announcer: Announcer,
    /// Server: the client's first message and our answer, to repeat if it comes again.
    init: Vec<u8>,
    response: Vec<u8>,
    established: bool,
    created: Instant,
    orphaned_at: Option<Instant>,
    closed: bool,
    /// The core's `poll_timeout` after the last drive (asking it is not free).
    next_timeout: Option<Instant>,
    /// Something arrived for this connection, or it had more to send than one batch: drive it
    /// at the next round (the others wait for their timer or the application).
    dirty: bool,
}

impl Entry {
    /// Whether this round must drive the connection: input, a poke from the application, an
    /// expired timer (the core's, a path announcement's, a challenge's, the handshake's or the
    /// linger's), or an orphaned connection on its way out.
    fn wants_drive(&self, now: Instant, is_client: bool) -> bool {
        self.dirty
            || self.handle.poked.load(std::sync::atomic::Ordering::Acquire)
            || self.next_timeout.is_some_and(|t| t <= now)
            || (is_client && self.keys.is_some() && self.announcer.is_due(now))
            || self.addresses.iter().any(|a| a.challenge_due(now))
            || (!self.established && (is_client || now >= self.created + SERVER_HANDSHAKE_TIMEOUT))
            // Only the entry's own reference left: the application let go.
            || (self.established && Arc::strong_count(&self.handle.shared) <= 1)
    }

    /// `addresses`: one per path.
    fn new(handle: Handle, addresses: Vec<PathAddress>, keys: Option<PacketKeys>, now: Instant) -> Entry {
        let paths = addresses.len();
        Entry {
            handle,
            keys,
            replay: vec![ReplayWindow::default(); paths],
            hello_replay: vec![ReplayWindow::default(); paths],
            addresses,
            announcer: Announcer::new(paths, now),
            init: Vec::new(),
            response: Vec::new(),
            established: false,
            created: now,
            orphaned_at: None,
            closed: false,
            next_timeout: None,
            dirty: true,
        }
    }
}

pub(crate) struct Driver {
    epoch: tokio::time::Instant,
    sockets: Vec<PathSocket>,
    conns: HashMap<ConnectionId, Entry>,
    role: Role,
    wake: Arc<Notify>,
    out: Vec<u8>,
    sealed: Vec<u8>,
    opened: Vec<u8>,
    /// A connection had more to send than one batch: do not sleep.
    busy: bool,
    /// The kernel reported ICMP port unreachable (on a send or a receive).
    refused: bool,
    /// Server: ephemeral keys of the first messages accepted lately, so a replayed first
    /// message (accepted by the clock check for 120 s) creates nothing (PROTOCOL.md §13.3).
    seen_inits: HashMap<[u8; 32], Instant>,
    /// Server: what the operator reads (`braid server --metrics`), the limits' log lines and
    /// the handshake rate's bucket.
    counters: Arc<ServerCounters>,
    limit_log: LimitLog,
    handshakes: HandshakeBucket,
}

/// Most remembered first messages; beyond it (after forgetting the expired ones) new handshakes
/// wait (a flood of authenticated handshakes needs the key).
const SEEN_INITS_LIMIT: usize = 100_000;

/// A connection id for logs.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // Only the connection id comes from this; a failure falls back to the clock.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return t.as_nanos() as u64;
    }
    u64::from_le_bytes(b)
}

/// Says when a path's address went on probation (sent at most 3x what came from it until it
/// answers a challenge).
fn log_probation(address: &PathAddress, p: usize, from: SocketAddr) {
    if address.probation().is_some_and(|pr| pr.addr == from && pr.sent == 0) {
        tracing::debug!(
            "path {p}: challenging {from} before sending it more than {}x what it sent",
            braid_proto::session::AMPLIFICATION
        );
    }
}

impl Driver {
    fn new(sockets: Vec<PathSocket>, role: Role, wake: Arc<Notify>, counters: Arc<ServerCounters>) -> Driver {
        let rate = match &role {
            Role::Server { limits, .. } => limits.handshake_rate,
            Role::Client { .. } => 0,
        };
        Driver {
            epoch: tokio::time::Instant::now(),
            sockets,
            conns: HashMap::new(),
            role,
            wake,
            out: Vec::with_capacity(2048),
            sealed: Vec::with_capacity(2048),
            opened: Vec::with_capacity(2048),
            busy: false,
            refused: false,
            seen_inits: HashMap::new(),
            counters,
            limit_log: LimitLog::default(),
            handshakes: HandshakeBucket::new(rate, Instant::ZERO),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.epoch.elapsed().as_micros() as u64)
    }

    fn to_tokio(&self, t: Instant) -> tokio::time::Instant {
        self.epoch + Duration::from_micros(t.as_micros())
    }

    pub(crate) fn start_client(setup: ClientSetup) -> Result<Handle, Error> {
        let paths = setup.sockets.len();
        let sockets: Vec<PathSocket> = setup
            .sockets
            .into_iter()
            .enumerate()
            .map(|(i, udp)| -> Result<PathSocket, Error> {
                let em = setup.emulate.get(i).copied().flatten();
                Ok(PathSocket {
                    batch: Batcher::new(&udp)?,
                    udp,
                    egress: em.map(|e| EmulatedLink::new(e, random_u64() ^ (i as u64) << 1)),
                    ingress: em.map(|e| EmulatedLink::new(e, random_u64() ^ ((i as u64) << 1 | 1))),
                })
            })
            .collect::<Result<_, Error>>()?;
        let wake = Arc::new(Notify::new());
        let mut driver = Driver::new(
            sockets,
            Role::Client {
                server: setup.server,
                ready: Some(setup.ready),
                noise: None,
                deadline: Instant::ZERO + setup.handshake_timeout,
                timeout: setup.handshake_timeout,
            },
            wake.clone(),
            Arc::default(),
        );
        let now = driver.now();
        let mode = setup.transport.mode;
        let cc = setup.transport.cc;
        let scheduler = setup.transport.scheduler;
        let core = braid_proto::Connection::client(setup.transport, now, random_u64());
        // The Noise handshake is bound to the core's connection id; the core's Initial leaves
        // in the first drive after the Noise keys exist.
        let cid = core.cid();
        let hello = Hello {
            paths: paths as u8,
            mode: mode.name().to_string(),
            cc: cc.map(|c| c.name().to_string()).unwrap_or_default(),
            scheduler: scheduler.map(|k| k.name().to_string()).unwrap_or_default(),
        };
        let noise = ClientHandshake::with_auth(&setup.auth, cid, &hello);
        let pair = matches!(setup.auth, ClientAuth::Pair { .. });
        let handle = Handle::for_core(core, paths, setup.server, driver.epoch, wake);
        let entry = Entry::new(handle.clone(), vec![PathAddress::validated(setup.server); paths], None, now);
        for (i, p) in handle.lock().paths.iter_mut().enumerate() {
            p.local = driver.sockets[i].udp.local_addr().ok();
            p.remote = Some(setup.server);
        }
        driver.conns.insert(cid, entry);
        if let Role::Client { noise: n, .. } = &mut driver.role {
            *n = Some(Box::new(ClientNoise { noise, repeat: Repeater::new(now), refused: false, pair }));
        }
        tokio::spawn(driver.run());
        Ok(handle)
    }

    pub(crate) fn start_server(setup: ServerSetup) -> Result<(), Error> {
        let batch = Batcher::new(&setup.socket)?;
        // `--emulate` on the server: one link each way for everything the socket carries.
        let em = setup.emulate;
        let socket = PathSocket {
            udp: setup.socket,
            batch,
            egress: em.map(|e| EmulatedLink::new(e, random_u64())),
            ingress: em.map(|e| EmulatedLink::new(e, random_u64() ^ 1)),
        };
        let wake = Arc::new(Notify::new());
        let driver = Driver::new(
            vec![socket],
            Role::Server {
                auth: setup.auth,
                transport: setup.transport,
                limits: setup.limits,
                registry: setup.registry,
                incoming: setup.incoming,
            },
            wake,
            setup.counters,
        );
        tokio::spawn(driver.run());
        Ok(())
    }

    async fn run(mut self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut wakes = [0u64; 3];
        loop {
            let now = self.now();
            self.release_ingress(now);
            self.drive_all(now);
            self.release_egress(now);
            if self.finished() {
                tracing::debug!(
                    "driver stops; woken by datagrams {}, the application {}, timers {}",
                    wakes[0],
                    wakes[1],
                    wakes[2]
                );
                return;
            }
            let deadline = if self.busy { Some(now) } else { self.deadline() };
            tracing::trace!(target: "braid_runtime::loop", "now {} busy {} sleep {:?}", now.as_micros(), self.busy, deadline.map(|d| d.as_micros() as i64 - now.as_micros() as i64));
            let sleep_to = deadline.map_or(self.epoch + Duration::from_secs(3600 * 24), |d| self.to_tokio(d));
            let wake = self.wake.clone();
            let woke = {
                let sockets = &self.sockets;
                let buf = &mut buf;
                tokio::select! {
                    r = poll_fn(|cx| poll_recv_any(sockets, cx, buf)) => { wakes[0] += 1; Some(r) }
                    _ = wake.notified() => { wakes[1] += 1; None }
                    _ = tokio::time::sleep_until(sleep_to) => { wakes[2] += 1; None }
                }
            };
            if let Some((i, r)) = woke {
                let now = self.now();
                tracing::trace!(target: "braid_runtime::loop", "recv");
                self.on_recv(i, r, &buf, now);
                // Read what else is waiting before sending again.
                for _ in 0..RECV_BATCH {
                    let mut got = false;
                    for i in 0..self.sockets.len() {
                        let s = &self.sockets[i];
                        match s.batch.try_recv(&s.udp, &mut buf) {
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                            r => {
                                got = true;
                                self.on_recv(i, r, &buf, now);
                            }
                        }
                    }
                    if !got {
                        break;
                    }
                }
            }
        }
    }

    fn finished(&self) -> bool {
        match &self.role {
            // The emulated links still carry what was sent (a CLOSE among it).
            Role::Client { .. } => {
                self.conns.is_empty()
                    && self
                        .sockets
                        .iter()
                        .all(|s| s.egress.as_ref().is_none_or(|l| l.next_release().is_none()))
            }
            Role::Server { incoming, .. } => incoming.is_closed() && self.conns.is_empty(),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        for s in &self.sockets {
            for link in [&s.egress, &s.ingress].into_iter().flatten() {
                if let Some(t) = link.next_release() {
                    at(t);
                }
            }
        }
        if let Role::Client { noise, deadline, .. } = &self.role {
            if let Some(n) = noise {
                at(n.repeat.next());
            }
            at(*deadline);
        }
        for e in self.conns.values() {
            if e.keys.is_some() {
                if let Some(t) = e.next_timeout {
                    at(t);
                }
                if matches!(self.role, Role::Client { .. }) {
                    at(e.announcer.timeout());
                }
            }
            if let Some(o) = e.orphaned_at {
                at(o + LINGER);
            }
            if !e.established {
                at(e.created + SERVER_HANDSHAKE_TIMEOUT);
            }
        }
        next
    }

    fn on_recv(&mut self, i: usize, r: io::Result<Received>, buf: &[u8], now: Instant) {
        match r {
            Ok(got) => {
                // GRO: several datagrams of `stride` bytes (the last may be shorter).
                for data in buf[..got.len.min(buf.len())].chunks(got.stride) {
                    if let Some(link) = &mut self.sockets[i].ingress {
                        link.push(now, got.from, data);
                    } else {
                        self.on_datagram(i, data, got.from, now);
                    }
                }
            }
            Err(e) => self.on_socket_error(e),
        }
    }

    fn release_ingress(&mut self, now: Instant) {
        for i in 0..self.sockets.len() {
            while let Some((from, d)) = self.sockets[i].ingress.as_mut().and_then(|l| l.pop(now)) {
                self.on_datagram(i, &d, from, now);
            }
        }
    }

    fn release_egress(&mut self, now: Instant) {
        for s in &mut self.sockets {
            while let Some((to, d)) = s.egress.as_mut().and_then(|l| l.pop(now)) {
                let _ = s.batch.push(&s.udp, to, &d);
            }
        }
        self.flush_sends();
    }

    /// Sends every queued batch (before the driver sleeps).
    fn flush_sends(&mut self) {
        for s in &mut self.sockets {
            if let Err(e) = s.batch.flush(&s.udp) {
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    self.refused = true;
                }
                tracing::trace!("send: {e}");
            }
        }
    }

    fn on_socket_error(&mut self, e: io::Error) {
        if e.kind() == io::ErrorKind::ConnectionRefused {
            self.refused = true;
        }
        tracing::debug!("socket: {e}");
    }

    /// The client's connection attempt failed: report it and stop.
    fn fail_client(&mut self, error: Error) {
        if let Role::Client { ready, noise, .. } = &mut self.role {
            *noise = None;
            if let Some(r) = ready.take() {
                let _ = r.send(Err(error));
            }
        }
        for e in self.conns.values() {
            let mut s = e.handle.lock();
            s.ended.get_or_insert(Ended::Local);
        }
        self.conns.clear();
    }

    /// Sends on socket `i` (to `to` on the server; the client's sockets are connected).
    fn send_raw(&mut self, i: usize, to: SocketAddr, data: &[u8], now: Instant) {
        ServerCounters::add(&self.counters.datagrams_sent, 1);
        ServerCounters::add(&self.counters.bytes_sent, data.len() as u64);
        let s = &mut self.sockets[i];
        if let Some(link) = &mut s.egress {
            link.push(now, to, data);
            return;
        }
        if let Err(e) = s.batch.push(&s.udp, to, data) {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                self.refused = true;
            }
            // EMSGSIZE: larger than the interface MTU (a PMTU probe, PROTOCOL.md §14): the
            // datagram is lost, which is the probe's answer.
            tracing::trace!("send on socket {i}: {e}");
        }
    }

    fn on_datagram(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        ServerCounters::add(&self.counters.datagrams_received, 1);
        ServerCounters::add(&self.counters.bytes_received, data.len() as u64);
        match DatagramType::of(data) {
            Some(DatagramType::NoiseInit) => self.on_init(data, from, now),
            Some(DatagramType::NoiseResponse) => self.on_response(data, now),
            Some(DatagramType::Refused) => {
                if let Role::Client { noise: Some(n), .. } = &mut self.role {
                    if data.len() == 9
                        && self.conns.contains_key(&ConnectionId(data[1..9].try_into().expect("8")))
                    {
                        n.refused = true;
                    }
                }
            }
            Some(DatagramType::PathHello) => self.on_path_hello(i, data, from, now),
            Some(DatagramType::Packet(_)) => self.on_packet(i, data, from, now),
            None => tracing::trace!("dropped a datagram of unknown type from {from}"),
        }
    }

    fn on_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) {
        let Role::Server { auth, transport, limits, incoming, registry } = &self.role else { return };
        if incoming.is_closed() {
            return;
        }
        let Some(cid) = crypto::init_cid(data).filter(|_| crypto::is_init(data)) else { return };
        if let Some(e) = self.conns.get(&cid) {
            if e.init == data {
                // Our answer was lost: the same answer again (never more bytes than came in).
                let response = e.response.clone();
                self.send_raw(0, from, &response, now);
            }
            return;
        }
        if self.conns.len() >= limits.max_connections {
            self.limit_log.hit(&self.counters, Limit::MaxConnections, limits.max_connections as u64, now);
            return;
        }
        // Before any public-key work: a flood of first messages costs a lookup each.
        if !self.handshakes.take(now) {
            self.limit_log.hit(&self.counters, Limit::HandshakeRate, limits.handshake_rate.into(), now);
            return;
        }
        let Some(accepted) = crypto::server_accept_with(auth, data) else {
            ServerCounters::add(&self.counters.handshakes_failed, 1);
            // No state kept; a 9-byte hint so a client with the wrong key can say so.
            tracing::debug!(%from, "handshake did not authenticate (wrong key, unknown client or stale): refused");
            if let Some(r) = crypto::refusal(data) {
                self.send_raw(0, from, &r, now);
            }
            return;
        };
        let ephemeral: [u8; 32] = data[9..41].try_into().expect("a first message is 1200 bytes");
        if self.seen_inits.contains_key(&ephemeral) {
            ServerCounters::add(&self.counters.handshakes_replayed, 1);
            tracing::debug!(%from, "replayed handshake ignored");
            return;
        }
        if self.seen_inits.len() >= SEEN_INITS_LIMIT {
            let horizon = crypto::MAX_CLOCK_SKEW * 2;
            self.seen_inits.retain(|_, at| now.saturating_duration_since(*at) < horizon);
            if self.seen_inits.len() >= SEEN_INITS_LIMIT {
                tracing::warn!(%from, "too many handshakes lately: handshake ignored");
                return;
            }
        }
        self.seen_inits.insert(ephemeral, now);
        let mut config = transport.clone();
        config.paths = accepted.hello.paths;
        if !accepted.hello.mode.is_empty() {
            match accepted.hello.mode.parse::<Mode>() {
                Ok(m) => config.mode = m,
                Err(e) => {
                    tracing::warn!(%from, error = %e, using = config.mode.name(), "client's mode unknown")
                }
            }
        }
        if !accepted.hello.cc.is_empty() {
            match accepted.hello.cc.parse::<CcAlgorithm>() {
                Ok(c) => config.cc = Some(c),
                Err(e) => {
                    tracing::warn!(%from, error = %e, "client's congestion controller unknown; the mode's is used")
                }
            }
        }
        if !accepted.hello.scheduler.is_empty() {
            match accepted.hello.scheduler.parse::<SchedulerKind>() {
                Ok(k) => config.scheduler = Some(k),
                Err(e) => tracing::warn!(%from, error = %e, "client's scheduler unknown; the mode's is used"),
            }
        }
        let paths = usize::from(accepted.hello.paths);
        let core = braid_proto::Connection::server(config, now);
        let handle = Handle::for_core(core, paths, from, self.epoch, self.wake.clone());
        handle.lock().paths[0].remote = Some(from);
        // Path 0's address is validated by the handshake: the client's first core packet is
        // sealed with keys that need the answer sent to this address (RFC 9000 §8.1).
        let mut addresses = vec![PathAddress::default(); paths];
        addresses[0] = PathAddress::validated(from);
        let mut entry = Entry::new(handle, addresses, Some(accepted.keys), now);
        entry.init = data.to_vec();
        entry.response = accepted.response;
        let response = entry.response.clone();
        registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cid, (Arc::downgrade(&entry.handle.shared), self.wake.clone()));
        self.conns.insert(cid, entry);
        ServerCounters::add(&self.counters.handshakes_accepted, 1);
        tracing::debug!(
            cid = %hex(&cid.0),
            %from,
            paths,
            mode = %accepted.hello.mode,
            cc = %accepted.hello.cc,
            scheduler = %accepted.hello.scheduler,
            client_key = %accepted.client_key.as_ref().map_or_else(|| "psk".to_string(), |k| k.to_hex()),
            "handshake authenticated"
        );
        self.send_raw(0, from, &response, now);
    }

    fn on_response(&mut self, data: &[u8], now: Instant) {
        let Role::Client { noise: Some(n), .. } = &mut self.role else { return };
        let Some(keys) = n.noise.on_response(data) else {
            if n.noise.is_spent() {
                let Role::Client { server, .. } = self.role else { return };
                self.fail_client(Error::HandshakeFailed(server));
            }
            return;
        };
        let Role::Client { noise, .. } = &mut self.role else { return };
        *noise = None;
        let Some(entry) = self.conns.values_mut().next() else { return };
        entry.keys = Some(keys);
        entry.dirty = true;
        entry.announcer.start(now);
        tracing::debug!("Noise handshake done");
    }

    fn on_path_hello(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = crypto::hello_cid(data) else { return };
        let is_server = matches!(self.role, Role::Server { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some((path, counter)) = e.keys.as_ref().and_then(|k| k.open_hello(data)) else { return };
        let p = usize::from(path);
        if p >= e.replay.len() {
            return;
        }
        e.dirty = true;
        if counter & CHALLENGE_BIT != 0 {
            if is_server {
                if e.addresses[p].on_challenge_echo(from, counter, data.len()) {
                    tracing::debug!(cid = %hex(&cid.0), path = p, %from, "new address validated (challenge answered)");
                }
            } else {
                // A challenge from the server: echo it on the path it names (repeats are
                // harmless: the same sealed bytes again, only ever to the server).
                let echo = e.keys.as_ref().expect("checked").seal_hello(path, counter);
                let Some(to) = e.handle.lock().paths[p].remote else { return };
                self.send_raw(p, to, &echo, now);
            }
            return;
        }
        if !e.hello_replay[p].insert(counter) {
            return;
        }
        if is_server {
            e.addresses[p].on_announcement(from, data.len(), random_u64, now);
            log_probation(&e.addresses[p], p, from);
            e.handle.lock().paths[p].remote = Some(from);
            let echo = e.keys.as_ref().expect("checked").seal_hello(path, counter);
            tracing::debug!(cid = %hex(&cid.0), path, %from, "path announced");
            self.send_raw(0, from, &echo, now);
        } else if p == i {
            e.announcer.on_echo(p);
        }
    }

    fn on_packet(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = data.get(1..9).map(|b| ConnectionId(b.try_into().expect("8"))) else { return };
        let is_client = matches!(self.role, Role::Client { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        let Ok(header) = keys.open(data, &mut self.opened) else {
            tracing::trace!("dropped an unauthenticated packet from {from}");
            return;
        };
        let p = usize::from(header.path);
        if p >= e.replay.len() || (is_client && p != i) || !e.replay[p].insert(header.number) {
            return;
        }
        let mut s = e.handle.lock();
        if !is_client {
            let address = &mut e.addresses[p];
            let before = address.remote();
            if let Some(old) = address.on_packet(from, header.number, data.len(), random_u64, now) {
                tracing::info!(cid = %hex(&cid.0), path = p, %old, new = %from, "peer moved");
            }
            if address.remote() != before {
                log_probation(address, p, from);
                s.paths[p].remote = address.remote();
            }
        }
        s.paths[p].datagrams_received += 1;
        s.paths[p].bytes_received += data.len() as u64;
        s.core.handle_datagram(now, header.path, &self.opened);
        e.dirty = true;
    }

    /// Seals a core packet and sends it on its path.
    fn send_packet(&mut self, path: u8, packet: &[u8], now: Instant) {
        let Some(cid) = crypto::init_cid(packet) else { return };
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        if keys.seal(packet, &mut self.sealed).is_none() {
            return;
        }
        let p = usize::from(path);
        let Some(address) = e.addresses.get_mut(p) else { return };
        let Some(to) = address.remote() else { return };
        if !address.try_send(to, self.sealed.len()) {
            tracing::trace!("path {p}: {to} not validated yet; datagram held back (3x limit)");
            return;
        }
        let socket = if matches!(self.role, Role::Client { .. }) { p } else { 0 };
        let sealed = std::mem::take(&mut self.sealed);
        self.send_raw(socket, to, &sealed, now);
        self.sealed = sealed;
    }

    /// Sends the due challenges of a server connection's paths on probation (counted in the limit).
    fn send_challenges(&mut self, cid: ConnectionId, now: Instant) {
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        let mut out = Vec::new();
        for (p, address) in e.addresses.iter_mut().enumerate() {
            if let Some((to, token)) = address.poll_challenge(now, HELLO_LEN) {
                out.push((to, keys.seal_hello(p as u8, token)));
            }
        }
        for (to, c) in out {
            self.send_raw(0, to, &c, now);
        }
    }

    fn drive_all(&mut self, now: Instant) {
        self.busy = false;
        self.drive_client_handshake(now);
        let is_client = matches!(self.role, Role::Client { .. });
        let cids: Vec<ConnectionId> =
            self.conns.iter().filter(|(_, e)| e.wants_drive(now, is_client)).map(|(c, _)| *c).collect();
        for cid in cids {
            self.drive(cid, now);
        }
        let mut gone = Vec::new();
        self.conns.retain(|cid, e| {
            if e.closed {
                gone.push(*cid);
            }
            !e.closed
        });
        if let (false, Role::Server { registry, .. }) = (gone.is_empty(), &self.role) {
            let mut registry = registry.lock().unwrap_or_else(|e| e.into_inner());
            for cid in gone {
                registry.remove(&cid);
            }
        }
        self.flush_sends();
    }

    fn drive_client_handshake(&mut self, now: Instant) {
        let Role::Client { noise, deadline, server, timeout, .. } = &mut self.role else { return };
        if std::mem::take(&mut self.refused) && noise.is_some() {
            let server = *server;
            self.fail_client(Error::Refused(server));
            return;
        }
        let established = self.conns.values().next().is_some_and(|e| e.established);
        if !established && now >= *deadline && !self.conns.is_empty() {
            let error = if noise.as_ref().is_some_and(|n| n.refused && n.pair) {
                Error::NotAuthorized(*server)
            } else if noise.as_ref().is_some_and(|n| n.refused) {
                Error::WrongKey(*server)
            } else {
                Error::Unreachable { server: *server, after: *timeout }
            };
            self.fail_client(error);
            return;
        }
        let Some(n) = noise else { return };
        if !n.repeat.poll(now) {
            return;
        }
        let init = n.noise.init_datagram().to_vec();
        let server = *server;
        // An ICMP "port unreachable" shows up on a later send or read (`self.refused`).
        self.send_raw(0, server, &init, now);
    }

    fn drive(&mut self, cid: ConnectionId, now: Instant) {
        let is_client = matches!(self.role, Role::Client { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        e.dirty = false;
        e.handle.poked.store(false, std::sync::atomic::Ordering::Release);
        if !e.established && !is_client && now >= e.created + SERVER_HANDSHAKE_TIMEOUT {
            tracing::debug!(cid = %hex(&cid.0), "handshake never finished; forgotten");
            e.closed = true;
            return;
        }
        let Some(keys) = &e.keys else { return };
        // Client: announce every path until the server echoes it, and all again now and then
        // as the keep-alive that shows a NAT rebinding (PROTOCOL.md §13.6).
        let mut hellos = Vec::new();
        if is_client {
            let mut due = Vec::new();
            e.announcer.poll(now, &mut due);
            hellos.extend(due.into_iter().map(|(p, counter)| (usize::from(p), keys.seal_hello(p, counter))));
        }
        let handle = e.handle.clone();
        // The application's handles are gone: finish delivering, then close.
        // (Two references: the entry's and `handle`; a server's connection counts once handed out.)
        if e.established && Arc::strong_count(&handle.shared) <= 2 {
            let o = *e.orphaned_at.get_or_insert(now);
            let mut s = handle.lock();
            if !s.core.is_closed() && (s.core.is_idle() || now >= o + LINGER) {
                s.core.close(0, "");
            }
        }
        for (p, h) in hellos {
            let Some(to) = self.conns[&cid].handle.lock().paths[p].remote else { continue };
            self.send_raw(p, to, &h, now);
        }
        if !is_client {
            self.send_challenges(cid, now);
        }
        let mut sent = 0;
        let mut out = std::mem::take(&mut self.out);
        {
            let mut s = handle.lock();
            if s.core.poll_timeout().is_some_and(|t| t <= now) {
                s.core.handle_timeout(now);
            }
        }
        loop {
            let t = handle.lock().core.poll_transmit(now, &mut out);
            let Some(t) = t else { break };
            self.send_packet(t.path, &out[..t.size], now);
            sent += 1;
            if sent >= SEND_BATCH {
                self.busy = true;
                if let Some(e) = self.conns.get_mut(&cid) {
                    e.dirty = true;
                }
                break;
            }
        }
        self.out = out;
        self.handle_events(cid);
        if let Some(e) = self.conns.get_mut(&cid) {
            e.next_timeout = handle.lock().core.poll_timeout();
        }
    }

    fn handle_events(&mut self, cid: ConnectionId) {
        let now = self.now();
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let mut guard = e.handle.lock();
        let s = &mut *guard;
        let idle = Duration::from_millis(s.core.params().idle_timeout_ms);
        let mut connected = false;
        let mut ended = None;
        while let Some(ev) = s.core.poll_event() {
            match ev {
                Event::Connected => connected = true,
                Event::Stream(StreamEvent::Opened(id)) => {
                    s.incoming_streams.push_back(id);
                    if let Some(w) = s.accept_waker.take() {
                        w.wake();
                    }
                }
                Event::Stream(StreamEvent::Readable(id)) => {
                    if let Some(w) = s.readers.remove(&id) {
                        w.wake();
                    }
                }
                Event::Closed(reason) => {
                    if let CloseReason::Violation(why) = &reason {
                        ServerCounters::add(&self.counters.connections_violated, 1);
                        if let (Some(limit), Role::Server { limits, .. }) =
                            (Limit::from_violation(why), &self.role)
                        {
                            let value = match limit {
                                Limit::MaxStreams => limits.max_streams,
                                _ => limits.connection_memory,
                            };
                            self.limit_log.hit(&self.counters, limit, value, now);
                        }
                    }
                    ServerCounters::add(&self.counters.connections_closed, 1);
                    ended = Some(Ended::from_close(&reason, idle));
                }
                Event::PathFailed(path) => {
                    tracing::info!(path, "path failed: no answer; its data goes on the others")
                }
                Event::PathRecovered(path) => tracing::info!(path, "path answers again"),
                Event::PathRemoved(path) => tracing::info!(path, "path removed"),
            }
        }
        if let Some(streams) = s.core.streams() {
            let ready: Vec<u64> = s
                .writers
                .keys()
                .copied()
                .filter(|id| streams.send_buffered(*id) < STREAM_SEND_BUFFER)
                .collect();
            for id in ready {
                if let Some(w) = s.writers.remove(&id) {
                    w.wake();
                }
            }
        }
        for w in s.idle_wakers.drain(..) {
            w.wake();
        }
        if s.core.has_datagrams() || ended.is_some() {
            if let Some(w) = s.datagram_waker.take() {
                w.wake();
            }
        }
        let mut emulated = Vec::new();
        if matches!(self.role, Role::Client { .. }) {
            for sock in &self.sockets {
                emulated.push(
                    sock.egress.as_ref().map_or(0, |l| l.dropped_random + l.dropped_queue + l.dropped_mtu)
                        + sock
                            .ingress
                            .as_ref()
                            .map_or(0, |l| l.dropped_random + l.dropped_queue + l.dropped_mtu),
                );
            }
        }
        for (p, d) in emulated.into_iter().enumerate() {
            if let Some(r) = s.paths.get_mut(p) {
                r.emulated_drops = d;
            }
        }
        if let Some(reason) = &ended {
            if s.ended.is_none() {
                s.ended = Some(reason.clone());
            }
            for (_, w) in s.readers.drain().chain(s.writers.drain()) {
                w.wake();
            }
            if let Some(w) = s.accept_waker.take() {
                w.wake();
            }
        }
        let peer = s.paths[0].remote.map_or_else(|| "?".to_string(), |a| a.to_string());
        drop(guard);
        if ended.is_some() || e.handle.lock().core.is_closed() {
            e.closed = true;
        }
        if connected {
            e.established = true;
            let handle = e.handle.clone();
            match &mut self.role {
                Role::Client { ready, .. } => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(Ok(()));
                    }
                }
                Role::Server { incoming, .. } => {
                    tracing::info!(%peer, paths = e.replay.len(), "accepted a connection");
                    let _ = incoming.send(Connection { handle });
                }
            }
        }
        if let Some(reason) = ended {
            let s = e.handle.lock();
            tracing::debug!(
                %peer,
                reason = ?reason,
                paths = ?s.core.path_stats(),
                stats = ?s.core.stats,
                "connection ended"
            );
            drop(s);
            if let Role::Client { ready, .. } = &mut self.role {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(reason.error()));
                }
            }
        }
    }
}

/// Polls every socket for a datagram; returns the first ready (socket index and result).
fn poll_recv_any(
    sockets: &[PathSocket],
    cx: &mut std::task::Context<'_>,
    buf: &mut [u8],
) -> Poll<(usize, io::Result<Received>)> {
    for (i, s) in sockets.iter().enumerate() {
        if let Poll::Ready(r) = s.batch.poll_recv(&s.udp, cx, buf) {
            return Poll::Ready((i, r));
        }
    }
    Poll::Pending
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server entry with a fresh core, as `on_init` makes one (no keys needed here).
    fn entry(now: Instant) -> Entry {
        let core = braid_proto::Connection::server(ConnectionConfig::default(), now);
        let handle = Handle::for_core(
            core,
            1,
            "127.0.0.1:9".parse().unwrap(),
            tokio::time::Instant::now(),
            Arc::new(Notify::new()),
        );
        Entry::new(handle, vec![PathAddress::default()], None, now)
    }

    /// The server drives a connection only when something asks for it: input, the application,
    /// or a timer that has expired; an idle connection is left alone.
    #[test]
    fn only_connections_with_something_to_do_are_driven() {
        let t0 = Instant::from_micros(1_000_000);
        let mut e = entry(t0);
        assert!(e.wants_drive(t0, false), "a new entry has its first datagram to handle");
        e.dirty = false;
        e.established = true;
        let app = e.handle.clone(); // the application's handle (not orphaned)
        let later = t0 + Duration::from_secs(20);
        assert!(!e.wants_drive(later, false), "nothing arrived, nothing due");
        app.poke();
        assert!(e.wants_drive(later, false), "the application wrote");
        e.handle.poked.store(false, std::sync::atomic::Ordering::Release);
        e.next_timeout = Some(later);
        assert!(!e.wants_drive(later - Duration::from_micros(1), false), "timer not yet due");
        assert!(e.wants_drive(later, false), "timer due");
        e.next_timeout = None;
        e.addresses[0] = PathAddress::validated("127.0.0.1:9".parse().unwrap());
        e.addresses[0].on_packet("127.0.0.1:10".parse().unwrap(), 1, 100, || 0, later);
        assert!(e.wants_drive(later, false), "a challenge is due");
        e.addresses[0].poll_challenge(later, HELLO_LEN);
        assert!(!e.wants_drive(later, false), "the challenge went out");
        drop(app);
        assert!(e.wants_drive(later, false), "orphaned: drive it to its close");
        // Before the core handshake completes: only its timeout or input.
        let mut fresh = entry(t0);
        fresh.dirty = false;
        assert!(!fresh.wants_drive(t0 + Duration::from_secs(1), false));
        assert!(fresh.wants_drive(t0 + SERVER_HANDSHAKE_TIMEOUT, false));
    }
}
