//! What the view copies out of the books at each sample: counts, sums and
//! percentiles of every node, link and flow, and each flow's path. The
//! counts are copied under one lock; percentiles are computed again only
//! for what has new observations since they were last computed, at most
//! [`PER_SAMPLE`] distributions a sample (taken in turn), under the lock
//! [`CHUNK`] at a time: the receivers wait at most that long, and the
//! view's work per sample is bounded whatever the fleet (30,000 links'
//! percentiles in one hold kept the receivers out for seconds in a debug
//! build).

use std::sync::Mutex;

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Excluded, Unbounded};

use int_core::flow::FlowKey;

use crate::collect::books::hops::{Hops, Node, PathChange};
use crate::collect::books::latency::Latency;
use crate::collect::books::ledger::{FlowSummary, Ledger};
use crate::collect::books::Books;
use crate::collect::shared::Shared;

use super::congestion::{Mark, Taken};

/// Distributions whose percentiles are computed per hold of a lock.
const CHUNK: usize = 256;
/// Flows, nodes or links whose counts are copied per hold of a lock.
const COPY_CHUNK: usize = 2048;
/// Distributions whose percentiles are computed per sample at most.
pub const PER_SAMPLE: usize = 4096;

/// A distribution as the view shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub count: u64,
    pub sum: i128,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub p50: Option<i64>,
    pub p99: Option<i64>,
    /// The count the percentiles are of (behind `count` while they wait
    /// for their turn).
    pub at: u64,
}

impl Stats {
    /// `values`' figures; `known` (the last sample's) is kept when no value
    /// came since, so a quiet distribution costs no percentile walk.
    pub fn of(values: &Latency, known: Option<&Stats>) -> Stats {
        let (mut stats, changed) = Stats::counts(values, known);
        if changed {
            stats.percentiles(values);
        }
        stats
    }

    /// Count, sum and extremes, the percentiles `known`; whether they
    /// changed (the percentiles are then to be computed again).
    fn counts(values: &Latency, known: Option<&Stats>) -> (Stats, bool) {
        if let Some(known) = known.filter(|known| known.count == values.count() && known.at == known.count) {
            return (*known, false);
        }
        let (p50, p99, at) = known.map_or((None, None, 0), |known| (known.p50, known.p99, known.at));
        let (count, sum, min, max) = (values.count(), values.sum(), values.min(), values.max());
        (Stats { count, sum, min, max, p50, p99, at }, at != count)
    }

    fn percentiles(&mut self, values: &Latency) {
        (self.p50, self.p99) = (values.quantile(0.5), values.quantile(0.99));
        self.at = self.count;
    }
}

/// A distribution whose percentiles are to be computed.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Flow(FlowKey),
    NodeLatency(u32),
    NodeQueue(u32),
    Link((u32, u32)),
}

/// Percentiles now (`None`: the books are a merged copy, no lock held
/// long), or later, listed.
type Later = Option<Vec<Pending>>;

fn stats(values: &Latency, known: Option<&Stats>, later: &mut Later, pending: Pending) -> Stats {
    match later {
        Some(list) => {
            let (stats, changed) = Stats::counts(values, known);
            if changed {
                list.push(pending);
            }
            stats
        }
        None => Stats::of(values, known),
    }
}

/// What the previous sample knew, to skip the percentiles of the quiet.
pub trait Known {
    fn node(&self, id: u32) -> Option<(&Stats, &Stats)>;
    fn link(&self, key: (u32, u32)) -> Option<&Stats>;
    fn flow(&self, key: &FlowKey) -> Option<&Stats>;
    fn path(&self, key: &FlowKey) -> Option<&[u32]>;
    /// Where the last sample of the `socket`th books' congestion stopped.
    fn congestion_mark(&self, socket: usize) -> Mark;
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    /// Episodes per queue and sinks' queue alerts per node, so far.
    pub congestion: Congested,
    /// The congestion pages' copy: new and open episodes, new cells.
    pub episodes: Taken,
}

/// Congestion episodes per queue and queue alerts (Q) per node, so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Congested {
    pub episodes: BTreeMap<(u32, u8), u64>,
    pub alerts: BTreeMap<u32, u64>,
}

impl Congested {
    fn add(&mut self, books: &crate::collect::books::congestion::Congestion) {
        for (key, episodes) in books.episodes_by_queue() {
            *self.episodes.entry(key).or_default() += episodes;
        }
        for (node, count) in &books.counts.queue_alerts {
            *self.alerts.entry(*node).or_default() += count;
        }
    }
}

