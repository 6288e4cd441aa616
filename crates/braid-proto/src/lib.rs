//! # braid-proto: the sans-IO protocol core
//!
//! Contract: no I/O, no clock, no threads. Time comes in as [`Instant`] values and randomness as
//! seeds; datagrams come in through `handle_*` and go out through `poll_*`. The simulator, the
//! runtime and the tests all drive this same code.
#![deny(unsafe_code)]

pub mod blocks;
pub mod cc;
pub mod conn;
pub mod datagram;
pub mod pipe;
pub mod redundancy;
pub mod sched;
pub mod session;
pub mod streams;
pub mod time;
pub mod trace;
pub mod view;
pub mod wire;

pub use conn::{BlockRecord, CloseReason, Connection, ConnectionConfig, Event, Transmit};
pub use time::Instant;
