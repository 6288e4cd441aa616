//! RLNC: property tests of the decoder against the encoder and against a naive Gaussian
//! elimination over GF(2^8).

use braid_fec::gf256;
use braid_fec::rlnc::coefficients_from_seed;
use braid_fec::{CodeFamily, CodecConfig, Coefficients, Decoder, Encoder, Received, SymbolHeader, SymbolId};
use proptest::prelude::*;

fn config(symbol_size: usize, max_block_len: usize) -> CodecConfig {
    CodecConfig { symbol_size, max_block_len, ..CodecConfig::new(CodeFamily::Rlnc) }
}

fn block(k: usize, symbol_size: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..k)
        .map(|_| {
            (0..symbol_size)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 56) as u8
                })
                .collect()
        })
        .collect()
}

/// A symbol as it travels: header bytes then payload, so every test also crosses the wire
/// format.
fn wire(block_id: u64, id: SymbolId<'_>, payload: &[u8]) -> Vec<u8> {
    let header = SymbolHeader { block: block_id, id };
    let mut bytes = vec![0u8; header.encoded_len()];
    header.write(&mut bytes).unwrap();
    bytes.extend_from_slice(payload);
    bytes
}

fn deliver(decoder: &mut impl Decoder, bytes: &[u8]) -> Received {
    let (header, payload) = SymbolHeader::parse(bytes).unwrap();
    decoder.receive(&header.id, payload).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Sources lost at random, repairs in any order: the block comes back exactly, each lost
    /// source is reported once, and one repair per loss almost always suffices.
    #[test]
    fn recovers_any_losses(
        k in 1usize..=80,
        symbol_size in 1usize..=96,
        loss in 0.0f64..=1.0,
        seed in any::<u64>(),
        explicit in any::<bool>(),
    ) {
        let cfg = CodecConfig { rlnc_explicit_coefficients: explicit, ..config(symbol_size, 128) };
        let data = block(k, symbol_size, seed);
        let mut encoder = cfg.encoder(7).unwrap();
        let mut packets = Vec::new();
        let mut lost = Vec::new();
        let mut rng = seed;
        for (i, symbol) in data.iter().enumerate() {
            let id = encoder.push_source(symbol).unwrap();
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if ((rng >> 11) as f64 / (1u64 << 53) as f64) < loss {
                lost.push(i as u16);
            } else {
                packets.push(wire(7, id, symbol));
            }
        }
        let mut repair = vec![0u8; symbol_size];
        for _ in 0..lost.len() + 4 {
            let id = encoder.next_repair(&mut repair).unwrap().unwrap();
            packets.push(wire(7, id, &repair));
        }
        // Shuffle deterministically.
        for i in (1..packets.len()).rev() {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            packets.swap(i, (rng >> 33) as usize % (i + 1));
        }
        let mut decoder = cfg.decoder(Some(k)).unwrap();
        let mut innovative = 0;
        for p in &packets {
            let before = decoder.rank();
            match deliver(&mut decoder, p) {
                Received::Innovative => { innovative += 1; prop_assert_eq!(decoder.rank(), before + 1); }
                Received::Redundant => prop_assert_eq!(decoder.rank(), before),
            }
            prop_assert_eq!(decoder.needed(), k - decoder.rank());
        }
        prop_assert!(decoder.is_complete(), "rank {} of {k} after {} repairs for {} losses", decoder.rank(), lost.len() + 4, lost.len());
        prop_assert_eq!(innovative, k);
        for (i, symbol) in data.iter().enumerate() {
            prop_assert_eq!(decoder.source(i as u16).unwrap(), &symbol[..]);
        }
        let mut recovered: Vec<u16> = std::iter::from_fn(|| decoder.poll_recovered()).collect();
        recovered.sort_unstable();
        // Every lost source was recovered; a received source may also have been recovered
        // first, if repairs arrived before it.
        for l in &lost {
            prop_assert!(recovered.contains(l));
        }
        let mut dedup = recovered.clone();
        dedup.dedup();
        prop_assert_eq!(dedup.len(), recovered.len(), "a source was reported twice");
    }

    /// Repairs made while the block is still filling cover only the sources pushed so far.
    #[test]
    fn repairs_over_a_growing_block(k in 2usize..=40, seed in any::<u64>()) {
        let cfg = config(32, 64);
        let data = block(k, 32, seed);
        let mut encoder = cfg.encoder(1).unwrap();
        let mut decoder = cfg.decoder(None).unwrap();
        let mut repair = vec![0u8; 32];
        for (i, symbol) in data.iter().enumerate() {
            encoder.push_source(symbol).unwrap();
            // Every source is lost; one repair follows each push.
            let id = encoder.next_repair(&mut repair).unwrap().unwrap();
            prop_assert!(matches!(id, SymbolId::Rlnc { span, .. } if usize::from(span) == i + 1), "{id:?}");
            prop_assert_eq!(decoder.receive(&id, &repair).unwrap(), Received::Innovative);
        }
        decoder.set_source_count(k).unwrap();
        prop_assert!(decoder.is_complete());
        for (i, symbol) in data.iter().enumerate() {
            prop_assert_eq!(decoder.source(i as u16).unwrap(), &symbol[..]);
        }
    }

    /// Differential: after every symbol, the decoder's rank, its innovative verdict and the set
    /// of sources it has recovered match a naive elimination of the same coefficient rows.
    /// Sparse explicit coefficients make dependent symbols common.
    #[test]
    fn matches_naive_elimination(
        k in 1usize..=24,
        symbols in proptest::collection::vec((any::<bool>(), any::<u16>(), proptest::collection::vec(0u8..4, 24)), 1..60),
        seed in any::<u64>(),
    ) {
        let cfg = config(8, 32);
        let data = block(k, 8, seed);
        let mut decoder = cfg.decoder(Some(k)).unwrap();
        let mut rows: Vec<Vec<u8>> = Vec::new();
        for (is_source, index, coefs) in symbols {
            let (id_coefs, id, row) = if is_source {
                let index = index as usize % k;
                let mut row = vec![0u8; k];
                row[index] = 1;
                (None, SymbolId::Source { index: index as u16 }, row)
            } else {
                // Values 0..4 mapped to {0, 1, 2, 0x53}: many zeros and repeats.
                let row: Vec<u8> = coefs[..k].iter().map(|&c| [0, 1, 2, 0x53][c as usize]).collect();
                (Some(row.clone()), SymbolId::Source { index: 0 }, row)
            };
            let payload = combine(&data, &row);
            let before = naive_rank(&rows, k);
            rows.push(row);
            let after = naive_rank(&rows, k);
            let verdict = match &id_coefs {
                None => decoder.receive(&id, &payload).unwrap(),
                Some(c) => decoder.receive(&SymbolId::Rlnc { span: k as u16, coefficients: Coefficients::Explicit(c) }, &payload).unwrap(),
            };
            prop_assert_eq!(verdict == Received::Innovative, after > before);
            prop_assert_eq!(decoder.rank(), after);
            for (j, original) in data.iter().enumerate() {
                let determined = determined(&rows, k, j);
                prop_assert_eq!(decoder.source(j as u16).is_some(), determined, "source {} determined={}", j, determined);
                if determined {
                    prop_assert_eq!(decoder.source(j as u16).unwrap(), &original[..]);
                }
            }
        }
    }
}

