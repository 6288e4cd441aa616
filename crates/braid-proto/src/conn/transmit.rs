//! The transmit side: `poll_transmit` runs the send planner's stages (conn/planner.rs) and
//! builds the packet it names (close, handshake, ACKs and control frames, PMTU probes, copies,
//! pieces of oversized symbols, source and repair symbols; datagram packets are built in
//! datagrams.rs), recording what each packet carried for loss detection. Every frame is sized
//! before it is written (ACK, BLOCK_ACK and SYMBOL frames by their `encoded_len`/`ack_len`): a
//! frame that does not fit is never written into the packet and then cut out again. A SYMBOL
//! frame too large for its path's PLPMTU goes to the writer's overflow
//! ([`Writer::with_overflow`]) and from there in SYMBOL_PART pieces.

use std::time::Duration;

use super::path::{PathState, SentPacket};
use super::planner::Next;
use super::{BlockRecord, Connection, Transmit, BLOCK_LOG_LIMIT, COPIES_PER_PATH, MIN_INITIAL};
use crate::blocks::{SendBlock, Tail};
use crate::redundancy::RedundancyEvent;
use crate::sched::Pick;
use crate::streams::Side;
use crate::view::SymbolEvent;
use crate::wire::{Frame, PacketHeader, PacketType, Writer};
use crate::Instant;

