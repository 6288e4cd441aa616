//! What a server lets its peers have, and the counters an operator reads.
//!
//! The defaults fit a small router (a few hundred MB of memory, one or two cores): a few hundred
//! connections, 1 MiB of a peer's data held per connection, 100 streams each, 50 new
//! handshakes a second. When a limit turns something away, one log line names the limit (at
//! most one line per limit every [`LOG_EVERY`], with the count since the last line), and
//! [`ServerCounters::limit_hits`] counts it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::net::SocketAddr;

use braid_proto::session::Dropped;
use braid_proto::{CloseReason, ConnectionConfig, Instant};

/// A server's limits (`braid server --max-connections`, `--connection-memory`, `--max-streams`,
/// `--handshake-rate`, or `[server]` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections at once, handshakes included. Default 256; each costs about its
    /// `connection_memory` plus its decoders and send buffers at most.
    pub max_connections: usize,
    /// Bytes of a peer's data one connection may hold: its flow-control windows, connection
    /// and stream (a peer sending past them breaks the protocol and is closed). The windows
    /// start at [`INITIAL_WINDOW`] (or this, if smaller) and double while the application
    /// reads them within two round trips, up to this (receive-window auto-tuning,
    /// [`braid_proto::streams::Window`]): a connection whose application reads slowly keeps the
    /// small window. The block decoders hold at most `blocks_in_flight × max_block_len ×
    /// symbol size` on top (1.2 MiB with the default parameters). Default 4 MiB; the window
    /// caps goodput at window / RTT, and with several paths it must also hold what the fast
    /// path delivers while the slowest path's data is under way.
    pub connection_memory: u64,
    /// Streams a peer may open on one connection. Default 100.
    pub max_streams: u64,
    /// New handshakes the server takes on per second (a token bucket as deep as one second's
    /// worth); beyond it first messages are dropped before any public-key work (the listener's
    /// [`HandshakeRate`](braid_proto::session::HandshakeRate)). Default 50.
    pub handshake_rate: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: 256, connection_memory: 4 << 20, max_streams: 100, handshake_rate: 50 }
    }
}

impl Limits {
    /// The core's settings with these limits in force: the windows and the stream count it
    /// announces to peers (and enforces).
    pub fn apply(&self, transport: &mut ConnectionConfig) {
        let start = self.connection_memory.min(INITIAL_WINDOW);
        transport.params.initial_max_data = start;
        transport.params.initial_max_stream_data = start;
        transport.max_window = self.connection_memory;
        transport.params.max_streams = self.max_streams;
    }
}

/// The flow-control windows a server first announces (connection and each stream); they grow
/// up to [`Limits::connection_memory`] for a connection whose application keeps up.
pub const INITIAL_WINDOW: u64 = 1 << 20;

/// Which limit was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MaxConnections,
    HandshakeRate,
    MaxStreams,
    ConnectionMemory,
}

impl Limit {
    pub const ALL: [Limit; 4] =
        [Limit::MaxConnections, Limit::HandshakeRate, Limit::MaxStreams, Limit::ConnectionMemory];

    /// The limit's name, as the flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            Limit::MaxConnections => "max-connections",
            Limit::HandshakeRate => "handshake-rate",
            Limit::MaxStreams => "max-streams",
            Limit::ConnectionMemory => "connection-memory",
        }
    }

    /// The limit a peer's protocol violation (the core's close reason) ran into, if any.
    pub fn from_violation(reason: &str) -> Option<Limit> {
        if reason.contains("stream limit") {
            Some(Limit::MaxStreams)
        } else if reason.contains("flow-control window") {
            Some(Limit::ConnectionMemory)
        } else {
            None
        }
    }
}

/// A server's counters, shared with the application ([`crate::Server::counters`]).
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// First messages that authenticated and became connections.
    pub handshakes_accepted: AtomicU64,
    /// First messages that did not authenticate (wrong key, unknown client key, stale clock).
    pub handshakes_failed: AtomicU64,
    /// Authenticated first messages seen before (replays): nothing created.
    pub handshakes_replayed: AtomicU64,
    /// Connections that ended, and how many of those a peer's violation closed.
    pub connections_closed: AtomicU64,
    pub connections_violated: AtomicU64,
    /// Connections that ended because nothing was heard for the idle timeout (among them those
    /// whose peer closed but whose CLOSE never arrived), and handshakes forgotten unfinished.
    pub connections_timed_out: AtomicU64,
    pub handshakes_abandoned: AtomicU64,
    /// Connections this end closed that are in their closing period now: only their CLOSE is
    /// kept, to send again if it was lost; they do not count against `max_connections`.
    pub connections_closing: AtomicU64,
    /// Per [`Limit::ALL`]: times the limit turned something away.
    pub limit_hits: [AtomicU64; 4],
    /// Datagrams received and sent on the server's socket, and their bytes.
    pub datagrams_received: AtomicU64,
    pub datagrams_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
    /// The server socket's number in `/proc/net/udp` (0: unknown), for [`Self::socket_drops`].
    pub(crate) socket_inode: AtomicU64,
}

