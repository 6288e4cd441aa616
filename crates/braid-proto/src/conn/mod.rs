//! The connection state machine (quinn-proto's shape): `handle_datagram` / `handle_timeout`
//! in, `poll_transmit` / `poll_timeout` / `poll_event` out, time passed in, no I/O.
//!
//! Status: the handshake, streams, block coding (RLNC by default), acknowledgements, loss
//! detection, congestion control and the `braid` mode's redundancy work over any number of
//! paths, the path (and block) of each symbol chosen by a [`crate::sched::Scheduler`]. Modes:
//! `braid`, `tcp` (a model) and the seed papers' `tcp-ir`, `dfec`, `sato`, `ctcp`, `fmtcp`, and
//! the multipath `mptcp` (a model) and `mptcp-dfec` (see [`Mode`]); repair goes per path or
//! across paths ([`RepairPlacement`]).

mod cutting;
mod datagrams;
mod lifecycle;
mod parts;
mod path;
mod placement;
mod pmtu;
mod policy;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Duration;

use braid_fec::{CodeFamily, CodecConfig};

use crate::blocks::{BlockReceiver, BlockSender};
use crate::cc::{CcAlgorithm, Congestion};
use crate::pipe::OwnedFrame;
use crate::streams::{Limits, PeerViolation, Side, StreamEvent, Streams};
use crate::wire::{
    ConnectionId, Frame, FrameIter, PacketHeader, PacketType, Reader, TransportParams, WireError, Writer,
};
use crate::Instant;

use crate::redundancy::{FecAction, PathView, RedundancyController, RedundancyEvent, SymbolEvent};
pub use crate::redundancy::{Redundancy, RepairPlacement};
use crate::sched::{BlockView, PathInfo, Pick, SchedView, Scheduler, SchedulerKind};
pub use lifecycle::PathError;
pub use parts::{PartReassembly, MAX_PIECES, MAX_REASSEMBLIES};
pub use path::{LossEstimator, PathState, PathStats};
use path::{Path, SentPacket};
use pmtu::Pmtu;
pub use pmtu::{PmtuPhase, MAX_PROBES, RAISE_TIMER};
pub use policy::Mode;

/// Client datagrams carrying the handshake are padded to this size, so the server's answer
/// (smaller) can never amplify a spoofed request.
const MIN_INITIAL: usize = 1200;

/// How one end runs a connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// Parameters this end announces (the client's code parameters are the connection's). A
    /// client whose `code` is the default (RLNC) proposes its mode's family instead
    /// ([`Mode::code_family`]).
    pub params: TransportParams,
    /// Largest datagram to send before path MTU discovery proves more (RFC 8899's BASE_PLPMTU).
    /// Default 1280 (IPv6's minimum MTU).
    pub max_datagram: usize,
    /// Largest datagram path MTU discovery may probe for (RFC 8899's MAX_PLPMTU; the runtime
    /// takes it from the interface MTU). Default 1280, the same as `max_datagram`: no probing.
    /// Only the `braid` mode probes; with it, blocks use symbols up to `params.symbol_size +
    /// (max_plpmtu − max_datagram)` bytes (PROTOCOL.md §14).
    pub max_plpmtu: usize,
    /// Bytes the layer below adds to each datagram (the runtime's AEAD tag), so that path MTU
    /// discovery probes datagram sizes that matter on the wire (1472, 1500, …). Default 0.
    pub datagram_overhead: usize,
    /// Congestion controller per path. Default (`None`): the mode's ([`Mode::default_cc`]).
    pub cc: Option<CcAlgorithm>,
    /// The scheme. Default `braid`. A mode that implies a code family ([`Mode::code_family`])
    /// overrides `params.code` with it, and raises `params.max_block_len` to what it needs.
    pub mode: Mode,
    /// How much redundancy to send (the `braid` mode). Default: braid's adaptive policy.
    pub redundancy: Redundancy,
    /// Paths the client starts with (ids 0..paths, at most 8); more can be opened with
    /// [`Connection::add_path`]. The server ignores it: it accepts each path id with the first
    /// valid packet on it (PROTOCOL.md §12.1). Default 1.
    pub paths: u8,
    /// Which path carries each symbol, and from which block. Default (`None`): the mode's
    /// ([`Mode::default_scheduler`]).
    pub scheduler: Option<SchedulerKind>,
    /// Where repair symbols may go. Default (`None`): the mode's ([`Mode::default_placement`]:
    /// per path for `mptcp-dfec`, across paths otherwise).
    pub repair_placement: Option<RepairPlacement>,
    /// Unreliable datagrams: deadline, queues, redundancy. Default: [`DatagramConfig`]'s.
    pub datagrams: crate::datagram::DatagramConfig,
}

impl ConnectionConfig {
    /// The repair placement in force: the configured one, else the mode's.
    pub fn placement(&self) -> RepairPlacement {
        self.repair_placement.unwrap_or(self.mode.default_placement())
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            params: TransportParams::default(),
            max_datagram: 1280,
            max_plpmtu: 1280,
            datagram_overhead: 0,
            cc: None,
            mode: Mode::Braid,
            redundancy: Redundancy::default(),
            paths: 1,
            repair_placement: None,
            scheduler: None,
            datagrams: Default::default(),
        }
    }
}

/// What the application should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Connected,
    Stream(StreamEvent),
    Closed(CloseReason),
    /// A path stopped answering and no longer carries data (it is probed).
    PathFailed(u8),
    /// A failed path answered a probe and carries data again.
    PathRecovered(u8),
    /// The peer abandoned a path (PATH_ABANDON).
    PathRemoved(u8),
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// This end closed it.
    Local { code: u64 },
    /// The peer closed it, with its reason.
    Peer { code: u64, reason: String },
    /// The peer broke the protocol.
    Violation(String),
    /// Nothing heard for the idle timeout.
    IdleTimeout,
}

/// A block's milestones, for FMTCP's block delivery delay (first symbol sent → block decoded)
/// and jitter. The sender records `FirstSent`, the receiver `Delivered`; drain them with
/// [`Connection::drain_block_log`]. At most [`BLOCK_LOG_LIMIT`] records wait; beyond that new
/// ones are dropped until the log is drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRecord {
    FirstSent { block: u64, at: Instant },
    Delivered { block: u64, at: Instant },
}

/// See [`BlockRecord`].
pub const BLOCK_LOG_LIMIT: usize = 65_536;

/// Copies a path may have waiting (the `redundant` scheduler); beyond, the oldest is dropped.
const COPIES_PER_PATH: usize = 64;

/// A datagram to send: its path; the bytes are in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    pub path: u8,
    pub size: usize,
}

/// What [`Connection::receive_buffered`] reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveBuffered {
    /// Symbols held by the block decoders, in bytes.
    pub decoder_bytes: u64,
    /// Of `decoder_bytes`, symbols already delivered to the streams: a block's decoder keeps
    /// them until the whole block is delivered (later repair symbols are reduced by them).
    pub delivered_bytes: u64,
    /// Stream bytes received in order but not yet read by the application.
    pub stream_bytes: u64,
}

/// Connection-wide counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectionStats {
    pub source_symbols_sent: u64,
    pub repair_symbols_sent: u64,
    pub symbols_received: u64,
    pub datagrams_dropped: u64,
    /// Source symbols sent again (the retransmitting modes).
    pub retransmissions: u64,
    /// Source symbols this end recovered by decoding rather than receiving them (the receiver's
    /// side of the effective recovery rate, recovered / repair sent).
    pub symbols_recovered: u64,
    /// Copies of symbols sent on further paths (the `redundant` scheduler).
    pub copies_sent: u64,
    /// SYMBOL_PART frames sent: pieces of symbols too large for their path (PROTOCOL.md §14.4).
    pub symbol_parts_sent: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Handshake,
    Established,
    Closed,
}

/// Everything that exists once parameters are agreed.
struct Session {
    streams: Streams,
    sender: BlockSender,
    receiver: BlockReceiver,
    /// Pipe frames waiting to fill the next source symbol (whole frames only).
    partial: Vec<u8>,
    /// Pipe frames of blocks cut again at a new symbol size (PROTOCOL.md §14.3), to be cut before
    /// the streams' data; a STREAM frame is split where a symbol ends.
    recut: VecDeque<OwnedFrame>,
    block_ack_dirty: bool,
    /// The redundancy controller forms XOR groups at send time and tracks their outcome.
    xor_groups: bool,
}

