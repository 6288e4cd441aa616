//! Congestion control: how much a path may have in flight, and how fast to send it.
//!
//! One [`CongestionController`] per path. The connection tells it what happened — packets sent,
//! acknowledged, lost — and which losses count as congestion is the *mode's* decision, not the
//! controller's: TCP-dFEC reports only losses its FEC failed to repair (dFEC §III-B), Sato et al.
//! report repaired losses too with their own factor r (§3.3), braid reports none of the random
//! losses its code absorbs. The controller only answers "how much, how fast".

mod bbr;
mod ctcp;
mod cubic;
mod hystart;
mod lia;
mod model;
mod newreno;
pub(crate) mod newreno_ns3;
mod rtt;
mod window;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use bbr::Bbr;
pub use ctcp::{CtcpEstimate, CtcpTokens};
pub use cubic::Cubic;
pub use lia::Lia;
pub use model::ModelCc;
pub use newreno::NewReno;
pub use newreno_ns3::NewRenoNs3;
pub use rtt::{RttEstimator, INITIAL_RTT};

use crate::Instant;

/// An acknowledgement of newly acknowledged bytes on a path.
#[derive(Debug, Clone, Copy)]
pub struct Ack {
    pub now: Instant,
    /// Bytes newly acknowledged by this ACK.
    pub bytes: u64,
    /// When the newest acknowledged packet was sent.
    pub largest_sent: Instant,
    /// Bytes in flight after removing the acknowledged ones.
    pub in_flight: u64,
    /// Delivery-rate sample from this ACK, in bytes per second (for model-based controllers).
    pub delivery_rate: Option<f64>,
    /// The ACK brought a new RTT sample: its largest acknowledged packet was newly acknowledged
    /// (RFC 9002 §5.1). An ACK that only fills holes leaves the estimator's latest sample as it
    /// was, and a controller counting samples must not count that one again.
    pub rtt_sample: bool,
}

/// A read-only view of all the connection's paths — each one's congestion window and smoothed
/// RTT, and a model-based controller's estimates — for a coupled controller: RFC 6356's increase
/// on one path needs every path's window and RTT, and braid's controller compares the paths'
/// queues to find the ones that share a bottleneck.
#[derive(Debug, Clone, Copy, Default)]
pub struct Aggregate {
    paths: [(u64, Duration); crate::wire::MAX_PATHS as usize],
    models: [Option<ModelView>; crate::wire::MAX_PATHS as usize],
    len: usize,
    own: usize,
    /// Bit `i`: path `i` cannot carry data now (failed, or not heard from yet).
    inactive: u8,
}

/// What a model-based controller estimates of its path (see [`CongestionController::model_view`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelView {
    /// The bottleneck bandwidth estimate, bytes per second.
    pub bandwidth: f64,
    /// The last completed round's smallest RTT minus the path's minimum RTT: the queue it saw.
    pub queue: Option<Duration>,
    /// Rounds completed so far: a view whose round does not advance is stale.
    pub round: u64,
    /// What the last completed round delivered, bytes per second.
    pub round_rate: f64,
}

impl Aggregate {
    /// Adds a path (beyond a connection's limit, [`crate::wire::MAX_PATHS`], it is ignored).
    pub fn push(&mut self, window: u64, smoothed_rtt: Duration) {
        self.push_path(window, smoothed_rtt, None);
    }

    /// Adds a path with its controller's model, if it has one.
    pub fn push_path(&mut self, window: u64, smoothed_rtt: Duration, model: Option<ModelView>) {
        if self.len < self.paths.len() {
            self.paths[self.len] = (window, smoothed_rtt);
            self.models[self.len] = model;
            self.len += 1;
        }
    }

    /// Marks path `index` as one that cannot carry data now (failed, or not heard from yet).
    pub fn set_inactive(&mut self, index: usize) {
        if index < self.len {
            self.inactive |= 1 << index;
        }
    }

    /// Whether path `index` can carry data (paths are, unless marked otherwise).
    pub fn is_active(&self, index: usize) -> bool {
        index < self.len && self.inactive & (1 << index) == 0
    }

    /// Marks path `index` as the one the view is given to.
    pub fn set_own(&mut self, index: usize) {
        self.own = index;
    }

    /// The index of the path the view is given to.
    pub fn own(&self) -> usize {
        self.own
    }

