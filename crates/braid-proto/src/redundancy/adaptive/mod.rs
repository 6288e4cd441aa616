//! braid's adaptive redundancy.
//!
//! FMTCP's δ̂-completeness rule (Cui et al., Eq. 4), sized once per block: a closed block of k
//! sources gets a margin m, the smallest such that with the path's current loss estimate p,
//! P[Binomial(k + m, 1 − p) ≥ k] ≥ 1 − δ̂. Sent right after a block's sources this is proactive
//! repair. Each loss of one of the block's symbols uses up one unit of the margin, and losses
//! beyond it are replaced one for one at once, with no round trip beyond detection
//! (`Redundancy::deficit`).
//!
//! Across paths ([`Adaptive`]), the margin is sized with the loss estimate of the path that
//! would send the repair, and each symbol of the block already sent on another path counts by
//! that path's own estimate: a block whose sources went over a lossy path gets its margin from
//! a clean one at once, and one sent over a clean path is not repaired as if it had crossed the
//! lossy path that happens to ask (docs/DEVIATIONS.md, "braid's margin across paths").

use super::early::EarlyLoss;
use super::loss_runs::{symbols_for_runs, LossRuns};
use super::{RedundancyController, RedundancyEvent, SatoConfig};

mod binomial;
use crate::blocks::{SendBlock, Tail};
use crate::view::{PathView, SymbolEvent};
use crate::wire::MAX_PATHS;
use crate::Instant;
pub use binomial::symbols_for;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Redundancy {
    /// δ̂: accepted probability that a block still lacks symbols after what is in flight
    /// arrives. Default 0.5: the margin carries the *expected* loss and reactive repair the
    /// rest. FMTCP used 0.05; latency-sensitive traffic wants a small δ̂.
    pub target_failure: f64,
    /// Floor on the loss estimate used, so a loss-free start still sends a margin. Default 0.
    pub min_loss: f64,
    /// Send the margin ahead of new data (latency first: most blocks decode without waiting a
    /// round trip for a repair) rather than only in capacity new data leaves unused (goodput
    /// first: a margin the losses did not need is never paid for in bulk transfers). Default
    /// false. Measured (CTCP Table IV, 5 seeds, 5% loss): false → 0.859 of the ideal, block
    /// delay 241 ms mean; true with δ̂ = 0.3 → 0.825, 124 ms (docs/BENCHMARKS.md, CTCP Table IV).
    pub margin_ahead_of_data: bool,
    /// δ̂ for a request's tail ([`Tail::Request`]: the end of one stream's write while other
    /// streams still send, a request beside a bulk transfer). Its margin goes out at once, ahead
    /// of new data: a loss repaired reactively costs the request a round trip plus the
    /// detection delay. Default 0.01.
    pub tail_target_failure: f64,
    /// δ̂ for the blocks at an app-idle point ([`Tail::AppIdle`]: a video frame, the last
    /// response). Their margin goes out at once, ahead of new data. Default 0.35, a margin near
    /// the expected loss: a tail probe (`Mode::tail_probes`) shows a tail's loss a little over a
    /// round trip after it was sent, so one reactive round (sized with
    /// [`Self::tail_repair_failure`]) still completes a frame ~1.6 RTT after it began, within a
    /// live frame's deadline of 2 RTTs. Live video (25 fps, 3.4 Mbit/s, 100 ms RTT, 200 ms
    /// deadline, 2 % loss; seeds 1-3 × 20 and 60 s): repair 5.0–6.2 % of the symbols, p50
    /// 58 ms; at 0.5, 4.5–5.3 % but p50 58–75 ms (a frame waiting for its reactive round holds
    /// the frames behind it in the stream, and at 0.5 that was over half of them on two seeds);
    /// at 0.2, 6.9–7.8 %, p50 57 ms; at 0.01 without tail probes, 15 %. A bulk transfer, which
    /// never idles until its end, pays nothing for it.
    pub idle_tail_target_failure: f64,
    /// δ̂ for a tail's reactive round, once its margin is used up: the replacements carry their
    /// own margin, so a frame waits for a second round (a third round trip, past a live
    /// frame's deadline, and the frames behind it in the stream with it) only with about this
    /// probability. Default 0.01: at 2 % loss one lost symbol is replaced by two.
    pub tail_repair_failure: f64,
    /// δ̂ for the blocks in flight when a bulk transfer ends ([`SendBlock::drained`]): their
    /// repair goes only into capacity nothing else wants (the link idles after the last source
    /// until the reactive round), sized for runs of losses (`redundancy::loss_runs`), so that
    /// a burst among the last symbols does not cost a round trip. Default 0.01: at 0.05 the
    /// margin was about one run a block, and a burst often took it (Gilbert–Elliott loss at
    /// 5 % mean, seed 4: 5.45 s against 5.35; docs/DEVIATIONS.md, "Whole-transfer goodput").
    pub drained_target_failure: f64,
    /// Symbols of a new path during which a request's tail ([`Tail::Request`]) takes at least
    /// their own count's loss estimate with a prior for its margin (`redundancy/early.rs`): the
    /// path's EWMAs start at zero. Default 512, the long estimate's span; 0: none.
    pub early_symbols: u32,
    /// The `sato` mode's parameters l, r, g (Sato et al. §3; default: the paper's best).
    pub sato: SatoConfig,
}

