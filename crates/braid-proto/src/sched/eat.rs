//! FMTCP's data allocation (Cui et al., "FMTCP: A Fountain Code-based Multipath Transmission
//! Control Protocol", §V-B, Algorithm 1 with Eqs. 8–10).
//!
//! For each subflow f with loss rate p_f, smoothed RTT RTT_f and retransmission timeout RTO_f:
//!
//! - EDT_f = p_f · RTO_f / (1 − p_f) + RTT_f / 2, the expected delivery time      (Eq. 8)
//! - RT_f  = (1 − p_f) · RTT_f + p_f · RTO_f, the expected response time          (Eq. 9)
//! - EAT_f = EDT_f if the window has room, else EDT_f + RT_f − τ_f, with τ_f the time since the
//!   oldest unacknowledged packet was sent                                          (Eq. 10)
//!
//! When subflow f_p may send, Algorithm 1 virtually hands packets, in block order, to the
//! subflow with the least EAT until f_p's turn comes; f_p sends from the block its packet was
//! given. A block gets no more symbols once it is δ̂-complete (line 8: the redundancy
//! controller's rule, FMTCP Eq. 4 in the `fmtcp` mode — [`BlockView::needed`] is zero). A lost
//! symbol makes its block short again, so its replacement goes to the subflow with the least
//! EAT, which is how FMTCP "supplements" losses on the fastest path. If the faster subflows
//! will carry everything the open blocks need before f_p's packet could arrive, f_p keeps its
//! opportunity unused.
//!
//! Algorithm 1's line 13 moves a subflow's EAT to EDT + RT − τ after one virtual packet; read
//! literally, a subflow with room takes one packet and then a constant EAT forever (and the
//! loop need not end). Here the k-th virtual packet of subflow f is counted as Eq. (10) would
//! see it once the k packets before it are in flight: EDT_f while they fit in the window; past
//! the window each waits for one more ACK (Definition 5: the time until the allocated packet is
//! delivered), the first at RT_f − τ_f, then one every RT_f / window as the ACK clock returns
//! the window over one RT (docs/DEVIATIONS.md). The allocation is computed in closed form (how
//! many packets each other subflow takes before f_p's EAT), not packet by packet.

use super::{block_after, by_key, BlockView, PathInfo, Pick, SchedView, Scheduler};
use crate::redundancy::SubflowLoss;
use crate::view::SymbolEvent;
use crate::Instant;

/// FMTCP Algorithm 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpectedArrival {
    /// p_f of Eqs. (8) and (9), from each subflow's own symbols (the `fmtcp` mode's estimate).
    loss: SubflowLoss,
}

/// Loss rates are capped so that Eq. (8) stays finite.
const MAX_LOSS: f64 = 0.99;

/// FMTCP Eq. (8), in seconds.
pub fn expected_delivery_time(p: &PathInfo) -> f64 {
    let loss = p.view.loss.clamp(0.0, MAX_LOSS);
    loss * p.rto.as_secs_f64() / (1.0 - loss) + p.view.smoothed_rtt.as_secs_f64() / 2.0
}

/// FMTCP Eq. (9), in seconds.
pub fn response_time(p: &PathInfo) -> f64 {
    let loss = p.view.loss.clamp(0.0, MAX_LOSS);
    (1.0 - loss) * p.view.smoothed_rtt.as_secs_f64() + loss * p.rto.as_secs_f64()
}

/// FMTCP Eq. (10), in seconds.
pub fn expected_arrival_time(p: &PathInfo) -> f64 {
    if p.room_packets() > 0 {
        expected_delivery_time(p)
    } else {
        expected_delivery_time(p) + response_time(p) - p.oldest_unacked_age.as_secs_f64()
    }
}

/// How many of subflow `f`'s virtual packets arrive before `deadline` (or at it, if `ties`),
/// capped at `cap`. Eq. (10) packet by packet: the `room` packets that fit in the window go now
/// and arrive at EDT; each further packet waits for the ACK of one packet in flight, the first
/// at RT − τ (the oldest), and the window's ACKs return spread over one RT (the ACK clock), so
/// one more packet may go every RT / window from then on, each arriving EDT after it went.
fn packets_before(f: &PathInfo, deadline: f64, ties: bool, cap: f64) -> f64 {
    let before = |t: f64| t < deadline || (ties && t <= deadline);
    let edt = expected_delivery_time(f);
    if !before(edt) {
        return 0.0;
    }
    let mut n = f.room_packets() as f64;
    let rt = response_time(f);
    let first = edt + (rt - f.oldest_unacked_age.as_secs_f64()).max(0.0);
    if before(first) {
        let gap = rt / f.window_packets() as f64;
        n += if gap > 0.0 {
            // Packets sent at first + k·gap, k = 0, 1, …: those with first + k·gap before the
            // deadline (a tie at the deadline counts only if `ties`).
            let k = ((deadline - first) / gap).floor();
            if before(first + k * gap) {
                k + 1.0
            } else {
                k
            }
        } else {
            cap
        };
    }
    n.min(cap)
}

