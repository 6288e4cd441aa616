//! Scenarios: a network, a workload size and a seed, written as a TOML file and turned into a
//! [`Network`] by a factory closure that builds the endpoints.
//!
//! ```toml
//! name = "ctcp-table4"
//! source = "CTCP (Kim et al.), Table IV"
//! seed = 1
//! mode = "ctcp"              # opaque to the simulator; handed to the factory
//! flows = 1                  # connections (client/server pairs)
//! transfer = "11492499B"     # bytes per flow; and/or
//! duration = "120s"          # run length (the limit of the run)
//! stagger = "0s"             # flow i starts at i × stagger (handed to the factory)
//! receive_window = "128KB"   # the connections' flow-control window (handed to the factory)
//! video = "3.4Mbit/s"        # instead of a bulk transfer: a live video source at this bitrate
//!                            # (25 fps, see `video`), for `duration`
//! video_playout = "200ms"    # a frame is on time within the fastest path's one-way delay + this
//!                            # (default: within 200 ms of capture, whatever the paths' delay)
//!
//! [[bottleneck]]             # a link pair shared by every path that names it in `via`
//! name = "core"
//! rate = "10Mbit/s"
//! delay = "5ms"
//!
//! [[path]]
//! name = "wifi"
//! shared = false             # true: one link pair shared by all flows (a dumbbell bottleneck)
//! via = "core"               # then through this [[bottleneck]] (routes: own link → core → server)
//! rate = "20Mbit/s"
//! rtt = "100ms"              # or delay = "50ms" (one way)
//! queue = "1bdp"             # or "300packets", "64KB"; default one BDP
//! loss = [0, 0.01, 0.02]     # an array on a sweepable key makes one run per value
//! jitter = "0ms"
//! reorder = false            # may jitter reorder packets
//! duplication = 0
//! outages = [["30s", "40s"]]
//! mtu = 1500                 # larger datagrams are dropped (default: no limit); the runner
//!                            # then lets braid probe up to the largest mtu (RFC 8899)
//! side_delay = "1ms..5ms"    # a per-flow path only: each flow's link stands for two access
//!                            # links (sender's and receiver's side), each drawn uniformly from
//!                            # this range per flow and seed, and adds both to `delay`, each way
//!
//! [[path.change]]            # at 50 s, set new values
//! at = "50s"
//! loss = 0.35                # (mtu too: a black hole when it shrinks)
//!
//! [path.reverse]             # per-direction overrides ([path.forward] likewise)
//! loss = 0
//! ```
//!
//! Keys given on a path apply to both directions unless `[path.forward]` or `[path.reverse]` sets
//! them (a direction's `change` or `outages` list replaces the path's). Loss is a probability
//! (Bernoulli), `"none"`, or a table `{ model = "gilbert-elliott", p_good_to_bad = 0.01,
//! p_bad_to_good = 0.3, loss_good = 0, loss_bad = 1 }`.
//!
//! A `[[bottleneck]]` takes the link keys and `[bottleneck.forward]`/`[bottleneck.reverse]` like
//! a path; it is one link pair for the whole network, so every path (of every flow) with its
//! `via` shares it: two paths of one connection sharing a bottleneck, for a coupled controller.
//!
//! Sweeps: `seed`, `mode`, `flows`, `duration`, `transfer`, `stagger`, `receive_window` and the link keys `rate`,
//! `delay`, `rtt`, `queue`, `loss`, `jitter`, `reorder` and `duplication` may be given as an array;
//! a file expands to the cartesian product of its arrays, in file order, each run labelled with
//! its values (`loss=0.01 rtt=200ms`). Errors point at `file:line:column`.

mod ideal;
mod parse;
mod values;
mod write;

use std::path::Path;
use std::time::Duration;

use braid_proto::Instant;

use crate::net::{Endpoint, EndpointId, LinkId, NetError, Network};
use braid_netem::link::LinkConfig;
use braid_netem::rng::{derive_seed, Rng};

