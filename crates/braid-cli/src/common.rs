//! Flags shared by the subcommands, and turning them into runtime settings with clear errors.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_runtime::{ClientConfig, Connection, ConnectionConfig, Emulation, Endpoint, Key, PathSpec};
use clap::Args;

/// A failure to report: one line, non-zero exit.
pub struct Fail(pub String);

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<braid_runtime::Error> for Fail {
    fn from(e: braid_runtime::Error) -> Fail {
        Fail(e.to_string())
    }
}

impl From<braid_runtime::KeyError> for Fail {
    fn from(e: braid_runtime::KeyError) -> Fail {
        match e {
            braid_runtime::KeyError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Fail(format!("key file {path} not found (create one with `braid keygen -o {path}` and copy it to both ends)"))
            }
            e => Fail(e.to_string()),
        }
    }
}

pub fn fail(msg: impl Into<String>) -> Fail {
    Fail(msg.into())
}

#[derive(Args, Clone)]
pub struct KeyOpt {
    /// Pre-shared key file (from `braid keygen`), the same at both ends.
    #[arg(short, long, env = "BRAID_KEY", default_value = "braid.key")]
    pub key: PathBuf,
}

impl KeyOpt {
    pub fn load(&self) -> Result<Key, Fail> {
        Ok(Key::read_file(&self.key)?)
    }
}

#[derive(Args, Clone)]
pub struct TransportOpts {
    /// Scheme: braid, tcp, ctcp, fmtcp, tcp-ir, dfec, sato.
    #[arg(long, default_value = "braid")]
    pub mode: String,
    /// Congestion controller (default: the mode's): cubic, newreno, bbr, ctcp.
    #[arg(long)]
    pub cc: Option<String>,
    /// Close a connection after this many seconds without hearing from the peer.
    #[arg(long, default_value_t = 30.0)]
    pub idle_timeout: f64,
    /// Largest UDP payload path MTU discovery may probe for (RFC 8899), 1280 to 16448 bytes;
    /// 1280 turns discovery off. Only the braid mode probes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_DATAGRAM)]
    pub max_datagram: usize,
}

/// `--max-datagram`'s default: see docs/BENCHMARKS.md (path MTU discovery) for the loopback
/// measurements behind it. On a 1500-byte Ethernet path discovery stops at 1472 (IPv4) or 1452
/// (IPv6) by itself.
pub const DEFAULT_MAX_DATAGRAM: usize = 16_448;

impl TransportOpts {
    pub fn config(&self) -> Result<ConnectionConfig, Fail> {
        let mode: Mode = self.mode.parse().map_err(|e: String| fail(format!("--mode: {e}")))?;
        let cc = match &self.cc {
            Some(c) => Some(c.parse::<CcAlgorithm>().map_err(|e| fail(format!("--cc: {e}")))?),
            None => None,
        };
        if !(self.idle_timeout >= 0.5 && self.idle_timeout <= 86_400.0) {
            return Err(fail("--idle-timeout: expected seconds between 0.5 and 86400"));
        }
        if !(1280..=16_448).contains(&self.max_datagram) {
            return Err(fail("--max-datagram: expected 1280 to 16448 bytes"));
        }
        let mut config =
            ConnectionConfig { mode, cc, max_plpmtu: self.max_datagram, ..ConnectionConfig::default() };
        config.params.idle_timeout_ms = (self.idle_timeout * 1000.0) as u64;
        Ok(config)
    }
}

