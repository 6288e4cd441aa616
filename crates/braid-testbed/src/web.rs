//! The web workload: HTTP/2 page loads shaped like the dFEC paper's Table II (TCP-dFEC/MPTCP-dFEC,
//! "Web Traffic Generation": 6 objects / 1,080 KiB, 26 / 3,204 KiB, 111 / 6,072 KiB), served by a
//! real HTTP/2 server and fetched by a real client.
//!
//! - Server: `nghttpd --no-tls` (Debian `nghttp2-server`) in the server namespace, serving a
//!   document root written for the run, on loopback port H.
//! - Client: one `h2load -c 1 -n N -m N` (Debian `nghttp2-client`) per page load in the client
//!   namespace: all N objects of the page requested at once as streams of one HTTP/2 connection
//!   (a browser that knows the page's objects; no HTML → sub-resource round trip; nghttpd allows
//!   100 concurrent streams, so the 111-object page queues 11). A fresh connection per load, so
//!   every load starts in slow start. (curl 7.88's `--parallel --http2-prior-knowledge` fails
//!   the second stream with "Error in the HTTP2 framing layer", hence h2load.)
//! - Kernel contenders: h2load and nghttpd speak plain TCP over loopback to the testbed's relays,
//!   which carry the connection over the path with the contender's congestion control (and
//!   MPTCP) on both ends ([`crate::workload::Relay`]); `ss -tinM` is read in the server
//!   namespace (the data sender) for the path's port only.
//! - External contenders (braid): `{sink}` is nghttpd (127.0.0.1:H in the server namespace),
//!   `{entry}` the client namespace's address h2load connects to, e.g. `braid forward --listen
//!   {entry} --to {sink}` (h2load speaks no SOCKS, so `braid socks` is not used here).
//!
//! Metric: page completion time = first request's start to the last response's end, from
//! h2load's per-request log (the TCP handshake to the local relay or forward is before the first
//! request; h2load's "finished in", which includes it, is kept as `finished_s`). A load counts
//! only if h2load reports every request succeeded with a 2xx, its log shows N requests all 200,
//! and the body bytes are exactly the page's; otherwise it is a failure, never a fast load.
//!
//! Object sizes (the paper gives only counts and totals): object k of n gets a share of the total
//! proportional to 1 / (k + 1) (Zipf-like: a few large objects, many small ones; 6 objects:
//! 441 … 73 KiB; 26 objects: 831 … 32 KiB; 111 objects: 1,148 … 10 KiB), rounded down to
//! bytes, the remainder added to object 0, so the page's size is exactly the paper's.

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use braid_sim::Scenario;

use crate::contender::Contender;
use crate::netns::{server_addr, Testbed};
use crate::percentile::percentile;
use crate::report::{Row, WebMetrics};
use crate::run::{spawn_helper, ss_verdict, Helpers, RunOptions};
use crate::sys;
use crate::workload::{self, next_port, Session, Workload, LOOPBACK};

/// A page: `objects` objects, `total` bytes in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSpec {
    pub objects: usize,
    pub total: u64,
}

/// dFEC paper, Table II (google.com, youtube.com, espn.go.com).
pub const TABLE_II: [PageSpec; 3] = [
    PageSpec { objects: 6, total: 1_080 * 1024 },
    PageSpec { objects: 26, total: 3_204 * 1024 },
    PageSpec { objects: 111, total: 6_072 * 1024 },
];

impl PageSpec {
    /// `6x1080KiB`.
    pub fn name(&self) -> String {
        format!("{}x{}KiB", self.objects, self.total / 1024)
    }

    /// Object sizes: shares ∝ 1 / (k + 1), summing exactly to `total` (see the module doc).
    pub fn object_sizes(&self) -> Vec<u64> {
        let n = self.objects.max(1);
        let h: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
        let mut sizes: Vec<u64> =
            (0..n).map(|k| (self.total as f64 / (k as f64 + 1.0) / h).floor() as u64).collect();
        let sum: u64 = sizes.iter().sum();
        sizes[0] += self.total - sum.min(self.total);
        sizes
    }
}

