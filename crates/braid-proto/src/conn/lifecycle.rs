//! Path lifecycle (PROTOCOL.md §12): paths opened and removed during a
//! connection, a path that stops answering declared failed and its symbols covered on the
//! others, and a failed path probed until it answers again.
//!
//! The rules, in one place:
//! - Ids are allocated in increasing order and never reused: at most [`MAX_PATHS`] paths over a
//!   connection's whole life. Only the client opens paths (it knows the addresses); the server
//!   accepts an id with the first valid packet that arrives on it and sends only on ids it has
//!   heard on.
//! - A path whose probe timer fires [`FAIL_AFTER_PTOS`] times in a row (doubling each time) with
//!   no ACK is failed, unless it is the last path that can carry data. After the first of these
//!   timeouts the path is only trusted with two packets (RFC 9002 §6.2.4's probes) while another
//!   path answers, so the symbols the timeout presumed lost go to the others at once.
//! - A failed path carries a PING at a doubling interval (from its PTO up to 1 s). An ACK that
//!   acknowledges a probe and arrives *on that path* brings it back with a fresh congestion
//!   controller and RTT estimate; an ACK for it carried on another path proves only one
//!   direction and is ignored.

use super::path::{PathState, FAIL_AFTER_PTOS};
use super::{Connection, Event, Path, State, Transmit};
use crate::cc::CongestionController;
use crate::streams::Side;
use crate::wire::{Frame, PacketType, Writer, MAX_PATHS};
use crate::Instant;

/// Why a path could not be opened or removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("a connection opens at most {MAX_PATHS} paths over its life (ids are never reused)")]
    TooManyPaths,
    #[error("only the client opens paths; the server accepts them as packets arrive on them")]
    ServerCannotOpen,
    #[error("no path {0} (never opened, or already removed)")]
    NoSuchPath(u8),
    #[error("path {0} is the last that can carry data; close the connection instead")]
    LastPath(u8),
    #[error("paths can be removed once the connection is established")]
    NotEstablished,
}

impl Connection {
    /// Opens a new path (client only) and returns its id, the next unused one. It carries data at
    /// once; the server accepts it with its first packet (PROTOCOL.md §12.1).
    pub fn add_path(&mut self, now: Instant) -> Result<u8, PathError> {
        if self.side == Side::Server {
            return Err(PathError::ServerCannotOpen);
        }
        if self.paths.len() as u64 >= MAX_PATHS {
            return Err(PathError::TooManyPaths);
        }
        let id = self.paths.len() as u8;
        let cc = self.new_cc();
        self.paths.push(Path::new(id, cc, now, true));
        self.paths[usize::from(id)].pmtu = self.new_pmtu();
        self.paths[usize::from(id)].set_loss_recovery(self.config.recovery);
        Ok(id)
    }

    /// Stops using path `id` for good and tells the peer (PATH_ABANDON, PROTOCOL.md §12.3). What
    /// was in flight on it is handed back to the blocks at once.
    pub fn remove_path(&mut self, now: Instant, id: u8) -> Result<(), PathError> {
        if self.state != State::Established {
            return Err(PathError::NotEstablished);
        }
        let i = usize::from(id);
        if self.paths.get(i).is_none_or(|p| p.state() == PathState::Removed) {
            return Err(PathError::NoSuchPath(id));
        }
        if !self.paths.iter().enumerate().any(|(j, p)| j != i && p.can_send()) {
            return Err(PathError::LastPath(id));
        }
        let lost = self.paths[i].remove();
        self.after_losses(now, i, Vec::new(), lost, true);
        self.paths_changed();
        self.abandon_pending |= 1 << id;
        Ok(())
    }

