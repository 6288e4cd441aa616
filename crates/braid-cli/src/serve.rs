//! The far end: `braid server` (CONNECT requests from `forward` and `socks`, files with `--dir`)
//! and `braid recv` (one file, then exit).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use blake2::{Blake2s256, Digest};
use braid_runtime::{Connection, ConnectionConfig, Endpoint, ServerAuth, ServerConfig, Stream};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use crate::common::{fail, Fail};
use crate::request;

/// What this end serves.
#[derive(Clone)]
pub struct Role {
    /// Accept CONNECT requests (forwarding, SOCKS).
    pub connect: bool,
    /// Accept files into this directory.
    pub dir: Option<PathBuf>,
    /// `braid recv`: accept one file (to this path, or its own name here), then exit.
    pub one_file: Option<Option<PathBuf>>,
    /// Per-connection statistics (`braid server --stats`, `--stats-json`).
    pub stats: crate::stats::StatsOpts,
    /// Connections, memory, streams, handshake rate.
    pub limits: braid_runtime::Limits,
    /// Where to serve Prometheus metrics (`--metrics`).
    pub metrics: Option<SocketAddr>,
    /// Accept tunnels (`braid server --tun`).
    pub tun: Option<std::sync::Arc<crate::tunnel::server::TunServer>>,
    /// Where to write a qlog file per connection (`--qlog`).
    pub qlog: Option<PathBuf>,
}

/// How long the server tries to reach a CONNECT target.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn run_server(
    key: ServerAuth,
    listen: SocketAddr,
    transport: ConnectionConfig,
    emulate: Option<braid_runtime::Emulation>,
    role: Role,
) -> Result<(), Fail> {
    let mut config = ServerConfig::new(key);
    config.transport = transport;
    config.emulate = emulate;
    config.limits = role.limits;
    config.qlog = role.qlog.clone();
    let mut server = Endpoint::server(config, listen)?;
    eprintln!("braid: listening on {} (UDP)", server.local_addr()?);
    if let Some(addr) = role.metrics {
        let local = crate::metrics::serve(addr, server.counters(), server.connections()).await?;
        eprintln!("braid: metrics on http://{local}/metrics");
    }
    let (done_tx, mut done_rx) = mpsc::channel::<Result<(), Fail>>(1);
    let one_file = role.one_file.is_some();
    loop {
        tokio::select! {
            conn = server.accept() => {
                let Some(conn) = conn else { return Err(fail("the server stopped")) };
                tokio::spawn(serve_connection(conn, role.clone(), done_tx.clone()));
            }
            Some(result) = done_rx.recv(), if one_file => return result,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

pub async fn serve_connection(conn: Connection, role: Role, done: mpsc::Sender<Result<(), Fail>>) {
    let peer = conn.remote_address();
    if let Err(e) = role.stats.spawn(&conn, Some(format!("connection from {peer}"))) {
        tracing::warn!("{e}");
    }
    while let Some(stream) = conn.accept_stream().await {
        let role = role.clone();
        let done = done.clone();
        let conn = conn.clone();
        tokio::spawn(async move {
            if let Some(result) = serve_stream(stream, &role, &conn).await {
                let _ = done.send(result).await;
            }
        });
    }
    let reason = conn.closed().await;
    tracing::info!(%peer, %reason, "connection ended");
}

/// Serves one stream; a finished file transfer in `recv` mode returns its result.
async fn serve_stream(mut stream: Stream, role: &Role, conn: &Connection) -> Option<Result<(), Fail>> {
    let kind = stream.read_u8().await.ok()?;
    match kind {
        request::CONNECT => {
            let target = request::read_short_string(&mut stream).await.ok()?;
            if !role.connect {
                let _ = request::write_status(
                    &mut stream,
                    request::NOT_ALLOWED,
                    "this end does not forward connections",
                )
                .await;
                return None;
            }
            connect(stream, &target).await;
            None
        }
        request::FILE => {
            let dest = match (&role.one_file, &role.dir) {
                (Some(out), _) => Dest::Recv(out.clone()),
                (None, Some(dir)) => Dest::Dir(dir.clone()),
                (None, None) => {
                    tracing::warn!("a file was offered but this server takes none (start it with --dir DIR)");
                    let mut refusal = vec![request::NOT_ALLOWED];
                    refusal.extend_from_slice(&[0; 32]);
                    let _ = stream.write_all(&refusal).await;
                    let _ = stream.shutdown().await;
                    return None;
                }
            };
            let result = receive_file(&mut stream, dest).await;
            let _ = stream.shutdown().await;
            // The answer must reach the sender before `recv` exits.
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.flush()).await;
            match (&role.one_file, result) {
                (Some(_), r) => Some(r),
                (None, Err(e)) => {
                    tracing::warn!("receiving a file: {e}");
                    None
                }
                (None, Ok(())) => None,
            }
        }
        request::BENCH => {
            if let Err(e) = crate::bench::serve(&mut stream).await {
                tracing::debug!("bench: {e}");
            }
            None
        }
        request::ECHO => {
            let _ = crate::bench::echo(&mut stream).await;
            None
        }
        crate::tunnel::TUN_OPEN => {
            crate::tunnel::server::open(stream, conn.clone(), role.tun.clone()).await;
            None
        }
        crate::tunnel::TUN_CONNECT => {
            let target = request::read_short_string(&mut stream).await.ok()?;
            if let Some(stream) = crate::tunnel::server::connect(stream, &target, role.tun.as_deref()).await {
                connect(stream, &target).await;
            }
            None
        }
        other => {
            tracing::debug!("unknown request {other:#x}");
            None
        }
    }
}

async fn connect(mut stream: Stream, target: &str) {
    let result = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(target)).await;
    let mut tcp = match result {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => {
            let status = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => request::CONNECTION_REFUSED,
                std::io::ErrorKind::NetworkUnreachable => request::NETWORK_UNREACHABLE,
                std::io::ErrorKind::HostUnreachable => request::HOST_UNREACHABLE,
                // A name that does not resolve.
                _ if e.to_string().contains("lookup") || e.to_string().contains("resolve") => {
                    request::HOST_UNREACHABLE
                }
                _ => request::GENERAL_FAILURE,
            };
            tracing::info!(%target, error = %e, "CONNECT failed");
            let _ = request::write_status(&mut stream, status, &format!("{target}: {e}")).await;
            return;
        }
        Err(_) => {
            tracing::info!(%target, "CONNECT timed out");
            let _ =
                request::write_status(&mut stream, request::TIMED_OUT, &format!("{target}: timed out")).await;
            return;
        }
    };
    tracing::debug!(%target, "CONNECT connected");
    if request::write_status(&mut stream, request::OK, "").await.is_err() {
        return;
    }
    let _ = tcp.set_nodelay(true);
    if let Err(e) = tokio::io::copy_bidirectional(&mut stream, &mut tcp).await {
        tracing::debug!("{target}: {e}");
    }
}

