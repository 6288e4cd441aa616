//! RaptorQ through the public API: recovery from any large-enough set of symbols, the systematic
//! fast path, hostile input, and sealing.

use braid_fec::header::{Coefficients, MAX_ESI};
use braid_fec::{CodeFamily, CodecConfig, CodecError, Decoder, Encoder, HeaderError, Received, SymbolId};
use proptest::prelude::*;

/// SplitMix64: deterministic test data from a proptest-chosen seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

fn rq_config(symbol_size: usize, max_block_len: usize) -> CodecConfig {
    CodecConfig { symbol_size, max_block_len, ..CodecConfig::new(CodeFamily::RaptorQ) }
}

/// A symbol as it would cross the wire.
#[derive(Debug, Clone)]
struct Symbol {
    id: SymbolId<'static>,
    payload: Vec<u8>,
}

fn owned(id: SymbolId<'_>) -> SymbolId<'static> {
    match id {
        SymbolId::Source { index } => SymbolId::Source { index },
        SymbolId::RaptorQ { source_count, esi } => SymbolId::RaptorQ { source_count, esi },
        other => panic!("a RaptorQ encoder produced {other:?}"),
    }
}

/// Encodes `sources` and returns the source symbols followed by `repairs` repair symbols.
fn encode(config: &CodecConfig, sources: &[Vec<u8>], repairs: usize) -> (Vec<Symbol>, Vec<Symbol>) {
    let mut encoder = config.encoder(0).unwrap();
    let mut source_symbols = Vec::new();
    for (i, data) in sources.iter().enumerate() {
        let id = encoder.push_source(data).unwrap();
        assert_eq!(id, SymbolId::Source { index: i as u16 });
        source_symbols.push(Symbol { id, payload: data.clone() });
    }
    let k = sources.len();
    let mut repair_symbols = Vec::new();
    let mut out = vec![0u8; config.symbol_size];
    for n in 0..repairs {
        let id = owned(encoder.next_repair(&mut out).unwrap().expect("a repair"));
        assert_eq!(id, SymbolId::RaptorQ { source_count: k as u16, esi: (k + n) as u32 });
        repair_symbols.push(Symbol { id, payload: out.clone() });
    }
    (source_symbols, repair_symbols)
}

/// What an `Err` must not change.
fn snapshot(decoder: &impl Decoder) -> (Option<usize>, usize, usize, bool) {
    (decoder.source_count(), decoder.rank(), decoder.needed(), decoder.is_complete())
}

fn drain_recovered(decoder: &mut impl Decoder) -> Vec<u16> {
    std::iter::from_fn(|| decoder.poll_recovered()).collect()
}

/// Every source is known and equals the original.
fn assert_block(decoder: &impl Decoder, sources: &[Vec<u8>]) {
    assert!(decoder.is_complete());
    assert_eq!(decoder.needed(), 0);
    assert_eq!(decoder.rank(), sources.len());
    for (i, data) in sources.iter().enumerate() {
        assert_eq!(decoder.source(i as u16), Some(&data[..]), "source {i}");
    }
}

/// A block of `k` random symbols of `symbol_size` bytes.
fn random_block(rng: &mut Rng, k: usize, symbol_size: usize) -> Vec<Vec<u8>> {
    (0..k).map(|_| rng.bytes(symbol_size)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any subset of the sources plus repairs, `k + extra` symbols in all, in any order: with
    /// `extra ≥ 2` the block is recovered exactly; with fewer, at most two more repairs finish it.
    #[test]
    fn recovers_from_any_subset_plus_repairs(
        seed in any::<u64>(),
        k in 1usize..=40,
        symbol_size in 16usize..=64,
        extra in 0usize..=4,
        length_known in any::<bool>(),
    ) {
        let mut rng = Rng(seed);
        let config = rq_config(symbol_size, 64);
        let sources = random_block(&mut rng, k, symbol_size);
        let kept_sources = rng.below(k + 1);
        let repairs = k + extra - kept_sources;
        // Two spare repairs in case fewer than k + 2 symbols were not enough.
        let (source_symbols, mut repair_symbols) = encode(&config, &sources, repairs + 2);
        let spare: Vec<Symbol> = repair_symbols.split_off(repairs);

        let mut chosen: Vec<usize> = (0..k).collect();
        rng.shuffle(&mut chosen);
        chosen.truncate(kept_sources);
        let mut symbols: Vec<Symbol> = chosen.iter().map(|&i| source_symbols[i].clone()).collect();
        symbols.extend(repair_symbols);
        rng.shuffle(&mut symbols);

        let mut decoder = config.decoder(length_known.then_some(k)).unwrap();
        let mut received_sources = vec![false; k];
        let mut fed = 0;
        for symbol in symbols.iter().chain(&spare) {
            if decoder.is_complete() {
                // Once complete, everything is redundant.
                prop_assert_eq!(decoder.receive(&symbol.id, &symbol.payload), Ok(Received::Redundant));
                continue;
            }
            prop_assert!(decoder.needed() >= 1);
            match decoder.receive(&symbol.id, &symbol.payload) {
                Ok(Received::Innovative) => {
                    fed += 1;
                    if let SymbolId::Source { index } = symbol.id {
                        received_sources[usize::from(index)] = true;
                    }
                }
                // A repair that only reveals the length of a block whose sources all arrived.
                Ok(Received::Redundant) => {
                    prop_assert!(decoder.is_complete() && !symbol.id.is_source() && !length_known);
                }
                Err(e) => prop_assert!(false, "{:?} refused: {}", symbol.id, e),
            }
            prop_assert!(decoder.is_complete() || decoder.needed() >= 1);
            if fed >= k + 2 {
                prop_assert!(decoder.is_complete(), "not complete after {} symbols (k = {})", fed, k);
            }
        }
        prop_assert!(decoder.is_complete());
        prop_assert!(fed >= k, "complete after only {} symbols (k = {})", fed, k);
        assert_block(&decoder, &sources);

        // Exactly the sources not received as is are reported, each once.
        let mut recovered = drain_recovered(&mut decoder);
        recovered.sort_unstable();
        let expected: Vec<u16> = (0..k).filter(|&i| !received_sources[i]).map(|i| i as u16).collect();
        prop_assert_eq!(recovered, expected);
        prop_assert_eq!(decoder.poll_recovered(), None);
    }

    /// All sources and no repair: complete without decoding, nothing recovered.
    #[test]
    fn all_sources_need_no_decoding(
        seed in any::<u64>(),
        k in 1usize..=40,
        symbol_size in 16usize..=64,
        length_known in any::<bool>(),
    ) {
        let mut rng = Rng(seed);
        let config = rq_config(symbol_size, 64);
        let sources = random_block(&mut rng, k, symbol_size);
        let (mut symbols, _) = encode(&config, &sources, 0);
        rng.shuffle(&mut symbols);
        let mut decoder = config.decoder(length_known.then_some(k)).unwrap();
        for symbol in &symbols {
            prop_assert_eq!(decoder.receive(&symbol.id, &symbol.payload), Ok(Received::Innovative));
        }
        if !length_known {
            // The length cannot be known from sources alone.
            prop_assert!(!decoder.is_complete());
            prop_assert_eq!(decoder.source_count(), None);
            prop_assert!(decoder.needed() >= 1);
            decoder.set_source_count(k).unwrap();
        }
        assert_block(&decoder, &sources);
        prop_assert_eq!(decoder.poll_recovered(), None);
    }

    /// Rejected and redundant symbols mixed into a real stream change nothing: each is an `Err`
    /// (leaving the decoder as it was) or `Redundant`, and the block still decodes exactly.
    #[test]
    fn hostile_symbols_are_refused_and_decoding_still_works(
        seed in any::<u64>(),
        k in 2usize..=40,
        symbol_size in 16usize..=48,
        length_known in any::<bool>(),
    ) {
        let mut rng = Rng(seed);
        let config = rq_config(symbol_size, 64);
        let sources = random_block(&mut rng, k, symbol_size);
        let (source_symbols, repair_symbols) = encode(&config, &sources, k + 2);
        let mut symbols: Vec<Symbol> = source_symbols.iter().step_by(2).cloned().collect();
        symbols.extend(repair_symbols.into_iter().take(k + 2 - symbols.len()));
        rng.shuffle(&mut symbols);

        let mut decoder = config.decoder(length_known.then_some(k)).unwrap();
        let mut accepted: Vec<Symbol> = Vec::new();
        let mut received_sources = 0;
        for symbol in &symbols {
            let complete_before = decoder.is_complete();
            prop_assert!(decoder.receive(&symbol.id, &symbol.payload).is_ok());
            if symbol.id.is_source() && !complete_before {
                received_sources += 1;
            }
            accepted.push(symbol.clone());
            let k16 = k as u16;
            let garbage = rng.bytes(symbol_size);
            let mut hostile: Vec<(SymbolId<'static>, Vec<u8>)> = vec![
                // Wrong lengths.
                (symbol.id, rng.bytes(symbol_size - 1)),
                (symbol.id, rng.bytes(symbol_size + 1)),
                (symbol.id, Vec::new()),
                // Malformed or conflicting repairs.
                (SymbolId::RaptorQ { source_count: k16, esi: rng.below(k) as u32 }, garbage.clone()),
                (SymbolId::RaptorQ { source_count: 0, esi: 5 }, garbage.clone()),
                (
                    SymbolId::RaptorQ { source_count: k16, esi: MAX_ESI + 1 + rng.below(1000) as u32 },
                    garbage.clone(),
                ),
                (SymbolId::RaptorQ { source_count: 65, esi: 100 }, garbage.clone()),
                (SymbolId::RaptorQ { source_count: u16::MAX, esi: MAX_ESI }, garbage.clone()),
                // Sources beyond the configured maximum.
                (SymbolId::Source { index: 64 + rng.below(1000) as u16 }, garbage.clone()),
                (SymbolId::Source { index: u16::MAX }, garbage.clone()),
                // Other families.
                (SymbolId::XorParity { first: 0, stride: 1, count: 2 }, garbage.clone()),
                (SymbolId::Rlnc { span: k16, coefficients: Coefficients::Seed(7) }, garbage.clone()),
                (SymbolId::Rlnc { span: 1, coefficients: Coefficients::Explicit(&[1]) }, garbage.clone()),
                // Duplicates of what was accepted, with garbage contents.
                (accepted[rng.below(accepted.len())].id, garbage.clone()),
                (symbol.id, garbage.clone()),
            ];
            // Until the length is known, a source beyond the block or a repair claiming another
            // length cannot be told from a genuine one; afterwards they conflict.
            if decoder.source_count().is_some() {
                hostile.extend([
                    (SymbolId::RaptorQ { source_count: k16 + 1, esi: 100 }, garbage.clone()),
                    (SymbolId::RaptorQ { source_count: k16 - 1, esi: 100 }, garbage.clone()),
                    (SymbolId::Source { index: k16 + rng.below(100) as u16 }, garbage),
                ]);
            }
            for (id, payload) in hostile {
                let before = snapshot(&decoder);
                match decoder.receive(&id, &payload) {
                    Err(_) => prop_assert_eq!(snapshot(&decoder), before, "{:?} changed the decoder", id),
                    Ok(Received::Redundant) => {}
                    Ok(Received::Innovative) => prop_assert!(false, "{:?} accepted as innovative", id),
                }
            }
        }
        prop_assert!(decoder.is_complete(), "k + 2 symbols did not decode (k = {})", k);
        assert_block(&decoder, &sources);
        let recovered = drain_recovered(&mut decoder);
        prop_assert_eq!(recovered.len(), k - received_sources);
        // After completion every valid symbol is redundant, even with garbage contents.
        for symbol in source_symbols.iter().take(3) {
            prop_assert_eq!(decoder.receive(&symbol.id, &rng.bytes(symbol_size)), Ok(Received::Redundant));
        }
        let late = SymbolId::RaptorQ { source_count: k as u16, esi: 5000 };
        prop_assert_eq!(decoder.receive(&late, &rng.bytes(symbol_size)), Ok(Received::Redundant));
        assert_block(&decoder, &sources);
    }

    /// Arbitrary headers and payloads, valid or not: never a panic, an `Err` never changes the
    /// decoder, and whatever it ends up holding is consistent.
    #[test]
    fn random_input_never_panics(
        seed in any::<u64>(),
        k_hint in 1u16..=24,
        count in 0usize..=80,
        symbol_size in 16usize..=32,
    ) {
        let mut rng = Rng(seed);
        let config = rq_config(symbol_size, 24);
        let mut decoder = config.decoder(None).unwrap();
        let mut recovered = Vec::new();
        for _ in 0..count {
            let small = |rng: &mut Rng| -> u16 {
                match rng.below(4) {
                    0 => k_hint,
                    1 => rng.below(usize::from(k_hint) + 2) as u16,
                    2 => rng.below(40) as u16,
                    _ => rng.next() as u16,
                }
            };
            let id = match rng.below(5) {
                0 | 1 => SymbolId::Source { index: small(&mut rng) },
                2 | 3 => SymbolId::RaptorQ {
                    source_count: small(&mut rng),
                    esi: match rng.below(3) {
                        0 => rng.below(64) as u32,
                        1 => rng.below(1 << 24) as u32,
                        _ => rng.next() as u32,
                    },
                },
                _ => SymbolId::XorParity { first: 0, stride: 1, count: small(&mut rng).max(1) },
            };
            let len = if rng.below(8) == 0 { rng.below(2 * symbol_size) } else { symbol_size };
            let payload = rng.bytes(len);
            let before = snapshot(&decoder);
            if decoder.receive(&id, &payload).is_err() {
                prop_assert_eq!(snapshot(&decoder), before);
            }
            if rng.below(16) == 0 {
                let before = snapshot(&decoder);
                if decoder.set_source_count(usize::from(small(&mut rng))).is_err() {
                    prop_assert_eq!(snapshot(&decoder), before);
                }
            }
            recovered.extend(drain_recovered(&mut decoder));
            prop_assert_eq!(decoder.is_complete(), decoder.needed() == 0);
        }
        let mut unique = recovered.clone();
        unique.sort_unstable();
        unique.dedup();
        prop_assert_eq!(unique.len(), recovered.len(), "an index was reported twice");
        if decoder.is_complete() {
            let k = decoder.source_count().unwrap();
            prop_assert_eq!(decoder.rank(), k);
            for i in 0..k {
                prop_assert_eq!(decoder.source(i as u16).map(<[u8]>::len), Some(symbol_size));
            }
            prop_assert!(unique.iter().all(|&i| usize::from(i) < k));
        }
    }
}

#[test]
fn hand_built_bad_repairs_are_errors() {
    let config = rq_config(32, 64);
    let mut decoder = config.decoder(None).unwrap();
    let payload = [0u8; 32];
    let esi_error = Err(CodecError::Header(HeaderError::OutOfRange { field: "esi" }));
    assert_eq!(decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: 3 }, &payload), esi_error);
    assert_eq!(decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: 9 }, &payload), esi_error);
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: MAX_ESI + 1 }, &payload),
        esi_error
    );
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 0, esi: 3 }, &payload),
        Err(CodecError::Header(HeaderError::OutOfRange { field: "k" }))
    );
    // Longer than the configured maximum.
    assert!(matches!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 65, esi: 100 }, &payload),
        Err(CodecError::IndexOutOfRange { .. })
    ));
    assert_eq!(decoder.source_count(), None);
    assert_eq!(decoder.rank(), 0);

    // The first valid repair fixes the length; a conflicting one is refused.
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: 10 }, &payload),
        Ok(Received::Innovative)
    );
    assert_eq!(decoder.source_count(), Some(10));
    assert!(matches!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 11, esi: 11 }, &payload),
        Err(CodecError::Inconsistent { .. })
    ));
    assert!(decoder.set_source_count(12).is_err());
    assert_eq!(decoder.rank(), 1);
    assert_eq!(decoder.needed(), 9);
    // A repair at the very top of the ESI space is fine.
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: MAX_ESI }, &payload),
        Ok(Received::Innovative)
    );
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 10, esi: MAX_ESI }, &payload),
        Ok(Received::Redundant)
    );
    assert!(matches!(
        decoder.receive(&SymbolId::Source { index: 10 }, &payload),
        Err(CodecError::IndexOutOfRange { index: 10, limit: 10 })
    ));
}

