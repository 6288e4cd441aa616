//! Review tests for the XOR decoder: peeling with stale unknown counts, `needed()` once the
//! length is known, and a differential check of the peeling decoder against a naive one.

use braid_fec::{CodeFamily, CodecConfig, Decoder, Received, SymbolId};

const T: usize = 8;

fn config(max_block_len: usize) -> CodecConfig {
    CodecConfig { symbol_size: T, max_block_len, ..CodecConfig::new(CodeFamily::Xor) }
}

fn data(k: usize) -> Vec<Vec<u8>> {
    (0..k).map(|i| (0..T).map(|b| (i * 29 + b * 13 + 1) as u8).collect()).collect()
}

fn parity(data: &[Vec<u8>], members: impl IntoIterator<Item = usize>) -> Vec<u8> {
    let mut out = vec![0u8; T];
    for m in members {
        for (o, &s) in out.iter_mut().zip(&data[m]) {
            *o ^= s;
        }
    }
    out
}

/// Two held parities with the same unknown members ({0, 1}): Q = s0 ^ s1 and P = s0 ^ s1 ^ s2
/// with s2 known. When s0 arrives, Q recovers s1 while P still counts s1 as unknown; P's count
/// then reaches 1 although no member is unknown any more. This used to panic ("one unknown").
#[test]
fn stale_unknown_count_does_not_panic() {
    let s = data(3);
    for p_first in [false, true] {
        let mut d = config(16).decoder(Some(3)).unwrap();
        d.receive(&SymbolId::Source { index: 2 }, &s[2]).unwrap();
        let q = (SymbolId::XorParity { first: 0, stride: 1, count: 2 }, parity(&s, [0, 1]));
        let p = (SymbolId::XorParity { first: 0, stride: 1, count: 3 }, parity(&s, [0, 1, 2]));
        let order = if p_first { [&p, &q] } else { [&q, &p] };
        for (id, payload) in order {
            assert_eq!(d.receive(id, payload).unwrap(), Received::Innovative);
        }
        assert_eq!(d.receive(&SymbolId::Source { index: 0 }, &s[0]).unwrap(), Received::Innovative);
        assert!(d.is_complete());
        assert_eq!(d.needed(), 0);
        for (i, original) in s.iter().enumerate() {
            assert_eq!(d.source(i as u16).unwrap(), &original[..]);
        }
        assert_eq!(std::iter::from_fn(|| d.poll_recovered()).collect::<Vec<_>>(), vec![1]);
    }
}

/// With the length known, `needed()` is 0 only for a complete block, even when the held
/// parities' count reaches the block length but peeling cannot use them.
#[test]
fn needed_stays_positive_until_complete() {
    let s = data(3);
    let mut d = config(16).decoder(Some(3)).unwrap();
    for members in [vec![0usize, 1], vec![1, 2], vec![0, 1, 2]] {
        let id = SymbolId::XorParity { first: members[0] as u16, stride: 1, count: members.len() as u16 };
        assert_eq!(d.receive(&id, &parity(&s, members)).unwrap(), Received::Innovative);
    }
    assert_eq!(d.rank(), 3);
    assert!(!d.is_complete());
    assert_eq!(d.needed(), 1);
    d.receive(&SymbolId::Source { index: 1 }, &s[1]).unwrap();
    assert!(d.is_complete());
    assert_eq!(d.needed(), 0);
}

mod differential {
    use super::*;
    use braid_fec::{BlockDecoder, CodecError, Coefficients};
    use proptest::prelude::*;

    const MAX: usize = 64;

