//! A Prometheus `/metrics` endpoint (text exposition format 0.0.4) in
//! Prometheus' conventions: each pipeline's counters for its role only,
//! labelled by pipeline and role, reasons and kinds as labels
//! ([`families`]), times in seconds; then the ports' DPDK counters
//! (`rte_eth_stats`), the exporter's and the mbuf pools'. Served by a
//! helper thread from what the workers publish; the packet path never
//! waits on it.

pub mod families;

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use int_os::http::{self, Page};

use crate::config::RoleName;
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port::{stats_of, PortId};
use crate::pipeline::export::SharedExportStats;
use crate::stats::SharedCounters;
use families::{Family, Unit};

/// The text exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// What the page shows.
pub struct Sources {
    /// Each pipeline's name, role and counters.
    pub pipelines: Vec<(String, RoleName, Arc<SharedCounters>)>,
    pub ports: Vec<(String, PortId)>,
    /// Each mbuf pool, by NUMA socket.
    pub pools: Vec<(i32, Arc<Mempool>)>,
    pub export: Option<Arc<SharedExportStats>>,
    /// When the node started, in seconds since the epoch.
    pub start_time: f64,
    /// The node's id, and what the operator calls it.
    pub node: (u32, Option<String>),
}

/// Binds `addr`; the returned closure serves scrapes until `quit`.
pub fn endpoint(
    addr: SocketAddr,
    sources: Sources,
    quit: Arc<AtomicBool>,
) -> std::io::Result<impl FnOnce() + Send + 'static> {
    let listener = TcpListener::bind(addr)?;
    log::info!("metrics: http://{}/metrics", listener.local_addr()?);
    Ok(move || {
        let serve = |path: &str| (path == "/metrics").then(|| Page::ok(CONTENT_TYPE, page(&sources)));
        if let Err(error) = http::serve(listener, serve, &quit) {
            log::warn!("metrics: {error}");
        }
    })
}

