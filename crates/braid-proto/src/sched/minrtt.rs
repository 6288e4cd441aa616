//! The lowest smoothed RTT among the paths with room: Linux MPTCP's default scheduler
//! (Paasch et al., "Experimental evaluation of multipath TCP schedulers", ACM CSWS 2014, §3.1).

use super::{fastest_ready, Pick, SchedView, Scheduler};

#[derive(Debug, Clone, Copy, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn pick(&self, view: &SchedView<'_>) -> Option<Pick> {
        fastest_ready(view).map(Pick::path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::path;
    use crate::Instant;

    #[test]
    fn min_rtt_picks_the_fastest_ready_path() {
        let paths = [path(0, 80, 0.0, 100, 0), path(1, 20, 0.0, 100, 0), path(2, 20, 0.0, 100, 0)];
        let view = |paths| SchedView { now: Instant::ZERO, paths, blocks: &[] };
        assert_eq!(MinRtt.pick(&view(&paths)), Some(Pick::path(1)), "ties go to the lower index");
        assert_eq!(MinRtt.pick(&view(&paths[..1])), Some(Pick::path(0)));
        // A full window is not ready, however fast.
        let full = [path(0, 80, 0.0, 100, 0), path(1, 20, 0.0, 100, 100)];
        assert_eq!(MinRtt.pick(&view(&full)), Some(Pick::path(0)));
        assert_eq!(MinRtt.pick(&view(&full[1..])), None);
    }
}
