//! Modes: each scheme's choice of code, redundancy controller and congestion response.
//!
//! braid's congestion response: a loss counts as congestion only when the path's RTT shows a queue (latest RTT
//! above 1.25 × min RTT + 2 ms); random loss on an empty queue is repaired, not backed off
//! from. This is a simple delay-gated rule in the spirit of TCP Veno; the model-based
//! controller of issue 3 replaces it.

use std::time::Duration;

use braid_fec::CodeFamily;

use crate::cc::{CcAlgorithm, RttEstimator};
use crate::redundancy::{
    CtcpScheduler, Dfec, Fmtcp, NoRedundancy, Redundancy, RedundancyController, Sato, TcpIr,
};
use crate::sched::SchedulerKind;

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
    /// scheduling ([`crate::redundancy::CtcpScheduler`]). Losses are repaired, not reacted to;
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
}

impl Mode {
    pub const ALL: [Mode; 7] =
        [Mode::Braid, Mode::Tcp, Mode::TcpIr, Mode::Dfec, Mode::Sato, Mode::Ctcp, Mode::Fmtcp];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Braid => "braid",
            Mode::Tcp => "tcp",
            Mode::Ctcp => "ctcp",
            Mode::Fmtcp => "fmtcp",
            Mode::TcpIr => "tcp-ir",
            Mode::Dfec => "dfec",
            Mode::Sato => "sato",
        }
    }

    /// The code family the mode is defined with: the client proposes it in the handshake unless
    /// its configuration names another than the default (RLNC).
    pub fn code_family(self) -> CodeFamily {
        match self {
            Mode::Braid | Mode::Tcp | Mode::Ctcp => CodeFamily::Rlnc,
            Mode::Fmtcp => CodeFamily::RaptorQ,
            Mode::TcpIr | Mode::Dfec | Mode::Sato => CodeFamily::Xor,
        }
    }

    /// The smallest block length the mode needs: the XOR modes' groups do not span blocks, so a
    /// block holds at least dFEC's largest FEC block (256) and Sato's widest window (3 × 30).
    pub fn min_block_len(self) -> Option<u16> {
        (self.code_family() == CodeFamily::Xor).then_some(256)
    }

    /// The congestion controller a path gets when the configuration names none. braid and the
    /// `tcp` model: CUBIC (it measured best for braid; see cc/bbr.rs for the model-based one).
    /// TCP-IR and TCP-dFEC were built into Linux TCP, whose default is CUBIC; Sato et al. ran
    /// NewReno in ns-3 (§4). CTCP: its tokens (Algorithm 2). FMTCP: NewReno — it was built on
    /// IETF-MPTCP in ns-2, whose subflows run NewReno, and says the choice does not matter on
    /// disjoint paths (§II).
    pub fn default_cc(self) -> CcAlgorithm {
        match self {
            Mode::Braid | Mode::Tcp | Mode::TcpIr | Mode::Dfec => CcAlgorithm::Cubic,
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
            Mode::Braid => SchedulerKind::Braid,
            Mode::Tcp | Mode::TcpIr | Mode::Dfec | Mode::Sato => SchedulerKind::MinRtt,
        }
    }

    /// Whether losses judged congestion still feed the path's loss estimate. FMTCP's p_f is
    /// the path's loss rate, whatever caused the loss; braid's estimate tracks random loss only.
    pub(crate) fn estimate_counts_congestion(self) -> bool {
        self == Mode::Fmtcp
    }

    pub(crate) fn retransmits(self) -> bool {
        self == Mode::Tcp || self.code_family() == CodeFamily::Xor
    }

    /// Whether losses just detected on a path with this RTT state count as congestion.
    pub(crate) fn loss_is_congestion(self, rtt: &RttEstimator) -> bool {
        match self {
            Mode::Braid => rtt.latest() > rtt.min().mul_f64(1.25) + Duration::from_millis(2),
            Mode::Tcp | Mode::Fmtcp | Mode::TcpIr | Mode::Dfec | Mode::Sato => true,
            // CTCP reacts to loss through its own estimate (Algorithm 2's loss-spike rule).
            Mode::Ctcp => false,
        }
    }

    /// The mode's redundancy controller; `adaptive` is braid's tuning.
    pub(crate) fn redundancy(self, adaptive: Redundancy) -> Box<dyn RedundancyController> {
        match self {
            Mode::Braid => Box::new(adaptive),
            Mode::Tcp => Box::new(NoRedundancy),
            Mode::Ctcp => Box::new(CtcpScheduler::default()),
            Mode::Fmtcp => Box::new(Fmtcp::default()),
            Mode::TcpIr => Box::new(TcpIr::new()),
            Mode::Dfec => Box::new(Dfec::default()),
            Mode::Sato => Box::new(Sato::default()),
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
        let expected = [
            (Mode::Braid, CodeFamily::Rlnc, "cubic"),
            (Mode::Tcp, CodeFamily::Rlnc, "cubic"),
            (Mode::Ctcp, CodeFamily::Rlnc, "ctcp"),
            (Mode::Fmtcp, CodeFamily::RaptorQ, "newreno"),
            (Mode::TcpIr, CodeFamily::Xor, "cubic"),
            (Mode::Dfec, CodeFamily::Xor, "cubic"),
            (Mode::Sato, CodeFamily::Xor, "newreno"),
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
