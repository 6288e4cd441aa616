//! Sato, Koga, Ikenaga, "TCP using adaptive FEC to improve throughput performance in
//! high-latency environments" (IEICE Trans. Commun. 2019), §3:
//!
//! - §3.1 redundancy control: XOR group size min(cwnd − 1, l), l = 30, updated when a parity
//!   is sent (at the end of a group);
//! - §3.2 duplicate-ACK suppression: a loss is not signalled until it is known that it cannot be
//!   recovered (a second loss in the group, or the parity lost) — the held losses of
//!   [`GroupTracker`];
//! - §3.3 congestion control: a loss the parity recovered is still congestion, cwnd ← r·cwnd,
//!   r = 0.7 (Eq. 1);
//! - §3.4 interleave control: g = 3 groups interleaved, g = 1 when cwnd < 2g.

use super::GroupingRule;
use crate::blocks::{SendBlock, XorCover};
use crate::cc::Congestion;
use crate::view::PathView;
use crate::Instant;

/// Sato et al.'s parameters; defaults are the paper's best (§5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SatoConfig {
    /// Upper limit l on the group size (30; 30–40 measured best); 0 means no limit (§4:
    /// "l of 0 means that the proposed scheme does not limit group size").
    pub limit: usize,
    /// Reduction factor r for a recovered loss (0.7).
    pub reduction: f64,
    /// Interleaved groups g (3, the transient-state best; 2 in steady state).
    pub interleave: usize,
}

impl Default for SatoConfig {
    fn default() -> Self {
        SatoConfig { limit: 30, reduction: 0.7, interleave: 3 }
    }
}

/// Sato et al.'s grouping rule (run by [`super::XorGroups`]).
#[derive(Debug)]
pub struct Sato {
    config: SatoConfig,
    /// (group size, groups interleaved) of the window being filled, fixed when its parities
    /// were last sent.
    layout: Option<(usize, usize)>,
}

impl Default for Sato {
    fn default() -> Self {
        Sato::new(SatoConfig::default())
    }
}

impl Sato {
    pub fn new(config: SatoConfig) -> Sato {
        Sato { config, layout: None }
    }

    /// §3.1 and §3.4: g groups, g = 1 when cwnd < 2g, interleaved within one cwnd, each of
    /// min(cwnd / g − 1, l) segments and its parity (with g = 1: §3.1's min(cwnd − 1, l));
    /// `cwnd` in packets. Groups of cwnd − 1 each would spread the g interleaved groups over
    /// g windows, and hold a loss (duplicate-ACK suppression) for as many round trips.
    pub fn layout_for(&self, cwnd: u64) -> (usize, usize) {
        let cwnd = cwnd.max(1) as usize;
        let g = self.config.interleave.max(1);
        let g = if cwnd < 2 * g { 1 } else { g };
        let limit = if self.config.limit == 0 { usize::MAX } else { self.config.limit };
        let size = (cwnd / g).saturating_sub(1).clamp(1, limit);
        (size, g)
    }

    /// The layout of the window being filled.
    pub fn layout(&self) -> Option<(usize, usize)> {
        self.layout
    }
}

