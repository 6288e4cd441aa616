//! NewReno as ns-3 runs it (`TcpSocketBase` with `TcpNewReno`, SACK off): the baseline of Sato
//! et al.'s ns-3 dumbbell (§4, Table 1: "TCP NewReno"), selectable as `--cc newreno-ns3`.
//! The defaults and rules below are ns-3.25–3.26's, the last releases without SACK (its `Sack`
//! attribute, on by default, came in 3.27); docs/DEVIATIONS.md ("Sato et al.") lists what was
//! checked against ns-3 and the paper.
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
//! - **Retransmission timeout**: ns-3 (3.25 on) restarts its retransmission timer at the
//!   first partial ACK of a recovery and not after (RFC 6582 §3.2 step 5; ns-3's "Only first
//!   partial ACK should reset the RTO"), and duplicate ACKs never restart it. A recovery still
//!   open one SRTT (the first partial ACK) plus RFC 6298's RTO (ns-3's `MinRto` 1 s) after it
//!   began therefore ends in a timeout: one with more holes than that many round trips, or one
//!   that cannot end because a packet sent during it was lost (NewReno without SACK cannot
//!   see a lost retransmission). Until the timer, the flight keeps sending on the inflated
//!   window (cwnd = ssthresh here); at it, ssthresh = max(flight / 2, 2 segments), cwnd one
//!   segment, slow start, and losses of packets sent before the timeout start no recovery
//!   (ns-3 sets its recovery point to the highest sequence sent). The RTO doubles per timeout
//!   until an ACK of a packet sent after it. The connection's own probe timeout is a timeout
//!   too (every one, not the third in a row).
//!
//! With the connection's cumulative-ACK recovery (`conn::LossRecovery::Cumulative`, TCP's
//! recovery without SACK run by the connection itself) the recovery episodes and timeouts are
//! the connection's, not modelled here: a recovery opens at the first congestion signal and
//! lasts, without growth, until the connection's full ACK; the connection's retransmission
//! timer is the timeout.
//!
//! A loss the mode's code repaired (Sato et al.'s ECN-style echo, §3.3) is not a loss to the
//! TCP below: cwnd ← r·cwnd once per round trip, no recovery episode, never a timeout.

use std::time::Duration;

use super::{minimum_window, Ack, Congestion, CongestionController, RttEstimator, MAXIMUM_WINDOW};
use crate::Instant;

/// ns-3's `MinRto` default (also the cumulative-ACK recovery's, `conn/path/cumulative.rs`).
pub(crate) const MIN_RTO: Duration = Duration::from_secs(1);
/// The most an RTO is doubled (ns-3 backs off up to its `MaxRto`, 60 s).
pub(crate) const MAX_BACKOFF: u32 = 6;
/// In-order segments ns-3's receiver takes per ACK (`TcpSocket::DelAckCount` default).
const DELAYED_ACK_COUNT: u64 = 2;

#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// When the flight's first loss was detected; packets sent up to then belong to the flight.
    start: Instant,
    /// When the last hole is repaired: `start` + holes × SRTT.
    end: Instant,
    holes: u64,
    /// When the retransmission timer, restarted at the first partial ACK, expires.
    timer: Instant,
    /// A packet sent during the recovery was lost: it ends only at `timer`.
    doomed: bool,
}

