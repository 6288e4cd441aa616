//! Review tests: hand-built symbol ids with arbitrary field values (including ones the header
//! parser would refuse), arbitrary payload lengths and arbitrary `set_source_count` calls, for
//! every family, with the block length known or not. No panic; an `Err` leaves everything a
//! caller can observe unchanged, source contents included; the decoders' own bounds hold.

use braid_fec::{
    BlockDecoder, CodeFamily, CodecConfig, Coefficients, Decoder, Received, SymbolHeader, SymbolId,
};
use proptest::prelude::*;

const T: usize = 16;
const MAX: usize = 20;

fn config(family: CodeFamily) -> CodecConfig {
    CodecConfig { symbol_size: T, max_block_len: MAX, xor_group_len: 4, ..CodecConfig::new(family) }
}

type Snapshot = (usize, usize, bool, Option<usize>, Vec<Option<Vec<u8>>>);

fn snapshot(d: &BlockDecoder) -> Snapshot {
    (
        d.rank(),
        d.needed(),
        d.is_complete(),
        d.source_count(),
        (0..=MAX as u16 + 1).map(|i| d.source(i).map(<[u8]>::to_vec)).collect(),
    )
}

#[derive(Debug, Clone)]
enum Op {
    Receive { kind: u8, a: u16, b: u16, c: u16, wide: u32, coefficients: Vec<u8>, len: usize, fill: u8 },
    SetCount(usize),
}