    /// Each path's (window bytes, smoothed RTT).
    pub fn iter(&self) -> impl Iterator<Item = (u64, Duration)> + '_ {
        self.paths[..self.len].iter().copied()
    }

    /// Each path's model, by index, if its controller has one.
    pub fn models(&self) -> impl Iterator<Item = (usize, Option<ModelView>)> + '_ {
        self.models[..self.len].iter().copied().enumerate()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A congestion signal the mode decided to act on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Congestion {
    /// A loss that counts as congestion: the controller's own reduction (NewReno ½, CUBIC β).
    Loss,
    /// A loss the code repaired, reported by a mode that still treats it as congestion, with the
    /// mode's multiplicative factor (Sato et al. §3.3: cwnd ← r·cwnd, r = 0.7).
    Repaired { factor: f64 },
}

/// The per-path congestion controller.
pub trait CongestionController: Send + fmt::Debug {
    fn name(&self) -> &'static str;

    /// Bytes the path may have in flight.
    fn window(&self) -> u64;

    /// Bytes per second to pace at, if the controller paces (`None`: send as the window allows).
    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<u64> {
        None
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, _in_flight: u64) {}

    /// The application left the window unused (nothing to send): rate samples of what is in
    /// flight now understate the path (BBR's app-limited marking). The default ignores it.
    fn on_app_limited(&mut self) {}

    /// Sets the initial window, in bytes, before anything was sent (a mode's choice; see
    /// `Mode::initial_window`). Controllers without a loss window ignore it.
    fn set_initial_window(&mut self, _bytes: u64) {}

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator);

    /// Whether the controller couples its paths and so wants [`Self::on_aggregate`] (LIA).
    fn coupled(&self) -> bool {
        false
    }

    /// All the connection's paths, given just before an ACK on this path is processed, to a
    /// [`Self::coupled`] controller.
    fn on_aggregate(&mut self, _all: &Aggregate) {}

    /// A model-based controller's estimates of its path, for the other paths' coupling. The
    /// default has none.
    fn model_view(&self) -> Option<ModelView> {
        None
    }

    /// The paths this controller judges to share its path's bottleneck, one bit per path index
    /// (for statistics; only a coupled controller that detects sharing has any).
    fn shared_with(&self) -> u8 {
        0
    }

    /// A congestion event for a packet sent at `sent`. Controllers react at most once per round
    /// trip: events for packets sent before the last reduction are ignored (RFC 6582 §3.2).
    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion);

    /// The retransmission timer fired: collapse to the minimum window (RFC 5681 §3.1).
    fn on_timeout(&mut self, now: Instant);

    /// `packets` were declared lost (whether or not the mode calls it congestion; not a probe
    /// timeout's presumption, nor a loss an XOR mode holds for its parity), for controllers that keep their own loss estimate (CTCP
    /// Algorithm 1). The default ignores it.
    fn on_lost(&mut self, _now: Instant, _packets: u64) {}

    /// The controller's own loss-rate estimate, if it keeps one; the redundancy controller
    /// then uses it instead of the path's (CTCP Algorithm 3 uses Algorithm 1's `p`).
    fn loss_estimate(&self) -> Option<f64> {
        None
    }

    /// The probe timer fired, the `consecutive`-th time without an ACK. The default collapses
    /// the window only at the third (RFC 9002 §7.6's persistent congestion; a single probe
    /// timeout is usually a lost tail).
    fn on_probe_timeout(&mut self, now: Instant, consecutive: u32) {
        if consecutive >= 3 {
            self.on_timeout(now);
        }
    }

    /// The connection runs TCP's loss recovery itself (cumulative-ACK recovery,
    /// `conn::LossRecovery::Cumulative`): a controller that models recovery episodes and
    /// timeouts of its own (`newreno-ns3`) takes them from the connection instead — a recovery
    /// opens at a congestion signal and lasts until [`Self::on_recovery_end`]. The default
    /// ignores it.
    fn follow_connection_recovery(&mut self) {}

    /// The connection's fast recovery ended (a full ACK, RFC 6582 §3.2 step 3). The default
    /// ignores it.
    fn on_recovery_end(&mut self, _now: Instant) {}

    /// Retransmission timeouts the controller models itself, beyond the connection's probe
    /// timeouts (an ns-3-style NewReno's lost retransmissions); counted in the path's timeouts.
    fn timeouts(&self) -> u64 {
        0
    }

    /// Fast-recovery episodes, where the controller counts them (the ns-3-style NewReno's, for
    /// Sato et al.'s Fig. 7(a)); `None` for a controller that does not.
    fn fast_recoveries(&self) -> Option<u64> {
        None
    }
}

