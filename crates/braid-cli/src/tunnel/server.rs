//! `braid server --tun`: hands out tunnel addresses and carries the tunnels' TCP connections,
//! UDP flows and pings from the server's own sockets.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_runtime::{Connection, Stream};
use tokio::io::AsyncWriteExt;
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::fragment::{Reassembly, Sender};
use super::pool::{Pool, Pool6};
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
    /// IPv6 addresses (`--tun-pool6`); without it the tunnels carry IPv4 only.
    pub pool6: Option<Pool6>,
    /// Destinations on this host (its addresses, loopback) are refused unless allowed.
    pub allow_local: bool,
    /// Datagrams dropped: malformed, refused destination, NAT table full.
    pub dropped: AtomicU64,
}

impl TunServer {
    /// Whether a tunnel may reach `ip`: never an unspecified, broadcast or multicast address,
    /// nor an IPv6 link-local one (no scope to send it on), nor IPv6 at all without
    /// `--tun-pool6`, and not this host (loopback or one of its own addresses) unless
    /// `--tun-allow-local`. An IPv4-mapped IPv6 address is judged as the IPv4 address it
    /// reaches (`::ffff:127.0.0.1` is loopback).
    pub fn allowed(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        if ip.is_unspecified() || ip.is_multicast() || ip == IpAddr::V4(Ipv4Addr::BROADCAST) {
            return false;
        }
        if let IpAddr::V6(v6) = ip {
            if self.pool6.is_none() || v6.is_unicast_link_local() {
                return false;
            }
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
    // OK | IPv4 (4) | prefix | has IPv6 (1) | [IPv6 (16) | prefix]
    let addr6 = tun.pool6.as_ref().map(|p| (p.address(tun.pool.index(addr)), p.prefix()));
    let mut answer = vec![request::OK];
    answer.extend_from_slice(&addr.octets());
    answer.push(tun.pool.prefix());
    answer.push(u8::from(addr6.is_some()));
    if let Some((a, p)) = addr6 {
        answer.extend_from_slice(&a.octets());
        answer.push(p);
    }
    if stream.write_all(&answer).await.is_err() {
        tun.pool.give_back(addr);
        return;
    }
    tracing::info!(%addr, addr6 = ?addr6.map(|a| a.0), peer = %conn.remote_address(), "tunnel opened");
    let mut control = [0u8; 1];
    let sender = Arc::new(Sender::default());
    tokio::select! {
        _ = serve_datagrams(&conn, &tun, &sender, addr6.map(|a| a.0)) => {}
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
        split_messages = sender.split_messages(),
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
/// `addr6` is the client's IPv6 address (ICMPv6 answers are checksummed for it).
async fn serve_datagrams(conn: &Connection, tun: &TunServer, sender: &Arc<Sender>, addr6: Option<Ipv6Addr>) {
    let mut flows: HashMap<u32, Flow> = HashMap::new();
    let pings = Arc::new(AtomicU64::new(0));
    let mut pieces = Reassembly::default();
    let mut sweep = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            d = conn.recv_datagram() => {
                let Ok(mut d) = d else { break };
                if d.first() == Some(&super::FRAGMENT) {
                    match pieces.push(&d, std::time::Instant::now()) {
                        Some(whole) => d = whole,
                        None => continue,
                    }
                }
                match d.first() {
                    Some(&(super::UDP | super::UDP6)) => udp(conn, tun, sender, &mut flows, &d).await,
                    Some(&(super::ICMP_ECHO | super::ICMP6_ECHO)) => ping(conn, tun, sender, &pings, &d, addr6),
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

async fn udp(
    conn: &Connection,
    tun: &TunServer,
    sender: &Arc<Sender>,
    flows: &mut HashMap<u32, Flow>,
    d: &[u8],
) {
    let Some((id, dst, payload)) = super::parse_udp_out(d) else {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if !flows.contains_key(&id) {
        if flows.len() >= MAX_FLOWS || !tun.allowed(dst.ip()) {
            tun.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let any: IpAddr = match dst {
            SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let Ok(socket) = UdpSocket::bind(SocketAddr::new(any, 0)).await else {
            tun.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if socket.connect(dst).await.is_err() {
            tun.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let socket = Arc::new(socket);
        let (s, c, sender) = (socket.clone(), conn.clone(), sender.clone());
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 65_536];
            while let Ok(n) = s.recv(&mut buf).await {
                match sender.send(&c, &super::reply(super::UDP, id, &buf[..n])) {
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

/// ICMP and ICMPv6 echo request and reply types.
const ECHO_REQUEST: u8 = 8;
const ECHO_REPLY: u8 = 0;
const ECHO6_REQUEST: u8 = 128;
const ECHO6_REPLY: u8 = 129;

/// An echo request through an unprivileged ICMP or ICMPv6 socket (the kernel picks the
/// identifier; the answer gets the client's back, and its checksum again: for ICMPv6 over the
/// pseudo-header with the client's tunnel address as destination).
fn ping(
    conn: &Connection,
    tun: &TunServer,
    sender: &Arc<Sender>,
    pings: &Arc<AtomicU64>,
    d: &[u8],
    addr6: Option<Ipv6Addr>,
) {
    let Some((id, dst, icmp)) = super::parse_echo_out(d) else {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let request = match dst {
        IpAddr::V4(_) => ECHO_REQUEST,
        IpAddr::V6(_) => ECHO6_REQUEST,
    };
    let v6_ok = dst.is_ipv4() || addr6.is_some();
    if icmp[0] != request || !v6_ok || !tun.allowed(dst) || pings.load(Ordering::Relaxed) >= MAX_PINGS as u64
    {
        tun.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let ident = [icmp[4], icmp[5]];
    let icmp = icmp.to_vec();
    let (conn, pings, sender) = (conn.clone(), pings.clone(), sender.clone());
    pings.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        let answer = tokio::time::timeout(PING_WAIT, echo(dst, &icmp)).await;
        if let Ok(Ok(mut reply)) = answer {
            reply[4..6].copy_from_slice(&ident);
            reply[2..4].copy_from_slice(&[0, 0]);
            let (kind, c) = match (dst, addr6) {
                (IpAddr::V6(from), Some(to)) => (super::ICMP6_ECHO, super::icmp6_checksum(from, to, &reply)),
                _ => (super::ICMP_ECHO, super::checksum(&reply)),
            };
            reply[2..4].copy_from_slice(&c.to_be_bytes());
            let _ = sender.send(&conn, &super::reply(kind, id, &reply));
        }
        pings.fetch_sub(1, Ordering::Relaxed);
    });
}

/// Sends `icmp` to `dst` from a ping socket and waits for the echo reply (≥ 8 bytes).
async fn echo(dst: IpAddr, icmp: &[u8]) -> std::io::Result<Vec<u8>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let (domain, protocol, reply) = match dst {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4, ECHO_REPLY),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6, ECHO6_REPLY),
    };
    let socket = Socket::new(domain, Type::DGRAM, Some(protocol))?;
    socket.set_nonblocking(true)?;
    let socket = UdpSocket::from_std(std::net::UdpSocket::from(socket))?;
    socket.send_to(icmp, SocketAddr::new(dst, 0)).await?;
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, from) = socket.recv_from(&mut buf).await?;
        if from.ip() == dst && n >= 8 && buf[0] == reply {
            buf.truncate(n);
            return Ok(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(pool6: bool) -> TunServer {
        let pool = Pool::parse("10.77.0.0/24").unwrap();
        let pool6 = pool6.then(|| Pool6::parse("fd77::/64", &pool).unwrap());
        TunServer { pool, pool6, allow_local: false, dropped: AtomicU64::new(0) }
    }

    #[test]
    fn mapped_link_local_and_unpooled_ipv6_destinations_are_refused() {
        let with6 = server(true);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // Documentation addresses (RFC 5737, RFC 3849) are on no interface of this host.
        assert!(with6.allowed(ip("192.0.2.1")));
        assert!(with6.allowed(ip("2001:db8::1")));
        for refused in ["::1", "::", "ff02::1", "fe80::1", "::ffff:127.0.0.1", "127.0.0.1", "255.255.255.255"]
        {
            assert!(!with6.allowed(ip(refused)), "{refused}");
        }
        // An IPv4-mapped address is its IPv4 address: allowed where that is.
        assert!(with6.allowed(ip("::ffff:192.0.2.1")));
        let without6 = server(false);
        assert!(!without6.allowed(ip("2001:db8::1")));
        assert!(without6.allowed(ip("192.0.2.1")));
    }

    #[test]
    fn this_hosts_addresses_are_refused_unless_allowed() {
        let mut tun = server(true);
        // Every unicast address of this host (loopback at least), as the tunnel would reach it.
        let own: Vec<IpAddr> = if_addrs::get_if_addrs()
            .unwrap()
            .iter()
            .map(|i| i.ip())
            .filter(|a| !matches!(a, IpAddr::V6(v) if v.is_unicast_link_local()))
            .collect();
        assert!(!own.is_empty());
        for a in &own {
            assert!(!tun.allowed(*a), "{a}");
        }
        tun.allow_local = true;
        for a in &own {
            assert!(tun.allowed(*a), "{a}");
        }
        assert!(tun.allowed("::ffff:127.0.0.1".parse().unwrap()));
        // Never, allowed or not.
        for refused in ["0.0.0.0", "255.255.255.255", "224.0.0.1", "fe80::1"] {
            assert!(!tun.allowed(refused.parse().unwrap()), "{refused}");
        }
    }
}
