//! What the driver task and the application's handles share about one connection: the core
//! behind a mutex, the wakers of tasks waiting on it, and the runtime's per-path report. Both
//! the driver and the public types ([`crate::Connection`], [`crate::Stream`]) import this
//! module; it imports neither of them.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Waker;
use std::time::Duration;

use braid_proto::conn::PathStats;
use braid_proto::streams::StreamEvent;
use braid_proto::wire::ConnectionId;
use braid_proto::{CloseReason, Event};
use tokio::sync::Notify;

use crate::Error;

/// Why a connection ended, as the application sees it.
#[derive(Debug, Clone)]
pub(crate) enum Ended {
    Local,
    Peer { code: u64, reason: String },
    TimedOut(Duration),
    Violation(String),
}

impl Ended {
    /// The core's reason, as the application reads it (`idle`: the idle timeout in force).
    pub(crate) fn from_close(reason: &CloseReason, idle: Duration) -> Ended {
        match reason {
            CloseReason::Local { .. } => Ended::Local,
            CloseReason::Peer { code, reason } => Ended::Peer { code: *code, reason: reason.clone() },
            CloseReason::Violation(v) => Ended::Violation(v.clone()),
            CloseReason::IdleTimeout => Ended::TimedOut(idle),
        }
    }

    pub(crate) fn error(&self) -> Error {
        match self {
            Ended::Local => Error::Closed("closed by this end".into()),
            Ended::Peer { code: 0, .. } => Error::ClosedByPeer(String::new()),
            Ended::Peer { code, reason } => Error::ClosedByPeer(format!(" (code {code}: {reason})")),
            Ended::TimedOut(d) => Error::TimedOut(*d),
            Ended::Violation(v) => Error::Violation(v.clone()),
        }
    }
}

/// A path's live numbers (see [`crate::Connection::paths`]).
#[derive(Debug, Clone, Default)]
pub struct PathReport {
    pub id: u8,
    pub local: Option<SocketAddr>,
    pub remote: Option<SocketAddr>,
    pub srtt: Duration,
    pub cwnd: u64,
    /// The core's loss estimate for the path.
    pub loss: f64,
    pub stats: PathStats,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Datagrams the emulated link dropped (random loss, queue overflow), both directions.
    pub emulated_drops: u64,
    /// The largest UDP payload path MTU discovery allows on the path now (PROTOCOL.md §14).
    pub plpmtu: usize,
}

/// What the driver and the application share about one connection (behind a mutex; no
/// `.await` is ever held across it).
pub(crate) struct Shared {
    pub core: braid_proto::Connection,
    pub ended: Option<Ended>,
    pub readers: HashMap<u64, Waker>,
    pub writers: HashMap<u64, Waker>,
    pub incoming_streams: VecDeque<u64>,
    pub accept_waker: Option<Waker>,
    pub idle_wakers: Vec<Waker>,
    /// A task waiting in [`crate::Connection::recv_datagram`].
    pub datagram_waker: Option<Waker>,
    /// The driver's clock origin (the core's `Instant` counts from it).
    pub epoch: tokio::time::Instant,
    /// The runtime's part of each path's report (addresses, bytes received, emulated drops);
    /// the rest comes from the core when read ([`crate::Connection::paths`]).
    pub paths: Vec<PathReport>,
}

/// What wakes a driver task: the application's pokes, and which connections they were for
/// (the driver drives those, not every connection it holds).
#[derive(Default)]
pub(crate) struct DriverWake {
    pub notify: Notify,
    /// Connections poked since the driver last took them; each once ([`Poke`]'s flag).
    poked: Mutex<Vec<ConnectionId>>,
}

impl DriverWake {
    /// The connections poked since the last call, into `into` (emptied first).
    pub fn take_poked(&self, into: &mut Vec<ConnectionId>) {
        into.clear();
        std::mem::swap(&mut *self.poked.lock().unwrap_or_else(|e| e.into_inner()), into);
    }
}

/// Pokes one connection's driver: the application changed the connection (wrote, read,
/// closed), so the driver drives it at its next wake-up even without a datagram or an expired
/// timer. Dropping one pokes too: the driver then sees whether the application let go of the
/// connection.
#[derive(Clone)]
pub(crate) struct Poke {
    cid: ConnectionId,
    /// Set by a poke, cleared by the round that drives the connection: while set, the
    /// connection is already among the driver's poked ones.
    flag: Arc<AtomicBool>,
    wake: Arc<DriverWake>,
}

impl Poke {
    pub fn new(cid: ConnectionId, wake: Arc<DriverWake>) -> Poke {
        Poke { cid, flag: Arc::new(AtomicBool::new(false)), wake }
    }

