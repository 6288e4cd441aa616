//! Timers: the table of every deadline the connection keeps ([`Timer`], `timers`), what
//! `handle_timeout` does when one fires, and `poll_timeout`, the earliest of them.
//!
//! Some entries are deadlines of their own (idle, a path's loss or probe timer, the receive
//! release, a path's delayed ACK under cumulative-ACK recovery): `handle_timeout` fires those
//! that expired. The others only wake the caller so
//! that `poll_transmit` sends (an ACK, the next symbol, a probe, a PING that measures a path, a
//! piece of a parted symbol, a tail probe, datagrams, the handshake). Three handlers are told
//! the time at every `handle_timeout` instead of being gated by their entry, because their own
//! deadline is not the wake-up's: the redundancy controller keeps a clock (CTCP's ages the
//! symbols in flight by it), the datagram sender drops what expired and gives up on silent
//! paths by its own checks, and PMTU probes time out on every path, also those the wake-up
//! leaves out (paths that cannot send).

use std::time::Duration;

use braid_fec::CodeFamily;

use super::path::Path;
use super::{CloseReason, Connection, State};
use crate::sched::PathInfo;
use crate::streams::Side;
use crate::Instant;

/// A deadline the connection keeps (the path index where there is one per path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// Nothing heard for the idle timeout: the connection ends.
    Idle,
    /// A path's loss detection or probe timeout (RFC 9002 §6.1.2, §6.2).
    Loss(usize),
    /// A path's ACK delay ([`ack_deadline`]).
    Ack(usize),
    /// The next symbol (or a redundant scheduler's copy) a pacer lets go.
    NextSymbol,
    /// A failed path's probe (PROTOCOL.md §12.2).
    Probe(usize),
    /// A PING that measures a path the scheduler leaves unused (PROTOCOL.md §12.1).
    Measure(usize),
    /// The scheduler's own wake-up.
    Scheduler,
    /// A block waiting on the receiver with nothing in flight is doubted.
    Release,
    /// The redundancy controller's wake-up, seen from a path.
    Redundancy(usize),
    /// The handshake flight or its copy.
    Handshake,
    /// Unreliable datagrams: a deadline, a silent path, or a send.
    Datagrams,
    /// A path's PLPMTU probe or its timeout (RFC 8899 §5.1).
    Pmtu(usize),
    /// Pieces of a parted symbol wait (PROTOCOL.md §14.4).
    Parts,
    /// A path's tail probe ([`super::Mode::tail_probes`]).
    TailProbe(usize),
    /// Cumulative-ACK recovery: the delayed ACK TCP's receiver would send for a lone in-order
    /// segment (`Path::cumulative_delayed_ack_due`).
    DelayedAck(usize),
}

