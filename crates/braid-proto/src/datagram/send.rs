//! The sending side of datagrams: the queue, the datagram blocks and their repairs
//! (PROTOCOL.md §15.3–§15.5).

use std::collections::VecDeque;
use std::time::Duration;

use braid_fec::{BlockEncoder, CodeFamily, CodecConfig, Coefficients, Encoder, SymbolId};

use super::{coded_form, repair_ratio, DatagramConfig, DatagramRedundancy, DatagramStats, SentDatagrams};
use crate::time::Instant;
use crate::wire::{DatagramFrame, DatagramRepairFrame, Frame, Writer, CODED_HEADER, MAX_DATAGRAM_BLOCK_LEN};

/// Blocks kept for repairs answering a loss (older ones are past their deadline anyway).
const KEPT_BLOCKS: usize = 4;
/// Most repair credit a run of loss-driven repairs may borrow.
const MAX_DEBT: f64 = 2.0;
/// Most repairs the takeover allowance holds for datagrams sent on a path that fell silent
/// (see [`DatagramSender::on_suspected`]): 150 ms of a 3.4 Mbit/s stream of 1000-byte
/// datagrams, more than a 60 ms path carries in flight.
const TAKEOVER_CAP: f64 = 64.0;
/// The takeover allowance a connection starts with: half the cap, so a path's death early in a
/// stream is still repaired, while a host too busy to read its ACKs in time (a silence that was
/// no death) costs at most this much before the allowance has been earned.
const TAKEOVER_START: f64 = 32.0;
/// Takeover allowance earned per datagram sent.
const TAKEOVER_SHARE: f64 = 0.005;
/// Share of each datagram's repair credit that pays back repairs wasted on a silence that was
/// no death (see [`DatagramSender::on_suspected_delivered`]) while any are owed.
const REPAY_SHARE: f64 = 0.5;
/// Weight of each new sample in the loss estimate the repair ratio follows.
const LOSS_GAIN: f64 = 0.05;
/// Bytes a DATAGRAM_REPAIR frame adds to its payload at most: type, block, span, seed, symbol
/// size and length.
pub const REPAIR_FRAME_OVERHEAD: usize = 1 + 8 + 1 + 4 + 4 + 4;
/// Bytes a DATAGRAM frame adds to its payload at most: type, block, index, time, deadline and
/// length.
pub const DATAGRAM_FRAME_OVERHEAD: usize = 1 + 8 + 1 + 8 + 4 + 4;
/// Room a datagram needs in a packet so that a repair covering it fits one too (a repair
/// carries the coded form, [`CODED_HEADER`] bytes longer than the datagram).
pub const DATAGRAM_ROOM: usize = if DATAGRAM_FRAME_OVERHEAD > REPAIR_FRAME_OVERHEAD + CODED_HEADER {
    DATAGRAM_FRAME_OVERHEAD
} else {
    REPAIR_FRAME_OVERHEAD + CODED_HEADER
};

struct Queued {
    data: Vec<u8>,
    /// When the application handed it over.
    pushed: Instant,
    /// Past this it is of no use.
    expires: Instant,
    deadline_ms: u16,
}

struct DatagramBlock {
    id: u64,
    encoder: BlockEncoder,
    opened: Instant,
    /// The longest coded datagram pushed so far: repairs end there (the rest is zeros).
    longest: usize,
    /// When each datagram pushed stops being of use.
    expiries: Vec<Instant>,
    /// Datagrams pushed since the last repair, and when the first of them was.
    unprotected: u16,
    first_unprotected: Option<Instant>,
    /// The spans of the repairs sent.
    repair_spans: Vec<u16>,
    /// Datagram losses and repair losses detected from ACKs, and the newest lost index.
    lost: u32,
    newest_lost: Option<u16>,
    /// Repairs owed for detected losses.
    owed: u32,
    /// The block takes no more datagrams.
    closed: bool,
}

impl DatagramBlock {
    fn len(&self) -> u16 {
        self.encoder.source_count() as u16
    }

    /// Whether a repair of this block could still help a datagram in time: the newest one it
    /// covers (or, for a loss-driven repair, the newest lost one) is before its deadline once
    /// the repair arrives.
    fn useful(&self, arrival: Instant, newest: u16) -> bool {
        self.expiries.get(usize::from(newest)).is_some_and(|&e| e > arrival)
    }

