//! Latency and loss over time, in a bounded number of buckets: when a run
//! outgrows them, the bucket width doubles and neighbours merge, so a
//! flow's history costs the same for a minute as for a week. Buckets start
//! a millisecond wide, so that a capture of a fraction of a second still
//! has a shape.

use std::sync::OnceLock;

/// At most this many buckets per timeline.
const MAX_BUCKETS: usize = 512;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bucket {
    pub reports: u64,
    pub latency_sum: i128,
    pub latency_min: i64,
    pub latency_max: i64,
    pub lost: u64,
}

impl Bucket {
    pub fn mean(&self) -> Option<i64> {
        (self.reports > 0).then(|| (self.latency_sum / i128::from(self.reports)) as i64)
    }

    fn add_latency(&mut self, ns: i64) {
        if self.reports == 0 || ns < self.latency_min {
            self.latency_min = ns;
        }
        if self.reports == 0 || ns > self.latency_max {
            self.latency_max = ns;
        }
        self.reports += 1;
        self.latency_sum += i128::from(ns);
    }

    fn merge(&mut self, other: &Bucket) {
        if other.reports > 0 {
            if self.reports == 0 || other.latency_min < self.latency_min {
                self.latency_min = other.latency_min;
            }
            if self.reports == 0 || other.latency_max > self.latency_max {
                self.latency_max = other.latency_max;
            }
        }
        self.reports += other.reports;
        self.latency_sum += other.latency_sum;
        self.lost += other.lost;
    }
}

/// Where a run's timelines start and what time they keep: the reports' own
/// times when the first report states one (a recorded link replayed fast
/// keeps its pace; a gap stays a gap), else the times reports arrive.
/// Shared by the receivers.
#[derive(Debug, Default)]
pub struct TimeBase {
    /// The first observation's time, ns, and whether it was a report's.
    first: OnceLock<(u64, bool)>,
}

impl TimeBase {
    /// ms from the first observation to one stated at `report_ns` (if the
    /// report states a time) that arrived at `arrival_ns`; `None` when the
    /// base is the reports' times and this one states none.
    pub fn at_ms(&self, report_ns: Option<u64>, arrival_ns: u64) -> Option<u64> {
        let &(origin, by_reports) =
            self.first.get_or_init(|| (report_ns.unwrap_or(arrival_ns), report_ns.is_some()));
        let at = if by_reports { report_ns? } else { arrival_ns };
        Some(at.saturating_sub(origin) / 1_000_000)
    }

    /// The base a run before this one set (`--state`): the timelines it
    /// kept go on from where they were.
    pub fn resumed(first: Option<(u64, bool)>) -> TimeBase {
        let base = TimeBase::default();
        if let Some(first) = first {
            let _ = base.first.set(first);
        }
        base
    }

    /// The first observation's time, ns, and whether it was a report's.
    pub fn first(&self) -> Option<(u64, bool)> {
        self.first.get().copied()
    }

    /// Whether the timelines keep the reports' times (`None`: no report yet).
    pub fn by_reports(&self) -> Option<bool> {
        self.first.get().map(|(_, by_reports)| *by_reports)
    }
}

/// Buckets of `width_ms` from the first observation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "Stored", from = "Stored")]
pub struct Timeline {
    width_ms: u64,
    buckets: Vec<Bucket>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { width_ms: 1, buckets: Vec::new() }
    }
}

impl Timeline {
    pub fn width_ms(&self) -> u64 {
        self.width_ms
    }

