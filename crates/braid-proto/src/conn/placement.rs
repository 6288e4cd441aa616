//! Where symbols may go when not every path may carry every symbol: an MPTCP subflow's own
//! retransmissions, blocks mapped to one path (per-path repair placement, MPTCP-dFEC's
//! intra-subflow FEC), and the all-paths view a coupled congestion controller needs.

use std::collections::VecDeque;

use crate::cc::Aggregate;
use crate::pipe::OwnedFrame;
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

    /// The most sources a block of `path` may hold: one congestion window of `path` with the
    /// parities the path's controller will add to them, at least one (MPTCP hands a subflow no
    /// more than it can send; a whole 64-symbol block on a subflow with a window of three packets
    /// held the connection's receive buffer for many of its round trips). Without the parities
    /// counted, dFEC's first parity (ratio 9) took one of a 10-packet initial window and the
    /// block's tenth source waited a round trip of its path: on a 400 ms second path that held
    /// the whole stream's in-order delivery (dFEC Table III's google page, 0 % loss: 7.2 against
    /// MPTCP's 12.5 Mbit/s).
    fn block_limit(&self, path: usize) -> usize {
        let mss = self.config.max_datagram as u64;
        self.sources_within(path, self.paths[path].cc.window() / mss)
    }

    /// The most sources n with n + parities(n) ≤ `packets` (monotone in n), at least one.
    fn sources_within(&self, path: usize, packets: u64) -> usize {
        let packets = packets.max(1);
        let fits = |n: u64| n.saturating_add(self.redundancy.parities_for(path, n)) <= packets;
        let (mut lo, mut hi) = (1, packets);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        usize::try_from(lo).unwrap_or(usize::MAX)
    }

    /// Per-path placement, per segment: the scheduler chose `path` and it has no source waiting,
    /// so source symbols are cut from the pipe into `path`'s open block (`blocks/send/growing.rs`):
    /// a window of them beside their parities ([`Self::block_limit`]) if `path` is the fastest
    /// path, else as many as its window has room for now, at least one. MPTCP's scheduler
    /// hands segments to the lowest-RTT subflow whose window has room, and to another only when
    /// that one is full; braid's paths are paced, and a fast path waiting for its pacer between
    /// two packets is not ready to the scheduler, so a source per choice gave a slower path most
    /// of each burst (dFEC Table III's live video, 5 % loss on B1 and B2 at 400 ms, seed 1: 3 of
    /// every 4 sources on B2, 35 % of the frames on time). The fastest path takes a whole window
    /// even while some of it is in flight: what waits for its window to reopen still arrives
    /// before a slower path would bring it (cut to its room, that video had 80 % on time, with
    /// a window 83 %). A slower path takes no more than it can send now: a window cut for it
    /// waited a round trip of the slow path for the window to reopen (dFEC Table III's pages
    /// with B2 at 400 ms). See [`Self::cut_source_for`] for when blocks close.
    pub(super) fn cut_block_for(&mut self, path: usize) {
        let Some(s) = self.transfer.as_ref().filter(|s| s.sender.is_per_path()) else { return };
        if s.sender.has_unsent_for(path as u8) {
            return;
        }
        let limit = self.block_limit(path);
        let mss = self.config.max_datagram as u64;
        let srtt = |i: usize| self.paths[i].rtt.smoothed();
        let fastest =
            (0..self.paths.len()).filter(|&i| self.paths[i].can_send()).all(|i| srtt(i) >= srtt(path));
        let batch = if fastest { limit } else { self.sources_within(path, self.data_room(path) / mss) };
        for _ in 0..batch {
            if !self.cut_source_for(path, limit) {
                break;
            }
        }
    }

    /// Cuts the next source symbol from the pipe into `path`'s open block; `false` if none was
    /// cut or no more should be now (the pipe ran dry, or the block window is full). The block
    /// closes before the source goes out — so that source tells the receiver its length — once
    /// it holds `limit` sources ([`Self::block_limit`]) or the pipe ran dry; the pipe running dry
    /// closes the other paths' open blocks too (nothing more will join them for now).
    fn cut_source_for(&mut self, path: usize, limit: usize) -> bool {
        let id = path as u8;
        let Some(s) = self.transfer.as_mut() else { return false };
        if s.partial.is_empty() && s.sender.resize_pending_on(id) {
            // PROTOCOL.md §14.3: the symbol size changed; the path's next block takes the new one.
            s.sender.close_growing_on(id);
        }
        if !s.sender.has_room_on(id) {
            // The block window is full: the open blocks waiting for their paths to be given
            // data close (they owe their length, which any path may carry), so the receiver can
            // complete them and the window frees. A path the scheduler stopped choosing kept
            // its block open with the rest of the window behind it (8 paths, fault campaign
            // seed 328: a deadlock).
            for block in s.sender.growing_all_sent() {
                s.sender.close_growing_id(block);
            }
            return false;
        }
        let size = s.sender.symbol_size_on(id);
        while let Some(frame) = s.recut.front_mut() {
            let room = size.saturating_sub(s.partial.len());
            if !frame.write_part(room, true, &mut Writer::new(&mut s.partial)) {
                break;
            }
            s.recut.pop_front();
        }
        while s.recut.is_empty()
            && s.partial.len() < size
            && s.streams.fill_symbol(size - s.partial.len(), &mut Writer::new(&mut s.partial))
        {}
        let more = s.streams.has_pipe_data() || !s.recut.is_empty();
        if s.partial.is_empty() || (s.partial.len() < size && more && size - s.partial.len() > 16) {
            // Nothing to cut, or flow control stopped a stream mid-symbol: wait for more.
            return false;
        }
        if !more && self.split_last_cut(path) {
            return false;
        }
        let Some(s) = self.transfer.as_mut() else { return false };
        s.partial.resize(size, 0);
        let Ok(len) = s.sender.push_source_on(id, &s.partial) else { return false };
        s.partial.clear();
        if !more {
            s.sender.close_all_growing();
        } else if len >= limit {
            s.sender.close_growing_on(id);
        }
        more
    }

    /// The pipe ran dry with `partial` its last data, and some paths' open blocks have every
    /// source sent: the data are split among those blocks (`path`'s own included if it has one),
    /// a source each that closes its block, all sent by the paths that send next. A block
    /// closed with none of its sources left to send has told the receiver no length, and a
    /// symbol sent to tell it later could arrive after the transfer's last byte (reordered, or
    /// lost and sent again); a source holding data cannot. `false` (nothing done) if no such
    /// block is open or the data do not split; blocks left without a piece are closed anyway
    /// and owe their length (`SendBlock::owes_length`).
    fn split_last_cut(&mut self, path: usize) -> bool {
        let Some(s) = self.transfer.as_mut() else { return false };
        let targets = s.sender.growing_all_sent();
        let size = s.sender.symbol_size_on(path as u8);
        if targets.is_empty()
            || targets.iter().any(|&b| s.sender.block(b).is_none_or(|b| b.symbol_size() != size))
        {
            return false;
        }
        let mut frames: VecDeque<OwnedFrame> = OwnedFrame::from_symbols([s.partial.as_slice()]).into();
        // Each piece holds its share of the data plus a frame header's worth.
        let share = s.partial.len().div_ceil(targets.len()) + 24;
        s.partial.clear();
        s.sender.close_all_growing_but(&targets);
        let last = targets.len() - 1;
        for (i, &block) in targets.iter().enumerate() {
            let room = if i == last { size } else { share.min(size) };
            let mut piece = Vec::with_capacity(size);
            while let Some(f) = frames.front_mut() {
                if !f.write_part(room - piece.len(), room == size, &mut Writer::new(&mut piece)) {
                    break;
                }
                frames.pop_front();
            }
            if !piece.is_empty() {
                piece.resize(size, 0);
                // Cannot fail (an open block of this size): the block then owes its length.
                let _ = s.sender.push_closing_source(block, &piece, path as u8);
            }
        }
        s.sender.close_all_growing();
        // Nothing is left over (the last piece has a whole symbol); were it, it is cut next.
        for f in frames.into_iter().rev() {
            s.recut.push_front(f);
        }
        true
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
