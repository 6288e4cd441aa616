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
        let Some(s) = self.transfer.as_ref() else { return false };
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
    /// block from the pipe, at most one congestion window of `path` long with the parities the
    /// path's controller will add to it (MPTCP hands a subflow no more than it can send; a whole
    /// 64-symbol block on a subflow with a window of three packets held the connection's receive
    /// buffer for many of its round trips). Without the parities counted, dFEC's first parity
    /// (ratio 9) took one of a 10-packet initial window and the block's tenth source waited a
    /// round trip of its path: on a 400 ms second path that held the whole stream's in-order
    /// delivery (dFEC Table III's google page, 0 % loss: 7.2 against MPTCP's 12.5 Mbit/s).
    pub(super) fn cut_block_for(&mut self, path: usize) {
        let mss = self.config.max_datagram as u64;
        let window = (self.paths[path].cc.window() / mss).max(1);
        // The most sources n with n + parities(n) ≤ window (monotone in n), at least one.
        let fits = |n: u64| n.saturating_add(self.redundancy.parities_for(path, n)) <= window;
        let (mut lo, mut hi) = (1, window);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let limit = usize::try_from(lo).unwrap_or(usize::MAX);
        let Some(s) = self.transfer.as_mut().filter(|s| s.sender.is_per_path()) else { return };
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

    /// Every path's window, smoothed RTT and model, for a coupled congestion controller (LIA,
    /// braid's), given to path `own`.
    pub(super) fn aggregate(&self, own: usize) -> Aggregate {
        let mut all = Aggregate::default();
        for (i, p) in self.paths.iter().enumerate() {
            all.push_path(p.cc.window(), p.rtt.smoothed(), p.cc.model_view());
            if !p.can_send() {
                all.set_inactive(i);
            }
        }
        all.set_own(own);
        all
    }
}
