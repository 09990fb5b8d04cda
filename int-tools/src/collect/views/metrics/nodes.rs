//! The page's per-node, per-sink and per-link series: every hop's figures,
//! the path changes and loss that name where they happen, for the
//! `--metrics-nodes` nodes with the most hops (and as many sinks) and the
//! `--metrics-links` links with the most observations (bounded labels;
//! what is left out is counted).

use std::fmt::Write as _;

use int_os::http;

use super::exposition::{histogram, summary};
use crate::collect::books::hops::{Hops, Node};
use crate::collect::books::moves::Moves;
use crate::collect::counts::metric_head;
use crate::collect::names::Naming;

/// Nodes, sinks and links the limits left out of the page.
pub(super) struct LeftOut {
    pub nodes: usize,
    pub sinks: usize,
    pub links: usize,
}

/// Node ids as the JSON records give them (integers), and what the
/// operator calls the node (--names; the id where it has no name).
fn node_labels(id: u32, names: &Naming) -> String {
    format!("node=\"{id}\",node_name=\"{}\"", http::prometheus_label(&names.label(id)))
}

/// The `node_limit` nodes with the most hops and the `link_limit` links
/// with the most observations; returns how many of each were left out.
pub(super) fn hops(
    out: &mut String,
    hops: &Hops,
    node_limit: usize,
    link_limit: usize,
    names: &Naming,
) -> LeftOut {
    let nodes: Vec<(String, &Node)> = {
        let mut by_hops: Vec<_> = hops.nodes.iter().collect();
        by_hops.sort_by(|a, b| b.1.hops.cmp(&a.1.hops).then(a.0.cmp(b.0)));
        by_hops.into_iter().take(node_limit).map(|(id, node)| (node_labels(*id, names), node)).collect()
    };
    node_figures(out, &nodes);
    moves(out, &nodes);
    let sinks_left_out = sinks(out, hops, node_limit, names);
    let links_left_out = links(out, hops, link_limit, names);
    metric_head(out, "int_collect_path_changes_total", "Flows' path changes.", "counter");
    let _ = writeln!(out, "int_collect_path_changes_total {}", hops.path_changes);
    metric_head(out, "int_collect_paths", "Flows whose path is followed.", "gauge");
    let _ = writeln!(out, "int_collect_paths {}", hops.paths());
    LeftOut {
        nodes: hops.nodes.len().saturating_sub(node_limit),
        sinks: sinks_left_out,
        links: links_left_out,
    }
}

/// Hops, hop latency, queue occupancy and drop reports of each node.
fn node_figures(out: &mut String, nodes: &[(String, &Node)]) {
    metric_head(
        out,
        "int_collect_node_hops_total",
        "Hops of a node in INT 2.1 stacks (and its reports as a sink).",
        "counter",
    );
    for (labels, node) in nodes {
        let _ = writeln!(out, "int_collect_node_hops_total{{{labels}}} {}", node.hops);
    }
    metric_head(
        out,
        "int_collect_hop_latency_seconds",
        "Hop latency a node wrote, in seconds, one count per reported hop.",
        "histogram",
    );
    for (labels, node) in nodes {
        histogram(out, "int_collect_hop_latency_seconds", labels, &node.latency);
    }
    metric_head(
        out,
        "int_collect_queue_occupancy",
        "Queue occupancy a node wrote, in its own unit.",
        "summary",
    );
    for (labels, node) in nodes {
        summary(out, "int_collect_queue_occupancy", labels, &node.queue);
    }
    let drops = "int_collect_node_drop_reports_total";
    metric_head(out, drops, "Drop reports a node sent, by reason.", "counter");
    for (labels, node) in nodes {
        for (reason, count) in &node.drops {
            let _ = writeln!(out, "{drops}{{{labels},reason=\"{reason}\"}} {count}");
        }
    }
}

/// Where flows moved and lost packets. Every shown node has each series
/// (0 where nothing moved): a counter that appears at its first change
/// would hide that change from `increase()`.
fn moves(out: &mut String, nodes: &[(String, &Node)]) {
    type Field = fn(&Moves) -> u64;
    let plain: [(&str, &str, Field); 2] = [
        (
            "int_collect_node_path_lost_packets_total",
            "Packets lost on flows whose path runs through the node (their sinks' declarations).",
            |m| m.lost_on_paths,
        ),
        (
            "int_collect_node_path_flaps_total",
            "Path changes that took a flow back to the path it had just left, again within 10 minutes, counted on the nodes the two paths do not share.",
            |m| m.flaps,
        ),
    ];
    for (name, help, field) in plain {
        metric_head(out, name, help, "counter");
        for (labels, node) in nodes {
            let _ = writeln!(out, "{name}{{{labels}}} {}", field(&node.moves));
        }
    }
    let name = "int_collect_node_path_changes_total";
    metric_head(out, name, "Flows whose path left the node, or joined it.", "counter");
    for (labels, node) in nodes {
        let _ = writeln!(out, "{name}{{{labels},change=\"left\"}} {}", node.moves.flows_left);
        let _ = writeln!(out, "{name}{{{labels},change=\"joined\"}} {}", node.moves.flows_joined);
    }
}

/// The `top` sinks (by packets declared lost, then id): each from its
/// first report on, 0 included; returns how many were left out.
fn sinks(out: &mut String, hops: &Hops, top: usize, names: &Naming) -> usize {
    let mut sinks: Vec<_> = hops.sinks.iter().collect();
    sinks.sort_by(|a, b| b.1.lost.cmp(&a.1.lost).then(a.0.cmp(b.0)));
    let left_out = sinks.len().saturating_sub(top);
    sinks.truncate(top);
    let lost = "int_collect_sink_lost_packets_total";
    metric_head(out, lost, "Packets a sink declared lost on its flows.", "counter");
    for (id, sink) in &sinks {
        let _ = writeln!(out, "{lost}{{{}}} {}", node_labels(**id, names), sink.lost);
    }
    let changes = "int_collect_sink_path_changes_total";
    metric_head(out, changes, "Path changes of the flows a sink reports.", "counter");
    for (id, sink) in &sinks {
        let _ = writeln!(out, "{changes}{{{}}} {}", node_labels(**id, names), sink.path_changes);
    }
    left_out
}

/// The `top` links with the most observations; returns how many were
/// left out.
fn links(out: &mut String, hops: &Hops, top: usize, names: &Naming) -> usize {
    let mut links: Vec<_> = hops.links.iter().collect();
    links.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then(a.0.cmp(b.0)));
    metric_head(
        out,
        "int_collect_link_latency_seconds",
        "One hop's egress to the next one's ingress.",
        "histogram",
    );
    let left_out = links.len().saturating_sub(top);
    for ((from, to), latency) in links.into_iter().take(top) {
        let labels = format!(
            "from=\"{from}\",to=\"{to}\",from_name=\"{}\",to_name=\"{}\"",
            http::prometheus_label(&names.label(*from)),
            http::prometheus_label(&names.label(*to))
        );
        histogram(out, "int_collect_link_latency_seconds", &labels, latency);
    }
    left_out
}
