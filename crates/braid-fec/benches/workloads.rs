//! The codec's benchmark workloads, shared by the criterion bench (`benches/codec.rs`) and the
//! one-shot table (`examples/codec_table.rs`) so both measure exactly the same thing.
//!
//! All with 1280-byte symbols on one core, data in cache (the blocks are ≤ 82 KB).
#![allow(dead_code)]

use std::hint::black_box;

use braid_fec::gf256::Backend;
use braid_fec::{CodeFamily, CodecConfig, Decoder, Encoder, SymbolId};

pub const SYMBOL: usize = 1280;

/// What a workload must achieve.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// Reference only.
    None,
    /// At least this many GB/s of source data.
    MinGbps(f64),
    /// At most this many microseconds per run.
    MaxMicros(f64),
    /// At most this ratio of the named workload's time (measured in the same run).
    MaxRatioTo(&'static str, f64),
}

pub struct Workload {
    pub name: String,
    /// Source bytes processed per run (for GB/s); 0 when throughput is not meaningful.
    pub bytes: usize,
    pub target: Target,
    pub run: Box<dyn FnMut()>,
}

fn data(k: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut s = seed | 1;
    (0..k)
        .map(|_| {
            (0..SYMBOL)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s as u8
                })
                .collect()
        })
        .collect()
}

fn workload(name: impl Into<String>, bytes: usize, target: Target, run: impl FnMut() + 'static) -> Workload {
    Workload { name: name.into(), bytes, target, run: Box::new(run) }
}

/// memcpy of 32 symbols: the physical reference for the kernels' GB/s.
fn memcpy() -> Workload {
    let src = data(32, 1);
    let mut dst = vec![vec![0u8; SYMBOL]; 32];
    workload("memcpy 32×1280 B", 32 * SYMBOL, Target::None, move || {
        for (d, s) in dst.iter_mut().zip(&src) {
            d.copy_from_slice(black_box(s));
        }
        black_box(&dst);
    })
}

/// The GF(2^8) kernels on every backend this CPU has.
fn kernels(backend: Backend, primary: bool) -> Vec<Workload> {
    let name = backend.kind().name();
    let pick = |t: Target| if primary { t } else { Target::None };
    let src = data(64, 2);
    let refs: Vec<Vec<u8>> = src.clone();
    let mut out = vec![0u8; SYMBOL];
    let xor_parity =
        workload(format!("xor parity k=32 [{name}]"), 32 * SYMBOL, pick(Target::MinGbps(40.0)), move || {
            let rest: Vec<&[u8]> = refs[1..32].iter().map(|v| &v[..]).collect();
            out.copy_from_slice(&refs[0]);
            backend.xor_sum(&mut out, &rest);
            black_box(&out);
        });
    let s = src[0].clone();
    let mut d = vec![0u8; SYMBOL];
    let mul_add =
        workload(format!("mul_add 1280 B [{name}]"), SYMBOL, pick(Target::MinGbps(30.0)), move || {
            backend.mul_add(black_box(&mut d), black_box(&s), 0x53);
        });
    let coefs: Vec<u8> = (0..64).map(|i| (i * 7 + 3) as u8 | 1).collect();
    let mut out = vec![0u8; SYMBOL];
    let dot = workload(format!("dot_add k=64 [{name}]"), 64 * SYMBOL, Target::None, move || {
        let refs: Vec<&[u8]> = src.iter().map(|v| &v[..]).collect();
        backend.dot_add(black_box(&mut out), &refs, &coefs);
    });
    vec![xor_parity, mul_add, dot]
}

fn rlnc_config() -> CodecConfig {
    CodecConfig { symbol_size: SYMBOL, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) }
}

fn rlnc_encode() -> Workload {
    let cfg = rlnc_config();
    let mut encoder = cfg.encoder(0).unwrap();
    for s in data(64, 3) {
        encoder.push_source(&s).unwrap();
    }
    let mut out = vec![0u8; SYMBOL];
    workload("rlnc encode k=64, 1 repair", 64 * SYMBOL, Target::MaxMicros(3.0), move || {
        black_box(encoder.next_repair(&mut out).unwrap());
    })
}