/// Which controller to build; flags map straight to it (`--cc cubic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcAlgorithm {
    NewReno,
    Cubic,
    /// Model-based (BBR-like), see `bbr.rs`.
    Bbr,
    /// CTCP's tokens (Algorithm 2), see `ctcp.rs`.
    Ctcp,
    /// RFC 6356's coupled increase across the connection's paths, see `lia.rs`.
    Lia,
    /// braid's own: model-based, coding-aware, small standing queue, see `model.rs`.
    Braid,
    /// NewReno as ns-3 runs it, without SACK (a paper's baseline), see `newreno_ns3.rs`.
    NewRenoNs3,
}

impl CcAlgorithm {
    pub const ALL: [CcAlgorithm; 7] = [
        CcAlgorithm::Braid,
        CcAlgorithm::NewReno,
        CcAlgorithm::Cubic,
        CcAlgorithm::Bbr,
        CcAlgorithm::Ctcp,
        CcAlgorithm::Lia,
        CcAlgorithm::NewRenoNs3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CcAlgorithm::NewReno => "newreno",
            CcAlgorithm::Cubic => "cubic",
            CcAlgorithm::Bbr => "bbr",
            CcAlgorithm::Ctcp => "ctcp",
            CcAlgorithm::Lia => "lia",
            CcAlgorithm::Braid => "braid",
            CcAlgorithm::NewRenoNs3 => "newreno-ns3",
        }
    }

    /// A controller for a path carrying datagrams of `mss` bytes.
    pub fn build(self, mss: u64) -> Box<dyn CongestionController> {
        match self {
            CcAlgorithm::NewReno => Box::new(NewReno::new(mss)),
            CcAlgorithm::Cubic => Box::new(Cubic::new(mss)),
            CcAlgorithm::Bbr => Box::new(Bbr::new(mss)),
            CcAlgorithm::Ctcp => Box::new(CtcpTokens::new(mss)),
            CcAlgorithm::Lia => Box::new(Lia::new(mss)),
            CcAlgorithm::Braid => Box::new(ModelCc::new(mss)),
            CcAlgorithm::NewRenoNs3 => Box::new(NewRenoNs3::new(mss)),
        }
    }
}

impl FromStr for CcAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CcAlgorithm::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            let names: Vec<_> = CcAlgorithm::ALL.iter().map(|a| a.name()).collect();
            format!("unknown congestion controller `{s}` (expected one of: {})", names.join(", "))
        })
    }
}

/// RFC 9002 §7.2: initial window of 10 datagrams, bounded to 14 720 bytes' worth where
/// datagrams are large.
pub(crate) fn initial_window(mss: u64) -> u64 {
    (10 * mss).min((2 * mss).max(14_720))
}

/// RFC 9002 §7.2: the minimum window is two datagrams.
pub(crate) fn minimum_window(mss: u64) -> u64 {
    2 * mss
}

/// The widest window a loss-based controller opens: 1 GiB, 8 Gbit/s over a 1 s round trip, as
/// braid's own controller caps its window. Loss-based windows grow by what is acknowledged; the
/// cap keeps an acknowledgement of more than was ever in flight from lifting the window for
/// good, and the window's arithmetic far from overflow.
pub(crate) const MAXIMUM_WINDOW: u64 = 1 << 30;

