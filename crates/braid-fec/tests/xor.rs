//! XOR parity: one loss per group is recovered, two fail cleanly, interleaving spreads bursts.

use braid_fec::{BlockEncoder, CodeFamily, CodecConfig, Decoder, Encoder, Received, SymbolId};
use proptest::prelude::*;

fn config(group_len: usize, interleave: usize) -> CodecConfig {
    CodecConfig {
        symbol_size: 24,
        max_block_len: 1024,
        xor_group_len: group_len,
        xor_interleave: interleave,
        ..CodecConfig::new(CodeFamily::Xor)
    }
}

fn symbol(i: usize, salt: u64) -> Vec<u8> {
    (0..24).map(|b| ((i as u64 * 131 + b as u64 * 7 + salt) % 251) as u8).collect()
}

/// Encodes `n` sources, returning (source packets, parity packets).
type Packet = (SymbolId<'static>, Vec<u8>);
fn encode(cfg: &CodecConfig, n: usize, salt: u64, flush: bool) -> (Vec<Packet>, Vec<Packet>) {
    let mut encoder = cfg.encoder(0).unwrap();
    let mut sources = Vec::new();
    let mut parities = Vec::new();
    let mut out = vec![0u8; cfg.symbol_size];
    for i in 0..n {
        let s = symbol(i, salt);
        sources.push((encoder.push_source(&s).unwrap(), s));
        while let Some(id) = encoder.next_repair(&mut out).unwrap() {
            let SymbolId::XorParity { first, stride, count } = id else { panic!() };
            parities.push((SymbolId::XorParity { first, stride, count }, out.clone()));
        }
    }
    if flush {
        encoder.flush();
        while let Some(id) = encoder.next_repair(&mut out).unwrap() {
            let SymbolId::XorParity { first, stride, count } = id else { panic!() };
            parities.push((SymbolId::XorParity { first, stride, count }, out.clone()));
        }
    }
    (sources, parities)
}

fn members(id: &SymbolId<'_>) -> Vec<usize> {
    let SymbolId::XorParity { first, stride, count } = *id else { panic!() };
    (0..count as usize).map(|t| first as usize + t * stride as usize).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Lose exactly one source in each group (any one): everything is recovered.
    #[test]
    fn one_loss_per_group_is_recovered(l in 1usize..=20, g in 1usize..=4, windows in 1usize..=4, pick in any::<u64>(), parity_first in any::<bool>()) {
        let cfg = config(l, g);
        let n = windows * l * g;
        let (sources, parities) = encode(&cfg, n, pick, false);
        prop_assert_eq!(parities.len(), windows * g);
        let lost: Vec<usize> = parities.iter().enumerate().map(|(i, (id, _))| {
            let m = members(id);
            m[(pick as usize).wrapping_add(i * 7) % m.len()]
        }).collect();
        let mut decoder = cfg.decoder(Some(n)).unwrap();
        if parity_first {
            for (id, p) in &parities { decoder.receive(id, p).unwrap(); }
        }
        for (i, (id, s)) in sources.iter().enumerate() {
            if !lost.contains(&i) { decoder.receive(id, s).unwrap(); }
        }
        if !parity_first {
            for (id, p) in &parities {
                prop_assert_eq!(decoder.receive(id, p).unwrap(), Received::Innovative);
            }
        }
        prop_assert!(decoder.is_complete());
        for (i, (_, s)) in sources.iter().enumerate() {
            prop_assert_eq!(decoder.source(i as u16).unwrap(), &s[..]);
        }
        let mut recovered: Vec<usize> = std::iter::from_fn(|| decoder.poll_recovered()).map(usize::from).collect();
        recovered.sort_unstable();
        let mut expected = lost.clone();
        expected.sort_unstable();
        prop_assert_eq!(recovered, expected);
    }

    /// Two losses in one group: neither is recovered or made up, the decoder says it still
    /// needs a symbol, and retransmitting one of them recovers the other.
    #[test]
    fn two_losses_in_a_group_fail_cleanly(l in 2usize..=20, a in any::<u16>(), b in any::<u16>()) {
        let cfg = config(l, 1);
        let (sources, parities) = encode(&cfg, l, 5, false);
        let a = a as usize % l;
        let b = (a + 1 + b as usize % (l - 1)) % l;
        let mut decoder = cfg.decoder(Some(l)).unwrap();
        for (i, (id, s)) in sources.iter().enumerate() {
            if i != a && i != b { decoder.receive(id, s).unwrap(); }
        }
        prop_assert_eq!(decoder.receive(&parities[0].0, &parities[0].1).unwrap(), Received::Innovative);
        prop_assert!(!decoder.is_complete());
        prop_assert!(decoder.source(a as u16).is_none());
        prop_assert!(decoder.source(b as u16).is_none());
        prop_assert_eq!(decoder.poll_recovered(), None);
        prop_assert_eq!(decoder.needed(), 1);
        // The same parity again is no help.
        prop_assert_eq!(decoder.receive(&parities[0].0, &parities[0].1).unwrap(), Received::Redundant);
        // A retransmission of `a` lets the held parity recover `b`.
        decoder.receive(&sources[a].0, &sources[a].1).unwrap();
        prop_assert!(decoder.is_complete());
        prop_assert_eq!(decoder.poll_recovered(), Some(b as u16));
        prop_assert_eq!(decoder.source(b as u16).unwrap(), &sources[b].1[..]);
    }

    /// Sato et al. §3.4: with g interleaved groups, any burst of up to g consecutive losses
    /// within a window is recovered; a burst of g + 1 is not (two losses land in one group).
    #[test]
    fn interleaving_recovers_bursts_up_to_g(l in 2usize..=12, g in 1usize..=5, start in any::<u16>(), extra in any::<bool>()) {
        let cfg = config(l, g);
        let n = l * g;
        let burst = if extra { g + 1 } else { g };
        prop_assume!(burst <= n);
        let start = start as usize % (n - burst + 1);
        let (sources, parities) = encode(&cfg, n, 11, false);
        let mut decoder = cfg.decoder(Some(n)).unwrap();
        for (i, (id, s)) in sources.iter().enumerate() {
            if !(start..start + burst).contains(&i) { decoder.receive(id, s).unwrap(); }
        }
        for (id, p) in &parities { decoder.receive(id, p).unwrap(); }
        prop_assert_eq!(decoder.is_complete(), !extra);
        for (i, (_, s)) in sources.iter().enumerate() {
            if let Some(got) = decoder.source(i as u16) { prop_assert_eq!(got, &s[..]); }
        }
    }
}

#[test]
fn flush_covers_a_partial_window() {
    // TCP-IR: a parity over whatever was sent since the last one.
    let cfg = config(16, 1);
    let (sources, parities) = encode(&cfg, 5, 1, true);
    assert_eq!(parities.len(), 1);
    assert_eq!(parities[0].0, SymbolId::XorParity { first: 0, stride: 1, count: 5 });
    let mut decoder = cfg.decoder(Some(5)).unwrap();
    for (id, s) in &sources[1..] {
        decoder.receive(id, s).unwrap();
    }
    decoder.receive(&parities[0].0, &parities[0].1).unwrap();
    assert_eq!(decoder.source(0).unwrap(), &sources[0].1[..]);

    // Interleaved partial window: 7 sources, g = 3 → groups of 3, 2, 2.
    let (_, parities) = encode(&config(10, 3), 7, 1, true);
    let ids: Vec<_> = parities.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        vec![
            SymbolId::XorParity { first: 0, stride: 3, count: 3 },
            SymbolId::XorParity { first: 1, stride: 3, count: 2 },
            SymbolId::XorParity { first: 2, stride: 3, count: 2 },
        ]
    );
}

