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
//!   SRTT / 1.25, RFC 9002 §7.7, as `conn/path/` paces), and
//! - d_f + (SRTT_f − τ_f) + (k − R_f) / r_f beyond: the ACK clock frees the window at r_f
//!   from the moment the oldest packet is acknowledged.
//!
//! When the path's congestion controller keeps a model of it (braid's own, `cc/model.rs`:
//! BBRv3's BtlBw and RTprop, draft-ietf-ccwg-bbr §2.9–2.10, and the queue its last round's
//! smallest RTT showed), the model replaces the window's view of the path:
//!
//! - RTT_f = RTprop_f + q_f (the min RTT plus the model's queue estimate) stands for SRTT_f:
//!   SRTT lags a round and carries every transient queue, Startup's included;
//! - r_f = BtlBw_f / MSS: a model-paced window is ~1.25 BDP plus headroom (more in UP or beside
//!   a competitor), so W_f / SRTT_f overstates what the path delivers by that headroom;
//! - the k-th further packet arrives at d_f + k / r_f, not sooner than the bottleneck passes it,
//!   however fast the pacer sends into its queue; packets beyond the room go when the ACK
//!   clock frees the window, the first at RTT_f − τ_f: so at
//!   d_f + max(k / r_f, RTT_f − τ_f + (k − R_f) / r_f).
//!
//! The model counts only once it has a bandwidth estimate and a completed round; before that,
//! and for controllers without one (NewReno, CUBIC, LIA), the window rule above.
//!
//! FMTCP's EDT instead charges a loss a whole RTO on the same path (Eq. 8), and its EAT a whole
//! RT per window (Eq. 10); with coding a loss is replaced on whichever path is best, so here a
//! loss only makes a path's packets count for (1 − p_f) of a symbol delivered. When path f_p
//! may send, the other paths' expected deliveries before f_p's first packet arrives are
//! allocated to the open blocks in order first ([`BlockView::needed`]: unsent sources and the
//! repairs the redundancy controller wants); f_p serves the block that is still short after
//! them, or keeps its opportunity if none is.
//!
//! On several paths, one without an RTT sample carries no data (the connection measures it
//! with a PING first, [`Scheduler::needs_measured_paths`]), and while no path has a sample the
//! scheduler waits for the first. A symbol on an unmeasured path is lost, or late, unseen: its
//! loss is declared only by a probe timeout from RFC 9002's 333 ms guess (≈ 1 s), while its
//! block — and, with a small receive window, the whole transfer — waits. And with the guess for
//! its RTT the model gives the path almost nothing more, so the guess is never corrected.
//!
//! Proactive repair with capacity new data leaves unused (the redundancy controller's spare
//! repairs) goes only on a path whose packets arrive within 1.5 × the fastest path's delay:
//! a late repair on a slow path would count as in flight for its block and hold back the fast
//! path's replacement of a real loss.

use super::{block_after, by_key, BlockView, PathInfo, Pick, SchedView, Scheduler};

#[derive(Debug, Clone, Copy, Default)]
pub struct ArrivalTime;

/// The pacer's gain over the window per SRTT (conn/path/).
const PACING_GAIN: f64 = 1.25;

/// Spare repairs go on paths whose one-way delay is within this factor of the fastest path's.
const SPARE_DELAY_FACTOR: f64 = 1.5;

/// What the arrival model takes from the connection as a whole.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// The smallest one-way delay of any path.
    pub fastest: f64,
}

impl Model {
    /// The connection's model from its paths and their round trips (`shapes`, one per path,
    /// in the same order).
    fn of(paths: &[PathInfo], shapes: &[Shape]) -> Model {
        let fastest = paths.iter().zip(shapes).map(|(p, s)| one_way(p, s.rtt)).fold(f64::INFINITY, f64::min);
        Model { fastest: if fastest.is_finite() { fastest } else { 0.0 } }
    }
}

