//! The tun workload (`--workload tun`): unchanged applications through `braid tun` over the
//! scenario's paths, beside the kernel and plain UDP.
//!
//! A third namespace, the "world" (`bt<pid>x<n>-w`), hangs off the server namespace by a veth
//! pair (10.201.0.1 ↔ 10.201.0.2, unshaped): it holds the applications' servers, reached from
//! the client namespace through the tunnel (`braid tun --route 10.201.0.0/24`), whose server
//! (`braid server --tun`, server namespace) opens sockets to them. Three parts, each run with
//! fresh forwarders (time zero of the scenario) and, for braid, a fresh `braid tun`:
//!
//! - `tcp`: curl (client namespace) downloads a file from `python3 -m http.server` (world), its
//!   bytes compared with the file. Contenders: `braid-tun` (curl to the world's address, through
//!   the device), `braid-forward` (curl to a local `braid forward` to the same server: the
//!   goodput the tunnel is judged against), and the kernel ones (`mptcp-bbr`, …) through the
//!   workload's relays (curl → loopback → relay → MPTCP over the paths → relay → the world).
//! - `udp`: a fixed-rate stream (3.4 Mbit/s of 1000-byte packets by default), each packet
//!   stamped with its sequence number and send time ([`crate::udp`]), client → world through the
//!   tunnel, and plain UDP over the best single path (`udp@<i>`, client → server namespace) —
//!   the share on time within the deadline, one-way latency p50/p99, and the wire bytes over the
//!   payload bytes from the path devices' counters.
//! - `ping`: a UDP ping-pong through the tunnel and over the best path: round trip p50/p99.
//!
//! With IPv6 (`--tun-ip 4,6`, the default) the world also has fd01:201::2 (the server
//! namespace fd01:201::1), the server hands out IPv6 addresses too (`--tun-pool6`), every
//! `braid tun` also routes fd01:201::/64, and each part runs a second time through the tunnel
//! to the world's IPv6 address (`braid-tun-v6` rows: the same download, stream and ping-pong).
//! The paths themselves stay IPv4, and so do `braid forward`, the kernel contenders and plain
//! UDP: the references the IPv6 rows are read against.
//!
//! After every `braid tun` run: no device, no route (the client's whole routing table as before)
//! and no nftables rule (both namespaces' rulesets as before) may be left; the row says what was
//! found (`teardown`).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use braid_sim::Scenario;

use crate::contender::{Contender, External};
use crate::netns::{client_addr, ip, ns_exec, server_addr, Testbed};
use crate::report::{Row, TunMetrics};
use crate::run::{spawn_helper, Helpers, RunOptions};
use crate::sys;
use crate::udp::StreamSpec;
use crate::web::wait_listening;

mod streams;
mod tcp;
mod teardown;
use crate::workload::{self, next_port, SessionEnd, Workload};

/// The world's side of the veth pair, and the server namespace's.
const WORLD: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 2);
const WORLD_GW: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);
/// The prefix the client routes into its tunnel.
const WORLD_NET: &str = "10.201.0.0/24";
/// The same over IPv6, and the server's pool of tunnel addresses.
const WORLD6: Ipv6Addr = Ipv6Addr::new(0xfd01, 0x201, 0, 0, 0, 0, 0, 2);
const WORLD6_GW: Ipv6Addr = Ipv6Addr::new(0xfd01, 0x201, 0, 0, 0, 0, 0, 1);
const WORLD6_NET: &str = "fd01:201::/64";
const TUN_POOL6: &str = "fd77::/64";
/// The tunnel device's name in the client namespace.
const DEVICE: &str = "braid0";
const HTTP_PORT: u16 = 8080;

/// Which of the world's addresses a tunnel row reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    fn world(self) -> IpAddr {
        match self {
            Family::V4 => WORLD.into(),
            Family::V6 => WORLD6.into(),
        }
    }

    /// The row's contender: `braid-tun` or `braid-tun-v6`.
    fn tun_row(self) -> &'static str {
        match self {
            Family::V4 => "braid-tun",
            Family::V6 => "braid-tun-v6",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Tcp,
    Udp,
    Ping,
}

