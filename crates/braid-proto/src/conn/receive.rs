//! The receive side: a datagram is opened, its frames applied (streams, symbols, ACKs, path
//! and datagram frames), and an ACK's news turned into RTT samples, congestion signals, losses
//! and the redundancy controller's repair decisions.

use braid_fec::CodeFamily;

use super::path::SentPacket;
use super::{BlockRecord, CloseReason, Connection, LossRecovery, RepairPlacement, State, Transfer};
use crate::blocks::AckedUpTo;
use crate::cc::Congestion;
use crate::redundancy::{FecAction, RedundancyEvent};
use crate::streams::{PeerViolation, Side};
use crate::view::SymbolEvent;
use crate::wire::{
    ConnectionId, Frame, FrameIter, PacketHeader, PacketType, Reader, TransportParams, WireError,
};
use crate::Instant;

impl Connection {
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
            self.cid = header.dcid.unwrap_or(self.cid);
        }
        // Every packet names the connection but a server's Data packets (PROTOCOL.md §7.4).
        let named = self.side == Side::Server || header.ty != PacketType::Data;
        if header.dcid != named.then_some(self.cid) || header.path != path {
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
            if self.transfer.is_none() && header.ty != PacketType::Initial {
                self.stats.datagrams_dropped += 1;
                return;
            }
            self.accept_path(now, path);
        }
        let eliciting = frames.iter().any(Frame::is_ack_eliciting);
        if !self.paths[usize::from(path)].on_received(now, header.number, eliciting) {
            return; // duplicate
        }
        self.trace.received(now, path, &header, datagram.len(), &frames);
        // PROTOCOL.md §12.2: a probe (PING alone) is acknowledged on its own path.
        if eliciting && frames.iter().all(|f| matches!(f, Frame::Ping | Frame::Padding)) {
            self.paths[usize::from(path)].ack_here = true;
        }
        self.last_heard = now;
        // The largest packet of each path this packet acknowledges: a BLOCK_ACK beside them was
        // written at the same moment (`BlockSender::on_block_ack_with`).
        let mut covers: AckedUpTo = Default::default();
        for f in &frames {
            if let Frame::Ack(a) = f {
                if let (Some(c), Some(r)) = (covers.get_mut(usize::from(a.path)), a.ranges.first()) {
                    *c = Some(r.end);
                }
            }
        }
        for frame in frames {
            if self.state == State::Closed {
                return;
            }
            self.on_frame(now, usize::from(path), header.ty, frame, covers);
        }
    }

    /// One frame of a packet that arrived on path `arrival`, which acknowledged up to `covers`.
    fn on_frame(
        &mut self,
        now: Instant,
        arrival: usize,
        ty: PacketType,
        frame: Frame<'_>,
        covers: AckedUpTo,
    ) {
        match frame {
            Frame::Padding | Frame::Ping => {}
            Frame::Handshake(peer) => self.on_handshake(now, arrival, ty, peer),
            Frame::Close(c) => {
                let reason = String::from_utf8_lossy(c.reason).into_owned();
                self.finish(CloseReason::Peer { code: c.code, reason });
            }
            _ if self.transfer.is_none() => {}
            Frame::Ack(ack) => self.on_ack(now, arrival, &ack),
            Frame::PathAbandon(id) => self.on_path_abandon(now, id),
            Frame::BlockAck(b) => {
                let sender = &mut self.transfer.as_mut().expect("checked").sender;
                sender.on_block_ack_with(&b, now, covers);
                sender.update_waiting(now);
                if let Some(groups) = self.redundancy.parity_groups() {
                    groups.on_blocks_released(b.lowest_undecoded);
                }
            }
            Frame::Symbol(s) => self.on_symbol(now, &s),
            Frame::SymbolPart(part) => self.on_symbol_part(now, arrival, ty, part),
            Frame::FecStatus(_) => {}
            Frame::Datagram(d) => self.on_datagram_frame(now, &d),
            Frame::DatagramRepair(r) => self.on_datagram_repair(now, &r),
            Frame::MaxData(max) => self.transfer.as_mut().expect("checked").streams.on_max_data(max),
            Frame::MaxStreamData { stream, max } => {
                self.transfer.as_mut().expect("checked").streams.on_max_stream_data(stream, max)
            }
        }
    }

    /// Server: the client's proposal came in its first handshake message (PROTOCOL.md §13.2),
    /// naming connection `cid`: the connection starts as an Initial on path 0 with those
    /// parameters would start it, so its Accept goes out behind the security layer's answer and
    /// the client's core is up one round trip after its first message, not two. The client's
    /// own Initial, when it comes, is answered again. Anything but a server waiting for its
    /// handshake ignores it.
    pub fn accept_proposal(&mut self, now: Instant, cid: ConnectionId, peer: TransportParams) {
        if self.side != Side::Server || self.state != State::Handshake {
            return;
        }
        self.cid = cid;
        if self.paths.first().is_none_or(|p| !p.heard) {
            self.accept_path(now, 0);
        }
        self.last_heard = now;
        self.on_handshake(now, 0, PacketType::Initial, peer);
    }

    /// A HANDSHAKE frame: the server takes the client's proposal (or answers its repeat), the
    /// client adopts the server's answer.
    fn on_handshake(&mut self, now: Instant, arrival: usize, ty: PacketType, peer: TransportParams) {
        match (self.side, ty, self.state) {
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
                self.start_transfer(&params, &peer);
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
                    return self
                        .violation("the server answered with code parameters beyond the proposal".into());
                }
                let params = TransportParams {
                    symbol_size: peer.symbol_size,
                    max_symbol_size: peer.max_symbol_size,
                    max_block_len: peer.max_block_len,
                    blocks_in_flight: peer.blocks_in_flight,
                    ..own.clone()
                };
                self.config.params = params.clone();
                self.start_transfer(&params, &peer);
            }
            _ => {}
        }
    }

    /// A SYMBOL frame: stored in its block, and whatever source symbols it completes (received
    /// or decoded) parsed into pipe frames for the streams.
    fn on_symbol(&mut self, now: Instant, s: &crate::wire::SymbolFrame<'_>) {
        self.stats.symbols_received += 1;
        let transfer = self.transfer.as_mut().expect("checked");
        if let Err(e) = transfer.receiver.on_symbol_frame(s) {
            return self.violation(format!("symbol refused: {e}"));
        }
        transfer.block_ack_dirty = true;
        let lowest_before = transfer.receiver.lowest_undecoded();
        let Transfer { receiver, streams, .. } = transfer;
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
        let lowest_after = self.transfer.as_ref().map_or(lowest_before, |s| s.receiver.lowest_undecoded());
        self.stats.symbols_recovered = self.transfer.as_ref().map_or(0, |s| s.receiver.recovered);
        self.trace.recovered(now, self.stats.symbols_recovered);
        for block in lowest_before..lowest_after {
            self.log_block(BlockRecord::Delivered { block, at: now });
        }
        if let Err(e) = result {
            self.violation(e.to_string());
        } else if let Some(e) = wire_error {
            self.violation(format!("pipe: {e}"));
        }
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
            (Some(Ok(Frame::Symbol(s))), None) => {
                self.on_frame(now, arrival, ty, Frame::Symbol(s), Default::default())
            }
            _ => self.violation("a SYMBOL_PART did not reassemble into one SYMBOL frame".into()),
        }
    }

    fn on_ack(&mut self, now: Instant, arrival: usize, ack: &crate::wire::AckFrame) {
        if !self.ack_for_path(now, arrival, usize::from(ack.path), ack) {
            return;
        }
        let threshold =
            self.redundancy.parity_groups().and_then(|g| g.packet_threshold(usize::from(ack.path)));
        let coupled = self.paths.get(usize::from(ack.path)).is_some_and(|p| p.cc.coupled());
        let all = coupled.then(|| self.aggregate(usize::from(ack.path)));
        let Some(path) = self.paths.get_mut(usize::from(ack.path)) else { return };
        path.set_packet_threshold(threshold);
        if let Some(all) = &all {
            path.cc.on_aggregate(all);
        }
        let outcome = path.on_ack(now, ack);
        // RFC 8899 §4.1: a probe is acknowledged like any ack-eliciting packet; `on_ack` matched
        // it (it is not in `sent`) and read its ACK for loss detection first.
        if outcome.pmtu_probe {
            path.pmtu.on_probe_acked(now);
        }
        if path.rtt.has_sample() {
            // RFC 8899 §5.2 BASE → SEARCHING: the path carries BASE_PLPMTU packets.
            path.pmtu.on_confirmed(now);
        }
        self.note_missing(now, usize::from(ack.path), &outcome.missing);
        self.after_losses(now, usize::from(ack.path), outcome.acked, outcome.lost, false);
        self.cumulative_step(now, usize::from(ack.path));
    }

    /// Acts on acknowledged and lost packets. `probe`: the losses are a probe timeout's
    /// presumption (the tail may only be late), so they feed neither the loss estimate nor the
    /// congestion controller — only the blocks, which get new symbols.
    pub(super) fn after_losses(
        &mut self,
        now: Instant,
        path: usize,
        acked: Vec<SentPacket>,
        lost: Vec<SentPacket>,
        probe: bool,
    ) {
        self.trace.lost(now, path, &lost, crate::trace::LossTrigger::of(probe, acked.is_empty()));
        self.packets_settled(path, &acked, &lost, probe);
        let view = self.path_view(path);
        let Some(transfer) = self.transfer.as_mut() else { return };
        let path_id = path as u8;
        let xor_groups = transfer.xor_groups;
        for p in &acked {
            for s in &p.symbols {
                transfer.sender.on_symbol_acked_in(*s, p.time, path_id, p.number);
                self.redundancy.on_event(now, RedundancyEvent::Acked { repair: s.is_repair() }, &view);
                let event = SymbolEvent::Acked { block: s.block, path: path_id, sent_at: p.time };
                self.redundancy.on_symbol(now, event);
                self.scheduler.on_symbol(now, event);
                if let Some(groups) = self.redundancy.parity_groups().filter(|_| xor_groups) {
                    groups.on_symbol_acked(now, *s);
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
        // With cumulative-ACK recovery the path decided what to resend: all of it goes again.
        let cumulative = self.paths[path].loss_recovery() == LossRecovery::Cumulative;
        let retransmit =
            self.config.mode.retransmits() || self.config.params.code == CodeFamily::Xor || cumulative;
        // MPTCP's subflows resend their own losses (and a block mapped to a path stays on it);
        // a probe timeout (the subflow's RTO) lets the data be reinjected on any path.
        let pin = (!probe
            && (self.config.mode.resends_on_same_path()
                || self.config.placement() == RepairPlacement::PerPath))
            .then_some(path_id);
        // The newest loss not taken over by the redundancy controller (the XOR modes hold a loss
        // their parity may still repair, and settle it later with `FecAction`s).
        let mut newest = None;
        let mut held = 0;
        for p in &lost {
            let mut taken = !p.symbols.is_empty();
            for s in &p.symbols {
                let take = xor_groups
                    && !cumulative
                    && self.redundancy.parity_groups().is_some_and(|g| g.take_loss(now, path, *s, p.time));
                transfer.sender.on_symbol_lost_on(*s, retransmit && !take, pin);
                taken &= take;
            }
            if !taken {
                newest = newest.max(Some(p.time));
            } else if !p.symbols.is_empty() {
                held += 1;
            }
        }
        if cumulative {
            // Go-back-N after a timeout: the segments the receiver holds go out again too; a
            // queued resend the cumulative point passed is dropped.
            for (block, index) in self.paths[path].take_go_back() {
                transfer.sender.queue_retransmission(block, index);
            }
            let p = &self.paths[path];
            transfer.sender.drop_retransmissions(|block, index| p.cumulative_passed((block, index)));
        }
        transfer.sender.update_waiting(now);
        if lost.iter().any(|p| p.window_update) {
            transfer.streams.resend_windows();
        }
        // A lost PATH_ABANDON is sent again (PROTOCOL.md §12.3).
        self.abandon_pending |= lost.iter().fold(0, |bits, p| bits | p.abandons);
        if probe && !lost.is_empty() {
            // The path's RTO: what only it could carry (its own retransmissions, the blocks
            // mapped to it) may now go on any path — MPTCP's reinjection.
            transfer.sender.unpin_path(path_id);
        }
        if !lost.is_empty() && !probe {
            self.signal_losses(now, path, lost.len(), held, newest);
        }
        self.apply_fec_actions(now, probe);
        self.trace.metrics(now, usize::from(path_id), &self.paths[usize::from(path_id)]);
    }

    /// What the packets' sizes and datagrams tell: RFC 8899 §4.3 black-hole detection from data
    /// packets (a probe timeout only presumes its packets lost, the tail may be late, so it
    /// counts as at most two large losses), and the unreliable datagrams they carried.
    fn packets_settled(&mut self, path: usize, acked: &[SentPacket], lost: &[SentPacket], probe: bool) {
        let big = self.config.max_datagram as u64;
        let lost_sizes =
            lost.iter().map(|p| p.size).filter(|&s| s > big).take(if probe { 2 } else { usize::MAX });
        self.paths[path].pmtu.on_data(acked.iter().map(|p| p.size), lost_sizes);
        for sent in lost.iter().filter_map(|p| p.datagrams).filter(|_| !probe) {
            self.on_datagrams_lost(sent);
        }
        self.on_datagrams_acked(path, acked);
    }

    /// Declared losses (`lost` packets, `held` of them taken over by the redundancy controller)
    /// reach `path`'s congestion controller and loss estimate; `newest` is the send time of the
    /// newest loss not held, the congestion event's, if the mode counts loss as congestion.
    fn signal_losses(
        &mut self,
        now: Instant,
        path: usize,
        lost: usize,
        held: usize,
        newest: Option<Instant>,
    ) {
        let path = &mut self.paths[path];
        let congestion = self.config.mode.loss_is_congestion(&path.rtt);
        // A held loss is not yet a loss to the TCP below (Sato et al. §3.2: its receiver
        // withholds the duplicate ACKs); if its group fails, the congestion signal comes
        // with the retransmission.
        path.cc.on_lost(now, (lost - held) as u64);
        if let Some(newest) = newest.filter(|_| congestion) {
            path.cc.on_congestion(now, newest, Congestion::Loss);
        }
        let uncounted =
            self.config.mode.loss_is_overflow(&path.rtt) && !self.config.mode.estimate_counts_congestion();
        path.record_losses(lost, uncounted);
    }

    /// Carries out what the redundancy controller decided about the losses it took over:
    /// retransmissions, and congestion signals (not for a probe timeout's presumed losses).
    pub(super) fn apply_fec_actions(&mut self, now: Instant, probe: bool) {
        while let Some(action) = self.redundancy.parity_groups().and_then(|g| g.poll_action()) {
            match action {
                // With cumulative-ACK recovery a failed group's losses wait for the cumulative
                // point (the receiver's released duplicate ACKs set off the fast retransmit).
                FecAction::Retransmit { .. } | FecAction::Congestion { signal: Congestion::Loss, .. }
                    if self.config.recovery == LossRecovery::Cumulative => {}
                FecAction::Retransmit { block, index } => {
                    if let Some(s) = self.transfer.as_mut() {
                        s.sender.queue_retransmission(block, index);
                    }
                }
                FecAction::Repaired { block, index } => {
                    for p in &mut self.paths {
                        p.cumulative_repaired((block, index));
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
    pub(super) fn apply_parity_covers(&mut self, now: Instant) {
        let Some(path) = self.control_path() else { return };
        let view = self.path_view(path);
        let Some(transfer) = self.transfer.as_mut().filter(|s| s.xor_groups) else { return };
        let Some(groups) = self.redundancy.parity_groups() else { return };
        let covers = groups.parity_covers(now, &mut transfer.sender.blocks(), &view);
        for cover in covers {
            let applied = transfer.sender.cover(cover);
            debug_assert!(applied, "a controller's cover must fit the block: {cover:?}");
        }
        self.apply_fec_actions(now, false);
    }
}
