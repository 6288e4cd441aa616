//! Tunnel messages larger than one datagram, split into a few datagrams and put back together.
//!
//! IPv6 needs a 1280-byte link MTU (RFC 8200 §5), and on a path that carries only 1280-byte
//! packets (braid's base PLPMTU) a datagram holds 1216 bytes: a full-size IPv6 UDP packet's
//! message (23 header bytes + 1232 payload) does not fit. RFC 8200 §5 asks such a link to
//! fragment and reassemble below IPv6, which this does: `FRAGMENT | packet (4) | index (1) |
//! count (1) | piece`. Each piece is an ordinary braid datagram, so each is repaired across
//! datagrams and dropped past its deadline like any other; the message is delivered when all
//! its pieces are (a lost piece that repair does not rebuild loses the message, as a lost IP
//! fragment does). Reassembly holds a bounded number of partial messages for a bounded time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use braid_runtime::Connection;

use super::FRAGMENT;

/// Bytes of a fragment's header.
pub const HEADER: usize = 7;
/// The most pieces one message is split into (a 1280-byte IPv6 packet needs two).
pub const MAX_PIECES: usize = 4;
/// Partial messages kept at once; a new one beyond it pushes out the oldest.
pub const MAX_PARTIAL: usize = 64;
/// A partial message older than this is given up (datagrams live 150 ms by default).
pub const MAX_AGE: Duration = Duration::from_secs(1);

/// Splits `message` into the fewest pieces of at most `max` bytes (headers included), their
/// sizes differing by one byte at most; `None` if that takes more than [`MAX_PIECES`].
pub fn split(message: &[u8], max: usize, packet: u32) -> Option<Vec<Vec<u8>>> {
    let room = max.checked_sub(HEADER).filter(|r| *r > 0)?;
    let count = message.len().div_ceil(room).max(1);
    if count > MAX_PIECES {
        return None;
    }
    // The first `longer` pieces take one byte more than the rest.
    let (size, longer) = (message.len() / count, message.len() % count);
    let mut rest = message;
    Some(
        (0..count)
            .map(|i| {
                let (piece, after) = rest.split_at(size + usize::from(i < longer));
                rest = after;
                let mut d = Vec::with_capacity(HEADER + piece.len());
                d.push(FRAGMENT);
                d.extend_from_slice(&packet.to_be_bytes());
                d.push(i as u8);
                d.push(count as u8);
                d.extend_from_slice(piece);
                d
            })
            .collect(),
    )
}

/// Sends tunnel messages: whole when they fit one datagram, else in pieces.
#[derive(Default)]
pub struct Sender {
    next_packet: AtomicU32,
}

impl Sender {
    /// Messages sent in pieces so far.
    pub fn split_messages(&self) -> u32 {
        self.next_packet.load(Ordering::Relaxed)
    }
}

impl Sender {
    /// Sends `message`; [`braid_runtime::Error::DatagramTooLarge`] if even [`MAX_PIECES`]
    /// datagrams cannot hold it.
    pub fn send(&self, conn: &Connection, message: &[u8]) -> Result<(), braid_runtime::Error> {
        let max = conn.max_datagram_size();
        if message.len() <= max {
            return conn.send_datagram(message);
        }
        let packet = self.next_packet.fetch_add(1, Ordering::Relaxed);
        let pieces = split(message, max, packet)
            .ok_or(braid_runtime::Error::DatagramTooLarge { size: message.len(), max })?;
        for piece in pieces {
            conn.send_datagram(&piece)?;
        }
        Ok(())
    }
}

struct Partial {
    packet: u32,
    pieces: Vec<Option<Vec<u8>>>,
    since: Instant,
}

/// Puts messages back together from their pieces.
#[derive(Default)]
pub struct Reassembly {
    partial: VecDeque<Partial>,
}

impl Reassembly {
    /// Takes one fragment datagram; returns the whole message once its last piece is in.
    /// Malformed pieces, pieces that disagree with the others on their count, and a message
    /// that is itself a fragment are dropped (`None`).
    pub fn push(&mut self, d: &[u8], now: Instant) -> Option<Vec<u8>> {
        if d.len() <= HEADER || d[0] != FRAGMENT {
            return None;
        }
        let packet = u32::from_be_bytes(d[1..5].try_into().ok()?);
        let (index, count) = (usize::from(d[5]), usize::from(d[6]));
        if !(2..=MAX_PIECES).contains(&count) || index >= count {
            return None;
        }
        self.partial.retain(|p| now.saturating_duration_since(p.since) < MAX_AGE);
        let at = match self.partial.iter().position(|p| p.packet == packet) {
            Some(at) if self.partial[at].pieces.len() == count => at,
            Some(at) => {
                self.partial.remove(at);
                return None;
            }
            None => {
                if self.partial.len() >= MAX_PARTIAL {
                    self.partial.pop_front();
                }
                self.partial.push_back(Partial { packet, pieces: vec![None; count], since: now });
                self.partial.len() - 1
            }
        };
        let p = &mut self.partial[at];
        p.pieces[index].get_or_insert_with(|| d[HEADER..].to_vec());
        if p.pieces.iter().any(Option::is_none) {
            return None;
        }
        let p = self.partial.remove(at)?;
        let message: Vec<u8> = p.pieces.into_iter().flatten().flatten().collect();
        (message.first() != Some(&FRAGMENT)).then_some(message)
    }

