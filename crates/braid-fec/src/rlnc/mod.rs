//! Systematic random linear network coding over GF(2^8) (CTCP, Kim et al., §III).
//!
//! A block's source symbols are sent as is; a repair symbol is Σ cᵢ·sourceᵢ over the first
//! `span` source symbols, with the cᵢ drawn from a 32-bit seed carried in the header (or carried
//! explicitly). The decoder is CTCP Algorithm 5's online Gaussian elimination, kept in reduced
//! row-echelon form so that a source symbol is handed back the moment it is determined, with the
//! systematic fast path: known source symbols are stripped from a repair first, so only the small
//! lost × lost system is ever solved.

mod decoder;
mod encoder;

pub use decoder::RlncDecoder;
pub use encoder::RlncEncoder;

/// Most source symbols per RLNC block. Dense decoding costs O(k²) symbol operations; 1024 keeps
/// the worst case bounded while covering every block size the seeds use (CTCP: blksize ≤ 64).
pub const MAX_BLOCK_LEN: usize = 1024;

/// Expands a seed into the coefficients of a repair symbol: `out[i]` multiplies source `i`.
///
/// The generator is SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014) started from the seed; each 64-bit output gives eight bytes, least
/// significant first, and zero bytes are skipped, so every coefficient is in 1..=255. This is
/// part of the wire format (PROTOCOL.md, "RLNC coefficients"): changing it breaks interop.
pub fn coefficients_from_seed(seed: u32, out: &mut [u8]) {
    let mut state = u64::from(seed);
    let mut filled = 0;
    while filled < out.len() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for byte in z.to_le_bytes() {
            if byte != 0 && filled < out.len() {
                out[filled] = byte;
                filled += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_are_nonzero_deterministic_and_prefix_stable() {
        let mut long = [0u8; 300];
        coefficients_from_seed(42, &mut long);
        assert!(long.iter().all(|&c| c != 0));
        let mut short = [0u8; 17];
        coefficients_from_seed(42, &mut short);
        assert_eq!(short, long[..17]);
        let mut other = [0u8; 300];
        coefficients_from_seed(43, &mut other);
        assert_ne!(long, other);
        // Frozen vector: the wire format depends on it.
        let mut frozen = [0u8; 8];
        coefficients_from_seed(0, &mut frozen);
        assert_eq!(frozen, 0xE220_A839_7B1D_CDAFu64.to_le_bytes());
    }
}
