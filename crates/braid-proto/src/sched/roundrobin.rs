//! Round robin over the paths with room: the reference scheduler of Linux MPTCP's
//! `mptcp_rr` module (Paasch et al., "Experimental evaluation of multipath TCP schedulers",
//! ACM CSWS 2014, §3.2). Each symbol goes on the next ready path after the one that carried the
//! previous symbol, whatever the paths' delays.

use super::{Pick, SchedView, Scheduler};
use crate::view::SymbolEvent;
use crate::Instant;

#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobin {
    /// The path that carried the latest symbol.
    last: Option<usize>,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        let after = |p: usize| match self.last {
            // Paths after the last one first, then from the start again.
            Some(last) => (p <= last, p),
            None => (false, p),
        };
        view.ready().min_by_key(|p| after(p.path)).map(|p| Pick::path(p.path))
    }

    fn on_symbol(&mut self, _now: Instant, event: SymbolEvent) {
        if let SymbolEvent::Sent { path, .. } = event {
            self.last = Some(usize::from(path));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::path;

    #[test]
    fn round_robin_takes_the_ready_paths_in_turn() {
        let mut rr = RoundRobin::default();
        let mut paths = [path(0, 10, 0.0, 100, 0), path(1, 300, 0.0, 100, 0), path(2, 50, 0.0, 100, 0)];
        let mut order = Vec::new();
        for _ in 0..5 {
            let view = SchedView { now: Instant::ZERO, paths: &paths, blocks: &[] };
            let p = rr.pick(&view).unwrap().path;
            order.push(p);
            rr.on_symbol(Instant::ZERO, SymbolEvent::Sent { block: 0, path: p as u8, at: Instant::ZERO });
        }
        assert_eq!(order, [0, 1, 2, 0, 1], "the slow path gets its turn too");
        // A path without room is skipped: after 1 comes 2, but it is full, so 0.
        paths[2].ready = false;
        let view = SchedView { now: Instant::ZERO, paths: &paths, blocks: &[] };
        assert_eq!(rr.pick(&view), Some(Pick::path(0)));
    }
}
