//! braid's default scheduler: allocation by expected arrival time.
//!
//! FMTCP's virtual allocation (Algorithm 1, `eat.rs`) with an arrival model for a coded,
//! paced transport. A symbol is worth sending on a path only if it reaches the receiver before
//! the other paths could bring the same block what it lacks; a slow or lossy path then carries
//! only the later blocks' symbols, which it delivers no later than the fast path would, and
//! never holds a block back.
//!
//! The k-th further packet on path f (one-way delay d_f = SRTT_f / 2, window W_f packets,
//! room R_f, delivery rate r_f = W_f / SRTT_f, τ_f the age of its oldest packet in flight)
//! arrives at
//!
//! - d_f + k / (1.25 · r_f) while it fits in the window (the pacer spreads a window over
//!   SRTT / 1.25, RFC 9002 §7.7, as `conn/path.rs` paces), and
//! - d_f + (SRTT_f − τ_f) + (k − R_f) / r_f beyond: the ACK clock frees the window at r_f
//!   from the moment the oldest packet is acknowledged.
//!
//! FMTCP's EDT instead charges a loss a whole RTO on the same path (Eq. 8), and its EAT a whole
//! RT per window (Eq. 10); with coding a loss is replaced on whichever path is best, so here a
//! loss only makes a path's packets count for (1 − p_f) of a symbol delivered. When path f_p
//! may send, the other paths' expected deliveries before f_p's first packet arrives are
//! allocated to the open blocks in order first ([`BlockView::needed`]: unsent sources and the
//! repairs the redundancy controller wants); f_p serves the block that is still short after
//! them, or keeps its opportunity if none is.
//!
//! Proactive repair with capacity new data leaves unused (the redundancy controller's spare
//! repairs) goes only on a path whose packets arrive within 1.5 × the fastest path's delay:
//! a late repair on a slow path would count as in flight for its block and hold back the fast
//! path's replacement of a real loss.

use super::{block_after, by_key, BlockView, PathInfo, Pick, SchedView, Scheduler};

#[derive(Debug, Clone, Copy, Default)]
pub struct ArrivalTime;

/// The pacer's gain over the window per SRTT (conn/path.rs).
const PACING_GAIN: f64 = 1.25;

/// Spare repairs go on paths whose one-way delay is within this factor of the fastest path's.
const SPARE_DELAY_FACTOR: f64 = 1.5;

fn one_way(p: &PathInfo) -> f64 {
    p.view.smoothed_rtt.as_secs_f64() / 2.0
}

/// Packets per second the path's window sustains.
fn rate(p: &PathInfo) -> f64 {
    p.window_packets() as f64 / p.view.smoothed_rtt.as_secs_f64().max(1e-6)
}

/// When the path's next packet would arrive, from now, in seconds.
pub fn first_arrival(p: &PathInfo) -> f64 {
    if p.room_packets() > 0 {
        one_way(p)
    } else {
        one_way(p) + (p.view.smoothed_rtt.as_secs_f64() - p.oldest_unacked_age.as_secs_f64()).max(0.0)
    }
}

/// Expected symbols path `f` delivers before `deadline` (s from now), at most `cap`.
fn deliveries_before(f: &PathInfo, deadline: f64, cap: f64) -> f64 {
    let r = rate(f);
    let room = f.room_packets() as f64;
    let after_send = deadline - one_way(f);
    if after_send <= 0.0 {
        return 0.0;
    }
    // Within the room, paced: packets k < room with k / (1.25 r) < after_send.
    let mut n = (after_send * PACING_GAIN * r).ceil().min(room);
    // Beyond it, clocked by ACKs from the first one's return.
    let clocked = after_send - (f.view.smoothed_rtt.as_secs_f64() - f.oldest_unacked_age.as_secs_f64()).max(0.0);
    if clocked > 0.0 {
        n += (clocked * r).ceil();
    }
    (n * (1.0 - f.view.loss.clamp(0.0, 0.99))).min(cap)
}

