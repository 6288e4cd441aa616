//! Live per-path statistics: a table on stderr (`--stats`) and JSON lines (`--stats-json FILE`).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use braid_proto::conn::ConnectionStats;
use braid_runtime::{Connection, PathReport};
use clap::Args;
use serde::Serialize;

use crate::fail::{fail, Fail};

#[derive(Args, Clone, Default)]
pub struct StatsOpts {
    /// Print a per-path table on stderr every interval.
    #[arg(long)]
    pub stats: bool,
    /// Append one JSON object per interval to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Seconds between reports.
    #[arg(long, default_value_t = 1.0)]
    pub stats_interval: f64,
}

/// One interval's numbers for a path (rates over the interval).
pub struct PathSample {
    pub report: PathReport,
    pub send_mbps: f64,
    pub recv_mbps: f64,
}

/// Differences between two reports of the same connection.
pub struct Sampler {
    last: Vec<PathReport>,
    at: Instant,
}

impl Sampler {
    pub fn new(conn: &Connection) -> Sampler {
        Sampler { last: conn.paths(), at: Instant::now() }
    }

    pub fn sample(&mut self, conn: &Connection) -> Vec<PathSample> {
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64().max(1e-6);
        let paths = conn.paths();
        let out = paths
            .iter()
            .map(|p| {
                let before = self.last.iter().find(|q| q.id == p.id);
                let sent = p.bytes_sent - before.map_or(0, |b| b.bytes_sent);
                let recv = p.bytes_received - before.map_or(0, |b| b.bytes_received);
                PathSample {
                    report: p.clone(),
                    send_mbps: sent as f64 * 8.0 / secs / 1e6,
                    recv_mbps: recv as f64 * 8.0 / secs / 1e6,
                }
            })
            .collect();
        self.last = paths;
        self.at = now;
        out
    }
}

fn addr(a: Option<std::net::SocketAddr>) -> String {
    a.map_or_else(|| "-".to_string(), |a| a.to_string())
}

pub fn table(samples: &[PathSample], conn: &Connection) -> String {
    let mut s = String::from(
        "path  remote                  rtt ms  loss %  cwnd KiB  send Mbit/s  recv Mbit/s  sent pkts  lost  PTOs  emu drops\n",
    );
    for p in samples {
        let r = &p.report;
        s.push_str(&format!(
            "{:<4}  {:<22} {:7.1} {:7.2} {:9.1} {:12.1} {:12.1} {:10} {:5} {:5} {:10}\n",
            r.id,
            addr(r.remote),
            r.srtt.as_secs_f64() * 1e3,
            r.loss * 100.0,
            r.cwnd as f64 / 1024.0,
            p.send_mbps,
            p.recv_mbps,
            r.stats.packets_sent,
            r.stats.packets_lost,
            r.stats.timeouts,
            r.emulated_drops,
        ));
    }
    let c = conn.stats();
    s.push_str(&format!(
        "all   source sent {}  repair sent {}  received {}  recovered by decoding {}  retransmitted {}\n",
        c.source_symbols_sent,
        c.repair_symbols_sent,
        c.symbols_received,
        c.symbols_recovered,
        c.retransmissions
    ));
    s
}

/// One path in a JSON report (`--stats-json`, `braid bench --json`).
#[derive(Serialize)]
struct PathJson {
    path: u8,
    remote: String,
    srtt_ms: f64,
    loss: f64,
    cwnd: u64,
    send_mbps: f64,
    recv_mbps: f64,
    packets_sent: u64,
    packets_lost: u64,
    packets_acked: u64,
    timeouts: u64,
    datagrams_received: u64,
    emulated_drops: u64,
    /// The paths the controller judges to share this one's bottleneck (a bit per path).
    shared_with: u8,
    /// A model-based controller's bandwidth estimate (Mbit/s) and its last round's queue (ms).
    model_mbps: f64,
    model_queue_ms: f64,
}

/// One interval's JSON report: the paths and the connection's counters.
#[derive(Serialize)]
pub struct StatsJson {
    t: f64,
    paths: Vec<PathJson>,
    source_sent: u64,
    repair_sent: u64,
    symbols_received: u64,
    recovered: u64,
    retransmissions: u64,
}

