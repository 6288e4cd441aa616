//! One direction of a link: a drop-tail queue in front of a transmitter of fixed rate, then a wire
//! of fixed propagation delay with optional jitter, random loss, duplication, scheduled outages and
//! scheduled parameter changes. Pure and seeded: the same configuration, seed and sequence of
//! `send` calls give the same deliveries, bit for bit.
//!
//! The model, per packet, at `send(now, datagram)`:
//! 1. Scheduled changes whose time has come are applied (they affect packets sent from then on;
//!    packets already on the link keep the parameters they were sent with).
//! 2. The queue holds every packet whose serialization has not finished by `now`, including the
//!    one being serialized. The packet is dropped (`dropped_queue`) if it would push the queue past
//!    its limit; a packet arriving at an empty queue is always accepted, whatever its size.
//! 3. Serialization starts when the packets ahead have finished and takes `8·len / rate`; the
//!    transmitter's clock runs in nanoseconds with the sub-nanosecond remainder carried, so long
//!    runs stay exact.
//! 4. The packet arrives `delay` (plus a uniform jitter draw in [0, jitter]) after its last bit
//!    left, rounded up to the microsecond. Unless `jitter_reorders` is set, arrivals are kept in
//!    send order (a packet never overtakes the one ahead, it waits for it).
//! 5. It is lost (`lost_outage`) if any part of its time on the link, from the start of its
//!    serialization to its arrival, overlaps an outage window: a link that goes down loses what
//!    it was carrying. Otherwise it is lost at random (`lost`) by the loss model. Lost packets
//!    still occupied the queue and the transmitter, like a frame sent into a noisy channel.
//! 6. A delivered packet is duplicated with probability `duplication`; the copy is made on the
//!    wire (it costs no transmitter time) and gets its own jitter draw.
//!
//! Each random process (loss, jitter, duplication) has its own RNG stream derived from the link's
//! seed, so enabling one does not change the draws of another.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use braid_proto::Instant;

use crate::loss::{LossModel, LossState};
use crate::rng::{derive_seed, Chance, Rng};

/// How much the drop-tail queue holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueLimit {
    /// At most this many bytes queued (including the packet being serialized).
    Bytes(u64),
    /// At most this many packets queued (including the packet being serialized).
    Packets(u64),
    /// A multiple of the round-trip bandwidth-delay product, `rate × 2 × delay` in bytes (the
    /// link is taken to be one half of a symmetric path). Recomputed when a scheduled change sets
    /// a new rate or delay.
    Bdp(f64),
}

impl Default for QueueLimit {
    /// One BDP, the queue size of the seed papers' experiments (dFEC §V, CTCP Table IV).
    fn default() -> QueueLimit {
        QueueLimit::Bdp(1.0)
    }
}

/// A window `[start, end)` during which the link is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    pub start: Instant,
    pub end: Instant,
}

/// At time `at`, set the given parameters to new values (FMTCP §VI-D: subflow 2's loss surges
/// from 1% to 35% at 50 s and returns to 1% at 200 s).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkChange {
    pub at: Instant,
    pub rate_bps: Option<u64>,
    pub delay: Option<Duration>,
    pub loss: Option<LossModel>,
    pub jitter: Option<Duration>,
    pub duplication: Option<f64>,
    /// A new MTU (`Some(usize::MAX)`: none).
    pub mtu: Option<usize>,
}

/// Everything that defines one link direction. Build with [`LinkConfig::new`] and the `with_*`
/// setters; each field's doc gives its default.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Transmitter rate in bits per second. Must be positive.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail queue limit. Default: one BDP.
    pub queue: QueueLimit,
    /// Random loss. Default: none.
    pub loss: LossModel,
    /// Extra delay drawn uniformly from [0, jitter] per packet. Default: zero.
    pub jitter: Duration,
    /// Whether jitter may make a packet overtake an earlier one. Default: false (FIFO link).
    pub jitter_reorders: bool,
    /// Probability that a delivered packet is delivered twice. Default: zero.
    pub duplication: f64,
    /// Windows during which every packet on the link is lost. Default: none.
    pub outages: Vec<Outage>,
    /// Scheduled parameter changes. Default: none.
    pub changes: Vec<LinkChange>,
    /// Largest datagram the link carries; larger ones are dropped on arrival (no
    /// fragmentation, as for a UDP socket with the don't-fragment bit). Default: no limit.
    pub mtu: Option<usize>,
}

