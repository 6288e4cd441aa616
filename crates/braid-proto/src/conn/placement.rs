//! Where symbols may go when not every path may carry every symbol: an MPTCP subflow's own
//! retransmissions, blocks mapped to one path (per-path repair placement, MPTCP-dFEC's
//! intra-subflow FEC), and the all-paths view a coupled congestion controller needs.

use crate::cc::Aggregate;
use crate::wire::Writer;
use crate::Instant;

use super::Connection;

impl Connection {
    /// Whether `path` has a symbol no other path may carry: a retransmission pinned to it (an
    /// MPTCP subflow resends its own losses) or, with per-path placement, a block mapped to it
    /// that still has something to send.
    pub(super) fn has_pinned_symbol(&self, path: usize) -> bool {
        let id = path as u8;
        let Some(s) = self.session.as_ref() else { return false };
        if s.sender.has_retransmission_only_for(id) {
            return true;
        }
        if !s.sender.is_per_path() {
            return false;
        }
        let view = self.path_view(path);
        s.sender.blocks().filter(|b| b.path == Some(id)).any(|b| {
            !b.all_sources_sent()
                || self.redundancy.repairs_wanted(b, &view) > 0
                || self.redundancy.spare_repairs(b, &view) > 0
        })
    }

    /// The lowest-RTT path that may send at `at` and has a symbol only it may carry: such work
    /// goes out whenever its path may send, before the scheduler's choice (a subflow's own
    /// retransmissions are not the connection scheduler's to place).
    pub(super) fn pinned_path(&self, at: Instant) -> Option<usize> {
        let mss = self.config.max_datagram as u64;
        (0..self.paths.len())
            .filter(|&i| self.data_room(i) >= mss && self.paths[i].next_send <= at)
            .filter(|&i| self.has_pinned_symbol(i))
            .min_by_key(|&i| (self.paths[i].rtt.smoothed(), i))
    }

    /// Per-path placement: `path` may send and no block is left for it — cut the next
    /// block from the pipe, at most one congestion window of `path` long (MPTCP hands a subflow
    /// no more than it can send; a whole 64-symbol block on a subflow with a window of three
    /// packets held the connection's receive buffer for many of its round trips).
    pub(super) fn cut_block_for(&mut self, path: usize) {
        let mss = self.config.max_datagram as u64;
        let limit = (self.paths[path].cc.window() / mss).max(1) as usize;
        let Some(s) = self.session.as_mut().filter(|s| s.sender.is_per_path()) else { return };
        if s.sender.has_unsent_for(path as u8) || !s.sender.has_room() {
            return;
        }
        let size = s.sender.symbol_size();
        for _ in 0..limit {
            while s.partial.len() < size
                && s.streams.write_pipe_frame(size - s.partial.len(), &mut Writer::new(&mut s.partial))
            {
            }
            let more = s.streams.has_pipe_data();
            if s.partial.is_empty() || (s.partial.len() < size && more && size - s.partial.len() > 16) {
                break;
            }
            s.partial.resize(size, 0);
            if s.sender.push_source(&s.partial).is_err() {
                break;
            }
            s.partial.clear();
            if !more {
                break;
            }
        }
        s.sender.close_block();
    }

    /// Every path's window and smoothed RTT, for a coupled congestion controller (LIA).
    pub(super) fn aggregate(&self) -> Aggregate {
        let mut all = Aggregate::default();
        for p in &self.paths {
            all.push(p.cc.window(), p.rtt.smoothed());
        }
        all
    }
}