    /// Repairs still owed for the losses detected: the losses minus the repairs sent that cover
    /// the newest lost datagram (a repair covering it covers every earlier one).
    fn shortfall(&self) -> u32 {
        let Some(newest) = self.newest_lost else { return 0 };
        let covering = self.repair_spans.iter().filter(|&&s| s > newest).count() as u32;
        self.lost.saturating_sub(covering)
    }
}

/// What `write` put in the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Datagram { block: u64, index: u16 },
    Repair { block: u64, for_loss: bool },
}

/// Datagrams waiting, the blocks sent and the repair credit.
pub struct DatagramSender {
    config: DatagramConfig,
    queue: VecDeque<Queued>,
    blocks: VecDeque<DatagramBlock>,
    next_block: u64,
    /// Repairs earned by datagrams sent and not yet spent.
    credit: f64,
    /// Repairs a path's death may still cost beyond the credit (see `on_suspected`).
    takeover: f64,
    /// Repairs sent for datagrams given up on a silent path that arrived after all, not yet
    /// paid back out of the repair credit.
    waste: f64,
    /// Loss estimate of the paths the datagrams went on.
    loss: f64,
    /// The latest one-way delay estimate of the path datagrams took.
    one_way: Duration,
    scratch: Vec<u8>,
    pub stats: DatagramStats,
}

impl DatagramSender {
    pub fn new(config: DatagramConfig) -> DatagramSender {
        DatagramSender {
            config,
            queue: VecDeque::new(),
            blocks: VecDeque::new(),
            next_block: 0,
            credit: 0.0,
            takeover: TAKEOVER_START,
            waste: 0.0,
            loss: 0.0,
            one_way: Duration::ZERO,
            scratch: Vec::new(),
            stats: DatagramStats::default(),
        }
    }

    pub fn config(&self) -> &DatagramConfig {
        &self.config
    }

    /// Queues a datagram with the configured deadline; a full queue drops its oldest.
    pub fn push(&mut self, now: Instant, data: &[u8]) {
        self.push_with_deadline(now, data, self.config.deadline);
    }

    /// Queues a datagram with its own deadline (at most 65.535 s).
    pub fn push_with_deadline(&mut self, now: Instant, data: &[u8], deadline: Duration) {
        let deadline = deadline.min(Duration::from_millis(u16::MAX.into()));
        if self.queue.len() >= self.config.send_queue.max(1) {
            self.queue.pop_front();
            self.stats.dropped += 1;
            self.stats.dropped_full += 1;
        }
        self.queue.push_back(Queued {
            data: data.to_vec(),
            pushed: now,
            expires: now + deadline,
            deadline_ms: deadline.as_millis() as u16,
        });
    }

    /// Whether anything is queued or a block may still want a repair (cheap: checked on every
    /// poll before anything else).
    pub fn has_work(&self) -> bool {
        !self.queue.is_empty() || self.blocks.iter().any(|b| b.owed > 0 || b.unprotected > 0)
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// From when the oldest datagram waiting no longer waits for the pacer
    /// ([`DatagramConfig::pacer_wait`]), if one waits and the pacer's wait is bounded.
    pub fn unpaced_from(&self) -> Option<Instant> {
        Some(self.queue.front()?.pushed + self.config.pacer_wait?)
    }

    /// Drops queued datagrams past their deadline.
    pub fn expire(&mut self, now: Instant) {
        let before = self.queue.len();
        self.queue.retain(|q| q.expires > now);
        let gone = (before - self.queue.len()) as u64;
        self.stats.dropped += gone;
        self.stats.dropped_expired += gone;
    }

    /// Drops queued datagrams that cannot arrive before their deadline even if sent now over a
    /// path `one_way` long: sent, they would only hold window and queue space that a datagram
    /// still in time needs (a path just taking over from a silent one is short of window).
    pub fn drop_hopeless(&mut self, now: Instant, one_way: Duration) {
        let before = self.queue.len();
        let arrival = now + one_way;
        self.queue.retain(|q| q.expires > arrival);
        let gone = (before - self.queue.len()) as u64;
        self.stats.dropped += gone;
        self.stats.dropped_hopeless += gone;
    }

    /// The earliest time something queued expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.queue.iter().map(|q| q.expires).min()
    }

    fn ratio(&self) -> f64 {
        match self.config.redundancy {
            DatagramRedundancy::Adaptive => repair_ratio(self.loss),
            DatagramRedundancy::Fixed(r) => r.clamp(0.0, 1.0),
        }
    }