impl ServerCounters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn set(gauge: &AtomicU64, n: u64) {
        gauge.store(n, Ordering::Relaxed);
    }

    /// Datagrams the kernel dropped on the server's socket because its receive buffer was full
    /// (the server did not read in time); `None` where that is not known (only Linux says).
    pub fn socket_drops(&self) -> Option<u64> {
        match self.socket_inode.load(Ordering::Relaxed) {
            0 => None,
            inode => crate::socket::kernel_drops(inode),
        }
    }

    pub fn limit_hits(&self, limit: Limit) -> u64 {
        self.limit_hits[limit as usize].load(Ordering::Relaxed)
    }
}

/// At most one log line per limit this often.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Notes each hit; logs the first, then at most one line per [`LOG_EVERY`] per limit.
#[derive(Debug, Default)]
pub(crate) struct LimitLog {
    last: [Option<Instant>; 4],
    unlogged: [u64; 4],
}

impl LimitLog {
    pub(crate) fn hit(&mut self, counters: &ServerCounters, limit: Limit, value: u64, now: Instant) {
        let i = limit as usize;
        ServerCounters::add(&counters.limit_hits[i], 1);
        self.unlogged[i] += 1;
        if self.last[i].is_some_and(|t| now.saturating_duration_since(t) < LOG_EVERY) {
            return;
        }
        tracing::warn!(
            "limit {} ({value}) reached: {} (turned away {} time(s) since the last such line)",
            limit.name(),
            match limit {
                Limit::MaxConnections => "new handshakes are ignored",
                Limit::HandshakeRate => "new handshakes are dropped",
                Limit::MaxStreams => "a peer opened more streams; its connection is closed",
                Limit::ConnectionMemory => "a peer sent past its window; its connection is closed",
            },
            self.unlogged[i]
        );
        self.last[i] = Some(now);
        self.unlogged[i] = 0;
    }

    /// A server's connection ended: counted; a peer that broke a limit is logged with it.
    pub(crate) fn closed(
        &mut self,
        counters: &ServerCounters,
        limits: &Limits,
        reason: &CloseReason,
        now: Instant,
    ) {
        if *reason == CloseReason::IdleTimeout {
            ServerCounters::add(&counters.connections_timed_out, 1);
        }
        if let CloseReason::Violation(why) = reason {
            ServerCounters::add(&counters.connections_violated, 1);
            if let Some(limit) = Limit::from_violation(why) {
                let value = match limit {
                    Limit::MaxStreams => limits.max_streams,
                    _ => limits.connection_memory,
                };
                self.hit(counters, limit, value, now);
            }
        }
        ServerCounters::add(&counters.connections_closed, 1);
    }

    /// What a server's listener dropped: counted, and logged when it says something about the
    /// server (a limit, a replay).
    pub(crate) fn dropped(
        &mut self,
        counters: &ServerCounters,
        limits: &Limits,
        why: Dropped,
        from: SocketAddr,
        now: Instant,
    ) {
        match why {
            Dropped::ConnectionLimit => {
                self.hit(counters, Limit::MaxConnections, limits.max_connections as u64, now)
            }
            Dropped::RateLimited => {
                self.hit(counters, Limit::HandshakeRate, limits.handshake_rate.into(), now)
            }
            Dropped::Replayed => {
                ServerCounters::add(&counters.handshakes_replayed, 1);
                tracing::debug!(%from, "replayed handshake ignored");
            }
            Dropped::TooManyRecent => tracing::warn!(%from, "too many handshakes lately: handshake ignored"),
            Dropped::AnswerTooLarge => tracing::warn!(%from, "handshake answer would amplify: ignored"),
            Dropped::UnknownType => tracing::trace!("dropped a datagram of unknown type from {from}"),
            Dropped::Malformed | Dropped::UnknownConnection | Dropped::NotAccepting => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_name_their_limit() {
        use braid_proto::streams::PeerViolation;
        assert_eq!(
            Limit::from_violation(&PeerViolation::StreamLimit(9).to_string()),
            Some(Limit::MaxStreams)
        );
        assert_eq!(
            Limit::from_violation(&PeerViolation::ConnectionWindow.to_string()),
            Some(Limit::ConnectionMemory)
        );
        assert_eq!(
            Limit::from_violation(&PeerViolation::StreamWindow(3).to_string()),
            Some(Limit::ConnectionMemory)
        );
        assert_eq!(Limit::from_violation("bad frame"), None);
    }
}
