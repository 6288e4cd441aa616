//! # braid-netem: link models shared by the simulator, `--emulate` and the testbed
//!
//! Contract: no I/O, no clock, no threads. Time is a [`braid_proto::Instant`] passed in, and every
//! random draw comes from a seed, so a link's configuration, seed and sequence of `send` calls
//! determine its deliveries bit for bit — whether braid-sim drives it on a virtual clock, the
//! runtime's `--emulate` in its socket layer, or the testbed's forwarders on the wall clock.
//!
//! - [`link`]: one direction of a link — rate, delay, drop-tail queue, loss, jitter, duplication,
//!   outages, scheduled changes, MTU.
//! - [`loss`]: random loss models (Bernoulli, Gilbert–Elliott).
//! - [`rng`]: the seeded PRNG every random draw comes from, and seed derivation.
//! - [`units`]: the one grammar for quantities with units ("50ms", "20Mbit/s", "20mbit", "32KiB",
//!   "2%"), used by scenario files, `--emulate` specs and command-line flags.
//! - [`spec`]: a link in one line (`"20mbit,50ms,2%,mtu1400"`), as `--emulate` takes it.
//!
//! It depends on braid-proto only for the protocol's time type, so a link and the endpoints it
//! joins count time alike. The `serde` feature derives `Serialize` for [`LinkStats`].
//!
//! ```
//! use std::time::Duration;
//! use braid_netem::{Fate, Link, LinkConfig};
//! use braid_proto::Instant;
//!
//! let mut link = Link::new(LinkConfig::new(10_000_000, Duration::from_millis(50)), 7)?;
//! assert_eq!(link.send(Instant::ZERO, vec![0; 1250]), Fate::Queued);
//! // 1250 B at 10 Mbit/s is 1 ms of serialization, then 50 ms on the wire.
//! assert_eq!(link.next_delivery(), Some(Instant::from_micros(51_000)));
//! # Ok::<(), braid_netem::LinkConfigError>(())
//! ```
#![deny(unsafe_code)]

pub mod link;
pub mod loss;
pub mod rng;
pub mod spec;
pub mod units;

pub use link::{Fate, Link, LinkChange, LinkConfig, LinkConfigError, LinkStats, Outage, QueueLimit};
pub use loss::LossModel;
pub use spec::{Emulation, ParseEmulationError, DEFAULT_MTU};
