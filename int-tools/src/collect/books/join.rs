//! Postcards joined into paths. In INT-MX and INT-XD every node of a path
//! reports its own metadata on a packet; the collector puts the reports of
//! one packet back together: the same flow and the same packet identity
//! (a hash of the packet's bytes that no hop changes: the IP header without
//! DSCP/ECN, TTL or Hop Limit and the IPv4 checksum, then everything
//! after it that the report carries). Groups close in event time: each
//! reporting node has a watermark, how far in packet time its postcards
//! have come (the earlier stamp of its last two postcards: a node reports
//! its packets in their order, and one stamp gone wrong moves it no further
//! than the node's next postcard). A group closes once every node heard
//! from within the window has passed its packet time (its postcards'
//! latest stamp; one stamped far back never closes its group early) by
//! more than [`CROSSING_MS`], so a node whose export runs behind the others
//! changes nothing. The window is the collector's own clock and bounds it
//! all: a group still closes once the window has passed since its first
//! postcard arrived (the receiver's clock ticks while no postcard comes),
//! or when collect stops; a node silent for the window no longer counts;
//! and until every listed node, or one window, has been heard, only the
//! window closes groups (a node not heard yet may still report the first
//! packets). Each flow's groups are handed on in their packets' order
//! (their latest stamps), never their arrival's: a group whose window has
//! passed waits while a group of an earlier packet of its flow is open
//! within its own window, and goes after it. So no stamp, however wrong,
//! holds a group open beyond two windows. A closed group's hops, ordered
//! by their timestamps, go to the same per-hop view as an INT-MD stack.
//!
//! What cannot be a path is not reported as one: a group whose hops lack
//! timestamps (or stamp 0), share one, or contradict each other (a hop's
//! egress after the next one's ingress: clocks apart, or two packets with
//! the same identity), lie further apart than the window, or contradict
//! the packet's TTL (or Hop Limit) as each node saw it (routers between
//! the nodes lower it, so it never grows along the path: a node whose
//! clock is off by more than the time between two hops is caught here),
//! gives its nodes' figures but no links and no path (`unordered`).
//!
//! A node that sends a packet's postcard twice alike is a duplicate. A
//! node with two different postcards in one group (a spoofed or restamped
//! one beside the genuine) is not settled by which came first: every
//! choice of one postcard per node is tried, and the one whose order holds
//! and whose TTLs fall at the most steps is taken, if it alone does; the
//! postcards not taken are duplicates. Where no choice, or more than one,
//! holds, the group is unordered: no path rather than a wrong one. Memory
//! is bounded: at most [`MAX_OPEN`] open groups, and [`MAX_PATH`]
//! postcards each (`dropped` beyond).
//!
//! Two more guards. Where the domain's nodes are listed (`--domain-nodes`),
//! a postcard from any other node is counted (`unknown`) and never joined:
//! a spoofed or misconfigured reporter adds no node to a path. And a group
//! that holds fewer nodes than its flow's path, in that path's order, is
//! most likely a packet some of whose postcards were lost: it gives its
//! nodes' figures but neither links nor a path (`incomplete`), until
//! `--join-confirm` packets in a row give that same shorter path, which
//! then is the flow's path (a node really left it). The default, 32, is
//! more postcards than one report datagram of 1500 bytes holds: a lost
//! datagram cannot make a path change. The other way round, a path given
//! by fewer than `--join-confirm` packets in a row that a group holds
//! whole, in its order, with more nodes, was the part a lost postcard
//! left: the longer path replaces it without a path change.

use std::collections::{BTreeMap, HashMap};

use foldhash::fast::RandomState;

use int_core::flow::FlowKey;
use int_core::hop::Hop;

pub use super::hops::MAX_PATH;

/// Open groups at most.
pub const MAX_OPEN: usize = 100_000;
/// Choices of one postcard per node tried in a group whose nodes sent
/// different postcards; a group with more is unordered.
pub const MAX_CHOICES: usize = 64;
/// Reporting nodes whose watermark is kept; one heard from once the
/// marks are full (and none has gone silent) holds no group open.
pub const MAX_MARKS: usize = 4096;
/// How much later than a group's latest stamp its packet may reach
/// another node, ms (it crosses the domain in far less; clocks agree
/// within far less): a node's watermark must pass that too.
pub const CROSSING_MS: u64 = 10;
const CROSSING_NS: u64 = CROSSING_MS * 1_000_000;

/// One node's report on one packet.
#[derive(Debug, Clone)]
pub struct Postcard {
    pub flow: FlowKey,
    pub identity: u64,
    pub node: u32,
    pub metadata: Hop,
    /// The packet's TTL or Hop Limit as this node saw it.
    pub ttl: Option<u8>,
    /// Its time in the timelines' base, ms: where its group's record is
    /// placed (its ingress stamp, not this, moves its node's watermark).
    pub at_ms: u64,
}

/// A closed group: its hops in path order, and whether that order can be
/// told (else only its nodes' figures count).
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    pub flow: FlowKey,
    pub hops: Vec<Hop>,
    pub ordered: bool,
    pub at_ms: u64,
}

/// What the join did, for the summary. Every postcard is counted once:
/// `unknown`, `dropped`, `duplicates`, a hop of a closed group, or still
/// pending ([`Join::pending`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub postcards: u64,
    /// Groups closed: packets whose postcards were put together.
    pub packets: u64,
    /// Of those, groups whose hops could not be ordered.
    pub unordered: u64,
    /// Postcards of a node already in their group: the same again, or one
    /// its group's order did not take.
    pub duplicates: u64,
    /// Postcards with no room (too many open groups, or a group full).
    pub dropped: u64,
    /// Postcards from nodes not in the domain's list.
    pub unknown: u64,
    /// Groups that held part of their flow's path (figures of their nodes
    /// only).
    pub incomplete: u64,
}

impl Counts {
    pub fn merge(&mut self, other: &Counts) {
        self.postcards += other.postcards;
        self.packets += other.packets;
        self.unordered += other.unordered;
        self.duplicates += other.duplicates;
        self.dropped += other.dropped;
        self.unknown += other.unknown;
        self.incomplete += other.incomplete;
    }
}

/// One postcard in its group: the node's metadata (its id filled in) and
/// the TTL it saw.
#[derive(Debug, Clone, PartialEq)]
struct Card {
    hop: Hop,
    ttl: Option<u8>,
}