/// Duration as fractional seconds, for the cubic function.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_explains_mistakes() {
        assert_eq!("CUBIC".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Cubic));
        assert_eq!("newreno-ns3".parse::<CcAlgorithm>(), Ok(CcAlgorithm::NewRenoNs3));
        assert!("vegas".parse::<CcAlgorithm>().unwrap_err().contains("newreno, cubic, bbr"));
        assert_eq!(initial_window(1200), 12_000);
        assert_eq!(initial_window(9000), 18_000);
    }

    const MSS: u64 = 1200;
    /// The widest window any controller may open.
    const CEILING: u64 = MAXIMUM_WINDOW;
    /// The fastest pacing rate any controller may ask for: `newreno-ns3`'s "unpaced" rate.
    const FASTEST: u64 = u64::MAX >> 16;

    /// The window, pacing rate, model and loss estimate of `cc` are within the stated bounds:
    /// at least one datagram in flight (`newreno-ns3` after a timeout) and at most [`CEILING`];
    /// paced, if at all, at one datagram a second or more (a zero rate would stall the path)
    /// and at most [`FASTEST`]; finite estimates.
    fn assert_bounded(cc: &dyn CongestionController, rtt: &RttEstimator, step: &str) {
        let name = cc.name();
        let w = cc.window();
        assert!((MSS..=CEILING).contains(&w), "{name}, {step}: window {w}");
        if let Some(p) = cc.pacing_rate(rtt) {
            assert!((MSS..=FASTEST).contains(&p), "{name}, {step}: pacing {p}");
        }
        if let Some(m) = cc.model_view() {
            assert!(m.bandwidth.is_finite() && m.bandwidth >= 0.0, "{name}, {step}: {m:?}");
            assert!(m.round_rate.is_finite() && m.round_rate >= 0.0, "{name}, {step}: {m:?}");
        }
        if let Some(p) = cc.loss_estimate() {
            assert!((0.0..=1.0).contains(&p), "{name}, {step}: loss estimate {p}");
        }
    }

    /// Every controller, through the common trait, fed what no path produces: RTT samples of
    /// zero and of minutes, delivery rates that are not a number, infinite, negative, zero or
    /// far above any link, ACKs for a terabyte never sent and for packets "sent" in the future,
    /// absurd loss counts and in-flight figures, other paths' views of the same kind, and
    /// timeouts in a row. None may panic (no division by zero, no overflow) or leave the
    /// bounds of [`assert_bounded`].
    #[test]
    fn every_controller_stays_within_bounds_on_nonsense() {
        let rtts = [0, 1, 60_000_000, 600_000_000, 100_000].map(Duration::from_micros);
        let rates =
            [None, Some(f64::NAN), Some(f64::INFINITY), Some(-5.0), Some(0.0), Some(1e-9), Some(1e30)];
        // (bytes acknowledged, in flight after): an ACK of nothing, one that leaves absurdly
        // much in flight, one for a terabyte nobody sent.
        let acks = [(0, 0), (MSS, u64::MAX / 2), (1 << 40, 0)];
        // Another path's view as far off as its controller's clamped inputs allow (RTTs to 60 s)
        // and beyond (rates that are not finite).
        let nonsense_view = ModelView {
            bandwidth: f64::NAN,
            queue: Some(Duration::from_secs(60)),
            round: 1 << 40,
            round_rate: f64::INFINITY,
        };
        let mut others = Aggregate::default();
        others.push_path(0, Duration::ZERO, Some(nonsense_view));
        others.push_path(
            u64::MAX,
            Duration::from_secs(60),
            Some(ModelView { bandwidth: 0.0, ..nonsense_view }),
        );
        others.push_path(CEILING, Duration::from_secs(600), None);
        for algorithm in CcAlgorithm::ALL {
            let mut cc = algorithm.build(MSS);
            assert_bounded(&*cc, &RttEstimator::default(), "before any sample");
            let mut t = 0;
            for sample in rtts {
                let mut rtt = RttEstimator::default();
                rtt.update(sample, Duration::ZERO);
                for rate in rates {
                    for (bytes, in_flight) in acks {
                        t += 10_000;
                        let now = Instant::from_micros(t);
                        for largest_sent in [now, Instant::from_micros(u64::MAX), Instant::ZERO] {
                            cc.on_sent(now, MSS, in_flight);
                            for own in 0..3 {
                                let mut all = others;
                                all.set_own(own);
                                cc.on_aggregate(&all);
                            }
                            cc.on_ack(
                                &Ack {
                                    now,
                                    bytes,
                                    largest_sent,
                                    in_flight,
                                    delivery_rate: rate,
                                    rtt_sample: true,
                                },
                                &rtt,
                            );
                            let step = format!("ACK of {bytes} at {now:?}, rtt {sample:?}, rate {rate:?}");
                            assert_bounded(&*cc, &rtt, &step);
                        }
                    }
                    let now = Instant::from_micros(t);
                    cc.on_lost(now, 1 << 32);
                    cc.on_congestion(now, now, Congestion::Loss);
                    cc.on_congestion(
                        now,
                        Instant::from_micros(u64::MAX),
                        Congestion::Repaired { factor: 0.7 },
                    );
                    assert_bounded(&*cc, &rtt, "after congestion");
                    cc.on_app_limited();
                    for consecutive in [1, 3, u32::MAX] {
                        cc.on_probe_timeout(now, consecutive);
                    }
                    cc.on_timeout(now);
                    cc.on_recovery_end(now);
                    assert_bounded(&*cc, &rtt, "after timeouts");
                }
            }
            // Then ACKs for a terabyte each, in a row, with nothing in between to shrink the
            // window: growth stops at the ceiling.
            let mut rtt = RttEstimator::default();
            rtt.update(Duration::from_millis(100), Duration::ZERO);
            for _ in 0..100 {
                t += 10_000;
                let now = Instant::from_micros(t);
                let ack = Ack {
                    now,
                    bytes: 1 << 40,
                    largest_sent: now,
                    in_flight: 0,
                    delivery_rate: Some(1e30),
                    rtt_sample: true,
                };
                cc.on_ack(&ack, &rtt);
                assert_bounded(&*cc, &rtt, "ACKs for terabytes in a row");
            }
        }
    }
}
