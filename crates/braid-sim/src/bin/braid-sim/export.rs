//! Files for scripts: `summary.csv`, `timeseries.csv` and `video.csv` (through the csv crate)
//! and one JSON document (through serde_json). Their columns are documented in
//! docs/SIMULATOR.md; scripts/make-report.py and scripts/testbed_matrix.py read them, so a change
//! here is a change of format.

use std::path::Path;

use braid_sim::{BlockStats, Summary};
use serde::Serialize;

use crate::run::{Row, VideoRow, INTERVAL};

fn option(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |v| format!("{v:.digits$}"))
}

/// `summary.csv` (a row per run) and `timeseries.csv` (a row per run, interval, flow and path).
pub fn write_csv(dir: &Path, rows: &[Row]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut out = csv::Writer::from_path(dir.join("summary.csv"))?;
    out.write_record([
        "run",
        "scenario",
        "point",
        "seed",
        "mode",
        "completion_s",
        "goodput_mbps",
        "ratio_ideal",
        "repair_overhead",
        "source_sent",
        "repair_sent",
        "recovered",
        "recovery_rate",
        "retransmissions",
        "fast_losses",
        "losses",
        "timeouts",
        "block_count",
        "block_delay_mean_ms",
        "block_delay_p99_ms",
        "block_jitter_ms",
        "datagrams",
        "intact",
        "ideal_mbps",
        "path_packets_sent",
        "path_packets_acked",
        "path_share",
        "stalled_at_s",
        "outage_recovery_s",
        "fast_recoveries",
    ])?;
    for (run, r) in rows.iter().enumerate() {
        let b = r.blocks;
        out.write_record([
            run.to_string(),
            r.scenario.clone(),
            r.point.clone(),
            r.seed.to_string(),
            r.mode.name().to_string(),
            option(r.completion, 6),
            format!("{:.6}", r.goodput_mbps),
            format!("{:.6}", r.ratio),
            format!("{:.6}", r.overhead),
            r.source_sent.to_string(),
            r.repair_sent.to_string(),
            r.recovered.to_string(),
            option(r.metrics.effective_recovery_rate(), 6),
            r.retransmissions.to_string(),
            r.fast_losses.to_string(),
            r.losses.to_string(),
            r.timeouts.to_string(),
            b.map_or(0, |b| b.count).to_string(),
            option(b.map(|b| b.mean_delay_ms), 3),
            option(b.map(|b| b.p99_delay_ms), 3),
            option(b.map(|b| b.jitter_ms), 3),
            r.datagrams.to_string(),
            r.intact.to_string(),
            format!("{:.6}", r.ideal_mbps),
            list(r.path_sent.iter().map(u64::to_string)),
            list(r.path_acked.iter().map(u64::to_string)),
            list(shares(r).into_iter().map(|s| format!("{s:.6}"))),
            option(r.stalled_at, 6),
            option(r.recovery, 3),
            r.fast_recoveries.map_or_else(String::new, |n| n.to_string()),
        ])?;
    }
    out.flush()?;
    let mut out = csv::Writer::from_path(dir.join("timeseries.csv"))?;
    out.write_record([
        "run",
        "time_s",
        "goodput_mbps",
        "flow",
        "path",
        "cwnd_bytes",
        "srtt_ms",
        "loss_estimate",
    ])?;
    for (run, r) in rows.iter().enumerate() {
        let goodput = goodput_series(r);
        for (i, g) in goodput.iter().enumerate() {
            let t = i as f64 * INTERVAL.as_secs_f64();
            for p in &r.paths {
                let (cwnd, srtt, loss) = p.samples[i];
                out.write_record([
                    run.to_string(),
                    format!("{t:.3}"),
                    format!("{g:.6}"),
                    p.flow.to_string(),
                    p.path.to_string(),
                    cwnd.to_string(),
                    format!("{srtt:.3}"),
                    format!("{loss:.6}"),
                ])?;
            }
        }
    }
    out.flush()
}

/// Per-path values in one CSV cell, `;`-separated, path 0 first.
fn list(values: impl Iterator<Item = String>) -> String {
    values.collect::<Vec<_>>().join(";")
}

/// Each path's share of the acknowledged packets (0..=1; all zero if nothing was acknowledged).
fn shares(r: &Row) -> Vec<f64> {
    let total: u64 = r.path_acked.iter().sum();
    r.path_acked.iter().map(|&a| if total == 0 { 0.0 } else { a as f64 / total as f64 }).collect()
}

/// Goodput of every interval run, in Mbit/s (all flows together).
fn goodput_series(r: &Row) -> Vec<f64> {
    let mut g: Vec<f64> = r.metrics.goodput_series().into_iter().map(|(_, bps)| bps / 1e6).collect();
    g.resize(r.intervals, 0.0);
    g
}

