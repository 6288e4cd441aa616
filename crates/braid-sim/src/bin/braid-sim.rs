//! Runs scenario files and prints a table: `braid-sim [--modes braid,tcp] SCENARIO.toml…`
//!
//! Every run is one bulk transfer per flow (the scenario's `transfer` bytes), checked byte for
//! byte at the receiver. Rows give completion time, goodput, goodput against the physical limit
//! Σ rateᵢ × (1 − pᵢ) of the data direction, and the repair overhead.

use std::collections::BTreeMap;
use std::process::ExitCode;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::ConnectionConfig;
use braid_proto::{BlockRecord, Instant};
use braid_sim::{BulkFlow, Scenario};

struct Row {
    label: String,
    mode: Mode,
    completion: Option<f64>,
    goodput_mbps: f64,
    ratio: f64,
    overhead: f64,
    intact: bool,
    datagrams: u64,
    /// FMTCP's block delivery delay (first symbol sent → block decoded): mean, p99, and
    /// jitter (standard deviation), in ms.
    block_delay: Option<(f64, f64, f64)>,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: braid-sim [--modes braid,tcp,ctcp,fmtcp] [--cc cubic|newreno|bbr|ctcp] SCENARIO.toml..."
    );
    eprintln!("  --cc: every path's congestion controller (default: the mode's own)");
    eprintln!("  runs each scenario (every sweep point) once per mode and prints a summary table");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut modes = vec![Mode::Braid, Mode::Tcp];
    let mut cc = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--modes" => {
                let Some(list) = args.next() else { return usage() };
                match list.split(',').map(str::parse).collect::<Result<Vec<Mode>, _>>() {
                    Ok(m) => modes = m,
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
                match run(scenario, mode, cc) {
                    Ok(row) => rows.push(row),
                    Err(e) => {
                        eprintln!("{}: {e}", scenario.title());
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    print(&rows);
    let datagrams: u64 = rows.iter().map(|r| r.datagrams).sum();
    let wall = started.elapsed().as_secs_f64();
    println!();
    println!(
        "{} runs, {datagrams} datagrams simulated in {wall:.1} s of wall time ({:.2} M datagrams/s)",
        rows.len(),
        datagrams as f64 / wall / 1e6
    );
    if rows.iter().all(|r| r.intact) {
        ExitCode::SUCCESS
    } else {
        eprintln!("some transfers were not delivered intact");
        ExitCode::FAILURE
    }
}

fn run(scenario: &Scenario, mode: Mode, cc: Option<CcAlgorithm>) -> Result<Row, String> {
    let bytes = scenario.transfer.ok_or("the scenario sets no `transfer` size")?;
    let built = scenario
        .build(|cx| {
            let config = ConnectionConfig { mode, cc, paths: cx.paths as u8, ..ConnectionConfig::default() };
            (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
        })
        .map_err(|e| e.to_string())?;
    let (mut net, flows, limit) = (built.network, built.flows, built.limit);
    let servers: Vec<_> = flows.iter().map(|&(_, s)| s).collect();
    net.run_until_condition(limit, |n| servers.iter().all(|&s| n.endpoint(s).done_at().is_some()));
    let mut completion = Some(0.0f64);
    let (mut source, mut repair) = (0u64, 0u64);
    let mut intact = true;
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
    }
    let ideal: f64 =
        scenario.paths.iter().map(|p| p.forward.rate_bps as f64 * (1.0 - p.forward.loss.mean_loss())).sum();
    let delivered: u64 = servers.iter().map(|&s| net.endpoint(s).received()).sum();
    let elapsed = completion.unwrap_or(net.now().as_micros() as f64 / 1e6).max(1e-9);
    let goodput = delivered as f64 * 8.0 / elapsed;
    Ok(Row {
        label: scenario.title(),
        mode,
        completion,
        goodput_mbps: goodput / 1e6,
        ratio: goodput / ideal,
        overhead: repair as f64 / (source + repair).max(1) as f64,
        intact,
        datagrams: net.stats().datagrams_sent,
        block_delay: block_delays(&net, &flows),
    })
}

/// Joins the sender's first-sent and the receiver's delivered times per block.
fn block_delays(
    net: &braid_sim::Network<BulkFlow>,
    flows: &[(braid_sim::EndpointId, braid_sim::EndpointId)],
) -> Option<(f64, f64, f64)> {
    let mut delays = Vec::new();
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
                    delays.push((at - first).as_secs_f64() * 1e3);
                }
            }
        }
    }
    if delays.is_empty() {
        return None;
    }
    delays.sort_by(f64::total_cmp);
    let n = delays.len() as f64;
    let mean = delays.iter().sum::<f64>() / n;
    let p99 = delays[((n * 0.99).ceil() as usize).clamp(1, delays.len()) - 1];
    let jitter = (delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n).sqrt();
    Some((mean, p99, jitter))
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
    }
}

fn print(rows: &[Row]) {
    println!(
        "| scenario | mode | completion s | goodput Mbit/s | × ideal | repair overhead | block delay mean / p99 / jitter ms | intact |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|:-:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.3} | {:.1}% | {} | {} |",
            r.label,
            mode_label(r.mode),
            r.completion.map_or("did not finish".into(), |c| format!("{c:.2}")),
            r.goodput_mbps,
            r.ratio,
            100.0 * r.overhead,
            r.block_delay.map_or("—".into(), |(m, p, j)| format!("{m:.0} / {p:.0} / {j:.0}")),
            if r.intact { "yes" } else { "**NO**" }
        );
    }
    // Averages over seeds: group by the label without its `seed=` part.
    let mut groups: BTreeMap<(String, &'static str), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let label = r.label.replace(['[', ']'], " ");
        let key: Vec<&str> = label.split_whitespace().filter(|w| !w.contains("seed=")).collect();
        groups.entry((key.join(" "), mode_label(r.mode))).or_default().push(r);
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
                    let d: Vec<(f64, f64, f64)> = rs.iter().filter_map(|r| r.block_delay).collect();
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
