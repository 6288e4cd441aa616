//! Results: one [`Row`] per contender and scenario point, printed as a table and written as
//! JSON and CSV.

use std::io;
use std::path::Path;

use serde::Serialize;

use crate::forwarder::ForwardStats;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub scenario: String,
    pub label: String,
    pub seed: u64,
    pub contender: String,
    pub transfer_bytes: u64,
    pub received_bytes: u64,
    /// Connect → last byte at the receiver; `None` if the limit came first.
    pub completion_s: Option<f64>,
    pub elapsed_s: f64,
    /// received × 8 / elapsed (the whole transfer, slow start included).
    pub goodput_mbps: f64,
    /// Goodput from 2 s after connect to the last byte (or the limit), when that window is ≥ 2 s:
    /// comparable with iperf3's steady-state numbers in TESTBED.md.
    pub steady_mbps: Option<f64>,
    /// Σ rateᵢ × (1 − pᵢ) of the forward paths over the same time (braid-sim's ideal).
    pub ideal_mbps: f64,
    pub ratio: f64,
    /// Bytes the client's kernel put into each path (client TUN tx), and that came out of it at
    /// the server (server TUN rx): proof of which path each subflow used.
    pub path_fwd_tx_bytes: Vec<u64>,
    pub path_fwd_rx_bytes: Vec<u64>,
    /// TX/RX drops on the TUN devices during the run (loss nobody configured; should be 0).
    pub tun_drops: u64,
    /// Whether `ss -tinM` showed the contender's congestion control (and an MPTCP socket).
    pub ss_check: String,
    pub ss_file: String,
    /// /proc/loadavg (1, 5, 15 min) at the start of the run.
    pub load: String,
    pub error: Option<String>,
    pub forwarders: Vec<ForwardStats>,
    /// The flow mix of a concurrent run (`braid:2,cubic:2`), empty for a run of one contender.
    /// In a mix: `steady_mbps` is the flow's goodput over the fairness window, `ratio` that over
    /// its fair share, `transfer_bytes` 0 (flows send until the limit).
    pub mix: String,
    /// The flow's index in its mix (0 outside a mix).
    pub flow: usize,
    /// Jain's fairness index over the mix's flows (the same on each of its rows).
    pub jain: Option<f64>,
    /// `bulk`, `web` or `video` (crate::workload). Web and video rows reuse the bulk fields as
    /// documented on [`crate::web::WebMetrics`] and [`crate::video::VideoMetrics`].
    pub workload: String,
    pub web: Option<crate::web::WebMetrics>,
    pub video: Option<crate::video::VideoMetrics>,
}

pub fn header() -> String {
    format!(
        "{:<22} {:<22} {:<12} {:>9} {:>8} {:>11} {:>18} {:>5} {:>6} {}",
        "scenario",
        "point",
        "contender",
        "goodput",
        "x ideal",
        "completion",
        "per-path MB",
        "drops",
        "ss",
        "load"
    )
}

pub fn line(r: &Row) -> String {
    let completion = match r.completion_s {
        Some(c) => format!("{c:.2} s"),
        None => format!("> {:.0} s", r.elapsed_s),
    };
    let per_path: Vec<String> =
        r.path_fwd_tx_bytes.iter().map(|b| format!("{:.1}", *b as f64 / 1e6)).collect();
    let mut s = format!(
        "{:<22} {:<22} {:<12} {:>9} {:>8.3} {:>11} {:>8} {:>18} {:>5} {:>6} {}",
        r.scenario,
        r.label,
        r.contender,
        format!("{:.2}", r.goodput_mbps),
        r.ratio,
        completion,
        r.steady_mbps.map(|s| format!("{s:.2}")).unwrap_or_else(|| "-".into()),
        per_path.join("/"),
        r.tun_drops,
        r.ss_check,
        r.load
    );
    if !r.mix.is_empty() {
        s.push_str(&format!("  mix {} flow {} jain {:.3}", r.mix, r.flow, r.jain.unwrap_or(0.0)));
    }
    s.push_str(&crate::workload::summary(r));
    if let Some(e) = &r.error {
        s.push_str(&format!("  ERROR: {e}"));
    }
    s
}

pub fn write_json(rows: &[Row], path: &Path) -> io::Result<()> {
    let text = serde_json::to_string_pretty(rows).map_err(io::Error::other)?;
    std::fs::write(path, text)
}

pub fn write_csv(rows: &[Row], path: &Path) -> io::Result<()> {
    let mut out = String::from(
        "scenario,label,seed,contender,transfer_bytes,received_bytes,completion_s,elapsed_s,goodput_mbps,\
         steady_mbps,ideal_mbps,ratio,path_fwd_tx_bytes,path_fwd_rx_bytes,tun_drops,ss_check,load,error,mix,flow,jain,",
    );
    out.push_str(crate::workload::CSV_COLUMNS);
    out.push('\n');
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(";");
    for r in rows {
        out.push_str(&format!(
            "{},\"{}\",{},{},{},{},{},{:.3},{:.4},{},{:.4},{:.4},{},{},{},\"{}\",\"{}\",\"{}\",\"{}\",{},{}",
            r.scenario,
            r.label,
            r.seed,
            r.contender,
            r.transfer_bytes,
            r.received_bytes,
            r.completion_s.map(|c| format!("{c:.3}")).unwrap_or_default(),
            r.elapsed_s,
            r.goodput_mbps,
            r.steady_mbps.map(|s| format!("{s:.4}")).unwrap_or_default(),
            r.ideal_mbps,
            r.ratio,
            join(&r.path_fwd_tx_bytes),
            join(&r.path_fwd_rx_bytes),
            r.tun_drops,
            r.ss_check,
            r.load,
            r.error.clone().unwrap_or_default().replace('"', "'"),
            r.mix,
            r.flow,
            r.jain.map(|j| format!("{j:.4}")).unwrap_or_default(),
        ));
        out.push(',');
        out.push_str(&crate::workload::csv_fields(r));
        out.push('\n');
    }
    std::fs::write(path, out)
}
