//! The view's own books: what the page shows, kept from sample to sample.
//! Each node, link and flow has its latest figures and a bounded history
//! (one point per sample that brought new observations, the mean over
//! that interval); events (path changes, hop changes, drops, loss, nodes
//! going stale and coming back) are kept in one bounded ring. Times are ms
//! since the view started.

use super::super::names;
use std::collections::{BTreeMap, HashMap, VecDeque};

use int_core::flow::FlowKey;

use super::sample::{FlowSample, Known, NodeSample, Sample, Stats};

/// Points kept per node and per link (at one a second: five minutes).
pub const NODE_POINTS: usize = 300;
/// Points kept per flow (10,000 flows x 60 points: about 20 MB).
pub const FLOW_POINTS: usize = 60;
/// Paths kept per flow, the newest.
pub const PATH_HISTORY: usize = 16;
/// Events kept, the newest.
pub const EVENTS: usize = 1000;
/// A node's mean hop latency over an interval this many times its last
/// interval's (or a this-many-th of it) is a hop change.
const HOP_CHANGE_FACTOR: i128 = 2;

/// A bounded history: the oldest point goes when a new one would not fit.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Ring<T> {
    cap: usize,
    items: VecDeque<T>,
}

impl<T> Ring<T> {
    pub fn new(cap: usize) -> Ring<T> {
        Ring { cap, items: VecDeque::new() }
    }

    pub fn push(&mut self, item: T) {
        if self.items.len() == self.cap {
            self.items.pop_front();
        }
        self.items.push_back(item);
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.items.iter()
    }

    /// Drops the items `old` says are old, from the oldest on, keeping
    /// the newest `keep` at least; how many.
    pub fn drop_old(&mut self, keep: usize, old: impl Fn(&T) -> bool) -> usize {
        let before = self.items.len();
        while self.items.len() > keep && self.items.front().is_some_and(&old) {
            self.items.pop_front();
        }
        before - self.items.len()
    }

    /// Drops the older half of the items beyond the newest `keep`
    /// (rounded up: a last one goes too); how many.
    pub fn halve(&mut self, keep: usize) -> usize {
        let drop = self.items.len().saturating_sub(keep).div_ceil(2);
        self.items.drain(..drop);
        drop
    }
}

