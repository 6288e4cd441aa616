//! A connection's datagrams through its security layer
//! ([`Session`](braid_proto::session::Session)): what came in goes to the
//! session (which opens it, drops replays, follows addresses and feeds the core); what the
//! session has to send goes out on the path's socket; and what it reports becomes logs, qlog
//! path events, the paths' addresses the application sees, or the client's failure.

use braid_proto::session::{HandshakeFailure, Received, SessionEvent};
use braid_proto::wire::ConnectionId;
use braid_proto::Instant;

use super::{hex, Driver, Role, SEND_BATCH};
use crate::crypto;
use crate::shared::Handle;
use crate::Error;

/// The security layer of a connection, as the driver makes it: challenge tokens from the
/// system's randomness.
pub(super) fn random() -> braid_proto::session::Random {
    Box::new(super::random_u64)
}

impl Driver {
    /// A datagram for an existing connection (named by the connection id after its first
    /// byte): through its session to the core.
    pub(super) fn on_connection_datagram(
        &mut self,
        i: usize,
        data: &[u8],
        from: std::net::SocketAddr,
        now: Instant,
    ) {
        let Some(cid) = crypto::init_cid(data) else { return };
        let is_server = matches!(self.role, Role::Server { .. });
        let Some(e) = self.conns.get_mut(&cid) else {
            self.answer_closing(data, now);
            return;
        };
        let mut s = e.handle.lock();
        match e.session.handle_datagram(&mut s.core, now, i, from, data) {
            Received::Packet { path } => {
                let p = &mut s.paths[usize::from(path)];
                p.datagrams_received += 1;
                p.bytes_received += data.len() as u64;
            }
            Received::Unauthenticated => tracing::trace!("dropped an unauthenticated datagram from {from}"),
            Received::Control => {}
            Received::Ignored | Received::Replayed => return,
        }
        if is_server {
            for (p, path) in s.paths.iter_mut().enumerate() {
                path.remote = e.session.remote(p).or(path.remote);
            }
        }
        drop(s);
        e.dirty = true;
        self.session_events(cid, now);
    }

    /// A datagram for a connection this end closed, in its closing period: the peer has not
    /// heard the CLOSE, which goes again (if [`Closing`](braid_proto::session::Closing) allows
    /// one now).
    pub(super) fn answer_closing(&mut self, data: &[u8], now: Instant) {
        if self.closing.handle_datagram(now, data) {
            self.send_closing(now);
        }
    }

    /// Sends the closed connections' CLOSEs that are due (repeats and answers).
    pub(super) fn send_closing(&mut self, now: Instant) {
        let mut out = std::mem::take(&mut self.out);
        while let Some(t) = self.closing.poll_transmit(&mut out) {
            self.send_raw(self.socket_of(t.path), t.to, &out[..t.size], now);
        }
        self.out = out;
    }

    /// What the session reported: logs and qlog events; the client's failure ends it.
    pub(super) fn session_events(&mut self, cid: ConnectionId, now: Instant) {
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let mut failed = None;
        while let Some(event) = e.session.poll_event() {
            match event {
                SessionEvent::KeysReady => tracing::debug!("Noise handshake done"),
                SessionEvent::Failed(why) => failed = Some(why),
                SessionEvent::PathMoved { path, old, new, probation, announced } => {
                    let mut s = e.handle.lock();
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
                    if let Some(q) = &mut e.qlog {
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
        let Some(why) = failed else { return };
        let Role::Client { server, pair, timeout, .. } = self.role else { return };
        let error = match why {
            HandshakeFailure::AnswerRejected => Error::HandshakeFailed(server),
            HandshakeFailure::TimedOut { refused: true } if pair => Error::NotAuthorized(server),
            HandshakeFailure::TimedOut { refused: true } => Error::WrongKey(server),
            HandshakeFailure::TimedOut { refused: false } => Error::Unreachable { server, after: timeout },
            HandshakeFailure::PortUnreachable => Error::Refused(server),
        };
        self.fail_client(error);
    }

    /// Sends what the session has (its own datagrams, then the core's, sealed), at most one
    /// batch (then the connection is driven again soon).
    pub(super) fn transmit(&mut self, cid: ConnectionId, handle: &Handle, now: Instant) {
        let mut sent = 0;
        let mut out = std::mem::take(&mut self.out);
        while let Some(e) = self.conns.get_mut(&cid) {
            // A closed core's CLOSE is recorded by the session as it goes (`take_close`).
            let t = e.session.poll_transmit(&mut handle.lock().core, now, &mut out);
            let Some(t) = t else { break };
            self.send_raw(self.socket_of(t.path), t.to, &out[..t.size], now);
            sent += 1;
            if sent >= SEND_BATCH {
                self.busy = true;
                if let Some(e) = self.conns.get_mut(&cid) {
                    e.dirty = true;
                }
                break;
            }
        }
        self.out = out;
    }
}
