//! `braid tun`: the client's TUN device, its routes, and the userspace stack that terminates
//! the device's TCP and turns its UDP and pings into datagrams.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use braid_runtime::Connection;
use ipstack::{IpNumber, IpStack, IpStackConfig, IpStackStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::fragment::{Reassembly, Sender};
use crate::common::{fail, ClientOpts, Fail};
use crate::request;

/// IPv6's minimum link MTU (RFC 8200 §5): Linux gives a device below it no IPv6 address.
const IPV6_MIN_MTU: u16 = 1280;

/// The most the device's MTU grows to as the paths' MTU grows, and the userspace stack's own
/// MTU from the start (it reads the device with a buffer this large, and writes TCP segments
/// up to it, which the kernel takes from a TUN device whatever its MTU): Ethernet's, which
/// the paths themselves rarely exceed, so the tunnel's datagrams stay below it.
const DEVICE_MTU_CEILING: u16 = 1500;

/// How often the device's MTU is compared with the largest datagram the paths carry.
const MTU_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The device's MTU for a tunnel whose paths carry datagrams of `largest` bytes: that (each
/// packet from the device becomes a message smaller than the packet: its IP and UDP or ICMP
/// headers are left out), capped by `--mtu` and [`DEVICE_MTU_CEILING`], at least 576 (IPv4's
/// minimum) and, for a tunnel carrying IPv6, at least 1280 (larger messages go in pieces).
fn device_mtu(largest: usize, cap: Option<u16>, v6: bool) -> u16 {
    let largest = largest.min(usize::from(DEVICE_MTU_CEILING)) as u16;
    let mtu = cap.map_or(largest, |c| c.min(largest)).max(576);
    if v6 {
        mtu.max(IPV6_MIN_MTU)
    } else {
        mtu
    }
}

/// Keeps the device's MTU at [`device_mtu`] of the largest datagram the paths carry as path
/// MTU discovery raises it (or a black hole lowers it), checked every [`MTU_CHECK`].
async fn follow_path_mtu(conn: Connection, name: String, cap: Option<u16>, v6: bool, mut mtu: u16) {
    let mut tick = tokio::time::interval(MTU_CHECK);
    loop {
        tick.tick().await;
        let want = device_mtu(conn.max_datagram_size(), cap, v6);
        if want == mtu {
            continue;
        }
        let dev = name.clone();
        let set = tokio::task::spawn_blocking(move || {
            ip(&["link", "set", "dev", &dev, "mtu", &want.to_string()]).map(drop)
        });
        // If the device is gone (the tunnel is closing) or `ip` failed, it is tried again.
        if let Ok(Ok(())) = set.await {
            eprintln!("braid: tunnel mtu {mtu} -> {want}");
            mtu = want;
        }
    }
}

/// The datagram sender's drops and waits, for the exit and `--stats-every` lines: why datagrams were
/// dropped before they were sent, how long they waited, and what held them.
fn sender_counts(d: &braid_runtime::DatagramStats) -> String {
    format!(
        "{} queue full, {} expired, {} hopeless; {} waited over 10 ms, {} over 50 ms, longest {:.1} ms; \
         held {} ms by windows, {} ms by pacers, {} ms by the host",
        d.dropped_full,
        d.dropped_expired,
        d.dropped_hopeless,
        d.waited_10ms,
        d.waited_50ms,
        d.wait_max_us as f64 / 1000.0,
        d.blocked_window_us / 1000,
        d.blocked_pacer_us / 1000,
        d.blocked_host_us / 1000
    )
}

/// `--stats-every`: every `every`, the datagram counters so far and each path's state.
async fn stats_lines(conn: Connection, every: std::time::Duration) {
    let start = std::time::Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let d = conn.datagram_stats();
        let paths: Vec<String> = conn
            .paths()
            .iter()
            .map(|p| {
                format!(
                    "path {}: srtt {:.1} ms, cwnd {}, loss {:.3}, {} sent, {} lost",
                    p.id,
                    p.srtt.as_secs_f64() * 1e3,
                    p.cwnd,
                    p.loss,
                    p.stats.packets_sent,
                    p.stats.packets_lost
                )
            })
            .collect();
        eprintln!(
            "braid: tunnel stats at {:.1} s: {} datagrams sent, {} queued, {} repairs, {} dropped ({}); {}",
            start.elapsed().as_secs_f64(),
            d.sent,
            d.queued,
            d.repairs_sent,
            d.dropped,
            sender_counts(&d),
            paths.join("; ")
        );
    }
}

