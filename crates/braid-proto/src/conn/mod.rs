//! The connection state machine (quinn-proto's shape): `handle_datagram` / `handle_timeout`
//! in, `poll_transmit` / `poll_timeout` / `poll_event` out, time passed in, no I/O.
//!
//! Status: the handshake, streams, block coding (RLNC by default), acknowledgements, loss
//! detection, congestion control and the `braid` mode's redundancy work over any number of
//! paths, the path (and block) of each symbol chosen by a [`crate::sched::Scheduler`]. Modes:
//! `braid`, `tcp` (a model) and the seed papers' `tcp-ir`, `dfec`, `sato`, `ctcp`, `fmtcp`, and
//! the multipath `mptcp` (a model) and `mptcp-dfec` (see [`Mode`]); repair goes per path or
//! across paths ([`RepairPlacement`]).

mod cumulative;
mod cutting;
mod datagrams;
mod lifecycle;
mod parts;
pub(crate) mod path;
mod placement;
mod planner;
mod pmtu;
mod policy;
mod receive;
mod scheduling;
mod timers;
mod transmit;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Duration;

use braid_fec::{CodeFamily, CodecConfig};

use crate::blocks::{BlockReceiver, BlockSender};
use crate::cc::CcAlgorithm;
use crate::pipe::OwnedFrame;
use crate::streams::{Limits, Side, StreamEvent, Streams};
use crate::wire::{ConnectionId, PacketType, TransportParams};
use crate::Instant;

use crate::redundancy::RedundancyController;
pub use crate::redundancy::{Redundancy, RepairPlacement};
use crate::sched::{BlockView, Scheduler, SchedulerKind};
pub use lifecycle::PathError;
pub use parts::{PartReassembly, MAX_PIECES, MAX_REASSEMBLIES};
use path::Path;
pub use path::{LossEstimator, LossRecovery, PathState, PathStats};
use pmtu::Pmtu;
pub use pmtu::{PmtuPhase, MAX_PROBES, RAISE_TIMER};
pub use policy::Mode;
use transmit::PartOut;

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
    /// Unreliable datagrams: deadline, queues, redundancy. Default: [`DatagramConfig`](crate::datagram::DatagramConfig)'s.
    pub datagrams: crate::datagram::DatagramConfig,
    /// Receive-window auto-tuning: the flow-control windows this end advertises
    /// (`params.initial_max_data`, `params.initial_max_stream_data`) double while the
    /// application consumes them within two round trips, up to this many bytes each
    /// ([`crate::streams::Window`]). Default 0: the windows keep their initial size.
    pub max_window: u64,
    /// How a path's sender learns what to send again. Default: braid's, from the ACK ranges
    /// ([`LossRecovery::Ranges`]); [`LossRecovery::Cumulative`] is TCP's without SACK, a
    /// baseline for the seed papers' TCP (conn/path/cumulative.rs).
    pub recovery: LossRecovery,
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
            max_window: 0,
            recovery: LossRecovery::Ranges,
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

/// The data transfer: the streams and the coded blocks that carry them. It exists once the
/// handshake has agreed the parameters (`start_transfer`); the encrypted session around a
/// connection is another layer (`crate::session`).
struct Transfer {
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
    transfer: Option<Transfer>,
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
    /// Paths (bit = id) whose last ack-eliciting packet carried a symbol of an app-idle block's
    /// tail: they send a PING once nothing else is due ([`Mode::tail_probes`]).
    tail_probes: u8,
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
    /// Packet-level events for qlog, when asked for (crate::trace).
    pub(crate) trace: crate::trace::Tracer,
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
            trace: Default::default(),
            config,
            state: State::Handshake,
            cid,
            paths,
            transfer: None,
            events: VecDeque::new(),
            close_pending: None,
            handshake_due: None,
            handshake_copies: 0,
            window_update_written: false,
            abandon_pending: 0,
            abandon_written: 0,
            tail_probes: 0,
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
        let max = if self.transfer.is_some() && self.symbols_may_grow() {
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
    /// Gives the streams' window auto-tuning the time and the slowest path's smoothed RTT: the
    /// receiver holds data for as long as the slowest path takes to fill the gaps before it.
    pub(super) fn clock_windows(&mut self, now: Instant) {
        let rtt = self.paths.iter().filter(|p| p.can_send()).map(|p| p.rtt.smoothed()).max();
        if let (Some(s), Some(rtt)) = (self.transfer.as_mut(), rtt) {
            if s.streams.tunes_windows() {
                s.streams.set_clock(now, rtt);
            }
        }
    }

    pub fn streams(&mut self) -> Option<&mut Streams> {
        self.transfer.as_mut().map(|s| &mut s.streams)
    }

    pub fn path_stats(&self) -> Vec<PathStats> {
        self.paths
            .iter()
            .map(|p| PathStats {
                timeouts: p.stats.timeouts + p.cc.timeouts(),
                fast_recoveries: p.cc.fast_recoveries(),
                shared_with: p.cc.shared_with(),
                model_bandwidth: p.cc.model_view().map_or(0, |m| m.bandwidth as u64),
                model_queue_us: p.cc.model_view().and_then(|m| m.queue).map_or(0, |q| q.as_micros() as u64),
                ..p.stats
            })
            .collect()
    }

    /// Bytes this end holds of the peer's data (read-only, memory accounting): symbols in the
    /// block decoders (`held_symbols × max symbol size`, those already delivered among them) and
    /// stream bytes not yet read.
    pub fn receive_buffered(&self) -> ReceiveBuffered {
        // Blocks may have different symbol sizes (PROTOCOL.md §14.3): counted at the largest.
        let size = u64::from(self.config.params.max_symbol());
        self.transfer.as_ref().map_or(ReceiveBuffered::default(), |s| ReceiveBuffered {
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
        self.transfer.as_ref().is_some_and(|s| {
            s.sender.is_idle() && s.partial.is_empty() && s.recut.is_empty() && !s.streams.has_pipe_data()
        })
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(s) = &mut self.transfer {
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

    fn start_transfer(&mut self, params: &TransportParams, peer: &TransportParams) {
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
        let xor_groups = self.redundancy.parity_groups().is_some() && params.code == CodeFamily::Xor;
        let mut sender = BlockSender::new(codec.clone(), window);
        if xor_groups {
            sender.set_manual_groups();
        }
        if self.config.placement() == RepairPlacement::PerPath {
            sender.set_per_path();
        }
        if self.config.mode.short_sources() {
            sender.set_short_sources();
        }
        if self.config.recovery == LossRecovery::Cumulative {
            // Resends go in sequence order, as TCP's from its cumulative point.
            sender.set_in_order();
            if let Some(groups) = self.redundancy.parity_groups() {
                groups.report_repairs();
            }
        }
        let receive = CodecConfig { symbol_size: params.max_symbol().into(), ..codec };
        self.transfer = Some(Transfer {
            streams: Streams::new(self.side, local, remote).with_window_cap(self.config.max_window),
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
            self.paths[i].set_loss_recovery(self.config.recovery);
        }
        self.events.push_back(Event::Connected);
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
