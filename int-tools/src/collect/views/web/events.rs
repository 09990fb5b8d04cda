//! The view's events, one per cause: what happened within a short window
//! ([`WINDOW_MS`]) for one reason is one event that counts it and names
//! its flows. 2,500 flows moved off one leaf onto another are one event
//! "2500 flows moved leaf-8 -> leaf-1"; loss on 40 flows to one sink is
//! one event "loss on 40 flows to sink-9". Each kind keeps its own bounded
//! ring, so a storm of one kind (loss on every flow) never pushes another
//! (the path changes) out.
//!
//! Memory: at most [`PER_KIND`] events of each of the seven kinds (160
//! bytes each, with their paths and sets about 350), and at most
//! [`FLOW_IDS_PER_KIND`] flow ids listed by the events of one kind (in
//! B-tree sets, 10.2 bytes an id: 2 MB a kind; two kinds name flows),
//! [`EVENT_FLOWS`] per event; the count of flows stays exact beyond.
//! About 5 MB in all.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::collect::names::Naming;
use crate::schema::human_ns;

/// How long an event takes more of its cause, from its first occurrence.
pub const WINDOW_MS: u64 = 30_000;
/// Events kept per kind, the newest.
pub const PER_KIND: usize = 500;
/// Flow ids one event lists at most (its flow count stays exact).
pub const EVENT_FLOWS: usize = 10_000;
/// Flow ids the events of one kind list at most: the oldest events go
/// first when more would not fit.
pub const FLOW_IDS_PER_KIND: usize = 200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    PathChange,
    HopChange,
    Drops,
    Loss,
    Stale,
    Back,
    Congestion,
}

impl EventKind {
    pub const ALL: [EventKind; 7] = [
        EventKind::PathChange,
        EventKind::HopChange,
        EventKind::Drops,
        EventKind::Loss,
        EventKind::Stale,
        EventKind::Back,
        EventKind::Congestion,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKind::PathChange => "path_change",
            EventKind::HopChange => "hop_change",
            EventKind::Drops => "drops",
            EventKind::Loss => "loss",
            EventKind::Stale => "stale",
            EventKind::Back => "back",
            EventKind::Congestion => "congestion",
        }
    }

    pub fn parse(text: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.name() == text)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Why an event happened: occurrences of one cause within the window are
/// one event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Cause {
    /// Flows whose path left the nodes `from` for the nodes `to` (the part
    /// of the two paths that differs; either may be empty).
    Moved {
        from: Vec<u32>,
        to: Vec<u32>,
    },
    HopChange {
        node: u32,
    },
    Drops {
        node: u32,
        reason: u8,
    },
    /// Packets lost on flows to `sink` (`None`: flows with no path known).
    Loss {
        sink: Option<u32>,
    },
    Stale {
        node: u32,
    },
    Back {
        node: u32,
    },
    /// Congestion episodes of a queue (docs/congestion.md).
    Congested {
        node: u32,
        queue: u8,
    },
    /// A sink's congested-queue flag (Q) on the reports of `node`.
    QueueAlert {
        node: u32,
    },
}

impl Cause {
    /// A path change's cause: the part of `old` and `new` that differs.
    pub fn moved(old: &[u32], new: &[u32]) -> Cause {
        let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let (old_rest, new_rest) = (old.get(head..).unwrap_or(&[]), new.get(head..).unwrap_or(&[]));
        let tail = old_rest.iter().rev().zip(new_rest.iter().rev()).take_while(|(a, b)| a == b).count();
        let cut = |rest: &[u32]| rest.get(..rest.len().saturating_sub(tail)).unwrap_or(&[]).to_vec();
        Cause::Moved { from: cut(old_rest), to: cut(new_rest) }
    }

    pub fn kind(&self) -> EventKind {
        match self {
            Cause::Moved { .. } => EventKind::PathChange,
            Cause::HopChange { .. } => EventKind::HopChange,
            Cause::Drops { .. } => EventKind::Drops,
            Cause::Loss { .. } => EventKind::Loss,
            Cause::Stale { .. } => EventKind::Stale,
            Cause::Back { .. } => EventKind::Back,
            Cause::Congested { .. } | Cause::QueueAlert { .. } => EventKind::Congestion,
        }
    }

