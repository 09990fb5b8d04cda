//! What the collector learnt from the reports: per flow, latency (with
//! percentiles and a timeline for a bounded number of flows) and packets
//! lost; the same over all flows.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;

use int_core::flow::FlowKey;

use super::latency::Latency;
use super::timeline::{TimeBase, Timeline};

/// Significant digits of a flow's histogram (about 40 KB) and of the
/// histogram over all flows (about 300 KB).
const FLOW_DIGITS: u8 = 2;
const OVERALL_DIGITS: u8 = 3;

/// One report's news about a flow.
#[derive(Debug, Clone, Copy)]
pub struct Observed {
    pub flow: FlowKey,
    pub source_node: Option<u32>,
    pub sink_node: Option<u32>,
    pub measure: Measure,
    /// The time the report states, ns since the epoch, where it states one.
    pub at_ns: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub enum Measure {
    /// A one-way latency, ns, with the packet's flow sequence number and
    /// hop count where the report has them.
    Latency { ns: i64, flow_seq: Option<u32>, hops: Option<u8> },
    /// Packets a loss report declared lost.
    Lost(u32),
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FlowSummary {
    pub latency: Latency,
    pub lost: u64,
    /// Kept with the percentiles, for the same flows.
    pub timeline: Option<Timeline>,
}

impl FlowSummary {
    fn detailed() -> FlowSummary {
        FlowSummary { latency: Latency::new(FLOW_DIGITS), lost: 0, timeline: Some(Timeline::default()) }
    }

    fn plain() -> FlowSummary {
        FlowSummary { latency: Latency::sketched(), lost: 0, timeline: None }
    }

    fn add(&mut self, measure: Measure, at_ms: u64) {
        match measure {
            Measure::Latency { ns, .. } => {
                self.latency.record(ns);
                if let Some(timeline) = &mut self.timeline {
                    timeline.add_latency(at_ms, ns);
                }
            }
            Measure::Lost(count) => {
                self.lost += u64::from(count);
                if let Some(timeline) = &mut self.timeline {
                    timeline.add_lost(at_ms, u64::from(count));
                }
            }
        }
    }

    fn merge(&mut self, other: &FlowSummary) {
        self.latency.merge(&other.latency);
        self.lost += other.lost;
        match (&mut self.timeline, &other.timeline) {
            (Some(ours), Some(theirs)) => ours.merge(theirs),
            (ours, _) => *ours = None,
        }
    }
}

/// How many flows to follow, and how closely.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Flows kept at all; later ones count only in the totals.
    pub flows: usize,
    /// Flows (the first seen) with percentiles and a timeline.
    pub detailed: usize,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Ledger {
    /// foldhash, randomly seeded: fast, and flow keys a sender chooses
    /// cannot be made to collide on purpose without the seed.
    pub flows: HashMap<FlowKey, FlowSummary, RandomState>,
    pub overall: FlowSummary,
    /// Observations of flows beyond [`Limits::flows`].
    pub untracked: u64,
    /// In a [`Ledger::view`], the flows followed but left out (a flow two
    /// receivers both left out counts twice).
    pub elided: usize,
    limits: Limits,
    /// When the current batch arrived, ns since the epoch.
    arrival_ns: u64,
    /// The timelines' time (shared by the receivers), and the last time
    /// put on them, for a report that states none.
    #[serde(skip)]
    base: Arc<TimeBase>,
    last_ms: u64,
}

impl Ledger {
    pub fn new(limits: Limits, base: Arc<TimeBase>) -> Ledger {
        let overall = FlowSummary {
            latency: Latency::new(OVERALL_DIGITS),
            lost: 0,
            timeline: Some(Timeline::default()),
        };
        Ledger {
            flows: HashMap::default(),
            overall,
            untracked: 0,
            elided: 0,
            limits,
            arrival_ns: 0,
            base,
            last_ms: 0,
        }
    }

    /// This ledger under `limits` on `base` (a restored state's, under this
    /// run's flags and time base).
    pub fn resume(&mut self, limits: Limits, base: Arc<TimeBase>) {
        self.limits = limits;
        self.base = base;
    }

    /// This ledger under `other`'s limits and time base (a partition's
    /// checkpoint taken into an aggregator's books).
    pub fn resume_like(&mut self, other: &Ledger) {
        self.resume(other.limits, Arc::clone(&other.base));
    }

    /// Reads the clock once for the batch of reports that just arrived.
    pub fn tick(&mut self) {
        self.arrival_ns = crate::schema::now_ns();
    }

    /// A report that arrived at a receiving collector at `at_ns` (an
    /// aggregator's): the clock is the receivers', never going back.
    pub fn arrived(&mut self, at_ns: u64) {
        self.arrival_ns = self.arrival_ns.max(at_ns);
    }

    /// When the current batch arrived, ms since the epoch (the collector's
    /// clock, for what must not trust the reports' times).
    pub fn arrival_ms(&self) -> u64 {
        self.arrival_ns / 1_000_000
    }

    /// The timelines' start: the first observation's time, ns, and
    /// whether it was a report's.
    pub fn time_base(&self) -> Option<(u64, bool)> {
        self.base.first()
    }

    /// Whether the timelines keep the reports' own times.
    pub fn by_reports(&self) -> Option<bool> {
        self.base.by_reports()
    }

    /// Books one observation.
    /// The timelines' time of a report stated at `at_ns` (if it states
    /// one) in the batch at hand: ms from the first report.
    pub fn time_ms(&mut self, at_ns: Option<u64>) -> u64 {
        self.last_ms = self.base.at_ms(at_ns, self.arrival_ns).unwrap_or(self.last_ms);
        self.last_ms
    }

    pub fn observe(&mut self, observed: &Observed) {
        let at_ms = self.time_ms(observed.at_ns);
        let detailed = self.flows.len() < self.limits.detailed;
        // One hash and probe per report: the entry while there is room for
        // a new flow, else only a known flow's summary.
        let flow = if self.flows.len() < self.limits.flows {
            Some(self.flows.entry(observed.flow).or_insert_with(|| {
                if detailed {
                    FlowSummary::detailed()
                } else {
                    FlowSummary::plain()
                }
            }))
        } else {
            self.flows.get_mut(&observed.flow)
        };
        if flow.is_none() {
            self.untracked += 1;
        }
        for summary in flow.into_iter().chain([&mut self.overall]) {
            summary.add(observed.measure, at_ms);
        }
    }

    /// Adds another receiver's ledger.
    pub fn merge(&mut self, other: &Ledger) {
        for (key, theirs) in &other.flows {
            match self.flows.get_mut(key) {
                Some(ours) => ours.merge(theirs),
                None => {
                    self.flows.insert(*key, theirs.clone());
                }
            }
        }
        self.overall.merge(&other.overall);
        self.untracked += other.untracked;
        self.elided += other.elided;
    }

    /// Flows followed, whether in this ledger or left out of it.
    pub fn flows_followed(&self) -> usize {
        self.flows.len() + self.elided
    }

    /// A copy with only the flows a scrape shows: the `top` most reported
    /// flows with percentiles and the `top` most lossy, so that a scrape
    /// copies a few flows under the receiver's lock, not a million.
    pub fn view(&self, top: usize) -> Ledger {
        let reported = most(&self.flows, top, |f| f.latency.has_percentiles().then(|| f.latency.count()));
        let lossy = most(&self.flows, top, |f| (f.lost > 0).then_some(f.lost));
        let mut flows = HashMap::default();
        for key in reported.into_iter().chain(lossy) {
            if let Some(flow) = self.flows.get(&key) {
                flows.entry(key).or_insert_with(|| flow.clone());
            }
        }
        Ledger {
            elided: self.elided + self.flows.len() - flows.len(),
            flows,
            overall: self.overall.clone(),
            untracked: self.untracked,
            limits: self.limits,
            arrival_ns: self.arrival_ns,
            base: Arc::clone(&self.base),
            last_ms: self.last_ms,
        }
    }

    /// Flows in a stable order: most reports first, then the key.
    pub fn flows_by_reports(&self) -> Vec<(&FlowKey, &FlowSummary)> {
        let mut flows: Vec<_> = self.flows.iter().collect();
        flows.sort_by(|a, b| b.1.latency.count().cmp(&a.1.latency.count()).then(a.0.cmp(b.0)));
        flows
    }
}

/// The keys of the `top` flows of highest `score` (ties: the lower key),
/// in no particular order; flows without a score are left out.
fn most(
    flows: &HashMap<FlowKey, FlowSummary, RandomState>,
    top: usize,
    score: impl Fn(&FlowSummary) -> Option<u64>,
) -> Vec<FlowKey> {
    use std::cmp::Reverse;
    // A min-heap of the best so far: its top is the first to go.
    let mut best = std::collections::BinaryHeap::with_capacity(top + 1);
    for (key, flow) in flows {
        let Some(score) = score(flow) else { continue };
        best.push(Reverse((score, Reverse(*key))));
        if best.len() > top {
            best.pop();
        }
    }
    best.into_iter().map(|Reverse((_, Reverse(key)))| key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn flow(n: u16) -> FlowKey {
        FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, n, 9)
    }

    fn latency(n: u16, ns: i64) -> Observed {
        let measure = Measure::Latency { ns, flow_seq: None, hops: None };
        Observed { flow: flow(n), source_node: None, sink_node: None, measure, at_ns: None }
    }

    #[test]
    fn flows_beyond_the_limits_lose_detail_then_identity_but_count_overall() {
        let mut ledger = Ledger::new(Limits { flows: 3, detailed: 2 }, Default::default());
        for n in 0..5 {
            ledger.observe(&latency(n, 100 * i64::from(n)));
        }
        let lost = Observed { measure: Measure::Lost(4), ..latency(4, 0) };
        ledger.observe(&lost);
        assert_eq!(ledger.flows.len(), 3);
        assert!(
            ledger.flows[&flow(0)].latency.has_percentiles() && ledger.flows[&flow(0)].timeline.is_some()
        );
        assert!(
            !ledger.flows[&flow(2)].latency.has_percentiles() && ledger.flows[&flow(2)].timeline.is_none()
        );
        assert_eq!(ledger.untracked, 3);
        assert_eq!((ledger.overall.latency.count(), ledger.overall.lost), (5, 4));
        assert_eq!(ledger.overall.latency.max(), Some(400));
    }

    #[test]
    fn two_receivers_merge_into_one_ledger() {
        let limits = Limits { flows: 10, detailed: 10 };
        let (mut a, mut b) =
            (Ledger::new(limits, Default::default()), Ledger::new(limits, Default::default()));
        a.observe(&latency(1, 10));
        b.observe(&latency(1, 30));
        b.observe(&latency(2, 5));
        a.merge(&b);
        assert_eq!(a.flows[&flow(1)].latency.count(), 2);
        assert_eq!(a.flows[&flow(1)].latency.mean(), Some(20));
        assert_eq!(a.overall.latency.count(), 3);
        let order: Vec<u16> = a.flows_by_reports().iter().map(|(k, _)| k.src_port).collect();
        assert_eq!(order, vec![1, 2]);
    }

    /// Bytes per flow of a ledger of `flows` flows, `detailed` of them
    /// with histograms: each flow's summary and what its latency holds.
    fn bytes_per_flow(flows: u32, detailed: usize) -> (usize, usize) {
        let limits = Limits { flows: flows as usize, detailed };
        let mut ledger = Ledger::new(limits, Default::default());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..flows {
            // A flow's base latency from 20 µs to 2 ms, each report within
            // 30% of it, one in a hundred ten times it.
            let base = 20_000 + i64::from(n % 100) * 20_000;
            for i in 0..100 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let ns = base * 7 / 10 + (x % (base as u64 * 6 / 10)) as i64;
                let flow = FlowKey::v4(Ipv4Addr::from(n), Ipv4Addr::new(10, 0, 0, 2), 17, 1, 9);
                let measure =
                    Measure::Latency { ns: if i == 0 { ns * 10 } else { ns }, flow_seq: None, hops: None };
                ledger.observe(&Observed { flow, source_node: None, sink_node: None, measure, at_ns: None });
            }
        }
        assert!(ledger.flows.values().all(|f| f.latency.quantile(0.99).is_some()));
        let held: usize = ledger.flows.values().map(|f| f.latency.heap_bytes()).sum();
        (std::mem::size_of::<FlowSummary>(), held / flows as usize)
    }

    /// Every flow has percentiles: past `--detailed-flows` a sketch of
    /// 1 KB at most, a few hundred bytes for a flow's usual spread, 1/100
    /// of a histogram.
    #[test]
    fn every_flow_has_percentiles_in_bounded_memory() {
        let (summary, sketch) = bytes_per_flow(5_000, 0);
        assert!(sketch <= super::super::sketch::MAX_BUCKETS * 8, "{sketch}");
        let (_, histogram) = bytes_per_flow(1_000, 1_000);
        assert!(histogram > 20 * (summary + super::super::sketch::MAX_BUCKETS * 8), "{histogram}");
    }

    /// The figures of docs/counters.md, by hand: `cargo test -p
    /// int-tools --lib percentiles_figures -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn percentiles_figures() {
        for flows in [5_000, 100_000] {
            let (summary, sketch) = bytes_per_flow(flows, 0);
            let total = (summary + sketch) * flows as usize;
            eprintln!("{flows} flows with sketches: {summary} + {sketch} bytes per flow, {total} bytes");
        }
        for flows in [1_000, 5_000] {
            let (summary, histogram) = bytes_per_flow(flows, flows as usize);
            let total = (summary + histogram) * flows as usize;
            eprintln!("{flows} flows with histograms: {summary} + {histogram} bytes per flow, {total} bytes");
        }
    }
}