#[derive(Args, Clone)]
pub struct ClientOpts {
    /// The braid server (HOST:PORT).
    #[arg(short, long, default_value = "127.0.0.1:4433")]
    pub server: String,
    /// A path: a local address or an interface name; repeat for several paths (default: one
    /// path from any address).
    #[arg(long = "path", value_name = "ADDR|IFACE")]
    pub paths: Vec<String>,
    /// Emulated impairment "RATE,DELAY,LOSS[,mtuBYTES]" (e.g. "20mbit,50ms,2%"), both directions; once for
    /// every path, or once per --path in order.
    #[arg(long, value_name = "SPEC")]
    pub emulate: Vec<String>,
    /// Give up connecting after this many seconds without an answer.
    #[arg(long, default_value_t = 5.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub key: KeyOpt,
    #[command(flatten)]
    pub transport: TransportOpts,
    #[command(flatten)]
    pub stats: crate::stats::StatsOpts,
}

/// A HOST:PORT for a socket to connect to, resolved.
pub async fn resolve(addr: &str, flag: &str) -> Result<SocketAddr, Fail> {
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(a);
    }
    if !addr.contains(':') {
        return Err(fail(format!("{flag} {addr:?}: expected HOST:PORT")));
    }
    match tokio::net::lookup_host(addr).await {
        Ok(mut it) => it.next().ok_or_else(|| fail(format!("{flag} {addr:?}: the name has no address"))),
        Err(e) => Err(fail(format!("{flag} {addr:?}: cannot resolve ({e})"))),
    }
}

/// An address to listen on: IP:PORT only (no name lookups for a bind).
pub fn parse_listen(addr: &str, flag: &str) -> Result<SocketAddr, Fail> {
    addr.parse::<SocketAddr>().map_err(|_| {
        fail(format!("{flag} {addr:?}: bad address (expected IP:PORT, e.g. 127.0.0.1:1080 or [::1]:1080)"))
    })
}

/// `--emulate` values for `paths` paths: none, one for all, or one per path.
pub fn emulations(specs: &[String], paths: usize) -> Result<Vec<Option<Emulation>>, Fail> {
    let emulate: Vec<Emulation> = specs
        .iter()
        .map(|e| e.parse::<Emulation>().map_err(|e| fail(e.to_string())))
        .collect::<Result<_, _>>()?;
    Ok(match emulate.len() {
        0 => Vec::new(),
        1 => vec![Some(emulate[0]); paths],
        n if n == paths => emulate.into_iter().map(Some).collect(),
        n => {
            return Err(fail(format!(
                "--emulate given {n} times for {paths} paths (give it once for all, or once per --path)"
            )))
        }
    })
}

impl ClientOpts {
    pub fn client_config(&self) -> Result<ClientConfig, Fail> {
        let key = self.key.load()?;
        let mut config = ClientConfig::new(key);
        config.transport = self.transport.config()?;
        config.paths = self.paths.iter().map(|p| p.parse::<PathSpec>().expect("infallible")).collect();
        if config.paths.is_empty() {
            config.paths = vec![PathSpec::Any];
        }
        config.emulate = emulations(&self.emulate, config.paths.len())?;
        if !(self.timeout > 0.0 && self.timeout < 3600.0) {
            return Err(fail("--timeout: expected seconds between 0 and 3600"));
        }
        config.handshake_timeout = std::time::Duration::from_secs_f64(self.timeout);
        Ok(config)
    }

    /// Connects to the server with these options.
    pub async fn connect(&self) -> Result<Connection, Fail> {
        self.stats.check()?;
        let config = self.client_config()?;
        let server = resolve(&self.server, "--server").await?;
        let conn = Endpoint::connect(config, server).await?;
        tracing::info!("connected to {server} over {} path(s)", conn.paths().len());
        self.stats.spawn(&conn, None)?;
        Ok(conn)
    }
}

pub fn keygen(out: &Path) -> Result<(), Fail> {
    let key = Key::generate()?;
    key.write_file(out).map_err(|e| match e {
        braid_runtime::KeyError::Io { path, source }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            fail(format!("{path} already exists (not overwritten; choose another name with -o)"))
        }
        e => Fail(e.to_string()),
    })?;
    eprintln!("wrote a new key to {} (copy it to the other end; keep it secret)", out.display());
    Ok(())
}
