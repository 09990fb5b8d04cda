//! collect's per-hop view of INT 2.1 reports. Each report's stack says, for
//! every hop of its packet's path, the node and what it measured; the
//! collector keeps per node its reports, hop latency and queue occupancy
//! (and the drops it reported, by reason), per link between consecutive
//! hops the time from one hop's egress to the next one's ingress, and per
//! flow its path (node ids from the source to the reporting sink) and every
//! change of it.
//!
//! A path is followed only when it can be told: every hop names its node
//! and no node appears twice (a repeated id is a loop or a lie; either way
//! not a path to report as fact). Such stacks still count for their hops'
//! figures; the path is counted `unusable`. Memory is bounded: at most
//! `Limits` nodes, links and flows; what does not fit is counted.

use std::collections::{BTreeMap, HashMap, VecDeque};

use foldhash::fast::RandomState;

use int_core::flow::FlowKey;
use int_core::hop::Hop;

use super::latency::Latency;
use super::moves::{Moves, Sink, Swings};
use super::timeline::Timeline;
use crate::records::{PathChangeRecord, RecordType};

/// The most nodes a followed path has, the sink's included: a stack of
/// this many hops or more is counted unusable (INT 2.1's Remaining Hop
/// Count is 8 bits, but real paths are short, and each followed flow keeps
/// its path).
pub const MAX_PATH: usize = 64;
/// Path changes kept for the summary, the newest.
const RECENT_CHANGES: usize = 100;
/// Significant digits of a node's and a link's histograms (about 40 KB).
const DIGITS: u8 = 2;
/// Nodes (the first seen) with hop latency over time, for the plot.
const NODES_OVER_TIME: usize = 20;

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub nodes: usize,
    pub links: usize,
    pub flows: usize,
}

/// One node's figures, from every hop it wrote and every report it sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// Hops of this node in reports' stacks (and its own reports as a sink).
    pub hops: u64,
    /// Hop latency as the node wrote it (ns for int-node and most switches).
    pub latency: Latency,
    /// Queue occupancy as the node wrote it (cells or bytes: the node's unit).
    pub queue: Latency,
    /// Drop reports the node sent, by reason code.
    pub drops: BTreeMap<u8, u64>,
    /// Hop latency over time (the first [`NODES_OVER_TIME`] nodes only).
    pub timeline: Option<Timeline>,
    /// Path changes and loss on the flows through this node.
    pub moves: Moves,
}

impl Node {
    fn new(over_time: bool) -> Node {
        Node {
            hops: 0,
            latency: Latency::new(DIGITS),
            queue: Latency::new(DIGITS),
            drops: BTreeMap::new(),
            timeline: over_time.then(Timeline::default),
            moves: Moves::default(),
        }
    }

    fn merge(&mut self, other: &Node) {
        self.hops += other.hops;
        self.latency.merge(&other.latency);
        self.queue.merge(&other.queue);
        self.moves.merge(&other.moves);
        for (reason, count) in &other.drops {
            *self.drops.entry(*reason).or_default() += count;
        }
        match (&mut self.timeline, &other.timeline) {
            (Some(ours), Some(theirs)) => ours.merge(theirs),
            (None, Some(theirs)) => self.timeline = Some(theirs.clone()),
            _ => {}
        }
    }
}

/// A flow's path changed: when (ms since the collector started), from what
/// to what.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathChange {
    pub at_ms: u64,
    pub flow: FlowKey,
    pub old: Vec<u32>,
    pub new: Vec<u32>,
}

/// What did not fit the limits, and paths that could not be told.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Untracked {
    pub nodes: u64,
    pub links: u64,
    pub flows: u64,
    /// Stacks whose path could not be told (a hop without a node id, a
    /// node twice, [`MAX_PATH`] hops or more).
    pub unusable_paths: u64,
}

/// One report's path as the collector reads it: the stack's hops from the
/// source on, then the reporting sink with its ingress time.
pub struct Seen<'a> {
    pub flow: FlowKey,
    /// Source first (the stack reversed).
    pub hops: &'a [Hop],
    /// The reporting sink of an INT-MD stack; none for postcards joined
    /// into a path (the last node's own postcard is among the hops).
    pub sink: Option<u32>,
    pub sink_ingress_ns: Option<u64>,
    pub at_ms: u64,
}

