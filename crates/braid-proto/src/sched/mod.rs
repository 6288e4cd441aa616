//! Scheduling: which path carries the next symbol, and from which block.
//!
//! The connection asks its [`Scheduler`] whenever a symbol may go out, with a read-only
//! [`SchedView`]: every path (those that may send at that instant — room in the congestion
//! window, the pacer allows — are flagged `ready`) and, for the schedulers that ask for them
//! ([`Scheduler::wants_blocks`]), the open blocks with what each still needs. The same question
//! is asked when the connection computes its next wake-up, so a scheduler answers from the view
//! and its own state alone, without side effects (`pick` takes `&self`); it learns what was sent,
//! acknowledged and lost through [`Scheduler::on_symbol`].
//!
//! A [`Pick`] names the path and, optionally, the block to serve: the connection then sends
//! that block's next unsent source, else a new repair of it. Without a block the connection
//! serves the oldest block short of symbols, as the redundancy controller decides.
//!
//! One file per scheduler: `minrtt.rs` (MPTCP's default), `roundrobin.rs` and `redundant.rs`
//! (references), `ctcp.rs` (CTCP Algorithm 4), `eat.rs` (FMTCP Algorithm 1, Eqs. 8–10) and
//! `braid.rs` (braid's default, an arrival-time allocation).

mod braid;
mod ctcp;
mod eat;
mod minrtt;
mod redundant;
mod roundrobin;

use std::fmt;
use std::time::Duration;

pub use braid::ArrivalTime;
pub use ctcp::CtcpBlocks;
pub use eat::ExpectedArrival;
pub use minrtt::MinRtt;
pub use redundant::Redundant;
pub use roundrobin::RoundRobin;

use crate::cc::ModelView;
use crate::view::{PathView, SymbolEvent};
use crate::Instant;

/// What a scheduler knows of one path.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathInfo {
    pub path: usize,
    pub view: PathView,
    /// The path's retransmission timeout (RFC 6298), for FMTCP's EDT and RT (Eqs. 8, 9).
    pub rto: Duration,
    /// τ of FMTCP Eq. (10): how long ago the oldest unacknowledged packet was sent (zero if
    /// nothing is in flight).
    pub oldest_unacked_age: Duration,
    /// Room in the window for a full packet, and the pacer allows a send now.
    pub ready: bool,
    /// The path has an RTT sample; without one its RTT is RFC 9002 §6.2.2's 333 ms guess.
    pub measured: bool,
    /// The path's congestion controller's model, if it keeps one (bottleneck bandwidth and
    /// queue, `cc/model.rs`): braid's scheduler takes its rate and delay from it.
    pub model: Option<ModelView>,
}

impl PathInfo {
    /// Whole packets that still fit in the congestion window.
    pub fn room_packets(&self) -> u64 {
        self.view.window.saturating_sub(self.view.in_flight) / self.view.mss.max(1)
    }

    /// The congestion window in packets (at least 1).
    pub fn window_packets(&self) -> u64 {
        (self.view.window / self.view.mss.max(1)).max(1)
    }
}

/// What a scheduler knows of one open block (oldest first in [`SchedView::blocks`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockView {
    pub id: u64,
    /// Source symbols so far (final once `closed`).
    pub len: u64,
    pub closed: bool,
    pub decoded: bool,
    /// Source symbols not yet sent once.
    pub unsent: u64,
    /// Lost source symbols queued to be sent again (the retransmitting modes); the connection
    /// sends these first whatever block is named.
    pub retransmissions: u64,
    /// Symbols of the block in packets not yet acknowledged or declared lost (every path).
    pub in_flight: u64,
    /// Degrees of freedom the receiver holds.
    pub known_dofs: u64,
    /// Repair symbols the redundancy controller wants now, ahead of new data (if sent on the
    /// fastest ready path).
    pub repairs_wanted: u64,
    /// Further repairs the controller would send with capacity new data leaves unused.
    pub spare_repairs: u64,
}