/// A page picked by its object count (`--pages 6,26,111`).
pub fn parse_page(p: &str) -> Result<PageSpec, String> {
    let n: usize = p.trim().parse().map_err(|_| format!("`{p}` is not a number"))?;
    TABLE_II
        .iter()
        .find(|t| t.objects == n)
        .copied()
        .ok_or_else(|| format!("no Table II page has {n} objects (6, 26, 111)"))
}

#[derive(Debug, Clone)]
pub struct WebOptions {
    pub pages: Vec<PageSpec>,
    /// Loads of each page per contender (round-robin over the pages).
    pub loads: usize,
}

impl Default for WebOptions {
    fn default() -> WebOptions {
        WebOptions { pages: TABLE_II.to_vec(), loads: 5 }
    }
}

/// What h2load printed about one load (its summary lines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct H2Summary {
    pub requests: u64,
    pub succeeded: u64,
    pub status_2xx: u64,
    /// Response body bytes (DATA frames) over all requests.
    pub data_bytes: u64,
    /// h2load's "finished in": connect to the last response.
    pub finished_s: f64,
}

fn number_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> =
        line.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let i = words.iter().position(|w| *w == word)?;
    words.get(i.checked_sub(1)?)?.parse().ok()
}

/// Parse h2load's summary: `finished in 1.23s, …`, `requests: 6 total, 6 started, 6 done,
/// 6 succeeded, …`, `status codes: 6 2xx, …`, `traffic: … (1105920) data`.
pub fn parse_h2load(out: &str) -> Result<H2Summary, String> {
    let mut s = H2Summary::default();
    let (mut have_req, mut have_status, mut have_traffic, mut have_time) = (false, false, false, false);
    for line in out.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("finished in ") {
            let t = rest.split(',').next().unwrap_or("").trim();
            s.finished_s = if let Some(ms) = t.strip_suffix("ms") {
                ms.parse::<f64>().map(|v| v / 1e3)
            } else if let Some(us) = t.strip_suffix("us") {
                us.parse::<f64>().map(|v| v / 1e6)
            } else {
                t.trim_end_matches('s').parse::<f64>()
            }
            .map_err(|_| format!("h2load: unreadable time `{t}`"))?;
            have_time = true;
        } else if let Some(rest) = line.strip_prefix("requests:") {
            s.requests = number_before(rest, "total").ok_or("h2load: no request total")?;
            s.succeeded = number_before(rest, "succeeded").ok_or("h2load: no succeeded count")?;
            have_req = true;
        } else if let Some(rest) = line.strip_prefix("status codes:") {
            s.status_2xx = number_before(rest, "2xx").ok_or("h2load: no 2xx count")?;
            have_status = true;
        } else if let Some(rest) = line.strip_prefix("traffic:") {
            // `… 390.63KB (400000) data`: the number in brackets before `data`.
            let before = rest.rsplit_once("data").map(|(b, _)| b).ok_or("h2load: no data bytes")?;
            let n = before.rsplit_once('(').and_then(|(_, n)| n.split(')').next()).unwrap_or("");
            s.data_bytes = n.trim().parse().map_err(|_| format!("h2load: unreadable data bytes `{n}`"))?;
            have_traffic = true;
        }
    }
    if !(have_req && have_status && have_traffic && have_time) {
        return Err("h2load printed no complete summary".into());
    }
    Ok(s)
}