    /// Every node the event is about: a path change's nodes left, then
    /// those joined; a loss's sink; the node of the others.
    pub fn nodes(&self) -> Vec<u32> {
        match self {
            Cause::Moved { from, to } => from.iter().chain(to).copied().collect(),
            Cause::Loss { sink } => sink.iter().copied().collect(),
            Cause::HopChange { node }
            | Cause::Drops { node, .. }
            | Cause::Stale { node }
            | Cause::Back { node }
            | Cause::Congested { node, .. }
            | Cause::QueueAlert { node } => vec![*node],
        }
    }

    /// The one node that stands for the event: the first a path change
    /// joined (else left), a loss's sink, the node of the others.
    pub fn node(&self) -> Option<u32> {
        match self {
            Cause::Moved { from, to } => to.first().or(from.first()).copied(),
            _ => self.nodes().first().copied(),
        }
    }
}

/// What the text of an event tells besides its cause.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Detail {
    None,
    /// The first change's whole paths (the text of a one-flow change).
    Paths {
        old: Vec<u32>,
        new: Vec<u32>,
    },
    /// Mean hop latency, ns: before the first change, after the last.
    Latency {
        before: i64,
        after: i64,
    },
    /// How long the node had not been told of, ms.
    Quiet {
        after_ms: u64,
    },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// The event's number in the view's pages (/api/events/ID).
    pub id: u64,
    /// Its first occurrence, ms since the view started.
    pub t_ms: u64,
    /// Its last occurrence.
    pub last_ms: u64,
    pub cause: Cause,
    /// Occurrences: path changes, packets lost, drop reports, hop
    /// changes, times stale or back.
    pub count: u64,
    /// The flows it names (path changes, loss), the first [`EVENT_FLOWS`].
    pub flows: BTreeSet<u64>,
    /// How many flows it names: exact beyond those listed, but for a flow
    /// listed none and named twice.
    pub flow_count: u64,
    pub detail: Detail,
}

impl Event {
    pub fn kind(&self) -> EventKind {
        self.cause.kind()
    }

    /// Its one flow, where it names exactly one.
    pub fn flow(&self) -> Option<u64> {
        (self.flow_count == 1).then(|| self.flows.first().copied()).flatten()
    }

    fn add(&mut self, now_ms: u64, count: u64, flow: Option<u64>, detail: Detail) {
        self.last_ms = now_ms;
        self.count = self.count.saturating_add(count);
        if let Some(flow) = flow {
            let named = self.flows.contains(&flow);
            if !named && self.flows.len() < EVENT_FLOWS {
                self.flows.insert(flow);
            }
            self.flow_count += u64::from(!named);
        }
        self.detail = match (std::mem::replace(&mut self.detail, Detail::None), detail) {
            (Detail::Latency { before, .. }, Detail::Latency { after, .. }) => {
                Detail::Latency { before, after }
            }
            (Detail::None, new) => new,
            (kept, _) => kept,
        };
    }
}

/// Every kind's ring, and the events still taking more of their cause.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Events {
    rings: [VecDeque<Event>; 7],
    /// Flow ids listed by each kind's events.
    listed: [usize; 7],
    /// Causes whose event is within its window: the event's id.
    open: HashMap<Cause, u64>,
    next_id: u64,
}

impl Default for Events {
    fn default() -> Events {
        Events { rings: Default::default(), listed: [0; 7], open: HashMap::new(), next_id: 1 }
    }
}

impl Events {
    /// Books one occurrence of `cause` at `now_ms` (`count` of it, naming
    /// `flow`): into its event while that is in its window, else into a
    /// new one. Returns the event's id.
    pub fn note(&mut self, now_ms: u64, cause: Cause, count: u64, flow: Option<u64>, detail: Detail) -> u64 {
        let kind = cause.kind().index();
        let open = self.open.get(&cause).copied();
        let found =
            open.and_then(|id| self.get_mut(kind, id)).filter(|e| now_ms <= e.t_ms.saturating_add(WINDOW_MS));
        let (id, listed) = match found {
            Some(event) => {
                let before = event.flows.len();
                event.add(now_ms, count, flow, detail);
                (event.id, event.flows.len() - before)
            }
            None => {
                let id = self.next_id;
                self.next_id += 1;
                let mut event = Event {
                    id,
                    t_ms: now_ms,
                    last_ms: now_ms,
                    cause: cause.clone(),
                    count: 0,
                    flows: BTreeSet::new(),
                    flow_count: 0,
                    detail: Detail::None,
                };
                event.add(now_ms, count, flow, detail);
                let listed = event.flows.len();
                self.open.insert(cause, id);
                if let Some(ring) = self.rings.get_mut(kind) {
                    ring.push_back(event);
                }
                (id, listed)
            }
        };
        if let Some(kept) = self.listed.get_mut(kind) {
            *kept += listed;
        }
        self.trim(kind);
        id
    }