    /// How long an end that sent a CLOSE keeps answering for the connection (RFC 9000 §10.2's
    /// closing period): three times the largest probe timeout of the paths it heard on, the time
    /// in which the peer may still send before it learns of the close. The session layer keeps
    /// only the sealed CLOSE for that long (`session::Closing`), not this connection.
    pub fn closing_period(&self) -> std::time::Duration {
        let pto = self.paths.iter().filter(|p| p.heard).map(Path::pto_base).max();
        3 * pto.unwrap_or(std::time::Duration::from_secs(1))
    }

    /// Each path's state (index = path id).
    pub fn path_states(&self) -> Vec<PathState> {
        self.paths.iter().map(Path::state).collect()
    }

    /// A congestion controller for a new or returning path.
    fn new_cc(&self) -> Box<dyn CongestionController> {
        let cc = self.config.cc.unwrap_or(self.config.mode.default_cc());
        self.config.mode.build_cc(cc, self.config.max_datagram as u64)
    }

    /// A valid packet arrived on `path`, an id this end had not heard on (PROTOCOL.md §12.1):
    /// accept it. Ids below it that were never heard get placeholders this end will not send on.
    pub(super) fn accept_path(&mut self, now: Instant, path: u8) {
        while self.paths.len() <= usize::from(path) {
            let id = self.paths.len() as u8;
            let cc = self.new_cc();
            self.paths.push(Path::new(id, cc, now, false));
            self.paths[usize::from(id)].pmtu = self.new_pmtu();
            self.paths[usize::from(id)].set_loss_recovery(self.config.recovery);
        }
        self.paths[usize::from(path)].heard = true;
    }

    /// Whether a datagram on `path` may be processed: an id within the limit, not removed.
    pub(super) fn path_acceptable(&self, path: u8) -> bool {
        u64::from(path) < MAX_PATHS
            && self.paths.get(usize::from(path)).is_none_or(|p| p.state() != PathState::Removed)
    }

    /// Room for data on path `i`: none unless it can send; after a probe timeout, while another
    /// path still answers, only the two probes RFC 9002 §6.2.4 allows.
    pub(super) fn data_room(&self, i: usize) -> u64 {
        let p = &self.paths[i];
        if !p.can_send() {
            return 0;
        }
        let room = p.window_room();
        let answering_elsewhere = p.pto_count > 0
            && self.paths.iter().enumerate().any(|(j, q)| j != i && q.can_send() && q.pto_count == 0);
        if answering_elsewhere {
            let probes = 2 * self.config.max_datagram as u64;
            return room.min(probes.saturating_sub(p.in_flight));
        }
        room
    }

    /// The next PING that measures a path (PROTOCOL.md §12.1), for a scheduler that leaves
    /// paths without an RTT sample unused ([`Scheduler::needs_measured_paths`]), with two paths
    /// or more that can carry data.
    ///
    /// While another path has a sample and data waits to be delivered ([`Self::warming`]), a
    /// path without one fills its window with full-size PINGs as its pacer allows: its first
    /// round trip then measures its RTT and grows its window as a round of data would, and its
    /// data starts from that grown window a round sooner. With one PING the path sat idle for
    /// that round (300 ms on FMTCP Table II's long second path) and then started from the
    /// initial window. A lost PING costs nothing while the others answer; if none does, the
    /// path's probe timeout leaves it two in flight (`data_room`) and three timeouts fail it
    /// (§12.2). The PINGs carry nothing the blocks count on, so they hold no block back.
    ///
    /// Otherwise (no sample yet anywhere, or nothing to send), PINGs alone: at once if nothing
    /// awaits an ACK on the path, then again after the smallest SRTT of the measured paths,
    /// doubling with each PING unanswered — one lost PING would otherwise cost the path a probe
    /// timeout from RFC 9002's 333 ms guess (≈ 1 s), as one lost Initial would the handshake.
    ///
    /// [`Scheduler::needs_measured_paths`]: crate::sched::Scheduler::needs_measured_paths
    pub(super) fn measurement_due(&self) -> Option<(usize, Instant)> {
        if self.transfer.is_none() || !self.scheduler.needs_measured_paths() {
            return None;
        }
        if self.paths.iter().filter(|p| p.can_send()).count() < 2 {
            return None;
        }
        let base =
            self.paths.iter().filter(|p| p.can_send() && p.rtt.has_sample()).map(|p| p.rtt.smoothed()).min();
        let warming = self.warming();
        let mss = self.config.max_datagram as u64;
        let due = |i: usize, p: &Path| -> Option<Instant> {
            if !p.can_send() || p.rtt.has_sample() {
                return None;
            }
            if warming {
                return (self.data_room(i) >= mss).then_some(p.next_send);
            }
            let Some((_, last)) = p.sent.last_key_value() else { return Some(self.last_poll) };
            let unanswered = p.sent.len().min(16) as u32;
            Some(last.time + base? * 2u32.pow(unanswered - 1))
        };
        self.paths.iter().enumerate().filter_map(|(i, p)| due(i, p).map(|t| (i, t))).min_by_key(|&(_, t)| t)
    }

