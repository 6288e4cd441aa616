//! Flags shared by the subcommands, and turning them into runtime settings with clear errors.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use braid_fec::CodeFamily;
use braid_netem::units::parse_size;
use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::sched::SchedulerKind;
use braid_runtime::{
    ClientAuth, ClientConfig, Connection, ConnectionConfig, Emulation, Endpoint, Key, KeyFile, Limits,
    PathSpec, ServerAuth,
};
use clap::Args;

pub use crate::fail::{fail, Fail};

#[derive(Args, Clone)]
pub struct KeyOpt {
    /// Key file: a pre-shared key (`braid keygen`, the same at both ends) or this end's private
    /// key (`braid keygen --pair`; then the client needs --server-key, the server --authorized).
    #[arg(short, long, env = "BRAID_KEY", default_value = "braid.key")]
    pub key: PathBuf,
}

impl KeyOpt {
    /// The client's credentials: the shared key, or the private key and `server_key`.
    pub fn client_auth(&self, server_key: Option<&str>) -> Result<ClientAuth, Fail> {
        match (Key::read_any(&self.key)?, server_key) {
            (KeyFile::Shared(k), None) => Ok(ClientAuth::Psk(k)),
            (KeyFile::Shared(_), Some(_)) => Err(fail(format!(
                "--server-key needs a private key in --key ({} holds a shared key; make a pair with `braid keygen --pair`)",
                self.key.display()
            ))),
            (KeyFile::Private(_), None) => Err(fail(format!(
                "--key {} is a private key: give the server's public key with --server-key",
                self.key.display()
            ))),
            (KeyFile::Private(private), Some(pubkey)) => {
                Ok(ClientAuth::Pair { private, server: public_key(pubkey, "--server-key")? })
            }
        }
    }

    /// The server's credentials: the shared key, or the private key and the allow-list.
    pub fn server_auth(&self, authorized: Option<&Path>) -> Result<ServerAuth, Fail> {
        match (Key::read_any(&self.key)?, authorized) {
            (KeyFile::Shared(k), None) => Ok(ServerAuth::Psk(k)),
            (KeyFile::Shared(_), Some(_)) => Err(fail(format!(
                "--authorized needs a private key in --key ({} holds a shared key; make a pair with `braid keygen --pair`)",
                self.key.display()
            ))),
            (KeyFile::Private(_), None) => Err(fail(format!(
                "--key {} is a private key: list the clients' public keys in a file given with --authorized",
                self.key.display()
            ))),
            (KeyFile::Private(private), Some(file)) => {
                let authorized = Key::read_authorized(file)?;
                if authorized.is_empty() {
                    return Err(fail(format!("--authorized {}: no public key in the file", file.display())));
                }
                Ok(ServerAuth::Pair { private, authorized })
            }
        }
    }
}

/// A public key given as 64 hex digits or as a file holding them (a `.pub` file).
pub fn public_key(value: &str, flag: &str) -> Result<Key, Fail> {
    if let Some(k) = Key::parse_public(value) {
        return Ok(k);
    }
    match std::fs::read_to_string(value) {
        Ok(text) => Key::parse_public(text.trim()).ok_or_else(|| {
            fail(format!("{flag} {value}: the file holds no public key (64 hexadecimal digits)"))
        }),
        Err(e) => Err(fail(format!(
            "{flag} {value:?}: neither a public key (64 hexadecimal digits) nor a readable file ({e})"
        ))),
    }
}

