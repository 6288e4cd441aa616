//! `braid tun`'s reassembly of messages sent in pieces (`braid_cli::tunnel::fragment`): the
//! pieces are peer bytes (each a datagram the other end sent), so any of them may be forged,
//! duplicated, reordered, lost or late.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use braid_cli::tunnel::fragment::{split, Reassembly, HEADER, MAX_PARTIAL, MAX_PIECES};
use braid_cli::tunnel::FRAGMENT;

use crate::cursor::Cursor;

/// Pieces of well-formed messages not yet delivered, most kept at once.
const PENDING: usize = 64;
/// The longest forged datagram.
const MAX_FORGED: usize = 1500;

/// A script of steps read from the fuzzer's bytes, each one of:
/// - split a message (up to 1400 bytes, any first byte) into pieces of at most 8–1400 bytes
///   under a packet number (mostly small, so packets collide), queueing its pieces; `split`
///   must give the fewest pieces of at most `max` bytes, differing in size by one byte at
///   most, that concatenate to the message, and refuse only what needs more than 4;
/// - deliver a queued piece (any of them: reordered), keeping or dropping it (duplicates);
/// - deliver a forged datagram (random bytes, mostly tagged as a piece, small packet numbers);
/// - deliver every piece of a fresh message at once: it must come out whole;
/// - move the clock on (up to 65 s: partial messages expire after 1 s).
///
/// After every delivery at most 64 partial messages are held, and a message that comes out
/// under a packet number no forged datagram and no other message used is exactly the message
/// split under it.
pub fn fragments(data: &[u8]) {
    let mut c = Cursor::new(data);
    let start = Instant::now();
    let mut now = start;
    let mut r = Reassembly::default();
    // Packet number → the one message split under it, or `None` once two messages or a forged
    // datagram used it (then what comes out under it is not checked against anything).
    let mut owners: HashMap<u32, Option<Vec<u8>>> = HashMap::new();
    let mut pending: Vec<(u32, Vec<u8>)> = Vec::new();
    while !c.is_empty() {
        match c.u8() % 8 {
            0 | 1 => {
                let (packet, max, message) = well_formed(&mut c);
                let Some(pieces) = split_checked(&message, max, packet) else { continue };
                claim(&mut owners, packet, Some(message));
                for p in pieces {
                    if pending.len() >= PENDING {
                        pending.remove(0);
                    }
                    pending.push((packet, p));
                }
            }
            2 | 3 => {
                if pending.is_empty() {
                    continue;
                }
                let at = c.below(pending.len());
                let keep = c.u8().is_multiple_of(4);
                let (packet, piece) = if keep { pending[at].clone() } else { pending.remove(at) };
                let out = r.push(&piece, now);
                check(&r, Some(packet), out.as_deref(), &owners);
            }
            4 | 5 => {
                // Most forged datagrams are tagged as pieces, so they reach past the first check.
                let mut forged = c.bytes(MAX_FORGED).to_vec();
                if forged.len() >= HEADER && !c.u8().is_multiple_of(4) {
                    forged[0] = FRAGMENT;
                    forged[1..4].fill(0);
                    forged[5] %= MAX_PIECES as u8 + 1;
                    forged[6] %= MAX_PIECES as u8 + 2;
                }
                if let Some(number) = forged.get(1..5) {
                    claim(&mut owners, u32::from_be_bytes(number.try_into().expect("4 bytes")), None);
                }
                let out = r.push(&forged, now);
                check(&r, None, out.as_deref(), &owners);
            }
            6 => {
                // A packet number nothing used yet, all its pieces back to back, in an order
                // the fuzzer picks: the last one completes the message.
                let (_, max, message) = well_formed(&mut c);
                let packet = 0x0100_0000 | c.u32() >> 8;
                if owners.contains_key(&packet) {
                    continue;
                }
                let Some(mut pieces) = split_checked(&message, max, packet) else { continue };
                claim(&mut owners, packet, Some(message.clone()));
                let turn = c.below(pieces.len());
                pieces.rotate_left(turn);
                let last = pieces.pop().expect("split gives at least one piece");
                for p in &pieces {
                    let out = r.push(p, now);
                    check(&r, Some(packet), out.as_deref(), &owners);
                    assert!(out.is_none(), "packet {packet} came out before its last piece");
                }
                let out = r.push(&last, now);
                check(&r, Some(packet), out.as_deref(), &owners);
                if pieces.is_empty() {
                    // One piece is no fragment: the tunnel sends such a message whole.
                    assert!(out.is_none(), "a one-piece message came out");
                } else if message.first() != Some(&FRAGMENT) {
                    assert_eq!(out.as_ref(), Some(&message), "packet {packet} did not come out whole");
                }
            }
            _ => now += Duration::from_millis(u64::from(c.u16())),
        }
    }
}

