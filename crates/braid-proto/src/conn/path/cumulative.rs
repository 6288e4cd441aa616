//! Cumulative-ACK loss recovery, TCP's without SACK (`LossRecovery::Cumulative`): a selectable
//! baseline for the seed papers' TCP, which recovered as ns-3's `TcpSocketBase` with NewReno
//! and SACK off does. braid's own recovery ([`LossRecovery::Ranges`], the default) sees every
//! hole from the ACK ranges and resends exactly the lost packets; a sender without SACK knows
//! only the cumulative point of the data (the first segment the receiver lacks) and how many
//! duplicate ACKs arrived since it last moved:
//!
//! - **Segments** are the source symbols a path sent, in sequence order (block, index): TCP's
//!   sequence space. The receiver holds a segment once a packet carrying it arrived, or once an
//!   XOR parity rebuilt it (Sato et al.: the cumulative point then moves without a
//!   retransmission). The cumulative point is the first segment sent and not held.
//! - **TCP's ACKs, one by one**: an ACK frame's data packets (sources and parities) are replayed
//!   in packet-number order as the ACKs ns-3's receiver would have sent for them
//!   (`TcpSocketBase::ReceivedData`): at once for a duplicate, for data beyond a hole and for the
//!   segment that fills one; for in-order segments, one ACK per two (`DelAckCount`), counted
//!   across frames: a lone in-order arrival waits for the next one, in a later frame if need be.
//!   Each such ACK moves the point (a partial ACK resends a segment each), or is a duplicate ACK
//!   (counted, and in recovery a guess). A new cumulative point resets the count. ns-3's 200 ms
//!   `DelAckTimeout` is a deadline in the connection's timer table
//!   ([`Path::cumulative_delayed_ack_due`]): the ACK is replayed when it expires, whether or
//!   not another frame came (one that comes later finds it gone; one handled past the deadline
//!   replays it first). A delayed ACK goes at once when no data packet is left in flight to
//!   bring the next arrival (ns-3 would wait the 200 ms).
//! - **A block the receiver reports decoded** holds all its segments: one an XOR parity rebuilt
//!   without the mode's groups reporting the repair is held then, with the immediate ACK TCP's
//!   receiver sends for a filled hole. Without it the point could wait on that segment for good,
//!   its resends moot to the blocks (five of sato's 16 flows did in the dumbbell's seed 1).
//! - **Fast retransmit** (RFC 6582 §3.2): at three duplicate ACKs, outside recovery, only the
//!   segment at the cumulative point is sent again, and recovery opens with `recover` at the
//!   highest segment sent. A mode may suppress it while its parity can still rebuild that
//!   segment (Sato et al. §3.2's withheld duplicate ACKs).
//! - **Partial ACKs**: in recovery, a new cumulative point below `recover` sends the segment at
//!   it again at once, so a window with k holes takes k round trips; one at or past `recover`
//!   ends recovery. A lost retransmission is seen only by the retransmission timer.
//! - **Retransmission timeout** (RFC 6298, ns-3's `MinRto` 1 s, doubled per timeout up to 64
//!   times): restarted by a new cumulative point (in recovery only by the first partial ACK,
//!   as ns-3 does), never by duplicate ACKs. When it fires, every segment from the cumulative
//!   point to the highest sent is sent again in order (go-back-N), those the receiver already
//!   holds too — the sender cannot tell them apart; a segment is skipped only once the
//!   cumulative point has passed it. No fast retransmit follows until the cumulative point
//!   passes the highest segment sent before the timeout (RFC 6582's `recover` after an RTO):
//!   the duplicates the receiver gets then raise duplicate ACKs that are not losses.
//!
//! - **A late copy counts**: a segment sent again whose earlier packet still arrives is held
//!   when that packet is acknowledged, as TCP's receiver moves its cumulative ACK for whichever
//!   copy came first. So a resend at a partial ACK of a segment that was only in flight (the
//!   point moved because it arrived in order) is a duplicate at the receiver, and duplicates
//!   raise duplicate ACKs like any other packet.
//! - **Resends go out at once**: the fast retransmit and a partial ACK's resend may exceed the
//!   window by that one packet (ns-3 sends them straight from the ACK).
//! - **ns-3's guessed holds** (its SACK emulation without SACK): each duplicate ACK in recovery
//!   counts one more segment held past the point, kept after recovery until a timeout; when
//!   the point lands on a segment so guessed, that segment is sent again (no congestion
//!   signal), and its lost mark stays: the next duplicate ACK, one and not three, opens recovery
//!   and sends it once more (`TcpSocketBase::DupAck`, RFC 6675 §5 step (2)). In ns-3.44's
//!   no-SACK runs of Sato et al.'s dumbbell these resends and the duplicate ACKs their duplicates
//!   raise re-open recovery round after round (docs/DEVIATIONS.md).
//! - **The flight size** leaves out a packet whose segments the cumulative point passed, arrived
//!   or not (`TcpTxBuffer::DiscardUpTo`, `BytesInFlight`); if it arrives, its ACK is a duplicate
//!   ACK. It also leaves out the guessed holds still in flight (`BytesInFlight` is RFC 6675's
//!   pipe, without the segments `AddRenoSack` marked held), so the window has room for one more
//!   segment per guess. No window inflation in recovery otherwise: ns-3.44's classic recovery
//!   changes only its traced inflated window.
//!
//! A packet braid's own detection (packet and time thresholds) finds missing beyond the
//! cumulative point stays in flight, as it does for TCP's sender, until its segment is sent
//! again, is rebuilt, or the timer fires; it is still handed to the mode, whose parity groups
//! model what the receiver knows (Sato et al.'s receiver sees every hole). Packets that carry no
//! source (parities, control) keep braid's detection: they are not in the sequence space.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Path, SentPacket};
use crate::blocks::OutgoingSymbol;
use crate::cc::newreno_ns3::{MAX_BACKOFF, MIN_RTO};
use crate::Instant;

