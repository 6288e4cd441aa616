//! Every GF(2^8) backend this CPU supports must agree bit for bit with `Backend::SCALAR`, for every
//! kernel, length, alignment, coefficient and source/output count.
//!
//! Buffers are compared whole, including guard bytes around the slice handed to the kernel, so an
//! out-of-bounds vector store shows up as a mismatch.
//!
//! The kernels' speed on every backend: `cargo run --release -p braid-fec --example gf256_throughput`.

use braid_fec::gf256::{self, Backend, BackendKind};
use proptest::prelude::*;

/// Guard bytes on each side of every slice (a multiple of 64, so it keeps the alignment).
const GUARD: usize = 64;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// A `len`-byte slice that starts `misalign` bytes past a 64-byte boundary, with `GUARD` bytes
/// on both sides; slice and guards hold random data.
struct Buf {
    data: Vec<u8>,
    start: usize,
    len: usize,
}

impl Buf {
    fn zeroed(len: usize, misalign: usize) -> Buf {
        assert!(misalign < 64);
        // Up to 63 bytes to reach a 64-byte boundary, then the guard, the misalignment, the
        // slice and the other guard.
        let data = vec![0u8; 63 + GUARD + misalign + len + GUARD];
        let to_boundary = (64 - data.as_ptr() as usize % 64) % 64;
        let start = to_boundary + GUARD + misalign;
        let buf = Buf { data, start, len };
        assert_eq!(buf.misalign(), misalign);
        buf
    }

    fn new(rng: &mut Rng, len: usize, misalign: usize) -> Buf {
        let mut buf = Buf::zeroed(len, misalign);
        let (start, len) = (buf.start, buf.len);
        rng.fill(&mut buf.data[start - GUARD..start + len + GUARD]);
        buf
    }

    fn misalign(&self) -> usize {
        (self.data.as_ptr() as usize + self.start) % 64
    }

    /// The slice with its guard bytes.
    fn guarded(&self) -> &[u8] {
        &self.data[self.start - GUARD..self.start + self.len + GUARD]
    }

    fn slice(&self) -> &[u8] {
        &self.data[self.start..self.start + self.len]
    }

    fn slice_mut(&mut self) -> &mut [u8] {
        &mut self.data[self.start..self.start + self.len]
    }
}

/// A copy at the same misalignment (a derived `Clone` would not keep it).
impl Clone for Buf {
    fn clone(&self) -> Buf {
        let mut copy = Buf::zeroed(self.len, self.misalign());
        let (start, len) = (copy.start, copy.len);
        copy.data[start - GUARD..start + len + GUARD].copy_from_slice(self.guarded());
        copy
    }
}

/// The backends under test: everything but scalar, which is the reference.
fn simd_backends() -> Vec<Backend> {
    Backend::available().into_iter().filter(|b| b.kind() != BackendKind::Scalar).collect()
}

/// One randomly generated kernel invocation: a set of sources and outputs, all of length `len`,
/// each with its own misalignment.
struct Case {
    len: usize,
    srcs: Vec<Buf>,
    dsts: Vec<Buf>,
    /// `coefs[o][i]` for output `o`, source `i`.
    coefs: Vec<Vec<u8>>,
    constant: u8,
}

impl Case {
    fn new(seed: u64, len: usize, misalign: usize, n_src: usize, n_out: usize) -> Case {
        let mut rng = Rng(seed);
        let srcs = (0..n_src).map(|i| Buf::new(&mut rng, len, (misalign + 13 * i) % 64)).collect();
        let dsts = (0..n_out).map(|o| Buf::new(&mut rng, len, (misalign + 29 * o + 7) % 64)).collect();
        let coefs = (0..n_out).map(|_| (0..n_src).map(|_| rng.coefficient()).collect()).collect();
        let constant = rng.coefficient();
        Case { len, srcs, dsts, coefs, constant }
    }

    fn src_slices(&self) -> Vec<&[u8]> {
        self.srcs.iter().map(Buf::slice).collect()
    }

    fn coef_rows(&self) -> Vec<&[u8]> {
        self.coefs.iter().map(Vec::as_slice).collect()
    }

