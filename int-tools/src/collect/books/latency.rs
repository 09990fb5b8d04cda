//! A latency distribution: exact count, sum and extremes, and an HDR
//! histogram for percentiles. Latency is signed (a source clock ahead of
//! the sink's gives negative one-way latency, which must stay visible), so
//! negative values are kept as magnitudes in a second histogram, made only
//! when the first one arrives. A distribution too many to give each a
//! histogram (a flow past `--detailed-flows`) keeps a [`Sketch`] instead:
//! percentiles to 1.6% in at most 1 KB.

use hdrhistogram::Histogram;

use super::sketch::Sketch;

/// The largest latency a histogram resolves: a day (a network's latencies
/// and a capture replayed hours later alike). Longer ones count as this,
/// and a percentile that falls among them is given as the largest value
/// seen, the best bound known.
const HIGHEST_NS: u64 = 86_400_000_000_000;

/// The percentiles a summary shows.
pub const PERCENTILES: [(&str, f64); 4] = [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99_9", 0.999)];

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "Stored", from = "Stored")]
pub struct Latency {
    count: u64,
    sum: i128,
    min: i64,
    max: i64,
    histograms: Option<Box<Histograms>>,
    /// Percentiles where there is no histogram (never both).
    sketch: Option<Sketch>,
}

/// Values at or above zero, and magnitudes of those below.
#[derive(Debug, Clone)]
struct Histograms {
    at_or_above_zero: Histogram<u64>,
    below_zero: Option<Histogram<u64>>,
    significant_digits: u8,
}

impl Latency {
    /// A histogram that tells values apart to `significant_digits` (1 to
    /// 5) decimal digits: 2 costs about 40 KB, 3 about 300 KB.
    pub fn new(significant_digits: u8) -> Latency {
        let histograms = histogram(significant_digits).map(|at_or_above_zero| {
            Box::new(Histograms { at_or_above_zero, below_zero: None, significant_digits })
        });
        Latency { histograms, ..Latency::exact() }
    }

    /// Count, sum and extremes only, no percentiles: 72 bytes.
    pub fn exact() -> Latency {
        Latency { count: 0, sum: 0, min: 0, max: 0, histograms: None, sketch: None }
    }

    /// Count, sum, extremes and a [`Sketch`]'s percentiles: 72 bytes and
    /// 8 per bucket of values (at most 1 KB).
    pub fn sketched() -> Latency {
        Latency { sketch: Some(Sketch::default()), ..Latency::exact() }
    }

    /// Whether it keeps a histogram (percentiles to its digits, and counts
    /// per bucket for Prometheus); a sketch's percentiles are not that.
    pub fn has_percentiles(&self) -> bool {
        self.histograms.is_some()
    }

    /// Bytes it holds beyond its own: its histograms' or its sketch's.
    pub fn heap_bytes(&self) -> usize {
        let sketch = self.sketch.as_ref().map_or(0, Sketch::heap_bytes);
        sketch + self.histograms.as_ref().map_or(0, |h| h.heap_bytes())
    }

    pub fn record(&mut self, ns: i64) {
        if self.count == 0 || ns < self.min {
            self.min = ns;
        }
        if self.count == 0 || ns > self.max {
            self.max = ns;
        }
        self.count += 1;
        self.sum += i128::from(ns);
        if let Some(histograms) = &mut self.histograms {
            histograms.record(ns);
        }
        if let Some(sketch) = &mut self.sketch {
            sketch.record(ns);
        }
    }