type Owned = (SymbolId<'static>, Vec<u8>);

/// Sources and `repairs` seeded repair symbols of a k=64 block.
fn rlnc_symbols(repairs: usize) -> (Vec<Owned>, Vec<Owned>) {
    let cfg = rlnc_config();
    let mut encoder = cfg.encoder(9).unwrap();
    let sources: Vec<Owned> =
        data(64, 4).into_iter().map(|s| (encoder.push_source(&s).unwrap(), s)).collect();
    let mut coded = Vec::new();
    let mut out = vec![0u8; SYMBOL];
    for _ in 0..repairs {
        let id = match encoder.next_repair(&mut out).unwrap().unwrap() {
            SymbolId::Rlnc { span, coefficients: braid_fec::Coefficients::Seed(seed) } => {
                SymbolId::Rlnc { span, coefficients: braid_fec::Coefficients::Seed(seed) }
            }
            other => panic!("{other:?}"),
        };
        coded.push((id, out.clone()));
    }
    (sources, coded)
}

fn rlnc_decode_systematic() -> Workload {
    let cfg = rlnc_config();
    let (sources, coded) = rlnc_symbols(3);
    let lost = [5usize, 30, 61];
    workload("rlnc decode k=64, 3 lost", 0, Target::MaxMicros(10.0), move || {
        let mut d = cfg.decoder(Some(64)).unwrap();
        for (i, (id, s)) in sources.iter().enumerate() {
            if !lost.contains(&i) {
                d.receive(id, s).unwrap();
            }
        }
        for (id, s) in &coded {
            d.receive(id, s).unwrap();
        }
        assert!(d.is_complete());
        black_box(&d);
    })
}

fn rlnc_decode_dense() -> Workload {
    let cfg = rlnc_config();
    let (_, coded) = rlnc_symbols(72);
    workload("rlnc dense decode k=64", 0, Target::MaxMicros(400.0), move || {
        let mut d = cfg.decoder(Some(64)).unwrap();
        for (id, s) in &coded {
            if d.is_complete() {
                break;
            }
            d.receive(id, s).unwrap();
        }
        assert!(d.is_complete());
        black_box(&d);
    })
}

const RQ_K: usize = 64;
const RQ_REPAIRS: usize = 8;

fn raptorq_oti() -> raptorq::ObjectTransmissionInformation {
    raptorq::ObjectTransmissionInformation::new((RQ_K * SYMBOL) as u64, SYMBOL as u16, 1, 1, 1)
}

/// Encode: seal a k=64 block and make 8 repair symbols — through braid-fec, then directly.
fn raptorq_encode() -> Vec<Workload> {
    let cfg =
        CodecConfig { symbol_size: SYMBOL, max_block_len: RQ_K, ..CodecConfig::new(CodeFamily::RaptorQ) };
    let block = data(RQ_K, 5);
    let flat: Vec<u8> = block.concat();
    let mut out = vec![0u8; SYMBOL];
    let wrapped = workload(
        "raptorq encode k=64 +8 [braid-fec]",
        0,
        Target::MaxRatioTo("raptorq encode k=64 +8 [raptorq crate]", 1.10),
        move || {
            let mut e = cfg.encoder(0).unwrap();
            for s in &block {
                e.push_source(s).unwrap();
            }
            for _ in 0..RQ_REPAIRS {
                black_box(e.next_repair(&mut out).unwrap());
            }
        },
    );
    let oti = raptorq_oti();
    let direct = workload("raptorq encode k=64 +8 [raptorq crate]", 0, Target::None, move || {
        let e = raptorq::SourceBlockEncoder::new(0, &oti, &flat);
        black_box(e.repair_packets(0, RQ_REPAIRS as u32));
    });
    vec![direct, wrapped]
}

/// Decode: 56 of 64 sources plus 8 repairs — through braid-fec, then directly.
fn raptorq_decode() -> Vec<Workload> {
    let cfg =
        CodecConfig { symbol_size: SYMBOL, max_block_len: RQ_K, ..CodecConfig::new(CodeFamily::RaptorQ) };
    let block = data(RQ_K, 6);
    let lost = |i: usize| i % 8 == 3;
    let mut e = cfg.encoder(0).unwrap();
    let sources: Vec<Owned> = block.iter().map(|s| (e.push_source(s).unwrap(), s.clone())).collect();
    let mut out = vec![0u8; SYMBOL];
    let mut repairs: Vec<Owned> = Vec::new();
    for _ in 0..RQ_REPAIRS {
        let id = match e.next_repair(&mut out).unwrap().unwrap() {
            SymbolId::RaptorQ { source_count, esi } => SymbolId::RaptorQ { source_count, esi },
            other => panic!("{other:?}"),
        };
        repairs.push((id, out.clone()));
    }
    let packets: Vec<raptorq::EncodingPacket> = sources
        .iter()
        .chain(&repairs)
        .enumerate()
        .filter(|(i, _)| *i >= RQ_K || !lost(*i))
        .map(|(_, (id, s))| {
            let esi = match id {
                SymbolId::Source { index } => u32::from(*index),
                SymbolId::RaptorQ { esi, .. } => *esi,
                _ => unreachable!(),
            };
            raptorq::EncodingPacket::new(raptorq::PayloadId::new(0, esi), s.clone())
        })
        .collect();
    let wrapped = workload(
        "raptorq decode k=64, 8 lost [braid-fec]",
        0,
        Target::MaxRatioTo("raptorq decode k=64, 8 lost [raptorq crate]", 1.10),
        move || {
            let mut d = cfg.decoder(Some(RQ_K)).unwrap();
            for (i, (id, s)) in sources.iter().enumerate() {
                if !lost(i) {
                    d.receive(id, s).unwrap();
                }
            }
            for (id, s) in &repairs {
                d.receive(id, s).unwrap();
            }
            assert!(d.is_complete());
            black_box(&d);
        },
    );
    let oti = raptorq_oti();
    let direct = workload("raptorq decode k=64, 8 lost [raptorq crate]", 0, Target::None, move || {
        let mut d = raptorq::SourceBlockDecoder::new(0, &oti, (RQ_K * SYMBOL) as u64);
        let result = d.decode(packets.iter().cloned());
        assert!(result.is_some());
        black_box(result);
    });
    vec![direct, wrapped]
}

/// Every workload, in table order.
pub fn all() -> Vec<Workload> {
    let mut all = vec![memcpy()];
    let best = Backend::best();
    all.extend(kernels(best, true));
    for backend in Backend::available().into_iter().rev() {
        if backend != best {
            all.extend(kernels(backend, false));
        }
    }
    all.push(rlnc_encode());
    all.push(rlnc_decode_systematic());
    all.push(rlnc_decode_dense());
    all.extend(raptorq_encode());
    all.extend(raptorq_decode());
    all
}