    fn repairs_enabled(&self) -> bool {
        self.config.redundancy != DatagramRedundancy::Fixed(0.0)
    }

    /// How long a block stays open: two thirds of what the deadline leaves after the one-way
    /// delay, so a repair sent when it closes still reaches its first datagram in time.
    fn block_span(&self) -> Duration {
        self.config.deadline.saturating_sub(self.one_way) * 2 / 3
    }

    /// How long datagrams wait for a repair before half a repair's credit buys one early: half
    /// of what the deadline leaves after the one-way delay.
    fn tail_wait(&self) -> Duration {
        self.config.deadline.saturating_sub(self.one_way) / 2
    }

    /// When the datagrams sent since a block's last repair get one of their own if no credit
    /// comes first (a tail, or a stream too slow to earn a whole repair in time), or `None`.
    pub fn tail_due(&self, now: Instant) -> Option<Instant> {
        if !self.repairs_enabled() || self.credit < 0.5 {
            return None;
        }
        let wait = self.tail_wait();
        let one_way = self.one_way;
        self.blocks
            .iter()
            .filter_map(|b| {
                let due = (b.first_unprotected.filter(|_| b.unprotected > 0)? + wait).max(now);
                // Only while the repair can still reach the newest of them in time.
                b.expiries.last().is_some_and(|&e| e > due + one_way).then_some(due)
            })
            .min()
    }

    /// Whether `write` has something to send at `now` (ignoring room in the packet).
    pub fn wants_to_send(&self, now: Instant, one_way: Duration) -> bool {
        self.queue.iter().any(|q| q.expires > now) || self.repair_block(now, one_way).is_some()
    }

    /// The block that should get a repair now, and whether for a detected loss.
    fn repair_block(&self, now: Instant, one_way: Duration) -> Option<(usize, bool)> {
        if !self.repairs_enabled() {
            return None;
        }
        let arrival = now + one_way;
        // Losses first: a datagram known lost and still in time.
        for (i, b) in self.blocks.iter().enumerate() {
            if b.owed > 0 && b.newest_lost.is_some_and(|n| b.useful(arrival, n)) {
                return Some((i, true));
            }
        }
        // Then datagrams sent since their block's last repair, oldest block first: with a
        // whole repair's credit, or half of one once the block closed or they waited long.
        let wait = self.tail_wait();
        self.blocks
            .iter()
            .position(|b| {
                b.unprotected > 0
                    && b.useful(arrival, b.len() - 1)
                    && (self.credit >= 1.0
                        || (self.credit >= 0.5
                            && (b.closed || b.first_unprotected.is_some_and(|t| t + wait <= now))))
            })
            .map(|i| (i, false))
    }

