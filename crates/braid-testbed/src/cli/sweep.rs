//! `braid-testbed run`: every sweep point of the scenario files in a fresh testbed, each
//! contender and flow mix over it in turn, a row per run printed and saved as it comes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_sim::Scenario;

use super::args::{contenders_for, file_workload, load, parse_mix, Args, WorkloadOptions};
use super::setup_check::setup_problems;
use crate::contender::Contender;
use crate::netns::{cleanup_stale, preflight, Testbed};
use crate::report::{self, Row};
use crate::run::{run_mix, run_one, RunOptions};
use crate::workload::Workload;
use crate::{sys, tun, video, web};

/// `run`: every sweep point of the files, each contender (or mix) on it, a row printed and the
/// `--json` and CSV files rewritten after each run, so an interrupted sweep keeps its rows.
pub fn run(a: &Args) -> Result<(), String> {
    let scenarios = load(&a.files, &a.only)?;
    let workload = match a.workload {
        Some(w) => w,
        None => file_workload(&a.files)?,
    };
    tools_present(a, workload)?;
    preflight()?;
    sys::install_signal_handlers();
    for n in cleanup_stale() {
        eprintln!("removed leftover namespace {n}");
    }
    let out_dir = out_dir(a)?;
    let mut rows: Vec<Row> = Vec::new();
    println!("{}", report::header());
    for scenario in &scenarios {
        if sys::interrupted() {
            break;
        }
        let contenders = contenders_for(a, scenario, workload);
        check_point(a, scenario, workload, &contenders)?;
        let opts = RunOptions {
            transfer: a.transfer.or(scenario.transfer).unwrap_or(10_000_000),
            limit: a.limit.or(scenario.duration).unwrap_or(Duration::from_secs(120)),
            out_dir: out_dir.clone(),
            probes: workload == Workload::Latency,
            timeline: a.timeline,
        };
        run_point(a, scenario, workload, &contenders, &opts, &mut rows)?;
    }
    if a.assert_setup {
        let problems: Vec<String> = rows.iter().flat_map(setup_problems).collect();
        if !problems.is_empty() {
            return Err(format!("setup check failed:\n  {}", problems.join("\n  ")));
        }
        println!("setup check passed ({} runs)", rows.len());
    }
    Ok(())
}

/// The web and tun workloads drive outside tools; say which is missing before any testbed is
/// built.
fn tools_present(a: &Args, workload: Workload) -> Result<(), String> {
    if workload == Workload::Web {
        if let Some(why) = web::tools_missing() {
            return Err(format!("--workload web: {why}"));
        }
    }
    if workload == Workload::Tun {
        tun::braid_binary(a.tun.braid.as_deref())?;
        if let Some(why) = tun::tools_missing() {
            return Err(format!("--workload tun: {why}"));
        }
    }
    Ok(())
}

/// Where per-run files go: `--out-dir`, else the `--json` file's folder, else the current one
/// (made if missing).
fn out_dir(a: &Args) -> Result<PathBuf, String> {
    let out_dir = a
        .out_dir
        .clone()
        .or_else(|| a.json.as_ref().and_then(|j| j.parent().map(PathBuf::from)))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    Ok(out_dir)
}

/// Refuses a point the contenders cannot run: a contender the workload does not carry, or a
/// contender or mix flow on a path the scenario does not have.
fn check_point(
    a: &Args,
    scenario: &Scenario,
    workload: Workload,
    contenders: &[Contender],
) -> Result<(), String> {
    if let Some(c) = contenders.iter().find(|c| !workload.supports(c)) {
        return Err(match workload {
            Workload::Tun => format!(
                "{c}: the tun workload runs braid itself (--braid) beside kernel TCP and MPTCP contenders only"
            ),
            _ => format!("{c} carries only the bulk workload (one byte stream split over connections)"),
        });
    }
    let mixed: Vec<Contender> = a.mix.iter().flat_map(|m| parse_mix(m, &a.ext).unwrap_or_default()).collect();
    if let Some(bad) = contenders.iter().chain(&mixed).find(|c| c.tcp_path() >= scenario.paths.len()) {
        return Err(format!("{}: {bad}: the scenario has {} paths", scenario.title(), scenario.paths.len()));
    }
    Ok(())
}

/// One sweep point on a fresh testbed, torn down after its runs (or the first failure).
fn run_point(
    a: &Args,
    scenario: &Scenario,
    workload: Workload,
    contenders: &[Contender],
    opts: &RunOptions,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let mut tb = Testbed::create(scenario.paths.len()).map_err(|e| format!("testbed setup: {e}"))?;
    let result = if workload == Workload::Tun {
        let mut emit_row = |row: Row| emit(rows, vec![row], a.json.as_deref());
        tun::run(&tb, scenario, contenders, opts, &a.tun, &mut emit_row)
    } else {
        run_contenders(a, &tb, scenario, workload, contenders, opts, rows)
    };
    tb.teardown();
    result
}

/// Each contender on the point, then each `--mix` of flows together; stops early when
/// interrupted.
fn run_contenders(
    a: &Args,
    tb: &Testbed,
    scenario: &Scenario,
    workload: Workload,
    contenders: &[Contender],
    opts: &RunOptions,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let mut wopts = a.wopts.clone();
    if let (false, Some(d)) = (a.video_duration_set, scenario.duration) {
        wopts.video.duration = d;
    }
    for c in contenders {
        if sys::interrupted() {
            return Ok(());
        }
        let new = run_workload(tb, scenario, c, workload, opts, &wopts)
            .map_err(|e| format!("{} / {c}: {e}", scenario.title()))?;
        emit(rows, new, a.json.as_deref())?;
    }
    for m in &a.mix {
        if sys::interrupted() {
            return Ok(());
        }
        let flows: Vec<Contender> = parse_mix(m, &a.ext)?.iter().map(|c| c.resolve(scenario)).collect();
        let mix_rows = run_mix(tb, scenario, &flows, m, opts)
            .map_err(|e| format!("{} / mix {m}: {e}", scenario.title()))?;
        emit(rows, mix_rows, a.json.as_deref())?;
    }
    Ok(())
}

/// Run a workload for one contender over one scenario point.
fn run_workload(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    workload: Workload,
    opts: &RunOptions,
    wopts: &WorkloadOptions,
) -> std::io::Result<Vec<Row>> {
    match workload {
        Workload::Bulk | Workload::Latency => run_one(tb, scenario, contender, opts).map(|r| vec![r]),
        Workload::Web => web::run(tb, scenario, contender, opts, &wopts.web),
        Workload::Video => video::run(tb, scenario, contender, opts, &wopts.video).map(|r| vec![r]),
        Workload::Tun => Err(std::io::Error::other("the tun workload runs once per point (run_point)")),
    }
}

/// Prints `new` rows and adds them to `rows`; with `--json FILE`, rewrites FILE and its CSV
/// twin (FILE with .csv) with every row so far.
fn emit(rows: &mut Vec<Row>, new: Vec<Row>, json: Option<&Path>) -> Result<(), String> {
    for row in new {
        println!("{}", report::line(&row));
        rows.push(row);
    }
    if let Some(j) = json {
        report::write_json(rows, j).map_err(|e| format!("{}: {e}", j.display()))?;
        report::write_csv(rows, &j.with_extension("csv")).map_err(|e| format!("csv: {e}"))?;
    }
    Ok(())
}
