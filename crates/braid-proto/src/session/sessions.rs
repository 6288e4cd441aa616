//! An endpoint's connections and their security layers, sans-IO: the table a runtime (or the
//! simulator, or a test) drives with datagrams and rounds, and that says what to send and when
//! to come back. What it decides:
//! - where a datagram goes: a server's through its [`Listener`] (admitted, refused with a
//!   hint, dropped, or routed by connection id), a client's by its connection id; one for a
//!   connection this end closed goes to [`Closing`], which may answer it with the CLOSE;
//! - which connections a round drives: those with input, a poke from the application
//!   ([`Sessions::poke`]), an expired timer, a client's handshake, or one the application let
//!   go of (its [`Linger`]). A round costs what its ready connections cost, not what the
//!   table holds: each connection's next timer sits in a heap (a changed timer leaves its old
//!   entry behind, skipped when it comes up), input and pokes queue the connection, and only
//!   the few that must be asked every round (a client's handshake, a let-go connection) are;
//! - the order of a connection's round: its timers, its security layer's events, at most
//!   [`SEND_BATCH`] datagrams, then the core's events (the caller's, through [`Host`]);
//! - a connection's end: its sealed CLOSE kept in [`Closing`] for the closing period, its
//!   place under the listener's cap freed; a half-open one expired by the listener; a
//!   client's failed handshake dropped.
//!
//! The caller keeps each connection's core wherever it likes ([`CoreCell`]: behind the
//! runtime's mutex beside the application's state, or a plain field), and does its I/O and
//! bookkeeping in the hooks of [`Host`] (send a datagram, make a new connection's cell, count a
//! drop, wake the application on the core's events).
//!
//! [`Linger`]: super::Linger

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::ops::DerefMut;

use crate::wire::{ConnectionId, DatagramType};
use crate::{Connection, Event, Instant};

use super::crypto::{init_cid, Responder};
use super::{
    Closing, Dropped, Incoming, Listener, ListenerEvent, NewConnection, Received, SecureTransmit, Session,
    SessionEvent,
};

/// Datagrams sent per connection per round; a connection with more is driven again at the next
/// round, which comes at once ([`Sessions::is_busy`]).
pub const SEND_BATCH: usize = 256;

/// Where the caller keeps a connection's core, and what it knows of the application.
pub trait CoreCell {
    /// The core, lent for one step (a lock guard, or a plain reference).
    type Guard<'a>: DerefMut<Target = Connection>
    where
        Self: 'a;
    fn core(&mut self) -> Self::Guard<'_>;
    /// The round that drives the connection took the application's poke ([`Sessions::poke`]):
    /// a change the application makes from now on needs another.
    fn clear_poke(&mut self) {}
    /// The application let go of the connection (holds no handle to it): once it is up, it
    /// finishes delivering and closes ([`Session::let_go`]).
    fn is_released(&self) -> bool {
        false
    }
}

impl CoreCell for Connection {
    type Guard<'a> = &'a mut Connection;
    fn core(&mut self) -> &mut Connection {
        self
    }
}

/// What the core's events of one round meant for the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreNews {
    /// The core's handshake finished ([`Event::Connected`]).
    pub connected: bool,
    /// The connection ended ([`Event::Closed`]): after this round it is retired.
    pub closed: bool,
}

impl CoreNews {
    /// Notes one of the core's events.
    pub fn note(&mut self, event: &Event) {
        match event {
            Event::Connected => self.connected = true,
            Event::Closed(_) => self.closed = true,
            _ => {}
        }
    }
}

/// The caller's side of [`Sessions`]: its I/O and bookkeeping. Only [`Host::send`] and
/// [`Host::core_events`] must do something.
pub trait Host<K, C> {
    /// Sends `data` to `transmit.to` (on the client's socket of `transmit.path`; a server has
    /// one socket).
    fn send(&mut self, now: Instant, transmit: SecureTransmit, data: &[u8]);
    /// Takes the core's events of connection `cid` since its last round (the caller's wake-ups
    /// and logs) and says what they meant ([`CoreNews::note`]).
    fn core_events(&mut self, cid: ConnectionId, cell: &mut C, now: Instant) -> CoreNews;
    /// Server: the listener created a connection; the caller gives its core a home and hands
    /// back the cell and the session.
    fn accept(&mut self, now: Instant, new: NewConnection<K>) -> (C, Session<K>);
    /// What became of a datagram for connection `cid` (before any of its events).
    fn received(&mut self, _cid: ConnectionId, _cell: &mut C, _from: SocketAddr, _len: usize, _r: Received) {}
    /// What the connection's security layer reported. After [`SessionEvent::Failed`] the
    /// connection is dropped from the table.
    fn session_event(&mut self, _cid: ConnectionId, _cell: &mut C, _now: Instant, _event: SessionEvent) {}
    /// Server: a first message did not authenticate; the refusal hint goes back to `from`.
    fn refused(&mut self, _now: Instant, _from: SocketAddr) {}
    /// A datagram was dropped before reaching any connection.
    fn dropped(&mut self, _now: Instant, _from: SocketAddr, _why: Dropped) {}
    /// Server: a half-open connection's handshake did not finish in time; it is retired at
    /// the end of this round.
    fn expired(&mut self, _cid: ConnectionId) {}
    /// The connection left the table (closed, expired or failed): its cell and session are
    /// the caller's again.
    fn gone(&mut self, _cid: ConnectionId, _cell: C, _session: Session<K>) {}
}