/// The exposition: each family's HELP and TYPE, then its samples.
pub fn page(sources: &Sources) -> String {
    let mut out = String::new();
    pipelines(&mut out, &sources.pipelines);
    ports(&mut out, &sources.ports);
    export(&mut out, sources.export.as_deref());
    pools(&mut out, &sources.pools);
    head(
        &mut out,
        "int_node_start_time_seconds",
        "gauge",
        "When the node started, in seconds since the epoch.",
    );
    let _ = writeln!(out, "int_node_start_time_seconds {}", sources.start_time);
    head(
        &mut out,
        "int_node_info",
        "gauge",
        "The node's id and name (node_name in its config; the id where it has none).",
    );
    let (id, name) = &sources.node;
    let name = http::prometheus_label(&name.clone().unwrap_or_else(|| id.to_string()));
    let _ = writeln!(out, "int_node_info{{node_id=\"{id}\",node_name=\"{name}\"}} 1");
    let name = "int_node_packet_path_allocations_total";
    head(&mut out, name, "counter", "Heap allocations on the packet path (0 by design).");
    let _ = writeln!(out, "{name} {}", int_os::alloc::packet_path_allocations());
    out
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Every family some pipeline's role counts, with a sample per member for
/// each pipeline of a role that counts it.
fn pipelines(out: &mut String, pipelines: &[(String, RoleName, Arc<SharedCounters>)]) {
    for family in families::FAMILIES {
        let counted = |role: RoleName| family.members.iter().any(|m| m.2.contains(&role));
        if !pipelines.iter().any(|(_, role, _)| counted(*role)) {
            continue;
        }
        let name = metric_name(family);
        head(out, &name, if family.unit == Unit::Count { "counter" } else { "gauge" }, family.help);
        for (pipeline, role, counters) in pipelines {
            for member in family.members.iter().filter(|m| m.2.contains(role)) {
                let value = counters.get(member.0);
                let labels = labels(pipeline, *role, family.label, member.1);
                match family.unit {
                    Unit::Count => {
                        let _ = writeln!(out, "{name}{{{labels}}} {value}");
                    }
                    Unit::Seconds if value != 0 => {
                        let _ = writeln!(out, "{name}{{{labels}}} {}", value as f64 / 1e9);
                    }
                    Unit::Seconds => {}
                }
            }
        }
    }
}

pub fn metric_name(family: &Family) -> String {
    match family.unit {
        Unit::Count => format!("int_node_{}_total", family.name),
        Unit::Seconds => format!("int_node_{}_seconds", family.name),
    }
}

fn labels(pipeline: &str, role: RoleName, label: &str, value: &str) -> String {
    let mut labels = format!("pipeline=\"{}\",role=\"{role}\"", http::prometheus_label(pipeline));
    if !label.is_empty() {
        let _ = write!(labels, ",{label}=\"{value}\"");
    }
    labels
}

/// The ports' `rte_eth_stats`, read now.
fn ports(out: &mut String, ports: &[(String, PortId)]) {
    if ports.is_empty() {
        return;
    }
    let stats: Vec<_> =
        ports.iter().map(|(name, id)| (http::prometheus_label(name), stats_of(*id))).collect();
    type Field = fn(&crate::dpdk::port::PortStats) -> u64;
    let figures: [(&str, &str, Field); 8] = [
        ("rx_packets", "Packets the port received (rte_eth_stats ipackets).", |s| s.rx_packets),
        ("tx_packets", "Packets the port sent (opackets).", |s| s.tx_packets),
        ("rx_bytes", "Bytes the port received (ibytes).", |s| s.rx_bytes),
        ("tx_bytes", "Bytes the port sent (obytes).", |s| s.tx_bytes),
        (
            "rx_missed",
            "Packets the NIC dropped for want of RX descriptors: the pipelines were too slow (imissed).",
            |s| s.rx_missed,
        ),
        ("rx_errors", "Erroneous packets the port received (ierrors).", |s| s.rx_errors),
        ("tx_errors", "Packets the port failed to send (oerrors).", |s| s.tx_errors),
        ("rx_nombuf", "RX mbuf allocation failures: the pool ran dry (rx_nombuf).", |s| s.rx_nombuf),
    ];
    for (figure, help, field) in figures {
        let name = format!("int_node_port_{figure}_total");
        head(out, &name, "counter", help);
        for (port, s) in &stats {
            let _ = writeln!(out, "{name}{{port=\"{port}\"}} {}", field(s));
        }
    }
}

fn export(out: &mut String, export: Option<&SharedExportStats>) {
    let Some(export) = export else { return };
    let name = "int_node_export_reports_sent_total";
    head(out, name, "counter", "Telemetry reports the exporter sent to the collector.");
    let _ = writeln!(out, "{name} {}", export.reports_sent.load(Ordering::Relaxed));
    let name = "int_node_export_send_errors_total";
    head(out, name, "counter", "Report datagrams the exporter failed to send.");
    let _ = writeln!(out, "{name} {}", export.send_errors.load(Ordering::Relaxed));
}

fn pools(out: &mut String, pools: &[(i32, Arc<Mempool>)]) {
    let name = "int_node_mempool_mbufs";
    head(out, name, "gauge", "Mbufs in each pool (NUMA socket).");
    for (socket, pool) in pools {
        let _ = writeln!(out, "{name}{{socket=\"{socket}\"}} {}", pool.size());
    }
    let name = "int_node_mempool_in_use_mbufs";
    head(out, name, "gauge", "Mbufs out of each pool: in RX and TX rings, in bursts, in the delay line.");
    for (socket, pool) in pools {
        let _ = writeln!(out, "{name}{{socket=\"{socket}\"}} {}", pool.in_use());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Counter;

    fn sources(pipelines: Vec<(String, RoleName, Arc<SharedCounters>)>) -> Sources {
        Sources {
            pipelines,
            ports: Vec::new(),
            pools: Vec::new(),
            export: None,
            start_time: 1.5e9,
            node: (7, Some("edge \"a\"".into())),
        }
    }

    #[test]
    fn page_has_a_sample_per_pipeline_and_escaped_labels() {
        let a = Arc::new(SharedCounters::default());
        let page = page(&sources(vec![
            ("src".to_string(), RoleName::Source, Arc::clone(&a)),
            ("we\"ird\\".to_string(), RoleName::Source, a),
        ]));
        assert!(page.contains("# TYPE int_node_rx_packets_total counter\n"));
        assert!(page.contains("int_node_rx_packets_total{pipeline=\"src\",role=\"source\"} 0\n"));
        assert!(page.contains("int_node_rx_packets_total{pipeline=\"we\\\"ird\\\\\",role=\"source\"} 0\n"));
        assert!(!page.contains("int_node_stripped_total"), "a source has no sink counter");
        assert!(page.contains("int_node_info{node_id=\"7\",node_name=\"edge \\\"a\\\"\"} 1\n"), "{page}");
    }

    /// Reasons are labels of one family; times are seconds, absent while 0.
    #[test]
    fn reasons_are_labels_and_times_are_seconds() {
        let counters = SharedCounters::default();
        let mut own = crate::stats::Counters::default();
        own.add(Counter::malformed_int_bad_length, 3);
        own.set(Counter::latency_max_ns, 1_500_000);
        own.publish(&counters);
        let page = page(&sources(vec![("snk".to_string(), RoleName::Sink, Arc::new(counters))]));
        assert!(page.contains(
            "int_node_malformed_packets_total{pipeline=\"snk\",role=\"sink\",reason=\"int_bad_length\"} 3\n"
        ));
        assert!(
            page.contains("int_node_latency_max_seconds{pipeline=\"snk\",role=\"sink\"} 0.0015\n"),
            "{page}"
        );
        assert!(page.contains("# TYPE int_node_latency_min_seconds gauge\n"));
        assert!(!page.contains("int_node_latency_min_seconds{"), "no latency yet: no sample");
        assert!(!page.contains("_ns"), "{page}");
    }
}
