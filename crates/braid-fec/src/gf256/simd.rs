//! x86-64 SIMD kernels: split-nibble `pshufb` (SSSE3, AVX2) and `gf2p8mulb` (GFNI on 256- and
//! 512-bit vectors).
//!
//! Every backend module below defines the same small set of vector primitives (`load`, `store`,
//! `load_n`, `store_n`, `vxor`, `mul_prep`, `mul`, ...) and then instantiates the shared kernel
//! bodies with the `kernels!` macro, so all backends run the same loop structure:
//!
//! - slices shorter than one vector go through `load_n` / `store_n` (masked or via a zero-padded
//!   stack buffer);
//! - otherwise, if the length is not a multiple of the vector width, the *last* full vector of the
//!   output is computed first from the original data and stored after the main loop. The bytes it
//!   shares with the main loop's last vector get the same value twice, so no scalar tail is
//!   needed. (`dst` never aliases a source: the borrow checker guarantees it.)
//! - `xor_sum` and `dot_add` walk `dst` once in blocks of 4 vectors, keeping the accumulators in
//!   registers while every source's block is folded in (one coefficient broadcast per source per
//!   block), then single vectors. `dot_add_multi` takes the outputs in groups of up to 4 and
//!   walks them together in blocks of 2 vectors per output, loading each source block once per
//!   group and multiplying it by every output's coefficient.
//!
//! Safety model: the kernels are safe `#[target_feature]` functions, so calling them is `unsafe`
//! only because of the CPU-feature precondition. The public entry points at the bottom check
//! `supported` (std caches the CPUID result) and panic otherwise, which makes them sound for any
//! input. Inside the kernels, the only `unsafe` is in the raw vector loads and stores, each of
//! which takes a slice whose length it checks first. Every other intrinsic is a safe function
//! inside a `#[target_feature]` function that enables its features.

use super::{scalar, BackendKind};

/// Whether this CPU can run `kind`.
pub(super) fn supported(kind: BackendKind) -> bool {
    match kind {
        BackendKind::Scalar => true,
        BackendKind::Ssse3 => is_x86_feature_detected!("ssse3"),
        BackendKind::Avx2 => is_x86_feature_detected!("avx2"),
        BackendKind::Gfni256 => is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2"),
        BackendKind::Gfni512 => {
            is_x86_feature_detected!("gfni")
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
        }
    }
}

