//! Releasing blocks the receiver has not reported: a block that waits on the receiver alone is
//! doubted after a release timeout, so a new symbol goes out for it.

use std::time::Duration;

use super::{BlockSender, MAX_RELEASE_BACKOFF};
use crate::Instant;

impl BlockSender {
    /// Notes, at `now`, which blocks wait on the receiver alone (every source sent, nothing in
    /// flight, not released). The connection calls it whenever acknowledgements, losses or a
    /// BLOCK_ACK change a block (sends clear the wait themselves).
    pub fn update_waiting(&mut self, now: Instant) {
        let retransmit = &self.retransmit;
        for b in self.blocks.iter_mut() {
            if b.waits_on_receiver() && !retransmit.iter().any(|r| r.0 == b.id) {
                b.waiting_since.get_or_insert(now);
            } else {
                b.waiting_since = None;
            }
        }
    }

    /// When the first waiting block's release timeout expires: `timeout` (about a probe
    /// timeout) after it began to wait, doubled for each timeout it already had. A block the
    /// sender believes complete is normally released by the receiver's BLOCK_ACK within a round
    /// trip; one still waiting after that is doubted (the sender's count may be wrong, or the
    /// report lost) and gets a new symbol, which also makes the receiver report again.
    pub fn release_deadline(&self, timeout: Duration) -> Option<Instant> {
        self.blocks
            .iter()
            .filter(|b| b.waits_on_receiver())
            .filter_map(|b| {
                let backoff = 1u32 << b.release_timeouts.min(MAX_RELEASE_BACKOFF);
                b.waiting_since.map(|t| t + timeout * backoff)
            })
            .min()
    }

    /// The blocks whose release timeout expired at `now`: each is doubted (its count falls to
    /// the receiver's report, or one short of its length) and returned, so the connection can
    /// make sure a new symbol goes out for it.
    pub fn on_release_timeout(&mut self, now: Instant, timeout: Duration) -> Vec<u64> {
        let mut expired = Vec::new();
        for b in self.blocks.iter_mut() {
            let backoff = 1u32 << b.release_timeouts.min(MAX_RELEASE_BACKOFF);
            // Checked again: a symbol sent by a path that bypassed `on_sent` leaves the mark.
            if b.waits_on_receiver() && b.waiting_since.is_some_and(|t| t + timeout * backoff <= now) {
                b.doubted = true;
                b.release_timeouts += 1;
                // Re-armed (with the longer backoff) until a symbol of the block goes out.
                b.waiting_since = Some(now);
                expired.push(b.id);
            }
        }
        expired
    }
}