/// A path's one-way delay: its round trip `rtt` less the way back of its ACKs, which come back
/// on the path itself (PROTOCOL.md §12.4) and, with nothing to tell the directions apart, take
/// half its min RTT: a queue is the data's. Taking the way back as half the fastest path's min
/// RTT, as when ACKs rode on whichever path sent next, put a 500 ms path's symbols 200 ms later
/// than they arrived: it stopped carrying data that long before the end of a transfer, and the
/// fast path finished alone. Half the whole round trip instead halved the queue: a two-path
/// connection through one lossy bottleneck then fell to 0.54 × its fair share beside a one-path
/// one (`tests/shared_bottleneck.rs`).
fn one_way(p: &PathInfo, rtt: f64) -> f64 {
    (rtt - p.view.min_rtt.as_secs_f64() / 2.0).max(rtt / 2.0)
}

/// The controller's model of the path, once it has measured something: a bandwidth estimate
/// and a completed round's queue.
fn path_model(p: &PathInfo) -> Option<PathModel> {
    let m = p.model?;
    let queue = m.queue?;
    let packets = m.bandwidth / p.view.mss.max(1) as f64;
    (packets.is_finite() && packets > 0.0)
        .then_some(PathModel { rtt: p.view.min_rtt.as_secs_f64() + queue.as_secs_f64(), rate: packets })
}

/// What braid's scheduler takes from a path's model.
struct PathModel {
    /// RTprop plus the queue the last round saw, in seconds.
    rtt: f64,
    /// The bottleneck bandwidth estimate, packets per second.
    rate: f64,
}

/// A path's round trip and rate, from its model if it has one ([`path_model`], asked once):
/// what the connection's [`Model`] and the path's [`Arrival`] are computed from.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    /// Whether the controller's model stands for the window's view of the path.
    modelled: bool,
    /// The path's round trip: the model's (min RTT plus queue), else the smoothed RTT.
    rtt: f64,
    /// Packets per second the path delivers: the model's bottleneck bandwidth, else what its
    /// window sustains over the smoothed RTT.
    rate: f64,
}

impl Shape {
    fn of(p: &PathInfo) -> Shape {
        match path_model(p) {
            Some(m) => Shape { modelled: true, rtt: m.rtt, rate: m.rate },
            None => {
                let srtt = p.view.smoothed_rtt.as_secs_f64();
                Shape { modelled: false, rtt: srtt, rate: p.window_packets() as f64 / srtt.max(1e-6) }
            }
        }
    }
}

/// A loss is detected this many RTTs after sending (RFC 9002's time threshold).
const LOSS_DETECTION_RTTS: f64 = 9.0 / 8.0;

/// One path as the arrival model sees it in one decision, every term computed once.
#[derive(Debug, Clone, Copy, Default)]
struct Arrival {
    /// The path's id ([`PathInfo::path`]).
    path: usize,
    shape: Shape,
    /// Packets the window has room for now.
    room: u64,
    /// [`one_way`] of the path's round trip.
    one_way: f64,
    /// The expected delay a loss adds to a symbol sent on the path: with probability p it is
    /// replaced once the loss is detected, on the fastest path.
    loss_delay: f64,
    /// How long a packet beyond the window waits for the first ACK to free room.
    ack_wait: f64,
}

impl Arrival {
    fn of(p: &PathInfo, shape: Shape, m: &Model) -> Arrival {
        let loss = p.view.loss.clamp(0.0, 0.99);
        Arrival {
            path: p.path,
            shape,
            room: p.room_packets(),
            one_way: one_way(p, shape.rtt),
            loss_delay: loss * (LOSS_DETECTION_RTTS * shape.rtt + m.fastest),
            ack_wait: (shape.rtt - p.oldest_unacked_age.as_secs_f64()).max(0.0),
        }
    }

    /// When the symbol in the path's next packet is expected at the receiver, in seconds from
    /// now (its arrival, plus the expected delay of replacing it if lost).
    fn expected_delivery(&self) -> f64 {
        let wait = if self.room > 0 { 0.0 } else { self.ack_wait };
        self.one_way + self.loss_delay + wait
    }

