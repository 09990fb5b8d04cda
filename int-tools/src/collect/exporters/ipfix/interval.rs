//! One export interval's figures, kept by each reader beside its books
//! (so that nothing crosses a thread per report): per flow (times,
//! packets seen and lost, one-way delay, path and its changes), per hop (a
//! node with its interfaces: reports, hop latency, queue occupancy), per
//! link (latency) and per node and drop reason (drop reports). At the
//! interval's end the exporter takes every reader's, merges them
//! ([`Interval::merge`]) and writes a data record of each (templates.rs
//! has their fields). Once a flow, hop, link or reason is in the interval
//! a report adds to plain fields: no allocation.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;

use foldhash::fast::RandomState;
use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;

use super::message::emit_basic_list_u32;
use super::templates::{Templates, DROP, FLOW_V4, FLOW_V6, HOP, LINK};
use crate::collect::books::hops::{self, Seen};
use crate::collect::books::ledger::{Measure, Observed};

/// A value a node did not report, in a 32-bit field: all ones, as INT
/// writes it.
pub const NOT_REPORTED: u32 = u32::MAX;

/// Count, least, most and sum of values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub sum: i128,
}

impl Stat {
    pub fn record(&mut self, value: i64) {
        if self.count == 0 {
            (self.min, self.max) = (value, value);
        }
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += i128::from(value);
    }

    /// Another reader's values of the same interval added.
    pub fn merge(&mut self, other: &Stat) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// The mean, rounded toward zero; none without values.
    pub fn mean(&self) -> Option<i64> {
        (self.count > 0).then(|| (self.sum / i128::from(self.count)) as i64)
    }
}

/// A flow in this interval.
#[derive(Debug, Clone, Default)]
pub struct Flow {
    /// ns since the epoch: when collect received the interval's first
    /// and last report of the flow (one clock for every kind of report:
    /// reports' own stamps are the nodes' clocks, some relative).
    pub first_ns: u64,
    pub last_ns: u64,
    /// One-way delay of each packet the sink saw, ns.
    pub delay: Stat,
    pub lost: u64,
    pub source_node: Option<u32>,
    pub sink_node: Option<u32>,
    /// The newest path its reports told, source first, and when it was
    /// told (to merge readers' intervals: the newer wins).
    pub path: Vec<u32>,
    pub path_ns: u64,
    pub path_changes: u32,
}

impl Flow {
    /// Another reader's figures of the same flow and interval added.
    fn merge(&mut self, other: Flow) {
        let newer = other.last_ns >= self.last_ns;
        stretch(&mut self.first_ns, &mut self.last_ns, other.first_ns);
        stretch(&mut self.first_ns, &mut self.last_ns, other.last_ns);
        self.delay.merge(&other.delay);
        self.lost += other.lost;
        if newer {
            self.source_node = other.source_node.or(self.source_node);
            self.sink_node = other.sink_node.or(self.sink_node);
        } else {
            self.source_node = self.source_node.or(other.source_node);
            self.sink_node = self.sink_node.or(other.sink_node);
        }
        if !other.path.is_empty() && (self.path.is_empty() || other.path_ns >= self.path_ns) {
            (self.path, self.path_ns) = (other.path, other.path_ns);
        }
        self.path_changes = self.path_changes.saturating_add(other.path_changes);
    }
}

/// A node with its interfaces, in this interval.
#[derive(Debug, Clone, Default)]
pub struct Hop {
    pub first_ns: u64,
    pub last_ns: u64,
    pub reports: u64,
    pub latency: Stat,
    pub queue: Stat,
}

impl Hop {
    fn merge(&mut self, other: &Hop) {
        stretch(&mut self.first_ns, &mut self.last_ns, other.first_ns);
        stretch(&mut self.first_ns, &mut self.last_ns, other.last_ns);
        self.reports += other.reports;
        self.latency.merge(&other.latency);
        self.queue.merge(&other.queue);
    }
}

