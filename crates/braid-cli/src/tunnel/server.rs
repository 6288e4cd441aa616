//! `braid server --tun`: hands out tunnel addresses and carries the tunnels' TCP connections,
//! UDP flows and pings from the server's own sockets.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_runtime::{Connection, Stream};
use tokio::io::AsyncWriteExt;
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::pool::Pool;
use crate::request;

/// UDP flows one tunnel may hold open at once (the NAT table's bound); a new flow beyond it is
/// dropped and counted.
pub const MAX_FLOWS: usize = 1024;
/// A UDP flow with no datagram either way for this long is closed.
pub const FLOW_IDLE: Duration = Duration::from_secs(60);
/// Pings one tunnel may have waiting for their answer.
pub const MAX_PINGS: usize = 64;
/// How long a ping waits for its answer.
const PING_WAIT: Duration = Duration::from_secs(5);

/// What `--tun` configures, shared by every connection.
pub struct TunServer {
    pub pool: Pool,
    /// Destinations on this host (its addresses, loopback) are refused unless allowed.
    pub allow_local: bool,
    /// Datagrams dropped: malformed, refused destination, NAT table full.
    pub dropped: AtomicU64,
}

impl TunServer {
    /// Whether a tunnel may reach `ip`: never an unspecified, broadcast or multicast address,
    /// and not this host (loopback or one of its own addresses) unless `--tun-allow-local`.
    pub fn allowed(&self, ip: IpAddr) -> bool {
        if ip.is_unspecified() || ip.is_multicast() || ip == IpAddr::V4(Ipv4Addr::BROADCAST) {
            return false;
        }
        if self.allow_local {
            return true;
        }
        if ip.is_loopback() {
            return false;
        }
        !if_addrs::get_if_addrs().map(|a| a.iter().any(|i| i.ip() == ip)).unwrap_or(true)
    }
}

/// TUN_OPEN: gives the client an address and serves its datagrams until the control stream or
/// the connection ends, then takes the address back.
pub async fn open(mut stream: Stream, conn: Connection, tun: Option<Arc<TunServer>>) {
    let Some(tun) = tun else {
        let _ = request::write_status(
            &mut stream,
            request::NOT_ALLOWED,
            "this server takes no tunnels (start it with --tun)",
        )
        .await;
        return;
    };
    let Some(addr) = tun.pool.take() else {
        let _ = request::write_status(
            &mut stream,
            request::GENERAL_FAILURE,
            "the server's --tun-pool is exhausted",
        )
        .await;
        return;
    };
    let mut answer = vec![request::OK];
    answer.extend_from_slice(&addr.octets());
    answer.push(tun.pool.prefix());
    if stream.write_all(&answer).await.is_err() {
        tun.pool.give_back(addr);
        return;
    }
    tracing::info!(%addr, peer = %conn.remote_address(), "tunnel opened");
    let mut control = [0u8; 1];
    tokio::select! {
        _ = serve_datagrams(&conn, &tun) => {}
        // The client never writes on the control stream: its end (or the connection's) ends the tunnel.
        _ = tokio::io::AsyncReadExt::read(&mut stream, &mut control) => {}
    }
    tun.pool.give_back(addr);
    let d = conn.datagram_stats();
    tracing::info!(
        %addr,
        received = d.delivered,
        rebuilt = d.recovered,
        late = d.late,
        dropped = d.dropped,
        sent = d.sent,
        repairs = d.repairs_sent,
        "tunnel closed"
    );
}

/// TUN_CONNECT: a TCP connection of the tunnel, to `target`, if allowed.
pub async fn connect(mut stream: Stream, target: &str, tun: Option<&TunServer>) -> Option<Stream> {
    let ok = match (tun, target.parse::<SocketAddr>()) {
        (Some(t), Ok(a)) => t.allowed(a.ip()),
        _ => false,
    };
    if !ok {
        let _ = request::write_status(
            &mut stream,
            request::NOT_ALLOWED,
            "destination not allowed through the tunnel",
        )
        .await;
        return None;
    }
    Some(stream)
}

