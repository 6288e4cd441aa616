//! The connection's side of unreliable datagrams (PROTOCOL.md §15): the application's calls,
//! the path each datagram packet takes, and the hooks the connection calls on frames, losses
//! and timers. The queue, blocks and decoding are in `crate::datagram`.
//!
//! The send planner's datagram stage (`datagram_stage`, between its control and data stages,
//! conn/planner.rs) keeps its kinds of step apart as the planner does:
//!
//! - **Preparation** (`prepare_datagrams`, changes state): datagram packets on a path that fell
//!   silent are given up (`suspect_silent_paths`), and the late-wake credit ends with the
//!   backlog it was for.
//! - **Decision** (`datagram_plan`, `&self`): nothing to do, a silent path's probe, a wait for a
//!   window or a pacer, or a packet on the path that delivers first ([`DatagramPlan`]). The
//!   timer table's `Datagrams` entry (`datagram_timeout`) asks the same function's path part
//!   (`datagram_send_plan`) when a wait ends.
//! - **Bookkeeping of the decision** (changes state): the time datagrams waited, and what held
//!   them, is counted (`Datagrams::account_blocked`); on a send, datagrams that can no longer
//!   arrive in time over the chosen path are dropped (`drop_hopeless`).
//! - **Execution** (`send_datagram_packet`): the packet of datagram frames (one block's, as many
//!   as fit) and control frames. Its frames are written before its header, so a packet whose
//!   sender, asked after all, gives no frame (a datagram too large for the path, a repair given
//!   up) is never begun.

use std::collections::VecDeque;
use std::time::Duration;

use super::planner::Next;
use super::{Connection, PacketType, State, Transmit};
use crate::datagram::send::{Written, DATAGRAM_ROOM};
use crate::datagram::{
    DatagramConfig, DatagramReceiver, DatagramSender, DatagramStats, SendDatagramError, SentDatagrams,
};
use crate::time::Instant;
use crate::wire::{DatagramFrame, DatagramRepairFrame, MAX_DATAGRAM_PAYLOAD};

/// Longest packet header (§7.2): first byte, connection id, path id, packet number.
const PACKET_HEADER_MAX: usize = 1 + 8 + 1 + 8;

/// The least margin past the smoothed RTT before a path that answers nothing counts as silent.
const SILENCE_FLOOR: Duration = Duration::from_millis(10);

/// Both directions of the connection's datagrams.
pub(super) struct Datagrams {
    pub(super) sender: DatagramSender,
    pub(super) receiver: DatagramReceiver,
    /// Per path: the packet number below which datagram packets were already given up as lost
    /// for a silent path, and the newest packet number that carried datagrams.
    suspected_below: Vec<u64>,
    newest_on: Vec<Option<u64>>,
    /// Per path that fell silent: its newest acknowledged packet number then. The path stays
    /// silent until an ACK moves that on — a probe timeout, which presumes its packets lost and
    /// so leaves nothing unanswered, does not make it answer.
    silent_at: Vec<Option<Option<u64>>>,
    /// Until when datagram packets may fill the paths still answering up to twice their
    /// congestion window (after a path carrying datagrams fell silent).
    takeover_until: Option<Instant>,
    /// Datagram packets given up for their path's silence, newest last: path, packet number,
    /// what they carried and whether the takeover allowance paid for their repairs. An ACK for
    /// one of them undoes its loss (`DatagramSender::on_suspected_delivered`).
    suspected: VecDeque<(usize, u64, SentDatagrams, bool)>,
    /// Since when the send queue has held datagrams that could not go out, and what held them
    /// (counted into the sender's stats at the next poll).
    blocked: Option<(Instant, Blocked)>,
    /// How far the pacer's release of datagram packets may lag behind: the time the host came
    /// late to a pacer release while datagrams waited (at most
    /// [`DatagramConfig::late_wake_credit`]), kept until the queue is empty.
    late_credit: Duration,
    /// Where a datagram packet's frames are written before its header is (kept between packets
    /// so that its allocation is made once).
    frames: Vec<u8>,
}