/// After a delivery: at most [`MAX_PARTIAL`] partial messages held; what came out (if
/// anything) is no piece itself, at most [`MAX_PIECES`] datagrams long, and, if it came out
/// under a packet number only one message ever used (`packet`), that message.
fn check(r: &Reassembly, packet: Option<u32>, out: Option<&[u8]>, owners: &HashMap<u32, Option<Vec<u8>>>) {
    assert!(r.len() <= MAX_PARTIAL, "{} partial messages held", r.len());
    let Some(out) = out else { return };
    assert_ne!(out.first(), Some(&FRAGMENT), "a message that is itself a piece came out");
    assert!(out.len() <= MAX_PIECES * MAX_FORGED, "{} bytes came out", out.len());
    if let Some(Some(Some(m))) = packet.map(|p| owners.get(&p)) {
        assert_eq!(out, &m[..], "packet {packet:?} came out changed");
    }
}

/// A packet number (mostly below 256), a piece size of 8–1400 bytes, and a message of up to
/// 1400 bytes.
fn well_formed(c: &mut Cursor<'_>) -> (u32, usize, Vec<u8>) {
    let packet = if c.u8().is_multiple_of(8) { c.u32() } else { u32::from(c.u8()) };
    let max = 8 + c.below(1393);
    let message = c.bytes(1400).to_vec();
    (packet, max, message)
}

/// `split`, and what a sender's split must be: refused only when it needs more than
/// [`MAX_PIECES`] pieces, else the fewest pieces, each a header and at most `max` bytes, their
/// sizes differing by a byte at most, concatenating to the message.
fn split_checked(message: &[u8], max: usize, packet: u32) -> Option<Vec<Vec<u8>>> {
    let room = max - HEADER;
    let needed = message.len().div_ceil(room).max(1);
    let Some(pieces) = split(message, max, packet) else {
        assert!(needed > MAX_PIECES, "{} bytes in pieces of {max} refused", message.len());
        return None;
    };
    assert!(needed <= MAX_PIECES && pieces.len() == needed, "{} pieces for {needed}", pieces.len());
    let sizes: Vec<usize> = pieces.iter().map(|p| p.len() - HEADER).collect();
    let (least, most) = (sizes.iter().min(), sizes.iter().max());
    assert!(pieces.iter().all(|p| p.len() <= max), "a piece above {max} bytes");
    assert!(most.zip(least).is_some_and(|(m, l)| m - l <= 1), "uneven pieces: {sizes:?}");
    let mut whole = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let header = [&[FRAGMENT][..], &packet.to_be_bytes(), &[i as u8, pieces.len() as u8]].concat();
        assert_eq!(p[..HEADER], header[..], "piece {i}'s header");
        whole.extend_from_slice(&p[HEADER..]);
    }
    assert_eq!(whole, message);
    Some(pieces)
}

/// Marks `packet` as used by `message` (`None`: by a forged datagram); a second use leaves
/// it unchecked.
fn claim(owners: &mut HashMap<u32, Option<Vec<u8>>>, packet: u32, message: Option<Vec<u8>>) {
    owners.entry(packet).and_modify(|m| *m = None).or_insert(message);
}
