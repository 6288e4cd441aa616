//! The send planner: what `poll_transmit` sends next, on which path, and when (quinn-proto's
//! connection likewise asks one place for its next packet). `poll_transmit` (transmit.rs)
//! keeps three kinds of step apart:
//!
//! - **Preparation** (`&mut self`: changes state, sends nothing). Before the control stage,
//!   `drop_dead_parts` drops waiting pieces of parted symbols whose path can no longer send.
//!   Before the data stage, `prepare_data` cuts blocks again at a new symbol size
//!   (`recut_at_symbol_size`), cuts stream data into source symbols (`fill_pipe`), tells the
//!   congestion controllers when the application leaves their windows unused
//!   (`mark_app_limited`), forms XOR parity groups (`apply_parity_covers`) and drops copies of
//!   decoded blocks; then, with per-path placement, `cut_block_for` cuts a source for the path
//!   [`Connection::ready_pick`] chose. Data is prepared only once nothing of the first stages
//!   goes out: what is cut is committed to its place in the send order.
//! - **Decision** (`&self`, no state changed): `plan_first`, `plan_control`, `plan_copy` and
//!   `plan_data` name the next packet as a [`Next`], in this order of precedence: a CLOSE, the
//!   handshake, a failed path's probe; the rest of a parted symbol, a PLPMTU probe, an
//!   unmeasured path's PING; a duplicate's copy; the scheduler's symbol, TCP-IR's fixed-rate
//!   parity, a tail probe, ACKs and control frames alone.
//! - **Execution**: `Connection::execute` and the `send_*` functions of transmit.rs build the
//!   packet a [`Next`] names.
//!
//! Unreliable datagrams go between the control and data stages, in a stage of their own
//! (`datagram_stage`, datagrams.rs, whose module doc gives its steps): its preparation gives
//! up datagram packets on silent paths, its decision (`datagram_plan`, `&self`) names a silent
//! path's probe or a datagram packet ([`Next::SilenceProbe`], [`Next::Datagram`]) or why
//! datagrams wait, and the time they wait is counted before the next stage runs.
//!
//! The "when" asks the same functions as the "what": `next_symbol_time` takes the path
//! [`Connection::ready_pick`] would choose when each pacer allows and asks `has_symbol` of it,
//! adding only what preparation would make meanwhile (a new source from the stream data), and
//! `send_timers` gives the timer table (timers.rs) the instant each other kind of packet is
//! due, from the same tests `plan_*` make.

use super::{Connection, State};
use crate::pipe::OwnedFrame;
use crate::sched::Pick;
use crate::Instant;

use super::timers::{ack_deadline, Timer};

/// What `poll_transmit` sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Nothing now: the connection is closed, or the handshake is not done.
    Nothing,
    /// The CLOSE frame this end owes.
    Close,
    /// The handshake flight (or its copy).
    Handshake,
    /// A failed path's probe: a PING alone (PROTOCOL.md §12.2).
    Probe(usize),
    /// The next piece of a parted SYMBOL frame (PROTOCOL.md §14.4).
    Part,
    /// A PLPMTU probe of `size` bytes on `path` (RFC 8899 §4.1).
    PmtuProbe { path: usize, size: usize },
    /// A PING on a path the scheduler will not use until it is measured (PROTOCOL.md §12.1).
    Measure(usize),
    /// A PING on a path that fell silent to datagrams (datagrams.rs: its probe).
    SilenceProbe(usize),
    /// A packet of unreliable datagram frames on this path (datagrams.rs).
    Datagram(usize),
    /// The redundant scheduler's copy at this index of `copies`.
    Copy(usize),
    /// The scheduler's symbol (or, if it has none to give after all, control frames alone).
    Symbol(Pick),
    /// TCP-IR's parity on this path, which goes at its fixed rate even when the window is full.
    Parity(usize),
    /// A tail probe on this path ([`super::Mode::tail_probes`]).
    TailProbe(usize),
    /// ACKs and control frames alone on this path.
    Control(usize),
}

/// Decisions.
impl Connection {
    /// The first stage: a CLOSE, the handshake, a failed path's probe; `Next::Nothing` once
    /// closed or before the transfer. `None`: the next stage decides.
    pub(super) fn plan_first(&self, now: Instant) -> Option<Next> {
        if self.close_pending.is_some() {
            return Some(Next::Close);
        }
        if self.state == State::Closed {
            return Some(Next::Nothing);
        }
        if self.handshake_due.is_some_and(|t| t <= now) {
            return Some(Next::Handshake);
        }
        if self.transfer.is_none() {
            return Some(Next::Nothing);
        }
        // Nothing that must arrive rides on a probe: its loss is never declared.
        self.paths.iter().position(|p| p.probe_pending).map(Next::Probe)
    }

