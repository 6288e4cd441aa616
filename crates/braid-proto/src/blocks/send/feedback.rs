//! What the receiver tells the sender about its blocks: packet ACKs and losses of their
//! symbols, and BLOCK_ACK reports of its decoder (CTCP §III-C, PROTOCOL.md §11.5), which
//! together decide how many degrees of freedom a block is known to hold.

use super::{AckedUpTo, BlockSender, OutgoingSymbol};
use crate::wire::{BlockAckFrame, MAX_PATHS};
use crate::Instant;

impl BlockSender {
    /// A packet carrying a symbol of `block` was acknowledged (its send time unknown: it
    /// counts on top of the receiver's last report).
    pub fn on_symbol_acked(&mut self, block: u64) {
        self.acknowledge(block, None, None, None);
    }

    /// A packet carrying a symbol of `block`, sent at `sent`, was acknowledged.
    ///
    /// Root cause of the `fmtcp-receive-buffer` stall (256 KiB, subflow 2 at 300 ms): the
    /// receiver acknowledges packets on one path and reports its decoder (BLOCK_ACK) on whichever
    /// path answers next, so an ACK sent earlier over the 150 ms return path arrived after a
    /// BLOCK_ACK sent later over the 50 ms one. The BLOCK_ACK already counted the symbols that
    /// ACK acknowledged, and the sender counted them again on top of it (16 for a 13-symbol
    /// block of which the receiver held 12); it sent no repair, and the receiver, which reports
    /// only when a symbol arrives, never reported again. A symbol counts on top of a report only
    /// if it was sent after the report arrived — it cannot have reached the receiver before the
    /// report left. One sent earlier may or may not be in the report: it is left out (at worst
    /// a repair goes out early), and the next report counts it.
    pub fn on_symbol_acked_at(&mut self, block: u64, sent: Instant) {
        self.acknowledge(block, Some(sent), None, None);
    }

    /// [`BlockSender::on_symbol_acked_at`] for `symbol`, which went in packet `number` of `path`. A
    /// tail's symbol ([`SendBlock::tail`](super::SendBlock::tail)) also counts on top of a report
    /// that arrived before it was acknowledged if the report's own packet acknowledged only earlier
    /// packets of that path ([`BlockSender::on_block_ack_with`]): the report was written before the
    /// symbol arrived. Without this a report that left just before a symbol arrived, and arrived
    /// just after it left, held the block one short until the next report; after a tail no symbol
    /// follows to bring one, and when the BLOCK_ACK that released it was lost (nothing repeats it)
    /// a repair went out for a block the receiver had decoded: a one-symbol request's, once in
    /// every lost report (request/response at 5 % loss both ways: 3.7 % of the client's sources,
    /// `tests/repair_budget.rs`). A bulk block keeps the send-time rule alone: the next symbol's
    /// report corrects its count, and applied to every block the rule moved the bistable multipath
    /// rows both ways (a 3 MB transfer over a clean and a 20 %-loss path, 64 KiB window, seeds
    /// 1-12: mean 10.45 -> 10.42 Mbit/s, seed 2 9.36 -> 8.78, seed 3 9.27 -> 10.39).
    ///
    /// A source sent more than once (`SendBlock::resent`) counts by neither rule: the
    /// receiver may hold an earlier copy that the report counted (one that arrived although it
    /// was declared lost, or the last source a release timeout sent again), and counted on top
    /// it made the sender believe complete a block the receiver still lacked a degree of freedom
    /// of, which then waited for a release timeout when the BLOCK_ACK written beside the copy's
    /// ACK was lost. The next report counts it if it was new (at worst a repair goes early).
    pub fn on_symbol_acked_in(&mut self, symbol: OutgoingSymbol, sent: Instant, path: u8, number: u64) {
        self.acknowledge(symbol.block, Some(sent), Some((path, number)), symbol.source);
    }

