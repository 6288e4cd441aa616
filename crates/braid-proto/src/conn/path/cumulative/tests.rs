//! Tests of cumulative-ACK recovery (`conn/path/cumulative.rs`).

use super::super::test_support::{leak, packet};
use super::*;
use crate::cc::CcAlgorithm;
use crate::wire::{AckFrame, AckRange};

fn ms(t: u64) -> Instant {
    Instant::from_micros(t * 1000)
}

/// A path with cumulative-ACK recovery on ns-3's NewReno, its RTT measured at 100 ms.
fn path() -> Path {
    let mut p = Path::new(0, CcAlgorithm::NewRenoNs3.build(1000), Instant::ZERO, true);
    p.set_loss_recovery(LossRecovery::Cumulative);
    p.rtt.update(Duration::from_millis(100), Duration::ZERO);
    p
}

/// Sends packet `number` at `t` ms carrying segment (0, `index`).
fn send(p: &mut Path, t: u64, number: u64, index: u16) {
    let mut packet = packet(number);
    packet.time = ms(t);
    packet.symbols = vec![OutgoingSymbol { block: 0, source: Some(index), group: None }];
    p.on_sent(ms(t), number, packet);
    p.next_number = number + 1;
}

/// A segment sent again: which, why, and the packet that carried it (if still counted).
type Resent = (Segment, Resend, Option<u64>);

/// Acknowledges the packet numbers `ranges` (each start..=end) at `t` ms and replays the frame
/// as TCP's ACKs, as the connection does; returns what each ACK sent again.
fn ack(p: &mut Path, t: u64, ranges: &[(u64, u64)]) -> Vec<Resent> {
    ack_suppressed(p, t, ranges, false)
}

/// [`ack`], with the mode's parity able to rebuild the segment at the point (`suppressed`).
fn ack_suppressed(p: &mut Path, t: u64, ranges: &[(u64, u64)], suppressed: bool) -> Vec<Resent> {
    let mut ranges: Vec<AckRange> = ranges.iter().map(|&(start, end)| AckRange { start, end }).collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
    let frame = AckFrame { path: 0, ack_delay_us: 0, ranges: leak(ranges) };
    assert!(p.on_ack(ms(t), &frame).lost.is_empty(), "data packets stay in flight without SACK");
    let mut resent = Vec::new();
    while p.cumulative_next_ack(ms(t)) {
        if let Some((segment, why, packet)) = p.cumulative_loss(suppressed) {
            resent.push((segment, why, packet.map(|p| p.number)));
        }
    }
    resent
}

/// Two holes in one window (segments 1 and 5 of 0..10): three duplicate ACKs resend only the
/// first; the second goes out at the partial ACK a round trip later, and the full ACK ends
/// recovery — two round trips, where braid's own recovery resends both at once.
#[test]
fn a_window_with_two_losses_takes_two_round_trips_to_repair() {
    let mut p = path();
    for i in 0..10 {
        send(&mut p, i, i, i as u16);
    }
    // Everything but 1 and 5 arrives: braid's detection sees both holes, but neither is a
    // loss to this sender, and both stay in flight. TCP's receiver ACKs 0 late (in order), then
    // each segment past the hole at once: three duplicate ACKs resend only the first hole.
    let resent = ack(&mut p, 100, &[(0, 0), (2, 4), (6, 9)]);
    assert_eq!(resent, [((0, 1), Resend::FastRetransmit, Some(1))], "one segment per fast retransmit");
    assert_eq!(p.cumulative_point(), Some((0, 1)));
    assert_eq!(p.in_flight, 1000, "5 is still in flight");
    send(&mut p, 100, 10, 1);
    // Round trip 1: the retransmission arrives; the point moves to the second hole, a partial
    // ACK, which resends it at once.
    assert_eq!(ack(&mut p, 200, &[(10, 10)]), [((0, 5), Resend::PartialAck, Some(5))]);
    assert_eq!(p.cumulative_point(), Some((0, 5)));
    send(&mut p, 200, 11, 5);
    // Round trip 2: the full ACK; recovery is over and nothing is due.
    assert!(ack(&mut p, 300, &[(11, 11)]).is_empty());
    assert_eq!(p.cumulative_point(), None);
    assert_eq!((p.in_flight, p.stats.timeouts), (0, 0));
}

