//! The data pipe: what the coded blocks carry (PROTOCOL.md §10).
//!
//! All streams of a connection are multiplexed into one ordered byte pipe, which the block layer
//! cuts into symbols; the receiver gets the pipe back in order. Pipe frames may straddle symbol
//! and block boundaries. A zero byte where a frame would start is padding (used when a block is
//! closed before its last symbol is full).

use crate::wire::{Reader, WireError, Writer, MAX_VARINT};

/// Largest data chunk in one STREAM frame; bounds the receiver's partial-frame buffer.
pub const MAX_CHUNK: usize = 16_384;

const PAD: u64 = 0x00;
const STREAM: u64 = 0x01;
const STREAM_FIN: u64 = 0x02;
const RESET_STREAM: u64 = 0x03;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipeFrame<'a> {
    /// Bytes of stream `id` at `offset`; `fin`: the stream ends after them.
    Stream { id: u64, offset: u64, fin: bool, data: &'a [u8] },
    /// The sender abandoned stream `id` after `final_size` bytes.
    ResetStream { id: u64, code: u64, final_size: u64 },
}

impl PipeFrame<'_> {
    pub fn write(&self, w: &mut Writer<'_>) {
        match self {
            PipeFrame::Stream { id, offset, fin, data } => {
                debug_assert!(data.len() <= MAX_CHUNK);
                w.varint(if *fin { STREAM_FIN } else { STREAM });
                w.varint(*id);
                w.varint(*offset);
                w.bytes(data);
            }
            PipeFrame::ResetStream { id, code, final_size } => {
                w.varint(RESET_STREAM);
                w.varint(*id);
                w.varint(*code);
                w.varint(*final_size);
            }
        }
    }

    /// Header bytes a STREAM frame with `len` data bytes costs.
    pub fn stream_overhead(id: u64, offset: u64, len: usize) -> usize {
        use crate::wire::varint_len;
        1 + varint_len(id) + varint_len(offset) + varint_len(len as u64)
    }
}

/// Reassembles pipe frames from the in-order pipe bytes.
#[derive(Default)]
pub struct PipeParser {
    /// Bytes of a frame not yet complete (bounded by one frame header plus [`MAX_CHUNK`]).
    partial: Vec<u8>,
}

impl PipeParser {
    /// Feeds the next pipe bytes; calls `on_frame` for every complete frame.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        mut on_frame: impl FnMut(PipeFrame<'_>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        if self.partial.is_empty() {
            // Nothing held back (the usual case): parse straight from `bytes` and keep only
            // what is left unparsed, instead of copying every symbol in and out.
            let (consumed, result) = parse_frames(bytes, &mut on_frame);
            self.partial.extend_from_slice(&bytes[consumed..]);
            return result;
        }
        self.partial.extend_from_slice(bytes);
        let (consumed, result) = parse_frames(&self.partial, &mut on_frame);
        self.partial.drain(..consumed);
        result
    }
}

/// Parses the complete frames at the front of `buf`: how many bytes they took, and the first
/// error other than truncation.
fn parse_frames(
    buf: &[u8],
    on_frame: &mut impl FnMut(PipeFrame<'_>) -> Result<(), WireError>,
) -> (usize, Result<(), WireError>) {
    let mut consumed = 0;
    let result = loop {
        let mut r = Reader::new(&buf[consumed..]);
        if r.is_empty() {
            break Ok(());
        }
        match parse(&mut r) {
            Ok(Some(frame)) => {
                let used = buf.len() - consumed - r.remaining();
                if let Err(e) = on_frame(frame) {
                    break Err(e);
                }
                consumed += used;
            }
            Ok(None) => consumed += 1,
            Err(WireError::Truncated { .. }) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (consumed, result)
}

fn parse<'a>(r: &mut Reader<'a>) -> Result<Option<PipeFrame<'a>>, WireError> {
    Ok(Some(match r.varint()? {
        PAD => return Ok(None),
        ty @ (STREAM | STREAM_FIN) => {
            let id = r.varint()?;
            let offset = r.varint()?;
            let data = r.bytes(MAX_CHUNK, "stream chunk")?;
            if offset.checked_add(data.len() as u64).is_none_or(|end| end > MAX_VARINT) {
                return Err(WireError::OutOfRange("stream offset"));
            }
            PipeFrame::Stream { id, offset, fin: ty == STREAM_FIN, data }
        }
        RESET_STREAM => {
            PipeFrame::ResetStream { id: r.varint()?, code: r.varint()?, final_size: r.varint()? }
        }
        other => return Err(WireError::UnknownFrame(other)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Owned {
        Stream { id: u64, offset: u64, fin: bool, data: Vec<u8> },
        Reset { id: u64, code: u64, final_size: u64 },
    }

    fn own(f: PipeFrame<'_>) -> Owned {
        match f {
            PipeFrame::Stream { id, offset, fin, data } => {
                Owned::Stream { id, offset, fin, data: data.to_vec() }
            }
            PipeFrame::ResetStream { id, code, final_size } => Owned::Reset { id, code, final_size },
        }
    }

    proptest! {
        /// Frames cut at arbitrary points (symbol boundaries) and padded between come back whole.
        #[test]
        fn frames_survive_any_cutting(
            frames in proptest::collection::vec((0u64..100, 0u64..1_000_000, any::<bool>(), 0usize..3000, any::<bool>()), 1..10),
            cuts in proptest::collection::vec(1usize..2000, 1..20),
            pads in proptest::collection::vec(0usize..5, 10),
        ) {
            let mut pipe = Vec::new();
            let mut expected = Vec::new();
            for (i, (id, offset, fin, len, reset)) in frames.into_iter().enumerate() {
                let data = vec![(i as u8).wrapping_mul(31); len];
                let f = if reset {
                    PipeFrame::ResetStream { id, code: offset, final_size: len as u64 }
                } else {
                    PipeFrame::Stream { id, offset, fin, data: &data }
                };
                f.write(&mut Writer::new(&mut pipe));
                pipe.extend(std::iter::repeat_n(0u8, pads[i % pads.len()]));
                expected.push(own(f));
            }
            let mut parser = PipeParser::default();
            let mut got = Vec::new();
            let mut at = 0;
            for cut in cuts.iter().cycle() {
                if at >= pipe.len() { break; }
                let end = (at + cut).min(pipe.len());
                parser.feed(&pipe[at..end], |f| { got.push(own(f)); Ok(()) }).unwrap();
                at = end;
            }
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn garbage_is_an_error_or_waits_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut parser = PipeParser::default();
            let _ = parser.feed(&bytes, |_| Ok(()));
            prop_assert!(parser.partial.len() <= bytes.len());
        }
    }

    #[test]
    fn oversized_chunks_are_refused() {
        let mut pipe = Vec::new();
        let mut w = Writer::new(&mut pipe);
        w.varint(STREAM);
        w.varint(0);
        w.varint(0);
        w.varint(MAX_CHUNK as u64 + 1);
        let err = PipeParser::default().feed(&pipe, |_| Ok(())).unwrap_err();
        assert_eq!(err, WireError::OutOfRange("stream chunk"));
    }
}
