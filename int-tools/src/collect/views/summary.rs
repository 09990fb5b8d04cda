//! The collector's summary: totals, lost reports, and latency percentiles
//! and packets lost over all flows and per flow, as text or one JSON line.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::schema::human_ns;
use int_core::flow::FlowKey;
use serde::Serialize;

use crate::collect::books::hops::{Hops, Node};
use crate::collect::books::join::Counts as JoinCounts;
use crate::collect::books::latency::{Latency, PERCENTILES};
use crate::collect::books::ledger::{FlowSummary, Ledger};
use crate::collect::books::snapshot::Snapshot;
use crate::collect::counts::{counts_text, Counted, OutputCounts};
use crate::collect::names::{self, Naming};
use crate::collect::views::congestion;

/// At most this many flows, nodes and links in the text summary at exit
/// (the most reported flows); JSON has them all.
const TEXT_FLOWS: usize = 50;

/// How much of the books a text summary lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// At exit: up to [`TEXT_FLOWS`] flows, nodes and links.
    Whole,
    /// At the interval, for a journal: the `n` worst flows, nodes and
    /// links, then how many more; a fleet's summary stays a screen long.
    Worst(usize),
}

/// The worst this many of each in a periodic text summary: with the
/// totals, about 30 lines whatever the fleet.
pub const PERIODIC_WORST: usize = 8;

/// The summary: one JSON line (whole, whatever `extent`), or text of
/// the `extent` asked for.
pub fn print(
    snapshot: &Snapshot,
    outputs: &[Arc<dyn Counted>],
    json_out: bool,
    extent: Extent,
    names: &Naming,
) {
    if json_out {
        if let Ok(line) =
            serde_json::to_string(&SummaryLine { summary: summary_of(snapshot, outputs, names) })
        {
            println!("{line}");
        }
    } else {
        print_text(snapshot, outputs, extent, names);
    }
}

#[derive(Serialize)]
struct SummaryLine<'a> {
    summary: Summary<'a>,
}

/// The summary's JSON (docs/output.md): totals, all flows, each flow, the
/// hops' books, then each output's counts under its name.
#[derive(Serialize)]
struct Summary<'a> {
    reports: u64,
    datagrams: u64,
    malformed: u64,
    malformed_by_reason: &'a BTreeMap<String, u64>,
    lost_reports: u64,
    sequence_resyncs: u64,
    late_reports: u64,
    kernel_drops: u64,
    all_flows: LatencyFields,
    untracked_observations: u64,
    postcards: JoinsLine,
    flows: Vec<FlowLine<'a>>,
    nodes: Vec<NodeLine<'a>>,
    links: Vec<LinkLine>,
    paths_followed: usize,
    path_changes: u64,
    recent_path_changes: Vec<RecentChange<'a>>,
    untracked_nodes: u64,
    untracked_links: u64,
    untracked_paths: u64,
    unusable_paths: u64,
    congestion: congestion::CongestionLine,
    #[serde(flatten)]
    outputs: OutputCounts<'a>,
}