/// One concrete run: every sweep resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// The sweep point (`loss=0.01 rtt=200ms`), empty when the file has no sweep.
    pub label: String,
    pub description: String,
    /// The paper and table or figure this reproduces.
    pub source: String,
    pub seed: u64,
    /// Opaque to the simulator: the factory decides what it means.
    pub mode: String,
    /// Connections (client/server pairs). Default 1.
    pub flows: usize,
    /// Run length. At least one of `duration` and `transfer` is set.
    pub duration: Option<Duration>,
    /// Bytes each flow transfers.
    pub transfer: Option<u64>,
    /// Flow i starts at i × stagger. Default 0.
    pub stagger: Duration,
    /// The connection's receive window in bytes (flow control: the transport parameters
    /// `initial_max_data` and `initial_max_stream_data` of both ends), if the scenario sets one.
    /// Opaque to the simulator, like `mode`.
    pub receive_window: Option<u64>,
    /// An app-limited live video workload at this mean bitrate (bits/s) instead of a bulk
    /// transfer ([`crate::video`]). Opaque to the simulator, like `mode`.
    pub video: Option<u64>,
    /// The video deadline measured from when a frame could first arrive: the fastest path's
    /// one-way propagation delay plus this playout margin (a player that buffers this much
    /// beyond the path's delay). Unset: the runner's fixed deadline after capture. Opaque to
    /// the simulator, like `mode`.
    pub video_playout: Option<Duration>,
    /// The most source symbols a block holds (the transport parameter `max_block_len`), if the
    /// scenario sets it (FMTCP's 32 KB blocks). Opaque to the simulator, like `mode`.
    pub block_len: Option<u16>,
    /// The `sato` mode's group size limit l, reduction factor r and interleaved groups g (Sato
    /// et al. §3), where the scenario sets them (their sweeps, Figs. 6–9); `sato_limit = 0` is
    /// Table 1's unlimited group size. Opaque to the simulator, like `mode`.
    pub sato_limit: Option<usize>,
    pub sato_reduction: Option<f64>,
    pub sato_interleave: Option<usize>,
    /// Links shared by every path that names them in `via` (and by every flow): two paths of one
    /// connection through one bottleneck.
    pub bottlenecks: Vec<PathSpec>,
    pub paths: Vec<PathSpec>,
}

/// One path of every flow: a link pair per flow, or one pair shared by all flows.
#[derive(Debug, Clone, PartialEq)]
pub struct PathSpec {
    pub name: String,
    pub shared: bool,
    /// The [`Scenario::bottlenecks`] entry this path crosses after its own link, if any.
    pub via: Option<String>,
    pub forward: LinkConfig,
    pub reverse: LinkConfig,
    /// With `side_delay = "A..B"` on a per-flow path: each flow's link adds two delays drawn
    /// uniformly from [A, B] (its sender's and its receiver's access link, folded into one
    /// link), in both directions, drawn from the run's seed (Sato et al.'s Fig. 5 dumbbell,
    /// whose access links have "a delay time of 1 to 5 ms").
    pub side_delay: Option<(Duration, Duration)>,
}

impl PathSpec {
    /// The delay `flow`'s own link adds to the configured one (zero without `side_delay`).
    pub fn drawn_side_delay(&self, seed: u64, flow: usize) -> Duration {
        let Some((low, high)) = self.side_delay else {
            return Duration::ZERO;
        };
        let mut rng = Rng::new(derive_seed(seed, (2 << 32) + flow as u64));
        let span = u64::try_from((high - low).as_nanos()).unwrap_or(u64::MAX);
        let mut side = || low + Duration::from_nanos(rng.up_to(span));
        side() + side()
    }
}

/// A scenario file that cannot be read or used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Invalid { file: String, line: usize, column: usize, message: String },
}

/// What the factory is told about the flow it builds endpoints for.
#[derive(Debug, Clone, Copy)]
pub struct FlowContext<'a> {
    pub scenario: &'a Scenario,
    /// 0-based flow index.
    pub flow: usize,
    pub mode: &'a str,
    /// Paths joining this flow's endpoints (path i is index i on both sides).
    pub paths: usize,
    /// A seed for this flow's endpoints, derived from the scenario's.
    pub seed: u64,
    /// When this flow should start sending (flow × stagger).
    pub start: Instant,
    /// Bytes to transfer, if the scenario says.
    pub transfer: Option<u64>,
}

/// A scenario built into a network.
pub struct ScenarioNetwork<E> {
    pub network: Network<E>,
    /// (client, server) of each flow.
    pub flows: Vec<(EndpointId, EndpointId)>,
    /// When the run should stop at the latest: `duration`, or one hour if only `transfer` is set.
    pub limit: Instant,
}

/// The run limit when a scenario gives only a transfer size.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(3600);

/// At most this many runs from one file.
pub const MAX_SWEEP_RUNS: usize = 10_000;

impl Scenario {
    /// The least one-way propagation delay of the data direction over the paths (a path through
    /// a `[[bottleneck]]` adds the bottleneck's), as configured at the start.
    pub fn min_forward_delay(&self) -> Duration {
        self.paths
            .iter()
            .map(|p| {
                let via = p.via.as_ref().and_then(|v| self.bottlenecks.iter().find(|b| &b.name == v));
                let sides = p.side_delay.map_or(Duration::ZERO, |(low, _)| 2 * low);
                p.forward.delay + sides + via.map_or(Duration::ZERO, |b| b.forward.delay)
            })
            .min()
            .unwrap_or(Duration::ZERO)
    }

