//! Coupling between a connection's paths that share a bottleneck, for braid's controller.
//!
//! Uncoupled, each path of a connection probes for bandwidth as a flow of its own, so where two
//! paths cross one bottleneck the connection takes two flows' share (RFC 6356 §1, goal 2: a
//! multipath flow should take no more than a single-path flow on the best of its paths).
//!
//! **Detection** follows the idea of shared-bottleneck detection by queueing delay (RFC 8382):
//! paths through one bottleneck see the same queue. Once a round each path compares the queue
//! its last round showed (its smallest RTT minus its minimum RTT) with each other path's; where
//! either shows a queue of [`QUEUE`] or more, the two agree when both do and they are within
//! [`TOLERANCE`] of each other (or [`SLACK`]). Agreement scores one, disagreement takes two away; a path is
//! judged to share this one's bottleneck at a score of [`SHARED`]. RFC 8382 summarises one-way
//! delay over seconds (skewness, variability, oscillation); a round's minimum is coarser, and
//! two disjoint paths whose queues happen to match are judged shared for as long as they do.
//!
//! **Reaction** is LIA's (RFC 6356 §3): only the increase is coupled. A path in a shared group
//! probes with its share of the group's bandwidth, `s = bwᵢ / Σ bw`: UP's pacing gain above 1,
//! the in-flight UP adds, and the growth of the loss bound are all scaled by `s`, so the group
//! probes as one flow would. Losses and drains stay each path's own.
//!
//! **One estimate for the group.** Each path's bandwidth estimate is a max filter over its own
//! rate samples, and the sum of several paths' maxima exceeds the maximum of their sum: each
//! path keeps its own lucky round. Beside a one-path flow that gave two alike paths 1.3 × the
//! fair share, whatever the probes. So each path also records, at the end of each of its
//! rounds, what the group delivered (its own last round's rate plus each sharing path's last
//! round's), max-filters that over [`GROUP_WINDOW_ROUNDS`] as the controller filters its own
//! samples, and paces and sizes its window at its estimate × (group maximum ÷ the sum of the
//! group's estimates), never below [`MIN_SCALE`] of it. The max filter is BBR's
//! (draft-ietf-ccwg-bbr); filtering the group's sum is braid's own.

use std::time::Duration;

use crate::cc::{Aggregate, ModelView};
use crate::wire::MAX_PATHS;

/// The smallest queue either path must show for a round to say anything.
const QUEUE: Duration = Duration::from_millis(4);
/// Two queues within this fraction of the larger one agree.
const TOLERANCE: f64 = 0.25;
/// ... or within this much (timer noise, the serialization of a datagram or two).
const SLACK: Duration = Duration::from_millis(2);
/// The score at which another path counts as sharing this one's bottleneck, and its ceiling.
const SHARED: u8 = 4;
const MAX_SCORE: u8 = 8;
/// Rounds of this path without a new round on the other before the other's view is stale.
const STALE_ROUNDS: u8 = 4;
/// Rounds of the group's delivery-rate max filter (the controller's own window).
const GROUP_WINDOW_ROUNDS: u64 = 10;
/// The least a path's estimate is scaled by.
const MIN_SCALE: f64 = 0.5;

#[derive(Debug, Clone, Copy, Default)]
struct Peer {
    view: Option<ModelView>,
    /// The other path's round at this path's last comparison, and comparisons since it moved.
    seen_round: u64,
    stale: u8,
    score: u8,
}

/// One path's view of the connection's other paths (see the module comment).
#[derive(Debug, Clone, Default)]
pub(super) struct Coupling {
    peers: [Peer; MAX_PATHS as usize],
    own: usize,
    /// (round, bytes/s): what the shared group delivered in this path's recent rounds, its own
    /// last round plus each sharing path's, for the group's max filter.
    group_samples: Vec<(u64, f64)>,
}

impl Coupling {
    /// Takes the connection's paths as they are now.
    pub(super) fn on_aggregate(&mut self, all: &Aggregate) {
        self.own = all.own();
        for peer in &mut self.peers {
            peer.view = None;
        }
        for (i, view) in all.models() {
            if let Some(peer) = self.peers.get_mut(i) {
                peer.view = view;
            }
        }
    }

