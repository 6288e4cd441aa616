//! The δ̂ margin per block and across paths, tails, and drained blocks.

use super::*;

fn view(loss: f64) -> PathView {
    let rtt = std::time::Duration::from_millis(100);
    PathView {
        path: 0,
        smoothed_rtt: rtt,
        min_rtt: rtt,
        loss,
        loss_long: loss,
        window: 100_000,
        in_flight: 0,
        mss: 1280,
    }
}

/// Known losses go out ahead of new data, the δ̂ margin only as spare capacity, and each
/// loss of the block's symbols uses up a unit of margin instead of adding to it.
#[test]
fn margin_is_spent_by_losses_and_losses_beyond_it_are_replaced() {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config, 4);
    for _ in 0..64 {
        tx.push_source(&[7; 16]).unwrap();
    }
    let mut sent = Vec::new();
    let mut out = Vec::new();
    while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
        sent.push(s);
    }
    let r = Adaptive::new(Redundancy::default());
    let (v, block) = (view(0.05), |tx: &BlockSender| tx.blocks().next().map(|b| (b.in_flight, b.lost)));
    let b = tx.blocks().next().unwrap();
    // 64 / 0.95 = 67.4 → 68 symbols: a margin of 4, nothing known lost yet.
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 4));
    // Latency first: the same margin, ahead of new data.
    let ahead = Adaptive::new(Redundancy { margin_ahead_of_data: true, ..Redundancy::default() });
    assert_eq!((ahead.repairs_wanted(b, &v), ahead.spare_repairs(b, &v)), (4, 0));
    for s in &sent[..3] {
        tx.on_symbol_lost(*s, false);
    }
    assert_eq!(block(&tx), Some((61, 3)));
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (3, 1));
    for s in &sent[3..6] {
        tx.on_symbol_lost(*s, false);
    }
    let b = tx.blocks().next().unwrap();
    // Six lost: the margin is gone, the six are replaced one for one.
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (6, 0));
    // No loss estimate: no margin.
    assert_eq!(r.spare_repairs(b, &view(0.0)), 0);
}

/// A block at an app-idle point (the end of a video frame) gets the tail δ̂'s margin, ahead
/// of new data, and a reactive round with its own margin; the same block in a bulk transfer
/// gets the expected-loss margin as spare and losses replaced one for one.
#[test]
fn app_idle_tail_gets_its_margin_at_once() {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config.clone(), 4);
    // A 14-symbol frame (17 kB at 1200-byte symbols) cut, the application idle, all sent.
    for _ in 0..14 {
        tx.push_source(&[7; 16]).unwrap();
    }
    let (r, v) = (Adaptive::new(Redundancy::default()), view(0.02));
    let mut bulk = BlockSender::new(config, 4);
    for _ in 0..14 {
        bulk.push_source(&[7; 16]).unwrap();
    }
    bulk.close_block();
    tx.on_app_idle();
    let mut out = Vec::new();
    let mut sent = Vec::new();
    while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
        sent.push(s);
    }
    let mut bulk_sent = Vec::new();
    while let Some(s) = bulk.write_next_source(&mut Writer::new(&mut out)) {
        bulk_sent.push(s);
    }
    // Without the mark, δ̂ = 0.5: 14 of 14 arrive with 0.98^14 = 0.75, no margin at all.
    let b = bulk.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 0));
    // A block already all sent when the application idles is not the burst's tail.
    bulk.on_app_idle();
    assert_eq!(bulk.blocks().next().unwrap().tail, None);
    let b = tx.blocks().next().unwrap();
    assert!(b.tail == Some(Tail::AppIdle) && b.closed);
    // The idle tail's δ̂ = 0.35 asks for no margin for 14 symbols either (0.75 ≥ 0.65; an
    // I-frame's 60 get two), but it would be sent ahead of data.
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, 0));
    assert_eq!(symbols_for(60, 0.02, 0.35), 62);
    // No loss estimate, no margin (the target: repair overhead ≤ 1 % at 0 % loss).
    assert_eq!(r.repairs_wanted(b, &view(0.0)), 0);
    // 13 acknowledged, one lost: the reactive round sends two (δ̂ 0.01: one arrives with
    // 0.98, one of two with 0.9996), at once; the same loss in bulk is replaced by one.
    for s in &sent[..13] {
        tx.on_symbol_acked(s.block);
    }
    tx.on_symbol_lost(sent[13], false);
    assert_eq!(symbols_for(1, 0.02, 0.01), 2);
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (2, 0));
    for s in &bulk_sent[..13] {
        bulk.on_symbol_acked(s.block);
    }
    bulk.on_symbol_lost(bulk_sent[13], false);
    let b = bulk.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (1, 0));
}

