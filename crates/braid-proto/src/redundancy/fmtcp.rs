//! FMTCP's redundancy (Cui et al., "FMTCP: A Fountain Code-based Multipath Transmission
//! Control Protocol", §V-A).
//!
//! Each block is coded with a fountain code (RaptorQ) and gets `l_b*` symbols beyond what the
//! receiver needs: the smallest `l` with
//!
//! δ_b(l) = Σ_{j>l} C(ŵ + l, j) p^j (1 − p)^(ŵ + l − j) ≤ δ̂        (Eq. 4)
//!
//! where p is the path's loss rate and ŵ the expected congestion window (in symbols): losses
//! earlier in a block are detected by the subflow's TCP loss detection and "supplemented" in
//! time, so only the last window's worth is at risk (§V-A). FMTCP sets δ̂ = 5 % (§VI-A).
//!
//! A block is δ̂-complete when what the receiver holds plus what is in flight covers its length
//! plus `l_b*`; it then gets no more symbols (Algorithm 1, line 8). A lost symbol is never sent
//! again: losing it takes it out of flight, the block is no longer δ̂-complete, and a *new*
//! symbol of the same block goes out instead.
//!
//! Symbols in flight on another subflow count with that subflow's loss rate (Algorithm 1's
//! δ̃_b is the block's failure probability over every subflow its symbols went on, each with
//! its own p_f): of the n_f symbols in flight there, Eq. (4) on (n_f, p_f) says how many may be
//! lost, and those are not counted as on their way. Without this, one symbol on a subflow
//! losing half its packets made its block look complete, and the block waited for that
//! subflow's timeout while the small receive buffer filled behind it.
//!
//! p_f is [`SubflowLoss`]: the share of the subflow's own symbols lost, with an estimate that is
//! right from the first few symbols (a subflow the allocation shuns sends few).

use std::cell::RefCell;
use std::collections::HashMap;

use super::{symbols_for, RedundancyController, RedundancyEvent};
use crate::blocks::SendBlock;
use crate::view::{PathView, SymbolEvent};
use crate::Instant;

/// Most paths a connection has.
const MAX_PATHS: usize = crate::wire::MAX_PATHS as usize;

/// δ̂ of FMTCP §VI-A.
pub const FMTCP_TARGET_FAILURE: f64 = 0.05;

/// [`SubflowLoss`]'s EWMA weights a symbol 1 / LOSS_SPAN (the connection's estimate's 1/64).
const LOSS_SPAN: u32 = 64;

/// FMTCP's p_f, each subflow's loss rate (Eqs. 4 and 8–10), from its own symbols: an EWMA of
/// weight 1/64 per symbol acknowledged or declared lost, and before that the mean of the
/// symbols resolved so far with two lossless ones assumed (losses / (n + 2)). The connection's
/// estimate starts at zero and moves 1/64 per packet: a subflow losing half its packets, sent
/// a handful of symbols because the allocation shuns it, read 5–6 % after 20 of them
/// (FMTCP Table II case 4), so Eq. (8) ranked it nearly as fast as a clean subflow and Eq. (4)
/// counted its symbols as arriving. Without a symbol resolved yet, the path's own estimate.
///
/// At most two symbols (`LOSSES_AT_ONCE`) of a path declared lost at one instant count: a probe
/// timeout presumes a whole flight lost at once (an outage, not the path's loss rate; the
/// connection's estimate leaves it out, as RFC 8899 black-hole detection counts it as two), and
/// a subflow judged from one would never be allocated a symbol again to correct it. A lone
/// symbol lost on a sparse subflow, found by its probe timeout, still counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct SubflowLoss {
    rate: [f64; MAX_PATHS],
    resolved: [u32; MAX_PATHS],
    /// The instant of each path's latest loss, and how many counted at it.
    losses_at: [(Instant, u32); MAX_PATHS],
}

/// Losses of one path declared at one instant that [`SubflowLoss`] counts.
const LOSSES_AT_ONCE: u32 = 2;

