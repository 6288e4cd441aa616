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

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::{PathView, RedundancyController, SymbolEvent};
use crate::blocks::SendBlock;
use crate::Instant;

/// Packets sent longer ago than this many RTTs are not counted on (CTCP §III-E: "the constant
/// factor should be ≥ 1"; the paper uses 1.5).
pub const FRESH_RTTS: f64 = 1.5;

/// CTCP Algorithm 3.
#[derive(Debug, Clone)]
pub struct CtcpScheduler {
    /// Per block, the path and send time of each of its symbols in flight, oldest first.
    in_flight: BTreeMap<u64, VecDeque<(u8, Instant)>>,
    /// The latest time the connection reported (a symbol sent, acknowledged or lost).
    now: Instant,
}

impl Default for CtcpScheduler {
    fn default() -> Self {
        CtcpScheduler { in_flight: BTreeMap::new(), now: Instant::ZERO }
    }
}

impl CtcpScheduler {
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

impl RedundancyController for CtcpScheduler {
    fn name(&self) -> &'static str {
        "ctcp"
    }

    /// Algorithm 3's test for one block: send from it while (1 − p)·onfly < dofs still needed.
    /// Returns how many coded packets would close the gap in expectation.
    fn repairs_wanted(&self, block: &SendBlock, path: &PathView) -> u64 {
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
        let expected = delivery * self.recent_in_flight(block.id, path.smoothed_rtt) as f64;
        let short = need as f64 - expected;
        if short <= 0.0 {
            0
        } else {
            (short / delivery).ceil().max(1.0) as u64
        }
    }

    /// The next time a symbol in flight turns 1.5 RTT old (and stops being counted on).
    fn poll_timeout(&self, path: &PathView) -> Option<Instant> {
        let horizon = path.smoothed_rtt.mul_f64(FRESH_RTTS);
        self.in_flight
            .values()
            .filter_map(|sent| {
                sent.iter().find(|&&(_, at)| self.now - at < horizon).map(|&(_, at)| at + horizon)
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
            window: 100_000,
            in_flight: 0,
            mss: 1000,
        }
    }

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// Three closed blocks of 4 sources, every source sent at `t` ms and reported to `ctcp`.
    fn sender(ctcp: &mut CtcpScheduler, t: u64) -> BlockSender {
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
    fn pick(ctcp: &CtcpScheduler, tx: &BlockSender, v: &PathView) -> Option<u64> {
        tx.blocks().find(|b| ctcp.repairs_wanted(b, v) > 0).map(|b| b.id)
    }

    #[test]
    fn algorithm_3_sends_from_the_lowest_short_block_and_keeps_tokens_otherwise() {
        let mut ctcp = CtcpScheduler::default();
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
        let mut ctcp = CtcpScheduler::default();
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
}
