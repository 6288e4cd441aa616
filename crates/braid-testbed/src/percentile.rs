//! The one percentile rule every workload's report uses: nearest rank.

/// Nearest-rank percentile (q in 0..=1) of values sorted ascending; `None` when empty.
/// Values may be +∞ (a frame that never arrived): the percentile is then ∞ if it lands there.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(percentile(&v, 0.5), Some(5.0));
        assert_eq!(percentile(&v, 0.9), Some(9.0));
        assert_eq!(percentile(&v, 0.99), Some(10.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.9), Some(7.0));
        let with_missing = [1.0, 2.0, f64::INFINITY];
        assert_eq!(percentile(&with_missing, 0.5), Some(2.0));
        assert_eq!(percentile(&with_missing, 0.99), Some(f64::INFINITY));
    }
}
