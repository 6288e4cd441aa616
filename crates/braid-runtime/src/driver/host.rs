//! The driver's side of its [`Sessions`] table ([`Host`]): what the table decided, turned into
//! I/O, the application's wake-ups, counters and logs. A datagram goes out on its path's
//! socket; a new server connection gets its handle, registry entry and qlog; the core's events
//! wake the application's tasks and hand a connection to `connect` or `accept`; the security
//! layer's reports become logs, qlog path events, the addresses the application sees, or the
//! client's failure.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use braid_proto::session::{
    CoreNews, Dropped, HandshakeFailure, Host, NewConnection, Received, SecureTransmit, Session, SessionEvent,
};
use braid_proto::wire::ConnectionId;
use braid_proto::{Event, Instant};

use super::conn::Conn;
use super::{Io, Role};
use crate::connection::Connection;
use crate::crypto::PacketKeys;
use crate::limits::ServerCounters;
use crate::qlog::QlogWriter;
use crate::shared::{Ended, Handle};
use crate::socket::PathSocket;
use crate::Error;

impl Host<PacketKeys, Conn> for Io {
    fn send(&mut self, now: Instant, t: SecureTransmit, data: &[u8]) {
        let socket = match self.role {
            Role::Client { .. } => usize::from(t.path),
            Role::Server { .. } => 0,
        };
        self.send_raw(socket, t.to, data, now);
    }

    fn core_events(&mut self, _: ConnectionId, conn: &mut Conn, now: Instant) -> CoreNews {
        #[cfg(test)]
        crate::seam::hit(crate::seam::Point::AfterSends, &conn.handle);
        let emulated = self.emulated_drops();
        let mut guard = conn.handle.lock();
        let s = &mut *guard;
        let idle = Duration::from_millis(s.core.params().idle_timeout_ms);
        let mut news = CoreNews::default();
        let mut ended = None;
        if let Some(q) = &mut conn.qlog {
            q.drain(&mut s.core);
        }
        while let Some(ev) = s.core.poll_event() {
            if let Some(q) = &mut conn.qlog {
                q.core_event(now, &ev, &s.paths);
            }
            news.note(&ev);
            if let Event::Closed(reason) = &ev {
                if let Role::Server { limits, .. } = &self.role {
                    self.limit_log.closed(&self.counters, limits, reason, now);
                }
                ended = Some(Ended::from_close(reason, idle));
            }
            s.wake_on(ev);
        }
        s.wake_ready(ended.is_some());
        for (p, d) in emulated.into_iter().enumerate() {
            if let Some(r) = s.paths.get_mut(p) {
                r.emulated_drops = d;
            }
        }
        if let Some(reason) = &ended {
            s.wake_all_on_end(reason);
        }
        let peer = s.paths[0].remote.map_or_else(|| "?".to_string(), |a| a.to_string());
        drop(guard);
        #[cfg(test)]
        crate::seam::hit(crate::seam::Point::AfterEvents, &conn.handle);
        if news.connected {
            self.hand_out(conn, &peer);
        }
        if let Some(reason) = ended {
            self.report_end(conn, reason, &peer);
        }
        news
    }

