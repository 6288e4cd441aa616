//! Unit tests of the block sender, each driving a real BlockReceiver through written frames.

use std::time::Duration;

use braid_fec::{CodeFamily, Received, SymbolHeader};

use super::*;
use crate::blocks::BlockReceiver;
use crate::wire::{BlockAckFrame, Frame, FrameIter, SymbolFrame};

fn config() -> CodecConfig {
    CodecConfig { symbol_size: 32, max_block_len: 8, ..CodecConfig::new(CodeFamily::Rlnc) }
}

/// Carries every written frame to the receiver unless `drop` says so.
fn carry(out: &[u8], rx: &mut BlockReceiver) -> Vec<Received> {
    FrameIter::new(out)
        .map(|f| match f.unwrap() {
            Frame::Symbol(s) => rx.on_symbol_frame(&s).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn lost_sources_are_answered_with_new_repairs_and_every_symbol_delivered_once() {
    let mut tx = BlockSender::new(config(), 4);
    let mut rx = BlockReceiver::new(config(), 4);
    let pipe: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 32]).collect();
    for s in &pipe {
        tx.push_source(s).unwrap();
    }
    tx.close_block();
    assert_eq!(
        tx.blocks().map(|b| (b.len(), b.closed)).collect::<Vec<_>>(),
        [(8, true), (8, true), (4, true)]
    );
    // Send every source; lose #3 and #10 (block 0 index 3, block 1 index 2).
    let mut delivered = Vec::new();
    let mut n = 0;
    loop {
        let mut out = Vec::new();
        let Some(sent) = tx.write_next_source(&mut Writer::new(&mut out)) else { break };
        if n == 3 || n == 10 {
            tx.on_symbol_lost(sent, false);
        } else {
            carry(&out, &mut rx);
            tx.on_symbol_acked(sent.block);
        }
        n += 1;
        rx.deliver(|s| delivered.push(s.to_vec()));
    }
    // Every symbol that arrived was handed on at once, in arrival order: only the lost two
    // are missing.
    let arrived: Vec<Vec<u8>> =
        pipe.iter().enumerate().filter(|&(i, _)| i != 3 && i != 10).map(|(_, s)| s.clone()).collect();
    assert_eq!(delivered, arrived);
    let ack = rx.block_ack();
    assert_eq!((ack.lowest_undecoded, ack.dofs), (0, 7));
    assert_eq!(ack.decoded_beyond, 0b10, "block 2 complete, block 1 not");
    tx.on_block_ack(&ack);
    // One new repair per block with a loss.
    for block in [0, 1] {
        let mut out = Vec::new();
        let sent = tx.write_repair(block, &mut Writer::new(&mut out)).unwrap().unwrap();
        assert!(sent.is_repair());
        assert_eq!(carry(&out, &mut rx), [Received::Innovative]);
    }
    rx.deliver(|s| delivered.push(s.to_vec()));
    // The two recovered ones came last, once each.
    assert_eq!(delivered[18..], [pipe[3].clone(), pipe[10].clone()]);
    delivered.sort();
    assert_eq!(delivered, pipe);
    let ack = rx.block_ack();
    assert_eq!(ack.lowest_undecoded, 3);
    tx.on_block_ack(&ack);
    assert!(tx.is_idle());
    assert_eq!(tx.blocks().count(), 0);
}

/// MPTCP: a loss is resent on the path that lost it until that path's RTO frees it; with
/// per-path placement a block's sources and retransmissions stay on the path that took it.
#[test]
fn pinned_retransmissions_and_per_path_blocks() {
    let mut tx = BlockSender::new(config(), 4);
    tx.set_per_path();
    for i in 0..16u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    let mut out = Vec::new();
    let mut w = |tx: &mut BlockSender, path| tx.write_next_source_on(path, &mut Writer::new(&mut out));
    // Path 1 takes block 0, path 0 then block 1; path 1 keeps to block 0.
    let a = w(&mut tx, 1).unwrap();
    let b = w(&mut tx, 0).unwrap();
    let c = w(&mut tx, 1).unwrap();
    assert_eq!((a.block, b.block, c.block), (0, 1, 0));
    assert_eq!((a.source, c.source), (Some(0), Some(1)));
    assert!(tx.blocks().next().unwrap().may_carry(1) && !tx.blocks().next().unwrap().may_carry(0));
    // A loss on path 1, pinned to it: path 0 may not send it, path 1 must.
    tx.on_symbol_lost_on(a, true, Some(1));
    assert!(tx.has_retransmission_for(1) && tx.has_retransmission_only_for(1));
    assert!(!tx.has_retransmission_for(0));
    assert!(tx.write_retransmission_on(Some(0), &mut Writer::new(&mut Vec::new())).is_none());
    // Path 1's RTO: the retransmission and block 0 are free for any path.
    tx.unpin_path(1);
    assert!(tx.has_retransmission_for(0) && !tx.has_retransmission_only_for(1));
    let again = tx.write_retransmission_on(Some(0), &mut Writer::new(&mut Vec::new())).unwrap();
    assert_eq!((again.block, again.source), (0, Some(0)));
    assert_eq!(tx.blocks().next().unwrap().path, None);
    let d = w(&mut tx, 0).unwrap();
    assert_eq!((d.block, d.source), (0, Some(2)), "block 0 is path 0's now");
    // A retransmission queued by the code (a failed XOR group) goes on the block's path.
    tx.queue_retransmission(0, 1);
    assert!(tx.has_retransmission_only_for(0));
}

/// The stall of `fmtcp-receive-buffer` (256 KiB, 300 ms) in miniature: the receiver's report
/// (3 of 4) arrives before the packet ACKs of the very symbols it counts, the sender counts
/// them again (4 of 4) and wants no repair. The release timeout doubts the block after a
/// probe timeout with nothing in flight, the count falls back to the report, a repair goes
/// out and the block is released.
#[test]
fn a_block_believed_complete_but_unreleased_gets_a_repair_after_the_release_timeout() {
    use crate::redundancy::{Adaptive, Redundancy, RedundancyController};
    use crate::view::PathView;
    let mut tx = BlockSender::new(config(), 4);
    let mut rx = BlockReceiver::new(config(), 4);
    for i in 0..4u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    tx.close_block();
    let mut sent = Vec::new();
    for n in 0..4 {
        let mut out = Vec::new();
        let s = tx.write_next_source(&mut Writer::new(&mut out)).unwrap();
        if n == 3 {
            tx.on_symbol_lost(s, false);
        } else {
            carry(&out, &mut rx);
            sent.push(s);
        }
    }
    tx.on_block_ack(&rx.block_ack());
    for s in &sent {
        tx.on_symbol_acked(s.block);
    }
    let b = tx.blocks().next().unwrap();
    assert_eq!((b.acked, b.reported, b.acked_since_report), (3, Some(3), 3));
    assert_eq!(b.known_dofs(), 4, "the over-count this test is about");
    let (policy, view) = (Adaptive::new(Redundancy::default()), PathView::default());
    assert_eq!(policy.repairs_wanted(b, &view), 0);

    let (t0, pto) = (Instant::from_micros(1_000_000), Duration::from_millis(450));
    tx.update_waiting(t0);
    assert_eq!(tx.release_deadline(pto), Some(t0 + pto));
    assert!(tx.on_release_timeout(t0 + pto - Duration::from_micros(1), pto).is_empty());
    assert_eq!(tx.on_release_timeout(t0 + pto, pto), [0]);
    let b = tx.blocks().next().unwrap();
    assert_eq!(b.known_dofs(), 3, "doubted: the receiver's count");
    assert_eq!(policy.repairs_wanted(b, &view), 1);
    // Nothing sent yet: the next timeout backs off.
    assert_eq!(tx.release_deadline(pto), Some(t0 + pto + pto * 2));

    let mut out = Vec::new();
    let repair = tx.write_repair(0, &mut Writer::new(&mut out)).unwrap().unwrap();
    assert_eq!(tx.release_deadline(pto), None, "a symbol in flight: no timeout");
    assert_eq!(carry(&out, &mut rx), [Received::Innovative]);
    rx.deliver(|_| {});
    tx.on_symbol_acked(repair.block);
    tx.on_block_ack(&rx.block_ack());
    tx.update_waiting(t0 + pto * 2);
    assert!(tx.is_idle());
    assert_eq!(tx.release_deadline(pto), None);
}

/// The same overtaken report with send and arrival times: the symbols sent before the
/// report arrived are not counted on top of it (it holds them), so the sender sees the
/// missing symbol at once; one sent after it is.
#[test]
fn symbols_sent_before_a_report_arrived_do_not_count_on_top_of_it() {
    use crate::redundancy::{Adaptive, Redundancy, RedundancyController};
    use crate::view::PathView;
    let mut tx = BlockSender::new(config(), 4);
    let mut rx = BlockReceiver::new(config(), 4);
    for i in 0..4u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    tx.close_block();
    let at = Instant::from_micros;
    let mut sent = Vec::new();
    for n in 0..4 {
        let mut out = Vec::new();
        let s = tx.write_next_source(&mut Writer::new(&mut out)).unwrap();
        if n == 3 {
            tx.on_symbol_lost(s, false);
        } else {
            carry(&out, &mut rx);
            sent.push(s);
        }
    }
    // Sent at 10 ms; the report (3 of 4) arrives at 80 ms, their ACKs at 100 ms.
    tx.on_block_ack_at(&rx.block_ack(), at(80_000));
    for s in &sent {
        tx.on_symbol_acked_at(s.block, at(10_000));
    }
    let b = tx.blocks().next().unwrap();
    assert_eq!((b.acked, b.acked_since_report, b.known_dofs()), (3, 0, 3));
    assert_eq!(Adaptive::new(Redundancy::default()).repairs_wanted(b, &PathView::default()), 1);
    let mut out = Vec::new();
    let repair = tx.write_repair(0, &mut Writer::new(&mut out)).unwrap().unwrap();
    tx.on_symbol_acked_at(repair.block, at(100_000));
    assert_eq!(tx.blocks().next().unwrap().known_dofs(), 4);
}

/// A report written before a symbol arrived but received after the symbol left: its own packet
/// acknowledged packets up to 9 of path 0, so the symbol in packet 12 is not in it, and its ACK
/// counts on top (no repair for a block the receiver decoded); one in packet 8 of path 0, or in
/// a packet of path 1 (which the report's packet did not acknowledge), stays left out, as does
/// a bulk block's.
#[test]
fn a_symbol_after_the_reports_own_acks_counts_on_top_of_it() {
    use crate::redundancy::{Adaptive, Redundancy, RedundancyController};
    use crate::view::PathView;
    let at = Instant::from_micros;
    let (r, view) = (Adaptive::new(Redundancy::default()), PathView::default());
    // A one-symbol request: sent at 10 ms in packet 12 of path 0; the receiver's report (0 of 1)
    // left before it arrived and comes back at 30 ms, beside an ACK of packets ≤ 9 of path 0.
    let request = |covers: AckedUpTo, path: u8, number: u64| {
        let mut tx = BlockSender::new(config(), 4);
        let rx = BlockReceiver::new(config(), 4);
        tx.push_source(&[1; 32]).unwrap();
        tx.on_app_idle();
        let s = tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
        tx.on_block_ack_with(&rx.block_ack(), at(30_000), covers);
        tx.on_symbol_acked_in(s, at(10_000), path, number);
        let b = tx.blocks().next().unwrap();
        (b.known_dofs(), r.repairs_wanted(b, &view))
    };
    let mut covers = AckedUpTo::default();
    covers[0] = Some(9);
    assert_eq!(request(covers, 0, 12), (1, 0));
    // Packet 8 was acknowledged beside the report: the report may hold it.
    assert_eq!(request(covers, 0, 8), (0, 1));
    // Path 1's packets were not acknowledged beside it: sent before it arrived, left out.
    assert_eq!(request(covers, 1, 12), (0, 1));
    // A report with no ACK beside it: the send-time rule alone.
    assert_eq!(request(AckedUpTo::default(), 0, 12), (0, 1));
    // A bulk block (not a tail) keeps the send-time rule: the next symbol's report corrects it.
    let mut tx = BlockSender::new(config(), 4);
    tx.push_source(&[1; 32]).unwrap();
    tx.close_block();
    let s = tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
    tx.on_block_ack_with(&BlockReceiver::new(config(), 4).block_ack(), at(30_000), covers);
    tx.on_symbol_acked_in(s, at(10_000), 0, 12);
    assert_eq!(tx.blocks().next().unwrap().known_dofs(), 0);
}

/// A tail's source sent again may duplicate a copy the report holds: source 0 went in packet 1
/// and arrived, was declared lost too early and went again in packet 4; the report (2 of 3:
/// source 1 was lost) left beside an ACK of packets ≤ 3 of path 0, before packet 4 arrived, and
/// the BLOCK_ACK the duplicate raised was lost. Packet 4's ACK does not count on top of the
/// report (it did: the sender counted 3 of 3, wanted no repair, and the block waited for a
/// release timeout); the report's count stands and the lost source gets its repair. A source
/// sent once, in a packet after the report's ACKs, still counts (the rule above).
#[test]
fn a_resent_source_the_report_may_hold_does_not_count_on_top_of_it() {
    use crate::redundancy::{Adaptive, Redundancy, RedundancyController};
    use crate::view::PathView;
    let at = Instant::from_micros;
    let (r, view) = (Adaptive::new(Redundancy::default()), PathView::default());
    let mut tx = BlockSender::new(config(), 4);
    let mut rx = BlockReceiver::new(config(), 4);
    for i in 0..3u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    tx.on_app_idle();
    let mut sent = Vec::new();
    for n in 0..3 {
        let mut out = Vec::new();
        sent.push(tx.write_next_source(&mut Writer::new(&mut out)).unwrap());
        if n != 1 {
            carry(&out, &mut rx);
        }
    }
    assert_eq!(tx.blocks().next().unwrap().tail, Some(Tail::AppIdle));
    tx.on_symbol_lost(sent[0], true);
    tx.on_symbol_lost(sent[1], false);
    let mut out = Vec::new();
    let again = tx.write_retransmission_on(Some(0), &mut Writer::new(&mut out)).unwrap();
    assert_eq!(again, sent[0]);
    let mut covers = AckedUpTo::default();
    covers[0] = Some(3);
    tx.on_block_ack_with(&rx.block_ack(), at(40_000), covers);
    assert_eq!(carry(&out, &mut rx), [Received::Redundant]);
    tx.on_symbol_acked_in(sent[2], at(10_000), 0, 3);
    tx.on_symbol_acked_in(again, at(20_000), 0, 4);
    let b = tx.blocks().next().unwrap();
    assert_eq!((rx.block_ack().dofs, b.reported, b.known_dofs()), (2, Some(2), 2));
    assert_eq!(r.repairs_wanted(b, &view), 1);
}

/// A block whose receiver never named it in a report (a lower block was undecoded) is
/// doubted to one short of its length; an open block the receiver reported whole waits for
/// more data, not for a timeout.
#[test]
fn release_timeout_without_a_report_and_for_open_blocks() {
    let mut tx = BlockSender::new(config(), 4);
    for i in 0..3u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    for _ in 0..3 {
        let s = tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
        tx.on_symbol_acked(s.block);
    }
    let t0 = Instant::from_micros(5_000);
    let pto = Duration::from_millis(100);
    // Open, all acknowledged, the receiver's report says it holds all three: no timeout.
    tx.on_block_ack(&BlockAckFrame { lowest_undecoded: 0, dofs: 3, decoded_beyond: 0 });
    tx.update_waiting(t0);
    assert_eq!(tx.release_deadline(pto), None);
    // Closed: the receiver must release it, so it waits on the receiver.
    tx.close_block();
    tx.update_waiting(t0);
    assert_eq!(tx.release_deadline(pto), Some(t0 + pto));
    // Without any report, a doubt leaves one degree of freedom to send.
    let mut tx = BlockSender::new(config(), 4);
    for i in 0..2u8 {
        tx.push_source(&[i; 32]).unwrap();
    }
    tx.close_block();
    for _ in 0..2 {
        let s = tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
        tx.on_symbol_acked(s.block);
    }
    tx.update_waiting(t0);
    assert_eq!(tx.on_release_timeout(t0 + pto, pto), [0]);
    assert_eq!(tx.blocks().next().unwrap().known_dofs(), 1);
}

#[test]
fn window_bounds_open_blocks_and_receiver_refuses_beyond_it() {
    let mut tx = BlockSender::new(config(), 2);
    for _ in 0..16 {
        tx.push_source(&[0; 32]).unwrap();
    }
    assert!(!tx.has_room());
    assert!(tx.push_source(&[0; 32]).is_err());
    let mut rx = BlockReceiver::new(config(), 2);
    let header = SymbolHeader { block: 2, id: SymbolId::Source { index: 0 } };
    assert!(rx.on_symbol(&header, None, &[0; 32]).is_err());
    // Hostile: block length conflicting with an index already seen.
    let header = SymbolHeader { block: 0, id: SymbolId::Source { index: 5 } };
    rx.on_symbol(&header, None, &[0; 32]).unwrap();
    assert!(rx.on_symbol(&header, Some(3), &[0; 32]).is_err());
}

/// A source symbol ending in zeros (a write's last, padded to the symbol size) goes without them
/// (SHORT_SYMBOL, PROTOCOL.md §8.10) and arrives whole; repair symbols always go whole.
#[test]
fn short_source_symbols_round_trip() {
    let mut tx = BlockSender::new(config(), 4);
    tx.set_short_sources();
    let mut rx = BlockReceiver::new(config(), 4);
    // Three whole symbols, then a write's last: 5 bytes of frames, 27 of padding.
    let mut pipe: Vec<Vec<u8>> = (1..4u8).map(|i| vec![i; 32]).collect();
    pipe.push([1, 2, 3, 4, 5].iter().copied().chain([0; 27]).collect());
    for s in &pipe {
        tx.push_source(s).unwrap();
    }
    tx.close_block();
    let mut sizes = Vec::new();
    let mut out = Vec::new();
    while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {
        let Some(Ok(Frame::Symbol(s))) = FrameIter::new(&out).last() else { panic!("no symbol") };
        sizes.push((s.payload.len(), s.trailing_zeros));
    }
    assert_eq!(sizes, [(32, 0), (32, 0), (32, 0), (5, 27)]);
    assert_eq!(carry(&out, &mut rx), [Received::Innovative; 4]);
    let mut delivered = Vec::new();
    rx.deliver(|s| delivered.push(s.to_vec()));
    assert_eq!(delivered, pipe);
    let mut repair = Vec::new();
    tx.write_repair(0, &mut Writer::new(&mut repair)).unwrap().unwrap();
    let Some(Ok(Frame::Symbol(s))) = FrameIter::new(&repair).next() else { panic!("no repair") };
    assert_eq!((s.payload.len(), s.trailing_zeros), (32, 0));
}

/// A short source symbol lost is rebuilt whole from a repair; a block whose first symbol to
/// arrive is short takes its symbol size from the short symbol's zeros put back.
#[test]
fn lost_short_source_symbol_is_rebuilt_from_repair() {
    let mut tx = BlockSender::new(config(), 4);
    tx.set_short_sources();
    let mut rx = BlockReceiver::new(config(), 4);
    let pipe: Vec<Vec<u8>> = (1..5u8).map(|i| [i, i, 7].iter().copied().chain([0; 29]).collect()).collect();
    for s in &pipe {
        tx.push_source(s).unwrap();
    }
    tx.close_block();
    let mut sent = Vec::new();
    loop {
        let mut out = Vec::new();
        let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) else { break };
        sent.push((s, out));
    }
    // Symbol 0 lost; 3 arrives first, then 1 and 2; a repair replaces 0.
    tx.on_symbol_lost(sent[0].0, false);
    for i in [3, 1, 2] {
        assert_eq!(carry(&sent[i].1, &mut rx), [Received::Innovative]);
    }
    let mut repair = Vec::new();
    tx.write_repair(0, &mut Writer::new(&mut repair)).unwrap().unwrap();
    assert_eq!(carry(&repair, &mut rx), [Received::Innovative]);
    let mut delivered = Vec::new();
    rx.deliver(|s| delivered.push(s.to_vec()));
    assert_eq!(delivered, [3, 1, 2, 0].map(|i| pipe[i].clone()));
    assert_eq!(rx.recovered, 1);
}

