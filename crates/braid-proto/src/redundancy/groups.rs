//! The XOR modes' bookkeeping of parity groups: which losses a group's parity repairs and
//! which it cannot, decided at the sender from acknowledgements.
//!
//! XOR recovery is deterministic: the receiver rebuilds a lost member exactly when the parity
//! and every other member of its group arrive. The sender knows each group (it chose it) and
//! learns from packet ACKs which members and parities arrived, so it can tell, without any
//! extra signal, what TCP-dFEC's receiver reports as "FEC recovered" / "FEC failed"
//! (dFEC §III-B) and what Sato et al.'s receiver marks on its ACK (§3.3). This is also Sato
//! et al.'s duplicate-ACK suppression (§3.2) in braid terms: a lost source is *held* — not
//! retransmitted, not reported as congestion — until its group shows it cannot be repaired (a
//! second loss in the group, or the parity lost), and the parity's arrival settles it.

use std::collections::{BTreeMap, VecDeque};

use super::FecAction;
use crate::blocks::XorCover;
use crate::cc::Congestion;
use crate::Instant;

/// A member source's state as far as the sender knows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Member {
    /// Sent, neither acknowledged nor declared lost.
    InFlight,
    Acked,
    /// Declared lost and held.
    Lost {
        path: usize,
        sent: Instant,
    },
    /// Its loss is settled (repaired, or handed back for retransmission).
    Settled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parity {
    /// Made and maybe sent, not yet acknowledged or lost.
    Pending,
    Acked,
    Lost,
}

#[derive(Debug, Clone)]
struct Group {
    first: usize,
    stride: usize,
    count: usize,
    parity: Parity,
    done: bool,
}

impl Group {
    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.count).map(|t| self.first + t * self.stride)
    }

    fn contains(&self, index: usize) -> bool {
        index >= self.first
            && (index - self.first).is_multiple_of(self.stride)
            && (index - self.first) / self.stride < self.count
    }
}

#[derive(Debug, Default)]
struct BlockGroups {
    members: Vec<Member>,
    groups: Vec<Group>,
    /// Sources below this are covered by a group or were left bare.
    covered_to: usize,
}

impl BlockGroups {
    fn member(&mut self, index: usize) -> &mut Member {
        if self.members.len() <= index {
            self.members.resize(index + 1, Member::InFlight);
        }
        &mut self.members[index]
    }

    fn group_of(&self, index: usize) -> Option<usize> {
        self.groups.iter().position(|g| g.contains(index))
    }
}

/// A loss the parity repaired, for tests and statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveredLoss {
    pub block: u64,
    pub index: u16,
}

/// Parity groups of the open blocks and the losses held on them.
#[derive(Debug)]
pub struct GroupTracker {
    blocks: BTreeMap<u64, BlockGroups>,
    actions: VecDeque<FecAction>,
    /// What a repaired loss tells the congestion controller (`None`: nothing, dFEC).
    on_repaired: Option<Congestion>,
    /// Losses the parity repaired / could not repair (the receiver's "FEC recovered" and
    /// "FEC failed" of dFEC §III-B).
    pub recovered: u64,
    pub failed: u64,
    /// Blocks below this are held whole by the receiver and forgotten here.
    released: u64,
    /// Each repaired source is also reported ([`FecAction::Repaired`]).
    pub report_repairs: bool,
}

impl GroupTracker {
    pub fn new(on_repaired: Option<Congestion>) -> GroupTracker {
        GroupTracker {
            blocks: BTreeMap::new(),
            actions: VecDeque::new(),
            on_repaired,
            recovered: 0,
            failed: 0,
            released: 0,
            report_repairs: false,
        }
    }

    /// Groups were made over `cover.start..cover.end`; sources skipped before `start` lose
    /// their chance of repair.
    pub fn on_cover(&mut self, cover: &XorCover) {
        if cover.block < self.released {
            return;
        }
        let b = self.blocks.entry(cover.block).or_default();
        for index in b.covered_to..cover.start {
            if let Member::Lost { path, sent } = *b.member(index) {
                *b.member(index) = Member::Settled;
                self.failed += 1;
                self.actions.push_back(FecAction::Retransmit { block: cover.block, index: index as u16 });
                self.actions.push_back(FecAction::Congestion { path, sent, signal: Congestion::Loss });
            }
        }
        let span = cover.end - cover.start;
        let g = cover.interleave.max(1);
        let first_new = b.groups.len();
        for j in 0..g.min(span) {
            b.groups.push(Group {
                first: cover.start + j,
                stride: g,
                count: (span - j).div_ceil(g),
                parity: Parity::Pending,
                done: false,
            });
        }
        b.covered_to = b.covered_to.max(cover.end);
        let total = b.groups.len();
        for gi in first_new..total {
            self.evaluate(cover.block, gi);
        }
    }

