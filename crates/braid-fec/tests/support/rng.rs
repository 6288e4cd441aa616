//! splitmix64: deterministic data without pulling `rand` in, for braid-fec's tests and
//! examples (`#[path]`-included: files under tests/support/ are not test crates of their own).
#![allow(dead_code)]

pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    /// A coefficient with the special values over-represented: 0 and 1 a quarter of the time
    /// each, 255 an eighth, the rest uniform.
    pub fn coefficient(&mut self) -> u8 {
        match self.next_u64() % 8 {
            0 | 1 => 0,
            2 | 3 => 1,
            4 => 255,
            _ => self.byte(),
        }
    }
}