#[test]
fn sources_beyond_a_later_length_conflict() {
    let config = rq_config(16, 64);
    let mut decoder = config.decoder(None).unwrap();
    let payload = [1u8; 16];
    assert_eq!(decoder.receive(&SymbolId::Source { index: 30 }, &payload), Ok(Received::Innovative));
    assert_eq!(decoder.needed(), 30);
    assert!(matches!(
        decoder.receive(&SymbolId::Source { index: 64 }, &payload),
        Err(CodecError::IndexOutOfRange { .. })
    ));
    let before = snapshot(&decoder);
    assert!(matches!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 20, esi: 25 }, &payload),
        Err(CodecError::Inconsistent { .. })
    ));
    assert_eq!(snapshot(&decoder), before);
    assert_eq!(decoder.receive(&SymbolId::Source { index: 30 }, &[2u8; 16]), Ok(Received::Redundant));
    assert_eq!(decoder.source(30), Some(&payload[..]));
}

#[test]
fn other_families_and_lengths_are_refused() {
    let config = rq_config(24, 64);
    let mut decoder = config.decoder(Some(8)).unwrap();
    assert_eq!(
        decoder.receive(&SymbolId::XorParity { first: 0, stride: 1, count: 4 }, &[0; 24]),
        Err(CodecError::WrongFamily { expected: CodeFamily::RaptorQ, got: CodeFamily::Xor })
    );
    assert_eq!(
        decoder.receive(&SymbolId::Rlnc { span: 8, coefficients: Coefficients::Seed(1) }, &[0; 24]),
        Err(CodecError::WrongFamily { expected: CodeFamily::RaptorQ, got: CodeFamily::Rlnc })
    );
    assert_eq!(
        decoder.receive(&SymbolId::Source { index: 0 }, &[0; 23]),
        Err(CodecError::WrongLength { expected: 24, got: 23 })
    );
    assert_eq!(
        decoder.receive(&SymbolId::RaptorQ { source_count: 8, esi: 8 }, &[0; 25]),
        Err(CodecError::WrongLength { expected: 24, got: 25 })
    );
    assert_eq!(snapshot(&decoder), (Some(8), 0, 8, false));
}

