//! collect's join of postcards, judged beyond "no panic": postcards of any
//! node, flow, packet, TTL and stamps (none, 0, a year ahead, egress
//! before ingress), arriving in any order while the collector's clock
//! moves on, stands still or is set back. At every step the memory stays
//! within its caps (open groups, postcards a group) and every postcard is
//! counted exactly once (unknown, dropped, a duplicate, a hop of a closed
//! group, or pending). A closed group holds each node once, and only
//! postcards that were sent for its packet; an ordered one's stamps and
//! TTLs agree with its order and lie within the window; groups closed
//! together come in their packets' order (the latest stamp each held),
//! and each flow's groups come in packet order across calls too, unless
//! the later packet's group waited two windows, or the earlier one had
//! no timed postcard yet when the later one went; and how it fits its
//! flow's path (part, confirmed, grown, whole) is what its nodes say.
#![no_main]

use std::collections::HashMap;

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;
use int_tools::collect::books::join::{Fit, Join, Joined, Postcard, MAX_PATH};
use libfuzzer_sys::fuzz_target;

const YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;
/// The nodes the domain lists, when the input asks for a list.
const DOMAIN: [u32; 5] = [0, 1, 2, 3, 4];

/// What the harness keeps beside the join: the postcards sent for each
/// open packet, the hops joined, each flow's path as Books follows it.
struct Harness {
    join: Join,
    /// Whether the domain's nodes are listed.
    domain: bool,
    window_ms: u64,
    confirm: u32,
    max_open: usize,
    now_ms: u64,
    sent: HashMap<(FlowKey, u64), Vec<(HopMetadata, Option<u8>)>>,
    /// Each open packet's latest ingress stamp (ns) its group holds.
    stamps: HashMap<(FlowKey, u64), Option<u64>>,
    /// Each open packet's group: when it opened on the join's clock, and
    /// the step it got its first timed postcard.
    opened: HashMap<(FlowKey, u64), (u64, Option<u64>)>,
    /// Each flow's groups handed on: stamp, step, whether two windows
    /// had passed since it opened.
    released: HashMap<FlowKey, Vec<(u64, u64, bool)>>,
    /// The join's clock (the latest arrival time given), and the step.
    clock_ms: u64,
    steps: u64,
    hops_joined: u64,
    packets: u64,
    unordered: u64,
    paths: HashMap<FlowKey, (Vec<u32>, u32)>,
}

fuzz_target!(|data: &[u8]| {
    let Some((config, steps)) = data.split_first_chunk::<4>() else { return };
    let mut harness = Harness::new(config);
    for step in steps.chunks_exact(12) {
        harness.step(step);
        harness.check_counts();
    }
    let closed = harness.join.close_all();
    harness.judge(closed);
    harness.check_counts();
    assert_eq!(harness.join.pending(), 0);
    assert_eq!(harness.join.open_groups(), 0);
});

impl Harness {
    fn new(&[window, confirm, max_open, domain]: &[u8; 4]) -> Harness {
        let (window_ms, confirm, max_open) =
            (u64::from(window), 1 + u32::from(confirm % 8), 1 + usize::from(max_open % 8));
        let nodes = if domain & 1 == 1 { DOMAIN.to_vec() } else { Vec::new() };
        Harness {
            join: Join::new(window_ms, nodes, confirm).with_max_open(max_open),
            domain: domain & 1 == 1,
            window_ms,
            confirm,
            max_open,
            now_ms: 0,
            sent: HashMap::new(),
            stamps: HashMap::new(),
            opened: HashMap::new(),
            released: HashMap::new(),
            clock_ms: 0,
            steps: 0,
            hops_joined: 0,
            packets: 0,
            unordered: 0,
            paths: HashMap::new(),
        }
    }