    /// How many of the path's next packets deliver their symbol before `deadline` (or at it,
    /// if `ties`), at most `cap`. Each packet's time is [`Arrival::expected_delivery`]'s for
    /// its place in line.
    fn deliveries_before(&self, deadline: f64, ties: bool, cap: f64) -> f64 {
        // Packets whose time from `start` on is k / rate, for k = 0, 1, …: how many come first.
        let count = |since_start: f64, rate: f64| -> f64 {
            if since_start < 0.0 || (since_start == 0.0 && !ties) {
                0.0
            } else if ties {
                (since_start * rate).floor() + 1.0
            } else {
                (since_start * rate).ceil()
            }
        };
        let r = self.shape.rate;
        let start = self.one_way + self.loss_delay;
        let room = self.room as f64;
        let clocked = count(deadline - start - self.ack_wait, r);
        let n = if self.shape.modelled {
            // One bottleneck at r: the room and then the ACK-clocked packets, in line behind it.
            count(deadline - start, r).min(room + clocked)
        } else {
            // Within the room, paced; beyond it, clocked by ACKs from the first one's return.
            count(deadline - start, PACING_GAIN * r).min(room) + clocked
        };
        n.min(cap)
    }
}

/// Every path of a decision as the arrival model sees it (at most [`MAX_PATHS`]), and the
/// connection's [`Model`]: built once at the start of a pick, where the path's model used to
/// be asked for again in each term of each comparison.
struct Arrivals {
    model: Model,
    paths: [Arrival; MAX_PATHS],
    n: usize,
}

/// Most paths a connection has (and `by_key` orders).
const MAX_PATHS: usize = crate::wire::MAX_PATHS as usize;

impl Arrivals {
    fn of(paths: &[PathInfo]) -> Arrivals {
        let paths = &paths[..paths.len().min(MAX_PATHS)];
        let mut shapes = [Shape::default(); MAX_PATHS];
        for (s, p) in shapes.iter_mut().zip(paths) {
            *s = Shape::of(p);
        }
        let model = Model::of(paths, &shapes[..paths.len()]);
        let mut arrivals = [Arrival::default(); MAX_PATHS];
        for ((a, p), &s) in arrivals.iter_mut().zip(paths).zip(&shapes) {
            *a = Arrival::of(p, s, &model);
        }
        Arrivals { model, paths: arrivals, n: paths.len() }
    }

    /// The estimate of path `p`.
    fn of_path(&self, p: &PathInfo) -> &Arrival {
        self.paths[..self.n].iter().find(|a| a.path == p.path).expect("every path of the view estimated")
    }
}

/// When the symbol in the path's next packet is expected at the receiver (the unit tests'
/// handle on [`Arrival::expected_delivery`] with a model of their own).
#[cfg(test)]
fn expected_delivery(p: &PathInfo, m: &Model) -> f64 {
    Arrival::of(p, Shape::of(p), m).expected_delivery()
}

/// [`Arrival::deliveries_before`] for one path under a model of the tests' own.
#[cfg(test)]
fn deliveries_before(f: &PathInfo, deadline: f64, m: &Model, ties: bool, cap: f64) -> f64 {
    Arrival::of(f, Shape::of(f), m).deliveries_before(deadline, ties, cap)
}

impl ArrivalTime {
    fn pick_among(&self, view: &SchedView<'_>) -> Option<Pick> {
        let est = Arrivals::of(view.paths);
        let delivery = |p: &PathInfo| est.of_path(p).expected_delivery();
        let needed = by_key(view, delivery)
            .find_map(|p| Self::allocate(view, p, &est).map(|b| Pick { path: p.path, block: Some(b) }));
        if needed.is_some() {
            return needed;
        }
        // Nothing needed anywhere: spare repairs, on the fastest ready path if it is not slow;
        // the block that wants the most first (the oldest of equals), so that consecutive spare
        // repairs take turns among blocks and a burst of losses takes one from each rather than
        // one block's whole margin (Sato et al.'s interleaving, §3).
        let path = by_key(view, delivery).next()?;
        let spare = view.blocks.iter().filter(|b| !b.decoded && b.spare_repairs > 0);
        let block = spare.max_by_key(|b| (b.spare_repairs, std::cmp::Reverse(b.id)))?;
        (est.of_path(path).one_way <= SPARE_DELAY_FACTOR * est.model.fastest)
            .then_some(Pick { path: path.path, block: Some(block.id) })
    }

