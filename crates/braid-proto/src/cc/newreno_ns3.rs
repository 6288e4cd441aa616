//! NewReno as ns-3 runs it (`TcpSocketBase` with `TcpNewReno`, SACK off): the baseline of Sato
//! et al.'s ns-3 dumbbell (§4, Table 1: "TCP NewReno"), selectable as `--cc newreno-ns3`.
//!
//! braid's own NewReno ([`super::NewReno`]) sits on braid's loss detection, which sees every
//! hole of a window at once from the ACK ranges (SACK-like), paces, and leaves slow start early
//! with HyStart++. The TCP the paper measured has none of that, and its gain came from the fast
//! recoveries and timeouts of that TCP (its Fig. 7). What this controller models, since the
//! connection's loss detection stays braid's:
//!
//! - **ns-3's window arithmetic**: initial window one segment (ns-3's `InitialCwnd` default);
//!   slow start +1 segment per ACK, however much it acknowledges (no byte counting); congestion
//!   avoidance + max(1, MSS²/cwnd) bytes per ACK (`TcpNewReno::SlowStart` and
//!   `CongestionAvoidance`, called once per ACK); no HyStart; no pacing (a window goes out as a
//!   burst; ns-3's TCP has no pacer before 3.29, and `EnablePacing` is off after).
//! - **ns-3's delayed ACKs**: its receiver ACKs every second in-order segment
//!   (`TcpSocket::DelAckCount` 2, every ns-3 release), so "per ACK" above is per two segments
//!   acknowledged: slow start grows the window 1.5 times a round trip, congestion avoidance by
//!   half a segment. braid's receiver ACKs within 1 ms, at a flow's share of this bottleneck
//!   nearly every packet, so the controller counts the acknowledged bytes itself and grows once
//!   per two segments, whatever braid's ACKs cover.
//! - **Fast retransmit and fast recovery (RFC 6582) without SACK**: at the first loss of a
//!   flight, ssthresh = max(flight / 2, 2 segments) and cwnd = ssthresh. A partial ACK repairs
//!   one hole per round trip, so a flight with k holes stays in recovery (no growth) for k
//!   round trips from its first loss; further losses of that flight extend it and do not reduce
//!   again.
//! - **Retransmission timeout**: NewReno without SACK cannot see that a packet sent during
//!   recovery (a retransmission, or new data sent on the inflated window) was lost before the
//!   recovery ends; ns-3 then waits for its retransmission timer. A loss of a packet sent while
//!   the recovery it was sent in is still open is therefore taken as a timeout: ssthresh =
//!   max(flight / 2, 2 segments), one segment in flight until RFC 6298's RTO (ns-3's 1 s
//!   minimum, doubled per timeout in a row) has passed, then slow start. The connection's own
//!   probe timeout is a timeout too (every one, not the third in a row).
//!
//! A loss the mode's code repaired (Sato et al.'s ECN-style echo, §3.3) is not a loss to the
//! TCP below: cwnd ← r·cwnd once per round trip, no recovery episode, never a timeout.

use std::time::Duration;

use super::{minimum_window, Ack, Congestion, CongestionController, RttEstimator};
use crate::Instant;

/// ns-3's `MinRto` default.
const MIN_RTO: Duration = Duration::from_secs(1);
/// The most an RTO is doubled (ns-3 backs off up to its `MaxRto`, 60 s).
const MAX_BACKOFF: u32 = 6;
/// In-order segments ns-3's receiver takes per ACK (`TcpSocket::DelAckCount` default).
const DELAYED_ACK_COUNT: u64 = 2;

#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// When the flight's first loss was detected; packets sent up to then belong to the flight.
    start: Instant,
    /// When the last hole is repaired: `start` + holes × SRTT.
    end: Instant,
    holes: u64,
}

#[derive(Debug, Clone)]
pub struct NewRenoNs3 {
    mss: u64,
    window: u64,
    ssthresh: u64,
    /// Bytes in flight as last reported (the flight size of ns-3's ssthresh rule).
    in_flight: u64,
    srtt: Duration,
    rto: Duration,
    /// Packets reported lost since the last congestion signal (`on_lost` comes first).
    pending_lost: u64,
    recovery: Option<Recovery>,
    /// A modelled retransmission timeout: one segment in flight until then.
    stalled_until: Option<Instant>,
    backoff: u32,
    /// Reductions after a repaired loss are once per round trip: packets sent before this.
    repaired_until: Option<Instant>,
    /// Bytes acknowledged towards ns-3's next delayed ACK (fewer than two segments).
    unacked_by_ns3: u64,
    timeouts: u64,
}