/// One connection in the table.
struct Slot<K, C> {
    cell: C,
    session: Session<K>,
    established: bool,
    /// The listener was told the handshake finished (a server's, once the client proved it
    /// holds the keys: [`Session::peer_proven`]).
    counted: bool,
    closed: bool,
    /// The session's `poll_timeout` after the last round (asking it is not free): the entry
    /// of the table's timer heap that stands for it.
    next_timeout: Option<Instant>,
    /// In the table's ready queue: input arrived, the application poked it, or more was left
    /// to send than one batch; driven at the next round.
    queued: bool,
    /// In the table's list of connections asked every round ([`Slot::wants_every_round`]).
    watched: bool,
}

impl<K, C: CoreCell> Slot<K, C> {
    fn new(cell: C, session: Session<K>) -> Slot<K, C> {
        Slot {
            cell,
            session,
            established: false,
            counted: false,
            closed: false,
            next_timeout: None,
            queued: false,
            watched: false,
        }
    }

    /// Driven every round whatever else happens: a client's handshake (a server's half-open
    /// connection waits for input, its expiry is the listener's), and an established
    /// connection the application let go of.
    fn wants_every_round(&self, is_client: bool) -> bool {
        (!self.established && is_client) || (self.established && self.cell.is_released())
    }
}

/// A connection's next timer in the heap: earliest first.
type TimerEntry = Reverse<(Instant, [u8; 8])>;

/// An endpoint's connections (see the module's documentation): a client's one, or a server's
/// behind its listener.
pub struct Sessions<R: Responder, C> {
    slots: HashMap<ConnectionId, Slot<R::Keys, C>>,
    /// Connections to drive at the next round, each once ([`Slot::queued`]).
    ready: Vec<ConnectionId>,
    /// Every connection's [`Slot::next_timeout`], and stale entries of timers that changed
    /// since (skipped when they come up; the heap is rebuilt when they outnumber the rest).
    timers: BinaryHeap<TimerEntry>,
    /// Connections asked every round ([`Slot::wants_every_round`]); few at a time.
    watched: Vec<ConnectionId>,
    /// Connections that closed or expired this round, retired at its end.
    closed: Vec<ConnectionId>,
    /// The round's connections (kept to spare an allocation a round).
    due: Vec<ConnectionId>,
    listener: Option<Listener<R>>,
    /// A client's connection: every core packet that comes to its sockets is for it (a
    /// server's Data packets carry no connection id, PROTOCOL.md §7.4).
    own: Option<ConnectionId>,
    closing: Closing,
    busy: bool,
    out: Vec<u8>,
}

impl<R: Responder, C: CoreCell> Sessions<R, C> {
    /// A client's table: its one connection, its first message sent at the first round.
    pub fn client(cid: ConnectionId, cell: C, session: Session<R::Keys>) -> Self {
        let mut table = Sessions::new(None, Closing::new(1));
        table.own = Some(cid);
        table.insert(cid, cell, session);
        table
    }

    /// A server's table, admitting through `listener`: as many closing records as connections.
    pub fn server(listener: Listener<R>) -> Self {
        let closing = Closing::new(listener.config().max_connections);
        Sessions::new(Some(listener), closing)
    }

    fn new(listener: Option<Listener<R>>, closing: Closing) -> Self {
        Sessions {
            slots: HashMap::new(),
            ready: Vec::new(),
            timers: BinaryHeap::new(),
            watched: Vec::new(),
            closed: Vec::new(),
            due: Vec::new(),
            listener,
            own: None,
            closing,
            busy: false,
            out: Vec::with_capacity(2048),
        }
    }