impl BlockView {
    /// Symbols the block needs before it is complete by the redundancy controller's rule
    /// (FMTCP's δ̂-complete): its unsent sources, retransmissions and the repairs wanted.
    pub fn needed(&self) -> u64 {
        if self.decoded {
            0
        } else {
            self.unsent + self.retransmissions + self.repairs_wanted
        }
    }

    /// Degrees of freedom the receiver still lacks (CTCP's `currdof` for the current block).
    pub fn missing(&self) -> u64 {
        if self.decoded {
            0
        } else {
            self.len.saturating_sub(self.known_dofs)
        }
    }
}

/// The scheduler's read-only view of the connection.
#[derive(Debug, Clone, Copy)]
pub struct SchedView<'a> {
    pub now: Instant,
    /// The paths that can carry data (failed and removed paths are left out), in id order; a
    /// path's id is [`PathInfo::path`], not its position here.
    pub paths: &'a [PathInfo],
    /// The open blocks, oldest first; empty unless [`Scheduler::wants_blocks`].
    pub blocks: &'a [BlockView],
}

impl SchedView<'_> {
    pub fn ready(&self) -> impl Iterator<Item = &PathInfo> {
        self.paths.iter().filter(|p| p.ready)
    }
}

/// A scheduler's answer: the path to send on and, optionally, the block to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub path: usize,
    /// `None`: the connection's default (the oldest block short of symbols, then new data).
    pub block: Option<u64>,
}

impl Pick {
    pub fn path(path: usize) -> Pick {
        Pick { path, block: None }
    }
}

pub trait Scheduler: Send + fmt::Debug {
    fn name(&self) -> &'static str;

    /// Whether `pick` reads [`SchedView::blocks`] (building them costs a pass over the blocks).
    fn wants_blocks(&self) -> bool {
        false
    }

    /// The path (and block) for the next symbol, among the ready paths; `None` keeps the
    /// sending opportunity unused (a scheduler may wait for a better path).
    fn pick(&self, view: &SchedView<'_>) -> Option<Pick>;

    /// Whether blocks holding a small write cut ahead of bulk data (`SendBlock::urgent`) come
    /// first in this scheduler's [`SchedView::blocks`] while they need symbols, so an allocation
    /// in order serves them before the bulk data cut earlier. Default: no (views in block order).
    fn serves_urgent_first(&self) -> bool {
        false
    }

    /// Whether the scheduler leaves a path without an RTT sample unused while a measured path
    /// can send (a model built on RFC 9002's 333 ms guess would shun the path and never learn
    /// better). The connection then measures such a path with a PING (PROTOCOL.md §12.1).
    /// Default: no.
    fn needs_measured_paths(&self) -> bool {
        false
    }

    /// Every symbol sent is copied at once onto every other ready path (the `redundant`
    /// reference scheduler). Default: no.
    fn duplicates(&self) -> bool {
        false
    }

    /// A symbol was sent, acknowledged or lost; the default ignores it.
    fn on_symbol(&mut self, _now: Instant, _event: SymbolEvent) {}

    /// When the scheduler's answer may change with nothing but the passing of time (CTCP: a
    /// symbol in flight turns 1.5 RTT old and stops being counted on). Default: never.
    /// `now`: the latest time the connection was polled at.
    fn poll_timeout(&self, _now: Instant, _paths: &[PathInfo]) -> Option<Instant> {
        None
    }
}

/// The schedulers by name (`--scheduler NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    MinRtt,
    RoundRobin,
    Redundant,
    Ctcp,
    Eat,
    Braid,
}