    /// Partial messages held now.
    pub fn len(&self) -> usize {
        self.partial.len()
    }

    /// Whether no partial message is held.
    pub fn is_empty(&self) -> bool {
        self.partial.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn a_full_ipv6_packet_takes_two_even_pieces_that_fit() {
        // A 1232-byte UDP payload to an IPv6 destination: 1255 bytes, datagrams of 1216.
        let m = message(1255);
        let pieces = split(&m, 1216, 9).unwrap();
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| p.len() <= 1216));
        assert!(pieces[0].len().abs_diff(pieces[1].len()) <= 1);
        let mut r = Reassembly::default();
        let now = Instant::now();
        // Either order.
        assert_eq!(r.push(&pieces[1], now), None);
        assert_eq!(r.push(&pieces[0], now), Some(m));
        assert!(r.is_empty());
    }

    #[test]
    fn pieces_differ_by_one_byte_at_most() {
        // 10 bytes in pieces of 3: 3 3 2 2, not 3 3 3 1.
        let sizes: Vec<usize> =
            split(&message(10), 3 + HEADER, 0).unwrap().iter().map(|p| p.len() - HEADER).collect();
        assert_eq!(sizes, [3, 3, 2, 2]);
        assert_eq!(split(&[], 100, 0).unwrap(), [vec![FRAGMENT, 0, 0, 0, 0, 0, 1]]);
    }

    #[test]
    fn too_many_pieces_or_no_room_is_refused() {
        assert!(split(&message(4 * 100 + 1), 100 + HEADER, 0).is_none());
        assert_eq!(split(&message(400), 100 + HEADER, 0).unwrap().len(), 4);
        assert!(split(&message(10), HEADER, 0).is_none());
    }

    #[test]
    fn duplicates_mismatched_counts_and_nesting_are_dropped() {
        let now = Instant::now();
        let m = message(300);
        let pieces = split(&m, 200, 1).unwrap();
        let mut r = Reassembly::default();
        assert_eq!(r.push(&pieces[0], now), None);
        assert_eq!(r.push(&pieces[0], now), None);
        assert_eq!(r.push(&pieces[1], now), Some(m.clone()));
        // A piece claiming another count for a packet in progress ends it.
        assert_eq!(r.push(&pieces[0], now), None);
        let mut liar = pieces[1].clone();
        liar[6] = 3;
        assert_eq!(r.push(&liar, now), None);
        assert!(r.is_empty());
        // A message that is itself a fragment.
        let inner = split(&m, 200, 2).unwrap()[0].clone();
        let outer = split(&inner, 150, 3).unwrap();
        assert_eq!(r.push(&outer[0], now), None);
        assert_eq!(r.push(&outer[1], now), None);
        // Malformed: short, index past count, count 1 or above the most.
        for bad in [
            &[FRAGMENT, 0, 0, 0, 1, 0, 2][..],
            &[FRAGMENT, 0, 0, 0, 1, 2, 2, 9],
            &[FRAGMENT, 0, 0, 0, 1, 0, 1, 9],
            &[FRAGMENT, 0, 0, 0, 1, 0, 5, 9],
        ] {
            assert_eq!(r.push(bad, now), None);
        }
        assert!(r.is_empty());
    }

    #[test]
    fn partial_messages_are_bounded_in_number_and_age() {
        let now = Instant::now();
        let mut r = Reassembly::default();
        for packet in 0..(MAX_PARTIAL as u32 + 10) {
            let pieces = split(&message(300), 200, packet).unwrap();
            assert_eq!(r.push(&pieces[0], now), None);
        }
        assert_eq!(r.len(), MAX_PARTIAL);
        // The oldest were pushed out: their second piece alone completes nothing.
        let first = split(&message(300), 200, 0).unwrap();
        assert_eq!(r.push(&first[1], now), None);
        // Everything expires.
        let late = split(&message(300), 200, 1000).unwrap();
        assert_eq!(r.push(&late[0], now + MAX_AGE), None);
        assert_eq!(r.len(), 1);
    }
}