/// The mean of what came between two samples of one distribution.
fn interval_mean(old: &Stats, new: &Stats) -> Option<i64> {
    let count = new.count.checked_sub(old.count).filter(|n| *n > 0)?;
    Some(((new.sum - old.sum) / i128::from(count)) as i64)
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct NodePoint {
    pub t_ms: u64,
    pub latency: Option<i64>,
    pub queue: Option<i64>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NodeRow {
    pub now: NodeSample,
    /// When a report last told of the node.
    pub seen_ms: u64,
    pub stale: bool,
    pub points: Ring<NodePoint>,
    /// When a flow's current path last went through the node (`None`:
    /// never seen on a path, e.g. known from drop reports only).
    pub on_path_ms: Option<u64>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LinkRow {
    pub latency: Stats,
    pub seen_ms: u64,
    /// (t_ms, mean latency over the interval).
    pub points: Ring<(u64, i64)>,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct FlowPoint {
    pub t_ms: u64,
    pub latency: Option<i64>,
    pub lost: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FlowRow {
    /// The flow's number in the view's pages (/api/flows/ID).
    pub id: u64,
    pub key: FlowKey,
    pub latency: Stats,
    pub lost: u64,
    /// When its latency, loss or path last changed.
    pub changed_ms: u64,
    /// (t_ms, path) from the first path seen on.
    pub paths: Ring<(u64, Vec<u32>)>,
    pub points: Ring<FlowPoint>,
}

impl FlowRow {
    pub fn path(&self) -> Option<&[u32]> {
        self.paths.iter().next_back().map(|(_, path)| path.as_slice())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    PathChange,
    HopChange,
    Drops,
    Loss,
    Stale,
    Back,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::PathChange => "path_change",
            EventKind::HopChange => "hop_change",
            EventKind::Drops => "drops",
            EventKind::Loss => "loss",
            EventKind::Stale => "stale",
            EventKind::Back => "back",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub t_ms: u64,
    pub kind: EventKind,
    /// The node it is about (a hop change, drops, stale, back).
    pub node: Option<u32>,
    /// The flow's id (a path change, loss); a path change's node is the
    /// first on its new path that was not on its old one.
    pub flow: Option<u64>,
    /// What happened, in words.
    pub text: String,
}

/// Everything the view shows.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Board {
    pub now_ms: u64,
    pub stale_after_ms: u64,
    pub reports: u64,
    pub nodes: BTreeMap<u32, NodeRow>,
    pub links: BTreeMap<(u32, u32), LinkRow>,
    pub flows: HashMap<FlowKey, FlowRow>,
    /// Flow ids to their keys.
    pub ids: HashMap<u64, FlowKey>,
    pub events: Ring<Event>,
    /// The links of the paths flows take now, each with how many flows
    /// take it: known from the paths alone, so a fabric whose hops carry
    /// no timestamps (no link latency in the books) still has its links.
    pub adjacency: BTreeMap<(u32, u32), u64>,
    path_changes: u64,
}

impl Known for Board {
    fn node(&self, id: u32) -> Option<(&Stats, &Stats)> {
        self.nodes.get(&id).map(|row| (&row.now.latency, &row.now.queue))
    }
    fn link(&self, key: (u32, u32)) -> Option<&Stats> {
        self.links.get(&key).map(|row| &row.latency)
    }
    fn flow(&self, key: &FlowKey) -> Option<&Stats> {
        self.flows.get(key).map(|row| &row.latency)
    }
    fn path(&self, key: &FlowKey) -> Option<&[u32]> {
        self.flows.get(key).and_then(FlowRow::path)
    }
}

impl Board {
    pub fn new(stale_after_ms: u64) -> Board {
        Board {
            now_ms: 0,
            stale_after_ms,
            reports: 0,
            nodes: BTreeMap::new(),
            links: BTreeMap::new(),
            flows: HashMap::new(),
            ids: HashMap::new(),
            events: Ring::new(EVENTS),
            adjacency: BTreeMap::new(),
            path_changes: 0,
        }
    }

    /// Leaves out the events and points before `t_ms`, and the paths a
    /// flow left before then (never its current one): what a kept state
    /// drops by age. Returns how many.
    pub fn forget_before(&mut self, t_ms: u64) -> usize {
        let mut dropped = self.events.drop_old(0, |e| e.t_ms < t_ms);
        for row in self.nodes.values_mut() {
            dropped += row.points.drop_old(0, |p| p.t_ms < t_ms);
        }
        for row in self.links.values_mut() {
            dropped += row.points.drop_old(0, |(t, _)| *t < t_ms);
        }
        for row in self.flows.values_mut() {
            dropped += row.points.drop_old(0, |p| p.t_ms < t_ms);
            dropped += row.paths.drop_old(1, |(t, _)| *t < t_ms);
        }
        dropped
    }

    /// Leaves out the older half of the events, then of every node's,
    /// link's and flow's points and paths left (a flow's current path
    /// stays): what a kept state drops for size. Returns how many (0:
    /// nothing left to drop).
    pub fn thin(&mut self) -> usize {
        let events = self.events.halve(0);
        if events > 0 {
            return events;
        }
        let mut dropped = 0;
        for row in self.nodes.values_mut() {
            dropped += row.points.halve(0);
        }
        for row in self.links.values_mut() {
            dropped += row.points.halve(0);
        }
        for row in self.flows.values_mut() {
            dropped += row.points.halve(0) + row.paths.halve(1);
        }
        dropped
    }

    fn event(&mut self, kind: EventKind, node: Option<u32>, flow: Option<u64>, text: String) {
        self.events.push(Event { t_ms: self.now_ms, kind, node, flow, text });
    }

    /// Books a sample taken at `now_ms`.
    pub fn apply(&mut self, sample: Sample, now_ms: u64) {
        self.now_ms = now_ms;
        self.reports = sample.reports;
        for (id, node) in sample.nodes {
            self.apply_node(id, node);
        }
        self.mark_stale();
        for (key, latency) in sample.links {
            self.apply_link(key, latency);
        }
        let mut paths = Vec::new();
        // In key order: new flows are numbered as a person would list them.
        let mut flows: Vec<(FlowKey, FlowSample)> = sample.flows.into_iter().collect();
        flows.sort_unstable_by_key(|(key, _)| *key);
        for (key, mut flow) in flows {
            if let Some(path) = flow.new_path.take() {
                paths.push((key, path));
            }
            self.apply_flow(key, flow);
        }
        let new = sample.path_changes.saturating_sub(self.path_changes);
        self.path_changes = sample.path_changes;
        let skip = sample.recent.len().saturating_sub(usize::try_from(new).unwrap_or(usize::MAX));
        for change in sample.recent.into_iter().skip(skip) {
            // Both paths into the history: a change within one interval
            // would otherwise show only its new path.
            self.follow(change.flow, &change.old);
            let flow = self.follow(change.flow, &change.new);
            let text =
                format!("{}: path {} -> {}", change.flow, path_text(&change.old), path_text(&change.new));
            // The node the flow moved to: the first not on its old path.
            let node = change.new.iter().find(|n| !change.old.contains(n)).copied();
            self.event(EventKind::PathChange, node, flow, text);
        }
        for (key, path) in paths {
            self.follow(key, &path);
        }
        self.current_paths();
    }

    /// The adjacency of the flows' current paths, and the time on each
    /// node that one of them goes through.
    fn current_paths(&mut self) {
        self.adjacency.clear();
        for path in self.flows.values().filter_map(FlowRow::path) {
            for pair in path.windows(2) {
                if let [from, to] = pair {
                    *self.adjacency.entry((*from, *to)).or_default() += 1;
                }
            }
            for id in path {
                if let Some(row) = self.nodes.get_mut(id) {
                    row.on_path_ms = Some(self.now_ms);
                }
            }
        }
    }

    /// `path` into the flow's history unless it is its path already;
    /// returns the flow's id.
    fn follow(&mut self, key: FlowKey, path: &[u32]) -> Option<u64> {
        let now = self.now_ms;
        let row = self.flows.get_mut(&key)?;
        if row.path() != Some(path) {
            row.paths.push((now, path.to_vec()));
            row.changed_ms = now;
        }
        Some(row.id)
    }

    fn apply_node(&mut self, id: u32, node: NodeSample) {
        let now = self.now_ms;
        let row = self.nodes.entry(id).or_insert_with(|| NodeRow {
            now: NodeSample::default(),
            seen_ms: now,
            stale: false,
            points: Ring::new(NODE_POINTS),
            on_path_ms: None,
        });
        let latency = interval_mean(&row.now.latency, &node.latency);
        let queue = interval_mean(&row.now.queue, &node.queue);
        let before = row.points.iter().next_back().and_then(|p| p.latency);
        let drops: Vec<(u8, u64)> = node
            .drops
            .iter()
            .filter_map(|(reason, n)| {
                let new = n.saturating_sub(row.now.drops.get(reason).copied().unwrap_or(0));
                (new > 0).then_some((*reason, new))
            })
            .collect();
        let (told, was_stale) = (node.hops != row.now.hops, row.stale);
        if told {
            row.seen_ms = now;
            row.stale = false;
        }
        if latency.is_some() || queue.is_some() {
            row.points.push(NodePoint { t_ms: now, latency, queue });
        }
        row.now = node;
        if told && was_stale {
            self.event(
                EventKind::Back,
                Some(id),
                None,
                format!("node {} reports again", names::describe(id)),
            );
        }
        if let (Some(before), Some(after)) = (before, latency) {
            let (b, a) = (i128::from(before.max(1)), i128::from(after.max(1)));
            if a >= b * HOP_CHANGE_FACTOR || b >= a * HOP_CHANGE_FACTOR {
                let text = format!(
                    "node {}: hop latency {} -> {}",
                    names::describe(id),
                    ns_text(before),
                    ns_text(after)
                );
                self.event(EventKind::HopChange, Some(id), None, text);
            }
        }
        for (reason, count) in drops {
            let text = format!("node {}: {count} drop report(s), reason {reason}", names::describe(id));
            self.event(EventKind::Drops, Some(id), None, text);
        }
    }

    /// Nodes no report told of for longer than `stale_after_ms`.
    fn mark_stale(&mut self) {
        let (now, after) = (self.now_ms, self.stale_after_ms);
        let newly: Vec<u32> = self
            .nodes
            .iter_mut()
            .filter(|(_, row)| !row.stale && now.saturating_sub(row.seen_ms) > after)
            .map(|(id, row)| {
                row.stale = true;
                *id
            })
            .collect();
        for id in newly {
            let text = format!("node {}: no report for {} s", names::describe(id), after / 1000);
            self.event(EventKind::Stale, Some(id), None, text);
        }
    }

    fn apply_link(&mut self, key: (u32, u32), latency: Stats) {
        let now = self.now_ms;
        let row = self.links.entry(key).or_insert_with(|| LinkRow {
            latency: Stats::default(),
            seen_ms: now,
            points: Ring::new(NODE_POINTS),
        });
        if let Some(mean) = interval_mean(&row.latency, &latency) {
            row.points.push((now, mean));
            row.seen_ms = now;
        }
        row.latency = latency;
    }

    fn apply_flow(&mut self, key: FlowKey, flow: FlowSample) {
        let (now, next_id) = (self.now_ms, self.ids.len() as u64 + 1);
        let row = self.flows.entry(key).or_insert_with(|| FlowRow {
            id: next_id,
            key,
            latency: Stats::default(),
            lost: 0,
            changed_ms: now,
            paths: Ring::new(PATH_HISTORY),
            points: Ring::new(FLOW_POINTS),
        });
        if row.id == next_id {
            self.ids.insert(next_id, key);
        }
        let latency = interval_mean(&row.latency, &flow.latency);
        let lost = flow.lost.saturating_sub(row.lost);
        if latency.is_some() || lost > 0 {
            row.points.push(FlowPoint { t_ms: now, latency, lost });
        }
        if latency.is_some() || lost > 0 {
            row.changed_ms = now;
        }
        (row.latency, row.lost) = (flow.latency, flow.lost);
        let id = row.id;
        if lost > 0 {
            self.event(EventKind::Loss, None, Some(id), format!("{key}: {lost} packet(s) lost"));
        }
    }
}

/// A path as the page writes it: node ids from the source on.
/// A path as the operator reads it: each node's name (or id), in order.
pub fn path_text(path: &[u32]) -> String {
    path.iter().map(|id| names::label(*id)).collect::<Vec<_>>().join(" > ")
}

fn ns_text(ns: i64) -> String {
    crate::schema::human_ns(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(count: u64, sum: i128) -> Stats {
        Stats { count, sum, ..Stats::default() }
    }

    fn node(hops: u64, count: u64, sum: i128) -> NodeSample {
        NodeSample { hops, latency: stats(count, sum), ..NodeSample::default() }
    }

    /// A node that stops reporting goes stale once, and comes back with
    /// its next report; its hop latency doubling is a hop change.
    #[test]
    fn a_quiet_node_goes_stale_and_comes_back() {
        let mut board = Board::new(2000);
        let sample =
            |hops, count, sum| Sample { nodes: [(7, node(hops, count, sum))].into(), ..Sample::default() };
        board.apply(sample(1, 1, 100), 0);
        board.apply(sample(2, 2, 200), 1000);
        board.apply(sample(2, 2, 200), 3000);
        assert!(!board.nodes[&7].stale, "2 s without a report is not yet stale");
        board.apply(sample(2, 2, 200), 3001);
        board.apply(sample(2, 2, 200), 4000);
        assert!(board.nodes[&7].stale);
        board.apply(sample(3, 3, 500), 5000);
        let kinds: Vec<&str> = board.events.iter().map(|e| e.kind.name()).collect();
        assert_eq!(kinds, ["stale", "back", "hop_change"]);
        let points: Vec<_> = board.nodes[&7].points.iter().map(|p| (p.t_ms, p.latency)).collect();
        assert_eq!(points, [(0, Some(100)), (1000, Some(100)), (5000, Some(300))]);
    }

    /// Loss is an event of its flow; a path seen first is history, not a
    /// change; a flow keeps at most FLOW_POINTS points.
    #[test]
    fn flows_keep_bounded_histories() {
        let mut board = Board::new(10_000);
        let key = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2);
        for t in 0..(FLOW_POINTS as u64 + 10) {
            let flow = FlowSample {
                latency: stats(t + 1, i128::from(t + 1) * 10),
                lost: t / 30,
                new_path: (t == 0).then(|| vec![1, 2]),
            };
            board.apply(Sample { flows: [(key, flow)].into(), ..Sample::default() }, t * 1000);
        }
        let row = &board.flows[&key];
        assert_eq!((row.id, row.points.iter().len(), row.path()), (1, FLOW_POINTS, Some(&[1, 2][..])));
        let losses = board.events.iter().filter(|e| e.kind == EventKind::Loss && e.flow == Some(1)).count();
        assert_eq!(losses, 2);
    }

    /// A kept board's bounds: by age, the events and points before the
    /// time go (a flow's current path stays); by size, the older half of
    /// the events first, then of the points, until nothing is left.
    #[test]
    fn a_kept_board_drops_the_oldest_first() {
        let mut board = Board::new(10_000);
        let key = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2);
        for t in 0..10u64 {
            let flow = FlowSample {
                latency: stats(t + 1, i128::from(t + 1) * 10),
                lost: t,
                new_path: Some(vec![1, 2 + t as u32 % 2, 9]),
            };
            board.apply(Sample { flows: [(key, flow)].into(), ..Sample::default() }, t * 1000);
        }
        let times = |board: &Board| board.events.iter().map(|e| e.t_ms).collect::<Vec<_>>();
        assert_eq!(times(&board), (1..10).map(|t| t * 1000).collect::<Vec<_>>());
        let mut aged = board.clone();
        assert!(aged.forget_before(8000) > 0);
        assert_eq!(times(&aged), [8000, 9000]);
        let row = &aged.flows[&key];
        assert_eq!(row.points.iter().map(|p| p.t_ms).collect::<Vec<_>>(), [8000, 9000]);
        assert_eq!(row.paths.iter().len(), 2);
        aged.forget_before(u64::MAX);
        assert_eq!((aged.events.iter().len(), aged.flows[&key].path()), (0, Some(&[1, 3, 9][..])));
        assert_eq!(board.thin(), 5);
        assert_eq!(times(&board), [6000, 7000, 8000, 9000]);
        while board.thin() > 0 {}
        let row = &board.flows[&key];
        assert_eq!((board.events.iter().len(), row.points.iter().len()), (0, 0));
        assert_eq!(row.path(), Some(&[1, 3, 9][..]));
    }

    /// The adjacency holds the links of the paths flows take now only; a
    /// node off them keeps when it was last on one.
    #[test]
    fn the_adjacency_follows_the_current_paths() {
        let mut board = Board::new(10_000);
        let key = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2);
        let nodes = |ids: &[u32]| ids.iter().map(|id| (*id, node(1, 0, 0))).collect();
        let flow = |path: Vec<u32>| FlowSample { new_path: Some(path), ..FlowSample::default() };
        let sample = Sample {
            nodes: nodes(&[1, 2, 9]),
            flows: [(key, flow(vec![1, 2, 9]))].into(),
            ..Sample::default()
        };
        board.apply(sample, 1000);
        let sample = Sample {
            nodes: nodes(&[1, 3, 9]),
            flows: [(key, flow(vec![1, 3, 9]))].into(),
            ..Sample::default()
        };
        board.apply(sample, 2000);
        assert_eq!(board.adjacency.keys().copied().collect::<Vec<_>>(), [(1, 3), (3, 9)]);
        let on_path: Vec<_> = board.nodes.iter().map(|(id, row)| (*id, row.on_path_ms)).collect();
        assert_eq!(on_path, [(1, Some(2000)), (2, Some(1000)), (3, Some(2000)), (9, Some(2000))]);
    }
}