/// A group's key: its flow and its packet's identity.
type Key = (FlowKey, u64);

struct Group {
    /// The first postcard's time in the timelines' base.
    first_ms: u64,
    /// Opened before every group of a higher number.
    number: u64,
    /// When its first postcard arrived, on the collector's clock.
    opened_ms: u64,
    /// When the collector's clock next looks at it: the window after it
    /// opened, or, once held for an earlier packet of its flow, two.
    due_ms: u64,
    /// Whether its window has passed while an earlier packet's group of
    /// its flow was open.
    held: bool,
    /// Its packet's time: the latest ingress stamp of its postcards, ns
    /// (none while no postcard is timed).
    stamp_ns: Option<u64>,
    /// Every distinct postcard, in arrival order.
    cards: Vec<Card>,
}

/// How far in packet time a node's postcards have come.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Its last two postcards' ingress stamps, ns.
    previous_ns: u64,
    latest_ns: u64,
    /// When its last timed postcard arrived, on the collector's clock.
    heard_ms: u64,
}

impl Mark {
    /// The earlier of its last two stamps: a node reports its packets in
    /// their order, so it has passed that time; one stamp gone wrong (a
    /// year ahead) moves it no further than the node's next postcard.
    fn passed_ns(&self) -> u64 {
        self.previous_ns.min(self.latest_ns)
    }
}

/// A closed group with its place in packet order: (stamp, number).
type Closed = (Option<u64>, u64, Joined);

pub struct Join {
    window_ms: u64,
    /// Open groups at most, and flows with a shorter path counted.
    max_open: usize,
    /// The domain's nodes; empty: any node.
    nodes: Vec<u32>,
    /// Packets in a row that make a flow's shorter path its path.
    confirm: u32,
    /// Flows whose last packets gave a shorter path than theirs: that
    /// path, and how many packets in a row gave it.
    shorter: HashMap<FlowKey, (Vec<u32>, u32), RandomState>,
    open: HashMap<Key, Group, RandomState>,
    /// Open groups by when the collector's clock looks at them: (due,
    /// number).
    by_due: BTreeMap<(u64, u64), Key>,
    /// Open groups with a timed postcard by their packet's time: (stamp,
    /// number).
    by_stamp: BTreeMap<(u64, u64), Key>,
    /// The same, each flow's in its packets' order: (flow, stamp,
    /// number) to the packet's identity.
    by_flow: BTreeMap<(FlowKey, u64, u64), u64>,
    /// Open groups held for an earlier packet of their flow.
    held: usize,
    /// Each reporting node's watermark ([`MAX_MARKS`] nodes at most).
    marks: HashMap<u32, Mark, RandomState>,
    /// The next group's number.
    next_number: u64,
    /// When the first postcard arrived, on the collector's clock.
    started_ms: Option<u64>,
    /// The collector's clock, ms: the latest arrival time given.
    clock_ms: u64,
    pub counts: Counts,
}

/// How an ordered group's nodes fit the path its flow had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The whole path, or another one: followed as it is.
    Whole,
    /// Part of the path, in its order: its nodes' figures only.
    Part,
    /// Part of the path that `confirm` packets in a row gave: the flow's
    /// path now (a node left it), settled at once.
    Confirmed,
    /// The path whole, in its order, with more nodes, where fewer than
    /// `confirm` packets gave the path: its first packets lost a postcard.
    /// The flow's path now, without a path change.
    Grown,
}

impl Join {
    /// A join over `window_ms`, of postcards from `nodes` (empty: any),
    /// taking a shorter path after `confirm` packets in a row.
    pub fn new(window_ms: u64, nodes: Vec<u32>, confirm: u32) -> Join {
        Join {
            window_ms,
            max_open: MAX_OPEN,
            nodes,
            confirm,
            shorter: HashMap::default(),
            open: HashMap::default(),
            by_due: BTreeMap::new(),
            by_stamp: BTreeMap::new(),
            by_flow: BTreeMap::new(),
            held: 0,
            marks: HashMap::default(),
            next_number: 0,
            started_ms: None,
            clock_ms: 0,
            counts: Counts::default(),
        }
    }

    /// The same join with room for `max_open` open groups (and flows with
    /// a shorter path counted): a fuzz target reaches the bound.
    pub fn with_max_open(self, max_open: usize) -> Join {
        Join { max_open, ..self }
    }

    /// Adds a postcard that arrived at `now_ms` on the collector's clock;
    /// returns the groups that closed, in their packets' order.
    pub fn add(&mut self, card: Postcard, now_ms: u64) -> Vec<Joined> {
        self.counts.postcards += 1;
        // A clock set back (the wall clock's) never reorders the groups.
        self.clock_ms = self.clock_ms.max(now_ms);
        self.started_ms.get_or_insert(self.clock_ms);
        if !self.nodes.is_empty() && !self.nodes.contains(&card.node) {
            self.counts.unknown += 1;
        } else {
            self.mark(&card);
            self.hold(card);
        }
        self.close_passed()
    }