/// A node, its ingress and its egress interface (all ones: not reported).
pub type HopKey = (u32, u32, u32);

/// A node's drop reports of one reason in this interval: when the first
/// and last came, how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    pub first_ns: u64,
    pub last_ns: u64,
    pub reports: u64,
}

/// What one interval holds; at most `limit` flows, hops, links and drop
/// reasons each, the rest counted in `unrecorded`.
#[derive(Debug, Default)]
pub struct Interval {
    /// foldhash, as the ledger's flows: SipHash was a tenth of the
    /// receivers' time with the export on (perf, Host-INT reports).
    pub flows: HashMap<FlowKey, Flow, RandomState>,
    /// Hashed, as the flows: written in key order ([`sorted`]).
    pub hops: HashMap<HopKey, Hop, RandomState>,
    pub links: HashMap<(u32, u32), (u64, u64, Stat), RandomState>,
    /// By reporting node and reason.
    pub drops: HashMap<(u32, u8), Drops, RandomState>,
    pub unrecorded: u64,
    limit: usize,
    /// A report's path, told before it replaces a flow's (kept: its room
    /// is reused report after report).
    scratch: Vec<u32>,
}

/// The entry of `key`, made while the map holds fewer than `limit`; none,
/// counted in `unrecorded`, past it.
fn entry_within<'a, K: Hash + Eq, V: Default>(
    map: &'a mut HashMap<K, V, RandomState>,
    key: K,
    limit: usize,
    unrecorded: &mut u64,
) -> Option<&'a mut V> {
    // The length first: the key is looked up twice only at the limit.
    if map.len() >= limit && !map.contains_key(&key) {
        *unrecorded += 1;
        return None;
    }
    Some(map.entry(key).or_default())
}

/// Whether `seen` tells `path` (a path [`hops::path_into`] told before:
/// node ids all given, none twice), source first, then the sink.
fn same_path(seen: &Seen<'_>, path: &[u32]) -> bool {
    let nodes = seen.hops.iter().map(|hop| hop.node_id).chain(seen.sink.map(Some));
    !path.is_empty() && nodes.eq(path.iter().map(|node| Some(*node)))
}

/// A map's entries in key order: the order records are written in.
pub fn sorted<K: Ord + Copy, V>(map: &HashMap<K, V, RandomState>) -> Vec<(K, &V)> {
    let mut entries: Vec<(K, &V)> = map.iter().map(|(key, value)| (*key, value)).collect();
    entries.sort_unstable_by_key(|(key, _)| *key);
    entries
}

fn stretch(first: &mut u64, last: &mut u64, ns: u64) {
    if *first == 0 || ns < *first {
        *first = ns;
    }
    *last = (*last).max(ns);
}