/// Once a block's symbol size is known, a short source symbol of another size once its zeros
/// are back, a source longer than it, or a repair of another length is refused (PROTOCOL.md
/// §3.5), and the block is unchanged.
#[test]
fn symbols_of_the_wrong_size_are_refused() {
    use braid_fec::Coefficients;
    let mut rx = BlockReceiver::new(config(), 4);
    let source = |index| SymbolHeader { block: 0, id: SymbolId::Source { index } };
    let frame =
        |header, payload, trailing_zeros| SymbolFrame { header, block_len: Some(4), payload, trailing_zeros };
    // The block's symbol size: 32, from a short symbol (5 bytes and 27 zeros).
    assert_eq!(rx.on_symbol_frame(&frame(source(0), &[1; 5], 27)), Ok(Received::Innovative));
    assert!(rx.on_symbol_frame(&frame(source(1), &[1; 5], 28)).is_err());
    assert!(rx.on_symbol_frame(&frame(source(1), &[1; 33], 0)).is_err());
    let repair =
        SymbolHeader { block: 0, id: SymbolId::Rlnc { span: 4, coefficients: Coefficients::Seed(3) } };
    assert!(rx.on_symbol_frame(&frame(repair, &[1; 31], 0)).is_err());
    assert_eq!(rx.block_ack().dofs, 1);
    assert_eq!(rx.on_symbol_frame(&frame(source(1), &[1; 32], 0)), Ok(Received::Innovative));
}

