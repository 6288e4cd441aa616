//! The tails of bursts: the blocks that end what the application wrote, which get their repair
//! margin at once rather than only as spare capacity (`redundancy::adaptive`).

use super::{BlockSender, SendBlock};

/// A burst this many blocks long or longer ends a bulk transfer ([`BlockSender::on_app_idle`]):
/// at 1,200-byte symbols 4 blocks are 300 kB, more than a live video frame (an I-frame of 3.4
/// Mbit/s video at 25 fps is one or two blocks), whose margin stays the app-idle tail's. A
/// frame of two blocks, the first all sent before the second was cut, was marked so at first
/// and its spare repair raised live video's repair by up to 0.2 % of its symbols.
const DRAINED_BURST_BLOCKS: u64 = 4;

/// Why a block is the tail of a burst, which decides how large a margin it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// The end of what the application wrote on one stream (a request, a response) while other
    /// streams still send ([`BlockSender::close_block_as_tail`]). The path keeps carrying their
    /// data, so a loss is detected soon, but a request beside bulk data waits for the reactive
    /// round: its margin is sized for a small δ̂.
    Request,
    /// The application went idle while the block was open or in flight (a video frame, the
    /// last response; [`BlockSender::on_app_idle`]): nothing behind it triggers loss detection,
    /// so a tail probe follows it (`Mode::tail_probes`), and its margin carries about the
    /// expected loss.
    AppIdle,
}

impl SendBlock {
    /// An app-idle tail with every source out and no margin loss fixed yet. Only an app-idle
    /// tail's: fixed so, a request's beside bulk data waited longer (p99 at 2 % / 5 % loss 126 /
    /// 250 ms against < 100, `tests/stream_fairness.rs`; not traced).
    fn wants_margin_loss(&self) -> bool {
        self.tail == Some(Tail::AppIdle) && self.margin_loss.is_none() && self.all_sources_sent()
    }
}

impl BlockSender {
    /// The open block holds the end of what the application wrote on some stream (a request, a
    /// response) while other streams still have data: it closes at its current length and is
    /// marked as a request's tail ([`Tail::Request`]), so its repair margin goes out at once.
    /// Unlike [`BlockSender::on_app_idle`] the blocks cut before it are left alone: they hold the
    /// bulk data before it, which the next blocks' symbols follow closely enough for loss
    /// detection.
    pub fn close_block_as_tail(&mut self) {
        self.close_block();
        // The newest block holds the symbol just cut (a full block closed as it filled).
        if let Some(block) = self.blocks.back_mut().filter(|b| !b.is_empty()) {
            block.tail = Some(Tail::Request);
        }
    }

    /// The open block holds a small write cut ahead of source symbols already cut but unsent:
    /// it closes as a tail ([`BlockSender::close_block_as_tail`]) and is marked
    /// [`SendBlock::urgent`].
    pub fn close_block_as_urgent(&mut self) {
        self.close_block_as_tail();
        if let Some(block) = self.blocks.back_mut().filter(|b| !b.is_empty()) {
            block.urgent = true;
        }
    }

    /// The application has nothing more to send for now (its send buffers are empty, not merely
    /// blocked by flow control): the open block closes at its current length, and the blocks cut
    /// but not yet all sent — the burst just cut (a video frame, a response; at most the two
    /// blocks `fill_pipe` cuts ahead) — are marked as its tail ([`Tail::AppIdle`]). Blocks
    /// already all in flight are not: at the end of a bulk transfer their margin on a 50 %-loss
    /// path cost FMTCP Table II's case 4 0.7 % of its goodput. TCP-IR's
    /// point (tail losses of short flows cost a timeout unless repair follows the data at once)
    /// applied at every app-idle point rather than only at the end of a flow.
    ///
    /// If the burst was long (`DRAINED_BURST_BLOCKS` blocks or more since the application was
    /// last idle: the end of a bulk transfer, not a video frame), every block not yet decoded is
    /// marked [`SendBlock::drained`]: nothing new follows it, so a loss among its last symbols
    /// waits a round trip for a reactive repair while the link idles, and its repair for the
    /// loss a burst can cause goes into that idle link (`redundancy::adaptive`).
    pub fn on_app_idle(&mut self) {
        self.close_block();
        let long = self.burst_sources >= DRAINED_BURST_BLOCKS * self.config.max_block_len as u64;
        self.burst_sources = 0;
        for b in self.blocks.iter_mut().filter(|b| !b.decoded) {
            if !b.all_sources_sent() {
                b.tail = Some(Tail::AppIdle);
            }
            b.drained |= long && !b.is_empty();
        }
    }

    /// `block`'s last source went out on a path whose loss estimates (fast, long) are `loss`: if
    /// it is an app-idle tail, its margin is sized with them from now on
    /// ([`SendBlock::margin_loss`]). A
    /// margin that grew later, when a loss of an earlier frame raised the fast estimate, left
    /// 60-80 ms after the frame's sources and arrived no sooner than the reactive round would
    /// have; it counted as the frame's replacement in flight, so the reactive round sent no
    /// second one, and when it was lost too the frame waited a third round trip (live video,
    /// 2 % loss: 2 of the 5 frames late after the first second over seeds 1-3 × 60 s), and
    /// three quarters of such margins arrived after their block was complete.
    pub fn fix_margin_loss(&mut self, block: u64, loss: (f64, f64)) {
        if let Some(b) = self.block_mut(block).filter(|b| b.wants_margin_loss()) {
            b.margin_loss = Some(loss);
        }
    }

    /// Whether [`BlockSender::fix_margin_loss`] would fix `block`'s margin loss now, so that a
    /// caller asks for the path's estimates only then (once a block, not at every source).
    pub fn wants_margin_loss(&self, block: u64) -> bool {
        self.block(block).is_some_and(SendBlock::wants_margin_loss)
    }
}
