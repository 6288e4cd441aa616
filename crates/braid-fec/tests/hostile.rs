//! Hostile input, every family: a bad symbol is an error or a no-op, never a panic, and an error
//! leaves the decoder as it was.

use braid_fec::{
    CodeFamily, CodecConfig, CodecError, Coefficients, Decoder, Encoder, HeaderError, Received, SymbolHeader,
    SymbolId,
};
use proptest::prelude::*;

const K: usize = 8;
const T: usize = 32;

fn config(family: CodeFamily) -> CodecConfig {
    CodecConfig { symbol_size: T, max_block_len: 16, xor_group_len: 4, ..CodecConfig::new(family) }
}

fn sources() -> Vec<Vec<u8>> {
    (0..K).map(|i| (0..T).map(|b| (i * 37 + b * 11) as u8).collect()).collect()
}

/// A complete set of symbols for a block of K sources: all sources plus a few repairs.
fn symbols(family: CodeFamily) -> Vec<(Vec<u8>, usize)> {
    let cfg = config(family);
    let mut encoder = cfg.encoder(3).unwrap();
    let mut out = Vec::new();
    let mut repair = vec![0u8; T];
    for s in sources() {
        let id = encoder.push_source(&s).unwrap();
        out.push(frame(3, id, &s));
    }
    encoder.flush();
    for _ in 0..3 {
        if let Some(id) = encoder.next_repair(&mut repair).unwrap() {
            out.push(frame(3, id, &repair));
        }
    }
    out.into_iter().map(|f| (f, 0)).collect()
}

fn frame(block: u64, id: SymbolId<'_>, payload: &[u8]) -> Vec<u8> {
    let h = SymbolHeader { block, id };
    let mut v = vec![0u8; h.encoded_len()];
    h.write(&mut v).unwrap();
    v.extend_from_slice(payload);
    v
}

fn snapshot(d: &impl Decoder) -> (usize, usize, bool, Option<usize>) {
    (d.rank(), d.needed(), d.is_complete(), d.source_count())
}

/// Offers a symbol; if it is refused, checks nothing changed.
fn offer(d: &mut impl Decoder, id: &SymbolId<'_>, payload: &[u8]) -> Result<Received, CodecError> {
    let before = snapshot(d);
    let result = d.receive(id, payload);
    if result.is_err() {
        assert_eq!(snapshot(d), before, "a refused symbol changed the decoder");
    }
    result
}

#[test]
fn wrong_length_is_refused() {
    for family in CodeFamily::ALL {
        let mut d = config(family).decoder(Some(K)).unwrap();
        for len in [0, 1, T - 1, T + 1, 10 * T] {
            let err = offer(&mut d, &SymbolId::Source { index: 0 }, &vec![0u8; len]).unwrap_err();
            assert_eq!(err, CodecError::WrongLength { expected: T, got: len }, "{family}");
        }
        let mut e = config(family).encoder(0).unwrap();
        assert!(matches!(e.push_source(&[0u8; T - 1]), Err(CodecError::WrongLength { .. })));
        e.push_source(&[0u8; T]).unwrap();
        assert!(matches!(e.next_repair(&mut [0u8; T + 3]), Err(CodecError::WrongLength { .. })));
    }
}

