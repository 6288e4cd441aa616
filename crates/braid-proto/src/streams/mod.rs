//! Reliable, ordered, multiplexed byte streams over the pipe, with per-stream and connection
//! flow control (PROTOCOL.md §10.3).
//!
//! Stream ids: the client opens even ids, the server odd ones (one bit, as in QUIC). Every
//! stream is bidirectional. Symbols reach the receiver in any order, so a stream's chunks may
//! too: each stream reassembles by offset (as QUIC's do, RFC 9000 §2.2), keeping what arrived
//! early up to its flow-control window, and hands out only the contiguous front.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::pipe::{PipeFrame, MAX_CHUNK};
use crate::wire::Writer;
use crate::Instant;

mod window;
pub use window::{Clock, Window};

/// Which end of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// A mistake by the application using a stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("no such stream {0}")]
    Unknown(u64),
    #[error("stream {0} was already finished or reset for writing")]
    Closed(u64),
    #[error("stream {id} was reset by the peer (code {code})")]
    Reset { id: u64, code: u64 },
    #[error("the peer allows no more streams now (limit {0})")]
    Limit(u64),
}

/// A violation by the peer: the connection must close with this reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerViolation {
    #[error("stream {0}: more data than its flow-control window allows")]
    StreamWindow(u64),
    #[error("more data than the connection's flow-control window allows")]
    ConnectionWindow,
    #[error("stream {0} opened beyond the stream limit")]
    StreamLimit(u64),
    #[error("stream {0}: data beyond its final size")]
    FinalSize(u64),
}

/// Something the application should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// The peer opened this stream.
    Opened(u64),
    /// Data, the end, or a reset can be read.
    Readable(u64),
}

#[derive(Debug, Default)]
struct SendStream {
    buf: VecDeque<u8>,
    /// Bytes moved into the pipe so far.
    offset: u64,
    /// The peer's window for this stream: bytes it allows in total.
    max: u64,
    fin: bool,
    fin_sent: bool,
    reset: Option<u64>,
    reset_sent: bool,
}

#[derive(Debug, Default)]
struct RecvStream {
    /// The contiguous bytes from `read` on, ready for the application.
    buf: VecDeque<u8>,
    /// Chunks that arrived ahead of `received`, by offset, never overlapping (so together at
    /// most the flow-control window).
    ahead: BTreeMap<u64, Vec<u8>>,
    /// End of the contiguous data received (`read + buf.len()`).
    received: u64,
    /// Highest offset received, contiguous or not (what flow control counts).
    highest: u64,
    /// Bytes the application has read.
    read: u64,
    /// The window advertised to the peer.
    max: u64,
    /// How far beyond `read` the next window update reaches ([`Window`]).
    window: Window,
    /// The stream's final size, once a frame with FIN told it.
    final_size: Option<u64>,
    reset: Option<u64>,
}

impl RecvStream {
    /// Everything up to the final size has arrived.
    fn complete(&self) -> bool {
        self.final_size == Some(self.received)
    }

    /// Takes bytes `offset .. offset + data.len()`: what extends the contiguous front goes to
    /// `buf` (with any early chunks it now reaches), the rest is kept in `ahead` without
    /// overlapping what is there. Bytes already held are ignored.
    fn insert(&mut self, mut offset: u64, mut data: &[u8]) {
        if offset < self.received {
            let skip = (self.received - offset).min(data.len() as u64) as usize;
            data = &data[skip..];
            offset += skip as u64;
        }
        let end = offset + data.len() as u64;
        let mut at = offset;
        while at < end {
            // A held chunk covering `at`: skip past it.
            if let Some((&k, v)) = self.ahead.range(..=at).next_back() {
                let held_end = k + v.len() as u64;
                if held_end > at {
                    at = held_end;
                    continue;
                }
            }
            let next = self.ahead.range(at + 1..).next().map_or(end, |(&k, _)| k.min(end));
            let piece = &data[(at - offset) as usize..(next - offset) as usize];
            self.ahead.insert(at, piece.to_vec());
            at = next;
        }
        while let Some(chunk) = self.ahead.remove(&self.received) {
            self.received += chunk.len() as u64;
            self.buf.extend(chunk);
        }
    }
}

/// What one stream's turn at the pipe came to.
enum Turn {
    /// A frame was written; `more`: the stream has more to send.
    Wrote { more: bool },
    /// Flow control or the budget stopped it: it keeps its turn.
    Blocked,
    /// Nothing more to send (a reset already sent): it leaves the round robin.
    Done,
}