/// `braid tun`'s own options.
#[derive(clap::Args, Clone)]
pub struct TunOpts {
    /// The TUN device's name.
    #[arg(long, default_value = "braid0")]
    pub name: String,
    /// The device's MTU (default and most: the largest datagram the paths carry; 1280 when
    /// the server hands out IPv6 addresses, whose messages may then take two datagrams).
    #[arg(long)]
    pub mtu: Option<u16>,
    /// A prefix to send through the tunnel (A.B.C.D/N, or an IPv6 one such as 2000::/3 when the
    /// server has --tun-pool6), repeatable; `all` for every address except the server's
    /// (default route mode; IPv6 too when the tunnel has it).
    #[arg(long = "route", value_name = "PREFIX|all")]
    pub routes: Vec<String>,
    /// Print the datagram counters and each path's state every this many seconds (the same
    /// counters as the exit line).
    #[arg(long, value_name = "SECONDS")]
    pub stats_every: Option<f64>,
}

type Flows = Arc<Mutex<HashMap<u32, mpsc::Sender<Vec<u8>>>>>;
type Pings = Arc<Mutex<HashMap<u32, ipstack::IpStackUnknownTransport>>>;

/// A `--route`.
#[derive(Clone, Debug, PartialEq)]
enum Route {
    All,
    V4(String),
    V6(String),
}