impl Recovery {
    /// Whether the timer ends the recovery (before its holes are repaired) by `now`.
    fn timed_out(&self, now: Instant) -> bool {
        now >= self.timer && (self.doomed || self.end > self.timer)
    }
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
    /// The last retransmission timeout: losses of packets sent before it start no recovery.
    timed_out_at: Option<Instant>,
    /// Timeouts since an ACK of a packet sent after the last one (each doubles the RTO).
    backoff: u32,
    /// Reductions after a repaired loss are once per round trip: packets sent before this.
    repaired_until: Option<Instant>,
    /// Bytes acknowledged towards ns-3's next delayed ACK (fewer than two segments).
    unacked_by_ns3: u64,
    timeouts: u64,
    /// Fast retransmits that opened a recovery (Sato et al.'s Fig. 7(a) counts these).
    recoveries: u64,
    /// The connection runs the recovery (see the module's doc): nothing here is modelled.
    driven: bool,
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
            timed_out_at: None,
            backoff: 0,
            repaired_until: None,
            unacked_by_ns3: 0,
            timeouts: 0,
            recoveries: 0,
            driven: false,
        }
    }

    fn half_flight(&self) -> u64 {
        (self.in_flight.max(self.window) / 2).max(minimum_window(self.mss))
    }

    /// ns-3's retransmission timeout at `at`: ssthresh from the flight, one segment, slow start.
    fn timeout(&mut self, at: Instant) {
        self.timeouts += 1;
        self.ssthresh = self.half_flight();
        self.window = self.mss;
        self.recovery = None;
        self.timed_out_at = Some(at);
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    /// The RTO the timer of a recovery starting now runs for.
    fn backed_off_rto(&self) -> Duration {
        self.rto * 2u32.pow(self.backoff)
    }

    /// Whether a congestion signal for a packet sent at `sent` belongs to a timed-out flight.
    fn before_timeout(&self, sent: Instant) -> bool {
        self.timed_out_at.is_some_and(|t| sent <= t)
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
        self.window
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
        if let Some(r) = self.recovery {
            if self.driven {
                return;
            }
            if r.timed_out(ack.now) {
                self.timeout(r.timer);
                return;
            }
            if r.doomed || ack.now < r.end || ack.largest_sent <= r.start {
                return;
            }
            self.recovery = None;
        }
        if !self.before_timeout(ack.largest_sent) {
            // ns-3 recomputes its RTO from the RTT estimate at every new ACK.
            self.backoff = 0;
        }
        if self.repaired_until.is_some_and(|t| ack.largest_sent <= t) {
            return;
        }
        // The ACKs ns-3's receiver would have sent for these bytes: one per two segments.
        let per_ack = DELAYED_ACK_COUNT * self.mss.max(1);
        self.unacked_by_ns3 = self.unacked_by_ns3.saturating_add(ack.bytes);
        let acks = self.unacked_by_ns3 / per_ack;
        self.unacked_by_ns3 %= per_ack;
        for _ in 0..acks.min(u64::from(u16::MAX)) {
            if self.window < self.ssthresh {
                self.window += self.mss;
            } else {
                self.window += (self.mss * self.mss / self.window.max(1)).max(1);
            }
        }
        self.window = self.window.min(MAXIMUM_WINDOW);
    }

    fn on_lost(&mut self, _now: Instant, packets: u64) {
        self.pending_lost = self.pending_lost.saturating_add(packets);
    }

    fn on_congestion(&mut self, now: Instant, sent: Instant, signal: Congestion) {
        let holes = std::mem::take(&mut self.pending_lost).max(1);
        if let Some(r) = self.recovery.filter(|r| r.timed_out(now)) {
            self.timeout(r.timer);
        }
        if self.before_timeout(sent) {
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
            Congestion::Loss if self.driven => {
                // One recovery per flight: the connection ends it (`on_recovery_end`).
                if self.recovery.is_none() {
                    self.ssthresh = self.half_flight();
                    self.window = self.ssthresh;
                    self.recovery = Some(Recovery { start: now, end: now, holes, timer: now, doomed: false });
                    self.recoveries += 1;
                }
            }
            Congestion::Loss => {
                if let Some(r) = self.recovery.as_mut() {
                    if sent <= r.start {
                        // One more hole of the same flight: one more round trip of recovery.
                        r.holes += holes;
                        r.end = r.start + self.srtt * round_trips(r.holes);
                        return;
                    }
                    if r.doomed || now < r.end {
                        // A packet sent during the recovery was lost: its timer ends it.
                        r.doomed = true;
                        return;
                    }
                }
                self.ssthresh = self.half_flight();
                self.window = self.ssthresh;
                let end = now + self.srtt * round_trips(holes);
                let timer = now + self.srtt + self.backed_off_rto();
                self.recovery = Some(Recovery { start: now, end, holes, timer, doomed: false });
                self.recoveries += 1;
            }
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        self.timeout(now);
    }

    fn follow_connection_recovery(&mut self) {
        self.driven = true;
    }

    fn on_recovery_end(&mut self, _now: Instant) {
        if self.driven {
            self.recovery = None;
        }
    }

    /// Every probe timeout is ns-3's retransmission timeout.
    fn on_probe_timeout(&mut self, now: Instant, _consecutive: u32) {
        // The connection counts its own probe timeouts; only the window reacts here.
        self.ssthresh = self.half_flight();
        self.window = self.mss;
        self.recovery = None;
        self.timed_out_at = Some(now);
    }

    fn timeouts(&self) -> u64 {
        self.timeouts
    }

    fn fast_recoveries(&self) -> Option<u64> {
        Some(self.recoveries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    fn ack(now: u64, bytes: u64, sent: u64) -> Ack {
        Ack {
            now: ms(now),
            bytes,
            largest_sent: ms(sent),
            in_flight: 0,
            delivery_rate: None,
            rtt_sample: true,
        }
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
        // One fast recovery, however many holes it repaired.
        assert_eq!(cc.fast_recoveries(), Some(1));
    }

    /// A recovery from a 40-segment flight at 1 s, SRTT 100 ms, RTO 1 s: its timer is at 2.1 s.
    fn in_recovery_at_1s(holes: u64) -> NewRenoNs3 {
        let mut cc = NewRenoNs3::new(1000);
        cc.on_ack(&ack(100, 2000, 0), &rtt_100ms());
        cc.window = 40_000;
        cc.in_flight = 40_000;
        cc.on_lost(ms(1000), holes);
        cc.on_congestion(ms(1000), ms(900), Congestion::Loss);
        assert_eq!(cc.recovery.unwrap().timer, ms(2100));
        cc
    }

    #[test]
    fn a_loss_sent_during_an_open_recovery_ends_it_at_its_timer() {
        let rtt = rtt_100ms();
        let mut cc = in_recovery_at_1s(1);
        cc.on_lost(ms(1050), 1);
        cc.on_congestion(ms(1050), ms(1001), Congestion::Loss);
        // The flight keeps its window until the timer, without growth.
        assert_eq!((cc.window(), cc.timeouts()), (20_000, 0));
        cc.on_ack(&ack(1500, 2000, 1100), &rtt);
        assert_eq!((cc.window(), cc.timeouts()), (20_000, 0));
        cc.on_ack(&ack(2100, 2000, 1900), &rtt);
        assert_eq!((cc.window(), cc.timeouts(), cc.ssthresh), (1000, 1, 10_000));
        // A loss from the timed-out flight starts no recovery; slow start goes on.
        cc.on_lost(ms(2200), 1);
        cc.on_congestion(ms(2200), ms(2000), Congestion::Loss);
        assert!(cc.recovery.is_none());
        cc.on_ack(&ack(2300, 2000, 2150), &rtt);
        assert_eq!(cc.window(), 2000);
    }

    #[test]
    fn a_recovery_with_more_holes_than_round_trips_before_its_timer_times_out() {
        let rtt = rtt_100ms();
        // 10 holes: repaired by 2.0 s, before the timer.
        let mut cc = in_recovery_at_1s(10);
        cc.on_ack(&ack(2050, 2000, 1950), &rtt);
        assert_eq!((cc.window(), cc.timeouts()), (20_050, 0));
        // 12 holes: the last would be repaired at 2.2 s, the timer fires at 2.1 s.
        let mut cc = in_recovery_at_1s(12);
        cc.on_ack(&ack(2050, 2000, 1950), &rtt);
        assert_eq!((cc.window(), cc.timeouts()), (20_000, 0));
        cc.on_ack(&ack(2100, 2000, 2000), &rtt);
        assert_eq!((cc.window(), cc.timeouts()), (1000, 1));
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