impl FromStr for Part {
    type Err = String;
    fn from_str(s: &str) -> Result<Part, String> {
        match s {
            "tcp" => Ok(Part::Tcp),
            "udp" => Ok(Part::Udp),
            "ping" => Ok(Part::Ping),
            _ => Err(format!("unknown tun part `{s}` (expected tcp, udp or ping)")),
        }
    }
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Tcp => "tcp-download",
            Part::Udp => "udp-stream",
            Part::Ping => "udp-ping",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TunOptions {
    /// The `braid` binary (default: beside this one).
    pub braid: Option<PathBuf>,
    pub parts: Vec<Part>,
    /// The tunnel rows' address families (`--tun-ip 4,6`); IPv4 always runs.
    pub ipv6: bool,
    pub stream: StreamSpec,
    pub pings: usize,
    pub ping_interval: Duration,
    /// Extra arguments for `braid tun` and `braid forward` (e.g. `--mode ctcp`).
    pub client_args: Vec<String>,
}

impl Default for TunOptions {
    fn default() -> TunOptions {
        TunOptions {
            braid: None,
            parts: vec![Part::Tcp, Part::Udp, Part::Ping],
            ipv6: true,
            stream: StreamSpec {
                size: 1000,
                rate_bps: 3.4e6,
                duration: Duration::from_secs(10),
                deadline: Duration::from_millis(150),
            },
            pings: 200,
            ping_interval: Duration::from_millis(20),
            client_args: Vec::new(),
        }
    }
}

/// `--tun-ip 4` or `4,6`: whether the tunnel rows run over IPv6 too.
pub fn parse_ip(s: &str) -> Result<bool, String> {
    match s {
        "4" => Ok(false),
        "4,6" | "6,4" => Ok(true),
        _ => Err(format!("expected 4 or 4,6 (got `{s}`)")),
    }
}

/// The `braid` binary: `--braid`, else beside this binary.
pub fn braid_binary(given: Option<&Path>) -> Result<PathBuf, String> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join("braid")))
            .unwrap_or_else(|| PathBuf::from("braid")),
    };
    if !path.is_file() {
        return Err(format!(
            "--workload tun needs the braid binary: {} not found (cargo build --release -p braid-cli, or --braid PATH)",
            path.display()
        ));
    }
    Ok(path)
}

/// What the tun workload needs besides the testbed's own: curl and python3.
pub fn tools_missing() -> Option<String> {
    for (tool, arg, pkg) in [("curl", "--version", "curl"), ("python3", "--version", "python3")] {
        let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Some(format!("`{tool}` not found (apt-get install {pkg})"));
        }
    }
    None
}

/// The world namespace and its veth pair; deleted on drop.
struct World {
    ns: String,
}

