//! The collector's views of a real sink's reports: latency percentiles
//! that agree with the reports it printed, a plot, and every observation
//! written to a real InfluxDB server (Debian's influxdb package, 1.x)
//! started and stopped here, then read back with its query language.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::collector::{start_collect, start_collector, switch_reports};
use common::servers::*;
use common::*;

/// A recorded link: 3 UDP flows, one-way latency 100 µs plus up to 400 µs
/// of jitter, 1% of INT packets lost.
fn jittery_link(dir: &Path, packets: usize) {
    recorded_link(dir, &LinkSpec { packets, flows: 3, latency_us: 100, jitter_us: 400, loss: 0.01, seed: 5 });
}

/// Stops the collector as an operator would (SIGINT), once the sink has
/// exited: every report it sent is in the collector's sockets by then
/// (loopback delivers as it sends), and a stop reads what they hold.
fn stop(child: &Child) {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
}

/// Reads the collector's output as it comes (a full pipe would hold it
/// up); `lines_of` gets it once the collector ended.
fn read_output(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    })
}

/// The collector's JSON lines, the summary last.
fn lines_of(mut child: Child, output: std::thread::JoinHandle<String>) -> Vec<serde_json::Value> {
    assert!(child.wait().unwrap().success());
    output.join().unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The `q` quantile of sorted values: the smallest value that `q` of
/// them are at or below.
fn exact_quantile(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The summary's percentiles, over all flows and per flow, are those of
/// the latency reports the collector printed, to the histograms'
/// resolution (0.1% over all flows, 1% per flow); the spread is the
/// link's; the plot is a PNG of the size drawn.
#[test]
fn percentiles_agree_with_the_reports_and_a_plot_is_drawn() {
    let dir = workdir("collector-percentiles");
    jittery_link(&dir, 6000);
    let plot = dir.join("latency.png");
    let (mut child, listen) = start_collector(
        &tools_bin(),
        &["--duration", "30", "--plot", plot.to_str().unwrap(), "--sockets", "2"],
    );
    let output = read_output(&mut child);
    run_reporting_sink(&dir, &listen);
    stop(&child);
    let lines = lines_of(child, output);
    let summary = &lines.last().unwrap()["summary"];
    let mut all: Vec<i64> = Vec::new();
    let mut by_port: std::collections::BTreeMap<u64, Vec<i64>> = Default::default();
    for line in lines.iter().filter(|l| l["type"] == "latency") {
        let ns = line["latency_ns"].as_i64().unwrap();
        all.push(ns);
        by_port.entry(line["flow"]["src_port"].as_u64().unwrap()).or_default().push(ns);
    }
    assert!(all.len() > 3000, "a report for most packets: {}", all.len());
    all.sort_unstable();
    let overall = &summary["all_flows"];
    assert_eq!(overall["latency_reports"], all.len());
    for (name, q, digits) in [("p50", 0.5, 3), ("p90", 0.9, 3), ("p99", 0.99, 3), ("p99_9", 0.999, 3)] {
        let (got, want) = (overall[format!("latency_{name}_ns")].as_i64().unwrap(), exact_quantile(&all, q));
        assert!(
            (got - want).abs() as f64 <= want as f64 * 10f64.powi(-digits) * 1.01,
            "{name}: {got} vs {want}"
        );
    }
    // The link's spread: uniform from 100 to 500 µs.
    let p50 = overall["latency_p50_ns"].as_f64().unwrap();
    assert!((280_000.0..320_000.0).contains(&p50), "{p50}");
    assert_eq!(summary["flows"].as_array().unwrap().len(), 3);
    for flow in summary["flows"].as_array().unwrap() {
        let mut values = by_port[&flow["flow"]["src_port"].as_u64().unwrap()].clone();
        values.sort_unstable();
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            let (got, want) =
                (flow[format!("latency_{name}_ns")].as_i64().unwrap(), exact_quantile(&values, q));
            assert!((got - want).abs() as f64 <= want as f64 * 0.0101, "{name}: {got} vs {want}");
        }
        assert_eq!(flow["latency_min_ns"], values[0]);
        assert_eq!(flow["latency_max_ns"], *values.last().unwrap());
    }
    let lost: u64 = lines
        .iter()
        .filter(|l| l["type"] == "drop-summary")
        .map(|l| l["lost_packets"].as_u64().unwrap())
        .sum();
    assert!(lost > 0);
    assert_eq!(overall["lost_packets"], lost);
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let (width, height) = (
        u32::from_be_bytes(png[16..20].try_into().unwrap()),
        u32::from_be_bytes(png[20..24].try_into().unwrap()),
    );
    // Latency over time and the lossy flows' bars (no hops, no links).
    assert_eq!((width, height), (1200, 500 + 110 + 34 * 3));
}

/// Every hop's story in InfluxDB: switches' TR 2.0 reports give a point
/// per hop (node, hop latency, queue), per link and per path change; read
/// back from a real influxd, they hold what the collector's summary says.
#[test]
fn collector_writes_every_hop_to_a_real_influxdb() {
    if !Path::new(INFLUXD).exists() {
        eprintln!("skipped: {INFLUXD} missing (apt-get install influxdb; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("collector-influx-hops");
    let port = free_port();
    let mut influxd = start_influxd(&dir, port, false);
    let (status, text) = http(port, "POST", "/query", "q=CREATE+DATABASE+int").unwrap();
    assert_eq!(status, 200, "{text}");
    let url = format!("http://127.0.0.1:{port}");
    // It ends once it has every report and has written them.
    let datagrams = switch_reports();
    let count = datagrams.len().to_string();
    // Names from --names tag the points beside the ids (node 3 has none).
    let names = dir.join("names.yaml");
    std::fs::write(&names, "nodes:\n  1: edge-a\n  0.0.0.2: {name: core b}\n  4: edge-d\n  9: sink-z\n")
        .unwrap();
    let names = names.to_str().unwrap();
    let (mut child, listen) = start_collector(
        &tools_bin(),
        &["--count", &count, "--duration", "120", "--influx", &url, "--quiet", "--names", names],
    );
    let output = read_output(&mut child);
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let summary = lines_of(child, output).last().unwrap()["summary"].clone();
    let hop_max = influx_query(port, "SELECT max(hop_latency) FROM int_hop WHERE node_name = 'core b'");
    let queue_max = influx_query(port, "SELECT max(queue_occupancy) FROM int_hop WHERE node = '2'");
    let hops = influx_query(port, "SELECT count(hop_latency) FROM int_hop");
    let links = influx_query(
        port,
        "SELECT count(latency_ns) FROM int_link WHERE \"from_name\" = 'edge-a' AND \"to\" = '4'",
    );
    let changes = influx_query(port, "SELECT new_path FROM int_path_change");
    let _ = influxd.kill();
    let _ = influxd.wait();
    assert_eq!(summary["influx"]["dropped"], 0, "{summary}");
    assert_eq!(hop_max[0][1], 90_000, "{hop_max}");
    assert_eq!(queue_max[0][1], 950, "{queue_max}");
    assert_eq!(hops[0][1], 60 * 3, "three hops a report");
    assert_eq!(links[0][1], 10, "{links}");
    assert_eq!(changes.as_array().unwrap().len(), 1, "{changes}");
    assert_eq!(changes[0][1], "edge-a>edge-d>3>sink-z");
    let named: Vec<_> = summary["nodes"].as_array().unwrap().iter().map(|n| n["node_name"].clone()).collect();
    assert!(
        named.contains(&serde_json::json!("core b")) && named.contains(&serde_json::Value::Null),
        "{summary}"
    );
}

/// Every latency and loss observation the collector counted is a point in
/// InfluxDB, tagged with its flow and nodes; the sums agree.
#[test]
fn collector_writes_every_observation_to_a_real_influxdb() {
    if !Path::new(INFLUXD).exists() {
        eprintln!("skipped: {INFLUXD} missing (apt-get install influxdb; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("collector-influx");
    jittery_link(&dir, 3000);
    let port = free_port();
    let mut influxd = start_influxd(&dir, port, false);
    let (status, text) = http(port, "POST", "/query", "q=CREATE+DATABASE+int").unwrap();
    assert_eq!(status, 200, "{text}");
    let url = format!("http://127.0.0.1:{port}");
    let (mut child, listen) =
        start_collector(&tools_bin(), &["--duration", "30", "--influx", &url, "--quiet"]);
    let output = read_output(&mut child);
    run_reporting_sink(&dir, &listen);
    stop(&child);
    let summary = lines_of(child, output).last().unwrap()["summary"].clone();
    let latency_count = influx_query(port, "SELECT count(latency_ns) FROM int_latency");
    let latency_sum = influx_query(port, "SELECT sum(latency_ns) FROM int_latency");
    let lost = influx_query(port, "SELECT sum(lost) FROM int_loss");
    let loss_count = influx_query(port, "SELECT count(lost) FROM int_loss");
    let ports = influx_query(port, "SHOW TAG VALUES FROM int_latency WITH KEY = src_port");
    let nodes = influx_query(port, "SHOW TAG VALUES FROM int_latency WITH KEY = sink_node");
    let _ = influxd.kill();
    let _ = influxd.wait();
    let overall = &summary["all_flows"];
    let reports = overall["latency_reports"].as_u64().unwrap();
    assert!(reports > 1000, "{summary}");
    let loss_points = loss_count[0][1].as_u64().unwrap();
    assert_eq!(summary["influx"]["written"].as_u64().unwrap(), reports + loss_points, "{summary}");
    assert_eq!(summary["influx"]["dropped"], 0);
    assert_eq!(latency_count[0][1], reports, "{latency_count}");
    let mean = overall["latency_avg_ns"].as_i64().unwrap();
    let stored_mean = latency_sum[0][1].as_i64().unwrap() / reports as i64;
    assert!((stored_mean - mean).abs() <= 1, "{stored_mean} vs {mean}");
    assert_eq!(lost[0][1], overall["lost_packets"], "{lost}");
    assert_eq!(ports.as_array().unwrap().len(), 3, "{ports}");
    assert_eq!(nodes[0][1], (0x0a00_0002u32).to_string(), "{nodes}");
}

/// An InfluxDB with authentication on: collect writes with the user and
/// password it is given (the password from a file), and every point is
/// there; without them, the server refuses each write (HTTP 401) and the
/// summary counts every point failed, none written.
#[test]
fn collector_writes_to_an_influxdb_with_authentication() {
    if !Path::new(INFLUXD).exists() {
        eprintln!("skipped: {INFLUXD} missing (apt-get install influxdb; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("collector-influx-auth");
    let port = free_port();
    let mut influxd = start_influxd(&dir, port, true);
    // The first user may be made without one; then every request needs it.
    let admin = "q=CREATE+USER+admin+WITH+PASSWORD+%27s3cret%27+WITH+ALL+PRIVILEGES";
    assert_eq!(http(port, "POST", "/query", admin).unwrap().0, 200);
    assert_eq!(http(port, "POST", "/query", "q=CREATE+DATABASE+int").unwrap().0, 401);
    // Credentials in the URL: influxd reads them there, not in the form.
    let as_admin = "/query?u=admin&p=s3cret";
    assert_eq!(http(port, "POST", as_admin, "q=CREATE+DATABASE+int").unwrap().0, 200);
    std::fs::write(dir.join("password"), "s3cret\n").unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let datagrams = switch_reports();
    let collect = |credentials: &[&str]| {
        let count = datagrams.len().to_string();
        let args = [&["--count", &count, "--duration", "120", "--influx", &url, "--quiet"][..], credentials]
            .concat();
        let (mut child, listen) = start_collector(&tools_bin(), &args);
        let output = read_output(&mut child);
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for datagram in &datagrams {
            sender.send_to(datagram, &listen).unwrap();
        }
        lines_of(child, output).last().unwrap()["summary"]["influx"].clone()
    };
    let password = dir.join("password");
    let with = collect(&["--influx-user", "admin", "--influx-password-file", password.to_str().unwrap()]);
    let without = collect(&[]);
    let (status, text) =
        http(port, "POST", as_admin, "db=int&q=SELECT+count(hop_latency)+FROM+int_hop").unwrap();
    let _ = influxd.kill();
    let _ = influxd.wait();
    assert_eq!(status, 200, "{text}");
    let written = with["written"].as_u64().unwrap();
    assert!(written > 0 && with["failed"] == 0, "{with}");
    assert!(text.contains(",180]"), "three hops in each of 60 reports: {text}");
    assert_eq!(
        (without["written"].as_u64(), without["failed"].as_u64()),
        (Some(0), Some(written)),
        "{without}"
    );
}

/// What an operator captures on the node's host: `tcpdump -i any` (Linux
/// cooked v2) of a real sink's reports, which leave as UDP GSO messages
/// (several reports in one datagram until loopback cuts them), decodes
/// to the very reports collect received, one record each.
#[test]
fn decode_reads_a_tcpdump_any_capture_of_the_nodes_reports() {
    let dir = workdir("collector-tcpdump-any");
    jittery_link(&dir, 3000);
    let (mut child, listen) = start_collector(&tools_bin(), &["--duration", "60"]);
    let output = read_output(&mut child);
    let port = listen.rsplit(':').next().unwrap();
    let mut tcpdump = Tcpdump(
        Command::new("tcpdump")
            .args(["-i", "any", "-Q", "in", "-U", "-w", "reports.pcap", "udp", "dst", "port", port])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut said = std::io::BufReader::new(tcpdump.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on any") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut said, &mut line).unwrap() > 0, "tcpdump ended");
    }
    assert!(line.contains("LINUX_SLL2"), "{line}");
    let sink = run_reporting_sink(&dir, &listen);
    stop(&child);
    let collected: Vec<u64> = lines_of(child, output)
        .iter()
        .filter(|l| l["type"].is_string())
        .map(|l| l["report_seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        Some(collected.len() as u64),
        sink.stats["export"]["reports_sent"].as_u64(),
        "{}",
        sink.stdout()
    );
    // Until tcpdump has written every report (it writes each as it comes).
    let started = Instant::now();
    let mut decoded = Vec::new();
    while decoded.len() < collected.len() && started.elapsed() < Duration::from_secs(60) {
        let run = Command::new(tools_bin())
            .args(["decode", "--json", "--report-port", port, "reports.pcap"])
            .current_dir(&dir)
            .output();
        let text = String::from_utf8(run.unwrap().stdout).unwrap();
        decoded = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).collect();
    }
    drop(tcpdump);
    let seqs: Vec<u64> = decoded.iter().map(|d| d["report"]["report_seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, collected, "decode's reports are collect's, in order");
    let segmented = decoded.iter().filter(|d| d["segments"].as_u64() > Some(1)).count();
    assert!(segmented > 0, "some reports came in GSO messages: {}", decoded[0]);
}

/// A capture that ends with the test, passed or not.
struct Tcpdump(Child);

impl Drop for Tcpdump {
    fn drop(&mut self) {
        Command::new("kill").args(["-INT", &self.0.id().to_string()]).status().unwrap();
        self.0.wait().unwrap();
    }
}

/// The names file of the switches' reports: node 3 has no name.
const NAMES: &str = "nodes:\n  1: edge-a\n  0.0.0.2: {name: core b}\n  4: edge-d\n  9: sink-z\n";

/// `collect --names`: every output shows what the operator calls a node
/// beside its id. JSON records (`*_name`, `*_path_names`), the summary's
/// nodes and links, the text lines and the Prometheus labels; a node
/// without a name keeps its number (issue 45: "node 167772161" everywhere).
#[test]
fn names_in_every_output() {
    let dir = workdir("collector-names");
    let names = dir.join("names.yaml");
    std::fs::write(&names, NAMES).unwrap();
    let names = names.to_str().unwrap();
    let datagrams = switch_reports();
    let count = datagrams.len().to_string();
    let send = |listen: &str| {
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for datagram in &datagrams {
            sender.send_to(datagram, listen).unwrap();
        }
    };
    // JSON: records and summary.
    let metrics_port = free_port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let plot = dir.join("hops.png");
    let plot_arg = plot.to_str().unwrap();
    let (mut child, listen) = start_collector(
        &tools_bin(),
        &[
            "--duration",
            "120",
            "--names",
            names,
            "--metrics",
            &metrics,
            "--plot",
            plot_arg,
            "--plot-interval",
            "1",
        ],
    );
    let output = read_output(&mut child);
    send(&listen);
    // The page, once it counts every datagram (a state; the duration only
    // bounds a hang), then the end.
    let every = format!("int_collect_reports_total {count}\n");
    let page = loop {
        let page = http(metrics_port, "GET", "/metrics", "").map(|(_, body)| body).unwrap_or_default();
        if page.contains(&every) || child.try_wait().unwrap().is_some() {
            break page;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let lines = lines_of(child, output);
    let change = lines.iter().find(|l| l["type"] == "path-change").expect("a path change record");
    assert_eq!(change["new_path_names"], serde_json::json!(["edge-a", "edge-d", "3", "sink-z"]), "{change}");
    assert_eq!(change["report_node_name"], "sink-z", "{change}");
    let report = lines.iter().find(|l| l["type"] == "tr20").expect("a report record");
    assert_eq!(report["hop_metadata"][1]["node_id_name"], "core b", "{report}");
    assert_eq!(report["path_names"], serde_json::json!(["edge-a", "core b", "3", "sink-z"]), "{report}");
    let summary = &lines.last().unwrap()["summary"];
    let node =
        |id: u64| summary["nodes"].as_array().unwrap().iter().find(|n| n["node"] == id).unwrap().clone();
    assert_eq!(
        (node(2)["node_name"].clone(), node(3)["node_name"].clone()),
        ("core b".into(), serde_json::Value::Null)
    );
    // Small ids are no IPv4 addresses ("0.0.0.2"): IOAM's 24-bit ids are ids.
    assert_eq!(node(2)["node_ip"], serde_json::Value::Null);
    let link = summary["links"].as_array().unwrap().iter().find(|l| l["from"] == 1 && l["to"] == 4).unwrap();
    assert_eq!((link["from_name"].as_str(), link["to_name"].as_str()), (Some("edge-a"), Some("edge-d")));
    assert!(page.contains("int_collect_node_hops_total{node=\"2\",node_name=\"core b\"}"), "{page}");
    assert!(page.contains("node=\"3\",node_name=\"3\""), "{page}");
    assert!(page.contains("from=\"1\",to=\"4\",from_name=\"edge-a\",to_name=\"edge-d\""), "{page}");
    // The plot: latency, hop latency by node name, and a bar pair for each
    // of the 5 links (no loss panel: none was lost).
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!(height, 500 + 500 + 110 + 34 * 10 + 10);
    // Text: names before ids.
    let (mut child, listen) = start_collect(&tools_bin(), &["--count", &count, "--names", names]);
    let output = read_output(&mut child);
    send(&listen);
    assert!(child.wait().unwrap().success());
    let text = output.join().unwrap();
    assert!(text.contains("Path change: Flow:"), "{text}");
    assert!(text.contains("edge-a (1) > edge-d (4) > 3 > sink-z (9)"), "{text}");
    assert!(text.contains("node core b (2):"), "{text}");
    assert!(text.contains("link edge-a > edge-d:"), "{text}");
}

/// A names file with a mistake is refused at start, naming the entry.
#[test]
fn a_bad_names_file_is_refused_at_its_entry() {
    let dir = workdir("collector-bad-names");
    let names = dir.join("names.yaml");
    std::fs::write(&names, "nodes:\n  1: edge-a\n  10.0.0.300: nowhere\n").unwrap();
    let output = Command::new(tools_bin())
        .args(["collect", "--listen", "127.0.0.1:0", "--names", names.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("nodes.10.0.0.300"), "{stderr}");
}