    /// The oldest events of a kind go while it holds too many, or lists
    /// too many flows (the newest always stays).
    fn trim(&mut self, kind: usize) {
        while self.rings.get(kind).is_some_and(|ring| {
            let listed = self.listed.get(kind).copied().unwrap_or(0);
            ring.len() > PER_KIND || (listed > FLOW_IDS_PER_KIND && ring.len() > 1)
        }) {
            self.pop_oldest(kind);
        }
    }

    /// Drops the oldest event of a kind, its flows and its window with it.
    fn pop_oldest(&mut self, kind: usize) -> bool {
        let Some(gone) = self.rings.get_mut(kind).and_then(VecDeque::pop_front) else {
            return false;
        };
        if let Some(listed) = self.listed.get_mut(kind) {
            *listed = listed.saturating_sub(gone.flows.len());
        }
        if self.open.get(&gone.cause) == Some(&gone.id) {
            self.open.remove(&gone.cause);
        }
        true
    }

    /// Leaves out the events first seen before `t_ms` (what a kept state
    /// drops by age); how many.
    pub fn drop_old(&mut self, t_ms: u64) -> usize {
        let mut dropped = 0;
        for kind in 0..self.rings.len() {
            while self.rings.get(kind).and_then(VecDeque::front).is_some_and(|e| e.t_ms < t_ms) {
                dropped += usize::from(self.pop_oldest(kind));
            }
        }
        dropped
    }

    /// Leaves out the older half of each kind's events (rounded up: a last
    /// one goes too; what a kept state drops for size); how many.
    pub fn halve(&mut self) -> usize {
        let mut dropped = 0;
        for kind in 0..self.rings.len() {
            let drop = self.rings.get(kind).map_or(0, |ring| ring.len().div_ceil(2));
            for _ in 0..drop {
                dropped += usize::from(self.pop_oldest(kind));
            }
        }
        dropped
    }

    /// Forgets the causes whose window has passed (their events stay).
    pub fn close(&mut self, now_ms: u64) {
        let rings = &self.rings;
        self.open.retain(|cause, id| {
            let ring = rings.get(cause.kind().index());
            let event = ring.and_then(|ring| find(ring, *id));
            event.is_some_and(|event| now_ms <= event.t_ms.saturating_add(WINDOW_MS))
        });
    }

    fn get_mut(&mut self, kind: usize, id: u64) -> Option<&mut Event> {
        let ring = self.rings.get_mut(kind)?;
        let at = ring.binary_search_by_key(&id, |event| event.id).ok()?;
        ring.get_mut(at)
    }

    pub fn get(&self, id: u64) -> Option<&Event> {
        self.rings.iter().find_map(|ring| find(ring, id))
    }

    /// Events kept, all kinds.
    pub fn len(&self) -> usize {
        self.rings.iter().map(VecDeque::len).sum()
    }

    /// Every event, newest first.
    pub fn newest(&self) -> Vec<&Event> {
        let mut all: Vec<&Event> = self.rings.iter().flatten().collect();
        all.sort_unstable_by_key(|event| std::cmp::Reverse(event.id));
        all
    }

    /// The events of `kind`, newest first.
    pub fn of_kind(&self, kind: EventKind) -> impl Iterator<Item = &Event> {
        self.rings.get(kind.index()).into_iter().flat_map(|ring| ring.iter().rev())
    }
}

