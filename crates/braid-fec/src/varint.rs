//! QUIC variable-length integers (RFC 9000 §16), shared by every braid wire format: the two
//! high bits of the first byte give the length (1, 2, 4 or 8 bytes), the rest the value,
//! big-endian.

/// The largest value a varint carries.
pub const MAX: u64 = (1 << 62) - 1;

/// Bytes `v` takes in the shortest encoding.
#[inline]
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// The shortest encoding of `v` (≤ [`MAX`]): the first `n` bytes of the array.
#[inline]
pub fn encode(v: u64) -> ([u8; 8], usize) {
    debug_assert!(v <= MAX);
    let n = len(v);
    // The length code (0..=3 for 1, 2, 4, 8 bytes) goes in the top two bits of the n-byte field.
    let word = v | (n.trailing_zeros() as u64) << (8 * n - 2);
    let bytes = (word << (8 * (8 - n))).to_be_bytes();
    (bytes, n)
}

/// Decodes a varint from the front of `bytes`: `Ok((value, length))`, or `Err(missing)` with
/// the number of bytes still needed.
#[inline]
pub fn decode(bytes: &[u8]) -> Result<(u64, usize), usize> {
    let first = *bytes.first().ok_or(1usize)?;
    let missing = |n: usize| n - bytes.len();
    // One fixed-size big-endian load per length (no per-byte loop on the hot path).
    match first >> 6 {
        0 => Ok((u64::from(first), 1)),
        1 => match bytes.first_chunk::<2>() {
            Some(b) => Ok((u64::from(u16::from_be_bytes(*b) & 0x3fff), 2)),
            None => Err(missing(2)),
        },
        2 => match bytes.first_chunk::<4>() {
            Some(b) => Ok((u64::from(u32::from_be_bytes(*b) & 0x3fff_ffff), 4)),
            None => Err(missing(4)),
        },
        _ => match bytes.first_chunk::<8>() {
            Some(b) => Ok((u64::from_be_bytes(*b) & MAX, 8)),
            None => Err(missing(8)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_sample_values() {
        // RFC 9000 §A.1.
        let cases: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(decode(bytes), Ok((value, bytes.len())));
            let (enc, n) = encode(value);
            assert_eq!(&enc[..n], bytes);
        }
        assert_eq!(decode(&[0x40, 0x25]), Ok((37, 2)));
        assert_eq!(decode(&[0x9d, 0x7f]), Err(2));
        assert_eq!(decode(&[]), Err(1));
        for v in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, MAX] {
            let (enc, n) = encode(v);
            assert_eq!((n, decode(&enc[..n])), (len(v), Ok((v, n))));
        }
    }
}
