//! The redundant reference scheduler: every symbol goes on the fastest ready path and a copy
//! of it, the same bytes, on every other path with room at that instant (Linux MPTCP's
//! `mptcp_redundant`; Frömmgen et al., "ReMP TCP: Low latency multipath TCP", IEEE ICC 2016).
//! It trades all but one path's capacity for the lowest latency; braid keeps it as a reference,
//! not as a mode's default. The connection sends the copies ([`Scheduler::duplicates`]).

use super::{fastest_ready, Pick, SchedView, Scheduler};

#[derive(Debug, Clone, Copy, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        fastest_ready(view).map(Pick::path)
    }

    fn duplicates(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::path;
    use crate::Instant;

    #[test]
    fn redundant_sends_first_on_the_fastest_path_and_asks_for_copies() {
        let paths = [path(0, 80, 0.0, 100, 0), path(1, 20, 0.0, 100, 0)];
        let view = SchedView { now: Instant::ZERO, paths: &paths, blocks: &[] };
        assert_eq!(Redundant.pick(&view), Some(Pick::path(1)));
        assert!(Redundant.duplicates());
    }
}