    /// The collector's clock at `now_ms` with no postcard: returns the
    /// groups that closed, in their packets' order. Called while the
    /// reports pause, it closes what their window has passed.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Joined> {
        self.clock_ms = self.clock_ms.max(now_ms);
        if self.open.is_empty() {
            return Vec::new();
        }
        self.close_passed()
    }

    /// Every open group, closed (collect is stopping), in their packets'
    /// order.
    pub fn close_all(&mut self) -> Vec<Joined> {
        let keys: Vec<Key> = self.open.keys().copied().collect();
        let closed = keys.into_iter().filter_map(|key| self.close(key)).collect();
        in_packet_order(closed)
    }

    /// Postcards in open groups.
    pub fn pending(&self) -> u64 {
        self.open.values().map(|group| group.cards.len() as u64).sum()
    }

    /// Open groups.
    pub fn open_groups(&self) -> usize {
        self.open.len()
    }

    /// Puts a domain node's postcard into its group, if there is room and
    /// the group lacks it.
    fn hold(&mut self, card: Postcard) {
        let key = (card.flow, card.identity);
        if !self.open.contains_key(&key) && self.open.len() >= self.max_open {
            self.counts.dropped += 1;
            return;
        }
        let stamp_ns = stamp_ns(&card.metadata);
        let (number, opened_ms) = (self.next_number, self.clock_ms);
        let due_ms = opened_ms.saturating_add(self.window_ms);
        let group = self.open.entry(key).or_insert_with(|| Group {
            first_ms: card.at_ms,
            number,
            opened_ms,
            due_ms,
            held: false,
            stamp_ns: None,
            cards: Vec::new(),
        });
        if group.number == number {
            self.next_number += 1;
            self.by_due.insert((due_ms, number), key);
        }
        let new = Card { hop: Hop { node_id: Some(card.node), ..card.metadata }, ttl: card.ttl };
        if group.cards.contains(&new) {
            self.counts.duplicates += 1;
        } else if group.cards.len() >= MAX_PATH {
            self.counts.dropped += 1;
        } else {
            group.cards.push(new);
            // The group's place in packet time is its latest stamp: one
            // stamped far back never closes it before its other nodes.
            if stamp_ns > group.stamp_ns {
                if let Some(old) = group.stamp_ns {
                    self.by_stamp.remove(&(old, group.number));
                    self.by_flow.remove(&(key.0, old, group.number));
                }
                group.stamp_ns = stamp_ns;
                if let Some(at) = stamp_ns {
                    self.by_stamp.insert((at, group.number), key);
                    self.by_flow.insert((key.0, at, group.number), key.1);
                }
            }
        }
    }

    /// Moves the node's watermark to a timed postcard's stamp.
    fn mark(&mut self, card: &Postcard) {
        let Some(at) = stamp_ns(&card.metadata) else { return };
        if !self.marks.contains_key(&card.node) && self.marks.len() >= MAX_MARKS {
            let (clock_ms, window_ms) = (self.clock_ms, self.window_ms);
            self.marks.retain(|_, mark| clock_ms.saturating_sub(mark.heard_ms) <= window_ms);
            if self.marks.len() >= MAX_MARKS {
                return;
            }
        }
        let mark =
            self.marks.entry(card.node).or_insert(Mark { previous_ns: at, latest_ns: at, heard_ms: 0 });
        *mark = Mark { previous_ns: mark.latest_ns, latest_ns: at, heard_ms: self.clock_ms };
    }

    /// The packet time every node heard from within the window has
    /// passed, ns (none heard: none); a node silent for longer no longer
    /// holds groups open. None either until every listed node, or one
    /// window, has been heard: a node not heard yet may still report the
    /// first packets.
    fn low_watermark(&self) -> Option<u64> {
        let waited = self.started_ms.is_some_and(|at| self.clock_ms.saturating_sub(at) > self.window_ms);
        let listed_heard =
            !self.nodes.is_empty() && self.nodes.iter().all(|node| self.marks.contains_key(node));
        if !(waited || listed_heard) {
            return None;
        }
        let heard = |mark: &&Mark| self.clock_ms.saturating_sub(mark.heard_ms) <= self.window_ms;
        self.marks.values().filter(heard).map(Mark::passed_ns).min()
    }

    /// Closes the groups whose packet time every node heard from has
    /// passed, and those whose window the collector's clock has passed,
    /// each flow's in its packets' order.
    fn close_passed(&mut self) -> Vec<Joined> {
        let mut closed = Vec::new();
        self.close_marked(&mut closed);
        self.close_due(&mut closed);
        in_packet_order(closed)
    }

    /// Closes the groups whose packet time every node heard from has
    /// passed (by more than a crossing): of each flow, its first ones.
    fn close_marked(&mut self, closed: &mut Vec<Closed>) {
        // Every node's mark is read only when a timed group is open.
        let Some(passed_ns) = self.by_stamp.first_key_value().and_then(|_| self.low_watermark()) else {
            return;
        };
        let before = passed_ns.saturating_sub(CROSSING_NS);
        let from = closed.len();
        while let Some(first) = self.by_stamp.first_entry() {
            if first.key().0 >= before {
                break;
            }
            let key = first.remove();
            closed.extend(self.close(key));
        }
        // Their flows' groups held for them may go now.
        if self.held > 0 {
            let flows: Vec<FlowKey> = closed.iter().skip(from).map(|(_, _, joined)| joined.flow).collect();
            for flow in flows {
                self.close_flow_due(flow, closed);
            }
        }
    }

    /// Closes the groups whose window has passed, unless an earlier
    /// packet's group of their flow is still open within its own: then
    /// they wait for it, a second window at most.
    fn close_due(&mut self, closed: &mut Vec<Closed>) {
        let clock_ms = self.clock_ms;
        while let Some(first) = self.by_due.first_entry() {
            if first.key().0 >= clock_ms {
                break;
            }
            let key = first.remove();
            let Some(group) = self.open.get(&key) else { continue };
            let last_ms = group.opened_ms.saturating_add(self.window_ms.saturating_mul(2));
            if group.stamp_ns.is_none() || last_ms < clock_ms {
                closed.extend(self.close(key));
                if self.held > 0 {
                    // Its flow's groups held for it may go now.
                    self.close_flow_due(key.0, closed);
                }
                continue;
            }
            self.close_flow_due(key.0, closed);
            if let Some(group) = self.open.get_mut(&key) {
                // An earlier packet's group of its flow is still open.
                group.due_ms = last_ms;
                self.held += usize::from(!group.held);
                group.held = true;
                self.by_due.insert((last_ms, group.number), key);
            }
        }
    }

    /// Closes `flow`'s first groups in packet order, as long as their
    /// window has passed.
    fn close_flow_due(&mut self, flow: FlowKey, closed: &mut Vec<Closed>) {
        let limit_ms = self.clock_ms.saturating_sub(self.window_ms);
        loop {
            let first = self.by_flow.range((flow, 0, 0)..=(flow, u64::MAX, u64::MAX)).next();
            let Some((_, &identity)) = first else { return };
            let passed = self.open.get(&(flow, identity)).is_some_and(|group| group.opened_ms < limit_ms);
            let Some(group) = passed.then(|| self.close((flow, identity))).flatten() else { return };
            closed.push(group);
        }
    }

    /// Closes the group of `key`, if open: its place in packet order and
    /// its hops.
    fn close(&mut self, key: Key) -> Option<Closed> {
        let group = self.open.remove(&key)?;
        self.by_due.remove(&(group.due_ms, group.number));
        if let Some(at) = group.stamp_ns {
            self.by_stamp.remove(&(at, group.number));
            self.by_flow.remove(&(key.0, at, group.number));
        }
        self.held = self.held.saturating_sub(usize::from(group.held));
        let (stamp_ns, number) = (group.stamp_ns, group.number);
        Some((stamp_ns, number, self.joined(key.0, group)))
    }

    fn joined(&mut self, flow: FlowKey, group: Group) -> Joined {
        let cards = group.cards.len();
        let (hops, ordered) = choose(group.cards, self.window_ms.saturating_mul(1_000_000));
        self.counts.duplicates += cards.saturating_sub(hops.len()) as u64;
        self.counts.packets += 1;
        self.counts.unordered += u64::from(!ordered);
        Joined { flow, hops, ordered, at_ms: group.first_ms }
    }
}