    /// The control stage (after `drop_dead_parts`): the rest of a parted symbol, a PLPMTU
    /// probe, an unmeasured path's PING.
    pub(super) fn plan_control(&self, now: Instant) -> Option<Next> {
        if !self.parts_out.is_empty() {
            return Some(Next::Part);
        }
        if let Some((path, size)) = self.pmtu_probe_due(now) {
            return Some(Next::PmtuProbe { path, size });
        }
        self.measurement_due().filter(|&(_, at)| at <= now).map(|(path, _)| Next::Measure(path))
    }

    /// A PLPMTU probe due on a confirmed path: the path and the probe's size.
    fn pmtu_probe_due(&self, now: Instant) -> Option<(usize, usize)> {
        self.paths.iter().enumerate().find_map(|(i, p)| {
            (p.can_send() && p.rtt.has_sample()).then(|| p.pmtu.probe_due(now).map(|s| (i, s))).flatten()
        })
    }

    /// The oldest queued copy (the redundant scheduler) whose path may send now.
    pub(super) fn plan_copy(&self, now: Instant) -> Option<Next> {
        self.copies.iter().position(|c| self.copy_at(c.0).is_some_and(|t| t <= now)).map(Next::Copy)
    }

    /// When a copy may go on `path`: once its pacer allows, if its window has room.
    fn copy_at(&self, path: usize) -> Option<Instant> {
        let p = self.paths.get(path)?;
        (self.data_room(path) >= self.config.max_datagram as u64).then_some(p.next_send)
    }

    /// The path (and block) the next symbol goes on if one goes at `at`: a path with work only
    /// it may carry, else the scheduler's choice among the paths that may send then.
    pub(super) fn ready_pick(&self, at: Instant) -> Option<Pick> {
        self.pinned_path(at).map(Pick::path).or_else(|| self.choose_path(at))
    }

    /// The data stage (after `prepare_data` and the cut for `ready`, [`Self::ready_pick`] at
    /// `now`): a symbol on `ready` if it has one, TCP-IR's fixed-rate parity (`fixed_rate`: the
    /// redundancy controller sends such parity), a tail probe, else ACKs and control frames.
    pub(super) fn plan_data(&self, now: Instant, ready: Option<Pick>, fixed_rate: bool) -> Option<Next> {
        if let Some(pick) = ready.filter(|&p| self.has_symbol(p)) {
            return Some(Next::Symbol(pick));
        }
        if let Some(path) = self.control_path().filter(|&p| fixed_rate && self.repair_due(p)) {
            return Some(Next::Parity(path));
        }
        if let Some(path) = (0..self.paths.len()).find(|&i| self.tail_probe_at(i).is_some_and(|t| t <= now)) {
            return Some(Next::TailProbe(path));
        }
        self.ack_due(now).map(Next::Control)
    }

    /// When path `i`'s tail probe may go: when its pacer allows, if one is owed.
    fn tail_probe_at(&self, i: usize) -> Option<Instant> {
        let p = &self.paths[i];
        (self.tail_probes & (1 << i) != 0 && p.can_send()).then_some(p.next_send)
    }

    /// The path whose ACK is due (two ack-eliciting packets unacknowledged, or its ACK delay
    /// passed), else the control path if window updates or PATH_ABANDONs wait.
    fn ack_due(&self, now: Instant) -> Option<usize> {
        self.paths
            .iter()
            .position(|p| p.ack_pending && (p.unacked_eliciting >= 2 || now >= ack_deadline(p)))
            .or_else(|| {
                let updates = self.transfer.as_ref().is_some_and(|s| s.streams.has_window_updates());
                (updates || self.abandon_pending != 0).then(|| self.control_path()).flatten()
            })
    }
}

