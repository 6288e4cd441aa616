//! CTCP's block scheduling over several paths (Kim, Médard et al., "Network Coded TCP
//! (CTCP)", §III-E, Algorithm 4).
//!
//! For the path i with a free token, Algorithm 4 estimates from every path k's packets in
//! flight (each arriving with probability 1 − p_k, Algorithm 1's loss estimate):
//!
//! - `thru` = Σ_k (1 − p_k) · inflight_k / RTT_k, the connection's delivery rate;
//! - `sent` = Σ_k (1 − p_k) · inflight_k, the deliveries already on their way;
//! - `cof[b]` = Σ_k (1 − p_k) · onfly_k[b], the deliveries on their way for block b, counting
//!   only packets sent less than 1.5 RTT_k ago (§III-E: older ones "are likely to be lost or
//!   significantly delayed"; the algorithm's listing prints the comparison the other way round,
//!   the text and Algorithm 3 are followed here).
//!
//! The current block (the lowest undecoded one) is served on path i only if what the other
//! packets bring before a packet sent now on i arrives falls short of the dofs it lacks — a slow
//! path leaves the current block to faster ones. The listing writes that as
//! `thru · RTT_i − sent + cof[cur] < currdof`; braid implements its intent instead
//! (DEVIATIONS.md): the deliveries a faster path k can still add before i's packet lands,
//! `Σ_k (1 − p_k) · rate_k · (RTT_i − RTT_k)` over the paths faster than i, plus cof[cur]. As
//! printed, thru · RTT_i − sent is the sum of
//! (1 − p_k) · inflight_k · (RTT_i / RTT_k − 1) over *every* path, never positive on the fastest
//! one, so the fastest path fed the current block about a slow path's flight beyond its need
//! (58–60 % repair in the demo's two paths). A later block b is served while cof[b] is below
//! what it lacks. If no block qualifies the token is kept unused rather than spent on redundancy
//! the receiver will not need.
//!
//! Within a block, unsent source symbols go first (the code is systematic, §III-D), then random
//! linear combinations of the whole block. braid's receiver acknowledges every packet, so a
//! later block's lack is its length minus what was acknowledged (CTCP's ACK reports only the
//! current block and Algorithm 4 uses `blksize` there).

use std::collections::{BTreeMap, VecDeque};

use super::{by_key, BlockView, PathInfo, Pick, SchedView, Scheduler};
use crate::view::SymbolEvent;
use crate::Instant;

/// Packets older than this many RTTs are not counted on (CTCP §III-E).
pub const FRESH_RTTS: f64 = 1.5;

/// CTCP Algorithm 4.
#[derive(Debug, Clone, Default)]
pub struct CtcpBlocks {
    /// Per (block, path), the send times of its symbols in flight, oldest first.
    in_flight: BTreeMap<(u64, u8), VecDeque<Instant>>,
}

impl CtcpBlocks {
    /// Algorithm 4's onfly_k[b]: symbols of `block` in flight on `path`, sent less than
    /// 1.5 RTT ago.
    fn fresh(&self, now: Instant, block: u64, path: &PathInfo) -> u64 {
        let horizon = path.view.smoothed_rtt.mul_f64(FRESH_RTTS);
        self.in_flight.get(&(block, path.path as u8)).map_or(0, |sent| {
            let stale = sent.partition_point(|&at| now - at >= horizon);
            (sent.len() - stale) as u64
        })
    }

