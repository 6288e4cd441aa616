//! FMTCP's Eq. (4) inverted (Cui et al.): how many symbols a block of r sources needs so that r
//! arrive with probability 1 − δ̂ at loss p, exact for small r and by the normal approximation
//! for larger, memoized because the connection asks it for every open block on every packet.

/// FMTCP Eq. (4) inverted: the smallest n with P[Binomial(n, 1 − p) ≥ r] ≥ 1 − δ. Exact
/// for small r; for larger r (called per block per packet, so it must be cheap) the normal
/// approximation n(1 − p) − z·√(n p (1 − p)) ≥ r, solved for √n.
pub fn symbols_for(r: u64, p: f64, delta: f64) -> u64 {
    let p = p.clamp(0.0, 0.9);
    if p <= 0.0 {
        return r;
    }
    // The connection asks again for the same blocks until an ACK moves p: remember the latest
    // answers, keyed by the exact arguments (so the answer is the same as computing it).
    thread_local! {
        static RECENT: std::cell::RefCell<[(u64, u64, u64, u64); 64]> =
            const { std::cell::RefCell::new([(0, 0, 0, 0); 64]) };
    }
    let (p_bits, delta_bits) = (p.to_bits(), delta.to_bits());
    let slot = ((r ^ p_bits ^ p_bits >> 29).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize;
    let hit = RECENT.with(|c| {
        let e = c.borrow()[slot];
        // n ≥ r > 0 in a filled slot, so a zero n marks an empty one.
        (e.0 == r && e.1 == p_bits && e.2 == delta_bits && e.3 != 0).then_some(e.3)
    });
    if let Some(n) = hit {
        return n;
    }
    let n = symbols_for_uncached(r, p, delta);
    RECENT.with(|c| c.borrow_mut()[slot] = (r, p_bits, delta_bits, n));
    n
}

fn symbols_for_uncached(r: u64, p: f64, delta: f64) -> u64 {
    if r > 16 {
        let q = 1.0 - p;
        let z = normal_quantile(1.0 - delta.clamp(1e-9, 1.0 - 1e-9));
        let b = z * (p * q).sqrt();
        let s = (b + (b * b + 4.0 * q * r as f64).sqrt()) / (2.0 * q);
        return ((s * s).ceil() as u64).max(r);
    }
    // The exact sum costs a few hundred exp/ln calls and is asked for every open block on every
    // packet, so answers are memoized per (r, p to 1/4096, δ).
    thread_local! {
        static MEMO: std::cell::RefCell<std::collections::HashMap<(u64, u32, u64), u64, MemoHasher>> =
            const { std::cell::RefCell::new(std::collections::HashMap::with_hasher(MemoHasher::new())) };
    }
    let p_bucket = (p * 4096.0).round() as u32;
    let key = (r, p_bucket, delta.to_bits());
    if let Some(n) = MEMO.with(|m| m.borrow().get(&key).copied()) {
        return n;
    }
    let p = f64::from(p_bucket) / 4096.0;
    let mut n = r;
    while success_probability(n, r, 1.0 - p) < 1.0 - delta && n < 4 * r + 16 {
        n += 1;
    }
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() > 100_000 {
            m.clear();
        }
        m.insert(key, n);
    });
    n
}

/// The memo's hasher: its keys are a few small integers from this module, not peer input, so a
/// multiply-rotate mix replaces SipHash (which cost more than the lookups it guarded).
type MemoHasher = std::hash::BuildHasherDefault<MixHasher>;

#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

/// Φ⁻¹(x), Abramowitz & Stegun 26.2.23 (absolute error < 4.5e-4).
fn normal_quantile(x: f64) -> f64 {
    let tail = |v: f64| {
        let t = (-2.0 * v.ln()).sqrt();
        t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t.powi(3))
    };
    if x >= 0.5 {
        tail(1.0 - x)
    } else {
        -tail(x)
    }
}

/// P[Binomial(n, q) ≥ r], summed in log space.
fn success_probability(n: u64, r: u64, q: f64) -> f64 {
    let (ln_q, ln_p) = (q.ln(), (1.0 - q).ln());
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut below = 0.0;
    for j in 0..r.min(n + 1) {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        below += (ln_choose + j as f64 * ln_q + (n - j) as f64 * ln_p).exp();
    }
    1.0 - below
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_fmtcp_margins() {
        // Worked by hand: r = 10, δ̂ = 5%. p = 1%: 10 of 10 arrive with 0.904, 10 of 11 with
        // 0.995 → 11. p = 5%: 11 gives 0.898, 12 gives 0.981 → 12. p = 10%: 12 gives 0.889,
        // 13 gives 0.966 → 13.
        assert_eq!(symbols_for(10, 0.01, 0.05), 11);
        assert_eq!(symbols_for(10, 0.05, 0.05), 12);
        assert_eq!(symbols_for(10, 0.10, 0.05), 13);
        assert_eq!(symbols_for(5, 0.0, 0.01), 5);
        // Monotone in loss.
        assert!(symbols_for(64, 0.2, 0.01) > symbols_for(64, 0.05, 0.01));
        assert!((success_probability(3, 3, 0.5) - 0.125).abs() < 1e-12);
        // The normal approximation for large r stays within a symbol or two of the exact rule.
        for (r, p, d) in [(64u64, 0.05, 0.05), (64, 0.2, 0.01), (40, 0.1, 0.5)] {
            let exact = {
                let mut n = r;
                while success_probability(n, r, 1.0 - p) < 1.0 - d {
                    n += 1;
                }
                n
            };
            let approx = symbols_for(r, p, d);
            assert!(approx.abs_diff(exact) <= 2, "r {r} p {p} δ {d}: exact {exact}, approx {approx}");
        }
        assert!((normal_quantile(0.975) - 1.96).abs() < 1e-3);
    }
}