/// A tail's margin is sized with the loss estimates its path had when its last source went
/// out: a later rise (a loss of an earlier frame declared) does not add a margin that would
/// leave long after the frame, a later fall still shrinks it, and the reactive round still
/// uses the estimate of the moment.
#[test]
fn a_tail_margin_does_not_grow_once_its_sources_are_out() {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config, 4);
    for _ in 0..14 {
        tx.push_source(&[7; 16]).unwrap();
    }
    tx.on_app_idle();
    let mut out = Vec::new();
    let mut sent = Vec::new();
    while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
        sent.push(s);
    }
    let r = Adaptive::new(Redundancy::default());
    let (low, high) = (view(0.02), view(0.06));
    // 14 symbols at δ̂ 0.35: none at 2 % (0.98^14 = 0.75), one at 6 % (0.94^14 = 0.42).
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &low), r.repairs_wanted(b, &high)), (0, 1));
    // Its last source went out at 2 %: the rise to 6 % adds nothing.
    tx.fix_margin_loss(0, (0.02, 0.02));
    let b = tx.blocks().next().unwrap();
    assert_eq!(b.margin_loss, Some((0.02, 0.02)));
    assert_eq!(r.repairs_wanted(b, &high), 0);
    // Fixed once: a later call does not move it.
    tx.fix_margin_loss(0, (0.06, 0.06));
    assert_eq!(tx.blocks().next().unwrap().margin_loss, Some((0.02, 0.02)));
    // One source lost: the reactive round is sized at the estimate of the moment (6 %: one
    // replacement arrives with 0.94, one of two with 0.996).
    for s in &sent[..13] {
        tx.on_symbol_acked(s.block);
    }
    tx.on_symbol_lost(sent[13], false);
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &high), r.repairs_wanted(b, &low)), (2, 2));
    // Fixed at 6 % and asked at 2 %: the lower estimate sizes the margin.
    let mut tx = BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
    for _ in 0..14 {
        tx.push_source(&[7; 16]).unwrap();
    }
    tx.on_app_idle();
    while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
    tx.fix_margin_loss(0, (0.06, 0.06));
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &high), r.repairs_wanted(b, &low)), (1, 0));
    // A request's tail is not fixed (it waited longer beside bulk data), nor a block that is
    // not a tail (a bulk block's margin is spare capacity, sized as asked).
    let mut req = BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
    req.push_source(&[7; 16]).unwrap();
    req.close_block_as_tail();
    while req.write_next_source(&mut Writer::new(&mut out)).is_some() {}
    req.fix_margin_loss(0, (0.02, 0.02));
    assert_eq!(req.blocks().next().unwrap().margin_loss, None);
    let mut bulk = BlockSender::new(CodecConfig { symbol_size: 16, ..CodecConfig::new(CodeFamily::Rlnc) }, 4);
    bulk.push_source(&[7; 16]).unwrap();
    bulk.close_block();
    while bulk.write_next_source(&mut Writer::new(&mut out)).is_some() {}
    bulk.fix_margin_loss(0, (0.02, 0.02));
    assert_eq!(bulk.blocks().next().unwrap().margin_loss, None);
}

/// A request's tail beside bulk data keeps the small δ̂ (0.01): its 14 symbols get two
/// repairs ahead of data, where an app-idle tail of the same length gets none.
#[test]
fn request_tail_keeps_the_small_delta() {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config, 4);
    for _ in 0..14 {
        tx.push_source(&[7; 16]).unwrap();
    }
    tx.close_block_as_tail();
    let mut out = Vec::new();
    while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
    let b = tx.blocks().next().unwrap();
    assert_eq!(b.tail, Some(Tail::Request));
    // δ̂ = 0.01: 15 symbols succeed with 0.965, 16 with 0.996.
    assert_eq!(symbols_for(14, 0.02, 0.01), 16);
    let (r, v) = (Adaptive::new(Redundancy::default()), view(0.02));
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (2, 0));
}

/// At the end of a long burst (a bulk transfer's end) the blocks in flight get repair in
/// spare capacity, sized for the path's runs of losses; a loss declared is replaced with the
/// margin kept; a short burst's block (a video frame) is not marked.
#[test]
fn a_bulk_transfers_end_gets_repair_for_runs_of_losses() {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config.clone(), 8);
    for _ in 0..4 * 64 {
        tx.push_source(&[7; 16]).unwrap();
    }
    let mut out = Vec::new();
    let mut sent = Vec::new();
    while let Some(s) = tx.write_next_source(&mut Writer::new(&mut out)) {
        sent.push(s);
    }
    let (mut r, v) = (Adaptive::new(Redundancy::default()), view(0.05));
    let b = tx.blocks().next().unwrap();
    // Before the application idles: the bulk rule (δ̂ 0.5, spare), nothing more.
    assert_eq!(r.spare_repairs(b, &v), Redundancy::default().deficit(b, 0.05));
    tx.on_app_idle();
    assert!(tx.blocks().all(|b| b.drained));
    // Independent losses: the δ̂ 0.01 rule over the 64 in flight, in spare capacity only.
    let b = tx.blocks().next().unwrap();
    let independent = symbols_for(64, 0.05, 0.01) - 64;
    assert!(independent > Redundancy::default().deficit(b, 0.05));
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (0, independent));
    // Runs of four measured on the path: 16 units of four, 20 of them in flight at δ̂ 0.01.
    let at = Instant::from_micros;
    for i in 0..100 {
        r.on_symbol(Instant::ZERO, SymbolEvent::Sent { block: 0, path: 0, at: at(i * 600) });
    }
    for start in [10, 50, 90] {
        for i in start..start + 4 {
            r.on_symbol(Instant::ZERO, SymbolEvent::Lost { block: 0, path: 0, sent_at: at(i * 600) });
        }
    }
    assert_eq!(symbols_for(16, 0.05, 0.01), 20);
    assert_eq!(r.spare_repairs(b, &v), 16);
    // On a path with no loss estimate: none.
    assert_eq!(r.spare_repairs(b, &view(0.0)), 0);
    // One of its sources declared lost: replaced at once, and the margin still wanted.
    tx.on_symbol_lost(sent[0], false);
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &v), r.spare_repairs(b, &v)), (1, 16));
    // A 14-source frame: its block is an app-idle tail, not drained.
    let mut frame = BlockSender::new(config, 8);
    for _ in 0..14 {
        frame.push_source(&[7; 16]).unwrap();
    }
    frame.on_app_idle();
    let b = frame.blocks().next().unwrap();
    assert!(b.tail == Some(Tail::AppIdle) && !b.drained);
}

