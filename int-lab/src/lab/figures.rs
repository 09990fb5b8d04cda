//! Checks judged once every process has stopped, on what they wrote at
//! exit: the collector's summary (its last `{"summary": ...}` line) and the
//! nodes' counters (`--stats-json`).

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::fs;
use std::path::Path;

use super::topology::Scenario;
use super::verdicts::Checks;

/// The checks the scenario asks for of what the lab's processes wrote at exit.
pub fn at_exit(scenario: &Scenario, workdir: &Path, checks: &mut Checks) {
    if let Some(hop_latency) = &scenario.hop_latency {
        check_hop_latency(workdir, &hop_latency.but, checks);
    }
    if let Some(sink) = scenario.path_switch.as_ref().and_then(|s| s.sink.as_ref()) {
        check_sink_reported(workdir, sink, checks);
    }
    if let Some(ioam) = &scenario.ioam {
        check_numbered(workdir, &ioam.sink, checks);
        check_kernel_slot(workdir, ioam.kernel_node, checks);
    }
}

/// Counter `name` of the node in `host`, summed over its pipelines, from
/// its `--stats-json` at exit (0 where a pipeline has none).
pub fn node_counter(workdir: &Path, host: &str, name: &str) -> u64 {
    let file = workdir.join(format!("node-{host}.json"));
    let stats: serde_json::Value =
        fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    stats["pipelines"]
        .as_object()
        .map(|pipelines| pipelines.values().filter_map(|p| p[name].as_u64()).sum())
        .unwrap_or(0)
}

/// The decapsulating node took the trace out of packets and found every
/// one numbered.
fn check_numbered(workdir: &Path, sink: &str, checks: &mut Checks) {
    let (stripped, unnumbered) =
        (node_counter(workdir, sink, "stripped"), node_counter(workdir, sink, "no_sequence"));
    checks.check(
        "numbered packets",
        stripped > 0 && unnumbered == 0,
        format!("the node in {sink} took the trace out of {stripped} packets, {unnumbered} without a number"),
    );
}

/// The Linux router's node id is in the traces the collector read: the
/// kernel filled its slot.
fn check_kernel_slot(workdir: &Path, kernel: u64, checks: &mut Checks) {
    let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
    let (mut traces, mut filled) = (0u64, 0u64);
    for record in text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
        let Some(hops) = record["hop_metadata"].as_array() else { continue };
        traces += 1;
        filled += u64::from(hops.iter().any(|hop| hop["node_id"].as_u64() == Some(kernel)));
    }
    checks.check(
        "kernel's slot",
        filled > 0,
        format!("{filled} of the {traces} traces the collector read carry the kernel's node id {kernel}"),
    );
}

/// The collector's summary at exit.
pub fn summary(collector_log: &Path) -> Option<serde_json::Value> {
    let text = fs::read_to_string(collector_log).ok()?;
    text.lines()
        .rev()
        .filter(|l| l.starts_with("{\"summary\""))
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|mut line| line["summary"].take())
}

/// Every node of the collector's summary but those `but` names has hop
/// latencies, and not only zeros: the per-hop view has figures for each.
/// A node's first burst carries 0 (its time per packet is not measured
/// yet: `HopFigures`), so a node heard from once may show only that; one
/// heard from more often must show a time, and so must one node at least.
fn check_hop_latency(workdir: &Path, but: &[String], checks: &mut Checks) {
    let summary = summary(&workdir.join("collector.jsonl")).unwrap_or_default();
    let nodes: Vec<(String, u64, u64)> = summary["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| {
                    let name = n["node_ip"].as_str().map_or_else(|| n["node"].to_string(), str::to_string);
                    let latency = &n["hop_latency"];
                    (name, latency["count"].as_u64().unwrap_or(0), latency["max"].as_u64().unwrap_or(0))
                })
                .collect()
        })
        .unwrap_or_default();
    let judged = || nodes.iter().filter(|(node, _, _)| !but.contains(node));
    checks.check(
        "hop latency",
        judged().count() > 0
            && judged().all(|(_, count, max)| *count > 0 && (*count == 1 || *max > 0))
            && judged().any(|(_, _, max)| *max > 0),
        format!(
            "hop latencies per node in the collector's summary (count, max ns): {}{}",
            nodes.iter().map(|(n, c, m)| format!("{n} {c} {m}")).collect::<Vec<_>>().join(", "),
            if but.is_empty() { String::new() } else { format!(" (none asked of {})", but.join(", ")) }
        ),
    );
}

/// The INT-MD sink counted path-change reports it sent
/// (`reports_path_change`, summed over its pipelines).
fn check_sink_reported(workdir: &Path, sink: &str, checks: &mut Checks) {
    let reported = node_counter(workdir, sink, "reports_path_change");
    checks.check(
        "sink's path-change reports",
        reported > 0,
        format!("the sink in {sink} sent {reported} path-change report(s) (reports_path_change)"),
    );
}
