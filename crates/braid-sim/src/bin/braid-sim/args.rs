//! The command line: what to run and where the results go.

use std::path::PathBuf;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::{LossRecovery, Mode, RepairPlacement};
use braid_proto::sched::SchedulerKind;
use clap::{Parser, Subcommand};

/// Runs scenario files (every sweep point once per mode) and prints a summary table. Every run is
/// one bulk transfer per flow, checked byte for byte at the receiver (or, for a scenario with a
/// `video` key, a live video stream judged by its frames' deadlines).
#[derive(Debug, Parser)]
#[command(
    name = "braid-sim",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[arg(long, value_name = "MODE,...", value_delimiter = ',', help = modes_help())]
    pub modes: Option<Vec<Mode>>,
    #[arg(long, value_name = "NAME", help = cc_help())]
    pub cc: Option<CcAlgorithm>,
    #[arg(long, value_name = "NAME", help = scheduler_help())]
    pub scheduler: Option<SchedulerKind>,
    /// Where repair goes: per-path or across-paths (default: the mode's own).
    #[arg(long, value_name = "WHERE")]
    pub placement: Option<RepairPlacement>,
    /// How senders learn what to send again: ranges (braid's: every hole from the ACK ranges,
    /// the default) or cumulative (TCP's without SACK: the cumulative point and duplicate ACKs,
    /// a partial ACK per hole, go-back-N after a timeout; docs/SIMULATOR.md).
    #[arg(long, value_name = "HOW", default_value = "ranges")]
    pub recovery: LossRecovery,
    /// Each bulk flow runs through the security layer (handshake, sealing, replay windows, path
    /// announcements), with a deterministic stand-in for the cryptography.
    #[arg(long)]
    pub secure: bool,
    /// braid sends its repair margin ahead of new data (latency first).
    #[arg(long)]
    pub margin_ahead: bool,
    /// braid's δ̂: the accepted chance that a block's margin falls short, strictly between 0
    /// and 1 (default 0.5).
    #[arg(long, value_name = "D", value_parser = probability)]
    pub delta: Option<f64>,
    /// braid's δ̂ for the blocks at an app-idle point, sent ahead of new data, strictly between 0
    /// and 1 (default 0.35; a request's tail beside other streams keeps 0.01).
    #[arg(long, value_name = "D", value_parser = probability)]
    pub tail_delta: Option<f64>,
    /// Also write DIR/summary.csv and DIR/timeseries.csv (and DIR/video.csv for video runs).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Also write every run's summary and time series as one JSON document.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Scenario files (TOML; docs/SIMULATOR.md).
    #[arg(value_name = "SCENARIO.toml", required = true)]
    pub files: Vec<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The seeded fault campaign: random networks and modes, every run checked for intact bytes,
    /// progress and no panic. Exits 1 if any run failed.
    Campaign(CampaignArgs),
}

#[derive(Debug, clap::Args)]
pub struct CampaignArgs {
    /// How many seeds to run.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub first: u64,
    /// Also write the campaign's report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run this one seed and print its outcome as JSON (the other options are ignored).
    #[arg(long, value_name = "SEED")]
    pub replay: Option<u64>,
}

fn probability(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(d) if d > 0.0 && d < 1.0 => Ok(d),
        _ => Err(format!("`{value}` is not a probability strictly between 0 and 1")),
    }
}

fn modes_help() -> String {
    format!(
        "The modes to run, comma-separated, of {} (default: all; mptcp and mptcp-dfec run only on \
         scenarios with two paths or more, unless named here)",
        Mode::ALL.map(|m| m.name()).join(", ")
    )
}

fn cc_help() -> String {
    format!(
        "Every path's congestion controller, one of {} (default: the mode's own)",
        CcAlgorithm::ALL.map(|a| a.name()).join(", ")
    )
}

fn scheduler_help() -> String {
    format!(
        "Every mode's multipath scheduler, one of {} (default: the mode's own)",
        SchedulerKind::ALL.map(|k| k.name()).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_bad_values_are_named() {
        let cli =
            Cli::try_parse_from(["braid-sim", "--modes", "braid,tcp", "--delta", "0.2", "a.toml"]).unwrap();
        assert_eq!(cli.modes, Some(vec![Mode::Braid, Mode::Tcp]));
        assert_eq!((cli.delta, cli.files.len()), (Some(0.2), 1));
        let err = Cli::try_parse_from(["braid-sim", "--delta", "1", "a.toml"]).unwrap_err().to_string();
        assert!(err.contains("strictly between 0 and 1"), "{err}");
        // A wrong controller name is named, with every valid one.
        let err = Cli::try_parse_from(["braid-sim", "--cc", "vegas", "a.toml"]).unwrap_err().to_string();
        let names = CcAlgorithm::ALL.map(|a| a.name()).join(", ");
        assert!(err.contains("--cc") && err.contains("vegas") && err.contains(&names), "{err}");
        let err = Cli::try_parse_from(["braid-sim", "--frobnicate", "a.toml"]).unwrap_err().to_string();
        assert!(err.contains("--frobnicate"), "{err}");
        assert!(Cli::try_parse_from(["braid-sim"]).is_err(), "a scenario file is required");
        let cli = Cli::try_parse_from(["braid-sim", "campaign", "--seeds", "3"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Campaign(CampaignArgs { seeds: 3, first: 1, .. }))));
    }
}