    fn step(&mut self, step: &[u8]) {
        let &[kind, which, ttl, stamps, in_hi, in_lo, out_hi, out_lo, tick_hi, tick_lo, latency, at] = step
        else {
            return;
        };
        match kind {
            0xff => {
                let closed = self.join.close_all();
                return self.judge(closed);
            }
            // The wall clock set back: the join's clock must not follow.
            0xfe => self.now_ms = self.now_ms.saturating_sub(u64::from(tick_lo)),
            _ => self.now_ms += u64::from(u16::from_be_bytes([tick_hi, tick_lo]) % 300),
        }
        let flow = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, u16::from(which & 3), 5000);
        let identity = u64::from((which >> 2) & 7);
        let card = Postcard {
            flow,
            identity,
            node: u32::from(kind % 8),
            metadata: HopMetadata {
                // The packet, for the harness to find its postcards (the
                // join reads no port).
                l1_ingress_port: Some(identity as u16),
                ..metadata(
                    stamps,
                    u16::from_be_bytes([in_hi, in_lo]),
                    u16::from_be_bytes([out_hi, out_lo]),
                    latency,
                )
            },
            ttl: (ttl < 0xf0).then_some(60 + ttl % 6),
            at_ms: u64::from(at),
        };
        let hop = HopMetadata { node_id: Some(card.node), ..card.metadata };
        let domain = !self.domain || DOMAIN.contains(&card.node);
        if domain {
            self.sent.entry((flow, identity)).or_default().push((hop, card.ttl));
        }
        let dropped = self.join.counts.dropped;
        self.steps += 1;
        self.clock_ms = self.clock_ms.max(self.now_ms);
        let closed = self.join.add(card, self.now_ms);
        if domain && self.join.counts.dropped == dropped {
            let stamp = hop.ingress_timestamp.filter(|at| *at != 0);
            let held = self.stamps.entry((flow, identity)).or_default();
            *held = (*held).max(stamp);
            let opened = self.opened.entry((flow, identity)).or_insert((self.clock_ms, None));
            if stamp.is_some() {
                opened.1.get_or_insert(self.steps);
            }
        }
        self.judge(closed);
    }

    fn check_counts(&self) {
        let counts = self.join.counts;
        let pending = self.join.pending();
        assert!(self.join.open_groups() <= self.max_open);
        assert!(pending <= (self.max_open * MAX_PATH) as u64);
        assert_eq!(
            counts.postcards,
            counts.unknown + counts.dropped + counts.duplicates + self.hops_joined + pending,
            "{counts:?}, {} joined, {pending} pending",
            self.hops_joined
        );
        assert_eq!((counts.packets, counts.unordered), (self.packets, self.unordered));
    }

    fn judge(&mut self, closed: Vec<Joined>) {
        let mut last_stamp = None;
        for joined in closed {
            // The packet's postcards all went into this group (a later one
            // of the same packet opens a new group).
            let identity =
                joined.hops.first().and_then(|hop| hop.l1_ingress_port).map_or(u64::MAX, u64::from);
            let sent = self.sent.remove(&(joined.flow, identity)).unwrap_or_default();
            let stamp = self.stamps.remove(&(joined.flow, identity)).flatten();
            assert!(stamp >= last_stamp, "closed out of packet order: {stamp:?} after {last_stamp:?}");
            last_stamp = stamp;
            let opened = self.opened.remove(&(joined.flow, identity));
            if let (Some(stamp), Some((opened_ms, timed_step))) = (stamp, opened) {
                self.judge_flow_order(joined.flow, stamp, opened_ms, timed_step.unwrap_or(self.steps));
            }
            self.hops_joined += joined.hops.len() as u64;
            self.packets += 1;
            self.unordered += u64::from(!joined.ordered);
            judge_group(&joined, &sent, self.window_ms);
            if joined.ordered {
                self.judge_fit(&joined);
            }
        }
    }

    /// A group of `flow` handed on with its packet time `stamp`: no group
    /// of its flow of a later packet went before it, unless that one
    /// waited two windows, or this one had no timed postcard yet.
    fn judge_flow_order(&mut self, flow: FlowKey, stamp: u64, opened_ms: u64, timed_step: u64) {
        let released = self.released.entry(flow).or_default();
        for &(later, step, waited) in released.iter().filter(|(later, _, _)| *later > stamp) {
            assert!(
                waited || step < timed_step,
                "packet at {stamp} ns handed on after one at {later} ns (step {step}, timed at {timed_step})"
            );
        }
        let waited = self.clock_ms > opened_ms.saturating_add(self.window_ms.saturating_mul(2));
        released.push((stamp, self.steps, waited));
    }

    /// How the join fits a group to its flow's path, against what the
    /// nodes say; the path then followed as Books follows it.
    fn judge_fit(&mut self, joined: &Joined) {
        let nodes: Vec<u32> = joined.hops.iter().filter_map(|hop| hop.node_id).collect();
        let known = self.paths.get(&joined.flow).cloned();
        let fit = self.join.fit(joined, known.as_ref().map(|(path, given)| (path.as_slice(), *given)));
        let part = known.as_ref().is_some_and(|(path, _)| nodes.len() < path.len() && in_order(&nodes, path));
        let grows = known.as_ref().is_some_and(|(path, given)| {
            *given < self.confirm && nodes.len() > path.len() && in_order(path, &nodes)
        });
        match fit {
            Fit::Part | Fit::Confirmed => assert!(part, "{fit:?}: {nodes:?} of {known:?}"),
            Fit::Grown => assert!(grows, "grown: {nodes:?} of {known:?}"),
            Fit::Whole => assert!(!part && !grows, "whole: {nodes:?} of {known:?}"),
        }
        let followed = match (fit, known) {
            (Fit::Part, known) => known,
            (Fit::Confirmed, _) => Some((nodes, u32::MAX)),
            (Fit::Whole, Some((path, given))) if path == nodes => Some((path, given.saturating_add(1))),
            (_, _) => Some((nodes, 1)),
        };
        if let Some(followed) = followed {
            self.paths.insert(joined.flow, followed);
        }
    }
}