/// Check one load: h2load's summary (every request succeeded with a 2xx, exactly the page's
/// body bytes) and its per-request log (`start µs since the epoch, status, µs to the end of the
/// response`, one line per request, all 200). Returns the page time: first request's start to
/// the last response's end.
pub fn verify_load(summary: &str, log: &str, page: &PageSpec) -> Result<f64, String> {
    let s = parse_h2load(summary)?;
    let n = page.objects as u64;
    if s.requests != n || s.succeeded != n || s.status_2xx != n {
        return Err(format!(
            "{} of {n} requests succeeded ({} 2xx, {} made)",
            s.succeeded, s.status_2xx, s.requests
        ));
    }
    if s.data_bytes != page.total {
        return Err(format!("{} of {} bytes", s.data_bytes, page.total));
    }
    let mut first = u64::MAX;
    let mut last = 0u64;
    let mut lines = 0u64;
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split('\t');
        let (Some(start), Some(status), Some(dur)) = (it.next(), it.next(), it.next()) else {
            return Err(format!("unreadable h2load log line `{line}`"));
        };
        let (Ok(start), Ok(dur)) = (start.trim().parse::<u64>(), dur.trim().parse::<u64>()) else {
            return Err(format!("unreadable h2load log line `{line}`"));
        };
        if status.trim() != "200" {
            return Err(format!("a request ended with status {}", status.trim()));
        }
        first = first.min(start);
        last = last.max(start.saturating_add(dur));
        lines += 1;
    }
    if lines != n {
        return Err(format!("h2load logged {lines} of {n} requests"));
    }
    Ok(last.saturating_sub(first) as f64 / 1e6)
}

