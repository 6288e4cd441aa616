//! The event loop: endpoints joined by paths made of links, on a virtual clock.
//!
//! A connection is a pair of endpoints joined by N paths; each path is a route of one or more
//! links in each direction. Disjoint paths get their own links; a shared bottleneck is one link
//! that appears in the routes of many connections (a dumbbell). Packets carry their route as a tag
//! through the links, so a shared link hands each packet to the right next hop or endpoint.
//!
//! Time advances from event to event: the earliest packet arrival on any link or the earliest
//! endpoint timer. At each instant the loop (1) delivers every due packet (forwarding it to the
//! next hop of its route, or handing it to the endpoint), (2) fires every due timer, then (3)
//! drains `poll_transmit` of every endpoint touched in this instant and sends what comes out.
//! Pacing is the endpoint's job: it returns `None` from `poll_transmit` and sets a timer.
//!
//! The loop is driven by a binary heap of wake-ups with lazy invalidation: each link and endpoint
//! records the one wake-up time it currently wants, and a popped entry that no longer matches is
//! skipped. The heap is rebuilt when stale entries pile up.
//!
//! Livelock guards (all counted in [`NetStats`]): an endpoint whose timer stays at or before `now`
//! gets `handle_timeout` at most `max_timeouts_per_instant` times per instant, then its timer is
//! pushed 1 µs later; an endpoint that never stops emitting datagrams is cut off after
//! `max_transmits_per_poll` and polled again 1 µs later; and a run that processes more than
//! `max_events_per_instant` events without time moving stops with [`StopReason::Livelock`].
//!
//! The shape of [`Endpoint`] is quinn-proto's sans-IO connection (handle_* in, poll_* out); the
//! idea of driving two of them on a virtual clock comes from quinn's `tests/util.rs` `Pair`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use braid_proto::Instant;
use serde::Serialize;

use braid_netem::link::{Link, LinkConfig, LinkConfigError};
use braid_netem::rng::derive_seed;

/// What the simulator drives: a sans-IO protocol endpoint (one side of a connection).
pub trait Endpoint {
    /// A datagram arrived at `now` on `path` (an index into this endpoint's paths).
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]);
    /// The timer returned by `poll_timeout` has expired.
    fn handle_timeout(&mut self, now: Instant);
    /// Next datagram to send and the path (index into this endpoint's paths) it goes on.
    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)>;
    /// Like `poll_transmit`, but writes the datagram into `buf` (a recycled buffer; its old
    /// contents are garbage) and returns the path: no allocation per datagram, the simulator's
    /// hot path. The default calls `poll_transmit`.
    fn poll_transmit_into(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<usize> {
        let (path, datagram) = self.poll_transmit(now)?;
        *buf = datagram;
        Some(path)
    }
    /// When `handle_timeout` should next be called, if ever.
    fn poll_timeout(&self) -> Option<Instant>;
}

impl<E: Endpoint + ?Sized> Endpoint for Box<E> {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        (**self).handle_datagram(now, path, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        (**self).handle_timeout(now)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        (**self).poll_transmit(now)
    }
    fn poll_transmit_into(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<usize> {
        (**self).poll_transmit_into(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (**self).poll_timeout()
    }
}

/// An endpoint of a [`Network`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EndpointId(pub usize);

/// A link (one direction) of a [`Network`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LinkId(pub usize);

/// The two directions of a path: `forward` carries client → server, `reverse` server → client.
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    pub forward: LinkConfig,
    pub reverse: LinkConfig,
}

impl PathConfig {
    /// The same link model in both directions (each direction still gets its own link and seed).
    pub fn symmetric(link: LinkConfig) -> PathConfig {
        PathConfig { forward: link.clone(), reverse: link }
    }
}

/// Knobs of the event loop. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetConfig {
    /// Seed from which every link's seed is derived. Default 0.
    pub seed: u64,
    /// `handle_timeout` calls one endpoint may get at one instant before its timer is deferred
    /// by 1 µs. Default 64.
    pub max_timeouts_per_instant: u32,
    /// Datagrams taken from one endpoint in one poll before it is deferred by 1 µs. Default
    /// 100 000 (more than any congestion window this project will run).
    pub max_transmits_per_poll: u32,
    /// Events at one instant after which a run stops with [`StopReason::Livelock`]. Default
    /// 10 000 000.
    pub max_events_per_instant: u64,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            seed: 0,
            max_timeouts_per_instant: 64,
            max_transmits_per_poll: 100_000,
            max_events_per_instant: 10_000_000,
        }
    }
}