    fn allocate(view: &SchedView<'_>, pending: &PathInfo, est: &Arrivals) -> Option<u64> {
        let total: u64 = view.blocks.iter().map(BlockView::needed).sum();
        let cap = total as f64 + 1.0;
        let deadline = est.of_path(pending).expected_delivery();
        let ahead: f64 = view
            .paths
            .iter()
            .filter(|f| f.path != pending.path)
            .map(|f| est.of_path(f).deliveries_before(deadline, f.path < pending.path, cap))
            .sum();
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

    fn needs_measured_paths(&self) -> bool {
        true
    }

    fn serves_urgent_first(&self) -> bool {
        true
    }

    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        let measured = view.paths.iter().filter(|p| p.measured).count();
        if measured == view.paths.len() || view.paths.len() == 1 {
            return self.pick_among(view);
        }
        if measured == 0 {
            // Several paths and no sample yet (the handshake's ACK is a moment away): wait.
            return None;
        }
        let mut paths = [PathInfo::default(); 8];
        let mut n = 0;
        for p in view.paths.iter().filter(|p| p.measured).take(8) {
            paths[n] = *p;
            n += 1;
        }
        self.pick_among(&SchedView { paths: &paths[..n], ..*view })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ModelView;
    use crate::sched::testing::{block, path};
    use crate::sched::ExpectedArrival;
    use crate::view::PathView;
    use crate::Instant;

    fn pick(paths: &[PathInfo], blocks: &[BlockView]) -> Option<Pick> {
        ArrivalTime.pick(&SchedView { now: Instant::ZERO, paths, blocks })
    }

    /// One path of 100 ms: the fastest one-way delay is 50 ms.
    const M: Model = Model { fastest: 0.05 };

    #[test]
    fn arrival_model_by_hand() {
        // 100 ms, 100-packet window, 20 packets of room: r = 1000 packets/s, one-way 50 ms.
        let f = path(0, 100, 0.0, 100, 80);
        assert!((expected_delivery(&f, &M) - 0.05).abs() < 1e-9);
        // By 60 ms: 10 ms of pacing at 1250/s = 12.5 → 13 packets.
        assert_eq!(deliveries_before(&f, 0.06, &M, false, 1e9), 13.0);
        // By 249.5 ms: the 20 of room, then ACK-clocked from 150 ms: 99.5 → 100 more.
        assert_eq!(deliveries_before(&f, 0.2495, &M, false, 1e9), 120.0);
        assert_eq!(deliveries_before(&f, 0.2495, &M, false, 50.0), 50.0, "capped");
        assert_eq!(deliveries_before(&f, 0.04, &M, false, 1e9), 0.0, "nothing before the one-way delay");
        assert_eq!(deliveries_before(&f, 0.05, &M, false, 1e9), 0.0);
        assert_eq!(deliveries_before(&f, 0.05, &M, true, 1e9), 1.0, "a tie counts for a lower index");
        // 10 % loss: a lost symbol is replaced after 9/8 SRTT on the fastest path (50 ms):
        // each symbol is expected 0.1 × (112.5 + 50) = 16.25 ms later.
        let lossy = path(0, 100, 0.1, 100, 80);
        assert!((expected_delivery(&lossy, &M) - 0.06625).abs() < 1e-9);
        // A full window waits for the first ACK: SRTT − τ.
        let mut full = path(0, 100, 0.0, 100, 100);
        full.oldest_unacked_age = std::time::Duration::from_millis(40);
        assert!((expected_delivery(&full, &M) - 0.11).abs() < 1e-9);
    }

    /// `path`'s numbers with a model: `bw` packets/s (of 1000 bytes), a queue of `queue_ms`.
    fn modelled(p: PathInfo, bw: f64, queue_ms: u64) -> PathInfo {
        let queue = Some(std::time::Duration::from_millis(queue_ms));
        PathInfo { model: Some(ModelView { bandwidth: bw * 1000.0, queue, round: 10, round_rate: 0.0 }), ..p }
    }

    #[test]
    fn model_arrival_by_hand() {
        // Min RTT 100 ms, SRTT 130 ms, a 10 ms queue: the model's RTT is 110 ms, the one-way
        // delay 60 ms (not SRTT's 80 ms). 500 packets/s, 20 packets of room in a 100-packet
        // window (the window would say 100 / 0.13 = 769/s, paced at 962/s).
        let mut f = path(0, 100, 0.0, 100, 80);
        f.view.smoothed_rtt = std::time::Duration::from_millis(130);
        let f = modelled(f, 500.0, 10);
        assert!((expected_delivery(&f, &M) - 0.06).abs() < 1e-9);
        // By 70.1 ms: 10.1 ms at the bottleneck's 500/s = 5.05 → 6 packets (the window's rule
        // counts 8 at the pacer's 962/s from 80 ms: none).
        assert_eq!(deliveries_before(&f, 0.0701, &M, false, 1e9), 6.0);
        // By 200.1 ms: 140.1 ms at 500/s would be 71, but past the 20 of room each packet
        // waits for an ACK, the first 110 ms after sending: 20 + 30.1 ms × 500/s = 20 + 16.
        assert_eq!(deliveries_before(&f, 0.2001, &M, false, 1e9), 36.0);
        assert_eq!(deliveries_before(&f, 0.2001, &M, false, 30.0), 30.0, "capped");
        assert_eq!(deliveries_before(&f, 0.06, &M, false, 1e9), 0.0);
        assert_eq!(deliveries_before(&f, 0.06, &M, true, 1e9), 1.0, "a tie counts for a lower index");
        // 1 % loss: replaced after 9/8 of the model's RTT on the fastest path (50 ms):
        // 0.01 × (123.75 + 50) = 1.7375 ms later.
        let lossy = PathInfo { view: PathView { loss: 0.01, ..f.view }, ..f };
        assert!((expected_delivery(&lossy, &M) - 0.0617375).abs() < 1e-9);
        // A full window waits for the first ACK: the model's RTT − τ = 110 − 40 ms.
        let mut full = modelled(path(0, 100, 0.0, 100, 100), 500.0, 10);
        full.oldest_unacked_age = std::time::Duration::from_millis(40);
        assert!((expected_delivery(&full, &M) - 0.13).abs() < 1e-9);
        // Before a round has completed (no queue) or with no bandwidth measured: SRTT's rule.
        let mut early = f;
        early.model = early.model.map(|m| ModelView { queue: None, ..m });
        assert!((expected_delivery(&early, &M) - 0.08).abs() < 1e-9);
        let mut idle = f;
        idle.model = idle.model.map(|m| ModelView { bandwidth: 0.0, ..m });
        assert!((expected_delivery(&idle, &M) - 0.08).abs() < 1e-9);
    }

    #[test]
    fn a_model_paced_window_does_not_count_as_rate() {
        // The fast path's window is a model's 1.25 BDP + 2 packets (127 for 1000 packets/s over
        // 100 ms), 17 of it free. The slow path (900 ms) is expected at 450 ms. By the window
        // the fast one delivers 17 + (400 − 100) ms × 1270/s = 398 before that: six blocks of
        // 64 and more, so the slow path would wait. By the model, 17 + 300 = 317: block 4 is
        // still short by 3.
        let blocks: Vec<BlockView> = (0..6).map(|i| block(i, 64, 64, 0)).collect();
        let window = PathInfo { ready: false, ..path(0, 100, 0.0, 127, 110) };
        let slow = path(1, 900, 0.0, 100, 0);
        assert_eq!(pick(&[window, slow], &blocks), None);
        let model = modelled(window, 1000.0, 0);
        assert_eq!(pick(&[model, modelled(slow, 200.0, 0)], &blocks), Some(Pick { path: 1, block: Some(4) }));
        assert_eq!(pick(&[model, slow], &blocks), Some(Pick { path: 1, block: Some(4) }));
    }

    #[test]
    fn a_slow_path_carries_only_what_it_delivers_before_the_fast_one_would() {
        let fast = path(0, 100, 0.001, 100, 80);
        let slow = path(1, 900, 0.01, 100, 0);
        let busy = PathInfo { ready: false, ..fast };
        // The slow path's ACKs come back on it: its one-way delay is 900 − 450 ms, and its first
        // symbol is expected at 450 + 0.01 × (1012.5 + 50) = 460.6 ms; the fast one delivers
        // 20 + 311 before that: five blocks' worth, not six.
        let blocks: Vec<BlockView> = (0..6).map(|i| block(i, 64, 64, 0)).collect();
        assert_eq!(pick(&[fast, slow], &blocks), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[busy, slow], &blocks), Some(Pick { path: 1, block: Some(5) }));
        assert_eq!(pick(&[busy, slow], &blocks[..5]), None, "five blocks: the slow path waits");
        // A lost symbol of block 0 (one repair wanted) goes to the fast path, not the slow one.
        let mut short = block(0, 64, 0, 63);
        short.repairs_wanted = 1;
        assert_eq!(pick(&[fast, slow], &[short]), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[busy, slow], &[short]), None);
    }

    #[test]
    fn some_path_always_serves_a_block_in_need() {
        // However the paths compare, when every path may send and a block needs a symbol,
        // someone sends it: the allocation never defers in a circle.
        let mut b = block(0, 64, 0, 63);
        b.repairs_wanted = 1;
        for (rtt0, rtt1) in [(100, 100), (100, 500), (500, 100), (30, 31)] {
            for (p0, p1) in [(0.0, 0.0), (0.001, 0.5), (0.5, 0.001), (0.3, 0.3)] {
                for (f0, f1) in [(0, 0), (99, 0), (0, 99), (50, 50)] {
                    let paths = [path(0, rtt0, p0, 100, f0), path(1, rtt1, p1, 100, f1)];
                    assert!(pick(&paths, &[b]).is_some(), "{paths:?}");
                    assert!(
                        ExpectedArrival::default()
                            .pick(&SchedView { now: Instant::ZERO, paths: &paths, blocks: &[b] })
                            .is_some(),
                        "{paths:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_path_without_an_rtt_sample_carries_no_data_while_another_has_one() {
        let blocks: Vec<BlockView> = (0..6).map(|i| block(i, 64, 64, 0)).collect();
        let fast = path(0, 20, 0.001, 100, 10);
        // RFC 9002's initial guess, nothing known: the model would rank it far behind.
        let new = PathInfo { measured: false, ..path(1, 333, 0.0, 10, 0) };
        // A full window of 4 packets: by 323 ms it brings some 60 symbols of the 384 needed.
        let busy = path(0, 20, 0.001, 4, 4);
        assert_eq!(pick(&[fast, new], &blocks), Some(Pick { path: 0, block: Some(0) }));
        assert_eq!(pick(&[busy, new], &blocks), None, "the new path waits for its PING's answer");
        let guessed = PathInfo { measured: true, ..new };
        assert!(pick(&[busy, guessed], &blocks).is_some(), "taking the guess, it would carry data");
        // Measured, it takes the blocks the fast path cannot bring first.
        let measured = path(1, 20, 0.0, 10, 0);
        assert!(pick(&[busy, measured], &blocks).is_some_and(|p| p.path == 1));
        // Several paths and none measured (the moment before the handshake's ACK): wait.
        let unmeasured = PathInfo { measured: false, ..fast };
        assert_eq!(pick(&[unmeasured, new], &blocks), None);
        // A path alone is used whatever is known of it.
        assert_eq!(pick(&[new], &blocks), Some(Pick { path: 1, block: Some(0) }));
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
        assert_eq!(
            pick(&[PathInfo { ready: false, ..fast }, twin], &[b]),
            Some(Pick { path: 1, block: Some(0) })
        );
        // Among blocks, the one that wants the most spare repairs, the oldest of equals.
        let mut more = block(1, 64, 0, 64);
        more.spare_repairs = 4;
        assert_eq!(pick(&[fast], &[b, more]), Some(Pick { path: 0, block: Some(1) }));
        more.spare_repairs = 3;
        assert_eq!(pick(&[fast], &[b, more]), Some(Pick { path: 0, block: Some(0) }));
    }
}
