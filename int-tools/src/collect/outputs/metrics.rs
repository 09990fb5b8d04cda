//! The collector's Prometheus `/metrics` (text exposition format 0.0.4):
//! totals, a latency histogram and packets lost over all flows, and the
//! same for the top flows only (the most reported, the most lossy), so
//! the label cardinality stays bounded whatever the number of flows.

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use int_core::flow::FlowKey;
use int_os::http::{self, Page};

use crate::collect::books::hops::Hops;
use crate::collect::books::latency::{Latency, PERCENTILES};
use crate::collect::books::summary::Snapshot;
use crate::collect::health::Health;
use crate::collect::outputs::Counted;
use crate::collect::{names, Shared};

/// Bucket bounds, ns: 1 µs to 5 minutes (a network's latencies, and a
/// capture replayed later).
const BUCKETS_NS: [i64; 15] = [
    1_000,
    10_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    60_000_000_000,
    300_000_000_000,
];

/// Binds `addr` and serves scrapes from a thread until the collector
/// stops.
pub fn start(
    addr: SocketAddr,
    shared: Arc<Shared>,
    top: usize,
    health: Arc<Health>,
) -> Result<std::thread::JoinHandle<()>, std::io::Error> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    log::info!("collect: metrics on http://{local}/metrics");
    Ok(std::thread::spawn(move || {
        let serve = |path: &str| match path {
            "/metrics" => {
                Some(Page::ok("text/plain; version=0.0.4", page(&shared.view(top), &shared.outputs, top)))
            }
            _ => health.page(path),
        };
        if let Err(error) = http::serve(listener, serve, &shared.quit) {
            log::error!("collect: metrics: {error}");
        }
    }))
}

/// The exposition.
pub fn page(snapshot: &Snapshot, outputs: &[Arc<dyn Counted>], top: usize) -> String {
    let mut out = String::new();
    let totals = &snapshot.totals;
    let ledger = &snapshot.ledger;
    let counters = [
        (
            "reports",
            "Reports received (a TR 2.0 datagram may hold several; a refused datagram counts as one).",
            totals.reports,
        ),
        (
            "datagrams",
            "Datagrams received (--from-nats: the stream batches' datagrams, or its JSON records).",
            totals.received,
        ),
        ("malformed", "Reports refused.", totals.malformed()),
        ("lost_reports", "Reports missing from the senders' sequences.", snapshot.lost_reports()),
        ("kernel_drops", "Datagrams the kernel dropped (receive buffer full).", totals.kernel_drops),
        ("untracked_observations", "Observations of flows beyond --max-flows.", ledger.untracked),
        ("lost_packets", "Packets the reports declared lost, all flows.", ledger.overall.lost),
    ];
    for (name, help, value) in counters {
        counter(&mut out, &format!("int_collect_{name}_total"), help, value);
    }
    metric_head(&mut out, "int_collect_flows", "Flows followed one by one.", "gauge");
    let _ = writeln!(out, "int_collect_flows {}", ledger.flows_followed());
    for output in outputs {
        output.metrics(&mut out);
    }
    metric_head(
        &mut out,
        "int_collect_latency_seconds",
        "One-way latency of every flow, in seconds, one count per latency report (sinks report a flow on a change, not every packet).",
        "histogram",
    );
    histogram(&mut out, "int_collect_latency_seconds", "", &ledger.overall.latency);
    let by_reports = ledger.flows_by_reports();
    let detailed = by_reports.iter().filter(|(_, f)| f.latency.has_percentiles()).take(top);
    metric_head(
        &mut out,
        "int_collect_flow_latency_seconds",
        "One-way latency of the most reported flows, one count per latency report.",
        "histogram",
    );
    for (key, flow) in detailed {
        histogram(&mut out, "int_collect_flow_latency_seconds", &labels(key), &flow.latency);
    }
    let mut lossy: Vec<_> = ledger.flows.iter().filter(|(_, f)| f.lost > 0).collect();
    lossy.sort_by(|a, b| b.1.lost.cmp(&a.1.lost).then(a.0.cmp(b.0)));
    let name = "int_collect_flow_lost_packets_total";
    metric_head(&mut out, name, "Packets declared lost, the most lossy flows.", "counter");
    for (key, flow) in lossy.into_iter().take(top) {
        let _ = writeln!(out, "{name}{{{}}} {}", labels(key), flow.lost);
    }
    hops(&mut out, &snapshot.hops, top);
    out
}