/// `{"interval_ms": 100, "runs": [{…summary…, "series": {…}, "metrics": {…}}]}`.
pub fn to_json(rows: &[Row]) -> String {
    #[derive(Serialize)]
    struct Document<'a> {
        interval_ms: f64,
        runs: Vec<Run<'a>>,
    }
    #[derive(Serialize)]
    struct Run<'a> {
        run: usize,
        scenario: &'a str,
        point: &'a str,
        seed: u64,
        mode: &'static str,
        completion_s: Option<f64>,
        stalled_at_s: Option<f64>,
        outage_recovery_s: Option<f64>,
        goodput_mbps: f64,
        ideal_mbps: f64,
        ratio_ideal: f64,
        repair_overhead: f64,
        source_sent: u64,
        repair_sent: u64,
        recovered: u64,
        recovery_rate: Option<f64>,
        retransmissions: u64,
        fast_losses: u64,
        losses: u64,
        timeouts: u64,
        fast_recoveries: Option<u64>,
        blocks: Option<BlockStats>,
        datagrams: u64,
        intact: bool,
        /// Per path index (summed over flows): the sender's packets sent and acknowledged.
        path_stats: Vec<PathStatsJson>,
        series: Series,
        /// Everything `Metrics` recorded (links, event-loop counters, …).
        metrics: Summary,
    }
    #[derive(Serialize)]
    struct PathStatsJson {
        path: usize,
        packets_sent: u64,
        packets_acked: u64,
        share: f64,
    }
    #[derive(Serialize)]
    struct Series {
        time_s: Vec<f64>,
        goodput_mbps: Vec<f64>,
        paths: Vec<PathJson>,
    }
    #[derive(Serialize)]
    struct PathJson {
        flow: usize,
        path: usize,
        cwnd_bytes: Vec<u64>,
        srtt_ms: Vec<f64>,
        loss_estimate: Vec<f64>,
    }
    let runs = rows
        .iter()
        .enumerate()
        .map(|(run, r)| Run {
            run,
            scenario: &r.scenario,
            point: &r.point,
            seed: r.seed,
            mode: r.mode.name(),
            completion_s: r.completion,
            stalled_at_s: r.stalled_at,
            outage_recovery_s: r.recovery,
            goodput_mbps: r.goodput_mbps,
            ideal_mbps: r.ideal_mbps,
            ratio_ideal: r.ratio,
            repair_overhead: r.overhead,
            source_sent: r.source_sent,
            repair_sent: r.repair_sent,
            recovered: r.recovered,
            recovery_rate: r.metrics.effective_recovery_rate(),
            retransmissions: r.retransmissions,
            fast_losses: r.fast_losses,
            losses: r.losses,
            timeouts: r.timeouts,
            fast_recoveries: r.fast_recoveries,
            blocks: r.blocks,
            datagrams: r.datagrams,
            intact: r.intact,
            path_stats: shares(r)
                .into_iter()
                .enumerate()
                .map(|(path, share)| PathStatsJson {
                    path,
                    packets_sent: r.path_sent[path],
                    packets_acked: r.path_acked[path],
                    share,
                })
                .collect(),
            series: Series {
                time_s: (0..r.intervals).map(|i| i as f64 * INTERVAL.as_secs_f64()).collect(),
                goodput_mbps: goodput_series(r),
                paths: r
                    .paths
                    .iter()
                    .map(|p| PathJson {
                        flow: p.flow,
                        path: p.path,
                        cwnd_bytes: p.samples.iter().map(|s| s.0).collect(),
                        srtt_ms: p.samples.iter().map(|s| s.1).collect(),
                        loss_estimate: p.samples.iter().map(|s| s.2).collect(),
                    })
                    .collect(),
            },
            metrics: r.metrics.summary(),
        })
        .collect();
    let doc = Document { interval_ms: INTERVAL.as_secs_f64() * 1e3, runs };
    serde_json::to_string_pretty(&doc).expect("plain numbers and strings serialize")
}

/// `video.csv`: a row per video run.
pub fn write_video_csv(dir: &Path, rows: &[VideoRow]) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let mut out = csv::Writer::from_path(dir.join("video.csv"))?;
    out.write_record([
        "run",
        "scenario",
        "point",
        "seed",
        "mode",
        "frames",
        "on_time",
        "on_time_share",
        "steady_frames",
        "steady_on_time",
        "latency_p50_ms",
        "latency_p99_ms",
        "latency_max_ms",
        "repair_overhead",
        "source_sent",
        "repair_sent",
        "retransmissions",
        "datagrams",
        "intact",
    ])?;
    for (run, r) in rows.iter().enumerate() {
        let s = r.stats;
        out.write_record([
            run.to_string(),
            r.scenario.clone(),
            r.point.clone(),
            r.seed.to_string(),
            r.mode.name().to_string(),
            s.frames.to_string(),
            s.on_time.to_string(),
            format!("{:.6}", s.on_time_share()),
            s.steady_frames.to_string(),
            s.steady_on_time.to_string(),
            format!("{:.3}", s.p50_ms),
            format!("{:.3}", s.p99_ms),
            format!("{:.3}", s.max_ms),
            format!("{:.6}", r.overhead),
            r.source_sent.to_string(),
            r.repair_sent.to_string(),
            r.retransmissions.to_string(),
            r.datagrams.to_string(),
            r.intact.to_string(),
        ])?;
    }
    out.flush()
}