impl LinkConfig {
    /// A lossless FIFO link of the given rate and one-way delay with a one-BDP queue.
    pub fn new(rate_bps: u64, delay: Duration) -> LinkConfig {
        LinkConfig {
            rate_bps,
            delay,
            queue: QueueLimit::default(),
            loss: LossModel::None,
            jitter: Duration::ZERO,
            jitter_reorders: false,
            duplication: 0.0,
            outages: Vec::new(),
            changes: Vec::new(),
            mtu: None,
        }
    }

    pub fn with_queue(mut self, queue: QueueLimit) -> Self {
        self.queue = queue;
        self
    }

    pub fn with_loss(mut self, loss: LossModel) -> Self {
        self.loss = loss;
        self
    }

    pub fn with_jitter(mut self, jitter: Duration, reorders: bool) -> Self {
        self.jitter = jitter;
        self.jitter_reorders = reorders;
        self
    }

    pub fn with_duplication(mut self, probability: f64) -> Self {
        self.duplication = probability;
        self
    }

    pub fn with_outage(mut self, start: Instant, end: Instant) -> Self {
        self.outages.push(Outage { start, end });
        self
    }

    pub fn with_change(mut self, change: LinkChange) -> Self {
        self.changes.push(change);
        self
    }

    /// The queue limit in bytes, or `None` if it is a packet count.
    pub fn queue_limit_bytes(&self) -> Option<u64> {
        queue_bytes(self.queue, self.rate_bps, self.delay)
    }

