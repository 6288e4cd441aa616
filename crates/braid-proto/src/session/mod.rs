//! The security layer's protocol state around a core connection (PROTOCOL.md §13), with no I/O
//! and no clock: time comes in as [`Instant`](crate::Instant) values and randomness as numbers
//! handed in, so every rule here is tested on a virtual clock. The cryptography is behind the
//! traits of [`crypto`]: Noise in the runtime, [`insecure`]'s double in tests.
//!
//! - [`ReplayWindow`]: a packet number (or an announcement's counter) is accepted once (§13.5).
//! - [`PathAddress`]: where the server sends a path's packets, which addresses the peer proved
//!   it receives at, and the 3× budget of a new address until it answers a challenge (§13.6,
//!   §13.8): NAT rebinding keeps the connection, a forged source address gains little.
//! - [`Announcer`]: the client's path announcements, repeated until echoed and renewed as a
//!   keep-alive (§13.6).
//! - [`Repeater`]: the client's first handshake message, repeated with backoff until answered
//!   (§13.2).
//! - [`SeenFirstMessages`]: the server's memory of first messages, so a replayed one creates
//!   nothing (§13.3).
//! - [`HandshakeRate`]: the server's new handshakes a second, before any public-key work
//!   (§13.3).
//! - [`Hello`]: the client's choices in its first message (§13.2).
//! - [`Session`]: all of the above around one core connection: datagrams and addresses in,
//!   datagrams and destinations out, with the keys of a [`crypto`] implementation.
//! - [`Listener`]: a server's admission and routing: every datagram to the server's socket,
//!   with its source and the time; first messages checked (connection cap, handshake rate,
//!   authentication, replays, the 3× budget) before any state is kept, then the connection's
//!   core and [`Session`] created; later datagrams routed to their connection by its id; and
//!   half-open connections expired.
//! - [`Linger`]: a connection the application let go of is closed once its data is delivered,
//!   or after [`LINGER`].
//! - [`Closing`]: connections this end closed, reduced to their sealed CLOSE ([`SentClose`])
//!   for the closing period, sent again after one and two probe timeouts and in answer to what
//!   still arrives (RFC 9000 §10.2.1).
//! - [`Sessions`]: an endpoint's connections with all of the above: where each datagram goes,
//!   which connections a round drives and in what order, and a closed connection's retirement;
//!   the caller's I/O and bookkeeping are the hooks of its [`Host`].

mod address;
mod announce;
mod closing;
pub mod crypto;
mod first;
mod hello;
pub mod insecure;
mod linger;
mod listener;
mod rate;
mod replay;
mod secure;
mod sessions;

pub use address::{PathAddress, Probation, AMPLIFICATION, CHALLENGE_BIT, CHALLENGE_INTERVAL};
pub use announce::{Announcer, Repeater, HELLO_INTERVAL, PAD_AFTER, PAD_WITHIN, REANNOUNCE};
pub use closing::{Closing, SentClose, MAX_ANSWERS};
pub use first::{FirstMessage, SeenFirstMessages};
pub use hello::{Hello, UnknownChoice};
pub use linger::{Linger, LINGER};
pub use listener::{Dropped, Incoming, Listener, ListenerConfig, ListenerEvent, NewConnection, RandomSource};
pub use rate::HandshakeRate;
pub use replay::ReplayWindow;
pub use secure::{HandshakeFailure, Random, Received, SecureTransmit, Session, SessionEvent, SessionStats};
pub use sessions::{CoreCell, CoreNews, Host, Sessions, SEND_BATCH};
