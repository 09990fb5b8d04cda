//! The text exposition format's writers: a metric's head, a counter, a
//! gauge, a family by outcome, a histogram and a summary.

use std::fmt::Write as _;

use crate::collect::books::latency::{Latency, PERCENTILES};

/// Bucket bounds, ns: 1 µs to 5 minutes (a network's latencies, and a
/// capture replayed later).
const BUCKETS_NS: [i64; 15] = [
    1_000,
    10_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    60_000_000_000,
    300_000_000_000,
];

/// Quantiles, sum and count of one distribution.
pub(super) fn summary(out: &mut String, name: &str, labels: &str, values: &Latency) {
    for (_, q) in PERCENTILES {
        if let Some(value) = values.quantile(q) {
            let _ = writeln!(out, "{name}{{{labels},quantile=\"{q}\"}} {value}");
        }
    }
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", values.sum());
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", values.count());
}

/// Buckets, sum and count of one latency distribution, in seconds
/// (Prometheus' base unit; the collector keeps ns).
pub(super) fn histogram(out: &mut String, name: &str, labels: &str, latency: &Latency) {
    let comma = if labels.is_empty() { "" } else { "," };
    for bound in BUCKETS_NS {
        let count = latency.count_at_or_below(bound).unwrap_or(0).min(latency.count());
        let le = bound as f64 / 1e9;
        let _ = writeln!(out, "{name}_bucket{{{labels}{comma}le=\"{le}\"}} {count}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}{comma}le=\"+Inf\"}} {}", latency.count());
    let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
    let _ = writeln!(out, "{name}_sum{braces} {}", latency.sum() as f64 / 1e9);
    let _ = writeln!(out, "{name}_count{braces} {}", latency.count());
}