fn combine(data: &[Vec<u8>], row: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; data[0].len()];
    for (symbol, &c) in data.iter().zip(row) {
        for (o, &s) in out.iter_mut().zip(symbol) {
            *o ^= gf256::mul(c, s);
        }
    }
    out
}

/// Textbook Gauss–Jordan over GF(2^8), written independently of the decoder.
fn reduce(rows: &[Vec<u8>], k: usize) -> Vec<Vec<u8>> {
    let mut m: Vec<Vec<u8>> = rows.to_vec();
    let mut rank = 0;
    for col in 0..k {
        let Some(p) = (rank..m.len()).find(|&r| m[r][col] != 0) else { continue };
        m.swap(rank, p);
        let inv = gf256::inv(m[rank][col]).unwrap();
        for x in m[rank].iter_mut() {
            *x = gf256::mul(*x, inv);
        }
        for r in 0..m.len() {
            if r != rank && m[r][col] != 0 {
                let f = m[r][col];
                let pivot = m[rank].clone();
                for (x, &y) in m[r].iter_mut().zip(&pivot) {
                    *x ^= gf256::mul(f, y);
                }
            }
        }
        rank += 1;
    }
    m.truncate(rank);
    m
}

fn naive_rank(rows: &[Vec<u8>], k: usize) -> usize {
    reduce(rows, k).len()
}

/// Is the unit vector e_j in the row space?
fn determined(rows: &[Vec<u8>], k: usize, j: usize) -> bool {
    let mut unit = vec![0u8; k];
    unit[j] = 1;
    let mut with = rows.to_vec();
    with.push(unit);
    naive_rank(&with, k) == naive_rank(rows, k)
}

#[test]
fn dense_decode_of_256_symbols() {
    let k = 256;
    let cfg = config(64, 256);
    let data = block(k, 64, 3);
    let mut encoder = cfg.encoder(0).unwrap();
    for s in &data {
        encoder.push_source(s).unwrap();
    }
    let mut decoder = cfg.decoder(Some(k)).unwrap();
    let mut repair = vec![0u8; 64];
    let mut sent = 0;
    while !decoder.is_complete() {
        let id = encoder.next_repair(&mut repair).unwrap().unwrap();
        decoder.receive(&id, &repair).unwrap();
        sent += 1;
        assert!(sent <= k + 8, "needed more than k + 8 repairs");
    }
    for (i, s) in data.iter().enumerate() {
        assert_eq!(decoder.source(i as u16).unwrap(), &s[..]);
    }
    assert_eq!(std::iter::from_fn(|| decoder.poll_recovered()).count(), k);
}

#[test]
fn seeded_coefficients_match_the_published_generator() {
    // The decoder must use the same coefficients the encoder used: check one repair by hand.
    let cfg = config(16, 8);
    let data = block(5, 16, 9);
    let mut encoder = cfg.encoder(42).unwrap();
    for s in &data {
        encoder.push_source(s).unwrap();
    }
    let mut repair = vec![0u8; 16];
    let id = encoder.next_repair(&mut repair).unwrap().unwrap();
    let SymbolId::Rlnc { span: 5, coefficients: Coefficients::Seed(seed) } = id else { panic!("{id:?}") };
    let mut coefs = [0u8; 5];
    coefficients_from_seed(seed, &mut coefs);
    assert_eq!(repair, combine(&data, &coefs));
}