impl Connection {
    /// Fires the timers that expired at `now`, in a fixed order: idle (which ends everything),
    /// then the handlers told the time at every call (see the module doc), the receive
    /// release, each path's delayed ACK (cumulative-ACK recovery: it may restart the
    /// retransmission timer, so it goes first), each path's loss timer, each failed path's probe
    /// timer, and the PMTU probes.
    /// Each entry is looked up again when its turn comes: an earlier handler may move it.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if self.expired(Timer::Idle, now) {
            self.finish(CloseReason::IdleTimeout);
            return;
        }
        self.redundancy.handle_timeout(now);
        self.on_datagram_timeout(now);
        if self.expired(Timer::Release, now) {
            self.on_release_timeout(now);
        }
        for i in 0..self.paths.len() {
            if self.expired(Timer::DelayedAck(i), now) {
                self.cumulative_step(now, i);
            }
        }
        for i in 0..self.paths.len() {
            if self.expired(Timer::Loss(i), now) {
                self.on_loss_timer(now, i);
            }
        }
        for i in 0..self.paths.len() {
            if self.expired(Timer::Probe(i), now) {
                self.paths[i].on_probe_timer(now);
            }
        }
        for p in &mut self.paths {
            let timer = super::pmtu::probe_timer(p.pto_base());
            p.pmtu.on_timeout(now, timer);
        }
    }

    /// Whether a timer `handle_timeout` fires by its table entry is due at `now` (the entries
    /// are the same the handlers check: idle, release, delayed ACK, loss and probe).
    fn expired(&self, timer: Timer, now: Instant) -> bool {
        let at = match timer {
            Timer::Idle => Some(self.last_heard + self.idle_timeout),
            Timer::Release => self.release_deadline(),
            Timer::Loss(i) => self.paths[i].loss_timeout(),
            Timer::DelayedAck(i) => self.paths[i].cumulative_delayed_ack_due(),
            Timer::Probe(i) => self.paths[i].probe_due(),
            _ => None,
        };
        at.is_some_and(|t| t <= now)
    }

    /// Path `i`'s loss detection or probe timeout (RFC 9002 §6.1.2, §6.2.1) expired.
    fn on_loss_timer(&mut self, now: Instant, i: usize) {
        let threshold = self.redundancy.parity_groups().and_then(|g| g.packet_threshold(i));
        self.paths[i].set_packet_threshold(threshold);
        let (lost, probe) = self.paths[i].on_timer(now);
        self.after_losses(now, i, Vec::new(), lost, probe);
        if probe {
            self.check_failure(now, i);
        }
        if self.state == State::Handshake && self.side == Side::Client {
            self.handshake_due = Some(now);
            if probe {
                // The flight is presumed lost: try the next path (PROTOCOL.md §9.1), so
                // a first path that is down or in a loss burst cannot keep the
                // connection from coming up over the others.
                self.handshake_path = (self.handshake_path + 1) % self.paths.len().max(1);
            }
        }
    }

    /// How long a block may wait on the receiver with nothing in flight before it is doubted:
    /// the largest probe timeout of the paths that carry data (the BLOCK_ACK that releases it
    /// may come back on the slowest one).
    fn release_timeout(&self) -> Option<Duration> {
        self.paths.iter().filter(|p| p.can_send()).map(|p| p.pto_base()).max()
    }

    fn release_deadline(&self) -> Option<Instant> {
        self.transfer.as_ref()?.sender.release_deadline(self.release_timeout()?)
    }

    /// A sender must never sit idle with data the receiver has not released: a block that
    /// waited a release timeout with nothing in flight is doubted (its count falls back to the
    /// receiver's report, see `BlockSender::on_release_timeout`), which makes a coding
    /// controller send a new repair; where the controller would still send nothing (the `tcp`
    /// model; XOR, whose parity may not be ready), a source goes out again. Either symbol also
    /// makes the receiver send a fresh BLOCK_ACK, which corrects or releases the block.
    fn on_release_timeout(&mut self, now: Instant) {
        let Some(timeout) = self.release_timeout() else { return };
        let view = self.control_path().map(|i| self.path_view(i)).unwrap_or_default();
        let xor = self.config.params.code == CodeFamily::Xor;
        let Some(s) = self.transfer.as_mut() else { return };
        for id in s.sender.on_release_timeout(now, timeout) {
            let Some(b) = s.sender.block(id) else { continue };
            let repair = !xor && self.redundancy.repairs_wanted(b, &view) > 0;
            if !repair {
                let last = b.len().saturating_sub(1) as u16;
                s.sender.queue_retransmission(id, last);
            }
        }
    }

    /// The earliest entry of the timer table (`None` once closed).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        self.timers(|_, t| next = Some(next.map_or(t, |n| n.min(t))));
        next
    }

    /// The timer table: every deadline set, handed to `set` with its kind. Wake-ups for a
    /// send that are already past count from the last poll (the time cannot be earlier).
    pub(super) fn timers(&self, mut set: impl FnMut(Timer, Instant)) {
        if self.state == State::Closed {
            return;
        }
        set(Timer::Idle, self.last_heard + self.idle_timeout);
        for (i, p) in self.paths.iter().enumerate() {
            if let Some(t) = p.loss_timeout() {
                set(Timer::Loss(i), t);
            }
            if p.ack_pending {
                set(Timer::Ack(i), ack_deadline(p));
            }
            if let Some(t) = p.cumulative_delayed_ack_due() {
                set(Timer::DelayedAck(i), t);
            }
        }
        for (i, p) in self.paths.iter().enumerate() {
            if let Some(t) = p.probe_due() {
                set(Timer::Probe(i), t);
            }
        }
        if self.transfer.is_some() {
            let mut paths = [PathInfo::default(); 8];
            let n = self.path_infos(self.last_poll, &mut paths);
            if let Some(t) = self.scheduler.poll_timeout(self.last_poll, &paths[..n]) {
                set(Timer::Scheduler, t.max(self.last_poll));
            }
        }
        if let Some(t) = self.release_deadline() {
            set(Timer::Release, t);
        }
        if self.transfer.is_some() {
            for i in 0..self.paths.len() {
                if let Some(t) = self.redundancy.poll_timeout(&self.path_view(i)) {
                    set(Timer::Redundancy(i), t);
                }
            }
        }
        self.send_timers(&mut set);
    }
}

/// ACKs are sent within 1 ms of an ack-eliciting packet (RFC 9000 §13.2.1 allows up to the
/// peer's max_ack_delay; a short delay keeps the sender's loss detection quick).
pub(super) fn ack_deadline(p: &Path) -> Instant {
    p.last_received + Duration::from_millis(1)
}

#[cfg(test)]
#[path = "timer_tests.rs"]
mod tests;