/// How a path's sender learns what to send again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossRecovery {
    /// braid's: the ACK ranges show every hole; exactly the lost packets' data is sent again
    /// (RFC 9002's packet and time thresholds, the probe timeout).
    #[default]
    Ranges,
    /// TCP's without SACK: the cumulative point and duplicate ACKs only (see this module).
    Cumulative,
}

impl LossRecovery {
    pub fn name(self) -> &'static str {
        match self {
            LossRecovery::Ranges => "ranges",
            LossRecovery::Cumulative => "cumulative",
        }
    }
}

impl std::str::FromStr for LossRecovery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [LossRecovery::Ranges, LossRecovery::Cumulative]
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown loss recovery `{s}` (expected ranges or cumulative)"))
    }
}

/// A segment: (block, source index), ordered as TCP's sequence numbers.
pub(crate) type Segment = (u64, u16);

/// Duplicate ACKs that set off fast retransmit (RFC 5681).
const DUPACK_THRESHOLD: u64 = 3;

/// ns-3's receiver sends a delayed ACK after this (`TcpSocket::DelAckTimeout` default).
const DELAYED_ACK_TIMEOUT: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, Copy)]
struct Held {
    /// The receiver holds it.
    held: bool,
    /// The packet that carried its latest copy.
    packet: u64,
}

/// Why a segment is sent again (see [`Path::cumulative_loss`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resend {
    /// Three duplicate ACKs: recovery opens.
    FastRetransmit,
    /// A partial ACK in recovery.
    PartialAck,
    /// The segment at a new cumulative point was guessed held (ns-3's emulated SACK): not a
    /// congestion signal, and it waits for room in the window.
    Guessed,
}

impl Resend {
    /// Whether the resend tells the controller of a loss (a guessed hole does not).
    pub(crate) fn is_congestion(self) -> bool {
        self != Resend::Guessed
    }
}

