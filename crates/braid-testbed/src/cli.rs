//! Command line: `run`, `check`, `list`, `cleanup`, `relay` (`braid-testbed --help`). The flags
//! are in `args`, `run`'s loop over sweep points and contenders in `sweep`, the judgement of
//! `--assert-setup` in `setup_check`.

use std::time::Duration;

use braid_sim::Scenario;

use crate::netns::{cleanup_stale, preflight};
use crate::{check, sys};

mod args;
mod setup_check;
mod sweep;

use args::{contenders_for, file_workload, load, Action, Args};

pub fn main() -> i32 {
    let result = match args::parse() {
        Action::Run(a) => sweep::run(&a),
        Action::Check { file, only, json } => cmd_check(file.as_deref(), &only, json.as_deref()),
        Action::List(a) => cmd_list(&a),
        Action::Cleanup => preflight().map(|_| {
            for n in cleanup_stale() {
                println!("removed {n}");
            }
        }),
        Action::Relay { listen, to } => crate::relay::run(&listen, &to).map_err(|e| format!("relay: {e}")),
    };
    match result {
        Ok(()) if sys::interrupted() => {
            eprintln!("interrupted; namespaces removed");
            130
        }
        Ok(()) => 0,
        Err(e) => {
            eprintln!("braid-testbed: {e}");
            1
        }
    }
}

fn cmd_list(a: &Args) -> Result<(), String> {
    for line in list_lines(a)? {
        println!("{line}");
    }
    Ok(())
}

/// `list`'s lines: scenario, label, paths, ideal Mbit/s over the limit, transfer, limit s, the
/// highest mean forward loss, the contenders — tab-separated.
fn list_lines(a: &Args) -> Result<Vec<String>, String> {
    let workload = match a.workload {
        Some(w) => w,
        None => file_workload(&a.files)?,
    };
    let mut lines = Vec::new();
    for scenario in load(&a.files, &a.only)? {
        let transfer = a.transfer.or(scenario.transfer).unwrap_or(10_000_000);
        let limit = a.limit.or(scenario.duration).unwrap_or(Duration::from_secs(120));
        let names: Vec<String> =
            contenders_for(a, &scenario, workload).iter().map(|c| c.to_string()).collect();
        let loss = scenario.paths.iter().map(|p| p.forward.loss.mean_loss()).fold(0.0, f64::max);
        lines.push(format!(
            "{}\t{}\t{}\t{:.4}\t{}\t{}\t{}\t{}",
            scenario.name,
            scenario.label,
            scenario.paths.len(),
            scenario.ideal_goodput_bps(limit) / 1e6,
            transfer,
            limit.as_secs_f64(),
            loss,
            names.join(",")
        ));
    }
    Ok(lines)
}

fn cmd_check(
    file: Option<&std::path::Path>,
    only: &[String],
    json: Option<&std::path::Path>,
) -> Result<(), String> {
    let scenario = match file {
        Some(f) => load(&[f.to_path_buf()], only)?.into_iter().next().ok_or("no scenario point")?,
        None => Scenario::parse(check::DEFAULT, "built-in").map_err(|e| e.to_string())?.remove(0),
    };
    preflight()?;
    sys::install_signal_handlers();
    cleanup_stale();
    let report = check::run(&scenario).map_err(|e| format!("check: {e}"))?;
    if let Some(j) = json {
        std::fs::write(j, serde_json::to_string_pretty(&report).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", j.display()))?;
    }
    if report.passed {
        println!("self-check passed");
        Ok(())
    } else {
        Err("self-check FAILED (see above)".into())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn args(s: &[&str]) -> Result<Args, String> {
        match args::parse_from(["braid-testbed", "list"].iter().chain(s).copied())
            .map_err(|e| e.to_string())?
        {
            Action::List(a) => Ok(a),
            _ => unreachable!("`list` parses as a list"),
        }
    }

    /// Every testbed scenario parses with braid-sim's parser (no root needed).
    #[test]
    fn testbed_scenarios_parse() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("scenarios/testbed exists")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{files:?}");
        let ctcp = load(&[dir.join("ctcp-table4.toml")], &[]).unwrap();
        assert_eq!(ctcp.len(), 7, "loss 0, 1, 2, 3, 5, 10, 20 %");
        assert_eq!(ctcp[0].transfer, Some(11_492_499));
        for f in files {
            let points = load(std::slice::from_ref(&f), &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!points.is_empty(), "{}", f.display());
        }
        let only = load(&[dir.join("ctcp-table4.toml")], &["loss=0.05".into()]).unwrap();
        assert_eq!(only.len(), 1, "--only picks one sweep point");
    }

    #[test]
    fn list_gives_every_point_with_the_overrides() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
        let f = dir.join("dfec-table3.toml").display().to_string();
        let lines =
            list_lines(&args(&[&f, "--transfer", "3MB", "--contenders", "bbr@best"]).unwrap()).unwrap();
        assert_eq!(lines.len(), 12, "B1 loss 0/1/3/5 % × B2 RTT 25/100/400 ms");
        let first: Vec<&str> = lines[0].split('\t').collect();
        assert_eq!(first[..3], ["dfec-table3", "path.B1.loss=0 path.B2.rtt=25ms", "2"]);
        assert_eq!(first[3].parse::<f64>().unwrap(), 30.0, "20 + 10 Mbit/s, no loss");
        assert_eq!(first[4..], ["3000000", "12", "0", "bbr"]);
        let last: Vec<&str> = lines[11].split('\t').collect();
        assert_eq!((last[3].parse::<f64>().unwrap() * 10.0).round(), 290.0, "20 × 0.95 + 10");
        assert_eq!(last[6], "0.05");
        let sat = dir.join("satellite-cellular.toml").display().to_string();
        let lines = list_lines(&args(&[&sat, "--contenders", "bbr@best,mptcp-bbr"]).unwrap()).unwrap();
        assert!(lines[0].ends_with("\tbbr@1,mptcp-bbr"), "the cellular path is the best: {}", lines[0]);
    }
}