#[test]
fn layout_changes_apply_to_the_next_window() {
    // dFEC's ratio adapts: groups of 4, then groups of 2.
    let cfg = config(4, 1);
    let mut encoder = cfg.encoder(0).unwrap();
    let braid_fec::BlockEncoder::Xor(xor) = &mut encoder else { panic!() };
    let mut out = vec![0u8; 24];
    let mut ids = Vec::new();
    for i in 0..8 {
        if i == 2 {
            xor.set_layout(2, 1).unwrap();
        }
        xor.push_source(&symbol(i, 0)).unwrap();
        while let Some(SymbolId::XorParity { first, stride, count }) = xor.next_repair(&mut out).unwrap() {
            ids.push(SymbolId::XorParity { first, stride, count });
        }
    }
    assert_eq!(
        ids,
        vec![
            SymbolId::XorParity { first: 0, stride: 1, count: 4 },
            SymbolId::XorParity { first: 4, stride: 1, count: 2 },
            SymbolId::XorParity { first: 6, stride: 1, count: 2 },
        ]
    );
    assert!(xor.set_layout(0, 1).is_err());
    assert!(xor.set_layout(4, 17).is_err());
}

#[test]
fn peeling_chains_across_overlapping_parities() {
    // Parity A over {0,1}, parity B over {1,2}; sources 0 lost... lose 1 and 2, keep 0:
    // A recovers 1, then B recovers 2.
    let cfg = config(2, 1);
    let s: Vec<Vec<u8>> = (0..3).map(|i| symbol(i, 3)).collect();
    let xor = |a: &[u8], b: &[u8]| a.iter().zip(b).map(|(x, y)| x ^ y).collect::<Vec<u8>>();
    let mut decoder = cfg.decoder(Some(3)).unwrap();
    let b = SymbolId::XorParity { first: 1, stride: 1, count: 2 };
    let a = SymbolId::XorParity { first: 0, stride: 1, count: 2 };
    assert_eq!(decoder.receive(&b, &xor(&s[1], &s[2])).unwrap(), Received::Innovative);
    assert_eq!(decoder.receive(&a, &xor(&s[0], &s[1])).unwrap(), Received::Innovative);
    assert!(!decoder.is_complete());
    decoder.receive(&SymbolId::Source { index: 0 }, &s[0]).unwrap();
    assert!(decoder.is_complete());
    assert_eq!(decoder.source(2).unwrap(), &s[2][..]);
    let recovered: Vec<u16> = std::iter::from_fn(|| decoder.poll_recovered()).collect();
    assert_eq!(recovered, vec![1, 2]);
}

