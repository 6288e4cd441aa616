//! ACK frames (PROTOCOL.md §8.3): their ranges, parsed without allocating, and their writer.

use super::{varint_len, Reader, WireError, Writer, ACK, MAX_ACK_RANGES, MAX_VARINT};

/// Packet numbers `start..=end` of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRange {
    pub start: u64,
    pub end: u64,
}

/// Which packets of a path arrived (§8.3). Ranges are disjoint, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckFrame<'a> {
    pub path: u8,
    /// How long the receiver held the largest packet before acknowledging, in microseconds.
    pub ack_delay_us: u64,
    pub ranges: AckRanges<'a>,
}

/// The ranges of an ACK frame, highest first: either still encoded in the received packet
/// (checked whole when the frame was parsed, decoded again on each iteration, so parsing an
/// ACK allocates nothing) or a slice the caller built.
#[derive(Clone, Copy)]
pub struct AckRanges<'a>(pub(super) RangesRepr<'a>);

#[derive(Clone, Copy)]
pub(super) enum RangesRepr<'a> {
    /// The first range and the `extra` (gap, length) varint pairs that follow it (§8.3).
    Wire {
        first: AckRange,
        extra: usize,
        rest: &'a [u8],
    },
    Slice(&'a [AckRange]),
}

impl<'a> AckRanges<'a> {
    pub fn iter(&self) -> AckRangeIter<'a> {
        match self.0 {
            RangesRepr::Wire { first, extra, rest } => {
                AckRangeIter(IterRepr::Wire { next: Some(first), left: extra, reader: Reader::new(rest) })
            }
            RangesRepr::Slice(s) => AckRangeIter(IterRepr::Slice(s.iter())),
        }
    }

    /// The highest range.
    pub fn first(&self) -> Option<AckRange> {
        match self.0 {
            RangesRepr::Wire { first, .. } => Some(first),
            RangesRepr::Slice(s) => s.first().copied(),
        }
    }

    pub fn len(&self) -> usize {
        match self.0 {
            RangesRepr::Wire { extra, .. } => extra + 1,
            RangesRepr::Slice(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<&'a [AckRange]> for AckRanges<'a> {
    fn from(ranges: &'a [AckRange]) -> AckRanges<'a> {
        AckRanges(RangesRepr::Slice(ranges))
    }
}

impl<'a, const N: usize> From<&'a [AckRange; N]> for AckRanges<'a> {
    fn from(ranges: &'a [AckRange; N]) -> AckRanges<'a> {
        AckRanges(RangesRepr::Slice(ranges))
    }
}

impl<'a> IntoIterator for &AckRanges<'a> {
    type Item = AckRange;
    type IntoIter = AckRangeIter<'a>;

    fn into_iter(self) -> AckRangeIter<'a> {
        self.iter()
    }
}

impl PartialEq for AckRanges<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for AckRanges<'_> {}

impl std::fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterates over [`AckRanges`], highest first.
pub struct AckRangeIter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Wire { next: Option<AckRange>, left: usize, reader: Reader<'a> },
    Slice(std::slice::Iter<'a, AckRange>),
}

impl Iterator for AckRangeIter<'_> {
    type Item = AckRange;

    #[inline]
    fn next(&mut self) -> Option<AckRange> {
        match &mut self.0 {
            IterRepr::Slice(it) => it.next().copied(),
            IterRepr::Wire { next, left, reader } => {
                let current = next.take()?;
                if *left > 0 {
                    *left -= 1;
                    // Checked when the frame was parsed; a failure here ends the iteration.
                    *next = next_range(reader, current.start).ok();
                }
                Some(current)
            }
        }
    }
}

/// The range after one starting at `start`: a (gap, length) pair of §8.3.
#[inline]
pub(super) fn next_range(r: &mut Reader<'_>, start: u64) -> Result<AckRange, WireError> {
    let gap = r.varint()?;
    let len = r.varint()?;
    let end =
        start.checked_sub(gap).and_then(|s| s.checked_sub(2)).ok_or(WireError::OutOfRange("ack gap"))?;
    let start = end.checked_sub(len).ok_or(WireError::OutOfRange("ack range"))?;
    Ok(AckRange { start, end })
}

/// Writes an ACK frame (§8.3) straight from a slice of ranges, highest first, with no
/// `AckFrame` to build: the sender's hot path. On error nothing useful was written; the caller
/// truncates.
pub fn write_ack(
    w: &mut Writer<'_>,
    path: u8,
    ack_delay_us: u64,
    ranges: &[AckRange],
) -> Result<(), WireError> {
    write_ack_ranges(w, path, ack_delay_us, ranges.len(), ranges.iter().copied())
}

/// Bytes [`write_ack`] writes for these ranges (valid ones, at most `MAX_ACK_RANGES`;
/// none: 0), so a packet builder can check its room before writing.
pub fn ack_len(path: u8, ack_delay_us: u64, ranges: &[AckRange]) -> usize {
    let Some(first) = ranges.first() else { return 0 };
    let mut len = varint_len(ACK)
        + varint_len(path.into())
        + varint_len(first.end)
        + varint_len(ack_delay_us.min(MAX_VARINT))
        + varint_len(ranges.len() as u64 - 1)
        + varint_len(first.end - first.start);
    let mut previous_start = first.start;
    for range in &ranges[1..] {
        len += varint_len(previous_start.saturating_sub(range.end + 2)) + varint_len(range.end - range.start);
        previous_start = range.start;
    }
    len
}

pub(super) fn write_ack_ranges(
    w: &mut Writer<'_>,
    path: u8,
    ack_delay_us: u64,
    count: usize,
    mut ranges: impl Iterator<Item = AckRange>,
) -> Result<(), WireError> {
    let first = ranges.next().ok_or(WireError::OutOfRange("ack ranges"))?;
    if count > MAX_ACK_RANGES || first.start > first.end {
        return Err(WireError::OutOfRange("ack ranges"));
    }
    w.varint(ACK);
    w.varint(path.into());
    w.varint(first.end);
    w.varint(ack_delay_us.min(MAX_VARINT));
    w.varint(count as u64 - 1);
    w.varint(first.end - first.start);
    let mut previous_start = first.start;
    for range in ranges {
        // gap: packets skipped between this range and the previous one, minus 2
        // (RFC 9000 §19.3.1: ranges are separated by at least one missing packet).
        if range.start > range.end || range.end + 2 > previous_start {
            return Err(WireError::OutOfRange("ack ranges"));
        }
        w.varint(previous_start - range.end - 2);
        w.varint(range.end - range.start);
        previous_start = range.start;
    }
    Ok(())
}
