//! Review tests for the RLNC decoder: a differential check against naive Gauss–Jordan with the
//! block length unknown at first, repairs over growing prefixes (spans larger than any earlier
//! one), sources arriving before and after repairs, and refused symbols that must change nothing.

use braid_fec::rlnc::coefficients_from_seed;
use braid_fec::{gf256, BlockDecoder, CodeFamily, CodecConfig, Coefficients, Decoder, Received, SymbolId};
use proptest::prelude::*;

const T: usize = 8;
const MAX: usize = 24;

fn config() -> CodecConfig {
    CodecConfig { symbol_size: T, max_block_len: MAX, ..CodecConfig::new(CodeFamily::Rlnc) }
}

fn data(k: usize, salt: u8) -> Vec<Vec<u8>> {
    (0..k)
        .map(|i| (0..T).map(|b| (i as u8).wrapping_mul(53) ^ (b as u8).wrapping_mul(17) ^ salt).collect())
        .collect()
}

fn combine(data: &[Vec<u8>], row: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; T];
    for (symbol, &c) in data.iter().zip(row) {
        for (o, &s) in out.iter_mut().zip(symbol) {
            *o ^= gf256::mul(c, s);
        }
    }
    out
}

fn rank(rows: &[Vec<u8>], k: usize) -> usize {
    let mut m = rows.to_vec();
    let mut r = 0;
    for col in 0..k {
        let Some(p) = (r..m.len()).find(|&i| m[i][col] != 0) else { continue };
        m.swap(r, p);
        let inv = gf256::inv(m[r][col]).unwrap();
        let pivot: Vec<u8> = m[r].iter().map(|&x| gf256::mul(x, inv)).collect();
        for (i, row) in m.iter_mut().enumerate() {
            let f = row[col];
            if i != r && f != 0 {
                for (x, &y) in row.iter_mut().zip(&pivot) {
                    *x ^= gf256::mul(f, y);
                }
            }
        }
        m[r] = pivot;
        r += 1;
    }
    r
}

fn determined(rows: &[Vec<u8>], k: usize, j: usize) -> bool {
    let mut with = rows.to_vec();
    let mut unit = vec![0u8; k];
    unit[j] = 1;
    with.push(unit);
    rank(&with, k) == rank(rows, k)
}

type Snapshot = (usize, usize, bool, Option<usize>, Vec<Option<Vec<u8>>>);

fn snapshot(d: &BlockDecoder) -> Snapshot {
    (
        d.rank(),
        d.needed(),
        d.is_complete(),
        d.source_count(),
        (0..=MAX as u16).map(|i| d.source(i).map(<[u8]>::to_vec)).collect(),
    )
}

