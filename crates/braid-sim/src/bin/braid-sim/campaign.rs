//! `braid-sim campaign`: the command line of the seeded fault campaign (the campaign itself is
//! `braid_sim::campaign`).

use std::path::PathBuf;
use std::process::ExitCode;

/// `braid-sim campaign [--seeds N] [--first S] [--json FILE] | --replay SEED`: the seeded fault
/// campaign (`braid_sim::campaign`). Exits 1 if any run failed.
pub fn main(args: Vec<String>) -> ExitCode {
    use braid_sim::campaign;
    let usage = || {
        eprintln!("usage: braid-sim campaign [--seeds N] [--first S] [--json FILE] | --replay SEED");
        ExitCode::from(2)
    };
    let (mut seeds, mut first, mut json, mut replay) = (100u64, 1u64, None::<PathBuf>, None::<u64>);
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> Option<u64> {
            let value = it.next()?;
            value.parse().map_err(|_| eprintln!("{name}: `{value}` is not a whole number")).ok()
        };
        match arg.as_str() {
            "--seeds" => match number("--seeds") {
                Some(n) => seeds = n,
                None => return usage(),
            },
            "--first" => match number("--first") {
                Some(n) => first = n,
                None => return usage(),
            },
            "--replay" => match number("--replay") {
                Some(n) => replay = Some(n),
                None => return usage(),
            },
            "--json" => match it.next() {
                Some(f) => json = Some(PathBuf::from(f)),
                None => return usage(),
            },
            "-h" | "--help" => return usage(),
            other => {
                eprintln!("campaign: unknown option `{other}`");
                return usage();
            }
        }
    }
    if let Some(seed) = replay {
        let outcome = campaign::run(seed);
        println!("{}", serde_json::to_string_pretty(&outcome).expect("serializable"));
        return if outcome.failure.is_some() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    let started = std::time::Instant::now();
    let report = campaign::campaign(first, seeds, |o| {
        if let Some(why) = &o.failure {
            eprintln!("seed {} ({}, {} path(s)): FAILED: {why}", o.draw.seed, o.draw.mode, o.draw.paths);
        }
    });
    println!(
        "campaign: {} runs (seeds {}..{}), {} failures, {} unfinished but progressing at the limit, {:.1} s of wall time",
        report.runs,
        first,
        first + seeds,
        report.failures.len(),
        report.unfinished,
        started.elapsed().as_secs_f64()
    );
    if let Some(file) = json {
        let text = serde_json::to_string_pretty(&report).expect("serializable");
        if let Err(e) = std::fs::write(&file, text) {
            eprintln!("--json {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