    /// The block Algorithm 4 serves on `pending`, if any.
    fn serve(&self, view: &SchedView<'_>, pending: &PathInfo) -> Option<u64> {
        let rtt_i = pending.view.smoothed_rtt.as_secs_f64();
        // What the faster paths can still deliver before a packet sent now on `pending` does.
        let mut sooner = 0.0;
        for k in view.paths.iter().filter(|k| k.path != pending.path) {
            let delivery = 1.0 - k.view.loss.clamp(0.0, 0.99);
            let flying = (k.view.in_flight / k.view.mss.max(1)) as f64;
            let rtt_k = k.view.smoothed_rtt.as_secs_f64().max(1e-6);
            sooner += delivery * flying / rtt_k * (rtt_i - rtt_k).max(0.0);
        }
        let cof = |b: &BlockView| -> f64 {
            view.paths
                .iter()
                .map(|k| (1.0 - k.view.loss.clamp(0.0, 0.99)) * self.fresh(view.now, b.id, k) as f64)
                .sum()
        };
        // A retransmitting mode's queued retransmissions go first (they are not CTCP's).
        if let Some(b) = view.blocks.iter().find(|b| !b.decoded && b.retransmissions > 0) {
            return Some(b.id);
        }
        let mut blocks = view.blocks.iter().filter(|b| !b.decoded && b.len > 0);
        let current = blocks.next()?;
        if servable(current) && sooner + cof(current) < current.missing() as f64 {
            return Some(current.id);
        }
        blocks.find(|b| servable(b) && cof(b) < b.missing() as f64).map(|b| b.id)
    }
}

/// Whether sending from `b` can help: an unsent source, or a repair of a closed block (a block
/// still filling gets a repair only for a symbol known lost, so its own sources go first).
fn servable(b: &BlockView) -> bool {
    b.unsent > 0 || (b.missing() > 0 && (b.closed || b.in_flight < b.missing()))
}

