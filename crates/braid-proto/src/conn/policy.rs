//! Modes: each scheme's choice of code, redundancy controller and congestion response.
//!
//! braid's congestion response: a loss counts as congestion only when the path's RTT shows a
//! queue — latest RTT above 1.25 × min RTT + 2 ms, or a queue delay (latest − min) above 2 ms
//! and within the top fifth of the largest seen on the path; random loss on an empty queue is
//! repaired, not backed off from. A simple delay-gated rule in the spirit of TCP Veno.

use std::time::Duration;

use braid_fec::CodeFamily;

use crate::cc::{CcAlgorithm, CongestionController, RttEstimator};
use crate::redundancy::{
    Adaptive, CtcpRepair, Dfec, Fmtcp, NoRedundancy, PerPath, Redundancy, RedundancyController,
    RepairPlacement, Sato, TcpIr, XorGroups,
};
use crate::sched::SchedulerKind;

/// braid's initial window, in datagrams.
const INITIAL_WINDOW_PACKETS: u64 = 32;

/// braid's congestion test: a loss with the path's queue delay at least this share of the
/// largest seen is congestion.
const QUEUE_FULL: f64 = 0.8;

/// A scheme: how a connection codes, repairs and reacts to loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// braid's default: coded blocks, adaptive redundancy, delay-gated loss response.
    Braid,
    /// The simulator's model of conventional TCP: no coding, every lost packet's data is sent
    /// again (fast retransmit after three later packets are acknowledged, RFC 9002's packet
    /// threshold, or on the probe timer), every loss is congestion. A model, not Linux TCP.
    Tcp,
    /// CTCP (Kim, Médard et al., "Network Coded TCP"): systematic RLNC blocks, Algorithm 1's
    /// loss estimates, Algorithm 2's tokens ([`crate::cc::CtcpTokens`]) and Algorithm 3's block
    /// scheduling ([`crate::redundancy::CtcpRepair`]). Losses are repaired, not reacted to;
    /// only a loss-rate spike or a timeout reduces the tokens.
    Ctcp,
    /// FMTCP (Cui et al.): RaptorQ blocks, each sent until δ̂-complete with Eq. (4)'s appended
    /// symbols ([`crate::redundancy::Fmtcp`]), new symbols instead of retransmissions, and the
    /// subflow's TCP congestion control (NewReno: every loss is congestion).
    Fmtcp,
    /// TCP-IR as the TCP-dFEC paper keeps it as a baseline: an XOR parity every RTT/4 over at
    /// most 16 segments, ignoring cwnd (`redundancy/tcp_ir.rs`).
    TcpIr,
    /// TCP-dFEC: an XOR parity every `ratio` segments, the ratio adapted on residual loss
    /// (`redundancy/dfec.rs`).
    Dfec,
    /// Sato et al.: cwnd-sized, interleaved XOR groups, dupACK suppression, repaired losses
    /// reduce cwnd by r = 0.7 (`redundancy/sato.rs`).
    Sato,
    /// The simulator's model of Linux MPTCP (a model, not the kernel): no coding; each subflow
    /// resends its own losses on itself (fast retransmit, RFC 9002's packet threshold), and only
    /// a subflow's probe timeout (RTO) lets the lost data be reinjected on any subflow; minimum-
    /// RTT scheduling; per-subflow CUBIC (upstream Linux MPTCP is uncoupled; `--cc lia` couples);
    /// and the connection-level receive buffer (flow-control window,
    /// `TransportParams::initial_max_data`) shared by all subflows, so a slow or lossy subflow
    /// head-of-line blocks the others (FMTCP §III).
    Mptcp,
    /// MPTCP-dFEC (dFEC paper §III-C): every subflow runs its own TCP-dFEC — its own XOR groups
    /// over what it sent, its own ratio, its own DupACK threshold — and its cwnd reacts only
    /// to FEC lost or failed on it. Blocks are mapped whole onto one subflow (a DSS-style
    /// mapping: the symbol header names the block and index, so a repaired packet lands at its
    /// place in the connection stream). Minimum-RTT scheduling, per-subflow CUBIC.
    MptcpDfec,
}