/// The flow-control limits one end sets for the other (from transport parameters).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_data: u64,
    pub max_stream_data: u64,
    pub max_streams: u64,
}

pub struct Streams {
    side: Side,
    local: Limits,
    next_local_index: u64,
    peer_opened: u64,
    send: BTreeMap<u64, SendStream>,
    recv: BTreeMap<u64, RecvStream>,
    /// Streams with something to put in the pipe, served round-robin.
    ready: VecDeque<u64>,
    /// Connection window: pipe data bytes the peer allows in total / we have sent.
    peer_max_data: u64,
    peer_max_stream_data: u64,
    peer_max_streams: u64,
    sent_data: u64,
    /// Connection window we advertise / data bytes received / read by the application.
    max_data: u64,
    received_data: u64,
    read_data: u64,
    max_data_dirty: bool,
    /// How far beyond `read_data` the next connection window update reaches.
    window: Window,
    /// What the windows grow by ([`Streams::set_clock`], [`Streams::with_window_cap`]).
    clock: Clock,
    dirty_streams: Vec<u64>,
    events: VecDeque<StreamEvent>,
    /// A frame written since [`Streams::take_flushed`] emptied its stream's send buffer: the end
    /// of what the application had written there (a request, a response).
    flushed: bool,
}

impl Streams {
    /// `local`: what this end allows the peer; `peer`: what the peer allows this end.
    pub fn new(side: Side, local: Limits, peer: Limits) -> Streams {
        Streams {
            side,
            local,
            next_local_index: 0,
            peer_opened: 0,
            send: BTreeMap::new(),
            recv: BTreeMap::new(),
            ready: VecDeque::new(),
            peer_max_data: peer.max_data,
            peer_max_stream_data: peer.max_stream_data,
            peer_max_streams: peer.max_streams,
            sent_data: 0,
            max_data: local.max_data,
            received_data: 0,
            read_data: 0,
            max_data_dirty: false,
            window: Window::new(local.max_data),
            clock: Clock::default(),
            dirty_streams: Vec::new(),
            events: VecDeque::new(),
            flushed: false,
        }
    }

    /// Lets the receive windows grow up to `cap` bytes each (receive-window auto-tuning,
    /// [`Window`]); no larger than the initial windows (the default), they keep their size.
    pub fn with_window_cap(mut self, cap: u64) -> Streams {
        self.clock.cap = cap;
        self
    }

    /// The connection's time and its slowest path's smoothed RTT, for window auto-tuning.
    pub fn set_clock(&mut self, now: Instant, rtt: Duration) {
        self.clock.now = Some(now);
        self.clock.rtt = rtt;
    }

    /// Whether the windows may grow (a cap above the initial windows).
    pub fn tunes_windows(&self) -> bool {
        self.clock.cap > self.local.max_data.min(self.local.max_stream_data)
    }

    fn is_local(&self, id: u64) -> bool {
        (id & 1 == 1) == (self.side == Side::Server)
    }

    fn create(&mut self, id: u64) {
        self.send.insert(id, SendStream { max: self.peer_max_stream_data, ..SendStream::default() });
        let window = Window::new(self.local.max_stream_data);
        self.recv.insert(id, RecvStream { max: window.size, window, ..RecvStream::default() });
    }

    /// Opens a new stream.
    pub fn open(&mut self) -> Result<u64, StreamError> {
        if self.next_local_index >= self.peer_max_streams {
            return Err(StreamError::Limit(self.peer_max_streams));
        }
        let id = self.next_local_index * 2 + u64::from(self.side == Side::Server);
        self.next_local_index += 1;
        self.create(id);
        Ok(id)
    }

    /// Queues bytes for sending; all are accepted (the application bounds its own buffering by
    /// watching [`Streams::send_buffered`]).
    pub fn write(&mut self, id: u64, data: &[u8]) -> Result<usize, StreamError> {
        let s = self.send.get_mut(&id).ok_or(StreamError::Unknown(id))?;
        if s.fin || s.reset.is_some() {
            return Err(StreamError::Closed(id));
        }
        s.buf.extend(data);
        if !self.ready.contains(&id) {
            self.ready.push_back(id);
        }
        Ok(data.len())
    }

    /// Bytes written to stream `id` but not yet moved into the pipe.
    pub fn send_buffered(&self, id: u64) -> usize {
        self.send.get(&id).map_or(0, |s| s.buf.len())
    }

