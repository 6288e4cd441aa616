//! The driver task: owns an endpoint's sockets ([`PathSocket`]: GSO batches, `--emulate`
//! links), sleeps until a datagram, the application or the next timer wakes it, and wakes the
//! application's tasks. One task per endpoint.
//!
//! Time: the core's `Instant` is microseconds since the driver started (`epoch`), read from
//! tokio's clock; nothing below the driver reads a clock.
//!
//! Every protocol decision is braid-proto's [`Sessions`] table's, which the endpoint assembles
//! (`endpoint.rs`): where a datagram goes (a server's through its
//! [`Listener`](braid_proto::session::Listener): the connection cap, the handshake rate,
//! authentication, replays), which connections a round drives, each connection's security
//! layer ([`braid_proto::session::Session`], with Noise as its crypto: handshake repeats,
//! sealing, replay, address validation, announcements, the linger), and a closed connection's
//! closing period. Here: the loop and its deadline; `host.rs`: the table's hooks (datagrams
//! out, new connections' handles, the application's wake-ups, counters and logs); `conn.rs`:
//! how a connection's core is kept (beside the application's state, behind its lock).

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use braid_proto::session::Sessions;
use braid_proto::Instant;
use tokio::sync::{mpsc, oneshot};

use crate::connection::Connection;
use crate::crypto::ServerAuth;
use crate::gso::RecvBufs;
use crate::limits::{LimitLog, Limits, ServerCounters, LOG_EVERY};
use crate::shared::{DriverWake, Registry};
use crate::socket::PathSocket;
use crate::Error;

mod conn;
mod host;

pub(crate) use conn::Conn;

/// Messages (datagrams, or GRO batches of them) read per round before the driver sends again.
const RECV_BATCH: usize = 256;

/// Which end the driver runs, and that end's ties to the application.
pub(crate) enum Role {
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
    wake: Arc<DriverWake>,
    /// The connections the application poked, as taken from `wake` before a round.
    poked: Vec<braid_proto::wire::ConnectionId>,
    /// The kernel reported ICMP port unreachable (on a send or a receive).
    refused: bool,
    /// Server: what the operator reads (`braid server --metrics`) and the limits' log lines.
    counters: Arc<ServerCounters>,
    limit_log: LimitLog,
    /// Server: the kernel's drops on the socket when last looked at, and when that was.
    drops_seen: u64,
    drops_checked: Option<Instant>,
}

pub(crate) struct Driver {
    /// The connections and every protocol decision about them.
    sessions: Sessions<ServerAuth, Conn>,
    io: Io,
}

impl Driver {
    /// Runs `sessions` on `sockets` in a task of its own until it has nothing left to do;
    /// `epoch`: the time the table's `Instant`s count from.
    pub(crate) fn spawn(
        epoch: tokio::time::Instant,
        sessions: Sessions<ServerAuth, Conn>,
        sockets: Vec<PathSocket>,
        role: Role,
        wake: Arc<DriverWake>,
        counters: Arc<ServerCounters>,
    ) {
        let limit_log = LimitLog::default();
        let io = Io {
            epoch,
            sockets,
            role,
            wake,
            poked: Vec::new(),
            refused: false,
            counters,
            limit_log,
            drops_seen: 0,
            drops_checked: None,
        };
        tokio::spawn(Driver { sessions, io }.run());
    }