#[derive(Args, Clone)]
pub struct TransportOpts {
    /// Scheme: braid, tcp, mptcp, ctcp, fmtcp, tcp-ir, dfec, sato, mptcp-dfec.
    #[arg(long, default_value = "braid")]
    pub mode: String,
    /// Erasure code (default: the mode's): xor, rlnc, raptorq. Each mode allows only the codes
    /// it is built for (see `scheme_error`).
    #[arg(long)]
    pub code: Option<String>,
    /// Multipath scheduler (default: the mode's): minrtt, roundrobin, redundant, ctcp, eat, braid.
    #[arg(long)]
    pub scheduler: Option<String>,
    /// Congestion controller (default: the mode's): cubic, newreno, bbr, ctcp, lia.
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

/// `--max-datagram`'s default: see docs/BENCHMARKS.md ("Runtime over loopback") for the
/// measurements behind it. On a 1500-byte Ethernet path discovery stops at 1472 (IPv4) or 1452
/// (IPv6) by itself.
pub const DEFAULT_MAX_DATAGRAM: usize = 16_448;

/// How far a client's receive windows may grow (they start at the core's defaults: 16 MiB for
/// the connection, 4 MiB per stream).
const CLIENT_MAX_WINDOW: u64 = 16 << 20;

impl TransportOpts {
    pub fn config(&self) -> Result<ConnectionConfig, Fail> {
        let mode: Mode = self.mode.parse().map_err(|e: String| fail(format!("--mode: {e}")))?;
        let cc = match &self.cc {
            Some(c) => Some(c.parse::<CcAlgorithm>().map_err(|e| fail(format!("--cc: {e}")))?),
            None => None,
        };
        let scheduler = match &self.scheduler {
            Some(k) => Some(k.parse::<SchedulerKind>().map_err(|e| fail(format!("--scheduler: {e}")))?),
            None => None,
        };
        let code = match &self.code {
            Some(c) => {
                let c = c.parse::<CodeFamily>().map_err(|e| fail(format!("--code: {e}")))?;
                if let Some(e) = scheme_error(mode, c) {
                    return Err(fail(e));
                }
                c
            }
            None => mode.code_family(),
        };
        if !(self.idle_timeout >= 0.5 && self.idle_timeout <= 86_400.0) {
            return Err(fail("--idle-timeout: expected seconds between 0.5 and 86400"));
        }
        if !(1280..=16_448).contains(&self.max_datagram) {
            return Err(fail("--max-datagram: expected 1280 to 16448 bytes"));
        }
        let mut config = ConnectionConfig {
            mode,
            cc,
            scheduler,
            max_plpmtu: self.max_datagram,
            // Receive-window auto-tuning up to 16 MiB (a server's limits lower it).
            max_window: CLIENT_MAX_WINDOW,
            ..ConnectionConfig::default()
        };
        config.params.code = code;
        config.params.idle_timeout_ms = (self.idle_timeout * 1000.0) as u64;
        Ok(config)
    }
}

/// The codes each mode works with. The XOR papers' modes form their parity groups at send time
/// and know no other code; CTCP is RLNC (CTCP §III) and FMTCP RaptorQ (FMTCP §III-A); `tcp` and
/// `mptcp` send no repair, so their code is never used and only the default is accepted; braid's
/// blocks work with either rank-based code (an XOR block has a single parity, which braid's
/// adaptive repair cannot use).
pub fn codes_for(mode: Mode) -> &'static [CodeFamily] {
    match mode {
        Mode::Braid => &[CodeFamily::Rlnc, CodeFamily::RaptorQ],
        Mode::Fmtcp => &[CodeFamily::RaptorQ],
        Mode::Tcp | Mode::Mptcp | Mode::Ctcp => &[CodeFamily::Rlnc],
        Mode::TcpIr | Mode::Dfec | Mode::Sato | Mode::MptcpDfec => &[CodeFamily::Xor],
    }
}