impl Sample {
    /// Every socket's books, each locked for its copy only. A flow's
    /// reports all reach one socket; a node's and a link's may reach
    /// several, so with several sockets their books are merged first (as
    /// the summary merges them) for exact percentiles.
    pub fn take(shared: &Shared, known: &impl Known, turn: &mut usize) -> Sample {
        let mut sample = Sample::default();
        if let [only] = shared.books.as_slice() {
            if let Ok(books) = only.lock() {
                sample.congestion.add(&books.congestion);
                sample.episodes.add(0, &books.congestion, known.congestion_mark(0));
            }
            let mut later = Some(Vec::new());
            sample.copy_in_chunks(only, known, &mut later);
            sample.fill_percentiles(only, later.unwrap_or_default(), turn);
            return sample;
        }
        let mut merged: Option<Hops> = None;
        for (socket, books) in shared.books.iter().enumerate() {
            let mut later = Some(Vec::new());
            if let Ok(books) = books.lock() {
                sample.reports += books.totals.reports;
                sample.congestion.add(&books.congestion);
                sample.episodes.add(socket, &books.congestion, known.congestion_mark(socket));
                sample.add_flows(&books.ledger, &books.hops, known, &mut later);
                match &mut merged {
                    Some(merged) => merged.merge(&books.hops),
                    None => merged = Some(books.hops.clone()),
                }
            }
            sample.fill_percentiles(books, later.unwrap_or_default(), turn);
        }
        if let Some(hops) = merged {
            sample.add_hops(&hops, known, &mut None);
        }
        sample
    }

    /// The percentiles of [`PER_SAMPLE`] of `pending` from the `turn`th
    /// on (the next sample goes on from there), [`CHUNK`] per hold of the
    /// books' lock.
    fn fill_percentiles(&mut self, books: &Mutex<Books>, mut pending: Vec<Pending>, turn: &mut usize) {
        if pending.len() > PER_SAMPLE {
            let len = pending.len();
            pending.rotate_left(*turn % len);
            pending.truncate(PER_SAMPLE);
            *turn = turn.wrapping_add(PER_SAMPLE);
        }
        for chunk in pending.chunks(CHUNK) {
            let Ok(books) = books.lock() else { return };
            for item in chunk {
                let (values, stats) = match item {
                    Pending::Flow(key) => (
                        books.ledger.flows.get(key).map(|f| &f.latency),
                        self.flows.get_mut(key).map(|f| &mut f.latency),
                    ),
                    Pending::NodeLatency(id) => (
                        books.hops.nodes.get(id).map(|n| &n.latency),
                        self.nodes.get_mut(id).map(|n| &mut n.latency),
                    ),
                    Pending::NodeQueue(id) => (
                        books.hops.nodes.get(id).map(|n| &n.queue),
                        self.nodes.get_mut(id).map(|n| &mut n.queue),
                    ),
                    Pending::Link(key) => (books.hops.links.get(key), self.links.get_mut(key)),
                };
                if let (Some(values), Some(stats)) = (values, stats) {
                    stats.percentiles(values);
                }
            }
        }
    }

    /// One socket's counts, [`COPY_CHUNK`] flows, nodes or links per hold
    /// of its lock (30,000 links in one hold cost the receivers half their
    /// reports under load).
    fn copy_in_chunks(&mut self, books: &Mutex<Books>, known: &impl Known, later: &mut Later) {
        let flows: Vec<FlowKey> = match books.lock() {
            Ok(books) => books.ledger.flows.keys().copied().collect(),
            Err(_) => return,
        };
        for chunk in flows.chunks(COPY_CHUNK) {
            let Ok(books) = books.lock() else { return };
            for key in chunk {
                if let Some(flow) = books.ledger.flows.get(key) {
                    self.add_flow(key, flow, known, later);
                }
            }
        }
        in_chunks(books, |b| &b.hops.nodes, |id, node| self.add_node(id, node, known, later));
        in_chunks(books, |b| &b.hops.links, |key, latency| self.add_link(key, latency, known, later));
        if let Ok(books) = books.lock() {
            self.reports = books.totals.reports;
            self.add_paths(&books.hops, known);
        }
    }

    fn add_flows(&mut self, ledger: &Ledger, hops: &Hops, known: &impl Known, later: &mut Later) {
        for (key, flow) in &ledger.flows {
            self.add_flow(key, flow, known, later);
        }
        self.add_paths(hops, known);
    }

    fn add_flow(&mut self, key: &FlowKey, flow: &FlowSummary, known: &impl Known, later: &mut Later) {
        let latency = stats(&flow.latency, known.flow(key), later, Pending::Flow(*key));
        self.flows.insert(*key, FlowSample { latency, lost: flow.lost, new_path: None });
    }

    /// The paths that changed (after the flows: a flow's copy has none),
    /// and the path changes.
    fn add_paths(&mut self, hops: &Hops, known: &impl Known) {
        for (key, path) in hops.followed_paths() {
            if known.path(key) != Some(path) {
                self.flows.entry(*key).or_default().new_path = Some(path.to_vec());
            }
        }
        self.path_changes = hops.path_changes;
        self.recent = hops.recent.iter().cloned().collect();
    }

