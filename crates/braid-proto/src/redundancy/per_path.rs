//! Where a block's repair goes: on the path that carried the block (MPTCP-dFEC's intra-subflow
//! FEC, dFEC paper §III-C) or on any path (FMTCP §IV: a block's symbols, new ones for lost ones
//! included, go on whichever subflow the allocation picks). And [`PerPath`], which gives every
//! path its own XOR-group controller (MPTCP-dFEC's per-subflow TCP-dFEC).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::{FecAction, ParityGroups, RedundancyController, RedundancyEvent};
use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::view::{PathView, SymbolEvent};
use crate::Instant;

/// Where repair symbols may travel; flags map straight to it (`--placement per-path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairPlacement {
    /// Each block is mapped whole onto one path — the one that sends its first source symbol —
    /// and its sources, repairs and retransmissions stay there (MPTCP-dFEC: every subflow
    /// protects what it carries; a DSS-style mapping, the symbol header's block and index,
    /// puts a repaired packet back into the connection stream).
    PerPath,
    /// Any symbol of any block may go on any path (FMTCP).
    AcrossPaths,
}

impl RepairPlacement {
    pub const ALL: [RepairPlacement; 2] = [RepairPlacement::PerPath, RepairPlacement::AcrossPaths];

    pub fn name(self) -> &'static str {
        match self {
            RepairPlacement::PerPath => "per-path",
            RepairPlacement::AcrossPaths => "across-paths",
        }
    }
}

impl fmt::Display for RepairPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RepairPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RepairPlacement::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            format!("unknown repair placement `{s}` (expected one of: per-path, across-paths)")
        })
    }
}

/// Most paths a connection has (one controller each).
const MAX_PATHS: usize = crate::wire::MAX_PATHS as usize;

/// One XOR-group controller per path, for per-path placement: each path's controller sees
/// only that path's symbols, losses and blocks (MPTCP-dFEC: each subflow runs its own TCP-dFEC,
/// with its own groups, ratio and DupACK threshold). Blocks are routed by the path they are
/// mapped to ([`SendBlock::path`]).
#[derive(Debug)]
pub struct PerPath<C> {
    paths: Vec<C>,
    /// The path each open block was first sent on: its controller keeps the block's groups and
    /// losses to the end, even if a probe timeout later lets the block's data go on another
    /// path (acknowledgements carry no path, and a block's groups must be judged in one place).
    owner: BTreeMap<u64, u8>,
}

impl<C: Default> Default for PerPath<C> {
    fn default() -> Self {
        PerPath { paths: (0..MAX_PATHS).map(|_| C::default()).collect(), owner: BTreeMap::new() }
    }
}

impl<C> PerPath<C> {
    /// The controller of `path`.
    pub fn path(&self, path: usize) -> &C {
        &self.paths[path.min(MAX_PATHS - 1)]
    }

    fn path_mut(&mut self, path: usize) -> &mut C {
        &mut self.paths[path.min(MAX_PATHS - 1)]
    }
}

impl<C: RedundancyController + ParityGroups> RedundancyController for PerPath<C> {
    fn name(&self) -> &'static str {
        self.paths[0].name()
    }

    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64 {
        self.path(path.path.into()).repairs_wanted(block, path)
    }

    fn spare_repairs(&self, block: &SendBlock, path: &PathView) -> u64 {
        self.path(path.path.into()).spare_repairs(block, path)
    }

    fn on_event(&mut self, now: Instant, event: RedundancyEvent, path: &PathView) {
        self.path_mut(path.path.into()).on_event(now, event, path);
    }

    fn on_symbol(&mut self, now: Instant, event: SymbolEvent) {
        let (SymbolEvent::Sent { block, path, .. }
        | SymbolEvent::Acked { block, path, .. }
        | SymbolEvent::Lost { block, path, .. }) = event;
        let owner = match event {
            SymbolEvent::Sent { .. } => *self.owner.entry(block).or_insert(path),
            _ => self.owner.get(&block).copied().unwrap_or(path),
        };
        self.path_mut(owner.into()).on_symbol(now, event);
    }

    fn poll_timeout(&self, path: &PathView) -> Option<Instant> {
        self.path(path.path.into()).poll_timeout(path)
    }

    fn handle_timeout(&mut self, now: Instant) {
        for c in &mut self.paths {
            c.handle_timeout(now);
        }
    }

    fn parities_for(&self, path: usize, sources: u64) -> u64 {
        self.path(path).parities_for(path, sources)
    }

    fn parity_groups(&mut self) -> Option<&mut dyn ParityGroups> {
        Some(self)
    }
}

