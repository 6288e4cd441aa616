//! What a connection did, packet by packet, as plain data: packets sent, received and declared
//! lost, each path's congestion state when it changes, and the sources recovered from repair.
//! Off unless asked for ([`crate::Connection::enable_trace`]); then the caller drains it with
//! [`crate::Connection::poll_trace`] (the runtime writes it out as qlog). The core still does no
//! I/O and reads no clock: each event carries the `now` it happened at.
//!
//! Path events (a path failing, answering again, moving to a new address) are the runtime's to
//! record: it sees the core's [`crate::Event`]s and the addresses, which the core does not know.

use std::collections::VecDeque;
use std::time::Duration;

use braid_fec::header::SymbolId;

use crate::time::Instant;
use crate::wire::{Frame, PacketType};

/// Events held before the oldest are dropped (counted in [`Tracer::dropped`]): a caller that
/// polls after each round of input and output never comes near it.
pub const TRACE_QUEUE_LIMIT: usize = 16_384;

/// A packet's frames, as a trace shows them (payloads left out).
#[derive(Debug, Clone, PartialEq)]
pub enum TraceFrame {
    /// A run of padding bytes.
    Padding {
        length: usize,
    },
    Ping,
    /// Acknowledged packet numbers of `path`, `(lowest, highest)` ranges, highest first.
    Ack {
        path: u8,
        ack_delay: Duration,
        ranges: Vec<(u64, u64)>,
    },
    BlockAck {
        lowest_undecoded: u64,
        dofs: u64,
    },
    /// A symbol of `block`: a source (`index`) or a repair (`repair`, its index is then the
    /// code's: an RLNC span, a RaptorQ ESI, an XOR group's first source).
    Symbol {
        block: u64,
        index: u32,
        repair: bool,
        length: usize,
    },
    SymbolPart {
        id: u64,
        offset: u64,
        length: usize,
        total: u64,
    },
    FecStatus {
        path: u8,
        recovered: u64,
    },
    MaxData(u64),
    MaxStreamData {
        stream: u64,
        max: u64,
    },
    Close {
        code: u64,
        reason: String,
    },
    Handshake,
    PathAbandon(u8),
    Datagram {
        block: u64,
        index: u16,
        length: usize,
    },
    DatagramRepair {
        block: u64,
        span: u16,
        length: usize,
    },
}

impl TraceFrame {
    pub fn from_frame(f: &Frame<'_>) -> TraceFrame {
        match f {
            Frame::Padding => TraceFrame::Padding { length: 1 },
            Frame::Ping => TraceFrame::Ping,
            Frame::Ack(a) => TraceFrame::Ack {
                path: a.path,
                ack_delay: Duration::from_micros(a.ack_delay_us),
                ranges: a.ranges.iter().map(|r| (r.start, r.end)).collect(),
            },
            Frame::BlockAck(b) => TraceFrame::BlockAck { lowest_undecoded: b.lowest_undecoded, dofs: b.dofs },
            Frame::Symbol(s) => {
                let (index, repair) = match s.header.id {
                    SymbolId::Source { index } => (u32::from(index), false),
                    SymbolId::XorParity { first, .. } => (u32::from(first), true),
                    SymbolId::Rlnc { span, .. } => (u32::from(span), true),
                    SymbolId::RaptorQ { esi, .. } => (esi, true),
                };
                TraceFrame::Symbol { block: s.header.block, index, repair, length: s.payload.len() }
            }
            Frame::SymbolPart(p) => {
                TraceFrame::SymbolPart { id: p.id, offset: p.offset, length: p.data.len(), total: p.total }
            }
            Frame::FecStatus(s) => TraceFrame::FecStatus { path: s.path, recovered: s.recovered },
            Frame::MaxData(m) => TraceFrame::MaxData(*m),
            Frame::MaxStreamData { stream, max } => TraceFrame::MaxStreamData { stream: *stream, max: *max },
            Frame::Close(c) => {
                TraceFrame::Close { code: c.code, reason: String::from_utf8_lossy(c.reason).into_owned() }
            }
            Frame::Handshake(_) => TraceFrame::Handshake,
            Frame::PathAbandon(p) => TraceFrame::PathAbandon(*p),
            Frame::Datagram(d) => {
                TraceFrame::Datagram { block: d.block, index: d.index, length: d.data.len() }
            }
            Frame::DatagramRepair(r) => {
                TraceFrame::DatagramRepair { block: r.block, span: r.span, length: r.payload.len() }
            }
        }
    }
}

/// A packet's frames, each run of padding bytes as one.
fn frames_of<'a>(frames: impl Iterator<Item = Frame<'a>>) -> Vec<TraceFrame> {
    let mut out: Vec<TraceFrame> = Vec::new();
    for f in frames {
        if let (Frame::Padding, Some(TraceFrame::Padding { length })) = (&f, out.last_mut()) {
            *length += 1;
            continue;
        }
        out.push(TraceFrame::from_frame(&f));
    }
    out
}

/// Why packets were declared lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossTrigger {
    /// An acknowledgment of later packets (packet or time threshold, RFC 9002 §6.1).
    Ack,
    /// The loss timer (RFC 9002 §6.1.2).
    Timer,
    /// A probe timeout: presumed lost, the tail may only be late (RFC 9002 §6.2).
    ProbeTimeout,
}