/// Why building a network failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("no endpoint {0:?} in this network")]
    UnknownEndpoint(EndpointId),
    #[error("no link {0:?} in this network")]
    UnknownLink(LinkId),
    #[error("a route needs at least one link in each direction")]
    EmptyRoute,
    #[error("link `{name}`: {source}")]
    Link {
        name: String,
        #[source]
        source: LinkConfigError,
    },
}

/// Counters of the event loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct NetStats {
    /// Wake-ups processed (a link delivering, a timer firing).
    pub events: u64,
    /// Distinct instants at which something happened.
    pub instants: u64,
    /// Datagrams taken from endpoints and put on a path.
    pub datagrams_sent: u64,
    /// Datagrams handed to endpoints.
    pub datagrams_delivered: u64,
    /// Datagrams sent on a path index the endpoint does not have (dropped).
    pub unroutable: u64,
    /// Times an endpoint's timer was deferred by 1 µs because it stayed ≤ now.
    pub timeout_deferrals: u64,
    /// Times an endpoint was cut off by `max_transmits_per_poll`.
    pub transmit_deferrals: u64,
}

/// Why a run returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The deadline was reached.
    Deadline,
    /// The condition became true.
    Condition,
    /// Nothing is scheduled: no packet on any link, no timer.
    Idle,
    /// More than `max_events_per_instant` events happened without time moving.
    Livelock { at: Instant },
}

/// The outcome of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunReport {
    pub stop: StopReason,
    /// The clock when the run returned.
    pub now: Instant,
    /// Events processed during this run.
    pub events: u64,
}

struct EndpointSlot<E> {
    endpoint: E,
    /// Route of each of this endpoint's paths (outgoing direction).
    paths: Vec<u32>,
    /// The wake-up this endpoint has in the heap, if any.
    scheduled: Option<u64>,
    dirty: bool,
    /// Instant of the last `handle_timeout` and how many it got at that instant.
    timeouts_at: u64,
    timeouts_count: u32,
    /// What `poll_timeout` answered at the last flush. Only valid while the endpoint is not
    /// dirty: anything that reaches the endpoint marks it dirty, and `poll_timeout` takes no
    /// clock, so the answer cannot have changed.
    timer: Option<u64>,
}

struct LinkSlot {
    link: Link,
    name: String,
    scheduled: Option<u64>,
}

struct Route {
    hops: Vec<u32>,
    destination: u32,
    destination_path: u32,
}

/// Wake-up ids: endpoints have the top bit set, links not.
const ENDPOINT_BIT: u32 = 1 << 31;
/// Most delivered datagram buffers kept for reuse.
const MAX_SPARE_BUFFERS: usize = 1024;
/// Capacity given to every transmit buffer (above the usual datagram size).
const DATAGRAM_CAPACITY: usize = 2048;

/// A simulated network of endpoints and links; see the module doc.
pub struct Network<E> {
    config: NetConfig,
    now: Instant,
    endpoints: Vec<EndpointSlot<E>>,
    links: Vec<LinkSlot>,
    routes: Vec<Route>,
    wakeups: BinaryHeap<Reverse<(u64, u32)>>,
    dirty: Vec<u32>,
    /// Buffers of delivered datagrams, reused for the next transmits.
    spare: Vec<Vec<u8>>,
    /// The last instant at which events were processed.
    last_instant: Option<u64>,
    stats: NetStats,
}

impl<E: Endpoint> Network<E> {
    /// An empty network whose links draw their seeds from `seed`, with default limits.
    pub fn new(seed: u64) -> Self {
        Self::with_config(NetConfig { seed, ..NetConfig::default() })
    }

    pub fn with_config(config: NetConfig) -> Self {
        Network {
            config,
            now: Instant::ZERO,
            endpoints: Vec::new(),
            links: Vec::new(),
            routes: Vec::new(),
            wakeups: BinaryHeap::new(),
            dirty: Vec::new(),
            spare: Vec::new(),
            last_instant: None,
            stats: NetStats::default(),
        }
    }

    /// A client and a server joined by disjoint `paths` (path i is index i on both sides).
    pub fn pair(
        seed: u64,
        client: E,
        server: E,
        paths: &[PathConfig],
    ) -> Result<(Self, EndpointId, EndpointId), NetError> {
        let mut net = Self::new(seed);
        let c = net.add_endpoint(client);
        let s = net.add_endpoint(server);
        net.connect(c, s, paths)?;
        Ok((net, c, s))
    }