/// Per-segment placement: a path's open block closed after all its sources went out (the pipe
/// ran dry on another path's cut) has told the receiver no length, so the receiver cannot
/// complete it and every block behind it stays unreleased (braid-sim's fault campaign, seed 47:
/// 16 blocks started, 5 delivered). Its last source goes again, on the next path to send, and
/// carries it.
#[test]
fn a_growing_block_closed_after_its_sources_went_out_tells_the_receiver_its_length() {
    let mut tx = BlockSender::new(config(), 4);
    tx.set_per_path();
    let mut rx = BlockReceiver::new(config(), 4);
    let send = |tx: &mut BlockSender, rx: &mut BlockReceiver, path| {
        let mut out = Vec::new();
        let sent = tx.write_next_source_on(path, &mut Writer::new(&mut out)).unwrap();
        carry(&out, rx);
        sent
    };
    // Path 0's block grows by one source per send, each sent before the next is cut.
    for i in 0..2u8 {
        assert_eq!(tx.push_source_on(0, &[i; 32]).unwrap(), usize::from(i) + 1);
        send(&mut tx, &mut rx, 0);
    }
    // Path 1 takes the pipe's last source in a block of its own; the pipe ran dry, so both
    // blocks close before it goes out.
    tx.push_source_on(1, &[9; 32]).unwrap();
    tx.close_all_growing();
    assert_eq!(send(&mut tx, &mut rx, 1).block, 1);
    assert_eq!(rx.deliver(|_| {}), 3);
    let ack = rx.block_ack();
    assert_eq!((ack.lowest_undecoded, ack.decoded_beyond), (0, 0b1), "block 0's length unknown");
    let b0 = tx.blocks().next().unwrap();
    assert!(b0.closed && b0.owes_length() && !tx.blocks().nth(1).unwrap().owes_length());
    // Its last source goes again, with the length, on whichever path sends next (a copy of a
    // symbol already sent: the next path to send, not block 0's, which may be the slower).
    assert!(tx.has_retransmission_for(1) && !tx.has_retransmission_only_for(0));
    let mut out = Vec::new();
    let again = tx.write_retransmission_on(Some(1), &mut Writer::new(&mut out)).unwrap();
    assert_eq!((again.block, again.source), (0, Some(1)));
    assert_eq!(carry(&out, &mut rx), [Received::Redundant]);
    rx.deliver(|_| {});
    assert_eq!(rx.block_ack().lowest_undecoded, 2, "both blocks complete");
    assert!(!tx.blocks().next().unwrap().owes_length());
    assert!(!tx.has_retransmission_for(0) && !tx.has_retransmission_for(1));
}