    /// A source or parity was acknowledged.
    pub fn on_acked(&mut self, block: u64, source: Option<u16>, group: Option<u16>) {
        if block < self.released {
            return;
        }
        let b = self.blocks.entry(block).or_default();
        let gi = match (source, group) {
            (Some(index), _) => {
                let index = usize::from(index);
                let m = b.member(index);
                if *m == Member::InFlight {
                    *m = Member::Acked;
                }
                b.group_of(index)
            }
            (None, Some(first)) => {
                let gi = b.groups.iter().position(|g| g.first == usize::from(first));
                if let Some(gi) = gi {
                    b.groups[gi].parity = Parity::Acked;
                }
                gi
            }
            (None, None) => None,
        };
        if let Some(gi) = gi {
            self.evaluate(block, gi);
        }
    }

    /// A source or parity was declared lost. Returns whether the loss is held (the parity may
    /// still repair it, or the group's outcome will settle it); `false`: nothing can repair it.
    pub fn on_lost(
        &mut self,
        block: u64,
        source: Option<u16>,
        group: Option<u16>,
        path: usize,
        sent: Instant,
    ) -> bool {
        if block < self.released {
            // The receiver decoded the block before the loss was declared: the parity did it.
            if let Some(index) = source {
                self.recovered += 1;
                if let Some(signal) = self.on_repaired {
                    self.actions.push_back(FecAction::Congestion { path, sent, signal });
                }
                if self.report_repairs {
                    self.actions.push_back(FecAction::Repaired { block, index });
                }
            }
            return true;
        }
        let b = self.blocks.entry(block).or_default();
        match (source, group) {
            (Some(index), _) => {
                let index = usize::from(index);
                if *b.member(index) != Member::InFlight {
                    // A copy sent again after its loss was settled: plain retransmission.
                    return false;
                }
                let gi = b.group_of(index);
                if index < b.covered_to && gi.is_none_or(|gi| b.groups[gi].done) {
                    return false;
                }
                *b.member(index) = Member::Lost { path, sent };
                if let Some(gi) = gi {
                    self.evaluate(block, gi);
                }
                true
            }
            (None, Some(first)) => {
                if let Some(gi) = b.groups.iter().position(|g| g.first == usize::from(first)) {
                    b.groups[gi].parity = Parity::Lost;
                    self.evaluate(block, gi);
                }
                true
            }
            (None, None) => false,
        }
    }

    /// Forgets blocks below `below` (the receiver holds them whole).
    pub fn release_below(&mut self, below: u64) {
        self.released = self.released.max(below);
        self.blocks = self.blocks.split_off(&self.released);
    }

    pub fn poll_action(&mut self) -> Option<FecAction> {
        self.actions.pop_front()
    }

    /// Whether source `index` of `block` may still be rebuilt by its group's parity: its group
    /// (or the one a later cover will make) is not settled, has no other member lost and its
    /// parity not lost.
    pub fn may_repair(&self, block: u64, index: u16) -> bool {
        let Some(b) = self.blocks.get(&block) else { return false };
        let index = usize::from(index);
        let Some(gi) = b.group_of(index) else { return index >= b.covered_to };
        let g = &b.groups[gi];
        let others_lost =
            g.members().any(|i| i != index && matches!(b.members.get(i), Some(Member::Lost { .. })));
        !g.done && g.parity != Parity::Lost && !others_lost
    }

    /// Losses held now (for tests).
    pub fn held(&self) -> usize {
        self.blocks.values().flat_map(|b| &b.members).filter(|m| matches!(m, Member::Lost { .. })).count()
    }