    /// At the end of this path's round `round`, with the queue that round showed and what it
    /// delivered (bytes/s).
    pub(super) fn on_round_end(&mut self, queue: Option<Duration>, round: u64, round_rate: f64) {
        self.judge(queue);
        let group: f64 =
            self.shared_views().map(|(_, v)| v.round_rate).filter(|r| r.is_finite() && *r > 0.0).sum();
        if group <= 0.0 || !round_rate.is_finite() {
            self.group_samples.clear();
            return;
        }
        self.group_samples.push((round, group + round_rate.max(0.0)));
        let oldest = round.saturating_sub(GROUP_WINDOW_ROUNDS);
        self.group_samples.retain(|&(r, _)| r > oldest);
    }

    /// The factor by which this path's estimate is scaled so that the group's estimates add up
    /// to the group's own max-filtered delivery rate, not to the sum of each path's maximum (1
    /// where it shares its bottleneck with none).
    pub(super) fn estimate_scale(&self, bandwidth: f64) -> f64 {
        let others: f64 = self.shared().map(|(_, b)| b).sum();
        let group = self.group_samples.iter().map(|&(_, b)| b).fold(0.0, f64::max);
        if others <= 0.0 || group <= 0.0 || bandwidth.is_nan() || bandwidth <= 0.0 {
            return 1.0;
        }
        (group / (bandwidth + others)).clamp(MIN_SCALE, 1.0)
    }

    fn judge(&mut self, queue: Option<Duration>) {
        let own = self.own;
        for (i, peer) in self.peers.iter_mut().enumerate() {
            let Some(view) = peer.view.filter(|_| i != own) else {
                peer.score = 0;
                continue;
            };
            if view.round == peer.seen_round {
                peer.stale = peer.stale.saturating_add(1);
            } else {
                peer.seen_round = view.round;
                peer.stale = 0;
            }
            if peer.stale >= STALE_ROUNDS {
                peer.score = 0;
                continue;
            }
            let (Some(a), Some(b)) = (queue, view.queue) else { continue };
            let larger = a.max(b);
            if larger < QUEUE {
                continue;
            }
            let close = a.min(b) >= QUEUE && a.abs_diff(b) <= SLACK.max(larger.mul_f64(TOLERANCE));
            peer.score = if close { (peer.score + 1).min(MAX_SCORE) } else { peer.score.saturating_sub(2) };
        }
    }

    /// Whether this path carries the most of the paths that share its bottleneck (ties: the
    /// lowest index).
    pub(super) fn leads(&self, bandwidth: f64) -> bool {
        self.shared().all(|(i, b)| b < bandwidth || (b == bandwidth && self.own < i))
    }

    /// The paths judged to share this one's bottleneck, with their bandwidth estimates.
    fn shared(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.shared_views().map(|(i, v)| (i, v.bandwidth)).filter(|(_, b)| b.is_finite() && *b > 0.0)
    }

    /// The paths judged to share this one's bottleneck, one bit per path index.
    pub(super) fn shared_mask(&self) -> u8 {
        self.shared_views().filter(|&(i, _)| i < 8).fold(0, |m, (i, _)| m | 1 << i)
    }