impl<C: ParityGroups> ParityGroups for PerPath<C> {
    /// Each path's controller groups the blocks it owns (blocks with nothing sent yet have
    /// nothing to group).
    fn parity_covers(
        &mut self,
        now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover> {
        let owner = &self.owner;
        let blocks: Vec<(&SendBlock, u8)> =
            blocks.filter_map(|b| Some((b, owner.get(&b.id).copied().or(b.path)?))).collect();
        let mut covers = Vec::new();
        for (p, c) in self.paths.iter_mut().enumerate() {
            let mut mine = blocks.iter().filter(|(_, o)| usize::from(*o) == p).map(|(b, _)| *b);
            let view = PathView { path: p as u8, ..*path };
            covers.extend(c.parity_covers(now, &mut mine, &view));
        }
        covers
    }

    fn repair_ignores_window(&self) -> bool {
        self.paths[0].repair_ignores_window()
    }

    fn packet_threshold(&self, path: usize) -> Option<u64> {
        self.path(path).packet_threshold(path)
    }

    /// The block's owner judges the loss; the path it happened on is the one congestion
    /// actions name.
    fn take_loss(&mut self, now: Instant, path: usize, symbol: OutgoingSymbol, sent: Instant) -> bool {
        let owner = self.owner.get(&symbol.block).map_or(path, |&p| p.into());
        self.path_mut(owner).take_loss(now, path, symbol, sent)
    }

    fn on_symbol_acked(&mut self, now: Instant, symbol: OutgoingSymbol) {
        if let Some(&path) = self.owner.get(&symbol.block) {
            self.path_mut(path.into()).on_symbol_acked(now, symbol);
        }
    }

    fn on_blocks_released(&mut self, below: u64) {
        self.owner = self.owner.split_off(&below);
        for c in &mut self.paths {
            c.on_blocks_released(below);
        }
    }

    fn poll_action(&mut self) -> Option<FecAction> {
        self.paths.iter_mut().find_map(|c| c.poll_action())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redundancy::testing::{parity, sender, view};
    use crate::redundancy::{Dfec, XorGroups};
    use crate::wire::Writer;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    fn on(path: u8, packets: u64, srtt_ms: u64) -> PathView {
        PathView { path, ..view(packets, srtt_ms) }
    }

    #[test]
    fn placement_parses_and_explains_mistakes() {
        assert_eq!("per-path".parse::<RepairPlacement>(), Ok(RepairPlacement::PerPath));
        assert_eq!("Across-Paths".parse::<RepairPlacement>(), Ok(RepairPlacement::AcrossPaths));
        assert!("anywhere".parse::<RepairPlacement>().unwrap_err().contains("per-path, across-paths"));
    }

    /// Per-path dFEC: each path's groups cover only the blocks it carries, its ratio adapts on
    /// its own residual loss, its DupACK threshold follows its own ratio, and a failed group
    /// reports congestion on its own path.
    #[test]
    fn each_path_runs_its_own_dfec() {
        let mut tx = sender(0);
        tx.set_per_path();
        // Two blocks of 40 sources (the open one is closed at 40, the next one filled after).
        for i in 0..40u8 {
            tx.push_source(&[i; 16]).unwrap();
        }
        tx.close_block();
        for i in 0..40u8 {
            tx.push_source(&[i; 16]).unwrap();
        }
        tx.close_block();
        let mut d = PerPath::<XorGroups<Dfec>>::default();
        // Path 0 takes block 0, path 1 block 1: the mapping is made by the first source sent.
        let mut w = Vec::new();
        let mut sent = [Vec::new(), Vec::new()];
        for k in 0..80 {
            let p = (k % 2) as u8;
            let s = tx.write_next_source_on(p, &mut Writer::new(&mut w)).expect("a source");
            d.on_symbol(ms(0), SymbolEvent::Sent { block: s.block, path: p, at: ms(0) });
            sent[usize::from(p)].push(s);
        }
        assert!(sent[0].iter().all(|s| s.block == 0) && sent[1].iter().all(|s| s.block == 1));
        assert_eq!(tx.blocks().map(|b| b.path).collect::<Vec<_>>(), [Some(0), Some(1)]);
        // Path 1 is lossy: a period of heavy retransmission (of its own losses) shrinks its
        // ratio, not path 0's.
        for t in [0, 40] {
            for i in 0..100 {
                if i < 20 {
                    d.on_event(ms(t), RedundancyEvent::Lost { repair: false }, &on(1, 10, 10));
                }
                let event = RedundancyEvent::Sent { repair: false, retransmission: i < 20 };
                d.on_event(ms(t), event, &on(1, 10, 10));
                let event = RedundancyEvent::Sent { repair: false, retransmission: false };
                d.on_event(ms(t), event, &on(0, 10, 10));
            }
        }
        assert_eq!((d.path(0).rule().ratio(), d.path(1).rule().ratio()), (12, 6));
        assert_eq!((d.packet_threshold(0), d.packet_threshold(1)), (Some(12), Some(6)));
        // Groups: every cover lies in a block of the path whose controller made it.
        let covers = d.parity_covers(ms(50), &mut tx.blocks(), &on(0, 10, 10));
        assert!(covers.iter().any(|c| c.block == 0) && covers.iter().any(|c| c.block == 1));
        let block1: Vec<_> = covers.iter().filter(|c| c.block == 1).map(|c| c.end - c.start).collect();
        assert_eq!(block1[0], 6, "path 1's groups have path 1's ratio");
        assert_eq!(covers.iter().find(|c| c.block == 0).map(|c| c.end - c.start), Some(12));
        for c in covers {
            assert!(tx.cover(c));
        }
        // Two losses in path 1's first group: it failed — both resent, congestion on path 1.
        assert!(d.take_loss(ms(60), 1, sent[1][0], ms(1)));
        assert!(d.take_loss(ms(60), 1, sent[1][1], ms(2)));
        let actions: Vec<FecAction> = std::iter::from_fn(|| d.poll_action()).collect();
        assert_eq!(actions.len(), 3);
        assert!(matches!(actions[2], FecAction::Congestion { path: 1, .. }));
        // One loss in path 0's first group, its parity and the others acknowledged: repaired,
        // no action (routed by the block's path, acknowledgements carry none).
        assert!(d.take_loss(ms(60), 0, sent[0][3], ms(1)));
        for s in sent[0][..12].iter().filter(|s| s.source != Some(3)) {
            d.on_symbol_acked(ms(61), *s);
        }
        let fec = parity(&mut tx, 0);
        d.on_symbol_acked(ms(62), fec);
        assert_eq!(d.poll_action(), None);
        assert_eq!((d.path(0).outcomes(), d.path(1).outcomes()), ((1, 0), (0, 2)));
    }
}