    fn acknowledge(
        &mut self,
        block: u64,
        sent: Option<Instant>,
        packet: Option<(u8, u64)>,
        source: Option<u16>,
    ) {
        if let Some(b) = self.block_mut(block) {
            b.in_flight = b.in_flight.saturating_sub(1);
            b.acked += 1;
            let after = b.report_arrived.is_none_or(|at| sent.is_none_or(|sent| sent >= at));
            let covered = |path: u8| b.report_covers.get(usize::from(path)).copied().flatten();
            let unseen = b.tail.is_some()
                && packet.is_some_and(|(path, n)| covered(path).is_some_and(|largest| n > largest));
            let repeated = source.is_some_and(|i| b.resent.contains(&i));
            if (after || unseen) && !repeated {
                b.acked_since_report += 1;
            }
        }
    }

    /// A packet carrying `symbol` was declared lost; `retransmit`: queue a lost source symbol
    /// to be sent again (the modes without coding), on any path.
    pub fn on_symbol_lost(&mut self, symbol: OutgoingSymbol, retransmit: bool) {
        self.on_symbol_lost_on(symbol, retransmit, None);
    }

    /// [`BlockSender::on_symbol_lost`], the retransmission to go on `path` only (`None`: any).
    pub fn on_symbol_lost_on(&mut self, symbol: OutgoingSymbol, retransmit: bool, path: Option<u8>) {
        if let Some(b) = self.block_mut(symbol.block) {
            b.in_flight = b.in_flight.saturating_sub(1);
            b.lost += 1;
            if b.growing && b.all_sources_sent() {
                // Per-segment placement: the block ends here, so its tail gets its parity now.
                b.close_growing();
            }
            if let (true, Some(index), false) = (retransmit, symbol.source, b.decoded) {
                self.push_retransmission((symbol.block, index, path));
            }
        }
    }

    /// The receiver's decoder state: release every block below its lowest undecoded one, mark
    /// the decoded ones beyond it (arrival time unknown: later acknowledgements all count on
    /// top of it).
    pub fn on_block_ack(&mut self, ack: &BlockAckFrame) {
        self.block_ack(ack, None, [None; MAX_PATHS as usize]);
    }

    /// [`BlockSender::on_block_ack`] for a BLOCK_ACK that arrived at `now` (see
    /// [`BlockSender::on_symbol_acked_at`]).
    pub fn on_block_ack_at(&mut self, ack: &BlockAckFrame, now: Instant) {
        self.block_ack(ack, Some(now), [None; MAX_PATHS as usize]);
    }

    /// [`BlockSender::on_block_ack_at`] for a BLOCK_ACK whose packet also acknowledged, for each
    /// path, packets up to `covers` (`None`: no ACK of that path in it; see
    /// [`BlockSender::on_symbol_acked_in`]).
    pub fn on_block_ack_with(&mut self, ack: &BlockAckFrame, now: Instant, covers: AckedUpTo) {
        self.block_ack(ack, Some(now), covers);
    }

    fn block_ack(&mut self, ack: &BlockAckFrame, now: Option<Instant>, covers: AckedUpTo) {
        while self.blocks.front().is_some_and(|b| b.id < ack.lowest_undecoded) {
            self.blocks.pop_front();
        }
        for b in self.blocks.iter_mut() {
            if b.id == ack.lowest_undecoded {
                // The receiver's count is authoritative: packet-level ACKs over-count when a
                // symbol turned out not innovative (a repair over a prefix whose sources all
                // arrived), and an over-count would leave the block waiting forever. What is
                // acknowledged after this report counts on top of it only if the report cannot
                // hold it (see `on_symbol_acked_at`).
                // An older report that came back over a slower path may lower the count: the
                // sender then repairs a little early, never too late. (Ignoring lower counts
                // measured a few % less goodput on the receive-buffer sweep.)
                if b.reported.is_none_or(|r| ack.dofs > r) {
                    b.release_timeouts = 0;
                }
                b.reported = Some(ack.dofs);
                b.report_arrived = now;
                b.report_covers = covers;
                b.acked_since_report = 0;
                b.doubted = false;
            } else if let Some(bit) = b.id.checked_sub(ack.lowest_undecoded + 1) {
                if bit < 62 && ack.decoded_beyond & (1 << bit) != 0 {
                    b.decoded = true;
                }
            }
        }
    }
}
