//! TCP-dFEC (Ferlin et al., "MPTCP meets FEC: supporting latency-sensitive applications over
//! heterogeneous networks", §III): XOR FEC inside TCP with a dynamic ratio.
//!
//! - §III-A: one XOR parity after every `ratio` data segments (an FEC block); the DupACK
//!   threshold is the current FEC block size, so fast retransmit does not fire before the
//!   block's parity could arrive ([`RedundancyController::packet_threshold`]).
//! - §III-B (i) "Respect CWND": FEC is sent only when cwnd has room (the connection's normal
//!   rule); cwnd is reduced only when FEC fails or is lost — a loss the parity repaired does not
//!   reduce it; an acknowledged parity grows cwnd like data.
//! - §III-B (ii) the ratio adapts on residual loss, Eqs. (1)–(3), see [`Dfec::close_interval`].

use std::collections::VecDeque;
use std::time::Duration;

use super::{FecAction, GroupTracker, PathView, RedundancyController, RedundancyEvent};
use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::Instant;

/// dFEC's parameters, defaults from §III-B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DfecConfig {
    /// Starting ratio: 9, one FEC in TCP's initial window.
    pub start_ratio: f64,
    /// Correction rate δ = 0.33.
    pub delta: f64,
    /// Target residual loss ("tolerance") 1 %.
    pub target: f64,
    /// Ratio bounds [4, 256]: at most 20 % overhead; 256 bounds receiver buffering.
    pub min_ratio: f64,
    pub max_ratio: f64,
    /// Measurement period T = 3 RTT.
    pub period_rtts: u32,
    /// Periods averaged, N = 2.
    pub periods: usize,
}

impl Default for DfecConfig {
    fn default() -> Self {
        DfecConfig {
            start_ratio: 9.0,
            delta: 0.33,
            target: 0.01,
            min_ratio: 4.0,
            max_ratio: 256.0,
            period_rtts: 3,
            periods: 2,
        }
    }
}

#[derive(Debug)]
pub struct Dfec {
    config: DfecConfig,
    groups: GroupTracker,
    ratio: f64,
    interval_start: Option<Instant>,
    /// Data segments sent in the current period, and how many of them were retransmissions.
    total: u64,
    retransmitted: u64,
    /// Residual_i of the last N periods.
    history: VecDeque<f64>,
}

impl Default for Dfec {
    fn default() -> Self {
        Dfec::new(DfecConfig::default())
    }
}

impl Dfec {
    pub fn new(config: DfecConfig) -> Dfec {
        Dfec {
            config,
            // A repaired loss tells the congestion controller nothing (§III-B (i)).
            groups: GroupTracker::new(None),
            ratio: config.start_ratio,
            interval_start: None,
            total: 0,
            retransmitted: 0,
            history: VecDeque::new(),
        }
    }

    /// Data segments per parity now.
    pub fn ratio(&self) -> usize {
        self.ratio.round() as usize
    }

    /// Losses the parity repaired / could not ("FEC recovered" / "FEC failed").
    pub fn outcomes(&self) -> (u64, u64) {
        (self.groups.recovered, self.groups.failed)
    }

    /// Ends a period T: Eq. (1) Residual_i = Retransmit / (Total − Retransmit); Eq. (2) the mean
    /// of the last N; Eq. (3) ratio ×= (1 − δ) above the target, else ×= (1 + δ), clamped.
    fn close_interval(&mut self) {
        let first_sent = self.total.saturating_sub(self.retransmitted);
        let residual = match (self.retransmitted, first_sent) {
            (0, _) => 0.0,
            (r, 0) => r as f64,
            (r, f) => r as f64 / f as f64,
        };
        self.history.push_back(residual);
        while self.history.len() > self.config.periods.max(1) {
            self.history.pop_front();
        }
        let mean = self.history.iter().sum::<f64>() / self.history.len() as f64;
        let c = &self.config;
        let factor = if mean > c.target { 1.0 - c.delta } else { 1.0 + c.delta };
        self.ratio = (self.ratio * factor).clamp(c.min_ratio, c.max_ratio);
        self.total = 0;
        self.retransmitted = 0;
    }
}

impl RedundancyController for Dfec {
    fn name(&self) -> &'static str {
        "dfec"
    }

    fn repairs_wanted(&self, block: &SendBlock, _path: &PathView) -> u64 {
        block.pending_parities()
    }

    fn on_event(&mut self, now: Instant, event: RedundancyEvent, path: &PathView) {
        let RedundancyEvent::Sent { repair: false, retransmission } = event else { return };
        let period = path.smoothed_rtt.max(Duration::from_millis(1)) * self.config.period_rtts;
        let start = *self.interval_start.get_or_insert(now);
        if now >= start + period {
            self.close_interval();
            self.interval_start = Some(now);
        }
        self.total += 1;
        self.retransmitted += u64::from(retransmission);
    }

    fn groups_at_send_time(&self) -> bool {
        true
    }

    /// A parity after every `ratio` segments sent; a block's tail gets one when the block is
    /// complete and sent (groups do not span blocks).
    fn parity_covers(
        &mut self,
        _now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        _path: &PathView,
    ) -> Vec<XorCover> {
        let ratio = self.ratio().max(1);
        let mut covers = Vec::new();
        for b in blocks {
            let mut r = b.uncovered_sent();
            while r.len() >= ratio {
                covers.push(XorCover { block: b.id, start: r.start, end: r.start + ratio, interleave: 1 });
                r.start += ratio;
            }
            if !r.is_empty() && b.closed && b.all_sources_sent() {
                covers.push(XorCover { block: b.id, start: r.start, end: r.end, interleave: 1 });
            }
        }
        for c in &covers {
            self.groups.on_cover(c);
        }
        covers
    }

    fn packet_threshold(&self) -> Option<u64> {
        Some(self.ratio() as u64)
    }

    /// A lost source is held while its parity can repair it; a lost parity is congestion at
    /// once (§III-B (i): cwnd is reduced "only if FEC is lost or fails").
    fn take_loss(&mut self, _now: Instant, path: usize, s: OutgoingSymbol, sent: Instant) -> bool {
        let held = self.groups.on_lost(s.block, s.source, s.group, path, sent);
        held && !s.is_repair()
    }

    fn on_symbol_acked(&mut self, _now: Instant, s: OutgoingSymbol) {
        self.groups.on_acked(s.block, s.source, s.group);
    }

    fn on_blocks_released(&mut self, below: u64) {
        self.groups.release_below(below);
    }

    fn poll_action(&mut self) -> Option<FecAction> {
        self.groups.poll_action()
    }
}
