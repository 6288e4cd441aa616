//! The tables printed after the runs: a row per run, means over seeds, and the modes side by
//! side per sweep point; the same for video runs.

use std::collections::BTreeMap;
use std::io::{self, Write};

use braid_proto::conn::Mode;

use crate::run::{Row, VideoRow, VIDEO_DEADLINE};

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
fn side_by_side_head(out: &mut dyn Write, title: &str, extra: &[&str], modes: &[Mode]) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{title}")?;
    writeln!(out)?;
    let names: Vec<&str> = modes.iter().map(|&m| mode_label(m)).collect();
    let extra_names: String = extra.iter().map(|c| format!("{c} | ")).collect();
    writeln!(out, "| scenario | {extra_names}{} |", names.join(" | "))?;
    writeln!(out, "|---|{}{}", "---:|".repeat(extra.len()), "---:|".repeat(modes.len()))?;
    Ok(())
}

pub fn print(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    writeln!(out,
        "| scenario | mode | completion s | goodput Mbit/s | ideal Mbit/s | × ideal | repair overhead | block delay mean / p99 / jitter ms | path share % | intact |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|:-:|")?;
    for r in rows {
        writeln!(
            out,
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
        )?;
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
        writeln!(out)?;
        writeln!(
            out,
            "Recovery after the first outage (to a 1-s window at 0.8 × ideal): {}",
            recoveries.join("; ")
        )?;
    }
    print_side_by_side(out, rows)?;
    // Averages over seeds: group by the label without its `seed=` part.
    let mut groups: BTreeMap<(String, &'static str), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        groups.entry((point_key(&r.label), mode_label(r.mode))).or_default().push(r);
    }
    if groups.len() < rows.len() {
        writeln!(out)?;
        writeln!(out,
            "| scenario (mean over seeds) | mode | runs | mean completion s | mean goodput Mbit/s | × ideal | block delay mean / p99 ms |"
        )?;
        writeln!(out, "|---|---|---:|---:|---:|---:|---:|")?;
        for ((label, mode), rs) in &groups {
            let n = rs.len() as f64;
            let done: Vec<f64> = rs.iter().filter_map(|r| r.completion).collect();
            let completion = if done.len() == rs.len() {
                format!("{:.2}", done.iter().sum::<f64>() / n)
            } else {
                format!("{} of {} unfinished", rs.len() - done.len(), rs.len())
            };
            writeln!(
                out,
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
            )?;
        }
    }
    Ok(())
}

/// One row per sweep point (seeds averaged), one column per mode: goodput, its ratio to the
/// ideal and the p99 block delay. Printed when more than one mode ran.
fn print_side_by_side(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    let (modes, points) = modes_and_points(rows, |r| (r.mode, &r.label));
    if modes.len() < 2 {
        return Ok(());
    }
    side_by_side_head(
        out,
        "Modes side by side: goodput Mbit/s (× ideal) · p99 block delay ms; means over seeds",
        &["ideal Mbit/s"],
        &modes,
    )?;
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
        writeln!(out, "| {point} | {ideal:.2} | {} |", cells.join(" | "))?;
    }
    Ok(())
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
pub fn print_video(out: &mut dyn Write, rows: &[VideoRow]) -> io::Result<()> {
    writeln!(out,
        "| scenario | mode | frames | on time (≤ {} ms) | after 1 s | latency p50 / p99 / max ms | repair overhead | retransmissions | intact |",
        VIDEO_DEADLINE.as_millis()
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|:-:|")?;
    for r in rows {
        let s = r.stats;
        writeln!(
            out,
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
        )?;
    }
    let (modes, points) = modes_and_points(rows, |r| (r.mode, &r.label));
    if modes.len() < 2 {
        return Ok(());
    }
    side_by_side_head(
        out,
        "Video, modes side by side: frames on time % (all · after the first 1 s) · p50 / p99 frame latency ms; means over seeds",
        &[],
        &modes,
    )?;
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
        writeln!(out, "| {point} | {} |", cells.join(" | "))?;
    }
    Ok(())
}
