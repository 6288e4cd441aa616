//! Cutting stream data into source symbols just ahead of the wire: how far ahead (a few
//! milliseconds at the paths' pacing rates, plus what slower paths need), symbols that hold
//! whole pipe frames (PROTOCOL.md §10.1), and telling the controllers when the application
//! leaves the windows unused.

use std::time::Duration;

use crate::wire::Writer;

use super::Connection;

/// How far ahead of the wire stream data is cut into source symbols, in time at the paths'
/// pacing rates ([`Connection::cut_ahead_bytes`]), and the least, in bytes, so a slow path still
/// has a few symbols ready. Everything cut ahead is wait for a request on another stream: at
/// 4 ms / 16 KiB a request beside a bulk transfer on a 20 Mbit/s path waited ~6 ms for it
/// (stream_fairness); at 8 KiB braid's goodput with a 50 %-loss second path (FMTCP Table II)
/// fell from 0.867 to 0.853 of the ideal, and less cut ahead cost more.
const CUT_AHEAD: Duration = Duration::from_millis(2);
const CUT_AHEAD_MIN: u64 = 8 * 1024;
/// The least cut ahead when one path sends: the slow-path reason above does not apply, and at
/// Startup's first-flight rate (~5 Mbit/s on a 100 ms path) 8 KiB were 13 ms of wait for a
/// request; 2.5 KiB are two or three datagram-sized symbols.
const CUT_AHEAD_MIN_ONE_PATH: u64 = 2560;
/// A stream whose whole unsent data is at most this is a small write (a request, a response)
/// that may be cut ahead of the source symbols already cut for slower paths
/// ([`Connection::cut_small_writes`]).
const SMALL_WRITE: usize = 4096;

impl Connection {
    /// Bytes of source symbols to cut ahead for the paths slower than the fastest: for each, what
    /// the fastest path sends in the slower one's round trip (its window × the RTT ratio). The
    /// arrival-time scheduler gives a slow path the sources the fast one would deliver later than
    /// it, and those exist only if that many are cut: with two blocks alone a 300–500 ms second
    /// path carried 0–2 % of FMTCP Table II's bytes. One path: 0.
    fn slow_paths_lookahead(&self) -> u64 {
        let Some(c) = self.control_path() else { return 0 };
        let fast = &self.paths[c];
        let fast_rtt = fast.rtt.smoothed().as_micros().max(1);
        let fast_window = u128::from(fast.cc.window());
        let ahead: u128 = (0..self.paths.len())
            .filter(|&i| i != c && self.paths[i].can_send())
            .map(|i| fast_window * self.paths[i].rtt.smoothed().as_micros().max(fast_rtt) / fast_rtt)
            .sum();
        u64::try_from(ahead).unwrap_or(u64::MAX)
    }

    /// Tells every path's controller when the application leaves the windows unused: no stream
    /// data waits, and no symbol is cut but unsent (rate samples taken now understate the path).
    pub(super) fn mark_app_limited(&mut self) {
        let Some(s) = self.transfer.as_ref() else { return };
        if s.streams.has_pipe_data() || s.sender.unsent_sources() > 0 || !s.partial.is_empty() {
            return;
        }
        for p in self.paths.iter_mut().filter(|p| p.window_room() > 0) {
            p.cc.on_app_limited();
        }
    }

    /// Bytes of source symbols cut ahead of the wire for the paths' next sends: what the paths
    /// together send in [`CUT_AHEAD`] at their pacing rates, at least [`CUT_AHEAD_MIN`] bytes.
    /// Data cut is committed to its place in the send order, so whatever is cut after it (a
    /// request on another stream) waits for it: this is the wait braid adds to every stream.
    fn cut_ahead_bytes(&self) -> u64 {
        let (rate, paths) = self
            .paths
            .iter()
            .filter(|p| p.can_send())
            .fold((0u64, 0usize), |(rate, n), p| (rate.saturating_add(p.pacing_rate()), n + 1));
        let quantum = u128::from(rate) * CUT_AHEAD.as_micros() / 1_000_000;
        let min = if paths > 1 { CUT_AHEAD_MIN } else { CUT_AHEAD_MIN_ONE_PATH };
        u64::try_from(quantum).unwrap_or(u64::MAX).max(min)
    }

