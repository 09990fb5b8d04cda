//! A latency's percentiles in a few hundred bytes: the flows past
//! `--detailed-flows` keep one instead of a 40 KB HDR histogram, so that
//! every flow has a p50 and a p99 (docs/counters.md gives the memory).
//!
//! Log-linear buckets, as HDR's at its coarsest: values below 32 each
//! their own, then 32 buckets per power of two (a bucket spans 1/32 of
//! its lower bound; its midpoint is within 1.6% of any value in it).
//! Only the buckets that hold values are kept, sorted, 8 bytes each; past
//! [`MAX_BUCKETS`] the two lowest merge, so the tail (p99) stays exact to
//! the bucket and the bound holds whatever the values. Negative
//! latencies (a source clock ahead) have buckets of their own, below.

/// Bits of a value kept below its highest: 32 buckets per power of two.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets kept at most (1 KB): eight powers of two at full resolution.
pub const MAX_BUCKETS: usize = 128;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sketch {
    /// (bucket, values in it), by bucket: by value.
    buckets: Vec<(i16, u32)>,
}

/// The bucket of a magnitude: 0 to 1,887 for any u64.
fn magnitude_bucket(m: u64) -> i16 {
    if m < SUB {
        return m as i16;
    }
    let power = 63 - m.leading_zeros();
    let below = ((m >> (power - SUB_BITS)) - SUB) as u32;
    (SUB as u32 + (power - SUB_BITS) * SUB as u32 + below) as i16
}

/// The middle of a magnitude bucket.
fn magnitude_middle(bucket: i16) -> u64 {
    let b = u64::from(bucket.unsigned_abs());
    if b < SUB {
        return b;
    }
    let (power, below) = ((b - SUB) / SUB + u64::from(SUB_BITS), (b - SUB) % SUB);
    let width = 1u64 << (power - u64::from(SUB_BITS));
    let low = (SUB + below) << (power - u64::from(SUB_BITS));
    low.saturating_add(width / 2)
}

/// A value's bucket: negative values below every other, in value order.
fn bucket(ns: i64) -> i16 {
    let magnitude = magnitude_bucket(ns.unsigned_abs());
    if ns < 0 {
        -magnitude - 1
    } else {
        magnitude
    }
}

fn middle(bucket: i16) -> i64 {
    if bucket < 0 {
        -(magnitude_middle(-(bucket + 1)).min(i64::MAX as u64) as i64)
    } else {
        magnitude_middle(bucket).min(i64::MAX as u64) as i64
    }
}

impl Sketch {
    pub fn record(&mut self, ns: i64) {
        self.add(bucket(ns), 1);
    }

    fn add(&mut self, bucket: i16, count: u32) {
        match self.buckets.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(at) => {
                if let Some((_, n)) = self.buckets.get_mut(at) {
                    *n = n.saturating_add(count);
                }
            }
            Err(at) if self.buckets.len() < MAX_BUCKETS => self.buckets.insert(at, (bucket, count)),
            // Full: the lowest bucket goes into the next one up (made
            // first, so the vector never grows past the bound).
            Err(0) => {
                if let Some((_, n)) = self.buckets.first_mut() {
                    *n = n.saturating_add(count);
                }
            }
            Err(at) => {
                let (_, lowest) = self.buckets.remove(0);
                self.buckets.insert(at - 1, (bucket, count));
                if let Some((_, n)) = self.buckets.first_mut() {
                    *n = n.saturating_add(lowest);
                }
            }
        }
    }

    /// Adds another sketch's values.
    pub fn merge(&mut self, other: &Sketch) {
        for (bucket, count) in &other.buckets {
            self.add(*bucket, *count);
        }
    }

    /// Adds `count` values of `ns` (another distribution's, copied in).
    pub fn record_n(&mut self, ns: i64, count: u64) {
        self.add(bucket(ns), u32::try_from(count).unwrap_or(u32::MAX));
    }

    /// The value at quantile `q` (0 to 1), to the middle of its bucket, by
    /// the rank rule of [`super::latency::Latency::quantile`].
    pub fn quantile(&self, q: f64) -> Option<i64> {
        let total: u64 = self.buckets.iter().map(|(_, n)| u64::from(*n)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (bucket, n) in &self.buckets {
            seen += u64::from(*n);
            if seen >= rank {
                return Some(middle(*bucket));
            }
        }
        None
    }

    /// Bytes it holds beside its own 24.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(i16, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value's bucket holds it, its middle within 1/64 of it, and
    /// buckets are in value order, across the whole range of i64.
    #[test]
    fn buckets_hold_their_values_in_order() {
        let mut values: Vec<i64> = (-100..100).collect();
        for shift in 0..63 {
            for v in [1i64 << shift, (1i64 << shift) + 1, (1i64 << shift).wrapping_mul(3) / 2] {
                values.extend([v, -v]);
            }
        }
        values.extend([i64::MAX, i64::MIN, i64::MIN + 1]);
        values.sort_unstable();
        let mut last = i16::MIN;
        for v in values {
            let b = bucket(v);
            assert!(b >= last, "{v}: bucket {b} below {last}");
            last = b;
            let (m, want) = (middle(b) as f64, v as f64);
            assert!((m - want).abs() <= want.abs() / 64.0 + 1.0, "{v}: middle {m}");
        }
        assert_eq!(bucket(i64::MAX), 1887);
    }

    /// A flow's latencies (a spread of 10 to 100 µs, a 1% tail at 5 ms,
    /// some negative): p50 and p99 within 1.6% of the exact ones; a merge
    /// of two halves is the sketch of the whole; the bucket bound holds.
    #[test]
    fn percentiles_match_a_known_distribution() {
        let mut values: Vec<i64> = (0..9_900).map(|i| 10_000 + (i * 7919) % 90_000).collect();
        values.extend(std::iter::repeat_n(5_000_000, 100));
        values.extend([-300, -2_000]);
        let (mut whole, mut a, mut b) = (Sketch::default(), Sketch::default(), Sketch::default());
        for (i, v) in values.iter().enumerate() {
            whole.record(*v);
            if i % 2 == 0 {
                a.record(*v)
            } else {
                b.record(*v)
            }
        }
        a.merge(&b);
        assert_eq!(a, whole);
        values.sort_unstable();
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let want = values[rank - 1] as f64;
            let got = whole.quantile(q).unwrap() as f64;
            assert!((got - want).abs() <= want.abs() / 64.0 + 1.0, "q {q}: {got} vs {want}");
        }
        assert!(whole.buckets.len() <= MAX_BUCKETS);
        assert_eq!(Sketch::default().quantile(0.5), None);
    }

    /// Values over more than eight powers of two: the lowest buckets merge,
    /// the bound holds, the high percentiles stay.
    #[test]
    fn a_wide_spread_keeps_its_tail_within_the_bound() {
        let mut sketch = Sketch::default();
        for shift in 0..40 {
            for step in 0..32 {
                sketch.record((32 + step) << shift);
            }
        }
        assert_eq!(sketch.buckets.len(), MAX_BUCKETS);
        assert_eq!(sketch.heap_bytes(), MAX_BUCKETS * 8);
        let p99 = sketch.quantile(0.99).unwrap() as f64;
        let want = ((32i64 + 19) << 39) as f64;
        assert!((p99 - want).abs() <= want / 64.0, "{p99} vs {want}");
    }
}
