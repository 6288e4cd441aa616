//! Portable reference arithmetic for GF(2^8) with the polynomial x^8 + x^4 + x^3 + x + 1 (0x11B).
//!
//! 0x11B is the polynomial the x86 GFNI instruction `gf2p8mulb` hard-wires, so every backend in
//! this module tree computes bit-identical products. Every SIMD backend is tested against the
//! kernels here.

/// Reduction polynomial, x^8 + x^4 + x^3 + x + 1.
pub const POLY: u16 = 0x11B;

/// Carry-less multiply followed by reduction; used only to build the tables at compile time.
const fn mul_slow(a: u8, b: u8) -> u8 {
    let mut a = a as u16;
    let mut b = b;
    let mut product: u16 = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a <<= 1;
        if a & 0x100 != 0 {
            a ^= POLY;
        }
        b >>= 1;
    }
    product as u8
}

const fn build_mul_table() -> [[u8; 256]; 256] {
    let mut table = [[0u8; 256]; 256];
    let mut a = 0;
    while a < 256 {
        let mut b = 0;
        while b < 256 {
            table[a][b] = mul_slow(a as u8, b as u8);
            b += 1;
        }
        a += 1;
    }
    table
}

const fn build_inv_table() -> [u8; 256] {
    let mut inv = [0u8; 256];
    let mut a = 1;
    while a < 256 {
        let mut b = 1;
        while b < 256 {
            if mul_slow(a as u8, b as u8) == 1 {
                inv[a] = b as u8;
                break;
            }
            b += 1;
        }
        a += 1;
    }
    inv
}

/// `MUL[a][b] = a·b`. 64 KiB; the scalar kernels index one row per constant.
pub static MUL: [[u8; 256]; 256] = build_mul_table();

/// `INV[a] = a⁻¹` for a ≠ 0; `INV[0] = 0`.
pub static INV: [u8; 256] = build_inv_table();

/// Nibble tables for the split-nibble `pshufb` method: `c·x = LO[c][x & 15] ^ HI[c][x >> 4]`.
pub static NIBBLE_LO: [[u8; 16]; 256] = build_nibble_table(false);
/// See [`NIBBLE_LO`].
pub static NIBBLE_HI: [[u8; 16]; 256] = build_nibble_table(true);

const fn build_nibble_table(high: bool) -> [[u8; 16]; 256] {
    let mut table = [[0u8; 16]; 256];
    let mut c = 0;
    while c < 256 {
        let mut x = 0;
        while x < 16 {
            let operand = if high { (x << 4) as u8 } else { x as u8 };
            table[c][x] = mul_slow(c as u8, operand);
            x += 1;
        }
        c += 1;
    }
    table
}

pub fn xor(dst: &mut [u8], src: &[u8]) {
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (d, s) in (&mut d).zip(&mut s) {
        let v = u64::from_ne_bytes(d.try_into().unwrap()) ^ u64::from_ne_bytes(s.try_into().unwrap());
        d.copy_from_slice(&v.to_ne_bytes());
    }
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d ^= *s;
    }
}

pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => {}
        1 => xor(dst, src),
        _ => {
            let row = &MUL[c as usize];
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= row[*s as usize];
            }
        }
    }
}

pub fn mul_assign(buf: &mut [u8], c: u8) {
    match c {
        0 => buf.fill(0),
        1 => {}
        _ => {
            let row = &MUL[c as usize];
            for b in buf.iter_mut() {
                *b = row[*b as usize];
            }
        }
    }
}

pub fn xor_sum(dst: &mut [u8], srcs: &[&[u8]]) {
    for src in srcs {
        xor(dst, src);
    }
}

pub fn dot_add(dst: &mut [u8], srcs: &[&[u8]], coefficients: &[u8]) {
    for (src, &c) in srcs.iter().zip(coefficients) {
        mul_add(dst, src, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_axioms_hold() {
        for a in 0..=255u8 {
            assert_eq!(MUL[a as usize][1], a);
            assert_eq!(MUL[a as usize][0], 0);
            if a != 0 {
                assert_eq!(MUL[a as usize][INV[a as usize] as usize], 1, "inverse of {a}");
            }
            for b in 0..=255u8 {
                assert_eq!(MUL[a as usize][b as usize], MUL[b as usize][a as usize]);
            }
        }
        // 0x03 generates the multiplicative group of GF(2^8)/0x11B (the AES field).
        let mut seen = [false; 256];
        let mut x = 1u8;
        for _ in 0..255 {
            assert!(!seen[x as usize]);
            seen[x as usize] = true;
            x = MUL[x as usize][3];
        }
        assert_eq!(x, 1);
    }

    #[test]
    fn nibble_tables_agree_with_mul() {
        for c in 0..256 {
            for x in 0..256 {
                let split = NIBBLE_LO[c][x & 15] ^ NIBBLE_HI[c][x >> 4];
                assert_eq!(split, MUL[c][x]);
            }
        }
    }

    #[test]
    fn known_aes_products() {
        // FIPS-197 §4.2: {57}·{83} = {c1}, {57}·{13} = {fe}.
        assert_eq!(MUL[0x57][0x83], 0xc1);
        assert_eq!(MUL[0x57][0x13], 0xfe);
    }
}