    /// Check every parameter; the error names the first bad one.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        let bad = |what: String| Err(LinkConfigError(what));
        if self.rate_bps == 0 {
            return bad("rate must be positive".into());
        }
        match self.queue {
            QueueLimit::Bdp(x) if !(x.is_finite() && x > 0.0) => {
                return bad(format!("queue of {x} BDP must be a positive number"))
            }
            QueueLimit::Bytes(0) | QueueLimit::Packets(0) => {
                return bad("queue limit must be positive".into())
            }
            _ => {}
        }
        self.loss.validate().map_err(LinkConfigError)?;
        if !(0.0..=1.0).contains(&self.duplication) {
            return bad(format!("duplication = {} is not a probability in [0, 1]", self.duplication));
        }
        for outage in &self.outages {
            if outage.end <= outage.start {
                return bad(format!(
                    "outage [{} µs, {} µs) ends before it starts",
                    outage.start.as_micros(),
                    outage.end.as_micros()
                ));
            }
        }
        for change in &self.changes {
            if change.rate_bps == Some(0) {
                return bad(format!("change at {} µs sets a zero rate", change.at.as_micros()));
            }
            if let Some(loss) = &change.loss {
                loss.validate()
                    .map_err(|e| LinkConfigError(format!("change at {} µs: {e}", change.at.as_micros())))?;
            }
            if let Some(d) = change.duplication {
                if !(0.0..=1.0).contains(&d) {
                    return bad(format!(
                        "change at {} µs: duplication = {d} is not a probability",
                        change.at.as_micros()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A link configuration that cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid link configuration: {0}")]
pub struct LinkConfigError(pub String);

fn queue_bytes(queue: QueueLimit, rate_bps: u64, delay: Duration) -> Option<u64> {
    match queue {
        QueueLimit::Bytes(b) => Some(b),
        QueueLimit::Packets(_) => None,
        QueueLimit::Bdp(multiple) => {
            let bdp_bits = rate_bps as f64 * 2.0 * delay.as_secs_f64();
            Some((multiple * bdp_bits / 8.0).round() as u64)
        }
    }
}

/// What happened to a packet handed to [`Link::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Will be delivered once.
    Queued,
    /// Will be delivered twice.
    Duplicated,
    /// Dropped on arrival: the queue was full.
    DroppedByQueue,
    /// Dropped on arrival: larger than the link's MTU.
    TooBig,
    /// Serialized, then lost by the random loss model.
    Lost,
    /// Serialized, then lost because its time on the link overlapped an outage.
    LostInOutage,
}

/// Counters of one link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LinkStats {
    /// Packets handed to `send`.
    pub sent: u64,
    pub sent_bytes: u64,
    /// Packets handed out by `poll_deliver` (duplicates included).
    pub delivered: u64,
    pub delivered_bytes: u64,
    /// Dropped on arrival by the drop-tail queue.
    pub dropped_queue: u64,
    /// Lost by the random loss model.
    pub lost: u64,
    /// Lost in an outage.
    pub lost_outage: u64,
    /// Extra copies made by duplication.
    pub duplicated: u64,
    /// Dropped on arrival for exceeding the MTU (not in the CSV, whose columns are fixed).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub dropped_mtu: u64,
    /// The largest queue seen, in bytes, including the packet being serialized.
    pub max_queue_bytes: u64,
}

/// A packet on the wire, ordered by arrival time and then by send order.
#[derive(Debug)]
struct InFlight {
    arrival_us: u64,
    seq: u64,
    tag: u64,
    datagram: Vec<u8>,
}

impl InFlight {
    fn key(&self) -> (u64, u64) {
        (self.arrival_us, self.seq)
    }
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// One link direction in motion. See the module doc for the model.
#[derive(Debug)]
pub struct Link {
    // Parameters in force now.
    rate_bps: u64,
    delay_ns: u64,
    jitter_ns: u64,
    jitter_reorders: bool,
    duplication: Chance,
    queue: QueueLimit,
    queue_limit_bytes: Option<u64>,
    loss: LossState,
    outages: Vec<Outage>,
    /// Outages before this index ended before any future packet can start serializing.
    outage_cursor: usize,
    changes: Vec<LinkChange>,
    next_change: usize,
    mtu: usize,

    rng_loss: Rng,
    rng_jitter: Rng,
    rng_duplication: Rng,

    /// When the transmitter finishes the last accepted packet, in ns.
    busy_until_ns: u64,
    /// Remainder of the serialization-time division, in units of 1 / rate ns.
    carry: u64,
    /// Serialization end time and size of every packet not yet fully serialized.
    backlog: VecDeque<(u64, u32)>,
    backlog_bytes: u64,
    last_now_us: u64,
    /// Latest arrival scheduled so far; a FIFO link never schedules an earlier one.
    last_arrival_us: u64,
    seq: u64,

    /// Arrivals in non-decreasing order (the common case: no reordering), and the rest.
    in_order: VecDeque<InFlight>,
    reordered: BinaryHeap<Reverse<InFlight>>,

    stats: LinkStats,
}

impl Link {
    /// A link running `config`, drawing randomness from `seed` only.
    pub fn new(config: LinkConfig, seed: u64) -> Result<Link, LinkConfigError> {
        config.validate()?;
        let mut rng_loss = Rng::new(derive_seed(seed, 1));
        let loss = LossState::new(&config.loss, &mut rng_loss);
        let mut outages = config.outages;
        outages.sort_by_key(|o| o.start);
        // Merge overlapping windows so the list is sorted by start and by end alike.
        let mut merged: Vec<Outage> = Vec::with_capacity(outages.len());
        for o in outages {
            match merged.last_mut() {
                Some(last) if o.start <= last.end => last.end = last.end.max(o.end),
                _ => merged.push(o),
            }
        }
        let mut changes = config.changes;
        changes.sort_by_key(|c| c.at); // stable: changes at the same instant apply in given order
        Ok(Link {
            rate_bps: config.rate_bps,
            delay_ns: duration_ns(config.delay),
            jitter_ns: duration_ns(config.jitter),
            jitter_reorders: config.jitter_reorders,
            duplication: Chance::new(config.duplication),
            queue: config.queue,
            queue_limit_bytes: queue_bytes(config.queue, config.rate_bps, config.delay),
            loss,
            outages: merged,
            outage_cursor: 0,
            changes,
            next_change: 0,
            mtu: config.mtu.unwrap_or(usize::MAX),
            rng_loss,
            rng_jitter: Rng::new(derive_seed(seed, 2)),
            rng_duplication: Rng::new(derive_seed(seed, 3)),
            busy_until_ns: 0,
            carry: 0,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            last_now_us: 0,
            last_arrival_us: 0,
            seq: 0,
            in_order: VecDeque::new(),
            reordered: BinaryHeap::new(),
            stats: LinkStats::default(),
        })
    }

    /// Hand a datagram to the link at `now`. `now` must not go backwards between calls; an
    /// earlier value is treated as the latest one seen.
    pub fn send(&mut self, now: Instant, datagram: Vec<u8>) -> Fate {
        self.send_tagged(now, 0, datagram)
    }

    /// [`send`](Self::send) with an opaque `tag` handed back by
    /// [`poll_deliver_tagged`](Self::poll_deliver_tagged); the network uses it to route packets
    /// of many connections over one shared link.
    pub fn send_tagged(&mut self, now: Instant, tag: u64, datagram: Vec<u8>) -> Fate {
        let now_us = now.as_micros().max(self.last_now_us);
        self.last_now_us = now_us;
        self.apply_changes(now_us);
        let now_ns = now_us.saturating_mul(1000);
        let len = datagram.len() as u64;
        self.stats.sent += 1;
        self.stats.sent_bytes += len;
        if datagram.len() > self.mtu {
            self.stats.dropped_mtu += 1;
            return Fate::TooBig;
        }

        // Drop-tail queue: forget the packets whose last bit has left, then check the limit.
        while let Some(&(finish, size)) = self.backlog.front() {
            if finish > now_ns {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= size as u64;
        }
        if !self.backlog.is_empty() {
            let full = match (self.queue, self.queue_limit_bytes) {
                (QueueLimit::Packets(n), _) => self.backlog.len() as u64 >= n,
                (_, Some(limit)) => self.backlog_bytes + len > limit,
                (_, None) => false,
            };
            if full {
                self.stats.dropped_queue += 1;
                return Fate::DroppedByQueue;
            }
        }

        // Serialization, with the remainder carried so that rounding never accumulates.
        let start_ns = if self.busy_until_ns > now_ns {
            self.busy_until_ns
        } else {
            self.carry = 0;
            now_ns
        };
        let numerator = len * 8 * 1_000_000_000 + self.carry;
        let finish_ns = start_ns + numerator / self.rate_bps;
        self.carry = numerator % self.rate_bps;
        self.busy_until_ns = finish_ns;
        self.backlog.push_back((finish_ns, len as u32));
        self.backlog_bytes += len;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.backlog_bytes);

        let base_ns = finish_ns + self.delay_ns;
        // Draw jitter for every packet, lost or not, so losses do not shift later packets' jitter.
        let jitter = self.draw_jitter();
        let arrival_ns = base_ns + jitter;
        if self.in_outage(start_ns, arrival_ns) {
            // Step the loss process anyway: the random losses of a run do not depend on outages.
            self.loss.lose(&mut self.rng_loss);
            self.stats.lost_outage += 1;
            return Fate::LostInOutage;
        }
        if self.loss.lose(&mut self.rng_loss) {
            self.stats.lost += 1;
            return Fate::Lost;
        }
        let duplicate = !self.duplication.is_never() && self.rng_duplication.chance(self.duplication);
        if duplicate {
            let copy_arrival = base_ns + self.draw_jitter();
            self.stats.duplicated += 1;
            let copy = datagram.clone();
            self.schedule(arrival_ns, tag, datagram);
            self.schedule(copy_arrival, tag, copy);
            Fate::Duplicated
        } else {
            self.schedule(arrival_ns, tag, datagram);
            Fate::Queued
        }
    }

    /// When the next packet arrives, if any is on the wire.
    pub fn next_delivery(&self) -> Option<Instant> {
        self.peek_key().map(|(at, _)| Instant::from_micros(at))
    }

    /// The next packet whose arrival time is at or before `now`.
    pub fn poll_deliver(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.poll_deliver_tagged(now).map(|(_, d)| d)
    }

    /// [`poll_deliver`](Self::poll_deliver), with the tag given to `send_tagged`.
    pub fn poll_deliver_tagged(&mut self, now: Instant) -> Option<(u64, Vec<u8>)> {
        let (at, _) = self.peek_key()?;
        if at > now.as_micros() {
            return None;
        }
        let from_heap = match (self.in_order.front(), self.reordered.peek()) {
            (Some(a), Some(Reverse(b))) => b.key() < a.key(),
            (None, Some(_)) => true,
            _ => false,
        };
        let packet =
            if from_heap { self.reordered.pop().map(|Reverse(p)| p) } else { self.in_order.pop_front() }?;
        self.stats.delivered += 1;
        self.stats.delivered_bytes += packet.datagram.len() as u64;
        Some((packet.tag, packet.datagram))
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Packets on the wire (sent, not lost, not yet delivered), duplicates included.
    pub fn in_flight(&self) -> usize {
        self.in_order.len() + self.reordered.len()
    }

    /// Bytes queued at `now` (including the packet being serialized), as the drop-tail queue sees
    /// them.
    pub fn queued_bytes(&self, now: Instant) -> u64 {
        let now_ns = now.as_micros().saturating_mul(1000);
        self.backlog.iter().filter(|(finish, _)| *finish > now_ns).map(|&(_, size)| size as u64).sum()
    }

    /// The rate in force (after the changes applied so far).
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    fn peek_key(&self) -> Option<(u64, u64)> {
        let a = self.in_order.front().map(InFlight::key);
        let b = self.reordered.peek().map(|Reverse(p)| p.key());
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn draw_jitter(&mut self) -> u64 {
        if self.jitter_ns == 0 {
            0
        } else {
            self.rng_jitter.up_to(self.jitter_ns)
        }
    }

    fn schedule(&mut self, arrival_ns: u64, tag: u64, datagram: Vec<u8>) {
        let mut arrival_us = arrival_ns.div_ceil(1000);
        if !self.jitter_reorders {
            arrival_us = arrival_us.max(self.last_arrival_us);
        }
        self.last_arrival_us = self.last_arrival_us.max(arrival_us);
        let packet = InFlight { arrival_us, seq: self.seq, tag, datagram };
        self.seq += 1;
        match self.in_order.back() {
            Some(last) if last.arrival_us > arrival_us => self.reordered.push(Reverse(packet)),
            _ => self.in_order.push_back(packet),
        }
    }

    /// Whether `[start_ns, arrival_ns]` overlaps an outage `[start, end)`.
    fn in_outage(&mut self, start_ns: u64, arrival_ns: u64) -> bool {
        // Serialization start times never decrease, so outages over before it are over for good.
        while let Some(o) = self.outages.get(self.outage_cursor) {
            if o.end.as_micros().saturating_mul(1000) <= start_ns {
                self.outage_cursor += 1;
            } else {
                break;
            }
        }
        // The first remaining outage ends after `start_ns`; it overlaps iff it starts by arrival.
        self.outages
            .get(self.outage_cursor)
            .is_some_and(|o| o.start.as_micros().saturating_mul(1000) <= arrival_ns)
    }

    fn apply_changes(&mut self, now_us: u64) {
        while let Some(change) = self.changes.get(self.next_change) {
            if change.at.as_micros() > now_us {
                break;
            }
            let change = *change;
            self.next_change += 1;
            if let Some(rate) = change.rate_bps {
                self.rate_bps = rate;
            }
            if let Some(delay) = change.delay {
                self.delay_ns = duration_ns(delay);
            }
            if let Some(loss) = change.loss {
                self.loss = LossState::new(&loss, &mut self.rng_loss);
            }
            if let Some(jitter) = change.jitter {
                self.jitter_ns = duration_ns(jitter);
            }
            if let Some(duplication) = change.duplication {
                self.duplication = Chance::new(duplication);
            }
            if let Some(mtu) = change.mtu {
                self.mtu = mtu;
            }
            self.queue_limit_bytes =
                queue_bytes(self.queue, self.rate_bps, Duration::from_nanos(self.delay_ns));
        }
    }
}

fn duration_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests;
