//! Postcards joined into paths. In INT-MX and INT-XD every node of a path
//! reports its own metadata on a packet; the collector puts the reports of
//! one packet back together: the same flow and the same packet identity
//! (a hash of the packet's bytes that no hop changes: the IP header without
//! DSCP/ECN, TTL or Hop Limit and the IPv4 checksum, then everything
//! after it that the report carries), within a join window. A group closes
//! when a postcard more than the window younger than its first arrives, or
//! when collect stops; its hops, ordered by their timestamps, go to the
//! same per-hop view as an INT-MD stack.
//!
//! What cannot be a path is not reported as one: a group whose hops lack
//! timestamps, or whose timestamps contradict each other (a hop's egress
//! after the next one's ingress: clocks apart, or two packets with the
//! same identity), or contradict the packet's TTL (or Hop Limit) as each
//! node saw it (routers between the nodes lower it, so it never grows
//! along the path: a node whose clock is off by more than the time between
//! two hops is caught here), gives its nodes' figures but no links and no
//! path (`unordered`); a second postcard of one node in a group is dropped
//! (`duplicates`). Memory is bounded: at most [`MAX_OPEN`] open groups, and
//! [`hops::MAX_PATH`] postcards each (`dropped` beyond).
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
//! datagram cannot make a path change.

use std::collections::{HashMap, VecDeque};

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;

use super::hops::MAX_PATH;

/// Open groups at most.
pub const MAX_OPEN: usize = 100_000;

/// One node's report on one packet.
#[derive(Debug, Clone)]
pub struct Postcard {
    pub flow: FlowKey,
    pub identity: u64,
    pub node: u32,
    pub metadata: HopMetadata,
    /// The packet's TTL or Hop Limit as this node saw it.
    pub ttl: Option<u8>,
    /// Its time in the collector's time base, ms.
    pub at_ms: u64,
}

/// A closed group: its hops in path order, and whether that order can be
/// told (else only its nodes' figures count).
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    pub flow: FlowKey,
    pub hops: Vec<HopMetadata>,
    pub ordered: bool,
    pub at_ms: u64,
}

/// What the join did, for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub postcards: u64,
    /// Groups closed: packets whose postcards were put together.
    pub packets: u64,
    /// Of those, groups whose hops could not be ordered.
    pub unordered: u64,
    /// Postcards of a node already in their group.
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

struct Group {
    first_ms: u64,
    /// Each node's metadata, and the TTL it saw.
    hops: Vec<(HopMetadata, Option<u8>)>,
}

pub struct Join {
    window_ms: u64,
    /// The domain's nodes; empty: any node.
    nodes: Vec<u32>,
    /// Packets in a row that make a flow's shorter path its path.
    confirm: u32,
    /// Flows whose last packets gave a shorter path than theirs: that
    /// path, and how many packets in a row gave it.
    shorter: HashMap<FlowKey, (Vec<u32>, u32)>,
    open: HashMap<(FlowKey, u64), Group>,
    /// Open groups by their first postcard's time, oldest first.
    order: VecDeque<(u64, (FlowKey, u64))>,
    pub counts: Counts,
}

impl Join {
    /// A join over `window_ms`, of postcards from `nodes` (empty: any),
    /// taking a shorter path after `confirm` packets in a row.
    pub fn new(window_ms: u64, nodes: Vec<u32>, confirm: u32) -> Join {
        Join {
            window_ms,
            nodes,
            confirm,
            shorter: HashMap::new(),
            open: HashMap::new(),
            order: VecDeque::new(),
            counts: Counts::default(),
        }
    }

    /// Adds a postcard; returns the groups its time closes.
    pub fn add(&mut self, card: Postcard) -> Vec<Joined> {
        self.counts.postcards += 1;
        if !self.nodes.is_empty() && !self.nodes.contains(&card.node) {
            self.counts.unknown += 1;
            return self.close_older_than(card.at_ms);
        }
        let key = (card.flow, card.identity);
        if !self.open.contains_key(&key) && self.open.len() >= MAX_OPEN {
            self.counts.dropped += 1;
            return self.close_older_than(card.at_ms);
        }
        let group = self.open.entry(key).or_insert_with(|| Group { first_ms: card.at_ms, hops: Vec::new() });
        if group.hops.is_empty() {
            self.order.push_back((card.at_ms, key));
        }
        if group.hops.iter().any(|(hop, _)| hop.node_id == Some(card.node)) {
            self.counts.duplicates += 1;
        } else if group.hops.len() >= MAX_PATH {
            self.counts.dropped += 1;
        } else {
            group.hops.push((HopMetadata { node_id: Some(card.node), ..card.metadata }, card.ttl));
        }
        self.close_older_than(card.at_ms)
    }

    /// Every open group, closed (collect is stopping).
    pub fn close_all(&mut self) -> Vec<Joined> {
        self.close_older_than(u64::MAX)
    }

