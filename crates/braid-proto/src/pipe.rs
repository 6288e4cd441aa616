//! The data pipe: what the coded blocks carry (PROTOCOL.md §10).
//!
//! All streams of a connection are multiplexed into source symbols of pipe frames. Every source
//! symbol holds whole frames — a frame never straddles two symbols — so the receiver parses each
//! symbol the moment it has it, received or recovered, in any order, and a stream's bytes reach
//! it as soon as that stream's own data is complete: a lost symbol of one stream does not hold
//! back another (per-stream delivery, as QUIC's STREAM frames give). A zero byte where a frame
//! would start is padding (the rest of a symbol that is not full).

use crate::wire::{Reader, WireError, Writer, MAX_VARINT};

/// Largest data chunk in one STREAM frame; bounds the receiver's partial-frame buffer.
pub const MAX_CHUNK: usize = 16_384;

const PAD: u64 = 0x00;
const STREAM: u64 = 0x01;
const STREAM_FIN: u64 = 0x02;
const RESET_STREAM: u64 = 0x03;
/// STREAM and STREAM with FIN whose data runs to the end of the symbol, without a length
/// (PROTOCOL.md §10.1).
const STREAM_TO_END: u64 = 0x04;
const STREAM_FIN_TO_END: u64 = 0x05;

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
        Self::stream_to_end_overhead(id, offset) + crate::wire::varint_len(len as u64)
    }

    /// Header bytes a STREAM frame costs when its data runs to the end of the symbol (no length).
    pub fn stream_to_end_overhead(id: u64, offset: u64) -> usize {
        use crate::wire::varint_len;
        1 + varint_len(id) + varint_len(offset)
    }

    /// Writes a STREAM frame without its length (STREAM_TO_END, PROTOCOL.md §10.1): the caller
    /// ends the symbol with it, so its data is the rest of the symbol. Other frames are written
    /// as [`PipeFrame::write`] does.
    pub fn write_to_end(&self, w: &mut Writer<'_>) {
        match self {
            PipeFrame::Stream { id, offset, fin, data } => {
                debug_assert!(!data.is_empty() && data.len() <= MAX_CHUNK);
                w.varint(if *fin { STREAM_FIN_TO_END } else { STREAM_TO_END });
                w.varint(*id);
                w.varint(*offset);
                w.put(data);
            }
            PipeFrame::ResetStream { .. } => self.write(w),
        }
    }
}

/// Parses one source symbol: calls `on_frame` for every frame in it. A frame cut short by the
/// symbol's end is an error: senders never let a frame straddle symbols.
pub fn parse_symbol<'a>(
    symbol: &'a [u8],
    mut on_frame: impl FnMut(PipeFrame<'a>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let mut r = Reader::new(symbol);
    while !r.is_empty() {
        if let Some(frame) = parse(&mut r)? {
            on_frame(frame)?;
        }
    }
    Ok(())
}

/// A pipe frame that owns its data: one taken back out of symbols cut but never sent, to be cut
/// again at another symbol size (PROTOCOL.md §14.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedFrame {
    Stream { id: u64, offset: u64, fin: bool, data: Vec<u8> },
    ResetStream { id: u64, code: u64, final_size: u64 },
}

