//! CTCP's block scheduling (Kim, Médard et al., "Network Coded TCP (CTCP)", Algorithm 3).
//!
//! When a token is free the sender picks the lowest block whose expected deliveries fall short
//! of what the receiver still needs: the symbols of the block in flight, counting only those
//! sent less than 1.5 RTT ago ("as they are likely to be lost or significantly delayed",
//! §III-E), each arriving with probability 1 − p (Algorithm 1's short-term loss estimate). The
//! code is systematic (§III-D): a block's sources go out first, then random linear
//! combinations of the whole block. If no block is short, the token is kept unused rather than
//! spent on useless redundancy.
//!
//! The connection already walks blocks lowest first and sends a block's unsent sources before
//! any repair; this controller answers, per block, how many coded packets it is short.
//!
//! Over several paths each symbol is judged by the path it was sent on: fresh while younger
//! than 1.5 × *that* path's RTT, arriving with *that* path's 1 − p. Judging them all by the asking
//! path's RTT made a slow path's symbols stale after one fast RTT, and they were replaced: 32 %
//! repair in the demo's two paths even with min-RTT scheduling (DEVIATIONS.md).

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::RedundancyController;
use crate::blocks::SendBlock;
use crate::view::{PathView, SymbolEvent};
use crate::Instant;

/// Packets sent longer ago than this many RTTs are not counted on (CTCP §III-E: "the constant
/// factor should be ≥ 1"; the paper uses 1.5).
pub const FRESH_RTTS: f64 = 1.5;

/// CTCP Algorithm 3: how many coded packets each block is short (the multipath block scheduler,
/// Algorithm 4, is [`crate::sched::CtcpBlocks`]).
#[derive(Debug, Clone)]
pub struct CtcpRepair {
    /// Per block, the path and send time of each of its symbols in flight, oldest first.
    in_flight: BTreeMap<u64, VecDeque<(u8, Instant)>>,
    /// The latest time the connection reported (a symbol sent, acknowledged or lost).
    now: Instant,
    /// Each path's smoothed RTT and loss estimate, as last seen in a [`PathView`] (every path
    /// asks for its own); `None` until then, and the asking path's are used instead.
    paths: [Cell<Option<(Duration, f64)>>; crate::wire::MAX_PATHS as usize],
}

impl Default for CtcpRepair {
    fn default() -> Self {
        CtcpRepair { in_flight: BTreeMap::new(), now: Instant::ZERO, paths: Default::default() }
    }
}

impl CtcpRepair {
    /// Algorithm 3's `onfly[block]`: symbols of `block` in flight, sent less than
    /// 1.5 × `rtt` ago.
    pub fn recent_in_flight(&self, block: u64, rtt: Duration) -> u64 {
        // Asked for every open block on every packet: the times are in send order, so the
        // fresh ones are a suffix, found by binary search.
        let horizon = rtt.mul_f64(FRESH_RTTS);
        self.in_flight.get(&block).map_or(0, |sent| {
            let stale = sent.partition_point(|&(_, at)| self.now - at >= horizon);
            (sent.len() - stale) as u64
        })
    }

    fn remember(&self, view: &PathView) {
        if let Some(slot) = self.paths.get(usize::from(view.path)) {
            slot.set(Some((view.smoothed_rtt, view.loss)));
        }
    }

    /// A path's (RTT, loss), or `asking`'s if it was never seen.
    fn path_state(&self, path: u8, asking: &PathView) -> (Duration, f64) {
        self.paths.get(usize::from(path)).and_then(Cell::get).unwrap_or((asking.smoothed_rtt, asking.loss))
    }

    /// Algorithm 3's (1 − p)·onfly[block] with each symbol judged by the path it was sent on.
    fn expected_deliveries(&self, block: u64, asking: &PathView) -> f64 {
        self.in_flight.get(&block).map_or(0.0, |sent| {
            sent.iter()
                .map(|&(path, at)| {
                    let (rtt, loss) = self.path_state(path, asking);
                    let fresh = self.now - at < rtt.mul_f64(FRESH_RTTS);
                    if fresh {
                        1.0 - loss.clamp(0.0, 0.9)
                    } else {
                        0.0
                    }
                })
                .sum()
        })
    }