impl Interval {
    pub fn new(limit: usize) -> Interval {
        Interval { limit: limit.max(1), ..Interval::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.hops.is_empty() && self.links.is_empty() && self.drops.is_empty()
    }

    /// Another reader's interval added: the same limits, what passes them
    /// counted `unrecorded` (a flow's reports reach one socket, so its
    /// figures are mostly in one reader's).
    pub fn merge(&mut self, other: Interval) {
        self.unrecorded += other.unrecorded;
        for (key, flow) in other.flows {
            if let Some(ours) = self.flows.get_mut(&key) {
                ours.merge(flow);
            } else if self.flows.len() < self.limit {
                self.flows.insert(key, flow);
            } else {
                self.unrecorded += 1;
            }
        }
        for (key, hop) in &other.hops {
            if let Some(ours) = entry_within(&mut self.hops, *key, self.limit, &mut self.unrecorded) {
                ours.merge(hop);
            }
        }
        for (ends, (first, last, stat)) in &other.links {
            if let Some(ours) = entry_within(&mut self.links, *ends, self.limit, &mut self.unrecorded) {
                stretch(&mut ours.0, &mut ours.1, *first);
                stretch(&mut ours.0, &mut ours.1, *last);
                ours.2.merge(stat);
            }
        }
        for (key, drops) in &other.drops {
            if let Some(ours) = entry_within(&mut self.drops, *key, self.limit, &mut self.unrecorded) {
                stretch(&mut ours.first_ns, &mut ours.last_ns, drops.first_ns);
                stretch(&mut ours.first_ns, &mut ours.last_ns, drops.last_ns);
                ours.reports += drops.reports;
            }
        }
    }

    fn flow(&mut self, key: FlowKey, ns: u64) -> Option<&mut Flow> {
        let flow = entry_within(&mut self.flows, key, self.limit, &mut self.unrecorded)?;
        stretch(&mut flow.first_ns, &mut flow.last_ns, ns);
        Some(flow)
    }

    /// A latency or loss observation, arrived at `arrival_ns`.
    pub fn observed(&mut self, observed: &Observed, arrival_ns: u64) {
        let Some(flow) = self.flow(observed.flow, arrival_ns) else { return };
        flow.source_node = observed.source_node.or(flow.source_node);
        flow.sink_node = observed.sink_node.or(flow.sink_node);
        match observed.measure {
            Measure::Latency { ns, .. } => flow.delay.record(ns),
            Measure::Lost(count) => flow.lost += u64::from(count),
        }
    }

    /// A report's hops, its links and its path.
    pub fn hops(&mut self, seen: &Seen<'_>, arrival_ns: u64) {
        self.path(seen, arrival_ns);
        for hop in seen.hops {
            self.hop(hop, arrival_ns);
        }
        for (ends, latency) in hops::links(seen) {
            let Some((first, last, stat)) =
                entry_within(&mut self.links, ends, self.limit, &mut self.unrecorded)
            else {
                continue;
            };
            stretch(first, last, arrival_ns);
            stat.record(latency);
        }
    }

    /// The flow's path, if the report's can be told.
    fn path(&mut self, seen: &Seen<'_>, arrival_ns: u64) {
        // Mostly the path of the flow's last report: one walk, no copy.
        if let Some(flow) = self.flows.get_mut(&seen.flow).filter(|flow| same_path(seen, &flow.path)) {
            stretch(&mut flow.first_ns, &mut flow.last_ns, arrival_ns);
            flow.path_ns = arrival_ns;
            return;
        }
        let mut path = std::mem::take(&mut self.scratch);
        if hops::path_into(seen, &mut path) {
            if let Some(flow) = self.flow(seen.flow, arrival_ns) {
                flow.path.clone_from(&path);
                flow.path_ns = arrival_ns;
            }
        }
        self.scratch = path;
    }

    fn hop(&mut self, hop: &HopMetadata, arrival_ns: u64) {
        let Some(node) = hop.node_id else { return };
        let ingress = hop.l2_ingress_port.or(hop.l1_ingress_port.map(u32::from)).unwrap_or(NOT_REPORTED);
        let egress = hop.l2_egress_port.or(hop.l1_egress_port.map(u32::from)).unwrap_or(NOT_REPORTED);
        let key = (node, ingress, egress);
        let Some(figures) = entry_within(&mut self.hops, key, self.limit, &mut self.unrecorded) else {
            return;
        };
        stretch(&mut figures.first_ns, &mut figures.last_ns, arrival_ns);
        figures.reports += 1;
        if let Some(latency) = hop.hop_latency {
            figures.latency.record(i64::from(latency));
        }
        if let Some((_, occupancy)) = hop.queue {
            figures.queue.record(i64::from(occupancy));
        }
    }

    /// A drop report of `node` for `reason`.
    pub fn drop_reported(&mut self, node: u32, reason: u8, arrival_ns: u64) {
        let key = (node, reason);
        let Some(drops) = entry_within(&mut self.drops, key, self.limit, &mut self.unrecorded) else {
            return;
        };
        stretch(&mut drops.first_ns, &mut drops.last_ns, arrival_ns);
        drops.reports += 1;
    }

    /// A flow's path changed.
    pub fn path_change(&mut self, flow: FlowKey, arrival_ns: u64) {
        if let Some(flow) = self.flow(flow, arrival_ns) {
            flow.path_changes = flow.path_changes.saturating_add(1);
        }
    }
}

/// ns as RFC 9951's unsigned32 microseconds: truncated; a negative delay
/// (the clocks disagree) is 0, beyond 32 bits all ones.
pub fn micros_u32(ns: i64) -> u32 {
    u32::try_from(ns.max(0) / 1000).unwrap_or(u32::MAX)
}

/// A 32-bit field of a statistic, [`NOT_REPORTED`] without values.
fn u32_or_not_reported(value: Option<i64>) -> u32 {
    value.map_or(NOT_REPORTED, |v| u32::try_from(v.max(0)).unwrap_or(u32::MAX))
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
}

/// A flow's data record; returns its template id.
pub fn flow_record(out: &mut Vec<u8>, key: &FlowKey, flow: &Flow, templates: &Templates) -> u16 {
    let template = match (key.src, key.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            put(out, &src.octets());
            put(out, &dst.octets());
            FLOW_V4
        }
        (src, dst) => {
            put(out, &ipv6(src).octets());
            put(out, &ipv6(dst).octets());
            FLOW_V6
        }
    };
    out.push(key.protocol);
    put(out, &key.src_port.to_be_bytes());
    put(out, &key.dst_port.to_be_bytes());
    put(out, &(flow.first_ns / 1_000_000).to_be_bytes());
    put(out, &flow.last_ns.div_ceil(1_000_000).to_be_bytes());
    put(out, &flow.first_ns.to_be_bytes());
    put(out, &flow.last_ns.to_be_bytes());
    put(out, &flow.delay.count.to_be_bytes());
    put(out, &flow.lost.to_be_bytes());
    let delay = &flow.delay;
    let has = delay.count > 0;
    put(out, &(if has { micros_u32(delay.min) } else { 0 }).to_be_bytes());
    put(out, &(if has { micros_u32(delay.max) } else { 0 }).to_be_bytes());
    put(out, &micros_u32(delay.mean().unwrap_or(0)).to_be_bytes());
    let sum_micros = u64::try_from(delay.sum.max(0) / 1000).unwrap_or(u64::MAX);
    put(out, &sum_micros.to_be_bytes());
    put(out, &delay.min.to_be_bytes());
    put(out, &delay.max.to_be_bytes());
    put(out, &(delay.sum.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64).to_be_bytes());
    put(out, &flow.source_node.unwrap_or(NOT_REPORTED).to_be_bytes());
    put(out, &flow.sink_node.unwrap_or(NOT_REPORTED).to_be_bytes());
    emit_basic_list_u32(out, &templates.node, &flow.path);
    put(out, &flow.path_changes.to_be_bytes());
    template
}