impl OwnedFrame {
    /// The frames of `symbols`, in order (our own symbols: a parse error cannot happen, and
    /// would only drop the rest of that symbol).
    pub fn from_symbols<'a>(symbols: impl IntoIterator<Item = &'a [u8]>) -> Vec<OwnedFrame> {
        let mut frames = Vec::new();
        for symbol in symbols {
            let parsed = parse_symbol(symbol, |f| {
                frames.push(match f {
                    PipeFrame::Stream { id, offset, fin, data } => {
                        OwnedFrame::Stream { id, offset, fin, data: data.to_vec() }
                    }
                    PipeFrame::ResetStream { id, code, final_size } => {
                        OwnedFrame::ResetStream { id, code, final_size }
                    }
                });
                Ok(())
            });
            debug_assert!(parsed.is_ok(), "our own symbol did not parse: {parsed:?}");
        }
        frames
    }

    /// Writes as much of the frame as `room` bytes hold (a STREAM frame may be split: what is
    /// left stays in `self`, at the later offset). Returns whether the frame is now all written.
    /// Writes nothing if not even a piece fits. `ends_symbol`: `room` runs to the symbol's end,
    /// so a STREAM frame whose data fill it goes without its length (STREAM_TO_END, PROTOCOL.md
    /// §10.1), as `Streams` cuts it: a symbol a STREAM_TO_END frame filled, cut again at the
    /// same size, then holds all of it, where the length's 1–2 bytes left data over for another
    /// symbol (and, in `Connection::split_last_cut`, another block).
    pub fn write_part(&mut self, room: usize, ends_symbol: bool, w: &mut Writer<'_>) -> bool {
        match self {
            OwnedFrame::Stream { id, offset, fin, data } => {
                let fill = room.saturating_sub(PipeFrame::stream_to_end_overhead(*id, *offset));
                if ends_symbol && fill > 0 && fill <= data.len().min(MAX_CHUNK) {
                    let last = fill == data.len();
                    let frame = PipeFrame::Stream {
                        id: *id,
                        offset: *offset,
                        fin: *fin && last,
                        data: &data[..fill],
                    };
                    frame.write_to_end(w);
                    data.drain(..fill);
                    *offset += fill as u64;
                    return last;
                }
                let overhead = PipeFrame::stream_overhead(*id, *offset, data.len());
                if room < overhead || (room == overhead && !data.is_empty()) {
                    return false;
                }
                let n = data.len().min(room - overhead);
                let last = n == data.len();
                let frame =
                    PipeFrame::Stream { id: *id, offset: *offset, fin: *fin && last, data: &data[..n] };
                frame.write(w);
                data.drain(..n);
                *offset += n as u64;
                last
            }
            OwnedFrame::ResetStream { id, code, final_size } => {
                let frame = PipeFrame::ResetStream { id: *id, code: *code, final_size: *final_size };
                let mut probe = Vec::new();
                frame.write(&mut Writer::new(&mut probe));
                if probe.len() > room {
                    return false;
                }
                w.put(&probe);
                true
            }
        }
    }
}

