//! The public face: [`Endpoint`] opens client connections and servers; a [`Server`] hands out
//! each [`Connection`] it accepts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use braid_proto::ConnectionConfig;
use tokio::sync::{mpsc, oneshot};

use crate::connection::Connection;
use crate::crypto::{ClientAuth, ServerAuth, TAG_LEN};
use crate::driver::{self, Driver};
use crate::emulate::Emulation;
use crate::limits::{Limits, ServerCounters};
use crate::shared::{Handle, Registry};
use crate::socket::{self, PathSpec};
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
    /// must exist. Default none.
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
    /// directory, which must exist. Default none.
    pub qlog: Option<std::path::PathBuf>,
}

impl ServerConfig {
    pub fn new(auth: impl Into<ServerAuth>) -> ServerConfig {
        ServerConfig {
            auth: auth.into(),
            transport: ConnectionConfig::default(),
            limits: Limits::default(),
            emulate: None,
            qlog: None,
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
            qlog: config.qlog,
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
        let mut transport = config.transport.clone();
        config.limits.apply(&mut transport);
        fit_to_datagram(&mut transport);
        let (tx, rx) = mpsc::unbounded_channel();
        let counters = Arc::new(ServerCounters::default());
        let registry = Registry::default();
        Driver::start_server(driver::ServerSetup {
            auth: config.auth,
            transport,
            socket: udp,
            emulate: config.emulate,
            limits: config.limits,
            counters: counters.clone(),
            registry: registry.clone(),
            incoming: tx,
            qlog: config.qlog,
        })?;
        Ok(Server { incoming: rx, local, counters, registry })
    }
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
            .filter_map(|(shared, wake)| {
                Some(Connection { handle: Handle::new(shared.upgrade()?, wake.clone()) })
            })
            .collect()
    }
}
