//! The receiving side of datagrams: delivery, decoding across datagrams, the deadline check
//! (PROTOCOL.md §15.4–§15.6). Memory is bounded: at most [`RECV_BLOCKS`] blocks, each at most
//! [`MAX_DATAGRAM_BLOCK_LEN`] symbols of at most [`MAX_DATAGRAM_SYMBOL`] bytes, and the
//! configured queue of datagrams not yet read.

use std::collections::VecDeque;
use std::time::Duration;

use braid_fec::{BlockDecoder, CodeFamily, CodecConfig, Coefficients, Decoder, SymbolId};

use super::{coded_form, parse_coded, DatagramStats};
use crate::time::Instant;
use crate::wire::{DatagramFrame, DatagramRepairFrame, MAX_DATAGRAM_BLOCK_LEN, MAX_DATAGRAM_SYMBOL};

/// Datagram blocks a receiver decodes at once: the newest block heard and the ones just below.
pub const RECV_BLOCKS: u64 = 4;

struct RecvBlock {
    id: u64,
    /// Set by the first repair: the block's symbol size and its decoder.
    decoder: Option<BlockDecoder>,
    /// Coded forms of datagrams received before the first repair.
    held: Vec<(u16, Vec<u8>)>,
    /// Bit i: datagram i was delivered, dropped as late or is being decoded.
    seen: u64,
}

/// Datagrams received, waiting for the application, and the blocks being decoded.
pub struct DatagramReceiver {
    capacity: usize,
    blocks: VecDeque<RecvBlock>,
    highest: Option<u64>,
    queue: VecDeque<Vec<u8>>,
    /// The first sample of (local ms − sender's ms), and the smallest since, relative to it:
    /// the clock offset plus the smallest one-way delay seen.
    offset_base: Option<u32>,
    offset_min: i64,
    scratch: Vec<u8>,
    pub stats: DatagramStats,
}

impl DatagramReceiver {
    pub fn new(capacity: usize) -> DatagramReceiver {
        DatagramReceiver {
            capacity: capacity.max(1),
            blocks: VecDeque::new(),
            highest: None,
            queue: VecDeque::new(),
            offset_base: None,
            offset_min: 0,
            scratch: Vec::new(),
            stats: DatagramStats::default(),
        }
    }

