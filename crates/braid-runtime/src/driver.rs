//! The driver task: owns the sockets, feeds datagrams and timeouts to each core connection,
//! sends what the cores produce, and wakes the application's tasks. One task per endpoint.
//!
//! Time: the core's `Instant` is microseconds since the driver started (`epoch`), read from
//! tokio's clock; the core itself never reads a clock.

use std::collections::HashMap;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::streams::StreamEvent;
use braid_proto::wire::ConnectionId;
use braid_proto::{CloseReason, ConnectionConfig, Event, Instant};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::crypto::{self, ClientHandshake, Hello, Key, PacketKeys, ReplayWindow};
use crate::emulate::{EmulatedLink, Emulation};
use crate::endpoint::{Connection, Ended, Handle, PathReport, Shared, STREAM_SEND_BUFFER};
use crate::gso::{Batcher, Received, RECV_BUFFER};
use crate::Error;

/// Datagrams sent per connection per round before the driver reads its sockets again.
const SEND_BATCH: usize = 256;
/// Datagrams read per round before the driver sends again.
const RECV_BATCH: usize = 256;
/// A server forgets a connection whose core handshake has not finished after this long.
const SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Once the application dropped every handle, undelivered data gets this long before closing.
const LINGER: Duration = Duration::from_secs(3);
/// Path announcements are repeated this often until the server echoes them.
const HELLO_INTERVAL: Duration = Duration::from_millis(250);

pub(crate) struct ClientSetup {
    pub key: Key,
    pub transport: ConnectionConfig,
    pub sockets: Vec<UdpSocket>,
    pub emulate: Vec<Option<Emulation>>,
    pub server: SocketAddr,
    pub handshake_timeout: Duration,
    pub ready: oneshot::Sender<Result<(), Error>>,
}

pub(crate) struct ServerSetup {
    pub key: Key,
    pub transport: ConnectionConfig,
    pub socket: UdpSocket,
    pub max_connections: usize,
    pub incoming: mpsc::UnboundedSender<Connection>,
}

struct PathSocket {
    udp: UdpSocket,
    batch: Batcher,
    /// Emulated impairment (client only): datagrams leaving / arriving on this path.
    egress: Option<EmulatedLink>,
    ingress: Option<EmulatedLink>,
}

/// The client's side of the Noise handshake, until it completes.
struct ClientNoise {
    noise: ClientHandshake,
    next_send: Instant,
    attempts: u32,
    /// The server sent a refusal hint (unauthenticated: only changes the error message).
    refused: bool,
}

enum Role {
    Client {
        server: SocketAddr,
        ready: Option<oneshot::Sender<Result<(), Error>>>,
        noise: Option<Box<ClientNoise>>,
        deadline: Instant,
        timeout: Duration,
        /// The core's first datagram, taken to learn the connection id, sent once keys exist.
        first: Option<(u8, Vec<u8>)>,
    },
    Server {
        key: Key,
        transport: ConnectionConfig,
        max_connections: usize,
        incoming: mpsc::UnboundedSender<Connection>,
    },
}

/// Driver-private state of one connection.
struct Entry {
    handle: Handle,
    keys: Option<PacketKeys>,
    replay: Vec<ReplayWindow>,
    hello_replay: Vec<ReplayWindow>,
    /// Highest packet number received per path (the address of the newest packet wins: NAT
    /// rebinding keeps the connection).
    top: Vec<Option<u64>>,
    remotes: Vec<Option<SocketAddr>>,
    hello_acked: Vec<bool>,
    hello_next: Instant,
    hello_counter: u64,
    /// Server: the client's first message and our answer, to repeat if it comes again.
    init: Vec<u8>,
    response: Vec<u8>,
    established: bool,
    created: Instant,
    orphaned_at: Option<Instant>,
    closed: bool,
    /// The core's `poll_timeout` after the last drive (asking it is not free).
    next_timeout: Option<Instant>,
}