    /// Whether paths without an RTT sample are measured with a window of full-size PINGs
    /// ([`Self::measurement_due`]): some path has a sample, and data waits to be delivered.
    fn warming(&self) -> bool {
        !self.is_idle() && self.paths.iter().any(|p| p.can_send() && p.rtt.has_sample())
    }

    /// A PING measuring `path` ([`Self::measurement_due`]), padded to a full datagram while
    /// [`Self::warming`].
    pub(super) fn send_measurement(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>) -> Transmit {
        self.begin_packet(path, PacketType::Data, buf);
        Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
        if self.warming() {
            buf.resize(self.config.max_datagram.max(buf.len()), 0); // PADDING frames (§8)
        }
        self.end_packet(now, path, buf, true, Vec::new())
    }

    /// The path for control frames sent on their own (window updates, PATH_ABANDON): the
    /// lowest-RTT path that can carry data.
    pub(super) fn control_path(&self) -> Option<usize> {
        (0..self.paths.len())
            .filter(|&i| self.paths[i].can_send())
            .min_by_key(|&i| self.paths[i].rtt.smoothed())
    }

    /// After a probe timeout on path `i`: declare it failed once it has gone
    /// [`FAIL_AFTER_PTOS`] timeouts without an ACK, if another path can carry the data.
    pub(super) fn check_failure(&mut self, now: Instant, i: usize) {
        let p = &self.paths[i];
        if self.state != State::Established || p.state() != PathState::Active || p.pto_count < FAIL_AFTER_PTOS
        {
            return;
        }
        if !self.paths.iter().enumerate().any(|(j, q)| j != i && q.can_send()) {
            return;
        }
        let lost = self.paths[i].fail(now);
        self.after_losses(now, i, Vec::new(), lost, true);
        self.paths_changed();
        self.events.push_back(Event::PathFailed(i as u8));
    }

    /// Before an ACK frame for path `id` is processed, which arrived on path `arrival`: whether
    /// to process it. An ACK of a failed path's probe that came back on the path itself brings
    /// the path back. An ACK for a packet number the path never sent closes the connection
    /// (RFC 9000 §13.1): taken as real, it moved the path's largest acknowledged past everything
    /// sent, and the next ACK's loss detection declared every packet then in flight lost.
    pub(super) fn ack_for_path(
        &mut self,
        now: Instant,
        arrival: usize,
        id: usize,
        ack: &crate::wire::AckFrame,
    ) -> bool {
        let Some(p) = self.paths.get(id) else { return false };
        let largest = ack.ranges.iter().map(|r| r.end).max();
        if let Some(largest) = largest.filter(|&l| l >= p.next_number) {
            let next = p.next_number;
            self.violation(format!("an ACK on path {id} for packet {largest}, never sent (next is {next})"));
            return false;
        }
        match p.state() {
            PathState::Active => true,
            PathState::Removed => false,
            PathState::Failed => {
                if arrival != id || !p.acks_any(ack) {
                    return false;
                }
                let cc = self.new_cc();
                self.paths[id].revive(now, cc, ack);
                self.paths_changed();
                self.events.push_back(Event::PathRecovered(id as u8));
                true
            }
        }
    }