/// 64 sources of one closed block, all sent, the i-th on path `on(i)`.
fn sent_across(on: impl Fn(usize) -> u8) -> crate::blocks::BlockSender {
    use crate::blocks::BlockSender;
    use crate::wire::Writer;
    use braid_fec::{CodeFamily, CodecConfig};
    let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut tx = BlockSender::new(config, 4);
    for _ in 0..64 {
        tx.push_source(&[7; 16]).unwrap();
    }
    for i in 0..64 {
        tx.write_next_source(&mut Writer::new(&mut Vec::new())).unwrap();
        tx.on_sent_on(0, on(i));
    }
    tx
}

/// Across paths each symbol counts by the loss of the path it crossed (for a margin sent
/// ahead of data): a block sent over the clean path is not given the lossy asking path's
/// margin, one sent over the lossy path gets its expected loss from the clean one at once,
/// and the margin left does not grow back as the clean path's symbols are acknowledged.
#[test]
fn symbols_count_by_the_loss_of_the_path_they_crossed() {
    let (clean, lossy) = (view(0.0), PathView { path: 1, ..view(0.2) });
    let ahead = Redundancy { margin_ahead_of_data: true, ..Redundancy::default() };
    let (mut r, mut spare) = (Adaptive::new(ahead), Adaptive::new(Redundancy::default()));
    let sent = RedundancyEvent::Sent { repair: false, retransmission: false };
    for v in [&clean, &lossy] {
        r.on_event(Instant::ZERO, sent, v);
        spare.on_event(Instant::ZERO, sent, v);
    }
    let m = symbols_for(64, 0.2, 0.5) - 64;
    assert!((16..=17).contains(&m), "64 / 0.8 = 80 symbols: {m}");
    // All on the lossy path: the one-path rule, whichever path asks for the margin's repairs
    // (from the clean path, its 12.8 expected losses, rounded up).
    let tx = sent_across(|_| 1);
    let b = tx.blocks().next().unwrap();
    assert_eq!(r.repairs_wanted(b, &lossy), m);
    assert_eq!(r.repairs_wanted(b, &lossy), Redundancy::default().deficit(b, 0.2));
    assert_eq!(r.repairs_wanted(b, &clean), 13);
    assert_eq!(Redundancy::default().deficit(b, 0.0), 0, "the asking path's rule: none");
    // All on the clean path: asked from the lossy one, the 16 it expects lost are not.
    let tx = sent_across(|_| 0);
    let b = tx.blocks().next().unwrap();
    assert_eq!((r.repairs_wanted(b, &lossy), r.repairs_wanted(b, &clean)), (m - 16, 0));
    // Sent only as spare capacity, the margin keeps the asking path's rule.
    assert_eq!(spare.spare_repairs(b, &lossy), m);
    // Half on each, asked from the lossy path: 32 × 0.2 / 0.8 = 8 fewer than its own rule.
    let mut tx = sent_across(|i| (i % 2) as u8);
    let b = tx.blocks().next().unwrap();
    assert_eq!(r.repairs_wanted(b, &lossy), m - 8);
    // The clean path's 32 acknowledged: what is missing and what is in flight fall alike.
    for _ in 0..32 {
        tx.on_symbol_acked(0);
    }
    let b = tx.blocks().next().unwrap();
    assert_eq!((b.in_flight, b.known_dofs()), (32, 32));
    assert_eq!(r.repairs_wanted(b, &lossy), m - 8);
    // A path the controller never heard of counts as the asking one.
    let fresh = Adaptive::new(ahead);
    assert_eq!(fresh.repairs_wanted(b, &lossy), Redundancy::default().deficit(b, 0.2));
}