/// What happened, in words, every node by its name (or id); `flow_name`
/// names a flow by its id.
pub fn text(event: &Event, names: &Naming, flow_name: impl Fn(u64) -> Option<String>) -> String {
    let (count, flows) = (event.count, event.flow_count);
    let flows = if flows == 1 { "1 flow".to_string() } else { format!("{flows} flows") };
    match (&event.cause, &event.detail) {
        (Cause::Moved { .. }, Detail::Paths { old, new }) if event.flow_count == 1 => {
            let who = event.flow().and_then(flow_name).unwrap_or(flows);
            format!("{who}: path {} -> {}", labels(names, old), labels(names, new))
        }
        (Cause::Moved { from, to }, _) => match (from.is_empty(), to.is_empty()) {
            (true, _) => format!("{flows} now also through {}", labels(names, to)),
            (_, true) => format!("{flows} no longer through {}", labels(names, from)),
            _ => format!("{flows} moved {} -> {}", labels(names, from), labels(names, to)),
        },
        (Cause::Loss { sink }, _) => {
            let to =
                sink.map_or_else(|| "(no path known)".to_string(), |id| format!("to {}", names.label(id)));
            format!("loss on {flows} {to}: {count} packet(s) lost")
        }
        (Cause::HopChange { node }, detail) => {
            let change = match detail {
                Detail::Latency { before, after } => {
                    format!(" {} -> {}", human_ns(*before), human_ns(*after))
                }
                _ => String::new(),
            };
            format!("node {}: hop latency{change}{}", names.describe(*node), times(count, "changes"))
        }
        (Cause::Drops { node, reason }, _) => {
            format!("node {}: {count} drop report(s), reason {reason}", names.describe(*node))
        }
        (Cause::Stale { node }, detail) => {
            let quiet = match detail {
                Detail::Quiet { after_ms } => format!(" for {} s", after_ms / 1000),
                _ => String::new(),
            };
            format!("node {}: no report{quiet}{}", names.describe(*node), times(count, "times"))
        }
        (Cause::Back { node }, _) => {
            format!("node {} reports again{}", names.describe(*node), times(count, "times"))
        }
        (Cause::Congested { node, queue }, _) => {
            format!("node {} queue {queue}: {count} congestion episode(s)", names.describe(*node))
        }
        (Cause::QueueAlert { node }, _) => {
            format!("node {}: {count} report(s) flagged a congested queue (Q)", names.describe(*node))
        }
    }
}

/// " (3 changes)" for more than one.
fn times(count: u64, what: &str) -> String {
    if count > 1 {
        format!(" ({count} {what})")
    } else {
        String::new()
    }
}

/// Nodes by name (or id), in order.
fn labels(names: &Naming, nodes: &[u32]) -> String {
    nodes.iter().map(|id| names.label(*id)).collect::<Vec<_>>().join(" > ")
}

fn find(ring: &VecDeque<Event>, id: u64) -> Option<&Event> {
    ring.binary_search_by_key(&id, |event| event.id).ok().and_then(|at| ring.get(at))
}

/// Which events a page asks for: of one kind, about one node (any node
/// of the event's cause).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    pub kind: Option<EventKind>,
    pub node: Option<u32>,
}

impl Filter {
    pub fn keeps(&self, event: &Event) -> bool {
        self.kind.is_none_or(|kind| event.kind() == kind)
            && self.node.is_none_or(|node| event.cause.nodes().contains(&node))
    }