enum Dest {
    Recv(Option<PathBuf>),
    Dir(PathBuf),
}

/// A file name from the peer, kept to its last component: no directories, nothing hidden.
fn safe_name(name: &str) -> Option<&str> {
    let base = name.rsplit(['/', '\\']).next()?;
    (!base.is_empty() && base != "." && base != ".." && !base.starts_with('.')).then_some(base)
}

async fn receive_file(stream: &mut Stream, dest: Dest) -> Result<(), Fail> {
    let io = |e: std::io::Error| fail(format!("receiving: {e}"));
    let name_len = stream.read_u16().await.map_err(io)?;
    let mut name = vec![0u8; name_len.into()];
    stream.read_exact(&mut name).await.map_err(io)?;
    let name = String::from_utf8_lossy(&name).to_string();
    let size = stream.read_u64().await.map_err(io)?;
    let path = match dest {
        Dest::Recv(Some(p)) => p,
        Dest::Recv(None) | Dest::Dir(_) => {
            let base = safe_name(&name)
                .ok_or_else(|| fail(format!("the sender's file name {name:?} is not usable")))?;
            match dest {
                Dest::Dir(d) => d.join(base),
                _ => PathBuf::from(base),
            }
        }
    };
    let file = tokio::fs::File::create(&path).await.map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let mut file = BufWriter::with_capacity(1 << 20, file);
    let started = std::time::Instant::now();
    let mut hasher = Blake2s256::new();
    let mut left = size;
    let mut buf = vec![0u8; 256 << 10];
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = stream.read(&mut buf[..want]).await.map_err(io)?;
        if n == 0 {
            return Err(fail(format!("{name}: the sender stopped after {} of {size} bytes", size - left)));
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).await.map_err(|e| fail(format!("{}: {e}", path.display())))?;
        left -= n as u64;
    }
    file.flush().await.map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let mut theirs = [0u8; 32];
    stream.read_exact(&mut theirs).await.map_err(io)?;
    let ours: [u8; 32] = hasher.finalize().into();
    let status = if ours == theirs { request::OK } else { request::HASH_MISMATCH };
    let mut answer = vec![status];
    answer.extend_from_slice(&ours);
    stream.write_all(&answer).await.map_err(io)?;
    let secs = started.elapsed().as_secs_f64();
    if status != request::OK {
        return Err(fail(format!("{}: hash mismatch (the file is corrupt)", path.display())));
    }
    eprintln!(
        "braid: received {} ({size} bytes) in {secs:.2}s, {:.1} Mbit/s, BLAKE2s {} ok",
        path.display(),
        size as f64 * 8.0 / secs.max(1e-6) / 1e6,
        hex(&ours[..8])
    );
    Ok(())
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn file_names_from_the_peer_stay_here() {
        assert_eq!(safe_name("a.txt"), Some("a.txt"));
        assert_eq!(safe_name("/etc/passwd"), Some("passwd"));
        assert_eq!(safe_name("../../x"), Some("x"));
        assert_eq!(safe_name(".."), None);
        assert_eq!(safe_name("dir/"), None);
        assert_eq!(safe_name(".bashrc"), None);
    }
}
