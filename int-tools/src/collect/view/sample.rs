//! What the view copies out of the books at each sample: counts, sums and
//! percentiles of every node, link and flow, and each flow's path. Each
//! socket's books are locked once, for the copy only; percentiles are
//! computed again only for what has new observations since the last
//! sample, so a sample of 10,000 quiet flows costs a few counters each.

use std::collections::{BTreeMap, HashMap};

use int_core::flow::FlowKey;

use super::super::hops::{Hops, PathChange};
use super::super::latency::Latency;
use super::super::ledger::Ledger;
use super::super::Shared;

/// A distribution as the view shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub count: u64,
    pub sum: i128,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub p50: Option<i64>,
    pub p99: Option<i64>,
}

impl Stats {
    /// `values`' figures; `known` (the last sample's) is kept when no value
    /// came since, so a quiet distribution costs no percentile walk.
    pub fn of(values: &Latency, known: Option<&Stats>) -> Stats {
        if let Some(known) = known.filter(|known| known.count == values.count()) {
            return *known;
        }
        Stats {
            count: values.count(),
            sum: values.sum(),
            min: values.min(),
            max: values.max(),
            p50: values.quantile(0.5),
            p99: values.quantile(0.99),
        }
    }
}

/// What the previous sample knew, to skip the percentiles of the quiet.
pub trait Known {
    fn node(&self, id: u32) -> Option<(&Stats, &Stats)>;
    fn link(&self, key: (u32, u32)) -> Option<&Stats>;
    fn flow(&self, key: &FlowKey) -> Option<&Stats>;
    fn path(&self, key: &FlowKey) -> Option<&[u32]>;
}

#[derive(Debug, Clone, Default)]
pub struct NodeSample {
    pub hops: u64,
    pub latency: Stats,
    pub queue: Stats,
    pub drops: BTreeMap<u8, u64>,
}

#[derive(Debug, Clone, Default)]
pub struct FlowSample {
    pub latency: Stats,
    pub lost: u64,
    /// `None`: unchanged since the last sample (or never followed).
    pub new_path: Option<Vec<u32>>,
}

#[derive(Debug, Default)]
pub struct Sample {
    pub reports: u64,
    pub nodes: BTreeMap<u32, NodeSample>,
    pub links: BTreeMap<(u32, u32), Stats>,
    pub flows: HashMap<FlowKey, FlowSample>,
    pub path_changes: u64,
    /// The newest path changes the books keep (the view takes the new ones).
    pub recent: Vec<PathChange>,
}

impl Sample {
    /// Every socket's books, each locked for its copy only. A flow's
    /// reports all reach one socket; a node's and a link's may reach
    /// several, so with several sockets their books are merged first (as
    /// the summary merges them) for exact percentiles.
    pub fn take(shared: &Shared, known: &impl Known) -> Sample {
        let mut sample = Sample::default();
        if let [books] = shared.books.as_slice() {
            if let Ok(books) = books.lock() {
                sample.reports = books.totals.received;
                sample.add_flows(&books.ledger, &books.hops, known);
                sample.add_hops(&books.hops, known);
            }
            return sample;
        }
        let mut merged: Option<Hops> = None;
        for books in &shared.books {
            let Ok(books) = books.lock() else { continue };
            sample.reports += books.totals.received;
            sample.add_flows(&books.ledger, &books.hops, known);
            match &mut merged {
                Some(merged) => merged.merge(&books.hops),
                None => merged = Some(books.hops.clone()),
            }
        }
        if let Some(hops) = merged {
            sample.add_hops(&hops, known);
        }
        sample
    }

    fn add_flows(&mut self, ledger: &Ledger, hops: &Hops, known: &impl Known) {
        for (key, flow) in &ledger.flows {
            let latency = Stats::of(&flow.latency, known.flow(key));
            self.flows.insert(*key, FlowSample { latency, lost: flow.lost, new_path: None });
        }
        for (key, path) in hops.followed() {
            if known.path(key) != Some(path) {
                self.flows.entry(*key).or_default().new_path = Some(path.to_vec());
            }
        }
    }

    fn add_hops(&mut self, hops: &Hops, known: &impl Known) {
        for (id, node) in &hops.nodes {
            let (latency, queue) = known.node(*id).unzip();
            self.nodes.insert(
                *id,
                NodeSample {
                    hops: node.hops,
                    latency: Stats::of(&node.latency, latency),
                    queue: Stats::of(&node.queue, queue),
                    drops: node.drops.clone(),
                },
            );
        }
        for (key, latency) in &hops.links {
            self.links.insert(*key, Stats::of(latency, known.link(*key)));
        }
        self.path_changes = hops.path_changes;
        self.recent = hops.recent.iter().cloned().collect();
    }
}
