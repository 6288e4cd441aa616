//! Workloads other than bulk: what the contender carries and how it is judged.
//!
//! - `bulk` ([`crate::run::run_one`]): N bytes client → server; goodput and completion.
//! - `web` ([`crate::web`]): HTTP/2 page loads, a real server (`nghttpd`) in the server namespace
//!   and a real client (`curl`) in the client namespace; page completion time.
//! - `video` ([`crate::video`]): a 25 fps live stream client → server with H.264 frame sizes;
//!   share of frames complete by capture + deadline, frame latency.
//! - `latency` ([`crate::probe`]): the bulk transfer with 20 probe round trips a second on a
//!   second connection beside it (for braid, a second stream of its one connection); probe
//!   round-trip p50/p99/max.
//! - `tun` ([`crate::tun`]): unchanged applications through `braid tun` — a curl download, a
//!   stamped UDP stream, a UDP ping-pong — beside kernel MPTCP, `braid forward` and plain UDP.
//!
//! A run picks one with `--workload`, or a scenario file names its own with a comment line
//! `# workload: web` (a comment, so the file stays a valid braid-sim scenario).
//!
//! This module holds what web and video share: the per-run session (forwarders, interface
//! counters, external helpers), the kernel contenders' relays for programs that cannot set a
//! congestion control or open an MPTCP socket themselves. The report's columns
//! for each workload are in `report`; which workload runs is chosen in `cli`.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpStream};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use braid_sim::Scenario;

use crate::contender::{expand, Contender};
use crate::forwarder::ForwardStats;
use crate::netns::Testbed;
use crate::report::Row;
use crate::run::{
    begin_measuring, counter_delta, counters, spawn_helper, Forwarders, Helpers, PathCounters, RunOptions,
};
use crate::sys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Bulk,
    Web,
    Video,
    /// Bulk with probe round trips beside it ([`crate::probe`]).
    Latency,
    Tun,
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Workload, String> {
        match s {
            "bulk" => Ok(Workload::Bulk),
            "web" => Ok(Workload::Web),
            "video" => Ok(Workload::Video),
            "latency" => Ok(Workload::Latency),
            "tun" => Ok(Workload::Tun),
            _ => Err(format!("unknown workload `{s}` (expected bulk, web, video, latency or tun)")),
        }
    }
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Bulk => "bulk",
            Workload::Web => "web",
            Workload::Video => "video",
            Workload::Latency => "latency",
            Workload::Tun => "tun",
        }
    }

    /// Which contenders can carry this workload: 2-TCP splits one byte stream over independent
    /// connections, which only a bulk transfer can do; the tun workload runs braid itself beside
    /// kernel TCP and MPTCP (no external commands).
    pub fn supports(self, c: &Contender) -> bool {
        match self {
            Workload::Bulk => true,
            Workload::Tun => matches!(c, Contender::Tcp { .. } | Contender::Mptcp { .. }),
            _ => !matches!(c, Contender::MultiTcp { .. }),
        }
    }
}

/// The workload a scenario file asks for: a line `# workload: NAME` (comment lines only).
pub fn directive(text: &str) -> Result<Option<Workload>, String> {
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix('#') else { continue };
        if let Some(name) = rest.trim().strip_prefix("workload:") {
            return name.trim().parse().map(Some);
        }
    }
    Ok(None)
}

/// Ports for the workloads' listeners (apart from the bulk runner's, which start at 5001).
static PORT: AtomicU16 = AtomicU16::new(6001);

pub fn next_port() -> u16 {
    PORT.fetch_add(1, Ordering::SeqCst)
}

/// One contender's run over one scenario point: the forwarders (time zero now), the interface
/// counters before, and the external contender's helper commands.
pub struct Session {
    fwd: Forwarders,
    before: PathCounters,
    helpers: Helpers,
    pub load: String,
}

/// What a session measured about the network, for the row.
pub struct SessionEnd {
    pub path_fwd_tx_bytes: Vec<u64>,
    pub path_fwd_rx_bytes: Vec<u64>,
    /// Bytes the server's side put into each path (the reverse direction).
    pub path_rev_tx_bytes: Vec<u64>,
    pub tun_drops: u64,
    pub forwarders: Vec<ForwardStats>,
}