/// Write the pages' objects under `root/<page name>/<k>.bin`.
fn write_docroot(root: &Path, pages: &[PageSpec]) -> io::Result<()> {
    for p in pages {
        let dir = root.join(p.name());
        std::fs::create_dir_all(&dir)?;
        for (k, size) in p.object_sizes().into_iter().enumerate() {
            // Not all one byte, in case anything on the way compresses.
            let body: Vec<u8> = (0..size).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            std::fs::write(dir.join(format!("{k}.bin")), body)?;
        }
    }
    Ok(())
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Wait until something accepts on `addr` inside namespace `ns`.
pub(crate) fn wait_listening(ns: &str, addr: SocketAddr, timeout: Duration) -> io::Result<()> {
    sys::spawn_in(ns, "wait-listen", move || {
        let until = Instant::now() + timeout;
        loop {
            if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= until || sys::interrupted() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("nothing listens on {addr}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .join()
    .map_err(|_| io::Error::other("wait thread panicked"))?
}

/// Are nghttpd and h2load there? (The smoke script skips the web workload when not.)
pub fn tools_missing() -> Option<String> {
    for (tool, pkg) in [("nghttpd", "nghttp2-server"), ("h2load", "nghttp2-client")] {
        if Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Some(format!("`{tool}` not found (apt-get install {pkg})"));
        }
    }
    None
}

pub fn run(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    opts: &RunOptions,
    web: &WebOptions,
) -> io::Result<Vec<Row>> {
    if let Some(why) = tools_missing() {
        return Err(io::Error::new(io::ErrorKind::NotFound, why));
    }
    let root = TempDir(std::env::temp_dir().join(format!(
        "braid-testbed-web-{}-{}",
        std::process::id(),
        next_port()
    )));
    write_docroot(&root.0, &web.pages)?;
    let http_port = next_port();
    let sink = SocketAddrV4::new(LOOPBACK, http_port);
    let entry = SocketAddrV4::new(LOOPBACK, http_port.wrapping_add(10000));
    let mut server = Helpers(Vec::new());
    server.0.push(spawn_helper(
        &tb.server_ns,
        &format!("exec nghttpd --no-tls -d '{}' {http_port} >/dev/null 2>&1", root.0.display()),
    )?);
    wait_listening(&tb.server_ns, sink.into(), Duration::from_secs(5))
        .map_err(|e| io::Error::new(e.kind(), format!("nghttpd: {e}")))?;

    let session = Session::begin(tb, scenario, contender, sink, entry)?;
    // Kernel contenders: the relays carry the path's connection (port P on the server's path
    // address); h2load connects to the client relay on loopback.
    let path_port = next_port();
    let mut relays = Vec::new();
    if let Some(cc) = contender.cc() {
        let mptcp = matches!(contender, Contender::Mptcp { .. });
        let listen = SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, path_port);
        relays.push(workload::relay_server(&tb.server_ns, listen, sink, mptcp, cc.to_owned())?);
        let to = SocketAddrV4::new(server_addr(0), path_port);
        relays.push(workload::relay_client(&tb.client_ns, entry, to, mptcp, cc.to_owned())?);
    }

    let ss_path = workload::ss_file(opts, scenario, contender, "web");
    let mut ss_text: Option<String> = None;
    struct PageRun {
        times: Vec<f64>,
        finished: Vec<f64>,
        failures: Vec<String>,
        elapsed: f64,
    }
    let mut runs: Vec<PageRun> = web
        .pages
        .iter()
        .map(|_| PageRun { times: vec![], finished: vec![], failures: vec![], elapsed: 0.0 })
        .collect();
    let log_file = root.0.join("h2load.tsv");
    'loads: for _ in 0..web.loads {
        for (pi, page) in web.pages.iter().enumerate() {
            if sys::interrupted() {
                break 'loads;
            }
            let n = page.objects.to_string();
            let mut args: Vec<String> = vec![
                "-n".into(),
                n.clone(),
                "-c".into(),
                "1".into(),
                "-t".into(),
                "1".into(),
                "-m".into(),
                n,
                "-T".into(),
                format!("{}", opts.limit.as_secs().max(1)),
                format!("--log-file={}", log_file.display()),
            ];
            args.extend((0..page.objects).map(|k| format!("http://{entry}/{}/{k}.bin", page.name())));
            let _ = std::fs::remove_file(&log_file);
            let start = Instant::now();
            let child = sys::spawn_in(&tb.client_ns, "h2load", move || {
                Command::new("h2load")
                    .args(&args)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
            })
            .join()
            .map_err(|_| io::Error::other("h2load thread panicked"))??;
            if ss_text.is_none() && contender.cc().is_some() {
                // While the page loads: the server's side sends the data.
                std::thread::sleep(Duration::from_millis(300));
                ss_text = Some(workload::snapshot_ss(&tb.server_ns, path_port, &ss_path));
            }
            let out = child.wait_with_output()?;
            let run = &mut runs[pi];
            run.elapsed += start.elapsed().as_secs_f64();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let log = std::fs::read_to_string(&log_file).unwrap_or_default();
            match verify_load(&stdout, &log, page) {
                Ok(t) => {
                    run.times.push(t);
                    run.finished.push(parse_h2load(&stdout).map(|s| s.finished_s).unwrap_or(f64::NAN));
                }
                Err(e) => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let why = stderr.lines().last().unwrap_or("").trim();
                    run.failures.push(format!(
                        "{e} (h2load {}{}{why})",
                        out.status,
                        if why.is_empty() { "" } else { ": " }
                    ));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let accepted = relays.first().map(|r| r.accepted.load(std::sync::atomic::Ordering::SeqCst));
    drop(relays);
    let load = session.load.clone();
    let net = session.end(tb)?;
    drop(server);
    let ss = ss_text.unwrap_or_default();
    let verdict = ss_verdict(contender, &ss);
    let attempted: usize = runs.iter().map(|r| r.times.len() + r.failures.len()).sum();
    let mut rows = Vec::new();
    for (page, run) in web.pages.iter().zip(runs) {
        let mut sorted = run.times.clone();
        sorted.sort_by(f64::total_cmp);
        let ok = run.times.len();
        let error = (!run.failures.is_empty())
            .then(|| format!("{} of {} loads failed: {}", run.failures.len(), web.loads, run.failures[0]));
        let mut row = workload::base_row(
            scenario,
            contender,
            Workload::Web,
            load.clone(),
            &net,
            page.total * web.loads as u64,
            page.total * ok as u64,
            (ok == web.loads).then(|| run.times.iter().sum()),
            run.elapsed,
            verdict.clone(),
            ss_path.display().to_string(),
            error,
        );
        row.web = Some(WebMetrics {
            page: page.name(),
            objects: page.objects,
            page_bytes: page.total,
            loads: web.loads,
            median_s: percentile(&sorted, 0.5),
            p90_s: percentile(&sorted, 0.9),
            times_s: run.times,
            finished_s: run.finished,
            failures: run.failures,
            connections_per_load: accepted.map(|a| a as f64 / attempted.max(1) as f64),
        });
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_have_the_papers_counts_and_totals() {
        for p in TABLE_II {
            let s = p.object_sizes();
            assert_eq!(s.len(), p.objects);
            assert_eq!(s.iter().sum::<u64>(), p.total, "{}", p.name());
            assert!(s.windows(2).all(|w| w[0] >= w[1]), "largest first: {s:?}");
            assert!(*s.last().unwrap() > 8 * 1024, "no object below 8 KiB: {s:?}");
        }
        assert_eq!(TABLE_II[2].object_sizes()[0] / 1024, 1147, "1,147.6 KiB");
        assert_eq!(TABLE_II[0].object_sizes()[5] / 1024, 73);
        assert_eq!(TABLE_II[1].name(), "26x3204KiB");
        assert_eq!((parse_page("6"), parse_page("111")), (Ok(TABLE_II[0]), Ok(TABLE_II[2])));
        assert!(parse_page("7").is_err());
    }

    const OUT: &str = "starting benchmark...
finished in 1.52s, 3.94 req/s, 711.03KB/s
requests: 6 total, 6 started, 6 done, 6 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 6 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 1.05MB (1106232) total, 174B (174) headers (space savings 70.10%), 1.05MB (1105920) data
";
    const LOG: &str = "1795364087000000\t200\t900000\n1795364087000100\t200\t1200000\n\
1795364087000200\t200\t100\n1795364087000300\t200\t100\n1795364087000400\t200\t100\n1795364087000500\t200\t100\n";

    #[test]
    fn h2load_summary_parses() {
        let s = parse_h2load(OUT).unwrap();
        assert_eq!(
            s,
            H2Summary { requests: 6, succeeded: 6, status_2xx: 6, data_bytes: 1_105_920, finished_s: 1.52 }
        );
        let ms = OUT.replace("1.52s", "5.37ms");
        assert!((parse_h2load(&ms).unwrap().finished_s - 0.00537).abs() < 1e-12);
        assert!(parse_h2load("starting benchmark...\n").is_err(), "no summary: h2load failed");
    }

    #[test]
    fn a_load_counts_only_when_every_object_is_whole() {
        let page = TABLE_II[0];
        assert_eq!(verify_load(OUT, LOG, &page), Ok(1.2001));
        let short = OUT.replace("(1105920) data", "(1105919) data");
        assert!(verify_load(&short, LOG, &page).unwrap_err().contains("1105919 of 1105920"));
        let failed = OUT
            .replace("6 succeeded, 0 failed", "5 succeeded, 1 failed")
            .replace("6 2xx, 0 3xx, 0 4xx", "5 2xx, 0 3xx, 1 4xx");
        assert!(verify_load(&failed, LOG, &page).unwrap_err().contains("5 of 6"));
        let one_missing: String = LOG.lines().take(5).map(|l| format!("{l}\n")).collect();
        assert!(verify_load(OUT, &one_missing, &page).unwrap_err().contains("5 of 6"));
        let bad_status = LOG.replacen("\t200\t", "\t-1\t", 1);
        assert!(verify_load(OUT, &bad_status, &page).is_err());
        assert!(verify_load(OUT, "garbage\n", &page).is_err());
        assert!(verify_load(OUT, LOG, &TABLE_II[1]).is_err(), "another page's counts");
    }
}
