//! The page's per-flow series: latency of the `--metrics-flows` most
//! reported flows with percentiles, packets lost of the as many most lossy.

use std::collections::HashSet;
use std::fmt::Write as _;

use int_core::flow::FlowKey;
use int_os::http;

use super::exposition::histogram;
use crate::collect::books::ledger::Ledger;
use crate::collect::counts::metric_head;

/// The top flows' series; returns how many followed flows were left out.
pub(super) fn flows(out: &mut String, ledger: &Ledger, top: usize) -> usize {
    let mut shown = HashSet::new();
    let by_reports = ledger.flows_by_reports();
    let detailed = by_reports.iter().filter(|(_, f)| f.latency.has_percentiles()).take(top);
    metric_head(
        out,
        "int_collect_flow_latency_seconds",
        "One-way latency of the most reported flows, one count per latency report.",
        "histogram",
    );
    for (key, flow) in detailed {
        histogram(out, "int_collect_flow_latency_seconds", &labels(key), &flow.latency);
        shown.insert(**key);
    }
    let mut lossy: Vec<_> = ledger.flows.iter().filter(|(_, f)| f.lost > 0).collect();
    lossy.sort_by(|a, b| b.1.lost.cmp(&a.1.lost).then(a.0.cmp(b.0)));
    let name = "int_collect_flow_lost_packets_total";
    metric_head(out, name, "Packets declared lost, the most lossy flows.", "counter");
    for (key, flow) in lossy.into_iter().take(top) {
        let _ = writeln!(out, "{name}{{{}}} {}", labels(key), flow.lost);
        shown.insert(*key);
    }
    ledger.flows_followed().saturating_sub(shown.len())
}

/// A flow's labels.
fn labels(key: &FlowKey) -> String {
    format!(
        "src=\"{}\",dst=\"{}\",protocol=\"{}\",src_port=\"{}\",dst_port=\"{}\"",
        http::prometheus_label(&key.src.to_string()),
        http::prometheus_label(&key.dst.to_string()),
        key.protocol,
        key.src_port,
        key.dst_port
    )
}
