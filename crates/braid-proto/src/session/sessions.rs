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
    closing: Closing,
    busy: bool,
    out: Vec<u8>,
}

impl<R: Responder, C: CoreCell> Sessions<R, C> {
    /// A client's table: its one connection, its first message sent at the first round.
    pub fn client(cid: ConnectionId, cell: C, session: Session<R::Keys>) -> Self {
        let mut table = Sessions::new(None, Closing::new(1));
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
            match DatagramType::of(data).and_then(|_| init_cid(data)) {
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
        if self.closing.handle_datagram(now, data) {
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
        if news.connected {
            slot.established = true;
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
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
    use crate::session::{Hello, ListenerConfig, LINGER};
    use crate::ConnectionConfig;

    const ONE_WAY: Duration = Duration::from_millis(10);

    fn client_addr() -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 2], 1000))
    }

    fn server_addr() -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], 443))
    }

    /// A core in a plain field, with the application's side as two flags.
    struct Cell {
        core: Connection,
        poked: bool,
        released: bool,
    }

    impl CoreCell for Cell {
        type Guard<'a> = &'a mut Connection;
        fn core(&mut self) -> &mut Connection {
            &mut self.core
        }
        fn clear_poke(&mut self) {
            self.poked = false;
        }
        fn is_released(&self) -> bool {
            self.released
        }
    }

    /// One end's I/O: what it sent (to arrive `ONE_WAY` later) and what the table told it.
    #[derive(Default)]
    struct Io {
        wire: Vec<(Instant, SocketAddr, Vec<u8>)>,
        /// Every datagram sent.
        sent: Vec<Vec<u8>>,
        driven: Vec<ConnectionId>,
        news: Vec<(ConnectionId, CoreNews)>,
        gone: Vec<ConnectionId>,
        expired: Vec<ConnectionId>,
        failed: bool,
    }

    impl Host<InsecureKeys, Cell> for Io {
        fn send(&mut self, now: Instant, t: SecureTransmit, data: &[u8]) {
            self.wire.push((now + ONE_WAY, t.to, data[..t.size].to_vec()));
            self.sent.push(data[..t.size].to_vec());
        }
        fn core_events(&mut self, cid: ConnectionId, cell: &mut Cell, _now: Instant) -> CoreNews {
            self.driven.push(cid);
            let mut news = CoreNews::default();
            while let Some(e) = cell.core.poll_event() {
                news.note(&e);
            }
            if news != CoreNews::default() {
                self.news.push((cid, news));
            }
            news
        }
        fn accept(
            &mut self,
            _now: Instant,
            new: NewConnection<InsecureKeys>,
        ) -> (Cell, Session<InsecureKeys>) {
            (Cell { core: new.core, poked: false, released: false }, new.session)
        }
        fn session_event(&mut self, _: ConnectionId, _: &mut Cell, _: Instant, event: SessionEvent) {
            self.failed |= matches!(event, SessionEvent::Failed(_));
        }
        fn expired(&mut self, cid: ConnectionId) {
            self.expired.push(cid);
        }
        fn gone(&mut self, cid: ConnectionId, _: Cell, _: Session<InsecureKeys>) {
            self.gone.push(cid);
        }
    }

    type Table = Sessions<InsecureResponder, Cell>;

    /// The application's poke: the flag its cell clears when driven, and the table told.
    fn poke(table: &mut Table, cid: ConnectionId) {
        table.cell_mut(&cid).unwrap().poked = true;
        table.poke(&cid);
    }
    type Loss = Box<dyn FnMut(bool, &[u8]) -> bool>;

    /// A client and a server table on a virtual clock; `lose` drops a datagram as it leaves
    /// (`true`: towards the server).
    struct Net {
        now: Instant,
        client: Table,
        client_io: Io,
        cid: ConnectionId,
        server: Table,
        server_io: Io,
        lose: Loss,
    }

    impl Net {
        fn new(handshake_timeout: Duration) -> Net {
            let core = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1);
            let cid = core.cid();
            let hello = Hello { paths: 1, ..Hello::default() };
            let initiator = InsecureInitiator::new(5, cid, &hello, 9, 0);
            let session = Session::client(
                Box::new(initiator),
                1,
                server_addr(),
                Duration::from_secs(5),
                Box::new(|| 1),
                Instant::ZERO,
            );
            let cell = Cell { core, poked: false, released: false };
            let config = ListenerConfig { handshake_timeout, ..ListenerConfig::default() };
            let listener = Listener::new(
                InsecureResponder { secret: 5 },
                config,
                ConnectionConfig::default(),
                Box::new(|| Box::new(|| 3)),
                Instant::ZERO,
            );
            Net {
                now: Instant::ZERO,
                client: Sessions::client(cid, cell, session),
                client_io: Io::default(),
                cid,
                server: Sessions::server(listener),
                server_io: Io::default(),
                lose: Box::new(|_, _| false),
            }
        }

        /// Delivers what is due, then a round on each side.
        fn round(&mut self) {
            let now = self.now;
            for to_server in [true, false] {
                let io = if to_server { &mut self.client_io } else { &mut self.server_io };
                let (due, later): (Vec<_>, Vec<_>) = io.wire.drain(..).partition(|d| d.0 <= now);
                io.wire = later;
                for (_, _, bytes) in due {
                    if (self.lose)(to_server, &bytes) {
                        continue;
                    }
                    if to_server {
                        self.server.handle_datagram(now, 0, client_addr(), &bytes, &mut self.server_io);
                    } else {
                        self.client.handle_datagram(now, 0, server_addr(), &bytes, &mut self.client_io);
                    }
                }
            }
            self.client.handle_timeout(now, &mut self.client_io);
            self.server.handle_timeout(now, &mut self.server_io);
        }

        fn next(&self) -> Option<Instant> {
            let wire = self.client_io.wire.iter().chain(&self.server_io.wire).map(|d| d.0);
            let t = wire.chain(self.client.poll_timeout()).chain(self.server.poll_timeout()).min()?;
            Some(t.max(self.now + Duration::from_micros(1)))
        }

        fn run(&mut self, until: Duration, mut done: impl FnMut(&mut Net) -> bool) {
            self.round();
            while !done(self) {
                let Some(t) = self.next().filter(|t| *t <= Instant::ZERO + until) else { break };
                self.now = t;
                self.round();
            }
        }

        fn server_core(&mut self) -> Option<&mut Connection> {
            let cid = self.cid;
            self.server.cell_mut(&cid).map(|c| &mut c.core)
        }

        fn up(&mut self) -> bool {
            let cid = self.cid;
            let client = self.client.cell(&cid).is_some_and(|c| c.core.is_established());
            client && self.server_core().is_some_and(|c| c.is_established())
        }
    }

    /// The first message lost once: the client repeats it, the server admits it, and both
    /// tables see the core come up; the server's connection no longer counts as half-open.
    #[test]
    fn a_handshake_through_both_tables_survives_a_lost_first_message() {
        let mut net = Net::new(Duration::from_secs(10));
        let mut lost = 0;
        net.lose = Box::new(move |to_server, d| {
            let first = to_server && DatagramType::of(d) == Some(DatagramType::NoiseInit) && lost == 0;
            lost += usize::from(first);
            first
        });
        net.run(Duration::from_secs(3), Net::up);
        assert!(net.up(), "up by {:?}", net.now);
        assert!(net.now > Instant::ZERO + Duration::from_millis(100), "after a repeat: {:?}", net.now);
        let listener = net.server.listener().unwrap();
        assert_eq!((listener.connections(), listener.half_open()), (1, 0));
        let connected = |io: &Io| io.news.iter().filter(|(_, n)| n.connected).count();
        assert_eq!((connected(&net.client_io), connected(&net.server_io)), (1, 1));
    }

    /// A connection that closes is retired: the table keeps only its CLOSE, the listener frees
    /// its place, and a datagram the peer sends after is answered with the same CLOSE.
    #[test]
    fn a_closed_connection_is_retired_and_its_close_answered() {
        let mut net = Net::new(Duration::from_secs(10));
        net.run(Duration::from_secs(1), Net::up);
        let cid = net.cid;
        net.client.cell_mut(&cid).unwrap().core.close(0, "bye");
        poke(&mut net.client, cid);
        net.round();
        // The client's CLOSE is lost: the server's connection stays up.
        net.client_io.wire.clear();
        assert_eq!((net.client.connections(), net.client.closing()), (0, 1));
        assert_eq!(net.client_io.gone, [cid]);
        let close = net.client_io.sent.last().expect("the CLOSE left").clone();
        // The server's next datagram finds only the closing record, which answers it.
        let streams = net.server_core().unwrap().streams().unwrap();
        let id = streams.open().unwrap();
        streams.write(id, b"late").unwrap();
        poke(&mut net.server, cid);
        net.run(Duration::from_secs(5), |n| n.server_core().is_none());
        assert!(net.server_core().is_none(), "the server heard a CLOSE and retired its connection");
        assert_eq!(net.server.listener().unwrap().connections(), 0);
        let again = net.client_io.sent.iter().filter(|d| **d == close).count();
        assert!(again >= 2, "the same CLOSE went again ({again} in all)");
    }

    /// A server's connection whose client goes silent after its first message is expired by
    /// the listener and leaves the table.
    #[test]
    fn a_half_open_connection_expires() {
        let mut net = Net::new(Duration::from_secs(2));
        let mut first = true;
        net.lose = Box::new(move |to_server, _| !std::mem::take(&mut first) || !to_server);
        net.run(Duration::from_secs(4), |n| !n.server_io.gone.is_empty());
        assert_eq!(net.server_io.expired, [net.cid]);
        assert_eq!(net.server_io.gone, [net.cid]);
        assert_eq!(net.server.connections(), 0);
        assert_eq!(net.server.listener().unwrap().connections(), 0);
        assert_eq!(
            net.now,
            Instant::ZERO + ONE_WAY + Duration::from_secs(2),
            "its first message came at 10 ms"
        );
    }

    /// The application lets go of an established connection: it closes at once when nothing is
    /// left to deliver, and the peer hears it.
    #[test]
    fn a_released_connection_closes() {
        let mut net = Net::new(Duration::from_secs(10));
        net.run(Duration::from_secs(1), Net::up);
        let cid = net.cid;
        net.server.cell_mut(&cid).unwrap().released = true;
        net.server.poke(&cid);
        let at = net.now;
        net.run(Duration::from_secs(5), |n| n.client.connections() == 0 && n.server.connections() == 0);
        assert!(net.now < at + LINGER, "closed at once, not after the linger: {:?}", net.now);
        assert!(net.server_io.news.iter().any(|(_, n)| n.closed));
        assert!(net.client_io.news.iter().any(|(_, n)| n.closed), "the client heard the CLOSE");
    }

    /// Only connections with something to do are driven: input, the application's poke, an
    /// expired timer; an idle connection is left alone.
    #[test]
    fn only_connections_with_something_to_do_are_driven() {
        let mut net = Net::new(Duration::from_secs(10));
        net.run(Duration::from_secs(1), Net::up);
        net.run(Duration::from_secs(2), |n| n.client_io.wire.is_empty() && n.server_io.wire.is_empty());
        let cid = net.cid;
        let next = net.server.poll_timeout().expect("the core's idle or keep-alive timer");
        let before = net.server_io.driven.len();
        let early = next - Duration::from_micros(1);
        net.server.handle_timeout(early, &mut net.server_io);
        assert_eq!(net.server_io.driven.len(), before, "nothing arrived, nothing due");
        poke(&mut net.server, cid);
        net.server.handle_timeout(early, &mut net.server_io);
        assert_eq!(net.server_io.driven.len(), before + 1, "the application wrote");
        assert!(!net.server.cell_mut(&cid).unwrap().poked, "the poke was taken");
        net.server.handle_timeout(next, &mut net.server_io);
        assert_eq!(net.server_io.driven.len(), before + 2, "timer due");
    }

    /// A client whose handshake gets ICMP port unreachable fails and leaves its table.
    #[test]
    fn port_unreachable_fails_the_client_handshake() {
        let mut net = Net::new(Duration::from_secs(10));
        net.lose = Box::new(|_, _| true);
        net.round();
        net.client.handle_unreachable(net.now, &mut net.client_io);
        assert!(net.client_io.failed);
        assert!(net.client.is_empty());
        assert_eq!(net.client_io.gone, [net.cid]);
    }

    /// What a round must drive, computed the way a full scan would: queued, timer due, or
    /// asked every round; none closed.
    fn scan_due(table: &Table, now: Instant) -> Vec<ConnectionId> {
        let is_client = table.is_client();
        let mut due: Vec<ConnectionId> = (table.slots.iter())
            .filter(|(_, s)| {
                !s.closed
                    && (s.queued
                        || s.next_timeout.is_some_and(|t| t <= now)
                        || s.wants_every_round(is_client))
            })
            .map(|(c, _)| *c)
            .collect();
        due.sort_by_key(|c| c.0);
        due
    }

    /// `poll_timeout` the way a full scan would compute it.
    fn scan_timeout(table: &Table) -> Option<Instant> {
        let slots =
            table.slots.values().filter_map(|s| if s.queued { Some(Instant::ZERO) } else { s.next_timeout });
        let listener = table.listener.as_ref().and_then(Listener::poll_timeout);
        slots.chain(table.closing.poll_timeout()).chain(listener).min()
    }

    /// Many clients on one server over lossy, reordering links, the applications writing,
    /// reading and closing at random: every server round drives exactly the connections a
    /// scan of the whole table would pick, `poll_timeout` says what a scan would, and the
    /// timer heap stays within its bound.
    #[test]
    fn the_ready_queue_and_timer_heap_drive_what_a_full_scan_would() {
        const CLIENTS: usize = 12;
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let listener = Listener::new(
            InsecureResponder { secret: 5 },
            ListenerConfig { handshake_rate: 1000, ..ListenerConfig::default() },
            ConnectionConfig::default(),
            Box::new(|| Box::new(|| 3)),
            Instant::ZERO,
        );
        let mut server = Table::server(listener);
        let mut server_io = Io::default();
        let addr = |i: usize| SocketAddr::from(([192, 0, 2, 2], 1000 + i as u16));
        let mut clients: Vec<(Table, Io, ConnectionId)> = (0..CLIENTS)
            .map(|i| {
                let core = Connection::client(ConnectionConfig::default(), Instant::ZERO, 10 + i as u64);
                let cid = core.cid();
                let hello = Hello { paths: 1, ..Hello::default() };
                let initiator = InsecureInitiator::new(5, cid, &hello, 20 + i as u64, 0);
                let timeout = Duration::from_secs(5);
                let session = Session::client(
                    Box::new(initiator),
                    1,
                    server_addr(),
                    timeout,
                    Box::new(|| 1),
                    Instant::ZERO,
                );
                let cell = Cell { core, poked: false, released: false };
                (Sessions::client(cid, cell, session), Io::default(), cid)
            })
            .collect();
        let mut now = Instant::ZERO;
        let mut driven_total = 0;
        for step in 0..4000u32 {
            // Datagrams due arrive (some lost), in a random order.
            let mut arrivals = Vec::new();
            for (i, (_, io, _)) in clients.iter_mut().enumerate() {
                let (due, later): (Vec<_>, Vec<_>) = io.wire.drain(..).partition(|d| d.0 <= now);
                io.wire = later;
                arrivals.extend(due.into_iter().map(|d| (i, d.2)));
            }
            for i in (1..arrivals.len()).rev() {
                arrivals.swap(i, rand() as usize % (i + 1));
            }
            for (i, d) in arrivals {
                if rand() % 10 != 0 {
                    server.handle_datagram(now, 0, addr(i), &d, &mut server_io);
                    assert_eq!(server.poll_timeout(), scan_timeout(&server));
                }
            }
            // The applications: a write now and then, a close late in the run.
            for (i, (table, _, cid)) in clients.iter_mut().enumerate() {
                let Some(cell) = table.cell_mut(cid) else { continue };
                if step > 2500 && rand() % 1500 == 0 {
                    cell.core.close(0, "done");
                    poke(table, *cid);
                } else if let Some(streams) = cell.core.streams().filter(|_| rand() % 7 == i as u64 % 7) {
                    let id = match streams.open() {
                        Ok(id) => id,
                        Err(_) => continue,
                    };
                    let _ = streams.write(id, &[i as u8; 900]);
                    let _ = streams.finish(id);
                    poke(table, *cid);
                }
            }
            // The server's applications read what came and sometimes poke without cause.
            let cids: Vec<ConnectionId> = server.slots.keys().copied().collect();
            for cid in cids {
                if rand() % 5 == 0 {
                    poke(&mut server, cid);
                }
            }
            let expected = scan_due(&server, now);
            let before = server_io.driven.len();
            server.handle_timeout(now, &mut server_io);
            let mut driven = server_io.driven[before..].to_vec();
            driven.sort_by_key(|c| c.0);
            assert_eq!(driven, expected, "step {step} at {now:?}");
            driven_total += driven.len();
            assert_eq!(server.poll_timeout(), scan_timeout(&server), "step {step}");
            assert!(
                server.timers.len() <= 2 * server.slots.len() + 64 + CLIENTS,
                "heap {}",
                server.timers.len()
            );
            // The server's datagrams, to their client (some lost); the clients' rounds.
            for (at, to, d) in server_io.wire.drain(..) {
                let i = usize::from(to.port() - 1000);
                if at <= now + ONE_WAY && rand() % 10 != 0 {
                    let (table, io, _) = &mut clients[i];
                    table.handle_datagram(now, 0, server_addr(), &d, io);
                }
            }
            for (table, io, _) in &mut clients {
                table.handle_timeout(now, io);
            }
            // Time moves to the next thing due, or by a little (some steps land on nothing).
            let next = clients.iter().filter_map(|c| c.0.poll_timeout()).chain(server.poll_timeout()).min();
            let jump = Duration::from_micros(50 + rand() % 3000);
            now = next.filter(|t| *t > now).map_or(now + jump, |t| t.min(now + jump));
        }
        let up = clients.iter().filter(|c| c.1.news.iter().any(|(_, n)| n.connected)).count();
        assert_eq!(up, CLIENTS, "every client came up");
        assert!(driven_total > 5000, "the server drove {driven_total} connection rounds");
    }
}