    /// A dumbbell: every (client, server) pair has one path, and all of them share the
    /// `bottleneck` link in each direction.
    pub fn dumbbell(
        seed: u64,
        flows: impl IntoIterator<Item = (E, E)>,
        bottleneck: &PathConfig,
    ) -> Result<(Self, Vec<(EndpointId, EndpointId)>), NetError> {
        let mut net = Self::new(seed);
        let forward = net.add_link("bottleneck.fwd", bottleneck.forward.clone())?;
        let reverse = net.add_link("bottleneck.rev", bottleneck.reverse.clone())?;
        let mut pairs = Vec::new();
        for (client, server) in flows {
            let c = net.add_endpoint(client);
            let s = net.add_endpoint(server);
            net.add_path(c, s, &[forward], &[reverse])?;
            pairs.push((c, s));
        }
        Ok((net, pairs))
    }

    /// Add an endpoint; it is polled for transmits and its timer at the next run.
    pub fn add_endpoint(&mut self, endpoint: E) -> EndpointId {
        let id = self.endpoints.len();
        self.endpoints.push(EndpointSlot {
            endpoint,
            paths: Vec::new(),
            scheduled: None,
            dirty: false,
            timeouts_at: u64::MAX,
            timeouts_count: 0,
            timer: None,
        });
        self.mark_dirty(id as u32);
        EndpointId(id)
    }

    /// Add a link direction. Its seed is derived from the network's seed and its index, so adding
    /// links later does not change the draws of earlier ones.
    pub fn add_link(&mut self, name: impl Into<String>, config: LinkConfig) -> Result<LinkId, NetError> {
        let name = name.into();
        let seed = derive_seed(self.config.seed, self.links.len() as u64);
        let link = Link::new(config, seed).map_err(|source| NetError::Link { name: name.clone(), source })?;
        self.links.push(LinkSlot { link, name, scheduled: None });
        Ok(LinkId(self.links.len() - 1))
    }

    /// Join `a` and `b` by a new path: `forward` is the route a → b, `reverse` the route b → a,
    /// each a list of links traversed in order. Returns the new path's index at `a` and at `b`.
    pub fn add_path(
        &mut self,
        a: EndpointId,
        b: EndpointId,
        forward: &[LinkId],
        reverse: &[LinkId],
    ) -> Result<(usize, usize), NetError> {
        for id in [a, b] {
            if id.0 >= self.endpoints.len() {
                return Err(NetError::UnknownEndpoint(id));
            }
        }
        if forward.is_empty() || reverse.is_empty() {
            return Err(NetError::EmptyRoute);
        }
        if let Some(bad) = forward.iter().chain(reverse).find(|l| l.0 >= self.links.len()) {
            return Err(NetError::UnknownLink(*bad));
        }
        let path_a = self.endpoints[a.0].paths.len();
        let path_b = self.endpoints[b.0].paths.len();
        let route_ab = self.routes.len() as u32;
        self.routes.push(Route {
            hops: forward.iter().map(|l| l.0 as u32).collect(),
            destination: b.0 as u32,
            destination_path: path_b as u32,
        });
        self.routes.push(Route {
            hops: reverse.iter().map(|l| l.0 as u32).collect(),
            destination: a.0 as u32,
            destination_path: path_a as u32,
        });
        self.endpoints[a.0].paths.push(route_ab);
        self.endpoints[b.0].paths.push(route_ab + 1);
        Ok((path_a, path_b))
    }