pub struct Connection {
    side: Side,
    config: ConnectionConfig,
    state: State,
    cid: ConnectionId,
    paths: Vec<Path>,
    session: Option<Session>,
    events: VecDeque<Event>,
    /// A CLOSE frame to send once.
    close_pending: Option<(u64, String)>,
    handshake_due: Option<Instant>,
    handshake_copies: u32,
    /// The packet being built carries window updates.
    window_update_written: bool,
    /// Paths (bit = id) whose PATH_ABANDON is still to be sent, and those in the packet being
    /// built.
    abandon_pending: u8,
    abandon_written: u8,
    /// The path the handshake flight goes on (the client's path 0; the server answers on the
    /// path the Initial came on).
    handshake_path: usize,
    last_heard: Instant,
    idle_timeout: Duration,
    pub stats: ConnectionStats,
    block_log: Vec<BlockRecord>,
    redundancy: Box<dyn RedundancyController>,
    scheduler: Box<dyn Scheduler>,
    /// Copies of symbols sent, waiting for their path's pacer (the `redundant` scheduler):
    /// path, symbol, the SYMBOL frame's bytes; at most [`COPIES_PER_PATH`] per path.
    copies: VecDeque<(usize, crate::blocks::OutgoingSymbol, Vec<u8>)>,
    /// Scratch space for the scheduler's block views (`choose_path`).
    block_views: RefCell<Vec<BlockView>>,
    /// The latest `now` given to `poll_transmit` (a lower bound on the time, for `poll_timeout`).
    last_poll: Instant,
    /// Pieces of SYMBOL frames still to send (PROTOCOL.md §14.4), and the next piece id.
    parts_out: VecDeque<PartOut>,
    next_part_id: u64,
    /// SYMBOL frames being reassembled from pieces.
    parts_in: PartReassembly,
    /// Unreliable datagrams, both directions (conn/datagrams.rs).
    datagrams: datagrams::Datagrams,
}

/// Bytes a SYMBOL_PART frame adds to its piece: type, id, total, offset and length varints.
const PART_OVERHEAD: usize = 1 + 8 + 4 + 4 + 4;

/// A piece of a SYMBOL frame waiting to go out on `path`.
struct PartOut {
    path: usize,
    id: u64,
    total: u64,
    offset: u64,
    data: Vec<u8>,
}

impl Connection {
    /// A client; `seed` picks the connection id.
    pub fn client(mut config: ConnectionConfig, now: Instant, seed: u64) -> Connection {
        // The mode's code replaces the default proposal; the XOR papers' modes work only with
        // XOR (their parity groups are formed at send time), so for them it always does.
        let family = config.mode.code_family();
        if config.params.code == TransportParams::default().code || family == CodeFamily::Xor {
            config.params.code = family;
        }
        let cid = ConnectionId(splitmix(seed).to_be_bytes());
        let mut c = Connection::new(Side::Client, config, now, cid);
        c.handshake_due = Some(now);
        c
    }

    /// A server waiting for a client's Initial.
    pub fn server(config: ConnectionConfig, now: Instant) -> Connection {
        Connection::new(Side::Server, config, now, ConnectionId::default())
    }

    fn new(side: Side, mut config: ConnectionConfig, now: Instant, cid: ConnectionId) -> Connection {
        let mss = config.max_datagram as u64;
        if let Some(len) = config.mode.min_block_len() {
            config.params.max_block_len = config.params.max_block_len.max(len);
        }
        if config.placement() == RepairPlacement::PerPath {
            // Per-path blocks are cut one window long, often shorter than a full block: allow
            // more of them, so the block window still spans the paths' round trips.
            config.params.blocks_in_flight =
                config.params.blocks_in_flight.max(crate::wire::MAX_BLOCKS_IN_FLIGHT as u16);
        }
        if config.mode == Mode::Braid && config.max_plpmtu > config.max_datagram {
            // PROTOCOL.md §14.3: announce the largest symbol the probed size allows.
            let grow = (config.max_plpmtu - config.max_datagram).min(usize::from(u16::MAX)) as u16;
            let max = config.params.symbol_size.saturating_add(grow).min(crate::wire::MAX_SYMBOL as u16);
            config.params.max_symbol_size = config.params.max_symbol_size.max(max);
        }
        if let Some(blocks) = config.mode.min_blocks_in_flight() {
            config.params.blocks_in_flight = config.params.blocks_in_flight.max(blocks);
        }
        let cc = config.cc.unwrap_or(config.mode.default_cc());
        // The server starts with none: it accepts each path with its first packet.
        let count = if side == Side::Client { config.paths.clamp(1, 8) } else { 0 };
        let paths = (0..count).map(|id| Path::new(id, config.mode.build_cc(cc, mss), now, true)).collect();
        Connection {
            side,
            idle_timeout: Duration::from_millis(config.params.idle_timeout_ms),
            redundancy: config.mode.redundancy(config.redundancy, config.placement()),
            scheduler: config.scheduler.unwrap_or(config.mode.default_scheduler()).build(),
            copies: VecDeque::new(),
            block_views: RefCell::new(Vec::new()),
            datagrams: datagrams::Datagrams::new(&config.datagrams),
            config,
            state: State::Handshake,
            cid,
            paths,
            session: None,
            events: VecDeque::new(),
            close_pending: None,
            handshake_due: None,
            handshake_copies: 0,
            window_update_written: false,
            abandon_pending: 0,
            abandon_written: 0,
            handshake_path: 0,
            last_heard: now,
            stats: ConnectionStats::default(),
            block_log: Vec::new(),
            last_poll: now,
            parts_out: VecDeque::new(),
            next_part_id: 0,
            parts_in: PartReassembly::default(),
        }
    }

    /// A path's MTU discovery, as the negotiated parameters allow: probing only up to the
    /// datagram the largest symbol needs, and only if symbols may grow (PROTOCOL.md §14).
    fn new_pmtu(&self) -> Pmtu {
        let base = self.config.max_datagram;
        let params = &self.config.params;
        let grow = usize::from(params.max_symbol().saturating_sub(params.symbol_size));
        let max = if self.session.is_some() && self.symbols_may_grow() {
            self.config.max_plpmtu.min(base + grow)
        } else {
            base
        };
        Pmtu::with_overhead(base, max, self.config.datagram_overhead)
    }

    /// Whether blocks may use symbols larger than the base (PROTOCOL.md §14.3): the `braid` mode
    /// with repair across paths (per-path blocks are cut elsewhere, at the base size).
    fn symbols_may_grow(&self) -> bool {
        self.config.mode == Mode::Braid && self.config.placement() == RepairPlacement::AcrossPaths
    }

    /// The symbol size for new blocks (PROTOCOL.md §14.3): what the smallest PLPMTU of the
    /// paths that carry data leaves for a symbol, at most the negotiated maximum.
    fn block_symbol_size(&self) -> usize {
        let params = &self.config.params;
        let base = usize::from(params.symbol_size);
        if !self.symbols_may_grow() {
            return base;
        }
        let Some(min) = self.paths.iter().filter(|p| p.can_send()).map(|p| p.pmtu.plpmtu()).min() else {
            return base;
        };
        (base + min.saturating_sub(self.config.max_datagram)).min(usize::from(params.max_symbol()))
    }

    /// Each path's MTU discovery state: its phase and PLPMTU (the largest packet it sends).
    pub fn path_mtus(&self) -> Vec<(PmtuPhase, usize)> {
        self.paths.iter().map(|p| (p.pmtu.phase(), p.pmtu.plpmtu())).collect()
    }

    /// Black holes detected on each path so far (RFC 8899 §4.3).
    pub fn black_holes(&self) -> Vec<u32> {
        self.paths.iter().map(|p| p.pmtu.black_holes).collect()
    }