/// Every hop's figures for the `top` nodes with the most hops and the
/// `top` links with the most observations (bounded labels), and the path
/// changes.
fn hops(out: &mut String, hops: &Hops, top: usize) {
    // Node ids as the JSON records give them (integers), and what the
    // operator calls the node (--names; the id where it has no name).
    let node_labels =
        |id: &u32| format!("node=\"{id}\",node_name=\"{}\"", http::prometheus_label(&names::label(*id)));
    let mut nodes: Vec<_> = hops.nodes.iter().collect();
    nodes.sort_by(|a, b| b.1.hops.cmp(&a.1.hops).then(a.0.cmp(b.0)));
    nodes.truncate(top);
    metric_head(
        out,
        "int_collect_node_hops_total",
        "Hops of a node in INT 2.1 stacks (and its reports as a sink).",
        "counter",
    );
    for (id, node) in &nodes {
        let _ = writeln!(out, "int_collect_node_hops_total{{{}}} {}", node_labels(id), node.hops);
    }
    metric_head(
        out,
        "int_collect_hop_latency_seconds",
        "Hop latency a node wrote, in seconds, one count per reported hop.",
        "histogram",
    );
    for (id, node) in &nodes {
        histogram(out, "int_collect_hop_latency_seconds", &node_labels(id), &node.latency);
    }
    metric_head(
        out,
        "int_collect_queue_occupancy",
        "Queue occupancy a node wrote, in its own unit.",
        "summary",
    );
    for (id, node) in &nodes {
        summary(out, "int_collect_queue_occupancy", &node_labels(id), &node.queue);
    }
    let drops = "int_collect_node_drop_reports_total";
    metric_head(out, drops, "Drop reports a node sent, by reason.", "counter");
    for (id, node) in &nodes {
        for (reason, count) in &node.drops {
            let _ = writeln!(out, "{drops}{{{},reason=\"{reason}\"}} {count}", node_labels(id));
        }
    }
    let mut links: Vec<_> = hops.links.iter().collect();
    links.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then(a.0.cmp(b.0)));
    metric_head(
        out,
        "int_collect_link_latency_seconds",
        "One hop's egress to the next one's ingress.",
        "histogram",
    );
    for ((from, to), latency) in links.into_iter().take(top) {
        let labels = format!(
            "from=\"{from}\",to=\"{to}\",from_name=\"{}\",to_name=\"{}\"",
            http::prometheus_label(&names::label(*from)),
            http::prometheus_label(&names::label(*to))
        );
        histogram(out, "int_collect_link_latency_seconds", &labels, latency);
    }
    metric_head(out, "int_collect_path_changes_total", "Flows' path changes.", "counter");
    let _ = writeln!(out, "int_collect_path_changes_total {}", hops.path_changes);
    metric_head(out, "int_collect_paths", "Flows whose path is followed.", "gauge");
    let _ = writeln!(out, "int_collect_paths {}", hops.paths());
}

/// Quantiles, sum and count of one distribution.
fn summary(out: &mut String, name: &str, labels: &str, values: &Latency) {
    for (_, q) in PERCENTILES {
        if let Some(value) = values.quantile(q) {
            let _ = writeln!(out, "{name}{{{labels},quantile=\"{q}\"}} {value}");
        }
    }
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", values.sum());
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", values.count());
}

fn metric_head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    metric_head(out, name, help, "counter");
    let _ = writeln!(out, "{name} {value}");
}

pub fn gauge(out: &mut String, name: &str, help: &str, value: u64) {
    metric_head(out, name, help, "gauge");
    let _ = writeln!(out, "{name} {value}");
}