impl Mode {
    pub const ALL: [Mode; 9] = [
        Mode::Braid,
        Mode::Tcp,
        Mode::TcpIr,
        Mode::Dfec,
        Mode::Sato,
        Mode::Ctcp,
        Mode::Fmtcp,
        Mode::Mptcp,
        Mode::MptcpDfec,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Braid => "braid",
            Mode::Tcp => "tcp",
            Mode::Ctcp => "ctcp",
            Mode::Fmtcp => "fmtcp",
            Mode::TcpIr => "tcp-ir",
            Mode::Dfec => "dfec",
            Mode::Sato => "sato",
            Mode::Mptcp => "mptcp",
            Mode::MptcpDfec => "mptcp-dfec",
        }
    }

    /// Whether the mode is a multipath one by definition (MPTCP and MPTCP-dFEC): the runner
    /// runs them only where a scenario has two paths or more. Every mode runs on any number of
    /// paths.
    pub fn is_multipath(self) -> bool {
        matches!(self, Mode::Mptcp | Mode::MptcpDfec)
    }

    /// The code family the mode is defined with: the client proposes it in the handshake unless
    /// its configuration names another than the default (RLNC).
    pub fn code_family(self) -> CodeFamily {
        match self {
            Mode::Braid | Mode::Tcp | Mode::Ctcp | Mode::Mptcp => CodeFamily::Rlnc,
            Mode::Fmtcp => CodeFamily::RaptorQ,
            Mode::TcpIr | Mode::Dfec | Mode::Sato | Mode::MptcpDfec => CodeFamily::Xor,
        }
    }

    /// The smallest block length the mode needs: the XOR modes' groups do not span blocks, so a
    /// block holds at least dFEC's largest FEC block (256) and Sato's widest window (3 × 30).
    /// MPTCP-dFEC keeps the default length: with per-path placement a block is the unit mapped
    /// onto one subflow, and 256-symbol blocks (315 KB) would leave a fast subflow idle while the
    /// others hold the few blocks of a short transfer; its groups are cut at 64 instead.
    pub fn min_block_len(self) -> Option<u16> {
        (self.code_family() == CodeFamily::Xor && self != Mode::MptcpDfec).then_some(256)
    }

    /// The initial congestion window of the mode's paths, in bytes, where it is not RFC 9002's
    /// ten datagrams. braid: 32 datagrams (what Chromium's QUIC starts with), paced over the first
    /// RTT sample like every later window. Ten datagrams take five round trips of slow start to
    /// fill a 20 Mbit/s × 100 ms path; 32 take three and put 40 kB, a sixth of that path's 1-BDP
    /// queue, on a path never measured (docs/DEVIATIONS.md, "Protocol core").
    pub fn initial_window(self, mss: u64) -> Option<u64> {
        (self == Mode::Braid).then_some(INITIAL_WINDOW_PACKETS * mss)
    }

    /// The congestion controller `cc` for a path of this mode carrying datagrams of `mss` bytes.
    pub(crate) fn build_cc(self, cc: CcAlgorithm, mss: u64) -> Box<dyn CongestionController> {
        let mut controller = cc.build(mss);
        if let Some(bytes) = self.initial_window(mss) {
            controller.set_initial_window(bytes);
        }
        controller
    }

    /// The fewest blocks the mode keeps open (`TransportParams::blocks_in_flight`), if more than
    /// the parameter's default. braid: 32. Its blocks span every path, so a block is complete
    /// only when its symbols on the slowest path are acknowledged, and the block window must
    /// cover that path's round trip at the connection's whole rate: 16 blocks (1.26 MB) stall
    /// a 10 + 10 Mbit/s connection whose second path has a 500 ms RTT (docs/DEVIATIONS.md,
    /// "Protocol core").
    pub fn min_blocks_in_flight(self) -> Option<u16> {
        (self == Mode::Braid).then_some(32)
    }

    /// The congestion controller a path gets when the configuration names none. braid: its own
    /// model-based, coding-aware controller (cc/model.rs). The `tcp` model: CUBIC.
    /// TCP-IR and TCP-dFEC were built into Linux TCP, whose default is CUBIC; Sato et al. ran
    /// NewReno in ns-3 (§4). CTCP: its tokens (Algorithm 2). FMTCP: NewReno — it was built on
    /// IETF-MPTCP in ns-2, whose subflows run NewReno, and says the choice does not matter on
    /// disjoint paths (§II). MPTCP and MPTCP-dFEC: uncoupled CUBIC per subflow, upstream Linux
    /// MPTCP's default (the dFEC paper evaluates its FEC apart from the congestion control,
    /// §I); `--cc lia` gives RFC 6356's coupled increase.
    pub fn default_cc(self) -> CcAlgorithm {
        match self {
            Mode::Braid => CcAlgorithm::Braid,
            Mode::Tcp | Mode::TcpIr | Mode::Dfec | Mode::Mptcp | Mode::MptcpDfec => CcAlgorithm::Cubic,
            Mode::Sato => CcAlgorithm::NewReno,
            Mode::Ctcp => CcAlgorithm::Ctcp,
            Mode::Fmtcp => CcAlgorithm::NewReno,
        }
    }

    /// The scheduler a connection gets when its configuration names none: CTCP's Algorithm 4,
    /// FMTCP's EAT allocation (Algorithm 1), braid's arrival-time allocation; the others were
    /// defined on one path, and take MPTCP's default (minimum RTT) on several.
    pub fn default_scheduler(self) -> SchedulerKind {
        match self {
            Mode::Ctcp => SchedulerKind::Ctcp,
            Mode::Fmtcp => SchedulerKind::Eat,
            // The arrival-time allocation measured ahead of min-RTT overall and never below the
            // best single path once it stopped putting data on paths without an RTT sample
            // (docs/BENCHMARKS.md, "braid's scheduler against min-RTT").
            Mode::Braid => SchedulerKind::Braid,
            Mode::Tcp | Mode::TcpIr | Mode::Dfec | Mode::Sato | Mode::Mptcp | Mode::MptcpDfec => {
                SchedulerKind::MinRtt
            }
        }
    }

    /// Whether a path whose last packet carried a symbol of a block closed at an app-idle point
    /// (a video frame, a response) sends a PING after it once it has nothing else to send: the
    /// PING's ACK shows a lost tail symbol to the time threshold at once, where otherwise only
    /// the next burst's packets (a frame interval later) do, and a reactive repair then misses
    /// a live frame's deadline. braid only; the seed modes keep their papers' loss detection.
    pub(crate) fn tail_probes(self) -> bool {
        self == Mode::Braid
    }

    /// Whether source symbols ending in zero bytes (a write's last, padded) go without them
    /// (SHORT_SYMBOL, PROTOCOL.md §8.10). braid only: the seed modes keep their papers' whole
    /// packets (with it, braid-ctcp on the testbed's live video at 0 % loss had 587 and 640 of
    /// 750 frames on time in two of three runs, 742–744 without; not traced).
    pub(crate) fn short_sources(self) -> bool {
        self == Mode::Braid
    }

    /// Whether losses judged congestion still feed the path's loss estimate. FMTCP's p_f is
    /// the path's loss rate, whatever caused the loss; braid's estimate tracks random loss only.
    pub(crate) fn estimate_counts_congestion(self) -> bool {
        self == Mode::Fmtcp
    }

    pub(crate) fn retransmits(self) -> bool {
        matches!(self, Mode::Tcp | Mode::Mptcp) || self.code_family() == CodeFamily::Xor
    }

    /// Where a block's repair symbols may go when the configuration does not say: MPTCP-dFEC's
    /// FEC is intra-subflow; every other mode places repair on any path (FMTCP's choice).
    pub fn default_placement(self) -> RepairPlacement {
        match self {
            Mode::MptcpDfec => RepairPlacement::PerPath,
            _ => RepairPlacement::AcrossPaths,
        }
    }

    /// Whether a lost packet's data is resent on the path that lost it (MPTCP: a subflow is a
    /// TCP connection that retransmits its own segments; the dFEC paper, footnote 1: fast
    /// retransmit resends on the same subflow, an RTO reschedules on another).
    pub(crate) fn resends_on_same_path(self) -> bool {
        matches!(self, Mode::Mptcp | Mode::MptcpDfec)
    }

    /// Whether losses just detected on a path with this RTT state count as congestion (the
    /// congestion controller hears of them).
    pub(crate) fn loss_is_congestion(self, rtt: &RttEstimator) -> bool {
        match self {
            Mode::Braid => {
                // The RTT a quarter above the path's minimum: a queue, whatever its size in
                // packets.
                let slow = rtt.latest() > rtt.min().mul_f64(1.25) + Duration::from_millis(2);
                slow || queue_near_full(rtt)
            }
            Mode::Tcp
            | Mode::Fmtcp
            | Mode::TcpIr
            | Mode::Dfec
            | Mode::Sato
            | Mode::Mptcp
            | Mode::MptcpDfec => true,
            // CTCP reacts to loss through its own estimate (Algorithm 2's loss-spike rule).
            Mode::Ctcp => false,
        }
    }

    /// Whether losses just detected are left out of the path's random-loss estimate, which sizes
    /// proactive repair. braid: only a queue near the fullest seen, where a drop-tail queue
    /// drops. A queue a quarter above the minimum RTT is not enough: braid's controller keeps a
    /// standing queue of that size (Startup's and ProbeBW's cwnd gain of 2), and leaving out
    /// every loss under it let the estimate decay to 0 at 5 % random loss, so no repair went
    /// ahead of need and a request's lost symbol waited a round trip for reactive repair.
    /// Other modes: what they call congestion.
    pub(crate) fn loss_is_overflow(self, rtt: &RttEstimator) -> bool {
        match self {
            Mode::Braid => queue_near_full(rtt),
            _ => self.loss_is_congestion(rtt),
        }
    }

    /// The mode's redundancy controller; `adaptive` is braid's tuning. MPTCP-dFEC with per-path
    /// placement runs one dFEC per subflow; across paths, one connection-level dFEC whose
    /// parities go on any path.
    pub(crate) fn redundancy(
        self,
        adaptive: Redundancy,
        placement: RepairPlacement,
    ) -> Box<dyn RedundancyController> {
        match self {
            Mode::Mptcp => Box::new(NoRedundancy),
            Mode::MptcpDfec if placement == RepairPlacement::PerPath => {
                Box::new(PerPath::<XorGroups<Dfec>>::default())
            }
            Mode::MptcpDfec => Box::new(XorGroups::new(Dfec::default())),
            Mode::Braid => Box::new(Adaptive::new(adaptive)),
            Mode::Tcp => Box::new(NoRedundancy),
            Mode::Ctcp => Box::new(CtcpRepair::default()),
            Mode::Fmtcp => Box::new(Fmtcp::default()),
            Mode::TcpIr => Box::new(XorGroups::new(TcpIr::new())),
            Mode::Dfec => Box::new(XorGroups::new(Dfec::default())),
            Mode::Sato => Box::new(XorGroups::new(Sato::new(adaptive.sato))),
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            let names: Vec<_> = Mode::ALL.iter().map(|m| m.name()).collect();
            format!("unknown mode `{s}` (expected one of: {})", names.join(", "))
        })
    }
}