/// A loss with every source of a growing block sent closes the block; a retransmission of the
/// lost source goes after the close and tells the length, so no extra symbol is owed.
#[test]
fn a_growing_block_closed_by_a_loss_tells_its_length_with_the_retransmission() {
    let mut tx = BlockSender::new(config(), 4);
    tx.set_per_path();
    let mut rx = BlockReceiver::new(config(), 4);
    let mut sent = Vec::new();
    for i in 0..3u8 {
        tx.push_source_on(0, &[i; 32]).unwrap();
        let mut out = Vec::new();
        sent.push(tx.write_next_source_on(0, &mut Writer::new(&mut out)).unwrap());
        if i != 1 {
            carry(&out, &mut rx);
        }
    }
    tx.on_symbol_lost_on(sent[1], true, Some(0));
    assert!(tx.blocks().next().unwrap().closed && tx.growing_on(0).is_none());
    let mut out = Vec::new();
    let again = tx.write_retransmission_on(Some(0), &mut Writer::new(&mut out)).unwrap();
    assert_eq!(again.source, Some(1));
    carry(&out, &mut rx);
    rx.deliver(|_| {});
    assert_eq!(rx.block_ack().lowest_undecoded, 1);
    assert!(!tx.blocks().next().unwrap().owes_length());
    assert!(tx.write_retransmission_on(Some(0), &mut Writer::new(&mut Vec::new())).is_none());
}