/// Manual grouping (the transport decides groups at send time): `push_source` and `flush` make
/// no group; `cover` makes interleaved groups over a range, leaving what precedes it bare.
#[test]
fn manual_cover_makes_interleaved_groups_and_skips() {
    let cfg = config(4, 1);
    let BlockEncoder::Xor(mut xor) = cfg.encoder(0).unwrap() else { panic!("xor") };
    xor.set_manual();
    for i in 0..12 {
        xor.push_source(&symbol(i, 12)).unwrap();
    }
    xor.flush();
    assert_eq!(xor.pending_repairs(), 0, "manual: pushing and flushing make no group");
    assert_eq!(xor.cover(0, 7, 3).unwrap(), 3);
    assert_eq!(xor.uncovered_start(), 7);
    // 9..12 covered, 7 and 8 left bare.
    assert_eq!(xor.cover(9, 12, 1).unwrap(), 1);
    assert!(xor.cover(5, 12, 1).is_err(), "behind the window");
    assert!(xor.cover(12, 13, 1).is_err(), "beyond the sources");
    let mut out = vec![0; 24];
    let mut ids = Vec::new();
    while let Some(id) = xor.next_repair(&mut out).unwrap() {
        let SymbolId::XorParity { first, stride, count } = id else { panic!() };
        ids.push(SymbolId::XorParity { first, stride, count });
    }
    assert_eq!(
        ids,
        vec![
            SymbolId::XorParity { first: 0, stride: 3, count: 3 },
            SymbolId::XorParity { first: 1, stride: 3, count: 2 },
            SymbolId::XorParity { first: 2, stride: 3, count: 2 },
            SymbolId::XorParity { first: 9, stride: 1, count: 3 },
        ]
    );
}