#[test]
fn out_of_range_indices_are_refused() {
    let payload = [0u8; T];
    for family in CodeFamily::ALL {
        let mut d = config(family).decoder(Some(K)).unwrap();
        let err = offer(&mut d, &SymbolId::Source { index: K as u16 }, &payload).unwrap_err();
        assert!(matches!(err, CodecError::IndexOutOfRange { .. }), "{family}: {err}");
        offer(&mut d, &SymbolId::Source { index: u16::MAX }, &payload).unwrap_err();
        // Unknown length: the configured maximum (16) bounds the index.
        let mut d = config(family).decoder(None).unwrap();
        offer(&mut d, &SymbolId::Source { index: 16 }, &payload).unwrap_err();
        offer(&mut d, &SymbolId::Source { index: 15 }, &payload).unwrap();
        // ...and a length below what was already seen is refused.
        assert!(matches!(d.set_source_count(4), Err(CodecError::Inconsistent { .. })));
        assert!(d.set_source_count(0).is_err());
        assert!(d.set_source_count(17).is_err());
    }
    let mut d = config(CodeFamily::Rlnc).decoder(Some(K)).unwrap();
    let id = SymbolId::Rlnc { span: K as u16 + 1, coefficients: Coefficients::Seed(1) };
    offer(&mut d, &id, &payload).unwrap_err();
    let short = [1u8; 3];
    let id = SymbolId::Rlnc { span: 4, coefficients: Coefficients::Explicit(&short) };
    offer(&mut d, &id, &payload).unwrap_err();
    let id = SymbolId::Rlnc { span: 0, coefficients: Coefficients::Seed(1) };
    offer(&mut d, &id, &payload).unwrap_err();

    let mut d = config(CodeFamily::Xor).decoder(Some(K)).unwrap();
    for id in [
        SymbolId::XorParity { first: 0, stride: 0, count: 2 },
        SymbolId::XorParity { first: 0, stride: 1, count: 0 },
        SymbolId::XorParity { first: 6, stride: 1, count: 3 },
        SymbolId::XorParity { first: 0, stride: u16::MAX, count: u16::MAX },
    ] {
        offer(&mut d, &id, &payload).unwrap_err();
    }
}

#[test]
fn wrong_family_is_refused() {
    let payload = [0u8; T];
    let ids = [
        SymbolId::XorParity { first: 0, stride: 1, count: 2 },
        SymbolId::Rlnc { span: 2, coefficients: Coefficients::Seed(5) },
        SymbolId::RaptorQ { source_count: K as u16, esi: K as u32 },
    ];
    for family in CodeFamily::ALL {
        let mut d = config(family).decoder(Some(K)).unwrap();
        for id in &ids {
            if id.family() != Some(family) {
                let err = offer(&mut d, id, &payload).unwrap_err();
                assert!(matches!(err, CodecError::WrongFamily { .. }), "{family}: {err}");
            }
        }
    }
}

#[test]
fn duplicates_and_finished_blocks_are_no_ops() {
    for family in CodeFamily::ALL {
        let syms = symbols(family);
        let mut d = config(family).decoder(Some(K)).unwrap();
        // Deliver everything twice; the second copy of each must be Redundant.
        for (bytes, _) in &syms {
            let (h, p) = SymbolHeader::parse(bytes).unwrap();
            d.receive(&h.id, p).unwrap();
            assert_eq!(d.receive(&h.id, p).unwrap(), Received::Redundant, "{family}: duplicate {:?}", h.id);
        }
        assert!(d.is_complete(), "{family}");
        assert_eq!(d.needed(), 0);
        // A finished block ignores everything, repairs included.
        for (bytes, _) in &syms {
            let (h, p) = SymbolHeader::parse(bytes).unwrap();
            assert_eq!(d.receive(&h.id, p).unwrap(), Received::Redundant, "{family}");
        }
        for (i, s) in sources().iter().enumerate() {
            assert_eq!(d.source(i as u16).unwrap(), &s[..]);
        }
    }
}