/// When: the timer table's entries for packets `poll_transmit` sends of its own accord.
impl Connection {
    /// The instants the planner's kinds of packet become due (pacers already past count from
    /// the last poll: the time cannot be earlier), for the timer table.
    pub(super) fn send_timers(&self, set: &mut impl FnMut(Timer, Instant)) {
        if let Some(t) = self.handshake_due {
            set(Timer::Handshake, t);
        }
        if let Some(t) = self.next_symbol_time() {
            set(Timer::NextSymbol, t);
        }
        if let Some((path, at)) = self.measurement_due() {
            set(Timer::Measure(path), at.max(self.last_poll));
        }
        // From the datagram stage's own decision (`datagram_plan`'s path part).
        if let Some(t) = self.datagram_timeout() {
            set(Timer::Datagrams, t);
        }
        if self.transfer.is_some() {
            // A probe due, or the outstanding one's loss (`handle_timeout` fires that).
            for (i, p) in self.paths.iter().enumerate().filter(|(_, p)| p.can_send()) {
                if let Some(t) = p.pmtu.timeout(super::pmtu::probe_timer(p.pto_base())) {
                    set(Timer::Pmtu(i), t.max(self.last_poll));
                }
            }
        }
        if !self.parts_out.is_empty() {
            set(Timer::Parts, self.last_poll);
        }
        for i in 0..self.paths.len() {
            if let Some(t) = self.tail_probe_at(i) {
                set(Timer::TailProbe(i), t.max(self.last_poll));
            }
        }
    }

    /// When `poll_transmit` would next send a symbol (or a copy) if nothing else happened: it
    /// takes [`Self::ready_pick`] among the paths whose pacer allows and sends only if that path
    /// has a symbol (or preparation can cut a new source for it), and more paths qualify as
    /// their pacers allow. Waking at every pacer instead spun the connection whenever the
    /// chosen path had nothing to carry (pipe data behind a full block window, a repair wanted
    /// on another path), until the next ACK. Never later than the first send; an earlier
    /// wake-up only polls for nothing.
    fn next_symbol_time(&self) -> Option<Instant> {
        let s = self.transfer.as_ref()?;
        let pipe = s.streams.has_pipe_data() || !s.partial.is_empty() || !s.recut.is_empty();
        // With per-path placement new data joins the path's own open block, or a new one.
        let new_source_on = |c: usize| {
            pipe && if s.sender.is_per_path() { s.sender.has_room_on(c as u8) } else { s.sender.has_room() }
        };
        let mss = self.config.max_datagram as u64;
        let mut next: Option<Instant> = None;
        for &(path, _, _) in &self.copies {
            if let Some(at) = self.copy_at(path).map(|t| t.max(self.last_poll)) {
                next = Some(next.map_or(at, |n: Instant| n.min(at)));
            }
        }
        for i in (0..self.paths.len()).filter(|&i| self.data_room(i) >= mss) {
            let at = self.paths[i].next_send.max(self.last_poll);
            if next.is_some_and(|n| n <= at) {
                continue;
            }
            if self.ready_pick(at).is_some_and(|c| new_source_on(c.path) || self.has_symbol(c)) {
                next = Some(at);
            }
        }
        next
    }
}

/// Preparation.
impl Connection {
    /// Pieces of parted symbols at the front of the queue whose path can no longer send are
    /// dropped (the symbol is then lost with its first piece's packet's fate unknown to the
    /// receiver: the block's count falls back on BLOCK_ACK, §11.5).
    pub(super) fn drop_dead_parts(&mut self) {
        while let Some(part) = self.parts_out.front() {
            if self.paths.get(part.path).is_some_and(|p| p.can_send()) {
                return;
            }
            self.parts_out.pop_front();
        }
    }

    /// The data stage's preparation (see the module doc). Returns whether the redundancy
    /// controller's parity goes at a fixed rate whatever the window (TCP-IR).
    pub(super) fn prepare_data(&mut self, now: Instant) -> bool {
        self.recut_at_symbol_size();
        self.fill_pipe();
        self.mark_app_limited();
        self.apply_parity_covers(now);
        let paths = self.paths.len();
        if let Some(s) = self.transfer.as_ref() {
            self.copies.retain(|c| c.0 < paths && s.sender.block(c.1.block).is_some_and(|b| !b.decoded));
        }
        self.redundancy.parity_groups().is_some_and(|g| g.repair_ignores_window())
    }

    /// When the symbol size in force changed (PROTOCOL.md §14.3), blocks cut but never sent are
    /// cut again at the new size; in pipe order they come before what was not cut yet.
    fn recut_at_symbol_size(&mut self) {
        let size = self.block_symbol_size();
        let Some(s) =
            self.transfer.as_mut().filter(|s| s.sender.symbol_size() != size || !s.recut.is_empty())
        else {
            return;
        };
        s.sender.set_symbol_size(size);
        let taken = s.sender.take_unsent_blocks();
        if !taken.is_empty() {
            let earlier: Vec<OwnedFrame> = s.recut.drain(..).collect();
            let partial = std::mem::take(&mut s.partial);
            s.recut.extend(OwnedFrame::from_symbols(taken.iter().map(Vec::as_slice)));
            s.recut.extend(earlier);
            s.recut.extend(OwnedFrame::from_symbols([partial.as_slice()]));
        }
    }
}