fn summary_of<'a>(snapshot: &'a Snapshot, outputs: &'a [Arc<dyn Counted>], names: &Naming) -> Summary<'a> {
    let (totals, senders, hops) = (&snapshot.totals, &snapshot.senders, &snapshot.hops);
    let mut flows: Vec<_> = snapshot.ledger.flows.iter().collect();
    flows.sort_by_key(|(key, _)| **key);
    let flows = flows.into_iter().map(|(flow, summary)| FlowLine { flow, latency: latency_of(summary) });
    let nodes = hops.nodes.iter().map(|(id, node)| NodeLine {
        node: *id,
        node_name: names.node(*id),
        node_ip: names::as_ipv4(*id).map(|ip| ip.to_string()),
        hops: node.hops,
        hop_latency: distribution_of(&node.latency),
        queue_occupancy: distribution_of(&node.queue),
        drops: &node.drops,
    });
    let links = hops.links.iter().map(|((from, to), latency)| LinkLine {
        from: *from,
        to: *to,
        from_name: names.node(*from),
        to_name: names.node(*to),
        latency_ns: distribution_of(latency),
    });
    let recent = hops.recent.iter().map(|c| RecentChange {
        at_ms: c.at_ms,
        flow: &c.flow,
        old_path: &c.old,
        new_path: &c.new,
        old_path_names: names.labels(&c.old),
        new_path_names: names.labels(&c.new),
    });
    let untracked = hops.untracked;
    Summary {
        reports: totals.reports,
        datagrams: totals.received,
        malformed: totals.malformed(),
        malformed_by_reason: &totals.malformed,
        lost_reports: snapshot.lost_reports(),
        sequence_resyncs: senders.values().map(|s| s.resyncs).sum(),
        late_reports: senders.values().map(|s| s.late).sum(),
        kernel_drops: totals.kernel_drops,
        all_flows: latency_of(&snapshot.ledger.overall),
        untracked_observations: snapshot.ledger.untracked,
        postcards: joins_of(&snapshot.joins),
        flows: flows.collect(),
        nodes: nodes.collect(),
        links: links.collect(),
        paths_followed: hops.paths(),
        path_changes: hops.path_changes,
        recent_path_changes: recent.collect(),
        untracked_nodes: untracked.nodes,
        untracked_links: untracked.links,
        untracked_paths: untracked.flows,
        unusable_paths: untracked.unusable_paths,
        congestion: congestion::summary(&snapshot.congestion, names),
        outputs: OutputCounts(outputs),
    }
}

/// A flow and its figures.
#[derive(Serialize)]
struct FlowLine<'a> {
    flow: &'a FlowKey,
    #[serde(flatten)]
    latency: LatencyFields,
}

/// Reports, extremes, mean, percentiles (null where not kept) and loss.
#[derive(Serialize)]
struct LatencyFields {
    latency_reports: u64,
    latency_min_ns: Option<i64>,
    latency_avg_ns: Option<i64>,
    latency_max_ns: Option<i64>,
    latency_p50_ns: Option<i64>,
    latency_p90_ns: Option<i64>,
    latency_p99_ns: Option<i64>,
    latency_p99_9_ns: Option<i64>,
    lost_packets: u64,
}

fn latency_of(flow: &FlowSummary) -> LatencyFields {
    let latency = &flow.latency;
    // The fields name PERCENTILES' four, in its order.
    let [p50, p90, p99, p99_9] = PERCENTILES.map(|(_, q)| latency.quantile(q));
    LatencyFields {
        latency_reports: latency.count(),
        latency_min_ns: latency.min(),
        latency_avg_ns: latency.mean(),
        latency_max_ns: latency.max(),
        latency_p50_ns: p50,
        latency_p90_ns: p90,
        latency_p99_ns: p99,
        latency_p99_9_ns: p99_9,
        lost_packets: flow.lost,
    }
}

/// A node's hops, figures and drops by reason.
#[derive(Serialize)]
struct NodeLine<'a> {
    node: u32,
    node_name: Option<String>,
    node_ip: Option<String>,
    hops: u64,
    hop_latency: Distribution,
    queue_occupancy: Distribution,
    drops: &'a BTreeMap<u8, u64>,
}

/// A link's latency.
#[derive(Serialize)]
struct LinkLine {
    from: u32,
    to: u32,
    from_name: Option<String>,
    to_name: Option<String>,
    latency_ns: Distribution,
}

/// A path change the summary keeps, with its nodes' labels where
/// `--names` names nodes.
#[derive(Serialize)]
struct RecentChange<'a> {
    at_ms: u64,
    flow: &'a FlowKey,
    old_path: &'a [u32],
    new_path: &'a [u32],
    #[serde(skip_serializing_if = "Option::is_none")]
    old_path_names: Option<Vec<Option<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_path_names: Option<Vec<Option<String>>>,
}

/// The join of INT-MX and INT-XD postcards.
#[derive(Serialize)]
struct JoinsLine {
    received: u64,
    packets: u64,
    unordered: u64,
    duplicates: u64,
    dropped: u64,
    unknown: u64,
    incomplete: u64,
}

fn joins_of(joins: &JoinCounts) -> JoinsLine {
    let JoinCounts { postcards, packets, unordered, duplicates, dropped, unknown, incomplete } = *joins;
    JoinsLine { received: postcards, packets, unordered, duplicates, dropped, unknown, incomplete }
}