    /// Join `a` and `b` by disjoint paths, one new link per direction each, named
    /// `e{a}-e{b}.p{i}.fwd` / `.rev`. Returns the (forward, reverse) links of each path.
    pub fn connect(
        &mut self,
        a: EndpointId,
        b: EndpointId,
        paths: &[PathConfig],
    ) -> Result<Vec<(LinkId, LinkId)>, NetError> {
        let mut out = Vec::with_capacity(paths.len());
        for (i, path) in paths.iter().enumerate() {
            let prefix = format!("e{}-e{}.p{}", a.0, b.0, i);
            let forward = self.add_link(format!("{prefix}.fwd"), path.forward.clone())?;
            let reverse = self.add_link(format!("{prefix}.rev"), path.reverse.clone())?;
            self.add_path(a, b, &[forward], &[reverse])?;
            out.push((forward, reverse));
        }
        Ok(out)
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn endpoint(&self, id: EndpointId) -> &E {
        &self.endpoints[id.0].endpoint
    }

    /// Mutable access, e.g. to hand the endpoint application data. The endpoint is polled for
    /// transmits and its timer again at the next run.
    pub fn endpoint_mut(&mut self, id: EndpointId) -> &mut E {
        self.mark_dirty(id.0 as u32);
        &mut self.endpoints[id.0].endpoint
    }

    pub fn endpoint_count(&self) -> usize {
        self.endpoints.len()
    }

    /// How many paths `id` has.
    pub fn path_count(&self, id: EndpointId) -> usize {
        self.endpoints[id.0].paths.len()
    }

    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.0].link
    }

    pub fn link_name(&self, id: LinkId) -> &str {
        &self.links[id.0].name
    }

    /// Every link with its name, in creation order.
    pub fn links(&self) -> impl Iterator<Item = (LinkId, &str, &Link)> {
        self.links.iter().enumerate().map(|(i, s)| (LinkId(i), s.name.as_str(), &s.link))
    }

    /// The links of path `path` of endpoint `id`, in the direction leaving `id`.
    pub fn route(&self, id: EndpointId, path: usize) -> Vec<LinkId> {
        let route = self.endpoints[id.0].paths[path];
        self.routes[route as usize].hops.iter().map(|&l| LinkId(l as usize)).collect()
    }

    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// Run until the clock reaches `deadline` (or nothing is left to happen, in which case the
    /// clock still moves to `deadline`). Events at exactly `deadline` are processed.
    pub fn run_until(&mut self, deadline: Instant) -> RunReport {
        let mut report = self.run(deadline, &mut |_| false);
        if report.stop == StopReason::Idle && self.now < deadline {
            self.now = deadline;
            report.now = deadline;
        }
        report
    }

    /// Run until `condition` holds (checked after every instant, and once before the first), or
    /// until `limit`, or until nothing is left to happen, whichever comes first.
    pub fn run_until_condition(
        &mut self,
        limit: Instant,
        mut condition: impl FnMut(&Self) -> bool,
    ) -> RunReport {
        self.run(limit, &mut condition)
    }

    fn run(&mut self, deadline: Instant, condition: &mut dyn FnMut(&Self) -> bool) -> RunReport {
        let first_event = self.stats.events;
        let mut events_this_instant = 0u64;
        loop {
            self.flush_dirty();
            let report =
                |net: &Self, stop| RunReport { stop, now: net.now, events: net.stats.events - first_event };
            if condition(self) {
                return report(self, StopReason::Condition);
            }
            let Some(t) = self.next_wakeup() else {
                return report(self, StopReason::Idle);
            };
            if t > deadline.as_micros() {
                self.now = self.now.max(deadline);
                return report(self, StopReason::Deadline);
            }
            if self.last_instant != Some(t) {
                self.last_instant = Some(t);
                self.stats.instants += 1;
                events_this_instant = 0;
            }
            self.now = Instant::from_micros(t);
            while let Some(&Reverse((time, id))) = self.wakeups.peek() {
                if time != t {
                    break;
                }
                self.wakeups.pop();
                if self.process(time, id) {
                    events_this_instant += 1;
                    self.stats.events += 1;
                }
            }
            if events_this_instant > self.config.max_events_per_instant {
                return report(self, StopReason::Livelock { at: self.now });
            }
        }
    }

    /// The earliest valid wake-up, discarding stale ones.
    fn next_wakeup(&mut self) -> Option<u64> {
        while let Some(&Reverse((time, id))) = self.wakeups.peek() {
            if self.is_current(time, id) {
                return Some(time);
            }
            self.wakeups.pop();
        }
        None
    }

    fn is_current(&self, time: u64, id: u32) -> bool {
        if id & ENDPOINT_BIT != 0 {
            self.endpoints[(id & !ENDPOINT_BIT) as usize].scheduled == Some(time)
        } else {
            self.links[id as usize].scheduled == Some(time)
        }
    }

    /// Handle one wake-up; false if it was stale.
    fn process(&mut self, time: u64, id: u32) -> bool {
        if !self.is_current(time, id) {
            return false;
        }
        let now = self.now;
        if id & ENDPOINT_BIT != 0 {
            let index = (id & !ENDPOINT_BIT) as usize;
            let slot = &mut self.endpoints[index];
            slot.scheduled = None;
            let due = if slot.dirty {
                slot.endpoint.poll_timeout().is_some_and(|t| t <= now)
            } else {
                slot.timer.is_some_and(|t| t <= now.as_micros())
            };
            if due {
                if slot.timeouts_at != time {
                    slot.timeouts_at = time;
                    slot.timeouts_count = 0;
                }
                slot.timeouts_count += 1;
                slot.endpoint.handle_timeout(now);
            }
            // Also reached when a transmit-capped endpoint is polled again.
            self.mark_dirty(index as u32);
        } else {
            let index = id as usize;
            self.links[index].scheduled = None;
            while let Some((tag, datagram)) = self.links[index].link.poll_deliver_tagged(now) {
                let route = &self.routes[(tag >> 32) as usize];
                let hop = (tag & u32::MAX as u64) as usize + 1;
                if let Some(&next) = route.hops.get(hop) {
                    self.links[next as usize].link.send_tagged(now, tag + 1, datagram);
                    self.reschedule_link(next as usize);
                } else {
                    let destination = route.destination as usize;
                    let path = route.destination_path as usize;
                    self.endpoints[destination].endpoint.handle_datagram(now, path, &datagram);
                    self.recycle(datagram);
                    self.stats.datagrams_delivered += 1;
                    self.mark_dirty(destination as u32);
                }
            }
            self.reschedule_link(index);
        }
        true
    }

    /// Keeps a delivered datagram's buffer for a later `poll_transmit_into` (a bounded pool).
    fn recycle(&mut self, datagram: Vec<u8>) {
        if self.spare.len() < MAX_SPARE_BUFFERS {
            self.spare.push(datagram);
        }
    }

    fn mark_dirty(&mut self, index: u32) {
        let slot = &mut self.endpoints[index as usize];
        if !slot.dirty {
            slot.dirty = true;
            self.dirty.push(index);
        }
    }

    /// Drain the transmits of every endpoint touched since the last flush and refresh its timer.
    fn flush_dirty(&mut self) {
        let now = self.now;
        let mut dirty = std::mem::take(&mut self.dirty);
        for &index in &dirty {
            let index = index as usize;
            self.endpoints[index].dirty = false;
            let mut sent = 0u32;
            let mut capped = false;
            loop {
                if sent == self.config.max_transmits_per_poll {
                    capped = true;
                    self.stats.transmit_deferrals += 1;
                    break;
                }
                let slot = &mut self.endpoints[index];
                let mut datagram = self.spare.pop().unwrap_or_default();
                // A recycled ACK's buffer is small: grow it once here rather than while the
                // endpoint writes a full datagram into it.
                datagram.clear();
                datagram.reserve(DATAGRAM_CAPACITY);
                let Some(path) = slot.endpoint.poll_transmit_into(now, &mut datagram) else {
                    self.recycle(datagram);
                    break;
                };
                sent += 1;
                let Some(&route) = slot.paths.get(path) else {
                    self.stats.unroutable += 1;
                    self.recycle(datagram);
                    continue;
                };
                let first = self.routes[route as usize].hops[0] as usize;
                self.links[first].link.send_tagged(now, (route as u64) << 32, datagram);
                self.stats.datagrams_sent += 1;
                self.reschedule_link(first);
            }
            let slot = &mut self.endpoints[index];
            slot.timer = slot.endpoint.poll_timeout().map(Instant::as_micros);
            let mut wake = slot.timer.map(|t| t.max(now.as_micros()));
            if capped {
                wake = Some(wake.map_or(now.as_micros() + 1, |w| w.min(now.as_micros() + 1)));
            }
            if wake == Some(now.as_micros())
                && slot.timeouts_at == now.as_micros()
                && slot.timeouts_count >= self.config.max_timeouts_per_instant
            {
                wake = Some(now.as_micros() + 1);
                self.stats.timeout_deferrals += 1;
            }
            if wake != slot.scheduled {
                slot.scheduled = wake;
                if let Some(w) = wake {
                    self.wakeups.push(Reverse((w, index as u32 | ENDPOINT_BIT)));
                }
            }
        }
        dirty.clear();
        // Keep the allocation; nothing marked endpoints dirty while we flushed (only deliveries
        // and timers do), so `self.dirty` is still empty.
        debug_assert!(self.dirty.is_empty());
        self.dirty = dirty;
        self.compact_if_stale();
    }

    fn reschedule_link(&mut self, index: usize) {
        let slot = &mut self.links[index];
        let next = slot.link.next_delivery().map(Instant::as_micros);
        if next != slot.scheduled {
            slot.scheduled = next;
            if let Some(t) = next {
                self.wakeups.push(Reverse((t, index as u32)));
            }
        }
    }

    /// Rebuild the heap from the current wake-ups when stale entries dominate it.
    fn compact_if_stale(&mut self) {
        let live = self.links.len() + self.endpoints.len();
        if self.wakeups.len() <= 64 + 4 * live {
            return;
        }
        let mut entries = std::mem::take(&mut self.wakeups).into_vec();
        entries.clear();
        entries.extend(
            self.links.iter().enumerate().filter_map(|(i, s)| s.scheduled.map(|t| Reverse((t, i as u32)))),
        );
        entries.extend(
            self.endpoints
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.scheduled.map(|t| Reverse((t, i as u32 | ENDPOINT_BIT)))),
        );
        self.wakeups = BinaryHeap::from(entries);
    }
}

#[cfg(test)]
mod tests;