#[test]
fn encoder_seals_on_first_repair() {
    let config = rq_config(32, 4);
    let mut encoder = config.encoder(3).unwrap();
    let mut out = [0u8; 32];
    assert_eq!(encoder.next_repair(&mut out), Ok(None));
    assert_eq!(encoder.push_source(&[1; 31]), Err(CodecError::WrongLength { expected: 32, got: 31 }));
    for i in 0..4u8 {
        assert_eq!(encoder.push_source(&[i; 32]), Ok(SymbolId::Source { index: u16::from(i) }));
    }
    assert_eq!(encoder.push_source(&[9; 32]), Err(CodecError::BlockFull { max: 4 }));
    assert_eq!(encoder.source_count(), 4);
    assert_eq!(encoder.source(2), Some(&[2u8; 32][..]));
    assert_eq!(encoder.source(4), None);
    // A wrong-sized output buffer does not seal.
    assert_eq!(encoder.next_repair(&mut [0u8; 16]), Err(CodecError::WrongLength { expected: 32, got: 16 }));

    let config = rq_config(32, 16);
    let mut encoder = config.encoder(0).unwrap();
    for i in 0..3u8 {
        encoder.push_source(&[i; 32]).unwrap();
    }
    assert_eq!(encoder.next_repair(&mut out), Ok(Some(SymbolId::RaptorQ { source_count: 3, esi: 3 })));
    assert_eq!(encoder.push_source(&[7; 32]), Err(CodecError::Sealed));
    assert_eq!(encoder.push_source(&[7; 5]), Err(CodecError::Sealed));
    assert_eq!(encoder.source_count(), 3);
    assert_eq!(encoder.next_repair(&mut out), Ok(Some(SymbolId::RaptorQ { source_count: 3, esi: 4 })));
    assert_eq!(encoder.source(0), Some(&[0u8; 32][..]));
    assert_eq!(encoder.family(), CodeFamily::RaptorQ);
    assert_eq!(encoder.symbol_size(), 32);
}

