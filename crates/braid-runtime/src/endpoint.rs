//! The public face: [`Endpoint`] opens client connections and servers; a [`Server`] hands out
//! each [`Connection`] it accepts.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use braid_proto::session::{Listener, ListenerConfig, Session, Sessions};
use braid_proto::{ConnectionConfig, Instant};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};

use crate::connection::Connection;
use crate::crypto::{ClientAuth, ClientHandshake, Hello, ServerAuth, MAX_CLOCK_SKEW, TAG_LEN};
use crate::driver::{Conn, Driver, Role};
use crate::emulate::Emulation;
use crate::limits::{Limits, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{DriverWake, Handle, Registry};
use crate::socket::{self, PathSocket, PathSpec};
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
    /// Write the connection's qlog (JSON-SEQ, see [`crate::qlog`]) into this directory, which
    /// must exist. Default none. Needs the `qlog` feature.
    #[cfg(feature = "qlog")]
    pub qlog: Option<std::path::PathBuf>,
}

impl ClientConfig {
    pub fn new(auth: impl Into<ClientAuth>) -> ClientConfig {
        ClientConfig {
            auth: auth.into(),
            transport: ConnectionConfig::default(),
            paths: vec![PathSpec::Any],
            emulate: Vec::new(),
            handshake_timeout: Duration::from_secs(5),
            #[cfg(feature = "qlog")]
            qlog: None,
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
    /// Write one qlog file per connection (JSON-SEQ, see [`crate::qlog`]) into this
    /// directory, which must exist. Default none. Needs the `qlog` feature.
    #[cfg(feature = "qlog")]
    pub qlog: Option<std::path::PathBuf>,
}

impl ServerConfig {
    pub fn new(auth: impl Into<ServerAuth>) -> ServerConfig {
        ServerConfig {
            auth: auth.into(),
            transport: ConnectionConfig::default(),
            limits: Limits::default(),
            emulate: None,
            #[cfg(feature = "qlog")]
            qlog: None,
        }
    }
}

impl ClientConfig {
    /// Where the connection's qlog goes: `qlog`, or nowhere without the `qlog` feature.
    #[cfg(feature = "qlog")]
    fn qlog_dir(&self) -> Option<&Path> {
        self.qlog.as_deref()
    }

    #[cfg(not(feature = "qlog"))]
    fn qlog_dir(&self) -> Option<&Path> {
        None
    }
}

impl ServerConfig {
    /// Where the connections' qlogs go: `qlog`, or nowhere without the `qlog` feature.
    #[cfg(feature = "qlog")]
    fn qlog_dir(&self) -> Option<&Path> {
        self.qlog.as_deref()
    }

    #[cfg(not(feature = "qlog"))]
    fn qlog_dir(&self) -> Option<&Path> {
        None
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
        let (ready, answer) = oneshot::channel();
        let handle = start_client(config, sockets, server, ready)?;
        match answer.await {
            Ok(Ok(())) => Ok(Connection { handle }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Closed("the driver stopped".into())),
        }
    }

    /// A server on `listen`; connections come out of [`Server::accept`].
    pub fn server(config: ServerConfig, listen: SocketAddr) -> Result<Server, Error> {
        let udp = socket::bind_udp(listen, None)?;
        let local = udp.local_addr()?;
        // Every client's datagrams queue in this one buffer while the driver is busy: an
        // operator with many clients wants to know what it got.
        let (rcvbuf, capped) = socket::recv_buffer(&udp);
        if capped {
            tracing::warn!(
                "UDP receive buffer {} KiB as the kernel counts it (net.core.rmem_max capped the 8 MiB asked for; raise it for bursts from many clients)",
                rcvbuf >> 10
            );
        } else {
            tracing::info!("UDP receive buffer {} KiB as the kernel counts it", rcvbuf >> 10);
        }
        let qlog = config.qlog_dir().map(Path::to_path_buf);
        let mut transport = config.transport.clone();
        config.limits.apply(&mut transport);
        fit_to_datagram(&mut transport);
        // `--emulate` on the server: one link each way for everything the socket carries.
        let socket = PathSocket::new(udp, config.emulate, random_u64())?;
        let listener = ListenerConfig {
            max_connections: config.limits.max_connections,
            handshake_rate: config.limits.handshake_rate,
            // A first message passes the clock check for 120 s either way.
            replay_horizon: MAX_CLOCK_SKEW * 2,
            // The half-open expiry (10 s) and the memory of first messages (100,000).
            ..ListenerConfig::default()
        };
        // The driver's clock starts at zero, with the handshake rate's bucket full.
        let random = Box::new(|| -> braid_proto::session::Random { Box::new(random_u64) });
        let listener = Listener::new(config.auth, listener, transport, random, Instant::ZERO);
        let (tx, rx) = mpsc::unbounded_channel();
        let counters = Arc::new(ServerCounters::default());
        if let Some(inode) = socket::socket_inode(&socket.udp) {
            ServerCounters::set(&counters.socket_inode, inode);
        }
        let registry = Registry::default();
        let role = Role::Server { limits: config.limits, registry: registry.clone(), incoming: tx, qlog };
        let (epoch, wake) = (tokio::time::Instant::now(), Arc::new(DriverWake::default()));
        Driver::spawn(epoch, Sessions::server(listener), vec![socket], role, wake, counters.clone());
        Ok(Server { incoming: rx, local, counters, registry })
    }
}

/// A client's endpoint on its bound `sockets`: its one connection's core and security layer
/// (the Noise handshake bound to the core's connection id), handed to a driver; `ready` hears
/// when it is up, or why not.
fn start_client(
    config: ClientConfig,
    sockets: Vec<UdpSocket>,
    server: SocketAddr,
    ready: oneshot::Sender<Result<(), Error>>,
) -> Result<Handle, Error> {
    let paths = sockets.len();
    let sockets = (sockets.into_iter().enumerate())
        .map(|(i, udp)| {
            PathSocket::new(udp, config.emulate.get(i).copied().flatten(), random_u64() ^ (i as u64) << 1)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let mut transport = config.transport.clone();
    transport.paths = paths as u8;
    fit_to_datagram(&mut transport);
    let mut hello = Hello::asking(&transport, paths as u8);
    let mut core = braid_proto::Connection::client(transport, Instant::ZERO, random_u64());
    // The core's proposal rides in the first message, so the server's core answers at once.
    hello.params = Some(core.params().clone());
    if config.qlog_dir().is_some() {
        core.enable_trace();
    }
    // The core's Initial still leaves in the first round after the Noise keys exist (the
    // server answers it again; it matters only to a server that ignored the proposal).
    let cid = core.cid();
    let noise = ClientHandshake::with_auth(&config.auth, cid, &hello);
    let timeout = config.handshake_timeout;
    let session =
        Session::client(Box::new(noise), paths, server, timeout, Box::new(random_u64), Instant::ZERO);
    let (epoch, wake) = (tokio::time::Instant::now(), Arc::new(DriverWake::default()));
    let handle = Handle::for_core(cid, core, paths, server, epoch, wake.clone());
    for (p, socket) in handle.lock().paths.iter_mut().zip(&sockets) {
        p.local = socket.udp.local_addr().ok();
        p.remote = Some(server);
    }
    let qlog = config
        .qlog_dir()
        .and_then(|dir| QlogWriter::open(dir, cid, false, Instant::ZERO, &handle.lock().paths));
    let conn = Conn { handle: handle.clone(), qlog };
    let pair = matches!(config.auth, ClientAuth::Pair { .. });
    let role = Role::Client { server, ready: Some(ready), timeout, pair };
    Driver::spawn(epoch, Sessions::client(cid, conn, session), sockets, role, wake, Arc::default());
    Ok(handle)
}

/// Connection ids, challenge tokens and emulation seeds.
fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // A failure of the system's randomness falls back to the clock.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return t.as_nanos() as u64;
    }
    u64::from_le_bytes(b)
}

/// A listening server.
pub struct Server {
    incoming: mpsc::UnboundedReceiver<Connection>,
    local: SocketAddr,
    counters: Arc<ServerCounters>,
    registry: Registry,
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
    registry: Registry,
}

impl Connections {
    /// A handle to each connection now (hold them briefly: a connection ends only once every
    /// handle is gone).
    pub fn snapshot(&self) -> Vec<Connection> {
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        registry
            .values()
            .filter_map(|(shared, poke)| {
                Some(Connection { handle: Handle::new(shared.upgrade()?, poke.clone()) })
            })
            .collect()
    }
}
