//! The competing-flow test of braid's controller (see the parent module's comment, "a small
//! standing queue"): whether a queue this flow is not making belongs to a buffer-filling
//! competitor, whether that competitor is blind to loss, and the loss bound's floor beside it.

use super::*;
use crate::Instant;

/// Of the last [`LOSS_HISTORY`] rounds, how many must lose [`LOSSES_PER_LOSS_ROUND`] packets
/// with a queue behind them while a competitor's queue stands for the competitor to count as
/// loss-blind (kernel BBRv1): then a loss is no reason to yield. A CUBIC or Reno competitor backs off after each overflow, so
/// its losses come once every few dozen rounds.
const LOSS_BLIND_ROUNDS: u32 = 6;
const LOSS_HISTORY: u32 = 16;
/// Losses with a queue behind them that make a round a loss round: one could be random loss
/// (at 1 % random loss a flow of 50 packets a round loses one in 40 % of its rounds, two in 9 %).
const LOSSES_PER_LOSS_ROUND: u64 = 2;
/// Beside a loss-blind competitor, the share of a round's packets lost with a queue above which
/// braid still yields (see `on_round_losses`): kernel BBRv1's own policer threshold, 50 / 256
/// (Linux `tcp_bbr.c`, `bbr_lt_loss_thresh`), the loss rate at which that competitor too
/// stops calling loss noise.
const HEAVY_LOSS: f64 = 50.0 / 256.0;
/// Drains in a row that leave the queue standing before the cap relaxes.
const COMPETING_DRAINS: u32 = 2;

impl ModelCc {
    /// A round's end while cruising (CRUISE, REFILL): the competing-flow test (Copa's
    /// competitive mode; see the parent module's comment). `high`: the round's smallest RTT
    /// showed a queue.
    pub(super) fn on_cruise_round(&mut self, high: bool, now: Instant) {
        if !high {
            // A round without a queue does not end competition: kernel BBR drains the queue for
            // 200 ms every 10 s (ProbeRTT), and forgetting the competitor there handed it the
            // link again. Only a drain that empties the queue does (`on_drained`).
            self.high_rtt_rounds = 0;
            if !self.competing {
                self.failed_drains = 0;
            }
            return;
        }
        if self.competing {
            return;
        }
        // A queue while this flow has no more than its BDP in flight is not its own.
        let own_bdp = self.bdp().unwrap_or(0.0) + self.mss as f64;
        if (self.in_flight as f64) <= own_bdp {
            self.failed_drains += 1;
            self.emptied_drains = 0;
            self.competing = self.failed_drains >= 2 * COMPETING_DRAINS;
            return;
        }
        // A queue while cruising: first suppose it is this flow's own (a bandwidth estimate a
        // little high) and drain it, as Copa checks that its queue empties.
        self.high_rtt_rounds += 1;
        if self.high_rtt_rounds >= 2 {
            self.high_rtt_rounds = 0;
            self.enter(State::Down, now);
        }
    }

    /// Leaving DOWN: if the queue outlived a drain twice in a row, it is a competitor's
    /// (Copa's competitive mode; see the parent module's comment).
    pub(super) fn on_drained(&mut self) {
        let Some(min) = self.min_rtt() else { return };
        // The lowest RTT seen while draining: if even that shows a queue, the queue outlived it.
        let high = self.down_min_rtt.is_some_and(|r| r > min + Self::delay_threshold(min));
        if high {
            self.failed_drains += 1;
            self.emptied_drains = 0;
            self.competing |= self.failed_drains >= COMPETING_DRAINS;
        } else {
            // A BBR competitor empties the queue for its ProbeRTT (200 ms and a round, every
            // 10 s). One drain that falls there does not end competition: braid then cut its
            // loss bound by β at the competitor's returning queue and never regrew it (beside
            // two kernel BBR flows at 1 % loss, fair share 5 Mbit/s, its estimate fell from 6.1
            // to 3.0 Mbit/s in the next 4 s). Drains a cycle apart that both empty it do.
            self.failed_drains = 0;
            self.emptied_drains += 1;
            if self.emptied_drains >= COMPETING_DRAINS {
                self.competing = false;
                self.blind_competitor = false;
            }
        }
    }

    /// At a round's end: whether it was a loss round, and beside a loss-blind competitor, whether
    /// it lost so much that braid must give way after all. Such a competitor takes every loss as
    /// noise, but a drop rate of tens of per cent is not noise to anyone: kernel BBRv1 reads a
    /// loss rate of 20 % as a policer and caps itself for dozens of rounds (Linux `tcp_bbr.c`,
    /// long-term bandwidth sampling), and braid's flows, blind to loss too, then took the link.
    pub(super) fn on_round_losses(&mut self) {
        let losses = self.round_losses;
        let packets = self.round_delivered / self.mss + losses;
        self.loss_rounds = (self.loss_rounds << 1) | u32::from(losses >= LOSSES_PER_LOSS_ROUND);
        // Once judged, the competitor stays loss-blind until competition ends: its ProbeRTT
        // and the refill after it bring a dozen rounds without overflow, and braid, cutting at
        // every loss again, lost so much rate that its own rounds no longer saw two losses.
        let recent = self.loss_rounds & ((1u32 << LOSS_HISTORY) - 1);
        self.blind_competitor |= self.competing && recent.count_ones() >= LOSS_BLIND_ROUNDS;
        if self.loss_blind_competitor() && losses as f64 > HEAVY_LOSS * packets as f64 {
            self.cut_inflight_hi(COMPETING_BETA);
        }
        self.round_losses = 0;
        self.round_delivered = 0;
    }

    /// Bounds in flight to β × what is in flight now, never below [`Self::loss_bound_floor`].
    pub(super) fn cut_inflight_hi(&mut self, beta: f64) {
        self.inflight_hi = Some((self.in_flight as f64 * beta).max(self.loss_bound_floor()));
    }

    /// Competing with a buffer-filling flow, as this path's own: of the connection's paths
    /// through one bottleneck only the one that carries the most competes (`coupling.rs`).
    pub(super) fn competes(&self) -> bool {
        self.competing && self.coupling.leads(self.bandwidth)
    }

    /// The lowest loss bound: the cruising window, and beside a competitor's queue what keeps
    /// braid's rate at the RTT that queue sets. A bound under that rate lowers the delivery
    /// rate, so the bandwidth estimate and the next bound with it, until braid had nothing left.
    pub(super) fn loss_bound_floor(&self) -> f64 {
        let cruising = CRUISE_CWND_GAIN * self.bdp().unwrap_or(0.0);
        let at_queue = if self.competes() {
            COMPETING_BETA
                * self.paced_bandwidth()
                * self.last_round_min_rtt.unwrap_or_default().as_secs_f64()
        } else {
            0.0
        };
        cruising.max(at_queue).max((4 * self.mss) as f64)
    }

    /// A competitor's queue stands and, at some point in this competition, congestion losses
    /// came in most of 16 rounds: the competitor does not back off on loss (see
    /// [`LOSS_BLIND_ROUNDS`]; the verdict is kept until competition ends, `on_round_losses`).
    pub(super) fn loss_blind_competitor(&self) -> bool {
        self.competes() && self.blind_competitor
    }
}
