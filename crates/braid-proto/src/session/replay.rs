//! Replay protection for datagrams: a sliding window over packet numbers (PROTOCOL.md §13.5).

/// Anti-replay window over one path's packet numbers (RFC 6479's sliding bitmap, 1024 deep):
/// a number already seen, or older than the window, is refused.
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    /// Highest number accepted + 1 (0: none yet).
    top: u64,
    bits: [u64; WINDOW_WORDS],
}

const WINDOW_WORDS: usize = 16;
const WINDOW: u64 = (WINDOW_WORDS * 64) as u64;

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow { top: 0, bits: [0; WINDOW_WORDS] }
    }
}

impl ReplayWindow {
    fn bit(n: u64) -> (usize, u64) {
        (((n / 64) % WINDOW_WORDS as u64) as usize, 1 << (n % 64))
    }

    /// Whether `n` would be accepted (call before [`ReplayWindow::insert`], after authenticating).
    pub fn check(&self, n: u64) -> bool {
        if n >= self.top {
            return true;
        }
        if self.top - n > WINDOW - 64 {
            return false;
        }
        let (w, b) = Self::bit(n);
        self.bits[w] & b == 0
    }

    /// Records `n` as seen; returns false if it was a replay.
    pub fn insert(&mut self, n: u64) -> bool {
        if !self.check(n) {
            return false;
        }
        if n >= self.top {
            // Clear the words the window slides over.
            let first_new_word = self.top.div_ceil(64);
            let last_word = n / 64;
            let clear = (last_word + 1).saturating_sub(first_new_word).min(WINDOW_WORDS as u64);
            for i in 0..clear {
                let word = last_word - i;
                self.bits[(word % WINDOW_WORDS as u64) as usize] = 0;
            }
            self.top = n + 1;
        }
        let (w, b) = Self::bit(n);
        self.bits[w] |= b;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_window() {
        let mut w = ReplayWindow::default();
        assert!(w.insert(0));
        assert!(!w.insert(0));
        assert!(w.insert(5));
        assert!(w.insert(3));
        assert!(!w.insert(3));
        assert!(w.insert(5000));
        assert!(!w.insert(5));
        assert!(w.insert(4990));
        assert!(!w.insert(4990));
        assert!(w.insert(4999));
        // Far jump clears the whole bitmap: old-but-in-window numbers are fresh again.
        assert!(w.insert(100_000));
        assert!(w.insert(99_500));
        assert!(!w.insert(99_500));
        // Compare with a naive set over a pseudo-random sequence.
        let mut w = ReplayWindow::default();
        let mut seen = std::collections::BTreeSet::new();
        let mut top = 0u64;
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (top + 40).saturating_sub(x % 1200);
            let too_old = n < top && top - n > WINDOW - 64;
            let expect = !seen.contains(&n) && !too_old;
            assert_eq!(w.insert(n), expect, "n={n} top={top}");
            if expect {
                seen.insert(n);
                top = top.max(n + 1);
            }
        }
    }
}