    /// The largest `mtu` any link of the scenario starts or changes to, if any link sets one:
    /// what a factory may take as the endpoints' interface MTU (the largest datagram worth
    /// probing for).
    pub fn max_mtu(&self) -> Option<usize> {
        self.paths
            .iter()
            .chain(&self.bottlenecks)
            .flat_map(|p| [&p.forward, &p.reverse])
            .flat_map(|l| l.mtu.into_iter().chain(l.changes.iter().filter_map(|c| c.mtu)))
            .max()
    }

    /// Read a scenario file and expand its sweeps.
    pub fn load(path: impl AsRef<Path>) -> Result<Vec<Scenario>, ScenarioError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Io { file: file.clone(), source })?;
        Scenario::parse(&text, &file)
    }

    /// Parse scenario text; `file` names it in errors, and its stem is the default name.
    pub fn parse(text: &str, file: &str) -> Result<Vec<Scenario>, ScenarioError> {
        parse::parse(text, file)
    }

    /// This scenario as a TOML file without sweeps; [`parse`](Self::parse) gives it back exactly.
    pub fn to_toml(&self) -> String {
        write::to_toml(self)
    }

    /// `name`, plus ` [label]` for a sweep point.
    pub fn title(&self) -> String {
        if self.label.is_empty() {
            self.name.clone()
        } else {
            format!("{} [{}]", self.name, self.label)
        }
    }

    /// When a run of this scenario stops at the latest.
    pub fn limit(&self) -> Instant {
        Instant::ZERO + self.duration.unwrap_or(DEFAULT_LIMIT)
    }

    /// Build the network: shared paths get one link pair, the others one pair per flow; `factory`
    /// makes each flow's (client, server). Links are named `<path>.fwd` / `<path>.rev`, prefixed by
    /// `f<flow>.` for per-flow links when there are several flows.
    pub fn build<E: Endpoint>(
        &self,
        mut factory: impl FnMut(&FlowContext<'_>) -> (E, E),
    ) -> Result<ScenarioNetwork<E>, NetError> {
        let mut network = Network::new(self.seed);
        let mut bottlenecks = Vec::with_capacity(self.bottlenecks.len());
        for b in &self.bottlenecks {
            bottlenecks.push((
                b.name.as_str(),
                network.add_link(format!("{}.fwd", b.name), b.forward.clone())?,
                network.add_link(format!("{}.rev", b.name), b.reverse.clone())?,
            ));
        }
        let mut shared: Vec<Option<(LinkId, LinkId)>> = Vec::with_capacity(self.paths.len());
        for path in &self.paths {
            shared.push(if path.shared {
                Some((
                    network.add_link(format!("{}.fwd", path.name), path.forward.clone())?,
                    network.add_link(format!("{}.rev", path.name), path.reverse.clone())?,
                ))
            } else {
                None
            });
        }
        let mut flows = Vec::with_capacity(self.flows);
        for flow in 0..self.flows {
            let context = FlowContext {
                scenario: self,
                flow,
                mode: &self.mode,
                paths: self.paths.len(),
                seed: derive_seed(self.seed, (1 << 32) + flow as u64),
                start: Instant::ZERO + self.stagger * flow as u32,
                transfer: self.transfer,
            };
            let (client, server) = factory(&context);
            let client = network.add_endpoint(client);
            let server = network.add_endpoint(server);
            for (path, shared) in self.paths.iter().zip(&shared) {
                let (forward, reverse) = match *shared {
                    Some(pair) => pair,
                    None => {
                        let prefix =
                            if self.flows > 1 { format!("f{flow}.{}", path.name) } else { path.name.clone() };
                        let sides = path.drawn_side_delay(self.seed, flow);
                        let (mut forward, mut reverse) = (path.forward.clone(), path.reverse.clone());
                        forward.delay += sides;
                        reverse.delay += sides;
                        (
                            network.add_link(format!("{prefix}.fwd"), forward)?,
                            network.add_link(format!("{prefix}.rev"), reverse)?,
                        )
                    }
                };
                // A path through a bottleneck: its own link, then the shared one (and back the
                // other way round).
                match path.via.as_deref().and_then(|v| bottlenecks.iter().find(|b| b.0 == v)) {
                    Some(&(_, b_forward, b_reverse)) => {
                        network.add_path(client, server, &[forward, b_forward], &[b_reverse, reverse])?
                    }
                    None => network.add_path(client, server, &[forward], &[reverse])?,
                };
            }
            flows.push((client, server));
        }
        Ok(ScenarioNetwork { network, flows, limit: self.limit() })
    }
}

#[cfg(test)]
mod tests;