impl Entry {
    fn new(handle: Handle, paths: usize, keys: Option<PacketKeys>, now: Instant) -> Entry {
        Entry {
            handle,
            keys,
            replay: vec![ReplayWindow::default(); paths],
            hello_replay: vec![ReplayWindow::default(); paths],
            top: vec![None; paths],
            remotes: vec![None; paths],
            hello_acked: vec![false; paths],
            hello_next: now,
            hello_counter: 0,
            init: Vec::new(),
            response: Vec::new(),
            established: false,
            created: now,
            orphaned_at: None,
            closed: false,
            next_timeout: None,
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
}

/// Most remembered first messages; beyond it (after forgetting the expired ones) new handshakes
/// wait (a flood of authenticated handshakes needs the key).
const SEEN_INITS_LIMIT: usize = 100_000;

fn shared(core: braid_proto::Connection, paths: usize, peer: SocketAddr) -> Arc<Mutex<Shared>> {
    Arc::new(Mutex::new(Shared {
        core,
        ended: None,
        readers: HashMap::new(),
        writers: HashMap::new(),
        incoming_streams: Default::default(),
        accept_waker: None,
        idle_wakers: Vec::new(),
        paths: (0..paths).map(|i| PathReport { id: i as u8, ..PathReport::default() }).collect(),
        peer,
    }))
}

fn ended_from(reason: &CloseReason, idle: Duration) -> Ended {
    match reason {
        CloseReason::Local { .. } => Ended::Local,
        CloseReason::Peer { code, reason } => Ended::Peer { code: *code, reason: reason.clone() },
        CloseReason::Violation(v) => Ended::Violation(v.clone()),
        CloseReason::IdleTimeout => Ended::TimedOut(idle),
    }
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

impl Driver {
    fn new(sockets: Vec<PathSocket>, role: Role, wake: Arc<Notify>) -> Driver {
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
                first: None,
            },
            wake.clone(),
        );
        let now = driver.now();
        let mode = setup.transport.mode;
        let cc = setup.transport.cc;
        let mut core = braid_proto::Connection::client(setup.transport, now, random_u64());
        // The core's first datagram names the connection id the Noise handshake is bound to.
        let mut first = Vec::new();
        let t = core
            .poll_transmit(now, &mut first)
            .ok_or_else(|| Error::Closed("the core sent no Initial".into()))?;
        let cid = crypto::init_cid(&first).ok_or_else(|| Error::Closed("bad Initial".into()))?;
        first.truncate(t.size);
        let hello = Hello {
            paths: paths as u8,
            mode: mode.name().to_string(),
            cc: cc.map(|c| c.name().to_string()).unwrap_or_default(),
        };
        let noise = ClientHandshake::new(&setup.key, cid, &hello);
        let handle = Handle { shared: shared(core, paths, setup.server), wake };
        let mut entry = Entry::new(handle.clone(), paths, None, now);
        for (i, p) in handle.lock().paths.iter_mut().enumerate() {
            p.local = driver.sockets[i].udp.local_addr().ok();
            p.remote = Some(setup.server);
        }
        entry.remotes = vec![Some(setup.server); paths];
        driver.conns.insert(cid, entry);
        if let Role::Client { noise: n, first: f, .. } = &mut driver.role {
            *n = Some(Box::new(ClientNoise { noise, next_send: now, attempts: 0, refused: false }));
            *f = Some((t.path, first));
        }
        tokio::spawn(driver.run());
        Ok(handle)
    }

    pub(crate) fn start_server(setup: ServerSetup) -> Result<(), Error> {
        let batch = Batcher::new(&setup.socket)?;
        let socket = PathSocket { udp: setup.socket, batch, egress: None, ingress: None };
        let wake = Arc::new(Notify::new());
        let driver = Driver::new(
            vec![socket],
            Role::Server {
                key: setup.key,
                transport: setup.transport,
                max_connections: setup.max_connections,
                incoming: setup.incoming,
            },
            wake,
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
                at(n.next_send);
            }
            at(*deadline);
        }
        for e in self.conns.values() {
            if e.keys.is_some() {
                if let Some(t) = e.next_timeout {
                    at(t);
                }
                if matches!(self.role, Role::Client { .. }) && e.hello_acked.iter().any(|a| !a) {
                    at(e.hello_next);
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
                        // Client only: the socket is connected, the source is the server.
                        link.push(now, data);
                    } else {
                        self.on_datagram(i, data, got.from, now);
                    }
                }
            }
            Err(e) => self.on_socket_error(e),
        }
    }

    fn release_ingress(&mut self, now: Instant) {
        let Role::Client { server, .. } = &self.role else { return };
        let server = *server;
        for i in 0..self.sockets.len() {
            while let Some(d) = self.sockets[i].ingress.as_mut().and_then(|l| l.pop(now)) {
                self.on_datagram(i, &d, server, now);
            }
        }
    }

    fn release_egress(&mut self, now: Instant) {
        let server = match &self.role {
            Role::Client { server, .. } => Some(*server),
            Role::Server { .. } => None,
        };
        for s in &mut self.sockets {
            if let Some(to) = server {
                while let Some(d) = s.egress.as_mut().and_then(|l| l.pop(now)) {
                    let _ = s.batch.push(&s.udp, to, &d);
                }
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
        let s = &mut self.sockets[i];
        if let Some(link) = &mut s.egress {
            link.push(now, data);
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
        let Some(&first) = data.first() else { return };
        match first {
            crypto::NOISE_INIT => self.on_init(data, from, now),
            crypto::NOISE_RESPONSE => self.on_response(data, now),
            crypto::REFUSED => {
                if let Role::Client { noise: Some(n), .. } = &mut self.role {
                    if data.len() == 9
                        && self.conns.contains_key(&ConnectionId(data[1..9].try_into().expect("8")))
                    {
                        n.refused = true;
                    }
                }
            }
            crypto::PATH_HELLO => self.on_path_hello(i, data, from, now),
            0x20..=0x22 => self.on_packet(i, data, from, now),
            _ => tracing::trace!("dropped a datagram of unknown type {first:#x} from {from}"),
        }
    }

    fn on_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) {
        let Role::Server { key, transport, max_connections, incoming } = &self.role else { return };
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
        if self.conns.len() >= *max_connections {
            tracing::warn!("connection limit ({max_connections}) reached: handshake from {from} ignored");
            return;
        }
        let Some(accepted) = crypto::server_accept(key, data) else {
            // No state kept; a 9-byte hint so a client with the wrong key can say so.
            tracing::debug!("handshake from {from} did not authenticate (wrong key or stale); refused");
            if let Some(r) = crypto::refusal(data) {
                self.send_raw(0, from, &r, now);
            }
            return;
        };
        let ephemeral: [u8; 32] = data[9..41].try_into().expect("a first message is 1200 bytes");
        if self.seen_inits.contains_key(&ephemeral) {
            tracing::debug!("replayed handshake from {from} ignored");
            return;
        }
        if self.seen_inits.len() >= SEEN_INITS_LIMIT {
            let horizon = crypto::MAX_CLOCK_SKEW * 2;
            self.seen_inits.retain(|_, at| now.saturating_duration_since(*at) < horizon);
            if self.seen_inits.len() >= SEEN_INITS_LIMIT {
                tracing::warn!("too many handshakes lately: handshake from {from} ignored");
                return;
            }
        }
        self.seen_inits.insert(ephemeral, now);
        let mut config = transport.clone();
        config.paths = accepted.hello.paths;
        if !accepted.hello.mode.is_empty() {
            match accepted.hello.mode.parse::<Mode>() {
                Ok(m) => config.mode = m,
                Err(e) => tracing::warn!("client {from}: {e}; using {}", config.mode.name()),
            }
        }
        if !accepted.hello.cc.is_empty() {
            match accepted.hello.cc.parse::<CcAlgorithm>() {
                Ok(c) => config.cc = Some(c),
                Err(e) => tracing::warn!("client {from}: {e}; using the mode's"),
            }
        }
        let paths = usize::from(accepted.hello.paths);
        let core = braid_proto::Connection::server(config, now);
        let handle = Handle { shared: shared(core, paths, from), wake: self.wake.clone() };
        handle.lock().paths[0].remote = Some(from);
        let mut entry = Entry::new(handle, paths, Some(accepted.keys), now);
        entry.remotes[0] = Some(from);
        entry.init = data.to_vec();
        entry.response = accepted.response;
        let response = entry.response.clone();
        self.conns.insert(cid, entry);
        tracing::debug!("handshake from {from} authenticated ({paths} paths, mode {})", accepted.hello.mode);
        self.send_raw(0, from, &response, now);
    }

    fn on_response(&mut self, data: &[u8], now: Instant) {
        let Role::Client { noise: Some(n), first, .. } = &mut self.role else { return };
        let Some(keys) = n.noise.on_response(data) else {
            if n.noise.is_spent() {
                let Role::Client { server, .. } = self.role else { return };
                self.fail_client(Error::HandshakeFailed(server));
            }
            return;
        };
        let first = first.take();
        let Role::Client { noise, .. } = &mut self.role else { return };
        *noise = None;
        let Some(entry) = self.conns.values_mut().next() else { return };
        entry.keys = Some(keys);
        entry.hello_next = now;
        tracing::debug!("Noise handshake done");
        if let Some((path, first)) = first {
            self.send_packet(path, &first, now);
        }
    }

    fn on_path_hello(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = crypto::hello_cid(data) else { return };
        let is_server = matches!(self.role, Role::Server { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some((path, counter)) = e.keys.as_ref().and_then(|k| k.open_hello(data)) else { return };
        let p = usize::from(path);
        if p >= e.remotes.len() || !e.hello_replay[p].insert(counter) {
            return;
        }
        if is_server {
            e.remotes[p] = Some(from);
            e.handle.lock().paths[p].remote = Some(from);
            let echo = e.keys.as_ref().expect("checked").seal_hello(path, counter);
            tracing::debug!("path {path} of {} is at {from}", e.handle.lock().peer);
            self.send_raw(0, from, &echo, now);
        } else if p == i {
            e.hello_acked[p] = true;
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
        let newest = e.top[p].is_none_or(|t| header.number > t);
        if !is_client && newest && e.remotes[p] != Some(from) {
            if let Some(old) = e.remotes[p] {
                tracing::info!("path {p}: peer moved from {old} to {from}");
            }
            e.remotes[p] = Some(from);
            s.paths[p].remote = Some(from);
            if p == 0 {
                s.peer = from;
            }
        }
        e.top[p] = Some(e.top[p].map_or(header.number, |t| t.max(header.number)));
        s.paths[p].datagrams_received += 1;
        s.paths[p].bytes_received += data.len() as u64;
        s.core.handle_datagram(now, header.path, &self.opened);
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
        let Some(to) = e.remotes.get(p).copied().flatten() else { return };
        {
            let mut s = e.handle.lock();
            s.paths[p].datagrams_sent += 1;
            s.paths[p].bytes_sent += self.sealed.len() as u64;
        }
        let socket = if matches!(self.role, Role::Client { .. }) { p } else { 0 };
        let sealed = std::mem::take(&mut self.sealed);
        self.send_raw(socket, to, &sealed, now);
        self.sealed = sealed;
    }

    fn drive_all(&mut self, now: Instant) {
        self.busy = false;
        self.drive_client_handshake(now);
        let cids: Vec<ConnectionId> = self.conns.keys().copied().collect();
        for cid in cids {
            self.drive(cid, now);
        }
        self.conns.retain(|_, e| !e.closed);
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
            let error = if noise.as_ref().is_some_and(|n| n.refused) {
                Error::WrongKey(*server)
            } else {
                Error::Unreachable { server: *server, after: *timeout }
            };
            self.fail_client(error);
            return;
        }
        let Some(n) = noise else { return };
        if now < n.next_send {
            return;
        }
        n.attempts += 1;
        n.next_send = now + Duration::from_millis(50 << n.attempts.min(5)).min(Duration::from_secs(1));
        let init = n.noise.init_datagram().to_vec();
        let server = *server;
        // An ICMP "port unreachable" shows up on a later send or read (`self.refused`).
        self.send_raw(0, server, &init, now);
    }

    fn drive(&mut self, cid: ConnectionId, now: Instant) {
        let is_client = matches!(self.role, Role::Client { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        if !e.established && !is_client && now >= e.created + SERVER_HANDSHAKE_TIMEOUT {
            tracing::debug!("handshake from {} never finished; forgotten", e.handle.lock().peer);
            e.closed = true;
            return;
        }
        let Some(keys) = &e.keys else { return };
        // Client: announce every path until the server echoes it (PROTOCOL.md §13.5).
        let mut hellos = Vec::new();
        if is_client && now >= e.hello_next && e.hello_acked.iter().any(|a| !a) {
            for (p, acked) in e.hello_acked.iter().enumerate() {
                if !acked {
                    hellos.push((p, keys.seal_hello(p as u8, e.hello_counter)));
                    e.hello_counter += 1;
                }
            }
            e.hello_next = now + HELLO_INTERVAL;
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
            let to = self.conns[&cid].remotes[p].expect("client knows the server");
            self.send_raw(p, to, &h, now);
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
                Event::Closed(reason) => ended = Some(ended_from(&reason, idle)),
                Event::PathFailed(path) => {
                    tracing::info!("path {path} failed: no answer; its data goes on the others")
                }
                Event::PathRecovered(path) => tracing::info!("path {path} answers again"),
                Event::PathRemoved(path) => tracing::info!("path {path} removed"),
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
        let peer = s.peer;
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
                    tracing::info!("accepted a connection from {peer} ({} paths)", e.replay.len());
                    let _ = incoming.send(Connection { handle });
                }
            }
        }
        if let Some(reason) = ended {
            let s = e.handle.lock();
            tracing::debug!(
                "connection with {peer} ended: {:?}; paths {:?}; {:?}",
                reason,
                s.core.path_stats(),
                s.core.stats
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