/// Sato et al.'s receiver withholds its duplicate ACKs while a parity can rebuild the hole:
/// no fast retransmit then, and the rebuilt segment moves the point without a resend.
#[test]
fn a_suppressed_hole_rebuilt_by_its_parity_is_never_resent() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    assert!(ack_suppressed(&mut p, 100, &[(0, 1), (3, 5)], true).is_empty(), "suppressed");
    // The group's parity arrives and rebuilds 2: its ACK (at once: it fills the hole) moves
    // the point past everything.
    let mut parity = packet(6);
    parity.time = ms(6);
    parity.symbols = vec![OutgoingSymbol { block: 0, source: None, group: Some(0) }];
    p.on_sent(ms(6), 6, parity);
    p.next_number = 7;
    p.cumulative_repaired((0, 2));
    assert!(ack(&mut p, 106, &[(6, 6)]).is_empty());
    assert_eq!(p.cumulative_point(), None);
    assert_eq!(p.in_flight, 0, "the missing packet the point passed left the flight");
}

/// A segment sent again at a fast retransmit whose first packet was only late: that packet's
/// ACK moves the cumulative point (the receiver holds the segment), and the resend, when its
/// ACK comes, is a duplicate. One ACK frame for two packets that each fill a hole is two TCP
/// ACKs, two partial ACKs: each sends a segment again, the first one that is about to arrive.
#[test]
fn a_late_first_copy_moves_the_point_and_each_tcp_ack_of_a_frame_counts() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    assert_eq!(ack(&mut p, 100, &[(2, 4)]), [((0, 0), Resend::FastRetransmit, Some(0))]);
    send(&mut p, 100, 6, 0);
    // Packets 0 and 1 arrive after all: 0 moves the point to 1 (a partial ACK: 1 goes again,
    // though its packet is acknowledged in the same frame), then 1 moves it past everything 2..4
    // carried (a partial ACK: 5 goes again).
    let resent = ack(&mut p, 110, &[(0, 1)]);
    assert_eq!(resent, [((0, 1), Resend::PartialAck, None), ((0, 5), Resend::PartialAck, Some(5))]);
    assert_eq!(p.cumulative_point(), Some((0, 5)));
}

/// ns-3's receiver ACKs every second in-order segment (`DelAckCount` 2): a frame of four
/// in-order packets in recovery is two partial ACKs, each resending the segment at the new
/// point, not one and not four.
#[test]
fn in_order_segments_are_acknowledged_two_at_a_time() {
    let mut p = path();
    for i in 0..10 {
        send(&mut p, i, i, i as u16);
    }
    // 0 is lost; 1..3 arrive: recovery opens, `recover` = 9.
    assert_eq!(ack(&mut p, 100, &[(1, 3)]), [((0, 0), Resend::FastRetransmit, Some(0))]);
    send(&mut p, 100, 10, 0);
    // The resend fills the hole: the point moves to 4, a partial ACK that resends 4 (in flight).
    assert_eq!(ack(&mut p, 200, &[(10, 10)]), [((0, 4), Resend::PartialAck, Some(4))]);
    send(&mut p, 200, 11, 4);
    // 4..9 arrive in order in one frame: three TCP ACKs (4+5, 6+7, 8+9); the first two are
    // partial ACKs that resend 6 and 8 (their packets are in the frame), the third is the full
    // ACK.
    let resent = ack(&mut p, 210, &[(4, 9)]);
    assert_eq!(resent, [((0, 6), Resend::PartialAck, None), ((0, 8), Resend::PartialAck, None)]);
    assert_eq!(p.cumulative_point(), None);
}

/// Acknowledges `ranges` at `t` ms and counts the TCP ACKs the frame replays as.
fn tcp_acks(p: &mut Path, t: u64, ranges: &[(u64, u64)]) -> usize {
    let mut ranges: Vec<AckRange> = ranges.iter().map(|&(start, end)| AckRange { start, end }).collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
    let frame = AckFrame { path: 0, ack_delay_us: 0, ranges: leak(ranges) };
    p.on_ack(ms(t), &frame);
    std::iter::from_fn(|| p.cumulative_next_ack(ms(t)).then_some(())).count()
}