    fn accept(&mut self, now: Instant, new: NewConnection<PacketKeys>) -> (Conn, Session<PacketKeys>) {
        let NewConnection { cid, from, mut core, session, hello, client_key, unknown } = new;
        for choice in unknown {
            tracing::warn!(%from, "{choice}");
        }
        let paths = session.paths();
        let Role::Server { registry, qlog, .. } = &self.role else { unreachable!("only a server accepts") };
        if qlog.is_some() {
            core.enable_trace();
        }
        let handle = Handle::for_core(cid, core, paths, from, self.epoch, self.wake.clone());
        handle.lock().paths[0].local = self.sockets[0].udp.local_addr().ok();
        let qlog = qlog.as_ref().and_then(|dir| {
            let first = handle.lock().paths[..1].to_vec();
            QlogWriter::open(dir, cid, true, now, &first)
        });
        registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cid, (Arc::downgrade(&handle.shared), handle.poke.clone()));
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
        (Conn { handle, qlog }, session)
    }

    fn received(&mut self, _: ConnectionId, conn: &mut Conn, from: SocketAddr, len: usize, r: Received) {
        match r {
            Received::Packet { path } => {
                let mut s = conn.handle.lock();
                let p = &mut s.paths[usize::from(path)];
                p.datagrams_received += 1;
                p.bytes_received += len as u64;
            }
            Received::Unauthenticated => tracing::trace!("dropped an unauthenticated datagram from {from}"),
            Received::Control | Received::Ignored | Received::Replayed => {}
        }
    }

    fn session_event(&mut self, cid: ConnectionId, conn: &mut Conn, now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::KeysReady => tracing::debug!("Noise handshake done"),
            SessionEvent::Failed(why) => self.fail_client(conn, why),
            SessionEvent::PathMoved { path, old, new, probation, announced } => {
                if announced {
                    tracing::debug!(cid = %hex(&cid.0), path, %new, "path announced");
                } else if let Some(old) = old {
                    tracing::info!(cid = %hex(&cid.0), path, %old, %new, "peer moved");
                }
                if probation {
                    tracing::debug!(
                        "path {path}: challenging {new} before sending it more than {}x what it sent",
                        braid_proto::session::AMPLIFICATION
                    );
                }
                let mut s = conn.handle.lock();
                let s = &mut *s;
                if let Some(report) = s.paths.get_mut(usize::from(path)) {
                    report.remote = Some(new);
                }
                if let Some(q) = &mut conn.qlog {
                    // What the core traced before this datagram goes first (times in order).
                    q.drain(&mut s.core);
                    let what = if announced { "active" } else { "moved" };
                    q.path(now, path, what, s.paths[usize::from(path)].local, Some(new));
                }
            }
            SessionEvent::AddressValidated { path, addr } => {
                tracing::debug!(cid = %hex(&cid.0), path, %addr, "new address validated (challenge answered)")
            }
        }
    }

    fn refused(&mut self, _: Instant, from: SocketAddr) {
        ServerCounters::add(&self.counters.handshakes_failed, 1);
        // No state kept; a 9-byte hint so a client with the wrong key can say so.
        tracing::debug!(%from, "handshake did not authenticate (wrong key, unknown client or stale): refused");
    }

    fn dropped(&mut self, now: Instant, from: SocketAddr, why: Dropped) {
        match &self.role {
            Role::Server { limits, .. } => self.limit_log.dropped(&self.counters, limits, why, from, now),
            Role::Client { .. } if why == Dropped::UnknownType => {
                tracing::trace!("dropped a datagram of unknown type from {from}")
            }
            Role::Client { .. } => {}
        }
    }

    fn expired(&mut self, cid: ConnectionId) {
        tracing::debug!(cid = %hex(&cid.0), "handshake never finished; forgotten");
        ServerCounters::add(&self.counters.handshakes_abandoned, 1);
    }

    fn gone(&mut self, cid: ConnectionId, _: Conn, _: Session<PacketKeys>) {
        if let Role::Server { registry, .. } = &self.role {
            registry.lock().unwrap_or_else(|e| e.into_inner()).remove(&cid);
        }
    }
}

impl Io {
    /// Client: per path, the datagrams its emulated links dropped (shown in path reports).
    fn emulated_drops(&self) -> Vec<u64> {
        match self.role {
            Role::Client { .. } => self.sockets.iter().map(PathSocket::emulated_drops).collect(),
            Role::Server { .. } => Vec::new(),
        }
    }

    /// The core's handshake finished: the client's `connect` returns; the server hands the
    /// connection to `accept`.
    fn hand_out(&mut self, conn: &Conn, peer: &str) {
        match &mut self.role {
            Role::Client { ready, .. } => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Ok(()));
                }
            }
            Role::Server { incoming, .. } => {
                let paths = conn.handle.lock().paths.len();
                tracing::info!(%peer, paths, "accepted a connection");
                let _ = incoming.send(Connection { handle: conn.handle.clone() });
            }
        }
    }

    /// Logs a connection's end with its statistics; a client still waiting in `connect` gets
    /// the error.
    fn report_end(&mut self, conn: &Conn, reason: Ended, peer: &str) {
        let s = conn.handle.lock();
        tracing::debug!(%peer, reason = ?reason, paths = ?s.core.path_stats(), stats = ?s.core.stats, "connection ended");
        drop(s);
        if let Role::Client { ready, .. } = &mut self.role {
            if let Some(r) = ready.take() {
                let _ = r.send(Err(reason.error()));
            }
        }
    }

    /// The client's handshake failed: `connect` gets the error (the table drops the
    /// connection).
    fn fail_client(&mut self, conn: &Conn, why: HandshakeFailure) {
        let Role::Client { server, pair, timeout, ready } = &mut self.role else { return };
        let error = Error::handshake_failed(why, *server, *pair, *timeout);
        if let Some(r) = ready.take() {
            let _ = r.send(Err(error));
        }
        conn.handle.lock().ended.get_or_insert(Ended::Local);
    }
}

/// A connection id for logs.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
