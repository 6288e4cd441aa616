//! The public face: [`Endpoint`] opens client connections and servers, [`Connection`] hands out
//! streams and statistics.

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use braid_proto::conn::PathStats;
use braid_proto::datagram::{DatagramStats, SendDatagramError};
use braid_proto::ConnectionConfig;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::crypto::{ClientAuth, ServerAuth, TAG_LEN};
use crate::driver::{self, Driver};
use crate::emulate::Emulation;
use crate::limits::{Limits, ServerCounters};
use crate::socket::{self, PathSpec};
use crate::stream::Stream;
use crate::Error;

/// Smallest UDP payload every path carries: IPv6's minimum MTU is braid's floor (PROTOCOL.md
/// §9, RFC 8899's BASE_PLPMTU), and the AEAD tag is taken from that budget. Larger datagrams
/// are sent once path MTU discovery (PROTOCOL.md §14) proves a path carries them, up to the
/// transport's `max_plpmtu` (a UDP payload size here; `braid --max-datagram`).
pub const MAX_UDP_PAYLOAD: usize = 1280;

/// The core's datagram and symbol sizes once the AEAD tag is accounted for: its packets are the
/// UDP payload less the tag, for the base size and for the largest one probed alike. The
/// sockets never fragment: `quinn-udp` sets IP_MTU_DISCOVER / IPV6_MTU_DISCOVER to
/// `PMTUDISC_PROBE` (don't fragment, ignore the kernel's own PMTU cache), so a datagram larger
/// than the interface MTU fails with EMSGSIZE, which the driver counts as a lost packet: for a
/// probe that is the "too big" answer RFC 8899 expects, not an error.
fn fit_to_datagram(config: &mut ConnectionConfig) {
    let budget = MAX_UDP_PAYLOAD - TAG_LEN;
    if config.max_datagram > budget {
        let shrink = config.max_datagram - budget;
        config.max_datagram = budget;
        config.params.symbol_size = config.params.symbol_size.saturating_sub(shrink as u16).max(16);
    }
    config.max_plpmtu = config.max_plpmtu.saturating_sub(TAG_LEN).max(config.max_datagram);
    config.datagram_overhead += TAG_LEN;
}

/// How a client connects.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// A pre-shared key, or this end's key pair and the server's public key.
    pub auth: ClientAuth,
    /// The core's settings (mode, congestion controller, parameters). `paths` is set from
    /// [`ClientConfig::paths`].
    pub transport: ConnectionConfig,
    /// One entry per path (default: one path, any local address).
    pub paths: Vec<PathSpec>,
    /// Impairment per path (index as `paths`; missing entries: none). Applied to both directions.
    pub emulate: Vec<Option<Emulation>>,
    /// Give up when the server has not answered for this long. Default 5 s.
    pub handshake_timeout: Duration,
}