/// Field values clustered around the interesting boundaries (0, 1, the block limit, u16::MAX).
fn field() -> impl Strategy<Value = u16> {
    prop_oneof![
        8 => 0u16..=6,
        3 => 0u16..=(MAX as u16 + 2),
        1 => Just(u16::MAX),
        1 => any::<u16>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let receive = (
        0u8..4,
        field(),
        field(),
        field(),
        prop_oneof![any::<u32>(), 0u32..64, Just((1 << 24) - 1), Just(1 << 24)],
        proptest::collection::vec(any::<u8>(), 0..(MAX + 3)),
        prop_oneof![8 => Just(T), 1 => 0usize..(2 * T)],
        any::<u8>(),
    )
        .prop_map(|(kind, a, b, c, wide, coefficients, len, fill)| Op::Receive {
            kind,
            a,
            b,
            c,
            wide,
            coefficients,
            len,
            fill,
        });
    prop_oneof![
        12 => receive,
        1 => prop_oneof![0usize..=(MAX + 2), Just(usize::MAX), any::<usize>()].prop_map(Op::SetCount),
    ]
}

fn run(family: CodeFamily, known: Option<usize>, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut d = config(family).decoder(known).unwrap();
    let mut recovered: Vec<u16> = Vec::new();
    for op in ops {
        let before = snapshot(&d);
        let failed = match op {
            Op::Receive { kind, a, b, c, wide, coefficients, len, fill } => {
                let span = usize::from(*a).min(coefficients.len());
                let id = match kind {
                    0 => SymbolId::Source { index: *a },
                    1 => SymbolId::XorParity { first: *a, stride: *b, count: *c },
                    2 if wide % 2 == 0 => {
                        SymbolId::Rlnc { span: *a, coefficients: Coefficients::Seed(*wide) }
                    }
                    // Explicit coefficients, whose length may or may not match the span.
                    2 => SymbolId::Rlnc {
                        span: if wide % 4 == 1 { span as u16 } else { *a },
                        coefficients: Coefficients::Explicit(&coefficients[..span]),
                    },
                    _ => SymbolId::RaptorQ { source_count: *a, esi: *wide },
                };
                let payload = vec![*fill; *len];
                let result = d.receive(&id, &payload);
                if let Ok(verdict) = result {
                    // Whatever is accepted must also be expressible on the wire.
                    let header = SymbolHeader { block: 0, id };
                    let mut bytes = vec![0u8; header.encoded_len()];
                    prop_assert!(
                        header.write(&mut bytes).is_ok(),
                        "{:?} accepted ({:?}) but not writable",
                        id,
                        verdict
                    );
                    prop_assert_eq!(payload.len(), T);
                }
                result.is_err()
            }
            Op::SetCount(k) => d.set_source_count(*k).is_err(),
        };
        if failed {
            prop_assert_eq!(snapshot(&d), before, "{:?} was refused but changed the decoder", op);
            prop_assert_eq!(d.poll_recovered(), None);
            continue;
        }
        recovered.extend(std::iter::from_fn(|| d.poll_recovered()));
        let limit = d.source_count().unwrap_or(MAX);
        prop_assert!(d.source_count().is_none_or(|k| (1..=MAX).contains(&k)));
        prop_assert!((0..=MAX as u16 + 1)
            .filter(|&i| usize::from(i) >= limit)
            .all(|i| d.source(i).is_none()));
        if d.is_complete() {
            prop_assert_eq!(d.needed(), 0);
            prop_assert_eq!(d.rank(), limit);
        } else if d.source_count().is_some() {
            prop_assert!(d.needed() >= 1, "{}: incomplete but needed() == 0", family);
        }
        match &d {
            BlockDecoder::Xor(x) => prop_assert!(x.pending_parities() <= MAX),
            BlockDecoder::Rlnc(_) => prop_assert!(d.rank() <= limit),
            // Sources plus at most k + 32 repairs.
            BlockDecoder::RaptorQ(_) => prop_assert!(d.rank() <= 2 * limit + 32),
        }
    }
    let mut unique = recovered.clone();
    unique.sort_unstable();
    unique.dedup();
    prop_assert_eq!(unique.len(), recovered.len(), "an index was reported twice");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hand_built_ids_never_panic_and_errors_change_nothing(
        known in prop_oneof![Just(None), (1usize..=MAX).prop_map(Some)],
        ops in proptest::collection::vec(op(), 0..60),
    ) {
        for family in CodeFamily::ALL {
            run(family, known, &ops)?;
        }
    }

    /// Random bytes through the header parser into every decoder.
    #[test]
    fn wire_bytes_never_panic(
        known in prop_oneof![Just(None), (1usize..=MAX).prop_map(Some)],
        packets in proptest::collection::vec((0u8..5, proptest::collection::vec(any::<u8>(), 0..12), any::<u8>()), 0..40),
    ) {
        for family in CodeFamily::ALL {
            let mut d = config(family).decoder(known).unwrap();
            for (kind, header, fill) in &packets {
                // A valid first byte (version 1, one of the kinds) and random fields after it.
                let mut bytes = vec![0x20 | kind];
                bytes.extend_from_slice(header);
                let Ok((h, rest)) = SymbolHeader::parse(&bytes) else { continue };
                let mut payload = rest.to_vec();
                payload.resize(T, *fill);
                let before = snapshot(&d);
                if d.receive(&h.id, &payload).is_err() {
                    prop_assert_eq!(snapshot(&d), before);
                }
                while d.poll_recovered().is_some() {}
            }
        }
    }
}

/// A flood of distinct parities, each with two unknown members, keeps at most `max_block_len`.
#[test]
fn xor_pending_parities_are_bounded() {
    let mut d = config(CodeFamily::Xor).decoder(None).unwrap();
    let mut innovative = 0;
    for stride in 1..MAX as u16 {
        for first in 0..MAX as u16 {
            let id = SymbolId::XorParity { first, stride, count: 2 };
            if first + stride < MAX as u16
                && d.receive(&id, &[first as u8; T]).unwrap() == Received::Innovative
            {
                innovative += 1;
            }
        }
    }
    let BlockDecoder::Xor(x) = &d else { unreachable!() };
    assert_eq!(x.pending_parities(), MAX);
    assert_eq!(innovative, MAX);
}
