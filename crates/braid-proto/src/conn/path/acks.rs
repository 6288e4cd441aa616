//! The receive side of a path's acknowledgements: the packet numbers received, kept as ranges,
//! and the ACK frame this end sends for them.

use std::time::Duration;

use super::Path;
#[cfg(test)]
use crate::wire::AckFrame;
use crate::wire::{ack_len, write_ack, AckRange, Writer};
use crate::Instant;

/// Keep at most this many received ranges (older ones are forgotten; see `AckFrame`).
const MAX_RANGES: usize = 32;

impl Path {
    /// Records a received packet number; returns false for a duplicate.
    pub fn on_received(&mut self, now: Instant, number: u64, ack_eliciting: bool) -> bool {
        // `received` is kept disjoint, non-adjacent and highest first, so the number goes in
        // place: extend the range just above or below it (or join the two), else a new range.
        let below = self.received.iter().position(|r| r.end < number).unwrap_or(self.received.len());
        if below > 0 && self.received[below - 1].start <= number {
            return false;
        }
        self.last_received = now;
        if below == 0 {
            self.largest_received_at = Some(now);
        }
        let joins_above = below > 0 && self.received[below - 1].start == number + 1;
        let joins_below = self.received.get(below).is_some_and(|r| r.end + 1 == number);
        match (joins_above, joins_below) {
            (true, true) => {
                self.received[below - 1].start = self.received[below].start;
                self.received.remove(below);
            }
            (true, false) => self.received[below - 1].start = number,
            (false, true) => self.received[below].end = number,
            (false, false) => self.received.insert(below, AckRange { start: number, end: number }),
        }
        self.received.truncate(MAX_RANGES);
        self.ack_pending |= ack_eliciting;
        self.unacked_eliciting += u32::from(ack_eliciting);
        true
    }

    /// The ACK frame `write_ack` would write (tests only: its ranges are leaked).
    #[cfg(test)]
    pub fn ack_frame(&mut self, now: Instant) -> Option<AckFrame<'static>> {
        if self.received.is_empty() {
            return None;
        }
        self.ack_pending = false;
        self.ack_here = false;
        self.unacked_eliciting = 0;
        let delay = self.largest_received_at.map_or(Duration::ZERO, |t| now - t);
        Some(AckFrame {
            path: self.id,
            ack_delay_us: delay.as_micros() as u64,
            ranges: super::test_support::leak(self.received.clone()),
        })
    }

    /// Writes this path's ACK frame with at most `max_ranges` ranges, like
    /// `Frame::Ack(self.ack_frame(now))` with its ranges truncated, without building the frame.
    /// Returns false (writing nothing) when nothing was received yet.
    pub fn write_ack(&mut self, now: Instant, max_ranges: usize, w: &mut Writer<'_>) -> bool {
        if self.received.is_empty() {
            return false;
        }
        self.ack_pending = false;
        self.ack_here = false;
        self.unacked_eliciting = 0;
        let ranges = &self.received[..self.received.len().min(max_ranges)];
        write_ack(w, self.id, self.ack_delay_us(now), ranges).expect("received ranges are valid");
        true
    }

    /// Bytes `write_ack` would write at `now` with at most `max_ranges` ranges; `None` when
    /// nothing was received yet.
    pub fn ack_len(&self, now: Instant, max_ranges: usize) -> Option<usize> {
        if self.received.is_empty() {
            return None;
        }
        let ranges = &self.received[..self.received.len().min(max_ranges)];
        Some(ack_len(self.id, self.ack_delay_us(now), ranges))
    }

    fn ack_delay_us(&self, now: Instant) -> u64 {
        self.largest_received_at.map_or(Duration::ZERO, |t| now - t).as_micros() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcAlgorithm;

    #[test]
    fn ack_ranges_merge_and_detect_duplicates() {
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        for n in [0, 1, 2, 5, 7, 6, 9] {
            assert!(p.on_received(Instant::ZERO, n, true));
        }
        assert!(!p.on_received(Instant::ZERO, 6, true));
        let ack = p.ack_frame(Instant::ZERO).unwrap();
        let ranges: Vec<(u64, u64)> = ack.ranges.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(ranges, vec![(9, 9), (5, 7), (0, 2)]);
    }

    #[test]
    fn ranges_updated_in_place_match_a_sort_and_merge() {
        // The reference: append, sort highest first, merge, keep MAX_RANGES.
        fn reference(ranges: &mut Vec<AckRange>, n: u64) -> bool {
            if ranges.iter().any(|r| r.start <= n && n <= r.end) {
                return false;
            }
            ranges.push(AckRange { start: n, end: n });
            ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
            let mut merged: Vec<AckRange> = Vec::new();
            for r in ranges.drain(..) {
                match merged.last_mut() {
                    Some(last) if r.end + 1 >= last.start => last.start = last.start.min(r.start),
                    _ => merged.push(r),
                }
            }
            merged.truncate(MAX_RANGES);
            *ranges = merged;
            true
        }
        let mut p = Path::new(0, CcAlgorithm::NewReno.build(1200), Instant::ZERO, true);
        let mut expected = Vec::new();
        let mut x = 7u64;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Mostly ascending with holes, some reordering and duplicates.
            let n = (i + (x >> 60)).saturating_sub((x >> 40) & 7) / 2;
            assert_eq!(p.on_received(Instant::ZERO, n, true), reference(&mut expected, n), "packet {n}");
            assert_eq!(p.received, expected);
        }
    }
}