    /// Adds another distribution's values (another receiver's share).
    /// Percentiles stay only where both sides kept them: histograms where
    /// both have one, else a sketch where both have either.
    pub fn merge(&mut self, other: &Latency) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            (self.histograms, self.sketch) = (other.histograms.clone(), other.sketch.clone());
        } else {
            self.merge_percentiles(other);
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        if self.count == 0 || other.max > self.max {
            self.max = other.max;
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    fn merge_percentiles(&mut self, other: &Latency) {
        if let (Some(ours), Some(theirs)) = (&mut self.histograms, &other.histograms) {
            ours.merge(theirs);
            return;
        }
        let ours = self.sketch.take().or_else(|| self.histograms.as_deref().map(Histograms::sketch));
        let theirs = other.sketch.clone().or_else(|| other.histograms.as_deref().map(Histograms::sketch));
        self.histograms = None;
        if let (Some(mut ours), Some(theirs)) = (ours, theirs) {
            ours.merge(&theirs);
            self.sketch = Some(ours);
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> i128 {
        self.sum
    }

    pub fn min(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    pub fn mean(&self) -> Option<i64> {
        (self.count > 0).then(|| (self.sum / i128::from(self.count)) as i64)
    }

    /// The value at quantile `q` (0 to 1): the smallest recorded value
    /// that `q` of all values are at or below, rounded away from zero to
    /// the histogram's resolution and held within the exact extremes.
    pub fn quantile(&self, q: f64) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        if let Some(sketch) = &self.sketch {
            return sketch.quantile(q).map(|value| value.clamp(self.min, self.max));
        }
        let histograms = self.histograms.as_deref()?;
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        let value = histograms.at_rank(rank);
        let saturated = value.unsigned_abs() >= HIGHEST_NS;
        let value = if saturated && value > 0 { self.max } else { value };
        Some(value.clamp(self.min, self.max))
    }

    /// How many values are at or below `ns` (a Prometheus bucket), to the
    /// histogram's resolution; `None` without percentiles.
    pub fn count_at_or_below(&self, ns: i64) -> Option<u64> {
        self.histograms.as_deref().map(|h| h.count_at_or_below(ns))
    }
}

impl Histograms {
    fn record(&mut self, ns: i64) {
        if ns >= 0 {
            self.at_or_above_zero.saturating_record(ns as u64);
        } else {
            if self.below_zero.is_none() {
                self.below_zero = histogram(self.significant_digits);
            }
            if let Some(below_zero) = &mut self.below_zero {
                below_zero.saturating_record(ns.unsigned_abs());
            }
        }
    }

    fn merge(&mut self, other: &Histograms) {
        // Every histogram reaches HIGHEST_NS, so adding never fails.
        let _ = self.at_or_above_zero.add(&other.at_or_above_zero);
        match (&mut self.below_zero, &other.below_zero) {
            (Some(ours), Some(theirs)) => {
                let _ = ours.add(theirs);
            }
            (ours @ None, Some(theirs)) => *ours = Some(theirs.clone()),
            (_, None) => {}
        }
    }

    /// The same values in a sketch (a histogram's share merged with a
    /// sketch's).
    fn sketch(&self) -> Sketch {
        let mut sketch = Sketch::default();
        for step in self.at_or_above_zero.iter_recorded() {
            let value = self.at_or_above_zero.highest_equivalent(step.value_iterated_to());
            sketch.record_n(value.min(i64::MAX as u64) as i64, step.count_at_value());
        }
        for step in self.below_zero.iter().flat_map(|h| h.iter_recorded()) {
            sketch.record_n(-(step.value_iterated_to().min(i64::MAX as u64) as i64), step.count_at_value());
        }
        sketch
    }

    fn heap_bytes(&self) -> usize {
        let counts = |h: &Histogram<u64>| h.distinct_values() * std::mem::size_of::<u64>();
        counts(&self.at_or_above_zero) + self.below_zero.as_ref().map_or(0, counts)
    }

    fn negatives(&self) -> u64 {
        self.below_zero.as_ref().map_or(0, |h| h.len())
    }

    /// The `rank`-th smallest value (1-based).
    fn at_rank(&self, rank: u64) -> i64 {
        let negatives = self.negatives();
        if rank <= negatives {
            // The rank-th smallest value is the (negatives - rank + 1)-th
            // smallest magnitude below zero.
            let below = self.below_zero.as_ref().map_or(0, |h| lowest_at_rank(h, negatives - rank + 1));
            -(below.min(i64::MAX as u64) as i64)
        } else {
            highest_at_rank(&self.at_or_above_zero, rank - negatives).min(i64::MAX as u64) as i64
        }
    }

    fn count_at_or_below(&self, ns: i64) -> u64 {
        if ns >= 0 {
            self.negatives() + self.at_or_above_zero.count_between(0, ns as u64)
        } else {
            self.below_zero.as_ref().map_or(0, |h| h.count_between(ns.unsigned_abs(), u64::MAX))
        }
    }
}

/// A histogram from 1 ns to [`HIGHEST_NS`] (bounds it always accepts).
fn histogram(significant_digits: u8) -> Option<Histogram<u64>> {
    Histogram::new_with_bounds(1, HIGHEST_NS, significant_digits.clamp(1, 5)).ok()
}

/// The `rank`-th smallest value (1-based), as the top of its bucket.
fn highest_at_rank(histogram: &Histogram<u64>, rank: u64) -> u64 {
    value_at_rank(histogram, rank).map_or(histogram.max(), |v| histogram.highest_equivalent(v))
}

/// The `rank`-th smallest value (1-based), as the bottom of its bucket.
fn lowest_at_rank(histogram: &Histogram<u64>, rank: u64) -> u64 {
    value_at_rank(histogram, rank).map_or(histogram.max(), |v| histogram.lowest_equivalent(v))
}

fn value_at_rank(histogram: &Histogram<u64>, rank: u64) -> Option<u64> {
    let mut seen = 0;
    for step in histogram.iter_recorded() {
        seen += step.count_at_value();
        if seen >= rank {
            return Some(step.value_iterated_to());
        }
    }
    None
}

/// A [`Latency`] as `--state` keeps it: the exact figures, and each
/// histogram as its recorded buckets (a bucket's top value and its count;
/// recorded again, each lands in the same bucket), so a restored
/// distribution gives the same percentiles.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    count: u64,
    sum: i128,
    min: i64,
    max: i64,
    /// The histograms' significant digits; `None`: exact figures only.
    digits: Option<u8>,
    at_or_above_zero: Vec<(u64, u64)>,
    below_zero: Option<Vec<(u64, u64)>>,
    /// A flow's sketch past --detailed-flows, kept as it is.
    sketch: Option<Sketch>,
}

impl From<Latency> for Stored {
    fn from(latency: Latency) -> Stored {
        let buckets = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded().map(|step| (step.value_iterated_to(), step.count_at_value())).collect()
        };
        let histograms = latency.histograms.as_deref();
        Stored {
            count: latency.count,
            sum: latency.sum,
            min: latency.min,
            max: latency.max,
            digits: histograms.map(|h| h.significant_digits),
            at_or_above_zero: histograms.map(|h| buckets(&h.at_or_above_zero)).unwrap_or_default(),
            below_zero: histograms.and_then(|h| h.below_zero.as_ref()).map(buckets),
            sketch: latency.sketch,
        }
    }
}

impl From<Stored> for Latency {
    fn from(stored: Stored) -> Latency {
        let filled = |buckets: &[(u64, u64)], digits: u8| {
            let mut h = histogram(digits)?;
            for (value, count) in buckets {
                h.saturating_record_n(*value, *count);
            }
            Some(h)
        };
        let histograms = stored.digits.and_then(|digits| {
            let at_or_above_zero = filled(&stored.at_or_above_zero, digits)?;
            let below_zero = stored.below_zero.as_deref().and_then(|b| filled(b, digits));
            Some(Box::new(Histograms { at_or_above_zero, below_zero, significant_digits: digits }))
        });
        Latency {
            count: stored.count,
            sum: stored.sum,
            min: stored.min,
            max: stored.max,
            histograms,
            sketch: stored.sketch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact `q` quantile of sorted values, by the same rank rule.
    fn exact(sorted: &[i64], q: f64) -> i64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// A known distribution (a uniform spread from -2 µs to +98 µs, a
    /// long tail of 0.1% at 5 ms, shuffled): every percentile within the
    /// histogram's resolution of the exact one, at both precisions, and
    /// the same when the values arrive split over two receivers.
    /// Percentiles over the whole range a network has: latencies of
    /// minutes (issue 45: `p50 60.1 s` with a 207 s mean), and past a day
    /// the largest value seen, never a made-up bound.
    /// A distribution as --state keeps it comes back the same: count,
    /// sum, extremes and every percentile, negatives included; one without
    /// percentiles stays without.
    #[test]
    fn a_kept_distribution_gives_the_same_percentiles() {
        let mut latency = Latency::new(2);
        for ns in (-3_000..200_000).step_by(7).chain([5_000_000_000, 86_400_000_000_000 * 3]) {
            latency.record(ns);
        }
        let mut bytes = Vec::new();
        ciborium::into_writer(&latency, &mut bytes).unwrap();
        let back: Latency = ciborium::from_reader(bytes.as_slice()).unwrap();
        assert_eq!(
            (back.count(), back.sum(), back.min(), back.max()),
            (latency.count(), latency.sum(), latency.min(), latency.max())
        );
        for q in [0.0, 0.001, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(back.quantile(q), latency.quantile(q), "q {q}");
        }
        assert_eq!(back.count_at_or_below(-1), latency.count_at_or_below(-1));
        let mut exact = Latency::exact();
        exact.record(5);
        let mut bytes = Vec::new();
        ciborium::into_writer(&exact, &mut bytes).unwrap();
        let back: Latency = ciborium::from_reader(bytes.as_slice()).unwrap();
        assert!(!back.has_percentiles() && back.mean() == Some(5));
        // A flow past --detailed-flows: its sketch kept, its percentiles too.
        let mut sketched = Latency::sketched();
        for ns in (-3_000..200_000).step_by(7) {
            sketched.record(ns);
        }
        let mut bytes = Vec::new();
        ciborium::into_writer(&sketched, &mut bytes).unwrap();
        let back: Latency = ciborium::from_reader(bytes.as_slice()).unwrap();
        for q in [0.01, 0.5, 0.99] {
            assert!(back.quantile(q).is_some() && back.quantile(q) == sketched.quantile(q), "q {q}");
        }
    }

    #[test]
    fn percentiles_past_a_minute() {
        let mut latency = Latency::new(2);
        for s in [120u64, 207, 207, 207, 300] {
            latency.record((s * 1_000_000_000) as i64);
        }
        let p50 = latency.quantile(0.5).unwrap();
        assert!((205_000_000_000..=209_000_000_000).contains(&p50), "{p50}");
        assert_eq!(latency.quantile(1.0), Some(300_000_000_000));
        let mut days = Latency::new(2);
        days.record(3 * 86_400_000_000_000);
        days.record(2 * 86_400_000_000_000);
        assert_eq!(days.quantile(0.5), Some(3 * 86_400_000_000_000));
    }

    #[test]
    fn percentiles_match_a_known_distribution() {
        let mut values: Vec<i64> = (0..100_000).map(|i| -2_000 + i).collect();
        values.extend(std::iter::repeat_n(5_000_000, 100));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut shuffled = values.clone();
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        values.sort_unstable();
        for digits in [2u8, 3] {
            let mut whole = Latency::new(digits);
            let (mut a, mut b) = (Latency::new(digits), Latency::new(digits));
            for (i, v) in shuffled.iter().enumerate() {
                whole.record(*v);
                if i % 3 == 0 {
                    a.record(*v)
                } else {
                    b.record(*v)
                }
            }
            a.merge(&b);
            let tolerance = 10f64.powi(-i32::from(digits)) * 1.01;
            for q in [0.0, 0.01, 0.019, 0.02, 0.021, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9991, 1.0] {
                let want = exact(&values, q);
                for got in [whole.quantile(q).unwrap(), a.quantile(q).unwrap()] {
                    let error = (got - want).abs() as f64;
                    assert!(
                        error <= tolerance * want.abs() as f64 + 1.0,
                        "q {q} digits {digits}: {got} vs {want}"
                    );
                }
            }
            assert_eq!((a.min(), a.max(), a.count()), (Some(-2_000), Some(5_000_000), 100_100));
            assert_eq!(a.sum(), values.iter().map(|v| i128::from(*v)).sum::<i128>());
            assert_eq!(a.count_at_or_below(-1), Some(2_000));
            assert_eq!(a.count_at_or_below(-2_100), Some(0));
            assert_eq!(a.count_at_or_below(10_000_000), Some(100_100));
            // A share without percentiles leaves the merged one without.
            let mut exact = Latency::exact();
            exact.record(1);
            a.merge(&exact);
            assert_eq!((a.quantile(0.5), a.count()), (None, 100_101));
        }
        assert_eq!(Latency::new(2).quantile(0.5), None);
        assert_eq!(Latency::exact().count_at_or_below(0), None);
    }
}
