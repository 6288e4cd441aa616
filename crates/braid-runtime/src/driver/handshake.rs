//! The Noise handshake before the core's (PROTOCOL.md §13.2, §13.3), as far as it is the
//! endpoint's: the server's checks of a first message (connection limit, handshake rate,
//! authentication, replay) before it keeps any state, and the connection it then creates with
//! the client's mode, controller and scheduler; the client's end on an ICMP refusal. The repeats,
//! the answer and the deadline are the connection's [`Session`]'s.

use std::net::SocketAddr;
use std::sync::Arc;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::sched::SchedulerKind;
use braid_proto::session::{FirstMessage, Session};
use braid_proto::wire::ConnectionId;
use braid_proto::{ConnectionConfig, Instant};

use super::entry::Entry;
use super::session::random;
use super::{hex, Driver, Role};
use crate::crypto::{self, Accepted, Hello};
use crate::limits::{Limit, ServerCounters};
use crate::qlog::QlogWriter;
use crate::shared::{Ended, Handle};
use crate::Error;

/// Most remembered first messages; beyond it (after forgetting the expired ones) new handshakes
/// wait (a flood of authenticated handshakes needs the key).
pub(super) const SEEN_INITS_LIMIT: usize = 100_000;

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
        if !self.fresh_init(accepted.fingerprint, from, now) {
            return;
        }
        self.accept(cid, data, accepted, from, now);
    }

    /// The cheap checks of a first message, before any public-key work: a server still
    /// accepting, a well-formed first message, not one for a connection that exists (its
    /// session answers a repeat with the same answer, never more bytes than came in), the
    /// connection limit and the handshake rate (a flood of first messages costs a lookup
    /// each). The connection id to create, if it passes.
    fn admit_init(&mut self, data: &[u8], from: SocketAddr, now: Instant) -> Option<ConnectionId> {
        let Role::Server { limits, incoming, .. } = &self.role else { return None };
        if incoming.is_closed() {
            return None;
        }
        let cid = crypto::init_cid(data).filter(|_| crypto::is_init(data))?;
        if self.conns.contains_key(&cid) {
            self.on_connection_datagram(0, data, from, now);
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
    fn fresh_init(&mut self, fingerprint: [u8; 32], from: SocketAddr, now: Instant) -> bool {
        match self.seen_inits.insert(fingerprint, now) {
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

    /// Creates the connection an authenticated first message asks for and registers it; its
    /// session has the answer queued (sent at the next round).
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
        let session = Session::server(accepted.keys, paths, data, accepted.response, from, random(), now);
        let mut entry = Entry::new(handle, session, now);
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
            mode = %accepted.hello.mode,
            cc = %accepted.hello.cc,
            scheduler = %accepted.hello.scheduler,
            client_key = %accepted.client_key.map_or_else(|| "psk".to_string(), |k| hex(&k)),
            "handshake authenticated"
        );
    }

    /// Client: an ICMP "port unreachable" (on a send or a read) during the handshake ends it.
    pub(super) fn drive_client_handshake(&mut self) {
        let Role::Client { server, .. } = self.role else { return };
        if std::mem::take(&mut self.refused) && self.conns.values().any(|e| e.session.is_handshaking()) {
            self.fail_client(Error::Refused(server));
        }
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
