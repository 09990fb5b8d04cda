//! The collector's Prometheus `/metrics` (text exposition format 0.0.4):
//! totals, a latency histogram and packets lost over all flows; per node
//! and per link their figures (`nodes.rs`); the same for the top flows
//! only (`flows.rs`: the most reported, the most lossy). Each kind has its
//! own bound, so the label cardinality stays bounded whatever the size of
//! the network, and the page counts what it left out.

pub mod args;
mod congestion;
mod exposition;
mod flows;
mod nodes;

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use int_os::http::{self, Page};

use exposition::histogram;

use super::health::Health;
use crate::collect::books::snapshot::Snapshot;
use crate::collect::counts::{counter, metric_head, Counted};
use crate::collect::names::Naming;
use crate::collect::shared::Shared;

/// How many flows, nodes and links have series of their own
/// (`--metrics-flows`, `--metrics-nodes`, `--metrics-links`).
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub flows: usize,
    pub nodes: usize,
    pub links: usize,
}

/// Binds `addr` and serves scrapes from a thread until the collector
/// stops.
pub fn start(
    addr: SocketAddr,
    shared: Arc<Shared>,
    shown: Shown,
    health: Arc<Health>,
    names: Naming,
) -> Result<std::thread::JoinHandle<()>, std::io::Error> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    log::info!("collect: metrics on http://{local}/metrics");
    Ok(std::thread::spawn(move || {
        let serve = |path: &str| match path {
            "/metrics" => Some(Page::ok(
                "text/plain; version=0.0.4",
                page(&shared.view(shown.flows), &shared.counted(), &shown, &names),
            )),
            _ => health.page(path),
        };
        if let Err(error) = http::serve(listener, serve, &shared.quit) {
            log::error!("collect: metrics: {error}");
        }
    }))
}

/// The exposition.
pub fn page(snapshot: &Snapshot, outputs: &[Arc<dyn Counted>], shown: &Shown, names: &Naming) -> String {
    let mut out = String::new();
    totals(&mut out, snapshot);
    for output in outputs {
        output.metrics(&mut out);
    }
    metric_head(
        &mut out,
        "int_collect_latency_seconds",
        "One-way latency of every flow, in seconds, one count per latency report (sinks report a flow on a change, not every packet).",
        "histogram",
    );
    histogram(&mut out, "int_collect_latency_seconds", "", &snapshot.ledger.overall.latency);
    let flows_left_out = flows::flows(&mut out, &snapshot.ledger, shown.flows);
    let left_out = nodes::hops(&mut out, &snapshot.hops, shown.nodes, shown.links, names);
    congestion::congestion(&mut out, &snapshot.congestion, shown.nodes, names, None);
    let name = "int_collect_metrics_left_out";
    metric_head(
        &mut out,
        name,
        "Flows, nodes, sinks and links the collector follows that have no series of their own on this page (--metrics-flows, --metrics-nodes for nodes and sinks, --metrics-links).",
        "gauge",
    );
    let kinds = [
        ("flows", flows_left_out),
        ("nodes", left_out.nodes),
        ("sinks", left_out.sinks),
        ("links", left_out.links),
    ];
    for (kind, count) in kinds {
        let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {count}");
    }
    out
}