/// A flow's path, and how many reports in a row gave it (up to
/// `u32::MAX`: settled).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Followed {
    nodes: Vec<u32>,
    in_a_row: u32,
    /// From the flow's first change on (most flows never change).
    swings: Option<Box<Swings>>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Hops {
    limits: Limits,
    pub nodes: BTreeMap<u32, Node>,
    /// (from, to) node ids: egress of one to ingress of the next, ns.
    pub links: BTreeMap<(u32, u32), Latency>,
    /// Every reporting sink (at most `Limits::nodes`), from its first report.
    pub sinks: BTreeMap<u32, Sink>,
    /// foldhash, randomly seeded, as the ledger's flows: one lookup a
    /// report, keyed by flows a sender chooses.
    paths: HashMap<FlowKey, Followed, RandomState>,
    /// Flows whose paths are followed elsewhere: another aggregator's,
    /// in a fleet view (their paths stay with it).
    #[serde(default)]
    elsewhere: u64,
    pub path_changes: u64,
    pub recent: VecDeque<PathChange>,
    pub untracked: Untracked,
    /// Room for a report's path as it is compared with the flow's: a
    /// report on the path already known allocates nothing.
    path_room: Vec<u32>,
}

impl Hops {
    pub fn new(limits: Limits) -> Hops {
        Hops {
            limits,
            nodes: BTreeMap::new(),
            links: BTreeMap::new(),
            sinks: BTreeMap::new(),
            paths: HashMap::default(),
            elsewhere: 0,
            path_changes: 0,
            recent: VecDeque::new(),
            untracked: Untracked::default(),
            path_room: Vec::new(),
        }
    }

    /// The path `flow` was last seen on, and how many reports in a row
    /// gave it.
    pub fn followed(&self, flow: &FlowKey) -> Option<(&[u32], u32)> {
        self.paths.get(flow).map(|followed| (followed.nodes.as_slice(), followed.in_a_row))
    }

    /// Takes `flow`'s path as told by as many reports as it takes.
    pub fn settle(&mut self, flow: &FlowKey) {
        if let Some(followed) = self.paths.get_mut(flow) {
            followed.in_a_row = u32::MAX;
        }
    }

    /// Forgets `flow`'s path: the next one is its first, no change.
    pub fn forget_path(&mut self, flow: &FlowKey) {
        self.paths.remove(flow);
    }

