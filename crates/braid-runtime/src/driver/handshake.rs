//! The handshake's ends in the driver (PROTOCOL.md §13.2, §13.3). A server's datagrams go to
//! its [`Listener`](braid_proto::session::Listener), which decides admission and routing with
//! no I/O; here what it decided becomes the driver's: a routed datagram goes to its
//! connection's session, a new connection gets its handle, registry entry and qlog, a refusal
//! hint is sent, a drop is counted and logged, an expired half-open connection is forgotten.
//! The client's end on an ICMP refusal is here too. The repeats, the answer and the deadline
//! are the connection's [`Session`](braid_proto::session::Session)'s.

use std::net::SocketAddr;
use std::sync::Arc;

use braid_proto::session::{Dropped, Incoming, ListenerEvent, NewConnection, UnknownChoice};
use braid_proto::Instant;

use super::entry::Entry;
use super::{hex, Driver, Role};
use crate::crypto::PacketKeys;
use crate::limits::{Limit, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{Ended, Handle};
use crate::Error;

impl Driver {
    /// The client's connection attempt failed: report it and stop.
    pub(super) fn fail_client(&mut self, error: Error) {
        if let Role::Client { ready, .. } = &mut self.role {
            if let Some(r) = ready.take() {
                let _ = r.send(Err(error));
            }
        }
        for e in self.conns.values() {
            let mut s = e.handle.lock();
            s.ended.get_or_insert(Ended::Local);
        }
        self.conns.clear();
    }

    /// Server: a datagram on its socket, through the listener.
    pub(super) fn on_server_datagram(&mut self, data: &[u8], from: SocketAddr, now: Instant) {
        let Role::Server { listener, incoming, .. } = &mut self.role else { return };
        if incoming.is_closed() {
            listener.stop_accepting();
        }
        match listener.handle_datagram(now, from, data) {
            Incoming::Connection(_) => self.on_connection_datagram(0, data, from, now),
            Incoming::Accepted(new) => self.accept(*new, now),
            Incoming::Refused { hint } => {
                ServerCounters::add(&self.counters.handshakes_failed, 1);
                // No state kept; a 9-byte hint so a client with the wrong key can say so.
                tracing::debug!(%from, "handshake did not authenticate (wrong key, unknown client or stale): refused");
                self.send_raw(0, from, &hint, now);
            }
            // Perhaps a connection this end closed, whose peer has not heard the CLOSE.
            Incoming::Dropped(Dropped::UnknownConnection) => self.answer_closing(data, now),
            Incoming::Dropped(why) => self.on_dropped(why, from, now),
        }
    }

    /// What the listener dropped: counted, and logged when it says something about the
    /// server (a limit, a replay).
    fn on_dropped(&mut self, why: Dropped, from: SocketAddr, now: Instant) {
        let Role::Server { limits, .. } = &self.role else { return };
        match why {
            Dropped::ConnectionLimit => {
                self.limit_log.hit(&self.counters, Limit::MaxConnections, limits.max_connections as u64, now)
            }
            Dropped::RateLimited => {
                self.limit_log.hit(&self.counters, Limit::HandshakeRate, limits.handshake_rate.into(), now)
            }
            Dropped::Replayed => {
                ServerCounters::add(&self.counters.handshakes_replayed, 1);
                tracing::debug!(%from, "replayed handshake ignored");
            }
            Dropped::TooManyRecent => tracing::warn!(%from, "too many handshakes lately: handshake ignored"),
            Dropped::AnswerTooLarge => tracing::warn!(%from, "handshake answer would amplify: ignored"),
            Dropped::UnknownType => tracing::trace!("dropped a datagram of unknown type from {from}"),
            Dropped::Malformed | Dropped::UnknownConnection | Dropped::NotAccepting => {}
        }
    }

    /// Registers a connection the listener created; its session has the answer queued (sent
    /// at the next round).
    fn accept(&mut self, new: NewConnection<PacketKeys>, now: Instant) {
        let Role::Server { registry, qlog, .. } = &self.role else { return };
        let NewConnection { cid, from, mut core, session, hello, client_key, unknown } = new;
        log_unknown_choices(&unknown, from);
        let paths = session.paths();
        if qlog.is_some() {
            core.enable_trace();
        }
        let handle = Handle::for_core(core, paths, from, self.epoch, self.wake.clone());
        {
            let mut s = handle.lock();
            s.paths[0].remote = Some(from);
            s.paths[0].local = self.sockets[0].udp.local_addr().ok();
        }
        let mut entry = Entry::new(handle, session);
        if let Some(dir) = qlog {
            let first = entry.handle.lock().paths[..1].to_vec();
            entry.qlog = QlogWriter::open(dir, cid, true, now, &first);
        }
        registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cid, (Arc::downgrade(&entry.handle.shared), self.wake.clone()));
        self.conns.insert(cid, entry);
        ServerCounters::add(&self.counters.handshakes_accepted, 1);
        tracing::debug!(
            cid = %hex(&cid.0),
            %from,
            paths,
            mode = %hello.mode,
            cc = %hello.cc,
            scheduler = %hello.scheduler,
            client_key = %client_key.map_or_else(|| "psk".to_string(), |k| hex(&k)),
            "handshake authenticated"
        );
    }

    /// Server: half-open connections whose core handshake did not finish in time are dropped.
    pub(super) fn expire_half_open(&mut self, now: Instant) {
        let Role::Server { listener, .. } = &mut self.role else { return };
        listener.handle_timeout(now);
        while let Some(ListenerEvent::HandshakeExpired(cid)) = listener.poll_event() {
            if let Some(e) = self.conns.get_mut(&cid) {
                tracing::debug!(cid = %hex(&cid.0), "handshake never finished; forgotten");
                ServerCounters::add(&self.counters.handshakes_abandoned, 1);
                e.closed = true;
            }
        }
    }

    /// Client: an ICMP "port unreachable" (on a send or a read) goes to the session, which
    /// ends a handshake under way with it.
    pub(super) fn drive_client_handshake(&mut self, now: Instant) {
        let Role::Client { .. } = self.role else { return };
        if !std::mem::take(&mut self.refused) {
            return;
        }
        let cids: Vec<_> = self.conns.keys().copied().collect();
        for cid in cids {
            if let Some(e) = self.conns.get_mut(&cid) {
                e.session.handle_unreachable();
            }
            self.session_events(cid, now);
        }
    }
}

/// The client asked for a mode, controller or scheduler this server does not know: its own
/// mode, or the mode's default controller or scheduler, is used.
fn log_unknown_choices(unknown: &[UnknownChoice], from: SocketAddr) {
    for choice in unknown {
        match choice {
            UnknownChoice::Mode { error, using } => {
                tracing::warn!(%from, error = %error, using, "client's mode unknown")
            }
            UnknownChoice::Cc(e) => {
                tracing::warn!(%from, error = %e, "client's congestion controller unknown; the mode's is used")
            }
            UnknownChoice::Scheduler(e) => {
                tracing::warn!(%from, error = %e, "client's scheduler unknown; the mode's is used")
            }
        }
    }
}