/// The datagram stage's decision at a poll ([`Connection::datagram_plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DatagramPlan {
    /// The connection is not established: datagrams neither go nor wait.
    Off,
    /// Nothing queued and no repair owed.
    Idle,
    /// A PING on this silent path ([`Connection::silent_probe`]).
    Probe(usize),
    /// No path has room in its window.
    NoWindow,
    /// The path that delivers first (`path`) may send at `ready`, or has nothing it wants to
    /// send yet.
    Paced { path: usize, ready: Instant },
    /// A packet of datagram frames on this path now.
    Send(usize),
}

/// What held queued datagrams back at a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocked {
    /// No path had room in its congestion window.
    Window,
    /// The chosen path's pacer releases the next packet at this time.
    Pacer(Instant),
}

/// Packets given up for a silence that are remembered for an ACK that may still come: more
/// than a path carries in flight at a datagram stream's rate (~25 at 425 a second over 60 ms).
const SUSPECTED_KEPT: usize = 256;

impl Datagrams {
    pub(super) fn new(config: &DatagramConfig) -> Datagrams {
        Datagrams {
            sender: DatagramSender::new(config.clone()),
            receiver: DatagramReceiver::new(config.recv_queue),
            suspected_below: Vec::new(),
            newest_on: Vec::new(),
            silent_at: Vec::new(),
            takeover_until: None,
            suspected: VecDeque::new(),
            blocked: None,
            late_credit: Duration::ZERO,
            frames: Vec::new(),
        }
    }

    /// Counts the time since the last poll into what held the queue then, and notes what
    /// holds it now (`None`: nothing queued, or a packet went out).
    fn account_blocked(&mut self, now: Instant, next: Option<Blocked>) {
        if let Some((since, why)) = self.blocked.take() {
            let stats = &mut self.sender.stats;
            let us = |d: Duration| d.as_micros() as u64;
            match why {
                Blocked::Window => stats.blocked_window_us += us(now - since),
                Blocked::Pacer(ready) => {
                    stats.blocked_pacer_us += us(ready.min(now) - since);
                    let late = now - ready.max(since);
                    stats.blocked_host_us += us(late);
                    let cap = self.sender.config().late_wake_credit;
                    self.late_credit = (self.late_credit + late).min(cap);
                }
            }
        }
        self.blocked = next.map(|why| (now, why));
    }

    /// Whether path `i` carried datagram packets not yet given up for its silence.
    fn unsuspected_on(&self, i: usize) -> bool {
        let below = self.suspected_below.get(i).copied().unwrap_or(0);
        self.newest_on.get(i).copied().flatten().is_some_and(|n| n >= below)
    }
}

/// How long a path may leave every packet sent after its newest acknowledged one unanswered
/// before datagrams treat it as silent: its smoothed RTT plus the larger of 4 × the RTT
/// variation (RFC 6298's RTO margin), a quarter of the RTT and [`SILENCE_FLOOR`]. Far sooner
/// than a probe timeout (which must also not presume losses wrongly, and backs off): a
/// datagram is of no use after 150 ms, so a path that stopped answering must stop getting
/// them within about one round trip, and what it was sent must be repaired elsewhere.
fn silence(p: &super::path::Path) -> Duration {
    let srtt = p.rtt.smoothed();
    srtt + (4 * p.rtt.variation()).max(srtt / 4).max(SILENCE_FLOOR)
}

impl Connection {
    /// Queues an unreliable datagram (PROTOCOL.md §15): sent once, on the path expected to
    /// deliver it first, covered by repair across datagrams, dropped once past its deadline
    /// ([`DatagramConfig::deadline`]). A full queue drops its oldest datagram.
    pub fn send_datagram(&mut self, now: Instant, data: &[u8]) -> Result<(), SendDatagramError> {
        self.send_datagram_with_deadline(now, data, self.config.datagrams.deadline)
    }

