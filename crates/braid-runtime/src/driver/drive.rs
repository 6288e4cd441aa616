//! One round of the driver for its connections: which connections to drive, then for each the
//! orphan's linger, what its security layer has due (repeats, announcements, challenges, the
//! core's timer), its datagrams, and the core's events turned into the application's wake-ups.

use std::sync::Arc;
use std::time::Duration;

use braid_proto::streams::StreamEvent;
use braid_proto::wire::ConnectionId;
use braid_proto::{CloseReason, Event, Instant};

use super::entry::Entry;
use super::{Driver, Role};
use crate::connection::Connection;
use crate::emulate::EmulatedLink;
use crate::limits::{Limit, LimitLog, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{Ended, Shared, STREAM_SEND_BUFFER};

impl Driver {
    pub(super) fn drive_all(&mut self, now: Instant) {
        self.busy = false;
        self.drive_client_handshake(now);
        self.expire_half_open(now);
        let is_client = matches!(self.role, Role::Client { .. });
        let cids: Vec<ConnectionId> = self
            .conns
            .iter()
            .filter(|(_, e)| !e.closed && e.wants_drive(now, is_client))
            .map(|(c, _)| *c)
            .collect();
        for cid in cids {
            self.drive(cid, now);
        }
        let mut gone = Vec::new();
        let closing = &mut self.closing;
        self.conns.retain(|cid, e| {
            if e.closed {
                gone.push(*cid);
                if let Some(close) = e.session.take_close() {
                    closing.insert(*cid, close);
                }
            }
            !e.closed
        });
        self.closing.handle_timeout(now);
        self.send_closing(now);
        ServerCounters::set(&self.counters.connections_closing, self.closing.len() as u64);
        if let (false, Role::Server { registry, listener, .. }) = (gone.is_empty(), &mut self.role) {
            let mut registry = registry.lock().unwrap_or_else(|e| e.into_inner());
            for cid in gone {
                registry.remove(&cid);
                listener.forget(cid);
            }
        }
        self.flush_sends();
    }

    fn drive(&mut self, cid: ConnectionId, now: Instant) {
        let Some(e) = self.conns.get_mut(&cid) else { return };
        e.dirty = false;
        e.handle.poked.store(false, std::sync::atomic::Ordering::Release);
        let handle = e.handle.clone();
        // The application's handles are gone: the session finishes delivering, then closes.
        // (Two references: the entry's and `handle`; a server's connection counts once handed out.)
        if e.established && Arc::strong_count(&handle.shared) <= 2 {
            e.session.let_go(now);
        }
        {
            // The linger's close, the client's first message or its deadline, announcements,
            // challenges, the core's timer: whatever of them is due.
            let mut s = handle.lock();
            e.session.handle_timeout(&mut s.core, now);
        }
        self.session_events(cid, now);
        self.transmit(cid, &handle, now);
        #[cfg(test)]
        super::seam::hit(super::seam::Point::AfterSends, &handle);
        self.handle_events(cid);
        let Some(e) = self.conns.get_mut(&cid) else { return };
        if e.closed {
            // The application's close can land between the sends above and the events (it
            // takes the lock in between): its CLOSE frame is still in the core, and after this
            // round nothing drives the connection again.
            self.transmit(cid, &handle, now);
        } else {
            e.next_timeout = e.session.poll_timeout(&handle.lock().core);
        }
    }

    /// The core's events since the last round, turned into the application's wake-ups, the
    /// server's counters and the connection's end.
    fn handle_events(&mut self, cid: ConnectionId) {
        let now = self.now();
        let emulated = self.emulated_drops();
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let mut guard = e.handle.lock();
        let s = &mut *guard;
        let idle = Duration::from_millis(s.core.params().idle_timeout_ms);
        let (counters, role, limit_log) = (&self.counters, &self.role, &mut self.limit_log);
        let (connected, ended) = drain_events(s, e.qlog.as_mut(), now, |reason| {
            count_close(counters, role, limit_log, reason, now);
            Ended::from_close(reason, idle)
        });
        wake_ready(s, ended.is_some());
        for (p, d) in emulated.into_iter().enumerate() {
            if let Some(r) = s.paths.get_mut(p) {
                r.emulated_drops = d;
            }
        }
        if let Some(reason) = &ended {
            wake_all_on_end(s, reason);
        }
        let peer = s.paths[0].remote.map_or_else(|| "?".to_string(), |a| a.to_string());
        drop(guard);
        #[cfg(test)]
        super::seam::hit(super::seam::Point::AfterEvents, &e.handle);
        // Over only when its Closed event was taken here. A close the application made since
        // the events were taken (its lock comes between ours) left that event in the core and
        // poked the connection: the next round sends its CLOSE and takes the event, which ends
        // `Connection::closed`. Asking the core whether it is closed here would forget both.
        if ended.is_some() {
            e.closed = true;
        }
        if connected {
            hand_out(&mut self.role, cid, e, &peer);
        }
        if let Some(reason) = ended {
            report_end(&mut self.role, e, reason, &peer);
        }
    }

    /// Client: per path, the datagrams its emulated links dropped (shown in path reports).
    fn emulated_drops(&self) -> Vec<u64> {
        if !matches!(self.role, Role::Client { .. }) {
            return Vec::new();
        }
        let dropped = |l: &EmulatedLink| l.dropped_random + l.dropped_queue + l.dropped_mtu;
        self.sockets
            .iter()
            .map(|sock| sock.egress.as_ref().map_or(0, dropped) + sock.ingress.as_ref().map_or(0, dropped))
            .collect()
    }
}

/// Takes the core's events (each into the qlog file, if any): stream and accept wake-ups at
/// once, path news to the log; returns whether the connection came up, and how it ended
/// (`on_close` counts and names a close).
fn drain_events(
    s: &mut Shared,
    mut qlog: Option<&mut QlogWriter>,
    now: Instant,
    mut on_close: impl FnMut(&CloseReason) -> Ended,
) -> (bool, Option<Ended>) {
    let mut connected = false;
    let mut ended = None;
    if let Some(q) = qlog.as_deref_mut() {
        q.drain(&mut s.core);
    }
    while let Some(ev) = s.core.poll_event() {
        if let Some(q) = qlog.as_deref_mut() {
            q.core_event(now, &ev, &s.paths);
        }
        match ev {
            Event::Connected => connected = true,
            Event::Stream(StreamEvent::Opened(id)) => {
                s.incoming_streams.push_back(id);
                if let Some(w) = s.accept_waker.take() {
                    w.wake();
                }
            }
            Event::Stream(StreamEvent::Readable(id)) => {
                if let Some(w) = s.readers.remove(&id) {
                    w.wake();
                }
            }
            Event::Closed(reason) => ended = Some(on_close(&reason)),
            Event::PathFailed(path) => {
                tracing::info!(path, "path failed: no answer; its data goes on the others")
            }
            Event::PathRecovered(path) => tracing::info!(path, "path answers again"),
            Event::PathRemoved(path) => tracing::info!(path, "path removed"),
        }
    }
    (connected, ended)
}

/// The server's counters for a closed connection; a peer that broke a limit is logged with it.
fn count_close(
    counters: &ServerCounters,
    role: &Role,
    limit_log: &mut LimitLog,
    reason: &CloseReason,
    now: Instant,
) {
    if *reason == CloseReason::IdleTimeout {
        ServerCounters::add(&counters.connections_timed_out, 1);
    }
    if let CloseReason::Violation(why) = reason {
        ServerCounters::add(&counters.connections_violated, 1);
        if let (Some(limit), Role::Server { limits, .. }) = (Limit::from_violation(why), role) {
            let value = match limit {
                Limit::MaxStreams => limits.max_streams,
                _ => limits.connection_memory,
            };
            limit_log.hit(counters, limit, value, now);
        }
    }
    ServerCounters::add(&counters.connections_closed, 1);
}

/// Wakes the writers whose stream has room again, the tasks waiting for idle, and the datagram
/// reader when datagrams wait (or the connection ended).
fn wake_ready(s: &mut Shared, ended: bool) {
    if let Some(streams) = s.core.streams() {
        let ready: Vec<u64> =
            s.writers.keys().copied().filter(|id| streams.send_buffered(*id) < STREAM_SEND_BUFFER).collect();
        for id in ready {
            if let Some(w) = s.writers.remove(&id) {
                w.wake();
            }
        }
    }
    for w in s.idle_wakers.drain(..) {
        w.wake();
    }
    if s.core.has_datagrams() || ended {
        if let Some(w) = s.datagram_waker.take() {
            w.wake();
        }
    }
}

/// The connection ended: record why (the first reason stays) and wake every waiting task.
fn wake_all_on_end(s: &mut Shared, reason: &Ended) {
    if s.ended.is_none() {
        s.ended = Some(reason.clone());
    }
    for (_, w) in s.readers.drain().chain(s.writers.drain()) {
        w.wake();
    }
    if let Some(w) = s.accept_waker.take() {
        w.wake();
    }
}

/// The core's handshake finished: the client's `connect` returns; the server hands the
/// connection to `accept`.
fn hand_out(role: &mut Role, cid: ConnectionId, e: &mut Entry, peer: &str) {
    e.established = true;
    let handle = e.handle.clone();
    match role {
        Role::Client { ready, .. } => {
            if let Some(r) = ready.take() {
                let _ = r.send(Ok(()));
            }
        }
        Role::Server { incoming, listener, .. } => {
            listener.established(cid);
            tracing::info!(%peer, paths = e.session.paths(), "accepted a connection");
            let _ = incoming.send(Connection { handle });
        }
    }
}

/// Logs a connection's end with its statistics; a client still waiting in `connect` gets the
/// error.
fn report_end(role: &mut Role, e: &Entry, reason: Ended, peer: &str) {
    let s = e.handle.lock();
    tracing::debug!(
        %peer,
        reason = ?reason,
        paths = ?s.core.path_stats(),
        stats = ?s.core.stats,
        "connection ended"
    );
    drop(s);
    if let Role::Client { ready, .. } = role {
        if let Some(r) = ready.take() {
            let _ = r.send(Err(reason.error()));
        }
    }
}
