//! Modes: each scheme's choice of code, redundancy controller and congestion response.
//!
//! braid's congestion response: a loss counts as congestion only when the path's RTT shows a queue (latest RTT
//! above 1.25 × min RTT + 2 ms); random loss on an empty queue is repaired, not backed off
//! from. This is a simple delay-gated rule in the spirit of TCP Veno; the model-based
//! controller of issue 3 replaces it.

use std::time::Duration;

use braid_fec::CodeFamily;

use crate::cc::{CcAlgorithm, RttEstimator};
use crate::redundancy::{Dfec, NoRedundancy, Redundancy, RedundancyController, Sato, TcpIr};

/// A scheme: how a connection codes, repairs and reacts to loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// braid's default: coded blocks, adaptive redundancy, delay-gated loss response.
    Braid,
    /// The simulator's model of conventional TCP: no coding, every lost packet's data is sent
    /// again (fast retransmit after three later packets are acknowledged, RFC 9002's packet
    /// threshold, or on the probe timer), every loss is congestion. A model, not Linux TCP.
    Tcp,
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
    pub const ALL: [Mode; 5] = [Mode::Braid, Mode::Tcp, Mode::TcpIr, Mode::Dfec, Mode::Sato];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Braid => "braid",
            Mode::Tcp => "tcp",
            Mode::TcpIr => "tcp-ir",
            Mode::Dfec => "dfec",
            Mode::Sato => "sato",
        }
    }

    /// The code family the mode implies, which the client proposes in the handshake (`None`:
    /// the configuration's choice).
    pub fn code_family(self) -> Option<CodeFamily> {
        match self {
            Mode::Braid | Mode::Tcp => None,
            Mode::TcpIr | Mode::Dfec | Mode::Sato => Some(CodeFamily::Xor),
        }
    }

    /// The smallest block length the mode needs: the XOR modes' groups do not span blocks, so a
    /// block holds at least dFEC's largest FEC block (256) and Sato's widest window (3 × 30).
    pub fn min_block_len(self) -> Option<u16> {
        self.code_family().map(|_| 256)
    }

    /// The congestion controller the mode's paper ran on, used when the configuration names
    /// none. braid and the `tcp` model: CUBIC (the model-based controller is not tuned yet).
    /// TCP-IR and TCP-dFEC were built into Linux TCP, whose default is CUBIC; Sato et al. ran
    /// NewReno in ns-3 (§4).
    pub fn default_cc(self) -> CcAlgorithm {
        match self {
            Mode::Braid | Mode::Tcp | Mode::TcpIr | Mode::Dfec => CcAlgorithm::Cubic,
            Mode::Sato => CcAlgorithm::NewReno,
        }
    }

    pub(crate) fn retransmits(self) -> bool {
        self == Mode::Tcp || self.code_family() == Some(CodeFamily::Xor)
    }

    /// Whether losses just detected on a path with this RTT state count as congestion.
    pub(crate) fn loss_is_congestion(self, rtt: &RttEstimator) -> bool {
        match self {
            Mode::Braid => rtt.latest() > rtt.min().mul_f64(1.25) + Duration::from_millis(2),
            Mode::Tcp | Mode::TcpIr | Mode::Dfec | Mode::Sato => true,
        }
    }

    /// The mode's redundancy controller; `adaptive` is braid's tuning.
    pub(crate) fn redundancy(self, adaptive: Redundancy) -> Box<dyn RedundancyController> {
        match self {
            Mode::Braid => Box::new(adaptive),
            Mode::Tcp => Box::new(NoRedundancy),
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
