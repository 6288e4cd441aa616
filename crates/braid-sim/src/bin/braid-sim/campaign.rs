//! `braid-sim campaign`: the command line of the seeded fault campaign (the campaign itself is
//! `braid_sim::campaign`).

use std::io::{self, Write};
use std::process::ExitCode;

use crate::args::CampaignArgs;
use crate::reader_gone_is_ok;

/// `braid-sim campaign [--seeds N] [--first S] [--json FILE] | --replay SEED`: the seeded fault
/// campaign (`braid_sim::campaign`). Exits 1 if any run failed.
pub fn main(args: CampaignArgs) -> ExitCode {
    use braid_sim::campaign;
    let CampaignArgs { seeds, first, json, replay } = args;
    if let Some(seed) = replay {
        let outcome = campaign::run(seed);
        let text = serde_json::to_string_pretty(&outcome).expect("serializable");
        if let Err(code) = reader_gone_is_ok(writeln!(io::stdout(), "{text}")) {
            return code;
        }
        return if outcome.failure.is_some() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    let started = std::time::Instant::now();
    let report = campaign::campaign(first, seeds, |o| {
        if let Some(why) = &o.failure {
            eprintln!("seed {} ({}, {} path(s)): FAILED: {why}", o.draw.seed, o.draw.mode, o.draw.paths);
        }
    });
    let printed = writeln!(
        io::stdout(),
        "campaign: {} runs (seeds {}..{}), {} failures, {} unfinished but progressing at the limit, {} with paths \
         added or removed ({} removals refused), {:.1} s of wall time",
        report.runs,
        first,
        first + seeds,
        report.failures.len(),
        report.unfinished,
        report.with_path_events,
        report.removals_refused,
        started.elapsed().as_secs_f64()
    );
    if let Some(file) = json {
        let text = serde_json::to_string_pretty(&report).expect("serializable");
        if let Err(e) = std::fs::write(&file, text) {
            eprintln!("--json {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if let Err(code) = reader_gone_is_ok(printed) {
        return code;
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
