//! Scheduling: which path carries the next symbol.
//!
//! The connection asks its [`Scheduler`] whenever a symbol may go out, with the paths that may
//! send at that instant (room in the congestion window, the pacer allows). The same question is
//! asked when the connection computes its next wake-up, so a scheduler must answer from its
//! arguments and its own state alone, without side effects (`pick` takes `&self`); it learns
//! what was sent through [`Scheduler::on_sent`]. Issue 4 adds the seed papers' multipath
//! schedulers (CTCP Algorithm 4, FMTCP's EAT allocation) behind this trait.

use std::fmt;

use crate::redundancy::PathView;

/// A path that may send now: its index and what is known of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Candidate {
    pub path: usize,
    pub view: PathView,
}

pub trait Scheduler: Send + fmt::Debug {
    fn name(&self) -> &'static str;

    /// The path to carry the next symbol, among `ready` (never empty); `None` keeps the symbol
    /// back (a scheduler may wait for a better path).
    fn pick(&self, ready: &[Candidate]) -> Option<usize>;

    /// A symbol went out on `path`; the default ignores it.
    fn on_sent(&mut self, _path: usize) {}
}

/// The lowest smoothed RTT among the paths with room: Linux MPTCP's default scheduler
/// (Paasch et al., "Experimental evaluation of multipath TCP schedulers", 2014).
#[derive(Debug, Clone, Copy, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn pick(&self, ready: &[Candidate]) -> Option<usize> {
        ready.iter().min_by_key(|c| (c.view.smoothed_rtt, c.path)).map(|c| c.path)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn min_rtt_picks_the_fastest_ready_path() {
        let view = |ms| PathView {
            path: 0,
            smoothed_rtt: Duration::from_millis(ms),
            min_rtt: Duration::from_millis(ms),
            loss: 0.0,
            window: 100_000,
            in_flight: 0,
            mss: 1280,
        };
        let ready = [
            Candidate { path: 0, view: view(80) },
            Candidate { path: 1, view: view(20) },
            Candidate { path: 2, view: view(20) },
        ];
        assert_eq!(MinRtt.pick(&ready), Some(1), "ties go to the lower index");
        assert_eq!(MinRtt.pick(&ready[..1]), Some(0));
        assert_eq!(MinRtt.pick(&[]), None);
    }
}
