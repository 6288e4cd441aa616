//! # braid-sim: a deterministic network simulator for braid
//!
//! Contract: no I/O, no wall clock, no threads, no global state. Time is a [`braid_proto::Instant`]
//! advanced event by event; every random draw comes from a seed, so a scenario, its seed and the
//! endpoints' code determine every result bit for bit. The protocol runs unchanged: anything that
//! implements the sans-IO [`Endpoint`] trait can be driven here, by the real runtime, or by tests.
//!
//! - [`link`], [`loss`], [`rng`], [`units`]: the link model, from braid-netem (re-exported here):
//!   one direction of a link — rate, delay, drop-tail queue, loss (Bernoulli, Gilbert–Elliott),
//!   jitter, duplication, outages, scheduled changes — its seeded RNG and the unit grammar.
//! - [`net`]: the event loop joining endpoints by paths of links, disjoint or shared (dumbbell).
//! - [`scenario`]: scenarios as TOML files (with sweeps), built into networks by a factory.
//! - [`metrics`]: goodput over time, completion time, block delay and jitter, FEC overhead and
//!   recovery rate; CSV and JSON output.
//!
//! ```
//! use std::time::Duration;
//! use braid_proto::Instant;
//! use braid_sim::{Endpoint, LinkConfig, Network, PathConfig};
//!
//! /// Sends one datagram at time zero; the other side counts what arrives.
//! #[derive(Default)]
//! struct Hello { to_send: u32, got: u32 }
//! impl Endpoint for Hello {
//!     fn handle_datagram(&mut self, _: Instant, _path: usize, _: &[u8]) { self.got += 1; }
//!     fn handle_timeout(&mut self, _: Instant) {}
//!     fn poll_transmit(&mut self, _: Instant) -> Option<(usize, Vec<u8>)> {
//!         (self.to_send > 0).then(|| { self.to_send -= 1; (0, vec![0; 1250]) })
//!     }
//!     fn poll_timeout(&self) -> Option<Instant> { None }
//! }
//!
//! let path = PathConfig::symmetric(LinkConfig::new(10_000_000, Duration::from_millis(50)));
//! let (mut net, _client, server) =
//!     Network::pair(7, Hello { to_send: 1, got: 0 }, Hello::default(), &[path])?;
//! // 1250 B at 10 Mbit/s is 1 ms of serialization, then 50 ms on the wire.
//! net.run_until_condition(Instant::from_micros(1_000_000), |n| n.endpoint(server).got == 1);
//! assert_eq!(net.now(), Instant::from_micros(51_000));
//! # Ok::<(), braid_sim::NetError>(())
//! ```
#![deny(unsafe_code)]

pub mod campaign;
pub mod flow;
pub mod metrics;
pub mod net;
pub mod scenario;
pub mod video;

pub use braid_netem::LossModel;
pub use braid_netem::{link, loss, rng, units};
pub use braid_netem::{Fate, Link, LinkChange, LinkConfig, LinkConfigError, LinkStats, Outage, QueueLimit};
pub use flow::{BulkFlow, SecureFlow};
pub use metrics::{BlockStats, Metrics, MetricsHandle, Summary};
pub use net::{
    Endpoint, EndpointId, LinkId, NetConfig, NetError, NetStats, Network, PathConfig, RunReport, StopReason,
};
pub use scenario::{FlowContext, PathSpec, Scenario, ScenarioError, ScenarioNetwork};
pub use video::{VideoFlow, VideoSource, VideoStats};