#[test]
fn repairs_alone_recover_a_large_block() {
    // 100 sources, only repairs reach the decoder (and the encoder makes them in batches).
    let config = rq_config(16, 200);
    let mut rng = Rng(42);
    let sources = random_block(&mut rng, 100, 16);
    let (_, repairs) = encode(&config, &sources, 104);
    let mut decoder = config.decoder(None).unwrap();
    for repair in &repairs {
        if decoder.is_complete() {
            break;
        }
        assert_eq!(decoder.receive(&repair.id, &repair.payload), Ok(Received::Innovative));
    }
    assert_block(&decoder, &sources);
    let mut recovered = drain_recovered(&mut decoder);
    recovered.sort_unstable();
    assert_eq!(recovered, (0..100).collect::<Vec<u16>>());
}

#[test]
fn a_single_symbol_block() {
    let config = rq_config(16, 1);
    let sources = vec![vec![0xAB; 16]];
    let (sources_sent, repairs) = encode(&config, &sources, 3);
    let mut decoder = config.decoder(None).unwrap();
    assert_eq!(decoder.receive(&repairs[1].id, &repairs[1].payload), Ok(Received::Innovative));
    assert_block(&decoder, &sources);
    assert_eq!(drain_recovered(&mut decoder), vec![0]);
    assert_eq!(decoder.receive(&sources_sent[0].id, &sources_sent[0].payload), Ok(Received::Redundant));
}