/// The kernel bodies shared by every backend. Expanded inside a backend module, where the names
/// `V`, `M`, `W`, `zero`, `load`, `store`, `load_n`, `store_n`, `vxor`, `mul_prep` and `mul` resolve
/// to that backend's primitives. `$features` must be the module's target-feature set.
macro_rules! kernels {
    ($features:literal) => {
        /// Outputs per group in `dot_add_multi`: each source vector is loaded once per group.
        const GROUP: usize = 4;
        /// Vectors per output per step of `dot_add_multi`'s main loop.
        const MULTI_UNROLL: usize = 2;

        /// `dst ^= src`.
        #[target_feature(enable = $features)]
        pub(super) fn xor(dst: &mut [u8], src: &[u8]) {
            assert_eq!(dst.len(), src.len(), "xor: length mismatch");
            let len = dst.len();
            if len < W {
                let v = vxor(load_n(dst), load_n(src));
                store_n(dst, v);
                return;
            }
            let tail = if !len.is_multiple_of(W) {
                Some(vxor(load(&dst[len - W..]), load(&src[len - W..])))
            } else {
                None
            };
            for (d, s) in dst.chunks_exact_mut(W).zip(src.chunks_exact(W)) {
                let v = vxor(load(d), load(s));
                store(d, v);
            }
            if let Some(v) = tail {
                store(&mut dst[len - W..], v);
            }
        }

        /// `dst ^= c·src`.
        #[target_feature(enable = $features)]
        pub(super) fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
            assert_eq!(dst.len(), src.len(), "mul_add: length mismatch");
            match c {
                0 => return,
                1 => return xor(dst, src),
                _ => {}
            }
            let m = mul_prep(c);
            let len = dst.len();
            if len < W {
                let v = vxor(load_n(dst), mul(load_n(src), m));
                store_n(dst, v);
                return;
            }
            let tail = if !len.is_multiple_of(W) {
                Some(vxor(load(&dst[len - W..]), mul(load(&src[len - W..]), m)))
            } else {
                None
            };
            for (d, s) in dst.chunks_exact_mut(W).zip(src.chunks_exact(W)) {
                let v = vxor(load(d), mul(load(s), m));
                store(d, v);
            }
            if let Some(v) = tail {
                store(&mut dst[len - W..], v);
            }
        }

        /// `buf = c·buf`.
        #[target_feature(enable = $features)]
        pub(super) fn mul_assign(buf: &mut [u8], c: u8) {
            match c {
                0 => return buf.fill(0),
                1 => return,
                _ => {}
            }
            let m = mul_prep(c);
            let len = buf.len();
            if len < W {
                let v = mul(load_n(buf), m);
                store_n(buf, v);
                return;
            }
            let tail = if !len.is_multiple_of(W) { Some(mul(load(&buf[len - W..]), m)) } else { None };
            for b in buf.chunks_exact_mut(W) {
                let v = mul(load(b), m);
                store(b, v);
            }
            if let Some(v) = tail {
                store(&mut buf[len - W..], v);
            }
        }

        /// `dst[off..off + W] ^ Σ srcs[i][off..off + W]`, not stored.
        #[target_feature(enable = $features)]
        #[inline]
        fn xor_sum1(dst: &[u8], srcs: &[&[u8]], off: usize) -> V {
            let mut acc = load(&dst[off..]);
            for s in srcs {
                acc = vxor(acc, load(&s[off..]));
            }
            acc
        }

        /// `dst ^= Σ srcs[i]`, one pass over `dst`.
        #[target_feature(enable = $features)]
        pub(super) fn xor_sum(dst: &mut [u8], srcs: &[&[u8]]) {
            let len = dst.len();
            assert!(srcs.iter().all(|s| s.len() == len), "xor_sum: length mismatch");
            if srcs.is_empty() {
                return;
            }
            if len < W {
                let mut acc = load_n(dst);
                for s in srcs {
                    acc = vxor(acc, load_n(s));
                }
                store_n(dst, acc);
                return;
            }
            let tail = if !len.is_multiple_of(W) { Some(xor_sum1(dst, srcs, len - W)) } else { None };
            let mut off = 0;
            while off + 4 * W <= len {
                let d = &mut dst[off..off + 4 * W];
                let (mut a0, mut a1, mut a2, mut a3) =
                    (load(d), load(&d[W..]), load(&d[2 * W..]), load(&d[3 * W..]));
                for s in srcs {
                    let s = &s[off..off + 4 * W];
                    a0 = vxor(a0, load(s));
                    a1 = vxor(a1, load(&s[W..]));
                    a2 = vxor(a2, load(&s[2 * W..]));
                    a3 = vxor(a3, load(&s[3 * W..]));
                }
                store(d, a0);
                store(&mut d[W..], a1);
                store(&mut d[2 * W..], a2);
                store(&mut d[3 * W..], a3);
                off += 4 * W;
            }
            while off + W <= len {
                let v = xor_sum1(dst, srcs, off);
                store(&mut dst[off..], v);
                off += W;
            }
            if let Some(v) = tail {
                store(&mut dst[len - W..], v);
            }
        }

        /// `dst[off..off + W] ^ Σ coefs[i]·srcs[i][off..off + W]`, not stored.
        #[target_feature(enable = $features)]
        #[inline]
        fn dot1(dst: &[u8], srcs: &[&[u8]], coefs: &[u8], off: usize) -> V {
            let mut acc = load(&dst[off..]);
            for (s, &c) in srcs.iter().zip(coefs) {
                match c {
                    0 => {}
                    1 => acc = vxor(acc, load(&s[off..])),
                    _ => acc = vxor(acc, mul(load(&s[off..]), mul_prep(c))),
                }
            }
            acc
        }

        /// `dst ^= Σ coefs[i]·srcs[i]`, one pass over `dst`.
        #[target_feature(enable = $features)]
        pub(super) fn dot_add(dst: &mut [u8], srcs: &[&[u8]], coefs: &[u8]) {
            let len = dst.len();
            assert_eq!(srcs.len(), coefs.len(), "dot_add: one coefficient per source");
            assert!(srcs.iter().all(|s| s.len() == len), "dot_add: length mismatch");
            if srcs.is_empty() {
                return;
            }
            if len < W {
                let mut acc = load_n(dst);
                for (s, &c) in srcs.iter().zip(coefs) {
                    if c != 0 {
                        acc = vxor(acc, mul(load_n(s), mul_prep(c)));
                    }
                }
                store_n(dst, acc);
                return;
            }
            let tail = if !len.is_multiple_of(W) { Some(dot1(dst, srcs, coefs, len - W)) } else { None };
            let mut off = 0;
            while off + 4 * W <= len {
                let d = &mut dst[off..off + 4 * W];
                let (mut a0, mut a1, mut a2, mut a3) =
                    (load(d), load(&d[W..]), load(&d[2 * W..]), load(&d[3 * W..]));
                for (s, &c) in srcs.iter().zip(coefs) {
                    let s = &s[off..off + 4 * W];
                    match c {
                        0 => {}
                        1 => {
                            a0 = vxor(a0, load(s));
                            a1 = vxor(a1, load(&s[W..]));
                            a2 = vxor(a2, load(&s[2 * W..]));
                            a3 = vxor(a3, load(&s[3 * W..]));
                        }
                        _ => {
                            let m = mul_prep(c);
                            a0 = vxor(a0, mul(load(s), m));
                            a1 = vxor(a1, mul(load(&s[W..]), m));
                            a2 = vxor(a2, mul(load(&s[2 * W..]), m));
                            a3 = vxor(a3, mul(load(&s[3 * W..]), m));
                        }
                    }
                }
                store(d, a0);
                store(&mut d[W..], a1);
                store(&mut d[2 * W..], a2);
                store(&mut d[3 * W..], a3);
                off += 4 * W;
            }
            while off + W <= len {
                let v = dot1(dst, srcs, coefs, off);
                store(&mut dst[off..], v);
                off += W;
            }
            if let Some(v) = tail {
                store(&mut dst[len - W..], v);
            }
        }

        /// `dsts[o][off + u·W..][..W] ^ Σ rows[o][i]·srcs[i][off + u·W..][..W]` for the `N`
        /// outputs of a group and `U` consecutive vectors, not stored. Each source vector is loaded
        /// once; sources whose coefficients in this group are all zero are skipped. Otherwise the
        /// multiply is branch-free: `0·x = 0` and `1·x = x` come out of `mul` exactly.
        #[target_feature(enable = $features)]
        #[inline]
        fn multi_step<const N: usize, const U: usize>(
            dsts: &[&mut [u8]; N],
            srcs: &[&[u8]],
            rows: &[&[u8]; N],
            off: usize,
        ) -> [[V; U]; N] {
            let mut acc = [[zero(); U]; N];
            for (a, d) in acc.iter_mut().zip(dsts) {
                let d = &d[off..off + U * W];
                for (u, v) in a.iter_mut().enumerate() {
                    *v = load(&d[u * W..]);
                }
            }
            // Same length as `srcs`, so `row[i]` below needs no bounds check.
            let rows = rows.map(|row| &row[..srcs.len()]);
            for (i, s) in srcs.iter().enumerate() {
                if rows.iter().all(|row| row[i] == 0) {
                    continue;
                }
                let s = &s[off..off + U * W];
                let mut x = [zero(); U];
                for (u, v) in x.iter_mut().enumerate() {
                    *v = load(&s[u * W..]);
                }
                for (a, row) in acc.iter_mut().zip(&rows) {
                    let m = mul_prep(row[i]);
                    for (v, &x) in a.iter_mut().zip(&x) {
                        *v = vxor(*v, mul(x, m));
                    }
                }
            }
            acc
        }

        /// `dot_add_multi` for one group of `N` outputs.
        #[target_feature(enable = $features)]
        fn multi_group<const N: usize>(dsts: &mut [&mut [u8]], srcs: &[&[u8]], rows: &[&[u8]]) {
            let dsts: &mut [&mut [u8]; N] = dsts.try_into().expect("group size");
            let rows: &[&[u8]; N] = rows.try_into().expect("group size");
            let len = dsts[0].len();
            assert!(dsts.iter().all(|d| d.len() == len), "dot_add_multi: length mismatch");
            assert!(srcs.iter().all(|s| s.len() == len), "dot_add_multi: length mismatch");
            assert!(rows.iter().all(|r| r.len() == srcs.len()), "dot_add_multi: row length");
            if srcs.is_empty() {
                return;
            }
            if len < W {
                let mut acc = [zero(); N];
                for (a, d) in acc.iter_mut().zip(dsts.iter()) {
                    *a = load_n(d);
                }
                for (i, s) in srcs.iter().enumerate() {
                    let x = load_n(s);
                    for (a, row) in acc.iter_mut().zip(rows) {
                        *a = vxor(*a, mul(x, mul_prep(row[i])));
                    }
                }
                for (d, a) in dsts.iter_mut().zip(acc) {
                    store_n(d, a);
                }
                return;
            }
            let tail = if !len.is_multiple_of(W) {
                Some(multi_step::<N, 1>(dsts, srcs, rows, len - W))
            } else {
                None
            };
            let mut off = 0;
            while off + MULTI_UNROLL * W <= len {
                let acc = multi_step::<N, MULTI_UNROLL>(dsts, srcs, rows, off);
                for (d, a) in dsts.iter_mut().zip(acc) {
                    let d = &mut d[off..off + MULTI_UNROLL * W];
                    for (u, v) in a.into_iter().enumerate() {
                        store(&mut d[u * W..], v);
                    }
                }
                off += MULTI_UNROLL * W;
            }
            while off + W <= len {
                let acc = multi_step::<N, 1>(dsts, srcs, rows, off);
                for (d, [v]) in dsts.iter_mut().zip(acc) {
                    store(&mut d[off..], v);
                }
                off += W;
            }
            if let Some(acc) = tail {
                for (d, [v]) in dsts.iter_mut().zip(acc) {
                    store(&mut d[len - W..], v);
                }
            }
        }

        /// `dsts[o] ^= Σ coefs[o][i]·srcs[i]`, outputs in groups of up to `GROUP`.
        #[target_feature(enable = $features)]
        pub(super) fn dot_add_multi(dsts: &mut [&mut [u8]], srcs: &[&[u8]], coefs: &[&[u8]]) {
            assert_eq!(dsts.len(), coefs.len(), "dot_add_multi: one coefficient row per output");
            for (group, rows) in dsts.chunks_mut(GROUP).zip(coefs.chunks(GROUP)) {
                match group.len() {
                    1 => dot_add(group[0], srcs, rows[0]),
                    2 => multi_group::<2>(group, srcs, rows),
                    3 => multi_group::<3>(group, srcs, rows),
                    _ => multi_group::<GROUP>(group, srcs, rows),
                }
            }
        }
    };
}

