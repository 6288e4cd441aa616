//! # braid-runtime: braid over real UDP sockets
//!
//! Drives the sans-IO core ([`braid_proto::Connection`]) with tokio: one UDP socket per path on
//! the client, one listening socket on the server (connections told apart by connection id, so a
//! path whose address changes keeps its connection). Before the core's handshake the runtime runs
//! a Noise handshake (`Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s` with a shared key file, or
//! `Noise_IK_25519_ChaChaPoly_BLAKE2s` with key pairs and an allow-list: [`ClientAuth`],
//! [`ServerAuth`]); after it every datagram is AEAD-protected (PROTOCOL.md §13), and a path's new
//! address gets at most 3× what it sent until it answers a challenge (§13.8). The rules are
//! [`braid_proto::session`]'s, sans-IO: a connection's security layer is its `Session`, and the
//! server's admission (connection cap, handshake rate, replayed first messages, half-open
//! expiry) and routing by connection id is its `Listener` (§13.9), and the closing period of a
//! connection this end closed (its CLOSE sent again) is its `Closing`; the driver moves
//! datagrams between the sockets and them, keeps their timers, and turns what they report into
//! wake-ups, counters and logs. `--emulate` impairments are applied here, in the socket
//! layer (braid-netem's link model), so braid can be tried on one machine without root.
//!
//! The only I/O of braid lives in this crate and the CLI; the core stays clock- and socket-free.
//! The driver maps the core's [`braid_proto::Instant`] (µs) to tokio's clock.
//!
//! The README's "As a library" example (compiled as a doctest) shows a client with two paths
//! and an echo server.
//!
//! Feature `qlog` (off by default) adds per-connection qlog files ([`ClientConfig`]'s and
//! [`ServerConfig`]'s `qlog`, the `qlog` module) and with them a dependency on `serde_json`.
#![deny(unsafe_code)]

mod connection;
pub mod crypto;
mod driver;
pub mod emulate;
mod endpoint;
mod gso;
pub mod limits;
#[cfg(feature = "qlog")]
pub mod qlog;
#[cfg(not(feature = "qlog"))]
#[path = "qlog_off.rs"]
mod qlog;
#[cfg(test)]
pub(crate) mod seam;
mod shared;
pub mod socket;
mod stream;

use std::net::SocketAddr;
use std::time::Duration;

pub use braid_proto::datagram::{DatagramConfig, DatagramStats};
pub use braid_proto::ConnectionConfig;
pub use connection::Connection;
pub use crypto::{ClientAuth, Key, KeyError, KeyFile, ServerAuth};
pub use emulate::Emulation;
pub use endpoint::{ClientConfig, Connections, Endpoint, Server, ServerConfig};
pub use limits::{Limit, Limits, ServerCounters, INITIAL_WINDOW};
pub use shared::PathReport;
pub use socket::PathSpec;
pub use stream::Stream;

/// The README's library example, compiled as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctest;

/// What went wrong, each said so a user knows what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot use {0}: address already in use (another program holds this port; pick another)")]
    AddrInUse(SocketAddr),
    #[error("cannot use {0}: no local interface has this address")]
    AddrNotAvailable(SocketAddr),
    #[error("cannot bind {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("--path {name}: no such interface (available: {available})")]
    NoSuchInterface { name: String, available: String },
    #[error("--path {path}: no address of the same family as the server {server}")]
    Family { path: String, server: SocketAddr },
    #[error("{0}: connection refused (nothing listens on this UDP port; is `braid server` running there?)")]
    Refused(SocketAddr),
    #[error("{server}: no answer within {}s (server down, unreachable, or UDP blocked)", .after.as_secs())]
    Unreachable { server: SocketAddr, after: Duration },
    #[error("{0}: the server refused our key (both ends need the same key file from `braid keygen`)")]
    WrongKey(SocketAddr),
    #[error(
        "{0}: the server refused us (wrong --server-key, or our public key is not in its --authorized list)"
    )]
    NotAuthorized(SocketAddr),
    #[error("{0}: the handshake failed (a forged or corrupted answer)")]
    HandshakeFailed(SocketAddr),
    #[error("peer timed out (nothing heard for {}s)", .0.as_secs())]
    TimedOut(Duration),
    #[error("connection closed by the peer{0}")]
    ClosedByPeer(String),
    #[error("connection closed: {0}")]
    Closed(String),
    #[error("the peer broke the protocol: {0}")]
    Violation(String),
    #[error("datagram of {size} bytes is larger than the paths carry ({max} bytes)")]
    DatagramTooLarge { size: usize, max: usize },
    #[error("{0}")]
    Stream(#[from] braid_proto::streams::StreamError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// A client's failed handshake with `server`, as the application reads it; `pair`: key
    /// pairs (a refusal then names --server-key and --authorized); `timeout`: the handshake's.
    pub(crate) fn handshake_failed(
        why: braid_proto::session::HandshakeFailure,
        server: SocketAddr,
        pair: bool,
        timeout: Duration,
    ) -> Error {
        use braid_proto::session::HandshakeFailure as F;
        match why {
            F::AnswerRejected => Error::HandshakeFailed(server),
            F::TimedOut { refused: true } if pair => Error::NotAuthorized(server),
            F::TimedOut { refused: true } => Error::WrongKey(server),
            F::TimedOut { refused: false } => Error::Unreachable { server, after: timeout },
            F::PortUnreachable => Error::Refused(server),
        }
    }

    fn to_io(&self) -> std::io::Error {
        use std::io::ErrorKind;
        let kind = match self {
            Error::TimedOut(_) | Error::Unreachable { .. } => ErrorKind::TimedOut,
            Error::ClosedByPeer(_) => ErrorKind::ConnectionReset,
            Error::Refused(_) => ErrorKind::ConnectionRefused,
            _ => ErrorKind::ConnectionAborted,
        };
        std::io::Error::new(kind, self.to_string())
    }
}