/// Why `--code` does not go with `--mode` (one line naming what is allowed), if it does not.
pub fn scheme_error(mode: Mode, code: CodeFamily) -> Option<String> {
    let allowed = codes_for(mode);
    (!allowed.contains(&code)).then(|| {
        let names: Vec<&str> = allowed.iter().map(|c| c.name()).collect();
        format!(
            "--code {} does not go with --mode {} (allowed: {})",
            code.name(),
            mode.name(),
            names.join(", ")
        )
    })
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
    /// Emulated impairment "RATE,DELAY,LOSS[,mtuBYTES]" (e.g. "20mbit,50ms,2%"; datagrams up to 1500 bytes unless mtuBYTES, mtu65535 for no limit), both directions; once for
    /// every path, or once per --path in order.
    // The help text's "[,mtuBYTES]" is the flag's syntax, not a rustdoc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "SPEC")]
    pub emulate: Vec<String>,
    /// Give up connecting after this many seconds without an answer.
    #[arg(long, default_value_t = 5.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub key: KeyOpt,
    /// The server's public key (key pairs): 64 hex digits, or its `.pub` file.
    #[arg(long, value_name = "PUB")]
    pub server_key: Option<String>,
    #[command(flatten)]
    pub transport: TransportOpts,
    #[command(flatten)]
    pub stats: crate::stats::StatsOpts,
    /// Serve Prometheus metrics of the connection over HTTP on this TCP address (e.g.
    /// 127.0.0.1:9091): the names `braid server --metrics` uses for its connections.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Write the connection's qlog (JSON-SEQ, for qvis) into this directory (made if missing).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
}

/// `--qlog DIR`: made if missing; an error is one line.
pub fn qlog_dir(dir: Option<&Path>) -> Result<Option<PathBuf>, Fail> {
    let Some(dir) = dir else { return Ok(None) };
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("--qlog {}: {e}", dir.display())))?;
    // A directory a file can be written into, checked now rather than at the first connection.
    let probe = dir.join(".braid-qlog-check");
    std::fs::write(&probe, b"")
        .map_err(|e| fail(format!("--qlog {}: cannot write there ({e})", dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(Some(dir.to_path_buf()))
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
        // The flags first, then the key file: a wrong flag is named even where no key exists.
        let transport = self.transport.config()?;
        let mut paths: Vec<PathSpec> =
            self.paths.iter().map(|p| p.parse::<PathSpec>().expect("infallible")).collect();
        if paths.is_empty() {
            paths = vec![PathSpec::Any];
        }
        let emulate = emulations(&self.emulate, paths.len())?;
        if !(self.timeout > 0.0 && self.timeout < 3600.0) {
            return Err(fail("--timeout: expected seconds between 0 and 3600"));
        }
        let auth = self.key.client_auth(self.server_key.as_deref())?;
        let mut config = ClientConfig::new(auth);
        config.transport = transport;
        config.paths = paths;
        config.emulate = emulate;
        config.handshake_timeout = std::time::Duration::from_secs_f64(self.timeout);
        config.qlog = qlog_dir(self.qlog.as_deref())?;
        Ok(config)
    }

    /// Connects to the server with these options.
    pub async fn connect(&self) -> Result<Connection, Fail> {
        self.stats.check()?;
        let config = self.client_config()?;
        let server = resolve(&self.server, "--server").await?;
        // Bound before connecting: a taken or bad address is said at once.
        let metrics = match self.metrics.as_deref() {
            Some(m) => Some(crate::metrics::bind(parse_listen(m, "--metrics")?).await?),
            None => None,
        };
        let conn = Endpoint::connect(config, server).await?;
        tracing::info!(%server, paths = conn.paths().len(), mode = %self.transport.mode, "connected");
        self.stats.spawn(&conn, None)?;
        if let Some(listener) = metrics {
            if let Ok(local) = listener.local_addr() {
                eprintln!("braid: metrics on http://{local}/metrics");
            }
            crate::metrics::spawn(listener, crate::metrics::Source::Client(conn.clone()));
        }
        Ok(conn)
    }
}

fn exists_error(e: braid_runtime::KeyError) -> Fail {
    match e {
        braid_runtime::KeyError::Io { path, source }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            fail(format!("{path} already exists (not overwritten; choose another name with -o)"))
        }
        e => Fail(e.to_string()),
    }
}