/// ns-3's receiver counts in-order segments towards its delayed ACK across arrivals, whatever
/// braid's frames group them in (`TcpSocketBase::ReceivedData`, `DelAckCount` 2): a frame of
/// three in-order packets then a frame of one are two TCP ACKs (0+1, then 2+3); the third
/// segment's ACK waits for the fourth, not dropped at the first frame's end.
#[test]
fn a_delayed_ack_waits_across_frames_for_the_next_in_order_segment() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    assert_eq!(tcp_acks(&mut p, 100, &[(0, 2)]), 1, "0+1 acknowledged, 2 waits");
    assert_eq!(p.cumulative_point(), Some((0, 2)));
    assert_eq!(tcp_acks(&mut p, 101, &[(0, 3)]), 1, "2+3 acknowledged together");
    assert_eq!(p.cumulative_point(), Some((0, 4)));
    // The last two: 4 waits, 5 brings the ACK of both; nothing is left in flight.
    assert_eq!(tcp_acks(&mut p, 102, &[(0, 5)]), 1);
    assert_eq!(p.cumulative_point(), None);
}

/// A segment whose delayed ACK waited `DelAckTimeout` (200 ms) is acknowledged by the timer
/// before whatever the next frame brings: here a segment past a hole, whose ACK is then a
/// duplicate ACK (the point moved already), not the ACK that moves the point.
#[test]
fn a_delayed_ack_older_than_its_timeout_goes_before_the_next_arrival() {
    let mut p = path();
    for i in 0..4 {
        send(&mut p, i, i, i as u16);
    }
    assert_eq!(tcp_acks(&mut p, 100, &[(0, 0)]), 0, "0 waits for its delayed ACK");
    assert_eq!(p.cumulative_point(), Some((0, 0)));
    // 1 is lost; 2 arrives 250 ms later: the timer's ACK of 0, then a duplicate ACK for 2.
    assert_eq!(tcp_acks(&mut p, 350, &[(0, 0), (2, 2)]), 2);
    assert_eq!(p.cumulative_point(), Some((0, 1)));
    assert_eq!(p.cumulative.as_ref().map(|c| c.dupacks), Some(1));
    // Within the timeout the same arrivals are one ACK, which moves the point: no duplicate.
    let mut p = path();
    for i in 0..4 {
        send(&mut p, i, i, i as u16);
    }
    assert_eq!(tcp_acks(&mut p, 100, &[(0, 0)]), 0);
    assert_eq!(tcp_acks(&mut p, 150, &[(0, 0), (2, 2)]), 1);
    assert_eq!(p.cumulative_point(), Some((0, 1)));
    assert_eq!(p.cumulative.as_ref().map(|c| c.dupacks), Some(0));
}

/// ns-3's guessed holds: duplicate ACKs in recovery (here from duplicates of segments the
/// receiver holds) each guess one segment held past the point; when the full ACK lands the
/// point on a guessed segment, that segment goes again, with no congestion signal.
#[test]
fn a_wrong_guess_after_recovery_resends_the_segment_at_the_point() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    // Segment 0 is lost; 1..3 arrive: recovery opens (its first guess).
    assert_eq!(ack(&mut p, 100, &[(1, 3)]), [((0, 0), Resend::FastRetransmit, Some(0))]);
    send(&mut p, 100, 6, 0);
    send(&mut p, 100, 7, 6);
    send(&mut p, 100, 8, 7);
    for (n, i) in [(9, 1), (10, 2), (11, 3)] {
        send(&mut p, 100, n, i);
    }
    // Segment 4, the three duplicates and segment 5: five more guesses (six in all).
    ack(&mut p, 150, &[(4, 4)]);
    ack(&mut p, 151, &[(9, 11)]);
    ack(&mut p, 152, &[(5, 5)]);
    let lost = p.stats.packets_lost;
    // The resend of 0: the point moves six segments, past `recover`; one guess is left on
    // segment 6, which is in flight.
    assert_eq!(ack(&mut p, 200, &[(6, 6)]), [((0, 6), Resend::Guessed, Some(7))], "a wrong guess");
    assert_eq!(p.cumulative_point(), Some((0, 6)));
    assert_eq!(p.stats.packets_lost, lost, "not a loss");
    // Unlike a fast retransmit's, the resend waits for room in the window: the only room beyond
    // it is the guessed segment past the point still in flight (7, one packet).
    assert_eq!(p.cumulative_allowance(), 1000);
    assert!(p.cumulative_loss(false).is_none());
}