    /// The next datagram received, in the order received or rebuilt.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.queue.pop_front()
    }

    pub fn has_datagrams(&self) -> bool {
        !self.queue.is_empty()
    }

    fn deliver(&mut self, data: &[u8]) {
        if self.queue.len() >= self.capacity {
            self.queue.pop_front();
            self.stats.dropped += 1;
        }
        self.queue.push_back(data.to_vec());
        self.stats.delivered += 1;
    }

    /// (local ms − sender's ms) for a datagram stamped `sent_ms`, relative to the first sample.
    fn relative_delay(&mut self, now: Instant, sent_ms: u32) -> i64 {
        let d = ((now.as_micros() / 1000) as u32).wrapping_sub(sent_ms);
        let base = *self.offset_base.get_or_insert(d);
        i64::from(d.wrapping_sub(base) as i32)
    }

    /// The block `id`, created if it is within the window; `None` for a block too old.
    fn block(&mut self, id: u64) -> Option<&mut RecvBlock> {
        if self.highest.is_none_or(|h| id > h) {
            self.highest = Some(id);
            self.blocks.retain(|b| b.id.saturating_add(RECV_BLOCKS) > id);
        }
        let highest = self.highest.expect("set");
        if id.saturating_add(RECV_BLOCKS) <= highest {
            return None;
        }
        let at = match self.blocks.iter().position(|b| b.id >= id) {
            Some(i) if self.blocks[i].id == id => i,
            other => {
                let i = other.unwrap_or(self.blocks.len());
                self.blocks.insert(i, RecvBlock { id, decoder: None, held: Vec::new(), seen: 0 });
                i
            }
        };
        Some(&mut self.blocks[at])
    }

    /// A DATAGRAM frame arrived.
    pub fn on_datagram(&mut self, now: Instant, frame: &DatagramFrame<'_>) {
        let rel = self.relative_delay(now, frame.sent_ms);
        self.offset_min = self.offset_min.min(rel);
        let mut scratch = std::mem::take(&mut self.scratch);
        coded_form(&mut scratch, frame.data, frame.sent_ms, frame.deadline_ms);
        let bit = 1u64 << frame.index;
        let fresh = match self.block(frame.block) {
            // Too old to decode: delivered as it is (the path layer already dropped duplicates).
            None => true,
            Some(b) if b.seen & bit != 0 => false,
            Some(b) => {
                b.seen |= bit;
                match &mut b.decoder {
                    Some(d) if scratch.len() <= d.symbol_size() => {
                        scratch.resize(d.symbol_size(), 0);
                        let _ = d.receive(&SymbolId::Source { index: frame.index }, &scratch);
                    }
                    Some(_) => {}
                    None => {
                        if b.held.len() < MAX_DATAGRAM_BLOCK_LEN {
                            b.held.push((frame.index, scratch.clone()));
                        }
                    }
                }
                true
            }
        };
        self.scratch = scratch;
        if fresh {
            self.deliver(frame.data);
            self.poll_recovered(now, frame.block, Duration::ZERO);
        }
    }

    /// A DATAGRAM_REPAIR frame arrived. `one_way`: the smallest one-way delay estimate of the
    /// paths (the offset estimate includes the fastest path's delay; this adds it back).
    pub fn on_repair(&mut self, now: Instant, frame: &DatagramRepairFrame<'_>, one_way: Duration) {
        let size = usize::from(frame.symbol_size);
        if size > MAX_DATAGRAM_SYMBOL {
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(frame.payload);
        scratch.resize(size, 0);
        let received = self.repair_block(frame, &scratch);
        self.scratch = scratch;
        if received {
            self.poll_recovered(now, frame.block, one_way);
        }
    }

    /// Offers a repair (`symbol`, extended to the symbol size) to its block's decoder; whether
    /// the decoder took it.
    fn repair_block(&mut self, frame: &DatagramRepairFrame<'_>, symbol: &[u8]) -> bool {
        let size = symbol.len();
        let Some(b) = self.block(frame.block) else { return false };
        if b.decoder.as_ref().is_some_and(|d| d.symbol_size() != size) {
            return false; // a repair that disagrees with the block's symbol size: ignored
        }
        if b.decoder.is_none() {
            let config = CodecConfig {
                symbol_size: size,
                max_block_len: MAX_DATAGRAM_BLOCK_LEN,
                ..CodecConfig::new(CodeFamily::Rlnc)
            };
            let Ok(mut decoder) = config.decoder(None) else { return false };
            for (index, mut coded) in b.held.drain(..) {
                if coded.len() <= size {
                    coded.resize(size, 0);
                    let _ = decoder.receive(&SymbolId::Source { index }, &coded);
                }
            }
            b.decoder = Some(decoder);
        }
        let d = b.decoder.as_mut().expect("set");
        let id = SymbolId::Rlnc { span: frame.span, coefficients: Coefficients::Seed(frame.seed) };
        d.receive(&id, symbol).is_ok()
    }

    /// Hands on what the block's decoder rebuilt, unless it is past its deadline.
    fn poll_recovered(&mut self, now: Instant, block: u64, one_way: Duration) {
        let mut rebuilt = Vec::new();
        {
            let Some(b) = self.blocks.iter_mut().find(|b| b.id == block) else { return };
            let Some(d) = b.decoder.as_mut() else { return };
            while let Some(index) = d.poll_recovered() {
                let bit = 1u64 << index;
                if b.seen & bit != 0 {
                    continue;
                }
                b.seen |= bit;
                if let Some((data, sent_ms, deadline_ms)) = d.source(index).and_then(parse_coded) {
                    rebuilt.push((data.to_vec(), sent_ms, deadline_ms));
                }
            }
        }
        for (data, sent_ms, deadline_ms) in rebuilt {
            // The datagram's age: how much later than the fastest datagram seen it is now, plus
            // that fastest one-way delay.
            let age_ms = self.relative_delay(now, sent_ms) - self.offset_min + one_way.as_millis() as i64;
            if age_ms > i64::from(deadline_ms) {
                self.stats.late += 1;
            } else {
                self.stats.recovered += 1;
                self.deliver(&data);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::{DatagramConfig, DatagramRedundancy, DatagramSender};
    use crate::wire::{Frame, FrameIter};

    /// Sends `n` datagrams 1 ms apart with repair ratio `ratio`; `lose(i)` drops frame i.
    fn run(n: u8, ratio: f64, lose: impl Fn(usize) -> bool, delay_ms: u64) -> DatagramReceiver {
        let config =
            DatagramConfig { redundancy: DatagramRedundancy::Fixed(ratio), ..DatagramConfig::default() };
        let mut tx = DatagramSender::new(config);
        let mut rx = DatagramReceiver::new(1024);
        let mut frame_no = 0;
        let mut now = Instant::ZERO + Duration::from_secs(5);
        for i in 0..n {
            tx.push(now, &vec![i; 20 + usize::from(i)]);
            loop {
                let mut buf = Vec::new();
                if tx.write(now, &mut buf, 1500, None, 0.0, Duration::from_millis(5), 1200).is_none() {
                    break;
                }
                let arrive = now + Duration::from_millis(delay_ms);
                if !lose(frame_no) {
                    for f in FrameIter::new(&buf) {
                        match f.unwrap() {
                            Frame::Datagram(d) => rx.on_datagram(arrive, &d),
                            Frame::DatagramRepair(r) => rx.on_repair(arrive, &r, Duration::from_millis(5)),
                            other => panic!("{other:?}"),
                        }
                    }
                }
                frame_no += 1;
            }
            now += Duration::from_millis(1);
        }
        rx
    }

    #[test]
    fn a_lost_datagram_is_rebuilt_from_a_later_repair() {
        // Frames: d0 d1 d2 d3 R(0..4) d4 …: losing d1 leaves the repair to rebuild it.
        let mut rx = run(8, 0.25, |i| i == 1, 5);
        assert_eq!((rx.stats.delivered, rx.stats.recovered, rx.stats.late), (8, 1, 0));
        let got: Vec<Vec<u8>> = std::iter::from_fn(|| rx.pop()).collect();
        assert!(got.contains(&vec![1; 21]));
    }

    #[test]
    fn a_datagram_rebuilt_after_its_deadline_is_dropped() {
        // The fastest datagram took 5 ms; when the repair comes 200 ms later, d1 is too old.
        let config =
            DatagramConfig { redundancy: DatagramRedundancy::Fixed(0.5), ..DatagramConfig::default() };
        let mut tx = DatagramSender::new(config);
        let mut rx = DatagramReceiver::new(16);
        let t0 = Instant::ZERO + Duration::from_secs(1);
        let mut frames = Vec::new();
        for i in 0..2u8 {
            tx.push(t0, &[i; 30]);
            let mut buf = Vec::new();
            while tx.write(t0, &mut buf, 1500, None, 0.0, Duration::ZERO, 1200).is_some() {}
            frames.push(buf);
        }
        let parsed: Vec<Frame<'_>> =
            frames.iter().flat_map(|b| FrameIter::new(b).map(Result::unwrap)).collect();
        let late = t0 + Duration::from_millis(205);
        for f in &parsed {
            match f {
                Frame::Datagram(d) if d.index == 0 => rx.on_datagram(t0 + Duration::from_millis(5), d),
                Frame::DatagramRepair(r) if r.span == 2 => rx.on_repair(late, r, Duration::from_millis(5)),
                _ => {}
            }
        }
        assert_eq!((rx.stats.delivered, rx.stats.recovered, rx.stats.late), (1, 0, 1));
    }

    #[test]
    fn hostile_frames_are_bounded() {
        let mut rx = DatagramReceiver::new(4);
        let now = Instant::ZERO;
        for block in [0, u64::MAX - 10, 3, u64::MAX] {
            for index in 0..64u16 {
                let d = DatagramFrame { block, index, sent_ms: u32::MAX, deadline_ms: 0, data: &[1; 9] };
                rx.on_datagram(now, &d);
                let r = DatagramRepairFrame {
                    block,
                    span: 64,
                    seed: index.into(),
                    symbol_size: 30,
                    payload: &[7; 30],
                };
                rx.on_repair(now, &r, Duration::from_secs(100));
                let r = DatagramRepairFrame { block, span: 1, seed: 0, symbol_size: 9000, payload: &[] };
                rx.on_repair(now, &r, Duration::ZERO);
            }
        }
        assert!(rx.queue.len() <= 4 && rx.blocks.len() as u64 <= RECV_BLOCKS);
    }
}