fn ipv6(address: IpAddr) -> std::net::Ipv6Addr {
    match address {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// A hop's data record.
pub fn hop_record(out: &mut Vec<u8>, key: &HopKey, hop: &Hop) -> u16 {
    let (node, ingress, egress) = *key;
    put(out, &node.to_be_bytes());
    put(out, &ingress.to_be_bytes());
    put(out, &egress.to_be_bytes());
    put(out, &hop.first_ns.to_be_bytes());
    put(out, &hop.last_ns.to_be_bytes());
    put(out, &hop.reports.to_be_bytes());
    for stat in [&hop.latency, &hop.queue] {
        let has = stat.count > 0;
        put(out, &u32_or_not_reported(has.then_some(stat.min)).to_be_bytes());
        put(out, &u32_or_not_reported(has.then_some(stat.max)).to_be_bytes());
        put(out, &u32_or_not_reported(stat.mean()).to_be_bytes());
    }
    HOP
}

/// A link's data record.
pub fn link_record(out: &mut Vec<u8>, ends: (u32, u32), link: &(u64, u64, Stat)) -> u16 {
    let (first, last, stat) = link;
    put(out, &ends.0.to_be_bytes());
    put(out, &ends.1.to_be_bytes());
    put(out, &first.to_be_bytes());
    put(out, &last.to_be_bytes());
    put(out, &stat.count.to_be_bytes());
    put(out, &stat.min.to_be_bytes());
    put(out, &stat.max.to_be_bytes());
    put(out, &stat.mean().unwrap_or(0).to_be_bytes());
    LINK
}

/// A node's drop reports of one reason: their data record.
pub fn drop_record(out: &mut Vec<u8>, (node, reason): (u32, u8), drops: &Drops) -> u16 {
    put(out, &node.to_be_bytes());
    out.push(reason);
    put(out, &drops.first_ns.to_be_bytes());
    put(out, &drops.last_ns.to_be_bytes());
    put(out, &drops.reports.to_be_bytes());
    DROP
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn flow() -> FlowKey {
        FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 5, 6)
    }

    fn latency(ns: i64, at_ns: u64) -> Observed {
        let measure = Measure::Latency { ns, flow_seq: None, hops: None };
        Observed { flow: flow(), source_node: Some(1), sink_node: Some(9), measure, at_ns: Some(at_ns) }
    }

    /// A flow's figures: times of the reports' arrival, delay min, max, mean and
    /// sum, losses added up; each in its field, RFC 9951's in µs.
    #[test]
    fn a_flow_record_holds_its_interval_figures() {
        let mut interval = Interval::new(10);
        interval.observed(&latency(1_500, 7), 1_000);
        interval.observed(&latency(4_600, 7), 2_000);
        let lost = Observed { measure: Measure::Lost(3), at_ns: None, ..latency(0, 0) };
        interval.observed(&lost, 3_000);
        interval.path_change(flow(), 3_000);
        let templates = Templates::new(32473);
        let mut out = Vec::new();
        let key = flow();
        assert_eq!(flow_record(&mut out, &key, &interval.flows[&key], &templates), FLOW_V4);
        let fixed: usize =
            templates.flow_v4.iter().filter(|f| f.length != 65535).map(|f| usize::from(f.length)).sum();
        assert_eq!(out.len(), fixed + 1 + 9);
        assert_eq!(&out[29..37], &1_000u64.to_be_bytes(), "flowStartNanoseconds");
        assert_eq!(&out[37..45], &3_000u64.to_be_bytes(), "flowEndNanoseconds");
        assert_eq!(&out[45..53], &2u64.to_be_bytes(), "packetDeltaCount");
        assert_eq!(&out[53..61], &3u64.to_be_bytes(), "lost");
        assert_eq!(&out[61..73], &[0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 3], "min, max, mean µs");
        assert_eq!(&out[73..81], &6u64.to_be_bytes(), "sum µs");
        assert_eq!(&out[81..89], &1_500i64.to_be_bytes(), "min ns");
        assert_eq!(&out[out.len() - 4..], &1u32.to_be_bytes(), "path changes");
    }

    /// A hop with nothing reported says all ones; a full interval counts
    /// what it could not keep.
    #[test]
    fn hops_are_keyed_by_node_and_interfaces_and_bounded() {
        let mut interval = Interval::new(1);
        let hop = |node: u32, port: u16| HopMetadata {
            node_id: Some(node),
            l1_ingress_port: Some(port),
            hop_latency: Some(100),
            ..HopMetadata::default()
        };
        let hops = [hop(1, 1), hop(2, 1)];
        let seen = Seen { flow: flow(), hops: &hops, sink: None, sink_ingress_ns: None, at_ms: 0 };
        interval.hops(&seen, 50);
        assert_eq!(interval.hops.len(), 1);
        assert_eq!(interval.unrecorded, 1);
        let (key, figures) = interval.hops.iter().next().unwrap();
        let mut out = Vec::new();
        hop_record(&mut out, key, figures);
        assert_eq!(&out[..12], &[0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&out[out.len() - 12..], &[0xff; 12], "no queue reported");
    }

    /// Drop reports add up per node and reason; a reason beyond the
    /// interval's limit is counted, not kept.
    #[test]
    fn drops_are_counted_per_node_and_reason_and_bounded() {
        let mut interval = Interval::new(2);
        for (node, reason, at) in [(2, 71, 10), (2, 71, 30), (2, 5, 20), (3, 71, 40)] {
            interval.drop_reported(node, reason, at);
        }
        assert_eq!(interval.drops[&(2, 71)], Drops { first_ns: 10, last_ns: 30, reports: 2 });
        assert_eq!((interval.drops.len(), interval.unrecorded), (2, 1));
        let mut out = vec![];
        assert_eq!(drop_record(&mut out, (2, 71), &interval.drops[&(2, 71)]), DROP);
        let fixed: usize = Templates::new(1).drop.iter().map(|f| usize::from(f.length)).sum();
        assert_eq!(out.len(), fixed);
        assert_eq!(&out[..5], &[0, 0, 0, 2, 71], "node, reason");
        assert_eq!(&out[out.len() - 8..], &2u64.to_be_bytes(), "reports");
    }

    /// Every record of `interval`, in the exporter's order.
    fn records(interval: &Interval) -> Vec<Vec<u8>> {
        let templates = Templates::new(32473);
        let mut all = Vec::new();
        for (key, flow) in &interval.flows {
            all.push(Vec::new());
            flow_record(all.last_mut().unwrap(), key, flow, &templates);
        }
        for (key, hop) in sorted(&interval.hops) {
            all.push(Vec::new());
            hop_record(all.last_mut().unwrap(), &key, hop);
        }
        for (ends, link) in sorted(&interval.links) {
            all.push(Vec::new());
            link_record(all.last_mut().unwrap(), ends, link);
        }
        for (key, drops) in sorted(&interval.drops) {
            all.push(Vec::new());
            drop_record(all.last_mut().unwrap(), key, drops);
        }
        all
    }

    /// Two readers' intervals merged write the records one interval fed
    /// every report writes: counts and sums added, least and most kept,
    /// the newest path, times stretched.
    #[test]
    fn merged_readers_write_what_one_interval_writes() {
        let hop = |node: u32, latency: u32, at: u64| HopMetadata {
            node_id: Some(node),
            hop_latency: Some(latency),
            queue: Some((0, latency / 10)),
            ingress_timestamp: Some(at),
            egress_timestamp: Some(at + u64::from(latency)),
            ..HopMetadata::default()
        };
        let (mut whole, mut first, mut second) = (Interval::new(10), Interval::new(10), Interval::new(10));
        for step in 0..8u64 {
            let reader = if step % 3 == 0 { &mut first } else { &mut second };
            let at = 1_000 + step * 100;
            let hops = [hop(1, 500 + step as u32 * 40, at), hop(2 + (step >= 5) as u32, 300, at + 2_000)];
            let seen = Seen { flow: flow(), hops: &hops, sink: Some(9), sink_ingress_ns: None, at_ms: 0 };
            let observed = latency(2_000 + 700 * step as i64 - 300 * (step % 2) as i64, at);
            for interval in [&mut whole, &mut *reader] {
                interval.observed(&observed, at);
                interval.hops(&seen, at);
                interval.drop_reported(2, 71, at);
            }
            if step == 5 {
                whole.path_change(flow(), at);
                reader.path_change(flow(), at);
            }
        }
        let mut merged = Interval::new(10);
        merged.merge(first);
        merged.merge(second);
        assert_eq!(records(&merged), records(&whole));
        assert_eq!(merged.flows[&flow()].path, vec![1, 3, 9], "the newest path");
    }

    #[test]
    fn delays_in_microseconds_are_truncated_and_clamped() {
        assert_eq!(micros_u32(-5), 0);
        assert_eq!(micros_u32(1_999), 1);
        assert_eq!(micros_u32(i64::MAX), u32::MAX);
    }
}