impl Session {
    /// Start the forwarders, and for an external contender its commands with `{sink}` (the
    /// server namespace's address of the workload's server) and `{entry}` (the client namespace's
    /// address the workload's client connects to).
    pub fn begin(
        tb: &Testbed,
        scenario: &Scenario,
        contender: &Contender,
        sink: SocketAddrV4,
        entry: SocketAddrV4,
    ) -> io::Result<Session> {
        let paths = scenario.paths.len();
        let (load, before, fwd) = begin_measuring(tb, scenario, contender)?;
        let mut helpers = Helpers(Vec::new());
        if let Contender::External(ext) = contender {
            let (s, e) = (sink.to_string(), entry.to_string());
            let own = next_port().wrapping_add(20000);
            helpers.0.push(spawn_helper(&tb.server_ns, &expand(&ext.server_cmd, &s, &e, own, paths))?);
            helpers.0.push(spawn_helper(&tb.client_ns, &expand(&ext.client_cmd, &s, &e, own, paths))?);
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(Session { fwd, before, helpers, load })
    }

    /// Forwarders and counters only: the caller starts its own programs.
    pub fn begin_plain(tb: &Testbed, scenario: &Scenario) -> io::Result<Session> {
        let load = sys::load_average();
        let before = counters(tb, scenario.paths.len())?;
        let fwd = Forwarders::start(tb, scenario);
        Ok(Session { fwd, before, helpers: Helpers(Vec::new()), load })
    }

    /// The scenario's time zero for this session: when its forwarders started.
    pub fn epoch(&self) -> std::time::Instant {
        self.fwd.epoch
    }

    pub fn end(self, tb: &Testbed) -> io::Result<SessionEnd> {
        let paths = self.before.0.len();
        drop(self.helpers);
        let forwarders = self.fwd.finish();
        let after = counters(tb, paths)?;
        let (path_fwd_tx_bytes, path_fwd_rx_bytes, tun_drops) = counter_delta(&self.before, &after);
        let path_rev_tx_bytes =
            self.before.1.iter().zip(&after.1).map(|(b, a)| a.tx_bytes.saturating_sub(b.tx_bytes)).collect();
        Ok(SessionEnd { path_fwd_tx_bytes, path_fwd_rx_bytes, path_rev_tx_bytes, tun_drops, forwarders })
    }
}

/// `ss -tinM` in namespace `ns` for the sockets with local or remote port `port` (the path's
/// connection, not the loopback legs of a relay), saved to `file`.
pub fn snapshot_ss(ns: &str, port: u16, file: &std::path::Path) -> String {
    let filter = format!("( sport = :{port} or dport = :{port} )");
    let out =
        crate::netns::ns_exec(ns, &["ss", "-tinM", &filter]).unwrap_or_else(|e| format!("ss failed: {e}"));
    let _ = std::fs::write(file, &out);
    out
}

pub fn ss_file(opts: &RunOptions, scenario: &Scenario, contender: &Contender, tag: &str) -> PathBuf {
    opts.out_dir.join(format!(
        "ss-{}-{tag}-{}{}.txt",
        scenario.name,
        contender.to_string().replace(':', "_"),
        if scenario.label.is_empty() {
            String::new()
        } else {
            format!("-{}", scenario.label.replace([' ', '='], "_"))
        }
    ))
}

/// A row with the bulk fields that every workload fills the same way.
#[allow(clippy::too_many_arguments)]
pub fn base_row(
    scenario: &Scenario,
    contender: &Contender,
    workload: Workload,
    load: String,
    net: &SessionEnd,
    transfer_bytes: u64,
    received_bytes: u64,
    completion_s: Option<f64>,
    elapsed_s: f64,
    ss_check: String,
    ss_file: String,
    error: Option<String>,
) -> Row {
    let secs = elapsed_s.max(1e-6);
    let goodput_bps = received_bytes as f64 * 8.0 / secs;
    let ideal_bps = scenario.ideal_goodput_bps(Duration::from_secs_f64(secs.max(1e-3)));
    Row {
        scenario: scenario.name.clone(),
        label: scenario.label.clone(),
        seed: scenario.seed,
        contender: contender.to_string(),
        transfer_bytes,
        received_bytes,
        completion_s,
        elapsed_s: secs,
        goodput_mbps: goodput_bps / 1e6,
        steady_mbps: None,
        ideal_mbps: ideal_bps / 1e6,
        ratio: if ideal_bps > 0.0 { goodput_bps / ideal_bps } else { 0.0 },
        path_fwd_tx_bytes: net.path_fwd_tx_bytes.clone(),
        path_fwd_rx_bytes: net.path_fwd_rx_bytes.clone(),
        tun_drops: net.tun_drops,
        ss_check,
        ss_file,
        load,
        error,
        forwarders: net.forwarders.clone(),
        workload: workload.name().into(),
        ..Row::default()
    }
}

/// A kernel contender's leg of a relay: programs that cannot choose a congestion control or open
/// an MPTCP socket (curl, nghttpd) talk plain TCP over loopback to a relay that does.
///
/// - server side ([`relay_server`]): listens on the path (MPTCP if asked), sets the congestion
///   control on each accepted connection, and connects it to `to` over loopback;
/// - client side ([`relay_client`]): listens on loopback and connects each accepted connection
///   over the path to the server side (MPTCP and the congestion control on that socket).
///
/// Both ends of the path's connection then run the contender's algorithm, whatever the
/// namespace default is (`tcp_allowed_congestion_control` may forbid setting it).
pub struct Relay {
    pub stop: Arc<AtomicBool>,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicU64>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn relay_server(
    ns: &str,
    listen: SocketAddrV4,
    to: SocketAddrV4,
    mptcp: bool,
    cc: String,
) -> io::Result<Relay> {
    relay(ns, listen, mptcp, move |inbound: &TcpStream, stop: &AtomicBool| {
        sys::set_congestion(inbound, &cc)?;
        let _ = stop; // connecting over loopback does not wait
        TcpStream::connect_timeout(&to.into(), Duration::from_secs(2))
    })
}

pub fn relay_client(
    ns: &str,
    listen: SocketAddrV4,
    to: SocketAddrV4,
    mptcp: bool,
    cc: String,
) -> io::Result<Relay> {
    relay_client_via(ns, listen, to, None, mptcp, cc)
}

/// [`relay_client`] whose path connection leaves from `from` (a path's address: single-path TCP
/// on a path other than the first, by policy routing).
pub fn relay_client_via(
    ns: &str,
    listen: SocketAddrV4,
    to: SocketAddrV4,
    from: Option<SocketAddrV4>,
    mptcp: bool,
    cc: String,
) -> io::Result<Relay> {
    let deadline_after = Duration::from_secs(20);
    relay(ns, listen, false, move |_inbound: &TcpStream, stop: &AtomicBool| {
        sys::connect(to, from, mptcp, Some(&cc), Instant::now() + deadline_after, stop)
    })
}

fn relay(
    ns: &str,
    listen: SocketAddrV4,
    mptcp: bool,
    outbound: impl Fn(&TcpStream, &AtomicBool) -> io::Result<TcpStream> + Send + Sync + 'static,
) -> io::Result<Relay> {
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(AtomicBool::new(false));
    let (s, a, r) = (stop.clone(), accepted.clone(), ready.clone());
    let handle = sys::spawn_in(ns, "relay", move || {
        let listener = match sys::listen(listen, mptcp) {
            Ok(l) => l,
            Err(e) => {
                r.store(true, Ordering::SeqCst);
                return Err(e);
            }
        };
        r.store(true, Ordering::SeqCst);
        let outbound = Arc::new(outbound);
        let mut copiers = Vec::new();
        while !s.load(Ordering::Relaxed) && !sys::interrupted() {
            match listener.accept() {
                Ok((inbound, _)) => {
                    a.fetch_add(1, Ordering::SeqCst);
                    let (s, outbound) = (s.clone(), outbound.clone());
                    // Connecting may wait on the path (a lost SYN): not on the accept loop.
                    copiers.push(std::thread::spawn(move || {
                        let _ = inbound.set_nonblocking(false);
                        if let Ok(out) = outbound(&inbound, &s) {
                            splice(inbound, out, s);
                        }
                    }));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => return Err(e),
            }
        }
        for c in copiers {
            let _ = c.join();
        }
        Ok(())
    });
    while !ready.load(Ordering::SeqCst) && !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    if handle.is_finished() {
        return match handle.join() {
            Ok(Err(e)) => Err(e),
            _ => Err(io::Error::other("relay ended at once")),
        };
    }
    Ok(Relay { stop, accepted, handle: Some(handle) })
}

/// Copy both ways until both directions are closed or `stop`.
fn splice(a: TcpStream, b: TcpStream, stop: Arc<AtomicBool>) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else { return };
    let stop2 = stop.clone();
    let up = std::thread::spawn(move || copy(a2, b2, &stop2));
    copy(b, a, &stop);
    let _ = up.join();
}

fn copy(mut from: TcpStream, mut to: TcpStream, stop: &AtomicBool) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) && !sys::interrupted() {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if sys::transient(&e) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directive_in_a_comment() {
        assert_eq!(directive("name = \"x\"\n# workload: web\n[[path]]\n"), Ok(Some(Workload::Web)));
        assert_eq!(directive("  #workload:video"), Ok(Some(Workload::Video)));
        assert_eq!(directive("name = \"x\"\n# a web page workload is not named here\n"), Ok(None));
        assert!(directive("# workload: ftp").is_err());
    }

    #[test]
    fn two_tcp_is_bulk_only() {
        let two: Contender = "2tcp-bbr".parse().unwrap();
        assert!(Workload::Bulk.supports(&two));
        assert!(!Workload::Web.supports(&two));
        assert!(Workload::Video.supports(&"mptcp-cubic".parse().unwrap()));
    }
}
