//! Which path (and block) carries the next symbol: the views handed to the scheduler and the
//! redundancy controller, and whether the pick has anything to carry.

use std::time::Duration;

use super::Connection;
use crate::sched::{BlockView, PathInfo, Pick, SchedView};
use crate::view::PathView;
use crate::Instant;

impl Connection {
    /// Whether the scheduler's pick has a symbol to carry: a symbol of the block it names (the
    /// scheduler judged its need), else an unsent source or a repair some block needs.
    pub(super) fn has_symbol(&self, pick: Pick) -> bool {
        let named = pick.block.is_some_and(|block| {
            self.transfer.as_ref().is_some_and(|s| {
                s.sender.block(block).is_some_and(|b| !b.all_sources_sent() || b.can_write_repair())
            })
        });
        named || self.default_has_symbol(pick.path)
    }

    /// Whether `path` has a symbol to carry when no block is named: an unsent source, or a
    /// repair some block needs.
    fn default_has_symbol(&self, path: usize) -> bool {
        let view = self.path_view(path);
        let id = path as u8;
        // The cheap questions first: an unsent source anywhere settles it without asking the
        // redundancy controller about every block.
        self.transfer.as_ref().is_some_and(|s| {
            s.sender.has_retransmission_for(id)
                || s.sender.has_unsent_for(id)
                || s.sender.blocks().any(|b| {
                    b.may_carry(id)
                        && (self.redundancy.repairs_wanted(b, &view) > 0
                            || self.redundancy.spare_repairs(b, &view) > 0)
                })
        })
    }

    /// Whether some block wants a repair symbol sent on `path` now.
    pub(super) fn repair_due(&self, path: usize) -> bool {
        let view = self.path_view(path);
        self.transfer.as_ref().is_some_and(|s| {
            s.sender.blocks().any(|b| b.may_carry(path as u8) && self.redundancy.repairs_wanted(b, &view) > 0)
        })
    }

    /// The scheduler's choice among the paths with room in their window whose pacer allows a
    /// send at `at` (the one place the path choice is made, for sending and for wake-ups).
    pub(super) fn choose_path(&self, at: Instant) -> Option<Pick> {
        // At most 8 paths: a stack array, no allocation on this hot path.
        let mut paths = [PathInfo::default(); 8];
        let n = self.path_infos(at, &mut paths);
        let paths = &paths[..n];
        if !paths.iter().any(|p| p.ready) {
            return None;
        }
        // The views are rebuilt at every choice, in a buffer kept between calls (this runs for
        // every packet and every wake-up: no allocation once it has grown).
        let mut blocks = self.block_views.borrow_mut();
        blocks.clear();
        if let (Some(s), true) = (&self.transfer, self.scheduler.wants_blocks()) {
            // The controller's wants as seen from the fastest ready path (FMTCP Eq. 4's p and
            // ŵ are a path's; the allocation sends most symbols on the fastest).
            let fastest = paths.iter().filter(|p| p.ready).min_by_key(|p| p.view.smoothed_rtt);
            let view = fastest.map_or_else(|| self.path_view(0), |p| p.view);
            blocks.extend(s.sender.blocks().map(|b| BlockView {
                id: b.id,
                len: b.len() as u64,
                closed: b.closed,
                decoded: b.decoded,
                unsent: b.unsent_sources(),
                retransmissions: s.sender.queued_retransmissions(b.id),
                in_flight: b.in_flight,
                known_dofs: b.known_dofs(),
                repairs_wanted: self.redundancy.repairs_wanted(b, &view),
                spare_repairs: self.redundancy.spare_repairs(b, &view),
            }));
            if self.scheduler.serves_urgent_first() {
                // Small writes cut ahead of bulk data (`fill_pipe`) first, while they need
                // symbols; the rest in block order (the sort is stable).
                // Sorted only when one is there: a stable sort of many views allocates, and this
                // runs for every packet.
                let urgent = |b: &BlockView| b.needed() > 0 && s.sender.block(b.id).is_some_and(|x| x.urgent);
                if blocks.iter().any(urgent) {
                    blocks.sort_by_key(|b| !urgent(b));
                }
            }
        }
        let pick = self.scheduler.pick(&SchedView { now: at, paths, blocks: &blocks });
        drop(blocks);
        // With per-path placement new data is cut into a block only once a path is chosen
        // (`cut_block_for`), so a scheduler that allocates blocks sees none for it: the fastest
        // ready path takes the new data (MPTCP's default, the placement's own scheduler).
        pick.or_else(|| {
            let s = self.transfer.as_ref()?;
            if !(s.sender.is_per_path() && s.streams.has_pipe_data() && s.sender.has_room()) {
                return None;
            }
            let fastest = paths.iter().filter(|p| p.ready).min_by_key(|p| (p.view.smoothed_rtt, p.path))?;
            Some(Pick::path(fastest.path))
        })
    }

    /// What the scheduler may know about each path at `at`; returns how many were written.
    pub(super) fn path_infos(&self, at: Instant, out: &mut [PathInfo; 8]) -> usize {
        let mss = self.config.max_datagram as u64;
        // Failed and removed paths are not offered at all: a scheduler that allocates virtually
        // (FMTCP's EAT) would otherwise count on a dead path's stale estimates.
        let mut n = 0;
        for (i, p) in self.paths.iter().enumerate().take(8).filter(|(_, p)| p.can_send()) {
            out[n] = PathInfo {
                path: i,
                view: self.path_view(i),
                rto: p.rtt.rto(Duration::from_millis(10)),
                oldest_unacked_age: p.sent.first_key_value().map_or(Duration::ZERO, |(_, s)| at - s.time),
                ready: self.data_room(i) >= mss && p.next_send <= at,
                measured: p.rtt.has_sample(),
                model: p.cc.model_view(),
            };
            n += 1;
        }
        n
    }

    /// What the redundancy controller may know about `path`.
    pub(super) fn path_view(&self, path: usize) -> PathView {
        let p = &self.paths[path];
        PathView {
            path: path as u8,
            smoothed_rtt: p.rtt.smoothed(),
            min_rtt: p.rtt.min(),
            loss: p.cc.loss_estimate().unwrap_or(p.loss.rate()),
            loss_long: p.loss_long.rate(),
            window: p.cc.window(),
            in_flight: p.in_flight,
            mss: self.config.max_datagram as u64,
        }
    }
}
