//! The connection's side of cumulative-ACK recovery (`LossRecovery::Cumulative`, see
//! conn/path/cumulative.rs): the mode's parity groups hear of the packets the receiver misses,
//! and the segment the path's rules send again goes to the blocks and the controller as a loss.

use super::path::SentPacket;
use super::Connection;
use crate::Instant;

impl Connection {
    /// Packets braid's detection found missing on a path with cumulative-ACK recovery: not
    /// losses to its sender yet, but holes the receiver sees, so an XOR mode's groups learn
    /// which parities can still rebuild what (Sato et al.'s receiver, §3.2).
    pub(super) fn note_missing(&mut self, now: Instant, path: usize, missing: &[SentPacket]) {
        if missing.is_empty() || !self.transfer.as_ref().is_some_and(|t| t.xor_groups) {
            return;
        }
        let Some(groups) = self.redundancy.parity_groups() else { return };
        for p in missing {
            for s in &p.symbols {
                groups.take_loss(now, path, *s, p.time);
            }
        }
        self.apply_fec_actions(now, false);
    }

    /// Replays the ACK frame just processed as TCP's ACKs, one by one
    /// (`Path::cumulative_next_ack`), each followed by what the path's rules send again; also
    /// at a delayed ACK's deadline (`Timer::DelayedAck`), with no frame: that ACK alone.
    pub(super) fn cumulative_step(&mut self, now: Instant, path: usize) {
        let mut any = false;
        while self.paths.get_mut(path).is_some_and(|p| p.cumulative_next_ack(now)) {
            self.cumulative_resend(now, path);
            any = true;
        }
        // A block the receiver reports decoded holds all its segments, also one an XOR parity
        // rebuilt where the groups did not see it repaired: else the point would wait on it for
        // good, its resends moot (the blocks no longer send a decoded block's symbols).
        let blocks = self.paths.get(path).map(|p| p.cumulative_blocks()).unwrap_or_default();
        for block in blocks {
            let decoded =
                self.transfer.as_ref().is_some_and(|t| t.sender.block(block).is_none_or(|b| b.decoded));
            if decoded && self.paths[path].cumulative_block_decoded(now, block) {
                self.cumulative_resend(now, path);
                any = true;
            }
        }
        if any {
            // Queued resends the point has passed since are moot.
            if let Some(t) = self.transfer.as_mut() {
                let p = &self.paths[path];
                t.sender.drop_retransmissions(|block, index| p.cumulative_passed((block, index)));
            }
        }
    }

    /// Sends again the segment the path's cumulative rules call lost now (three duplicate ACKs,
    /// or a partial ACK in recovery), as a loss of the packet that carried it.
    fn cumulative_resend(&mut self, now: Instant, path: usize) {
        let Some(una) = self.paths.get(path).and_then(|p| p.cumulative_point()) else { return };
        // Sato et al. §3.2: the receiver withholds its duplicate ACKs while the parity may
        // still rebuild the segment.
        let suppressed = self.transfer.as_ref().is_some_and(|t| t.xor_groups)
            && self.redundancy.parity_groups().is_some_and(|g| g.may_repair(una.0, una.1));
        let Some((segment, why, packet)) = self.paths[path].cumulative_loss(suppressed) else { return };
        if !why.is_congestion() {
            // ns-3's guess of a held segment proved wrong: the segment goes again, no signal.
            if let Some(t) = self.transfer.as_mut() {
                t.sender.queue_retransmission(segment.0, segment.1);
            }
            return;
        }
        match packet {
            Some(packet) => self.after_losses(now, path, Vec::new(), vec![packet], false),
            None => {
                // Its packet was given up already (a timeout): the segment goes again, and the
                // controller hears of the loss.
                if let Some(t) = self.transfer.as_mut() {
                    t.sender.queue_retransmission(segment.0, segment.1);
                }
                let p = &mut self.paths[path];
                p.cc.on_lost(now, 1);
                p.cc.on_congestion(now, now, crate::cc::Congestion::Loss);
            }
        }
    }
}

#[cfg(test)]
#[path = "cumulative_tests.rs"]
mod tests;