fn parse<'a>(r: &mut Reader<'a>) -> Result<Option<PipeFrame<'a>>, WireError> {
    Ok(Some(match r.varint()? {
        PAD => return Ok(None),
        ty @ (STREAM | STREAM_FIN | STREAM_TO_END | STREAM_FIN_TO_END) => {
            let id = r.varint()?;
            let offset = r.varint()?;
            let data = if ty >= STREAM_TO_END {
                // The rest of the symbol, at least one byte.
                if r.is_empty() || r.remaining() > MAX_CHUNK {
                    return Err(WireError::OutOfRange("stream chunk"));
                }
                r.take(r.remaining())?
            } else {
                r.bytes(MAX_CHUNK, "stream chunk")?
            };
            if offset.checked_add(data.len() as u64).is_none_or(|end| end > MAX_VARINT) {
                return Err(WireError::OutOfRange("stream offset"));
            }
            PipeFrame::Stream { id, offset, fin: ty == STREAM_FIN || ty == STREAM_FIN_TO_END, data }
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

    proptest! {
        /// Frames cut again into symbols of any size (split where a symbol ends, padded) parse
        /// back symbol by symbol, each symbol on its own, into the same bytes per stream.
        #[test]
        fn recut_frames_stay_whole_in_every_symbol(
            frames in proptest::collection::vec((0u64..4, 0usize..3000, any::<bool>()), 1..10),
            size in 40usize..2000,
        ) {
            let mut offsets = [0u64; 4];
            let mut expected: Vec<Vec<u8>> = vec![Vec::new(); 4];
            let mut owned: Vec<OwnedFrame> = Vec::new();
            for (i, (id, len, reset)) in frames.into_iter().enumerate() {
                if reset {
                    owned.push(OwnedFrame::ResetStream { id: id + 100, code: 7, final_size: len as u64 });
                    continue;
                }
                let data: Vec<u8> = (0..len).map(|j| (i * 31 + j) as u8).collect();
                expected[id as usize].extend(&data);
                owned.push(OwnedFrame::Stream { id, offset: offsets[id as usize], fin: false, data });
                offsets[id as usize] += len as u64;
            }
            let mut queue: std::collections::VecDeque<OwnedFrame> = owned.clone().into();
            let mut symbols = Vec::new();
            while !queue.is_empty() {
                let mut symbol = Vec::new();
                while let Some(f) = queue.front_mut() {
                    let room = size - symbol.len();
                    if !f.write_part(room, true, &mut Writer::new(&mut symbol)) {
                        break;
                    }
                    queue.pop_front();
                }
                prop_assert!(!symbol.is_empty() && symbol.len() <= size, "symbol of {} bytes", symbol.len());
                symbol.resize(size, 0);
                symbols.push(symbol);
            }
            let mut got: Vec<Vec<u8>> = vec![Vec::new(); 4];
            let mut resets = 0;
            // Symbols parse on their own, in any order (here: reversed).
            for symbol in symbols.iter().rev() {
                parse_symbol(symbol, |f| {
                    match f {
                        PipeFrame::Stream { id, offset, data, .. } => {
                            let buf = &mut got[id as usize];
                            let end = offset as usize + data.len();
                            if buf.len() < end { buf.resize(end, 0); }
                            buf[offset as usize..end].copy_from_slice(data);
                        }
                        PipeFrame::ResetStream { .. } => resets += 1,
                    }
                    Ok(())
                }).unwrap();
            }
            let total: usize = expected.iter().map(Vec::len).sum();
            prop_assert_eq!(got, expected);
            prop_assert_eq!(resets, owned.iter().filter(|f| matches!(f, OwnedFrame::ResetStream { .. })).count());
            // And the symbols' frames come back as owned frames, in order.
            let back = OwnedFrame::from_symbols(symbols.iter().map(Vec::as_slice));
            let bytes: usize = back.iter().map(|f| match f { OwnedFrame::Stream { data, .. } => data.len(), _ => 0 }).sum();
            prop_assert_eq!(bytes, total);
        }

        #[test]
        fn garbage_is_an_error_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_symbol(&bytes, |_| Ok(()));
        }
    }

    /// STREAM_TO_END (§10.1) runs to the end of the symbol; with no data, more than MAX_CHUNK,
    /// an offset past the varint range, or cut short before its data, it is refused.
    #[test]
    fn stream_frames_to_the_end_are_checked() {
        let mut symbol = Vec::new();
        PipeFrame::Stream { id: 4, offset: 10, fin: false, data: &[1; 20] }
            .write(&mut Writer::new(&mut symbol));
        let at = symbol.len();
        PipeFrame::Stream { id: 4, offset: 30, fin: true, data: &[2; 50] }
            .write_to_end(&mut Writer::new(&mut symbol));
        assert_eq!(symbol[at], STREAM_FIN_TO_END as u8);
        assert_eq!(symbol.len() - at, 1 + 1 + 1 + 50);
        let mut got = Vec::new();
        parse_symbol(&symbol, |f| {
            got.push(f);
            Ok(())
        })
        .unwrap();
        assert_eq!(got[1], PipeFrame::Stream { id: 4, offset: 30, fin: true, data: &[2; 50] });
        assert_eq!(got.len(), 2);
        let to_end = |offset: u64, len: usize| {
            let mut out = Vec::new();
            let mut w = Writer::new(&mut out);
            w.varint(STREAM_TO_END);
            w.varint(0);
            w.varint(offset);
            out.resize(out.len() + len, 3);
            out
        };
        let chunk = Err(WireError::OutOfRange("stream chunk"));
        assert_eq!(parse_symbol(&to_end(0, 0), |_| Ok(())), chunk);
        assert_eq!(parse_symbol(&to_end(0, MAX_CHUNK + 1), |_| Ok(())), chunk);
        assert_eq!(parse_symbol(&to_end(0, MAX_CHUNK), |_| Ok(())), Ok(()));
        let past = parse_symbol(&to_end(MAX_VARINT - 2, 3), |_| Ok(()));
        assert_eq!(past, Err(WireError::OutOfRange("stream offset")));
        // Symbols taken back to be cut again (§14.3) are parsed one by one: a frame to the end
        // of one symbol ends there, not at the end of the next.
        let mut second = Vec::new();
        PipeFrame::Stream { id: 4, offset: 80, fin: false, data: &[3; 7] }
            .write_to_end(&mut Writer::new(&mut second));
        let back = OwnedFrame::from_symbols([symbol.as_slice(), second.as_slice()]);
        let lens: Vec<usize> = back
            .iter()
            .map(|f| match f {
                OwnedFrame::Stream { data, .. } => data.len(),
                OwnedFrame::ResetStream { .. } => 0,
            })
            .collect();
        assert_eq!(lens, [20, 50, 7]);
        let whole = to_end(1 << 20, 5);
        for cut in 1..whole.len() - 5 {
            assert!(matches!(parse_symbol(&whole[..cut], |_| Ok(())), Err(WireError::Truncated { .. })));
        }
    }

    /// A symbol a STREAM_TO_END frame fills, taken back and cut again at the same size (the
    /// last cut split among blocks, `Connection::split_last_cut`; a resize, §14.3), fits one
    /// symbol again: the frame goes to the end without its length. With the length form its last
    /// 1–2 bytes were left over for a symbol of their own. Not where the room ends short of the
    /// symbol's end: the zero padding after it would read as data.
    #[test]
    fn a_symbol_filled_to_its_end_is_cut_again_whole() {
        for (id, offset, size) in [(4, 30, 1232), (0, 1 << 20, 1406), (400, 70_000, 200)] {
            let mut symbol = Vec::new();
            let data = vec![9; size - PipeFrame::stream_to_end_overhead(id, offset)];
            PipeFrame::Stream { id, offset, fin: true, data: &data }
                .write_to_end(&mut Writer::new(&mut symbol));
            assert_eq!(symbol.len(), size);
            let mut frames = OwnedFrame::from_symbols([symbol.as_slice()]);
            let mut again = Vec::new();
            assert!(
                frames[0].write_part(size, true, &mut Writer::new(&mut again)),
                "size {size}: data left over"
            );
            assert_eq!(again, symbol, "size {size}");
            // Room short of the symbol's end: the length form, and what does not fit stays.
            let mut frames = OwnedFrame::from_symbols([symbol.as_slice()]);
            let mut short = Vec::new();
            assert!(!frames[0].write_part(size, false, &mut Writer::new(&mut short)));
            assert_eq!(short.len(), size);
            short.resize(size + 10, 0);
            let mut got = 0;
            parse_symbol(&short, |f| {
                let PipeFrame::Stream { fin, data: d, .. } = f else { panic!("a stream frame") };
                assert!(!fin && d.iter().all(|&b| b == 9));
                got += d.len();
                Ok(())
            })
            .unwrap();
            let OwnedFrame::Stream { data: rest, fin: true, .. } = &frames[0] else { panic!("the rest") };
            assert_eq!(got + rest.len(), data.len(), "size {size}");
        }
    }

    #[test]
    fn oversized_chunks_and_straddling_frames_are_refused() {
        let mut pipe = Vec::new();
        let mut w = Writer::new(&mut pipe);
        w.varint(STREAM);
        w.varint(0);
        w.varint(0);
        w.varint(MAX_CHUNK as u64 + 1);
        let err = parse_symbol(&pipe, |_| Ok(())).unwrap_err();
        assert_eq!(err, WireError::OutOfRange("stream chunk"));
        // A frame cut short by the symbol's end.
        let mut symbol = Vec::new();
        PipeFrame::Stream { id: 0, offset: 0, fin: false, data: &[1; 100] }
            .write(&mut Writer::new(&mut symbol));
        symbol.truncate(50);
        assert!(matches!(parse_symbol(&symbol, |_| Ok(())), Err(WireError::Truncated { .. })));
    }
}
