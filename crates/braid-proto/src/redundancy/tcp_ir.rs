//! TCP-IR (Flach et al., "Reducing web latency: the virtue of gentle aggression", SIGCOMM 2013),
//! as the TCP-dFEC paper describes it (§II, §III-A/B) and keeps it as a baseline: one XOR parity
//! every RTT/4 over what was sent since the last parity, at most 16 segments, at a fixed rate
//! that ignores cwnd; a loss the parity cannot repair falls back to TCP's retransmission; both
//! repaired and failed losses count in congestion control (dFEC §III-B: "In TCP-IR, both
//! successful and failed FECs are used in the feedback, and integrated into the congestion
//! control").

use std::time::Duration;

use super::{GroupingRule, RedundancyEvent};
use crate::blocks::{SendBlock, XorCover};
use crate::cc::Congestion;
use crate::view::PathView;
use crate::Instant;

/// Segments one parity covers at most (TCP-IR encodes up to 16 packets; Sato et al. §2).
pub const MAX_COVERED: usize = 16;

/// TCP-IR's grouping rule (run by [`super::XorGroups`]).
#[derive(Debug)]
pub struct TcpIr {
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
        TcpIr { interval_start: None, srtt: Duration::from_millis(333) }
    }

    /// The parity clock: RTT/4.
    fn period(&self) -> Duration {
        (self.srtt / 4).max(Duration::from_millis(1))
    }
}

impl GroupingRule for TcpIr {
    fn name(&self) -> &'static str {
        "tcp-ir"
    }

    /// A loss the parity repaired still reduces the window as TCP's loss would.
    fn on_repaired(&self) -> Option<Congestion> {
        Some(Congestion::Loss)
    }

    fn on_event(&mut self, now: Instant, event: RedundancyEvent, path: &PathView) {
        self.srtt = path.smoothed_rtt;
        if let RedundancyEvent::Sent { repair: false, retransmission: false } = event {
            self.interval_start.get_or_insert(now);
        }
    }

    /// Every RTT/4, one parity per block over the newest ≤ 16 segments sent since the last
    /// parity; older uncovered segments stay bare (TCP-IR's fixed rate).
    fn covers(
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
        blocks
            .filter_map(|b| {
                let r = b.uncovered_sent();
                (!r.is_empty()).then(|| XorCover {
                    block: b.id,
                    start: r.start.max(r.end.saturating_sub(MAX_COVERED)),
                    end: r.end,
                    interleave: 1,
                })
            })
            .collect()
    }

    fn repair_ignores_window(&self) -> bool {
        true
    }

    fn poll_timeout(&self, _path: &PathView) -> Option<Instant> {
        self.interval_start.map(|s| s + self.period())
    }

    /// TCP's three duplicate ACKs, stated so that loss detection also keeps its time-threshold
    /// timer strict (see `Path::set_packet_threshold`).
    fn packet_threshold(&self) -> u64 {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redundancy::testing::{parity, send, sender, view};
    use crate::redundancy::{FecAction, ParityGroups, RedundancyController, XorGroups};

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    const SENT: RedundancyEvent = RedundancyEvent::Sent { repair: false, retransmission: false };

    #[test]
    fn one_parity_per_quarter_rtt_over_at_most_16() {
        let mut ir = XorGroups::new(TcpIr::new());
        let mut tx = sender(100);
        let path = view(10, 100); // RTT/4 = 25 ms; a window of 10 does not matter to TCP-IR
        assert!(ir.repair_ignores_window());
        for _ in send(&mut tx, 40) {
            ir.on_event(ms(0), SENT, &path);
        }
        assert_eq!(ir.poll_timeout(&path), Some(ms(25)));
        assert!(ir.parity_covers(ms(24), &mut tx.blocks(), &path).is_empty(), "not yet");
        // At RTT/4: one parity, over the 16 newest of the 40 sent; 0..24 stay bare.
        let covers = ir.parity_covers(ms(25), &mut tx.blocks(), &path);
        assert_eq!(covers, [XorCover { block: 0, start: 24, end: 40, interleave: 1 }]);
        assert!(tx.cover(covers[0]));
        assert_eq!(ir.repairs_wanted(tx.blocks().next().unwrap(), &path), 1);
        let p = parity(&mut tx, 0);
        assert_eq!(p.group, Some(24));
        // Nothing sent since: no clock, no parity.
        assert_eq!(ir.poll_timeout(&path), None);
        assert!(ir.parity_covers(ms(60), &mut tx.blocks(), &path).is_empty());
        // Five more from t = 70: the next parity at 95 covers exactly them.
        for _ in send(&mut tx, 5) {
            ir.on_event(ms(70), SENT, &path);
        }
        assert!(ir.parity_covers(ms(94), &mut tx.blocks(), &path).is_empty());
        assert_eq!(
            ir.parity_covers(ms(95), &mut tx.blocks(), &path),
            [XorCover { block: 0, start: 40, end: 45, interleave: 1 }]
        );
    }

    #[test]
    fn a_bare_loss_falls_back_to_retransmission_and_a_repaired_one_is_congestion() {
        let mut ir = XorGroups::new(TcpIr::new());
        let mut tx = sender(100);
        let path = view(10, 100);
        let sent = send(&mut tx, 20);
        for _ in &sent {
            ir.on_event(ms(0), SENT, &path);
        }
        // Source 1 (left bare by the cover of 4..20) and source 10 (covered) are lost.
        assert!(ir.take_loss(ms(1), 0, sent[1], ms(0)), "held until its fate is known");
        assert!(ir.take_loss(ms(1), 0, sent[10], ms(0)));
        let cover = ir.parity_covers(ms(25), &mut tx.blocks(), &path)[0];
        assert!(tx.cover(cover));
        assert_eq!(ir.poll_action(), Some(FecAction::Retransmit { block: 0, index: 1 }));
        assert_eq!(
            ir.poll_action(),
            Some(FecAction::Congestion { path: 0, sent: ms(0), signal: Congestion::Loss })
        );
        for s in sent.iter().skip(4).filter(|s| s.source != Some(10)) {
            ir.on_symbol_acked(ms(30), *s);
        }
        assert_eq!(ir.poll_action(), None, "parity still in flight");
        ir.on_symbol_acked(ms(31), parity(&mut tx, 0));
        // Repaired, but TCP-IR still counts it as congestion.
        assert_eq!(
            ir.poll_action(),
            Some(FecAction::Congestion { path: 0, sent: ms(0), signal: Congestion::Loss })
        );
        assert_eq!(ir.outcomes(), (1, 1));
    }
}