impl SubflowLoss {
    pub fn on_symbol(&mut self, now: Instant, event: SymbolEvent) {
        let (path, lost) = match event {
            SymbolEvent::Sent { .. } => return,
            SymbolEvent::Acked { path, .. } => (path, false),
            SymbolEvent::Lost { path, .. } => (path, true),
        };
        let i = usize::from(path);
        if lost {
            let Some(at) = self.losses_at.get_mut(i) else { return };
            if at.0 == now && at.1 >= LOSSES_AT_ONCE {
                return;
            }
            *at = if at.0 == now { (now, at.1 + 1) } else { (now, 1) };
        }
        let (Some(rate), Some(n)) = (self.rate.get_mut(i), self.resolved.get_mut(i)) else { return };
        *n = n.saturating_add(1);
        let weight = 1.0 / f64::from(n.saturating_add(2).min(LOSS_SPAN));
        *rate += weight * (f64::from(u8::from(lost)) - *rate);
    }

    /// Subflow `path`'s loss rate; `fallback` (the path's own estimate) until it has resolved a
    /// symbol.
    pub fn rate(&self, path: u8, fallback: f64) -> f64 {
        let i = usize::from(path);
        match self.resolved.get(i) {
            Some(&n) if n > 0 => self.rate[i],
            _ => fallback,
        }
    }
}

/// FMTCP's appended-symbols rule.
#[derive(Debug)]
pub struct Fmtcp {
    /// δ̂: the accepted probability that a block still cannot be decoded. Default 5 %.
    pub target_failure: f64,
    /// `l*` per (ŵ, p to 1/4096): the sum is asked for every open block on every packet.
    memo: RefCell<HashMap<(u64, u32), u64>>,
    /// Symbols of each block in flight on each path, and each path's latest loss estimate.
    flight: HashMap<u64, [u32; MAX_PATHS]>,
    /// Each path's latest view (its window, and its own loss estimate for a path that has not
    /// resolved a symbol yet).
    views: [Option<PathView>; MAX_PATHS],
    subflow_loss: SubflowLoss,
}

impl Default for Fmtcp {
    fn default() -> Self {
        Fmtcp::new(FMTCP_TARGET_FAILURE)
    }
}

impl Fmtcp {
    pub fn new(target_failure: f64) -> Fmtcp {
        Fmtcp {
            target_failure,
            memo: RefCell::new(HashMap::new()),
            flight: HashMap::new(),
            views: [None; MAX_PATHS],
            subflow_loss: SubflowLoss::default(),
        }
    }

    /// Of `block`'s symbols in flight on paths other than `path`, those Eq. (4) on each path's
    /// own count and loss rate says may be lost (at most all of them).
    fn doubtful_elsewhere(&self, block: u64, path: u8) -> u64 {
        let Some(flight) = self.flight.get(&block) else { return 0 };
        flight
            .iter()
            .enumerate()
            .filter(|&(f, &n)| f != usize::from(path) && n > 0)
            .map(|(f, &n)| self.appended(u64::from(n), self.loss_of(f as u8)).min(u64::from(n)))
            .sum()
    }

    /// The path carrying most of `block`'s symbols in flight (the lowest id of a tie), if any.
    fn carrier(&self, block: u64) -> Option<u8> {
        let flight = self.flight.get(&block)?;
        let (f, &n) = flight.iter().enumerate().rev().max_by_key(|&(_, &n)| n)?;
        (n > 0).then_some(f as u8)
    }

    /// p_f of path `path` ([`SubflowLoss`]).
    fn loss_of(&self, path: u8) -> f64 {
        let fallback = self.views.get(usize::from(path)).copied().flatten().map_or(0.0, |v| v.loss);
        self.subflow_loss.rate(path, fallback)
    }

    fn appended(&self, w: u64, p: f64) -> u64 {
        let bucket = (p.clamp(0.0, 0.9) * 4096.0).round() as u32;
        if let Some(&l) = self.memo.borrow().get(&(w, bucket)) {
            return l;
        }
        let l = appended_symbols(w, f64::from(bucket) / 4096.0, self.target_failure);
        let mut memo = self.memo.borrow_mut();
        if memo.len() > 65_536 {
            memo.clear();
        }
        memo.insert((w, bucket), l);
        l
    }
}

/// FMTCP Eq. (4): the probability that more than `l` of the `w + l` symbols sent are lost
/// (each independently with probability `p`), i.e. that the block cannot be decoded.
pub fn failure_probability(w: u64, l: u64, p: f64) -> f64 {
    let n = w + l;
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return if n > l { 1.0 } else { 0.0 };
    }
    // 1 − Σ_{j ≤ l} C(n, j) p^j (1 − p)^(n − j), each term in log space.
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_choose = 0.0;
    let mut decodable = 0.0;
    for j in 0..=l.min(n) {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        decodable += (ln_choose + j as f64 * ln_p + (n - j) as f64 * ln_q).exp();
    }
    (1.0 - decodable).max(0.0)
}