/// `x` to `digits` decimals: the reports' precision (a rate to the kbit/s, a time to the µs).
pub fn rounded(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The report of `samples` and the connection's counters `c`, `elapsed` into the run.
pub fn report(samples: &[PathSample], c: &ConnectionStats, elapsed: Duration) -> StatsJson {
    let paths = samples
        .iter()
        .map(|p| {
            let r = &p.report;
            PathJson {
                path: r.id,
                remote: addr(r.remote),
                srtt_ms: rounded(r.srtt.as_secs_f64() * 1e3, 3),
                loss: rounded(r.loss, 5),
                cwnd: r.cwnd,
                send_mbps: rounded(p.send_mbps, 3),
                recv_mbps: rounded(p.recv_mbps, 3),
                packets_sent: r.stats.packets_sent,
                packets_lost: r.stats.packets_lost,
                packets_acked: r.stats.packets_acked,
                timeouts: r.stats.timeouts,
                datagrams_received: r.datagrams_received,
                emulated_drops: r.emulated_drops,
                shared_with: r.stats.shared_with,
                model_mbps: rounded(r.stats.model_bandwidth as f64 * 8e-6, 3),
                model_queue_ms: rounded(r.stats.model_queue_us as f64 * 1e-3, 3),
            }
        })
        .collect();
    StatsJson {
        t: rounded(elapsed.as_secs_f64(), 3),
        paths,
        source_sent: c.source_symbols_sent,
        repair_sent: c.repair_symbols_sent,
        symbols_received: c.symbols_received,
        recovered: c.symbols_recovered,
        retransmissions: c.retransmissions,
    }
}

/// One JSON line (`--stats-json`).
pub fn json(samples: &[PathSample], conn: &Connection, elapsed: Duration) -> String {
    serde_json::to_string(&report(samples, &conn.stats(), elapsed)).expect("numbers and strings serialize")
}

impl StatsOpts {
    /// The flags make sense (checked before anything starts).
    pub fn check(&self) -> Result<(), Fail> {
        if !(self.stats_interval >= 0.05 && self.stats_interval <= 3600.0) {
            return Err(fail("--stats-interval: expected seconds between 0.05 and 3600"));
        }
        Ok(())
    }

    /// Starts reporting on `conn` in the background (until the connection ends); `label` heads
    /// each table (a server has several connections).
    pub fn spawn(&self, conn: &Connection, label: Option<String>) -> Result<(), Fail> {
        if !self.stats && self.stats_json.is_none() {
            return Ok(());
        }
        self.check()?;
        let mut file = match &self.stats_json {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| fail(format!("--stats-json {}: {e}", p.display())))?,
            ),
            None => None,
        };
        let conn = conn.clone();
        let table_on = self.stats;
        let interval = Duration::from_secs_f64(self.stats_interval);
        tokio::spawn(async move {
            let started = Instant::now();
            let mut sampler = Sampler::new(&conn);
            let mut tick = tokio::time::interval(interval);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = conn.closed() => return,
                }
                let samples = sampler.sample(&conn);
                if table_on {
                    match &label {
                        Some(l) => eprint!("{l}\n{}", table(&samples, &conn)),
                        None => eprint!("{}", table(&samples, &conn)),
                    }
                }
                if let Some(f) = &mut file {
                    let _ = writeln!(f, "{}", json(&samples, &conn, started.elapsed()));
                }
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_proto::conn::PathStats;

    /// A report is one JSON object whose numbers carry the report's precision; a rate that is
    /// not a number is `null` (JSON has no NaN).
    #[test]
    fn a_report_is_one_json_object_with_rounded_numbers() {
        let path = PathReport {
            id: 1,
            remote: Some("127.0.0.1:9".parse().unwrap()),
            srtt: Duration::from_micros(12_345_678),
            loss: 0.012_345_678,
            cwnd: 4096,
            stats: PathStats {
                shared_with: 0b101,
                model_bandwidth: 2_500_000,
                model_queue_us: 12_345,
                ..PathStats::default()
            },
            ..PathReport::default()
        };
        let samples = [PathSample { report: path, send_mbps: 1.234_56, recv_mbps: f64::NAN }];
        let stats = ConnectionStats { retransmissions: 7, ..ConnectionStats::default() };
        let line = serde_json::to_string(&report(&samples, &stats, Duration::from_millis(1500))).unwrap();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["t"], 1.5);
        assert_eq!(v["retransmissions"], 7);
        let p = &v["paths"][0];
        assert_eq!((p["path"].as_u64(), p["remote"].as_str()), (Some(1), Some("127.0.0.1:9")));
        assert_eq!(p["srtt_ms"], 12_345.678);
        assert_eq!(p["loss"], 0.012_35);
        assert_eq!(p["cwnd"], 4096);
        assert_eq!(p["shared_with"], 5);
        assert_eq!((p["model_mbps"].as_f64(), p["model_queue_ms"].as_f64()), (Some(20.0), Some(12.345)));
        assert_eq!(p["send_mbps"], 1.235);
        assert!(p["recv_mbps"].is_null(), "{line}");
    }
}
