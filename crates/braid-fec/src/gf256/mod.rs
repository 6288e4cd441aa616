//! GF(2^8) arithmetic and bulk kernels with run-time backend selection.
//!
//! The field is GF(2)\[x\] / (x^8 + x^4 + x^3 + x + 1), the one the x86 GFNI instruction
//! `gf2p8mulb` implements, so the GFNI, `pshufb` and scalar backends agree bit for bit.
//!
//! Kernels (all slices of one call have the same length; mismatches are caller bugs and panic):
//! - [`Backend::mul_add`]: `dst ^= c·src`
//! - [`Backend::mul_assign`]: `buf = c·buf`
//! - [`Backend::xor`], [`Backend::xor_sum`]: `dst ^= Σ srcᵢ` (XOR parity)
//! - [`Backend::dot_add`]: `dst ^= Σ cᵢ·srcᵢ`, accumulated in registers (one pass over `dst`)
//! - [`Backend::dot_add_multi`]: several outputs from one pass over the sources
//!
//! All `unsafe` code of the crate lives in the `simd` submodule.

mod scalar;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod simd;

use std::sync::OnceLock;

pub use scalar::{INV, MUL, POLY};

/// `a·b` in GF(2^8).
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    MUL[a as usize][b as usize]
}

/// `a⁻¹` in GF(2^8); `None` for zero, which has no inverse.
#[inline]
pub fn inv(a: u8) -> Option<u8> {
    (a != 0).then(|| INV[a as usize])
}

/// A family of kernels. Ordered from slowest to fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BackendKind {
    /// Portable: 64 KiB multiplication table, `u64` XOR.
    Scalar,
    /// 128-bit split-nibble `pshufb` (SSSE3).
    Ssse3,
    /// 256-bit split-nibble `vpshufb` (AVX2).
    Avx2,
    /// `vgf2p8mulb` on 256-bit vectors (GFNI + AVX2).
    Gfni256,
    /// `vgf2p8mulb` on 512-bit vectors (GFNI + AVX-512F/BW).
    Gfni512,
}

impl BackendKind {
    pub const ALL: [BackendKind; 5] = [
        BackendKind::Scalar,
        BackendKind::Ssse3,
        BackendKind::Avx2,
        BackendKind::Gfni256,
        BackendKind::Gfni512,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Scalar => "scalar",
            BackendKind::Ssse3 => "ssse3",
            BackendKind::Avx2 => "avx2",
            BackendKind::Gfni256 => "gfni-avx2",
            BackendKind::Gfni512 => "gfni-avx512",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackendKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<_> = BackendKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown GF(2^8) backend `{s}` (expected one of: {})", names.join(", "))
        })
    }
}

/// A kernel backend that this CPU supports. Only constructible after a CPU feature check, which
/// is what makes the SIMD kernels behind it safe to call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backend(BackendKind);

impl Backend {
    /// The portable backend; always available.
    pub const SCALAR: Backend = Backend(BackendKind::Scalar);

    /// `Some` if this CPU supports `kind`.
    pub fn new(kind: BackendKind) -> Option<Backend> {
        supported(kind).then_some(Backend(kind))
    }

    /// The fastest backend this CPU supports, detected once. `BRAID_GF_BACKEND=<name>` caps it
    /// (for measuring the fallbacks); an unsupported or unknown name falls back to detection.
    pub fn best() -> Backend {
        static BEST: OnceLock<Backend> = OnceLock::new();
        *BEST.get_or_init(|| {
            let wanted =
                std::env::var("BRAID_GF_BACKEND").ok().and_then(|name| name.parse::<BackendKind>().ok());
            if let Some(backend) = wanted.and_then(Backend::new) {
                return backend;
            }
            Backend::available().pop().unwrap_or(Backend::SCALAR)
        })
    }

    /// Every backend this CPU supports, slowest first.
    pub fn available() -> Vec<Backend> {
        BackendKind::ALL.into_iter().filter_map(Backend::new).collect()
    }

    pub fn kind(self) -> BackendKind {
        self.0
    }

    /// `dst ^= c·src`.
    pub fn mul_add(self, dst: &mut [u8], src: &[u8], c: u8) {
        assert_eq!(dst.len(), src.len(), "mul_add: length mismatch");
        match self.0 {
            BackendKind::Scalar => scalar::mul_add(dst, src, c),
            #[cfg(target_arch = "x86_64")]
            kind => simd::mul_add(kind, dst, src, c),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }

    /// `buf = c·buf`.
    pub fn mul_assign(self, buf: &mut [u8], c: u8) {
        match self.0 {
            BackendKind::Scalar => scalar::mul_assign(buf, c),
            #[cfg(target_arch = "x86_64")]
            kind => simd::mul_assign(kind, buf, c),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }

    /// `dst ^= src`.
    pub fn xor(self, dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "xor: length mismatch");
        match self.0 {
            BackendKind::Scalar => scalar::xor(dst, src),
            #[cfg(target_arch = "x86_64")]
            kind => simd::xor(kind, dst, src),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }

    /// `dst ^= Σ srcs[i]`, one pass over `dst`.
    pub fn xor_sum(self, dst: &mut [u8], srcs: &[&[u8]]) {
        assert!(srcs.iter().all(|s| s.len() == dst.len()), "xor_sum: length mismatch");
        match self.0 {
            BackendKind::Scalar => scalar::xor_sum(dst, srcs),
            #[cfg(target_arch = "x86_64")]
            kind => simd::xor_sum(kind, dst, srcs),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }

    /// `dst ^= Σ coefficients[i]·srcs[i]`, one pass over `dst`.
    pub fn dot_add(self, dst: &mut [u8], srcs: &[&[u8]], coefficients: &[u8]) {
        assert_eq!(srcs.len(), coefficients.len(), "dot_add: one coefficient per source");
        assert!(srcs.iter().all(|s| s.len() == dst.len()), "dot_add: length mismatch");
        match self.0 {
            BackendKind::Scalar => scalar::dot_add(dst, srcs, coefficients),
            #[cfg(target_arch = "x86_64")]
            kind => simd::dot_add(kind, dst, srcs, coefficients),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }

    /// `dsts[o] ^= Σ coefficients[o][i]·srcs[i]` for every output `o`, reading each source once
    /// per group of outputs.
    pub fn dot_add_multi(self, dsts: &mut [&mut [u8]], srcs: &[&[u8]], coefficients: &[&[u8]]) {
        assert_eq!(dsts.len(), coefficients.len(), "dot_add_multi: one coefficient row per output");
        assert!(coefficients.iter().all(|row| row.len() == srcs.len()), "dot_add_multi: row length");
        let len = dsts.first().map_or(0, |d| d.len());
        assert!(dsts.iter().all(|d| d.len() == len), "dot_add_multi: length mismatch");
        assert!(srcs.iter().all(|s| s.len() == len), "dot_add_multi: length mismatch");
        match self.0 {
            BackendKind::Scalar => {
                for (dst, row) in dsts.iter_mut().zip(coefficients) {
                    scalar::dot_add(dst, srcs, row);
                }
            }
            #[cfg(target_arch = "x86_64")]
            kind => simd::dot_add_multi(kind, dsts, srcs, coefficients),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }
}

fn supported(kind: BackendKind) -> bool {
    match kind {
        BackendKind::Scalar => true,
        #[cfg(target_arch = "x86_64")]
        kind => simd::supported(kind),
        #[cfg(not(target_arch = "x86_64"))]
        _ => false,
    }
}