/// `l_b*` of FMTCP §V-A: the smallest `l` with δ_b(l) ≤ `delta` (Eq. 4), for an expected
/// window of `w` symbols and loss rate `p` (clamped to 90 %; bounded by 4w + 64). Exact up to
/// w = 64; beyond, where the exact search costs O(l²), the normal approximation of
/// [`symbols_for`] (within two symbols).
pub fn appended_symbols(w: u64, p: f64, delta: f64) -> u64 {
    let p = p.clamp(0.0, 0.9);
    if w > 64 {
        return symbols_for(w, p, delta).saturating_sub(w);
    }
    let mut l = 0;
    while failure_probability(w, l, p) > delta && l < 4 * w + 64 {
        l += 1;
    }
    l
}

impl RedundancyController for Fmtcp {
    fn name(&self) -> &'static str {
        "fmtcp"
    }

    /// New symbols `block` gets before it is δ̂-complete: its missing symbols plus `l_b*`,
    /// minus those in flight.
    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64 {
        if block.decoded || block.is_empty() || !block.all_sources_sent() {
            return 0;
        }
        let missing = (block.len() as u64).saturating_sub(block.known_dofs());
        if missing == 0 {
            return 0;
        }
        if !block.closed {
            // Still filling: a new symbol only for each one lost (a RaptorQ repair seals the
            // block, so appending early would cut it short).
            return missing.saturating_sub(block.in_flight);
        }
        // Eq. (4) for the subflow whose window the block is at risk on: the one carrying most of
        // its symbols in flight (else the asking path). The connection asks with the fastest
        // *ready* path's view; while the clean subflow's window is full that is another
        // subflow, whose loss rate (50 % in FMTCP Table II case 4) would append a dozen symbols
        // to a block sent on the clean one.
        let carrier = self.carrier(block.id).and_then(|f| self.views[usize::from(f)]).unwrap_or(*path);
        // ŵ: the expected window, in symbols, but no more than the block holds.
        let window = (carrier.window / carrier.mss.max(1)).max(1);
        let w = (block.len() as u64).min(window);
        let counted = block.in_flight.saturating_sub(self.doubtful_elsewhere(block.id, carrier.path));
        let p = self.subflow_loss.rate(carrier.path, carrier.loss);
        (missing + self.appended(w, p)).saturating_sub(counted)
    }

    fn on_event(&mut self, _now: Instant, _event: RedundancyEvent, path: &PathView) {
        if let Some(view) = self.views.get_mut(usize::from(path.path)) {
            *view = Some(*path);
        }
    }

    fn on_symbol(&mut self, now: Instant, event: SymbolEvent) {
        self.subflow_loss.on_symbol(now, event);
        match event {
            SymbolEvent::Sent { block, path, .. } => {
                if let Some(n) = self.flight.entry(block).or_default().get_mut(usize::from(path)) {
                    *n = n.saturating_add(1);
                }
            }
            SymbolEvent::Acked { block, path, .. } | SymbolEvent::Lost { block, path, .. } => {
                if let Some(flight) = self.flight.get_mut(&block) {
                    if let Some(n) = flight.get_mut(usize::from(path)) {
                        *n = n.saturating_sub(1);
                    }
                    if flight.iter().all(|&n| n == 0) {
                        self.flight.remove(&block);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use braid_fec::{CodeFamily, CodecConfig};

    use super::*;
    use crate::blocks::BlockSender;
    use crate::wire::Writer;

    /// A RaptorQ block of 6 source symbols, all sent, and the buffer they were written to.
    fn six_sources_sent() -> (BlockSender, Vec<u8>) {
        let config =
            CodecConfig { symbol_size: 16, max_block_len: 6, ..CodecConfig::new(CodeFamily::RaptorQ) };
        let mut tx = BlockSender::new(config, 4);
        for _ in 0..6 {
            tx.push_source(&[1; 16]).unwrap();
        }
        let mut out = Vec::new();
        while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        (tx, out)
    }

    /// A subflow of 100 ms with a 100-packet window and no loss.
    fn clean_subflow() -> PathView {
        PathView {
            path: 0,
            smoothed_rtt: Duration::from_millis(100),
            min_rtt: Duration::from_millis(100),
            loss: 0.0,
            loss_long: 0.0,
            window: 100_000,
            in_flight: 0,
            mss: 1000,
        }
    }

    #[test]
    fn eq_4_gives_the_papers_appended_symbols() {
        // FMTCP §VI-A: with δ̂ = 5 %, l* = 1 for loss rates 1–5 % and l* = 2 at 10 %. The paper
        // does not state ŵ; exactly one window fits all its numbers, ŵ = 6 symbols.
        let paper = |w: u64| {
            [0.01, 0.02, 0.03, 0.04, 0.05].iter().all(|&p| appended_symbols(w, p, 0.05) == 1)
                && appended_symbols(w, 0.10, 0.05) == 2
        };
        let fits: Vec<u64> = (1..200).filter(|&w| paper(w)).collect();
        assert_eq!(fits, [6]);
        // Worked by hand for ŵ = 6, p = 5 %: δ(0) = 1 − 0.95⁶ = 0.2649;
        // δ(1) = 1 − 0.95⁷ − 7·0.05·0.95⁶ = 0.0444 ≤ 5 %.
        assert!((failure_probability(6, 0, 0.05) - 0.264_908).abs() < 1e-5);
        assert!((failure_probability(6, 1, 0.05) - 0.044_381).abs() < 1e-5);
        // At 10 %: δ(1) = 0.1497 > 5 %, δ(2) = 0.0381.
        assert!(failure_probability(6, 1, 0.10) > 0.05);
        assert!(failure_probability(6, 2, 0.10) <= 0.05);
        assert_eq!(appended_symbols(6, 0.0, 0.05), 0);
        // More loss, or a bigger window at risk, never asks for fewer.
        assert!(appended_symbols(64, 0.2, 0.05) >= appended_symbols(64, 0.1, 0.05));
        assert!(appended_symbols(64, 0.05, 0.05) >= appended_symbols(6, 0.05, 0.05));
        // Large windows take the approximation, close to the exact sum, and stay cheap.
        let exact = (0..).find(|&l| failure_probability(200, l, 0.1) <= 0.05).unwrap();
        assert!(appended_symbols(200, 0.1, 0.05).abs_diff(exact) <= 2);
        assert!(appended_symbols(56_403, 0.9, 0.05) > 56_403 * 8);
    }

    #[test]
    fn a_block_gets_symbols_until_it_is_delta_complete_counting_in_flight() {
        let (mut tx, mut out) = six_sources_sent();
        // ŵ = min(6-symbol block, 100-packet window) = 6; p = 5 % → one appended symbol.
        let path = PathView { loss: 0.05, loss_long: 0.05, ..clean_subflow() };
        let fmtcp = Fmtcp::default();
        let wanted = |tx: &BlockSender| fmtcp.repairs_wanted(tx.blocks().next().unwrap(), &path);
        assert_eq!(wanted(&tx), 1);
        let sent = tx.write_repair(0, &mut Writer::new(&mut out)).unwrap().unwrap();
        assert!(sent.is_repair());
        // 6 + 1 in flight: δ̂-complete, no more symbols.
        assert_eq!(wanted(&tx), 0);
        // A loss takes one out of flight: a new symbol (not the lost one) is wanted.
        tx.on_symbol_lost(sent, false);
        assert_eq!(wanted(&tx), 1);
        // Acknowledgements move symbols from in flight to held: still complete.
        tx.write_repair(0, &mut Writer::new(&mut out)).unwrap().unwrap();
        for _ in 0..3 {
            tx.on_symbol_acked(0);
        }
        assert_eq!(wanted(&tx), 0);
        // Without loss nothing is appended.
        assert_eq!(fmtcp.repairs_wanted(tx.blocks().next().unwrap(), &PathView { loss: 0.0, ..path }), 0);
    }

    /// Algorithm 1's δ̃_b over several subflows: a symbol in flight on a subflow that loses half
    /// its packets is not counted as on its way (Eq. 4 on that subflow: one in flight at 50 %
    /// may well be lost), so the block wants one more on the clean subflow; a symbol on a clean
    /// second subflow counts.
    #[test]
    fn a_symbol_on_a_lossy_subflow_does_not_complete_its_block() {
        let (mut tx, _) = six_sources_sent();
        let clean = clean_subflow();
        let lossy = PathView { path: 1, loss: 0.5, loss_long: 0.5, ..clean };
        let at = Instant::ZERO;
        let sent = RedundancyEvent::Sent { repair: false, retransmission: false };
        let mut fmtcp = Fmtcp::default();
        fmtcp.on_event(at, sent, &clean);
        fmtcp.on_event(at, sent, &lossy);
        for i in 0..6 {
            fmtcp.on_symbol(at, SymbolEvent::Sent { block: 0, path: u8::from(i == 5), at });
        }
        let wanted = |f: &Fmtcp, tx: &BlockSender| f.repairs_wanted(tx.blocks().next().unwrap(), &clean);
        assert_eq!(wanted(&fmtcp, &tx), 1, "the symbol on the 50 % subflow is not counted");
        // It arrives: the block is complete.
        fmtcp.on_symbol(at, SymbolEvent::Acked { block: 0, path: 1, sent_at: at });
        tx.on_symbol_acked(0);
        assert_eq!(wanted(&fmtcp, &tx), 0);
        // The same symbol on a clean second subflow counts at once.
        let mut fmtcp = Fmtcp::default();
        fmtcp.on_event(at, sent, &clean);
        fmtcp.on_event(at, sent, &PathView { path: 1, ..clean });
        fmtcp.on_symbol(at, SymbolEvent::Sent { block: 0, path: 1, at });
        let (tx2, _) = six_sources_sent();
        assert_eq!(wanted(&fmtcp, &tx2), 0);
    }

    #[test]
    fn a_subflows_loss_rate_is_right_from_its_first_symbols() {
        let mut loss = SubflowLoss::default();
        assert_eq!(loss.rate(1, 0.01), 0.01, "nothing resolved: the path's own estimate");
        let at = Instant::ZERO;
        loss.on_symbol(at, SymbolEvent::Lost { block: 0, path: 1, sent_at: at });
        assert!((loss.rate(1, 0.01) - 1.0 / 3.0).abs() < 1e-9, "losses / (n + 2)");
        for i in 0..19u64 {
            let now = Instant::from_micros(1000 * (i + 1));
            let event = if i % 2 == 0 {
                SymbolEvent::Acked { block: 0, path: 1, sent_at: at }
            } else {
                SymbolEvent::Lost { block: 0, path: 1, sent_at: at }
            };
            loss.on_symbol(now, event);
        }
        // 10 of 20 lost: 10 / 22. An EWMA of weight 1/64 from zero would read about 0.07.
        assert!((loss.rate(1, 0.01) - 10.0 / 22.0).abs() < 1e-9);
        assert_eq!(loss.rate(0, 0.02), 0.02, "each path its own");
        // Past 62 symbols, a plain EWMA of weight 1/64.
        for _ in 0..200 {
            loss.on_symbol(at, SymbolEvent::Acked { block: 0, path: 1, sent_at: at });
        }
        let calm = loss.rate(1, 0.0);
        assert!(calm < 0.02);
        // A probe timeout presuming 100 symbols lost at one instant counts as two losses.
        let timeout = Instant::from_micros(5_000_000);
        for _ in 0..100 {
            loss.on_symbol(timeout, SymbolEvent::Lost { block: 0, path: 1, sent_at: at });
        }
        let w = 1.0 / 64.0;
        let two = 1.0 - (1.0 - calm) * (1.0 - w) * (1.0 - w);
        assert!((loss.rate(1, 0.0) - two).abs() < 1e-9, "{}", loss.rate(1, 0.0));
    }

    /// Eq. (4) for the subflow a block is at risk on: a block sent on the clean subflow keeps its
    /// clean margin when the connection asks with a lossy subflow's view (the fastest *ready*
    /// one while the clean subflow's window is full).
    #[test]
    fn the_margin_is_the_carrying_subflows() {
        let (tx, _) = six_sources_sent();
        let clean = clean_subflow();
        let lossy = PathView { path: 1, loss: 0.5, loss_long: 0.5, ..clean };
        let at = Instant::ZERO;
        let sent = RedundancyEvent::Sent { repair: false, retransmission: false };
        let mut fmtcp = Fmtcp::default();
        fmtcp.on_event(at, sent, &clean);
        fmtcp.on_event(at, sent, &lossy);
        for _ in 0..6 {
            fmtcp.on_symbol(at, SymbolEvent::Sent { block: 0, path: 0, at });
        }
        let block = tx.blocks().next().unwrap();
        assert_eq!(fmtcp.repairs_wanted(block, &clean), 0);
        assert_eq!(fmtcp.repairs_wanted(block, &lossy), 0, "not the asking subflow's 50 %");
        // Eq. (4) with the lossy subflow's own p and ŵ = 6 would append several.
        assert!(appended_symbols(6, 0.5, FMTCP_TARGET_FAILURE) > 5);
    }
}
