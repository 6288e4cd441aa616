//! One path: packet numbers, what is in flight, acknowledgement and loss detection (RFC 9002
//! §6 adapted: packet numbers count transmissions, as CTCP's seqno does, so a symbol is never
//! "retransmitted" under its old number), RTT, loss-rate estimation and the congestion
//! controller.
//!
//! This file holds the path's state and its send side (pacing, the window's room); the rest of
//! a path's methods are split by concern:
//! - `recovery.rs`: the peer's ACKs, loss detection, the loss and probe timers, loss-rate
//!   estimation;
//! - `acks.rs`: the packet numbers received and the ACK frame this end sends for them;
//! - `liveness.rs`: failure, probing, revival, removal and readdressing (PROTOCOL.md §12).

mod acks;
mod cumulative;
mod liveness;
mod recovery;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::blocks::OutgoingSymbol;
use crate::cc::{CongestionController, RttEstimator};
use crate::wire::AckRange;
use crate::Instant;

pub use cumulative::LossRecovery;
pub(crate) use liveness::FAIL_AFTER_PTOS;
pub use recovery::LossEstimator;
use recovery::PACKET_THRESHOLD;

/// Where a path is in its life (PROTOCOL.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathState {
    /// Carries data (the server: once it has heard on the path).
    #[default]
    Active,
    /// Stopped answering: carries no data, only PING probes at a backed-off interval, until an
    /// ACK of a probe arrives on it.
    Failed,
    /// Removed by either end (PATH_ABANDON); its id is never used again.
    Removed,
}

/// What a sent packet carried.
#[derive(Debug, Clone)]
pub(crate) struct SentPacket {
    /// Its packet number on its path (for traces).
    pub number: u64,
    pub time: Instant,
    pub size: u64,
    pub ack_eliciting: bool,
    pub symbols: Vec<OutgoingSymbol>,
    /// It carried flow-control window updates (resent if the packet is lost).
    pub window_update: bool,
    /// PATH_ABANDON frames it carried (bit = path id; resent if the packet is lost).
    pub abandons: u8,
    /// The path's delivered-bytes counter and its time when this packet was sent (for
    /// delivery-rate samples).
    pub delivered: u64,
    pub delivered_time: Instant,
    /// When the newest packet acknowledged before this one was sent had been sent: the start
    /// of this packet's send interval (BBR's `first_sent_time`).
    pub first_sent: Instant,
    /// The application datagrams and their repairs it carried (PROTOCOL.md §15).
    pub datagrams: Option<crate::datagram::SentDatagrams>,
}