/// RFC 6298 §5.2: once everything sent is acknowledged the timer stops. An ACK that moves
/// no segment (here the last one, for a parity sent after the window's segments) must stop
/// it as well as one that does, else it fires later with nothing outstanding and collapses
/// the window for no loss.
#[test]
fn the_timer_stops_when_an_ack_leaves_nothing_outstanding() {
    let mut p = path();
    send(&mut p, 0, 0, 0);
    let mut parity = packet(1);
    parity.time = ms(1);
    parity.symbols = vec![OutgoingSymbol { block: 0, source: None, group: Some(0) }];
    p.on_sent(ms(1), 1, parity);
    p.next_number = 2;
    // The segment arrives in order: TCP's receiver delays its ACK while the parity is still out,
    // and the timer runs.
    ack(&mut p, 100, &[(0, 0)]);
    assert_eq!(p.cumulative_point(), Some((0, 0)));
    assert!(p.loss_timeout().is_some(), "the parity is still outstanding");
    // The parity's ACK (sent at once) moves the point and leaves nothing outstanding.
    ack(&mut p, 101, &[(0, 1)]);
    assert_eq!(p.cumulative_point(), None);
    assert_eq!(p.in_flight, 0);
    assert_eq!(p.loss_timeout(), None, "nothing is outstanding");
    let window = p.cc.window();
    assert!(p.on_timer(ms(5000)).0.is_empty());
    assert_eq!((p.stats.timeouts, p.cc.window()), (0, window), "no timeout, no collapse");
}

/// The retransmission timer resends from the cumulative point on, the segments the receiver
/// already holds too (go-back-N), and the duplicates' ACKs set off no fast retransmit.
#[test]
fn a_timeout_resends_everything_from_the_cumulative_point() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    // 3 and 4 arrive (two duplicate ACKs: no fast retransmit); 0, 1, 2 and 5 are lost.
    assert!(ack(&mut p, 100, &[(3, 4)]).is_empty());
    // ns-3's 1 s minimum RTO from the first send.
    let due = p.loss_timeout().expect("the timer runs");
    assert_eq!(due, ms(1000));
    let (lost, probe) = p.on_timer(due);
    let mut lost: Vec<u64> = lost.iter().map(|p| p.number).collect();
    lost.sort();
    assert_eq!((lost, probe), (vec![0, 1, 2, 5], true));
    assert_eq!(p.take_go_back(), [(0, 3), (0, 4)], "held segments go again too");
    assert_eq!((p.stats.timeouts, p.in_flight, p.cc.window()), (1, 0, 1000));
    // The first resend arrives: the point moves past 0 only; 3 and 4 are still to resend.
    send(&mut p, 1000, 6, 0);
    ack(&mut p, 1100, &[(6, 6)]);
    assert!(p.cumulative_passed((0, 0)) && !p.cumulative_passed((0, 3)));
    // The backed-off timer runs again; duplicates of 3 and 4 bring duplicate ACKs, which
    // before the point passes segment 5 are no loss.
    send(&mut p, 1100, 7, 1);
    send(&mut p, 1100, 8, 2);
    send(&mut p, 1100, 9, 3);
    send(&mut p, 1100, 10, 4);
    assert!(ack(&mut p, 1200, &[(9, 10)]).is_empty());
    assert!(ack(&mut p, 1201, &[(8, 8)]).is_empty());
    assert_eq!(p.cumulative_point(), Some((0, 1)));
}