/// The sender's state of cumulative-ACK recovery on one path.
#[derive(Debug, Default)]
pub(crate) struct Cumulative {
    /// The segments sent from the cumulative point on (the first key), in sequence order.
    segments: BTreeMap<Segment, Held>,
    /// The highest segment ever sent on the path.
    highest: Option<Segment>,
    /// The highest segment the receiver holds, or held before the point passed it (then it
    /// lies below every segment in `segments`): see [`Cumulative::receiver_gap`].
    max_held: Option<Segment>,
    /// The packets sent with segments, by the highest segment each carries: the point passes a
    /// packet when it passes that segment ([`Path::cumulative_forget_passed`] takes them from
    /// the front). A packet that left the flight otherwise (acknowledged, given up) keeps its
    /// entry until then, and is skipped.
    by_last: BTreeSet<(Segment, u64)>,
    /// Packets with segments braid's detection found missing, still counted in flight.
    missing: BTreeMap<u64, SentPacket>,
    /// Packets these rules gave up (sent again at a duplicate or partial ACK, or at a timeout)
    /// and their segments: one still arriving moves the cumulative point, as TCP's receiver
    /// acknowledges a segment whichever copy brought it.
    given_up: BTreeMap<u64, Vec<Segment>>,
    /// Packets still in the network all of whose segments the cumulative point passed: TCP's
    /// sender has forgotten them (out of its flight size), but one that arrives is a duplicate at
    /// the receiver and raises a duplicate ACK (see [`Path::cumulative_forget_passed`]).
    behind: BTreeMap<u64, SentPacket>,
    /// The data packets the ACK frame being processed acknowledges, with their segments: the
    /// arrivals TCP's receiver would have answered one by one (see [`Path::cumulative_next_ack`]).
    arrivals: Vec<(u64, Vec<Segment>)>,
    /// Since when an in-order arrival has waited for its delayed ACK (ns-3's receiver ACKs every
    /// second in-order segment, or after `DelAckTimeout`).
    delayed_ack: Option<Instant>,
    /// Segments ns-3's sender takes the receiver to hold just past the cumulative point, one per
    /// duplicate ACK in recovery (see [`Cumulative::on_advance`]).
    guessed: u64,
    /// The segment at the new cumulative point was guessed held: it is taken for lost.
    guess_pending: bool,
    /// Bytes the next data packet may put beyond the window: a fast retransmit or a partial
    /// ACK's resend goes out at once, whatever the window (ns-3 sends it straight away).
    allowance: u64,
    dupacks: u64,
    /// The segment at the cumulative point was fast-retransmitted already.
    una_resent: bool,
    /// The segment at the cumulative point was marked lost outside recovery (a wrong guess,
    /// `MarkHeadAsLost`); the mark stays when it is sent again, so that ns-3.44 takes it for lost
    /// at the next duplicate ACK (`TcpSocketBase::DupAck`, RFC 6675 §5 step (2),
    /// `IsLost(m_highRxAckMark)`) and opens recovery, without waiting for three.
    una_lost: bool,
    /// In fast recovery: the highest segment sent when it opened (RFC 6582's `recover`).
    recover: Option<Segment>,
    /// In recovery, the first partial ACK restarted the timer already.
    partial_seen: bool,
    /// A partial ACK asks for the segment at the new cumulative point.
    partial_pending: bool,
    /// After a timeout: no fast retransmit until the cumulative point passes this.
    after_timeout: Option<Segment>,
    rto_at: Option<Instant>,
    backoff: u32,
    /// Held segments a timeout sends again (go-back-N), for the connection to queue.
    go_back: Vec<Segment>,
}

impl Cumulative {
    /// The cumulative point: the first segment sent that the receiver lacks.
    pub(crate) fn una(&self) -> Option<Segment> {
        self.segments.first_key_value().map(|(&s, _)| s)
    }

    /// Whether a queued resend of `s` is moot: the cumulative point has passed it.
    pub(crate) fn passed(&self, s: Segment) -> bool {
        match self.una() {
            Some(una) => s < una,
            None => self.highest.is_some_and(|h| s <= h),
        }
    }

    fn is_held(&self, s: Segment) -> bool {
        self.segments.get(&s).is_some_and(|h| h.held)
    }

    /// Whether the receiver holds data beyond its own cumulative point (the first segment it
    /// lacks, which may lie past the sender's while a delayed ACK waits): TCP's receiver then
    /// ACKs every segment at once.
    /// The first segment it lacks comes after the held ones at the front (those a delayed ACK
    /// has not acknowledged yet: a few at most), so the walk is short; anything held beyond
    /// it shows in `max_held`.
    fn receiver_gap(&self) -> bool {
        let lacking = self.segments.iter().find(|(_, h)| !h.held).map(|(&s, _)| s);
        lacking.is_some_and(|s| self.max_held.is_some_and(|m| m > s))
    }

    fn mark_held(&mut self, s: Segment) {
        if let Some(h) = self.segments.get_mut(&s) {
            h.held = true;
            self.max_held = self.max_held.max(Some(s));
        }
    }