    /// [`Connection::send_datagram`] with a deadline of its own (at most 65.535 s).
    pub fn send_datagram_with_deadline(
        &mut self,
        now: Instant,
        data: &[u8],
        deadline: Duration,
    ) -> Result<(), SendDatagramError> {
        if self.state == State::Closed {
            return Err(SendDatagramError::Closed);
        }
        let max = self.max_datagram_size();
        if data.len() > max {
            return Err(SendDatagramError::TooLarge { size: data.len(), max });
        }
        self.datagrams.sender.push_with_deadline(now, data, deadline);
        Ok(())
    }

    /// The next datagram received (or rebuilt in time), if any.
    pub fn recv_datagram(&mut self) -> Option<Vec<u8>> {
        self.datagrams.receiver.pop()
    }

    /// Whether a received datagram waits to be read.
    pub fn has_datagrams(&self) -> bool {
        self.datagrams.receiver.has_datagrams()
    }

    /// The largest datagram every path that carries data takes in one packet now (its PLPMTU
    /// less the packet and frame headers); the base datagram's before any path carries data.
    pub fn max_datagram_size(&self) -> usize {
        let smallest = self
            .paths
            .iter()
            .filter(|p| p.can_send())
            .map(|p| p.pmtu.plpmtu())
            .min()
            .unwrap_or(self.config.max_datagram);
        smallest.saturating_sub(PACKET_HEADER_MAX + DATAGRAM_ROOM).min(MAX_DATAGRAM_PAYLOAD)
    }

    /// Datagram counters, both directions.
    pub fn datagram_stats(&self) -> DatagramStats {
        let (s, r) = (&self.datagrams.sender.stats, &self.datagrams.receiver.stats);
        DatagramStats {
            delivered: r.delivered,
            recovered: r.recovered,
            late: r.late,
            dropped: s.dropped + r.dropped,
            queued: self.datagrams.sender.queued() as u64,
            ..*s
        }
    }

    /// The smallest one-way delay estimate of the paths that carry data.
    fn min_one_way(&self) -> Duration {
        self.paths
            .iter()
            .filter(|p| p.can_send() && p.rtt.has_sample())
            .map(|p| p.rtt.min() / 2)
            .min()
            .unwrap_or_default()
    }

    /// Whether path `i` has left everything sent since its newest acknowledged packet
    /// unanswered for longer than [`silence`] at `now`, or did so and has acknowledged
    /// nothing new since.
    fn is_silent(&self, i: usize, now: Instant) -> bool {
        let p = &self.paths[i];
        self.datagrams.silent_at.get(i).copied().flatten().is_some_and(|acked| acked == p.largest_acked())
            || p.unanswered_since().is_some_and(|t| now >= t + silence(p))
    }

    /// The path that delivers a datagram first — earliest pacer release plus half its smoothed
    /// RTT, among paths with room in their window — and when it may send. A silent path is
    /// left out whenever some path that may carry data is not silent, even one without room
    /// now: the datagrams wait for its window rather than go where nothing answers. Only when
    /// every path is silent (a stalled peer or host, not one dead path) do they all count.
    ///
    /// The pacer's release comes early by the late-wake credit (see `Datagrams::late_credit`),
    /// and with [`DatagramConfig::pacer_wait`] set a datagram that has waited that long no
    /// longer waits for the pacer, only for the window: the pacer runs at the bandwidth estimate, and for a stream
    /// that leaves the path mostly idle that estimate is about the stream's own rate (rate
    /// samples taken while application-limited may only raise it), so a backlog — the
    /// datagrams a host that was not scheduled for a while hands over at once — drains only at
    /// the pacer's margin over the stream, none in CRUISE, which paces up to 10 % below the
    /// estimate. And since the pacer keeps at most 1 ms of credit for a late wake-up, a host
    /// that wakes a few milliseconds late every time sends about one datagram per wake-up,
    /// below the stream's rate, and the queue only grows.
    fn datagram_path(&self, now: Instant) -> Option<(usize, Instant)> {
        let mss = self.config.max_datagram as u64;
        let any_live = (0..self.paths.len()).any(|i| self.paths[i].can_send() && !self.is_silent(i, now));
        let takeover = self.datagrams.takeover_until.is_some_and(|t| now < t);
        let room = |i: usize| {
            let p = &self.paths[i];
            if takeover && p.can_send() && p.pto_count == 0 {
                (2 * p.cc.window()).saturating_sub(p.in_flight)
            } else {
                self.data_room(i)
            }
        };
        let unpaced = self.datagrams.sender.unpaced_from();
        let credit = self.datagrams.late_credit;
        (0..self.paths.len())
            .filter(|&i| room(i) >= mss && !(any_live && self.is_silent(i, now)))
            .map(|i| {
                let paced = self.paths[i].next_send - credit;
                (i, unpaced.map_or(paced, |u| paced.min(u)).max(now))
            })
            .min_by_key(|&(i, at)| (at + self.paths[i].rtt.smoothed() / 2, i))
    }