impl ExpectedArrival {
    /// Algorithm 1 for the pending subflow `pending`: the block its packet is allocated from.
    fn allocate(view: &SchedView<'_>, pending: &PathInfo) -> Option<u64> {
        let total: u64 = view.blocks.iter().map(BlockView::needed).sum();
        let cap = total as f64 + 1.0;
        let deadline = expected_arrival_time(pending);
        let ahead: f64 = view
            .paths
            .iter()
            .filter(|f| f.path != pending.path)
            .map(|f| packets_before(f, deadline, f.path < pending.path, cap))
            .sum();
        block_after(view.blocks, ahead)
    }
}

impl Scheduler for ExpectedArrival {
    fn name(&self) -> &'static str {
        "eat"
    }

    fn wants_blocks(&self) -> bool {
        true
    }

    /// The ready subflows in order of EAT each run Algorithm 1; the first to be allocated a
    /// packet sends it.
    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        // The paths as the view gives them, with p_f from the subflows' own symbols.
        let mut paths = [PathInfo::default(); 8];
        let n = view.paths.len().min(paths.len());
        for (out, p) in paths.iter_mut().zip(view.paths) {
            *out = *p;
            out.view.loss = self.loss.rate(p.path as u8, p.view.loss);
        }
        let view = SchedView { paths: &paths[..n], ..*view };
        let pick = by_key(&view, expected_arrival_time)
            .find_map(|p| Self::allocate(&view, p).map(|b| Pick { path: p.path, block: Some(b) }));
        pick
    }

    fn on_symbol(&mut self, now: Instant, event: SymbolEvent) {
        self.loss.on_symbol(now, event);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sched::testing::{block, path};

    fn pick(paths: &[PathInfo], blocks: &[BlockView]) -> Option<Pick> {
        ExpectedArrival::default().pick(&SchedView { now: Instant::ZERO, paths, blocks })
    }

    #[test]
    fn eqs_8_to_10_by_hand() {
        // RTT 100 ms, RTO 200 ms, p = 20 %: EDT = 0.2·0.2/0.8 + 0.05 = 0.1 s;
        // RT = 0.8·0.1 + 0.2·0.2 = 0.12 s.
        let mut p = path(0, 100, 0.2, 10, 4);
        assert!((expected_delivery_time(&p) - 0.1).abs() < 1e-9);
        assert!((response_time(&p) - 0.12).abs() < 1e-9);
        assert!((expected_arrival_time(&p) - 0.1).abs() < 1e-9, "room in the window: EAT = EDT");
        // Full window, oldest packet sent 30 ms ago: EAT = 0.1 + 0.12 − 0.03.
        p = path(0, 100, 0.2, 10, 10);
        p.oldest_unacked_age = Duration::from_millis(30);
        assert!((expected_arrival_time(&p) - 0.19).abs() < 1e-9);
    }

    #[test]
    fn the_slow_subflow_gets_the_block_the_fast_one_cannot_reach_first() {
        // Fast: 100 ms, 20 packets of room in a 100-packet window. Slow: 500 ms. Before the slow
        // path's EAT (250 ms) the fast one delivers its 20 at 50 ms and, from 150 ms on, one per
        // ms as its window's ACKs return: 121 packets. Block 0 needs 10, block 1 needs 100,
        // block 2 needs 50.
        let fast = path(0, 100, 0.0, 100, 80);
        let slow = path(1, 500, 0.0, 100, 0);
        let blocks = [block(0, 10, 10, 0), block(1, 100, 100, 0), block(2, 50, 50, 0)];
        assert_eq!(pick(&[fast, slow], &blocks), Some(Pick { path: 0, block: Some(0) }));
        let busy = PathInfo { ready: false, ..fast };
        assert_eq!(pick(&[busy, slow], &blocks), Some(Pick { path: 1, block: Some(2) }));
        // If the fast path can carry everything, the slow path keeps its opportunity.
        assert_eq!(pick(&[busy, slow], &blocks[..2]), None);
        // Blocks already δ̂-complete (nothing needed) are skipped in the allocation.
        let done = [block(0, 10, 0, 10), block(1, 100, 0, 100), block(2, 100, 100, 0), block(3, 100, 100, 0)];
        assert_eq!(pick(&[busy, slow], &done), Some(Pick { path: 1, block: Some(3) }));
        assert_eq!(pick(&[fast, slow], &done), Some(Pick { path: 0, block: Some(2) }));
    }

    #[test]
    fn a_lost_symbol_is_supplemented_on_the_subflow_with_the_least_eat() {
        // Block 0 lost one symbol (one repair wanted); block 1 still sends sources. Both
        // subflows may send: the lossy, slower one's EDT is larger, so the repair goes on the
        // fast one, and the slow one takes block 1.
        let fast = path(0, 100, 0.001, 100, 50);
        let slow = path(1, 300, 0.05, 100, 50);
        let mut lost = block(0, 64, 0, 63);
        lost.repairs_wanted = 1;
        let blocks = [lost, block(1, 64, 64, 0)];
        assert_eq!(pick(&[fast, slow], &blocks), Some(Pick { path: 0, block: Some(0) }));
        // The slow one alone may send: before its EAT (181.6 ms) the fast one delivers its 50
        // of room at 50 ms and 32 more from 150 ms on, more than the 65 the blocks need.
        let ready_slow_only = [PathInfo { ready: false, ..fast }, slow];
        assert_eq!(pick(&ready_slow_only, &blocks), None);
        // With a fast path that lost its window to a timeout (1 packet) the slow one helps.
        let collapsed = PathInfo { ready: false, ..path(0, 100, 0.001, 1, 1) };
        assert_eq!(pick(&[collapsed, slow], &blocks), Some(Pick { path: 1, block: Some(1) }));
    }

    #[test]
    fn past_a_full_window_each_packet_waits_for_one_more_ack() {
        // Fast: 100 ms, a full 10-packet window whose oldest packet went 50 ms ago: its first ACK
        // is due in 50 ms, then one every 10 ms, each new packet arriving 50 ms after it goes
        // (at 100, 110, 120 ms, …). Slow: 250 ms, EAT 125 ms. Three of the fast path's packets
        // arrive by then, not a whole window at its first ACK, so the slow path is handed the
        // head block's fourth symbol rather than the next block.
        let mut fast = path(0, 100, 0.0, 10, 10);
        fast.oldest_unacked_age = Duration::from_millis(50);
        let slow = path(1, 250, 0.0, 10, 0);
        assert!((expected_arrival_time(&fast) - 0.1).abs() < 1e-9);
        assert_eq!(packets_before(&fast, 0.125, false, 100.0), 3.0);
        assert_eq!(packets_before(&fast, 0.099, true, 100.0), 0.0);
        assert_eq!(packets_before(&fast, 10.0, true, 100.0), 100.0, "capped");
        let blocks = [block(0, 5, 5, 0), block(1, 20, 20, 0)];
        assert_eq!(pick(&[fast, slow], &blocks), Some(Pick { path: 1, block: Some(0) }));
    }

    #[test]
    fn a_subflows_loss_rate_comes_from_its_own_symbols() {
        // The path's own estimate says 1 %, but 3 of its 4 symbols were lost: Eq. (8) takes
        // 3 / (4 + 2) = 50 %, EDT = 0.5 · 200 / 0.5 + 50 = 250 ms, and the clean path (EAT
        // 150 ms past its room) takes what the blocks need first.
        let clean = path(0, 100, 0.0, 10, 10);
        let lossy = path(1, 100, 0.01, 10, 0);
        let blocks = [block(0, 5, 5, 0)];
        let mut eat = ExpectedArrival::default();
        assert_eq!(
            eat.pick(&SchedView { now: Instant::ZERO, paths: &[clean, lossy], blocks: &blocks })
                .map(|p| p.path),
            Some(1)
        );
        for (i, lost) in [true, true, false, true].into_iter().enumerate() {
            let (block, path, sent_at) = (0, 1, Instant::ZERO);
            eat.on_symbol(
                Instant::from_micros(i as u64),
                if lost {
                    SymbolEvent::Lost { block, path, sent_at }
                } else {
                    SymbolEvent::Acked { block, path, sent_at }
                },
            );
        }
        assert!((eat.loss.rate(1, 0.01) - 0.5).abs() < 1e-9);
        assert_eq!(
            eat.pick(&SchedView { now: Instant::ZERO, paths: &[clean, lossy], blocks: &blocks }),
            None
        );
    }
}