impl SchedulerKind {
    pub const ALL: [SchedulerKind; 6] = [
        SchedulerKind::MinRtt,
        SchedulerKind::RoundRobin,
        SchedulerKind::Redundant,
        SchedulerKind::Ctcp,
        SchedulerKind::Eat,
        SchedulerKind::Braid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::MinRtt => "minrtt",
            SchedulerKind::RoundRobin => "roundrobin",
            SchedulerKind::Redundant => "redundant",
            SchedulerKind::Ctcp => "ctcp",
            SchedulerKind::Eat => "eat",
            SchedulerKind::Braid => "braid",
        }
    }

    pub fn build(self) -> Box<dyn Scheduler> {
        match self {
            SchedulerKind::MinRtt => Box::new(MinRtt),
            SchedulerKind::RoundRobin => Box::<RoundRobin>::default(),
            SchedulerKind::Redundant => Box::new(Redundant),
            SchedulerKind::Ctcp => Box::<CtcpBlocks>::default(),
            SchedulerKind::Eat => Box::<ExpectedArrival>::default(),
            SchedulerKind::Braid => Box::new(ArrivalTime),
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SchedulerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SchedulerKind::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            let names: Vec<_> = SchedulerKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown scheduler `{s}` (expected one of: {})", names.join(", "))
        })
    }
}

/// The ready path with the lowest smoothed RTT (ties: the lower index).
pub(crate) fn fastest_ready(view: &SchedView<'_>) -> Option<usize> {
    view.ready().min_by_key(|p| (p.view.smoothed_rtt, p.path)).map(|p| p.path)
}

/// Virtual allocation in block order (FMTCP Algorithm 1, lines 5–12): with `ahead` symbols
/// already allocated to other paths, the block holding the next needed symbol; `None` when the
/// open blocks need no more than that.
pub(crate) fn block_after(blocks: &[BlockView], ahead: f64) -> Option<u64> {
    let mut allocated = 0.0;
    for b in blocks {
        allocated += b.needed() as f64;
        if b.needed() > 0 && allocated > ahead {
            return Some(b.id);
        }
    }
    None
}

/// The ready paths ordered by `key` (then index), without allocating: at most 8 paths.
pub(crate) fn by_key<'a, K: PartialOrd>(
    view: &SchedView<'a>,
    key: impl Fn(&PathInfo) -> K,
) -> impl Iterator<Item = &'a PathInfo> {
    let mut order = [0usize; 8];
    let mut n = 0;
    for (i, p) in view.paths.iter().enumerate().take(8) {
        if p.ready {
            order[n] = i;
            n += 1;
        }
    }
    let paths = view.paths;
    order[..n].sort_by(|&a, &b| {
        key(&paths[a]).partial_cmp(&key(&paths[b])).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(&b))
    });
    (0..n).map(move |i| &paths[order[i]])
}

/// Helpers for the schedulers' unit tests: crafted paths and blocks.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::Duration;

    use super::{BlockView, PathInfo};
    use crate::view::PathView;

    /// Path `path` with RTT `rtt_ms`, loss `loss`, a window of `window` 1000-byte packets of
    /// which `in_flight` are in flight; ready if it has room.
    pub fn path(path: usize, rtt_ms: u64, loss: f64, window: u64, in_flight: u64) -> PathInfo {
        let rtt = Duration::from_millis(rtt_ms);
        PathInfo {
            path,
            view: PathView {
                path: path as u8,
                smoothed_rtt: rtt,
                min_rtt: rtt,
                loss,
                loss_long: loss,
                window: window * 1000,
                in_flight: in_flight * 1000,
                mss: 1000,
            },
            rto: rtt * 2,
            oldest_unacked_age: Duration::ZERO,
            ready: in_flight < window,
            measured: true,
            model: None,
        }
    }

    /// Block `id` of `len` sources, closed, with `unsent` not yet sent and `in_flight` in flight.
    pub fn block(id: u64, len: u64, unsent: u64, in_flight: u64) -> BlockView {
        BlockView { id, len, closed: true, unsent, in_flight, ..BlockView::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedulers_parse_from_their_names_and_errors_list_them() {
        for kind in SchedulerKind::ALL {
            assert_eq!(kind.name().parse::<SchedulerKind>(), Ok(kind));
            assert_eq!(kind.build().name(), kind.name());
        }
        assert_eq!("EAT".parse::<SchedulerKind>(), Ok(SchedulerKind::Eat));
        let err = "fastest".parse::<SchedulerKind>().unwrap_err();
        assert!(err.contains("`fastest`"), "{err}");
        assert!(err.contains("minrtt, roundrobin, redundant, ctcp, eat, braid"), "{err}");
    }
}