/// `vgf2p8mulb` on 512-bit vectors (GFNI + AVX-512F/BW).
mod gfni512 {
    use std::arch::x86_64::*;

    type V = __m512i;
    type M = __m512i;
    const W: usize = 64;

    /// Lane mask selecting the first `n` bytes, `n <= 64`.
    #[inline]
    fn mask_n(n: usize) -> u64 {
        if n >= 64 {
            u64::MAX
        } else {
            (1u64 << n) - 1
        }
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn zero() -> V {
        _mm512_setzero_si512()
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn load(s: &[u8]) -> V {
        let s = &s[..W];
        // SAFETY: `s` is W = 64 readable bytes; the load is unaligned.
        unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn store(d: &mut [u8], v: V) {
        let d = &mut d[..W];
        // SAFETY: `d` is W = 64 writable bytes, exclusively borrowed; the store is unaligned.
        unsafe { _mm512_storeu_si512(d.as_mut_ptr().cast(), v) }
    }

    /// Loads `s` (at most 64 bytes) into the low lanes, zeroing the rest.
    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn load_n(s: &[u8]) -> V {
        assert!(s.len() <= W);
        // SAFETY: the mask enables exactly the first `s.len()` lanes, which are readable; masked-off
        // lanes are not accessed and cannot fault.
        unsafe { _mm512_maskz_loadu_epi8(mask_n(s.len()), s.as_ptr().cast()) }
    }

    /// Stores the low `d.len()` (at most 64) lanes of `v` into `d`.
    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn store_n(d: &mut [u8], v: V) {
        assert!(d.len() <= W);
        // SAFETY: the mask enables exactly the first `d.len()` lanes, which are writable and
        // exclusively borrowed; masked-off lanes are not accessed.
        unsafe { _mm512_mask_storeu_epi8(d.as_mut_ptr().cast(), mask_n(d.len()), v) }
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn vxor(a: V, b: V) -> V {
        _mm512_xor_si512(a, b)
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn mul_prep(c: u8) -> M {
        _mm512_set1_epi8(c as i8)
    }

    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    #[inline]
    fn mul(x: V, m: M) -> V {
        _mm512_gf2p8mul_epi8(x, m)
    }

    kernels!("gfni,avx512f,avx512bw");
}

/// `vgf2p8mulb` on 256-bit vectors (GFNI + AVX2).
mod gfni256 {
    use std::arch::x86_64::*;

    type V = __m256i;
    type M = __m256i;
    const W: usize = 32;

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn zero() -> V {
        _mm256_setzero_si256()
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn load(s: &[u8]) -> V {
        let s = &s[..W];
        // SAFETY: `s` is W = 32 readable bytes; the load is unaligned.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn store(d: &mut [u8], v: V) {
        let d = &mut d[..W];
        // SAFETY: `d` is W = 32 writable bytes, exclusively borrowed; the store is unaligned.
        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn load_n(s: &[u8]) -> V {
        let mut buf = [0u8; W];
        buf[..s.len()].copy_from_slice(s);
        load(&buf)
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn store_n(d: &mut [u8], v: V) {
        let mut buf = [0u8; W];
        store(&mut buf, v);
        let n = d.len();
        d.copy_from_slice(&buf[..n]);
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn vxor(a: V, b: V) -> V {
        _mm256_xor_si256(a, b)
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn mul_prep(c: u8) -> M {
        _mm256_set1_epi8(c as i8)
    }

    #[target_feature(enable = "gfni,avx2")]
    #[inline]
    fn mul(x: V, m: M) -> V {
        _mm256_gf2p8mul_epi8(x, m)
    }

    kernels!("gfni,avx2");
}

/// Loads a 16-byte nibble table row.
#[target_feature(enable = "sse2")]
#[inline]
fn load_table(row: &[u8; 16]) -> std::arch::x86_64::__m128i {
    // SAFETY: `row` is 16 readable bytes; the load is unaligned.
    unsafe { std::arch::x86_64::_mm_loadu_si128(row.as_ptr().cast()) }
}

/// Split-nibble `vpshufb` on 256-bit vectors (AVX2).
mod avx2 {
    use super::load_table;
    use super::scalar::{NIBBLE_HI, NIBBLE_LO};
    use std::arch::x86_64::*;

    type V = __m256i;
    /// The low- and high-nibble product tables, each broadcast to both 128-bit lanes.
    type M = (__m256i, __m256i);
    const W: usize = 32;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn zero() -> V {
        _mm256_setzero_si256()
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn load(s: &[u8]) -> V {
        let s = &s[..W];
        // SAFETY: `s` is W = 32 readable bytes; the load is unaligned.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn store(d: &mut [u8], v: V) {
        let d = &mut d[..W];
        // SAFETY: `d` is W = 32 writable bytes, exclusively borrowed; the store is unaligned.
        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn load_n(s: &[u8]) -> V {
        let mut buf = [0u8; W];
        buf[..s.len()].copy_from_slice(s);
        load(&buf)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn store_n(d: &mut [u8], v: V) {
        let mut buf = [0u8; W];
        store(&mut buf, v);
        let n = d.len();
        d.copy_from_slice(&buf[..n]);
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn vxor(a: V, b: V) -> V {
        _mm256_xor_si256(a, b)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn mul_prep(c: u8) -> M {
        let lo = _mm256_broadcastsi128_si256(load_table(&NIBBLE_LO[c as usize]));
        let hi = _mm256_broadcastsi128_si256(load_table(&NIBBLE_HI[c as usize]));
        (lo, hi)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn mul(x: V, (lo, hi): M) -> V {
        let mask = _mm256_set1_epi8(0x0f);
        let x_lo = _mm256_and_si256(x, mask);
        let x_hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), mask);
        _mm256_xor_si256(_mm256_shuffle_epi8(lo, x_lo), _mm256_shuffle_epi8(hi, x_hi))
    }

    kernels!("avx2");
}

/// Split-nibble `pshufb` on 128-bit vectors (SSSE3).
mod ssse3 {
    use super::load_table;
    use super::scalar::{NIBBLE_HI, NIBBLE_LO};
    use std::arch::x86_64::*;

    type V = __m128i;
    /// The low- and high-nibble product tables.
    type M = (__m128i, __m128i);
    const W: usize = 16;

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn zero() -> V {
        _mm_setzero_si128()
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn load(s: &[u8]) -> V {
        let s = &s[..W];
        // SAFETY: `s` is W = 16 readable bytes; the load is unaligned.
        unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn store(d: &mut [u8], v: V) {
        let d = &mut d[..W];
        // SAFETY: `d` is W = 16 writable bytes, exclusively borrowed; the store is unaligned.
        unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn load_n(s: &[u8]) -> V {
        let mut buf = [0u8; W];
        buf[..s.len()].copy_from_slice(s);
        load(&buf)
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn store_n(d: &mut [u8], v: V) {
        let mut buf = [0u8; W];
        store(&mut buf, v);
        let n = d.len();
        d.copy_from_slice(&buf[..n]);
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn vxor(a: V, b: V) -> V {
        _mm_xor_si128(a, b)
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn mul_prep(c: u8) -> M {
        (load_table(&NIBBLE_LO[c as usize]), load_table(&NIBBLE_HI[c as usize]))
    }

    #[target_feature(enable = "ssse3")]
    #[inline]
    fn mul(x: V, (lo, hi): M) -> V {
        let mask = _mm_set1_epi8(0x0f);
        let x_lo = _mm_and_si128(x, mask);
        let x_hi = _mm_and_si128(_mm_srli_epi16::<4>(x), mask);
        _mm_xor_si128(_mm_shuffle_epi8(lo, x_lo), _mm_shuffle_epi8(hi, x_hi))
    }

    kernels!("ssse3");
}

/// Calls `$func` of the backend module for `$kind` after checking that this CPU supports it;
/// `$scalar` runs for [`BackendKind::Scalar`].
macro_rules! dispatch {
    ($kind:expr, $func:ident($($arg:expr),*), $scalar:expr) => {{
        let kind: BackendKind = $kind;
        assert!(supported(kind), "GF(2^8) backend `{kind}` is not supported by this CPU");
        match kind {
            BackendKind::Scalar => $scalar,
            // SAFETY: `supported(kind)` confirmed above that the CPU has SSSE3.
            BackendKind::Ssse3 => unsafe { ssse3::$func($($arg),*) },
            // SAFETY: `supported(kind)` confirmed above that the CPU has AVX2.
            BackendKind::Avx2 => unsafe { avx2::$func($($arg),*) },
            // SAFETY: `supported(kind)` confirmed above that the CPU has GFNI and AVX2.
            BackendKind::Gfni256 => unsafe { gfni256::$func($($arg),*) },
            // SAFETY: `supported(kind)` confirmed above that the CPU has GFNI, AVX-512F and
            // AVX-512BW.
            BackendKind::Gfni512 => unsafe { gfni512::$func($($arg),*) },
        }
    }};
}

/// `dst ^= c·src`.
pub(super) fn mul_add(kind: BackendKind, dst: &mut [u8], src: &[u8], c: u8) {
    dispatch!(kind, mul_add(dst, src, c), scalar::mul_add(dst, src, c))
}

/// `buf = c·buf`.
pub(super) fn mul_assign(kind: BackendKind, buf: &mut [u8], c: u8) {
    dispatch!(kind, mul_assign(buf, c), scalar::mul_assign(buf, c))
}

/// `dst ^= src`.
pub(super) fn xor(kind: BackendKind, dst: &mut [u8], src: &[u8]) {
    dispatch!(kind, xor(dst, src), scalar::xor(dst, src))
}

/// `dst ^= Σ srcs[i]`, accumulated in registers (one pass over `dst`).
pub(super) fn xor_sum(kind: BackendKind, dst: &mut [u8], srcs: &[&[u8]]) {
    dispatch!(kind, xor_sum(dst, srcs), scalar::xor_sum(dst, srcs))
}

/// `dst ^= Σ coefs[i]·srcs[i]`, accumulated in registers (one pass over `dst`).
pub(super) fn dot_add(kind: BackendKind, dst: &mut [u8], srcs: &[&[u8]], coefs: &[u8]) {
    dispatch!(kind, dot_add(dst, srcs, coefs), scalar::dot_add(dst, srcs, coefs))
}

/// `dsts[o] ^= Σ coefs[o][i]·srcs[i]`, reading each source once per group of up to 4 outputs.
pub(super) fn dot_add_multi(kind: BackendKind, dsts: &mut [&mut [u8]], srcs: &[&[u8]], coefs: &[&[u8]]) {
    dispatch!(
        kind,
        dot_add_multi(dsts, srcs, coefs),
        for (dst, row) in dsts.iter_mut().zip(coefs) {
            scalar::dot_add(dst, srcs, row);
        }
    )
}
