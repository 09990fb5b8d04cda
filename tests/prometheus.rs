//! The node's `/metrics` endpoint scraped by a real Prometheus server
//! (Debian's prometheus package), started and stopped here: the values
//! Prometheus stores are the node's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::collector::promtool_check;
use common::servers::*;
use common::*;

/// Prometheus stores what the node's page shows: per-role counters, the
/// ports' DPDK counters, the exporter's; the page passes promtool.
#[test]
fn prometheus_scrapes_the_node() {
    if !std::path::Path::new(PROMETHEUS).exists() {
        eprintln!("skipped: {PROMETHEUS} missing (apt-get install prometheus; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("prometheus");
    ten_flows_pcap(&dir);
    recorded_link(
        &dir,
        &LinkSpec { packets: 400, flows: 4, latency_us: 50, jitter_us: 100, loss: 0.0, seed: 5 },
    );
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (metrics_port, web_port) = (free_port(), free_port());
    let config = replay_source_and_sink_config(
        "int-node-prometheus",
        metrics_port,
        &collector.local_addr().unwrap().to_string(),
    );
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = spawn_node(&dir, 40);
    let prometheus = start_prometheus(&dir, &[("int", metrics_port)], web_port);
    // Until Prometheus has scraped the node at least twice (or 30 s).
    let started = Instant::now();
    let stored = |q: &str| prometheus_value(web_port, q).filter(|v| *v > 0.0);
    let (mut packets, mut port_rx, mut sent) = (None, None, None);
    while started.elapsed() < Duration::from_secs(30) {
        packets = stored("int_node_rx_packets_total{pipeline=\"src\"}");
        port_rx = stored("int_node_port_rx_packets_total{port=\"link\"}");
        sent = stored("int_node_export_reports_sent_total");
        let scrapes =
            prometheus_value(web_port, "count_over_time(int_node_rx_packets_total{pipeline=\"src\"}[1m])");
        if packets.is_some() && port_rx.is_some() && sent.is_some() && scrapes >= Some(2.0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let flows = prometheus_value(web_port, "int_node_flows_created_total{pipeline=\"src\"}");
    let page = http_get(metrics_port, "/metrics").unwrap_or_default();
    stop(prometheus);
    interrupt(&mut node);
    eprintln!(
        "Prometheus stored rx_packets {packets:?}, flows_created {flows:?}, port rx {port_rx:?}, reports sent {sent:?} after {:?}",
        started.elapsed()
    );
    assert_eq!(promtool_check(&page), "", "{page}");
    assert!(page.contains("# TYPE int_node_instrumented_total counter"), "{page}");
    assert!(page.contains("int_node_flows_created_total{pipeline=\"src\",role=\"source\"} 10"), "{page}");
    assert!(!page.contains("int_node_stripped_total{pipeline=\"src\""), "a source shows no sink counter");
    assert!(page.contains("int_node_stripped_total{pipeline=\"snk\",role=\"sink\"}"), "{page}");
    assert!(page.contains("int_node_mempool_in_use_mbufs{socket="), "{page}");
    assert!(page.contains("int_node_info{node_id=\"167772161\",node_name=\"edge-a\"} 1"), "{page}");
    assert_eq!(flows, Some(10.0));
    // What Prometheus stored is a value the node had: at most its final one.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let at_end = |v: &serde_json::Value| v.as_u64().unwrap() as f64;
    let packets = packets.expect("Prometheus stored the source's rx_packets");
    assert!(packets <= at_end(&stats["pipelines"]["src"]["rx_packets"]), "{packets}");
    let port_rx = port_rx.expect("Prometheus stored port link's ipackets");
    assert!(port_rx <= at_end(&stats["ports"]["link"]["rx_packets"]), "{port_rx}");
    let sent = sent.expect("Prometheus stored the exporter's reports sent");
    assert!(sent <= at_end(&stats["export"]["reports_sent"]), "{sent}");
}

/// The collector's `/metrics` scraped by a real Prometheus: the latency
/// histogram's count and the packets lost that Prometheus stores are the
/// collector's own totals, and each top flow has its own series.
#[test]
fn prometheus_scrapes_the_collector() {
    if !std::path::Path::new(PROMETHEUS).exists() {
        eprintln!("skipped: {PROMETHEUS} missing (apt-get install prometheus; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("prometheus-collector");
    recorded_link(
        &dir,
        &LinkSpec { packets: 2000, flows: 4, latency_us: 50, jitter_us: 100, loss: 0.02, seed: 3 },
    );
    let (metrics_port, web_port) = (free_port(), free_port());
    let metrics = format!("127.0.0.1:{metrics_port}");
    let (mut collector, listen) = common::collector::start_collector(
        &tools_bin(),
        &["--quiet", "--duration", "60", "--metrics", &metrics, "--metrics-flows", "3"],
    );
    let sink = run_reporting_sink(&dir, &listen);
    let count_in = |page: &str, name: &str| -> Option<f64> {
        let line = page.lines().find(|l| l.starts_with(&format!("{name} ")))?;
        line.rsplit(' ').next()?.parse().ok()
    };
    // Until the collector has taken every latency report the sink sent (the
    // deadline only bounds a hang).
    let sent = sink.counter("sink", "reports_latency") as f64;
    let started = Instant::now();
    let mut page = String::new();
    while started.elapsed() < Duration::from_secs(60) {
        page = http_get(metrics_port, "/metrics").unwrap_or_default();
        if count_in(&page, "int_collect_latency_seconds_count") == Some(sent) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let count_of = |name: &str| count_in(&page, name).unwrap_or_else(|| panic!("{name}: {page}"));
    let (reports, lost) =
        (count_of("int_collect_latency_seconds_count"), count_of("int_collect_lost_packets_total"));
    let prometheus = start_prometheus(&dir, &[("int", metrics_port)], web_port);
    let started = Instant::now();
    let (mut stored_reports, mut stored_lost, mut flow_series) = (None, None, None);
    while started.elapsed() < Duration::from_secs(30) {
        stored_reports = prometheus_value(web_port, "int_collect_latency_seconds_count");
        stored_lost = prometheus_value(web_port, "int_collect_lost_packets_total");
        flow_series = prometheus_value(web_port, "count(int_collect_flow_latency_seconds_count)");
        if stored_reports.is_some() && stored_lost.is_some() && flow_series.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    stop(prometheus);
    interrupt(&mut collector);
    eprintln!("the collector had {reports} latency reports and {lost} packets lost; Prometheus stored {stored_reports:?} and {stored_lost:?}");
    assert!(reports > 1000.0 && lost > 0.0, "{page}");
    assert_eq!(stored_reports, Some(reports));
    assert_eq!(stored_lost, Some(lost));
    assert_eq!(flow_series, Some(3.0), "--metrics-flows 3");
    assert!(page.contains("# TYPE int_collect_latency_seconds histogram"), "{page}");
    assert_eq!(promtool_check(&page), "", "{page}");
}

/// SIGINT, as an operator's Ctrl-C: `child` ends on it, successfully.
fn interrupt(child: &mut std::process::Child) {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
}

/// Sink `sink`'s report of the flow from UDP port `port` over `path`
/// (node ids from the source on), each hop 1 µs after the last.
fn path_report(sequence: u32, sink: u32, port: u16, path: &[u32]) -> Vec<u8> {
    let hop = |(i, node): (usize, &u32)| int_core::int21::HopMetadata {
        node_id: Some(*node),
        hop_latency: Some(500),
        queue: Some((0, 1)),
        ingress_timestamp: Some(1000 * i as u64),
        egress_timestamp: Some(1000 * i as u64 + 500),
        ..Default::default()
    };
    let mut stack: Vec<_> = path.iter().enumerate().map(hop).collect();
    stack.reverse();
    common::collector::stack_report(sequence, sink, port, &stack, 1000 * path.len() as u64)
}

/// A names file for nodes 1..=`count`: node n is `node-n`, unless `named`
/// says otherwise.
fn names_file(dir: &std::path::Path, count: u32, named: &[(u32, &str)]) -> String {
    let mut text = "nodes:\n".to_string();
    for id in 1..=count {
        let name =
            named.iter().find(|(n, _)| *n == id).map_or(format!("node-{id}"), |(_, name)| name.to_string());
        text += &format!("  {id}: {name}\n");
    }
    let path = dir.join("names.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A 50-node fleet with 65 links (40 one-hop paths from nodes 1-40 to
/// sinks 41-50, 25 two-hop ones) through collect's defaults: its page
/// has every node and link, and so has Prometheus.
#[test]
fn prometheus_holds_every_node_and_link_of_a_fleet() {
    if !std::path::Path::new(PROMETHEUS).exists() {
        eprintln!("skipped: {PROMETHEUS} missing (apt-get install prometheus; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("prometheus-fleet");
    let (metrics_port, web_port) = (free_port(), free_port());
    let metrics = format!("127.0.0.1:{metrics_port}");
    let names = names_file(&dir, 50, &[]);
    let (mut collector, listen) = common::collector::start_collect(
        &tools_bin(),
        &["--quiet", "--duration", "120", "--metrics", &metrics, "--names", &names],
    );
    let paths = (1..=40u32).map(|n| vec![n]).chain((1..=25u32).map(|n| vec![n, n + 1]));
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for (i, path) in paths.enumerate() {
        let sink = 41 + path.last().unwrap() % 10;
        sender.send_to(&path_report(i as u32 + 1, sink, i as u16 + 1, &path), &listen).unwrap();
    }
    // Until collect has every path (the deadline only bounds a hang).
    let started = Instant::now();
    let mut page = String::new();
    while started.elapsed() < Duration::from_secs(60) && !page.contains("\nint_collect_paths 65\n") {
        std::thread::sleep(Duration::from_millis(50));
        page = http_get(metrics_port, "/metrics").unwrap_or_default();
    }
    let series = |name: &str| page.lines().filter(|l| l.starts_with(name)).count();
    let (nodes, links) =
        (series("int_collect_node_hops_total{"), series("int_collect_link_latency_seconds_count{"));
    let prometheus = start_prometheus(&dir, &[("int-collect", metrics_port)], web_port);
    let count = |q: &str| prometheus_value(web_port, &format!("count({q})"));
    let (mut stored_nodes, mut stored_links) = (None, None);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        stored_nodes = count("int_collect_node_hops_total");
        stored_links = count("int_collect_link_latency_seconds_count");
        if stored_nodes.is_some() && stored_links.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let named = count("int_collect_node_hops_total{node_name=\"node-50\"}");
    stop(prometheus);
    interrupt(&mut collector);
    eprintln!("the page had {nodes} nodes and {links} links; Prometheus stored {stored_nodes:?} and {stored_links:?}");
    assert_eq!((nodes, links), (50, 65), "{page}");
    assert_eq!((stored_nodes, stored_links), (Some(50.0), Some(65.0)));
    assert_eq!(named, Some(1.0));
    assert!(page.contains("int_collect_metrics_left_out{kind=\"nodes\"} 0\n"), "{page}");
    assert_eq!(promtool_check(&page), "", "{page}");
}

/// A stand-in for a node's `/metrics` (its `int_node_info` only), served
/// on `listener` until `stop` is set; then nothing answers there.
fn node_page(
    listener: std::net::TcpListener,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let body = "# TYPE int_node_info gauge\nint_node_info{node_id=\"12\",node_name=\"edge-l\"} 1\n";
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    })
}

/// The shipped rules in a real Prometheus (`for:` cut to 0 s: promtool's
/// unit tests hold the durations) over a real collect with names: flows
/// of sink-9 rerouted from leaf-8 to leaf-4, one of them lossy, one flow
/// flapping between core-b and core-c, and a node gone: the alerts fire
/// naming the nodes and sinks, and no flap is seen in the reroute.
#[test]
fn shipped_alerts_fire_in_prometheus_naming_nodes_and_sinks() {
    if !std::path::Path::new(PROMETHEUS).exists() {
        eprintln!("skipped: {PROMETHEUS} missing (apt-get install prometheus; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("prometheus-alerts");
    let rules = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus/int-node.rules.yml"),
    )
    .unwrap();
    let rules: String = rules
        .lines()
        .map(|line| if line.trim_start().starts_with("for: ") { "        for: 0s" } else { line })
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(dir.join("rules.yml"), rules).unwrap();
    let (metrics_port, web_port) = (free_port(), free_port());
    let metrics = format!("127.0.0.1:{metrics_port}");
    let named = [(1, "edge-a"), (2, "core-b"), (3, "core-c"), (4, "leaf-4"), (8, "leaf-8"), (9, "sink-9")];
    let names = names_file(&dir, 9, &named);
    let (mut collector, listen) = common::collector::start_collect(
        &tools_bin(),
        &["--quiet", "--duration", "300", "--metrics", &metrics, "--names", &names],
    );
    let node = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let node_port = node.local_addr().unwrap().port();
    let stop_node = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let node_thread = node_page(node, stop_node.clone());
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sequence = 0;
    // Each datagram numbered after the last.
    let mut send = |datagram: &dyn Fn(u32) -> Vec<u8>| {
        sequence += 1;
        sender.send_to(&datagram(sequence), &listen).unwrap();
    };
    // Before: ports 1-10 over leaf-8, 11 over leaf-4, 20 over core-b, 21
    // over core-c; every node's series at 0 in Prometheus.
    for port in 1..=10 {
        send(&|n| path_report(n, 9, port, &[1, 8]));
    }
    send(&|n| path_report(n, 9, 11, &[1, 4]));
    send(&|n| path_report(n, 9, 20, &[1, 2]));
    send(&|n| path_report(n, 9, 21, &[1, 3]));
    let jobs = [("int-collect", metrics_port), ("int-node", node_port)];
    let prometheus = start_prometheus_alerting(&dir, &jobs, web_port, "rules.yml");
    let at_zero =
        "count(int_collect_node_path_changes_total{node_name=~\"leaf-8|leaf-4|core-b|core-c\"} == 0)";
    let up = "count(int_node_info) + count(int_collect_node_path_flaps_total{node_name=\"core-c\"} == 0)";
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60)
        && (prometheus_value(web_port, at_zero) != Some(8.0) || prometheus_value(web_port, up) != Some(2.0))
    {
        std::thread::sleep(Duration::from_millis(250));
    }
    // After: ports 1-10 over leaf-4, port 1 losing 30 packets; port 20
    // over core-c, core-b, core-c; the node's page gone.
    for port in 1..=10 {
        send(&|n| path_report(n, 9, port, &[1, 4]));
    }
    send(&|n| common::collector::loss_report(n, 9, 1, 30));
    for middle in [3, 2, 3] {
        send(&|n| path_report(n, 9, 20, &[1, middle]));
    }
    stop_node.store(true, std::sync::atomic::Ordering::Relaxed);
    node_thread.join().unwrap();
    // Until every expected alert fires (the deadline only bounds a failure).
    let expected: [(&str, &[(&str, &str)]); 9] = [
        ("IntReroute", &[("node_name", "leaf-8"), ("change", "left")]),
        ("IntReroute", &[("node_name", "leaf-4"), ("change", "joined")]),
        ("IntSinkReroute", &[("node_name", "sink-9")]),
        ("IntPacketLoss", &[("node_name", "sink-9")]),
        ("IntLossOnPath", &[("node_name", "leaf-4")]),
        ("IntLossOnPath", &[("node_name", "edge-a")]),
        ("IntRouteFlapping", &[("node_name", "core-b")]),
        ("IntRouteFlapping", &[("node_name", "core-c")]),
        ("IntNodeDown", &[("node_name", "edge-l"), ("node_id", "12")]),
    ];
    let find = |alerts: &[serde_json::Value], (name, labels): &(&str, &[(&str, &str)])| {
        alerts
            .iter()
            .find(|a| a["labels"]["alertname"] == *name && labels.iter().all(|(k, v)| a["labels"][*k] == *v))
            .cloned()
    };
    let started = Instant::now();
    let mut firing = Vec::new();
    while started.elapsed() < Duration::from_secs(120) {
        firing = prometheus_firing(web_port);
        if expected.iter().all(|e| find(&firing, e).is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    stop(prometheus);
    interrupt(&mut collector);
    eprintln!("firing after {:?}: {}", started.elapsed(), serde_json::to_string_pretty(&firing).unwrap());
    let said = |e| {
        let alert = find(&firing, e).unwrap_or_else(|| panic!("{e:?} not firing: {firing:#?}"));
        format!("{} | {}", alert["annotations"]["summary"], alert["annotations"]["description"])
    };
    let summaries: Vec<String> = expected.iter().map(said).collect();
    assert!(summaries[0].contains("Reroute at node leaf-8: 10 flows left it"), "{}", summaries[0]);
    assert!(summaries[1].contains("Reroute at node leaf-4: 10 flows joined it"), "{}", summaries[1]);
    // The ten rerouted flows and the flapping one's three changes.
    assert!(summaries[2].contains("sink sink-9: 13 of its flows changed path"), "{}", summaries[2]);
    assert!(summaries[3].contains("Sink sink-9: "), "{}", summaries[3]);
    assert!(summaries[4].contains("node leaf-4 (4)"), "{}", summaries[4]);
    assert!(summaries[6].contains("Routes flap at node core-b: 1 flaps"), "{}", summaries[6]);
    assert!(summaries[8].contains("int-node edge-l (127.0.0.1:"), "{}", summaries[8]);
    // A one-off reroute is no flap.
    let flapping: Vec<_> = firing.iter().filter(|a| a["labels"]["alertname"] == "IntRouteFlapping").collect();
    assert_eq!(flapping.len(), 2, "{flapping:#?}");
}