/// The totals over all flows.
fn totals(out: &mut String, snapshot: &Snapshot) {
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
        counter(out, &format!("int_collect_{name}_total"), help, value);
    }
    metric_head(out, "int_collect_flows", "Flows followed one by one.", "gauge");
    let _ = writeln!(out, "int_collect_flows {}", ledger.flows_followed());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::hops::Hops;
    use crate::collect::books::ledger::{Ledger, Limits, Measure, Observed};
    use int_core::flow::FlowKey;

    fn snapshot_of(ledger: Ledger, hops: Hops) -> Snapshot {
        Snapshot {
            ledger,
            hops,
            senders: Default::default(),
            totals: Default::default(),
            joins: Default::default(),
            congestion: Default::default(),
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
        let page = page(&snapshot, &[], &Shown { flows: 5, nodes: 5, links: 5 }, &Naming::default());
        // A scrape copies only the flows it shows, and shows the same.
        assert!(view.ledger.flows.len() <= 10);
        assert_eq!(
            super::page(&view, &[], &Shown { flows: 5, nodes: 5, links: 5 }, &Naming::default()),
            page
        );
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
        use int_core::hop::Hop;
        let mut hops = Hops::new(HopLimits { nodes: 100, links: 100, flows: 100 });
        for node in 1..=8u32 {
            let hop = |id: u32, t: u64| Hop {
                node_id: Some(id),
                hop_latency: Some(1000 * id),
                queue: Some((0, id)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + 10),
                ..Hop::default()
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
        let page = page(&snapshot, &[], &Shown { flows: 1, nodes: 3, links: 3 }, &Naming::default());
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
        // 10 nodes (8, 100 and the sink 200), 16 links: 7 and 13 left out.
        assert!(page.contains("int_collect_metrics_left_out{kind=\"nodes\"} 7\n"), "{page}");
        assert!(page.contains("int_collect_metrics_left_out{kind=\"links\"} 13\n"), "{page}");
    }

    /// 50 nodes and 65 links (40 one-hop paths to 10 sinks, 25 two-hop
    /// ones): every node and link has its series at the defaults; each
    /// kind of series costs what docs/dashboards.md says.
    #[test]
    fn a_fleet_has_every_node_and_link_at_the_defaults() {
        use crate::collect::books::hops::{Limits as HopLimits, Seen};
        use int_core::hop::Hop;
        let mut hops = Hops::new(HopLimits { nodes: 10_000, links: 50_000, flows: 1000 });
        let hop = |id: u32| Hop {
            node_id: Some(id),
            hop_latency: Some(1000),
            queue: Some((0, 1)),
            ingress_timestamp: Some(100),
            egress_timestamp: Some(110),
            ..Hop::default()
        };
        let paths =
            (0..40u32).map(|k| vec![hop(k + 1)]).chain((0..25u32).map(|k| vec![hop(k + 2), hop(k + 1)]));
        for (port, stack) in paths.enumerate() {
            let path: Vec<Hop> = stack.into_iter().rev().collect();
            let sink = 41 + path.last().and_then(|h| h.node_id).unwrap_or(0) % 10;
            let flow =
                FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, port as u16, 9);
            hops.observe(&Seen { flow, hops: &path, sink: Some(sink), sink_ingress_ns: Some(500), at_ms: 0 });
        }
        assert_eq!((hops.nodes.len(), hops.links.len()), (50, 65));
        let ledger = Ledger::new(Limits { flows: 1, detailed: 1 }, Default::default());
        let defaults = Shown { flows: 20, nodes: 1000, links: 4000 };
        let page = page(&snapshot_of(ledger, hops), &[], &defaults, &Naming::default());
        let series = |name: &str| page.lines().filter(|l| l.starts_with(name)).count();
        assert_eq!(series("int_collect_node_hops_total{"), 50);
        assert_eq!(series("int_collect_link_latency_seconds_count{"), 65);
        assert!(page.contains("int_collect_metrics_left_out{kind=\"nodes\"} 0\n"), "{page}");
        assert!(page.contains("int_collect_metrics_left_out{kind=\"links\"} 0\n"), "{page}");
        // Series per node (no drop reports), per link: docs/dashboards.md.
        let labelled =
            |label: &str| page.lines().filter(|l| !l.starts_with('#') && l.contains(label)).count();
        assert_eq!(labelled("node=\"7\""), 29);
        // A sink writes no hop of its own: no queue quantiles (4), and its 2.
        assert_eq!(labelled("node=\"41\""), 27);
        assert!(page.contains("int_collect_metrics_left_out{kind=\"sinks\"} 0\n"), "{page}");
        assert_eq!(labelled("from=\"1\",to=\"2\""), 18);
    }

    /// A flow with percentiles and loss has 23 series (docs/dashboards.md).
    #[test]
    fn a_flow_costs_its_histogram_and_its_loss() {
        let mut ledger = Ledger::new(Limits { flows: 10, detailed: 10 }, Default::default());
        let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 7, 9);
        let latency = Measure::Latency { ns: 5000, flow_seq: None, hops: None };
        for measure in [latency, Measure::Lost(2)] {
            ledger.observe(&Observed { flow, source_node: None, sink_node: None, measure, at_ns: None });
        }
        let hops = Hops::new(crate::collect::books::hops::Limits { nodes: 0, links: 0, flows: 0 });
        let page = page(
            &snapshot_of(ledger, hops),
            &[],
            &Shown { flows: 20, nodes: 0, links: 0 },
            &Naming::default(),
        );
        let series = page.lines().filter(|l| !l.starts_with('#') && l.contains("src_port=\"7\"")).count();
        assert_eq!(series, 19);
    }
}