impl ArrivalTime {
    fn allocate(view: &SchedView<'_>, pending: &PathInfo) -> Option<u64> {
        let total: u64 = view.blocks.iter().map(BlockView::needed).sum();
        let cap = total as f64 + 1.0;
        let deadline = first_arrival(pending);
        let ahead: f64 =
            view.paths.iter().filter(|f| f.path != pending.path).map(|f| deliveries_before(f, deadline, cap)).sum();
        block_after(view.blocks, ahead)
    }
}

impl Scheduler for ArrivalTime {
    fn name(&self) -> &'static str {
        "braid"
    }

    fn wants_blocks(&self) -> bool {
        true
    }

    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        let needed = by_key(view, first_arrival)
            .find_map(|p| Self::allocate(view, p).map(|b| Pick { path: p.path, block: Some(b) }));
        if needed.is_some() {
            return needed;
        }
        // Nothing needed anywhere: spare repairs, on the fastest ready path if it is not slow.
        let fastest = view.paths.iter().map(one_way).fold(f64::INFINITY, f64::min);
        let path = by_key(view, first_arrival).next()?;
        let block = view.blocks.iter().find(|b| !b.decoded && b.spare_repairs > 0)?;
        (one_way(path) <= SPARE_DELAY_FACTOR * fastest).then_some(Pick { path: path.path, block: Some(block.id) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{block, path};
    use crate::Instant;

    fn pick(paths: &[PathInfo], blocks: &[BlockView]) -> Option<Pick> {
        ArrivalTime.pick(&SchedView { now: Instant::ZERO, paths, blocks })
    }

    #[test]
    fn arrival_model_by_hand() {
        // 100 ms, 100-packet window, 20 packets of room: r = 1000 packets/s, one-way 50 ms.
        let f = path(0, 100, 0.0, 100, 80);
        assert!((first_arrival(&f) - 0.05).abs() < 1e-9);
        // By 60 ms: 10 ms of pacing at 1250/s = 12.5 → 13 packets.
        assert_eq!(deliveries_before(&f, 0.06, 1e9), 13.0);
        // By 250 ms: the 20 of room, then ACK-clocked from 150 ms: 100 more.
        assert_eq!(deliveries_before(&f, 0.25, 1e9), 120.0);
        // With 10 % loss, 90 % of them count.
        let lossy = path(0, 100, 0.1, 100, 80);
        assert!((deliveries_before(&lossy, 0.25, 1e9) - 108.0).abs() < 1e-9);
        assert_eq!(deliveries_before(&f, 0.25, 50.0), 50.0, "capped");
        assert_eq!(deliveries_before(&f, 0.04, 1e9), 0.0, "nothing arrives before the one-way delay");
    }

    #[test]
    fn a_slow_path_carries_only_what_it_delivers_before_the_fast_one_would() {
        let fast = path(0, 100, 0.001, 100, 80);
        let slow = path(1, 500, 0.01, 100, 0);
        let busy = PathInfo { ready: false, ..fast };
        // 120 symbols reach the receiver on the fast path before the slow path's first (250 ms).
        let blocks = [block(0, 64, 64, 0), block(1, 64, 64, 0), block(2, 64, 64, 0)];
        assert_eq!(pick(&[fast, slow], &blocks), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[busy, slow], &blocks), Some(Pick { path: 1, block: Some(1) }));
        assert_eq!(pick(&[busy, slow], &blocks[..1]), None, "block 0 alone: the slow path waits");
        // A lost symbol of block 0 (one repair wanted) goes to the fast path, not the slow one.
        let mut short = block(0, 64, 0, 63);
        short.repairs_wanted = 1;
        assert_eq!(pick(&[fast, slow], &[short]), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[busy, slow], &[short]), None);
    }

    #[test]
    fn spare_repairs_only_on_a_path_about_as_fast_as_the_fastest() {
        let mut b = block(0, 64, 0, 64);
        b.spare_repairs = 3;
        let fast = path(0, 100, 0.001, 100, 10);
        let slow = path(1, 500, 0.01, 100, 0);
        assert_eq!(pick(&[fast, slow], &[b]), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[PathInfo { ready: false, ..fast }, slow], &[b]), None);
        let twin = path(1, 120, 0.01, 100, 0);
        assert_eq!(pick(&[PathInfo { ready: false, ..fast }, twin], &[b]), Some(Pick { path: 1, block: Some(0) }));
    }
}
