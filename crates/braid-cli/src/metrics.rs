//! `--metrics ADDR`: numbers in Prometheus' text exposition format (OpenMetrics text, which
//! Prometheus scrapes as is) over plain HTTP, at any path. `braid server` serves its own
//! counters and every live connection's; the client subcommands (`send`, `forward`, `bench`,
//! `socks`) serve their one connection's under the same names.
//!
//! Server-wide counters (handshakes, limits hit, datagrams and bytes, connections ended) and,
//! for each live connection, labelled by its peer address: its paths with their state, smoothed
//! RTT, congestion window and loss estimate, the repair symbols it sent and the source
//! symbols it recovered from repair ("useful" repair at this end), and its unreliable
//! datagrams rebuilt too late. Repair the peer sent that was not needed is that peer's repair
//! sent less this end's recovered; it is not counted apart.

use std::net::SocketAddr;
use std::sync::Arc;

use braid_proto::conn::PathState;
use braid_runtime::{Connection, Connections, Limit, ServerCounters};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::fail::{fail, Fail};

type Labels = Vec<(&'static str, String)>;

/// What an endpoint shows.
#[derive(Clone)]
pub enum Source {
    /// A server: its counters and its live connections.
    Server { counters: Arc<ServerCounters>, conns: Connections },
    /// A client: its one connection.
    Client(Connection),
}

impl Source {
    fn render(&self) -> String {
        match self {
            Source::Server { counters, conns } => render(counters, conns),
            Source::Client(conn) => render_client(conn),
        }
    }
}

/// Binds `addr` (an error is one line naming the flag).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Fail> {
    TcpListener::bind(addr).await.map_err(|e| fail(format!("--metrics {addr}: {e}")))
}

/// Answers every request on `listener` with `source`'s metrics, until the process ends.
pub fn spawn(listener: TcpListener, source: Source) {
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else { continue };
            let source = source.clone();
            tokio::spawn(async move {
                // The request is not parsed: every path is the metrics. Read what came (bounded).
                let mut request = [0u8; 4096];
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut request)).await;
                let body = source.render();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(body.as_bytes()).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
}

/// A server's metrics on `addr`: binds now (an error is one line), then serves in the background.
pub async fn serve(
    addr: SocketAddr,
    counters: Arc<ServerCounters>,
    conns: Connections,
) -> Result<SocketAddr, Fail> {
    let listener = bind(addr).await?;
    let local = listener.local_addr().map_err(|e| fail(format!("--metrics {addr}: {e}")))?;
    spawn(listener, Source::Server { counters, conns });
    Ok(local)
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let c: Counter = Counter::default();
    c.inc_by(value);
    registry.register(name, help, c);
}

/// A server's exposition text now.
pub fn render(counters: &ServerCounters, conns: &Connections) -> String {
    let mut r = Registry::with_prefix("braid");
    server_counters(&mut r, counters);
    connection_metrics(&mut r, &conns.snapshot());
    finish(&r)
}

/// A client's exposition text now: its connection (none once it ended).
pub fn render_client(conn: &Connection) -> String {
    let mut r = Registry::with_prefix("braid");
    let live: Vec<Connection> = conn.is_established().then(|| conn.clone()).into_iter().collect();
    connection_metrics(&mut r, &live);
    finish(&r)
}

fn finish(r: &Registry) -> String {
    let mut out = String::new();
    encode(&mut out, r).expect("writing to a String");
    out
}