    /// Forgets the given-up and forgotten packets that three later packets' ACKs show lost
    /// (braid's packet threshold): until then one that arrives raises a duplicate ACK, as a
    /// copy of a segment the receiver holds does.
    fn forget_lost(&mut self, largest_acked: Option<u64>) {
        let Some(largest) = largest_acked else { return };
        let keep = largest.saturating_sub(super::recovery::PACKET_THRESHOLD - 1);
        self.given_up = self.given_up.split_off(&keep);
        self.behind = self.behind.split_off(&keep);
    }

    fn give_up(&mut self, packet: &SentPacket) {
        let segments: Vec<Segment> = sources(packet).collect();
        if !segments.is_empty() {
            self.given_up.insert(packet.number, segments);
        }
    }

    /// Drops the held segments at the front; returns how many (the cumulative point moved
    /// that many segments).
    fn advance(&mut self) -> u64 {
        let mut moved = 0;
        while self.segments.first_key_value().is_some_and(|(_, h)| h.held) {
            self.segments.pop_first();
            moved += 1;
        }
        moved
    }

    /// ns-3 without SACK guesses what its receiver holds: each duplicate ACK in recovery (and
    /// the one that opens it) counts one more segment held, laid on the segments just past the
    /// cumulative point (`TcpTxBuffer::AddRenoSack`), and the count outlives the recovery (only
    /// a timeout clears it, `ResetRenoSack`). Duplicates of resent segments raise such ACKs too,
    /// so the guess runs ahead of what arrived. When the point moves `moved` segments, the
    /// guesses it passed are dropped; if the segment at the new point was guessed held, the
    /// guess was wrong: it is taken for lost and sent again, and its guess moves to the end
    /// (`TcpTxBuffer::DiscardUpTo`, `MarkHeadAsLost`), in recovery or not.
    ///
    /// TCP's point moves once per ACK, landing on one guessed segment whose guess moves on:
    /// one guess survives a move (ACKs are replayed one by one, [`Path::cumulative_next_ack`]).
    fn on_advance(&mut self, moved: u64) {
        if self.guessed >= moved {
            self.guessed -= moved - 1;
            self.guess_pending = self.una().is_some();
        } else {
            self.guessed = 0;
        }
        self.cap_guesses();
    }

    /// Duplicate ACKs in recovery each guess one more segment held, while any is left to guess.
    fn guess(&mut self, dupacks: u64) {
        self.guessed += dupacks;
        self.cap_guesses();
    }

    /// Guesses lie on the segments past the cumulative point, never the point itself.
    fn cap_guesses(&mut self) {
        self.guessed = self.guessed.min(self.segments.len().saturating_sub(1) as u64);
    }
}

fn sources(p: &SentPacket) -> impl Iterator<Item = Segment> + '_ {
    p.symbols.iter().filter_map(|s: &OutgoingSymbol| s.source.map(|i| (s.block, i)))
}

impl Path {
    /// Selects the path's loss recovery (before anything is sent).
    pub fn set_loss_recovery(&mut self, recovery: LossRecovery) {
        self.cumulative = (recovery == LossRecovery::Cumulative).then(Box::default);
        self.loss_timeout_cache.set(None);
        if self.cumulative.is_some() {
            self.cc.follow_connection_recovery();
        }
    }

    pub fn loss_recovery(&self) -> LossRecovery {
        if self.cumulative.is_some() {
            LossRecovery::Cumulative
        } else {
            LossRecovery::Ranges
        }
    }

    /// The current retransmission timeout, backed off.
    fn cumulative_rto(&self, backoff: u32) -> Duration {
        self.rtt.rto(MIN_RTO) * 2u32.pow(backoff.min(MAX_BACKOFF))
    }

    /// A packet went out: its segments join the sequence; the timer starts if it was not running.
    pub(super) fn cumulative_on_sent(&mut self, now: Instant, number: u64, packet: &SentPacket) {
        let rto = self.cumulative_rto(self.cumulative.as_ref().map_or(0, |c| c.backoff));
        let Some(c) = self.cumulative.as_mut() else { return };
        for s in sources(packet) {
            let held = c.segments.get(&s).is_some_and(|h| h.held) || c.passed(s);
            if !c.passed(s) || c.segments.contains_key(&s) {
                c.segments.insert(s, Held { held, packet: number });
                if held {
                    c.max_held = c.max_held.max(Some(s));
                }
            }
            c.highest = c.highest.max(Some(s));
        }
        if let Some(last) = sources(packet).max() {
            c.allowance = 0;
            c.by_last.insert((last, number));
        }
        if packet.ack_eliciting && c.rto_at.is_none() {
            c.rto_at = Some(now + rto);
        }
    }