impl NewRenoNs3 {
    pub fn new(mss: u64) -> NewRenoNs3 {
        NewRenoNs3 {
            mss,
            window: mss,
            ssthresh: u64::MAX,
            in_flight: 0,
            srtt: Duration::from_millis(333),
            rto: MIN_RTO,
            pending_lost: 0,
            recovery: None,
            stalled_until: None,
            backoff: 0,
            repaired_until: None,
            unacked_by_ns3: 0,
            timeouts: 0,
        }
    }

    fn half_flight(&self) -> u64 {
        (self.in_flight.max(self.window) / 2).max(minimum_window(self.mss))
    }

    /// ns-3's retransmission timeout: ssthresh from the flight, one segment, the RTO's silence.
    fn timeout(&mut self, now: Instant) {
        self.timeouts += 1;
        self.ssthresh = self.half_flight();
        self.window = self.mss;
        self.recovery = None;
        let rto = self.rto * 2u32.pow(self.backoff.min(MAX_BACKOFF));
        self.stalled_until = Some(now + rto);
        self.backoff += 1;
    }

    fn stalled(&self) -> bool {
        self.stalled_until.is_some()
    }
}

/// Round trips a recovery of `holes` holes lasts, bounded (the count comes from what the peer
/// acknowledges, and a recovery longer than this is a timeout in any TCP).
fn round_trips(holes: u64) -> u32 {
    u32::try_from(holes.min(1000)).unwrap_or(1000)
}