    /// A new connection, driven at the next round (and every round after, if it must be).
    fn insert(&mut self, cid: ConnectionId, cell: C, session: Session<R::Keys>) {
        let slot = Slot::new(cell, session);
        let watch = slot.wants_every_round(self.listener.is_none());
        self.slots.insert(cid, slot);
        self.enqueue(cid);
        if watch {
            self.watch(cid);
        }
    }

    /// Drives connection `cid` at the next round.
    fn enqueue(&mut self, cid: ConnectionId) {
        if let Some(slot) = self.slots.get_mut(&cid) {
            if !std::mem::replace(&mut slot.queued, true) {
                self.ready.push(cid);
            }
        }
    }

    fn watch(&mut self, cid: ConnectionId) {
        if let Some(slot) = self.slots.get_mut(&cid) {
            if !std::mem::replace(&mut slot.watched, true) {
                self.watched.push(cid);
            }
        }
    }

    /// The application changed connection `cid` (wrote, read, closed, let go of it): the next
    /// round drives it. Unknown ids are ignored (a connection that already left).
    pub fn poke(&mut self, cid: &ConnectionId) {
        self.enqueue(*cid);
    }

    fn is_client(&self) -> bool {
        self.listener.is_none()
    }

    /// Live connections (not those in their closing period).
    pub fn connections(&self) -> usize {
        self.slots.len()
    }