    /// The packets of `range` (acknowledged) that these rules hold apart from `sent`: braid's
    /// detection found them missing (they arrived after all: reordering, or a late copy), they
    /// were given up (a late first copy of a resent segment), or the point passed them (a
    /// duplicate at the receiver). Each joins the frame's arrivals; the missing ones are
    /// returned as acknowledged.
    pub(super) fn cumulative_acked_missing(&mut self, start: u64, end: u64) -> Vec<SentPacket> {
        let Some(c) = self.cumulative.as_mut() else { return Vec::new() };
        let behind: Vec<u64> = c.behind.range(start..=end).map(|(&n, _)| n).collect();
        let mut acked = Vec::new();
        for n in behind {
            let p = c.behind.remove(&n).expect("listed");
            c.arrivals.push((n, sources(&p).collect()));
            acked.push(p);
        }
        let late: Vec<u64> = c.given_up.range(start..=end).map(|(&n, _)| n).collect();
        for n in late {
            let segments = c.given_up.remove(&n).expect("listed");
            c.arrivals.push((n, segments));
        }
        let numbers: Vec<u64> = c.missing.range(start..=end).map(|(&n, _)| n).collect();
        for n in numbers {
            let p = c.missing.remove(&n).expect("listed");
            c.arrivals.push((n, sources(&p).collect()));
            self.in_flight -= p.size;
            acked.push(p);
        }
        acked
    }

    /// An acknowledged packet: a data packet (a source or a parity) joins the frame's arrivals.
    pub(super) fn cumulative_on_acked(&mut self, packet: &SentPacket) {
        if let Some(c) = self.cumulative.as_mut().filter(|_| !packet.symbols.is_empty()) {
            c.arrivals.push((packet.number, sources(packet).collect()));
        }
    }

    /// An XOR parity rebuilt `segment` at the receiver.
    pub fn cumulative_repaired(&mut self, segment: Segment) {
        if let Some(c) = self.cumulative.as_mut() {
            c.mark_held(segment);
        }
    }

    /// The blocks of the segments sent from the cumulative point on, lowest first.
    pub(crate) fn cumulative_blocks(&self) -> Vec<u64> {
        let Some(c) = self.cumulative.as_ref() else { return Vec::new() };
        let mut blocks = Vec::new();
        let mut from = (0, 0);
        while let Some((&(block, _), _)) = c.segments.range(from..).next() {
            blocks.push(block);
            let Some(next) = block.checked_add(1) else { break };
            from = (next, 0);
        }
        blocks
    }

    /// The receiver decoded `block`, so it holds every segment of it: those not yet held were
    /// rebuilt by a parity that the mode's groups did not see repair them. TCP's receiver
    /// acknowledges a rebuilt segment at once (it fills a hole): one TCP ACK, as
    /// [`Path::cumulative_next_ack`]'s; false (no ACK) when every segment was held already.
    ///
    /// Only segments whose latest packet is out of this path's flight count as rebuilt: one
    /// given up or found missing, or one sent before a packet this path has acknowledged (a
    /// path delivers in order, so it was lost). A packet sent after the last one acknowledged
    /// may have arrived with its ACK still on the way: over several paths the BLOCK_ACK that
    /// reports the block decoded can come back on a faster path first, and holding that
    /// packet's segment took it out of flight early and replayed its own late ACK as a
    /// duplicate ACK (a spurious fast retransmit). Its ACK, or its loss, settles it. On one
    /// path no such packet can have arrived (the ACKs of every packet that reached the receiver
    /// before the report was written came back no later than the report); what is left out
    /// there is a rebuilt segment whose resend is still in flight, held when that is
    /// acknowledged instead, a round trip later.
    pub(crate) fn cumulative_block_decoded(&mut self, now: Instant, block: u64) -> bool {
        let largest_acked = self.largest_acked;
        let sent = &self.sent;
        let Some(c) = self.cumulative.as_mut() else { return false };
        let out_of_flight =
            |packet: u64| !sent.contains_key(&packet) || largest_acked.is_some_and(|l| packet < l);
        let rebuilt: Vec<Segment> = c
            .segments
            .range((block, 0)..=(block, u16::MAX))
            .filter(|(_, h)| !h.held && out_of_flight(h.packet))
            .map(|(&s, _)| s)
            .collect();
        if rebuilt.is_empty() {
            return false;
        }
        for s in rebuilt {
            c.mark_held(s);
        }
        c.delayed_ack = None;
        self.cumulative_on_tcp_ack(now);
        true
    }

