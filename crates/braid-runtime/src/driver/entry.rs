//! One connection as the driver keeps it: the core's shared state, its security layer
//! ([`Session`]: keys, replay windows, where each path's packets go, announcements), and
//! whether this round must drive it.

use std::sync::Arc;

use braid_proto::session::Session;
use braid_proto::Instant;

use crate::crypto::PacketKeys;
use crate::qlog::QlogWriter;
use crate::shared::Handle;

/// Driver-private state of one connection.
pub(super) struct Entry {
    pub(super) handle: Handle,
    /// The security layer around the core (the core itself is in `handle`, beside the
    /// application's state).
    pub(super) session: Session<PacketKeys>,
    pub(super) established: bool,
    pub(super) closed: bool,
    /// The session's `poll_timeout` after the last drive (the core's timer among the others;
    /// asking it is not free).
    pub(super) next_timeout: Option<Instant>,
    /// Something arrived for this connection, or it had more to send than one batch: drive it
    /// at the next round (the others wait for their timer or the application).
    pub(super) dirty: bool,
    /// The connection's qlog file (`--qlog DIR`).
    pub(super) qlog: Option<QlogWriter>,
}

impl Entry {
    /// Whether this round must drive the connection: input, a poke from the application, an
    /// expired timer (the session's: the core's, a repeat, an announcement's, a challenge's,
    /// the linger's), a client's handshake, or an orphaned connection on its way out. (A
    /// server's half-open connection expires by its listener.)
    pub(super) fn wants_drive(&self, now: Instant, is_client: bool) -> bool {
        self.dirty
            || self.handle.poked.load(std::sync::atomic::Ordering::Acquire)
            || self.next_timeout.is_some_and(|t| t <= now)
            || (!self.established && is_client)
            // Only the entry's own reference left: the application let go.
            || (self.established && Arc::strong_count(&self.handle.shared) <= 1)
    }

    pub(super) fn new(handle: Handle, session: Session<PacketKeys>) -> Entry {
        Entry {
            handle,
            session,
            established: false,
            closed: false,
            next_timeout: None,
            dirty: true,
            qlog: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use braid_proto::ConnectionConfig;
    use tokio::sync::Notify;

    use super::*;
    use crate::crypto::{server_accept, ClientHandshake, Hello, Key};

    /// A server entry with a fresh core, as the listener makes one.
    fn entry(now: Instant) -> Entry {
        let key = Key([3; 32]);
        let first = ClientHandshake::new(
            &key,
            braid_proto::wire::ConnectionId([1; 8]),
            &Hello { paths: 1, ..Hello::default() },
        );
        let a = server_accept(&key, first.init_datagram()).expect("the same key");
        let from = "127.0.0.1:9".parse().unwrap();
        let session =
            Session::server(a.keys, 1, first.init_datagram(), a.response, from, Box::new(|| 0), now);
        let core = braid_proto::Connection::server(ConnectionConfig::default(), now);
        let handle = Handle::for_core(
            core,
            1,
            "127.0.0.1:9".parse().unwrap(),
            tokio::time::Instant::now(),
            Arc::new(Notify::new()),
        );
        Entry::new(handle, session)
    }

    /// The server drives a connection only when something asks for it: input, the application,
    /// or a timer that has expired; an idle connection is left alone.
    #[test]
    fn only_connections_with_something_to_do_are_driven() {
        let t0 = Instant::from_micros(1_000_000);
        let mut e = entry(t0);
        assert!(e.wants_drive(t0, false), "a new entry has its first datagram to handle");
        e.dirty = false;
        e.established = true;
        let app = e.handle.clone(); // the application's handle (not orphaned)
        let later = t0 + Duration::from_secs(20);
        assert!(!e.wants_drive(later, false), "nothing arrived, nothing due");
        app.poke();
        assert!(e.wants_drive(later, false), "the application wrote");
        e.handle.poked.store(false, std::sync::atomic::Ordering::Release);
        e.next_timeout = Some(later);
        assert!(!e.wants_drive(later - Duration::from_micros(1), false), "timer not yet due");
        assert!(e.wants_drive(later, false), "timer due");
        e.next_timeout = None;
        drop(app);
        assert!(e.wants_drive(later, false), "orphaned: drive it to its close");
        // Before the core handshake completes: only input (its expiry is the listener's).
        let mut fresh = entry(t0);
        fresh.dirty = false;
        assert!(!fresh.wants_drive(t0 + Duration::from_secs(1), false));
        assert!(!fresh.wants_drive(t0 + Duration::from_secs(60), false));
    }
}
