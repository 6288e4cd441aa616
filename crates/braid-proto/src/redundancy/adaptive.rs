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
use crate::blocks::{SendBlock, Tail};
use crate::view::{PathView, SymbolEvent};
use crate::wire::MAX_PATHS;
use crate::Instant;

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

/// FMTCP Eq. (4) inverted: the smallest n with P[Binomial(n, 1 − p) ≥ r] ≥ 1 − δ. Exact
/// for small r; for larger r (called per block per packet, so it must be cheap) the normal
/// approximation n(1 − p) − z·√(n p (1 − p)) ≥ r, solved for √n.
pub fn symbols_for(r: u64, p: f64, delta: f64) -> u64 {
    let p = p.clamp(0.0, 0.9);
    if p <= 0.0 {
        return r;
    }
    // The connection asks again for the same blocks until an ACK moves p: remember the latest
    // answers, keyed by the exact arguments (so the answer is the same as computing it).
    thread_local! {
        static RECENT: std::cell::RefCell<[(u64, u64, u64, u64); 64]> =
            const { std::cell::RefCell::new([(0, 0, 0, 0); 64]) };
    }
    let (p_bits, delta_bits) = (p.to_bits(), delta.to_bits());
    let slot = ((r ^ p_bits ^ p_bits >> 29).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize;
    let hit = RECENT.with(|c| {
        let e = c.borrow()[slot];
        // n ≥ r > 0 in a filled slot, so a zero n marks an empty one.
        (e.0 == r && e.1 == p_bits && e.2 == delta_bits && e.3 != 0).then_some(e.3)
    });
    if let Some(n) = hit {
        return n;
    }
    let n = symbols_for_uncached(r, p, delta);
    RECENT.with(|c| c.borrow_mut()[slot] = (r, p_bits, delta_bits, n));
    n
}

fn symbols_for_uncached(r: u64, p: f64, delta: f64) -> u64 {
    if r > 16 {
        let q = 1.0 - p;
        let z = normal_quantile(1.0 - delta.clamp(1e-9, 1.0 - 1e-9));
        let b = z * (p * q).sqrt();
        let s = (b + (b * b + 4.0 * q * r as f64).sqrt()) / (2.0 * q);
        return ((s * s).ceil() as u64).max(r);
    }
    // The exact sum costs a few hundred exp/ln calls and is asked for every open block on every
    // packet, so answers are memoized per (r, p to 1/4096, δ).
    thread_local! {
        static MEMO: std::cell::RefCell<std::collections::HashMap<(u64, u32, u64), u64, MemoHasher>> =
            const { std::cell::RefCell::new(std::collections::HashMap::with_hasher(MemoHasher::new())) };
    }
    let p_bucket = (p * 4096.0).round() as u32;
    let key = (r, p_bucket, delta.to_bits());
    if let Some(n) = MEMO.with(|m| m.borrow().get(&key).copied()) {
        return n;
    }
    let p = f64::from(p_bucket) / 4096.0;
    let mut n = r;
    while success_probability(n, r, 1.0 - p) < 1.0 - delta && n < 4 * r + 16 {
        n += 1;
    }
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() > 100_000 {
            m.clear();
        }
        m.insert(key, n);
    });
    n
}

/// The memo's hasher: its keys are a few small integers from this module, not peer input, so a
/// multiply-rotate mix replaces SipHash (which cost more than the lookups it guarded).
type MemoHasher = std::hash::BuildHasherDefault<MixHasher>;

#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

/// Φ⁻¹(x), Abramowitz & Stegun 26.2.23 (absolute error < 4.5e-4).
fn normal_quantile(x: f64) -> f64 {
    let tail = |v: f64| {
        let t = (-2.0 * v.ln()).sqrt();
        t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t.powi(3))
    };
    if x >= 0.5 {
        tail(1.0 - x)
    } else {
        -tail(x)
    }
}