    /// Settles group `gi` of `block` if its outcome is known.
    fn evaluate(&mut self, block: u64, gi: usize) {
        let Some(b) = self.blocks.get_mut(&block) else { return };
        let group = &b.groups[gi];
        if group.done {
            return;
        }
        let mut lost = Vec::new();
        let mut in_flight = 0;
        for i in group.members() {
            match b.members.get(i).copied().unwrap_or(Member::InFlight) {
                Member::Lost { path, sent } => lost.push((i, path, sent)),
                Member::InFlight => in_flight += 1,
                Member::Acked | Member::Settled => {}
            }
        }
        let parity = group.parity;
        let failed = lost.len() >= 2 || (!lost.is_empty() && parity == Parity::Lost);
        let repaired = lost.len() == 1 && parity == Parity::Acked && in_flight == 0;
        let clean = lost.is_empty() && in_flight == 0 && parity != Parity::Pending;
        if failed {
            // dFEC §III-B "FEC failed" / Sato §3.2: now the loss signal goes out.
            let newest = lost.iter().max_by_key(|l| l.2).copied().expect("not empty");
            for &(i, _, _) in &lost {
                b.members[i] = Member::Settled;
                self.failed += 1;
                self.actions.push_back(FecAction::Retransmit { block, index: i as u16 });
            }
            self.actions.push_back(FecAction::Congestion {
                path: newest.1,
                sent: newest.2,
                signal: Congestion::Loss,
            });
        } else if repaired {
            let (i, path, sent) = lost[0];
            b.members[i] = Member::Settled;
            self.recovered += 1;
            if let Some(signal) = self.on_repaired {
                self.actions.push_back(FecAction::Congestion { path, sent, signal });
            }
            if self.report_repairs {
                self.actions.push_back(FecAction::Repaired { block, index: i as u16 });
            }
        }
        b.groups[gi].done = failed || repaired || clean;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn drain(g: &mut GroupTracker) -> Vec<FecAction> {
        std::iter::from_fn(|| g.poll_action()).collect()
    }

    #[test]
    fn one_loss_with_its_parity_is_repaired_two_fail() {
        let mut g = GroupTracker::new(Some(Congestion::Repaired { factor: 0.7 }));
        // Sources 0..4 sent; 1 is lost before its group exists: held.
        assert!(g.on_lost(0, Some(1), None, 0, t(1)));
        for i in [0, 2, 3] {
            g.on_acked(0, Some(i), None);
        }
        g.on_cover(&XorCover { block: 0, start: 0, end: 4, interleave: 1 });
        assert!(drain(&mut g).is_empty(), "parity still in flight");
        assert_eq!(g.held(), 1);
        g.on_acked(0, None, Some(0));
        assert_eq!(
            drain(&mut g),
            [FecAction::Congestion { path: 0, sent: t(1), signal: Congestion::Repaired { factor: 0.7 } }]
        );
        assert_eq!((g.recovered, g.failed, g.held()), (1, 0, 0));

        // Second group 4..8: two losses → both retransmitted, one congestion loss, at once.
        g.on_cover(&XorCover { block: 0, start: 4, end: 8, interleave: 1 });
        assert!(g.on_lost(0, Some(5), None, 0, t(2)));
        assert!(drain(&mut g).is_empty());
        assert!(g.on_lost(0, Some(6), None, 0, t(3)));
        assert_eq!(
            drain(&mut g),
            [
                FecAction::Retransmit { block: 0, index: 5 },
                FecAction::Retransmit { block: 0, index: 6 },
                FecAction::Congestion { path: 0, sent: t(3), signal: Congestion::Loss },
            ]
        );
        // The retransmitted copy lost again is a plain loss.
        assert!(!g.on_lost(0, Some(5), None, 0, t(4)));
    }

    #[test]
    fn lost_parity_fails_its_group_and_skipped_sources_are_not_held() {
        let mut g = GroupTracker::new(None);
        g.on_cover(&XorCover { block: 3, start: 0, end: 3, interleave: 1 });
        assert!(g.on_lost(3, Some(2), None, 1, t(5)));
        assert!(g.on_lost(3, None, Some(0), 1, t(6)));
        assert_eq!(
            drain(&mut g),
            [
                FecAction::Retransmit { block: 3, index: 2 },
                FecAction::Congestion { path: 1, sent: t(5), signal: Congestion::Loss },
            ]
        );
        // TCP-IR leaves 3..5 bare: a held loss there is handed back when the cover skips it.
        assert!(g.on_lost(3, Some(4), None, 0, t(7)));
        g.on_cover(&XorCover { block: 3, start: 5, end: 7, interleave: 1 });
        assert_eq!(drain(&mut g)[0], FecAction::Retransmit { block: 3, index: 4 });
        assert!(!g.on_lost(3, Some(3), None, 0, t(8)), "bare source: nothing can repair it");
        g.release_below(4);
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn interleaved_groups_repair_a_burst() {
        let mut g = GroupTracker::new(None);
        // Three interleaved groups over 0..9; a burst loses 3, 4, 5 (one per group).
        for i in (0..9).filter(|i| !(3..6).contains(i)) {
            g.on_acked(7, Some(i), None);
        }
        for i in 3..6 {
            assert!(g.on_lost(7, Some(i), None, 0, t(i.into())));
        }
        g.on_cover(&XorCover { block: 7, start: 0, end: 9, interleave: 3 });
        for first in 0..3 {
            g.on_acked(7, None, Some(first));
        }
        assert!(drain(&mut g).is_empty(), "dFEC: a repaired loss is no congestion");
        assert_eq!((g.recovered, g.failed), (3, 0));
    }
}