/// Routes added outside the device (the server's host route in `all` mode), each with its
/// `ip` family flag: removed on drop. Routes and addresses on the device go with it when it
/// closes.
struct Routes(Vec<(&'static str, String)>);

impl Drop for Routes {
    fn drop(&mut self) {
        for (family, r) in &self.0 {
            let _ = Command::new("ip").args([*family, "route", "del"]).args(r.split(' ')).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<String, Fail> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| fail(format!("cannot run `ip`: {e} (install iproute2)")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "`ip {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first-hop of the current route to `dst`: `via GW dev DEV` (or `dev DEV`).
fn route_to(dst: IpAddr) -> Result<String, Fail> {
    let out = ip(&[family(dst), "route", "get", &dst.to_string()])?;
    let words: Vec<&str> = out.split_whitespace().collect();
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
    let dev = after("dev").ok_or_else(|| fail(format!("no route to the server {dst}")))?;
    Ok(match after("via") {
        Some(gw) => format!("via {gw} dev {dev}"),
        None => format!("dev {dev}"),
    })
}

fn family(ip: IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "-4"
    } else {
        "-6"
    }
}

/// Why device `name` cannot have IPv6, if it cannot: no IPv6 in the kernel, or IPv6 disabled.
fn ipv6_unavailable(name: &str) -> Option<String> {
    if !std::path::Path::new("/proc/sys/net/ipv6").exists() {
        return Some("this kernel has no IPv6 (or it is off: ipv6.disable=1)".into());
    }
    let disabled = std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"));
    if disabled.is_ok_and(|d| d.trim() == "1") {
        return Some(format!(
            "IPv6 is disabled on {name} (sysctl net.ipv6.conf.default.disable_ipv6=1; set it to 0 for IPv6 in the tunnel)"
        ));
    }
    None
}

/// The one-line reasons a TUN device cannot be made.
fn device_error(name: &str, e: tun::Error) -> Fail {
    let text = e.to_string();
    if !std::path::Path::new("/dev/net/tun").exists() {
        return fail("braid tun: /dev/net/tun does not exist (load the module: `modprobe tun`, or give the container --device /dev/net/tun)");
    }
    if text.contains("Operation not permitted") || text.contains("Permission denied") {
        return fail("braid tun: creating a TUN device needs root or CAP_NET_ADMIN (run it with sudo)");
    }
    if text.contains("busy") || text.contains("exists") {
        return fail(format!("braid tun: device {name} is in use (pick another --name)"));
    }
    fail(format!("braid tun: cannot create device {name}: {text}"))
}

pub async fn run(opts: &TunOpts, client: &ClientOpts) -> Result<(), Fail> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(fail("braid tun: /dev/net/tun does not exist (load the module: `modprobe tun`, or give the container --device /dev/net/tun)"));
    }
    let routes = parse_routes(&opts.routes)?;
    let server = crate::common::resolve(&client.server, "--server").await?;
    let conn = client.connect().await?;
    // The control stream: our address from the server's pool; the tunnel lives as long as it.
    let mut control = conn.open_stream()?;
    control.write_all(&[super::TUN_OPEN]).await.map_err(|e| fail(format!("tunnel request: {e}")))?;
    if let Err((_, message)) =
        request::read_status(&mut control).await.map_err(|e| fail(format!("tunnel request: {e}")))?
    {
        return Err(fail(format!("the server refused the tunnel: {message}")));
    }
    // OK | IPv4 (4) | prefix | has IPv6 | [IPv6 (16) | prefix]
    let grant_error = |e: std::io::Error| fail(format!("tunnel request: {e}"));
    let mut grant = [0u8; 6];
    control.read_exact(&mut grant).await.map_err(grant_error)?;
    let addr = Ipv4Addr::new(grant[0], grant[1], grant[2], grant[3]);
    let prefix = grant[4].clamp(8, 30);
    let mut addr6 = match grant[5] {
        0 => None,
        1 => {
            let mut g6 = [0u8; 17];
            control.read_exact(&mut g6).await.map_err(grant_error)?;
            let a: [u8; 16] = g6[..16].try_into().unwrap_or_default();
            Some((Ipv6Addr::from(a), g6[16].clamp(48, 127)))
        }
        _ => {
            return Err(fail("tunnel request: the server's answer is malformed (a different braid version?)"))
        }
    };
    let wants6 = routes.iter().find(|r| matches!(r, Route::V6(_)));
    if let (Some(Route::V6(r)), None) = (wants6, addr6) {
        return Err(fail(format!(
            "--route {r}: the server hands out no IPv6 addresses (start it with --tun-pool6 PREFIX)"
        )));
    }
    if let Ok(ifs) = if_addrs::get_if_addrs() {
        let taken = [Some(IpAddr::V4(addr)), addr6.map(|a| IpAddr::V6(a.0))];
        if let Some(i) = ifs.iter().find(|i| taken.contains(&Some(i.ip()))) {
            return Err(fail(format!("braid tun: address {} is already in use on {} (the server's --tun-pool or --tun-pool6 overlaps a local network)", i.ip(), i.name)));
        }
    }
    let mut mtu = device_mtu(conn.max_datagram_size(), opts.mtu, false);
    if addr6.is_some() {
        match opts.mtu {
            Some(m) if m < IPV6_MIN_MTU => {
                if let Some(Route::V6(r)) = wants6 {
                    return Err(fail(format!(
                        "--route {r}: IPv6 needs --mtu {IPV6_MIN_MTU} or more (got {m})"
                    )));
                }
                eprintln!(
                    "braid tun: --mtu {m} is below IPv6's {IPV6_MIN_MTU}: the tunnel carries IPv4 only"
                );
                addr6 = None;
            }
            // A message larger than one datagram travels in two (`fragment`).
            _ => mtu = mtu.max(IPV6_MIN_MTU),
        }
    }
    let mut config = tun::Configuration::default();
    config
        .tun_name(&opts.name)
        .address(addr)
        .netmask(Ipv4Addr::from(u32::MAX << (32 - prefix)))
        .mtu(mtu)
        .up();
    let device = tun::create_as_async(&config).map_err(|e| device_error(&opts.name, e))?;
    if let Some((a6, p6)) = addr6 {
        if let Some(why) = ipv6_unavailable(&opts.name) {
            if let Some(Route::V6(r)) = wants6 {
                return Err(fail(format!("--route {r}: {why}")));
            }
            eprintln!("braid tun: {why}: the tunnel carries IPv4 only");
            addr6 = None;
        } else {
            // No duplicate address detection: nothing else is on a TUN device's link.
            ip(&["-6", "addr", "add", &format!("{a6}/{p6}"), "dev", &opts.name, "nodad"])?;
        }
    }
    let mut added = Routes(Vec::new());
    for r in &routes {
        match r {
            Route::All => {
                // Default-route mode: the server stays reachable the way it was, the rest goes in.
                let pin = server.is_ipv4() || addr6.is_some();
                if pin {
                    let hop = route_to(server.ip())?;
                    let bits = if server.is_ipv4() { 32 } else { 128 };
                    let host = format!("{}/{bits} {hop}", server.ip());
                    let family = family(server.ip());
                    ip(&[family, "route", "replace"].into_iter().chain(host.split(' ')).collect::<Vec<_>>())?;
                    added.0.push((family, host));
                }
                ip(&["-4", "route", "add", "0.0.0.0/1", "dev", &opts.name])?;
                ip(&["-4", "route", "add", "128.0.0.0/1", "dev", &opts.name])?;
                if addr6.is_some() {
                    ip(&["-6", "route", "add", "::/1", "dev", &opts.name])?;
                    ip(&["-6", "route", "add", "8000::/1", "dev", &opts.name])?;
                }
            }
            Route::V4(p) => drop(ip(&["-4", "route", "add", p, "dev", &opts.name])?),
            Route::V6(p) => drop(ip(&["-6", "route", "add", p, "dev", &opts.name])?),
        }
    }
    let with6 = addr6.map(|(a, p)| format!(" {a}/{p}")).unwrap_or_default();
    eprintln!("braid: tunnel up: {} {addr}/{prefix}{with6} mtu {mtu} via {server}", opts.name);
    let addr6 = addr6.map(|a| a.0);
    let mut stack_config = IpStackConfig::default();
    let ceiling = opts.mtu.map_or(DEVICE_MTU_CEILING, |c| c.min(DEVICE_MTU_CEILING)).max(mtu);
    stack_config.mtu_unchecked(ceiling).udp_timeout(super::server::FLOW_IDLE);
    let mut stack = IpStack::new(stack_config, device);
    let flows: Flows = Arc::default();
    let pings: Pings = Arc::default();
    let spoofed = Arc::new(AtomicU64::new(0));
    let sender = Arc::new(Sender::default());
    tokio::spawn(dispatch(conn.clone(), flows.clone(), pings.clone()));
    let follow =
        tokio::spawn(follow_path_mtu(conn.clone(), opts.name.clone(), opts.mtu, addr6.is_some(), mtu));
    let ours = Ours { v4: addr, v6: addr6 };
    let next_id = Arc::new(AtomicU32::new(1));
    let mut control_byte = [0u8; 1];
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| fail(format!("signals: {e}")))?;
    let stats = opts
        .stats_every
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .filter(|s| !s.is_zero())
        .map(|s| tokio::spawn(stats_lines(conn.clone(), s)));
    let result = loop {
        tokio::select! {
            s = stack.accept() => {
                let Ok(s) = s else { break Err(fail("the TUN device closed")) };
                on_stream(s, &conn, &sender, ours, &flows, &pings, &next_id, &spoofed);
            }
            _ = tokio::signal::ctrl_c() => break Ok(()),
            _ = sigterm.recv() => break Ok(()),
            _ = control.read(&mut control_byte) => break Err(fail("the server ended the tunnel")),
            e = conn.closed() => break Err(fail(format!("the tunnel's connection ended: {e}"))),
        }
    };
    follow.abort();
    if let Some(t) = stats {
        t.abort();
    }
    let d = conn.datagram_stats();
    eprintln!(
        "braid: tunnel down: {} datagrams sent ({} bytes), {} repairs ({} bytes, {:.1} %; \
         {} loss-driven, {} suspected, {} on-allowance, {} delivered-anyway), {} received, \
         {} rebuilt, {} late, {} dropped ({}); {} messages split over several datagrams; {} packets dropped as spoofed",
        d.sent,
        d.sent_bytes,
        d.repairs_sent,
        d.repair_bytes,
        d.overhead() * 100.0,
        d.loss_repairs_sent,
        d.suspected,
        d.suspected_on_allowance,
        d.suspected_delivered,
        d.delivered,
        d.recovered,
        d.late,
        d.dropped,
        sender_counts(&d),
        sender.split_messages(),
        spoofed.load(Ordering::Relaxed)
    );
    drop(stack);
    drop(added);
    conn.close(0, "tunnel closed");
    // Let the driver send the close before the process ends: else the server holds the
    // tunnel's address until its idle timeout (30 s).
    let _ = tokio::time::timeout(std::time::Duration::from_millis(200), conn.closed()).await;
    result
}

fn parse_routes(routes: &[String]) -> Result<Vec<Route>, Fail> {
    routes
        .iter()
        .map(|r| {
            if r == "all" {
                return Ok(Route::All);
            }
            let parsed = r.split_once('/').and_then(|(a, n)| match (a.parse::<IpAddr>(), n.parse::<u8>()) {
                (Ok(IpAddr::V4(_)), Ok(n)) if n <= 32 => Some(Route::V4(r.clone())),
                (Ok(IpAddr::V6(_)), Ok(n)) if n <= 128 => Some(Route::V6(r.clone())),
                _ => None,
            });
            parsed.ok_or_else(|| {
                fail(format!(
                    "--route {r:?}: expected an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2000::/3, or `all`"
                ))
            })
        })
        .collect()
}

/// The tunnel's own addresses: the only sources the device may send from.
#[derive(Clone, Copy)]
struct Ours {
    v4: Ipv4Addr,
    v6: Option<Ipv6Addr>,
}

impl Ours {
    fn has(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => a == self.v4,
            IpAddr::V6(a) => Some(a) == self.v6,
        }
    }
}

/// One stream of the userspace stack: a TCP connection goes out as a braid stream, a UDP flow
/// and a ping as datagrams. Anything whose source is not one of our tunnel addresses is
/// dropped and counted.
#[allow(clippy::too_many_arguments)]
fn on_stream(
    s: IpStackStream,
    conn: &Connection,
    sender: &Arc<Sender>,
    ours: Ours,
    flows: &Flows,
    pings: &Pings,
    next_id: &Arc<AtomicU32>,
    spoofed: &Arc<AtomicU64>,
) {
    let ours = |ip: IpAddr| ours.has(ip);
    match s {
        IpStackStream::Tcp(mut tcp) => {
            if !ours(tcp.local_addr().ip()) {
                spoofed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let target = tcp.peer_addr().to_string();
            let Ok(mut stream) = conn.open_stream() else { return };
            tokio::spawn(async move {
                let mut msg = vec![super::TUN_CONNECT, target.len() as u8];
                msg.extend_from_slice(target.as_bytes());
                if stream.write_all(&msg).await.is_err() {
                    return;
                }
                match request::read_status(&mut stream).await {
                    Ok(Ok(())) => {
                        let _ = tokio::io::copy_bidirectional(&mut tcp, &mut stream).await;
                    }
                    Ok(Err((_, m))) => tracing::info!(%target, "{m}"),
                    Err(e) => tracing::debug!(%target, "{e}"),
                }
                let _ = tcp.shutdown().await;
            });
        }
        IpStackStream::Udp(mut udp) => {
            let (src, dst) = (udp.local_addr(), udp.peer_addr());
            if src.is_ipv4() != dst.is_ipv4() {
                return;
            }
            if !ours(src.ip()) {
                spoofed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
            flows.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
            let (conn, flows, sender) = (conn.clone(), flows.clone(), sender.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65_536];
                loop {
                    tokio::select! {
                        n = udp.read(&mut buf) => match n {
                            Ok(n) if n > 0 => { let _ = sender.send(&conn, &super::udp_out(id, dst, &buf[..n])); }
                            _ => break,
                        },
                        d = rx.recv() => match d {
                            Some(d) => { if udp.write_all(&d).await.is_err() { break; } }
                            None => break,
                        },
                    }
                }
                flows.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            });
        }
        IpStackStream::UnknownTransport(u) => {
            let (src, dst) = (u.src_addr(), u.dst_addr());
            // Echo requests only: ICMP type 8, ICMPv6 type 128 (the device's other ICMPv6,
            // router solicitations and listener reports, stays here).
            let echo = match (src, dst) {
                (IpAddr::V4(_), IpAddr::V4(_)) => {
                    u.ip_protocol() == IpNumber::ICMP && u.payload().first() == Some(&8)
                }
                (IpAddr::V6(_), IpAddr::V6(_)) => {
                    u.ip_protocol() == IpNumber::IPV6_ICMP && u.payload().first() == Some(&128)
                }
                _ => false,
            };
            if !echo || u.payload().len() < 8 {
                return;
            }
            if !ours(src) {
                spoofed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let d = super::echo_out(id, dst, u.payload());
            let mut p = pings.lock().unwrap_or_else(|e| e.into_inner());
            if p.len() >= super::server::MAX_PINGS {
                // The oldest are answered or lost by now.
                p.clear();
            }
            p.insert(id, u);
            drop(p);
            let _ = sender.send(conn, &d);
        }
        IpStackStream::UnknownNetwork(_) => {}
    }
}

/// Datagrams from the server: to their UDP flow, or the answer to a ping; fragments are put
/// back together first.
async fn dispatch(conn: Connection, flows: Flows, pings: Pings) {
    let mut pieces = Reassembly::default();
    while let Ok(mut d) = conn.recv_datagram().await {
        if d.first() == Some(&super::FRAGMENT) {
            match pieces.push(&d, std::time::Instant::now()) {
                Some(whole) => d = whole,
                None => continue,
            }
        }
        let Some((kind, id, payload)) = super::parse_reply(&d) else { continue };
        match kind {
            super::UDP => {
                let tx = flows.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned();
                if let Some(tx) = tx {
                    let _ = tx.try_send(payload.to_vec());
                }
            }
            super::ICMP_ECHO | super::ICMP6_ECHO => {
                let u = pings.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                if let Some(u) = u {
                    let _ = u.send(payload.to_vec());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_follows_the_largest_datagram_within_its_bounds() {
        // At the base PLPMTU (1280), then after discovery raised the paths to 1500 and 9000.
        assert_eq!(device_mtu(1216, None, false), 1216);
        assert_eq!(device_mtu(1436, None, false), 1436);
        assert_eq!(device_mtu(8936, None, false), DEVICE_MTU_CEILING);
        // --mtu caps it; IPv6 keeps 1280 (larger messages go in pieces); never below 576.
        assert_eq!(device_mtu(1436, Some(1300), false), 1300);
        assert_eq!(device_mtu(1216, None, true), 1280);
        assert_eq!(device_mtu(1436, None, true), 1436);
        assert_eq!(device_mtu(400, None, false), 576);
    }

    #[test]
    fn routes_parse_by_family_and_bad_ones_say_what_is_expected() {
        let r = |s: &[&str]| parse_routes(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            r(&["all", "10.0.0.0/8", "2000::/3", "::/0"]).ok().unwrap(),
            vec![
                Route::All,
                Route::V4("10.0.0.0/8".into()),
                Route::V6("2000::/3".into()),
                Route::V6("::/0".into())
            ]
        );
        for bad in ["10.0.0.0", "10.0.0.0/33", "fd00::/129", "fd00::", "x/8", "everything"] {
            assert!(r(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_granted_addresses_are_ours() {
        let v6: Ipv6Addr = "fd77::2".parse().unwrap();
        let ours = Ours { v4: Ipv4Addr::new(10, 77, 0, 2), v6: Some(v6) };
        assert!(ours.has("10.77.0.2".parse().unwrap()));
        assert!(ours.has(IpAddr::V6(v6)));
        assert!(!ours.has("fd77::3".parse().unwrap()));
        assert!(!ours.has("fe80::1".parse().unwrap()));
        assert!(!ours.has("10.77.0.3".parse().unwrap()));
        let v4_only = Ours { v6: None, ..ours };
        assert!(!v4_only.has(IpAddr::V6(v6)));
    }
}
