//! The driver task: owns the sockets, the timer and the `--emulate` links, and wakes the
//! application's tasks. One task per endpoint.
//!
//! Time: the core's `Instant` is microseconds since the driver started (`epoch`), read from
//! tokio's clock; nothing below the driver reads a clock.
//!
//! The protocol's decisions are braid-proto's [`Sessions`] table: where a datagram goes (a
//! server's through its [`Listener`](braid_proto::session::Listener): the connection cap, the
//! handshake rate, authentication, replays), which connections a round drives, each
//! connection's security layer ([`braid_proto::session::Session`], with Noise as its crypto:
//! handshake repeats, sealing, replay, address validation, announcements, the linger), and a
//! closed connection's closing period. Here: the sockets, the loop and its deadline; `host.rs`:
//! the table's hooks (datagrams out, new connections' handles, the application's wake-ups,
//! counters and logs); `conn.rs`: how a connection's core is kept (beside the application's
//! state, behind its lock).

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use braid_proto::session::{Listener, ListenerConfig, Session, Sessions};
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

mod conn;
mod host;
#[cfg(test)]
pub(crate) mod seam;

use conn::Conn;

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

impl PathSocket {
    /// `seed` seeds the emulated links (if any): `seed` one way, `seed ^ 1` the other.
    fn new(udp: UdpSocket, emulate: Option<Emulation>, seed: u64) -> Result<PathSocket, Error> {
        Ok(PathSocket {
            batch: Batcher::new(&udp)?,
            udp,
            egress: emulate.map(|e| EmulatedLink::new(e, seed)),
            ingress: emulate.map(|e| EmulatedLink::new(e, seed ^ 1)),
        })
    }
}

enum Role {
    Client {
        server: SocketAddr,
        ready: Option<oneshot::Sender<Result<(), Error>>>,
        timeout: Duration,
        /// Key pairs (a refusal then names --server-key and --authorized).
        pair: bool,
    },
    Server {
        limits: Limits,
        registry: Registry,
        incoming: mpsc::UnboundedSender<Connection>,
        qlog: Option<std::path::PathBuf>,
    },
}

/// The driver's I/O and bookkeeping: its sockets, its side of the application, its counters
/// (the [`Sessions`] table's [`Host`](braid_proto::session::Host), in `host.rs`).
struct Io {
    epoch: tokio::time::Instant,
    sockets: Vec<PathSocket>,
    role: Role,
    wake: Arc<Notify>,
    /// The kernel reported ICMP port unreachable (on a send or a receive).
    refused: bool,
    /// Server: what the operator reads (`braid server --metrics`) and the limits' log lines.
    counters: Arc<ServerCounters>,
    limit_log: LimitLog,
}

pub(crate) struct Driver {
    /// The connections and every protocol decision about them.
    sessions: Sessions<ServerAuth, Conn>,
    io: Io,
}

/// A connection id for logs.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // Only connection ids, challenge tokens and emulation seeds come from this; a failure
    // falls back to the clock.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return t.as_nanos() as u64;
    }
    u64::from_le_bytes(b)
}