struct Flow {
    socket: Arc<UdpSocket>,
    reader: JoinHandle<()>,
    last: Instant,
}

/// The tunnel's datagrams: UDP flows through a bounded NAT table, pings through ping sockets.
async fn serve_datagrams(conn: &Connection, tun: &TunServer) {
    let mut flows: HashMap<u32, Flow> = HashMap::new();
    let pings = Arc::new(AtomicU64::new(0));
    let mut sweep = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            d = conn.recv_datagram() => {
                let Ok(d) = d else { break };
                match d.first() {
                    Some(&super::UDP) => udp(conn, tun, &mut flows, &d).await,
                    Some(&super::ICMP_ECHO) => ping(conn, tun, &pings, &d),
                    _ => { tun.dropped.fetch_add(1, Ordering::Relaxed); }
                }
            }
            _ = sweep.tick() => {
                let now = Instant::now();
                flows.retain(|_, f| {
                    let keep = now - f.last < FLOW_IDLE && !f.reader.is_finished();
                    if !keep { f.reader.abort(); }
                    keep
                });
            }
        }
    }
    for f in flows.values() {
        f.reader.abort();
    }
}

async fn udp(conn: &Connection, tun: &TunServer, flows: &mut HashMap<u32, Flow>, d: &[u8]) {
    let Some((id, dst, payload)) = super::parse_udp_out(d) else {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if !flows.contains_key(&id) {
        if flows.len() >= MAX_FLOWS || !tun.allowed(IpAddr::V4(*dst.ip())) {
            tun.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Ok(socket) = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)).await else { return };
        if socket.connect(dst).await.is_err() {
            tun.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let socket = Arc::new(socket);
        let (s, c) = (socket.clone(), conn.clone());
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 65_536];
            while let Ok(n) = s.recv(&mut buf).await {
                match c.send_datagram(&super::reply(super::UDP, id, &buf[..n])) {
                    // Too large for the tunnel: dropped, as a link with that MTU would.
                    Ok(()) | Err(braid_runtime::Error::DatagramTooLarge { .. }) => {}
                    Err(_) => break,
                }
            }
        });
        flows.insert(id, Flow { socket, reader, last: Instant::now() });
    }
    let Some(f) = flows.get_mut(&id) else { return };
    f.last = Instant::now();
    let _ = f.socket.send(payload).await;
}

/// An echo request through an unprivileged ICMP socket (the kernel picks the identifier; the
/// answer gets the client's back, and its checksum again).
fn ping(conn: &Connection, tun: &TunServer, pings: &Arc<AtomicU64>, d: &[u8]) {
    let Some((id, dst, icmp)) = super::parse_echo_out(d) else {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if icmp[0] != 8 || !tun.allowed(IpAddr::V4(dst)) || pings.load(Ordering::Relaxed) >= MAX_PINGS as u64 {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let ident = [icmp[4], icmp[5]];
    let icmp = icmp.to_vec();
    let (conn, pings) = (conn.clone(), pings.clone());
    pings.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        let answer = tokio::time::timeout(PING_WAIT, echo(dst, &icmp)).await;
        if let Ok(Ok(mut reply)) = answer {
            if reply.len() >= 8 {
                reply[4..6].copy_from_slice(&ident);
                reply[2..4].copy_from_slice(&[0, 0]);
                let c = super::checksum(&reply);
                reply[2..4].copy_from_slice(&c.to_be_bytes());
                let _ = conn.send_datagram(&super::reply(super::ICMP_ECHO, id, &reply));
            }
        }
        pings.fetch_sub(1, Ordering::Relaxed);
    });
}

async fn echo(dst: Ipv4Addr, icmp: &[u8]) -> std::io::Result<Vec<u8>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4))?;
    socket.set_nonblocking(true)?;
    let socket = UdpSocket::from_std(std::net::UdpSocket::from(socket))?;
    socket.send_to(icmp, SocketAddrV4::new(dst, 0)).await?;
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, from) = socket.recv_from(&mut buf).await?;
        if from.ip() == IpAddr::V4(dst) && n >= 8 && buf[0] == 0 {
            buf.truncate(n);
            return Ok(buf);
        }
    }
}
