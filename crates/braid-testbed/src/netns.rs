//! The namespaces, TUN devices, addresses, routes and sysctls of one testbed, and their teardown.
//!
//! Names: namespaces `bt<pid>x<n>-c` and `bt<pid>x<n>-s` (unique per process and instance, so
//! parallel runs never collide; a leftover whose pid is dead is removed by [`cleanup_stale`]).
//! Path i: client device `c<i>` 10.100.i.1 ↔ server device `s<i>` 10.100.i.2 (point-to-point).
//! The client has a policy-routing table 100+i (`from 10.100.i.1 → dev c<i>`) so an MPTCP
//! subflow bound to path i leaves through it (TESTBED.md pitfall 1); rp_filter is 0 (pitfall 2).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::sys;

static INSTANCE: AtomicU32 = AtomicU32::new(0);

/// Run `ip <args>`; the error carries the command and its stderr.
pub fn ip(args: &[&str]) -> io::Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run `ip` ({e}); install iproute2")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run a command inside namespace `ns` (`ip netns exec`).
pub fn ns_exec(ns: &str, args: &[&str]) -> io::Result<String> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    ip(&all)
}

pub fn client_addr(path: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 100, path as u8, 1)
}

pub fn server_addr(path: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 100, path as u8, 2)
}

/// Delete namespaces left by testbed processes that no longer run (a crash, a `kill -9`).
/// Returns the names removed.
pub fn cleanup_stale() -> Vec<String> {
    let Ok(list) = ip(&["netns", "list"]) else { return Vec::new() };
    let mut removed = Vec::new();
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix("bt") else { continue };
        let Some((pid, _)) = rest.split_once('x') else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() && ip(&["netns", "del", name]).is_ok() {
            removed.push(name.to_owned());
        }
    }
    removed
}

/// Per-interface counters, from `ip -s -j link`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct IfCounters {
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_dropped: u64,
}

pub fn if_counters(ns: &str, dev: &str) -> io::Result<IfCounters> {
    let out = ip(&["-n", ns, "-s", "-j", "link", "show", "dev", dev])?;
    let v: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| io::Error::other(format!("ip -j output: {e}")))?;
    let s = &v[0]["stats64"];
    let get = |dir: &str, key: &str| s[dir][key].as_u64().unwrap_or(0);
    Ok(IfCounters {
        tx_bytes: get("tx", "bytes"),
        tx_packets: get("tx", "packets"),
        tx_dropped: get("tx", "dropped"),
        rx_bytes: get("rx", "bytes"),
        rx_packets: get("rx", "packets"),
        rx_dropped: get("rx", "dropped"),
    })
}

/// One emulated path's TUN devices (the fds keep them alive).
pub struct PathDevs {
    pub client_tun: Arc<OwnedFd>,
    pub server_tun: Arc<OwnedFd>,
}

/// Two namespaces joined by N TUN pairs. Dropping it deletes the namespaces.
pub struct Testbed {
    pub client_ns: String,
    pub server_ns: String,
    pub paths: Vec<PathDevs>,
    torn_down: bool,
}