impl Default for Redundancy {
    fn default() -> Self {
        Redundancy {
            target_failure: 0.5,
            min_loss: 0.0,
            margin_ahead_of_data: false,
            tail_target_failure: 0.01,
            idle_tail_target_failure: 0.35,
            tail_repair_failure: 0.01,
            drained_target_failure: 0.01,
            early_symbols: 512,
            sato: SatoConfig::default(),
        }
    }
}

impl Redundancy {
    /// Repair symbols `block` should get now, given loss estimate `p` (every symbol of the
    /// block taken to cross a path with that loss).
    pub fn deficit(&self, block: &SendBlock, p: f64) -> u64 {
        self.deficit_across(block, p, p, 0.0)
    }

    /// [`Self::deficit`] for repair sent on a path with loss `p`, where the symbols of the block
    /// already sent on other paths are expected to deliver `bonus` more (in symbols of the
    /// sending path; negative if they crossed lossier paths): see [`Adaptive`]. The margin is
    /// sized with `p_margin` (≤ `p`: a tail's, fixed when its last source went out), a tail's
    /// reactive round with `p`.
    fn deficit_across(&self, block: &SendBlock, p: f64, p_margin: f64, bonus: f64) -> u64 {
        if block.decoded || !block.all_sources_sent() || block.is_empty() {
            return 0;
        }
        let len = block.len() as u64;
        let missing = len.saturating_sub(block.known_dofs());
        if missing == 0 {
            return 0;
        }
        if !block.closed {
            // Still filling: repair only what is known lost.
            return missing.saturating_sub(block.in_flight);
        }
        // The margin beyond the block's length that the δ̂ rule asks for, decided over the whole
        // block; every loss of one of the block's symbols uses up one unit of it, and losses
        // beyond it are replaced one for one. (Re-deriving the margin from what is still missing
        // after each loss would keep adding margin as losses happen, and whatever margin is left
        // when the block decodes arrives as redundant symbols.)
        let (p, p_margin) = (p.max(self.min_loss), p_margin.max(self.min_loss));
        let delta = match block.tail {
            Some(Tail::AppIdle) => self.idle_tail_target_failure,
            Some(Tail::Request) => self.tail_target_failure,
            None => self.target_failure,
        };
        let margin = symbols_for(len, p_margin, delta) - len;
        // What is left of it: the symbols sent elsewhere used up (or add) their share too. To
        // the nearest symbol: rounded up, a bonus of a tenth of a symbol cost a whole one. (With
        // no bonus, whole numbers: the margin less the losses, spent once they exceed it.)
        let left = margin as f64 - block.lost as f64 - bonus;
        let mut wanted = missing + left.round().max(0.0) as u64;
        if block.tail.is_some() && left < -0.5 {
            // A tail's reactive round: what it still lacks, with the round's own margin (in
            // flight counts toward it, so the count is the same before and after each send).
            wanted = wanted.max(symbols_for(missing, p, self.tail_repair_failure));
        }
        wanted.saturating_sub(block.in_flight)
    }
}