    fn close_older_than(&mut self, now_ms: u64) -> Vec<Joined> {
        let mut closed = Vec::new();
        while let Some(&(first_ms, key)) = self.order.front() {
            if now_ms != u64::MAX && first_ms.saturating_add(self.window_ms) >= now_ms {
                break;
            }
            self.order.pop_front();
            if let Some(group) = self.open.remove(&key) {
                closed.push(self.joined(key.0, group));
            }
        }
        closed
    }

    fn joined(&mut self, flow: FlowKey, group: Group) -> Joined {
        let (hops, ordered) = path_order(group.hops);
        self.counts.packets += 1;
        self.counts.unordered += u64::from(!ordered);
        Joined { flow, hops, ordered, at_ms: group.first_ms }
    }
}

impl Join {
    /// Whether an ordered group tells its flow's whole path, given the
    /// path the flow had (`known`): not when it holds fewer of its nodes,
    /// in their order, unless `confirm` packets in a row said so.
    pub fn complete(&mut self, joined: &Joined, known: Option<&[u32]>) -> bool {
        let nodes: Vec<u32> = joined.hops.iter().filter_map(|hop| hop.node_id).collect();
        let part = known.is_some_and(|path| nodes.len() < path.len() && in_order(&nodes, path));
        if !part {
            self.shorter.remove(&joined.flow);
            return true;
        }
        if !self.shorter.contains_key(&joined.flow) && self.shorter.len() >= MAX_OPEN {
            self.counts.incomplete += 1;
            return false;
        }
        let entry = self.shorter.entry(joined.flow).or_insert_with(|| (nodes.clone(), 0));
        if entry.0 != nodes {
            *entry = (nodes, 0);
        }
        entry.1 += 1;
        if entry.1 >= self.confirm {
            self.shorter.remove(&joined.flow);
            return true;
        }
        self.counts.incomplete += 1;
        false
    }
}

/// Whether `part`'s nodes all appear in `path`, in the same order.
fn in_order(part: &[u32], path: &[u32]) -> bool {
    let mut rest = path.iter();
    part.iter().all(|node| rest.any(|other| other == node))
}

/// A joined packet's record: its flow, its nodes' metadata in path order,
/// whether it holds its flow's whole path (`complete`; null where the
/// order cannot be told), and its path where it does (null otherwise).
pub fn record(joined: &Joined, complete: Option<bool>) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let nodes: Vec<Option<u32>> = joined.hops.iter().map(|hop| hop.node_id).collect();
    let hops: Vec<_> = joined
        .hops
        .iter()
        .map(|hop| crate::records::hop21(hop, int_core::int21::Instructions::all()))
        .collect();
    let mut record = serde_json::Map::new();
    record.extend([
        ("type".to_string(), json!("joined")),
        ("flow".to_string(), crate::schema::flow(&joined.flow)),
        ("nodes".to_string(), json!(nodes)),
        ("ordered".to_string(), json!(joined.ordered)),
        ("complete".to_string(), json!(complete)),
        ("path".to_string(), json!((complete == Some(true)).then_some(nodes))),
        ("hop_metadata".to_string(), json!(hops)),
    ]);
    record
}

