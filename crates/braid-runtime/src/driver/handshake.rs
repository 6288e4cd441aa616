//! The Noise handshake before the core's (PROTOCOL.md §13.2, §13.3): the client's first message,
//! repeated until answered, and the error it reports when none comes; the server's checks of a
//! first message (connection limit, handshake rate, authentication, replay) before it keeps any
//! state, and the connection it then creates with the client's mode, controller and scheduler.

use std::net::SocketAddr;
use std::sync::Arc;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::sched::SchedulerKind;
use braid_proto::session::{FirstMessage, PathAddress, Repeater};
use braid_proto::wire::ConnectionId;
use braid_proto::{ConnectionConfig, Instant};

use super::entry::Entry;
use super::{hex, Driver, Role};
use crate::crypto::{self, Accepted, ClientHandshake, Hello};
use crate::limits::{Limit, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{Ended, Handle};
use crate::Error;

/// The client's side of the Noise handshake, until it completes.
pub(super) struct ClientNoise {
    pub(super) noise: ClientHandshake,
    pub(super) repeat: Repeater,
    /// The server sent a refusal hint (unauthenticated: only changes the error message).
    pub(super) refused: bool,
    /// Key pairs (the refusal then names --server-key and --authorized).
    pub(super) pair: bool,
}

/// Most remembered first messages; beyond it (after forgetting the expired ones) new handshakes
/// wait (a flood of authenticated handshakes needs the key).
pub(super) const SEEN_INITS_LIMIT: usize = 100_000;

impl Driver {
    /// The client's connection attempt failed: report it and stop.
    fn fail_client(&mut self, error: Error) {
        if let Role::Client { ready, noise, .. } = &mut self.role {
            *noise = None;
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

    /// A client's first message (PROTOCOL.md §13.3): checked before any state is kept, then
    /// the connection it asks for is created and answered.
    pub(super) fn on_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = self.admit_init(data, from, now) else { return };
        let Role::Server { auth, .. } = &self.role else { return };
        let Some(accepted) = crypto::server_accept_with(auth, data) else {
            ServerCounters::add(&self.counters.handshakes_failed, 1);
            // No state kept; a 9-byte hint so a client with the wrong key can say so.
            tracing::debug!(%from, "handshake did not authenticate (wrong key, unknown client or stale): refused");
            if let Some(r) = crypto::refusal(data) {
                self.send_raw(0, from, &r, now);
            }
            return;
        };
        if !self.fresh_init(data, from, now) {
            return;
        }
        self.accept(cid, data, accepted, from, now);
    }

    /// The cheap checks of a first message, before any public-key work: a server still
    /// accepting, a well-formed first message, not one already answered (its answer was lost:
    /// the same answer again, never more bytes than came in), the connection limit and the
    /// handshake rate (a flood of first messages costs a lookup each). The connection id to
    /// create, if it passes.
    fn admit_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) -> Option<ConnectionId> {
        let Role::Server { limits, incoming, .. } = &self.role else { return None };
        if incoming.is_closed() {
            return None;
        }
        let cid = crypto::init_cid(data).filter(|_| crypto::is_init(data))?;
        if let Some(e) = self.conns.get(&cid) {
            if e.init == data {
                let response = e.response.clone();
                self.send_raw(0, from, &response, now);
            }
            return None;
        }
        if self.conns.len() >= limits.max_connections {
            self.limit_log.hit(&self.counters, Limit::MaxConnections, limits.max_connections as u64, now);
            return None;
        }
        if !self.handshakes.take(now) {
            self.limit_log.hit(&self.counters, Limit::HandshakeRate, limits.handshake_rate.into(), now);
            return None;
        }
        Some(cid)
    }

    /// An authenticated first message seen before (its ephemeral key) is a replay: ignored.
    fn fresh_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) -> bool {
        let ephemeral: [u8; 32] = data[9..41].try_into().expect("a first message is 1200 bytes");
        match self.seen_inits.insert(ephemeral, now) {
            FirstMessage::Fresh => true,
            FirstMessage::Replayed => {
                ServerCounters::add(&self.counters.handshakes_replayed, 1);
                tracing::debug!(%from, "replayed handshake ignored");
                false
            }
            FirstMessage::TooMany => {
                tracing::warn!(%from, "too many handshakes lately: handshake ignored");
                false
            }
        }
    }

    /// Creates the connection an authenticated first message asks for, registers it and sends
    /// the answer.
    fn accept(&mut self, cid: ConnectionId, data: &[u8], accepted: Accepted, from: SocketAddr, now: Instant) {
        let Role::Server { transport, registry, qlog, .. } = &self.role else { return };
        let config = client_choices(transport, &accepted.hello, from);
        let paths = usize::from(accepted.hello.paths);
        let mut core = braid_proto::Connection::server(config, now);
        if qlog.is_some() {
            core.enable_trace();
        }
        let handle = Handle::for_core(core, paths, from, self.epoch, self.wake.clone());
        {
            let mut s = handle.lock();
            s.paths[0].remote = Some(from);
            s.paths[0].local = self.sockets[0].udp.local_addr().ok();
        }
        // Path 0's address is validated by the handshake: the client's first core packet is
        // sealed with keys that need the answer sent to this address (RFC 9000 §8.1).
        let mut addresses = vec![PathAddress::default(); paths];
        addresses[0] = PathAddress::validated(from);
        let mut entry = Entry::new(handle, addresses, Some(accepted.keys), now);
        entry.init = data.to_vec();
        entry.response = accepted.response;
        if let Some(dir) = qlog {
            let first = entry.handle.lock().paths[..1].to_vec();
            entry.qlog = QlogWriter::open(dir, cid, true, now, &first);
        }
        let response = entry.response.clone();
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
            mode = %accepted.hello.mode,
            cc = %accepted.hello.cc,
            scheduler = %accepted.hello.scheduler,
            client_key = %accepted.client_key.map_or_else(|| "psk".to_string(), |k| hex(&k)),
            "handshake authenticated"
        );
        self.send_raw(0, from, &response, now);
    }

    pub(super) fn on_response(&mut self, data: &[u8], now: Instant) {
        let Role::Client { noise: Some(n), .. } = &mut self.role else { return };
        let Some(keys) = n.noise.on_response(data) else {
            if n.noise.is_spent() {
                let Role::Client { server, .. } = self.role else { return };
                self.fail_client(Error::HandshakeFailed(server));
            }
            return;
        };
        let Role::Client { noise, .. } = &mut self.role else { return };
        *noise = None;
        let Some(entry) = self.conns.values_mut().next() else { return };
        entry.keys = Some(keys);
        entry.dirty = true;
        entry.announcer.start(now);
        tracing::debug!("Noise handshake done");
    }

    pub(super) fn drive_client_handshake(&mut self, now: Instant) {
        let Role::Client { noise, deadline, server, timeout, .. } = &mut self.role else { return };
        if std::mem::take(&mut self.refused) && noise.is_some() {
            let server = *server;
            self.fail_client(Error::Refused(server));
            return;
        }
        let established = self.conns.values().next().is_some_and(|e| e.established);
        if !established && now >= *deadline && !self.conns.is_empty() {
            let error = if noise.as_ref().is_some_and(|n| n.refused && n.pair) {
                Error::NotAuthorized(*server)
            } else if noise.as_ref().is_some_and(|n| n.refused) {
                Error::WrongKey(*server)
            } else {
                Error::Unreachable { server: *server, after: *timeout }
            };
            self.fail_client(error);
            return;
        }
        let Some(n) = noise else { return };
        if !n.repeat.poll(now) {
            return;
        }
        let init = n.noise.init_datagram().to_vec();
        let server = *server;
        // An ICMP "port unreachable" shows up on a later send or read (`self.refused`).
        self.send_raw(0, server, &init, now);
    }
}

/// The server's transport with the client's choices from its first message: path count, mode,
/// congestion controller and scheduler (an unknown name is logged and the server's kept).
fn client_choices(transport: &ConnectionConfig, hello: &Hello, from: SocketAddr) -> ConnectionConfig {
    let mut config = transport.clone();
    config.paths = hello.paths;
    if !hello.mode.is_empty() {
        match hello.mode.parse::<Mode>() {
            Ok(m) => config.mode = m,
            Err(e) => tracing::warn!(%from, error = %e, using = config.mode.name(), "client's mode unknown"),
        }
    }
    if !hello.cc.is_empty() {
        match hello.cc.parse::<CcAlgorithm>() {
            Ok(c) => config.cc = Some(c),
            Err(e) => {
                tracing::warn!(%from, error = %e, "client's congestion controller unknown; the mode's is used")
            }
        }
    }
    if !hello.scheduler.is_empty() {
        match hello.scheduler.parse::<SchedulerKind>() {
            Ok(k) => config.scheduler = Some(k),
            Err(e) => tracing::warn!(%from, error = %e, "client's scheduler unknown; the mode's is used"),
        }
    }
    config
}