impl ClientConfig {
    pub fn new(auth: impl Into<ClientAuth>) -> ClientConfig {
        ClientConfig {
            auth: auth.into(),
            transport: ConnectionConfig::default(),
            paths: vec![PathSpec::Any],
            emulate: Vec::new(),
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// How a server accepts.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// A pre-shared key, or this end's key pair and the client public keys let in.
    pub auth: ServerAuth,
    /// The core's settings; a client's mode and congestion controller (sent in its hello)
    /// replace `mode` and `cc`.
    pub transport: ConnectionConfig,
    /// Connections, per-connection memory, streams and handshake rate ([`Limits`]; defaults
    /// for a small router). The memory and stream limits replace `transport`'s windows and
    /// stream count.
    pub limits: Limits,
    /// Impairment of everything the server's socket sends and receives (`braid server
    /// --emulate`). Default none.
    pub emulate: Option<Emulation>,
}

impl ServerConfig {
    pub fn new(auth: impl Into<ServerAuth>) -> ServerConfig {
        ServerConfig {
            auth: auth.into(),
            transport: ConnectionConfig::default(),
            limits: Limits::default(),
            emulate: None,
        }
    }
}

/// Opens connections.
pub struct Endpoint;

impl Endpoint {
    /// Connects to a braid server over the configured paths; returns once the connection is
    /// up (Noise and core handshakes done) or with an error that says why not.
    pub async fn connect(config: ClientConfig, server: SocketAddr) -> Result<Connection, Error> {
        let mut sockets = Vec::new();
        for spec in &config.paths {
            let (local, device) = socket::resolve_local(spec, server)?;
            let udp = socket::bind_udp(local, device.as_deref())?;
            udp.connect(server).await.map_err(|e| Error::Bind { addr: local, source: e })?;
            sockets.push(udp);
        }
        if sockets.is_empty() {
            let (local, _) = socket::resolve_local(&PathSpec::Any, server)?;
            let udp = socket::bind_udp(local, None)?;
            udp.connect(server).await.map_err(|e| Error::Bind { addr: local, source: e })?;
            sockets.push(udp);
        }
        if sockets.len() > braid_proto::wire::MAX_PATHS as usize {
            return Err(Error::Closed(format!("at most {} paths", braid_proto::wire::MAX_PATHS)));
        }
        let mut transport = config.transport.clone();
        transport.paths = sockets.len() as u8;
        fit_to_datagram(&mut transport);
        let emulate: Vec<Option<Emulation>> =
            (0..sockets.len()).map(|i| config.emulate.get(i).copied().flatten()).collect();
        let (ready_tx, ready_rx) = oneshot::channel();
        let handle = Driver::start_client(driver::ClientSetup {
            auth: config.auth,
            transport,
            sockets,
            emulate,
            server,
            handshake_timeout: config.handshake_timeout,
            ready: ready_tx,
        })?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Connection { handle }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Closed("the driver stopped".into())),
        }
    }

    /// A server on `listen`; connections come out of [`Server::accept`].
    pub fn server(config: ServerConfig, listen: SocketAddr) -> Result<Server, Error> {
        let udp = socket::bind_udp(listen, None)?;
        let local = udp.local_addr()?;
        let mut transport = config.transport.clone();
        config.limits.apply(&mut transport);
        fit_to_datagram(&mut transport);
        let (tx, rx) = mpsc::unbounded_channel();
        let counters = Arc::new(ServerCounters::default());
        let registry = driver::Registry::default();
        Driver::start_server(driver::ServerSetup {
            auth: config.auth,
            transport,
            socket: udp,
            emulate: config.emulate,
            limits: config.limits,
            counters: counters.clone(),
            registry: registry.clone(),
            incoming: tx,
        })?;
        Ok(Server { incoming: rx, local, counters, registry })
    }
}

/// A listening server.
pub struct Server {
    incoming: mpsc::UnboundedReceiver<Connection>,
    local: SocketAddr,
    counters: Arc<ServerCounters>,
    registry: driver::Registry,
}

impl Server {
    /// The next established connection; `None` once the server stopped.
    pub async fn accept(&mut self) -> Option<Connection> {
        self.incoming.recv().await
    }

    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        Ok(self.local)
    }

    /// The server's counters: handshakes, limits hit, datagrams and bytes (live).
    pub fn counters(&self) -> Arc<ServerCounters> {
        self.counters.clone()
    }

    /// What reads the server's live connections from elsewhere (a metrics endpoint).
    pub fn connections(&self) -> Connections {
        Connections { registry: self.registry.clone() }
    }
}

/// The server's live connections, handshaking ones included (see [`Server::connections`]).
#[derive(Clone)]
pub struct Connections {
    registry: driver::Registry,
}

impl Connections {
    /// A handle to each connection now (hold them briefly: a connection ends only once every
    /// handle is gone).
    pub fn snapshot(&self) -> Vec<Connection> {
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        registry
            .values()
            .filter_map(|(shared, wake)| {
                Some(Connection { handle: Handle::new(shared.upgrade()?, wake.clone()) })
            })
            .collect()
    }
}

