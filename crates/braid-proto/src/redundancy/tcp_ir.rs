//! TCP-IR (Flach et al., "Reducing web latency: the virtue of gentle aggression", SIGCOMM 2013),
//! as the TCP-dFEC paper describes it (§II, §III-A/B) and keeps it as a baseline: one XOR parity
//! every RTT/4 over what was sent since the last parity, at most 16 segments, at a fixed rate
//! that ignores cwnd; a loss the parity cannot repair falls back to TCP's retransmission; both
//! repaired and failed losses count in congestion control (dFEC §III-B: "In TCP-IR, both
//! successful and failed FECs are used in the feedback, and integrated into the congestion
//! control").

use std::time::Duration;

use super::{FecAction, GroupTracker, PathView, RedundancyController};
use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::cc::Congestion;
use crate::Instant;

/// Segments one parity covers at most (TCP-IR encodes up to 16 packets; Sato et al. §2).
pub const MAX_COVERED: usize = 16;

#[derive(Debug)]
pub struct TcpIr {
    groups: GroupTracker,
    /// Start of the current RTT/4 interval: set by the first segment sent after a parity.
    interval_start: Option<Instant>,
    srtt: Duration,
}

impl Default for TcpIr {
    fn default() -> Self {
        TcpIr::new()
    }
}

impl TcpIr {
    pub fn new() -> TcpIr {
        // A loss the parity repaired still reduces the window as TCP's loss would.
        TcpIr {
            groups: GroupTracker::new(Some(Congestion::Loss)),
            interval_start: None,
            srtt: Duration::from_millis(333),
        }
    }

    /// The parity clock: RTT/4.
    fn period(&self) -> Duration {
        (self.srtt / 4).max(Duration::from_millis(1))
    }

    /// Losses the parity repaired / could not.
    pub fn outcomes(&self) -> (u64, u64) {
        (self.groups.recovered, self.groups.failed)
    }
}

impl RedundancyController for TcpIr {
    fn name(&self) -> &'static str {
        "tcp-ir"
    }

    fn repairs_wanted(&self, block: &SendBlock, _path: &PathView) -> u64 {
        block.pending_parities()
    }

    fn on_event(&mut self, now: Instant, event: super::RedundancyEvent, path: &PathView) {
        self.srtt = path.smoothed_rtt;
        if let super::RedundancyEvent::Sent { repair: false, retransmission: false } = event {
            self.interval_start.get_or_insert(now);
        }
    }

    fn groups_at_send_time(&self) -> bool {
        true
    }

    /// Every RTT/4, one parity per block over the newest ≤ 16 segments sent since the last
    /// parity; older uncovered segments stay bare (TCP-IR's fixed rate).
    fn parity_covers(
        &mut self,
        now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover> {
        self.srtt = path.smoothed_rtt;
        let Some(start) = self.interval_start else { return Vec::new() };
        if now < start + self.period() {
            return Vec::new();
        }
        self.interval_start = None;
        let covers: Vec<XorCover> = blocks
            .filter_map(|b| {
                let r = b.uncovered_sent();
                (!r.is_empty()).then(|| XorCover {
                    block: b.id,
                    start: r.start.max(r.end.saturating_sub(MAX_COVERED)),
                    end: r.end,
                    interleave: 1,
                })
            })
            .collect();
        for c in &covers {
            self.groups.on_cover(c);
        }
        covers
    }

    fn repair_ignores_window(&self) -> bool {
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.interval_start.map(|s| s + self.period())
    }

    /// TCP's three duplicate ACKs, stated so that loss detection also keeps its time-threshold
    /// timer strict (see `Path::set_packet_threshold`).
    fn packet_threshold(&self) -> Option<u64> {
        Some(3)
    }

    fn take_loss(&mut self, _now: Instant, path: usize, s: OutgoingSymbol, sent: Instant) -> bool {
        self.groups.on_lost(s.block, s.source, s.group, path, sent)
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