    async fn run(mut self) {
        // A server reads as many messages per system call as `recvmmsg` takes (see `RecvBufs`).
        let per_read = match self.io.role {
            Role::Server { .. } => quinn_udp::BATCH_SIZE,
            Role::Client { .. } => 1,
        };
        let mut bufs = RecvBufs::new(per_read);
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
                let bufs = &mut bufs;
                tokio::select! {
                    r = poll_fn(|cx| poll_recv_any(sockets, cx, bufs)) => { wakes[0] += 1; Some(r) }
                    _ = wake.notify.notified() => { wakes[1] += 1; None }
                    _ = tokio::time::sleep_until(sleep_to) => { wakes[2] += 1; None }
                }
            };
            let now = self.io.now();
            let mut read = 0;
            if let Some((i, r)) = woke {
                read = self.on_recv(i, r, &bufs, now);
            }
            // Woken by a timer or the application too: what arrived meanwhile is read before the
            // timers run, so a process that was not scheduled for a while does not judge a path
            // silent or its packets lost while their ACKs wait in the socket.
            self.recv_waiting(&mut bufs, read, now);
        }
    }

    /// Reads what else is waiting (up to `RECV_BATCH` messages in all, `read` of them already
    /// read) before sending again.
    fn recv_waiting(&mut self, bufs: &mut RecvBufs, mut read: usize, now: Instant) {
        while read < RECV_BATCH {
            let mut got = false;
            for i in 0..self.io.sockets.len() {
                match self.io.sockets[i].try_recv(bufs) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    r => {
                        got = true;
                        read += self.on_recv(i, r, bufs, now).max(1);
                    }
                }
            }
            if !got {
                break;
            }
        }
    }

    /// One round: an ICMP refusal to the client's handshake, the application's pokes, then the
    /// table's round (its connections driven, the closed ones retired), then every queued batch
    /// sent.
    fn round(&mut self, now: Instant) {
        let is_client = matches!(self.io.role, Role::Client { .. });
        if is_client && std::mem::take(&mut self.io.refused) {
            self.sessions.handle_unreachable(now, &mut self.io);
        }
        self.io.wake.take_poked(&mut self.io.poked);
        for cid in &self.io.poked {
            self.sessions.poke(cid);
        }
        self.sessions.handle_timeout(now, &mut self.io);
        ServerCounters::set(&self.io.counters.connections_closing, self.sessions.closing() as u64);
        self.io.flush_sends();
        if !is_client {
            self.io.watch_drops(now);
        }
    }

    fn finished(&self) -> bool {
        match &self.io.role {
            // The emulated links still carry what was sent (a CLOSE among it).
            Role::Client { .. } => {
                self.sessions.is_empty() && self.io.sockets.iter().all(PathSocket::egress_idle)
            }
            Role::Server { incoming, .. } => incoming.is_closed() && self.sessions.is_empty(),
        }
    }

    /// The next emulated release or protocol timer.
    fn deadline(&self) -> Option<Instant> {
        let links = self.io.sockets.iter().filter_map(PathSocket::next_release);
        links.chain(self.sessions.poll_timeout()).min()
    }

    /// Handles what a read on socket `i` returned; the number of messages.
    fn on_recv(&mut self, i: usize, r: io::Result<usize>, bufs: &RecvBufs, now: Instant) -> usize {
        match r {
            Ok(n) => {
                for (got, bytes) in bufs.messages() {
                    // GRO: several datagrams of `stride` bytes (the last may be shorter).
                    for data in bytes.chunks(got.stride) {
                        if !self.io.sockets[i].hold(now, got.from, data) {
                            self.on_datagram(i, data, got.from, now);
                        }
                    }
                }
                n
            }
            Err(e) => {
                self.io.on_socket_error(e);
                0
            }
        }
    }

    fn release_ingress(&mut self, now: Instant) {
        for i in 0..self.io.sockets.len() {
            while let Some((from, d)) = self.io.sockets[i].pop_ingress(now) {
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
    fn now(&self) -> Instant {
        Instant::from_micros(self.epoch.elapsed().as_micros() as u64)
    }

    fn to_tokio(&self, t: Instant) -> tokio::time::Instant {
        self.epoch + Duration::from_micros(t.as_micros())
    }

    fn release_egress(&mut self, now: Instant) {
        for s in &mut self.sockets {
            s.release_egress(now);
        }
        self.flush_sends();
    }

    /// Sends every queued batch (before the driver sleeps).
    fn flush_sends(&mut self) {
        for s in &mut self.sockets {
            if let Err(e) = s.flush() {
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    self.refused = true;
                }
                tracing::trace!("send: {e}");
            }
        }
    }

    /// Server: at most every [`LOG_EVERY`], one line when the kernel dropped datagrams on the
    /// socket since the last look. Those are lost before braid sees them, and a peer takes them
    /// for congestion: an operator should know they are this host's.
    fn watch_drops(&mut self, now: Instant) {
        if self.drops_checked.is_some_and(|t| now.saturating_duration_since(t) < LOG_EVERY) {
            return;
        }
        self.drops_checked = Some(now);
        let Some(total) = self.counters.socket_drops() else { return };
        let new = total.saturating_sub(self.drops_seen);
        self.drops_seen = total;
        if new > 0 {
            tracing::warn!(
                "the kernel dropped {new} datagrams on the server's socket in the last {} s ({total} in all): its receive buffer was full, so the server is not reading in time (short of CPU?)",
                LOG_EVERY.as_secs()
            );
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
        if let Err(e) = self.sockets[i].send(now, to, data) {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                self.refused = true;
            }
            // EMSGSIZE: larger than the interface MTU (a PMTU probe, PROTOCOL.md §14): the
            // datagram is lost, which is the probe's answer.
            tracing::trace!("send on socket {i}: {e}");
        }
    }
}

/// Polls every socket for datagrams; reads the first ready one's into `bufs` (socket index and
/// the number of messages).
fn poll_recv_any(
    sockets: &[PathSocket],
    cx: &mut std::task::Context<'_>,
    bufs: &mut RecvBufs,
) -> Poll<(usize, io::Result<usize>)> {
    for (i, s) in sockets.iter().enumerate() {
        if let Poll::Ready(r) = s.poll_recv(cx, bufs) {
            return Poll::Ready((i, r));
        }
    }
    Poll::Pending
}