/// Closed groups in their packets' order: by latest stamp, untimed ones
/// first, in the order they opened.
fn in_packet_order(mut closed: Vec<Closed>) -> Vec<Joined> {
    closed.sort_unstable_by_key(|(stamp_ns, number, _)| (*stamp_ns, *number));
    closed.into_iter().map(|(_, _, joined)| joined).collect()
}

impl Join {
    /// How an ordered group fits its flow's path (`known`: the path the
    /// flow had, and how many packets in a row gave it): part of it, in
    /// its order, is incomplete unless `confirm` packets in a row said so;
    /// a young path that the group holds whole with more nodes has grown.
    pub fn fit(&mut self, joined: &Joined, known: Option<(&[u32], u32)>) -> Fit {
        let nodes: Vec<u32> = joined.hops.iter().filter_map(|hop| hop.node_id).collect();
        let Some((path, given)) = known else {
            self.shorter.remove(&joined.flow);
            return Fit::Whole;
        };
        if nodes.len() > path.len() && given < self.confirm && in_order(path, &nodes) {
            self.shorter.remove(&joined.flow);
            return Fit::Grown;
        }
        if !(nodes.len() < path.len() && in_order(&nodes, path)) {
            self.shorter.remove(&joined.flow);
            return Fit::Whole;
        }
        if !self.shorter.contains_key(&joined.flow) && self.shorter.len() >= self.max_open {
            self.counts.incomplete += 1;
            return Fit::Part;
        }
        let entry = self.shorter.entry(joined.flow).or_insert_with(|| (nodes.clone(), 0));
        if entry.0 != nodes {
            *entry = (nodes, 0);
        }
        entry.1 += 1;
        if entry.1 >= self.confirm {
            self.shorter.remove(&joined.flow);
            return Fit::Confirmed;
        }
        self.counts.incomplete += 1;
        Fit::Part
    }
}

/// A postcard's ingress stamp in ns, if it has one (0: no clock).
fn stamp_ns(metadata: &Hop) -> Option<u64> {
    metadata.ingress_timestamp.filter(|at| *at != 0)
}

/// Whether `part`'s nodes all appear in `path`, in the same order.
fn in_order(part: &[u32], path: &[u32]) -> bool {
    let mut rest = path.iter();
    part.iter().all(|node| rest.any(|other| other == node))
}

/// A joined packet's record: its flow, its nodes' metadata in path order,
/// whether it holds its flow's whole path (`complete`; null where the
/// order cannot be told), and its path where it does (null otherwise).
pub fn record(joined: &Joined, complete: Option<bool>) -> crate::records::JoinedRecord {
    let nodes: Vec<Option<u32>> = joined.hops.iter().map(|hop| hop.node_id).collect();
    crate::records::JoinedRecord {
        kind: crate::records::RecordType::Joined,
        flow: Some(joined.flow),
        path: (complete == Some(true)).then(|| nodes.clone()),
        nodes: Some(nodes),
        ordered: Some(joined.ordered),
        complete,
        hop_metadata: Some(joined.hops.iter().map(crate::records::Hop::from).collect()),
        path_names: None,
        node_names: None,
    }
}

/// A group's hops, one postcard per node, in path order, and whether that
/// order holds. Where a node sent different postcards, every choice of one
/// per node is tried ([`MAX_CHOICES`] at most): the one whose order holds
/// with the most steps the TTL confirms is taken, if it alone does. Else
/// the first postcard of each node, unordered: a choice the join cannot
/// make is no path rather than a wrong one.
fn choose(cards: Vec<Card>, span_ns: u64) -> (Vec<Hop>, bool) {
    let by_node = by_node(&cards);
    let choices =
        by_node.iter().try_fold(1usize, |n, ours| n.checked_mul(ours.len()).filter(|n| *n <= MAX_CHOICES));
    let mut best: Option<(u32, Vec<Hop>)> = None;
    let mut tied = false;
    for choice in 0..choices.unwrap_or(0) {
        let (hops, order) = time_order(pick(&by_node, choice), span_ns);
        let Some(steps) = order else { continue };
        match &best {
            Some((best_steps, _)) if *best_steps > steps => {}
            Some((best_steps, _)) if *best_steps == steps => tied = true,
            _ => (best, tied) = (Some((steps, hops)), false),
        }
    }
    match best {
        Some((_, hops)) if !tied => (hops, true),
        _ => (time_order(pick(&by_node, 0), span_ns).0, false),
    }
}

/// A group's postcards by node, nodes in the order they first arrived.
fn by_node(cards: &[Card]) -> Vec<Vec<&Card>> {
    let mut by_node: Vec<Vec<&Card>> = Vec::new();
    for card in cards {
        match by_node
            .iter_mut()
            .find(|ours| ours.first().is_some_and(|first| first.hop.node_id == card.hop.node_id))
        {
            Some(ours) => ours.push(card),
            None => by_node.push(vec![card]),
        }
    }
    by_node
}

/// Choice number `choice` of one postcard per node (its digits, in the
/// mixed radix of each node's count, pick each node's; 0: the first ones).
fn pick(by_node: &[Vec<&Card>], mut choice: usize) -> Vec<(Hop, Option<u8>)> {
    let mut hops = Vec::with_capacity(by_node.len());
    for ours in by_node {
        let count = ours.len().max(1);
        if let Some(card) = ours.get(choice % count) {
            hops.push((card.hop, card.ttl));
        }
        choice /= count;
    }
    hops
}