    /// The peer's address on path `id` changed (the security layer calls this once the new
    /// address's budget has room for a packet, and again when it answers its challenge:
    /// PROTOCOL.md §13.8).
    /// Everything in flight on the path went to the old address, or was held back by the 3×
    /// budget while the new one was unproven: it is presumed lost now, as at a probe timeout but
    /// with no backoff and no congestion signal (the losses say nothing about the path's
    /// capacity), so its blocks get new symbols at the next `poll_transmit`, to the new address.
    /// A failed path is probed at once. The congestion controller and RTT estimate are kept
    /// (RFC 9000 §9.4 allows that for a change of port, what a NAT rebinding is;
    /// docs/DEVIATIONS.md).
    ///
    /// Without this the data waited for the path's probe timer (backed off up to 4 s by the
    /// timeouts while the client was unreachable), and a client that only receives sends
    /// nothing but its announcement every 2 s: a NAT that moved again before that timer fired
    /// left the connection silent until the idle timeout.
    pub fn on_peer_address_changed(&mut self, now: Instant, id: u8) {
        let i = usize::from(id);
        let Some(path) = self.paths.get_mut(i) else { return };
        let lost = path.readdressed(now);
        if !lost.is_empty() {
            self.after_losses(now, i, Vec::new(), lost, true);
        }
    }

    /// The peer abandoned path `id` (PROTOCOL.md §12.3).
    pub(super) fn on_path_abandon(&mut self, now: Instant, id: u8) {
        let i = usize::from(id);
        if i >= self.paths.len() {
            // Never heard on: remember the id as used, so it is never accepted later.
            self.accept_path(now, id);
            self.paths[i].heard = false;
        }
        if self.paths[i].state() == PathState::Removed {
            return;
        }
        let lost = self.paths[i].remove();
        self.after_losses(now, i, Vec::new(), lost, true);
        self.abandon_pending &= !(1 << id);
        self.paths_changed();
        self.events.push_back(Event::PathRemoved(id));
    }

    /// A path failed, returned or went away: the peer's ACKs may now come back by other
    /// routes, so every path's minimum RTT is learned again ([`RttEstimator::restart_min`]).
    ///
    /// [`RttEstimator::restart_min`]: crate::cc::RttEstimator::restart_min
    fn paths_changed(&mut self) {
        for p in &mut self.paths {
            p.rtt.restart_min();
        }
    }
}

impl Connection {
    /// A round trip the security layer measured on `path` before the core's own packets could
    /// give one (its handshake's first message to the answer): the path's first RTT sample, as
    /// QUIC takes its first from the handshake's packets (RFC 9002 §5.1). Without it the first
    /// flight is paced over the 333 ms default (RFC 9002 §6.2.2), and a request written beside
    /// a bulk stream waits behind it. Ignored once the path has a sample of its own; the
    /// path's minimum and maximum RTT come from its own samples only ([`RttEstimator::seed`]).
    ///
    /// [`RttEstimator::seed`]: crate::cc::RttEstimator::seed
    pub fn on_handshake_rtt(&mut self, path: u8, rtt: std::time::Duration) {
        if let Some(p) = self.paths.get_mut(usize::from(path)) {
            p.seed_rtt(rtt);
        }
    }

    /// Starts recording a trace (see [`crate::trace`]); drain it with [`Connection::poll_trace`].
    pub fn enable_trace(&mut self) {
        self.trace.enable();
    }

    /// The oldest event not yet taken.
    pub fn poll_trace(&mut self) -> Option<crate::trace::TraceEvent> {
        self.trace.pop()
    }

    /// Events lost because the queue was full (nobody drained it).
    pub fn trace_dropped(&self) -> u64 {
        self.trace.dropped
    }
}