    /// Datagram packets in flight on a path that fell silent are given up as lost at once
    /// (not after a probe timeout, which comes too late for their deadline and does not
    /// report datagram losses at all): their blocks owe repairs, paid by the repair credit and
    /// then by the sender's takeover allowance (`DatagramSender::on_suspected`), which go out
    /// on the paths still answering. If the path was only slow, those repairs were spare.
    fn suspect_silent_paths(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            if !self.datagrams.unsuspected_on(i) || !self.is_silent(i, now) {
                continue;
            }
            let acked = self.paths[i].largest_acked();
            let marks = &mut self.datagrams.silent_at;
            if marks.len() <= i {
                marks.resize(i + 1, None);
            }
            marks[i] = Some(acked);
            let below = self.datagrams.suspected_below.get(i).copied().unwrap_or(0);
            let p = &mut self.paths[i];
            for (&n, sent) in p.sent.range_mut(below..).filter_map(|(n, s)| Some((n, s.datagrams.take()?))) {
                if let Some(by_allowance) = self.datagrams.sender.on_suspected(sent) {
                    let kept = &mut self.datagrams.suspected;
                    if kept.len() >= SUSPECTED_KEPT {
                        kept.pop_front();
                    }
                    kept.push_back((i, n, sent, by_allowance));
                }
            }
            let next = p.next_number;
            let slots = &mut self.datagrams.suspected_below;
            if slots.len() <= i {
                slots.resize(i + 1, 0);
            }
            slots[i] = next;
            self.take_over_from(i, now);
        }
    }

    /// The paths still answering take over the datagrams of the silent path `i`: datagram
    /// packets (its repairs and the stream it carried) may fill them to twice their congestion
    /// window for two round trips of the slowest of them. A path that carried few or none of
    /// the datagrams has a window far too small for all of them at its longer round trip, and
    /// its controller only grows it from the ACKs of what it carries; the datagrams meanwhile
    /// wait and miss their deadline.
    fn take_over_from(&mut self, i: usize, now: Instant) {
        let longest = (0..self.paths.len())
            .filter(|&j| j != i && self.paths[j].can_send())
            .map(|j| self.paths[j].rtt.smoothed())
            .max()
            .unwrap_or_default();
        let until = now + 2 * longest;
        let d = &mut self.datagrams;
        if d.takeover_until.is_none_or(|t| t < now) {
            d.takeover_until = Some(until);
        }
    }

    /// A silent path whose probe timeout presumed everything in flight lost: it gets a PING,
    /// its probe (RFC 9002 §6.2.4), since datagrams no longer go there. Its ACK ends the
    /// silence; without an ACK the next probe timeouts fail the path.
    fn silent_probe(&self, now: Instant) -> Option<usize> {
        let marked = |i: usize| self.datagrams.silent_at.get(i).copied().flatten().is_some();
        (0..self.paths.len()).find(|&i| {
            let p = &self.paths[i];
            marked(i) && p.can_send() && p.pto_count > 0 && p.sent.is_empty() && self.is_silent(i, now)
        })
    }

    /// When the first path carrying unsuspected datagram packets turns silent, if ever.
    fn next_silence(&self) -> Option<Instant> {
        (0..self.paths.len())
            .filter(|&i| self.datagrams.unsuspected_on(i))
            .filter_map(|i| Some(self.paths[i].unanswered_since()? + silence(&self.paths[i])))
            .min()
    }

    /// Hook for `handle_datagram`: a DATAGRAM frame.
    pub(super) fn on_datagram_frame(&mut self, now: Instant, frame: &DatagramFrame<'_>) {
        self.datagrams.receiver.on_datagram(now, frame);
    }

    /// Hook for `handle_datagram`: a DATAGRAM_REPAIR frame.
    pub(super) fn on_datagram_repair(&mut self, now: Instant, frame: &DatagramRepairFrame<'_>) {
        let one_way = self.min_one_way();
        self.datagrams.receiver.on_repair(now, frame, one_way);
    }

    /// Hook for ACK processing: packets of path `path` acknowledged. Any given up for the path's
    /// silence were only late: their losses are undone, and the repairs still owed for them
    /// are not sent.
    pub(super) fn on_datagrams_acked(&mut self, path: usize, acked: &[super::path::SentPacket]) {
        let kept = &mut self.datagrams.suspected;
        if kept.is_empty() {
            return;
        }
        for p in acked {
            if let Some(k) = kept.iter().position(|&(q, n, _, _)| q == path && n == p.number) {
                let (_, _, sent, by_allowance) = kept.remove(k).expect("found");
                self.datagrams.sender.on_suspected_delivered(sent, by_allowance);
            }
        }
    }

    /// Hook for loss detection: what a lost packet carried of datagrams.
    pub(super) fn on_datagrams_lost(&mut self, sent: SentDatagrams) {
        self.datagrams.sender.on_lost(sent);
    }

    /// Hook for `handle_timeout`: datagrams past their deadline leave the queue; datagram
    /// packets on a path that fell silent are given up.
    pub(super) fn on_datagram_timeout(&mut self, now: Instant) {
        self.datagrams.sender.expire(now);
        self.suspect_silent_paths(now);
    }

    /// Hook for `poll_timeout`: when datagrams next need the connection.
    pub(super) fn datagram_timeout(&self) -> Option<Instant> {
        self.transfer.as_ref()?;
        let silence = self.next_silence();
        if !self.datagrams.sender.has_work() {
            return silence;
        }
        let now = self.last_poll;
        let mut next = self.datagrams.sender.next_expiry();
        if let Some(t) = silence {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let mut at = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        // Only when a path can take the packet: with none, an ACK opens a window first.
        match self.datagram_send_plan(now) {
            DatagramPlan::Send(_) => at(now),
            DatagramPlan::Paced { path, ready } => {
                let one_way = self.paths[path].rtt.smoothed() / 2;
                if self.datagrams.sender.wants_to_send(ready, one_way) {
                    at(ready);
                } else if let Some(tail) = self.datagrams.sender.tail_due(ready) {
                    at(tail.max(ready));
                }
            }
            _ => {}
        }
        next
    }

    /// The datagram stage of `poll_transmit` (see the module doc): preparation, the decision,
    /// its bookkeeping; the packet to build, if one is due.
    pub(super) fn datagram_stage(&mut self, now: Instant) -> Option<Next> {
        self.prepare_datagrams(now);
        let plan = self.datagram_plan(now);
        let queued = self.datagrams.sender.queued() > 0;
        let d = &mut self.datagrams;
        match plan {
            DatagramPlan::Off => None,
            DatagramPlan::Idle => {
                d.account_blocked(now, None);
                None
            }
            DatagramPlan::Probe(path) => Some(Next::SilenceProbe(path)),
            DatagramPlan::NoWindow => {
                d.account_blocked(now, queued.then_some(Blocked::Window));
                None
            }
            DatagramPlan::Paced { ready, .. } => {
                d.account_blocked(now, queued.then_some(Blocked::Pacer(ready)));
                None
            }
            DatagramPlan::Send(path) => {
                // The path's propagation delay, not its smoothed RTT: a datagram is only given
                // up when it could not make its deadline even over an empty queue.
                if self.paths[path].rtt.has_sample() {
                    self.datagrams.sender.drop_hopeless(now, self.paths[path].rtt.min() / 2);
                }
                Some(Next::Datagram(path))
            }
        }
    }

    /// The datagram stage's preparation: datagram packets on paths that fell silent are given
    /// up, and the late-wake credit goes once the backlog it was for has gone out.
    fn prepare_datagrams(&mut self, now: Instant) {
        if self.state != State::Established {
            return;
        }
        self.suspect_silent_paths(now);
        if self.datagrams.sender.queued() == 0 {
            self.datagrams.late_credit = Duration::ZERO;
        }
    }

    /// The datagram stage's decision at `now` (after its preparation).
    pub(super) fn datagram_plan(&self, now: Instant) -> DatagramPlan {
        if self.state != State::Established {
            return DatagramPlan::Off;
        }
        if !self.datagrams.sender.has_work() {
            return DatagramPlan::Idle;
        }
        if let Some(path) = self.silent_probe(now) {
            return DatagramPlan::Probe(path);
        }
        self.datagram_send_plan(now)
    }

    /// Whether datagram work goes now, waits for a window, or waits for a pacer (or for
    /// something to want sending) on the path that delivers first ([`Self::datagram_path`]).
    fn datagram_send_plan(&self, now: Instant) -> DatagramPlan {
        let Some((path, ready)) = self.datagram_path(now) else {
            return DatagramPlan::NoWindow;
        };
        let one_way = self.paths[path].rtt.smoothed() / 2;
        if ready > now || !self.datagrams.sender.wants_to_send(now, one_way) {
            return DatagramPlan::Paced { path, ready };
        }
        DatagramPlan::Send(path)
    }

    /// Builds the packet [`Next::Datagram`] names: datagram frames (one datagram block's, as
    /// many as fit `path`'s PLPMTU), written before the packet's header so that nothing is
    /// begun if the sender gives none, then control frames. `None`: the sender gave none.
    pub(super) fn send_datagram_packet(
        &mut self,
        now: Instant,
        path: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let one_way = self.paths[path].rtt.smoothed() / 2;
        let limit = self.paths[path].pmtu.plpmtu();
        let loss = self.path_view(path).loss;
        let max_payload = self.max_datagram_size();
        let header = self.packet_header(path, PacketType::Data).encoded_len();
        let mut frames = std::mem::take(&mut self.datagrams.frames);
        frames.clear();
        let mut sent: Option<SentDatagrams> = None;
        loop {
            let room = limit.saturating_sub(header + frames.len());
            let block = sent.map(|s| s.block);
            let Some(w) =
                self.datagrams.sender.write(now, &mut frames, room, block, loss, one_way, max_payload)
            else {
                break;
            };
            let (block, index) = match w {
                Written::Datagram { block, index } => (block, Some(index)),
                Written::Repair { block, .. } => (block, None),
            };
            let s = sent.get_or_insert(SentDatagrams { block, newest: None, datagrams: 0, repairs: 0 });
            match index {
                Some(i) => {
                    s.newest = Some(s.newest.map_or(i, |n| n.max(i)));
                    s.datagrams += 1;
                }
                None => s.repairs += 1,
            }
            if s.datagrams.saturating_add(s.repairs) == u8::MAX {
                break;
            }
        }
        let Some(sent) = sent else {
            self.datagrams.frames = frames;
            return None;
        };
        self.datagrams.account_blocked(now, None);
        self.begin_packet(path, PacketType::Data, buf);
        buf.extend_from_slice(&frames);
        self.datagrams.frames = frames;
        self.write_control(now, path, buf, 2, limit);
        let number = self.paths[path].next_number;
        let t = self.end_packet(now, path, buf, true, Vec::new());
        if let Some(p) = self.paths[path].sent.get_mut(&number) {
            p.datagrams = Some(sent);
            let newest = &mut self.datagrams.newest_on;
            if newest.len() <= path {
                newest.resize(path + 1, None);
            }
            newest[path] = Some(number);
        }
        Some(t)
    }
}