/// braid's redundancy controller: [`Redundancy`]'s δ̂ rule with every path's loss estimate.
///
/// FMTCP's Eq. 4 sizes a block's margin with one loss rate. A block of braid's may cross several
/// paths, and the rule is asked by whichever path is about to send. The margin is sized, as
/// before, for the block's length at the asking path's loss pₐ; each symbol of the block sent
/// on another path i ([`SendBlock::sent_on`], in flight or settled) then counts by its expected
/// delivery, (1 − pᵢ) / (1 − pₐ) symbols of the asking path's, instead of one. Equivalently,
/// the margin left shrinks by Σᵢ sᵢ (pₐ − pᵢ) / (1 − pₐ): symbols sent over a cleaner path
/// than the asking one used up less of it, over a lossier one more, before their losses are
/// even known. With every symbol on the asking path (one path, or equal estimates) this is
/// exactly [`Redundancy::deficit`]. Counting what was sent rather than only what is in flight
/// keeps the whole-block margin consistent: a symbol delivered over the clean path leaves the
/// in-flight count but not the margin's budget, which would then be re-sized as if it had
/// crossed the lossy path.
///
/// Only a margin sent ahead of new data is weighed so: a tail's (a video frame, a request), or
/// every block's with `margin_ahead_of_data`. A bulk block's margin goes only in capacity new
/// data leaves unused, and there the asking path's own rule stays: weighed by path, the spare
/// repairs a 50 %-loss path sent for blocks that went over the clean one stopped, and with them
/// most of what that path carried (FMTCP Table II case 4, braid: 12.74 → 9.70 Mbit/s, the paths'
/// split 69/31 → 98/2).
#[derive(Debug, Clone)]
pub struct Adaptive {
    config: Redundancy,
    /// Each path's (loss, long loss) estimates, as its latest view showed them.
    losses: [Option<(f64, f64)>; MAX_PATHS as usize],
    /// Each path's runs of lost symbols.
    runs: [LossRuns; MAX_PATHS as usize],
    /// Each path's early loss count ([`Redundancy::early_symbols`]).
    early: [EarlyLoss; MAX_PATHS as usize],
}

impl Adaptive {
    pub fn new(config: Redundancy) -> Adaptive {
        Adaptive {
            config,
            losses: [None; MAX_PATHS as usize],
            runs: [LossRuns::default(); MAX_PATHS as usize],
            early: [EarlyLoss::default(); MAX_PATHS as usize],
        }
    }

    /// Repair symbols a block in flight at a bulk transfer's end ([`SendBlock::drained`]) wants
    /// on `path`, in capacity nothing else wants: enough in flight that what it still lacks
    /// arrives with probability 1 − [`Redundancy::drained_target_failure`], the path's losses
    /// taken in runs of their measured mean length. Losses declared since are replaced, with the
    /// margin kept, until the block completes. TCP-IR (Flach et al., the dFEC paper's baseline)
    /// sends repair after a flow's last segments so that a tail loss costs no timeout; here the
    /// repair is sized to the burst a run of losses can take, and is sent only into the link the
    /// transfer's end leaves idle (docs/DEVIATIONS.md, "Whole-transfer goodput").
    fn drained_deficit(&self, block: &SendBlock, path: &PathView) -> u64 {
        if !block.drained || block.decoded || !block.all_sources_sent() || block.is_empty() {
            return 0;
        }
        let missing = (block.len() as u64).saturating_sub(block.known_dofs());
        let p = path.loss.max(path.loss_long).max(self.config.min_loss).clamp(0.0, 0.9);
        let run = self.runs.get(usize::from(path.path)).map_or(1.0, LossRuns::mean);
        symbols_for_runs(missing, p, self.config.drained_target_failure, run).saturating_sub(block.in_flight)
    }