    pub fn poke(&self) {
        if !self.flag.swap(true, Ordering::AcqRel) {
            self.wake.poked.lock().unwrap_or_else(|e| e.into_inner()).push(self.cid);
        }
        self.wake.notify.notify_one();
    }

    /// The driver took the poke (at the start of the connection's round). A read-modify-write:
    /// what a poke it follows saw (a dropped handle's count) the driver sees too.
    pub fn clear(&self) {
        self.flag.swap(false, Ordering::AcqRel);
    }
}

impl Drop for Poke {
    fn drop(&mut self) {
        self.poke();
    }
}

/// The application's reference to a connection (streams hold one too); the driver closes the
/// connection once every handle is gone and everything written was delivered.
#[derive(Clone)]
pub(crate) struct Handle {
    pub shared: Arc<Mutex<Shared>>,
    /// Declared after `shared`, so dropped after it: the poke a dropped handle makes comes
    /// when the driver can already count one handle fewer.
    pub poke: Poke,
}

impl Handle {
    pub fn new(shared: Arc<Mutex<Shared>>, poke: Poke) -> Handle {
        Handle { shared, poke }
    }

    /// The handle of new connection `cid` (its id in the driver's table: a server's core
    /// learns it only from the client's Initial); `peer`: the address every path starts at.
    pub fn for_core(
        cid: ConnectionId,
        core: braid_proto::Connection,
        paths: usize,
        peer: SocketAddr,
        epoch: tokio::time::Instant,
        wake: Arc<DriverWake>,
    ) -> Handle {
        let poke = Poke::new(cid, wake);
        let shared = Shared {
            core,
            ended: None,
            readers: HashMap::new(),
            writers: HashMap::new(),
            incoming_streams: VecDeque::new(),
            accept_waker: None,
            idle_wakers: Vec::new(),
            datagram_waker: None,
            epoch,
            paths: (0..paths)
                .map(|i| PathReport {
                    id: i as u8,
                    remote: (i == 0).then_some(peer),
                    ..PathReport::default()
                })
                .collect(),
        };
        Handle::new(Arc::new(Mutex::new(shared)), poke)
    }

    /// Marks the connection for the driver and wakes it.
    pub fn poke(&self) {
        self.poke.poke();
    }

    pub fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Shared {
    /// One of the core's events, as the application's wake-ups (and a path's news, the log).
    pub fn wake_on(&mut self, event: Event) {
        match event {
            Event::Stream(StreamEvent::Opened(id)) => {
                self.incoming_streams.push_back(id);
                if let Some(w) = self.accept_waker.take() {
                    w.wake();
                }
            }
            Event::Stream(StreamEvent::Readable(id)) => {
                if let Some(w) = self.readers.remove(&id) {
                    w.wake();
                }
            }
            Event::PathFailed(path) => {
                tracing::info!(path, "path failed: no answer; its data goes on the others")
            }
            Event::PathRecovered(path) => tracing::info!(path, "path answers again"),
            Event::PathRemoved(path) => tracing::info!(path, "path removed"),
            Event::Connected | Event::Closed(_) => {}
        }
    }

    /// Wakes the writers whose stream has room again, the tasks waiting for idle, and the
    /// datagram reader when datagrams wait (or the connection ended).
    pub fn wake_ready(&mut self, ended: bool) {
        if let Some(streams) = self.core.streams() {
            let ready: Vec<u64> = self
                .writers
                .keys()
                .copied()
                .filter(|id| streams.send_buffered(*id) < STREAM_SEND_BUFFER)
                .collect();
            for id in ready {
                if let Some(w) = self.writers.remove(&id) {
                    w.wake();
                }
            }
        }
        for w in self.idle_wakers.drain(..) {
            w.wake();
        }
        if self.core.has_datagrams() || ended {
            if let Some(w) = self.datagram_waker.take() {
                w.wake();
            }
        }
    }

    /// The connection ended: records why (the first reason stays) and wakes every waiting
    /// task.
    pub fn wake_all_on_end(&mut self, reason: &Ended) {
        if self.ended.is_none() {
            self.ended = Some(reason.clone());
        }
        for (_, w) in self.readers.drain().chain(self.writers.drain()) {
            w.wake();
        }
        if let Some(w) = self.accept_waker.take() {
            w.wake();
        }
    }
}

/// Bytes a stream may hold unsent before writes wait (the core accepts everything; this is
/// the runtime's back-pressure).
pub(crate) const STREAM_SEND_BUFFER: usize = 1 << 20;

/// The server's connections, for [`crate::Server::connections`]: weak, so a connection whose
/// every handle is gone still ends.
pub(crate) type Registry = Arc<Mutex<HashMap<ConnectionId, (Weak<Mutex<Shared>>, Poke)>>>;
