//! The view's own books: what the page shows, kept from sample to sample.
//! Each node, link and flow has its latest figures and a bounded history
//! (one point per sample that brought new observations, the mean over
//! that interval); events (path changes, hop changes, drops, loss, nodes
//! going stale and coming back) one per cause, in bounded rings
//! ([`super::events`]). Every path change is found here, from each flow's
//! path in the books against its last one in the view. Times are ms since
//! the view started.

use crate::collect::books::hops::PathChange;
use crate::collect::names::Naming;
use std::collections::{BTreeMap, HashMap, VecDeque};

use int_core::flow::FlowKey;

use super::congestion::{Episodes, Mark};
use super::events::{Cause, Detail, Events};
use super::sample::{Congested, FlowSample, Known, NodeSample, Sample, Stats};

/// Points kept per node and per link (at one a second: five minutes).
pub const NODE_POINTS: usize = 300;
/// Points kept per flow (10,000 flows x 60 points: about 20 MB).
pub const FLOW_POINTS: usize = 60;
/// Paths kept per flow, the newest.
pub const PATH_HISTORY: usize = 16;
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
    /// One per cause, each kind in a bounded ring ([`super::events`]).
    pub events: Events,
    /// The links of the paths flows take now, each with how many flows
    /// take it: known from the paths alone, so a fabric whose hops carry
    /// no timestamps (no link latency in the books) still has its links.
    pub adjacency: BTreeMap<(u32, u32), u64>,
    /// The books' newest path changes as the last sample held them: a
    /// change is news when that sample did not hold it, told by what it
    /// is, not by its place in the list (the fleet view's books are a
    /// merge of aggregators' states that come at their own times, so an
    /// aggregator's changes come into the list behind newer ones already
    /// shown: by place, they were shown again, each a false flap).
    #[serde(default)]
    recent: Vec<PathChange>,
    /// Episodes and queue alerts as the last sample had them; none before
    /// the first sample of this run (a restored board's first sample sets
    /// it without events: the episodes before the restart are no news).
    #[serde(skip)]
    congested: Option<Congested>,
    /// The congestion pages' episodes and heatmap (not kept with
    /// `--state`, as the congestion books are not).
    #[serde(skip)]
    pub congestion: Episodes,
    /// What each node is called: collect's names, not kept with the board.
    #[serde(skip)]
    pub names: Naming,
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
    fn congestion_mark(&self, socket: usize) -> Mark {
        self.congestion.mark(socket)
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
            events: Events::default(),
            adjacency: BTreeMap::new(),
            recent: Vec::new(),
            congested: None,
            congestion: Episodes::default(),
            names: Naming::default(),
        }
    }

    /// Leaves out the events and points before `t_ms`, and the paths a
    /// flow left before then (never its current one): what a kept state
    /// drops by age. Returns how many.
    pub fn forget_before(&mut self, t_ms: u64) -> usize {
        let mut dropped = self.events.drop_old(t_ms);
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
        let events = self.events.halve();
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

    fn event(&mut self, cause: Cause, count: u64, flow: Option<u64>, detail: Detail) {
        self.events.note(self.now_ms, cause, count, flow, detail);
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
            let path = flow.new_path.take();
            // A path seen in the same sample as a loss is the one it is on.
            self.apply_flow(key, flow, path.as_deref().and_then(<[u32]>::last).copied());
            paths.extend(path.map(|path| (key, path)));
        }
        self.apply_congestion(&sample.congestion);
        self.congestion.apply(sample.episodes);
        // The books' new changes first (a change and its return within
        // one interval would otherwise not show), then every flow's path
        // now: a change the books' short list no longer holds is one too.
        let shown = std::mem::take(&mut self.recent);
        for change in sample.recent.iter().filter(|change| !shown.contains(change)) {
            self.follow_change(change);
        }
        self.recent = sample.recent;
        for (key, path) in paths {
            self.follow(key, &path);
        }
        self.events.close(now_ms);
        self.current_paths();
    }

    /// New congestion episodes per queue and queue alerts per node since
    /// the last sample: one event of each cause.
    fn apply_congestion(&mut self, now: &Congested) {
        let Some(before) = self.congested.replace(now.clone()) else { return };
        for (&(node, queue), &count) in &now.episodes {
            let new = count.saturating_sub(before.episodes.get(&(node, queue)).copied().unwrap_or(0));
            if new > 0 {
                self.event(Cause::Congested { node, queue }, new, None, Detail::None);
            }
        }
        for (&node, &count) in &now.alerts {
            let new = count.saturating_sub(before.alerts.get(&node).copied().unwrap_or(0));
            if new > 0 {
                self.event(Cause::QueueAlert { node }, new, None, Detail::None);
            }
        }
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

    /// A change of the books' into the flow's history: its old path, then
    /// its new one, unless the flow is on the new one already (a change
    /// the board saw by the flow's path, or by a board restored from a
    /// release that kept no list).
    fn follow_change(&mut self, change: &PathChange) {
        let Some(row) = self.flows.get(&change.flow) else { return };
        if row.path() == Some(change.new.as_slice()) {
            return;
        }
        self.follow(change.flow, &change.old);
        self.follow(change.flow, &change.new);
    }

    /// `path` into the flow's history unless it is its path already: a
    /// path change (an event of its cause) unless it is its first path.
    fn follow(&mut self, key: FlowKey, path: &[u32]) {
        let now = self.now_ms;
        let Some(row) = self.flows.get_mut(&key) else { return };
        let old = match row.path() {
            Some(old) if old == path => return,
            old => old.map(<[u32]>::to_vec),
        };
        row.paths.push((now, path.to_vec()));
        row.changed_ms = now;
        let id = row.id;
        if let Some(old) = old {
            let detail = Detail::Paths { old: old.clone(), new: path.to_vec() };
            self.event(Cause::moved(&old, path), 1, Some(id), detail);
        }
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
            self.event(Cause::Back { node: id }, 1, None, Detail::None);
        }
        if let (Some(before), Some(after)) = (before, latency) {
            let (b, a) = (i128::from(before.max(1)), i128::from(after.max(1)));
            if a >= b * HOP_CHANGE_FACTOR || b >= a * HOP_CHANGE_FACTOR {
                self.event(Cause::HopChange { node: id }, 1, None, Detail::Latency { before, after });
            }
        }
        for (reason, count) in drops {
            self.event(Cause::Drops { node: id, reason }, count, None, Detail::None);
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
            self.event(Cause::Stale { node: id }, 1, None, Detail::Quiet { after_ms: after });
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

    fn apply_flow(&mut self, key: FlowKey, flow: FlowSample, new_sink: Option<u32>) {
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
        let (id, sink) = (row.id, new_sink.or_else(|| row.path().and_then(<[u32]>::last).copied()));
        if lost > 0 {
            self.event(Cause::Loss { sink }, lost, Some(id), Detail::None);
        }
    }
}

/// A path as the operator reads it: each node's name (or id), in order.
pub fn path_text(names: &Naming, path: &[u32]) -> String {
    path.iter().map(|id| names.label(*id)).collect::<Vec<_>>().join(" > ")
}

#[cfg(test)]
mod tests {
    use super::super::events::{Event, EventKind};
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
        let kinds: Vec<&str> = board.events.newest().iter().rev().map(|e| e.kind().name()).collect();
        assert_eq!(kinds, ["stale", "back", "hop_change"]);
        let points: Vec<_> = board.nodes[&7].points.iter().map(|p| (p.t_ms, p.latency)).collect();
        assert_eq!(points, [(0, Some(100)), (1000, Some(100)), (5000, Some(300))]);
    }

    /// Loss is an event of its flow's sink (one within its window); a path
    /// seen first is history, not a change; a flow keeps at most
    /// FLOW_POINTS points.
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
        let losses: Vec<_> =
            board.events.newest().iter().map(|e| (e.cause.clone(), e.count, e.flow())).collect();
        assert_eq!(losses, [(Cause::Loss { sink: Some(2) }, 2, Some(1))]);
    }

    /// New episodes of a queue and new queue alerts of a node since the
    /// last sample are one event each; the first sample is where counting
    /// starts, not news.
    #[test]
    fn congestion_episodes_and_queue_alerts_are_events() {
        use super::super::events::text;
        let mut board = Board::new(10_000);
        let sample = |episodes: u64, alerts: u64| Sample {
            congestion: Congested { episodes: [((2, 3), episodes)].into(), alerts: [(9, alerts)].into() },
            ..Sample::default()
        };
        board.apply(sample(4, 1), 1000);
        assert!(board.events.newest().is_empty());
        board.apply(sample(6, 1), 2000);
        board.apply(sample(6, 4), 3000);
        let events: Vec<_> =
            board.events.of_kind(EventKind::Congestion).map(|e| (e.cause.clone(), e.count)).collect();
        assert_eq!(events, [(Cause::QueueAlert { node: 9 }, 3), (Cause::Congested { node: 2, queue: 3 }, 2)]);
        let said = text(board.events.newest()[1], &board.names, |_| None);
        assert_eq!(said, "node 2 queue 3: 2 congestion episode(s)");
    }

    /// The fleet view's books are a merge of aggregators' states, each
    /// come at its own time: a state that comes later brings changes
    /// older than those shown. Each change is shown once: flow 1's, shown
    /// by the sample that brought it, never again; flow 2's when it
    /// comes, though it sorts before flow 1's. One event of both.
    #[test]
    fn a_change_merged_in_late_is_shown_once() {
        use crate::collect::books::hops::PathChange;
        let mut board = Board::new(60_000);
        let key = |f: u16| FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, f, 5000);
        let (old, new) = (vec![1, 8, 9], vec![1, 2, 9]);
        let change =
            |f: u16, at_ms: u64| PathChange { at_ms, flow: key(f), old: old.clone(), new: new.clone() };
        let sample = |paths: [&Vec<u32>; 2], recent: Vec<PathChange>| Sample {
            flows: (1..=2u16)
                .zip(paths)
                .map(|(f, path)| {
                    (key(f), FlowSample { new_path: Some(path.clone()), ..FlowSample::default() })
                })
                .collect(),
            path_changes: recent.len() as u64,
            recent,
            ..Sample::default()
        };
        board.apply(sample([&old, &old], Vec::new()), 1000);
        board.apply(sample([&new, &old], vec![change(1, 5000)]), 2000);
        for t in [3000, 4000] {
            board.apply(sample([&new, &new], vec![change(2, 4000), change(1, 5000)]), t);
        }
        for f in 1..=2 {
            let paths: Vec<&Vec<u32>> = board.flows[&key(f)].paths.iter().map(|(_, path)| path).collect();
            assert_eq!(paths, [&old, &new], "flow {f}");
        }
        let moves: Vec<&Event> = board.events.of_kind(EventKind::PathChange).collect();
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert_eq!((moves[0].flow_count, moves[0].count), (2, 2));
    }

    /// 2,500 flows rerouted off leaf 8 onto leaf 2 in one sample (the
    /// books' list of changes holds the newest 100): one event naming all
    /// 2,500 flows, every flow's history with both paths; loss on every
    /// flow after it is one event of the sink, and pushes it out of nothing.
    #[test]
    fn a_reroute_of_2500_flows_is_one_event() {
        use crate::collect::books::hops::PathChange;
        let mut board = Board::new(60_000);
        let key = |f: u16| FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, f, 5000);
        let (old, new) = (vec![1, 8, 30, 9], vec![1, 2, 30, 9]);
        let sample = |path: &[u32], lost: u64, changes: u64| Sample {
            flows: (0..2500)
                .map(|f| {
                    (key(f), FlowSample { lost, new_path: Some(path.to_vec()), ..FlowSample::default() })
                })
                .collect(),
            path_changes: changes,
            recent: match changes {
                0 => Vec::new(),
                _ => (2400..2500)
                    .map(|f| PathChange { at_ms: 0, flow: key(f), old: old.clone(), new: new.clone() })
                    .collect(),
            },
            ..Sample::default()
        };
        board.apply(sample(&old, 0, 0), 1000);
        board.apply(sample(&new, 0, 2500), 2000);
        for t in 3..10 {
            board.apply(sample(&new, t, 2500), t * 1000);
        }
        let moves: Vec<&Event> = board.events.of_kind(EventKind::PathChange).collect();
        assert_eq!(moves.len(), 1, "{moves:?}");
        let moved = (moves[0].flow_count, moves[0].flows.len(), moves[0].count, &moves[0].cause);
        assert_eq!(moved, (2500, 2500, 2500, &Cause::moved(&old, &new)));
        assert_eq!(moves[0].cause, Cause::Moved { from: vec![8], to: vec![2] });
        assert!(board.flows.values().all(|row| row.paths.iter().len() == 2));
        let losses: Vec<&Event> = board.events.of_kind(EventKind::Loss).collect();
        assert_eq!(losses.len(), 1);
        assert_eq!(
            (losses[0].flow_count, losses[0].count, &losses[0].cause),
            (2500, 2500 * 9, &Cause::Loss { sink: Some(9) })
        );
        assert_eq!(board.events.len(), 2);
    }

    /// A kept board's bounds: by age, the events and points before the
    /// time go (a flow's current path stays); by size, the older half of
    /// the events first, then of the points, until nothing is left.
    #[test]
    fn a_kept_board_drops_the_oldest_first() {
        // Samples further apart than an event's window: each brings a path
        // change and a loss event of its own.
        const APART: u64 = super::super::events::WINDOW_MS + 10_000;
        let mut board = Board::new(10_000);
        let key = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2);
        for t in 0..10u64 {
            let flow = FlowSample {
                latency: stats(t + 1, i128::from(t + 1) * 10),
                lost: t,
                new_path: Some(vec![1, 2 + t as u32 % 2, 9]),
            };
            board.apply(Sample { flows: [(key, flow)].into(), ..Sample::default() }, t * APART);
        }
        let times = |board: &Board| {
            let mut times: Vec<u64> = board.events.newest().iter().map(|e| e.t_ms).collect();
            times.sort_unstable();
            times
        };
        let twice = |from: u64| (from..10).flat_map(|t| [t * APART; 2]).collect::<Vec<_>>();
        assert_eq!(times(&board), twice(1));
        let mut aged = board.clone();
        assert!(aged.forget_before(8 * APART) > 0);
        assert_eq!(times(&aged), twice(8));
        let row = &aged.flows[&key];
        assert_eq!(row.points.iter().map(|p| p.t_ms).collect::<Vec<_>>(), [8 * APART, 9 * APART]);
        assert_eq!(row.paths.iter().len(), 2);
        aged.forget_before(u64::MAX);
        assert_eq!((aged.events.len(), aged.flows[&key].path()), (0, Some(&[1, 3, 9][..])));
        // Each kind's 9 events: the older 5 go.
        assert_eq!(board.thin(), 10);
        assert_eq!(times(&board), twice(6));
        while board.thin() > 0 {}
        let row = &board.flows[&key];
        assert_eq!((board.events.len(), row.points.iter().len()), (0, 0));
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