    /// Repair symbols `block` should get now if sent on `path`: a tail's margin is sized with
    /// the larger of the fast and the long estimate. The fast one (an EWMA over 64 packets)
    /// swings from 0.4 % to 3 % between losses at 2 % random loss, and a tail whose margin was
    /// sized in a dip waited a round trip for reactive repair. On a path still new, a request's
    /// tail's estimate is at least its early count's (`redundancy/early.rs`).
    fn deficit_on(&self, block: &SendBlock, path: &PathView) -> u64 {
        let early = |i: usize| match block.tail {
            Some(Tail::Request) => self.early.get(i).map_or(0.0, |e| e.loss(self.config.early_symbols)),
            _ => 0.0,
        };
        let estimate = |i: usize, loss: f64, long: f64| {
            let p = if block.tail.is_some() { loss.max(long).max(early(i)) } else { loss };
            p.max(self.config.min_loss).clamp(0.0, 0.9)
        };
        let p = estimate(usize::from(path.path), path.loss, path.loss_long);
        if !(self.config.margin_ahead_of_data || block.tail.is_some()) {
            // A margin sent only as spare capacity keeps the asking path's rule (see above).
            return self.config.deficit_across(block, p, p, 0.0);
        }
        let (mut bonus, mut elsewhere) = (0.0, false);
        for (i, &sent) in block.sent_on.iter().enumerate() {
            if sent == 0 || i == usize::from(path.path) {
                continue;
            }
            elsewhere = true;
            // A path never heard of counts as the asking one.
            let Some((loss, long)) = self.losses[i] else { continue };
            bonus += f64::from(sent) * (p - estimate(i, loss, long));
        }
        // A tail's margin does not grow once its sources are out (`SendBlock::margin_loss`), if
        // all its symbols went on the asking path. Across paths the weighing above is relative to
        // the asking path's margin: a smaller one beside it read as losses beyond the margin, and
        // each frame over two paths got a reactive round's δ̂ for the whole block (repair 52 %
        // of the sources instead of 17 %, `tests/repair_budget.rs`).
        let p_margin = match block.margin_loss {
            Some((loss, long)) if !elsewhere => estimate(usize::from(path.path), loss, long).min(p),
            _ => p,
        };
        self.config.deficit_across(block, p, p_margin, bonus / (1.0 - p))
    }
}

impl RedundancyController for Adaptive {
    fn name(&self) -> &'static str {
        "adaptive"
    }

    /// Known losses are replaced at once, ahead of new data (and the margin too, if
    /// `margin_ahead_of_data`).
    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64 {
        if self.config.margin_ahead_of_data || block.tail.is_some() {
            return self.deficit_on(block, path);
        }
        if block.decoded || !block.all_sources_sent() {
            return 0;
        }
        let missing = (block.len() as u64).saturating_sub(block.known_dofs());
        missing.saturating_sub(block.in_flight)
    }

    /// The proactive margin goes out whenever the path has room and no new data is waiting.
    fn spare_repairs(&self, block: &SendBlock, path: &PathView) -> u64 {
        let deficit = self.deficit_on(block, path).max(self.drained_deficit(block, path));
        deficit.saturating_sub(self.repairs_wanted(block, path))
    }

    /// Every event comes with its path's view: its loss estimates are kept for the blocks that
    /// path carried.
    fn on_event(&mut self, _now: Instant, _event: RedundancyEvent, path: &PathView) {
        if let Some(l) = self.losses.get_mut(usize::from(path.path)) {
            *l = Some((path.loss, path.loss_long));
        }
    }

    /// Symbols sent and lost, for each path's runs of losses; settled and lost, for its early
    /// estimate.
    fn on_symbol(&mut self, _now: Instant, event: SymbolEvent) {
        match event {
            SymbolEvent::Sent { path, at, .. } => {
                if let Some(r) = self.runs.get_mut(usize::from(path)) {
                    r.on_sent(at);
                }
            }
            SymbolEvent::Lost { path, sent_at, .. } => {
                if let Some(r) = self.runs.get_mut(usize::from(path)) {
                    r.on_lost(sent_at);
                }
                if let Some(e) = self.early.get_mut(usize::from(path)) {
                    e.on_settled(true, self.config.early_symbols);
                }
            }
            SymbolEvent::Acked { path, .. } => {
                if let Some(e) = self.early.get_mut(usize::from(path)) {
                    e.on_settled(false, self.config.early_symbols);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