    /// Whether any stream holds bytes (or a FIN or reset) not yet moved into the pipe, whether
    /// or not flow control lets them go: `false` means the application is idle, not blocked.
    pub fn has_buffered(&self) -> bool {
        self.ready.iter().any(|id| {
            let s = &self.send[id];
            !s.buf.is_empty() || (s.fin && !s.fin_sent) || (s.reset.is_some() && !s.reset_sent)
        })
    }

    /// No more data on `id` after what was written.
    pub fn finish(&mut self, id: u64) -> Result<(), StreamError> {
        let s = self.send.get_mut(&id).ok_or(StreamError::Unknown(id))?;
        if s.fin || s.reset.is_some() {
            return Err(StreamError::Closed(id));
        }
        s.fin = true;
        if !self.ready.contains(&id) {
            self.ready.push_back(id);
        }
        Ok(())
    }

    /// Abandons sending on `id`: unsent data is dropped, the peer is told.
    pub fn reset(&mut self, id: u64, code: u64) -> Result<(), StreamError> {
        let s = self.send.get_mut(&id).ok_or(StreamError::Unknown(id))?;
        if s.reset.is_some() || s.fin_sent {
            return Err(StreamError::Closed(id));
        }
        s.buf.clear();
        s.reset = Some(code);
        if !self.ready.contains(&id) {
            self.ready.push_back(id);
        }
        Ok(())
    }