/// A short queue on a long path never shows a quarter's rise in RTT: a loss is congestion when
/// the queue is near the fullest it has been seen on this path (the last [`QUEUE_FULL`] of
/// max − min), where a drop-tail queue drops. The range must be a queue, not jitter: at least
/// HyStart++'s threshold (RFC 9406 §4.2: min RTT / 8, clamped to 4–16 ms). On the testbed a
/// 2-ms floor let a few ms of host jitter call 2 % random loss congestion (0.41 × ideal instead
/// of 0.83).
fn queue_near_full(rtt: &RttEstimator) -> bool {
    let min = rtt.min();
    let queue = rtt.latest().saturating_sub(min);
    let range = rtt.max().saturating_sub(min);
    let significant = range >= (min / 8).clamp(Duration::from_millis(4), Duration::from_millis(16));
    significant && queue > Duration::from_millis(2) && queue.as_secs_f64() >= QUEUE_FULL * range.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::{Connection, ConnectionConfig};
    use crate::wire::TransportParams;
    use crate::Instant;

    #[test]
    fn each_mode_brings_its_code_family_and_congestion_controller() {
        assert_eq!("FMTCP".parse::<Mode>(), Ok(Mode::Fmtcp));
        assert_eq!("ctcp".parse::<Mode>(), Ok(Mode::Ctcp));
        assert_eq!("MPTCP-dFEC".parse::<Mode>(), Ok(Mode::MptcpDfec));
        assert_eq!(Mode::MptcpDfec.default_placement(), RepairPlacement::PerPath);
        assert_eq!(Mode::Fmtcp.default_placement(), RepairPlacement::AcrossPaths);
        let expected = [
            (Mode::Braid, CodeFamily::Rlnc, "braid"),
            (Mode::Tcp, CodeFamily::Rlnc, "cubic"),
            (Mode::Ctcp, CodeFamily::Rlnc, "ctcp"),
            (Mode::Fmtcp, CodeFamily::RaptorQ, "newreno"),
            (Mode::TcpIr, CodeFamily::Xor, "cubic"),
            (Mode::Dfec, CodeFamily::Xor, "cubic"),
            (Mode::Sato, CodeFamily::Xor, "newreno"),
            (Mode::Mptcp, CodeFamily::Rlnc, "cubic"),
            (Mode::MptcpDfec, CodeFamily::Xor, "cubic"),
        ];
        assert_eq!(expected.len(), Mode::ALL.len());
        for (mode, code, cc) in expected {
            let c = Connection::client(
                ConnectionConfig { mode, ..ConnectionConfig::default() },
                Instant::ZERO,
                1,
            );
            assert_eq!(c.params().code, code, "{mode:?}");
            assert_eq!(c.paths[0].cc.name(), cc, "{mode:?}");
        }
        // An explicit choice other than the default family, or of the controller, stands.
        let config = ConnectionConfig {
            mode: Mode::Fmtcp,
            params: TransportParams { code: CodeFamily::Xor, ..TransportParams::default() },
            cc: Some(CcAlgorithm::Cubic),
            ..ConnectionConfig::default()
        };
        let c = Connection::client(config, Instant::ZERO, 1);
        assert_eq!((c.params().code, c.paths[0].cc.name()), (CodeFamily::Xor, "cubic"));
    }

    /// A 60 ms path behind a 10 ms drop-tail queue never runs a quarter above its minimum: a
    /// loss is congestion when the queue delay is near the largest seen (and the old rule holds).
    #[test]
    fn braid_calls_a_loss_congestion_near_the_fullest_queue_seen() {
        let ms = Duration::from_millis;
        let mut rtt = RttEstimator::default();
        for sample in [60, 70, 61] {
            rtt.update(ms(sample), Duration::ZERO);
        }
        assert_eq!((rtt.min(), rtt.max()), (ms(60), ms(70)));
        assert!(!Mode::Braid.loss_is_congestion(&rtt), "1 ms of queue is random loss");
        rtt.update(ms(66), Duration::ZERO);
        assert!(!Mode::Braid.loss_is_congestion(&rtt), "6 of 10 ms is below the top fifth");
        rtt.update(ms(69), Duration::ZERO);
        assert!(Mode::Braid.loss_is_congestion(&rtt), "9 of 10 ms: the queue is full");
        // Jitter is not a queue: a 3-ms range on a 100-ms path never makes a loss congestion.
        let mut rtt = RttEstimator::default();
        for sample in [100, 103, 103] {
            rtt.update(ms(sample), Duration::ZERO);
        }
        assert!(!Mode::Braid.loss_is_congestion(&rtt));
        // A long path with a deep queue: a quarter's rise is congestion, whatever the maximum.
        let mut rtt = RttEstimator::default();
        for sample in [100, 300, 128] {
            rtt.update(ms(sample), Duration::ZERO);
        }
        assert!(Mode::Braid.loss_is_congestion(&rtt));
        rtt.update(ms(103), Duration::ZERO);
        assert!(!Mode::Braid.loss_is_congestion(&rtt));
        // After a route change the range is learned again.
        rtt.restart_min();
        assert_eq!(rtt.max(), ms(103));
    }

    #[test]
    fn braid_starts_paths_with_32_datagrams_and_the_seed_modes_with_rfc_9002s_ten() {
        let mss = ConnectionConfig::default().max_datagram as u64;
        for (mode, window) in [
            (Mode::Braid, 32 * mss),
            (Mode::Tcp, crate::cc::initial_window(mss)),
            (Mode::Fmtcp, crate::cc::initial_window(mss)),
            (Mode::Mptcp, crate::cc::initial_window(mss)),
        ] {
            let c = Connection::client(
                ConnectionConfig { mode, ..ConnectionConfig::default() },
                Instant::ZERO,
                2,
            );
            assert!(c.paths.iter().all(|p| p.cc.window() == window), "{mode:?}");
        }
    }

    #[test]
    fn each_mode_brings_its_scheduler_unless_one_is_named() {
        let expected = [
            (Mode::Braid, "braid"),
            (Mode::Tcp, "minrtt"),
            (Mode::Ctcp, "ctcp"),
            (Mode::Fmtcp, "eat"),
            (Mode::TcpIr, "minrtt"),
            (Mode::Dfec, "minrtt"),
            (Mode::Sato, "minrtt"),
            (Mode::Mptcp, "minrtt"),
            (Mode::MptcpDfec, "minrtt"),
        ];
        assert_eq!(expected.len(), Mode::ALL.len());
        for (mode, name) in expected {
            assert_eq!(mode.default_scheduler().name(), name);
            let c = Connection::client(
                ConnectionConfig { mode, ..ConnectionConfig::default() },
                Instant::ZERO,
                1,
            );
            assert_eq!(c.scheduler.name(), name, "{mode:?}");
        }
        let config = ConnectionConfig {
            mode: Mode::Fmtcp,
            scheduler: Some(SchedulerKind::RoundRobin),
            ..ConnectionConfig::default()
        };
        assert_eq!(Connection::client(config, Instant::ZERO, 1).scheduler.name(), "roundrobin");
    }
}