/// The hops sorted by ingress timestamp and, where that order holds, how
/// many of its steps the TTL confirms (falls at). It holds when every hop
/// is timed (an ingress timestamp, not 0: a node without a clock stamps
/// 0), no two share an ingress time (nothing orders them), each one's
/// egress is no later than the next one's ingress, the TTL each saw never
/// grows along it, and the first ingress and the last egress lie within
/// `span_ns` (a packet crosses a domain in far less than the join window:
/// a stamp further off is a clock gone wrong).
pub fn time_order(mut hops: Vec<(Hop, Option<u8>)>, span_ns: u64) -> (Vec<Hop>, Option<u32>) {
    let timed = hops.iter().all(|(hop, _)| hop.ingress_timestamp.is_some_and(|at| at != 0));
    if timed {
        hops.sort_by_key(|(hop, _)| hop.ingress_timestamp);
    }
    let mut holds = timed;
    let mut falls = 0;
    for pair in hops.windows(2) {
        if let [(a, _), (b, _)] = pair {
            let later = a.ingress_timestamp < b.ingress_timestamp;
            let timely = a.egress_timestamp.or(a.ingress_timestamp) <= b.ingress_timestamp;
            holds &= later && timely;
        }
    }
    // Each TTL against the last hop's that has one: a hop without one
    // bridges no rise.
    let mut last_ttl: Option<u8> = None;
    for ttl in hops.iter().filter_map(|(_, ttl)| *ttl) {
        if let Some(last) = last_ttl {
            holds &= ttl <= last;
            falls += u32::from(ttl < last);
        }
        last_ttl = Some(ttl);
    }
    let first = hops.first().and_then(|(hop, _)| hop.ingress_timestamp);
    let last = hops.last().and_then(|(hop, _)| hop.egress_timestamp.or(hop.ingress_timestamp));
    if let (Some(first), Some(last)) = (first, last) {
        holds &= last.saturating_sub(first) <= span_ns;
    }
    (hops.into_iter().map(|(hop, _)| hop).collect(), holds.then_some(falls))
}

/// The TTL (IPv4) or Hop Limit (IPv6) of the packet a report carries,
/// from its IP header.
pub fn hop_limit(packet: &[u8]) -> Option<u8> {
    match packet.first().map(|byte| byte >> 4) {
        Some(4) => packet.get(8).copied(),
        Some(6) => packet.get(7).copied(),
        _ => None,
    }
}