    /// The buckets from the start; bucket `i` covers `[i, i+1) * width`.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    pub fn add_latency(&mut self, at_ms: u64, ns: i64) {
        if let Some(bucket) = self.bucket(at_ms) {
            bucket.add_latency(ns);
        }
    }

    pub fn add_lost(&mut self, at_ms: u64, count: u64) {
        if let Some(bucket) = self.bucket(at_ms) {
            bucket.lost += count;
        }
    }

    /// Adds another timeline of the same start (another receiver's).
    pub fn merge(&mut self, other: &Timeline) {
        let mut other = other.clone();
        while other.width_ms < self.width_ms {
            other.coarsen();
        }
        while self.width_ms < other.width_ms {
            self.coarsen();
        }
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), Bucket::default());
        }
        for (ours, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            ours.merge(theirs);
        }
    }

    /// This timeline as a chart draws it: buckets widened until reports
    /// that follow each other mostly fall in neighbouring buckets (the
    /// median step between buckets with reports is one), so that a line
    /// breaks where reports stopped for a while, not between any two of a
    /// sparse reporter's.
    pub fn for_drawing(&self) -> Timeline {
        let mut drawn = self.clone();
        while drawn.buckets.len() > 8 && drawn.median_step() > 1 {
            drawn.coarsen();
        }
        drawn
    }

    /// The median distance between consecutive buckets with reports.
    fn median_step(&self) -> usize {
        let filled: Vec<usize> = (0..self.buckets.len())
            .filter(|&i| self.buckets.get(i).is_some_and(|b| b.reports > 0 || b.lost > 0))
            .collect();
        let mut steps: Vec<usize> =
            filled.windows(2).filter_map(|pair| Some(pair.get(1)? - pair.first()?)).collect();
        steps.sort_unstable();
        steps.get(steps.len() / 2).copied().unwrap_or(1)
    }

    fn bucket(&mut self, at_ms: u64) -> Option<&mut Bucket> {
        while at_ms / self.width_ms >= MAX_BUCKETS as u64 {
            self.coarsen();
        }
        let index = (at_ms / self.width_ms) as usize;
        if self.buckets.len() <= index {
            self.buckets.resize(index + 1, Bucket::default());
        }
        self.buckets.get_mut(index)
    }

    /// Doubles the width: each pair of buckets becomes one.
    fn coarsen(&mut self) {
        let merged = self
            .buckets
            .chunks(2)
            .map(|pair| {
                let mut bucket = Bucket::default();
                pair.iter().for_each(|b| bucket.merge(b));
                bucket
            })
            .collect();
        self.buckets = merged;
        self.width_ms *= 2;
    }
}

/// A [`Timeline`] as `--state` keeps it: its width, its length and only
/// the buckets with something in them (a flow first seen late has
/// hundreds of empty ones before its first), each as a tuple:
/// (index, reports, latency sum, min, max, lost).
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    width_ms: u64,
    len: usize,
    filled: Vec<(usize, u64, i128, i64, i64, u64)>,
}

impl From<Timeline> for Stored {
    fn from(timeline: Timeline) -> Stored {
        let filled = timeline
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != Bucket::default())
            .map(|(i, b)| (i, b.reports, b.latency_sum, b.latency_min, b.latency_max, b.lost))
            .collect();
        Stored { width_ms: timeline.width_ms, len: timeline.buckets.len(), filled }
    }
}