impl Driver {
    pub(crate) fn start_client(setup: ClientSetup) -> Result<Handle, Error> {
        let paths = setup.sockets.len();
        let sockets = (setup.sockets.into_iter().enumerate())
            .map(|(i, udp)| {
                PathSocket::new(udp, setup.emulate.get(i).copied().flatten(), random_u64() ^ (i as u64) << 1)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let epoch = tokio::time::Instant::now();
        let now = Instant::ZERO;
        let hello = Hello::asking(&setup.transport, paths as u8);
        let mut core = braid_proto::Connection::client(setup.transport, now, random_u64());
        if setup.qlog.is_some() {
            core.enable_trace();
        }
        // The Noise handshake is bound to the core's connection id; the core's Initial leaves
        // in the first round after the Noise keys exist.
        let cid = core.cid();
        let noise = ClientHandshake::with_auth(&setup.auth, cid, &hello);
        let timeout = setup.handshake_timeout;
        let session =
            Session::client(Box::new(noise), paths, setup.server, timeout, Box::new(random_u64), now);
        let wake = Arc::new(Notify::new());
        let handle = Handle::for_core(core, paths, setup.server, epoch, wake.clone());
        for (i, p) in handle.lock().paths.iter_mut().enumerate() {
            p.local = sockets[i].udp.local_addr().ok();
            p.remote = Some(setup.server);
        }
        let qlog =
            setup.qlog.as_ref().and_then(|dir| QlogWriter::open(dir, cid, false, now, &handle.lock().paths));
        let conn = Conn { handle: handle.clone(), qlog };
        let pair = matches!(setup.auth, ClientAuth::Pair { .. });
        let role = Role::Client { server: setup.server, ready: Some(setup.ready), timeout, pair };
        let io = Io::new(epoch, sockets, role, wake, Arc::default());
        let driver = Driver { sessions: Sessions::client(cid, conn, session), io };
        tokio::spawn(driver.run());
        Ok(handle)
    }

    pub(crate) fn start_server(setup: ServerSetup) -> Result<(), Error> {
        // `--emulate` on the server: one link each way for everything the socket carries.
        let socket = PathSocket::new(setup.socket, setup.emulate, random_u64())?;
        let config = ListenerConfig {
            max_connections: setup.limits.max_connections,
            handshake_rate: setup.limits.handshake_rate,
            // A first message passes the clock check for 120 s either way.
            replay_horizon: MAX_CLOCK_SKEW * 2,
            // The half-open expiry (10 s) and the memory of first messages (100,000).
            ..ListenerConfig::default()
        };
        // The driver's clock starts at zero, with the handshake rate's bucket full.
        let random = Box::new(|| -> braid_proto::session::Random { Box::new(random_u64) });
        let listener = Listener::new(setup.auth, config, setup.transport, random, Instant::ZERO);
        let role = Role::Server {
            limits: setup.limits,
            registry: setup.registry,
            incoming: setup.incoming,
            qlog: setup.qlog,
        };
        let io =
            Io::new(tokio::time::Instant::now(), vec![socket], role, Arc::new(Notify::new()), setup.counters);
        tokio::spawn(Driver { sessions: Sessions::server(listener), io }.run());
        Ok(())
    }

    async fn run(mut self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut wakes = [0u64; 3];
        loop {
            let now = self.io.now();
            self.release_ingress(now);
            self.round(now);
            self.io.release_egress(now);
            if self.finished() {
                let [datagrams, application, timers] = wakes;
                tracing::debug!("driver stops; woken by datagrams {datagrams}, the application {application}, timers {timers}");
                return;
            }
            let deadline = if self.sessions.is_busy() { Some(now) } else { self.deadline() };
            tracing::trace!(target: "braid_runtime::loop", "now {} sleep until {:?}", now.as_micros(), deadline.map(Instant::as_micros));
            let sleep_to =
                deadline.map_or(self.io.epoch + Duration::from_secs(3600 * 24), |d| self.io.to_tokio(d));
            let wake = self.io.wake.clone();
            let woke = {
                let sockets = &self.io.sockets;
                let buf = &mut buf;
                tokio::select! {
                    r = poll_fn(|cx| poll_recv_any(sockets, cx, buf)) => { wakes[0] += 1; Some(r) }
                    _ = wake.notified() => { wakes[1] += 1; None }
                    _ = tokio::time::sleep_until(sleep_to) => { wakes[2] += 1; None }
                }
            };
            if let Some((i, r)) = woke {
                let now = self.io.now();
                self.on_recv(i, r, &buf, now);
                self.recv_waiting(&mut buf, now);
            }
        }
    }

    /// Reads what else is waiting (up to a batch) before sending again.
    fn recv_waiting(&mut self, buf: &mut [u8], now: Instant) {
        for _ in 0..RECV_BATCH {
            let mut got = false;
            for i in 0..self.io.sockets.len() {
                let s = &self.io.sockets[i];
                match s.batch.try_recv(&s.udp, buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    r => {
                        got = true;
                        self.on_recv(i, r, buf, now);
                    }
                }
            }
            if !got {
                break;
            }
        }
    }

    /// One round: an ICMP refusal to the client's handshake, then the table's round (its
    /// connections driven, the closed ones retired), then every queued batch sent.
    fn round(&mut self, now: Instant) {
        let is_client = matches!(self.io.role, Role::Client { .. });
        if is_client && std::mem::take(&mut self.io.refused) {
            self.sessions.handle_unreachable(now, &mut self.io);
        }
        self.sessions.handle_timeout(now, &mut self.io);
        ServerCounters::set(&self.io.counters.connections_closing, self.sessions.closing() as u64);
        self.io.flush_sends();
    }

    fn finished(&self) -> bool {
        match &self.io.role {
            // The emulated links still carry what was sent (a CLOSE among it).
            Role::Client { .. } => {
                self.sessions.is_empty()
                    && (self.io.sockets.iter())
                        .all(|s| s.egress.as_ref().is_none_or(|l| l.next_release().is_none()))
            }
            Role::Server { incoming, .. } => incoming.is_closed() && self.sessions.is_empty(),
        }
    }

    /// The next emulated release or protocol timer.
    fn deadline(&self) -> Option<Instant> {
        let links = self.io.sockets.iter().flat_map(|s| [&s.egress, &s.ingress].into_iter().flatten());
        links.filter_map(EmulatedLink::next_release).chain(self.sessions.poll_timeout()).min()
    }

    fn on_recv(&mut self, i: usize, r: io::Result<Received>, buf: &[u8], now: Instant) {
        match r {
            Ok(got) => {
                // GRO: several datagrams of `stride` bytes (the last may be shorter).
                for data in buf[..got.len.min(buf.len())].chunks(got.stride) {
                    if let Some(link) = &mut self.io.sockets[i].ingress {
                        link.push(now, got.from, data);
                    } else {
                        self.on_datagram(i, data, got.from, now);
                    }
                }
            }
            Err(e) => self.io.on_socket_error(e),
        }
    }

    fn release_ingress(&mut self, now: Instant) {
        for i in 0..self.io.sockets.len() {
            while let Some((from, d)) = self.io.sockets[i].ingress.as_mut().and_then(|l| l.pop(now)) {
                self.on_datagram(i, &d, from, now);
            }
        }
    }

    fn on_datagram(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        ServerCounters::add(&self.io.counters.datagrams_received, 1);
        ServerCounters::add(&self.io.counters.bytes_received, data.len() as u64);
        if let Role::Server { incoming, .. } = &self.io.role {
            if incoming.is_closed() {
                self.sessions.stop_accepting();
            }
        }
        self.sessions.handle_datagram(now, i, from, data, &mut self.io);
    }
}

impl Io {
    fn new(
        epoch: tokio::time::Instant,
        sockets: Vec<PathSocket>,
        role: Role,
        wake: Arc<Notify>,
        counters: Arc<ServerCounters>,
    ) -> Io {
        Io { epoch, sockets, role, wake, refused: false, counters, limit_log: LimitLog::default() }
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.epoch.elapsed().as_micros() as u64)
    }

    fn to_tokio(&self, t: Instant) -> tokio::time::Instant {
        self.epoch + Duration::from_micros(t.as_micros())
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
