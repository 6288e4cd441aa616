//! Live per-path statistics: a table on stderr (`--stats`) and JSON lines (`--stats-json FILE`).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use braid_runtime::{Connection, PathReport};
use clap::Args;

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

pub fn json(samples: &[PathSample], conn: &Connection, elapsed: Duration) -> String {
    let c = conn.stats();
    let paths: Vec<String> = samples
        .iter()
        .map(|p| {
            let r = &p.report;
            format!(
                "{{\"path\":{},\"remote\":\"{}\",\"srtt_ms\":{:.3},\"loss\":{:.5},\"cwnd\":{},\"send_mbps\":{:.3},\"recv_mbps\":{:.3},\"packets_sent\":{},\"packets_lost\":{},\"packets_acked\":{},\"timeouts\":{},\"datagrams_received\":{},\"emulated_drops\":{}}}",
                r.id,
                addr(r.remote),
                r.srtt.as_secs_f64() * 1e3,
                r.loss,
                r.cwnd,
                p.send_mbps,
                p.recv_mbps,
                r.stats.packets_sent,
                r.stats.packets_lost,
                r.stats.packets_acked,
                r.stats.timeouts,
                r.datagrams_received,
                r.emulated_drops
            )
        })
        .collect();
    format!(
        "{{\"t\":{:.3},\"paths\":[{}],\"source_sent\":{},\"repair_sent\":{},\"symbols_received\":{},\"recovered\":{},\"retransmissions\":{}}}",
        elapsed.as_secs_f64(),
        paths.join(","),
        c.source_symbols_sent,
        c.repair_symbols_sent,
        c.symbols_received,
        c.symbols_recovered,
        c.retransmissions
    )
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