impl From<Stored> for Timeline {
    /// A stored timeline as it was; one out of bounds (not written by
    /// collect) is cut to [`MAX_BUCKETS`].
    fn from(stored: Stored) -> Timeline {
        let mut buckets = vec![Bucket::default(); stored.len.min(MAX_BUCKETS)];
        for (i, reports, latency_sum, latency_min, latency_max, lost) in stored.filled {
            if let Some(bucket) = buckets.get_mut(i) {
                *bucket = Bucket { reports, latency_sum, latency_min, latency_max, lost };
            }
        }
        // A power of two, as coarsening makes it, that doubling never
        // overflows.
        let width_ms = stored.width_ms.clamp(1, 1 << 40).next_power_of_two();
        Timeline { width_ms, buckets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A week of reports, one a minute, with a loss every hour: the
    /// timeline stays within its buckets, nothing is lost in the
    /// merging, and extremes survive.
    #[test]
    fn a_long_run_coarsens_without_losing_anything() {
        let mut timeline = Timeline::default();
        let minutes = 7 * 24 * 60u64;
        for minute in 0..minutes {
            timeline.add_latency(minute * 60_000, (minute % 100) as i64 - 10);
            if minute % 60 == 0 {
                timeline.add_lost(minute * 60_000 + 1, 3);
            }
        }
        assert!(timeline.buckets().len() <= MAX_BUCKETS);
        assert!(timeline.width_ms() > 1000);
        // One report a minute: drawn in buckets of a minute or more.
        assert!(timeline.for_drawing().width_ms() >= 60_000);
        let total = timeline.buckets().iter().fold(Bucket::default(), |mut all, b| {
            all.merge(b);
            all
        });
        assert_eq!(total.reports, minutes);
        assert_eq!(total.lost, 3 * minutes.div_ceil(60));
        assert_eq!((total.latency_min, total.latency_max), (-10, 89));
        let sum: i128 = (0..minutes).map(|m| i128::from((m % 100) as i64 - 10)).sum();
        assert_eq!(total.latency_sum, sum);
    }

    /// A timeline as --state keeps it (its filled buckets only) comes back
    /// the same; a stored width no run makes is held to a power of two.
    #[test]
    fn a_kept_timeline_comes_back_the_same() {
        let mut timeline = Timeline::default();
        timeline.add_latency(400, -7);
        timeline.add_latency(90_000, 12);
        timeline.add_lost(95_000, 3);
        let mut bytes = Vec::new();
        ciborium::into_writer(&timeline, &mut bytes).unwrap();
        let back: Timeline = ciborium::from_reader(bytes.as_slice()).unwrap();
        assert_eq!((back.width_ms(), back.buckets()), (timeline.width_ms(), timeline.buckets()));
        assert!(bytes.len() < 100, "{} bytes", bytes.len());
        let odd = Stored { width_ms: u64::MAX, len: usize::MAX, filled: vec![(usize::MAX, 1, 0, 0, 0, 0)] };
        let odd = Timeline::from(odd);
        assert_eq!((odd.width_ms(), odd.buckets().len()), (1 << 40, MAX_BUCKETS));
    }

    #[test]
    fn timelines_of_different_widths_merge() {
        let (mut short, mut long) = (Timeline::default(), Timeline::default());
        short.add_latency(500, 7);
        long.add_latency(600_000, 9);
        long.add_lost(1_500, 2);
        short.merge(&long);
        assert_eq!(short.width_ms(), long.width_ms());
        let first = short.buckets()[0];
        assert_eq!((first.reports, first.lost, first.latency_min), (1, 2, 7));
        assert_eq!(short.buckets().iter().map(|b| b.reports).sum::<u64>(), 2);
    }

    /// Reports of a recorded link, 5 s of their own time arriving within
    /// 1 ms, spread over 5 s; without a time of their own, by arrival.
    #[test]
    fn the_time_is_the_reports_own_where_they_state_it() {
        let base = TimeBase::default();
        let arrival = 1_800_000_000_000_000_000;
        let recorded = 1_700_000_000_000_000_000;
        let times: Vec<_> =
            (0..=5).map(|s| base.at_ms(Some(recorded + s * 1_000_000_000), arrival + s)).collect();
        assert_eq!(times, [0, 1000, 2000, 3000, 4000, 5000].map(Some));
        assert_eq!(base.by_reports(), Some(true));
        assert_eq!(base.at_ms(None, arrival), None, "no time of its own: the caller keeps its last");
        let by_arrival = TimeBase::default();
        assert_eq!(by_arrival.at_ms(None, arrival), Some(0));
        assert_eq!(by_arrival.at_ms(Some(recorded), arrival + 3_000_000_000), Some(3000));
        assert_eq!(by_arrival.by_reports(), Some(false));
    }
}