    /// These books under `limits` (a restored state's, under this run's
    /// flags).
    pub fn bounded_by(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// These hops under `other`'s limits.
    pub fn bounded_like(&mut self, other: &Hops) {
        self.limits = other.limits;
    }

    /// Every followed flow's path of `other`, where this one follows none
    /// (a restored state's paths, for each receiver a flow may reach).
    pub fn follow_paths_of(&mut self, other: &Hops) {
        for (flow, path) in &other.paths {
            self.paths.entry(*flow).or_insert_with(|| path.clone());
        }
    }

    /// These books without their flows' paths, only how many (what an
    /// aggregator publishes for a fleet view: a path a flow is a few
    /// dozen bytes, and only its aggregator tells its changes).
    pub fn without_paths(mut self) -> Hops {
        self.elsewhere += self.paths.len() as u64;
        self.paths = HashMap::default();
        self
    }

    /// These books with the paths of the flows `keep` says only (what an
    /// aggregator publishes for a fleet view: the paths of the flows its
    /// state carries, so the view's page places them); the others counted
    /// as followed elsewhere.
    pub fn with_paths_of(mut self, keep: impl Fn(&FlowKey) -> bool) -> Hops {
        let before = self.paths.len();
        self.paths.retain(|flow, _| keep(flow));
        self.elsewhere += (before - self.paths.len()) as u64;
        self
    }

    /// Flows whose path is followed (here or elsewhere).
    pub fn paths(&self) -> usize {
        usize::try_from(self.elsewhere).unwrap_or(usize::MAX).saturating_add(self.paths_here())
    }

    fn paths_here(&self) -> usize {
        self.paths.len()
    }

    /// Books one report's hops and links; returns the flow's path change,
    /// if its path is followed and differs from the last one seen.
    pub fn observe(&mut self, seen: &Seen<'_>) -> Option<PathChange> {
        if let Some(sink) = seen.sink {
            self.sink(sink);
        }
        self.observe_nodes(seen);
        self.observe_links(seen);
        self.observe_path(seen)
    }

    /// Books each hop's node figures (and the sink's hop).
    pub fn observe_nodes(&mut self, seen: &Seen<'_>) {
        for hop in seen.hops {
            let Some(node) = hop.node_id else { continue };
            let Some(figures) = self.node(node) else { continue };
            figures.hops += 1;
            if let Some(latency) = hop.hop_latency {
                figures.latency.record(i64::from(latency));
                if let Some(timeline) = &mut figures.timeline {
                    timeline.add_latency(seen.at_ms, i64::from(latency));
                }
            }
            if let Some((_, occupancy)) = hop.queue {
                figures.queue.record(i64::from(occupancy));
            }
        }
        if let Some(figures) = seen.sink.and_then(|sink| self.node(sink)) {
            figures.hops += 1;
        }
    }

    /// A drop report of `node` for `reason`.
    pub fn observe_drop(&mut self, node: u32, reason: u8) {
        if let Some(figures) = self.node(node) {
            *figures.drops.entry(reason).or_default() += 1;
        }
    }

    /// A report of `sink` on `flow`, declaring `lost` packets lost (0 for
    /// a latency): the sink is known from its first report on (its series
    /// start at 0), and the loss counts for it and for every node on the
    /// flow's followed path.
    pub fn observe_sink(&mut self, flow: &FlowKey, sink: Option<u32>, lost: u32) {
        let lost = u64::from(lost);
        if let Some(figures) = sink.and_then(|id| self.sink(id)) {
            figures.lost += lost;
        }
        if lost == 0 {
            return;
        }
        let Some(followed) = self.paths.get(flow) else { return };
        for id in &followed.nodes {
            if let Some(node) = self.nodes.get_mut(id) {
                node.moves.lost_on_paths += lost;
            }
        }
    }

    fn sink(&mut self, id: u32) -> Option<&mut Sink> {
        if !self.sinks.contains_key(&id) && self.sinks.len() >= self.limits.nodes {
            return None;
        }
        Some(self.sinks.entry(id).or_default())
    }

    /// A change's share for its sink (the new path's last node) and for
    /// the nodes the flow left or joined.
    fn count_moves(&mut self, change: &PathChange, flap: bool) {
        let flap = u64::from(flap);
        if let Some(sink) = change.new.last().and_then(|id| self.sink(*id)) {
            sink.path_changes += 1;
        }
        for id in change.old.iter().filter(|id| !change.new.contains(id)) {
            if let Some(node) = self.nodes.get_mut(id) {
                node.moves.flows_left += 1;
                node.moves.flaps += flap;
            }
        }
        for id in change.new.iter().filter(|id| !change.old.contains(id)) {
            if let Some(node) = self.nodes.get_mut(id) {
                node.moves.flows_joined += 1;
                node.moves.flaps += flap;
            }
        }
    }

    fn node(&mut self, id: u32) -> Option<&mut Node> {
        if !self.nodes.contains_key(&id) && self.nodes.len() >= self.limits.nodes {
            self.untracked.nodes += 1;
            return None;
        }
        let over_time = self.nodes.len() < NODES_OVER_TIME;
        Some(self.nodes.entry(id).or_insert_with(|| Node::new(over_time)))
    }

    fn observe_links(&mut self, seen: &Seen<'_>) {
        for (key, ns) in links(seen) {
            if !self.links.contains_key(&key) && self.links.len() >= self.limits.links {
                self.untracked.links += 1;
                continue;
            }
            self.links.entry(key).or_insert_with(|| Latency::new(DIGITS)).record(ns);
        }
    }

    fn observe_path(&mut self, seen: &Seen<'_>) -> Option<PathChange> {
        if !path_into(seen, &mut self.path_room) {
            self.untracked.unusable_paths += 1;
            return None;
        }
        if !self.paths.contains_key(&seen.flow) && self.paths.len() >= self.limits.flows {
            self.untracked.flows += 1;
            return None;
        }
        let followed = self.paths.entry(seen.flow).or_insert_with(|| Followed {
            nodes: Vec::new(),
            in_a_row: 0,
            swings: None,
        });
        if followed.nodes == self.path_room {
            followed.in_a_row = followed.in_a_row.saturating_add(1);
            return None;
        }
        let path = self.path_room.clone();
        let old = std::mem::replace(&mut followed.nodes, path.clone());
        followed.in_a_row = 1;
        if old.is_empty() {
            return None;
        }
        let flap = followed.swings.get_or_insert_default().change(&old, &path, seen.at_ms);
        let change = PathChange { at_ms: seen.at_ms, flow: seen.flow, old, new: path };
        self.count_moves(&change, flap);
        self.path_changes += 1;
        if self.recent.len() == RECENT_CHANGES {
            self.recent.pop_front();
        }
        self.recent.push_back(change.clone());
        Some(change)
    }

    /// Adds another receiver's view (a flow's reports all reach one
    /// socket, so paths do not collide; if they do, this one's stays).
    pub fn merge(&mut self, other: &Hops) {
        for (id, node) in &other.nodes {
            self.nodes.entry(*id).or_insert_with(|| Node::new(false)).merge(node);
        }
        for (key, latency) in &other.links {
            self.links.entry(*key).or_insert_with(|| Latency::new(DIGITS)).merge(latency);
        }
        for (id, sink) in &other.sinks {
            self.sinks.entry(*id).or_default().merge(sink);
        }
        for (flow, path) in &other.paths {
            self.paths.entry(*flow).or_insert_with(|| path.clone());
        }
        self.elsewhere += other.elsewhere;
        self.path_changes += other.path_changes;
        let mut recent: Vec<PathChange> = self.recent.drain(..).chain(other.recent.iter().cloned()).collect();
        recent.sort_by_key(|change| change.at_ms);
        let skip = recent.len().saturating_sub(RECENT_CHANGES);
        self.recent = recent.into_iter().skip(skip).collect();
        let (ours, theirs) = (&mut self.untracked, other.untracked);
        ours.nodes += theirs.nodes;
        ours.links += theirs.links;
        ours.flows += theirs.flows;
        ours.unusable_paths += theirs.unusable_paths;
    }

    /// Every followed flow and the path it was last seen on (the web view).
    pub fn followed_paths(&self) -> impl Iterator<Item = (&FlowKey, &[u32])> {
        self.paths.iter().map(|(flow, path)| (flow, path.nodes.as_slice()))
    }
}

/// Each pair of consecutive hops that both name their node and carry the
/// timestamps: (from, to) and the second's ingress minus the first's
/// egress, ns (the last hop's egress to the sink's ingress too).
pub fn links<'a>(seen: &'a Seen<'_>) -> impl Iterator<Item = ((u32, u32), i64)> + 'a {
    let ends = seen.hops.iter().map(|h| (h.node_id, h.ingress_timestamp, h.egress_timestamp));
    let last = seen.sink.map(|sink| (Some(sink), seen.sink_ingress_ns, None));
    let mut ends = ends.chain(last).peekable();
    core::iter::from_fn(move || loop {
        let (from, _, egress) = ends.next()?;
        let &(to, ingress, _) = ends.peek()?;
        if let (Some(from), Some(egress), Some(to), Some(ingress)) = (from, egress, to, ingress) {
            return Some(((from, to), ingress.wrapping_sub(egress) as i64));
        }
    })
}

/// The node ids from the source to the sink, if the path can be told.
pub fn path_of(seen: &Seen<'_>) -> Option<Vec<u32>> {
    let mut path = Vec::with_capacity(seen.hops.len() + 1);
    path_into(seen, &mut path).then_some(path)
}

/// [`path_of`] into `path`'s room (emptied first): whether the path could
/// be told.
pub fn path_into(seen: &Seen<'_>, path: &mut Vec<u32>) -> bool {
    path.clear();
    if seen.hops.len() >= MAX_PATH {
        return false;
    }
    for node in seen.hops.iter().map(|hop| hop.node_id).chain(seen.sink.map(Some)) {
        let Some(node) = node else { return false };
        if path.contains(&node) {
            return false;
        }
        path.push(node);
    }
    true
}

/// A flow's new path as a record (`report_node`: the sink whose report
/// told it; none for a path of joined postcards).
pub fn path_change_record(change: &PathChange, report_node: Option<u32>) -> PathChangeRecord {
    PathChangeRecord {
        kind: RecordType::PathChange,
        report_node,
        flow: Some(change.flow),
        old_path: Some(change.old.clone()),
        new_path: Some(change.new.clone()),
        from: None,
        arrival: None,
        arrival_ns: None,
        missing_reports_before: None,
        report_node_name: None,
        old_path_names: None,
        new_path_names: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::moves::{Moves, Sink};

    const LIMITS: Limits = Limits { nodes: 8, links: 8, flows: 2 };

    fn hop(node: u32, latency: u32, queue: u32, times: (u64, u64)) -> Hop {
        Hop {
            node_id: Some(node),
            hop_latency: Some(latency),
            queue: Some((0, queue)),
            ingress_timestamp: Some(times.0),
            egress_timestamp: Some(times.1),
            ..Hop::default()
        }
    }

    fn flow(port: u16) -> FlowKey {
        FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, port, 5000)
    }

    fn seen<'a>(flow: FlowKey, hops: &'a [Hop], at_ms: u64) -> Seen<'a> {
        Seen { flow, hops, sink: Some(9), sink_ingress_ns: Some(10_000), at_ms }
    }

    /// Three hops and the sink: each node's latency and queue, each link's
    /// time from egress to the next ingress, the path source -> sink.
    #[test]
    fn hops_links_and_the_path_of_a_report() {
        let hops = [hop(1, 100, 5, (0, 100)), hop(2, 4000, 70, (1100, 5100)), hop(3, 200, 0, (6100, 6300))];
        let mut view = Hops::new(LIMITS);
        assert_eq!(view.observe(&seen(flow(1), &hops, 0)), None, "a first path is no change");
        assert_eq!(view.nodes[&2].latency.max(), Some(4000));
        assert_eq!(view.nodes[&2].queue.max(), Some(70));
        assert_eq!(view.nodes[&9].hops, 1);
        let links: Vec<_> = view.links.iter().map(|(k, l)| (*k, l.max())).collect();
        assert_eq!(links, [((1, 2), Some(1000)), ((2, 3), Some(1000)), ((3, 9), Some(3700))]);
        assert_eq!(view.paths[&flow(1)].nodes, [1, 2, 3, 9]);
    }

    /// An IOAM trace's elements carry one timestamp each (the node's
    /// receive time) and no egress time: nodes, their delays and the path
    /// follow, links do not (docs/ioam.md says so).
    #[test]
    fn an_ioam_trace_gives_nodes_and_a_path_but_no_links() {
        use int_core::ioam::{node::NodeData, TimestampFormat};
        let element = |node, seconds, delay| NodeData {
            node_id: Some(node),
            timestamp_seconds: Some(seconds),
            timestamp_fraction: Some(0),
            transit_delay: Some(delay),
            ..NodeData::default()
        };
        let hops = [element(1, 1, 300), element(2, 2, 4000)].map(|e| e.as_hop(TimestampFormat::Posix));
        let mut view = Hops::new(LIMITS);
        view.observe(&Seen { sink_ingress_ns: Some(3_000_000_000), ..seen(flow(1), &hops, 0) });
        assert_eq!(view.nodes[&2].latency.max(), Some(4000));
        assert_eq!(view.paths[&flow(1)].nodes, [1, 2, 9]);
        assert!(view.links.is_empty(), "{:?}", view.links.keys());
    }

    /// The middle hop replaced: one change, old and new paths named; the
    /// same path again is no change.
    #[test]
    fn a_path_change_is_reported_once() {
        let mut view = Hops::new(LIMITS);
        let before = [hop(1, 1, 1, (0, 1)), hop(2, 1, 1, (2, 3))];
        let after = [hop(1, 1, 1, (0, 1)), hop(4, 1, 1, (2, 3))];
        view.observe(&seen(flow(1), &before, 0));
        let change = view.observe(&seen(flow(1), &after, 7)).unwrap();
        assert_eq!((change.at_ms, change.old, change.new), (7, vec![1, 2, 9], vec![1, 4, 9]));
        assert_eq!(view.observe(&seen(flow(1), &after, 8)), None);
        assert_eq!(view.path_changes, 1);
    }

    /// A change counts for its sink and the nodes the flow left and
    /// joined; loss for its sink and every node of the flow's path.
    #[test]
    fn changes_and_loss_count_where_they_happen() {
        let mut view = Hops::new(LIMITS);
        let before = [hop(1, 1, 1, (0, 1)), hop(2, 1, 1, (2, 3))];
        let after = [hop(1, 1, 1, (0, 1)), hop(4, 1, 1, (2, 3))];
        view.observe(&seen(flow(1), &before, 0));
        assert_eq!(view.sinks[&9], Sink::default(), "a sink is known from its first report");
        view.observe_sink(&flow(1), Some(9), 3);
        view.observe(&seen(flow(1), &after, 1));
        view.observe_sink(&flow(1), Some(9), 5);
        let moves = |view: &Hops, id: u32| view.nodes[&id].moves;
        assert_eq!(view.sinks[&9], Sink { lost: 8, path_changes: 1 });
        assert_eq!(moves(&view, 9), Moves { lost_on_paths: 8, ..Moves::default() });
        assert_eq!(moves(&view, 1), Moves { lost_on_paths: 8, ..Moves::default() });
        assert_eq!(moves(&view, 2), Moves { lost_on_paths: 3, flows_left: 1, ..Moves::default() });
        assert_eq!(moves(&view, 4), Moves { lost_on_paths: 5, flows_joined: 1, ..Moves::default() });
        // Back, and forth again: the second return is a flap, on 2 and 4.
        view.observe(&seen(flow(1), &before, 2));
        view.observe(&seen(flow(1), &after, 3));
        assert_eq!((moves(&view, 2).flaps, moves(&view, 4).flaps, moves(&view, 9).flaps), (1, 1, 0));
        assert_eq!(view.sinks[&9].path_changes, 3);
        // A sink with no hop (INT 0.5, Host-INT) is a sink, not a node.
        view.observe_sink(&flow(7), Some(70), 0);
        view.observe_sink(&flow(7), Some(70), 2);
        assert_eq!((view.sinks[&70].lost, view.nodes.contains_key(&70)), (2, false));
    }

    /// A node twice, or a hop without a node id: the hops count, the path
    /// is not told (never a wrong path reported as fact).
    #[test]
    fn a_path_that_cannot_be_told_is_counted_not_followed() {
        let mut view = Hops::new(LIMITS);
        let looped = [hop(1, 1, 1, (0, 1)), hop(2, 1, 1, (2, 3)), hop(1, 1, 1, (4, 5))];
        let anonymous = [hop(1, 1, 1, (0, 1)), Hop { node_id: None, ..hop(2, 1, 1, (2, 3)) }];
        view.observe(&seen(flow(1), &looped, 0));
        view.observe(&seen(flow(2), &anonymous, 0));
        assert_eq!(view.paths(), 0);
        assert_eq!(view.untracked.unusable_paths, 2);
        assert_eq!(view.nodes[&1].hops, 3);
        // 63 hops and the sink: the longest path told; one hop more is not.
        let longest: Vec<_> = (0..MAX_PATH as u32 - 1).map(|n| hop(100 + n, 1, 1, (0, 1))).collect();
        view.observe(&seen(flow(3), &longest, 0));
        assert_eq!((view.paths(), view.untracked.unusable_paths), (1, 2));
        let long: Vec<_> = (0..MAX_PATH as u32).map(|n| hop(100 + n, 1, 1, (0, 1))).collect();
        view.observe(&seen(flow(4), &long, 0));
        assert_eq!((view.paths(), view.untracked.unusable_paths), (1, 3));
    }

    /// Beyond the limits, nodes, links and flows are counted, not kept.
    #[test]
    fn memory_is_bounded_by_the_limits() {
        let mut view = Hops::new(Limits { nodes: 2, links: 1, flows: 1 });
        let hops = [hop(1, 1, 1, (0, 1)), hop(2, 1, 1, (2, 3))];
        view.observe(&seen(flow(1), &hops, 0));
        view.observe(&seen(flow(2), &hops, 0));
        assert_eq!(view.nodes.len(), 2);
        assert_eq!(view.untracked.nodes, 2, "the sink, twice");
        assert_eq!((view.links.len(), view.untracked.links), (1, 2));
        assert_eq!((view.paths(), view.untracked.flows), (1, 1));
    }

    #[test]
    fn views_merge() {
        let hops = [hop(1, 10, 1, (0, 1)), hop(2, 30, 1, (2, 3))];
        let (mut a, mut b) = (Hops::new(LIMITS), Hops::new(LIMITS));
        a.observe(&seen(flow(1), &hops, 0));
        b.observe(&seen(flow(2), &hops, 0));
        b.observe_drop(2, 71);
        a.merge(&b);
        assert_eq!((a.nodes[&1].hops, a.nodes[&2].drops[&71], a.paths()), (2, 1, 2));
    }
}