/// A counter family with an `outcome` label (an output's counts).
pub fn counter_family(
    out: &mut String,
    name: &str,
    help: &str,
    outcomes: impl IntoIterator<Item = (&'static str, u64)>,
) {
    metric_head(out, name, help, "counter");
    for (outcome, count) in outcomes {
        let _ = writeln!(out, "{name}{{outcome=\"{outcome}\"}} {count}");
    }
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

/// Buckets, sum and count of one latency distribution, in seconds
/// (Prometheus' base unit; the collector keeps ns).
fn histogram(out: &mut String, name: &str, labels: &str, latency: &Latency) {
    let comma = if labels.is_empty() { "" } else { "," };
    for bound in BUCKETS_NS {
        let count = latency.count_at_or_below(bound).unwrap_or(0).min(latency.count());
        let le = bound as f64 / 1e9;
        let _ = writeln!(out, "{name}_bucket{{{labels}{comma}le=\"{le}\"}} {count}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}{comma}le=\"+Inf\"}} {}", latency.count());
    let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
    let _ = writeln!(out, "{name}_sum{braces} {}", latency.sum() as f64 / 1e9);
    let _ = writeln!(out, "{name}_count{braces} {}", latency.count());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::ledger::{Ledger, Limits, Measure, Observed};

    fn snapshot_of(ledger: Ledger, hops: Hops) -> Snapshot {
        Snapshot {
            ledger,
            hops,
            senders: Default::default(),
            totals: Default::default(),
            joins: Default::default(),
        }
    }
    use std::net::Ipv4Addr;

    #[test]
    fn only_the_top_flows_have_labels_and_buckets_add_up() {
        let mut ledger = Ledger::new(Limits { flows: 100, detailed: 100 }, Default::default());
        for port in 1..=30u16 {
            let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, port, 9);
            for i in 0..port {
                let measure = Measure::Latency { ns: 20_000 * i64::from(i), flow_seq: None, hops: None };
                ledger.observe(&Observed { flow, source_node: None, sink_node: None, measure, at_ns: None });
            }
            let measure = Measure::Lost(u32::from(port % 7));
            ledger.observe(&Observed { flow, source_node: None, sink_node: None, measure, at_ns: None });
        }
        let hops = Hops::new(crate::collect::books::hops::Limits { nodes: 0, links: 0, flows: 0 });
        let view = snapshot_of(ledger.view(5), hops.clone());
        let snapshot = snapshot_of(ledger, hops);
        let page = page(&snapshot, &[], 5);
        // A scrape copies only the flows it shows, and shows the same.
        assert!(view.ledger.flows.len() <= 10);
        assert_eq!(super::page(&view, &[], 5), page);
        let flow_counts: Vec<&str> =
            page.lines().filter(|l| l.starts_with("int_collect_flow_latency_seconds_count")).collect();
        assert_eq!(flow_counts.len(), 5);
        assert!(
            flow_counts.iter().any(|l| l.contains("src_port=\"30\"") && l.ends_with(" 30")),
            "{flow_counts:?}"
        );
        assert_eq!(page.lines().filter(|l| l.starts_with("int_collect_flow_lost_packets_total{")).count(), 5);
        assert!(page.contains("int_collect_latency_seconds_bucket{le=\"+Inf\"} 465\n"));
        // 0, 20, ... 240 µs are at or below 250 µs: 13 values in flows of
        // 13 or more, all values in smaller ones.
        let at_250us: u64 = (1..=30u64).map(|n| n.min(13)).sum();
        assert!(
            page.contains(&format!("int_collect_latency_seconds_bucket{{le=\"0.00025\"}} {at_250us}\n")),
            "{page}"
        );
        assert!(page.contains("int_collect_flows 30\n"));
    }

    /// Nodes and links have their histograms, queues their quantiles, drops
    /// their reasons; at most `top` nodes and links are labelled.
    #[test]
    fn hops_have_bounded_labels() {
        use crate::collect::books::hops::{Limits as HopLimits, Seen};
        use int_core::int21::HopMetadata;
        let mut hops = Hops::new(HopLimits { nodes: 100, links: 100, flows: 100 });
        for node in 1..=8u32 {
            let hop = |id: u32, t: u64| HopMetadata {
                node_id: Some(id),
                hop_latency: Some(1000 * id),
                queue: Some((0, id)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + 10),
                ..HopMetadata::default()
            };
            let path = [hop(100, 0), hop(node, 100)];
            let flow =
                FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, node as u16, 9);
            for _ in 0..node {
                hops.observe(&Seen {
                    flow,
                    hops: &path,
                    sink: Some(200),
                    sink_ingress_ns: Some(500),
                    at_ms: 0,
                });
            }
        }
        hops.observe_drop(8, 71);
        let ledger = Ledger::new(Limits { flows: 1, detailed: 1 }, Default::default());
        let snapshot = snapshot_of(ledger, hops);
        let page = page(&snapshot, &[], 3);
        let counts: Vec<&str> =
            page.lines().filter(|l| l.starts_with("int_collect_hop_latency_seconds_count")).collect();
        assert_eq!(
            counts,
            [
                "int_collect_hop_latency_seconds_count{node=\"100\",node_name=\"100\"} 36",
                "int_collect_hop_latency_seconds_count{node=\"200\",node_name=\"200\"} 0",
                "int_collect_hop_latency_seconds_count{node=\"8\",node_name=\"8\"} 8",
            ]
        );
        assert!(
            page.contains("int_collect_queue_occupancy{node=\"8\",node_name=\"8\",quantile=\"0.5\"} 8"),
            "{page}"
        );
        assert!(
            page.contains("int_collect_node_drop_reports_total{node=\"8\",node_name=\"8\",reason=\"71\"} 1"),
            "{page}"
        );
        assert!(page.contains("int_collect_link_latency_seconds_count{from=\"100\",to=\"8\",from_name=\"100\",to_name=\"8\"} 8"), "{page}");
        assert_eq!(
            page.lines().filter(|l| l.starts_with("int_collect_link_latency_seconds_count")).count(),
            3
        );
        assert!(page.contains("int_collect_paths 8"), "{page}");
    }
}