/// Count, extremes, mean and percentiles of a distribution (null where none).
#[derive(Serialize)]
struct Distribution {
    count: u64,
    min: Option<i64>,
    avg: Option<i64>,
    max: Option<i64>,
    p50: Option<i64>,
    p90: Option<i64>,
    p99: Option<i64>,
    p99_9: Option<i64>,
}

fn distribution_of(values: &Latency) -> Distribution {
    let [p50, p90, p99, p99_9] = PERCENTILES.map(|(_, q)| values.quantile(q));
    Distribution {
        count: values.count(),
        min: values.min(),
        avg: values.mean(),
        max: values.max(),
        p50,
        p90,
        p99,
        p99_9,
    }
}

fn print_text(snapshot: &Snapshot, outputs: &[Arc<dyn Counted>], extent: Extent, names: &Naming) {
    let (totals, senders) = (&snapshot.totals, &snapshot.senders);
    let resyncs: u64 = senders.values().map(|s| s.resyncs).sum();
    let late: u64 = senders.values().map(|s| s.late).sum();
    println!(
        "== summary: {} report(s) in {} datagram(s), {} malformed, {} lost (report sequence gaps) ==",
        totals.reports,
        totals.received,
        totals.malformed(),
        snapshot.lost_reports()
    );
    if resyncs + late + totals.kernel_drops > 0 {
        println!(
            "   {resyncs} sequence resync(s), {late} late or duplicate report(s), {} dropped by the kernel (receive buffer full)",
            totals.kernel_drops
        );
    }
    for (reason, count) in &totals.malformed {
        println!("   malformed: {reason}: {count}");
    }
    for line in counts_text(outputs) {
        println!("   {line}");
    }
    let joins = &snapshot.joins;
    if joins.postcards > 0 {
        println!(
            "   postcards: {} received, {} packets joined ({} unordered, {} incomplete), {} duplicates, {} dropped, {} from unknown nodes",
            joins.postcards,
            joins.packets,
            joins.unordered,
            joins.incomplete,
            joins.duplicates,
            joins.dropped,
            joins.unknown
        );
    }
    let ledger = &snapshot.ledger;
    if ledger.flows.len() > 1 || ledger.untracked > 0 {
        println!("  all flows: {}", describe(&ledger.overall));
    }
    print_flows(ledger, extent);
    if ledger.untracked > 0 {
        println!(
            "  {} observation(s) of flows beyond --max-flows, counted in all flows only",
            ledger.untracked
        );
    }
    print_hops(&snapshot.hops, extent, names);
}

/// A latency's p99 (or its max, for a flow without percentiles), to rank
/// the worst by.
fn p99(latency: &Latency) -> i64 {
    latency.quantile(0.99).or_else(|| latency.max()).unwrap_or(i64::MIN)
}

/// The flows a text summary lists: at exit the most reported, in key
/// order; at the interval the worst (most packets lost, then highest
/// latency p99, then most reported).
fn print_flows(ledger: &Ledger, extent: Extent) {
    let mut flows = ledger.flows_by_reports();
    let total = flows.len();
    match extent {
        Extent::Whole => {
            flows.truncate(TEXT_FLOWS);
            flows.sort_by_key(|(key, _)| **key);
        }
        Extent::Worst(n) => {
            flows.sort_by_key(|(key, flow)| {
                (Reverse(flow.lost), Reverse(p99(&flow.latency)), Reverse(flow.latency.count()), **key)
            });
            flows.truncate(n);
        }
    }
    for (key, flow) in &flows {
        println!("  {key}: {}", describe(flow));
    }
    let why = match extent {
        Extent::Whole => "the most reported",
        Extent::Worst(_) => "the most lost, then the highest latency p99",
    };
    more(total, flows.len(), "flow(s)", why);
}

/// "... and N more", naming what the lines shown were chosen by.
fn more(total: usize, shown: usize, what: &str, chosen_by: &str) {
    if total > shown {
        println!("  ... and {} more {what} (those above: {chosen_by}; --json lists them all)", total - shown);
    }
}

/// The nodes and links a text summary lists, each with its figures.
type Chosen<'a> = (Vec<(&'a u32, &'a Node)>, Vec<(&'a (u32, u32), &'a Latency)>);

