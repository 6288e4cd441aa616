//! The XOR modes' extension of [`RedundancyController`]: parity groups chosen at send time, and
//! the losses held while a group's parity may still repair them.
//!
//! TCP-IR, TCP-dFEC and Sato et al. differ only in *which* sent sources a parity covers and
//! when, in their loss detection threshold and in what a repaired loss tells congestion control;
//! the group bookkeeping is the same. So each is a [`GroupingRule`], and one adapter,
//! [`XorGroups`], runs any rule with a [`GroupTracker`] and answers the connection's
//! [`ParityGroups`] hooks.

use super::{FecAction, GroupTracker, RedundancyController, RedundancyEvent};
use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::cc::Congestion;
use crate::view::PathView;
use crate::Instant;

/// What the connection asks of a controller that forms XOR parity groups as it sends (see
/// [`RedundancyController::parity_groups`]).
pub trait ParityGroups {
    /// Called before each send with the open blocks: which sources already sent get parity
    /// groups now. The covers are applied at once.
    fn parity_covers(
        &mut self,
        now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover>;

    /// Whether a due repair may be sent when the congestion window is full (TCP-IR's fixed-rate
    /// parity, which ignores cwnd).
    fn repair_ignores_window(&self) -> bool {
        false
    }

    /// The packet threshold for loss detection (RFC 9002 §6.1.1's 3, TCP's dupACK threshold)
    /// this controller wants on `path` (dFEC: the FEC block size).
    fn packet_threshold(&self, path: usize) -> Option<u64>;

    /// A packet carrying `symbol`, sent at `sent` on `path`, was declared lost. Returning true
    /// takes the loss over: the connection neither retransmits it nor counts it as congestion;
    /// the controller answers later with [`FecAction`]s (a parity that can still repair it, or
    /// a loss a parity's loss does not make congestion).
    fn take_loss(&mut self, now: Instant, path: usize, symbol: OutgoingSymbol, sent: Instant) -> bool;

    /// A packet carrying `symbol` was acknowledged.
    fn on_symbol_acked(&mut self, now: Instant, symbol: OutgoingSymbol);

    /// The receiver holds every block below `below`: forget them.
    fn on_blocks_released(&mut self, below: u64);

    /// What the controller wants done about losses it took over.
    fn poll_action(&mut self) -> Option<FecAction>;

    /// From now on each source a parity repairs is also reported ([`FecAction::Repaired`]).
    fn report_repairs(&mut self) {}

    /// Whether source `index` of `block`, if lost, may still be rebuilt by its group's parity
    /// as far as the receiver can tell (no other member lost, the parity not lost): Sato et
    /// al.'s receiver withholds its duplicate ACKs for it (§3.2). The default: never.
    fn may_repair(&self, _block: u64, _index: u16) -> bool {
        false
    }
}

/// One XOR mode's own rules; [`XorGroups`] does the rest.
pub trait GroupingRule: Send + std::fmt::Debug {
    fn name(&self) -> &'static str;

    /// What a loss the parity repaired tells the congestion controller (`None`: nothing).
    fn on_repaired(&self) -> Option<Congestion>;