    /// After an ACK frame's packets were gathered: the arrivals go in packet-number order (the
    /// order they reached the receiver) for [`Path::cumulative_next_ack`] to replay.
    pub(super) fn cumulative_after_ack(&mut self) {
        let Some(c) = self.cumulative.as_mut() else { return };
        c.forget_lost(self.largest_acked);
        if c.arrivals.is_empty() && c.una().is_none() && self.sent.is_empty() {
            // Nothing outstanding after an ACK of packets without data: the timer stops
            // (RFC 6298 §5.2).
            c.rto_at = None;
        }
        c.arrivals.sort_unstable_by_key(|&(n, _)| std::cmp::Reverse(n));
    }

    /// Replays the frame's arrivals as the TCP ACKs ns-3's receiver would have sent for them
    /// (`TcpSocketBase::ReceivedData`), up to the next such ACK, and runs the sender's rules on
    /// it; false when none is left. The receiver ACKs a segment at once when it is a duplicate
    /// (all it carries is held), when it leaves data held beyond its cumulative point, or when
    /// it fills a hole (data was held beyond the point before it); an in-order segment otherwise
    /// waits for the next one (`DelAckCount` 2) or for `DelAckTimeout`. braid's receiver answers
    /// each packet within a millisecond, so one braid frame can carry what were several TCP
    /// ACKs, each of which moves the point, counts a duplicate ACK, or resends a segment.
    pub(crate) fn cumulative_next_ack(&mut self, now: Instant) -> bool {
        let in_flight = self.sent.values().any(|p| !p.symbols.is_empty());
        let Some(c) = self.cumulative.as_mut() else { return false };
        let ack = loop {
            if c.delayed_ack.is_some_and(|t| now >= t + DELAYED_ACK_TIMEOUT) {
                c.delayed_ack = None;
                break true;
            }
            let Some((_, segments)) = c.arrivals.pop() else {
                // Nothing more of this frame. A pending delayed ACK waits for the next in-order
                // arrival (a later frame's) or its timeout, unless nothing is left in flight to
                // bring one: then it goes now (its timer would send it before anything else
                // could arrive).
                let due = c.delayed_ack.is_some() && !in_flight && c.missing.is_empty();
                if due {
                    c.delayed_ack = None;
                }
                break due;
            };
            let duplicate = segments.iter().all(|&s| c.passed(s) || c.is_held(s));
            let gap_before = c.receiver_gap();
            for &s in &segments {
                c.mark_held(s);
            }
            if duplicate || gap_before || c.receiver_gap() {
                c.delayed_ack = None;
                break true;
            }
            if c.delayed_ack.take().is_some() {
                break true;
            }
            c.delayed_ack = Some(now);
        };
        if ack {
            self.cumulative_on_tcp_ack(now);
        }
        ack
    }

    /// The sender's rules at one TCP ACK: moves the cumulative point, counts a duplicate ACK,
    /// ends recovery at a full ACK.
    fn cumulative_on_tcp_ack(&mut self, now: Instant) {
        let rto = self.cumulative_rto(0);
        let Some(c) = self.cumulative.as_mut() else { return };
        let moved = c.advance();
        if moved == 0 {
            if c.una().is_some() {
                c.dupacks += 1;
                if c.recover.is_some() {
                    c.guess(1);
                }
            } else if self.sent.is_empty() {
                // Everything sent is acknowledged (the last ACK was for packets without
                // segments, such as parities): the timer stops (RFC 6298 §5.2).
                c.rto_at = None;
            }
            return;
        }
        c.on_advance(moved);
        self.cumulative_forget_passed();
        let Some(c) = self.cumulative.as_mut() else { return };
        c.dupacks = 0;
        c.una_resent = false;
        c.una_lost = false;
        c.backoff = 0;
        if c.after_timeout.is_some_and(|t| c.passed(t)) {
            c.after_timeout = None;
        }
        let restart = match (c.recover, c.una()) {
            (Some(recover), Some(una)) if una <= recover => {
                // A partial ACK: the next hole goes out now; only the first restarts the timer.
                c.partial_pending = true;
                !std::mem::replace(&mut c.partial_seen, true)
            }
            (Some(_), _) => {
                c.recover = None;
                c.partial_pending = false;
                self.cc.on_recovery_end(now);
                true
            }
            (None, _) => true,
        };
        let outstanding = c.una().is_some() || !self.sent.is_empty();
        if restart {
            c.rto_at = outstanding.then_some(now + rto);
        }
        if !outstanding {
            c.rto_at = None;
        }
    }