/// The wrapper's repairs are exactly RFC 6330's (as the `raptorq` crate makes them), across the
/// encoder's batch boundaries, so either end may be another RaptorQ implementation.
#[test]
fn repairs_match_the_raptorq_crate() {
    for k in [1usize, 10, 100, 300] {
        let t = 16;
        let config = rq_config(t, 512);
        let mut rng = Rng(k as u64);
        let sources = random_block(&mut rng, k, t);
        let (_, ours) = encode(&config, &sources, 40);
        let info = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
        let theirs = raptorq::SourceBlockEncoder::new(0, &info, &sources.concat()).repair_packets(0, 40);
        for (ours, theirs) in ours.iter().zip(&theirs) {
            let esi = theirs.payload_id().encoding_symbol_id();
            assert_eq!(ours.id, SymbolId::RaptorQ { source_count: k as u16, esi });
            assert_eq!(ours.payload, theirs.data(), "k = {k}, esi = {esi}");
        }
    }
}

/// Repairs from the very top of the 24-bit ESI space decode like any others.
#[test]
fn decodes_repairs_with_the_largest_esis() {
    let (k, t) = (20usize, 32usize);
    let config = rq_config(t, 64);
    let mut rng = Rng(7);
    let sources = random_block(&mut rng, k, t);
    let info = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
    let count = k as u32 + 4;
    // ESIs MAX_ESI - count + 1 ..= MAX_ESI.
    let start = MAX_ESI + 1 - count - k as u32;
    let repairs = raptorq::SourceBlockEncoder::new(0, &info, &sources.concat()).repair_packets(start, count);
    assert_eq!(repairs.last().unwrap().payload_id().encoding_symbol_id(), MAX_ESI);
    let mut decoder = config.decoder(None).unwrap();
    for packet in &repairs {
        if decoder.is_complete() {
            break;
        }
        let id = SymbolId::RaptorQ { source_count: k as u16, esi: packet.payload_id().encoding_symbol_id() };
        assert_eq!(decoder.receive(&id, packet.data()), Ok(Received::Innovative));
    }
    assert_block(&decoder, &sources);
}