/// A packet's identity from the bytes a report carries of it (its IP
/// header on): FNV-1a over them with the bytes hops change left out.
pub fn identity(packet: &[u8]) -> u64 {
    let variable: &[usize] = match packet.first().map(|byte| byte >> 4) {
        // ToS, TTL, header checksum.
        Some(4) => &[1, 8, 10, 11],
        // Traffic Class (in bytes 0 and 1), Hop Limit.
        Some(6) => &[0, 1, 7],
        _ => &[],
    };
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (at, byte) in packet.iter().enumerate() {
        let byte = if variable.contains(&at) { 0 } else { *byte };
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowKey {
        FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2)
    }

    fn card(node: u32, identity: u64, ingress: u64, at_ms: u64) -> Postcard {
        let metadata = Hop {
            hop_latency: Some(100),
            ingress_timestamp: Some(ingress),
            egress_timestamp: Some(ingress + 100),
            ..Hop::default()
        };
        Postcard { flow: flow(), identity, node, metadata, ttl: None, at_ms }
    }

    /// A postcard arriving at the time it states.
    fn arrive(join: &mut Join, card: Postcard) -> Vec<Joined> {
        let now_ms = card.at_ms;
        join.add(card, now_ms)
    }

    fn nodes(joined: &Joined) -> Vec<u32> {
        joined.hops.iter().filter_map(|hop| hop.node_id).collect()
    }

    /// Three nodes' postcards of one packet, arriving in any order: one
    /// path, ordered by time, once the window has passed.
    #[test]
    fn postcards_of_one_packet_make_its_path() {
        let mut join = Join::new(10, Vec::new(), 3);
        assert!(arrive(&mut join, card(3, 7, 3000, 0)).is_empty());
        assert!(arrive(&mut join, card(1, 7, 1000, 1)).is_empty());
        assert!(arrive(&mut join, card(2, 7, 2000, 2)).is_empty());
        let closed = arrive(&mut join, card(1, 8, 5000, 11));
        assert_eq!(closed.len(), 1);
        assert_eq!(nodes(&closed[0]), [1, 2, 3]);
        assert!(closed[0].ordered);
        let rest = join.close_all();
        assert_eq!(nodes(&rest[0]), [1]);
        assert_eq!(join.counts, Counts { postcards: 4, packets: 2, ..Counts::default() });
    }

    /// Clocks apart (a hop's egress after the next one's ingress), or a
    /// hop without a timestamp: the nodes count, the order is not told.
    #[test]
    fn skewed_or_untimed_groups_are_not_ordered() {
        let mut join = Join::new(10, Vec::new(), 3);
        arrive(&mut join, card(1, 7, 1000, 0));
        arrive(&mut join, card(2, 7, 1050, 0));
        let mut untimed = card(1, 9, 0, 0);
        untimed.metadata.ingress_timestamp = None;
        arrive(&mut join, untimed);
        let closed = join.close_all();
        assert!(closed.iter().all(|joined| !joined.ordered), "{closed:?}");
        assert_eq!(join.counts.unordered, 2);
    }

    /// A node whose clock is 3 µs ahead sorts last, consistent by its
    /// timestamps alone; the TTL each node saw (routers between them lower
    /// it) tells that order false. Equal TTLs (no router between) say
    /// nothing against the timestamps.
    #[test]
    fn a_ttl_that_grows_along_the_order_unorders_it() {
        let mut join = Join::new(10, Vec::new(), 3);
        let with_ttl = |card: Postcard, ttl: u8| Postcard { ttl: Some(ttl), ..card };
        arrive(&mut join, with_ttl(card(1, 7, 1000, 0), 64));
        arrive(&mut join, with_ttl(card(2, 7, 5000, 0), 63));
        arrive(&mut join, with_ttl(card(3, 7, 3000, 0), 62));
        arrive(&mut join, with_ttl(card(1, 8, 1000, 0), 64));
        arrive(&mut join, with_ttl(card(2, 8, 2000, 0), 64));
        arrive(&mut join, with_ttl(card(3, 8, 3000, 0), 62));
        // Packet 8 (latest stamp 3 µs) before packet 7 (5 µs).
        let closed = join.close_all();
        assert_eq!(nodes(&closed[1]), [1, 3, 2]);
        assert!(!closed[1].ordered, "TTL 62 before 63");
        assert_eq!(nodes(&closed[0]), [1, 2, 3]);
        assert!(closed[0].ordered);
        assert_eq!(join.counts.unordered, 1);
        assert_eq!(
            (hop_limit(&[0x45, 0, 0, 0, 0, 0, 0, 0, 61]), hop_limit(&[0x60, 0, 0, 0, 0, 0, 0, 60])),
            (Some(61), Some(60))
        );
    }

    /// Postcards arriving paced, 1 ms apart on the collector's clock,
    /// with one of node 1's stamped a year ahead, first and at packet 50:
    /// groups close as the clock passes (a window of 10 ms holds about 10
    /// open), the stamp ahead is a duplicate of node 1's genuine postcard
    /// (its order would span a year), every packet is 1 -> 2 -> 3.
    #[test]
    fn a_stamp_a_year_ahead_holds_no_group_open() {
        const YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;
        let mut join = Join::new(10, Vec::new(), 3);
        let mut closed = Vec::new();
        for packet in 0..200u64 {
            if packet == 0 || packet == 50 {
                let ahead = card(1, packet, packet * 1_000_000 + YEAR_NS, packet);
                closed.extend(arrive(&mut join, ahead));
            }
            for node in 1..=3 {
                closed.extend(arrive(
                    &mut join,
                    card(node, packet, packet * 1_000_000 + u64::from(node) * 1000, packet),
                ));
            }
            assert!(join.open_groups() <= 12, "{} open at packet {packet}", join.open_groups());
        }
        assert!(closed.len() >= 180, "{} closed while running", closed.len());
        closed.extend(join.close_all());
        assert!(closed.iter().all(|joined| joined.ordered && nodes(joined) == [1, 2, 3]));
        assert_eq!(join.counts, Counts { postcards: 602, packets: 200, duplicates: 2, ..Counts::default() });
    }

    /// Packet `packet`'s postcard of `node`, stamped 1 ms a packet, and
    /// sent at `now_ms`.
    fn timed(join: &mut Join, node: u32, packet: u64, now_ms: u64) -> Vec<Joined> {
        join.add(card(node, packet, packet * 1_000_000 + u64::from(node) * 1000, packet), now_ms)
    }

    /// Node 3's postcards arrive 50 packets (50 ms) after the others'
    /// (the window, 1 s, never passes): every group waits for node 3's
    /// watermark, closes whole while running, and groups close in packet
    /// order; about 50 + 10 stay open.
    #[test]
    fn groups_close_in_packet_order_once_every_node_passed_them() {
        let mut join = Join::new(1000, vec![1, 2, 3], 3);
        let mut closed = Vec::new();
        for packet in 0..300u64 {
            for node in [1, 2] {
                closed.extend(timed(&mut join, node, packet, 0));
            }
            if let Some(late) = packet.checked_sub(50) {
                closed.extend(timed(&mut join, 3, late, 0));
            }
            assert!(join.open_groups() <= 63, "{} open at packet {packet}", join.open_groups());
        }
        assert!(closed.len() >= 230, "{} closed while running", closed.len());
        closed.extend(join.close_all());
        let packets: Vec<u64> =
            closed.iter().map(|joined| joined.hops[0].ingress_timestamp.unwrap_or(0) / 1_000_000).collect();
        assert!(packets.windows(2).all(|pair| pair[0] < pair[1]), "{packets:?}");
        assert!(closed[..250].iter().all(|joined| joined.ordered && nodes(joined) == [1, 2, 3]));
        assert_eq!(join.counts, Counts { postcards: 850, packets: 300, ..Counts::default() });
    }

    /// Issue 56's packets: 160 of one flow, 0.1 ms apart by the nodes'
    /// clocks, across 11 -> 22 -> 33 up to packet 50 and 11 -> 44 -> 33
    /// after (one path change); node `node`'s postcards in datagrams of
    /// 4, in packet order.
    fn switched(node: u32) -> Vec<Vec<Postcard>> {
        let path = |packet: u64| if packet <= 50 { [11, 22, 33] } else { [11, 44, 33] };
        let cards: Vec<Postcard> = (0..160u64)
            .filter_map(|packet| {
                let hop = path(packet).iter().position(|&on| on == node)? as u64;
                Some(card(node, packet, 1_000_000_000 + packet * 100_000 + hop * 10_000, 0))
            })
            .collect();
        cards.chunks(4).map(<[Postcard]>::to_vec).collect()
    }

    /// The nodes' datagrams one of each in turn, in `order` (a node out
    /// of them skipped), each node's last first if `reversed`.
    fn in_turn(order: &[u32], reversed: bool) -> Vec<(u32, Vec<Postcard>)> {
        let nodes: Vec<Vec<Vec<Postcard>>> = order
            .iter()
            .map(|&node| {
                let mut datagrams = switched(node);
                if reversed {
                    datagrams.reverse();
                }
                datagrams
            })
            .collect();
        let rounds = nodes.iter().map(Vec::len).max().unwrap_or(0);
        (0..rounds)
            .flat_map(|k| {
                order.iter().zip(&nodes).filter_map(move |(n, ours)| Some((*n, ours.get(k)?.clone())))
            })
            .collect()
    }

    /// The datagrams 2 ms apart on the collector's clock, those of node
    /// `late` (if any) `late_ms` later than their turn.
    fn paced(datagrams: Vec<(u32, Vec<Postcard>)>, late: u32, late_ms: u64) -> Vec<(u64, Vec<Postcard>)> {
        let mut arrivals: Vec<(u64, Vec<Postcard>)> = (0..)
            .zip(datagrams)
            .map(|(k, (node, cards))| (2 * k + if node == late { late_ms } else { 0 }, cards))
            .collect();
        arrivals.sort_by_key(|(at, _)| *at);
        arrivals
    }

    /// What a join over `window_ms` hands on of `arrivals`, in that order:
    /// then another flow's untimed postcards every 10 ms for three windows
    /// (the collector's clock goes on), then the rest. Only the groups of
    /// `flow()`.
    fn released(arrivals: Vec<(u64, Vec<Postcard>)>, window_ms: u64) -> Vec<Joined> {
        let mut join = Join::new(window_ms, Vec::new(), 3);
        let mut closed = Vec::new();
        let mut last_ms = 0;
        for (at, datagram) in arrivals {
            for card in datagram {
                closed.extend(join.add(card, at));
            }
            last_ms = at;
        }
        for (n, at) in (last_ms..last_ms + 3 * window_ms).step_by(10).enumerate() {
            let mut other = card(99, n as u64, 0, 0);
            other.flow.src_port = 99;
            other.metadata.ingress_timestamp = None;
            closed.extend(join.add(other, at));
        }
        closed.extend(join.close_all());
        closed.retain(|joined| joined.flow == flow());
        closed
    }

    /// Every packet whole and ordered, handed on in packet order, one
    /// path change.
    fn judge_release(closed: &[Joined], what: &str) {
        let packets: Vec<u64> = closed
            .iter()
            .map(|joined| (joined.hops[0].ingress_timestamp.unwrap_or(0) - 1_000_000_000) / 100_000)
            .collect();
        assert_eq!(packets, (0..160).collect::<Vec<u64>>(), "{what}: handed on out of packet order");
        assert!(closed.iter().all(|joined| joined.ordered && joined.hops.len() == 3), "{what}: {closed:?}");
        let changes = closed.windows(2).filter(|pair| nodes(&pair[0]) != nodes(&pair[1])).count();
        assert_eq!(changes, 1, "{what}: path changes");
    }

    /// Issue 56: datagrams one from each node in turn (33, 22, 44, 11),
    /// 2 ms apart: node 44, on the new path, runs ahead in packet time,
    /// so packets 51-59 open groups (at 0-8 ms) before packet 50, the
    /// last across 22 (at 96 ms). With a window shorter than the whole
    /// (200 ms) or longer (10 s), the groups go on in packet order: one
    /// path change (main: three, 22 -> 44 -> 22 -> 44).
    #[test]
    fn datagrams_in_turn_are_handed_on_in_packet_order() {
        for window_ms in [200, 10_000] {
            let closed = released(paced(in_turn(&[33, 22, 44, 11], false), 0, 0), window_ms);
            judge_release(&closed, &format!("in turn, window {window_ms} ms"));
        }
    }

    /// Other arrivals within the window: each node's datagrams last
    /// first; all in a random order; one node's each 800 ms late (of a
    /// window of 1 s). Groups whose window passes first wait for the
    /// earlier packets' groups of their flow: packet order, one path
    /// change.
    #[test]
    fn any_arrival_within_the_window_is_handed_on_in_packet_order() {
        let reversed = released(paced(in_turn(&[33, 22, 44, 11], true), 0, 0), 400);
        judge_release(&reversed, "reversed per node");
        for seed in 1..=8u64 {
            let mut datagrams = in_turn(&[11, 22, 33, 44], false);
            let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for i in (1..datagrams.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                datagrams.swap(i, (state % (i as u64 + 1)) as usize);
            }
            judge_release(&released(paced(datagrams, 0, 0), 400), &format!("random, seed {seed}"));
        }
        for late in [11, 22, 33, 44] {
            let closed = released(paced(in_turn(&[33, 22, 44, 11], false), late, 800), 1000);
            judge_release(&closed, &format!("node {late} 800 ms late"));
        }
    }

    /// Packets 10 a ms by the collector's clock, node 3 silent after
    /// packet 200 (clock 20 ms): it holds the groups open one window (10
    /// ms) and no longer counts after, when the others' groups close by
    /// their marks again, about 12 open (by the window alone, 100).
    #[test]
    fn a_silent_node_holds_groups_for_a_window_at_most() {
        let mut join = Join::new(10, vec![1, 2, 3], 3);
        for packet in 0..2000u64 {
            for node in 1..=3 {
                if node < 3 || packet <= 200 {
                    timed(&mut join, node, packet, packet / 10);
                }
            }
            let bound = if (200..320).contains(&packet) { 120 } else { 13 };
            assert!(join.open_groups() <= bound, "{} open at packet {packet}", join.open_groups());
        }
    }

    /// Node 3 runs 30 packets behind; one of its postcards, on a packet
    /// of its own, is stamped a year ahead. Its watermark stays where its
    /// other postcards say: no group closes without node 3.
    #[test]
    fn one_stamp_a_year_ahead_moves_no_watermark() {
        const YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;
        let mut join = Join::new(1000, vec![1, 2, 3], 3);
        let mut closed = Vec::new();
        for packet in 0..100u64 {
            for node in [1, 2] {
                closed.extend(timed(&mut join, node, packet, 0));
            }
            if packet == 40 {
                closed.extend(join.add(card(3, 1000, YEAR_NS, 0), 0));
            }
            if let Some(late) = packet.checked_sub(30) {
                closed.extend(timed(&mut join, 3, late, 0));
            }
        }
        assert!(closed.len() >= 50, "{} closed while running", closed.len());
        assert!(closed.iter().all(|joined| nodes(joined) == [1, 2, 3]), "{closed:?}");
    }

    /// Two different postcards of node 2 (one spoofed, stamped before node
    /// 1): with a router between each two nodes, the genuine one's order
    /// has the TTL fall at each step and is taken; the spoof is a
    /// duplicate. Without routers (one TTL) nothing tells them apart: the
    /// group is unordered, never the spoof's path.
    #[test]
    fn the_order_the_ttl_agrees_with_wins_and_a_tie_is_unordered() {
        let with_ttl = |card: Postcard, ttl: u8| Postcard { ttl: Some(ttl), ..card };
        let mut join = Join::new(10, Vec::new(), 3);
        arrive(&mut join, with_ttl(card(2, 7, 500, 0), 64));
        arrive(&mut join, with_ttl(card(1, 7, 1000, 0), 64));
        arrive(&mut join, with_ttl(card(2, 7, 2000, 0), 63));
        arrive(&mut join, with_ttl(card(3, 7, 3000, 0), 62));
        let routed = join.close_all();
        assert_eq!((nodes(&routed[0]), routed[0].ordered), (vec![1, 2, 3], true));
        assert_eq!(routed[0].hops[1].ingress_timestamp, Some(2000));
        assert_eq!(join.counts.duplicates, 1);
        for (node, ingress) in [(2, 500), (1, 1000), (2, 2000), (3, 3000)] {
            arrive(&mut join, with_ttl(card(node, 8, ingress, 0), 64));
        }
        let flat = join.close_all();
        assert!(!flat[0].ordered, "{flat:?}");
        assert_eq!(join.counts.duplicates, 2);
        assert_eq!(join.pending(), 0);
    }

    /// Nodes that stamp 0 (no clock), or two nodes with one ingress time:
    /// nothing orders them.
    #[test]
    fn zero_or_equal_stamps_tell_no_order() {
        let untimed = |node: u32, identity: u64, at: u64| {
            let mut card = card(node, identity, at, 0);
            card.metadata.egress_timestamp = Some(at);
            card
        };
        let mut join = Join::new(10, Vec::new(), 3);
        for node in [3, 1, 2] {
            arrive(&mut join, untimed(node, 7, 0));
            arrive(&mut join, untimed(node, 8, 5000));
        }
        arrive(&mut join, untimed(1, 9, 1000));
        arrive(&mut join, untimed(2, 9, 2000));
        // In packet order: untimed 7, then 9 (2 µs), then 8 (5 µs).
        let closed = join.close_all();
        let ordered: Vec<bool> = closed.iter().map(|joined| joined.ordered).collect();
        assert_eq!(ordered, [false, true, false]);
    }

    /// Every postcard is counted once: unknown, dropped, a duplicate, a
    /// hop of a closed group, or pending.
    #[test]
    fn every_postcard_is_counted_once() {
        let mut join = Join::new(10, vec![1, 2, 3], 3);
        let mut hops = 0;
        for (node, identity, at) in [(1, 7, 0), (9, 7, 1), (1, 7, 2), (2, 7, 3), (2, 8, 4), (3, 9, 30)] {
            let closed = arrive(&mut join, card(node, identity, 1000 * u64::from(node), at));
            hops += closed.iter().map(|joined| joined.hops.len() as u64).sum::<u64>();
        }
        let counts = join.counts;
        assert_eq!((counts.unknown, counts.duplicates, hops, join.pending()), (1, 1, 3, 1));
        assert_eq!(
            counts.postcards,
            counts.unknown + counts.dropped + counts.duplicates + hops + join.pending()
        );
    }

    /// A node twice in one group is a duplicate, dropped and counted.
    #[test]
    fn a_node_twice_is_a_duplicate() {
        let mut join = Join::new(10, Vec::new(), 3);
        arrive(&mut join, card(1, 7, 1000, 0));
        arrive(&mut join, card(1, 7, 1000, 0));
        let closed = join.close_all();
        assert_eq!(nodes(&closed[0]), [1]);
        assert_eq!(join.counts.duplicates, 1);
    }

    /// Postcards from a node not in the domain's list are counted and
    /// never joined.
    #[test]
    fn unknown_nodes_join_nothing() {
        let mut join = Join::new(10, vec![1, 2], 3);
        arrive(&mut join, card(1, 7, 1000, 0));
        arrive(&mut join, card(9, 7, 1500, 0));
        arrive(&mut join, card(2, 7, 2000, 0));
        let closed = join.close_all();
        assert_eq!(nodes(&closed[0]), [1, 2]);
        assert_eq!((join.counts.unknown, join.counts.postcards), (1, 3));
    }

    /// Part of a flow's path, in its order, is incomplete (no path) until
    /// `confirm` (here 3) packets in a row give it; a path in another
    /// order, or one that is no part of the known one, is taken at once.
    #[test]
    fn part_of_a_path_is_incomplete_until_confirmed() {
        let mut join = Join::new(10, Vec::new(), 3);
        let known = Some((&[1, 2, 3][..], u32::MAX));
        assert_eq!(join.fit(&group(&[1, 2, 3]), known), Fit::Whole);
        assert_eq!(join.fit(&group(&[1, 2]), None), Fit::Whole, "no path known yet");
        assert_eq!(join.fit(&group(&[1, 3]), known), Fit::Part);
        assert_eq!(join.fit(&group(&[1, 2]), known), Fit::Part, "another part starts the count again");
        assert_eq!(join.fit(&group(&[1, 2, 3]), known), Fit::Whole, "the whole path again");
        assert_eq!(join.fit(&group(&[1, 3]), known), Fit::Part);
        assert_eq!(join.fit(&group(&[1, 3]), known), Fit::Part);
        assert_eq!(join.fit(&group(&[1, 3]), known), Fit::Confirmed, "three in a row: a node left the path");
        assert_eq!(join.fit(&group(&[3, 1]), known), Fit::Whole, "not in the path's order: a new path");
        assert_eq!(join.fit(&group(&[1, 4]), known), Fit::Whole, "a node the path lacks: a new path");
        assert_eq!(join.fit(&group(&[1, 2, 3, 4]), known), Fit::Whole, "a settled path grows: a node joined");
        assert_eq!(join.counts.incomplete, 4);
    }

    fn group(hops: &[u32]) -> Joined {
        Joined {
            flow: flow(),
            hops: hops.iter().map(|&node| Hop { node_id: Some(node), ..Default::default() }).collect(),
            ordered: true,
            at_ms: 0,
        }
    }

    /// A flow's first packet lost node 1's postcard: its path [2, 3],
    /// given by fewer than `confirm` packets, is the part the loss left,
    /// and the next packet's [1, 2, 3] replaces it (no path change). Once
    /// `confirm` packets gave it, a longer path is a node that joined.
    #[test]
    fn a_young_path_grows_without_a_change() {
        let mut join = Join::new(10, Vec::new(), 3);
        assert_eq!(join.fit(&group(&[1, 2, 3]), Some((&[2, 3], 1))), Fit::Grown);
        assert_eq!(join.fit(&group(&[1, 2, 3]), Some((&[2, 3], 2))), Fit::Grown);
        assert_eq!(join.fit(&group(&[1, 2, 3]), Some((&[2, 3], 3))), Fit::Whole);
        assert_eq!(join.fit(&group(&[3, 2, 1]), Some((&[2, 3], 1))), Fit::Whole, "not in its order");
        assert_eq!(join.counts.incomplete, 0);
    }

    /// The bytes hops change do not change the identity; any other does.
    #[test]
    fn identity_leaves_out_what_hops_change() {
        let mut packet = vec![0x45u8; 48];
        let before = identity(&packet);
        for at in [1, 8, 10, 11] {
            packet[at] ^= 0xff;
        }
        assert_eq!(identity(&packet), before);
        packet[4] ^= 1;
        assert_ne!(identity(&packet), before);
    }
}