pub(crate) struct Path {
    pub id: u8,
    pub next_number: u64,
    pub sent: BTreeMap<u64, SentPacket>,
    pub in_flight: u64,
    pub rtt: RttEstimator,
    pub cc: Box<dyn CongestionController>,
    /// Random-loss rate, an EWMA over packets (CTCP Algorithm 1's p).
    pub loss: LossEstimator,
    /// The same over about 8× as many packets: steadier, for repair that must not come up
    /// short when the fast estimate dips between losses (a tail's margin).
    pub loss_long: LossEstimator,
    /// Received packet numbers, as disjoint ranges, highest first.
    received: Vec<AckRange>,
    largest_received_at: Option<Instant>,
    pub ack_pending: bool,
    /// Ack-eliciting packets received since the last ACK was sent.
    pub unacked_eliciting: u32,
    /// Packets acknowledged so far (for the time-threshold rule and statistics).
    largest_acked: Option<u64>,
    pub pto_count: u32,
    /// Earliest time the pacer lets the next packet go.
    pub next_send: Instant,
    /// When the last packet arrived on this path (drives the ACK delay).
    pub last_received: Instant,
    /// Packets acknowledged after one before it is declared lost (the dupACK threshold).
    packet_threshold: u64,
    /// Bytes acknowledged on the path (for delivery-rate samples).
    delivered: u64,
    delivered_time: Instant,
    /// Send time of the newest acknowledged packet (see [`SentPacket::first_sent`]).
    first_sent_time: Instant,
    pub stats: PathStats,
    /// `loss_timeout`'s last answer (asked several times per event; its Duration arithmetic
    /// showed in profiles). What it depends on — `sent`, `rtt`, `largest_acked`, `pto_count` —
    /// changes only in `on_sent`, `on_ack` and `on_timer`, which clear it.
    loss_timeout_cache: Cell<Option<Option<Instant>>>,
    /// This end may send on the path: the client opened it, or the server received a valid
    /// packet on it (a real runtime can only address a path whose peer address it has seen).
    pub heard: bool,
    /// A failed path's next PING probe, and the interval after it.
    probe_due: Option<Instant>,
    probe_interval: Duration,
    /// A PING probe should go out on this (failed) path.
    pub probe_pending: bool,
    /// The peer probed this path: its next ACK goes on this path only (PROTOCOL.md §12.2).
    pub ack_here: bool,
    /// Path MTU discovery (RFC 8899); the connection sets it up (`Connection::new_pmtu`).
    pub pmtu: super::pmtu::Pmtu,
    /// Cumulative-ACK recovery's state, where the connection chose it (`cumulative.rs`).
    cumulative: Option<Box<cumulative::Cumulative>>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct PathStats {
    pub state: PathState,
    /// Times the path was declared failed, and times it came back.
    pub failures: u64,
    pub recoveries: u64,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_lost: u64,
    pub packets_acked: u64,
    /// Of `packets_lost`, those declared by the packet or time threshold (RFC 9002 §6.1; what
    /// sets off TCP's fast retransmit) rather than by a probe timeout.
    pub fast_losses: u64,
    /// Probe timeouts (RFC 9002 §6.2), each collapsing the window.
    pub timeouts: u64,
    /// Source symbols sent again on this path (the retransmitting modes).
    pub retransmissions: u64,
    /// Fast-recovery episodes, where the congestion controller counts them (`newreno-ns3`).
    pub fast_recoveries: Option<u64>,
    /// The paths the congestion controller judges to share this one's bottleneck, one bit per
    /// path index (braid's coupled controller; 0 for the others).
    pub shared_with: u8,
    /// A model-based controller's bottleneck bandwidth estimate, bytes/s (0 without a model).
    pub model_bandwidth: u64,
    /// ... and the queue its last completed round saw, µs (0 without a model or a round).
    pub model_queue_us: u64,
}

impl Path {
    pub fn new(id: u8, cc: Box<dyn CongestionController>, now: Instant, heard: bool) -> Path {
        Path {
            id,
            next_number: 0,
            sent: BTreeMap::new(),
            in_flight: 0,
            rtt: RttEstimator::default(),
            cc,
            loss: LossEstimator::new(1.0 / 64.0),
            loss_long: LossEstimator::new(1.0 / 512.0),
            received: Vec::new(),
            largest_received_at: None,
            ack_pending: false,
            unacked_eliciting: 0,
            largest_acked: None,
            pto_count: 0,
            next_send: now,
            last_received: now,
            packet_threshold: PACKET_THRESHOLD,
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            stats: PathStats::default(),
            loss_timeout_cache: Cell::new(None),
            heard,
            probe_due: None,
            probe_interval: Duration::ZERO,
            probe_pending: false,
            ack_here: false,
            pmtu: super::pmtu::Pmtu::new(1280, 1280),
            cumulative: None,
        }
    }

    pub fn state(&self) -> PathState {
        self.stats.state
    }

    /// This end may put data on the path.
    pub fn can_send(&self) -> bool {
        self.heard && self.stats.state == PathState::Active
    }

    /// Room in the congestion window.
    pub fn window_room(&self) -> u64 {
        (self.cc.window() + self.cumulative_allowance()).saturating_sub(self.in_flight)
    }

    /// Bytes per second the pacer lets out: the controller's own rate, else a window spread
    /// over the smoothed RTT (RFC 9002 §7.7, gain 1.25).
    pub fn pacing_rate(&self) -> u64 {
        self.cc.pacing_rate(&self.rtt).unwrap_or_else(|| {
            let srtt = self.rtt.smoothed().as_secs_f64().max(1e-3);
            (1.25 * self.cc.window() as f64 / srtt) as u64
        })
    }

    /// A first RTT sample from outside the core (the handshake's round trip,
    /// `Connection::on_handshake_rtt`); the loss and probe timers follow it.
    pub fn seed_rtt(&mut self, rtt: std::time::Duration) {
        self.rtt.seed(rtt);
        self.loss_timeout_cache.set(None);
    }