    /// Moves stream data into source symbols while the block window has room, keeping at most
    /// two blocks' length of source symbols cut but unsent: stream data waits in its stream
    /// until the wire is near, so the streams' round robin (`Streams::fill_symbol`)
    /// interleaves at the wire and a request on one stream does not queue behind everything a
    /// bulk stream has written (it used to wait behind the whole block window). With per-path
    /// placement blocks are cut when a path needs data instead ([`Connection::cut_block_for`]).
    pub(super) fn fill_pipe(&mut self) {
        let slower = self.slow_paths_lookahead();
        let quantum = self.cut_ahead_bytes();
        if slower > 0 && self.scheduler.serves_urgent_first() {
            self.cut_small_writes();
        }
        let Some(s) = self.transfer.as_mut().filter(|s| !s.sender.is_per_path()) else { return };
        if s.partial.is_empty() && s.sender.resize_pending() {
            // PROTOCOL.md §14.3: the symbol size changed; the next block takes the new one.
            s.sender.close_block();
        }
        let size = s.sender.symbol_size();
        // A small write on a stream while another stream has sent or waits (a request or a
        // response beside a bulk transfer or after it; never a video's frame on its one stream):
        // if nothing is left to send once it is cut, its block is still a request's tail. Only
        // a burst not yet cut at all counts: the cut runs a few ms ahead of the wire, so the
        // last piece of any large write leaves at most SMALL_WRITE unsent, and that piece would
        // have turned every burst's tail into a request's.
        let small_write = s.sender.burst_len() == 0 && s.streams.small_stream(SMALL_WRITE).is_some();
        // Two blocks: with one, braid's scheduler ran short of sources for its second path and
        // filled it with repair (FMTCP Table II, 50 % loss on path 2: 0.68 of the ideal instead
        // of 0.92). On top of them, what the slower paths need ([`Self::slow_paths_lookahead`]).
        // Both counted in bytes, not blocks: symbols grow with the path MTU (16 KiB on
        // loopback), and two blocks of them held 2 MB, 0.8 s of a 20 Mbit/s path, ahead of
        // every other stream's data.
        let near = (2 * s.sender.max_block_len()).min(quantum.div_ceil(size.max(1) as u64) as usize);
        let ahead = near + (slower / size.max(1) as u64) as usize;
        // Counted once (a sum over the blocks), then one more per source pushed below.
        let mut unsent = s.sender.unsent_sources();
        while s.sender.has_room() && unsent < ahead {
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
            {
            }
            let more = s.streams.has_pipe_data() || !s.recut.is_empty();
            if s.partial.is_empty() {
                return;
            }
            if s.partial.len() < size && more && s.recut.is_empty() && size - s.partial.len() > 16 {
                // Flow control or budget stopped the stream mid-symbol: wait for more.
                return;
            }
            s.partial.resize(size, 0);
            if s.sender.push_source(&s.partial).is_err() {
                // Cannot happen (room was checked, the size is exact); keep the data for later.
                return;
            }
            unsent += 1;
            s.partial.clear();
            let flushed = s.streams.take_flushed();
            if flushed && more {
                // The symbol ends what the application wrote on some stream (a request beside a
                // bulk transfer) while other streams still send: its block closes and gets its
                // margin at once, as a burst's tail does. A reactive repair would cost that
                // request a round trip plus the loss detection delay.
                s.sender.close_block_as_tail();
            }
            if !more {
                // Nothing else to send for now: close the block so it can complete; if the
                // application is idle (not blocked by flow control), the blocks in flight are
                // the tail of a burst and get their repair margin at once (`on_app_idle`).
                if s.streams.has_buffered() {
                    s.sender.close_block();
                } else {
                    s.sender.on_app_idle();
                    if flushed && small_write {
                        // The burst was a small write (a request) on a connection with other
                        // streams: its block gets a request's tail margin (δ̂ 0.01 and a new
                        // path's early estimate), not an app-idle tail's (δ̂ 0.35: one symbol,
                        // no margin below 35 % loss). As an app-idle tail, a request written
                        // after a bulk transfer ended waited for a tail probe, the time
                        // threshold and a reactive round when its symbol was lost (215 ms).
                        s.sender.close_block_as_tail();
                    }
                }
                return;
            }
        }
    }

    /// Cuts each small write ([`SMALL_WRITE`]) into a block of its own, ahead of the source
    /// symbols already cut but unsent, and marks the block urgent so the scheduler serves it
    /// first (`Scheduler::serves_urgent_first`). With several paths the sources cut ahead include
    /// what the slower paths will need (about the fast path's window × the RTT ratio: 0.2–0.6 MB
    /// on `braid demo`'s paths); cut behind them, a request waited until the fast path reached
    /// it, about as long as the slow path's delay and queue, and the arrival-time scheduler then
    /// as often sent it on the slow path (probe round trips 250 ms on paths of 40 and 160 ms).
    fn cut_small_writes(&mut self) {
        let Some(s) = self.transfer.as_mut().filter(|s| !s.sender.is_per_path()) else { return };
        if !s.partial.is_empty() || !s.recut.is_empty() || s.sender.unsent_sources() == 0 {
            return;
        }
        let size = s.sender.symbol_size();
        while let Some(id) = s.streams.small_stream(SMALL_WRITE) {
            let before = s.streams.send_buffered(id);
            // Its own block, unless the open one has nothing unsent to jump.
            if s.sender.blocks().last().is_some_and(|b| !b.closed && !b.all_sources_sent()) {
                s.sender.close_block();
            }
            loop {
                if !s.sender.has_room() {
                    return;
                }
                while s.partial.len() < size
                    && s.streams.write_pipe_frame_of(
                        id,
                        size - s.partial.len(),
                        &mut Writer::new(&mut s.partial),
                    )
                {}
                if s.partial.is_empty() {
                    break;
                }
                s.partial.resize(size, 0);
                if s.sender.push_source(&s.partial).is_err() {
                    // Cannot happen (room was checked, the size is exact); keep the data for later.
                    return;
                }
                s.partial.clear();
                if s.streams.send_buffered(id) == 0 {
                    break;
                }
            }
            // The write is whole in its symbols: not a flush for the bulk loop to act on.
            s.streams.take_flushed();
            s.sender.close_block_as_urgent();
            if s.streams.send_buffered(id) == before {
                // Nothing fitted (no room for a frame): the bulk loop takes it in turn.
                return;
            }
        }
    }
}