impl Scheduler for CtcpBlocks {
    fn name(&self) -> &'static str {
        "ctcp"
    }

    fn wants_blocks(&self) -> bool {
        true
    }

    /// Each ready path in turn, fastest first, asks Algorithm 4 for a block.
    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        by_key(view, |p| p.view.smoothed_rtt)
            .find_map(|p| self.serve(view, p).map(|b| Pick { path: p.path, block: Some(b) }))
    }

    fn on_symbol(&mut self, _now: Instant, event: SymbolEvent) {
        match event {
            SymbolEvent::Sent { block, path, at } => {
                self.in_flight.entry((block, path)).or_default().push_back(at);
            }
            SymbolEvent::Acked { block, path, sent_at } | SymbolEvent::Lost { block, path, sent_at } => {
                if let Some(sent) = self.in_flight.get_mut(&(block, path)) {
                    if let Some(i) = sent.iter().position(|&at| at == sent_at) {
                        sent.remove(i);
                    }
                    if sent.is_empty() {
                        self.in_flight.remove(&(block, path));
                    }
                }
            }
        }
    }

    /// The next time after `now` a counted symbol turns 1.5 RTT old.
    fn poll_timeout(&self, now: Instant, paths: &[PathInfo]) -> Option<Instant> {
        self.in_flight
            .iter()
            .filter_map(|(&(_, path), sent)| {
                // `paths` holds only the paths that can send, not indexed by id.
                let info = paths.iter().find(|p| p.path == usize::from(path))?;
                let horizon = info.view.smoothed_rtt.mul_f64(FRESH_RTTS);
                let i = sent.partition_point(|&at| at + horizon <= now);
                sent.get(i).map(|&at| at + horizon)
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{block, path};

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// `n` symbols of `block` sent on `path` at `at` ms.
    fn sent(ctcp: &mut CtcpBlocks, block: u64, path: u8, at: u64, n: usize) {
        for _ in 0..n {
            ctcp.on_symbol(ms(at), SymbolEvent::Sent { block, path, at: ms(at) });
        }
    }

    #[test]
    fn algorithm_4_leaves_the_current_block_to_the_faster_path() {
        // 10 packets in flight on each path (100 and 500 ms RTT).
        // Block 0 (current) lacks 20 dofs and has the fast path's 10 in flight (cof = 10);
        // block 1 has the slow path's 10 in flight and 54 sources unsent.
        let mut ctcp = CtcpBlocks::default();
        sent(&mut ctcp, 0, 0, 0, 10);
        sent(&mut ctcp, 1, 1, 0, 10);
        let fast = path(0, 100, 0.0, 100, 10);
        let slow = path(1, 500, 0.0, 100, 10);
        let current = BlockView { known_dofs: 44, ..block(0, 64, 0, 10) };
        let blocks = [current, block(1, 64, 54, 10)];
        let pick = |paths: &[PathInfo]| ctcp.pick(&SchedView { now: ms(10), paths, blocks: &blocks });
        // Fast: no path is faster, 0 + 10 < 20: the current block.
        assert_eq!(pick(&[fast, slow]), Some(Pick { path: 0, block: Some(0) }));
        // Slow: the fast path delivers 10/0.1 s × (0.5 − 0.1) s = 40 first; 40 + 10 ≥ 20: the
        // faster path will do; block 1 (cof 10 < 64).
        let busy = PathInfo { ready: false, ..fast };
        assert_eq!(pick(&[busy, slow]), Some(Pick { path: 1, block: Some(1) }));
    }

    #[test]
    fn algorithm_4_keeps_the_token_when_nothing_is_short() {
        // One path, 10 packets of block 0 in flight, block 0 lacks 10: cof = 10, not < 10 — the
        // token is kept.
        let mut ctcp = CtcpBlocks::default();
        sent(&mut ctcp, 0, 0, 0, 10);
        let blocks = [BlockView { known_dofs: 54, ..block(0, 64, 0, 10) }];
        let clean = [path(0, 100, 0.0, 100, 10)];
        assert_eq!(ctcp.pick(&SchedView { now: ms(10), paths: &clean, blocks: &blocks }), None);
        // With 10 % loss each counts for 0.9: 9 < 10, the block is short.
        let lossy = [path(0, 100, 0.1, 100, 10)];
        let pick = ctcp.pick(&SchedView { now: ms(10), paths: &lossy, blocks: &blocks });
        assert_eq!(pick, Some(Pick { path: 0, block: Some(0) }));
        // Packets older than 1.5 RTT are not counted on: at 150 ms the block is short again, and
        // the connection is asked to wake up then.
        assert_eq!(ctcp.poll_timeout(ms(10), &clean), Some(ms(150)));
        assert_eq!(ctcp.fresh(ms(150), 0, &clean[0]), 0);
        let pick = ctcp.pick(&SchedView { now: ms(150), paths: &clean, blocks: &blocks });
        assert_eq!(pick, Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(ctcp.poll_timeout(ms(150), &clean), None);
        // Acknowledged or lost packets leave the count.
        ctcp.on_symbol(ms(20), SymbolEvent::Acked { block: 0, path: 0, sent_at: ms(0) });
        ctcp.on_symbol(ms(20), SymbolEvent::Lost { block: 0, path: 0, sent_at: ms(0) });
        assert_eq!(ctcp.fresh(ms(20), 0, &clean[0]), 8);
    }

    #[test]
    fn wake_up_uses_the_rtt_of_the_path_by_id_not_by_position() {
        // Path 0 failed and is not offered: path 1 (100 ms) is the first entry of the view.
        let mut ctcp = CtcpBlocks::default();
        sent(&mut ctcp, 0, 1, 0, 4);
        let only_path_1 = [path(1, 100, 0.0, 100, 4)];
        assert_eq!(ctcp.poll_timeout(ms(10), &only_path_1), Some(ms(150)));
    }

    #[test]
    fn queued_retransmissions_go_first() {
        let ctcp = CtcpBlocks::default();
        let blocks = [block(0, 64, 10, 0), BlockView { retransmissions: 1, ..block(1, 64, 0, 60) }];
        let paths = [path(0, 100, 0.0, 100, 0)];
        let pick = ctcp.pick(&SchedView { now: ms(0), paths: &paths, blocks: &blocks });
        assert_eq!(pick, Some(Pick { path: 0, block: Some(1) }));
    }
}