/// Why a connection ended, as the application sees it.
#[derive(Debug, Clone)]
pub(crate) enum Ended {
    Local,
    Peer { code: u64, reason: String },
    TimedOut(Duration),
    Violation(String),
}

impl Ended {
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

/// A path's live numbers (see [`Connection::paths`]).
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
    /// A task waiting in [`Connection::recv_datagram`].
    pub datagram_waker: Option<Waker>,
    /// The driver's clock origin (the core's `Instant` counts from it).
    pub epoch: tokio::time::Instant,
    /// The runtime's part of each path's report (addresses, bytes received, emulated drops);
    /// the rest comes from the core when read ([`Connection::paths`]).
    pub paths: Vec<PathReport>,
}

/// The application's reference to a connection (streams hold one too); the driver closes the
/// connection once every handle is gone and everything written was delivered.
#[derive(Clone)]
pub(crate) struct Handle {
    pub shared: Arc<Mutex<Shared>>,
    pub wake: Arc<Notify>,
    /// The application changed this connection (wrote, read, closed): the driver drives it at
    /// its next wake-up even without a datagram or an expired timer.
    pub poked: Arc<AtomicBool>,
}

impl Handle {
    pub fn new(shared: Arc<Mutex<Shared>>, wake: Arc<Notify>) -> Handle {
        Handle { shared, wake, poked: Arc::new(AtomicBool::new(false)) }
    }