/// A hop's metadata from the input: ingress none, 0 or a time (scaled from
/// ns to ms steps, maybe a year ahead), egress none or after (or before)
/// it; the latency byte makes two postcards of one node differ.
fn metadata(stamps: u8, ingress: u16, egress: u16, latency: u8) -> HopMetadata {
    let scale = 10u64.pow(u32::from((stamps >> 4) & 7));
    let mut at = 1_700_000_000_000_000_000 + u64::from(ingress) * scale;
    if stamps & 8 != 0 {
        at += YEAR_NS;
    }
    let ingress_timestamp = match stamps & 3 {
        0 => None,
        1 => Some(0),
        _ => Some(at),
    };
    let egress_timestamp = match (stamps & 4 != 0, stamps & 0x80 != 0) {
        (false, _) => None,
        (true, false) => Some(at + u64::from(egress)),
        (true, true) => Some(at - u64::from(egress)),
    };
    HopMetadata {
        hop_latency: Some(u32::from(latency)),
        ingress_timestamp,
        egress_timestamp,
        ..HopMetadata::default()
    }
}

/// A closed group: each node once, each hop a postcard sent for it; if
/// ordered, stamps that rise along it, within the window, and TTLs (some
/// postcard's each) that never grow.
fn judge_group(joined: &Joined, sent: &[(HopMetadata, Option<u8>)], window_ms: u64) {
    assert!(!joined.hops.is_empty() && joined.hops.len() <= MAX_PATH);
    let mut nodes: Vec<Option<u32>> = joined.hops.iter().map(|hop| hop.node_id).collect();
    assert!(nodes.iter().all(Option::is_some));
    nodes.sort_unstable();
    nodes.dedup();
    assert_eq!(nodes.len(), joined.hops.len(), "a node twice: {joined:?}");
    for hop in &joined.hops {
        assert!(sent.iter().any(|(card, _)| card == hop), "a hop no postcard sent: {hop:?}");
    }
    if !joined.ordered {
        return;
    }
    let mut bound: Option<u8> = None;
    for (i, hop) in joined.hops.iter().enumerate() {
        let ingress = hop.ingress_timestamp.filter(|at| *at != 0).expect("an ordered hop is timed");
        if let Some(next) = joined.hops.get(i + 1) {
            assert!(next.ingress_timestamp.is_some_and(|at| at > ingress), "{joined:?}");
            assert!(
                hop.egress_timestamp.unwrap_or(ingress) <= next.ingress_timestamp.unwrap_or(0),
                "{joined:?}"
            );
        }
        // The TTL of one of this hop's postcards: none bridges, else the
        // highest the order allows.
        let ttls: Vec<Option<u8>> =
            sent.iter().filter(|(card, _)| card == hop).map(|(_, ttl)| *ttl).collect();
        if ttls.contains(&None) {
            continue;
        }
        let fits = ttls.iter().flatten().filter(|ttl| bound.is_none_or(|bound| **ttl <= bound)).max();
        bound = Some(*fits.unwrap_or_else(|| panic!("the TTL grows along {joined:?}: {sent:?}")));
    }
    let first = joined.hops.first().and_then(|hop| hop.ingress_timestamp).unwrap_or(0);
    let last = joined.hops.last().and_then(|hop| hop.egress_timestamp.or(hop.ingress_timestamp)).unwrap_or(0);
    assert!(last.saturating_sub(first) <= window_ms.saturating_mul(1_000_000), "{joined:?}");
}

/// Whether `part`'s nodes all appear in `path`, in the same order.
fn in_order(part: &[u32], path: &[u32]) -> bool {
    let mut rest = path.iter();
    part.iter().all(|node| rest.any(|other| other == node))
}