    /// Reads into `out`; `Ok((n, fin))`, where `fin` means the stream has ended and everything
    /// was read. `(0, false)`: nothing yet.
    pub fn read(&mut self, id: u64, out: &mut [u8]) -> Result<(usize, bool), StreamError> {
        let s = self.recv.get_mut(&id).ok_or(StreamError::Unknown(id))?;
        if let Some(code) = s.reset {
            return Err(StreamError::Reset { id, code });
        }
        let n = out.len().min(s.buf.len());
        let (front, back) = s.buf.as_slices();
        let from_front = n.min(front.len());
        out[..from_front].copy_from_slice(&front[..from_front]);
        out[from_front..n].copy_from_slice(&back[..n - from_front]);
        s.buf.drain(..n);
        s.read += n as u64;
        self.read_data += n as u64;
        // Window updates once half a window has been consumed (RFC 9000 §4.2's usual policy),
        // each window doubling if the last half went in under two round trips ([`Window`]).
        if s.read + s.window.size / 2 > s.max && s.final_size.is_none() {
            s.max = s.read + s.window.on_update(&self.clock);
            self.dirty_streams.push(id);
        }
        if self.read_data + self.window.size / 2 > self.max_data {
            self.max_data = self.read_data + self.window.on_update(&self.clock);
            self.max_data_dirty = true;
        }
        Ok((n, s.complete() && s.buf.is_empty()))
    }

    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        self.events.pop_front()
    }

    /// Whether anything waits to enter the pipe (and flow control lets some of it).
    pub fn has_pipe_data(&self) -> bool {
        self.ready.iter().any(|id| {
            let s = &self.send[id];
            s.reset.is_some_and(|_| !s.reset_sent)
                || (s.fin && !s.fin_sent && s.buf.is_empty())
                || (!s.buf.is_empty() && s.offset < s.max && self.sent_data < self.peer_max_data)
        })
    }

    /// Writes the next pipe frame, at most `budget` bytes of it, into `w`; returns whether one
    /// was written. Streams take turns.
    pub fn write_pipe_frame(&mut self, budget: usize, w: &mut Writer<'_>) -> bool {
        self.write_next(budget, false, w)
    }

    /// As [`Streams::write_pipe_frame`], where `room` is what is left of the symbol: a STREAM
    /// frame whose data fills it exactly goes without its length (PROTOCOL.md §10.1).
    pub fn fill_symbol(&mut self, room: usize, w: &mut Writer<'_>) -> bool {
        self.write_next(room, true, w)
    }

    fn write_next(&mut self, budget: usize, ends_symbol: bool, w: &mut Writer<'_>) -> bool {
        for _ in 0..self.ready.len() {
            let Some(id) = self.ready.pop_front() else { return false };
            match self.write_frame_of(id, budget, ends_symbol, w) {
                Turn::Wrote { more } => {
                    if more {
                        self.ready.push_back(id);
                    }
                    return true;
                }
                // Blocked by flow control or budget; keep its turn for later.
                Turn::Blocked => self.ready.push_back(id),
                Turn::Done => {}
            }
        }
        false
    }

    /// A stream whose whole unsent data is at most `max` bytes (no FIN or reset pending) and that
    /// flow control lets go now, while another stream has data waiting or already in the pipe: a
    /// request or a response written beside bulk data, which `Connection::fill_pipe` cuts ahead of
    /// what is already cut for the wire. (A stream alone, such as a video, never jumps its own
    /// data.)
    pub fn small_stream(&self, max: usize) -> Option<u64> {
        let used = |s: &SendStream| s.offset > 0 || !s.buf.is_empty();
        let streams_used = self.send.values().filter(|s| used(s)).count();
        self.ready.iter().copied().find(|id| {
            let s = &self.send[id];
            let len = s.buf.len() as u64;
            streams_used > usize::from(used(s))
                && s.reset.is_none()
                && !s.fin
                && !s.buf.is_empty()
                && s.buf.len() <= max
                && s.offset + len <= s.max
                && self.sent_data + len <= self.peer_max_data
        })
    }

    /// Writes the next pipe frame of stream `id` alone, at most `budget` bytes of it; returns
    /// whether one was written. The stream keeps its place in the round robin while it has
    /// more to send.
    pub fn write_pipe_frame_of(&mut self, id: u64, budget: usize, w: &mut Writer<'_>) -> bool {
        if !self.ready.contains(&id) {
            return false;
        }
        match self.write_frame_of(id, budget, false, w) {
            Turn::Wrote { more: true } => true,
            Turn::Wrote { more: false } => {
                self.ready.retain(|&r| r != id);
                true
            }
            Turn::Blocked => false,
            Turn::Done => {
                self.ready.retain(|&r| r != id);
                false
            }
        }
    }

    /// Writes stream `id`'s next frame, if flow control and the budget let it; without its
    /// length if `ends_symbol` and its data fills the budget.
    fn write_frame_of(&mut self, id: u64, budget: usize, ends_symbol: bool, w: &mut Writer<'_>) -> Turn {
        let s = self.send.get_mut(&id).expect("ready streams exist");
        if let Some(code) = s.reset {
            return match (s.reset_sent, budget >= 30) {
                (false, true) => {
                    PipeFrame::ResetStream { id, code, final_size: s.offset }.write(w);
                    s.reset_sent = true;
                    Turn::Wrote { more: false }
                }
                // A reset that does not fit waits for a symbol with room (it used to leave the
                // round robin and never be sent).
                (false, false) => Turn::Blocked,
                (true, _) => Turn::Done,
            };
        }
        let credit = (s.max - s.offset).min(self.peer_max_data - self.sent_data);
        let overhead = PipeFrame::stream_overhead(id, s.offset, MAX_CHUNK);
        let mut len = s.buf.len().min(MAX_CHUNK).min(credit as usize).min(budget.saturating_sub(overhead));
        let fill = budget.saturating_sub(PipeFrame::stream_to_end_overhead(id, s.offset));
        let to_end = ends_symbol && fill > 0 && fill <= MAX_CHUNK.min(s.buf.len()) && fill as u64 <= credit;
        if to_end {
            len = fill;
        }
        let fin = s.fin && len == s.buf.len();
        if len == 0 && !(fin && !s.fin_sent && budget >= overhead) {
            return Turn::Blocked;
        }
        if s.buf.as_slices().0.len() < len {
            s.buf.make_contiguous();
        }
        let frame = PipeFrame::Stream { id, offset: s.offset, fin, data: &s.buf.as_slices().0[..len] };
        if to_end {
            frame.write_to_end(w);
        } else {
            frame.write(w);
        }
        s.buf.drain(..len);
        s.offset += len as u64;
        s.fin_sent |= fin;
        self.sent_data += len as u64;
        let more = !s.buf.is_empty() || (s.fin && !s.fin_sent);
        if !more {
            self.flushed = true;
        }
        Turn::Wrote { more }
    }

    /// Whether a frame written since the last call emptied its stream's send buffer (see
    /// `Connection::fill_pipe`: the symbol holding the end of a request beside a bulk stream is
    /// the tail of that request and gets its repair margin at once).
    pub fn take_flushed(&mut self) -> bool {
        std::mem::take(&mut self.flushed)
    }

    /// A frame from the pipe, in any order.
    pub fn on_pipe_frame(&mut self, frame: PipeFrame<'_>) -> Result<(), PeerViolation> {
        let id = match frame {
            PipeFrame::Stream { id, .. } | PipeFrame::ResetStream { id, .. } => id,
        };
        if !self.recv.contains_key(&id) {
            if self.is_local(id) {
                // A stream we never opened: treat as a limit violation.
                return Err(PeerViolation::StreamLimit(id));
            }
            if id / 2 >= self.local.max_streams {
                return Err(PeerViolation::StreamLimit(id));
            }
            // Opening stream n implicitly opens the peer's lower-numbered ones (QUIC §2.1).
            while self.peer_opened <= id / 2 {
                let opened = self.peer_opened * 2 + u64::from(self.side == Side::Client);
                self.create(opened);
                self.events.push_back(StreamEvent::Opened(opened));
                self.peer_opened += 1;
            }
        }
        let s = self.recv.get_mut(&id).expect("created above");
        match frame {
            PipeFrame::Stream { offset, fin, data, .. } => {
                // The pipe parser bounds offset + len by the largest varint.
                let end = offset + data.len() as u64;
                // RFC 9000 §4.5: nothing beyond a known final size, and a final size once.
                let beyond = s.final_size.is_some_and(|f| end > f || (fin && end != f));
                if beyond || (fin && end < s.highest) {
                    return Err(PeerViolation::FinalSize(id));
                }
                if s.reset.is_some() {
                    return Ok(());
                }
                if end > s.max {
                    return Err(PeerViolation::StreamWindow(id));
                }
                let grown = end.saturating_sub(s.highest);
                if self.received_data + grown > self.max_data {
                    return Err(PeerViolation::ConnectionWindow);
                }
                self.received_data += grown;
                s.highest = s.highest.max(end);
                if fin {
                    s.final_size = Some(end);
                }
                let before = s.received;
                s.insert(offset, data);
                if s.received == before && !(fin && s.complete()) {
                    return Ok(());
                }
            }
            PipeFrame::ResetStream { code, final_size, .. } => {
                let differs = s.final_size.is_some_and(|f| f != final_size);
                if final_size < s.highest || final_size > s.max || differs {
                    return Err(PeerViolation::FinalSize(id));
                }
                if self.received_data + (final_size - s.highest) > self.max_data {
                    return Err(PeerViolation::ConnectionWindow);
                }
                self.received_data += final_size - s.highest;
                s.highest = final_size;
                s.reset = Some(code);
                s.buf.clear();
                s.ahead.clear();
            }
        }
        self.events.push_back(StreamEvent::Readable(id));
        Ok(())
    }

    /// Window updates to send: (connection max data if changed, per-stream maxima).
    pub fn poll_window_updates(&mut self) -> (Option<u64>, Vec<(u64, u64)>) {
        self.poll_window_updates_limited(usize::MAX)
    }

    /// Like [`Streams::poll_window_updates`], taking at most `max_streams` stream updates (the
    /// rest stay due, so one packet never has to carry them all).
    pub fn poll_window_updates_limited(&mut self, max_streams: usize) -> (Option<u64>, Vec<(u64, u64)>) {
        let data = std::mem::take(&mut self.max_data_dirty).then_some(self.max_data);
        let take = self.dirty_streams.len().min(max_streams);
        let streams = self
            .dirty_streams
            .drain(..take)
            .filter_map(|id| self.recv.get(&id).map(|s| (id, s.max)))
            .collect();
        (data, streams)
    }

    /// Received stream bytes the application has not read yet (read-only, memory accounting).
    pub fn recv_buffered(&self) -> u64 {
        self.recv.values().map(|s| (s.buf.len() + s.ahead.values().map(Vec::len).sum::<usize>()) as u64).sum()
    }

    /// Whether window updates wait to be sent.
    pub fn has_window_updates(&self) -> bool {
        self.max_data_dirty || !self.dirty_streams.is_empty()
    }

    /// A packet carrying window updates was lost: announce every current window again.
    pub fn resend_windows(&mut self) {
        self.max_data_dirty = true;
        self.dirty_streams = self
            .recv
            .iter()
            .filter(|(_, s)| s.final_size.is_none() && s.reset.is_none())
            .map(|(id, _)| *id)
            .collect();
    }

    pub fn on_max_data(&mut self, max: u64) {
        self.peer_max_data = self.peer_max_data.max(max);
    }

    pub fn on_max_stream_data(&mut self, id: u64, max: u64) {
        if let Some(s) = self.send.get_mut(&id) {
            s.max = s.max.max(max);
        }
    }
}

#[cfg(test)]
mod tests;