#[test]
fn configuration_errors_say_what_is_wrong() {
    let bad = [
        CodecConfig { symbol_size: 0, ..CodecConfig::default() },
        CodecConfig { max_block_len: 0, ..CodecConfig::default() },
        CodecConfig { max_block_len: 5000, ..CodecConfig::default() },
        CodecConfig { xor_group_len: 0, ..CodecConfig::new(CodeFamily::Xor) },
        CodecConfig { xor_interleave: 99, ..CodecConfig::new(CodeFamily::Xor) },
    ];
    for cfg in bad {
        let err = cfg.decoder(None).err().expect("refused");
        assert!(matches!(err, CodecError::InvalidParameter(_)));
        assert!(!err.to_string().is_empty());
    }
    assert_eq!("RLNC".parse::<CodeFamily>(), Ok(CodeFamily::Rlnc));
    assert!("fountain".parse::<CodeFamily>().unwrap_err().contains("expected one of"));
    assert_eq!(SymbolHeader::parse(&[]), Err(HeaderError::Truncated { needed: 1 }));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random bytes, and valid symbols with corrupted bytes, fed to every family's decoder:
    /// no panic, refusals leave the decoder unchanged, and a valid stream afterwards still
    /// decodes (corrupted payloads under valid headers may poison the block's content, which
    /// is the authentication layer's job to prevent, but never the decoder's integrity).
    #[test]
    fn garbage_never_panics(
        garbage in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..20),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>()), 0..10),
    ) {
        for family in CodeFamily::ALL {
            let mut d = config(family).decoder(None).unwrap();
            for bytes in &garbage {
                if let Ok((h, p)) = SymbolHeader::parse(bytes) {
                    let _ = offer(&mut d, &h.id, p);
                }
            }
            let mut syms = symbols(family);
            for (which, pos, value) in &flips {
                let (bytes, _) = which.get_mut(&mut syms);
                let at = pos.index(bytes.len());
                bytes[at] ^= value;
            }
            for (bytes, _) in &syms {
                if let Ok((h, p)) = SymbolHeader::parse(bytes) {
                    let _ = offer(&mut d, &h.id, p);
                }
            }
            let _ = d.set_source_count(K);
            while d.poll_recovered().is_some() {}
        }
    }
}

/// Repairs that arrive before the sources they cover, again and again: every repair is
/// innovative when it comes, so the decoder holds more repairs over a block's life than the
/// block has columns. (A finding of the `codec` fuzz target: the decoder indexed past its
/// coefficient rows on the (width + 1)-th; it now rebases its rows when they are full.)
#[test]
fn more_repairs_than_the_block_is_long_before_their_sources() {
    for width in [2usize, 3, 8] {
        for explicit in [false, true] {
            let cfg = CodecConfig {
                symbol_size: T,
                max_block_len: width,
                rlnc_explicit_coefficients: explicit,
                ..CodecConfig::new(CodeFamily::Rlnc)
            };
            let sources: Vec<Vec<u8>> =
                (0..width).map(|i| (0..T).map(|b| (i * 53 + b * 3 + width) as u8).collect()).collect();
            let mut encoder = cfg.encoder(1).unwrap();
            let mut decoder = cfg.decoder(None).unwrap();
            let mut repair = vec![0u8; T];
            for (i, s) in sources.iter().enumerate() {
                let id = encoder.push_source(s).unwrap();
                // Two repairs over the sources so far, then the source itself, late.
                for _ in 0..2 {
                    if let Some(rid) = encoder.next_repair(&mut repair).unwrap() {
                        let f = frame(1, rid, &repair);
                        let (h, payload) = parse_frame(&f);
                        decoder.receive(&h, payload).unwrap();
                    }
                }
                let f = frame(1, id, s);
                let (h, payload) = parse_frame(&f);
                decoder.receive(&h, payload).unwrap();
                assert_eq!(decoder.source(i as u16), Some(&s[..]), "width {width}, source {i}");
            }
            // And repairs after the block is known: redundant, never a panic.
            encoder.flush();
            for _ in 0..3 * width {
                if let Some(rid) = encoder.next_repair(&mut repair).unwrap() {
                    let f = frame(1, rid, &repair);
                    let (h, payload) = parse_frame(&f);
                    assert_eq!(decoder.receive(&h, payload).unwrap(), Received::Redundant);
                }
            }
            decoder.set_source_count(width).unwrap();
            assert!(decoder.is_complete());
        }
    }
}

/// The symbol id and payload of a frame written by [`frame`].
fn parse_frame(bytes: &[u8]) -> (SymbolId<'_>, &[u8]) {
    let (h, payload) = SymbolHeader::parse(bytes).unwrap();
    (h.id, payload)
}