    /// The newest `limit` events it keeps, and how many it keeps in all.
    pub fn newest<'a>(&self, events: &'a Events, limit: usize) -> (Vec<&'a Event>, usize) {
        let kept: Vec<&Event> = match self.kind {
            Some(kind) => events.of_kind(kind).filter(|e| self.keeps(e)).collect(),
            None => events.newest().into_iter().filter(|e| self.keeps(e)).collect(),
        };
        let total = kept.len();
        (kept.into_iter().take(limit).collect(), total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of every cause as `--state` keeps them (CBOR): the same back,
    /// each still open to more of its cause.
    #[test]
    fn kept_events_come_back_the_same() {
        let mut events = Events::default();
        let causes = [
            Cause::Moved { from: vec![8], to: vec![2] },
            Cause::HopChange { node: 4 },
            Cause::Drops { node: 4, reason: 71 },
            Cause::Loss { sink: Some(9) },
            Cause::Loss { sink: None },
            Cause::Stale { node: 5 },
            Cause::Back { node: 5 },
        ];
        for (i, cause) in causes.iter().enumerate() {
            events.note(1000, cause.clone(), 3, Some(i as u64), Detail::Latency { before: 1, after: 2 });
        }
        let mut bytes = Vec::new();
        ciborium::into_writer(&events, &mut bytes).unwrap();
        let mut back: Events = ciborium::from_reader(bytes.as_slice()).unwrap();
        let ids =
            |events: &Events| events.newest().iter().map(|e| (e.id, e.cause.clone())).collect::<Vec<_>>();
        assert_eq!(ids(&back), ids(&events));
        assert_eq!(back.note(2000, Cause::Loss { sink: Some(9) }, 1, Some(99), Detail::None), 4);
    }

    /// The part of two paths that differs, whatever their lengths.
    #[test]
    fn a_moves_cause_is_where_the_paths_differ() {
        let moved = |from: &[u32], to: &[u32]| Cause::Moved { from: from.to_vec(), to: to.to_vec() };
        assert_eq!(Cause::moved(&[1, 8, 30, 9], &[1, 2, 30, 9]), moved(&[8], &[2]));
        assert_eq!(Cause::moved(&[1, 8, 9], &[1, 9]), moved(&[8], &[]));
        assert_eq!(Cause::moved(&[1, 9], &[1, 4, 5, 9]), moved(&[], &[4, 5]));
        assert_eq!(Cause::moved(&[1, 2, 9], &[1, 2, 7]), moved(&[9], &[7]));
        assert_eq!(Cause::moved(&[], &[1]), moved(&[], &[1]));
    }

    /// One cause within the window is one event, its flows counted once;
    /// after the window, a new event.
    #[test]
    fn a_cause_is_one_event_within_its_window() {
        let mut events = Events::default();
        let cause = Cause::Loss { sink: Some(9) };
        for flow in 0..40 {
            events.note(1000, cause.clone(), 3, Some(flow), Detail::None);
            events.note(2000, cause.clone(), 1, Some(flow), Detail::None);
        }
        assert_eq!(events.len(), 1);
        let event = events.newest()[0];
        assert_eq!((event.count, event.flow_count, event.flows.len(), event.last_ms), (160, 40, 40, 2000));
        events.close(1000 + WINDOW_MS + 1);
        events.note(1000 + WINDOW_MS + 1, cause, 1, Some(1), Detail::None);
        assert_eq!(events.len(), 2);
        assert_eq!(events.newest()[0].flow(), Some(1));
    }

    /// An event lists EVENT_FLOWS flows and counts them all; a kind that
    /// lists too many flows loses its oldest events, never another kind's.
    #[test]
    fn flows_listed_are_bounded_and_counted_exactly() {
        let mut events = Events::default();
        let moved = Cause::moved(&[1, 2, 9], &[1, 3, 9]);
        events.note(0, moved.clone(), 1, Some(0), Detail::None);
        let flows = EVENT_FLOWS as u64 + 5;
        for round in 0..(FLOW_IDS_PER_KIND / EVENT_FLOWS + 1) as u64 {
            let cause = Cause::Loss { sink: Some(round as u32) };
            for flow in 0..flows {
                events.note(round, cause.clone(), 1, Some(flow), Detail::None);
            }
        }
        let losses: Vec<&Event> = events.of_kind(EventKind::Loss).collect();
        assert_eq!(losses.len(), FLOW_IDS_PER_KIND / EVENT_FLOWS);
        assert!(losses.iter().all(|e| e.flow_count == flows && e.flows.len() == EVENT_FLOWS));
        assert_eq!(events.of_kind(EventKind::PathChange).count(), 1, "loss pushed no path change out");
    }

    /// Kept per kind: a kind's storm keeps PER_KIND of its own.
    #[test]
    fn each_kind_keeps_its_own_ring() {
        let mut events = Events::default();
        events.note(0, Cause::Stale { node: 1 }, 1, None, Detail::None);
        for node in 0..(PER_KIND as u32 * 3) {
            events.note(1, Cause::Drops { node, reason: 71 }, 1, None, Detail::None);
        }
        assert_eq!(events.of_kind(EventKind::Drops).count(), PER_KIND);
        assert_eq!(events.len(), PER_KIND + 1);
        assert_eq!(events.newest().last().map(|e| e.kind()), Some(EventKind::Stale));
    }

    /// A filter by kind, by node (any node of the cause), or both.
    #[test]
    fn filters_by_kind_and_node() {
        let mut events = Events::default();
        events.note(0, Cause::moved(&[1, 8, 9], &[1, 2, 9]), 1, Some(1), Detail::None);
        events.note(0, Cause::moved(&[1, 7, 9], &[1, 3, 9]), 1, Some(2), Detail::None);
        events.note(0, Cause::Loss { sink: Some(9) }, 5, Some(1), Detail::None);
        events.note(0, Cause::Drops { node: 8, reason: 71 }, 2, None, Detail::None);
        let ids = |filter: Filter| filter.newest(&events, 100).0.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(Filter::default()), [4, 3, 2, 1]);
        assert_eq!(ids(Filter { kind: Some(EventKind::PathChange), node: None }), [2, 1]);
        assert_eq!(ids(Filter { kind: None, node: Some(8) }), [4, 1]);
        assert_eq!(ids(Filter { kind: Some(EventKind::PathChange), node: Some(2) }), [1]);
        assert_eq!(ids(Filter { kind: None, node: Some(9) }), [3]);
        assert_eq!(Filter::default().newest(&events, 1).1, 4);
        assert_eq!(EventKind::parse("loss"), Some(EventKind::Loss));
        assert_eq!(EventKind::parse("flood"), None);
    }
}
