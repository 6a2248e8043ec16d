//! Percentiles and summaries from raw samples (nanoseconds), sorted once; no extra crates.

/// A latency distribution: the sorted samples and the figures the report prints.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dist {
    /// Every sample in nanoseconds, ascending.
    pub sorted: Vec<u64>,
}

impl Dist {
    /// A distribution of these samples (nanoseconds), in any order.
    pub(crate) fn new(mut samples: Vec<u64>) -> Self {
        samples.sort_unstable();
        Self { sorted: samples }
    }

    /// The `p`-th percentile (0–100) in nanoseconds; 0 for no samples.
    pub(crate) fn percentile_ns(&self, p: f64) -> u64 {
        percentile(&self.sorted, p)
    }

    /// The `p`-th percentile in microseconds.
    pub(crate) fn percentile_us(&self, p: f64) -> f64 {
        self.percentile_ns(p) as f64 / 1_000.0
    }

    /// Median in microseconds.
    pub(crate) fn p50_us(&self) -> f64 {
        self.percentile_us(50.0)
    }

    /// 99th percentile in microseconds.
    pub(crate) fn p99_us(&self) -> f64 {
        self.percentile_us(99.0)
    }

    /// Mean in microseconds; 0 for no samples.
    pub(crate) fn mean_us(&self) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let sum: u128 = self.sorted.iter().map(|&s| u128::from(s)).sum();
        sum as f64 / self.sorted.len() as f64 / 1_000.0
    }

    /// How many samples.
    pub(crate) fn len(&self) -> usize {
        self.sorted.len()
    }

    #[cfg(test)]
    /// Whether there are no samples.
    pub(crate) fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

/// The `p`-th percentile (0–100) of ascending `sorted` samples by the nearest-rank method: the
/// smallest sample with at least p% of the samples at or below it. 0 for no samples.
pub(super) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let p = if p.is_nan() {
        50.0
    } else {
        p.clamp(0.0, 100.0)
    };
    // Nearest rank is 1-based: ceil(p/100 * n), at least 1.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `a / b`, or 0 when `b` is not a positive number (a floor that measured nothing).
pub(super) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && b.is_finite() { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_table() {
        let hundred: Vec<u64> = (1..=100).collect();
        for (samples, p, want) in [
            (&[][..], 50.0, 0),
            (&[7][..], 0.0, 7),
            (&[7][..], 50.0, 7),
            (&[7][..], 100.0, 7),
            (&[1, 2][..], 50.0, 1),
            (&[1, 2][..], 51.0, 2),
            (&[1, 2, 3][..], 50.0, 2),
            (&hundred[..], 50.0, 50),
            (&hundred[..], 99.0, 99),
            (&hundred[..], 99.5, 100),
            (&hundred[..], 100.0, 100),
            (&hundred[..], 0.0, 1),
            (&hundred[..], -5.0, 1),
            (&hundred[..], 250.0, 100),
            (&hundred[..], f64::NAN, 50),
        ] {
            assert_eq!(percentile(samples, p), want, "p{p} of {samples:?}");
        }
    }

    #[test]
    fn dist_sorts_and_converts() {
        let d = Dist::new(vec![3_000, 1_000, 2_000]);
        assert_eq!(d.sorted, vec![1_000, 2_000, 3_000]);
        assert_eq!(d.p50_us(), 2.0);
        assert_eq!(d.p99_us(), 3.0);
        assert_eq!(d.mean_us(), 2.0);
        assert_eq!(d.len(), 3);
        assert!(!d.is_empty());
        let empty = Dist::new(Vec::new());
        assert_eq!(empty.mean_us(), 0.0);
        assert_eq!(empty.p50_us(), 0.0);
        assert!(empty.is_empty());
    }

    #[test]
    fn ratio_guards_empty_floors() {
        assert_eq!(ratio(6.0, 3.0), 2.0);
        assert_eq!(ratio(6.0, 0.0), 0.0);
        assert_eq!(ratio(6.0, f64::NAN), 0.0);
        assert_eq!(ratio(6.0, f64::INFINITY), 0.0);
    }
}
