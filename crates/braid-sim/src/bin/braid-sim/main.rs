//! `braid-sim`: runs scenario files and prints a table, or runs the seeded fault campaign
//! (`braid-sim campaign`). `braid-sim --help` lists the flags; docs/SIMULATOR.md describes the
//! scenario files and the CSV and JSON formats.
//!
//! Every run is one bulk transfer per flow (the scenario's `transfer` bytes), checked byte for
//! byte at the receiver. Rows give completion time, goodput, goodput against the physical limit
//! Σ rateᵢ × (1 − pᵢ) of the data direction, and the repair overhead. `--csv DIR` and
//! `--json FILE` also write every run's summary and its time series (goodput per interval, each
//! path's congestion window and RTT at the end of each interval).
//!
//! The parts: `args` parses the command line, `run` runs one scenario point in one mode,
//! `report` prints the tables, `export` writes CSV and JSON.

use std::io::{self, Write};
use std::process::ExitCode;

use braid_proto::conn::{Mode, Redundancy};
use braid_sim::Scenario;
use clap::Parser;

mod args;
mod campaign;
mod export;
mod report;
mod run;

use args::{Cli, Command};
use run::RunSetup;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Campaign(opts)) = cli.command {
        return campaign::main(opts);
    }
    let modes_named = cli.modes.is_some();
    let modes = cli.modes.clone().unwrap_or_else(|| Mode::ALL.to_vec());
    let redundancy = Redundancy {
        margin_ahead_of_data: cli.margin_ahead,
        target_failure: cli.delta.unwrap_or(Redundancy::default().target_failure),
        idle_tail_target_failure: cli.tail_delta.unwrap_or(Redundancy::default().idle_tail_target_failure),
        ..Redundancy::default()
    };
    let mut rows = Vec::new();
    let mut video_rows = Vec::new();
    let started = std::time::Instant::now();
    for file in &cli.files {
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
                let setup = RunSetup {
                    mode,
                    cc: cli.cc,
                    scheduler: cli.scheduler,
                    redundancy,
                    placement: cli.placement,
                    recovery: cli.recovery,
                    secure: cli.secure,
                };
                let ran = if scenario.video.is_some() {
                    run::run_video(scenario, &setup).map(|row| video_rows.push(row))
                } else {
                    run::run(scenario, &setup).map(|row| rows.push(row))
                };
                if let Err(e) = ran {
                    eprintln!("{}: {e}", scenario.title());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let mut stdout = io::stdout().lock();
    let mut printed = print_tables(&mut stdout, &rows, &video_rows);
    if let Some(dir) = &cli.csv {
        let written = export::write_csv(dir, &rows).and_then(|()| export::write_video_csv(dir, &video_rows));
        if let Err(e) = written {
            eprintln!("--csv {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(file) = &cli.json {
        if let Err(e) = std::fs::write(file, export::to_json(&rows)) {
            eprintln!("--json {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if printed.is_ok() {
        let datagrams: u64 = rows.iter().map(|r| r.datagrams).sum::<u64>()
            + video_rows.iter().map(|r| r.datagrams).sum::<u64>();
        let wall = started.elapsed().as_secs_f64();
        printed = writeln!(
            stdout,
            "\n{} runs, {datagrams} datagrams simulated in {wall:.1} s of wall time ({:.2} M datagrams/s)",
            rows.len() + video_rows.len(),
            datagrams as f64 / wall / 1e6
        )
        .and_then(|()| stdout.flush());
    }
    if let Err(code) = reader_gone_is_ok(printed) {
        return code;
    }
    if rows.iter().all(|r| r.intact) && video_rows.iter().all(|r| r.intact) {
        ExitCode::SUCCESS
    } else {
        eprintln!("some transfers were not delivered intact");
        ExitCode::FAILURE
    }
}

fn print_tables(out: &mut dyn Write, rows: &[run::Row], video_rows: &[run::VideoRow]) -> io::Result<()> {
    if !rows.is_empty() {
        report::print(out, rows)?;
    }
    if !video_rows.is_empty() {
        report::print_video(out, video_rows)?;
    }
    Ok(())
}

/// How printing to stdout ended. A reader that went away early (`braid-sim … | head`) is no
/// error: the runs, the exit status and the `--csv`/`--json` files are complete, only the rest of
/// the tables is dropped, quietly. Any other write error is reported and fails the run.
fn reader_gone_is_ok(printed: io::Result<()>) -> Result<(), ExitCode> {
    match printed {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("stdout: {e}");
            Err(ExitCode::FAILURE)
        }
        _ => Ok(()),
    }
}
