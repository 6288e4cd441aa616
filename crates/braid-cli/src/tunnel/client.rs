//! `braid tun`: the client's TUN device, its routes, and the userspace stack that terminates
//! the device's TCP and turns its UDP and pings into datagrams.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use braid_runtime::Connection;
use ipstack::{IpNumber, IpStack, IpStackConfig, IpStackStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::common::{fail, ClientOpts, Fail};
use crate::request;

/// `braid tun`'s own options.
#[derive(clap::Args, Clone)]
pub struct TunOpts {
    /// The TUN device's name.
    #[arg(long, default_value = "braid0")]
    pub name: String,
    /// The device's MTU (default and most: the largest datagram the paths carry).
    #[arg(long)]
    pub mtu: Option<u16>,
    /// A prefix to send through the tunnel (A.B.C.D/N), repeatable; `all` for every address
    /// except the server's (default route mode).
    #[arg(long = "route", value_name = "PREFIX|all")]
    pub routes: Vec<String>,
}

type Flows = Arc<Mutex<HashMap<u32, mpsc::Sender<Vec<u8>>>>>;
type Pings = Arc<Mutex<HashMap<u32, ipstack::IpStackUnknownTransport>>>;

/// Routes added outside the device (the server's host route in `all` mode): removed on drop.
/// Routes through the device go with it when it closes.
struct Routes(Vec<String>);

impl Drop for Routes {
    fn drop(&mut self) {
        for r in &self.0 {
            let _ = Command::new("ip").args(["route", "del"]).args(r.split(' ')).status();
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
fn route_to(dst: Ipv4Addr) -> Result<String, Fail> {
    let out = ip(&["route", "get", &dst.to_string()])?;
    let words: Vec<&str> = out.split_whitespace().collect();
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
    let dev = after("dev").ok_or_else(|| fail(format!("no route to the server {dst}")))?;
    Ok(match after("via") {
        Some(gw) => format!("via {gw} dev {dev}"),
        None => format!("dev {dev}"),
    })
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
    let mut grant = [0u8; 5];
    control.read_exact(&mut grant).await.map_err(|e| fail(format!("tunnel request: {e}")))?;
    let addr = Ipv4Addr::new(grant[0], grant[1], grant[2], grant[3]);
    let prefix = grant[4].clamp(8, 30);
    if let Ok(ifs) = if_addrs::get_if_addrs() {
        if let Some(i) = ifs.iter().find(|i| i.ip() == IpAddr::V4(addr)) {
            return Err(fail(format!("braid tun: address {addr} is already in use on {} (the server's --tun-pool overlaps a local network)", i.name)));
        }
    }
    let largest = conn.max_datagram_size().min(usize::from(u16::MAX)) as u16;
    let mtu = opts.mtu.unwrap_or(largest).min(largest).max(576);
    let mut config = tun::Configuration::default();
    config
        .tun_name(&opts.name)
        .address(addr)
        .netmask(Ipv4Addr::from(u32::MAX << (32 - prefix)))
        .mtu(mtu)
        .up();
    let device = tun::create_as_async(&config).map_err(|e| device_error(&opts.name, e))?;
    let mut added = Routes(Vec::new());
    for r in &routes {
        if r == "all" {
            // Default-route mode: the server stays reachable the way it was, the rest goes in.
            if let SocketAddr::V4(s) = server {
                let hop = route_to(*s.ip())?;
                let host = format!("{}/32 {hop}", s.ip());
                ip(&["route", "replace"].iter().copied().chain(host.split(' ')).collect::<Vec<_>>())?;
                added.0.push(host);
            }
            ip(&["route", "add", "0.0.0.0/1", "dev", &opts.name])?;
            ip(&["route", "add", "128.0.0.0/1", "dev", &opts.name])?;
        } else {
            ip(&["route", "add", r, "dev", &opts.name])?;
        }
    }
    eprintln!("braid: tunnel up: {} {addr}/{prefix} mtu {mtu} via {server}", opts.name);
    let mut stack_config = IpStackConfig::default();
    stack_config.mtu_unchecked(mtu).udp_timeout(super::server::FLOW_IDLE);
    let mut stack = IpStack::new(stack_config, device);
    let flows: Flows = Arc::default();
    let pings: Pings = Arc::default();
    let spoofed = Arc::new(AtomicU64::new(0));
    tokio::spawn(dispatch(conn.clone(), flows.clone(), pings.clone()));
    let next_id = Arc::new(AtomicU32::new(1));
    let mut control_byte = [0u8; 1];
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| fail(format!("signals: {e}")))?;
    let result = loop {
        tokio::select! {
            s = stack.accept() => {
                let Ok(s) = s else { break Err(fail("the TUN device closed")) };
                on_stream(s, &conn, addr, &flows, &pings, &next_id, &spoofed);
            }
            _ = tokio::signal::ctrl_c() => break Ok(()),
            _ = sigterm.recv() => break Ok(()),
            _ = control.read(&mut control_byte) => break Err(fail("the server ended the tunnel")),
            e = conn.closed() => break Err(fail(format!("the tunnel's connection ended: {e}"))),
        }
    };
    let d = conn.datagram_stats();
    eprintln!(
        "braid: tunnel down: {} datagrams sent ({} bytes), {} repairs ({} bytes, {:.1} %), {} received, \
         {} rebuilt, {} late, {} dropped; {} packets dropped as spoofed",
        d.sent,
        d.sent_bytes,
        d.repairs_sent,
        d.repair_bytes,
        d.overhead() * 100.0,
        d.delivered,
        d.recovered,
        d.late,
        d.dropped,
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

fn parse_routes(routes: &[String]) -> Result<Vec<String>, Fail> {
    routes
        .iter()
        .map(|r| {
            if r == "all" {
                return Ok(r.clone());
            }
            let ok = r.split_once('/').is_some_and(|(a, n)| {
                a.parse::<Ipv4Addr>().is_ok() && n.parse::<u8>().is_ok_and(|n| n <= 32)
            });
            ok.then(|| r.clone()).ok_or_else(|| {
                fail(format!("--route {r:?}: expected an IPv4 prefix such as 10.0.0.0/8, or `all`"))
            })
        })
        .collect()
}

/// One stream of the userspace stack: a TCP connection goes out as a braid stream, a UDP flow
/// and a ping as datagrams. Anything whose source is not our tunnel address is dropped and
/// counted.
fn on_stream(
    s: IpStackStream,
    conn: &Connection,
    addr: Ipv4Addr,
    flows: &Flows,
    pings: &Pings,
    next_id: &Arc<AtomicU32>,
    spoofed: &Arc<AtomicU64>,
) {
    let ours = |ip: IpAddr| ip == IpAddr::V4(addr);
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
            let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (udp.local_addr(), udp.peer_addr()) else {
                return;
            };
            if !ours(IpAddr::V4(*src.ip())) {
                spoofed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
            flows.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
            let (conn, flows) = (conn.clone(), flows.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65_536];
                loop {
                    tokio::select! {
                        n = udp.read(&mut buf) => match n {
                            Ok(n) if n > 0 => { let _ = conn.send_datagram(&super::udp_out(id, dst, &buf[..n])); }
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
            let (IpAddr::V4(src), IpAddr::V4(dst)) = (u.src_addr(), u.dst_addr()) else { return };
            if u.ip_protocol() != IpNumber::ICMP || u.payload().first() != Some(&8) {
                return;
            }
            if !ours(IpAddr::V4(src)) {
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
            let _ = conn.send_datagram(&d);
        }
        IpStackStream::UnknownNetwork(_) => {}
    }
}

/// Datagrams from the server: to their UDP flow, or the answer to a ping.
async fn dispatch(conn: Connection, flows: Flows, pings: Pings) {
    while let Ok(d) = conn.recv_datagram().await {
        let Some((kind, id, payload)) = super::parse_reply(&d) else { continue };
        match kind {
            super::UDP => {
                let tx = flows.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned();
                if let Some(tx) = tx {
                    let _ = tx.try_send(payload.to_vec());
                }
            }
            super::ICMP_ECHO => {
                let u = pings.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                if let Some(u) = u {
                    let _ = u.send(payload.to_vec());
                }
            }
            _ => {}
        }
    }
}
