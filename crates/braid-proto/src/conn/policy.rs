//! Modes: each scheme's choice of code, redundancy controller and congestion response.
//!
//! braid's congestion response: a loss counts as congestion only when the path's RTT shows a queue (latest RTT
//! above 1.25 × min RTT + 2 ms); random loss on an empty queue is repaired, not backed off
//! from. This is a simple delay-gated rule in the spirit of TCP Veno; the model-based
//! controller of issue 3 replaces it.

use std::time::Duration;

use crate::cc::RttEstimator;
use crate::redundancy::{NoRedundancy, Redundancy, RedundancyController};

/// A scheme: how a connection codes, repairs and reacts to loss. More modes (the seed papers')
/// follow in issue 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// braid's default: coded blocks, adaptive redundancy, delay-gated loss response.
    Braid,
    /// The simulator's model of conventional TCP: no coding, every lost packet's data is sent
    /// again (fast retransmit after three later packets are acknowledged, RFC 9002's packet
    /// threshold, or on the probe timer), every loss is congestion. A model, not Linux TCP.
    Tcp,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Braid, Mode::Tcp];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Braid => "braid",
            Mode::Tcp => "tcp",
        }
    }

    pub(crate) fn retransmits(self) -> bool {
        self == Mode::Tcp
    }

    /// Whether losses just detected on a path with this RTT state count as congestion.
    pub(crate) fn loss_is_congestion(self, rtt: &RttEstimator) -> bool {
        match self {
            Mode::Braid => rtt.latest() > rtt.min().mul_f64(1.25) + Duration::from_millis(2),
            Mode::Tcp => true,
        }
    }

    /// The mode's redundancy controller; `adaptive` is braid's tuning.
    pub(crate) fn redundancy(self, adaptive: Redundancy) -> Box<dyn RedundancyController> {
        match self {
            Mode::Braid => Box::new(adaptive),
            Mode::Tcp => Box::new(NoRedundancy),
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