#[derive(Debug, Clone)]
enum Event {
    Source(usize),
    /// span (reduced into 1..=k), seed, or sparse explicit coefficients when `explicit`
    Repair {
        span: usize,
        seed: u32,
        explicit: Option<Vec<u8>>,
    },
    SetCount,
    Bad(u8, u16),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => any::<usize>().prop_map(Event::Source),
        3 => (any::<usize>(), any::<u32>()).prop_map(|(span, seed)| Event::Repair { span, seed, explicit: None }),
        3 => (any::<usize>(), proptest::collection::vec(0u8..4, MAX))
            .prop_map(|(span, c)| Event::Repair { span, seed: 0, explicit: Some(c.iter().map(|&c| [0, 1, 2, 0x8e][c as usize]).collect()) }),
        1 => Just(Event::SetCount),
        2 => (0u8..6, any::<u16>()).prop_map(|(w, a)| Event::Bad(w, a)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn matches_naive_elimination_with_unknown_length(
        k in 1usize..=16,
        length_known in any::<bool>(),
        salt in any::<u8>(),
        events in proptest::collection::vec(event(), 0..48),
    ) {
        let s = data(k, salt);
        let mut d = config().decoder(length_known.then_some(k)).unwrap();
        let mut rows: Vec<Vec<u8>> = Vec::new();
        let mut seen = 0usize;
        let mut recovered = Vec::new();
        for event in events {
            let before = snapshot(&d);
            let rank_before = rank(&rows, k);
            let result = match event {
                Event::Source(i) => {
                    let i = i % k;
                    let mut row = vec![0u8; k];
                    row[i] = 1;
                    rows.push(row);
                    seen = seen.max(i + 1);
                    d.receive(&SymbolId::Source { index: i as u16 }, &s[i])
                }
                Event::Repair { span, seed, explicit } => {
                    let span = span % k + 1;
                    let mut row = vec![0u8; k];
                    let coefficients = match &explicit {
                        Some(c) => {
                            row[..span].copy_from_slice(&c[..span]);
                            Coefficients::Explicit(&c[..span])
                        }
                        None => {
                            coefficients_from_seed(seed, &mut row[..span]);
                            Coefficients::Seed(seed)
                        }
                    };
                    let payload = combine(&s, &row);
                    rows.push(row);
                    seen = seen.max(span);
                    d.receive(&SymbolId::Rlnc { span: span as u16, coefficients }, &payload)
                }
                Event::SetCount => {
                    prop_assert!(d.set_source_count(k).is_ok());
                    Ok(Received::Redundant)
                }
                Event::Bad(which, a) => {
                    let limit = d.source_count().unwrap_or(MAX) as u16;
                    let short = [1u8; 2];
                    let (id, len) = match which {
                        0 => (SymbolId::Rlnc { span: 0, coefficients: Coefficients::Seed(u32::from(a)) }, T),
                        1 => (SymbolId::Rlnc { span: limit.max(a).saturating_add(1), coefficients: Coefficients::Seed(1) }, T),
                        2 => (SymbolId::Rlnc { span: 3, coefficients: Coefficients::Explicit(&short) }, T),
                        3 => (SymbolId::Rlnc { span: 1, coefficients: Coefficients::Seed(1) }, [0, T - 1, T + 1, 2 * T][usize::from(a % 4)]),
                        4 => (SymbolId::Source { index: limit.max(a) }, T),
                        _ => (SymbolId::RaptorQ { source_count: 1, esi: 1 }, T),
                    };
                    let r = d.receive(&id, &vec![0u8; len]);
                    prop_assert!(r.is_err(), "{:?} accepted", id);
                    r
                }
            };
            let Ok(verdict) = result else {
                prop_assert_eq!(snapshot(&d), before);
                prop_assert_eq!(d.poll_recovered(), None);
                continue;
            };
            if matches!(verdict, Received::Innovative) {
                prop_assert_eq!(rank(&rows, k), rank_before + 1);
            }
            let expected_rank = rank(&rows, k);
            prop_assert_eq!(d.rank(), expected_rank);
            let extent = d.source_count().unwrap_or(seen);
            prop_assert_eq!(d.needed(), extent - expected_rank);
            for (j, original) in s.iter().enumerate() {
                let det = determined(&rows, k, j);
                prop_assert_eq!(d.source(j as u16).is_some(), det, "source {}", j);
                if det {
                    prop_assert_eq!(d.source(j as u16).unwrap(), &original[..]);
                }
            }
            prop_assert_eq!(d.is_complete(), d.source_count().is_some() && expected_rank == k);
            recovered.extend(std::iter::from_fn(|| d.poll_recovered()));
        }
        let mut unique = recovered.clone();
        unique.sort_unstable();
        unique.dedup();
        prop_assert_eq!(unique.len(), recovered.len(), "an index was reported twice");
    }
}

/// Every source lost, repairs over ever longer prefixes, the length learned last, then a
/// retransmission of a source that was a pivot: the block decodes exactly, at `MAX` columns.
#[test]
fn full_width_repairs_then_sources() {
    let k = MAX;
    let s = data(k, 7);
    let mut d = config().decoder(None).unwrap();
    for span in 1..=k {
        let mut row = vec![0u8; k];
        coefficients_from_seed(span as u32 * 977, &mut row[..span]);
        let id = SymbolId::Rlnc { span: span as u16, coefficients: Coefficients::Seed(span as u32 * 977) };
        d.receive(&id, &combine(&s, &row)).unwrap();
    }
    d.set_source_count(k).unwrap();
    assert!(d.is_complete(), "rank {}", d.rank());
    for (i, original) in s.iter().enumerate() {
        assert_eq!(d.source(i as u16).unwrap(), &original[..]);
        assert_eq!(d.receive(&SymbolId::Source { index: i as u16 }, original).unwrap(), Received::Redundant);
    }
}