impl CongestionController for NewRenoNs3 {
    fn name(&self) -> &'static str {
        "newreno-ns3"
    }

    fn window(&self) -> u64 {
        if self.stalled() {
            self.mss
        } else {
            self.window
        }
    }

    /// No pacing: as fast as the window opens.
    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<u64> {
        Some(u64::MAX >> 16)
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, in_flight: u64) {
        self.in_flight = in_flight;
    }

    fn on_ack(&mut self, ack: &Ack, rtt: &RttEstimator) {
        self.in_flight = ack.in_flight;
        if rtt.has_sample() {
            self.srtt = rtt.smoothed();
            self.rto = rtt.rto(MIN_RTO);
        }
        if let Some(until) = self.stalled_until {
            if ack.now < until {
                return;
            }
            // The retransmission timer expired: slow start from one segment.
            self.stalled_until = None;
            self.backoff = 0;
        }
        if let Some(r) = self.recovery {
            if ack.now < r.end || ack.largest_sent <= r.start {
                return;
            }
            self.recovery = None;
        }
        if self.repaired_until.is_some_and(|t| ack.largest_sent <= t) {
            return;
        }
        // The ACKs ns-3's receiver would have sent for these bytes: one per two segments.
        let per_ack = DELAYED_ACK_COUNT * self.mss.max(1);
        self.unacked_by_ns3 += ack.bytes;
        let acks = self.unacked_by_ns3 / per_ack;
        self.unacked_by_ns3 %= per_ack;
        for _ in 0..acks.min(u64::from(u16::MAX)) {
            if self.window < self.ssthresh {
                self.window += self.mss;
            } else {
                self.window += (self.mss * self.mss / self.window.max(1)).max(1);
            }
        }
    }

    fn on_lost(&mut self, _now: Instant, packets: u64) {
        self.pending_lost += packets;
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion) {
        let holes = std::mem::take(&mut self.pending_lost).max(1);
        if self.stalled() {
            return;
        }
        match signal {
            Congestion::Repaired { factor } => {
                if self.repaired_until.is_some_and(|t| sent <= t) || self.recovery.is_some() {
                    return;
                }
                self.window = ((self.window as f64 * factor) as u64).max(minimum_window(self.mss));
                self.ssthresh = self.window;
                self.repaired_until = Some(now);
            }
            Congestion::Loss => {
                if let Some(r) = self.recovery.as_mut() {
                    if sent <= r.start {
                        // One more hole of the same flight: one more round trip of recovery.
                        r.holes += holes;
                        r.end = r.start + self.srtt * round_trips(r.holes);
                        return;
                    }
                    if now < r.end {
                        self.timeout(now);
                        return;
                    }
                }
                self.ssthresh = self.half_flight();
                self.window = self.ssthresh;
                let end = now + self.srtt * round_trips(holes);
                self.recovery = Some(Recovery { start: now, end, holes });
            }
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        self.timeout(now);
    }

    /// Every probe timeout is ns-3's retransmission timeout.
    fn on_probe_timeout(&mut self, _now: Instant, _consecutive: u32) {
        // The connection counts its own probe timeouts; only the window reacts here.
        self.ssthresh = self.half_flight();
        self.window = self.mss;
        self.recovery = None;
    }

    fn timeouts(&self) -> u64 {
        self.timeouts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    fn ack(now: u64, bytes: u64, sent: u64) -> Ack {
        Ack { now: ms(now), bytes, largest_sent: ms(sent), in_flight: 0, delivery_rate: None }
    }

    fn rtt_100ms() -> RttEstimator {
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        rtt
    }

    #[test]
    fn one_segment_per_ack_in_slow_start_and_mss_squared_over_cwnd_after() {
        let rtt = rtt_100ms();
        let mut cc = NewRenoNs3::new(1000);
        assert_eq!(cc.window(), 1000);
        // An ACK of two segments (a delayed ACK) still adds one.
        cc.on_ack(&ack(100, 2000, 0), &rtt);
        assert_eq!(cc.window(), 2000);
        cc.ssthresh = 2000;
        cc.on_ack(&ack(200, 2000, 100), &rtt);
        assert_eq!(cc.window(), 2500);
    }

    #[test]
    fn grows_once_per_two_segments_acknowledged_as_behind_ns3_delayed_acks() {
        let rtt = rtt_100ms();
        let mut cc = NewRenoNs3::new(1000);
        // braid's receiver ACKs each segment; ns-3's would have ACKed the pair once.
        cc.on_ack(&ack(100, 1000, 0), &rtt);
        assert_eq!(cc.window(), 1000);
        cc.on_ack(&ack(101, 1000, 1), &rtt);
        assert_eq!(cc.window(), 2000);
        // A slow-start round of 4 segments: 2 ACKs, 4 → 6 (1.5 times a round trip).
        cc.window = 4000;
        for i in 0..4 {
            cc.on_ack(&ack(200 + i, 1000, 100 + i), &rtt);
        }
        assert_eq!(cc.window(), 6000);
        // Congestion avoidance at cwnd 10: a round of 10 segments adds half a segment.
        cc.window = 10_000;
        cc.ssthresh = 10_000;
        for i in 0..10 {
            cc.on_ack(&ack(300 + i, 1000, 200 + i), &rtt);
        }
        // Five increments of MSS²/cwnd: 100, 99, 98, 97, 96 bytes.
        assert_eq!(cc.window(), 10_490);
    }

    #[test]
    fn a_flight_with_k_holes_recovers_for_k_round_trips_and_reduces_once() {
        let rtt = rtt_100ms();
        let mut cc = NewRenoNs3::new(1000);
        cc.on_ack(&ack(100, 1000, 0), &rtt);
        cc.window = 40_000;
        cc.in_flight = 40_000;
        cc.on_lost(ms(1000), 3);
        cc.on_congestion(ms(1000), ms(900), Congestion::Loss);
        assert_eq!(cc.window(), 20_000);
        // Another hole of the same flight: no second reduction, one more round trip.
        cc.on_lost(ms(1010), 1);
        cc.on_congestion(ms(1010), ms(905), Congestion::Loss);
        assert_eq!(cc.window(), 20_000);
        assert_eq!(cc.recovery.unwrap().end, ms(1400));
        // No growth until the fourth hole is repaired.
        cc.on_ack(&ack(1300, 1000, 1200), &rtt);
        assert_eq!(cc.window(), 20_000);
        cc.on_ack(&ack(1450, 1000, 1350), &rtt);
        assert_eq!(cc.window(), 20_050);
        assert_eq!(cc.timeouts(), 0);
    }

    #[test]
    fn a_loss_sent_during_an_open_recovery_is_a_timeout() {
        let rtt = rtt_100ms();
        let mut cc = NewRenoNs3::new(1000);
        cc.on_ack(&ack(100, 1000, 0), &rtt);
        cc.window = 40_000;
        cc.in_flight = 40_000;
        cc.on_congestion(ms(1000), ms(900), Congestion::Loss);
        cc.on_lost(ms(1050), 1);
        cc.on_congestion(ms(1050), ms(1001), Congestion::Loss);
        assert_eq!((cc.window(), cc.timeouts()), (1000, 1));
        // One segment until the RTO (1 s floor) has passed, then slow start.
        cc.on_ack(&ack(1500, 1000, 1100), &rtt);
        assert_eq!(cc.window(), 1000);
        cc.on_ack(&ack(2100, 1000, 1900), &rtt);
        assert_eq!(cc.window(), 2000);
        assert_eq!(cc.ssthresh, 20_000);
    }

    #[test]
    fn a_repaired_loss_scales_by_r_once_per_round_trip() {
        let mut cc = NewRenoNs3::new(1000);
        cc.window = 10_000;
        cc.on_congestion(ms(10), ms(5), Congestion::Repaired { factor: 0.7 });
        assert_eq!(cc.window(), 7000);
        cc.on_congestion(ms(11), ms(6), Congestion::Repaired { factor: 0.7 });
        assert_eq!(cc.window(), 7000);
        assert_eq!(cc.timeouts(), 0);
    }
}
