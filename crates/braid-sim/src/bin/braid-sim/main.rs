//! Runs scenario files and prints a table:
//! `braid-sim [--modes braid,tcp] [--scheduler NAME] [--csv DIR] [--json FILE] SCENARIO.toml…`
//!
//! Every run is one bulk transfer per flow (the scenario's `transfer` bytes), checked byte for
//! byte at the receiver. Rows give completion time, goodput, goodput against the physical limit
//! Σ rateᵢ × (1 − pᵢ) of the data direction, and the repair overhead. `--csv DIR` and
//! `--json FILE` also write every run's summary and its time series (goodput per interval, each
//! path's congestion window and RTT at the end of each interval); docs/SIMULATOR.md describes the
//! formats.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::{Mode, Redundancy, RepairPlacement};
use braid_proto::sched::SchedulerKind;
use braid_proto::ConnectionConfig;
use braid_proto::{BlockRecord, Instant};
use braid_sim::net::StopReason;
use braid_sim::{BlockStats, BulkFlow, Metrics, Scenario, Summary};
use serde::Serialize;

mod campaign;

/// Time-series interval (goodput bins and path samples).
const INTERVAL: Duration = Duration::from_millis(100);

struct Row {
    label: String,
    /// The scenario's name, sweep point and seed (the parts of `label`).
    scenario: String,
    point: String,
    seed: u64,
    mode: Mode,
    completion: Option<f64>,
    /// When an unfinished run went idle (nothing scheduled at any endpoint or link: a
    /// deadlock), in seconds.
    stalled_at: Option<f64>,
    /// Seconds from the scenario's first outage to the first 1-s window of goodput at 0.8 × the
    /// ideal (see `outage_recovery`); `None` without an outage or without recovery.
    recovery: Option<f64>,
    /// The scenario has an outage during the run (so `recovery: None` means "never").
    outage: bool,
    goodput_mbps: f64,
    /// The physical limit Σ rateᵢ × (1 − pᵢ), averaged over the run (Scenario::ideal_goodput_bps).
    ideal_mbps: f64,
    ratio: f64,
    overhead: f64,
    intact: bool,
    datagrams: u64,
    /// FMTCP's block delivery delay (first symbol sent → block decoded) and jitter.
    blocks: Option<BlockStats>,
    /// Counters summed over the senders (and `recovered` over the receivers).
    source_sent: u64,
    repair_sent: u64,
    recovered: u64,
    retransmissions: u64,
    losses: u64,
    fast_losses: u64,
    timeouts: u64,
    /// Per path index (summed over flows): packets the sender sent and had acknowledged.
    path_sent: Vec<u64>,
    path_acked: Vec<u64>,
    /// Recorded run: goodput bins, blocks, counters, links.
    metrics: Metrics,
    /// Per flow and path: (congestion window bytes, smoothed RTT ms, loss estimate) at the end of
    /// each interval.
    paths: Vec<PathSeries>,
    intervals: usize,
}