impl Connection {
    /// Writes the next datagram into `buf` (cleared first), if one is due now: each stage's
    /// preparation, then the planner's decision (conn/planner.rs, whose module doc gives the
    /// order), then the packet it names.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        self.last_poll = self.last_poll.max(now);
        self.clock_windows(now);
        if let Some(next) = self.plan_first(now) {
            return self.execute(now, next, buf);
        }
        self.drop_dead_parts();
        if let Some(next) = self.plan_control(now) {
            return self.execute(now, next, buf);
        }
        // Unreliable datagrams go before stream data (PROTOCOL.md §15.5). A datagram packet
        // whose sender gives no frame after all is not begun, and the data stage goes on.
        if let Some(t) = self.datagram_stage(now).and_then(|next| self.execute(now, next, buf)) {
            return Some(t);
        }
        let fixed_rate = self.prepare_data(now);
        if let Some(next) = self.plan_copy(now) {
            return self.execute(now, next, buf);
        }
        let ready = self.ready_pick(now);
        if let Some(pick) = ready {
            self.cut_block_for(pick.path);
        }
        let next = self.plan_data(now, ready, fixed_rate)?;
        self.execute(now, next, buf)
    }

    /// Builds the packet the planner named.
    fn execute(&mut self, now: Instant, next: Next, buf: &mut Vec<u8>) -> Option<Transmit> {
        Some(match next {
            Next::Nothing => return None,
            Next::Close => {
                let (code, reason) = self.close_pending.take()?;
                return self.send_close(now, buf, code, &reason);
            }
            Next::Handshake => self.send_handshake(now, buf),
            Next::Probe(path) => {
                self.paths[path].probe_pending = false;
                self.send_ping(now, path, buf)
            }
            Next::Part => self.send_part(now, buf)?,
            Next::PmtuProbe { path, size } => self.send_pmtu_probe(now, path, size, buf),
            Next::Measure(path) => self.send_measurement(now, path, buf),
            Next::Copy(i) => self.send_copy(now, i, buf)?,
            Next::SilenceProbe(path) => self.send_ping(now, path, buf),
            Next::Datagram(path) => self.send_datagram_packet(now, path, buf)?,
            Next::Symbol(pick) => self.send_symbol(now, pick, buf),
            Next::Parity(path) => self.send_fixed_rate_parity(now, path, buf),
            Next::TailProbe(path) => self.send_tail_probe(now, path, buf),
            Next::Control(path) => self.send_control_alone(now, path, buf),
        })
    }

    /// A CLOSE frame, on any path this end may address (none: the peer was never heard, nothing
    /// to tell).
    fn send_close(&mut self, now: Instant, buf: &mut Vec<u8>, code: u64, reason: &str) -> Option<Transmit> {
        let heard = self.paths.iter().position(|p| p.heard && p.state() != PathState::Removed);
        let path = self.control_path().or(heard)?;
        self.begin_packet(path, PacketType::Data, buf);
        let close = Frame::Close(crate::wire::CloseFrame { code, reason: reason.as_bytes() });
        close.write(&mut Writer::new(buf)).expect("valid");
        Some(self.end_packet(now, path, buf, false, Vec::new()))
    }

    /// This end's handshake packet (the client's Initial, padded; the server's Accept).
    fn send_handshake(&mut self, now: Instant, buf: &mut Vec<u8>) -> Transmit {
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
        self.end_packet(now, path, buf, true, Vec::new())
    }

    /// A PING alone on `path`.
    fn send_ping(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>) -> Transmit {
        self.begin_packet(path, PacketType::Data, buf);
        Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
        self.end_packet(now, path, buf, true, Vec::new())
    }

    /// The scheduler's pick: a symbol on `pick.path`, then whatever control frames fit beside
    /// it. `has_symbol` is a promise the code may not keep (an XOR block has no complete group
    /// to repair): then the control frames go out alone.
    fn send_symbol(&mut self, now: Instant, pick: Pick, buf: &mut Vec<u8>) -> Transmit {
        let path = pick.path;
        self.begin_packet(path, PacketType::Data, buf);
        let start = buf.len();
        let limit = self.paths[path].pmtu.plpmtu();
        let mut oversized = Vec::new();
        let mut w = Writer::with_overflow(buf, limit, &mut oversized);
        let symbol = self.write_symbol(now, path, &mut w, false, pick.block);
        let parted = self.place_oversized(path, &oversized, buf, limit);
        if let Some(symbol) = symbol.filter(|_| self.scheduler.duplicates() && !parted) {
            self.queue_copies(path, symbol, &buf[start..]);
        }
        self.write_control(now, path, buf, 2, limit);
        crate::wire::symbol_to_end(buf, start);
        let Some(symbol) = symbol else {
            return self.end_packet(now, path, buf, false, Vec::new());
        };
        let event = SymbolEvent::Sent { block: symbol.block, path: path as u8, at: now };
        self.redundancy.on_symbol(now, event);
        self.scheduler.on_symbol(now, event);
        let fix = |s: &super::Transfer| s.sender.wants_margin_loss(symbol.block);
        if symbol.source.is_some() && self.transfer.as_ref().is_some_and(fix) {
            let view = self.path_view(path);
            if let Some(s) = self.transfer.as_mut() {
                s.sender.fix_margin_loss(symbol.block, (view.loss, view.loss_long));
            }
        }
        let tail = self.config.mode.tail_probes() && self.is_tail(symbol.block);
        let t = self.end_packet(now, path, buf, true, vec![symbol]);
        if tail {
            self.tail_probes |= 1 << path;
        }
        t
    }

    /// TCP-IR's parity on `path`, which goes out at its fixed rate even when the window is full.
    fn send_fixed_rate_parity(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>) -> Transmit {
        self.begin_packet(path, PacketType::Data, buf);
        let limit = self.paths[path].pmtu.plpmtu();
        let mut oversized = Vec::new();
        let symbol =
            self.write_symbol(now, path, &mut Writer::with_overflow(buf, limit, &mut oversized), true, None);
        self.place_oversized(path, &oversized, buf, limit);
        self.write_control(now, path, buf, 2, self.config.max_datagram);
        match symbol {
            Some(symbol) => self.end_packet(now, path, buf, true, vec![symbol]),
            None => self.end_packet(now, path, buf, false, Vec::new()),
        }
    }

    /// ACKs and control frames alone on `path`.
    fn send_control_alone(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>) -> Transmit {
        let max = self.config.max_datagram;
        self.begin_packet(path, PacketType::Data, buf);
        if self.paths[path].can_send() {
            self.write_control(now, path, buf, 32, max);
        } else {
            // The ACK of a failed path's probe goes back on that path (PROTOCOL.md §12.2);
            // frames that must arrive go on paths that answer.
            self.write_acks(now, path, buf, 32, max);
        }
        self.end_packet(now, path, buf, false, Vec::new())
    }

    /// Whether `block` is closed at an app-idle point with all its sources sent: the tail of a
    /// burst (a video frame, a response), after which the path may fall silent.
    fn is_tail(&self, block: u64) -> bool {
        let sender = self.transfer.as_ref().map(|s| &s.sender);
        let idle = |b: &SendBlock| b.tail == Some(Tail::AppIdle) && b.closed && b.all_sources_sent();
        sender.and_then(|s| s.block(block)).is_some_and(idle)
    }

    /// A tail probe ([`super::Mode::tail_probes`]): a PING on a path whose last packet carried
    /// a tail's symbol, once its pacer would let a symbol go and nothing else was sent. Its ACK
    /// is a later packet acknowledged, so a lost tail symbol is declared by the time threshold
    /// (RFC 9002 §6.1.2) a little over a round trip after it was sent.
    fn send_tail_probe(&mut self, now: Instant, path: usize, buf: &mut Vec<u8>) -> Transmit {
        self.tail_probes &= !(1 << path);
        self.begin_packet(path, PacketType::Data, buf);
        Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
        let max = self.config.max_datagram;
        self.write_control(now, path, buf, 32, max);
        self.end_packet(now, path, buf, true, Vec::new())
    }

    /// A SYMBOL frame (`frame`, empty if none) that was sized too large for `path`'s PLPMTU
    /// (`limit`) and so not written into the packet (`buf`, nothing after the header): its
    /// first piece goes in the packet as a SYMBOL_PART, the others wait in `parts_out` and go
    /// out next (PROTOCOL.md §14.4). The symbol is recorded with the first piece's packet.
    /// A frame that cannot be parted (no room for a piece, longer than a SYMBOL_PART may
    /// carry) goes whole, over the PLPMTU. Returns whether it parted the frame.
    fn place_oversized(&mut self, path: usize, frame: &[u8], buf: &mut Vec<u8>, limit: usize) -> bool {
        if frame.is_empty() {
            return false;
        }
        let room = limit.saturating_sub(buf.len() + PART_OVERHEAD);
        if room == 0 || frame.len() > crate::wire::MAX_PARTED_FRAME {
            buf.extend_from_slice(frame);
            return false;
        }
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

    /// Sends the next waiting piece of a parted SYMBOL frame (its path can send:
    /// `drop_dead_parts`).
    fn send_part(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let part = self.parts_out.pop_front()?;
        let path = part.path;
        self.begin_packet(path, PacketType::Data, buf);
        write_part(&part, buf);
        let limit = self.paths[path].pmtu.plpmtu();
        self.write_control(now, path, buf, 2, limit);
        Some(self.end_packet(now, path, buf, true, Vec::new()))
    }

    /// RFC 8899 §4.1: a probe is a PING padded to the probe size. It is kept out of the path's
    /// `sent` record, so it is not in flight for congestion control and its loss is neither
    /// congestion nor data loss (§3 item 7, §4.4); the PMTU state machine times it out itself.
    fn send_pmtu_probe(&mut self, now: Instant, path: usize, size: usize, buf: &mut Vec<u8>) -> Transmit {
        self.begin_packet(path, PacketType::Data, buf);
        Frame::Ping.write(&mut Writer::new(buf)).expect("valid");
        buf.resize(size.max(buf.len()), 0); // PADDING frames (§8)
        let p = &mut self.paths[path];
        let number = p.next_number;
        p.next_number += 1;
        p.stats.packets_sent += 1;
        p.stats.bytes_sent += buf.len() as u64;
        p.pmtu.on_probe_sent(now, number, size);
        self.trace.sent(now, path, buf);
        Transmit { path: path as u8, size: buf.len() }
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

    /// Sends the queued copy at index `i` (see [`Self::queue_copies`]; copies whose block was
    /// decoded meanwhile were dropped by `prepare_data`).
    fn send_copy(&mut self, now: Instant, i: usize, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (path, symbol, frame) = self.copies.remove(i)?;
        self.begin_packet(path, PacketType::Data, buf);
        buf.extend_from_slice(&frame);
        if let Some(s) = self.transfer.as_mut() {
            s.sender.on_copy_sent(symbol.block);
        }
        self.stats.copies_sent += 1;
        self.write_control(now, path, buf, 2, self.config.max_datagram);
        let event = SymbolEvent::Sent { block: symbol.block, path: path as u8, at: now };
        self.redundancy.on_symbol(now, event);
        self.scheduler.on_symbol(now, event);
        Some(self.end_packet(now, path, buf, true, vec![symbol]))
    }

    /// The header of the next packet of type `ty` on `path`.
    pub(super) fn packet_header(&self, path: usize, ty: PacketType) -> PacketHeader {
        // A server's Data packets go without the connection id (PROTOCOL.md §7.4).
        let dcid = (self.side == Side::Client || ty != PacketType::Data).then_some(self.cid);
        PacketHeader { ty, dcid, path: path as u8, number: self.paths[path].next_number }
    }

    pub(super) fn begin_packet(&self, path: usize, ty: PacketType, buf: &mut Vec<u8>) {
        self.packet_header(path, ty).write(&mut Writer::new(buf));
    }

    pub(super) fn end_packet(
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
        if ack_eliciting {
            self.tail_probes &= !(1 << path);
        }
        if let Some(t) = self.transfer.as_mut() {
            // Where each block's symbols went (braid's margin weighs them by the path's loss).
            symbols.iter().for_each(|s| t.sender.on_sent_on(s.block, path as u8));
        }
        let packet = SentPacket {
            number,
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
        self.trace.sent(now, path, buf);
        Transmit { path: path as u8, size: buf.len() }
    }

    /// ACKs for every path with something to acknowledge (at most `ranges` ranges each), the
    /// decoder state, and flow-control updates — as many as keep the packet within `max` bytes.
    /// What does not fit stays due (an ACK-only packet carries it).
    pub(super) fn write_control(
        &mut self,
        now: Instant,
        path: usize,
        buf: &mut Vec<u8>,
        ranges: usize,
        max: usize,
    ) {
        self.write_acks(now, path, buf, ranges, max);
        // PATH_ABANDON takes 2 bytes (PROTOCOL.md §12.3).
        for id in 0..8u8 {
            if self.abandon_pending & (1 << id) != 0 && buf.len() + 2 <= max {
                Frame::PathAbandon(id).write(&mut Writer::new(buf)).expect("valid path id");
                self.abandon_pending &= !(1 << id);
                self.abandon_written |= 1 << id;
            }
        }
        if let Some(s) = self.transfer.as_mut() {
            if s.block_ack_dirty {
                let frame = s.receiver.block_ack();
                if buf.len() + frame.encoded_len() <= max {
                    Frame::BlockAck(frame).write(&mut Writer::new(buf)).expect("valid");
                    s.block_ack_dirty = false;
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
            // Written only if it fits; else it stays due.
            if p.ack_len(now, ranges).is_some_and(|len| buf.len() + len <= max) {
                p.write_ack(now, ranges, &mut Writer::new(buf));
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
        w: &mut Writer<'_>,
        repair_only: bool,
        block: Option<u64>,
    ) -> Option<crate::blocks::OutgoingSymbol> {
        let view = self.path_view(path);
        let id = path as u8;
        let s = self.transfer.as_mut()?;
        let retransmission = if repair_only { None } else { s.sender.write_retransmission_on(Some(id), w) };
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
            let sent = match s.sender.write_next_source_of(block, w) {
                Some(sent) => {
                    self.stats.source_symbols_sent += 1;
                    if sent.source == Some(0) && self.block_log.len() < BLOCK_LOG_LIMIT {
                        // (`log_block`, on the one field `s` does not borrow)
                        self.block_log.push(BlockRecord::FirstSent { block, at: now });
                    }
                    Some(sent)
                }
                None => {
                    let sent = s.sender.write_repair(block, w).ok().flatten();
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
            if let Ok(Some(sent)) = s.sender.write_repair(block, w) {
                self.stats.repair_symbols_sent += 1;
                let event = RedundancyEvent::Sent { repair: true, retransmission: false };
                self.redundancy.on_event(now, event, &view);
                return Some(sent);
            }
        }
        if repair_only {
            return None;
        }
        let Some(sent) = s.sender.write_next_source_on(id, w) else {
            // No new data: the spare capacity carries proactive repair.
            let block = s
                .sender
                .blocks()
                .find(|b| b.may_carry(id) && self.redundancy.spare_repairs(b, &view) > 0)
                .map(|b| b.id)?;
            let sent = s.sender.write_repair(block, w).ok()??;
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

/// Bytes a SYMBOL_PART frame adds to its piece: type, id, total, offset and length varints.
const PART_OVERHEAD: usize = 1 + 8 + 4 + 4 + 4;

/// A piece of a SYMBOL frame waiting to go out on `path`.
pub(super) struct PartOut {
    pub(super) path: usize,
    id: u64,
    total: u64,
    offset: u64,
    data: Vec<u8>,
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