    /// Which sent sources of `blocks` get a parity now (see [`ParityGroups::parity_covers`]).
    fn covers(
        &mut self,
        now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover>;

    /// The loss detection packet threshold (TCP's three duplicate ACKs, or dFEC's block size).
    /// Parities this rule gives a block of `sources` sources closed as it is (see
    /// [`RedundancyController::parities_for`]); the default: none counted.
    fn parities_for(&self, _sources: u64) -> u64 {
        0
    }

    fn packet_threshold(&self) -> u64;

    /// Feedback; the default ignores it.
    fn on_event(&mut self, _now: Instant, _event: RedundancyEvent, _path: &PathView) {}

    /// When the rule's clock next wants a send (TCP-IR: RTT/4); the default never.
    fn poll_timeout(&self, _path: &PathView) -> Option<Instant> {
        None
    }

    /// See [`ParityGroups::repair_ignores_window`].
    fn repair_ignores_window(&self) -> bool {
        false
    }

    /// Whether a lost `symbol` its group may still repair is held; the default: always. A
    /// source the rule does not hold is not recorded as a held loss at all.
    fn holds_loss(&self, _symbol: &OutgoingSymbol) -> bool {
        true
    }

    /// The receiver holds every block below `below`; the default ignores it.
    fn on_blocks_released(&mut self, _below: u64) {}
}

/// A [`GroupingRule`] run with its parity groups: the one redundancy controller of every XOR
/// mode.
#[derive(Debug)]
pub struct XorGroups<R> {
    rule: R,
    groups: GroupTracker,
}

impl<R: GroupingRule> XorGroups<R> {
    pub fn new(rule: R) -> XorGroups<R> {
        let groups = GroupTracker::new(rule.on_repaired());
        XorGroups { rule, groups }
    }

    pub fn rule(&self) -> &R {
        &self.rule
    }

    /// Losses the parity repaired / could not ("FEC recovered" / "FEC failed", dFEC §III-B).
    pub fn outcomes(&self) -> (u64, u64) {
        (self.groups.recovered, self.groups.failed)
    }

    /// Losses held now.
    pub fn held(&self) -> usize {
        self.groups.held()
    }
}

impl<R: GroupingRule + Default> Default for XorGroups<R> {
    fn default() -> Self {
        XorGroups::new(R::default())
    }
}

impl<R: GroupingRule> RedundancyController for XorGroups<R> {
    fn name(&self) -> &'static str {
        self.rule.name()
    }

    /// The parities of the groups made and not yet sent.
    fn repairs_wanted(&self, block: &SendBlock, _path: &PathView) -> u64 {
        block.pending_parities()
    }

    fn on_event(&mut self, now: Instant, event: RedundancyEvent, path: &PathView) {
        self.rule.on_event(now, event, path);
    }

    fn poll_timeout(&self, path: &PathView) -> Option<Instant> {
        self.rule.poll_timeout(path)
    }

    fn parities_for(&self, _path: usize, sources: u64) -> u64 {
        self.rule.parities_for(sources)
    }

    fn parity_groups(&mut self) -> Option<&mut dyn ParityGroups> {
        Some(self)
    }
}

impl<R: GroupingRule> ParityGroups for XorGroups<R> {
    fn parity_covers(
        &mut self,
        now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        path: &PathView,
    ) -> Vec<XorCover> {
        let covers = self.rule.covers(now, blocks, path);
        for c in &covers {
            self.groups.on_cover(c);
        }
        covers
    }

    fn repair_ignores_window(&self) -> bool {
        self.rule.repair_ignores_window()
    }

    fn packet_threshold(&self, _path: usize) -> Option<u64> {
        Some(self.rule.packet_threshold())
    }

    fn take_loss(&mut self, _now: Instant, path: usize, s: OutgoingSymbol, sent: Instant) -> bool {
        if s.source.is_some() && !self.rule.holds_loss(&s) {
            return false;
        }
        let held = self.groups.on_lost(s.block, s.source, s.group, path, sent);
        held && self.rule.holds_loss(&s)
    }

    fn on_symbol_acked(&mut self, _now: Instant, s: OutgoingSymbol) {
        self.groups.on_acked(s.block, s.source, s.group);
    }

    fn on_blocks_released(&mut self, below: u64) {
        self.groups.release_below(below);
        self.rule.on_blocks_released(below);
    }

    fn poll_action(&mut self) -> Option<FecAction> {
        self.groups.poll_action()
    }

    fn report_repairs(&mut self) {
        self.groups.report_repairs = true;
    }

    fn may_repair(&self, block: u64, index: u16) -> bool {
        self.groups.may_repair(block, index)
    }
}
