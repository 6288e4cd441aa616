//! The driver task: owns the sockets, feeds datagrams and timeouts to each core connection,
//! sends what the cores produce, and wakes the application's tasks. One task per endpoint.
//!
//! Time: the core's `Instant` is microseconds since the driver started (`epoch`), read from
//! tokio's clock; the core itself never reads a clock.
//!
//! Here: the sockets, the loop and its deadline, the `--emulate` links; a server hands every
//! datagram to its [`Listener`](braid_proto::session::Listener), which decides admission (the
//! connection cap, the handshake rate, authentication, replays) and routes the rest by
//! connection id. `handshake.rs`: what the listener decided, turned into connections, counters
//! and logs, and the client's failure; `session.rs`: a connection's datagrams in and out
//! through its security layer; `drive.rs`: one round over the connections and their events;
//! `entry.rs`: a connection's driver-side state. The security layer itself (handshake repeats,
//! sealing, replay, address validation, announcements) is
//! [`braid_proto::session::Session`], with Noise as its crypto (the linger of a connection the
//! application let go of and a handshake's end on ICMP port unreachable are its rules too); a
//! closed connection's closing period (its CLOSE repeated and answered) is
//! [`braid_proto::session::Closing`].

use std::collections::HashMap;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use braid_proto::session::{Closing, Listener, ListenerConfig, Session};
use braid_proto::wire::{ConnectionId, DatagramType};
use braid_proto::{ConnectionConfig, Instant};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::connection::Connection;
use crate::crypto::{ClientAuth, ClientHandshake, Hello, ServerAuth, MAX_CLOCK_SKEW};
use crate::emulate::{EmulatedLink, Emulation};
use crate::gso::{Batcher, Received, RECV_BUFFER};
use crate::limits::{LimitLog, Limits, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{Handle, Registry};
use crate::Error;

mod drive;
mod entry;
mod handshake;
#[cfg(test)]
pub(crate) mod seam;
mod session;

use entry::Entry;

/// Datagrams sent per connection per round before the driver reads its sockets again.
const SEND_BATCH: usize = 256;
/// Datagrams read per round before the driver sends again.
const RECV_BATCH: usize = 256;

pub(crate) struct ClientSetup {
    pub auth: ClientAuth,
    pub transport: ConnectionConfig,
    pub sockets: Vec<UdpSocket>,
    pub emulate: Vec<Option<Emulation>>,
    pub server: SocketAddr,
    pub handshake_timeout: Duration,
    pub ready: oneshot::Sender<Result<(), Error>>,
    /// Write a qlog file into this directory.
    pub qlog: Option<std::path::PathBuf>,
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
    /// Write a qlog file per connection into this directory.
    pub qlog: Option<std::path::PathBuf>,
}

struct PathSocket {
    udp: UdpSocket,
    batch: Batcher,
    /// Emulated impairment: datagrams leaving / arriving on this path (the server's: on its socket).
    egress: Option<EmulatedLink>,
    ingress: Option<EmulatedLink>,
}

// One per driver, built once and never moved on a hot path: boxing the server's fields would
// only add an indirection.
#[allow(clippy::large_enum_variant)]
enum Role {
    Client {
        server: SocketAddr,
        ready: Option<oneshot::Sender<Result<(), Error>>>,
        timeout: Duration,
        /// Key pairs (a refusal then names --server-key and --authorized).
        pair: bool,
    },
    Server {
        /// Admission and routing: the Noise credentials, the cap, the rate, the replays.
        listener: Listener<ServerAuth>,
        limits: Limits,
        registry: Registry,
        incoming: mpsc::UnboundedSender<Connection>,
        qlog: Option<std::path::PathBuf>,
    },
}

pub(crate) struct Driver {
    epoch: tokio::time::Instant,
    sockets: Vec<PathSocket>,
    conns: HashMap<ConnectionId, Entry>,
    role: Role,
    wake: Arc<Notify>,
    out: Vec<u8>,
    /// A connection had more to send than one batch: do not sleep.
    busy: bool,
    /// The kernel reported ICMP port unreachable (on a send or a receive).
    refused: bool,
    /// Server: what the operator reads (`braid server --metrics`) and the limits' log lines.
    counters: Arc<ServerCounters>,
    limit_log: LimitLog,
    /// Connections this end closed, reduced to their sealed CLOSE for the closing period
    /// ([`Closing`]: its repeats and answers); not among `conns`, so not counted against
    /// `max_connections`.
    closing: Closing,
}

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

impl Driver {
    fn new(sockets: Vec<PathSocket>, role: Role, wake: Arc<Notify>, counters: Arc<ServerCounters>) -> Driver {
        let closing = match &role {
            Role::Server { limits, .. } => limits.max_connections,
            Role::Client { .. } => 1,
        };
        Driver {
            epoch: tokio::time::Instant::now(),
            sockets,
            conns: HashMap::new(),
            role,
            wake,
            out: Vec::with_capacity(2048),
            busy: false,
            refused: false,
            counters,
            limit_log: LimitLog::default(),
            closing: Closing::new(closing),
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
                timeout: setup.handshake_timeout,
                pair: matches!(setup.auth, ClientAuth::Pair { .. }),
            },
            wake.clone(),
            Arc::default(),
        );
        let now = driver.now();
        let hello = Hello::asking(&setup.transport, paths as u8);
        let mut core = braid_proto::Connection::client(setup.transport, now, random_u64());
        if setup.qlog.is_some() {
            core.enable_trace();
        }
        // The Noise handshake is bound to the core's connection id; the core's Initial leaves
        // in the first drive after the Noise keys exist.
        let cid = core.cid();
        let noise = ClientHandshake::with_auth(&setup.auth, cid, &hello);
        let session = Session::client(
            Box::new(noise),
            paths,
            setup.server,
            setup.handshake_timeout,
            session::random(),
            now,
        );
        let handle = Handle::for_core(core, paths, setup.server, driver.epoch, wake);
        let mut entry = Entry::new(handle.clone(), session);
        for (i, p) in handle.lock().paths.iter_mut().enumerate() {
            p.local = driver.sockets[i].udp.local_addr().ok();
            p.remote = Some(setup.server);
        }
        if let Some(dir) = &setup.qlog {
            entry.qlog = QlogWriter::open(dir, cid, false, now, &handle.lock().paths);
        }
        driver.conns.insert(cid, entry);
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
        let config = ListenerConfig {
            max_connections: setup.limits.max_connections,
            handshake_rate: setup.limits.handshake_rate,
            // A first message passes the clock check for 120 s either way.
            replay_horizon: MAX_CLOCK_SKEW * 2,
            // The half-open expiry (10 s) and the memory of first messages (100,000).
            ..ListenerConfig::default()
        };
        // The driver's clock starts at zero, with the handshake rate's bucket full.
        let listener =
            Listener::new(setup.auth, config, setup.transport, Box::new(session::random), Instant::ZERO);
        let wake = Arc::new(Notify::new());
        let driver = Driver::new(
            vec![socket],
            Role::Server {
                listener,
                limits: setup.limits,
                registry: setup.registry,
                incoming: setup.incoming,
                qlog: setup.qlog,
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
                    && self.closing.is_empty()
                    && self
                        .sockets
                        .iter()
                        .all(|s| s.egress.as_ref().is_none_or(|l| l.next_release().is_none()))
            }
            Role::Server { incoming, .. } => {
                incoming.is_closed() && self.conns.is_empty() && self.closing.is_empty()
            }
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
        if let Some(t) = self.closing.poll_timeout() {
            at(t);
        }
        for e in self.conns.values() {
            if let Some(t) = e.next_timeout {
                at(t);
            }
        }
        // A half-open connection's expiry.
        if let Some(t) = self.listener().and_then(Listener::poll_timeout) {
            at(t);
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

    /// The socket a datagram of path `path` leaves on: the client's for that path, the
    /// server's one.
    fn socket_of(&self, path: u8) -> usize {
        match self.role {
            Role::Client { .. } => usize::from(path),
            Role::Server { .. } => 0,
        }
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
        if matches!(self.role, Role::Server { .. }) {
            return self.on_server_datagram(data, from, now);
        }
        match DatagramType::of(data) {
            Some(_) => self.on_connection_datagram(i, data, from, now),
            None => tracing::trace!("dropped a datagram of unknown type from {from}"),
        }
    }

    /// Server: the listener (admission and routing).
    fn listener(&self) -> Option<&Listener<ServerAuth>> {
        match &self.role {
            Role::Server { listener, .. } => Some(listener),
            Role::Client { .. } => None,
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