impl Testbed {
    pub fn create(paths: usize) -> io::Result<Testbed> {
        let prefix = format!("bt{}x{}", std::process::id(), INSTANCE.fetch_add(1, Ordering::SeqCst));
        let mut tb = Testbed {
            client_ns: format!("{prefix}-c"),
            server_ns: format!("{prefix}-s"),
            paths: Vec::new(),
            torn_down: false,
        };
        // Registered before anything else so that a failure half-way still tears down.
        ip(&["netns", "add", &tb.client_ns])?;
        ip(&["netns", "add", &tb.server_ns])?;
        for ns in [tb.client_ns.clone(), tb.server_ns.clone()] {
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            // Before the TUNs exist, so they inherit `default`.  TESTBED.md pitfalls 2 and 9.
            ns_exec(
                &ns,
                &[
                    "sysctl",
                    "-q",
                    "-w",
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                    "net.ipv4.tcp_no_metrics_save=1",
                    "net.ipv4.tcp_rmem=4096 131072 16777216",
                    "net.ipv4.tcp_wmem=4096 16384 16777216",
                    "net.mptcp.enabled=1",
                    // No IPv6 chatter (router solicitations, MLD) on the paths: only the traffic
                    // under test crosses the forwarders and the byte counters.
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            )?;
        }
        for i in 0..paths {
            let (c, s) = (format!("c{i}"), format!("s{i}"));
            let cn = c.clone();
            let client_tun = sys::spawn_in(&tb.client_ns, "tun-open", move || sys::open_tun(&cn))
                .join()
                .map_err(|_| io::Error::other("TUN thread panicked"))??;
            let sn = s.clone();
            let server_tun = sys::spawn_in(&tb.server_ns, "tun-open", move || sys::open_tun(&sn))
                .join()
                .map_err(|_| io::Error::other("TUN thread panicked"))??;
            tb.paths.push(PathDevs { client_tun: Arc::new(client_tun), server_tun: Arc::new(server_tun) });
            let (ca, sa) = (client_addr(i).to_string(), server_addr(i).to_string());
            for (ns, dev, local, peer) in [(&tb.client_ns, &c, &ca, &sa), (&tb.server_ns, &s, &sa, &ca)] {
                ip(&[
                    "-n",
                    ns,
                    "addr",
                    "add",
                    &format!("{local}/32"),
                    "peer",
                    &format!("{peer}/32"),
                    "dev",
                    dev,
                ])?;
                ip(&["-n", ns, "link", "set", "dev", dev, "txqueuelen", "1000", "up"])?;
            }
            // Source routing on the client only: the server answers each peer address through
            // the device it is the peer of (main table), whatever its own source address.
            let table = (100 + i).to_string();
            ip(&["-n", &tb.client_ns, "route", "add", "default", "dev", &c, "table", &table])?;
            ip(&["-n", &tb.client_ns, "rule", "add", "from", &ca, "table", &table])?;
        }
        // The client reaches every server address through path 0 by default.
        ip(&["-n", &tb.client_ns, "route", "add", "default", "dev", "c0"])?;
        if paths > 1 {
            let n = paths.to_string();
            for ns in [&tb.client_ns, &tb.server_ns] {
                ip(&["-n", ns, "mptcp", "limits", "set", "subflows", &n, "add_addr_accepted", &n])?;
            }
            for i in 1..paths {
                let id = (i + 1).to_string();
                let (addr, dev) = (client_addr(i).to_string(), format!("c{i}"));
                ip(&[
                    "-n",
                    &tb.client_ns,
                    "mptcp",
                    "endpoint",
                    "add",
                    &addr,
                    "dev",
                    &dev,
                    "id",
                    &id,
                    "subflow",
                ])?;
            }
        }
        Ok(tb)
    }

    /// Best effort: set the namespaces' default congestion control too (for sockets that do not
    /// set TCP_CONGESTION). A non-initial namespace may only pick algorithms in the global
    /// `tcp_allowed_congestion_control`, so this can fail (EPERM); the sender sets TCP_CONGESTION
    /// per socket anyway (root may pick any), and `ss -tinM` confirms what ran. Returns whether
    /// the default was set.
    pub fn set_default_cc(&self, cc: &str) -> bool {
        let kv = format!("net.ipv4.tcp_congestion_control={cc}");
        [&self.client_ns, &self.server_ns].iter().all(|ns| ns_exec(ns, &["sysctl", "-q", "-w", &kv]).is_ok())
    }

    pub fn client_counters(&self, path: usize) -> io::Result<IfCounters> {
        if_counters(&self.client_ns, &format!("c{path}"))
    }

    pub fn server_counters(&self, path: usize) -> io::Result<IfCounters> {
        if_counters(&self.server_ns, &format!("s{path}"))
    }

    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        self.paths.clear();
        for ns in [&self.client_ns, &self.server_ns] {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// What every subcommand that builds a testbed needs: root, the TUN device, iproute2.
pub fn preflight() -> Result<(), String> {
    if !sys::is_root() {
        return Err("must run as root (network namespaces, TUN devices)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun is missing (CONFIG_TUN)".into());
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        return Err("`ip` not found: apt-get install iproute2".into());
    }
    Ok(())
}