    fn forget(&mut self, block: u64, path: u8, sent_at: Instant) {
        if let Some(sent) = self.in_flight.get_mut(&block) {
            if let Some(i) = sent.iter().position(|&s| s == (path, sent_at)) {
                sent.remove(i);
            }
            if sent.is_empty() {
                self.in_flight.remove(&block);
            }
        }
    }
}

impl RedundancyController for CtcpRepair {
    fn name(&self) -> &'static str {
        "ctcp"
    }

    /// Algorithm 3's test for one block: send from it while (1 − p)·onfly < dofs still needed.
    /// Returns how many coded packets would close the gap in expectation.
    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64 {
        self.remember(path);
        if block.decoded || block.is_empty() || !block.all_sources_sent() {
            // Unsent sources go first (systematic code).
            return 0;
        }
        let need = (block.len() as u64).saturating_sub(block.known_dofs());
        if need == 0 {
            return 0;
        }
        if !block.closed {
            // Still filling (the application paused): replace only what is known lost, so the
            // block's remaining sources are not pre-empted by combinations of its prefix.
            return need.saturating_sub(block.in_flight);
        }
        let delivery = 1.0 - path.loss.clamp(0.0, 0.9);
        let expected = self.expected_deliveries(block.id, path);
        let short = need as f64 - expected;
        if short <= 0.0 {
            0
        } else {
            (short / delivery).ceil().max(1.0) as u64
        }
    }

    /// The next time a symbol in flight turns 1.5 RTT old (and stops being counted on).
    fn poll_timeout(&self, path: &PathView) -> Option<Instant> {
        self.remember(path);
        self.in_flight
            .values()
            .flat_map(|sent| sent.iter())
            .filter_map(|&(p, at)| {
                let horizon = self.path_state(p, path).0.mul_f64(FRESH_RTTS);
                (self.now - at < horizon).then_some(at + horizon)
            })
            .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    fn on_symbol(&mut self, now: Instant, event: SymbolEvent) {
        self.now = self.now.max(now);
        match event {
            SymbolEvent::Sent { block, path, at } => {
                self.in_flight.entry(block).or_default().push_back((path, at));
            }
            SymbolEvent::Acked { block, path, sent_at } | SymbolEvent::Lost { block, path, sent_at } => {
                self.forget(block, path, sent_at)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use braid_fec::{CodeFamily, CodecConfig};

    use super::*;
    use crate::blocks::BlockSender;
    use crate::wire::Writer;

    fn view(loss: f64) -> PathView {
        PathView {
            path: 0,
            smoothed_rtt: Duration::from_millis(100),
            min_rtt: Duration::from_millis(100),
            loss,
            loss_long: loss,
            window: 100_000,
            in_flight: 0,
            mss: 1000,
        }
    }

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// Three closed blocks of 4 sources, every source sent at `t` ms and reported to `ctcp`.
    fn sender(ctcp: &mut CtcpRepair, t: u64) -> BlockSender {
        let config = CodecConfig { symbol_size: 16, max_block_len: 4, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 8);
        for _ in 0..12 {
            tx.push_source(&[7; 16]).unwrap();
        }
        let mut out = Vec::new();
        while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
            ctcp.on_symbol(ms(t), SymbolEvent::Sent { block: s.block, path: 0, at: ms(t) });
        }
        tx
    }

    /// The block Algorithm 3 sends from: the lowest one that is short.
    fn pick(ctcp: &CtcpRepair, tx: &BlockSender, v: &PathView) -> Option<u64> {
        tx.blocks().find(|b| ctcp.repairs_wanted(b, v) > 0).map(|b| b.id)
    }

    #[test]
    fn algorithm_3_sends_from_the_lowest_short_block_and_keeps_tokens_otherwise() {
        let mut ctcp = CtcpRepair::default();
        let tx = sender(&mut ctcp, 0);
        // No loss expected, everything fresh: nothing useful to send, the token is kept.
        assert_eq!(pick(&ctcp, &tx, &view(0.0)), None);
        // p = 10 %: each block expects 3.6 of 4 → one coded packet each, lowest block first.
        assert_eq!(pick(&ctcp, &tx, &view(0.1)), Some(0));
        assert_eq!(tx.blocks().map(|b| ctcp.repairs_wanted(b, &view(0.1))).collect::<Vec<_>>(), [1, 1, 1]);
        // Block 0 gets its repair: (1 − p)·5 = 4.5 ≥ 4, so block 1 is next.
        ctcp.on_symbol(ms(10), SymbolEvent::Sent { block: 0, path: 0, at: ms(10) });
        assert_eq!(pick(&ctcp, &tx, &view(0.1)), Some(1));
        // Two of block 0's packets are lost: (1 − p)·3 < 4, block 0 is short again and first.
        ctcp.on_symbol(ms(20), SymbolEvent::Lost { block: 0, path: 0, sent_at: ms(0) });
        ctcp.on_symbol(ms(20), SymbolEvent::Lost { block: 0, path: 0, sent_at: ms(0) });
        assert_eq!(pick(&ctcp, &tx, &view(0.1)), Some(0));
    }

    #[test]
    fn packets_older_than_one_and_a_half_rtt_are_not_counted_on() {
        let mut ctcp = CtcpRepair::default();
        let tx = sender(&mut ctcp, 0);
        ctcp.handle_timeout(ms(149));
        assert_eq!(ctcp.recent_in_flight(0, Duration::from_millis(100)), 4);
        assert_eq!(pick(&ctcp, &tx, &view(0.0)), None);
        // The connection is asked to wake up when that changes…
        assert_eq!(ctcp.poll_timeout(&view(0.0)), Some(ms(150)));
        // … 150 ms after sending (1.5 × 100 ms RTT) the sources are presumed lost: all three
        // blocks are short.
        ctcp.handle_timeout(ms(150));
        assert_eq!(ctcp.poll_timeout(&view(0.0)), None);
        assert_eq!(ctcp.recent_in_flight(0, Duration::from_millis(100)), 0);
        assert_eq!(tx.blocks().map(|b| ctcp.repairs_wanted(b, &view(0.0))).collect::<Vec<_>>(), [4, 4, 4]);
        // Acknowledged dofs count: the receiver holding 3 of block 0's leaves it 1 short.
        let mut tx = tx;
        tx.block_mut(0).unwrap().acked = 3;
        assert_eq!(ctcp.repairs_wanted(tx.blocks().next().unwrap(), &view(0.0)), 1);
    }

    /// A slow path's symbols stay counted on for 1.5 × the slow path's RTT, whichever path asks.
    #[test]
    fn symbols_age_by_the_rtt_of_the_path_they_went_on() {
        let mut ctcp = CtcpRepair::default();
        let tx = sender(&mut ctcp, 0);
        // Block 0's four sources went on path 1 (500 ms RTT), not path 0.
        let mut ctcp = CtcpRepair::default();
        for _ in 0..4 {
            ctcp.on_symbol(ms(0), SymbolEvent::Sent { block: 0, path: 1, at: ms(0) });
        }
        let slow = PathView { path: 1, smoothed_rtt: Duration::from_millis(500), ..view(0.0) };
        let fast = view(0.0);
        let block0 = tx.blocks().next().unwrap();
        assert_eq!(ctcp.repairs_wanted(block0, &slow), 0);
        // 200 ms later the fast path asks: 1.5 × its 100 ms has passed, not 1.5 × 500 ms.
        ctcp.handle_timeout(ms(200));
        assert_eq!(ctcp.repairs_wanted(block0, &fast), 0, "the slow path's symbols are still due");
        assert_eq!(ctcp.poll_timeout(&fast), Some(ms(750)));
        ctcp.handle_timeout(ms(750));
        assert_eq!(ctcp.repairs_wanted(block0, &fast), 4);
    }
}