fn server_counters(r: &mut Registry, counters: &ServerCounters) {
    let get = ServerCounters::get;
    counter(
        r,
        "handshakes_accepted",
        "First messages that authenticated",
        get(&counters.handshakes_accepted),
    );
    counter(
        r,
        "handshake_failures",
        "First messages that did not authenticate",
        get(&counters.handshakes_failed),
    );
    counter(r, "handshakes_replayed", "Replayed first messages ignored", get(&counters.handshakes_replayed));
    counter(r, "connections_closed", "Connections ended", get(&counters.connections_closed));
    counter(
        r,
        "connections_timed_out",
        "Connections ended by the idle timeout (nothing heard, a lost CLOSE among the causes)",
        get(&counters.connections_timed_out),
    );
    let closing = Gauge::<i64>::default();
    closing.set(get(&counters.connections_closing) as i64);
    r.register(
        "connections_closing",
        "Connections this end closed, kept as their CLOSE alone for the closing period (not counted against max-connections)",
        closing,
    );
    counter(
        r,
        "handshakes_abandoned",
        "Handshakes forgotten unfinished after 10 s",
        get(&counters.handshakes_abandoned),
    );
    counter(
        r,
        "connections_violated",
        "Connections a peer's violation closed",
        get(&counters.connections_violated),
    );
    counter(r, "datagrams_received", "Datagrams received", get(&counters.datagrams_received));
    counter(
        r,
        "datagrams_sent",
        "Datagrams sent (handshakes and challenges; packets are per path)",
        get(&counters.datagrams_sent),
    );
    if let Some(drops) = counters.socket_drops() {
        counter(
            r,
            "socket_receive_drops",
            "Datagrams the kernel dropped on the server's socket because its receive buffer was full (the server did not read in time; Linux only)",
            drops,
        );
    }
    counter(r, "bytes_received", "UDP payload bytes received", get(&counters.bytes_received));
    counter(r, "bytes_sent", "UDP payload bytes sent (handshakes and challenges)", get(&counters.bytes_sent));
    let limits = Family::<Labels, Counter>::default();
    for limit in Limit::ALL {
        limits.get_or_create(&vec![("limit", limit.name().to_string())]).inc_by(counters.limit_hits(limit));
    }
    r.register("limit_hits", "Times a limit turned something away", limits.clone());
}

/// Per connection and per path, the same names at both ends.
fn connection_metrics(r: &mut Registry, conns: &[Connection]) {
    let connections = Family::<Labels, Gauge>::default();
    let paths = Family::<Labels, Gauge>::default();
    let srtt = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let cwnd = Family::<Labels, Gauge>::default();
    let loss = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let path_bytes_sent = Family::<Labels, Counter>::default();
    let path_bytes_received = Family::<Labels, Counter>::default();
    let repair_sent = Family::<Labels, Counter>::default();
    let recovered = Family::<Labels, Counter>::default();
    let held = Family::<Labels, Gauge>::default();
    let late = Family::<Labels, Counter>::default();
    for state in ["established", "handshake"] {
        let _ = connections.get_or_create(&vec![("state", state.to_string())]);
    }
    for state in ["active", "failed", "removed"] {
        let _ = paths.get_or_create(&vec![("state", state.to_string())]);
    }
    for conn in conns {
        let state = if conn.is_established() { "established" } else { "handshake" };
        connections.get_or_create(&vec![("state", state.to_string())]).inc();
        let peer = conn.remote_address().to_string();
        let stats = conn.stats();
        repair_sent.get_or_create(&vec![("peer", peer.clone())]).inc_by(stats.repair_symbols_sent);
        recovered.get_or_create(&vec![("peer", peer.clone())]).inc_by(stats.symbols_recovered);
        held.get_or_create(&vec![("peer", peer.clone())]).set(conn.receive_buffered() as i64);
        late.get_or_create(&vec![("peer", peer.clone())]).inc_by(conn.datagram_stats().late);
        for p in conn.paths() {
            let state = match p.stats.state {
                PathState::Active => "active",
                PathState::Failed => "failed",
                PathState::Removed => "removed",
            };
            paths.get_or_create(&vec![("state", state.to_string())]).inc();
            let labels = vec![("peer", peer.clone()), ("path", p.id.to_string())];
            srtt.get_or_create(&labels).set(p.srtt.as_secs_f64());
            cwnd.get_or_create(&labels).set(p.cwnd as i64);
            loss.get_or_create(&labels).set(p.loss);
            path_bytes_sent.get_or_create(&labels).inc_by(p.bytes_sent);
            path_bytes_received.get_or_create(&labels).inc_by(p.bytes_received);
        }
    }
    r.register("connections", "Live connections by state", connections);
    r.register("paths", "Paths of live connections by state", paths);
    r.register("path_srtt_seconds", "Smoothed round-trip time per path", srtt);
    r.register("path_cwnd_bytes", "Congestion window per path", cwnd);
    r.register("path_loss_ratio", "The core's loss estimate per path", loss);
    r.register("path_sent_bytes", "Bytes sent per path (datagrams, AEAD tag included)", path_bytes_sent);
    r.register("path_received_bytes", "Bytes received per path", path_bytes_received);
    r.register("repair_symbols_sent", "Repair symbols sent per connection", repair_sent);
    r.register("repair_symbols_useful", "Source symbols recovered from repair per connection", recovered);
    r.register("receive_buffered_bytes", "Bytes of the peer's data held per connection", held);
    r.register(
        "datagrams_late",
        "Unreliable datagrams rebuilt from repair after their deadline (dropped) per connection",
        late,
    );
}