    /// The views of the paths judged to share this one's bottleneck, with their indices.
    fn shared_views(&self) -> impl Iterator<Item = (usize, ModelView)> + '_ {
        self.peers
            .iter()
            .enumerate()
            .filter(|(i, p)| *i != self.own && p.score >= SHARED && p.stale < STALE_ROUNDS)
            .filter_map(|(i, p)| p.view.map(|v| (i, v)))
    }

    /// This path's share of the bandwidth of the paths that share its bottleneck (1 alone).
    pub(super) fn share(&self, bandwidth: f64) -> f64 {
        let others: f64 = self.shared().map(|(_, b)| b).sum();
        if others <= 0.0 || bandwidth.is_nan() || bandwidth <= 0.0 {
            return 1.0;
        }
        (bandwidth / (bandwidth + others)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(bandwidth: f64, queue_ms: u64, round: u64) -> ModelView {
        ModelView { bandwidth, queue: Some(Duration::from_millis(queue_ms)), round, round_rate: bandwidth }
    }

    /// Path 0's coupling after `rounds` rounds in which it saw `own` ms of queue and path 1
    /// (bandwidth 1e6) saw `other`.
    fn after(rounds: u64, own: impl Fn(u64) -> u64, other: impl Fn(u64) -> u64) -> Coupling {
        let mut c = Coupling::default();
        for r in 1..=rounds {
            let mut all = Aggregate::default();
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, own(r), r)));
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, other(r), r)));
            all.set_own(0);
            c.on_aggregate(&all);
            c.on_round_end(Some(Duration::from_millis(own(r))), r, 1e6);
        }
        c
    }

    #[test]
    fn paths_that_see_one_queue_share_a_bottleneck() {
        // The same queue, give or take a few ms, round after round.
        let c = after(6, |r| 20 + r % 3, |r| 21 + r % 2);
        assert_eq!(c.share(1e6), 0.5);
        assert_eq!(c.shared_mask(), 0b10, "path 0 judges path 1 shared");
        assert!(c.leads(1e6), "equal bandwidth: the lower index leads");
        assert!(!c.leads(0.9e6));
        // Only a queue says anything: empty queues leave the verdict where it was.
        let idle = after(20, |_| 0, |_| 1);
        assert_eq!(idle.share(1e6), 1.0);
        assert_eq!(idle.shared_mask(), 0);
    }

    #[test]
    fn shared_paths_scale_their_estimates_to_what_the_group_delivers() {
        // Two paths through one queue, each with a max-filtered estimate of 1e6 B/s, whose
        // rounds together never delivered more than 1.5e6: each paces at 0.75 of its estimate.
        let mut c = Coupling::default();
        for r in 1..=8 {
            let mut all = Aggregate::default();
            let other = ModelView {
                bandwidth: 1e6,
                queue: Some(Duration::from_millis(20)),
                round: r,
                round_rate: 0.7e6,
            };
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, 20, r)));
            all.push_path(10_000, Duration::from_millis(50), Some(other));
            all.set_own(0);
            c.on_aggregate(&all);
            c.on_round_end(Some(Duration::from_millis(20)), r, if r == 5 { 0.8e6 } else { 0.6e6 });
        }
        assert!((c.estimate_scale(1e6) - 0.75).abs() < 1e-9, "{}", c.estimate_scale(1e6));
        // Never below MIN_SCALE, and 1 for a path that shares its bottleneck with none.
        assert_eq!(c.estimate_scale(10e6), MIN_SCALE);
        assert_eq!(Coupling::default().estimate_scale(1e6), 1.0);
        assert_eq!(after(20, |_| 30, |_| 0).estimate_scale(1e6), 1.0);
    }

    #[test]
    fn paths_whose_queues_differ_do_not() {
        let c = after(20, |r| 5 + 3 * (r % 7), |r| 40 - 4 * (r % 5));
        assert_eq!(c.share(1e6), 1.0);
        assert!(c.leads(0.1e6));
        // A queue on one path only.
        assert_eq!(after(20, |_| 30, |_| 0).share(1e6), 1.0);
    }

    #[test]
    fn a_shared_verdict_fades_when_the_queues_part_or_a_path_falls_silent() {
        let mut c = after(8, |_| 20, |_| 20);
        assert_eq!(c.share(3e6), 0.75);
        // Two rounds of different queues take the score from 8 to 4: still shared; a third not.
        for r in 9..=11 {
            let mut all = Aggregate::default();
            all.push_path(10_000, Duration::from_millis(50), Some(view(3e6, 20, r)));
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, 60, r)));
            c.on_aggregate(&all);
            c.on_round_end(Some(Duration::from_millis(20)), r, 1e6);
        }
        assert_eq!(c.share(3e6), 1.0);
        // A path whose rounds stop advancing is stale after STALE_ROUNDS of this one's.
        let mut c = after(8, |_| 20, |_| 20);
        for r in 0..u64::from(STALE_ROUNDS) {
            let mut all = Aggregate::default();
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, 20, 100)));
            all.push_path(10_000, Duration::from_millis(50), Some(view(1e6, 20, 8)));
            c.on_aggregate(&all);
            c.on_round_end(Some(Duration::from_millis(20)), 9 + r, 1e6);
        }
        assert_eq!(c.share(1e6), 1.0);
    }
}