/// The hops sorted by ingress timestamp, and whether that order holds:
/// every hop timed, each one's egress no later than the next one's
/// ingress, and the TTL each saw never higher than the one before's.
pub fn path_order(mut hops: Vec<(HopMetadata, Option<u8>)>) -> (Vec<HopMetadata>, bool) {
    let timed = hops.iter().all(|(hop, _)| hop.ingress_timestamp.is_some());
    if timed {
        hops.sort_by_key(|(hop, _)| hop.ingress_timestamp);
    }
    let consistent = timed
        && hops.windows(2).all(|pair| match pair {
            [(a, a_ttl), (b, b_ttl)] => {
                let timely = a.egress_timestamp.or(a.ingress_timestamp) <= b.ingress_timestamp;
                let ttl_falls = match (a_ttl, b_ttl) {
                    (Some(a_ttl), Some(b_ttl)) => b_ttl <= a_ttl,
                    _ => true,
                };
                timely && ttl_falls
            }
            _ => true,
        });
    (hops.into_iter().map(|(hop, _)| hop).collect(), consistent)
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
        let metadata = HopMetadata {
            hop_latency: Some(100),
            ingress_timestamp: Some(ingress),
            egress_timestamp: Some(ingress + 100),
            ..HopMetadata::default()
        };
        Postcard { flow: flow(), identity, node, metadata, ttl: None, at_ms }
    }

    fn nodes(joined: &Joined) -> Vec<u32> {
        joined.hops.iter().filter_map(|hop| hop.node_id).collect()
    }

    /// Three nodes' postcards of one packet, arriving in any order: one
    /// path, ordered by time, once the window has passed.
    #[test]
    fn postcards_of_one_packet_make_its_path() {
        let mut join = Join::new(10, Vec::new(), 3);
        assert!(join.add(card(3, 7, 3000, 0)).is_empty());
        assert!(join.add(card(1, 7, 1000, 1)).is_empty());
        assert!(join.add(card(2, 7, 2000, 2)).is_empty());
        let closed = join.add(card(1, 8, 5000, 11));
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
        join.add(card(1, 7, 1000, 0));
        join.add(card(2, 7, 1050, 0));
        let mut untimed = card(1, 9, 0, 0);
        untimed.metadata.ingress_timestamp = None;
        join.add(untimed);
        let closed = join.close_all();
        assert!(closed.iter().all(|joined| !joined.ordered), "{closed:?}");
        assert_eq!(join.counts.unordered, 2);
    }

    /// A node whose clock is a second ahead sorts last, consistent by its
    /// timestamps alone; the TTL each node saw (routers between them lower
    /// it) tells that order false. Equal TTLs (no router between) say
    /// nothing against the timestamps.
    #[test]
    fn a_ttl_that_grows_along_the_order_unorders_it() {
        let mut join = Join::new(10, Vec::new(), 3);
        let with_ttl = |card: Postcard, ttl: u8| Postcard { ttl: Some(ttl), ..card };
        join.add(with_ttl(card(1, 7, 1000, 0), 64));
        join.add(with_ttl(card(2, 7, 1_000_002_000, 0), 63));
        join.add(with_ttl(card(3, 7, 3000, 0), 62));
        join.add(with_ttl(card(1, 8, 1000, 0), 64));
        join.add(with_ttl(card(2, 8, 2000, 0), 64));
        join.add(with_ttl(card(3, 8, 3000, 0), 62));
        let closed = join.close_all();
        assert_eq!(nodes(&closed[0]), [1, 3, 2]);
        assert!(!closed[0].ordered, "TTL 62 before 63");
        assert_eq!(nodes(&closed[1]), [1, 2, 3]);
        assert!(closed[1].ordered);
        assert_eq!(join.counts.unordered, 1);
        assert_eq!(
            (hop_limit(&[0x45, 0, 0, 0, 0, 0, 0, 0, 61]), hop_limit(&[0x60, 0, 0, 0, 0, 0, 0, 60])),
            (Some(61), Some(60))
        );
    }

    /// A node twice in one group is a duplicate, dropped and counted.
    #[test]
    fn a_node_twice_is_a_duplicate() {
        let mut join = Join::new(10, Vec::new(), 3);
        join.add(card(1, 7, 1000, 0));
        join.add(card(1, 7, 1000, 0));
        let closed = join.close_all();
        assert_eq!(nodes(&closed[0]), [1]);
        assert_eq!(join.counts.duplicates, 1);
    }

    /// Postcards from a node not in the domain's list are counted and
    /// never joined.
    #[test]
    fn unknown_nodes_join_nothing() {
        let mut join = Join::new(10, vec![1, 2], 3);
        join.add(card(1, 7, 1000, 0));
        join.add(card(9, 7, 1500, 0));
        join.add(card(2, 7, 2000, 0));
        let closed = join.close_all();
        assert_eq!(nodes(&closed[0]), [1, 2]);
        assert_eq!((join.counts.unknown, join.counts.postcards), (1, 3));
    }

    /// Part of a flow's path, in its order, is incomplete (no path) until
    /// `confirm` (here 3) packets in a row give it; a path in another order, or one
    /// that is no part of the known one, is taken at once.
    #[test]
    fn part_of_a_path_is_incomplete_until_confirmed() {
        let mut join = Join::new(10, Vec::new(), 3);
        let known: &[u32] = &[1, 2, 3];
        let group = |hops: &[u32]| Joined {
            flow: flow(),
            hops: hops
                .iter()
                .map(|&node| HopMetadata { node_id: Some(node), ..Default::default() })
                .collect(),
            ordered: true,
            at_ms: 0,
        };
        assert!(join.complete(&group(&[1, 2, 3]), Some(known)));
        assert!(join.complete(&group(&[1, 2]), None), "no path known yet");
        assert!(!join.complete(&group(&[1, 3]), Some(known)));
        assert!(!join.complete(&group(&[1, 2]), Some(known)), "another part starts the count again");
        assert!(join.complete(&group(&[1, 2, 3]), Some(known)), "the whole path again");
        assert!(!join.complete(&group(&[1, 3]), Some(known)));
        assert!(!join.complete(&group(&[1, 3]), Some(known)));
        assert!(join.complete(&group(&[1, 3]), Some(known)), "three in a row: a node left the path");
        assert!(join.complete(&group(&[3, 1]), Some(known)), "not in the path's order: a new path");
        assert!(join.complete(&group(&[1, 4]), Some(known)), "a node the path lacks: a new path");
        assert_eq!(join.counts.incomplete, 4);
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