    /// Marks the connection for the driver and wakes it.
    pub fn poke(&self) {
        self.poked.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    pub fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An established connection.
#[derive(Clone)]
pub struct Connection {
    pub(crate) handle: Handle,
}

/// Bytes a stream may hold unsent before writes wait (the core accepts everything; this is
/// the runtime's back-pressure).
pub(crate) const STREAM_SEND_BUFFER: usize = 1 << 20;

impl Connection {
    /// Opens a stream (bidirectional).
    pub fn open_stream(&self) -> Result<Stream, Error> {
        let mut s = self.handle.lock();
        if let Some(e) = &s.ended {
            return Err(e.error());
        }
        let id = s.core.streams().ok_or_else(|| Error::Closed("not established".into()))?.open()?;
        drop(s);
        self.handle.poke();
        Ok(Stream::new(self.handle.clone(), id))
    }

    /// The next stream the peer opened; `None` once the connection ended.
    pub async fn accept_stream(&self) -> Option<Stream> {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(id) = s.incoming_streams.pop_front() {
                return Poll::Ready(Some(id));
            }
            if s.ended.is_some() {
                return Poll::Ready(None);
            }
            s.accept_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
        .map(|id| Stream::new(self.handle.clone(), id))
    }

    /// Waits until everything written so far was delivered to the peer (or the connection
    /// ended: then the reason).
    pub async fn flush(&self) -> Result<(), Error> {
        self.handle.poke();
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(e) = &s.ended {
                return Poll::Ready(Err(e.error()));
            }
            if s.core.is_idle() {
                return Poll::Ready(Ok(()));
            }
            s.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Waits until the connection ends; the reason.
    pub async fn closed(&self) -> Error {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(e) = &s.ended {
                return Poll::Ready(e.error());
            }
            s.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Closes the connection now (unsent data is dropped; see [`Connection::flush`]).
    pub fn close(&self, code: u64, reason: &str) {
        let mut s = self.handle.lock();
        if s.ended.is_none() {
            s.core.close(code, reason);
        }
        drop(s);
        self.handle.poke();
    }

    /// The peer's address (path 0's as last seen).
    pub fn remote_address(&self) -> SocketAddr {
        self.handle.lock().paths[0].remote.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Live per-path numbers.
    pub fn paths(&self) -> Vec<PathReport> {
        let s = self.handle.lock();
        let core_stats = s.core.path_stats();
        let state = s.core.path_state();
        let mtus = s.core.path_mtus();
        s.paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut p = p.clone();
                if let (Some(st), Some(&(srtt, cwnd, loss))) = (core_stats.get(i), state.get(i)) {
                    p.stats = *st;
                    // Sent counts are the core's; on the wire each packet carries the AEAD tag.
                    p.datagrams_sent = st.packets_sent;
                    p.bytes_sent = st.bytes_sent + st.packets_sent * TAG_LEN as u64;
                    p.srtt = srtt;
                    p.cwnd = cwnd;
                    p.loss = loss;
                }
                p.plpmtu = mtus.get(i).map_or(0, |&(_, m)| m + TAG_LEN);
                p
            })
            .collect()
    }

    /// Connection-wide counters of the core (symbols, repairs, recoveries, retransmissions).
    pub fn stats(&self) -> braid_proto::conn::ConnectionStats {
        self.handle.lock().core.stats
    }

    /// Sends an unreliable datagram (PROTOCOL.md §15): sent once, on the path expected to
    /// deliver it first, covered by repair across datagrams so a loss is rebuilt without a
    /// round trip, and dropped once past its deadline (`ConnectionConfig::datagrams`, default
    /// 150 ms). Never blocks: a full queue drops its oldest datagram.
    ///
    /// An echo of datagrams over loopback:
    ///
    /// ```
    /// use braid_runtime::{ClientConfig, Endpoint, Key, ServerConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let key = Key::generate()?;
    /// let mut server = Endpoint::server(ServerConfig::new(key.clone()), "127.0.0.1:0".parse()?)?;
    /// let addr = server.local_addr()?;
    /// tokio::spawn(async move {
    ///     while let Some(conn) = server.accept().await {
    ///         tokio::spawn(async move {
    ///             while let Ok(datagram) = conn.recv_datagram().await {
    ///                 let _ = conn.send_datagram(&datagram);
    ///             }
    ///         });
    ///     }
    /// });
    /// let conn = Endpoint::connect(ClientConfig::new(key), addr).await?;
    /// assert!(conn.max_datagram_size() >= 1200);
    /// conn.send_datagram(b"ping")?;
    /// assert_eq!(conn.recv_datagram().await?, b"ping");
    /// let stats = conn.datagram_stats();
    /// assert_eq!((stats.sent, stats.delivered), (1, 1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn send_datagram(&self, data: &[u8]) -> Result<(), Error> {
        let mut s = self.handle.lock();
        if let Some(e) = &s.ended {
            return Err(e.error());
        }
        let now = braid_proto::Instant::from_micros(s.epoch.elapsed().as_micros() as u64);
        s.core.send_datagram(now, data).map_err(|e| match e {
            SendDatagramError::TooLarge { size, max } => Error::DatagramTooLarge { size, max },
            SendDatagramError::Closed => Error::Closed("closed".into()),
        })?;
        drop(s);
        self.handle.poke();
        Ok(())
    }

    /// The next datagram received (or rebuilt from repair before its deadline); waits for one.
    /// Fails once the connection ended and nothing is left to read.
    pub async fn recv_datagram(&self) -> Result<Vec<u8>, Error> {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(d) = s.core.recv_datagram() {
                return Poll::Ready(Ok(d));
            }
            if let Some(e) = &s.ended {
                return Poll::Ready(Err(e.error()));
            }
            s.datagram_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The largest datagram [`Connection::send_datagram`] takes now: the smallest path MTU
    /// less braid's headers (a TUN device's MTU follows it).
    pub fn max_datagram_size(&self) -> usize {
        self.handle.lock().core.max_datagram_size()
    }

    /// Datagram counters: sent, delivered, recovered, late, dropped, repair overhead.
    pub fn datagram_stats(&self) -> DatagramStats {
        self.handle.lock().core.datagram_stats()
    }

    /// Whether the core handshake is done and the connection has not ended.
    pub fn is_established(&self) -> bool {
        let s = self.handle.lock();
        s.core.is_established() && s.ended.is_none()
    }

    /// Bytes of the peer's data held now (decoders and unread stream bytes).
    pub fn receive_buffered(&self) -> u64 {
        let b = self.handle.lock().core.receive_buffered();
        b.decoder_bytes + b.stream_bytes
    }
}