    /// Writes the next datagram frame or repair that fits in `room` bytes into `buf`. `block`:
    /// only a frame of that datagram block (the packet already holds one). `loss`: the loss
    /// estimate of the path it goes on; `one_way`: that path's one-way delay estimate.
    /// `max_payload`: the largest datagram the paths carry (sets a new block's symbol size).
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
        room: usize,
        block: Option<u64>,
        loss: f64,
        one_way: Duration,
        max_payload: usize,
    ) -> Option<Written> {
        self.expire(now);
        self.one_way = one_way;
        if let Some((i, for_loss)) = self.repair_block(now, one_way) {
            let b = &self.blocks[i];
            if block.is_none_or(|id| id == b.id) && b.longest + REPAIR_FRAME_OVERHEAD <= room {
                return self.write_repair(now, buf, i, for_loss);
            }
            if block.is_none() {
                // Not even an empty packet takes it (the path's PLPMTU shrank below the block's
                // longest datagram): the repair is given up rather than waited for forever.
                let b = &mut self.blocks[i];
                if for_loss {
                    b.owed = 0;
                } else {
                    b.unprotected = 0;
                    b.first_unprotected = None;
                }
            }
        }
        let q = self.queue.front()?;
        if q.data.len() + DATAGRAM_FRAME_OVERHEAD > room {
            // Too large for this path now: leave it for a larger one, or its deadline.
            return None;
        }
        let symbol_size =
            (max_payload.max(q.data.len()) + CODED_HEADER).min(crate::wire::MAX_DATAGRAM_SYMBOL);
        let need_new = self.blocks.back().is_none_or(|b| {
            b.closed
                || usize::from(b.len()) >= self.config.max_block_len.clamp(1, MAX_DATAGRAM_BLOCK_LEN)
                || now - b.opened >= self.block_span()
                || b.encoder.symbol_size() < q.data.len() + CODED_HEADER
        });
        if need_new {
            if block.is_some() {
                return None;
            }
            self.open_block(now, symbol_size);
        }
        let b = self.blocks.back_mut().expect("a block is open");
        if block.is_some_and(|id| id != b.id) {
            return None;
        }
        let q = self.queue.pop_front().expect("checked");
        let sent_ms = (now.as_micros() / 1000) as u32;
        coded_form(&mut self.scratch, &q.data, sent_ms, q.deadline_ms);
        b.longest = b.longest.max(self.scratch.len());
        self.scratch.resize(b.encoder.symbol_size(), 0);
        let index = b.len();
        b.encoder.push_source(&self.scratch).ok()?;
        b.expiries.push(q.expires);
        b.unprotected += 1;
        b.first_unprotected.get_or_insert(now);
        let frame = Frame::Datagram(DatagramFrame {
            block: b.id,
            index,
            sent_ms,
            deadline_ms: q.deadline_ms,
            data: &q.data,
        });
        frame.write(&mut Writer::new(buf)).ok()?;
        self.loss += LOSS_GAIN * (loss.clamp(0.0, 1.0) - self.loss);
        let id = b.id;
        let earned = self.ratio();
        let repaid = (earned * REPAY_SHARE).min(self.waste);
        self.waste -= repaid;
        self.credit = (self.credit + earned - repaid).min(4.0);
        self.takeover = (self.takeover + TAKEOVER_SHARE).min(TAKEOVER_CAP);
        self.stats.sent += 1;
        self.stats.sent_bytes += q.data.len() as u64;
        let waited = (now - q.pushed).as_micros() as u64;
        self.stats.waited_10ms += u64::from(waited > 10_000);
        self.stats.waited_50ms += u64::from(waited > 50_000);
        self.stats.wait_max_us = self.stats.wait_max_us.max(waited);
        Some(Written::Datagram { block: id, index })
    }

    fn open_block(&mut self, now: Instant, symbol_size: usize) {
        if let Some(b) = self.blocks.back_mut() {
            b.closed = true;
        }
        let config = CodecConfig {
            symbol_size,
            max_block_len: MAX_DATAGRAM_BLOCK_LEN,
            ..CodecConfig::new(CodeFamily::Rlnc)
        };
        let encoder = config.encoder(self.next_block).expect("valid datagram codec parameters");
        self.blocks.push_back(DatagramBlock {
            id: self.next_block,
            encoder,
            opened: now,
            longest: 0,
            expiries: Vec::new(),
            unprotected: 0,
            first_unprotected: None,
            repair_spans: Vec::new(),
            lost: 0,
            newest_lost: None,
            owed: 0,
            closed: false,
        });
        self.next_block += 1;
        while self.blocks.len() > KEPT_BLOCKS {
            self.blocks.pop_front();
        }
    }

    fn write_repair(&mut self, now: Instant, buf: &mut Vec<u8>, i: usize, for_loss: bool) -> Option<Written> {
        let b = &mut self.blocks[i];
        self.scratch.resize(b.encoder.symbol_size(), 0);
        let Ok(Some(SymbolId::Rlnc { span, coefficients: Coefficients::Seed(seed) })) =
            b.encoder.next_repair(&mut self.scratch)
        else {
            return None;
        };
        let payload = &self.scratch[..b.longest];
        let frame = Frame::DatagramRepair(DatagramRepairFrame {
            block: b.id,
            span,
            seed,
            symbol_size: b.encoder.symbol_size() as u16,
            payload,
        });
        frame.write(&mut Writer::new(buf)).ok()?;
        b.repair_spans.push(span);
        b.unprotected = 0;
        b.first_unprotected = None;
        // A repair for a detected loss is the next repair brought forward: it spends credit
        // too (down to a bounded debt), so the overhead follows the ratio unless losses
        // outrun it.
        self.credit = (self.credit - 1.0).max(-MAX_DEBT);
        if for_loss {
            b.owed = b.owed.saturating_sub(1);
            self.stats.loss_repairs_sent += 1;
        }
        self.stats.repairs_sent += 1;
        self.stats.repair_bytes += payload.len() as u64;
        let _ = now;
        Some(Written::Repair { block: b.id, for_loss })
    }

    /// A packet carrying `sent` went out on a path that fell silent: its block owes repairs
    /// as for a loss, paid by the repair credit (down to the bounded debt, after the repairs
    /// already owed) or else by the takeover allowance; beyond both, it owes nothing.
    ///
    /// The allowance is what a path's death may cost on top of the ratio: a full path's worth
    /// of datagram packets in flight (`TAKEOVER_CAP`), refilled by `TAKEOVER_SHARE` of the
    /// datagrams sent — half a percentage point, the margin [`repair_ratio`] leaves inside the
    /// overhead budget. A silent path may only be slow (a stalled receiver, a CPU-starved
    /// host), and such repairs are spare: the allowance bounds what they cost.
    ///
    /// Returns how its repairs are paid: `None` if not at all (nothing is owed for it),
    /// `Some(true)` by the allowance, `Some(false)` by the credit.
    pub fn on_suspected(&mut self, sent: SentDatagrams) -> Option<bool> {
        let owed: u32 = self.blocks.iter().map(|b| b.owed).sum();
        let carried = f64::from(sent.datagrams) + f64::from(sent.repairs);
        let by_allowance = if self.credit + MAX_DEBT - f64::from(owed) >= 1.0 {
            false
        } else if self.takeover >= carried {
            self.takeover -= carried;
            self.stats.suspected_on_allowance += carried as u64;
            true
        } else {
            return None;
        };
        self.stats.suspected += carried as u64;
        self.on_lost(sent);
        Some(by_allowance)
    }

    /// A packet carrying `sent`, given up when its path fell silent, was acknowledged after all
    /// (the path, or a host, was slow): its datagrams and repairs no longer count as lost, so
    /// its block owes the repairs still unsent for them no more. If the takeover allowance paid
    /// for them (`paid_by_allowance`), it gets them back, and the repairs already sent for them
    /// — spare, since nothing was lost — are paid back out of the repair credit instead
    /// (`REPAY_SHARE` of what each datagram earns): the allowance is for deaths, and the
    /// overhead of a stream whose host only stalled comes back to the ratio's.
    pub fn on_suspected_delivered(&mut self, sent: SentDatagrams, paid_by_allowance: bool) {
        let carried = u32::from(sent.datagrams) + u32::from(sent.repairs);
        self.stats.suspected_delivered += u64::from(carried);
        let Some(b) = self.blocks.iter_mut().find(|b| b.id == sent.block) else { return };
        let owed = b.owed;
        b.lost = b.lost.saturating_sub(carried);
        b.owed = b.shortfall().min(owed);
        if paid_by_allowance {
            let spent = carried.saturating_sub(owed - b.owed);
            self.takeover = (self.takeover + f64::from(carried)).min(TAKEOVER_CAP);
            self.waste = (self.waste + f64::from(spent)).min(TAKEOVER_CAP);
        }
    }

    /// A packet carrying `sent` was declared lost: its block owes a repair for each loss not
    /// already covered by a repair sent after it.
    pub fn on_lost(&mut self, sent: SentDatagrams) {
        let Some(b) = self.blocks.iter_mut().find(|b| b.id == sent.block) else { return };
        b.lost += u32::from(sent.datagrams) + u32::from(sent.repairs);
        if let Some(n) = sent.newest {
            b.newest_lost = Some(b.newest_lost.map_or(n, |m| m.max(n)));
        } else if b.newest_lost.is_none() {
            // Only repairs were lost: they covered up to the block's end when sent.
            b.newest_lost = Some(b.len().saturating_sub(1));
        }
        b.owed = b.shortfall();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::FrameIter;

    fn frames(buf: &[u8]) -> Vec<Frame<'_>> {
        FrameIter::new(buf).collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn repairs_follow_the_ratio_and_expired_datagrams_are_dropped() {
        let config =
            DatagramConfig { redundancy: DatagramRedundancy::Fixed(0.25), ..DatagramConfig::default() };
        let mut tx = DatagramSender::new(config);
        let mut now = Instant::ZERO;
        let (mut datagrams, mut repairs) = (0, 0);
        for i in 0..40u8 {
            tx.push(now, &[i; 100]);
            let mut buf = Vec::new();
            while let Some(w) = tx.write(now, &mut buf, 1500, None, 0.0, Duration::from_millis(10), 1200) {
                match w {
                    Written::Datagram { .. } => datagrams += 1,
                    Written::Repair { .. } => repairs += 1,
                }
            }
            assert!(!frames(&buf).is_empty());
            now += Duration::from_millis(1);
        }
        assert_eq!((datagrams, repairs), (40, 10));
        tx.push(now, &[1; 10]);
        tx.expire(now + Duration::from_millis(150));
        assert_eq!((tx.queued(), tx.stats.dropped), (0, 1));
    }

    #[test]
    fn a_detected_loss_earns_a_repair_only_while_in_time() {
        let config =
            DatagramConfig { redundancy: DatagramRedundancy::Fixed(0.01), ..DatagramConfig::default() };
        let mut tx = DatagramSender::new(config);
        let one_way = Duration::from_millis(20);
        for i in 0..3u8 {
            tx.push(Instant::ZERO, &[i; 50]);
        }
        let mut buf = Vec::new();
        while tx.write(Instant::ZERO, &mut buf, 1500, None, 0.0, one_way, 1200).is_some() {}
        tx.on_lost(SentDatagrams { block: 0, newest: Some(1), datagrams: 1, repairs: 0 });
        let t = Instant::ZERO + Duration::from_millis(60);
        assert!(tx.wants_to_send(t, one_way));
        buf.clear();
        assert_eq!(
            tx.write(t, &mut buf, 1500, None, 0.0, one_way, 1200),
            Some(Written::Repair { block: 0, for_loss: true })
        );
        assert!(!tx.wants_to_send(t, one_way));
        // Too late: the datagram's deadline passes before a repair could arrive.
        tx.on_lost(SentDatagrams { block: 0, newest: Some(2), datagrams: 1, repairs: 0 });
        assert!(!tx.wants_to_send(Instant::ZERO + Duration::from_millis(140), one_way));
    }

    #[test]
    fn a_silence_that_ends_in_an_ack_owes_nothing_more() {
        let mut tx = DatagramSender::new(DatagramConfig::default());
        let one_way = Duration::from_millis(20);
        for i in 0..8u8 {
            tx.push(Instant::ZERO, &[i; 50]);
        }
        let mut buf = Vec::new();
        while tx.write(Instant::ZERO, &mut buf, 1500, None, 0.0, one_way, 1200).is_some() {}
        let takeover = tx.takeover;
        // Four packets of two datagrams each given up for their path's silence: the credit
        // (nothing earned yet beyond its debt) pays for the first, the allowance for the rest.
        let packets: Vec<_> = (0..4u16)
            .map(|k| SentDatagrams { block: 0, newest: Some(2 * k + 1), datagrams: 2, repairs: 0 })
            .collect();
        let paid: Vec<_> = packets.iter().map(|&p| tx.on_suspected(p)).collect();
        assert_eq!(paid, [Some(false), Some(true), Some(true), Some(true)]);
        assert_eq!(tx.blocks[0].owed, 8);
        assert_eq!(tx.takeover, takeover - 6.0);
        let t = Instant::ZERO + Duration::from_millis(30);
        buf.clear();
        assert_eq!(
            tx.write(t, &mut buf, 1500, None, 0.0, one_way, 1200),
            Some(Written::Repair { block: 0, for_loss: true })
        );
        // All were delivered after all: the seven repairs still owed are not sent, the
        // allowance gets back all it paid, and the one repair sent is waste (the credit-paid
        // packet's losses are undone first, so it counts against an allowance-paid one).
        for (&p, by_allowance) in packets.iter().zip(paid) {
            tx.on_suspected_delivered(p, by_allowance.unwrap());
        }
        assert_eq!(tx.blocks[0].owed, 0);
        assert!(!tx.wants_to_send(t, one_way));
        assert_eq!((tx.takeover, tx.waste), (takeover, 1.0));
        assert_eq!((tx.stats.suspected, tx.stats.suspected_delivered), (8, 8));
        // The waste is paid back with half of what each datagram earns.
        let credit = tx.credit;
        tx.push(t, &[9; 50]);
        buf.clear();
        assert!(matches!(
            tx.write(t, &mut buf, 1500, None, 0.0, one_way, 1200),
            Some(Written::Datagram { .. })
        ));
        let half = repair_ratio(0.0) / 2.0;
        assert!((tx.waste - (1.0 - half)).abs() < 1e-9 && (tx.credit - (credit + half)).abs() < 1e-9);
    }
}
