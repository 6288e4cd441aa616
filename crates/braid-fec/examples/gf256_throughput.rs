//! The GF(2^8) kernels' speed on every backend this CPU supports, 1280-byte symbols: GB/s of
//! source data and ns per call, best of 5 rounds of 40 ms each.
//! `cargo run --release -p braid-fec --example gf256_throughput`
//!
//! A benchmark, not a test: it asserts nothing. tests/gf256_backends.rs checks that every backend
//! agrees with the scalar one.

use braid_fec::gf256::Backend;

#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

fn main() {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    const SYMBOL: usize = 1280;

    /// Best-of-5 nanoseconds per call of `f`.
    fn time(mut f: impl FnMut()) -> f64 {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let mut iters = 0u64;
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(40) {
                for _ in 0..64 {
                    f();
                }
                iters += 64;
            }
            best = best.min(start.elapsed().as_nanos() as f64 / iters as f64);
        }
        best
    }

    let mut rng = Rng(42);
    let mut sources = vec![vec![0u8; SYMBOL]; 64];
    sources.iter_mut().for_each(|s| rng.fill(s));
    let srcs: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    // Nonzero, non-one coefficients: the multiply path every time.
    let coefs: Vec<Vec<u8>> = (0..6).map(|_| (0..64).map(|_| rng.byte() | 2).collect()).collect();
    let rows: Vec<&[u8]> = coefs.iter().map(Vec::as_slice).collect();
    let mut outs = vec![vec![0u8; SYMBOL]; 6];

    println!(
        "GF(2^8) kernels, {SYMBOL}-byte symbols; GB/s of source data (ns per call); \
         dot_add_multi counts every (output, source) pair"
    );
    for backend in Backend::available() {
        let b = black_box(backend);
        let mut row = Vec::new();
        let mut report = |name: &str, bytes: usize, ns: f64| {
            row.push(format!("{name} {:.1} ({ns:.0} ns)", bytes as f64 / ns));
        };
        let dst = &mut outs[0][..];
        let ns = time(|| b.xor(black_box(&mut *dst), srcs[0]));
        report("xor", SYMBOL, ns);
        let ns = time(|| b.mul_add(black_box(&mut *dst), srcs[0], 0x53));
        report("mul_add", SYMBOL, ns);
        let ns = time(|| b.mul_assign(black_box(&mut *dst), 0x53));
        report("mul_assign", SYMBOL, ns);
        let ns = time(|| b.xor_sum(black_box(&mut *dst), &srcs[..32]));
        report("xor_sum/32", 32 * SYMBOL, ns);
        let ns = time(|| b.xor_sum(black_box(&mut *dst), &srcs));
        report("xor_sum/64", 64 * SYMBOL, ns);
        let ns = time(|| b.dot_add(black_box(&mut *dst), &srcs[..16], &coefs[0][..16]));
        report("dot_add/16", 16 * SYMBOL, ns);
        let ns = time(|| b.dot_add(black_box(&mut *dst), &srcs, &coefs[0]));
        report("dot_add/64", 64 * SYMBOL, ns);
        for n_out in [4, 6] {
            let mut dsts: Vec<&mut [u8]> = outs[..n_out].iter_mut().map(|v| &mut v[..]).collect();
            let ns = time(|| b.dot_add_multi(black_box(&mut dsts), &srcs, &rows[..n_out]));
            report(&format!("dot_add_multi/64x{n_out}"), n_out * 64 * SYMBOL, ns);
        }
        println!("{:>12}: {}", backend.kind().name(), row.join(", "));
    }
}