/// The nodes and links a text summary lists: at exit the first by id; at
/// the interval the worst (nodes: most drop reports, then highest hop
/// latency p99; links: highest latency p99).
fn chosen(hops: &Hops, extent: Extent) -> Chosen<'_> {
    let (mut nodes, mut links): (Vec<_>, Vec<_>) = (hops.nodes.iter().collect(), hops.links.iter().collect());
    let n = match extent {
        Extent::Whole => TEXT_FLOWS,
        Extent::Worst(n) => {
            nodes.sort_by_key(|(id, node)| {
                (
                    Reverse(node.drops.values().sum::<u64>()),
                    Reverse(p99(&node.latency)),
                    Reverse(node.hops),
                    **id,
                )
            });
            links.sort_by_key(|(key, latency)| (Reverse(p99(latency)), Reverse(latency.count()), **key));
            n
        }
    };
    nodes.truncate(n);
    links.truncate(n);
    (nodes, links)
}

/// Nodes, links and path changes, where INT 2.1 reports told of them.
fn print_hops(hops: &Hops, extent: Extent, names: &Naming) {
    let (nodes, links) = chosen(hops, extent);
    let (node_why, link_why) = match extent {
        Extent::Whole => ("the first by id", "the first by id"),
        Extent::Worst(_) => {
            ("the most drop reports, then the highest hop latency p99", "the highest latency p99")
        }
    };
    for (id, node) in &nodes {
        let drops: Vec<String> =
            node.drops.iter().map(|(reason, n)| format!("{n} for reason {reason}")).collect();
        let drops =
            if drops.is_empty() { String::new() } else { format!("; drop reports: {}", drops.join(", ")) };
        println!(
            "  node {}: {} hop(s); hop latency {}; queue {}{drops}",
            names.describe(**id),
            node.hops,
            spread(&node.latency, human_ns),
            spread(&node.queue, |v| v.to_string())
        );
    }
    more(hops.nodes.len(), nodes.len(), "node(s)", node_why);
    for ((from, to), latency) in &links {
        println!("  link {} > {}: {}", names.label(*from), names.label(*to), spread(latency, human_ns));
    }
    more(hops.links.len(), links.len(), "link(s)", link_why);
    if hops.paths() > 0 || hops.path_changes > 0 {
        println!("  {} flow path(s) followed, {} path change(s)", hops.paths(), hops.path_changes);
    }
    let untracked = hops.untracked;
    if untracked.nodes + untracked.links + untracked.flows + untracked.unusable_paths > 0 {
        println!(
            "  beyond the limits: {} hop(s) of nodes, {} link observation(s), {} path(s); {} stack(s) whose path cannot be told",
            untracked.nodes, untracked.links, untracked.flows, untracked.unusable_paths
        );
    }
}

/// "min/avg/max a/b/c, p50/p90/p99/p99.9 ..." or "none", each value as
/// `show` writes it.
fn spread(values: &Latency, show: fn(i64) -> String) -> String {
    match (values.min(), values.mean(), values.max()) {
        (Some(min), Some(mean), Some(max)) => {
            format!("min/avg/max {}/{}/{}{}", show(min), show(mean), show(max), percentiles(values, show))
        }
        _ => "none".to_string(),
    }
}

/// "N latency report(s), latency min/avg/max a/b/c, p50/p90/p99/p99.9
/// ..., M packet(s) lost", durations in their unit.
fn describe(flow: &FlowSummary) -> String {
    let latency = &flow.latency;
    if latency.count() == 0 {
        return format!("no latency report, {} packet(s) lost", flow.lost);
    }
    format!(
        "{} latency report(s), latency {}, {} packet(s) lost",
        latency.count(),
        spread(latency, human_ns),
        flow.lost
    )
}

fn percentiles(latency: &Latency, show: fn(i64) -> String) -> String {
    let values: Option<Vec<String>> =
        PERCENTILES.iter().map(|(_, q)| latency.quantile(*q).map(show)).collect();
    match values {
        Some(values) => format!(", p50/p90/p99/p99.9 {}", values.join("/")),
        None => String::new(),
    }
}
