//! How bursty a path's losses are: the mean length of its runs of consecutive lost symbols.
//!
//! FMTCP's δ̂ rule (Cui et al., Eq. 4) sizes a margin as if every symbol were lost on its own,
//! with probability p. Under bursty loss (a Gilbert–Elliott channel: a bad state that drops every
//! packet for a few packets in a row) the losses come in runs, and a margin sized by the mean
//! falls short far more often than δ̂: at 5 % mean loss in runs of four, a 64-symbol block loses
//! nothing with probability ~0.45 but eight or more with ~0.2, where independent losses would
//! take eight with ~0.01. Sato et al. (§3, interleaving) answer runs by spreading a group over a
//! window so that a burst hits different groups; a block of braid's has one code over all its
//! symbols, so here the margin is sized for the runs instead ([`symbols_for_runs`]).
//!
//! A run is a loss whose symbol was sent within 1.5 send gaps of the previous lost symbol on the
//! same path (the gap: a moving average of the times between the path's symbol sends, each sample
//! capped at 4× the average so that an idle period does not make distant losses one run). The
//! mean run length is the decayed ratio of losses to runs, starting at 1 (independent losses).

use std::time::Duration;

use super::symbols_for;
use crate::Instant;

/// One path's runs of lost symbols.
#[derive(Debug, Clone, Copy, Default)]
pub struct LossRuns {
    last_sent: Option<Instant>,
    /// Moving average of the time between symbol sends, in microseconds (0: no sample yet).
    gap: f64,
    /// Send time of the latest lost symbol.
    last_lost: Option<Instant>,
    /// Losses and runs, both decayed by [`DECAY`] at each new run.
    losses: f64,
    runs: f64,
}

/// Weight of the runs already seen at each new one: about the last 16 runs count.
const DECAY: f64 = 15.0 / 16.0;

impl LossRuns {
    /// A symbol went out at `at`.
    pub fn on_sent(&mut self, at: Instant) {
        if let Some(last) = self.last_sent.filter(|&l| at >= l) {
            let sample = (at - last).as_micros() as f64;
            self.gap =
                if self.gap == 0.0 { sample } else { 0.875 * self.gap + 0.125 * sample.min(4.0 * self.gap) };
        }
        self.last_sent = Some(at);
    }

    /// A symbol sent at `sent_at` was declared lost.
    pub fn on_lost(&mut self, sent_at: Instant) {
        let within = Duration::from_micros((1.5 * self.gap) as u64);
        let continues = self.last_lost.is_some_and(|l| sent_at >= l && sent_at - l <= within);
        if continues {
            self.losses += 1.0;
        } else {
            self.losses = self.losses * DECAY + 1.0;
            self.runs = self.runs * DECAY + 1.0;
        }
        self.last_lost = Some(sent_at);
    }

    /// The mean length of a run of lost symbols, at least 1.
    pub fn mean(&self) -> f64 {
        if self.runs > 0.0 {
            (self.losses / self.runs).max(1.0)
        } else {
            1.0
        }
    }
}