impl LossTrigger {
    /// `probe`: a probe timeout's presumption; `no_ack`: no acknowledgment came with the losses.
    pub(crate) fn of(probe: bool, no_ack: bool) -> LossTrigger {
        match (probe, no_ack) {
            (true, _) => LossTrigger::ProbeTimeout,
            (false, true) => LossTrigger::Timer,
            (false, false) => LossTrigger::Ack,
        }
    }
}

/// A path's congestion and RTT state (RFC 9002's, as qlog's `metrics_updated` has it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathMetrics {
    pub cwnd: u64,
    pub bytes_in_flight: u64,
    /// Bytes per second the pacer lets out.
    pub pacing_rate: u64,
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
    pub latest_rtt: Duration,
    pub rtt_variance: Duration,
    /// The core's loss estimate for the path (0 to 1).
    pub loss: f64,
}

/// A packet sent or received: its path, header and frames.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePacket {
    pub at: Instant,
    pub path: u8,
    pub number: u64,
    pub ty: PacketType,
    pub size: usize,
    pub frames: Vec<TraceFrame>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TraceEvent {
    PacketSent(TracePacket),
    PacketReceived(TracePacket),
    PacketLost {
        at: Instant,
        path: u8,
        number: u64,
        size: u64,
        trigger: LossTrigger,
    },
    /// A path's state after it changed (an ACK, a loss, a timer), only when it differs from the
    /// last one recorded.
    Metrics {
        at: Instant,
        path: u8,
        metrics: PathMetrics,
    },
    /// Source symbols this end rebuilt from repair (useful repair), since the previous event.
    Recovered {
        at: Instant,
        symbols: u64,
    },
}

/// The connection's trace queue (inside [`crate::Connection`]); every hook returns at once when off.
#[derive(Debug, Default)]
pub struct Tracer {
    on: bool,
    events: VecDeque<TraceEvent>,
    /// Events dropped because the queue was full.
    pub dropped: u64,
    last_metrics: Vec<Option<PathMetrics>>,
    recovered: u64,
}

impl Tracer {
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Starts recording.
    pub fn enable(&mut self) {
        self.on = true;
    }

    /// The oldest event not yet taken.
    pub fn pop(&mut self) -> Option<TraceEvent> {
        self.events.pop_front()
    }

    fn push(&mut self, e: TraceEvent) {
        if self.events.len() >= TRACE_QUEUE_LIMIT {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(e);
    }

    /// A packet left: `packet` is its plaintext (header and frames).
    pub(crate) fn sent(&mut self, at: Instant, path: usize, packet: &[u8]) {
        if !self.on {
            return;
        }
        let mut r = crate::wire::Reader::new(packet);
        let Ok(header) = crate::wire::PacketHeader::parse(&mut r) else { return };
        let frames = frames_of(crate::wire::FrameIter::new(r.rest()).map_while(Result::ok));
        let (number, ty, size) = (header.number, header.ty, packet.len());
        self.push(TraceEvent::PacketSent(TracePacket { at, path: path as u8, number, ty, size, frames }));
    }

    /// A packet arrived and was taken (not a duplicate); `frames` are its parsed frames.
    pub(crate) fn received(
        &mut self,
        at: Instant,
        path: u8,
        header: &crate::wire::PacketHeader,
        size: usize,
        frames: &[Frame<'_>],
    ) {
        if !self.on {
            return;
        }
        let frames = frames_of(frames.iter().cloned());
        let (number, ty) = (header.number, header.ty);
        self.push(TraceEvent::PacketReceived(TracePacket { at, path, number, ty, size, frames }));
    }

    /// Packets of `path` declared lost: `(number, size)`.
    pub(crate) fn lost(
        &mut self,
        at: Instant,
        path: usize,
        lost: &[crate::conn::path::SentPacket],
        trigger: LossTrigger,
    ) {
        if !self.on {
            return;
        }
        for p in lost {
            let (number, size) = (p.number, p.size);
            self.push(TraceEvent::PacketLost { at, path: path as u8, number, size, trigger });
        }
    }

    /// The path's state now; recorded if it changed.
    pub(crate) fn metrics(&mut self, at: Instant, path: usize, p: &crate::conn::path::Path) {
        if !self.on {
            return;
        }
        let metrics = PathMetrics {
            cwnd: p.cc.window(),
            bytes_in_flight: p.in_flight,
            pacing_rate: p.pacing_rate(),
            smoothed_rtt: p.rtt.smoothed(),
            min_rtt: p.rtt.min(),
            latest_rtt: p.rtt.latest(),
            rtt_variance: p.rtt.variation(),
            loss: p.loss.rate(),
        };
        if self.last_metrics.len() <= path {
            self.last_metrics.resize(path + 1, None);
        }
        if self.last_metrics[path] != Some(metrics) {
            self.last_metrics[path] = Some(metrics);
            self.push(TraceEvent::Metrics { at, path: path as u8, metrics });
        }
    }

    /// The count of sources recovered from repair so far; an event if it grew.
    pub(crate) fn recovered(&mut self, at: Instant, total: u64) {
        if !self.on || total <= self.recovered {
            return;
        }
        let symbols = total - self.recovered;
        self.recovered = total;
        self.push(TraceEvent::Recovered { at, symbols });
    }
}