    #[derive(Debug, Clone)]
    enum Event {
        Source(usize),
        /// first, stride, count (reduced into the block when applied)
        Parity(usize, usize, usize),
        SetCount,
        /// A hand-built symbol the decoder must refuse without changing.
        Bad(u8, u16, u16, u16),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            4 => any::<usize>().prop_map(Event::Source),
            5 => (any::<usize>(), 1usize..=4, 1usize..=6).prop_map(|(f, s, c)| Event::Parity(f, s, c)),
            1 => Just(Event::SetCount),
            2 => (0u8..6, any::<u16>(), any::<u16>(), any::<u16>()).prop_map(|(w, a, b, c)| Event::Bad(w, a, b, c)),
        ]
    }

    type Snapshot = (usize, usize, bool, Option<usize>, usize, Vec<Option<Vec<u8>>>);

    fn snapshot(d: &BlockDecoder) -> Snapshot {
        let BlockDecoder::Xor(x) = d else { unreachable!() };
        (
            d.rank(),
            d.needed(),
            d.is_complete(),
            d.source_count(),
            x.pending_parities(),
            (0..=MAX as u16).map(|i| d.source(i).map(<[u8]>::to_vec)).collect(),
        )
    }

    /// Naive peeling to a fixed point: which sources the received symbols determine by peeling.
    fn closure(k: usize, known: &[bool], parities: &[Vec<usize>]) -> Vec<bool> {
        let mut known = known.to_vec();
        known.resize(k, false);
        loop {
            let mut changed = false;
            for p in parities {
                let unknown: Vec<usize> = p.iter().copied().filter(|&m| !known[m]).collect();
                if unknown.len() == 1 {
                    known[unknown[0]] = true;
                    changed = true;
                }
            }
            if !changed {
                return known;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any mix of sources, parities (overlapping, repeated, before or after their members),
        /// refused symbols and a late `set_source_count`: no panic, an `Err` changes nothing,
        /// every known source is right, each recovered index is reported once, and the decoder
        /// knows exactly what naive peeling of everything accepted determines.
        #[test]
        fn peeling_matches_naive(
            k in 1usize..=12,
            length_known in any::<bool>(),
            events in proptest::collection::vec(event(), 0..40),
        ) {
            let s = data(MAX);
            let mut d = config(MAX).decoder(length_known.then_some(k)).unwrap();
            let mut received = vec![false; k];
            let mut parities: Vec<Vec<usize>> = Vec::new();
            let mut recovered: Vec<u16> = Vec::new();
            for event in events {
                let before = snapshot(&d);
                let result: Result<Received, CodecError> = match event {
                    Event::Source(i) => {
                        let i = i % k;
                        let r = d.receive(&SymbolId::Source { index: i as u16 }, &s[i]);
                        received[i] = true;
                        r
                    }
                    Event::Parity(first, stride, count) => {
                        let first = first % k;
                        let count = count.min((k - 1 - first) / stride + 1);
                        let members: Vec<usize> = (0..count).map(|t| first + t * stride).collect();
                        let id = SymbolId::XorParity { first: first as u16, stride: stride as u16, count: count as u16 };
                        let r = d.receive(&id, &parity(&s, members.iter().copied()));
                        parities.push(members);
                        r
                    }
                    Event::SetCount => {
                        prop_assert!(d.set_source_count(k).is_ok());
                        Ok(Received::Redundant)
                    }
                    Event::Bad(which, a, b, c) => {
                        let limit = d.source_count().unwrap_or(MAX) as u16;
                        let (id, len) = match which {
                            0 => (SymbolId::XorParity { first: a, stride: 0, count: b }, T),
                            1 => (SymbolId::XorParity { first: a, stride: b.max(1), count: 0 }, T),
                            // The last member at or beyond the limit, possibly past 2^16.
                            2 => (SymbolId::XorParity { first: limit.max(a), stride: b.max(1), count: c.max(1) }, T),
                            3 => (SymbolId::XorParity { first: a % limit, stride: b.max(1), count: c.max(2) }, T + 1),
                            4 => (SymbolId::Source { index: limit.max(a) }, T),
                            _ => (SymbolId::Rlnc { span: 1, coefficients: Coefficients::Seed(u32::from(a)) }, T),
                        };
                        let r = d.receive(&id, &vec![0u8; len]);
                        prop_assert!(r.is_err(), "{:?} accepted", id);
                        r
                    }
                };
                if result.is_err() {
                    prop_assert_eq!(snapshot(&d), before);
                    prop_assert_eq!(d.poll_recovered(), None);
                    continue;
                }
                recovered.extend(std::iter::from_fn(|| d.poll_recovered()));
                let expected = closure(k, &received, &parities);
                for i in 0..k {
                    match d.source(i as u16) {
                        Some(got) => {
                            prop_assert!(expected[i], "source {} known but not determined", i);
                            prop_assert_eq!(got, &s[i][..]);
                        }
                        None => prop_assert!(!expected[i], "source {} determined but not known", i),
                    }
                }
                if d.source_count().is_some() {
                    prop_assert_eq!(d.needed() == 0, d.is_complete());
                }
            }
            let mut unique = recovered.clone();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(unique.len(), recovered.len(), "an index was reported twice");
            prop_assert!(recovered.iter().all(|&i| usize::from(i) < k));
        }
    }
}

/// The bound on held parities (one per source) must not drop a parity that recovers a source at
/// once: it is never held. Six parities with two unknowns each fill a block of six; a seventh
/// with a single unknown member (4) then starts a chain that recovers everything.
#[test]
fn full_pending_list_still_takes_a_recovering_parity() {
    let k = 6;
    let s = data(k);
    let mut d = config(k).decoder(Some(k)).unwrap();
    d.receive(&SymbolId::Source { index: 5 }, &s[5]).unwrap();
    for (first, stride) in [(0u16, 1u16), (1, 1), (2, 1), (3, 1), (0, 2), (1, 2)] {
        let members = [usize::from(first), usize::from(first + stride)];
        let id = SymbolId::XorParity { first, stride, count: 2 };
        assert_eq!(d.receive(&id, &parity(&s, members)).unwrap(), Received::Innovative);
    }
    let braid_fec::BlockDecoder::Xor(x) = &d else { unreachable!() };
    assert_eq!(x.pending_parities(), k);
    let id = SymbolId::XorParity { first: 4, stride: 1, count: 2 };
    assert_eq!(d.receive(&id, &parity(&s, [4, 5])).unwrap(), Received::Innovative);
    assert!(d.is_complete());
    for (i, original) in s.iter().enumerate() {
        assert_eq!(d.source(i as u16).unwrap(), &original[..]);
    }
}