    /// No live connection and none closing: nothing will ever be sent again.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.closing.is_empty()
    }

    /// Closed connections in their closing period.
    pub fn closing(&self) -> usize {
        self.closing.len()
    }

    /// A connection had more to send than one batch in the last round: drive again at once.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    pub fn listener(&self) -> Option<&Listener<R>> {
        self.listener.as_ref()
    }

    /// New first messages are dropped from now on (the server is shutting down).
    pub fn stop_accepting(&mut self) {
        if let Some(l) = &mut self.listener {
            l.stop_accepting();
        }
    }

    pub fn cell(&self, cid: &ConnectionId) -> Option<&C> {
        self.slots.get(cid).map(|s| &s.cell)
    }

    pub fn cell_mut(&mut self, cid: &ConnectionId) -> Option<&mut C> {
        self.slots.get_mut(cid).map(|s| &mut s.cell)
    }

    pub fn session(&self, cid: &ConnectionId) -> Option<&Session<R::Keys>> {
        self.slots.get(cid).map(|s| &s.session)
    }

    /// When the next round has something to do: a connection's timer, a closing record's
    /// repeat or end, a half-open connection's expiry; at once ([`Instant::ZERO`]) for a
    /// connection not yet driven, poked, or with input or sends left over.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ready = (!self.ready.is_empty()).then_some(Instant::ZERO);
        // Every call that changes the table leaves a live entry on top ([`Self::settle_timers`]).
        let timer = self.timers.peek().map(|Reverse((t, _))| *t);
        let listener = self.listener.as_ref().and_then(Listener::poll_timeout);
        ready.into_iter().chain(timer).chain(self.closing.poll_timeout()).chain(listener).min()
    }

    /// Whether a heap entry still stands for its connection's timer.
    fn is_live(&self, &Reverse((t, cid)): &TimerEntry) -> bool {
        self.slots.get(&ConnectionId(cid)).is_some_and(|s| s.next_timeout == Some(t))
    }

    /// Drops the stale entries on top of the heap (so [`Self::poll_timeout`] reads a live
    /// one), and rebuilds the heap when stale entries make up most of it (each timer change
    /// adds an entry: under steady traffic they would pile up until their time came).
    fn settle_timers(&mut self) {
        if self.timers.len() > 2 * self.slots.len() + 64 {
            let live = self.slots.iter().filter_map(|(c, s)| s.next_timeout.map(|t| Reverse((t, c.0))));
            self.timers = live.collect();
        }
        while let Some(top) = self.timers.peek() {
            if self.is_live(top) {
                break;
            }
            self.timers.pop();
        }
    }

    /// A datagram came from `from` on socket `socket` (a server: 0).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        socket: usize,
        from: SocketAddr,
        data: &[u8],
        host: &mut impl Host<R::Keys, C>,
    ) {
        let Some(listener) = &mut self.listener else {
            let own = self.own.filter(|_| matches!(DatagramType::of(data), Some(DatagramType::Packet(_))));
            match own.or_else(|| DatagramType::of(data).and_then(|_| init_cid(data))) {
                Some(cid) => self.route(cid, now, socket, from, data, host),
                None if DatagramType::of(data).is_none() => host.dropped(now, from, Dropped::UnknownType),
                None => host.dropped(now, from, Dropped::Malformed),
            }
            return;
        };
        match listener.handle_datagram(now, from, data) {
            Incoming::Connection(cid) => self.route(cid, now, 0, from, data, host),
            Incoming::Accepted(new) => {
                let cid = new.cid;
                let (cell, session) = host.accept(now, *new);
                self.insert(cid, cell, session);
            }
            Incoming::Refused { hint } => {
                host.refused(now, from);
                host.send(now, SecureTransmit { path: 0, to: from, size: hint.len() }, &hint);
            }
            // Perhaps a connection this end closed, whose peer has not heard the CLOSE.
            Incoming::Dropped(Dropped::UnknownConnection) => self.answer_closing(now, data, host),
            Incoming::Dropped(why) => host.dropped(now, from, why),
        }
    }

    /// A datagram for connection `cid`, through its session to the core.
    fn route(
        &mut self,
        cid: ConnectionId,
        now: Instant,
        socket: usize,
        from: SocketAddr,
        data: &[u8],
        host: &mut impl Host<R::Keys, C>,
    ) {
        let Some(slot) = self.slots.get_mut(&cid) else {
            return self.answer_closing(now, data, host);
        };
        let r = slot.session.handle_datagram(&mut slot.cell.core(), now, socket, from, data);
        host.received(cid, &mut slot.cell, from, data.len(), r);
        if matches!(r, Received::Ignored | Received::Replayed) {
            return;
        }
        self.enqueue(cid);
        self.session_events(cid, now, host);
    }

    /// A datagram for a connection in its closing period: its CLOSE goes again, if
    /// [`Closing`] allows one now.
    fn answer_closing(&mut self, now: Instant, data: &[u8], host: &mut impl Host<R::Keys, C>) {
        let own = self.own.filter(|_| matches!(DatagramType::of(data), Some(DatagramType::Packet(_))));
        if self.closing.handle_datagram(now, own.or_else(|| init_cid(data))) {
            self.send_closing(now, host);
        }
    }

    fn send_closing(&mut self, now: Instant, host: &mut impl Host<R::Keys, C>) {
        while let Some(t) = self.closing.poll_transmit(&mut self.out) {
            host.send(now, t, &self.out[..t.size]);
        }
    }

    /// An ICMP port unreachable came back (on a send or a receive): a client's handshake under
    /// way ends with it. (Every connection is told: a client's table holds one.)
    pub fn handle_unreachable(&mut self, now: Instant, host: &mut impl Host<R::Keys, C>) {
        let cids: Vec<ConnectionId> = self.slots.keys().copied().collect();
        for cid in cids {
            if let Some(slot) = self.slots.get_mut(&cid) {
                slot.session.handle_unreachable();
            }
            self.session_events(cid, now, host);
        }
        self.settle_timers();
    }

    /// The security layer's events of connection `cid`, to the host; a failed handshake
    /// drops the connection.
    fn session_events(&mut self, cid: ConnectionId, now: Instant, host: &mut impl Host<R::Keys, C>) {
        let Some(slot) = self.slots.get_mut(&cid) else { return };
        let mut failed = false;
        while let Some(event) = slot.session.poll_event() {
            failed |= matches!(event, SessionEvent::Failed(_));
            host.session_event(cid, &mut slot.cell, now, event);
        }
        if !failed {
            return;
        }
        if let Some(slot) = self.slots.remove(&cid) {
            // Its heap entry goes stale; a queued id would make `poll_timeout` say "at once".
            if slot.queued {
                self.ready.retain(|c| *c != cid);
            }
            host.gone(cid, slot.cell, slot.session);
            self.settle_timers();
        }
    }

    /// One round at `now`: half-open connections expired, every connection that wants it
    /// driven, the closed ones retired into their closing period, and the CLOSEs due sent.
    pub fn handle_timeout(&mut self, now: Instant, host: &mut impl Host<R::Keys, C>) {
        self.busy = false;
        self.expire_half_open(now, host);
        self.collect_due(now);
        let mut due = std::mem::take(&mut self.due);
        for cid in due.drain(..) {
            self.drive(cid, now, host);
        }
        self.due = due;
        for cid in std::mem::take(&mut self.closed) {
            let Some(mut slot) = self.slots.remove(&cid) else { continue };
            if slot.queued {
                self.ready.retain(|c| *c != cid);
            }
            if let Some(close) = slot.session.take_close() {
                self.closing.insert(cid, close);
            }
            if let Some(l) = &mut self.listener {
                l.forget(cid);
            }
            host.gone(cid, slot.cell, slot.session);
        }
        self.settle_timers();
        self.closing.handle_timeout(now);
        self.send_closing(now, host);
    }

    /// The round's connections, into `self.due`: the queued ones, those whose timer is due,
    /// and the watched ones that still want every round; each once, none closed.
    fn collect_due(&mut self, now: Instant) {
        while let Some(&Reverse((t, cid))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let cid = ConnectionId(cid);
            // A stale entry (its connection's timer moved since, or the connection left)
            // drives nothing.
            if self.slots.get(&cid).is_some_and(|s| s.next_timeout == Some(t)) {
                self.enqueue(cid);
            }
        }
        let is_client = self.is_client();
        let mut watched = std::mem::take(&mut self.watched);
        watched.retain(|cid| {
            let Some(slot) = self.slots.get_mut(cid) else { return false };
            slot.watched = !slot.closed && slot.wants_every_round(is_client);
            if slot.watched && !std::mem::replace(&mut slot.queued, true) {
                self.ready.push(*cid);
            }
            slot.watched
        });
        self.watched = watched;
        let mut ready = std::mem::take(&mut self.ready);
        for cid in ready.drain(..) {
            if let Some(slot) = self.slots.get_mut(&cid) {
                slot.queued = false;
                if !slot.closed {
                    self.due.push(cid);
                }
            }
        }
        self.ready = ready;
    }

    fn expire_half_open(&mut self, now: Instant, host: &mut impl Host<R::Keys, C>) {
        let Some(listener) = &mut self.listener else { return };
        listener.handle_timeout(now);
        while let Some(ListenerEvent::HandshakeExpired(cid)) = listener.poll_event() {
            if let Some(slot) = self.slots.get_mut(&cid) {
                host.expired(cid);
                slot.closed = true;
                self.closed.push(cid);
            }
        }
    }

    /// One connection's round: the linger, whatever of its timers is due, its session's
    /// events, one batch of datagrams, then the core's events.
    fn drive(&mut self, cid: ConnectionId, now: Instant, host: &mut impl Host<R::Keys, C>) {
        let Some(slot) = self.slots.get_mut(&cid) else { return };
        slot.cell.clear_poke();
        if slot.established && slot.cell.is_released() {
            slot.session.let_go(now);
        }
        slot.session.handle_timeout(&mut slot.cell.core(), now);
        self.session_events(cid, now, host);
        self.transmit(cid, now, host);
        let Some(slot) = self.slots.get_mut(&cid) else { return };
        let news = host.core_events(cid, &mut slot.cell, now);
        if news.closed && !slot.closed {
            // Over only when its Closed event was taken here. A close the application made
            // since the events were taken left that event in the core and poked the
            // connection: the next round sends its CLOSE and takes the event.
            slot.closed = true;
            self.closed.push(cid);
        }
        slot.established |= news.connected;
        // A server's core may be up from the client's first message alone (its proposal,
        // PROTOCOL.md §13.2); the connection stays half-open, and expires as one, until a
        // packet sealed with the keys shows a client that read the answer at that address.
        if slot.established && !slot.counted && slot.session.peer_proven() {
            slot.counted = true;
            if let Some(l) = &mut self.listener {
                l.established(cid);
            }
        }
        if slot.closed {
            // A close the application made between the sends and the events left its CLOSE in
            // the core, and after this round nothing drives the connection again.
            self.transmit(cid, now, host);
            return;
        }
        let next = slot.session.poll_timeout(&slot.cell.core());
        // A timer that fired was popped from the heap: it goes back even when unchanged.
        let unchanged = slot.next_timeout == next && next.is_some_and(|t| t > now);
        slot.next_timeout = next;
        let watch = slot.wants_every_round(self.listener.is_none());
        if let Some(t) = next.filter(|_| !unchanged) {
            self.timers.push(Reverse((t, cid.0)));
        }
        if watch {
            self.watch(cid);
        }
    }

    /// Sends what the session has (its own datagrams, then the core's, sealed), at most one
    /// batch. A closed core's CLOSE is recorded by the session as it goes.
    fn transmit(&mut self, cid: ConnectionId, now: Instant, host: &mut impl Host<R::Keys, C>) {
        let Some(slot) = self.slots.get_mut(&cid) else { return };
        for _ in 0..SEND_BATCH {
            let t = slot.session.poll_transmit(&mut slot.cell.core(), now, &mut self.out);
            let Some(t) = t else { return };
            host.send(now, t, &self.out[..t.size]);
        }
        self.busy = true;
        self.enqueue(cid);
    }
}

#[cfg(test)]
mod tests;