    /// The cumulative point moved: the packets in flight whose segments it passed leave the
    /// flight size, as TCP's sender drops acknowledged segments from its retransmission queue
    /// whether or not the copy it sent last has arrived (`TcpTxBuffer::DiscardUpTo`, and
    /// `BytesInFlight` counts what is left). A partial ACK's resend of a segment that was only in
    /// flight, or a go-back-N duplicate, so frees its room in the window once the point passes
    /// it rather than when its own ACK returns a round trip later, and the window sends new
    /// data in its place. Its ACK, if it arrives, is a duplicate ACK; if it is lost, nothing
    /// misses it: it is forgotten once three later packets are acknowledged.
    fn cumulative_forget_passed(&mut self) {
        let Some(c) = self.cumulative.as_mut() else { return };
        // `passed` holds for every segment below a bound: the packets it passes wholly are a
        // prefix of `by_last`.
        while let Some(&(_, n)) = c.by_last.first().filter(|&&(last, _)| c.passed(last)) {
            c.by_last.pop_first();
            let Some(p) = c.missing.remove(&n).or_else(|| self.sent.remove(&n)) else { continue };
            if p.ack_eliciting {
                self.in_flight -= p.size;
            }
            c.behind.insert(n, p);
        }
        self.loss_timeout_cache.set(None);
    }

    /// braid's detection found `packet` missing: it stays in flight for a sender without SACK.
    pub(super) fn cumulative_missing(&mut self, packet: SentPacket) -> Option<SentPacket> {
        match self.cumulative.as_mut() {
            Some(c) if sources(&packet).next().is_some() => {
                c.missing.insert(packet.number, packet);
                None
            }
            _ => Some(packet),
        }
    }

    /// The segment at the cumulative point, if one is due to go out again now: at three
    /// duplicate ACKs outside recovery (unless `suppressed`: the mode's parity may still rebuild
    /// it), or after a partial ACK. Its packet, if still counted in flight, is returned as lost.
    pub(crate) fn cumulative_loss(
        &mut self,
        suppressed: bool,
    ) -> Option<(Segment, Resend, Option<SentPacket>)> {
        let c = self.cumulative.as_mut()?;
        let una = c.una()?;
        let guessed = std::mem::take(&mut c.guess_pending);
        let resend = if std::mem::take(&mut c.partial_pending) {
            Resend::PartialAck
        } else if (c.dupacks >= DUPACK_THRESHOLD || (c.dupacks > 0 && c.una_lost))
            && c.recover.is_none()
            && !c.una_resent
            && c.after_timeout.is_none()
            && !suppressed
        {
            c.recover = c.highest;
            c.partial_seen = false;
            // The duplicate ACK that opens recovery guesses one segment held, and so does each
            // one past the threshold that came in the same ACK (one alone may open it, above).
            c.guess(1 + c.dupacks.saturating_sub(DUPACK_THRESHOLD));
            Resend::FastRetransmit
        } else if guessed && !c.una_resent {
            Resend::Guessed
        } else {
            return None;
        };
        // A guessed hold's resend does not stand in for a fast retransmit: a duplicate ACK that
        // finds the segment lost opens recovery and sends it once more (`EnterRecovery`).
        c.una_resent = resend != Resend::Guessed;
        c.una_lost = resend == Resend::Guessed;
        let number = c.segments[&una].packet;
        let packet = c.missing.remove(&number).or_else(|| self.sent.remove(&number));
        if let Some(p) = packet.as_ref() {
            c.give_up(p);
            if resend != Resend::Guessed {
                c.allowance = p.size;
            }
        }
        if let Some(p) = packet.as_ref().filter(|p| p.ack_eliciting) {
            self.in_flight -= p.size;
        }
        self.loss_timeout_cache.set(None);
        if resend != Resend::Guessed {
            self.stats.packets_lost += u64::from(packet.is_some());
            self.stats.fast_losses += u64::from(packet.is_some());
        }
        Some((una, resend, packet))
    }