    pub fn on_sent(&mut self, now: Instant, number: u64, mut packet: SentPacket) {
        self.loss_timeout_cache.set(None);
        if packet.ack_eliciting && self.in_flight == 0 {
            // draft-cheng-iccrg-delivery-rate-estimation §3.2: a packet sent with nothing in
            // flight starts a new sample interval (first_sent_time = delivered_time = now), so
            // the first sample after an idle spell does not span the idle time and read low.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        packet.delivered = self.delivered;
        packet.delivered_time = self.delivered_time;
        packet.first_sent = self.first_sent_time;
        if packet.ack_eliciting {
            self.in_flight += packet.size;
            self.cc.on_sent(now, packet.size, self.in_flight);
        }
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += packet.size;
        self.cumulative_on_sent(now, number, &packet);
        let rate = self.pacing_rate();
        let gap = Duration::from_secs_f64(packet.size as f64 / rate.max(1) as f64);
        self.next_send = self.next_send.max(now - Duration::from_millis(1)) + gap;
        // Packets that elicit no ACK (ACK-only) are never acknowledged on their own; keeping
        // them would grow `sent` without bound.
        if packet.ack_eliciting {
            self.sent.insert(number, packet);
        }
    }
}

/// Shared by the tests of this module's files.
#[cfg(test)]
mod test_support {
    use super::SentPacket;
    use crate::wire::{AckRange, AckRanges};
    use crate::Instant;

    /// Test ACK frames own their ranges by leaking them.
    pub(super) fn leak(ranges: Vec<AckRange>) -> AckRanges<'static> {
        AckRanges::from(&*Box::leak(ranges.into_boxed_slice()))
    }

    pub(super) fn packet(t: u64) -> SentPacket {
        SentPacket {
            number: t,
            time: Instant::from_micros(t),
            size: 1000,
            ack_eliciting: true,
            symbols: Vec::new(),
            window_update: false,
            abandons: 0,
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent: Instant::ZERO,
            datagrams: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::test_support::{leak, packet};
    use super::*;
    use crate::cc::{Ack, Congestion};
    use crate::wire::AckFrame;

    /// A controller that records each ACK's delivery-rate sample.
    #[derive(Debug)]
    struct Rates(Arc<Mutex<Vec<Option<f64>>>>);

    impl CongestionController for Rates {
        fn name(&self) -> &'static str {
            "rates"
        }
        fn window(&self) -> u64 {
            u64::MAX
        }
        fn on_ack(&mut self, ack: &Ack, _rtt: &RttEstimator) {
            self.0.lock().expect("not poisoned").push(ack.delivery_rate);
        }
        fn on_congestion(&mut self, _now: Instant, _sent: Instant, _signal: Congestion) {}
        fn on_timeout(&mut self, _now: Instant) {}
    }

    /// draft-cheng-iccrg-delivery-rate-estimation §3.2: 1,000 bytes sent at 0 and acknowledged
    /// at 100 ms, then the path idles 1 s, then 1,000 bytes sent at 1,100 ms and acknowledged at
    /// 1,200 ms. The second packet, sent with nothing in flight, starts its own interval: its
    /// sample reads the same 10 kB/s as the first, not 1,000 bytes over the 1.1 s since the last
    /// ACK (about 0.9 kB/s, as it did).
    #[test]
    fn the_first_rate_sample_after_an_idle_spell_does_not_span_it() {
        let ms = |t: u64| Instant::from_micros(t * 1000);
        let rates = Arc::new(Mutex::new(Vec::new()));
        let mut p = Path::new(0, Box::new(Rates(rates.clone())), Instant::ZERO, true);
        let ack = |p: &mut Path, t: u64, n: u64| {
            let frame =
                AckFrame { path: 0, ack_delay_us: 0, ranges: leak(vec![AckRange { start: n, end: n }]) };
            p.on_ack(ms(t), &frame);
        };
        for (n, sent, acked) in [(0, 0, 100), (1, 1100, 1200)] {
            let mut packet = packet(n);
            packet.time = ms(sent);
            p.on_sent(ms(sent), n, packet);
            assert_eq!((p.sent[&n].delivered_time, p.sent[&n].first_sent), (ms(sent), ms(sent)));
            ack(&mut p, acked, n);
        }
        let rates = rates.lock().expect("not poisoned").clone();
        let [Some(first), Some(after_idle)] = rates[..] else { panic!("{rates:?}") };
        // Both are 1,000 bytes over 100 ms (scaled alike by the loss estimate, which is 0).
        assert!((first - 10_000.0).abs() < 100.0, "{rates:?}");
        assert!((after_idle / first - 1.0).abs() < 0.01, "{rates:?}");
    }
}