impl GroupingRule for Sato {
    fn name(&self) -> &'static str {
        "sato"
    }

    /// §3.3: a loss the parity recovered is still congestion, cwnd ← r·cwnd.
    fn on_repaired(&self) -> Option<Congestion> {
        Some(Congestion::Repaired { factor: self.config.reduction })
    }

    /// When g × size segments of the window are sent, their g interleaved parities follow
    /// (Fig. 3) and the next window's layout is taken from cwnd; a block's tail is covered when
    /// the block is complete and sent, or when the sender has nothing more to send for now.
    fn covers(
        &mut self,
        _now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover> {
        let next = self.layout_for(path.window / path.mss.max(1));
        let blocks: Vec<&SendBlock> = blocks.collect();
        let idle = blocks.iter().all(|b| b.all_sources_sent());
        let mut covers = Vec::new();
        for b in blocks {
            let mut r = b.uncovered_sent();
            loop {
                let (size, g) = *self.layout.get_or_insert(next);
                let window = size * g;
                let end = if r.len() >= window {
                    r.start + window
                } else if !r.is_empty() && b.all_sources_sent() && (b.closed || idle) {
                    r.end
                } else {
                    break;
                };
                covers.push(XorCover { block: b.id, start: r.start, end, interleave: g });
                r.start = end;
                self.layout = Some(next);
            }
        }
        covers
    }

    /// §3.2: a lost source is held while its group's parity can repair it. A lost parity alone
    /// is not a loss the receiver sees (no gap in the data), so it is only fatal to its group.
    /// TCP's three duplicate ACKs, stated so that loss detection also keeps its time-threshold
    /// timer strict (see `Path::set_packet_threshold`).
    fn packet_threshold(&self) -> u64 {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::OutgoingSymbol;
    use crate::cc::CcAlgorithm;
    use crate::redundancy::testing::{parity, send, sender, view};
    use crate::redundancy::{FecAction, ParityGroups, XorGroups};

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    #[test]
    fn group_size_follows_cwnd_and_interleave_drops_to_one_below_2g() {
        let s = Sato::default();
        // min(cwnd / 3 − 1, 30), the 3 groups and their parities within one cwnd; g = 3
        // unless cwnd < 6, then min(cwnd − 1, 30).
        assert_eq!(s.layout_for(100), (30, 3));
        assert_eq!(s.layout_for(93), (30, 3));
        assert_eq!(s.layout_for(92), (29, 3));
        assert_eq!(s.layout_for(31), (9, 3));
        assert_eq!(s.layout_for(20), (5, 3));
        assert_eq!(s.layout_for(6), (1, 3));
        assert_eq!(s.layout_for(5), (4, 1));
        assert_eq!(s.layout_for(2), (1, 1));
        assert_eq!(s.layout_for(1), (1, 1));
        // l = 0: no limit (Table 1's unlimited point).
        let s = Sato::new(SatoConfig { limit: 0, ..SatoConfig::default() });
        assert_eq!(s.layout_for(100), (32, 3));
        assert_eq!(s.layout_for(400), (132, 3));
        assert_eq!(s.layout_for(5), (4, 1));
    }

    #[test]
    fn layout_is_updated_when_the_parities_are_sent() {
        let mut s = XorGroups::new(Sato::default());
        let mut tx = sender(200);
        // cwnd 30: groups of 9, 3 interleaved — a window of 27 segments (and 3 parities).
        send(&mut tx, 26);
        assert!(s.parity_covers(ms(0), &mut tx.blocks(), &view(30, 50)).is_empty());
        assert_eq!(s.rule().layout(), Some((9, 3)));
        send(&mut tx, 1);
        // cwnd is 4 by now, but the window's layout was fixed when it began.
        let covers = s.parity_covers(ms(1), &mut tx.blocks(), &view(4, 50));
        assert_eq!(covers, [XorCover { block: 0, start: 0, end: 27, interleave: 3 }]);
        assert!(tx.cover(covers[0]));
        let groups: Vec<Option<u16>> = (0..3).map(|_| parity(&mut tx, 0).group).collect();
        assert_eq!(groups, [Some(0), Some(1), Some(2)]);
        // The next window takes cwnd 4: groups of 3, no interleaving.
        assert_eq!(s.rule().layout(), Some((3, 1)));
        send(&mut tx, 3);
        assert_eq!(
            s.parity_covers(ms(2), &mut tx.blocks(), &view(40, 50)),
            [XorCover { block: 0, start: 27, end: 30, interleave: 1 }]
        );
        assert_eq!(s.rule().layout(), Some((12, 3)));
    }

    #[test]
    fn losses_are_held_until_known_unrecoverable_and_a_repaired_one_cuts_cwnd_by_r() {
        let mut s = XorGroups::new(Sato::default());
        let mut tx = sender(200);
        let path = view(30, 50);
        let sent = send(&mut tx, 27);
        let cover = s.parity_covers(ms(0), &mut tx.blocks(), &path)[0];
        assert!(tx.cover(cover));
        let parities: Vec<OutgoingSymbol> = (0..3).map(|_| parity(&mut tx, 0)).collect();
        // A burst of 3 (sources 3, 4, 5) hits three different groups: all held, no signal.
        for lost in &sent[3..6] {
            assert!(s.take_loss(ms(1), 0, *lost, ms(0)));
        }
        assert_eq!(s.poll_action(), None, "duplicate-ACK suppression");
        for x in sent.iter().filter(|x| !matches!(x.source, Some(3..=5))).chain(&parities) {
            s.on_symbol_acked(ms(2), *x);
        }
        let actions: Vec<FecAction> = std::iter::from_fn(|| s.poll_action()).collect();
        assert_eq!(actions.len(), 3);
        assert!(actions.iter().all(|a| matches!(
            a,
            FecAction::Congestion { signal: Congestion::Repaired { factor }, .. } if *factor == 0.7
        )));
        assert_eq!(s.outcomes(), (3, 0));
        // The repaired loss applied to Sato's NewReno: cwnd × 0.7 (once per round trip).
        let mut cc = CcAlgorithm::NewReno.build(1000);
        let before = cc.window();
        if let FecAction::Congestion { sent, signal, .. } = actions[0] {
            cc.on_congestion(ms(3), sent, signal);
        }
        assert_eq!(cc.window(), (before as f64 * 0.7).round() as u64);

        // Next window (cwnd 30 again): a second loss in a group ends the suppression at once.
        let sent = send(&mut tx, 27);
        let cover = s.parity_covers(ms(4), &mut tx.blocks(), &path)[0];
        assert!(tx.cover(cover));
        assert!(s.take_loss(ms(5), 0, sent[0], ms(4)));
        assert_eq!(s.poll_action(), None);
        assert!(s.take_loss(ms(5), 0, sent[3], ms(4)), "same group (stride 3)");
        let actions: Vec<FecAction> = std::iter::from_fn(|| s.poll_action()).collect();
        assert_eq!(
            actions,
            [
                FecAction::Retransmit { block: 0, index: 27 },
                FecAction::Retransmit { block: 0, index: 30 },
                FecAction::Congestion { path: 0, sent: ms(4), signal: Congestion::Loss },
            ]
        );
    }
}