/// Symbols to have in flight so that at least `missing` arrive with probability 1 − `delta`,
/// when each is lost with probability `p` but losses come in runs of `run` symbols: the δ̂ rule
/// ([`symbols_for`]) over units of `run` symbols lost together, its margin in units times the
/// run. With `run` = 1 it is [`symbols_for`] itself.
///
/// The run counts at most `missing` symbols: a unit is what the block still lacks at most, and
/// its margin in whole units is then at most a few times what it lacks. Uncapped, one long run
/// (an outage that declared a window lost: a mean of 40) made a block missing one symbol want
/// 40 more in flight, from every drained block at once.
pub fn symbols_for_runs(missing: u64, p: f64, delta: f64, run: f64) -> u64 {
    if missing == 0 {
        return 0;
    }
    let run = run.clamp(1.0, missing as f64);
    let units = (missing as f64 / run).ceil() as u64;
    let margin = symbols_for(units, p, delta) - units;
    missing + (margin as f64 * run).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(micros: u64) -> Instant {
        Instant::from_micros(micros)
    }

    /// Runs of four back-to-back losses read as runs of four; scattered losses as one each; an
    /// idle period between sends does not join distant losses into one run.
    #[test]
    fn measures_the_mean_run() {
        let mut runs = LossRuns::default();
        assert_eq!(runs.mean(), 1.0);
        // Symbols every 600 µs; symbols 10-13, 50-53 and 90-93 lost.
        for i in 0..100 {
            runs.on_sent(at(i * 600));
        }
        for start in [10, 50, 90] {
            for i in start..start + 4 {
                runs.on_lost(at(i * 600));
            }
        }
        assert!((runs.mean() - 4.0).abs() < 1e-9, "{}", runs.mean());
        let mut scattered = LossRuns::default();
        for i in 0..100 {
            scattered.on_sent(at(i * 600));
        }
        for i in [5, 20, 21, 40, 70] {
            scattered.on_lost(at(i * 600));
        }
        // Five losses in four runs (20 and 21 are neighbours).
        assert!((scattered.mean() - 1.25).abs() < 0.05, "{}", scattered.mean());
        // A 40 ms idle period among 600 µs gaps: the gap stays near 600 µs (capped samples).
        let mut idle = LossRuns::default();
        for i in 0..20 {
            idle.on_sent(at(i * 600));
        }
        idle.on_sent(at(19 * 600 + 40_000));
        assert!(idle.gap < 1000.0, "{}", idle.gap);
        idle.on_lost(at(0));
        idle.on_lost(at(5_000));
        assert_eq!(idle.mean(), 1.0);
    }

    /// Runs of one give FMTCP's rule; runs of four a margin of whole runs, larger than the
    /// independent rule's at the same mean loss.
    #[test]
    fn sizes_margins_in_runs() {
        assert_eq!(symbols_for_runs(64, 0.05, 0.05, 1.0), symbols_for(64, 0.05, 0.05));
        // 16 units of four at 5 %: 18 units arrive whole with 0.94, 19 with 0.986 → 3 units.
        assert_eq!(symbols_for(16, 0.05, 0.05), 19);
        assert_eq!(symbols_for_runs(64, 0.05, 0.05, 4.0), 64 + 12);
        assert!(symbols_for_runs(64, 0.05, 0.05, 4.0) > symbols_for(64, 0.05, 0.05));
        // Three missing, runs of four: a run counts as the three the block lacks, one unit (lost
        // with 10 %) asks for a second, three symbols.
        assert_eq!(symbols_for_runs(3, 0.1, 0.05, 4.0), 6);
        assert_eq!(symbols_for_runs(0, 0.05, 0.05, 4.0), 0);
        // No loss estimate: no margin, whatever the runs.
        assert_eq!(symbols_for_runs(64, 0.0, 0.05, 4.0), 64);
    }

    /// A run longer than what a block lacks counts as what it lacks: after an outage (runs of
    /// 40 measured) a block missing one symbol wants two in flight at 5 % (the δ̂ 0.01 rule for
    /// one unit), not 41; missing three, six, not 43.
    #[test]
    fn a_run_counts_at_most_what_the_block_lacks() {
        let mut outage = LossRuns::default();
        for i in 0..100 {
            outage.on_sent(at(i * 600));
        }
        for i in 20..60 {
            outage.on_lost(at(i * 600));
        }
        assert!((outage.mean() - 40.0).abs() < 1e-9, "{}", outage.mean());
        assert_eq!(symbols_for(1, 0.05, 0.01), 2);
        assert_eq!(symbols_for_runs(1, 0.05, 0.01, outage.mean()), 2);
        assert_eq!(symbols_for_runs(3, 0.05, 0.01, outage.mean()), 6);
        assert_eq!(symbols_for_runs(3, 0.05, 0.01, outage.mean()), symbols_for_runs(3, 0.05, 0.01, 3.0));
        // Within what the block lacks the run still sizes the margin in whole runs: 64 missing
        // are two units of 40, and two units at 5 % want a third (0.993).
        assert_eq!(symbols_for(2, 0.05, 0.01), 3);
        assert_eq!(symbols_for_runs(64, 0.05, 0.01, 40.0), 64 + 40);
    }
}