    /// Runs `kernel` on a copy of the outputs with `backend`, returning every output slice with
    /// its guard bytes.
    fn run(&self, backend: Backend, kernel: Kernel) -> Vec<Vec<u8>> {
        let mut dsts = self.dsts.clone();
        let srcs = self.src_slices();
        let c = self.constant;
        match kernel {
            Kernel::MulAdd => backend.mul_add(dsts[0].slice_mut(), srcs[0], c),
            Kernel::MulAssign => backend.mul_assign(dsts[0].slice_mut(), c),
            Kernel::Xor => backend.xor(dsts[0].slice_mut(), srcs[0]),
            Kernel::XorSum => backend.xor_sum(dsts[0].slice_mut(), &srcs),
            Kernel::DotAdd => backend.dot_add(dsts[0].slice_mut(), &srcs, &self.coefs[0]),
            Kernel::DotAddMulti => {
                let mut outs: Vec<&mut [u8]> = dsts.iter_mut().map(Buf::slice_mut).collect();
                backend.dot_add_multi(&mut outs, &srcs, &self.coef_rows());
            }
        }
        dsts.iter().map(|b| b.guarded().to_vec()).collect()
    }

    /// Checks every SIMD backend against scalar for `kernel`.
    fn check(&self, kernel: Kernel) -> Result<(), String> {
        let expected = self.run(Backend::SCALAR, kernel);
        for backend in simd_backends() {
            let got = self.run(backend, kernel);
            for (o, (g, e)) in got.iter().zip(&expected).enumerate() {
                if g != e {
                    let first = g.iter().zip(e).position(|(a, b)| a != b).unwrap();
                    return Err(format!(
                        "{kernel:?} on {}: output {o} differs from scalar at slice byte {} \
                         (got {:#04x}, want {:#04x}); len {}, {} sources, {} outputs, c {}",
                        backend.kind(),
                        first as isize - GUARD as isize,
                        g[first],
                        e[first],
                        self.len,
                        self.srcs.len(),
                        self.dsts.len(),
                        self.constant,
                    ));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Kernel {
    MulAdd,
    MulAssign,
    Xor,
    XorSum,
    DotAdd,
    DotAddMulti,
}

const ALL_KERNELS: [Kernel; 6] =
    [Kernel::MulAdd, Kernel::MulAssign, Kernel::Xor, Kernel::XorSum, Kernel::DotAdd, Kernel::DotAddMulti];

/// 0..=300 plus the symbol sizes the codes use.
fn lengths() -> impl Iterator<Item = usize> {
    (0..=300).chain([1280, 1400])
}

#[test]
#[cfg(target_arch = "x86_64")]
fn available_backends_match_cpu_features() {
    let kinds: Vec<BackendKind> = Backend::available().iter().map(|b| b.kind()).collect();
    assert_eq!(kinds.first(), Some(&BackendKind::Scalar));
    assert!(kinds.windows(2).all(|w| w[0] < w[1]), "not slowest first: {kinds:?}");

    let gfni = is_x86_feature_detected!("gfni");
    let expect = [
        (BackendKind::Ssse3, is_x86_feature_detected!("ssse3")),
        (BackendKind::Avx2, is_x86_feature_detected!("avx2")),
        (BackendKind::Gfni256, gfni && is_x86_feature_detected!("avx2")),
        (
            BackendKind::Gfni512,
            gfni && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw"),
        ),
    ];
    for (kind, cpu_has_it) in expect {
        assert_eq!(kinds.contains(&kind), cpu_has_it, "{kind}: available() disagrees with CPUID");
        assert_eq!(Backend::new(kind).is_some(), cpu_has_it, "{kind}: new() disagrees with CPUID");
    }
    if gfni && is_x86_feature_detected!("avx512bw") {
        assert!(kinds.contains(&BackendKind::Gfni512));
        if std::env::var_os("BRAID_GF_BACKEND").is_none() {
            assert_eq!(Backend::best().kind(), BackendKind::Gfni512);
        }
    }
}

#[test]
fn backend_kind_names_round_trip() {
    for kind in BackendKind::ALL {
        assert_eq!(kind.name().parse::<BackendKind>(), Ok(kind));
    }
    assert!("avx1024".parse::<BackendKind>().is_err());
}

/// Every product `c·x`, for all 65536 pairs, on every backend, against `gf256::mul`.
#[test]
fn full_multiplication_table() {
    let xs: Vec<u8> = (0..=255).collect();
    for backend in Backend::available() {
        for c in 0..=255u8 {
            let mut buf = xs.clone();
            backend.mul_assign(&mut buf, c);
            let mut acc = vec![0u8; 256];
            backend.mul_add(&mut acc, &xs, c);
            for x in 0..=255u8 {
                let want = gf256::mul(c, x);
                assert_eq!(buf[x as usize], want, "{}: mul_assign {c}·{x}", backend.kind());
                assert_eq!(acc[x as usize], want, "{}: mul_add {c}·{x}", backend.kind());
            }
        }
    }
}

/// FIPS-197 §4.2: {57}·{83} = {c1}, {57}·{13} = {fe}, placed at both ends of a vector-sized-plus
/// buffer so the main loop and the tail both see them.
#[test]
fn known_products_on_every_backend() {
    for backend in Backend::available() {
        for len in [2, 17, 64, 100, 1280] {
            let mut buf = vec![0u8; len];
            buf[0] = 0x83;
            buf[len - 1] = 0x13;
            backend.mul_assign(&mut buf, 0x57);
            assert_eq!((buf[0], buf[len - 1]), (0xc1, 0xfe), "{} len {len}", backend.kind());
        }
    }
}

/// Every length in 0..=300, 1280, 1400 with a spread of alignments, coefficients and counts.
#[test]
fn fixed_length_sweep() {
    for len in lengths() {
        let misalign = (len * 7) % 64;
        for (k, kernel) in ALL_KERNELS.into_iter().enumerate() {
            let seed = (len as u64) << 8 | k as u64;
            let n_src = match kernel {
                Kernel::MulAdd | Kernel::Xor => 1,
                Kernel::MulAssign => 0,
                _ => len % 9,
            };
            let n_out = if matches!(kernel, Kernel::DotAddMulti) { 1 + len % 6 } else { 1 };
            let case = Case::new(seed, len, misalign, n_src, n_out);
            if let Err(e) = case.check(kernel) {
                panic!("{e}");
            }
        }
    }
}

/// `mul_add` and `mul_assign` with each of the special constants, every length.
#[test]
fn fixed_constants() {
    for c in [0u8, 1, 2, 0x1d, 0x80, 255] {
        for len in lengths().step_by(7).chain([1280, 1400]) {
            for kernel in [Kernel::MulAdd, Kernel::MulAssign] {
                let mut case = Case::new(len as u64 ^ 0xc0ffee, len, len % 64, 1, 1);
                case.constant = c;
                if let Err(e) = case.check(kernel) {
                    panic!("{e}");
                }
            }
        }
    }
}

/// All-zero and all-one coefficient rows, and the largest source counts, on full-size symbols.
#[test]
fn fixed_dot_extremes() {
    for len in [63, 64, 65, 255, 256, 257, 1280, 1400] {
        for n_src in [0, 1, 4, 5, 32, 64, 70] {
            for fill in [Some(0u8), Some(1), Some(255), None] {
                let mut case = Case::new(n_src as u64 * 1000 + len as u64, len, 1, n_src, 6);
                if let Some(v) = fill {
                    case.coefs.iter_mut().for_each(|row| row.fill(v));
                }
                for kernel in [Kernel::XorSum, Kernel::DotAdd, Kernel::DotAddMulti] {
                    if let Err(e) = case.check(kernel) {
                        panic!("{e}");
                    }
                }
            }
        }
    }
}

fn any_len() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..=300, 1 => Just(1280usize), 1 => Just(1400usize)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_mul_add(seed: u64, len in any_len(), misalign in 0usize..64) {
        let case = Case::new(seed, len, misalign, 1, 1);
        prop_assert_eq!(case.check(Kernel::MulAdd), Ok(()));
    }

    #[test]
    fn prop_mul_assign(seed: u64, len in any_len(), misalign in 0usize..64) {
        let case = Case::new(seed, len, misalign, 0, 1);
        prop_assert_eq!(case.check(Kernel::MulAssign), Ok(()));
    }

    #[test]
    fn prop_xor(seed: u64, len in any_len(), misalign in 0usize..64) {
        let case = Case::new(seed, len, misalign, 1, 1);
        prop_assert_eq!(case.check(Kernel::Xor), Ok(()));
    }

    #[test]
    fn prop_xor_sum(seed: u64, len in any_len(), misalign in 0usize..64, n_src in 0usize..=70) {
        let case = Case::new(seed, len, misalign, n_src, 1);
        prop_assert_eq!(case.check(Kernel::XorSum), Ok(()));
    }

    #[test]
    fn prop_dot_add(seed: u64, len in any_len(), misalign in 0usize..64, n_src in 0usize..=70) {
        let case = Case::new(seed, len, misalign, n_src, 1);
        prop_assert_eq!(case.check(Kernel::DotAdd), Ok(()));
    }

    #[test]
    fn prop_dot_add_multi(
        seed: u64,
        len in any_len(),
        misalign in 0usize..64,
        n_src in 0usize..=70,
        n_out in 1usize..=6,
    ) {
        let case = Case::new(seed, len, misalign, n_src, n_out);
        prop_assert_eq!(case.check(Kernel::DotAddMulti), Ok(()));
    }
}