/// P[Binomial(n, q) ≥ r], summed in log space.
fn success_probability(n: u64, r: u64, q: f64) -> f64 {
    let (ln_q, ln_p) = (q.ln(), (1.0 - q).ln());
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut below = 0.0;
    for j in 0..r.min(n + 1) {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        below += (ln_choose + j as f64 * ln_q + (n - j) as f64 * ln_p).exp();
    }
    1.0 - below
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(loss: f64) -> PathView {
        let rtt = std::time::Duration::from_millis(100);
        PathView {
            path: 0,
            smoothed_rtt: rtt,
            min_rtt: rtt,
            loss,
            loss_long: loss,
            window: 100_000,
            in_flight: 0,
            mss: 1280,
        }
    }

    /// Known losses go out ahead of new data, the δ̂ margin only as spare capacity, and each
    /// loss of the block's symbols uses up a unit of margin instead of adding to it.
    #[test]
    fn margin_is_spent_by_losses_and_losses_beyond_it_are_replaced() {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 4);
        for _ in 0..64 {
            tx.push_source(&[7; 16]).unwrap();
        }
        let mut sent = Vec::new();
        let mut out = Vec::new();
        while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
            sent.push(s);
        }
        let r = Adaptive::new(Redundancy::default());
        let (v, block) = (view(0.05), |tx: &BlockSender| tx.blocks().next().map(|b| (b.in_flight, b.lost)));
        let b = tx.blocks().next().unwrap();
        // 64 / 0.95 = 67.4 → 68 symbols: a margin of 4, nothing known lost yet.
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 4));
        // Latency first: the same margin, ahead of new data.
        let ahead = Adaptive::new(Redundancy { margin_ahead_of_data: true, ..Redundancy::default() });
        assert_eq!((ahead.repairs_wanted(b, &v), ahead.spare_repairs(b, &v)), (4, 0));
        for s in &sent[..3] {
            tx.on_symbol_lost(*s, false);
        }
        assert_eq!(block(&tx), Some((61, 3)));
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (3, 1));
        for s in &sent[3..6] {
            tx.on_symbol_lost(*s, false);
        }
        let b = tx.blocks().next().unwrap();
        // Six lost: the margin is gone, the six are replaced one for one.
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (6, 0));
        // No loss estimate: no margin.
        assert_eq!(r.spare_repairs(b, &view(0.0)), 0);
    }

    /// A block at an app-idle point (the end of a video frame) gets the tail δ̂'s margin, ahead
    /// of new data, and a reactive round with its own margin; the same block in a bulk transfer
    /// gets the expected-loss margin as spare and losses replaced one for one.
    #[test]
    fn app_idle_tail_gets_its_margin_at_once() {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config.clone(), 4);
        // A 14-symbol frame (17 kB at 1200-byte symbols) cut, the application idle, all sent.
        for _ in 0..14 {
            tx.push_source(&[7; 16]).unwrap();
        }
        let (r, v) = (Adaptive::new(Redundancy::default()), view(0.02));
        let mut bulk = BlockSender::new(config, 4);
        for _ in 0..14 {
            bulk.push_source(&[7; 16]).unwrap();
        }
        bulk.close_block();
        tx.on_app_idle();
        let mut out = Vec::new();
        let mut sent = Vec::new();
        while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
            sent.push(s);
        }
        let mut bulk_sent = Vec::new();
        while let Some(s) = bulk.write_next_source(&mut Writer::new(&mut out)) {
            bulk_sent.push(s);
        }
        // Without the mark, δ̂ = 0.5: 14 of 14 arrive with 0.98^14 = 0.75, no margin at all.
        let b = bulk.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 0));
        // A block already all sent when the application idles is not the burst's tail.
        bulk.on_app_idle();
        assert_eq!(bulk.blocks().next().unwrap().tail, None);
        let b = tx.blocks().next().unwrap();
        assert!(b.tail == Some(Tail::AppIdle) && b.closed);
        // The idle tail's δ̂ = 0.35 asks for no margin for 14 symbols either (0.75 ≥ 0.65; an
        // I-frame's 60 get two), but it would be sent ahead of data.
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 0));
        assert_eq!(symbols_for(60, 0.02, 0.35), 62);
        // No loss estimate, no margin (the target: repair overhead ≤ 1 % at 0 % loss).
        assert_eq!(r.repairs_wanted(b, &view(0.0)), 0);
        // 13 acknowledged, one lost: the reactive round sends two (δ̂ 0.01: one arrives with
        // 0.98, one of two with 0.9996), at once; the same loss in bulk is replaced by one.
        for s in &sent[..13] {
            tx.on_symbol_acked(s.block);
        }
        tx.on_symbol_lost(sent[13], false);
        assert_eq!(symbols_for(1, 0.02, 0.01), 2);
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (2, 0));
        for s in &bulk_sent[..13] {
            bulk.on_symbol_acked(s.block);
        }
        bulk.on_symbol_lost(bulk_sent[13], false);
        let b = bulk.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (1, 0));
    }

    /// A tail's margin is sized with the loss estimates its path had when its last source went
    /// out: a later rise (a loss of an earlier frame declared) does not add a margin that would
    /// leave long after the frame, a later fall still shrinks it, and the reactive round still
    /// uses the estimate of the moment.
    #[test]
    fn a_tail_margin_does_not_grow_once_its_sources_are_out() {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 4);
        for _ in 0..14 {
            tx.push_source(&[7; 16]).unwrap();
        }
        tx.on_app_idle();
        let mut out = Vec::new();
        let mut sent = Vec::new();
        while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
            sent.push(s);
        }
        let r = Adaptive::new(Redundancy::default());
        let (low, high) = (view(0.02), view(0.06));
        // 14 symbols at δ̂ 0.35: none at 2 % (0.98^14 = 0.75), one at 6 % (0.94^14 = 0.42).
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &low), r.repairs_wanted(b, &high)), (0, 1));
        // Its last source went out at 2 %: the rise to 6 % adds nothing.
        tx.fix_margin_loss(0, (0.02, 0.02));
        let b = tx.blocks().next().unwrap();
        assert_eq!(b.margin_loss, Some((0.02, 0.02)));
        assert_eq!(r.repairs_wanted(b, &high), 0);
        // Fixed once: a later call does not move it.
        tx.fix_margin_loss(0, (0.06, 0.06));
        assert_eq!(tx.blocks().next().unwrap().margin_loss, Some((0.02, 0.02)));
        // One source lost: the reactive round is sized at the estimate of the moment (6 %: one
        // replacement arrives with 0.94, one of two with 0.996).
        for s in &sent[..13] {
            tx.on_symbol_acked(s.block);
        }
        tx.on_symbol_lost(sent[13], false);
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &high), r.repairs_wanted(b, &low)), (2, 2));
        // Fixed at 6 % and asked at 2 %: the lower estimate sizes the margin.
        let mut tx =
            BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
        for _ in 0..14 {
            tx.push_source(&[7; 16]).unwrap();
        }
        tx.on_app_idle();
        while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        tx.fix_margin_loss(0, (0.06, 0.06));
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &high), r.repairs_wanted(b, &low)), (1, 0));
        // A request's tail is not fixed (it waited longer beside bulk data), nor a block that is
        // not a tail (a bulk block's margin is spare capacity, sized as asked).
        let mut req =
            BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
        req.push_source(&[7; 16]).unwrap();
        req.close_block_as_tail();
        while req.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        req.fix_margin_loss(0, (0.02, 0.02));
        assert_eq!(req.blocks().next().unwrap().margin_loss, None);
        let mut bulk =
            BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
        bulk.push_source(&[7; 16]).unwrap();
        bulk.close_block();
        while bulk.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        bulk.fix_margin_loss(0, (0.02, 0.02));
        assert_eq!(bulk.blocks().next().unwrap().margin_loss, None);
    }

    /// A request's tail beside bulk data keeps the small δ̂ (0.01): its 14 symbols get two
    /// repairs ahead of data, where an app-idle tail of the same length gets none.
    #[test]
    fn request_tail_keeps_the_small_delta() {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 4);
        for _ in 0..14 {
            tx.push_source(&[7; 16]).unwrap();
        }
        tx.close_block_as_tail();
        let mut out = Vec::new();
        while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        let b = tx.blocks().next().unwrap();
        assert_eq!(b.tail, Some(Tail::Request));
        // δ̂ = 0.01: 15 symbols succeed with 0.965, 16 with 0.996.
        assert_eq!(symbols_for(14, 0.02, 0.01), 16);
        let (r, v) = (Adaptive::new(Redundancy::default()), view(0.02));
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (2, 0));
    }

    /// At the end of a long burst (a bulk transfer's end) the blocks in flight get repair in
    /// spare capacity, sized for the path's runs of losses; a loss declared is replaced with the
    /// margin kept; a short burst's block (a video frame) is not marked.
    #[test]
    fn a_bulk_transfers_end_gets_repair_for_runs_of_losses() {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config.clone(), 8);
        for _ in 0..4 * 64 {
            tx.push_source(&[7; 16]).unwrap();
        }
        let mut out = Vec::new();
        let mut sent = Vec::new();
        while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
            sent.push(s);
        }
        let (mut r, v) = (Adaptive::new(Redundancy::default()), view(0.05));
        let b = tx.blocks().next().unwrap();
        // Before the application idles: the bulk rule (δ̂ 0.5, spare), nothing more.
        assert_eq!(r.spare_repairs(b, &v), Redundancy::default().deficit(b, 0.05));
        tx.on_app_idle();
        assert!(tx.blocks().all(|b| b.drained));
        // Independent losses: the δ̂ 0.01 rule over the 64 in flight, in spare capacity only.
        let b = tx.blocks().next().unwrap();
        let independent = symbols_for(64, 0.05, 0.01) - 64;
        assert!(independent > Redundancy::default().deficit(b, 0.05));
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, independent));
        // Runs of four measured on the path: 16 units of four, 20 of them in flight at δ̂ 0.01.
        let at = Instant::from_micros;
        for i in 0..100 {
            r.on_symbol(Instant::ZERO, SymbolEvent::Sent { block: 0, path: 0, at: at(i * 600) });
        }
        for start in [10, 50, 90] {
            for i in start..start + 4 {
                r.on_symbol(Instant::ZERO, SymbolEvent::Lost { block: 0, path: 0, sent_at: at(i * 600) });
            }
        }
        assert_eq!(symbols_for(16, 0.05, 0.01), 20);
        assert_eq!(r.spare_repairs(b, &v), 16);
        // On a path with no loss estimate: none.
        assert_eq!(r.spare_repairs(b, &view(0.0)), 0);
        // One of its sources declared lost: replaced at once, and the margin still wanted.
        tx.on_symbol_lost(sent[0], false);
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (1, 16));
        // A 14-source frame: its block is an app-idle tail, not drained.
        let mut frame = BlockSender::new(config, 8);
        for _ in 0..14 {
            frame.push_source(&[7; 16]).unwrap();
        }
        frame.on_app_idle();
        let b = frame.blocks().next().unwrap();
        assert!(b.tail == Some(Tail::AppIdle) && !b.drained);
    }

    /// 64 sources of one closed block, all sent, the i-th on path `on(i)`.
    fn sent_across(on: impl Fn(usize) -> u8) -> crate::blocks::BlockSender {
        use crate::blocks::BlockSender;
        use crate::wire::Writer;
        use braid_fec::{CodeFamily, CodecConfig};
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 4);
        for _ in 0..64 {
            tx.push_source(&[7; 16]).unwrap();
        }
        for i in 0..64 {
            tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
            tx.on_sent_on(0, on(i));
        }
        tx
    }

    /// Across paths each symbol counts by the loss of the path it crossed (for a margin sent
    /// ahead of data): a block sent over the clean path is not given the lossy asking path's
    /// margin, one sent over the lossy path gets its expected loss from the clean one at once,
    /// and the margin left does not grow back as the clean path's symbols are acknowledged.
    #[test]
    fn symbols_count_by_the_loss_of_the_path_they_crossed() {
        let (clean, lossy) = (view(0.0), PathView { path: 1, ..view(0.2) });
        let ahead = Redundancy { margin_ahead_of_data: true, ..Redundancy::default() };
        let (mut r, mut spare) = (Adaptive::new(ahead), Adaptive::new(Redundancy::default()));
        let sent = RedundancyEvent::Sent { repair: false, retransmission: false };
        for v in [&clean, &lossy] {
            r.on_event(Instant::ZERO, sent, v);
            spare.on_event(Instant::ZERO, sent, v);
        }
        let m = symbols_for(64, 0.2, 0.5) - 64;
        assert!((16..=17).contains(&m), "64 / 0.8 = 80 symbols: {m}");
        // All on the lossy path: the one-path rule, whichever path asks for the margin's repairs
        // (from the clean path, its 12.8 expected losses, rounded up).
        let tx = sent_across(|_| 1);
        let b = tx.blocks().next().unwrap();
        assert_eq!(r.repairs_wanted(b, &lossy), m);
        assert_eq!(r.repairs_wanted(b, &lossy), Redundancy::default().deficit(b, 0.2));
        assert_eq!(r.repairs_wanted(b, &clean), 13);
        assert_eq!(Redundancy::default().deficit(b, 0.0), 0, "the asking path's rule: none");
        // All on the clean path: asked from the lossy one, the 16 it expects lost are not.
        let tx = sent_across(|_| 0);
        let b = tx.blocks().next().unwrap();
        assert_eq!((r.repairs_wanted(b, &lossy), r.repairs_wanted(b, &clean)), (m - 16, 0));
        // Sent only as spare capacity, the margin keeps the asking path's rule.
        assert_eq!(spare.spare_repairs(b, &lossy), m);
        // Half on each, asked from the lossy path: 32 × 0.2 / 0.8 = 8 fewer than its own rule.
        let mut tx = sent_across(|i| (i % 2) as u8);
        let b = tx.blocks().next().unwrap();
        assert_eq!(r.repairs_wanted(b, &lossy), m - 8);
        // The clean path's 32 acknowledged: what is missing and what is in flight fall alike.
        for _ in 0..32 {
            tx.on_symbol_acked(0);
        }
        let b = tx.blocks().next().unwrap();
        assert_eq!((b.in_flight, b.known_dofs()), (32, 32));
        assert_eq!(r.repairs_wanted(b, &lossy), m - 8);
        // A path the controller never heard of counts as the asking one.
        let fresh = Adaptive::new(ahead);
        assert_eq!(fresh.repairs_wanted(b, &lossy), Redundancy::default().deficit(b, 0.2));
    }

    #[test]
    fn matches_fmtcp_margins() {
        // Worked by hand: r = 10, δ̂ = 5%. p = 1%: 10 of 10 arrive with 0.904, 10 of 11 with
        // 0.995 → 11. p = 5%: 11 gives 0.898, 12 gives 0.981 → 12. p = 10%: 12 gives 0.889,
        // 13 gives 0.966 → 13.
        assert_eq!(symbols_for(10, 0.01, 0.05), 11);
        assert_eq!(symbols_for(10, 0.05, 0.05), 12);
        assert_eq!(symbols_for(10, 0.10, 0.05), 13);
        assert_eq!(symbols_for(5, 0.0, 0.01), 5);
        // Monotone in loss.
        assert!(symbols_for(64, 0.2, 0.01) > symbols_for(64, 0.05, 0.01));
        assert!((success_probability(3, 3, 0.5) - 0.125).abs() < 1e-12);
        // The normal approximation for large r stays within a symbol or two of the exact rule.
        for (r, p, d) in [(64u64, 0.05, 0.05), (64, 0.2, 0.01), (40, 0.1, 0.5)] {
            let exact = {
                let mut n = r;
                while success_probability(n, r, 1.0 - p) < 1.0 - d {
                    n += 1;
                }
                n
            };
            let approx = symbols_for(r, p, d);
            assert!(approx.abs_diff(exact) <= 2, "r {r} p {p} δ {d}: exact {exact}, approx {approx}");
        }
        assert!((normal_quantile(0.975) - 1.96).abs() < 1e-3);
    }
}