struct PathSeries {
    flow: usize,
    path: usize,
    samples: Vec<(u64, f64, f64)>,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: braid-sim [--modes braid,tcp,...] [--cc braid|cubic|newreno|bbr|ctcp|lia] [--scheduler NAME] [--placement per-path|across-paths] [--margin-ahead] [--delta D] [--tail-delta D] [--csv DIR] [--json FILE] SCENARIO.toml..."
    );
    eprintln!(
        "  --scheduler: every mode's multipath scheduler, one of {} (default: the mode's own)",
        SchedulerKind::ALL.map(|k| k.name()).join(", ")
    );
    eprintln!("  --margin-ahead: braid sends its repair margin ahead of new data (latency first)");
    eprintln!("  --delta D: braid's δ̂, the accepted chance a block's margin falls short (default 0.5)");
    eprintln!(
        "  --tail-delta D: braid's δ̂ for the blocks at an app-idle point, sent ahead of new data (default 0.01)"
    );
    eprintln!("  --modes: any of {}", braid_proto::conn::Mode::ALL.map(|m| m.name()).join(", "));
    eprintln!("  --cc: every path's congestion controller (default: the mode's own)");
    eprintln!("  --placement: where repair goes, per path or across paths (default: the mode's own)");
    eprintln!(
        "  mptcp and mptcp-dfec run only on scenarios with two paths or more, unless --modes names them"
    );
    eprintln!("  runs each scenario (every sweep point) once per mode and prints a summary table;");
    eprintln!("  --csv DIR writes DIR/summary.csv and DIR/timeseries.csv, --json FILE one JSON document");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut modes = Mode::ALL.to_vec();
    let mut modes_named = false;
    let mut placement = None;
    let mut cc = None;
    let mut scheduler = None;
    let mut margin_ahead = false;
    let mut delta = None;
    let mut tail_delta = None;
    let mut files = Vec::new();
    let mut csv_dir: Option<PathBuf> = None;
    let mut json_file: Option<PathBuf> = None;
    if std::env::args().nth(1).as_deref() == Some("campaign") {
        return campaign::main(std::env::args().skip(2).collect());
    }
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--modes" => {
                let Some(list) = args.next() else { return usage() };
                match list.split(',').map(str::parse).collect::<Result<Vec<Mode>, _>>() {
                    Ok(m) => {
                        modes = m;
                        modes_named = true;
                    }
                    Err(e) => {
                        eprintln!("--modes: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--cc" => {
                let Some(name) = args.next() else { return usage() };
                match name.parse::<CcAlgorithm>() {
                    Ok(a) => cc = Some(a),
                    Err(e) => {
                        eprintln!("--cc: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--placement" => {
                let Some(name) = args.next() else { return usage() };
                match name.parse::<RepairPlacement>() {
                    Ok(p) => placement = Some(p),
                    Err(e) => {
                        eprintln!("--placement: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--scheduler" => {
                let Some(name) = args.next() else { return usage() };
                match name.parse::<SchedulerKind>() {
                    Ok(k) => scheduler = Some(k),
                    Err(e) => {
                        eprintln!("--scheduler: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--margin-ahead" => margin_ahead = true,
            "--tail-delta" => {
                let Some(value) = args.next() else { return usage() };
                match value.parse::<f64>() {
                    Ok(d) if d > 0.0 && d < 1.0 => tail_delta = Some(d),
                    _ => {
                        eprintln!("--tail-delta: `{value}` is not a probability strictly between 0 and 1");
                        return ExitCode::from(2);
                    }
                }
            }
            "--delta" => {
                let Some(value) = args.next() else { return usage() };
                match value.parse::<f64>() {
                    Ok(d) if d > 0.0 && d < 1.0 => delta = Some(d),
                    _ => {
                        eprintln!("--delta: `{value}` is not a probability strictly between 0 and 1");
                        return ExitCode::from(2);
                    }
                }
            }
            "--csv" => {
                let Some(dir) = args.next() else { return usage() };
                csv_dir = Some(dir.into());
            }
            "--json" => {
                let Some(file) = args.next() else { return usage() };
                json_file = Some(file.into());
            }
            "-h" | "--help" => return usage(),
            other if other.starts_with('-') => {
                eprintln!("unknown option `{other}`");
                return usage();
            }
            file => files.push(file.to_string()),
        }
    }
    if files.is_empty() {
        return usage();
    }
    let mut rows = Vec::new();
    let mut video_rows = Vec::new();
    let started = std::time::Instant::now();
    for file in &files {
        let scenarios = match Scenario::load(file) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        for scenario in &scenarios {
            for &mode in &modes {
                // MPTCP's modes are multipath by definition: on one path they would repeat the
                // `tcp` and `dfec` rows.
                if mode.is_multipath() && scenario.paths.len() < 2 && !modes_named {
                    continue;
                }
                let redundancy = Redundancy {
                    margin_ahead_of_data: margin_ahead,
                    target_failure: delta.unwrap_or(Redundancy::default().target_failure),
                    tail_target_failure: tail_delta.unwrap_or(Redundancy::default().tail_target_failure),
                    ..Redundancy::default()
                };
                let setup = RunSetup { mode, cc, scheduler, redundancy, placement };
                let ran = if scenario.video.is_some() {
                    run_video(scenario, &setup).map(|row| video_rows.push(row))
                } else {
                    run(scenario, &setup).map(|row| rows.push(row))
                };
                if let Err(e) = ran {
                    eprintln!("{}: {e}", scenario.title());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    if !rows.is_empty() {
        print(&rows);
    }
    if !video_rows.is_empty() {
        print_video(&video_rows);
    }
    if let Some(dir) = &csv_dir {
        let written = write_csv(dir, &rows).and_then(|()| write_video_csv(dir, &video_rows));
        if let Err(e) = written {
            eprintln!("--csv {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(file) = &json_file {
        if let Err(e) = std::fs::write(file, to_json(&rows)) {
            eprintln!("--json {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    let datagrams: u64 =
        rows.iter().map(|r| r.datagrams).sum::<u64>() + video_rows.iter().map(|r| r.datagrams).sum::<u64>();
    let wall = started.elapsed().as_secs_f64();
    println!();
    println!(
        "{} runs, {datagrams} datagrams simulated in {wall:.1} s of wall time ({:.2} M datagrams/s)",
        rows.len() + video_rows.len(),
        datagrams as f64 / wall / 1e6
    );
    if rows.iter().all(|r| r.intact) && video_rows.iter().all(|r| r.intact) {
        ExitCode::SUCCESS
    } else {
        eprintln!("some transfers were not delivered intact");
        ExitCode::FAILURE
    }
}

/// What the command line chose for every run (bulk or video) of one mode.
struct RunSetup {
    mode: Mode,
    cc: Option<CcAlgorithm>,
    scheduler: Option<SchedulerKind>,
    redundancy: Redundancy,
    placement: Option<RepairPlacement>,
}

/// Both ends' configuration for one flow of `scenario` over `paths` paths.
fn connection_config(scenario: &Scenario, paths: usize, setup: &RunSetup) -> ConnectionConfig {
    let mut config = ConnectionConfig {
        mode: setup.mode,
        cc: setup.cc,
        redundancy: setup.redundancy,
        scheduler: setup.scheduler,
        paths: paths as u8,
        repair_placement: setup.placement,
        ..ConnectionConfig::default()
    };
    // The scenario's receive window is both ends' flow-control window (FMTCP §VI-B).
    if let Some(window) = scenario.receive_window {
        config.params = config.params.with_receive_window(window);
    }
    // Links with an MTU: the endpoints may probe up to the largest (their "interface").
    if let Some(mtu) = scenario.max_mtu() {
        config.max_plpmtu = mtu;
    }
    config
}

fn run(scenario: &Scenario, setup: &RunSetup) -> Result<Row, String> {
    let mode = setup.mode;
    let bytes = scenario.transfer.ok_or("the scenario sets no `transfer` size")?;
    let built = scenario
        .build(|cx| {
            let config = connection_config(scenario, cx.paths, setup);
            (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
        })
        .map_err(|e| e.to_string())?;
    let (mut net, flows, limit) = (built.network, built.flows, built.limit);
    let servers: Vec<_> = flows.iter().map(|&(_, s)| s).collect();
    let mut metrics = Metrics::with_bin(INTERVAL);
    metrics.record_start(Instant::ZERO);
    let mut paths: Vec<PathSeries> = Vec::new();
    for (flow, &(client, _)) in flows.iter().enumerate() {
        for path in 0..net.endpoint(client).connection().path_stats().len() {
            paths.push(PathSeries { flow, path, samples: Vec::new() });
        }
    }
    // Run an interval at a time (up to just before its end, so an interval is [start, end) as
    // Metrics bins it) and sample between intervals. Stopping at a deadline moves no event: the
    // run continues exactly as one call would.
    let mut intervals = 0usize;
    let mut stalled_at = None;
    let mut delivered_before = 0u64;
    loop {
        let end = Instant::ZERO + INTERVAL * (intervals as u32 + 1);
        let deadline = (end - Duration::from_micros(1)).min(limit);
        let report =
            net.run_until_condition(deadline, |n| servers.iter().all(|&s| n.endpoint(s).done_at().is_some()));
        let delivered: u64 = servers.iter().map(|&s| net.endpoint(s).received()).sum();
        if delivered > delivered_before {
            metrics.record_delivered(end - INTERVAL, delivered - delivered_before);
            delivered_before = delivered;
        }
        let mut series = paths.iter_mut();
        for &(client, _) in &flows {
            for (srtt, cwnd, loss) in net.endpoint(client).connection().path_state() {
                let s = series.next().expect("one series per path");
                s.samples.push((cwnd, srtt.as_secs_f64() * 1e3, loss));
            }
        }
        intervals += 1;
        if report.stop == StopReason::Idle {
            stalled_at = Some(net.now().as_micros() as f64 / 1e6);
        }
        if report.stop != StopReason::Deadline || deadline >= limit {
            break;
        }
    }
    let mut completion = Some(0.0f64);
    let (mut source, mut repair) = (0u64, 0u64);
    let (mut recovered, mut retransmissions, mut losses, mut fast_losses, mut timeouts) = (0, 0, 0, 0, 0);
    let mut intact = true;
    let path_count = flows.iter().map(|&(c, _)| net.endpoint(c).connection().path_stats().len()).max();
    let mut path_sent = vec![0u64; path_count.unwrap_or(0)];
    let mut path_acked = path_sent.clone();
    for &(client, server) in &flows {
        let rx = net.endpoint(server);
        intact &= rx.corrupt_at().is_none() && (rx.done_at().is_none() || rx.received() == bytes);
        completion = match (completion, rx.done_at()) {
            (Some(c), Some(t)) => Some(c.max(t.as_micros() as f64 / 1e6)),
            _ => None,
        };
        let stats = net.endpoint(client).connection().stats;
        source += stats.source_symbols_sent;
        repair += stats.repair_symbols_sent;
        retransmissions += stats.retransmissions;
        recovered += rx.connection().stats.symbols_recovered;
        for (i, p) in net.endpoint(client).connection().path_stats().into_iter().enumerate() {
            path_sent[i] += p.packets_sent;
            path_acked[i] += p.packets_acked;
            losses += p.packets_lost;
            fast_losses += p.fast_losses;
            timeouts += p.timeouts;
        }
    }
    if let Some(done) = completion {
        metrics.record_completion(Instant::from_micros((done * 1e6).round() as u64));
    }
    metrics.record_sent(source, repair);
    metrics.record_recovered(recovered);
    metrics.record_retransmitted(retransmissions);
    metrics.count("losses", losses);
    metrics.count("fast_losses", fast_losses);
    metrics.count("timeouts", timeouts);
    record_blocks(&mut metrics, &net, &flows);
    metrics.record_network(&net);
    let delivered: u64 = servers.iter().map(|&s| net.endpoint(s).received()).sum();
    // An unfinished run is measured over the whole limit, also when it stalled earlier.
    let elapsed = completion.unwrap_or(limit.as_micros() as f64 / 1e6).max(1e-9);
    let stalled_at = stalled_at.filter(|_| completion.is_none());
    let goodput = delivered as f64 * 8.0 / elapsed;
    let ideal = scenario.ideal_goodput_bps(Duration::from_secs_f64(elapsed));
    let outage = scenario.first_outage().filter(|&t| t.as_micros() as f64 / 1e6 < elapsed);
    let recovery = outage.and_then(|t| outage_recovery(scenario, &metrics, t, completion, intervals));
    Ok(Row {
        label: scenario.title(),
        scenario: scenario.name.clone(),
        point: scenario.label.clone(),
        seed: scenario.seed,
        mode,
        completion,
        stalled_at,
        recovery,
        outage: outage.is_some(),
        goodput_mbps: goodput / 1e6,
        ideal_mbps: ideal / 1e6,
        ratio: goodput / ideal,
        overhead: repair as f64 / (source + repair).max(1) as f64,
        intact,
        datagrams: net.stats().datagrams_sent,
        blocks: metrics.block_stats(),
        source_sent: source,
        repair_sent: repair,
        recovered,
        retransmissions,
        losses,
        fast_losses,
        timeouts,
        path_sent,
        path_acked,
        metrics,
        paths,
        intervals,
    })
}

/// Issue 4's path-failure target ("goodput back above 0.8 × capacity within 1 s"): the time from
/// `outage` to the first instant `t` (on the 100-ms bins) from which every 1-s window, up to the
/// completion (or the end of the run: `intervals` bins), averages at least 0.8 × the ideal at its start — the
/// recovery must hold, not just touch the line once (the data already on the surviving path can
/// make one window look good before a stall). `None`: never recovered.
fn outage_recovery(
    scenario: &Scenario,
    metrics: &Metrics,
    outage: Instant,
    completion: Option<f64>,
    intervals: usize,
) -> Option<f64> {
    let mut bins: Vec<f64> = metrics.goodput_series().into_iter().map(|(_, bps)| bps).collect();
    // Bins stop at the last delivery; the run went on (without delivering) to `intervals`.
    bins.resize(bins.len().max(intervals), 0.0);
    let per_window = (Duration::from_secs(1).as_micros() / INTERVAL.as_micros()) as usize;
    let first = outage.as_micros().div_ceil(INTERVAL.as_micros() as u64) as usize;
    let end = completion.map_or(bins.len(), |c| ((c / INTERVAL.as_secs_f64()) as usize).min(bins.len()));
    let last = end.checked_sub(per_window)?;
    if first > last {
        return None;
    }
    let good = |i: usize| {
        let start = Instant::ZERO + INTERVAL * i as u32;
        let mean = bins[i..i + per_window].iter().sum::<f64>() / per_window as f64;
        mean >= 0.8 * scenario.ideal_goodput_bps_at(start)
    };
    // The latest window that falls short; recovery starts right after it.
    let recovered_from = match (first..=last).rev().find(|&i| !good(i)) {
        Some(i) if i == last => return None,
        Some(i) => i + 1,
        None => first,
    };
    Some((Instant::ZERO + INTERVAL * recovered_from as u32 - outage).as_secs_f64())
}

/// Joins the sender's first-sent and the receiver's delivered times per block.
fn record_blocks(
    metrics: &mut Metrics,
    net: &braid_sim::Network<BulkFlow>,
    flows: &[(braid_sim::EndpointId, braid_sim::EndpointId)],
) {
    for &(client, server) in flows {
        let sent: BTreeMap<u64, Instant> = net
            .endpoint(client)
            .block_log()
            .iter()
            .filter_map(|r| match *r {
                BlockRecord::FirstSent { block, at } => Some((block, at)),
                _ => None,
            })
            .collect();
        for r in net.endpoint(server).block_log() {
            if let BlockRecord::Delivered { block, at } = *r {
                if let Some(&first) = sent.get(&block) {
                    metrics.record_block(block, first, at);
                }
            }
        }
    }
}

fn mode_label(mode: Mode) -> &'static str {
    match mode {
        Mode::Braid => "braid",
        Mode::Tcp => "tcp (model)",
        Mode::Ctcp => "ctcp",
        Mode::Fmtcp => "fmtcp",
        Mode::TcpIr => "tcp-ir",
        Mode::Dfec => "dfec",
        Mode::Sato => "sato",
        Mode::Mptcp => "mptcp (model)",
        Mode::MptcpDfec => "mptcp-dfec",
    }
}

/// Each path's share of the packets the peer acknowledged, in percent: `71/29`.
fn path_shares(r: &Row) -> String {
    let total: u64 = r.path_acked.iter().sum();
    if total == 0 {
        return "—".into();
    }
    let shares: Vec<String> =
        r.path_acked.iter().map(|&a| format!("{:.0}", 100.0 * a as f64 / total as f64)).collect();
    shares.join("/")
}

/// The label of a run without its `seed=` part (runs that differ only by seed form one point).
fn point_key(label: &str) -> String {
    let label = label.replace(['[', ']'], " ");
    let key: Vec<&str> = label.split_whitespace().filter(|w| !w.contains("seed=")).collect();
    key.join(" ")
}

/// The modes (in order of first appearance) and the sweep points (`point_key`s) of `rows`,
/// given each row's mode and label.
fn modes_and_points<R>(rows: &[R], mode_and_label: impl Fn(&R) -> (Mode, &str)) -> (Vec<Mode>, Vec<String>) {
    let mut modes: Vec<Mode> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for r in rows {
        let (mode, label) = mode_and_label(r);
        if !modes.contains(&mode) {
            modes.push(mode);
        }
        let key = point_key(label);
        if !points.contains(&key) {
            points.push(key);
        }
    }
    (modes, points)
}

/// The head of a modes-side-by-side table: `title`, then the header row (scenario, the `extra`
/// columns, a column per mode) and its alignment row.
fn side_by_side_head(title: &str, extra: &[&str], modes: &[Mode]) {
    println!();
    println!("{title}");
    println!();
    let names: Vec<&str> = modes.iter().map(|&m| mode_label(m)).collect();
    let extra_names: String = extra.iter().map(|c| format!("{c} | ")).collect();
    println!("| scenario | {extra_names}{} |", names.join(" | "));
    println!("|---|{}{}", "---:|".repeat(extra.len()), "---:|".repeat(modes.len()));
}

fn print(rows: &[Row]) {
    println!(
        "| scenario | mode | completion s | goodput Mbit/s | ideal Mbit/s | × ideal | repair overhead | block delay mean / p99 / jitter ms | path share % | intact |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|:-:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.3} | {:.1}% | {} | {} | {} |",
            r.label,
            mode_label(r.mode),
            match (r.completion, r.stalled_at) {
                (Some(c), _) => format!("{c:.2}"),
                (None, Some(t)) => format!("stalled at {t:.1}"),
                (None, None) => "did not finish".into(),
            },
            r.goodput_mbps,
            r.ideal_mbps,
            r.ratio,
            100.0 * r.overhead,
            r.blocks.map_or("—".into(), |b| format!(
                "{:.0} / {:.0} / {:.0}",
                b.mean_delay_ms, b.p99_delay_ms, b.jitter_ms
            )),
            path_shares(r),
            if r.intact { "yes" } else { "**NO**" }
        );
    }
    let recoveries: Vec<String> = rows
        .iter()
        .filter(|r| r.outage)
        .map(|r| {
            let t = r.recovery.map_or("never".to_string(), |t| format!("{t:.1} s"));
            format!("{} {}: {t}", r.label, mode_label(r.mode))
        })
        .collect();
    if !recoveries.is_empty() {
        println!();
        println!(
            "Recovery after the first outage (to a 1-s window at 0.8 × ideal): {}",
            recoveries.join("; ")
        );
    }
    print_side_by_side(rows);
    // Averages over seeds: group by the label without its `seed=` part.
    let mut groups: BTreeMap<(String, &'static str), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        groups.entry((point_key(&r.label), mode_label(r.mode))).or_default().push(r);
    }
    if groups.len() < rows.len() {
        println!();
        println!(
            "| scenario (mean over seeds) | mode | runs | mean completion s | mean goodput Mbit/s | × ideal | block delay mean / p99 ms |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|");
        for ((label, mode), rs) in &groups {
            let n = rs.len() as f64;
            let done: Vec<f64> = rs.iter().filter_map(|r| r.completion).collect();
            let completion = if done.len() == rs.len() {
                format!("{:.2}", done.iter().sum::<f64>() / n)
            } else {
                format!("{} of {} unfinished", rs.len() - done.len(), rs.len())
            };
            println!(
                "| {label} | {mode} | {} | {completion} | {:.2} | {:.3} | {} |",
                rs.len(),
                rs.iter().map(|r| r.goodput_mbps).sum::<f64>() / n,
                rs.iter().map(|r| r.ratio).sum::<f64>() / n,
                {
                    let d: Vec<(f64, f64)> = rs
                        .iter()
                        .filter_map(|r| r.blocks.map(|b| (b.mean_delay_ms, b.p99_delay_ms)))
                        .collect();
                    if d.is_empty() {
                        "—".to_string()
                    } else {
                        let k = d.len() as f64;
                        format!(
                            "{:.0} / {:.0}",
                            d.iter().map(|x| x.0).sum::<f64>() / k,
                            d.iter().map(|x| x.1).sum::<f64>() / k
                        )
                    }
                }
            );
        }
    }
}

/// One row per sweep point (seeds averaged), one column per mode: goodput, its ratio to the
/// ideal and the p99 block delay. Printed when more than one mode ran.
fn print_side_by_side(rows: &[Row]) {
    let (modes, points) = modes_and_points(rows, |r| (r.mode, &r.label));
    if modes.len() < 2 {
        return;
    }
    side_by_side_head(
        "Modes side by side: goodput Mbit/s (× ideal) · p99 block delay ms; means over seeds",
        &["ideal Mbit/s"],
        &modes,
    );
    for point in &points {
        let of_point: Vec<&Row> = rows.iter().filter(|r| point_key(&r.label) == *point).collect();
        let ideal = of_point.iter().map(|r| r.ideal_mbps).sum::<f64>() / of_point.len() as f64;
        let cells: Vec<String> = modes
            .iter()
            .map(|&m| {
                let rs: Vec<&&Row> = of_point.iter().filter(|r| r.mode == m).collect();
                if rs.is_empty() {
                    return "—".into();
                }
                let n = rs.len() as f64;
                let goodput = rs.iter().map(|r| r.goodput_mbps).sum::<f64>() / n;
                let ratio = rs.iter().map(|r| r.ratio).sum::<f64>() / n;
                let p99: Vec<f64> = rs.iter().filter_map(|r| r.blocks.map(|b| b.p99_delay_ms)).collect();
                let p99 = if p99.is_empty() {
                    "—".to_string()
                } else {
                    format!("{:.0}", p99.iter().sum::<f64>() / p99.len() as f64)
                };
                let unfinished = if rs.iter().any(|r| r.stalled_at.is_some()) {
                    " (stalled)"
                } else if rs.iter().any(|r| r.completion.is_none()) {
                    " (unfinished)"
                } else {
                    ""
                };
                let broken = if rs.iter().all(|r| r.intact) { "" } else { " **NOT INTACT**" };
                format!("{goodput:.2} ({ratio:.2}) · {p99}{unfinished}{broken}")
            })
            .collect();
        println!("| {point} | {ideal:.2} | {} |", cells.join(" | "));
    }
}

fn option(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |v| format!("{v:.digits$}"))
}

/// `summary.csv` (a row per run) and `timeseries.csv` (a row per run, interval, flow and path).
fn write_csv(dir: &Path, rows: &[Row]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut out = String::from(
        "run,scenario,point,seed,mode,completion_s,goodput_mbps,ratio_ideal,repair_overhead,\
         source_sent,repair_sent,recovered,recovery_rate,retransmissions,fast_losses,losses,timeouts,\
         block_count,block_delay_mean_ms,block_delay_p99_ms,block_jitter_ms,datagrams,intact,\
         ideal_mbps,path_packets_sent,path_packets_acked,path_share,stalled_at_s,outage_recovery_s\n",
    );
    for (run, r) in rows.iter().enumerate() {
        let b = r.blocks;
        writeln!(
            out,
            "{run},{},{},{},{},{},{:.6},{:.6},{:.6},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{},{},{},{},{}",
            csv_field(&r.scenario),
            csv_field(&r.point),
            r.seed,
            r.mode.name(),
            option(r.completion, 6),
            r.goodput_mbps,
            r.ratio,
            r.overhead,
            r.source_sent,
            r.repair_sent,
            r.recovered,
            option(r.metrics.effective_recovery_rate(), 6),
            r.retransmissions,
            r.fast_losses,
            r.losses,
            r.timeouts,
            b.map_or(0, |b| b.count),
            option(b.map(|b| b.mean_delay_ms), 3),
            option(b.map(|b| b.p99_delay_ms), 3),
            option(b.map(|b| b.jitter_ms), 3),
            r.datagrams,
            r.intact,
            r.ideal_mbps,
            list(r.path_sent.iter().map(u64::to_string)),
            list(r.path_acked.iter().map(u64::to_string)),
            list(shares(r).into_iter().map(|s| format!("{s:.6}"))),
            option(r.stalled_at, 6),
            option(r.recovery, 3),
        )
        .expect("writing to a String");
    }
    std::fs::write(dir.join("summary.csv"), out)?;
    let mut out = String::from("run,time_s,goodput_mbps,flow,path,cwnd_bytes,srtt_ms,loss_estimate\n");
    for (run, r) in rows.iter().enumerate() {
        let goodput = goodput_series(r);
        for (i, g) in goodput.iter().enumerate() {
            let t = i as f64 * INTERVAL.as_secs_f64();
            for p in &r.paths {
                let (cwnd, srtt, loss) = p.samples[i];
                writeln!(out, "{run},{t:.3},{g:.6},{},{},{cwnd},{srtt:.3},{loss:.6}", p.flow, p.path)
                    .expect("writing to a String");
            }
        }
    }
    std::fs::write(dir.join("timeseries.csv"), out)
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

/// Scenario names and sweep labels are plain words, but quote them if they ever hold a comma.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Goodput of every interval run, in Mbit/s (all flows together).
fn goodput_series(r: &Row) -> Vec<f64> {
    let mut g: Vec<f64> = r.metrics.goodput_series().into_iter().map(|(_, bps)| bps / 1e6).collect();
    g.resize(r.intervals, 0.0);
    g
}

/// `{"interval_ms": 100, "runs": [{…summary…, "series": {…}, "metrics": {…}}]}`.
fn to_json(rows: &[Row]) -> String {
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

/// Issue 6's live-video deadline: a frame counts when complete within this time of its capture.
const VIDEO_DEADLINE: Duration = Duration::from_millis(200);

/// One run of a `video` scenario.
struct VideoRow {
    label: String,
    scenario: String,
    point: String,
    seed: u64,
    mode: Mode,
    stats: braid_sim::VideoStats,
    overhead: f64,
    source_sent: u64,
    repair_sent: u64,
    retransmissions: u64,
    intact: bool,
    datagrams: u64,
}

/// A `video` scenario: one live video flow per scenario flow for `duration`, judged by the share
/// of frames complete within [`VIDEO_DEADLINE`] of their capture.
fn run_video(scenario: &Scenario, setup: &RunSetup) -> Result<VideoRow, String> {
    let mode = setup.mode;
    use braid_sim::{VideoFlow, VideoSource, VideoStats};
    let bitrate = scenario.video.ok_or("not a video scenario")?;
    let built = scenario
        .build(|cx| {
            let config = connection_config(scenario, cx.paths, setup);
            let source = VideoSource::new(bitrate, cx.seed);
            (
                VideoFlow::sender(config.clone(), cx.seed, source, cx.start),
                VideoFlow::receiver(config, source),
            )
        })
        .map_err(|e| e.to_string())?;
    let (mut net, flows, limit) = (built.network, built.flows, built.limit);
    net.run_until(limit);
    let (mut source, mut repair, mut retransmissions) = (0, 0, 0);
    let mut intact = true;
    // Several flows: the share is over all their frames, the percentiles the worst flow's.
    let mut stats = VideoStats::default();
    for &(client, server) in &flows {
        let (tx, rx) = (net.endpoint(client), net.endpoint(server));
        intact &= rx.corrupt_at().is_none();
        let s = VideoStats::compute(tx.captured(), rx.completed(), VIDEO_DEADLINE, limit);
        stats.frames += s.frames;
        stats.on_time += s.on_time;
        stats.steady_frames += s.steady_frames;
        stats.steady_on_time += s.steady_on_time;
        stats.p50_ms = stats.p50_ms.max(s.p50_ms);
        stats.p99_ms = stats.p99_ms.max(s.p99_ms);
        stats.max_ms = stats.max_ms.max(s.max_ms);
        let c = tx.connection().stats;
        source += c.source_symbols_sent;
        repair += c.repair_symbols_sent;
        retransmissions += c.retransmissions;
    }
    Ok(VideoRow {
        label: scenario.title(),
        scenario: scenario.name.clone(),
        point: scenario.label.clone(),
        seed: scenario.seed,
        mode,
        stats,
        overhead: repair as f64 / (source + repair).max(1) as f64,
        source_sent: source,
        repair_sent: repair,
        retransmissions,
        intact,
        datagrams: net.stats().datagrams_sent,
    })
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.0}")
    } else {
        "∞".into()
    }
}

/// The video table (a row per run), and one row per sweep point with the modes side by side:
/// frames on time % · p99 frame latency ms, means over seeds (the p99 a mean of the runs' p99).
fn print_video(rows: &[VideoRow]) {
    println!(
        "| scenario | mode | frames | on time (≤ {} ms) | after 1 s | latency p50 / p99 / max ms | repair overhead | retransmissions | intact |",
        VIDEO_DEADLINE.as_millis()
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|:-:|");
    for r in rows {
        let s = r.stats;
        println!(
            "| {} | {} | {} | {:.2}% | {:.2}% | {} / {} / {} | {:.1}% | {} | {} |",
            r.label,
            mode_label(r.mode),
            s.frames,
            100.0 * s.on_time_share(),
            100.0 * s.steady_on_time_share(),
            ms(s.p50_ms),
            ms(s.p99_ms),
            ms(s.max_ms),
            100.0 * r.overhead,
            r.retransmissions,
            if r.intact { "yes" } else { "**NO**" }
        );
    }
    let (modes, points) = modes_and_points(rows, |r| (r.mode, &r.label));
    if modes.len() < 2 {
        return;
    }
    side_by_side_head(
        "Video, modes side by side: frames on time % (all · after the first 1 s) · p50 / p99 frame latency ms; means over seeds",
        &[],
        &modes,
    );
    for point in &points {
        let cells: Vec<String> = modes
            .iter()
            .map(|&m| {
                let rs: Vec<&VideoRow> =
                    rows.iter().filter(|r| r.mode == m && point_key(&r.label) == *point).collect();
                if rs.is_empty() {
                    return "—".into();
                }
                let n = rs.len() as f64;
                let frames: usize = rs.iter().map(|r| r.stats.frames).sum();
                let on_time: usize = rs.iter().map(|r| r.stats.on_time).sum();
                let steady: usize = rs.iter().map(|r| r.stats.steady_frames).sum();
                let steady_on_time: usize = rs.iter().map(|r| r.stats.steady_on_time).sum();
                let p50 = rs.iter().map(|r| r.stats.p50_ms).sum::<f64>() / n;
                let p99 = rs.iter().map(|r| r.stats.p99_ms).sum::<f64>() / n;
                let broken = if rs.iter().all(|r| r.intact) { "" } else { " **NOT INTACT**" };
                format!(
                    "{:.2}% · {:.2}% · {} / {}{broken}",
                    100.0 * on_time as f64 / frames.max(1) as f64,
                    100.0 * steady_on_time as f64 / steady.max(1) as f64,
                    ms(p50),
                    ms(p99)
                )
            })
            .collect();
        println!("| {point} | {} |", cells.join(" | "));
    }
}

/// `video.csv`: a row per video run.
fn write_video_csv(dir: &Path, rows: &[VideoRow]) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let mut out = String::from(
        "run,scenario,point,seed,mode,frames,on_time,on_time_share,steady_frames,steady_on_time,latency_p50_ms,latency_p99_ms,\
         latency_max_ms,repair_overhead,source_sent,repair_sent,retransmissions,datagrams,intact\n",
    );
    for (run, r) in rows.iter().enumerate() {
        let s = r.stats;
        writeln!(
            out,
            "{run},{},{},{},{},{},{},{:.6},{},{},{:.3},{:.3},{:.3},{:.6},{},{},{},{},{}",
            csv_field(&r.scenario),
            csv_field(&r.point),
            r.seed,
            r.mode.name(),
            s.frames,
            s.on_time,
            s.on_time_share(),
            s.steady_frames,
            s.steady_on_time,
            s.p50_ms,
            s.p99_ms,
            s.max_ms,
            r.overhead,
            r.source_sent,
            r.repair_sent,
            r.retransmissions,
            r.datagrams,
            r.intact,
        )
        .expect("writing to a String");
    }
    std::fs::write(dir.join("video.csv"), out)
}