/// `braid keygen`: a shared key; with `pair`, a private key in `out` and its public key in
/// `out.pub` (also printed on stdout).
pub fn keygen(out: &Path, pair: bool) -> Result<(), Fail> {
    if !pair {
        let key = Key::generate()?;
        key.write_file(out).map_err(exists_error)?;
        eprintln!("wrote a new key to {} (copy it to the other end; keep it secret)", out.display());
        return Ok(());
    }
    let mut pub_path = out.as_os_str().to_owned();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    if pub_path.exists() {
        return Err(fail(format!(
            "{} already exists (not overwritten; choose another name with -o)",
            pub_path.display()
        )));
    }
    let (private, public) = braid_runtime::crypto::generate_pair()?;
    private.write_private(out).map_err(exists_error)?;
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "braid".into());
    std::fs::write(&pub_path, format!("{} {host}\n", public.to_hex()))
        .map_err(|e| fail(format!("cannot write {}: {e}", pub_path.display())))?;
    println!("{}", public.to_hex());
    eprintln!(
        "wrote a private key to {} (keep it secret) and its public key to {} (give it to the other end: \
         a server lists clients' keys in its --authorized file; a client names the server's with --server-key)",
        out.display(),
        pub_path.display()
    );
    Ok(())
}

/// The server's `--emulate` (one spec: everything it sends and receives).
pub fn server_emulation(spec: Option<&str>) -> Result<Option<Emulation>, Fail> {
    spec.map(|e| e.parse::<Emulation>().map_err(|e| fail(e.to_string()))).transpose()
}

/// `braid server`'s limits (braid_runtime::Limits; the defaults fit a small router).
#[derive(Args, Clone, Debug)]
pub struct LimitOpts {
    /// Most connections at once, handshakes included.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,
    /// Bytes of a peer's data one connection may hold (its receive windows, which start at
    /// 1 MiB and grow up to this while the application keeps up): a number with an optional
    /// unit (KiB, MiB, GiB; kB, MB, GB are decimal). Goodput per connection is at most this per
    /// round trip.
    #[arg(long, value_name = "BYTES", default_value = "4MiB")]
    pub connection_memory: String,
    /// Streams a peer may open on one connection.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams)]
    pub max_streams: u64,
    /// New handshakes taken on per second (bursts of one second's worth); the rest are dropped
    /// before any public-key work.
    #[arg(long, value_name = "PER_SECOND", default_value_t = Limits::default().handshake_rate)]
    pub handshake_rate: u32,
}

impl LimitOpts {
    pub fn limits(&self) -> Result<Limits, Fail> {
        // braid's one size grammar (braid-netem's, as in scenario files): KiB/MiB/GiB are binary,
        // kB/MB/GB decimal.
        let connection_memory = parse_size(&self.connection_memory)
            .ok()
            .filter(|&b| (16 << 10..=1 << 40).contains(&b))
            .ok_or_else(|| {
                fail(format!(
                    "--connection-memory {}: expected 16KiB to 1TiB, as bytes or with a unit (e.g. 4MiB)",
                    self.connection_memory
                ))
            })?;
        if self.max_connections == 0 {
            return Err(fail("--max-connections: at least 1"));
        }
        if self.max_streams == 0 || self.max_streams > 1 << 32 {
            return Err(fail("--max-streams: 1 to 4294967296"));
        }
        if self.handshake_rate == 0 {
            return Err(fail("--handshake-rate: at least 1 a second"));
        }
        Ok(Limits {
            max_connections: self.max_connections,
            connection_memory,
            max_streams: self.max_streams,
            handshake_rate: self.handshake_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(connection_memory: &str) -> Result<Limits, String> {
        let opts = LimitOpts {
            max_connections: 256,
            connection_memory: connection_memory.to_owned(),
            max_streams: 100,
            handshake_rate: 50,
        };
        opts.limits().map_err(|e| e.to_string())
    }

    #[test]
    fn connection_memory_takes_the_one_size_grammar() {
        assert_eq!(limits("4MiB").unwrap().connection_memory, 4 << 20);
        assert_eq!(limits("64MB").unwrap().connection_memory, 64_000_000);
        assert_eq!(limits("1048576").unwrap().connection_memory, 1 << 20);
        for bad in ["15KiB", "2TiB", "4M", "lots"] {
            let e = limits(bad).unwrap_err();
            assert!(e.contains(&format!("--connection-memory {bad}: expected 16KiB to 1TiB")), "{bad}: {e}");
        }
    }
}