    /// Takes the block milestones recorded so far (see [`BlockRecord`]).
    pub fn drain_block_log(&mut self) -> std::vec::Drain<'_, BlockRecord> {
        self.block_log.drain(..)
    }

    fn log_block(&mut self, record: BlockRecord) {
        if self.block_log.len() < BLOCK_LOG_LIMIT {
            self.block_log.push(record);
        }
    }

    /// The transport parameters in force (after the handshake: the negotiated ones).
    pub fn params(&self) -> &TransportParams {
        &self.config.params
    }

    /// The connection id: a client's is chosen at creation (from its seed); a server's is the
    /// one named by the client's first Initial (`ConnectionId::default()` until then).
    pub fn cid(&self) -> ConnectionId {
        self.cid
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The streams, once connected.
    pub fn streams(&mut self) -> Option<&mut Streams> {
        self.session.as_mut().map(|s| &mut s.streams)
    }

    pub fn path_stats(&self) -> Vec<PathStats> {
        self.paths
            .iter()
            .map(|p| PathStats { timeouts: p.stats.timeouts + p.cc.timeouts(), ..p.stats })
            .collect()
    }

    /// Bytes this end holds of the peer's data (read-only, memory accounting): symbols in the
    /// block decoders (`held_symbols × max symbol size`, those already delivered among them) and
    /// stream bytes not yet read.
    pub fn receive_buffered(&self) -> ReceiveBuffered {
        // Blocks may have different symbol sizes (PROTOCOL.md §14.3): counted at the largest.
        let size = u64::from(self.config.params.max_symbol());
        self.session.as_ref().map_or(ReceiveBuffered::default(), |s| ReceiveBuffered {
            decoder_bytes: s.receiver.held_symbols() as u64 * size,
            delivered_bytes: s.receiver.held_delivered() as u64 * size,
            stream_bytes: s.streams.recv_buffered(),
        })
    }

    /// Each path's loss estimate as the redundancy controller sees it: the congestion
    /// controller's own if it keeps one (CTCP Algorithm 1's `p`, per path), else the path's.
    pub fn loss_estimates(&self) -> Vec<f64> {
        (0..self.paths.len()).map(|i| self.path_view(i).loss).collect()
    }

    /// Smoothed RTT, congestion window and loss estimate of each path.
    pub fn path_state(&self) -> Vec<(Duration, u64, f64)> {
        self.paths.iter().map(|p| (p.rtt.smoothed(), p.cc.window(), p.loss.rate())).collect()
    }

    /// Whether every byte written has been delivered (decoded) at the peer.
    pub fn is_idle(&self) -> bool {
        self.session.as_ref().is_some_and(|s| {
            s.sender.is_idle() && s.partial.is_empty() && s.recut.is_empty() && !s.streams.has_pipe_data()
        })
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(s) = &mut self.session {
            if let Some(e) = s.streams.poll_event() {
                return Some(Event::Stream(e));
            }
        }
        self.events.pop_front()
    }

    /// Closes the connection, telling the peer why.
    pub fn close(&mut self, code: u64, reason: &str) {
        if self.state != State::Closed {
            self.close_pending = Some((code, reason.to_string()));
            self.finish(CloseReason::Local { code });
        }
    }

    fn finish(&mut self, reason: CloseReason) {
        self.state = State::Closed;
        self.events.push_back(Event::Closed(reason));
    }

    fn violation(&mut self, what: String) {
        if self.state != State::Closed {
            self.close_pending = Some((1, what.clone()));
            self.finish(CloseReason::Violation(what));
        }
    }

    fn start_session(&mut self, params: &TransportParams, peer: &TransportParams) {
        let codec = CodecConfig {
            symbol_size: params.symbol_size.into(),
            max_block_len: params.max_block_len.into(),
            ..CodecConfig::new(params.code)
        };
        let local = Limits {
            max_data: self.config.params.initial_max_data,
            max_stream_data: self.config.params.initial_max_stream_data,
            max_streams: self.config.params.max_streams,
        };
        let remote = Limits {
            max_data: peer.initial_max_data,
            max_stream_data: peer.initial_max_stream_data,
            max_streams: peer.max_streams,
        };
        let window = params.blocks_in_flight.into();
        let xor_groups = self.redundancy.groups_at_send_time() && params.code == CodeFamily::Xor;
        let mut sender = BlockSender::new(codec.clone(), window);
        if xor_groups {
            sender.set_manual_groups();
        }
        if self.config.placement() == RepairPlacement::PerPath {
            sender.set_per_path();
        }
        let receive = CodecConfig { symbol_size: params.max_symbol().into(), ..codec };
        self.session = Some(Session {
            streams: Streams::new(self.side, local, remote),
            sender,
            receiver: BlockReceiver::new(receive, window),
            partial: Vec::new(),
            recut: VecDeque::new(),
            block_ack_dirty: false,
            xor_groups,
        });
        self.state = State::Established;
        self.handshake_due = None;
        for i in 0..self.paths.len() {
            self.paths[i].pmtu = self.new_pmtu();
        }
        self.events.push_back(Event::Connected);
    }

    /// A datagram arrived on `path`. Anything malformed is dropped (counted); a protocol
    /// violation inside a valid packet closes the connection.
    pub fn handle_datagram(&mut self, now: Instant, path: u8, datagram: &[u8]) {
        if self.state == State::Closed || !self.path_acceptable(path) {
            self.stats.datagrams_dropped += 1;
            return;
        }
        let mut r = Reader::new(datagram);
        let header = match PacketHeader::parse(&mut r) {
            Ok(h) => h,
            Err(_) => {
                self.stats.datagrams_dropped += 1;
                return;
            }
        };
        if self.side == Side::Server && self.state == State::Handshake && header.ty == PacketType::Initial {
            self.cid = header.dcid;
        }
        if header.dcid != self.cid || header.path != path {
            self.stats.datagrams_dropped += 1;
            return;
        }
        // Validate every frame before acting on any (a packet is processed whole or not at all).
        let frames: Result<Vec<Frame<'_>>, WireError> = FrameIter::new(r.rest()).collect();
        let Ok(frames) = frames else {
            self.stats.datagrams_dropped += 1;
            return;
        };
        if self.paths.get(usize::from(path)).is_none_or(|p| !p.heard) {
            // PROTOCOL.md §12.1: a new path id is accepted with its first valid packet, once
            // the connection exists (or with the Initial that creates it).
            if self.session.is_none() && header.ty != PacketType::Initial {
                self.stats.datagrams_dropped += 1;
                return;
            }
            self.accept_path(now, path);
        }
        let eliciting = frames.iter().any(Frame::is_ack_eliciting);
        if !self.paths[usize::from(path)].on_received(now, header.number, eliciting) {
            return; // duplicate
        }
        // PROTOCOL.md §12.2: a probe (PING alone) is acknowledged on its own path.
        if eliciting && frames.iter().all(|f| matches!(f, Frame::Ping | Frame::Padding)) {
            self.paths[usize::from(path)].ack_here = true;
        }
        self.last_heard = now;
        for frame in frames {
            if self.state == State::Closed {
                return;
            }
            self.on_frame(now, usize::from(path), header.ty, frame);
        }
    }

    /// One frame of a packet that arrived on path `arrival`.
    fn on_frame(&mut self, now: Instant, arrival: usize, ty: PacketType, frame: Frame<'_>) {
        match frame {
            Frame::Padding | Frame::Ping => {}
            Frame::Handshake(peer) => match (self.side, ty, self.state) {
                (Side::Server, PacketType::Initial, State::Handshake) => {
                    // PROTOCOL.md §9.2: the client proposes the code; the server takes its
                    // family and caps its sizes at the server's own configuration, which bounds
                    // the memory a client can make the server commit.
                    let own = &self.config.params;
                    let params = TransportParams {
                        code: peer.code,
                        symbol_size: peer.symbol_size.min(own.symbol_size),
                        max_symbol_size: peer.max_symbol().min(own.max_symbol()),
                        max_block_len: peer.max_block_len.min(own.max_block_len),
                        blocks_in_flight: peer.blocks_in_flight.min(own.blocks_in_flight),
                        ..own.clone()
                    };
                    self.config.params = params.clone();
                    self.start_session(&params, &peer);
                    self.handshake_due = Some(now);
                    self.handshake_path = arrival;
                }
                (Side::Server, PacketType::Initial, State::Established) => {
                    self.handshake_due = Some(now);
                    self.handshake_path = arrival;
                }
                (Side::Client, PacketType::Accept, State::Handshake) => {
                    // Adopt the server's answer, which may only shrink the proposal.
                    let own = &self.config.params;
                    if peer.code != own.code
                        || peer.symbol_size > own.symbol_size
                        || peer.max_symbol() > own.max_symbol()
                        || peer.max_block_len > own.max_block_len
                        || peer.blocks_in_flight > own.blocks_in_flight
                    {
                        return self.violation(
                            "the server answered with code parameters beyond the proposal".into(),
                        );
                    }
                    let params = TransportParams {
                        symbol_size: peer.symbol_size,
                        max_symbol_size: peer.max_symbol_size,
                        max_block_len: peer.max_block_len,
                        blocks_in_flight: peer.blocks_in_flight,
                        ..own.clone()
                    };
                    self.config.params = params.clone();
                    self.start_session(&params, &peer);
                }
                _ => {}
            },
            Frame::Close(c) => {
                let reason = String::from_utf8_lossy(c.reason).into_owned();
                self.finish(CloseReason::Peer { code: c.code, reason });
            }
            _ if self.session.is_none() => {}
            Frame::Ack(ack) => self.on_ack(now, arrival, &ack),
            Frame::PathAbandon(id) => self.on_path_abandon(now, id),
            Frame::BlockAck(b) => {
                let sender = &mut self.session.as_mut().expect("checked").sender;
                sender.on_block_ack_at(&b, now);
                sender.update_waiting(now);
                self.redundancy.on_blocks_released(b.lowest_undecoded);
            }
            Frame::Symbol(s) => {
                self.stats.symbols_received += 1;
                let session = self.session.as_mut().expect("checked");
                let len = s.block_len.map(usize::from);
                if let Err(e) = session.receiver.on_symbol(&s.header, len, s.payload) {
                    return self.violation(format!("symbol refused: {e}"));
                }
                session.block_ack_dirty = true;
                let lowest_before = session.receiver.lowest_undecoded();
                let Session { receiver, streams, .. } = session;
                let mut result: Result<(), PeerViolation> = Ok(());
                let mut wire_error = None;
                receiver.deliver(|bytes| {
                    if result.is_ok() && wire_error.is_none() {
                        if let Err(e) = crate::pipe::parse_symbol(bytes, |f| {
                            result = streams.on_pipe_frame(f);
                            Ok(())
                        }) {
                            wire_error = Some(e);
                        }
                    }
                });
                let lowest_after =
                    self.session.as_ref().map_or(lowest_before, |s| s.receiver.lowest_undecoded());
                self.stats.symbols_recovered = self.session.as_ref().map_or(0, |s| s.receiver.recovered);
                for block in lowest_before..lowest_after {
                    self.log_block(BlockRecord::Delivered { block, at: now });
                }
                if let Err(e) = result {
                    self.violation(e.to_string());
                } else if let Some(e) = wire_error {
                    self.violation(format!("pipe: {e}"));
                }
            }
            Frame::SymbolPart(part) => self.on_symbol_part(now, arrival, ty, part),
            Frame::FecStatus(_) => {}
            Frame::Datagram(d) => self.on_datagram_frame(now, &d),
            Frame::DatagramRepair(r) => self.on_datagram_repair(now, &r),
            Frame::MaxData(max) => self.session.as_mut().expect("checked").streams.on_max_data(max),
            Frame::MaxStreamData { stream, max } => {
                self.session.as_mut().expect("checked").streams.on_max_stream_data(stream, max)
            }
        }
    }

    fn on_ack(&mut self, now: Instant, arrival: usize, ack: &crate::wire::AckFrame) {
        if !self.ack_for_path(now, arrival, usize::from(ack.path), ack) {
            return;
        }
        if let Some(p) = self.paths.get_mut(usize::from(ack.path)) {
            // RFC 8899 §4.1: a probe is acknowledged like any ack-eliciting packet; it is not in
            // `sent` (see `send_pmtu_probe`), so it is matched here.
            if let Some(n) = p.pmtu.outstanding() {
                if ack.ranges.iter().any(|r| r.start <= n && n <= r.end) {
                    p.pmtu.on_probe_acked(now);
                }
            }
        }
        let threshold = self.redundancy.packet_threshold(usize::from(ack.path));
        let coupled = self.paths.get(usize::from(ack.path)).is_some_and(|p| p.cc.coupled());
        let all = coupled.then(|| self.aggregate());
        let Some(path) = self.paths.get_mut(usize::from(ack.path)) else { return };
        path.set_packet_threshold(threshold);
        if let Some(all) = &all {
            path.cc.on_aggregate(all);
        }
        let outcome = path.on_ack(now, ack);
        if path.rtt.has_sample() {
            // RFC 8899 §5.2 BASE → SEARCHING: the path carries BASE_PLPMTU packets.
            path.pmtu.on_confirmed(now);
        }
        self.after_losses(now, usize::from(ack.path), outcome.acked, outcome.lost, false);
    }

    /// Acts on acknowledged and lost packets. `probe`: the losses are a probe timeout's
    /// presumption (the tail may only be late), so they feed neither the loss estimate nor the
    /// congestion controller — only the blocks, which get new symbols.
    fn after_losses(
        &mut self,
        now: Instant,
        path: usize,
        acked: Vec<SentPacket>,
        lost: Vec<SentPacket>,
        probe: bool,
    ) {
        // RFC 8899 §4.3 black-hole detection from data packets. A probe timeout only presumes
        // its packets lost (the tail may be late): it counts as at most two large losses.
        let big = self.config.max_datagram as u64;
        let lost_sizes =
            lost.iter().map(|p| p.size).filter(|&s| s > big).take(if probe { 2 } else { usize::MAX });
        self.paths[path].pmtu.on_data(acked.iter().map(|p| p.size), lost_sizes);
        for sent in lost.iter().filter_map(|p| p.datagrams).filter(|_| !probe) {
            self.on_datagrams_lost(sent);
        }
        let view = self.path_view(path);
        let Some(session) = self.session.as_mut() else { return };
        let path_id = path as u8;
        let xor_groups = session.xor_groups;
        for p in &acked {
            for s in &p.symbols {
                session.sender.on_symbol_acked_at(s.block, p.time);
                self.redundancy.on_event(now, RedundancyEvent::Acked { repair: s.is_repair() }, &view);
                let event = SymbolEvent::Acked { block: s.block, path: path_id, sent_at: p.time };
                self.redundancy.on_symbol(now, event);
                self.scheduler.on_symbol(now, event);
                if xor_groups {
                    self.redundancy.on_symbol_acked(now, *s);
                }
            }
        }
        for p in &lost {
            for s in &p.symbols {
                self.redundancy.on_event(now, RedundancyEvent::Lost { repair: s.is_repair() }, &view);
                let event = SymbolEvent::Lost { block: s.block, path: path_id, sent_at: p.time };
                self.redundancy.on_symbol(now, event);
                self.scheduler.on_symbol(now, event);
            }
        }
        // XOR parity cannot answer a loss with a new symbol, so over XOR even braid retransmits.
        let retransmit = self.config.mode.retransmits() || self.config.params.code == CodeFamily::Xor;
        // MPTCP's subflows resend their own losses (and a block mapped to a path stays on it);
        // a probe timeout (the subflow's RTO) lets the data be reinjected on any path.
        let pin = (!probe
            && (self.config.mode.resends_on_same_path()
                || self.config.placement() == RepairPlacement::PerPath))
            .then_some(path_id);
        // The newest loss not taken over by the redundancy controller (the XOR modes hold a loss
        // their parity may still repair, and settle it later with `FecAction`s).
        let mut newest = None;
        for p in &lost {
            let mut taken = !p.symbols.is_empty();
            for s in &p.symbols {
                let take = xor_groups && self.redundancy.take_loss(now, path, *s, p.time);
                session.sender.on_symbol_lost_on(*s, retransmit && !take, pin);
                taken &= take;
            }
            if !taken {
                newest = newest.max(Some(p.time));
            }
        }
        session.sender.update_waiting(now);
        if lost.iter().any(|p| p.window_update) {
            session.streams.resend_windows();
        }
        // A lost PATH_ABANDON is sent again (PROTOCOL.md §12.3).
        self.abandon_pending |= lost.iter().fold(0, |bits, p| bits | p.abandons);
        if probe && !lost.is_empty() {
            // The path's RTO: what only it could carry (its own retransmissions, the blocks
            // mapped to it) may now go on any path — MPTCP's reinjection.
            session.sender.unpin_path(path_id);
        }
        let path = &mut self.paths[path];
        if !lost.is_empty() && !probe {
            let congestion = self.config.mode.loss_is_congestion(&path.rtt);
            path.cc.on_lost(now, lost.len() as u64);
            if let Some(newest) = newest.filter(|_| congestion) {
                path.cc.on_congestion(now, newest, Congestion::Loss);
            }
            let uncounted = self.config.mode.loss_is_overflow(&path.rtt)
                && !self.config.mode.estimate_counts_congestion();
            path.record_losses(lost.len(), uncounted);
        }
        self.apply_fec_actions(now, probe);
    }

    /// Carries out what the redundancy controller decided about the losses it took over:
    /// retransmissions, and congestion signals (not for a probe timeout's presumed losses).
    fn apply_fec_actions(&mut self, now: Instant, probe: bool) {
        while let Some(action) = self.redundancy.poll_action() {
            match action {
                FecAction::Retransmit { block, index } => {
                    if let Some(s) = self.session.as_mut() {
                        s.sender.queue_retransmission(block, index);
                    }
                }
                FecAction::Congestion { path, sent, signal } => {
                    if let Some(p) = self.paths.get_mut(path).filter(|_| !probe) {
                        p.cc.on_congestion(now, sent, signal);
                    }
                }
            }
        }
    }

    /// Lets the redundancy controller form parity groups over what was sent (XOR modes).
    fn apply_parity_covers(&mut self, now: Instant) {
        let Some(path) = self.control_path() else { return };
        let view = self.path_view(path);
        let Some(session) = self.session.as_mut().filter(|s| s.xor_groups) else { return };
        let covers = self.redundancy.parity_covers(now, &mut session.sender.blocks(), &view);
        for cover in covers {
            let applied = session.sender.cover(cover);
            debug_assert!(applied, "a controller's cover must fit the block: {cover:?}");
        }
        self.apply_fec_actions(now, false);
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if now - self.last_heard >= self.idle_timeout {
            self.finish(CloseReason::IdleTimeout);
            return;
        }
        self.redundancy.handle_timeout(now);
        self.on_datagram_timeout(now);
        self.on_release_timeout(now);
        for i in 0..self.paths.len() {
            if self.paths[i].loss_timeout().is_some_and(|t| t <= now) {
                self.paths[i].set_packet_threshold(self.redundancy.packet_threshold(i));
                let (lost, probe) = self.paths[i].on_timer(now);
                self.after_losses(now, i, Vec::new(), lost, probe);
                if probe {
                    self.check_failure(now, i);
                }
                if self.state == State::Handshake && self.side == Side::Client {
                    self.handshake_due = Some(now);
                    if probe {
                        // The flight is presumed lost: try the next path (PROTOCOL.md §9.1), so
                        // a first path that is down or in a loss burst cannot keep the
                        // connection from coming up over the others.
                        self.handshake_path = (self.handshake_path + 1) % self.paths.len().max(1);
                    }
                }
            }
        }
        self.on_probe_timers(now);
        for p in &mut self.paths {
            let timer = pmtu::probe_timer(p.pto_base());
            p.pmtu.on_timeout(now, timer);
        }
    }

    /// How long a block may wait on the receiver with nothing in flight before it is doubted:
    /// the largest probe timeout of the paths that carry data (the BLOCK_ACK that releases it
    /// may come back on the slowest one).
    fn release_timeout(&self) -> Option<Duration> {
        self.paths.iter().filter(|p| p.can_send()).map(|p| p.pto_base()).max()
    }

    fn release_deadline(&self) -> Option<Instant> {
        self.session.as_ref()?.sender.release_deadline(self.release_timeout()?)
    }

    /// A sender must never sit idle with data the receiver has not released: a block that
    /// waited a release timeout with nothing in flight is doubted (its count falls back to the
    /// receiver's report, see `BlockSender::on_release_timeout`), which makes a coding
    /// controller send a new repair; where the controller would still send nothing (the `tcp`
    /// model; XOR, whose parity may not be ready), a source goes out again. Either symbol also
    /// makes the receiver send a fresh BLOCK_ACK, which corrects or releases the block.
    fn on_release_timeout(&mut self, now: Instant) {
        let Some(timeout) = self.release_timeout() else { return };
        let view = self.control_path().map(|i| self.path_view(i)).unwrap_or_default();
        let xor = self.config.params.code == CodeFamily::Xor;
        let Some(s) = self.session.as_mut() else { return };
        for id in s.sender.on_release_timeout(now, timeout) {
            let Some(b) = s.sender.block(id) else { continue };
            let repair = !xor && self.redundancy.repairs_wanted(b, &view) > 0;
            if !repair {
                let last = b.len().saturating_sub(1) as u16;
                s.sender.queue_retransmission(id, last);
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut next = self.last_heard + self.idle_timeout;
        for p in &self.paths {
            if let Some(t) = p.loss_timeout() {
                next = next.min(t);
            }
            if p.ack_pending {
                next = next.min(ack_deadline(p));
            }
        }
        if let Some(t) = self.next_symbol_time() {
            next = next.min(t);
        }
        if let Some(t) = self.next_probe() {
            next = next.min(t);
        }
        if let Some((_, at)) = self.measurement_due() {
            next = next.min(at.max(self.last_poll));
        }
        if self.session.is_some() {
            let mut paths = [PathInfo::default(); 8];
            let n = self.path_infos(self.last_poll, &mut paths);
            if let Some(t) = self.scheduler.poll_timeout(self.last_poll, &paths[..n]) {
                next = next.min(t.max(self.last_poll));
            }
        }
        if let Some(t) = self.release_deadline() {
            next = next.min(t);
        }
        if self.session.is_some() {
            for i in 0..self.paths.len() {
                if let Some(t) = self.redundancy.poll_timeout(&self.path_view(i)) {
                    next = next.min(t);
                }
            }
        }
        if let Some(t) = self.handshake_due {
            next = next.min(t);
        }
        if let Some(t) = self.datagram_timeout() {
            next = next.min(t);
        }
        if self.session.is_some() {
            for p in self.paths.iter().filter(|p| p.can_send()) {
                if let Some(t) = p.pmtu.timeout(pmtu::probe_timer(p.pto_base())) {
                    next = next.min(t.max(self.last_poll));
                }
            }
        }
        if !self.parts_out.is_empty() {
            next = next.min(self.last_poll);
        }
        Some(next)
    }

    /// When `poll_transmit` would next send a symbol if nothing else happened: it takes the
    /// lowest-RTT path with room whose pacer allows and sends only if that path has a symbol (or
    /// `fill_pipe` can make a new source), and more paths qualify as their pacers allow. Waking
    /// at every pacer instead spun the connection whenever the chosen path had nothing to carry
    /// (pipe data behind a full block window, a repair wanted on another path), until the next
    /// ACK. Pacers already past count from the last poll (the time cannot be earlier), where
    /// more paths may qualify. Never later than the first send; an earlier wake-up only polls
    /// for nothing.
    fn next_symbol_time(&self) -> Option<Instant> {
        let s = self.session.as_ref()?;
        let new_source = (s.streams.has_pipe_data() || !s.partial.is_empty() || !s.recut.is_empty())
            && s.sender.has_room();
        // With per-path placement new data joins the open block, which only its path may carry.
        let new_source_on = |c: usize| {
            new_source && s.sender.blocks().last().is_none_or(|b| b.closed || b.may_carry(c as u8))
        };
        let mss = self.config.max_datagram as u64;
        let mut next: Option<Instant> = None;
        for &(path, _, _) in &self.copies {
            let Some(p) = self.paths.get(path) else { continue };
            if self.data_room(path) >= mss {
                let at = p.next_send.max(self.last_poll);
                next = Some(next.map_or(at, |n: Instant| n.min(at)));
            }
        }
        for i in (0..self.paths.len()).filter(|&i| self.data_room(i) >= mss) {
            let at = self.paths[i].next_send.max(self.last_poll);
            if next.is_some_and(|n| n <= at) {
                continue;
            }
            // The path `poll_transmit` would choose at `at`.
            let chosen = self.pinned_path(at).map(Pick::path).or_else(|| self.choose_path(at));
            if chosen.is_some_and(|c| new_source_on(c.path) || self.has_symbol(c)) {
                next = Some(at);
            }
        }
        next
    }

    /// Whether the scheduler's pick has a symbol to carry: a symbol of the block it names (the
    /// scheduler judged its need), else an unsent source or a repair some block needs.
    fn has_symbol(&self, pick: Pick) -> bool {
        let named = pick.block.is_some_and(|block| {
            self.session.as_ref().is_some_and(|s| {
                s.sender.block(block).is_some_and(|b| !b.all_sources_sent() || b.can_write_repair())
            })
        });
        named || self.default_has_symbol(pick.path)
    }

    /// Whether `path` has a symbol to carry when no block is named: an unsent source, or a
    /// repair some block needs.
    fn default_has_symbol(&self, path: usize) -> bool {
        let view = self.path_view(path);
        let id = path as u8;
        // The cheap questions first: an unsent source anywhere settles it without asking the
        // redundancy controller about every block.
        self.session.as_ref().is_some_and(|s| {
            s.sender.has_retransmission_for(id)
                || s.sender.has_unsent_for(id)
                || s.sender.blocks().any(|b| {
                    b.may_carry(id)
                        && (self.redundancy.repairs_wanted(b, &view) > 0
                            || self.redundancy.spare_repairs(b, &view) > 0)
                })
        })
    }

    /// Whether some block wants a repair symbol sent on `path` now.
    fn repair_due(&self, path: usize) -> bool {
        let view = self.path_view(path);
        self.session.as_ref().is_some_and(|s| {
            s.sender.blocks().any(|b| b.may_carry(path as u8) && self.redundancy.repairs_wanted(b, &view) > 0)
        })
    }

    /// The scheduler's choice among the paths with room in their window whose pacer allows a
    /// send at `at` (the one place the path choice is made, for sending and for wake-ups).
    fn choose_path(&self, at: Instant) -> Option<Pick> {
        // At most 8 paths: a stack array, no allocation on this hot path.
        let mut paths = [PathInfo::default(); 8];
        let n = self.path_infos(at, &mut paths);
        let paths = &paths[..n];
        if !paths.iter().any(|p| p.ready) {
            return None;
        }
        // The views are rebuilt at every choice, in a buffer kept between calls (this runs for
        // every packet and every wake-up: no allocation once it has grown).
        let mut blocks = self.block_views.borrow_mut();
        blocks.clear();
        if let (Some(s), true) = (&self.session, self.scheduler.wants_blocks()) {
            // The controller's wants as seen from the fastest ready path (FMTCP Eq. 4's p and
            // ŵ are a path's; the allocation sends most symbols on the fastest).
            let fastest = paths.iter().filter(|p| p.ready).min_by_key(|p| p.view.smoothed_rtt);
            let view = fastest.map_or_else(|| self.path_view(0), |p| p.view);
            blocks.extend(s.sender.blocks().map(|b| BlockView {
                id: b.id,
                len: b.len() as u64,
                closed: b.closed,
                decoded: b.decoded,
                unsent: b.unsent_sources(),
                retransmissions: s.sender.queued_retransmissions(b.id),
                in_flight: b.in_flight,
                known_dofs: b.known_dofs(),
                repairs_wanted: self.redundancy.repairs_wanted(b, &view),
                spare_repairs: self.redundancy.spare_repairs(b, &view),
            }));
        }
        let pick = self.scheduler.pick(&SchedView { now: at, paths, blocks: &blocks });
        drop(blocks);
        // With per-path placement new data is cut into a block only once a path is chosen
        // (`cut_block_for`), so a scheduler that allocates blocks sees none for it: the fastest
        // ready path takes the new data (MPTCP's default, the placement's own scheduler).
        pick.or_else(|| {
            let s = self.session.as_ref()?;
            if !(s.sender.is_per_path() && s.streams.has_pipe_data() && s.sender.has_room()) {
                return None;
            }
            let fastest = paths.iter().filter(|p| p.ready).min_by_key(|p| (p.view.smoothed_rtt, p.path))?;
            Some(Pick::path(fastest.path))
        })
    }

    /// What the scheduler may know about each path at `at`; returns how many were written.
    fn path_infos(&self, at: Instant, out: &mut [PathInfo; 8]) -> usize {
        let mss = self.config.max_datagram as u64;
        // Failed and removed paths are not offered at all: a scheduler that allocates virtually
        // (FMTCP's EAT) would otherwise count on a dead path's stale estimates.
        let mut n = 0;
        for (i, p) in self.paths.iter().enumerate().take(8).filter(|(_, p)| p.can_send()) {
            out[n] = PathInfo {
                path: i,
                view: self.path_view(i),
                rto: p.rtt.rto(Duration::from_millis(10)),
                oldest_unacked_age: p.sent.first_key_value().map_or(Duration::ZERO, |(_, s)| at - s.time),
                ready: self.data_room(i) >= mss && p.next_send <= at,
                measured: p.rtt.has_sample(),
            };
            n += 1;
        }
        n
    }

    /// What the redundancy controller may know about `path`.
    fn path_view(&self, path: usize) -> PathView {
        let p = &self.paths[path];
        PathView {
            path: path as u8,
            smoothed_rtt: p.rtt.smoothed(),
            min_rtt: p.rtt.min(),
            loss: p.cc.loss_estimate().unwrap_or(p.loss.rate()),
            loss_long: p.loss_long.rate(),
            window: p.cc.window(),
            in_flight: p.in_flight,
            mss: self.config.max_datagram as u64,
        }
    }

    /// Writes the next datagram into `buf` (cleared first), if one is due now.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        self.last_poll = self.last_poll.max(now);
        if let Some((code, reason)) = self.close_pending.take() {
            // Any path this end may address (none: the peer was never heard, nothing to tell).
            let heard = self.paths.iter().position(|p| p.heard && p.state() != PathState::Removed);
            let path = self.control_path().or(heard)?;
            self.begin_packet(path, PacketType::Data, buf);
            let close = Frame::Close(crate::wire::CloseFrame { code, reason: reason.as_bytes() });
            close.write(&mut Writer::new(buf)).expect("valid");
            return Some(self.end_packet(now, path, buf, false, Vec::new()));
        }
        if self.state == State::Closed {
            return None;
        }
        if self.handshake_due.is_some_and(|t| t <= now) {
            // Each handshake flight goes out twice, 2 ms apart: on a lossy path a lost Initial
            // otherwise costs a whole probe timeout (1 s before any RTT is known).
            self.handshake_copies += 1;
            self.handshake_due = (self.handshake_copies % 2 == 1).then(|| now + Duration::from_millis(2));
            let ty = if self.side == Side::Client { PacketType::Initial } else { PacketType::Accept };
            let path = self.handshake_path;
            self.begin_packet(path, ty, buf);
            Frame::Handshake(self.config.params.clone()).write(&mut Writer::new(buf)).expect("valid");
            if self.side == Side::Client && buf.len() < MIN_INITIAL {
                buf.resize(MIN_INITIAL, 0);
            }
            return Some(self.end_packet(now, path, buf, true, Vec::new()));
        }
        self.session.as_ref()?;
        // A failed path's probe: a PING alone (PROTOCOL.md §12.2). Nothing that must arrive
        // rides on it, since its loss is never declared.
        if let Some(path) = self.paths.iter().position(|p| p.probe_pending) {
            self.paths[path].probe_pending = false;
            self.begin_packet(path, PacketType::Data, buf);
            Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
            return Some(self.end_packet(now, path, buf, true, Vec::new()));
        }
        // The rest of a SYMBOL frame that did not fit its path (PROTOCOL.md §14.4).
        if let Some(t) = self.send_part(now, buf) {
            return Some(t);
        }
        // RFC 8899 §4.1: a PLPMTU probe, PING and PADDING, on a confirmed path.
        if let Some(t) = self.send_pmtu_probe(now, buf) {
            return Some(t);
        }
        // A path the scheduler will not use until it is measured: a PING alone (§12.1).
        if let Some((path, _)) = self.measurement_due().filter(|&(_, at)| at <= now) {
            self.begin_packet(path, PacketType::Data, buf);
            Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
            return Some(self.end_packet(now, path, buf, true, Vec::new()));
        }
        // Unreliable datagrams go before stream data (PROTOCOL.md §15.5).
        if let Some(t) = self.send_datagrams(now, buf) {
            return Some(t);
        }
        let size = self.block_symbol_size();
        if let Some(s) =
            self.session.as_mut().filter(|s| s.sender.symbol_size() != size || !s.recut.is_empty())
        {
            s.sender.set_symbol_size(size);
            // Blocks cut but never sent are cut again at the new size (PROTOCOL.md §14.3); in
            // pipe order they come before what was not cut yet.
            let taken = s.sender.take_unsent_blocks();
            if !taken.is_empty() {
                let earlier: Vec<OwnedFrame> = s.recut.drain(..).collect();
                let partial = std::mem::take(&mut s.partial);
                s.recut.extend(OwnedFrame::from_symbols([taken.as_slice()]));
                s.recut.extend(earlier);
                s.recut.extend(OwnedFrame::from_symbols([partial.as_slice()]));
            }
        }
        self.fill_pipe();
        self.mark_app_limited();
        self.apply_parity_covers(now);
        if let Some(t) = self.send_copy(now, buf) {
            return Some(t);
        }
        let ready = self.pinned_path(now).map(Pick::path).or_else(|| self.choose_path(now));
        let ack_due = self
            .paths
            .iter()
            .position(|p| p.ack_pending && (p.unacked_eliciting >= 2 || now >= ack_deadline(p)))
            .or_else(|| {
                let updates = self.session.as_ref().is_some_and(|s| s.streams.has_window_updates());
                (updates || self.abandon_pending != 0).then(|| self.control_path()).flatten()
            });
        let max = self.config.max_datagram;
        if let Some(pick) = ready {
            self.cut_block_for(pick.path);
        }
        if let Some(pick) = ready.filter(|&p| self.has_symbol(p)) {
            let path = pick.path;
            self.begin_packet(path, PacketType::Data, buf);
            // The symbol first, then whatever control frames fit beside it. `has_symbol` is a
            // promise the code may not keep (an XOR block has no complete group to repair):
            // then the control frames go out alone.
            let start = buf.len();
            let symbol = self.write_symbol(now, path, buf, false, pick.block);
            let limit = self.paths[path].pmtu.plpmtu();
            let parted = buf.len() > limit && self.part_symbol(path, start, buf, limit);
            if let Some(symbol) = symbol.filter(|_| self.scheduler.duplicates() && !parted) {
                self.queue_copies(path, symbol, &buf[start..]);
            }
            self.write_control(now, path, buf, 2, limit);
            return Some(match symbol {
                Some(symbol) => {
                    let event = SymbolEvent::Sent { block: symbol.block, path: path as u8, at: now };
                    self.redundancy.on_symbol(now, event);
                    self.scheduler.on_symbol(now, event);
                    self.end_packet(now, path, buf, true, vec![symbol])
                }
                None => self.end_packet(now, path, buf, false, Vec::new()),
            });
        }
        // TCP-IR's parity goes out at its fixed rate even when the window is full.
        if self.redundancy.repair_ignores_window() {
            if let Some(path) = self.control_path().filter(|&p| self.repair_due(p)) {
                self.begin_packet(path, PacketType::Data, buf);
                let start = buf.len();
                let symbol = self.write_symbol(now, path, buf, true, None);
                let limit = self.paths[path].pmtu.plpmtu();
                if buf.len() > limit {
                    self.part_symbol(path, start, buf, limit);
                }
                self.write_control(now, path, buf, 2, max);
                return Some(match symbol {
                    Some(symbol) => self.end_packet(now, path, buf, true, vec![symbol]),
                    None => self.end_packet(now, path, buf, false, Vec::new()),
                });
            }
        }
        let path = ack_due?;
        self.begin_packet(path, PacketType::Data, buf);
        if self.paths[path].can_send() {
            self.write_control(now, path, buf, 32, max);
        } else {
            // The ACK of a failed path's probe goes back on that path (PROTOCOL.md §12.2);
            // frames that must arrive go on paths that answer.
            self.write_acks(now, path, buf, 32, max);
        }
        Some(self.end_packet(now, path, buf, false, Vec::new()))
    }

    /// A SYMBOL frame (`buf[start..]`) too large for `path`'s PLPMTU (`limit`): its first piece
    /// stays in the packet as a SYMBOL_PART, the others wait in `parts_out` and go out next
    /// (PROTOCOL.md §14.4). The symbol is recorded with the first piece's packet. Returns
    /// whether it parted the frame.
    fn part_symbol(&mut self, path: usize, start: usize, buf: &mut Vec<u8>, limit: usize) -> bool {
        let frame = buf[start..].to_vec();
        let room = limit.saturating_sub(start + PART_OVERHEAD);
        if room == 0 || frame.len() > crate::wire::MAX_PARTED_FRAME {
            return false;
        }
        buf.truncate(start);
        self.stats.symbol_parts_sent += frame.len().div_ceil(room) as u64;
        let id = self.next_part_id;
        self.next_part_id += 1;
        let total = frame.len() as u64;
        for (i, piece) in frame.chunks(room).enumerate() {
            let part = PartOut { path, id, total, offset: (i * room) as u64, data: piece.to_vec() };
            if i == 0 {
                write_part(&part, buf);
            } else {
                self.parts_out.push_back(part);
            }
        }
        true
    }

    /// Sends the next waiting piece of a parted SYMBOL frame; pieces for a path that can no
    /// longer send are dropped (the symbol is then lost with its first piece's packet's fate
    /// unknown to the receiver: the block's count falls back on BLOCK_ACK, §11.5).
    fn send_part(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        while let Some(part) = self.parts_out.pop_front() {
            if !self.paths.get(part.path).is_some_and(|p| p.can_send()) {
                continue;
            }
            let path = part.path;
            self.begin_packet(path, PacketType::Data, buf);
            write_part(&part, buf);
            let limit = self.paths[path].pmtu.plpmtu();
            self.write_control(now, path, buf, 2, limit);
            return Some(self.end_packet(now, path, buf, true, Vec::new()));
        }
        None
    }

    /// RFC 8899 §4.1: a probe is a PING padded to the probe size. It is kept out of the path's
    /// `sent` record, so it is not in flight for congestion control and its loss is neither
    /// congestion nor data loss (§3 item 7, §4.4); the PMTU state machine times it out itself.
    fn send_pmtu_probe(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (path, size) = self.paths.iter().enumerate().find_map(|(i, p)| {
            (p.can_send() && p.rtt.has_sample()).then(|| p.pmtu.probe_due(now).map(|s| (i, s))).flatten()
        })?;
        self.begin_packet(path, PacketType::Data, buf);
        Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
        buf.resize(size.max(buf.len()), 0); // PADDING frames (§8)
        let p = &mut self.paths[path];
        let number = p.next_number;
        p.next_number += 1;
        p.stats.packets_sent += 1;
        p.stats.bytes_sent += buf.len() as u64;
        p.pmtu.on_probe_sent(now, number, size);
        Some(Transmit { path: path as u8, size: buf.len() })
    }

    /// A SYMBOL_PART arrived (PROTOCOL.md §14.4): stored; once its frame is whole, the SYMBOL
    /// frame is processed as if it had arrived in one piece.
    fn on_symbol_part(
        &mut self,
        now: Instant,
        arrival: usize,
        ty: PacketType,
        part: crate::wire::SymbolPartFrame<'_>,
    ) {
        let Some(whole) = self.parts_in.insert(part) else { return };
        let mut frames = FrameIter::new(&whole);
        match (frames.next(), frames.next()) {
            (Some(Ok(Frame::Symbol(s))), None) => self.on_frame(now, arrival, ty, Frame::Symbol(s)),
            _ => self.violation("a SYMBOL_PART did not reassemble into one SYMBOL frame".into()),
        }
    }

    /// The redundant scheduler: a copy of the symbol just written (`frame`, its SYMBOL frame)
    /// for every other path with room in its window, sent when its pacer allows.
    fn queue_copies(&mut self, sent_on: usize, symbol: crate::blocks::OutgoingSymbol, frame: &[u8]) {
        let mss = self.config.max_datagram as u64;
        for i in 0..self.paths.len() {
            if i != sent_on && self.data_room(i) >= mss {
                if self.copies.iter().filter(|c| c.0 == i).count() >= COPIES_PER_PATH {
                    let oldest = self.copies.iter().position(|c| c.0 == i).expect("counted");
                    self.copies.remove(oldest);
                }
                self.copies.push_back((i, symbol, frame.to_vec()));
            }
        }
    }

    /// Sends the oldest queued copy (see [`Self::queue_copies`]) whose path may send now;
    /// copies whose block was decoded meanwhile are dropped.
    fn send_copy(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mss = self.config.max_datagram as u64;
        let session = self.session.as_ref()?;
        let mut may_send = [false; 8];
        for (i, may) in may_send.iter_mut().enumerate().take(self.paths.len()) {
            *may = self.data_room(i) >= mss && self.paths[i].next_send <= now;
        }
        let paths = self.paths.len();
        self.copies.retain(|c| c.0 < paths && session.sender.block(c.1.block).is_some_and(|b| !b.decoded));
        let i = self.copies.iter().position(|c| may_send[c.0])?;
        if let Some((path, symbol, frame)) = self.copies.remove(i) {
            self.begin_packet(path, PacketType::Data, buf);
            buf.extend_from_slice(&frame);
            if let Some(s) = self.session.as_mut() {
                s.sender.on_copy_sent(symbol.block);
            }
            self.stats.copies_sent += 1;
            self.write_control(now, path, buf, 2, self.config.max_datagram);
            let event = SymbolEvent::Sent { block: symbol.block, path: path as u8, at: now };
            self.redundancy.on_symbol(now, event);
            self.scheduler.on_symbol(now, event);
            return Some(self.end_packet(now, path, buf, true, vec![symbol]));
        }
        None
    }

    fn begin_packet(&self, path: usize, ty: PacketType, buf: &mut Vec<u8>) {
        let header =
            PacketHeader { ty, dcid: self.cid, path: path as u8, number: self.paths[path].next_number };
        header.write(&mut Writer::new(buf));
    }

    fn end_packet(
        &mut self,
        now: Instant,
        path: usize,
        buf: &[u8],
        ack_eliciting: bool,
        symbols: Vec<crate::blocks::OutgoingSymbol>,
    ) -> Transmit {
        let p = &mut self.paths[path];
        let number = p.next_number;
        p.next_number += 1;
        let window_update = std::mem::take(&mut self.window_update_written);
        let abandons = std::mem::take(&mut self.abandon_written);
        let ack_eliciting = ack_eliciting || window_update || abandons != 0;
        let packet = SentPacket {
            time: now,
            size: buf.len() as u64,
            ack_eliciting,
            symbols,
            window_update,
            abandons,
            delivered: 0,
            delivered_time: now,
            first_sent: now,
            datagrams: None,
        };
        p.on_sent(now, number, packet);
        Transmit { path: path as u8, size: buf.len() }
    }

    /// ACKs for every path with something to acknowledge (at most `ranges` ranges each), the
    /// decoder state, and flow-control updates — as many as keep the packet within `max` bytes.
    /// What does not fit stays due (an ACK-only packet carries it).
    fn write_control(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>, ranges: usize, max: usize) {
        self.write_acks(now, path, buf, ranges, max);
        // PATH_ABANDON takes 2 bytes (PROTOCOL.md §12.3).
        for id in 0..8u8 {
            if self.abandon_pending & (1 << id) != 0 && buf.len() + 2 <= max {
                Frame::PathAbandon(id).write(&mut Writer::new(buf)).expect("valid path id");
                self.abandon_pending &= !(1 << id);
                self.abandon_written |= 1 << id;
            }
        }
        if let Some(s) = self.session.as_mut() {
            if s.block_ack_dirty {
                // Written in place, taken back if it does not fit.
                let start = buf.len();
                Frame::BlockAck(s.receiver.block_ack()).write(&mut Writer::new(buf)).expect("valid");
                if buf.len() <= max {
                    s.block_ack_dirty = false;
                } else {
                    buf.truncate(start);
                }
            }
            // MAX_DATA and MAX_STREAM_DATA frames take at most 1 + 8 and 1 + 8 + 8 bytes.
            let room = max.saturating_sub(buf.len());
            if room >= 9 && s.streams.has_window_updates() {
                let (data, streams) = s.streams.poll_window_updates_limited((room - 9) / 17);
                self.window_update_written |= data.is_some() || !streams.is_empty();
                let mut w = Writer::new(buf);
                if let Some(max) = data {
                    Frame::MaxData(max).write(&mut w).expect("valid");
                }
                for (stream, max) in streams {
                    Frame::MaxStreamData { stream, max }.write(&mut w).expect("valid");
                }
            }
        }
    }

    /// The ACK frames of `write_control` alone, for a packet sent on `path`. The ACK of a probe
    /// waits for a packet on the probe's own path (PROTOCOL.md §12.2).
    fn write_acks(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>, ranges: usize, max: usize) {
        // A path's ACKs go back on that path only (PROTOCOL.md §12.4): piggybacked on whichever
        // path sends next, a slow path's ACKs would return sometimes at the fast path's delay and
        // sometimes at its own, and the mixture of round trips makes the later-sent, quickly
        // acknowledged packets declare the earlier ones lost (packet and time threshold).
        for p in self.paths.iter_mut().filter(|p| p.ack_pending && (usize::from(p.id) == path)) {
            let (unacked, here) = (p.unacked_eliciting, p.ack_here);
            let start = buf.len();
            // Written in place, taken back if it does not fit.
            if p.write_ack(now, ranges, &mut Writer::new(buf)) && buf.len() > max {
                buf.truncate(start);
                p.ack_pending = true;
                p.unacked_eliciting = unacked;
                p.ack_here = here;
            }
        }
    }

    /// The next symbol for `path`: a repair for the oldest block short of symbols, else a new
    /// source, else nothing; or, if the scheduler named a `block`, that block's next unsent
    /// source, else a new repair of it. Queued retransmissions go first either way.
    /// `repair_only`: nothing but a repair (a parity sent beyond the window).
    fn write_symbol(
        &mut self,
        now: Instant,
        path: usize,
        buf: &mut Vec<u8>,
        repair_only: bool,
        block: Option<u64>,
    ) -> Option<crate::blocks::OutgoingSymbol> {
        let view = self.path_view(path);
        let id = path as u8;
        let s = self.session.as_mut()?;
        let mut w = Writer::new(buf);
        let retransmission =
            if repair_only { None } else { s.sender.write_retransmission_on(Some(id), &mut w) };
        if let Some(sent) = retransmission {
            self.stats.retransmissions += 1;
            self.paths[path].stats.retransmissions += 1;
            let event = RedundancyEvent::Sent { repair: false, retransmission: true };
            self.redundancy.on_event(now, event, &view);
            return Some(sent);
        }
        // The scheduler's block, if it names one and it has a symbol to give; else the default.
        // (With per-path placement blocks belong to paths: the default choice respects that.)
        if let Some(block) = block.filter(|_| !repair_only && !s.sender.is_per_path()) {
            let sent = match s.sender.write_next_source_of(block, &mut w) {
                Some(sent) => {
                    self.stats.source_symbols_sent += 1;
                    if sent.source == Some(0) && self.block_log.len() < BLOCK_LOG_LIMIT {
                        // (`log_block`, on the one field `s` does not borrow)
                        self.block_log.push(BlockRecord::FirstSent { block, at: now });
                    }
                    Some(sent)
                }
                None => {
                    let sent = s.sender.write_repair(block, &mut w).ok().flatten();
                    self.stats.repair_symbols_sent += u64::from(sent.is_some());
                    sent
                }
            };
            if let Some(sent) = sent {
                let event = RedundancyEvent::Sent { repair: sent.is_repair(), retransmission: false };
                self.redundancy.on_event(now, event, &view);
                return Some(sent);
            }
        }
        let short = s
            .sender
            .blocks()
            .find(|b| b.may_carry(id) && self.redundancy.repairs_wanted(b, &view) > 0)
            .map(|b| b.id);
        if let Some(block) = short {
            if let Ok(Some(sent)) = s.sender.write_repair(block, &mut w) {
                self.stats.repair_symbols_sent += 1;
                let event = RedundancyEvent::Sent { repair: true, retransmission: false };
                self.redundancy.on_event(now, event, &view);
                return Some(sent);
            }
        }
        if repair_only {
            return None;
        }
        let Some(sent) = s.sender.write_next_source_on(id, &mut w) else {
            // No new data: the spare capacity carries proactive repair.
            let block = s
                .sender
                .blocks()
                .find(|b| b.may_carry(id) && self.redundancy.spare_repairs(b, &view) > 0)
                .map(|b| b.id)?;
            let sent = s.sender.write_repair(block, &mut w).ok()??;
            self.stats.repair_symbols_sent += 1;
            self.redundancy.on_event(
                now,
                RedundancyEvent::Sent { repair: true, retransmission: false },
                &view,
            );
            return Some(sent);
        };
        self.stats.source_symbols_sent += 1;
        self.redundancy.on_event(now, RedundancyEvent::Sent { repair: false, retransmission: false }, &view);
        if sent.source == Some(0) {
            self.log_block(BlockRecord::FirstSent { block: sent.block, at: now });
        }
        Some(sent)
    }
}

/// Writes a SYMBOL_PART frame (PROTOCOL.md §14.4).
fn write_part(part: &PartOut, buf: &mut Vec<u8>) {
    let frame = Frame::SymbolPart(crate::wire::SymbolPartFrame {
        id: part.id,
        total: part.total,
        offset: part.offset,
        data: &part.data,
    });
    frame.write(&mut Writer::new(buf)).expect("a piece within its frame");
}

/// ACKs are sent within 1 ms of an ack-eliciting packet (RFC 9000 §13.2.1 allows up to the
/// peer's max_ack_delay; a short delay keeps the sender's loss detection quick).
fn ack_deadline(p: &Path) -> Instant {
    p.last_received + Duration::from_millis(1)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