    /// When the receiver's delayed ACK of a lone in-order segment is due (ns-3's
    /// `DelAckTimeout`): the connection's timer table holds it, so the ACK is replayed at that
    /// moment ([`Path::cumulative_next_ack`]) even if no further frame comes.
    pub(crate) fn cumulative_delayed_ack_due(&self) -> Option<Instant> {
        self.cumulative.as_ref()?.delayed_ack.map(|t| t + DELAYED_ACK_TIMEOUT)
    }

    /// When the retransmission timer fires.
    pub(super) fn cumulative_timeout(&self) -> Option<Instant> {
        self.cumulative.as_ref().and_then(|c| c.rto_at)
    }

    /// The retransmission timer fired: everything in flight is presumed lost and goes out again
    /// from the cumulative point (go-back-N); the window collapses to one segment.
    pub(super) fn cumulative_on_timeout(&mut self, now: Instant) -> Vec<SentPacket> {
        self.stats.timeouts += 1;
        // An RTO collapses the window whatever the count (RFC 5681 §3.1).
        self.cc.on_probe_timeout(now, 3);
        let c = self.cumulative.as_mut().expect("cumulative recovery");
        c.rto_at = None;
        c.backoff = (c.backoff + 1).min(MAX_BACKOFF);
        c.recover = None;
        c.partial_pending = false;
        c.dupacks = 0;
        c.una_resent = false;
        c.guessed = 0;
        c.guess_pending = false;
        c.after_timeout = c.highest;
        c.go_back = c.segments.iter().filter(|(_, h)| h.held).map(|(&s, _)| s).collect();
        let mut lost: Vec<SentPacket> = std::mem::take(&mut c.missing).into_values().collect();
        lost.extend(std::mem::take(&mut self.sent).into_values());
        for p in &lost {
            c.give_up(p);
        }
        for p in &lost {
            if p.ack_eliciting {
                self.in_flight -= p.size;
            }
            self.stats.packets_lost += 1;
        }
        lost
    }

    /// The segments the receiver holds that the last timeout sends again (go-back-N).
    pub(crate) fn take_go_back(&mut self) -> Vec<Segment> {
        self.cumulative.as_mut().map(|c| std::mem::take(&mut c.go_back)).unwrap_or_default()
    }

    /// Whether a queued resend of `segment` is moot on this path (see [`Cumulative::passed`]).
    pub(crate) fn cumulative_passed(&self, segment: Segment) -> bool {
        self.cumulative.as_ref().is_some_and(|c| c.passed(segment))
    }

    /// Room beyond the window: the segment a fast retransmit or partial ACK sends again, and
    /// the guessed holds still in flight. ns-3's flight size (`TcpTxBuffer::BytesInFlight`,
    /// RFC 6675's pipe) leaves out the segments it takes to be held (`m_sackedOut`, which
    /// `AddRenoSack` raises), so each duplicate ACK in recovery opens the window by a segment,
    /// and the guesses kept after recovery keep theirs open: when the duplicate ACKs come from
    /// duplicates, the guessed segments are in fact in flight, and ns-3 sends beyond its window.
    pub(super) fn cumulative_allowance(&self) -> u64 {
        let Some(c) = self.cumulative.as_ref() else { return 0 };
        let guessed_in_flight: u64 = (c.segments.values().skip(1).take(c.guessed as usize))
            .filter(|h| !h.held)
            .filter_map(|h| self.sent.get(&h.packet).or_else(|| c.missing.get(&h.packet)))
            .map(|p| p.size)
            .sum();
        c.allowance + guessed_in_flight
    }

    /// The cumulative point (tests and traces).
    pub fn cumulative_point(&self) -> Option<Segment> {
        self.cumulative.as_ref().and_then(|c| c.una())
    }
}

#[cfg(test)]
mod tests;