impl World {
    /// With `ipv6`, the world and the server's side of the veth get IPv6 addresses too, and
    /// devices made from now on in the client namespace (the tunnel's) may have IPv6; the
    /// paths' devices keep it off (no IPv6 chatter on the measured paths).
    fn create(tb: &Testbed, ipv6: bool) -> io::Result<World> {
        let ns = format!("{}-w", tb.client_ns.trim_end_matches("-c"));
        ip(&["netns", "add", &ns])?;
        let w = World { ns };
        ip(&["-n", &w.ns, "link", "set", "lo", "up"])?;
        let off = if ipv6 { "0" } else { "1" };
        ns_exec(
            &w.ns,
            &[
                "sysctl",
                "-q",
                "-w",
                &format!("net.ipv6.conf.all.disable_ipv6={off}"),
                &format!("net.ipv6.conf.default.disable_ipv6={off}"),
            ],
        )?;
        ip(&[
            "link",
            "add",
            "w0",
            "netns",
            &tb.server_ns,
            "type",
            "veth",
            "peer",
            "name",
            "w1",
            "netns",
            &w.ns,
        ])?;
        ip(&["-n", &tb.server_ns, "addr", "add", &format!("{WORLD_GW}/24"), "dev", "w0"])?;
        ip(&["-n", &w.ns, "addr", "add", &format!("{WORLD}/24"), "dev", "w1"])?;
        if ipv6 {
            // Per device: `all` would turn it on for the paths' devices too.
            ns_exec(&tb.server_ns, &["sysctl", "-q", "-w", "net.ipv6.conf.w0.disable_ipv6=0"])?;
            ns_exec(
                &tb.client_ns,
                &[
                    "sysctl",
                    "-q",
                    "-w",
                    "net.ipv6.conf.default.disable_ipv6=0",
                    "net.ipv6.conf.lo.disable_ipv6=0",
                ],
            )?;
            for (ns, addr, dev) in [(&tb.server_ns, WORLD6_GW, "w0"), (&w.ns, WORLD6, "w1")] {
                ip(&["-n", ns, "-6", "addr", "add", &format!("{addr}/64"), "dev", dev, "nodad"])?;
            }
        }
        ip(&["-n", &tb.server_ns, "link", "set", "w0", "up"])?;
        ip(&["-n", &w.ns, "link", "set", "w1", "up"])?;
        Ok(w)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file of `len` bytes that does not compress (an xorshift stream from `seed`).
fn write_file(path: &Path, len: u64, seed: u64) -> io::Result<()> {
    let mut x = seed | 1;
    let mut body = Vec::with_capacity(len as usize);
    while (body.len() as u64) < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        body.extend_from_slice(&x.to_le_bytes());
    }
    body.truncate(len as usize);
    std::fs::write(path, body)
}

/// Wait until `file` contains `text` (a program's banner on stderr), or give up.
fn wait_for_line(file: &Path, text: &str, timeout: Duration, child: &mut Child) -> io::Result<()> {
    let until = Instant::now() + timeout;
    loop {
        if std::fs::read_to_string(file).is_ok_and(|s| s.contains(text)) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(file).unwrap_or_default();
            return Err(io::Error::other(format!("exited ({status}): {}", log.trim())));
        }
        if Instant::now() >= until || sys::interrupted() {
            let log = std::fs::read_to_string(file).unwrap_or_default();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no `{text}` in time: {}", log.trim()),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stop a program politely (SIGINT to its group, as Ctrl-C would), then for good after 5 s.
/// Returns whether it ended by itself.
fn interrupt(child: &mut Child) -> bool {
    sys::interrupt_group(child.id());
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    sys::signal_group(child.id(), true);
    let _ = child.wait();
    false
}

/// The numbers of `braid tun`'s last line (`… 4250 datagrams sent (4296750 bytes), 12 repairs
/// (12000 bytes, …`), each named by the word after it (`bytes` by the name before it).
fn tunnel_numbers(log: &str) -> Option<Vec<(String, u64)>> {
    let line = log.lines().rev().find(|l| l.contains("tunnel down"))?;
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '.').to_owned())
        .collect();
    let mut found: Vec<(String, u64)> = Vec::new();
    for pair in words.windows(2) {
        if let Ok(n) = pair[0].parse::<u64>() {
            let name = match (pair[1].as_str(), found.last()) {
                ("bytes", Some((prev, _))) => format!("{prev} bytes"),
                (w, _) => w.to_owned(),
            };
            found.push((name, n));
        }
    }
    Some(found)
}

/// (sent, sent bytes, repairs, repair bytes, rebuilt, late, dropped) from `braid tun`'s last
/// line.
pub fn parse_tunnel_stats(log: &str) -> Option<[u64; 7]> {
    let found = tunnel_numbers(log)?;
    let get = |k: &str| found.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    Some([
        get("datagrams")?,
        get("datagrams bytes")?,
        get("repairs")?,
        get("repairs bytes")?,
        get("rebuilt")?,
        get("late")?,
        get("dropped")?,
    ])
}

/// (loss-driven repairs, datagrams and repairs given up on silent paths, of them paid by the
/// takeover allowance, of them acknowledged after all) from `braid tun`'s last line, where it
/// has them.
pub fn parse_repair_causes(log: &str) -> Option<[u64; 4]> {
    let found = tunnel_numbers(log)?;
    let get = |k: &str| found.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    Some([get("loss-driven")?, get("suspected")?, get("on-allowance")?, get("delivered-anyway")?])
}

/// (received, rebuilt, late, dropped) from the server's `tunnel closed … received=N rebuilt=N
/// late=N dropped=N` line.
fn server_line_counts(line: &str) -> Option<[u64; 4]> {
    let field = |k: &str| -> Option<u64> {
        let rest = &line[line.find(&format!(" {k}="))? + k.len() + 2..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    Some([field("received")?, field("rebuilt")?, field("late")?, field("dropped")?])
}

/// A braid row's contender, for [`workload::base_row`] (named without the `ext:` prefix).
fn braid_contender(name: &str) -> Contender {
    Contender::External(External { name: name.into(), server_cmd: String::new(), client_cmd: String::new() })
}

struct Setup<'a> {
    tb: &'a Testbed,
    scenario: &'a Scenario,
    opts: &'a RunOptions,
    t: &'a TunOptions,
    braid: PathBuf,
    /// The world namespace's name.
    world: String,
    dir: PathBuf,
    key: PathBuf,
    server_log: PathBuf,
    file: PathBuf,
    file_len: u64,
    server_port: u16,
}

impl Setup<'_> {
    fn braid_client_args(&self) -> String {
        let paths: Vec<String> =
            (0..self.scenario.paths.len()).map(|i| format!("--path {}", client_addr(i))).collect();
        format!(
            "--server {}:{} {} --key '{}' {}",
            server_addr(0),
            self.server_port,
            paths.join(" "),
            self.key.display(),
            self.t.client_args.join(" ")
        )
    }

    /// `braid tun` in the client namespace, up (its device exists) or an error.
    fn start_tun(&self, log: &Path) -> io::Result<Child> {
        let v6 = if self.t.ipv6 { format!(" --route {WORLD6_NET}") } else { String::new() };
        let cmd = format!(
            "exec '{}' tun --name {DEVICE} --route {WORLD_NET}{v6} {} 2>'{}'",
            self.braid.display(),
            self.braid_client_args(),
            log.display()
        );
        let mut child = spawn_helper(&self.tb.client_ns, &cmd)?;
        wait_for_line(log, "tunnel up", Duration::from_secs(20), &mut child)
            .map_err(|e| io::Error::new(e.kind(), format!("braid tun: {e}")))?;
        Ok(child)
    }

    /// `tunnel closed` lines in the server's log so far (the client's close reaches the server at
    /// once unless it is lost; then the server's idle timeout ends the tunnel 30 s later).
    fn tunnels_closed(&self) -> usize {
        std::fs::read_to_string(&self.server_log).unwrap_or_default().matches("tunnel closed").count()
    }

    /// The server's counts of the stream's tunnel (waiting up to 5 s for its line): received,
    /// rebuilt, late, dropped. Its line is the first after `closed_before` others with datagrams
    /// received (an earlier tunnel whose close was lost may end after it, having carried only
    /// streams).
    fn server_tunnel_stats(&self, closed_before: usize) -> Option<[u64; 4]> {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let log = std::fs::read_to_string(&self.server_log).unwrap_or_default();
            let found = log
                .lines()
                .filter(|l| l.contains("tunnel closed"))
                .skip(closed_before)
                .filter_map(server_line_counts)
                .find(|c| c[0] > 0);
            if found.is_some() || Instant::now() >= until {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn row(&self, name: &str, part: Part, net: &SessionEnd, load: String) -> Row {
        let c = braid_contender(name);
        let mut row = workload::base_row(
            self.scenario,
            &c,
            Workload::Tun,
            load,
            net,
            0,
            0,
            None,
            0.0,
            "n/a".into(),
            String::new(),
            None,
        );
        row.contender = name.into();
        row.tun = Some(TunMetrics {
            part: part.name().into(),
            path_rev_tx_bytes: net.path_rev_tx_bytes.clone(),
            ..TunMetrics::default()
        });
        row
    }
}

/// Run the workload's parts over one scenario point; each row goes to `emit` as it is made.
pub fn run(
    tb: &Testbed,
    scenario: &Scenario,
    kernel: &[Contender],
    opts: &RunOptions,
    t: &TunOptions,
    emit: &mut dyn FnMut(Row) -> Result<(), String>,
) -> Result<(), String> {
    let braid = braid_binary(t.braid.as_deref())?;
    if let Some(why) = tools_missing() {
        return Err(format!("--workload tun: {why}"));
    }
    let err = |what: &str| {
        let what = what.to_owned();
        move |e: io::Error| format!("{}: {what}: {e}", scenario.title())
    };
    let dir = TempDir(std::env::temp_dir().join(format!(
        "braid-testbed-tun-{}-{}",
        std::process::id(),
        next_port()
    )));
    std::fs::create_dir_all(&dir.0).map_err(err("temp dir"))?;
    let key = dir.0.join("key");
    let out = Command::new(&braid).arg("keygen").arg("-o").arg(&key).output().map_err(err("braid keygen"))?;
    if !out.status.success() {
        return Err(format!("braid keygen: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let file = dir.0.join("download.bin");
    write_file(&file, opts.transfer, scenario.seed).map_err(err("download file"))?;
    let world = World::create(tb, t.ipv6).map_err(err("world namespace"))?;
    let mut servers = Helpers(Vec::new());
    let families: &[Family] = if t.ipv6 { &[Family::V4, Family::V6] } else { &[Family::V4] };
    for f in families {
        servers.0.push(
            spawn_helper(
                &world.ns,
                &format!(
                    "exec python3 -m http.server {HTTP_PORT} --bind {} --directory '{}' >/dev/null 2>&1",
                    f.world(),
                    dir.0.display()
                ),
            )
            .map_err(err("http server"))?,
        );
        wait_listening(&world.ns, SocketAddr::new(f.world(), HTTP_PORT), Duration::from_secs(10))
            .map_err(err("python3 -m http.server"))?;
    }
    let server_port = next_port();
    let server_log = dir.0.join("server.log");
    let mut server = spawn_helper(
        &tb.server_ns,
        &format!(
            // The tunnel module's info lines: each tunnel's datagram counts when it closes.
            "exec env BRAID_LOG=warn,braid_cli::tunnel=info '{}' server --listen 0.0.0.0:{server_port} --key '{}' --tun{} 2>'{}'",
            braid.display(),
            key.display(),
            if t.ipv6 { format!(" --tun-pool6 {TUN_POOL6}") } else { String::new() },
            server_log.display()
        ),
    )
    .map_err(err("braid server"))?;
    wait_for_line(&server_log, "listening", Duration::from_secs(10), &mut server)
        .map_err(err("braid server"))?;
    servers.0.push(server);
    let s = Setup {
        tb,
        scenario,
        opts,
        t,
        braid,
        world: world.ns.clone(),
        dir: dir.0.clone(),
        key,
        server_log,
        file_len: opts.transfer,
        file,
        server_port,
    };
    for &part in &t.parts {
        match part {
            Part::Tcp => {
                for &f in families {
                    emit(tcp::tcp_braid(&s, Some(f)).map_err(err(&format!("{} tcp", f.tun_row())))?)?;
                }
                emit(tcp::tcp_braid(&s, None).map_err(err("braid-forward tcp"))?)?;
                for c in kernel {
                    if sys::interrupted() {
                        break;
                    }
                    emit(tcp::tcp_kernel(&s, c).map_err(err(&format!("{c} tcp")))?)?;
                }
            }
            Part::Udp => {
                for &f in families {
                    emit(streams::udp_braid(&s, f).map_err(err(&format!("{} udp", f.tun_row())))?)?;
                }
                emit(streams::udp_plain(&s).map_err(err("plain udp"))?)?;
            }
            Part::Ping => {
                for &f in families {
                    emit(streams::ping_braid(&s, f).map_err(err(&format!("{} ping", f.tun_row())))?)?;
                }
                emit(streams::ping_plain(&s).map_err(err("plain udp ping"))?)?;
            }
        }
        if sys::interrupted() {
            break;
        }
    }
    drop(servers);
    drop(world);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_stats_from_the_last_line() {
        let log = "braid: tunnel up: braid0 10.77.0.2/24 mtu 1218 via 10.100.0.2:6001\n\
                   braid: tunnel down: 4250 datagrams sent (4296750 bytes), 97 repairs (98000 bytes, 2.3 %), \
                   4200 received, 12 rebuilt, 1 late, 3 dropped; 0 packets dropped as spoofed\n";
        assert_eq!(parse_tunnel_stats(log), Some([4250, 4296750, 97, 98000, 12, 1, 3]));
        assert_eq!(parse_tunnel_stats("braid: tunnel up\n"), None);
        assert_eq!(parse_repair_causes(log), None);
        let log = "braid: tunnel down: 4250 datagrams sent (4296750 bytes), 97 repairs (98000 bytes, 2.3 %; \
                   40 loss-driven, 30 suspected, 10 on-allowance, 20 delivered-anyway), 4200 received, 12 rebuilt, 1 late, 3 dropped\n";
        assert_eq!(parse_tunnel_stats(log), Some([4250, 4296750, 97, 98000, 12, 1, 3]));
        assert_eq!(parse_repair_causes(log), Some([40, 30, 10, 20]));
    }

    #[test]
    fn server_counts_from_its_log_line() {
        let line = "2026-11-25T22:51:00Z  INFO braid_cli::tunnel::server: tunnel closed addr=10.77.0.2 \
                    received=12734 rebuilt=250 late=3 dropped=0 sent=0 repairs=0";
        assert_eq!(server_line_counts(line), Some([12734, 250, 3, 0]));
        assert_eq!(server_line_counts("tunnel closed addr=10.77.0.2"), None);
    }

    #[test]
    fn parts_parse() {
        assert_eq!(["tcp", "ping"].map(str::parse::<Part>), [Ok(Part::Tcp), Ok(Part::Ping)]);
        assert!("dns".parse::<Part>().is_err());
        assert_eq!((parse_ip("4"), parse_ip("4,6")), (Ok(false), Ok(true)));
        assert!(parse_ip("6").is_err());
    }

    #[test]
    fn download_file_is_deterministic_and_sized() {
        let dir = std::env::temp_dir().join(format!("tun-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        write_file(&a, 1001, 7).unwrap();
        write_file(&b, 1001, 7).unwrap();
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!((x.len(), x == y), (1001, true));
        assert!(x.windows(8).take(10).collect::<std::collections::HashSet<_>>().len() > 5, "not constant");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