/// ns-3.44 without SACK, after a recovery whose duplicate ACKs (from duplicates of segments the
/// receiver held) left more than three guessed holds: the point lands on a guessed segment, which
/// goes again (no signal), and then a single duplicate ACK takes it for lost (RFC 6675's
/// `IsLost`, three held above it) and opens recovery, resending it once more. Packets whose
/// segments the point passed leave the flight size at once, and their ACKs are duplicate ACKs.
#[test]
fn guessed_holds_left_by_a_recovery_let_one_duplicate_ack_open_the_next() {
    let mut p = path();
    for i in 0..6 {
        send(&mut p, i, i, i as u16);
    }
    // Segment 0 is lost; 1..3 arrive: recovery opens, its first guess.
    assert_eq!(ack(&mut p, 100, &[(1, 3)]), [((0, 0), Resend::FastRetransmit, Some(0))]);
    send(&mut p, 100, 6, 0);
    for (n, i) in (7..17).zip(6..16) {
        send(&mut p, 100, n, i);
    }
    // Duplicates of 1..5, twice over, and one more of 2 that will still be out at the full ACK.
    for (n, i) in (17..27).zip([1, 2, 3, 4, 5, 1, 2, 3, 4, 5]) {
        send(&mut p, 100, n, i);
    }
    send(&mut p, 100, 27, 2);
    // 4, 5, the ten duplicates and segments 6 and 7: fourteen duplicate ACKs, fifteen guesses.
    ack(&mut p, 150, &[(4, 5)]);
    ack(&mut p, 151, &[(17, 26)]);
    ack(&mut p, 152, &[(7, 8)]);
    let before = p.in_flight;
    // The resend of 0 arrives: the point passes 0..7 (the full ACK) and lands on 8, guessed.
    let resent = ack(&mut p, 200, &[(6, 6)]);
    assert_eq!(p.cumulative_point(), Some((0, 8)));
    assert_eq!(before - p.in_flight, 3000, "the resend, the duplicate of 2 still out, and 8 (lost) left");
    assert_eq!(resent, [((0, 8), Resend::Guessed, Some(9))], "a wrong guess");
    send(&mut p, 200, 28, 8);
    assert!(p.cumulative_loss(false).is_none(), "no duplicate ACK yet");
    // The duplicate of 2 arrives: one duplicate ACK, and recovery opens again.
    let resent = ack(&mut p, 210, &[(27, 27)]);
    assert_eq!(
        resent,
        [((0, 8), Resend::FastRetransmit, Some(28))],
        "one duplicate ACK with the guesses left"
    );
}

/// A segment the receiver rebuilt from a parity without the sender's groups reporting the
/// repair: the block's decode report marks it held, with one immediate TCP ACK (a filled hole)
/// that moves the point past it and takes its packet out of the flight size.
#[test]
fn a_decoded_block_moves_the_point_past_a_segment_rebuilt_unseen() {
    let mut p = path();
    for i in 0..4 {
        send(&mut p, i, i, i as u16);
    }
    // 1 is lost: 0 then the duplicate ACKs of 2 and 3; the point waits on 1.
    assert_eq!(tcp_acks(&mut p, 100, &[(0, 0), (2, 3)]), 2);
    assert_eq!(p.cumulative_point(), Some((0, 1)));
    assert_eq!(p.cumulative_blocks(), [0]);
    assert!(p.cumulative_block_decoded(ms(101), 0), "1 was not held: one ACK");
    assert_eq!(p.cumulative_point(), None);
    assert_eq!(p.in_flight, 0, "1's packet left the flight size");
    assert!(!p.cumulative_block_decoded(ms(102), 0), "nothing left to hold: no ACK");
}

/// This path is the slower of two, and the BLOCK_ACK that reports block 0 decoded came back on
/// the faster one before this path's ACK of the packets that completed it. Segment 0's packet
/// was sent before one this path acknowledged (packet 1): lost, so 0 was rebuilt and is held.
/// Segments 2 and 3 are still in flight: they stay so, and their own ACKs move the point (the
/// rule used to hold them too, take their packets out of flight, and replay those ACKs as two
/// duplicate ACKs).
#[test]
fn a_decoded_block_leaves_its_segments_still_in_flight_to_their_own_acks() {
    let mut p = path();
    // Block 0's four segments in packets 0-3, block 1's two in packets 4 and 5.
    for n in 0..6 {
        let mut packet = packet(n);
        packet.time = ms(n);
        packet.symbols = vec![OutgoingSymbol { block: n / 4, source: Some((n % 4) as u16), group: None }];
        p.on_sent(ms(n), n, packet);
        p.next_number = n + 1;
    }
    assert_eq!(tcp_acks(&mut p, 100, &[(1, 1)]), 1, "1 lies beyond the hole at 0");
    assert!(p.cumulative_block_decoded(ms(101), 0), "0 was rebuilt: one ACK");
    assert_eq!(p.cumulative_point(), Some((0, 2)));
    assert_eq!(p.in_flight, 4 * 1000, "packets 2 to 5 stay in flight");
    assert_eq!(tcp_acks(&mut p, 130, &[(1, 3)]), 1, "2 and 3 arrive in order: one ACK");
    assert_eq!(p.cumulative_point(), Some((1, 0)));
    assert_eq!(p.cumulative.as_ref().map(|c| c.dupacks), Some(0));
}
