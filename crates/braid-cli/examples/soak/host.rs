//! The server process the soak runs and what `/proc` and its metrics say about it.

use std::io::BufRead;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::{die, kind_of, Tally};

/// A process's RSS (KiB), open descriptors, and CPU time (clock ticks).
pub fn probe(pid: u32) -> (u64, usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = fields.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    (rss, fds, ticks)
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Datagrams the kernel dropped for a full receive buffer: on the server's socket (its
/// `/proc/net/udp` line's `drops`, found by port), and on every UDP socket of the host
/// (`/proc/net/snmp` RcvbufErrors; most of it the soak's client sockets during a run).
pub fn udp_drops(server_port: u16) -> (u64, u64) {
    let port = format!(":{server_port:04X}");
    let server = std::fs::read_to_string("/proc/net/udp")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1)?;
            if !local.ends_with(&port) {
                return None;
            }
            l.split_whitespace().last()?.parse::<u64>().ok()
        })
        .sum();
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
    let all = udp
        .first()
        .zip(udp.get(1))
        .and_then(|(names, values)| {
            let at = names.split_whitespace().position(|n| n == "RcvbufErrors")?;
            values.split_whitespace().nth(at)?.parse().ok()
        })
        .unwrap_or(0);
    (server, all)
}

/// The server's own count of its connections (established, handshaking) and of those that ended
/// by the idle timeout, from its `--metrics` text; zeros if the scrape fails.
pub fn server_view(metrics: SocketAddr) -> (u64, u64, u64) {
    use std::io::{Read, Write};
    let text = (|| -> std::io::Result<String> {
        let mut tcp = std::net::TcpStream::connect_timeout(&metrics, Duration::from_secs(2))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        tcp.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
        let mut text = String::new();
        tcp.read_to_string(&mut text)?;
        Ok(text)
    })()
    .unwrap_or_default();
    let value = |name: &str| -> u64 {
        text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok()).map_or(0, |v| v as u64)
    };
    (
        value("braid_connections{state=\"established\"}"),
        value("braid_connections{state=\"handshake\"}"),
        value("braid_connections_timed_out_total"),
    )
}

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    /// The server's `--metrics` listener.
    pub metrics: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server with its connection ends logged (`braid_runtime::driver` at debug,
/// added to `BRAID_LOG`); a thread reads its log, counts the idle-timeout ends per link kind
/// into `tally` and passes on the rest (all of it when `BRAID_LOG` was set).
pub fn start_server(
    bin: &PathBuf,
    key_file: &std::path::Path,
    connections: usize,
    tally: Arc<Tally>,
) -> Server {
    let port = free_port();
    let metrics = SocketAddr::from(([127, 0, 0, 1], free_tcp_port()));
    let asked = std::env::var("BRAID_LOG").ok();
    let filter = format!("{},braid_runtime::driver=debug", asked.as_deref().unwrap_or("warn"));
    let mut child = Command::new(bin)
        .args(["server", "--listen", &format!("127.0.0.1:{port}"), "--key"])
        .arg(key_file)
        .args(["--max-connections", &(connections + 100).to_string(), "--handshake-rate", "1000"])
        .args(["--metrics", &metrics.to_string()])
        .env("BRAID_LOG", filter)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| die(&format!("{}: {e}", bin.display())));
    let log = child.stderr.take().expect("piped");
    let pass_all = asked.is_some();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(log).lines() {
            let Ok(line) = line else { return };
            let driver = line.contains(" braid_runtime::driver");
            if driver && line.contains("connection ended") && line.contains("reason=TimedOut") {
                let kind = idle_ended_peer(&line).and_then(kind_of);
                if let (Some(k), false) = (kind, tally.over.load(Ordering::Relaxed)) {
                    tally.idle_ended[k].fetch_add(1, Ordering::Relaxed);
                }
            }
            // The driver's debug and info lines are the soak's addition to what was asked.
            let added = driver && (line.contains(" DEBUG ") || line.contains(" INFO "));
            if pass_all || !added {
                eprintln!("{line}");
            }
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    Server { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), metrics }
}

/// The peer's address in the server's "connection ended" log line (`peer=IP:PORT`).
fn idle_ended_peer(line: &str) -> Option<IpAddr> {
    let at = line.find(" peer=")? + " peer=".len();
    let addr = line[at..].split_whitespace().next()?;
    addr.parse::<SocketAddr>().ok().map(|a| a.ip())
}