    fn add_hops(&mut self, hops: &Hops, known: &impl Known, later: &mut Later) {
        for (id, node) in &hops.nodes {
            self.add_node(*id, node, known, later);
        }
        for (key, latency) in &hops.links {
            self.add_link(*key, latency, known, later);
        }
        self.path_changes = hops.path_changes;
        self.recent = hops.recent.iter().cloned().collect();
    }

    fn add_node(&mut self, id: u32, node: &Node, known: &impl Known, later: &mut Later) {
        let (latency, queue) = known.node(id).unzip();
        let sample = NodeSample {
            hops: node.hops,
            latency: stats(&node.latency, latency, later, Pending::NodeLatency(id)),
            queue: stats(&node.queue, queue, later, Pending::NodeQueue(id)),
            drops: node.drops.clone(),
        };
        self.nodes.insert(id, sample);
    }

    fn add_link(&mut self, key: (u32, u32), latency: &Latency, known: &impl Known, later: &mut Later) {
        self.links.insert(key, stats(latency, known.link(key), later, Pending::Link(key)));
    }
}

/// `each` entry of the map `of` picks in one socket's books, in key order,
/// [`COPY_CHUNK`] per hold of its lock.
fn in_chunks<K: Ord + Copy, V>(
    books: &Mutex<Books>,
    of: fn(&Books) -> &BTreeMap<K, V>,
    mut each: impl FnMut(K, &V),
) {
    let mut after: Option<K> = None;
    loop {
        let Ok(books) = books.lock() else { return };
        let map = of(&books);
        let range = match after {
            None => map.range(..),
            Some(key) => map.range((Excluded(key), Unbounded)),
        };
        let mut copied = 0;
        for (key, value) in range.take(COPY_CHUNK) {
            each(*key, value);
            (after, copied) = (Some(*key), copied + 1);
        }
        if copied < COPY_CHUNK {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::sync::{Arc, Mutex};

    use int_core::hop::Hop;

    use super::super::board::Board;
    use super::*;
    use crate::collect::books::hops::{Limits as HopLimits, Seen};
    use crate::collect::books::join::Join;
    use crate::collect::books::ledger::Limits;

    /// One socket's books holding `stacks` stacks of 63 hops: 63 links each.
    fn shared_with_links(stacks: u32) -> Shared {
        let mut hops = Hops::new(HopLimits { nodes: 100_000, links: 100_000, flows: 100_000 });
        for stack in 0..stacks {
            let path: Vec<Hop> = (0..63u32)
                .map(|n| Hop {
                    node_id: Some(stack * 100 + n),
                    hop_latency: Some(n),
                    ingress_timestamp: Some(u64::from(n) * 10),
                    egress_timestamp: Some(u64::from(n) * 10 + 5),
                    ..Hop::default()
                })
                .collect();
            let flow = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, stack as u16, 1);
            hops.observe(&Seen {
                flow,
                hops: &path,
                sink: Some(1_000_000),
                sink_ingress_ns: Some(700),
                at_ms: 0,
            });
        }
        let books = Books {
            ledger: Ledger::new(Limits { flows: 10, detailed: 10 }, Arc::default()),
            hops,
            senders: BTreeMap::new(),
            totals: Default::default(),
            join: Join::new(1000, Vec::new(), 32),
            exporters: Vec::new(),
            datagrams: None,
            names: Default::default(),
            congestion: Default::default(),
            path_room: Vec::new(),
        };
        let books = vec![Arc::new(Mutex::new(books))];
        Shared {
            books,
            reports: AtomicU64::new(0),
            quit: AtomicBool::new(false),
            counted: Mutex::new(Vec::new()),
            names: Default::default(),
        }
    }

    /// More distributions than one sample computes: the first sample has
    /// PER_SAMPLE percentiles, every count; the next one the rest.
    #[test]
    fn percentiles_beyond_a_samples_share_come_next_sample() {
        let shared = shared_with_links(100);
        let (mut board, mut turn) = (Board::new(1000), 0);
        let sample = Sample::take(&shared, &board, &mut turn);
        let (links, nodes) = (sample.links.len(), sample.nodes.len());
        assert_eq!(links, 100 * 63);
        let computed = |board: &Board| {
            let links = board.links.values().filter(|l| l.latency.p50.is_some()).count();
            links + board.nodes.values().filter(|n| n.now.latency.p50.is_some()).count()
        };
        assert!(sample.links.values().all(|l| l.count == 1));
        board.apply(sample, 0);
        // Nodes with hop latency (the sink has none) and links: 12,600,
        // four samples' share.
        let all = links + nodes - 1;
        assert_eq!(computed(&board), PER_SAMPLE);
        for t in 1..all.div_ceil(PER_SAMPLE) {
            board.apply(Sample::take(&shared, &board, &mut turn), t as u64 * 1000);
            assert_eq!(computed(&board), all.min((t + 1) * PER_SAMPLE));
        }
        assert_eq!(computed(&board), all);
    }
}
