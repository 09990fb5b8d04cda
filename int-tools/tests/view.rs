//! collect's live web view (`--http`) in a real browser: headless Chromium
//! driven by selenium (tests/view/browser.py) loads the view of a collect
//! fed Telemetry Report 2.0 reports of a multi-hop INT 2.1 path, and finds
//! every node, the link latencies of collect's own JSON summary, the path
//! change in the events and in the flow's drill-down, and a node that
//! stops reporting shown stale. Screenshots of each page go to
//! `INT_VIEW_SHOTS` (docs/view to refresh the docs' ones), else to a
//! folder under target/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use collector::{path_report, stack_report, summary_of, switch_reports};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// collect with `args` on free loopback ports; returns it, where it
/// listens for reports and where its view is.
fn start_collect_with_view(args: &[&str]) -> (Child, String, String) {
    start_collect_serving(&[&["--http", "127.0.0.1:0"], args].concat(), "view on http://")
}

/// collect with `args`, one of them a server (`--http` or `--metrics`) on a
/// free port that collect names after `says`; returns it, where it listens
/// for reports and where the server is.
fn start_collect_serving(args: &[&str], says: &str) -> (Child, String, String) {
    let (child, mut said) = collector::start_collect_saying(Path::new(BIN), args, &["listening on ", says]);
    let server = said.pop().unwrap();
    (child, said.pop().unwrap(), server)
}

/// GET `path` of the view: its JSON.
fn get(view: &str, path: &str) -> serde_json::Value {
    let body = collector::http_get(view, path);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// Waits for the view to have booked `reports` datagrams.
fn wait_for_reports(view: &str, reports: u64) {
    while get(view, "/api/overview")["reports"].as_u64() < Some(reports) {
        std::thread::yield_now();
    }
}

fn shots_dir() -> PathBuf {
    collector::shots_dir(
        env!("CARGO_MANIFEST_DIR"),
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("view-shots"),
    )
}

/// The reports of flows 2 and 3 (over nodes 1 > 2 > 3 > 9) again and
/// again, from another socket, until `done`: every node but 4 (only on
/// flow 1's new path) keeps reporting.
fn keep_reporting(listen: String, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let again: Vec<Vec<u8>> = switch_reports()[58..60].to_vec();
    std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        while !done.load(Ordering::Relaxed) {
            for datagram in &again {
                socket.send_to(datagram, &listen).unwrap();
            }
            // Pacing only: the test waits for the page's state, not for this.
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    })
}

/// A collect that a failing test does not leave running.
struct Ends(Option<Child>);

impl Drop for Ends {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_view_shows_the_fleet_in_a_browser() {
    for binary in ["chromium", "chromedriver", "python3"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {binary} >/dev/null")])
            .status()
            .unwrap()
            .success();
        assert!(
            found,
            "{binary} is missing: run scripts/install-deps.sh (chromium, chromium-driver, selenium)"
        );
    }
    // Every node by the name --names gives it.
    let names = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view-names.yaml");
    std::fs::write(&names, "nodes:\n  1: edge-a\n  2: core-b\n  3: core-c\n  4: edge-d\n  9: sink-z\n")
        .unwrap();
    let names = names.to_str().unwrap();
    let (child, listen, view) = start_collect_with_view(&[
        "--json",
        "--quiet",
        "--view-sample-ms",
        "100",
        "--view-stale-s",
        "4",
        "--names",
        names,
    ]);
    let mut child = Ends(Some(child));
    let datagrams = switch_reports();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        socket.send_to(datagram, &listen).unwrap();
    }
    wait_for_reports(&view, datagrams.len() as u64);
    let done = Arc::new(AtomicBool::new(false));
    let reporter = keep_reporting(listen, Arc::clone(&done));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let links = "1-2,1-4,2-3,3-9,4-3";
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", &format!("http://{view}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--nodes", "1=edge-a,2=core-b,3=core-c,4=edge-d,9=sink-z", "--links", links, "--stale", "4"])
        .args([
            "--old-path",
            "edge-a > core-b > core-c > sink-z",
            "--new-path",
            "edge-a > edge-d > core-c > sink-z",
        ])
        .output()
        .unwrap();
    done.store(true, Ordering::Relaxed);
    reporter.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser test failed: {stderr}");
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("browser: {seen}");
    // SIGINT: collect stops as an operator stops it, and prints its summary.
    Command::new("kill").args(["-INT", &child.0.as_ref().unwrap().id().to_string()]).status().unwrap();
    let summary = summary_of(child.0.take().unwrap());
    // What the page drew is collect's own summary, link by link.
    let summary_links = summary["links"].as_array().unwrap();
    assert_eq!(summary_links.len(), links.split(',').count());
    for link in summary_links {
        let key = format!("{}-{}", link["from"], link["to"]);
        for q in ["p50", "p99"] {
            assert_eq!(seen["links"][&key][q], link["latency_ns"][q], "link {key} {q}");
        }
    }
    let history = seen["path_history"].as_array().unwrap();
    assert!(history[0].as_str().unwrap().ends_with("edge-a › edge-d › core-c › sink-z"), "{history:?}");
    assert!(history[1].as_str().unwrap().ends_with("edge-a › core-b › core-c › sink-z"), "{history:?}");
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A fleet: `flows` flows (UDP source ports from 1000), each over three
/// hops of 750 nodes (250 per layer) to one of 250 sinks: 1,000 nodes.
fn fleet_reports(flows: u32) -> Vec<Vec<u8>> {
    use int_core::int21::HopMetadata;
    (0..flows)
        .map(|f| {
            let node = |layer: u32| layer * 1000 + (f * (layer + 1) + f / 250) % 250 + 1;
            let hops: Vec<HopMetadata> = (0..3u32)
                .rev()
                .map(|layer| {
                    let t = 1_000_000 + u64::from(layer) * 10_000 + u64::from(f % 97) * 10;
                    HopMetadata {
                        node_id: Some(node(layer)),
                        hop_latency: Some(1000 + f % 5000),
                        queue: Some((0, f % 300)),
                        ingress_timestamp: Some(t),
                        egress_timestamp: Some(t + 1000),
                        ..HopMetadata::default()
                    }
                })
                .collect();
            stack_report(f + 1, node(3), 1000 + (f % 60000) as u16, &hops, 1_040_000)
        })
        .collect()
}

/// The figures of docs/output.md: collect's memory with the view on and
/// off, and the page's load times, at 10,000 flows and 1,000 nodes. Run
/// by hand: `cargo test -p int-tools --test view -- --ignored --nocapture`.
#[test]
#[ignore]
fn fleet_figures() {
    let datagrams = fleet_reports(10_000);
    let (with, listen, view) = start_collect_with_view(&["--quiet", "--view-sample-ms", "1000"]);
    feed(&datagrams, &listen, |sent| {
        while get(&view, "/api/overview")["reports"].as_u64() < Some(sent) {
            std::thread::yield_now();
        }
    });
    while get(&view, "/api/overview")["flows"].as_u64() < Some(10_000) {
        std::thread::yield_now();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let output = Command::new("python3")
        .args([script, "--url", &format!("http://{view}/"), "--measure"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    eprintln!("view on: {} KiB resident; {}", rss_kib(with.id()), get(&view, "/api/overview"));
    eprintln!("page: {}", String::from_utf8_lossy(&output.stdout));
    Command::new("kill").arg(with.id().to_string()).status().unwrap();
    // Without the view, collect's own line per report says what it booked
    // (a scrape of --metrics would copy the books, and its peak would count).
    let (mut without, listen) = collector::start_collect(Path::new(BIN), &["--json"]);
    let mut lines = BufReader::new(without.stdout.take().unwrap()).lines();
    let mut read = 0;
    feed(&datagrams, &listen, |sent| {
        while read < sent {
            lines.next().unwrap().unwrap();
            read += 1;
        }
    });
    eprintln!("view off: {} KiB resident", rss_kib(without.id()));
    Command::new("kill").arg(without.id().to_string()).status().unwrap();
}

/// Sends `datagrams` 500 at a time, each lot once `booked(sent so far)`
/// returns (no lot overflows the receive buffer).
fn feed(datagrams: &[Vec<u8>], listen: &str, mut booked: impl FnMut(u64)) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for (i, lot) in datagrams.chunks(500).enumerate() {
        for datagram in lot {
            socket.send_to(datagram, listen).unwrap();
        }
        booked((i * 500 + lot.len()) as u64);
    }
}

/// A names file under the test's folder: `nodes` as id: name.
fn names_file(file: &str, nodes: &[(u32, String)]) -> String {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(file);
    let lines: String = nodes.iter().map(|(id, name)| format!("  {id}: {name}\n")).collect();
    std::fs::write(&path, format!("nodes:\n{lines}")).unwrap();
    path.to_str().unwrap().to_string()
}

/// Sends `datagrams` to `listen`, waits for the view to have booked them
/// and for each flow (UDP port) to be on its `paths` in the view.
fn send_and_follow(view: &str, listen: &str, datagrams: &[Vec<u8>], paths: &[(u16, Vec<u32>)]) {
    let before = get(view, "/api/overview")["reports"].as_u64().unwrap();
    feed(datagrams, listen, |sent| wait_for_reports(view, before + sent));
    let want: std::collections::BTreeMap<String, serde_json::Value> = paths
        .iter()
        .map(|(port, path)| (format!("udp 10.0.0.1:{port} -> 10.0.0.2:5000"), serde_json::json!(path)))
        .collect();
    loop {
        let flows = get(view, "/api/flows?limit=1000");
        let now: std::collections::BTreeMap<String, serde_json::Value> = flows["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_string(), f["path"].clone()))
            .collect();
        if want.iter().all(|(name, path)| now.get(name) == Some(path)) {
            return;
        }
        std::thread::yield_now();
    }
}

/// The browser's layout checks (tests/view/browser.py --layout) on the
/// view at `view`: fails the test with what the page showed.
fn check_layout(view: &str, shot: &str, args: &[&str]) -> serde_json::Value {
    check_in_browser(view, &[&["--layout", shot], args].concat())
}

/// tests/view/browser.py with `args` on the view at `view`: what it read,
/// or the test fails with what the page showed.
fn check_in_browser(view: &str, args: &[&str]) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", &format!("http://{view}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--timeout", "60"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser's layout checks failed: {stderr}");
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("browser: {seen}");
    seen
}

/// The path-switch lab: edge-src's flows go over transit-a, then over
/// transit-b. transit-a, on no path now, is drawn idle (since when it was
/// last on one), never right of the sink, and its links apart from
/// transit-b's.
#[test]
fn the_topology_follows_a_path_switch() {
    let names: Vec<(u32, String)> = [(1, "edge-src"), (2, "transit-a"), (3, "transit-b"), (9, "edge-sink")]
        .map(|(i, n)| (i, n.into()))
        .into();
    let names = names_file("switch-names.yaml", &names);
    let (child, listen, view) =
        start_collect_with_view(&["--quiet", "--view-sample-ms", "100", "--names", &names]);
    let _child = Ends(Some(child));
    let before: Vec<Vec<u8>> = (0..6).map(|i| path_report(i + 1, 1 + (i % 2) as u16, &[1, 2, 9])).collect();
    send_and_follow(&view, &listen, &before, &[(1, vec![1, 2, 9]), (2, vec![1, 2, 9])]);
    let after: Vec<Vec<u8>> = (0..6).map(|i| path_report(i + 7, 1 + (i % 2) as u16, &[1, 3, 9])).collect();
    send_and_follow(&view, &listen, &after, &[(1, vec![1, 3, 9]), (2, vec![1, 3, 9])]);
    let seen = check_layout(
        &view,
        "topology-path-switch",
        &["--expect-nodes", "4", "--expect-links", "1-2,2-9,1-3,3-9", "--idle", "2"],
    );
    assert!(seen["idle_text"]["2"].as_str().unwrap().starts_with("idle since "), "{seen}");
}

/// A fleet of 50 nodes (10 sources, 4 spines, 26 leaves, 10 sinks) and
/// 72 links, 6 flows of 40 rerouted off 6 leaves: every transit left of
/// its sink, the idle leaves too, and no two link labels overlap.
#[test]
fn a_fleet_of_50_nodes_is_readable() {
    let mut names: Vec<(u32, String)> = Vec::new();
    for (first, count, tier) in [(1, 10, "src"), (11, 4, "spine"), (21, 26, "leaf"), (51, 10, "sink")] {
        names.extend((0..count).map(|i| (first + i, format!("{tier}-{}", i + 1))));
    }
    let names = names_file("fleet-names.yaml", &names);
    let (child, listen, view) =
        start_collect_with_view(&["--quiet", "--view-sample-ms", "100", "--names", &names]);
    let _child = Ends(Some(child));
    let path = |f: u32, rerouted: bool| {
        let leaf = if f < 6 && !rerouted { 41 + f } else { 21 + f % 20 };
        vec![1 + f % 10, 11 + f % 4, leaf, 51 + f % 10]
    };
    for rerouted in [false, true] {
        let flows: Vec<(u16, Vec<u32>)> = (0..40).map(|f| (f as u16 + 1, path(f, rerouted))).collect();
        let datagrams: Vec<Vec<u8>> = (0..3)
            .flat_map(|round| flows.iter().map(move |(port, p)| (round, *port, p.clone())))
            .enumerate()
            .map(|(i, (_, port, p))| path_report(i as u32 + 1 + u32::from(rerouted) * 1000, port, &p))
            .collect();
        send_and_follow(&view, &listen, &datagrams, &flows);
    }
    let links = get(&view, "/api/topology")["links"].as_array().unwrap().len().to_string();
    let seen = check_layout(
        &view,
        "topology-fleet",
        &["--expect-nodes", "50", "--link-count", &links, "--idle", "41,42,43,44,45,46"],
    );
    eprintln!("{links} links, {} labels shown", seen["labels"]);
}

/// A fleet of 500 nodes (20 sources, 40 spines, 400 leaves, 40 sinks):
/// drawn by groups ("leaf ×400"), every node in one, each flow's groups
/// left of its sink's, no labels overlapping; a click opens a group.
#[test]
fn a_fleet_of_500_nodes_is_drawn_by_groups() {
    let mut names: Vec<(u32, String)> = Vec::new();
    for (first, count, tier) in [(1, 20, "src"), (101, 40, "spine"), (201, 400, "leaf"), (701, 40, "sink")] {
        names.extend((0..count).map(|i| (first + i, format!("{tier}-{}", i + 1))));
    }
    let names = names_file("fleet-500-names.yaml", &names);
    let (child, listen, view) =
        start_collect_with_view(&["--quiet", "--view-sample-ms", "200", "--names", &names]);
    let _child = Ends(Some(child));
    let flows: Vec<(u16, Vec<u32>)> = (0..800u32)
        .map(|f| (f as u16 + 1, vec![1 + f % 20, 101 + f % 40, 201 + f % 400, 701 + f % 40]))
        .collect();
    let datagrams: Vec<Vec<u8>> =
        flows.iter().enumerate().map(|(i, (port, path))| path_report(i as u32 + 1, *port, path)).collect();
    send_and_follow(&view, &listen, &datagrams, &flows);
    let seen = check_in_browser(&view, &["--groups", "topology-500", "--expect-nodes", "500"]);
    assert_eq!(seen["drawn"], 4, "{seen}");
    assert_eq!(seen["opened"], 400, "{seen}");
}

/// A fabric whose INT-MD stacks carry node id, ports, hop latency and
/// queue but no timestamp: no link latency, yet every link of the paths
/// drawn, dashed, "no timestamps", a pair's links both ways apart.
#[test]
fn a_fabric_without_timestamps_shows_its_links() {
    use int_core::int21::{HopMetadata, Instructions};
    let (child, listen, view) = start_collect_with_view(&["--quiet", "--view-sample-ms", "100"]);
    let _child = Ends(Some(child));
    let bitmap = (
        Instructions::NODE_ID
            | Instructions::L1_PORT_IDS
            | Instructions::HOP_LATENCY
            | Instructions::QUEUE_OCCUPANCY,
        4,
    );
    let hop = |node: u32| HopMetadata {
        node_id: Some(node),
        l1_ingress_port: Some(1),
        l1_egress_port: Some(2),
        hop_latency: Some(900 + node),
        queue: Some((0, node)),
        ..HopMetadata::default()
    };
    // Flow 1 over 1 > 2 > 3, flow 2 back over 3 > 2 > 1: each pair's two
    // links side by side.
    let datagrams: Vec<Vec<u8>> = (0..4)
        .flat_map(|i| {
            [
                collector::stack_report_of(2 * i + 1, 9, 1, &[hop(3), hop(2), hop(1)], 5_000, bitmap),
                collector::stack_report_of(2 * i + 2, 9, 2, &[hop(1), hop(2), hop(3)], 5_000, bitmap),
            ]
        })
        .collect();
    send_and_follow(&view, &listen, &datagrams, &[(1, vec![1, 2, 3, 9]), (2, vec![3, 2, 1, 9])]);
    let links = "1-2,1-9,2-1,2-3,3-2,3-9";
    let seen =
        check_layout(&view, "topology-no-timestamps", &["--expect-nodes", "4", "--expect-links", links]);
    let unmeasured: Vec<&str> =
        seen["unmeasured"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(unmeasured.join(","), links, "{seen}");
    assert_eq!(get(&view, "/api/overview")["links"], 6);
}

/// Node `n` of the 50-node fleet below: 10.0.0.n, as INT switch ids often
/// are (a number the page must never show in place of its name).
fn fleet_node(n: u32) -> u32 {
    0x0a00_0000 + n
}

/// Flow `f`'s path in the reroute fleet: 10 sources, 4 spines, 26
/// leaves, 10 sinks. Flows 0-2,499 go over leaf-8 (onto leaf-1 once
/// rerouted), 2,500-2,539 over leaf-9 (onto leaf-2), the rest over
/// leaves 11-26.
fn reroute_path(f: u32, rerouted: bool) -> Vec<u32> {
    let leaf = match (f, rerouted) {
        (0..2500, false) => 8,
        (0..2500, true) => 1,
        (2500..2540, false) => 9,
        (2500..2540, true) => 2,
        _ => 11 + f % 16,
    };
    [1 + f % 10, 11 + f % 4, 20 + leaf, 51 + f % 10].map(fleet_node).to_vec()
}

/// The events of `query` (`/api/events?...`).
fn events_of(view: &str, query: &str) -> Vec<serde_json::Value> {
    get(view, &format!("/api/events?limit=1000&{query}"))["events"].as_array().unwrap().clone()
}

/// Waits for a sample begun after what the view shows now (all of what
/// the books held then is in it).
fn wait_for_next_sample(view: &str) {
    let now = get(view, "/api/overview")["now_ms"].as_u64();
    while get(view, "/api/overview")["now_ms"].as_u64() == now {
        std::thread::yield_now();
    }
}

/// A collect with the view of 50 named nodes and 5,000 flows; then 2,500
/// flows rerouted off leaf-8 onto leaf-1, 40 off leaf-9 onto leaf-2, and 3
/// packets lost on each of 40 flows to sink-9, all shown.
fn rerouted_fleet() -> (Ends, String) {
    let mut names: Vec<(u32, String)> = Vec::new();
    for (first, count, tier) in [(1, 10, "src"), (11, 4, "spine"), (21, 26, "leaf"), (51, 10, "sink")] {
        names.extend((0..count).map(|i| (fleet_node(first + i), format!("{tier}-{}", i + 1))));
    }
    let names = names_file("reroute-names.yaml", &names);
    let (child, listen, view) =
        start_collect_with_view(&["--quiet", "--view-sample-ms", "200", "--names", &names]);
    let port = |f: u32| f as u16 + 1;
    let before: Vec<Vec<u8>> =
        (0..5000).map(|f| path_report(f + 1, port(f), &reroute_path(f, false))).collect();
    feed(&before, &listen, |sent| wait_for_reports(&view, sent));
    let loss = (2540..5000).filter(|f| f % 10 == 8).take(40);
    let after: Vec<Vec<u8>> = (0..2540)
        .map(|f| path_report(10_000 + f, port(f), &reroute_path(f, true)))
        .chain(loss.map(|f| collector::loss_report(20_000 + f, fleet_node(59), port(f), 3)))
        .collect();
    feed(&after, &listen, |sent| wait_for_reports(&view, 5000 + sent));
    wait_for_next_sample(&view);
    (Ends(Some(child)), view)
}

/// Every flow event `id` names, page by page: `count` of them, each
/// flow's page with its change from `old` to `new` (node names), which
/// names the event.
fn every_flow_shows_its_change(view: &str, id: u64, count: usize, old: &str, new: &str) {
    let mut flows = Vec::new();
    loop {
        let page = get(view, &format!("/api/events/{id}/flows?offset={}&limit=1000", flows.len()));
        assert_eq!(page["total"], count);
        let rows = page["flows"].as_array().unwrap();
        if rows.is_empty() {
            break;
        }
        flows.extend(rows.iter().map(|r| r["id"].as_u64().unwrap()));
    }
    assert_eq!(flows.iter().collect::<std::collections::BTreeSet<_>>().len(), count);
    for flow in &flows {
        let page = get(view, &format!("/api/flows/{flow}"));
        let changes: Vec<&serde_json::Value> =
            page["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "path_change").collect();
        assert_eq!(changes.len(), 1, "flow {flow}: {}", page["events"]);
        let text = changes[0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("{old} > sink-")) && text.contains(&format!("{new} > sink-")),
            "{text}"
        );
        assert_eq!(changes[0]["event"], id, "flow {flow}: its change names its event");
    }
}

/// Filters by kind, by node as a name, a number or a dotted quad, and
/// both, keep what they name: leaf-8's path change is `id`, leaf-9's `other`.
fn filters_keep_what_they_name(view: &str, id: u64, other: u64) {
    let ids = |query: &str| -> Vec<u64> {
        events_of(view, query).iter().map(|e| e["id"].as_u64().unwrap()).collect()
    };
    assert_eq!(ids("node=leaf-8&kind=path_change"), [id]);
    assert_eq!(ids(&format!("node={}&kind=path_change", fleet_node(28))), [id]);
    assert_eq!(ids("node=10.0.0.28&kind=path_change"), [id]);
    let leaf_8 = events_of(view, "node=leaf-8");
    assert!(leaf_8.iter().any(|e| e["id"] == id), "{leaf_8:?}");
    assert!(leaf_8.iter().all(|e| e["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["node"] == fleet_node(28))));
    assert_eq!(ids("node=leaf-9&kind=path_change"), [other]);
    assert!(ids("node=leaf-8&kind=loss").is_empty());
    let losses = events_of(view, "kind=loss&node=sink-9");
    assert_eq!(losses.len(), 1);
    assert_eq!(losses[0]["text"], "loss on 40 flows to sink-9: 120 packet(s) lost");
    assert_eq!(losses[0]["flows"], 40);
    assert!(events_of(view, "kind=loss").iter().all(|e| e["kind"] == "loss"));
    let unknown = get(view, "/api/events?node=leaf-99");
    assert_eq!(
        (unknown["filter"]["unknown_node"].as_str(), unknown["events"].as_array().map(Vec::len)),
        (Some("leaf-99"), Some(0))
    );
    assert_eq!(get_status(view, "/api/events?kind=flood").0, 400);
}

/// A fleet of 50 named nodes and 5,000 flows: 2,500 flows rerouted off
/// leaf-8 onto leaf-1, 40 off leaf-9 onto leaf-2, then loss on 40 flows to
/// sink-9. One event per cause with its exact count, listing its flows;
/// each rerouted flow's page shows its change; filters by kind and by node
/// keep what they name; every node of an event by its name; and the events
/// page shows the same in a browser, its filter kept in the URL.
#[test]
fn a_reroute_of_2500_flows_is_one_event() {
    let (_child, view) = rerouted_fleet();
    let moves = events_of(&view, "kind=path_change");
    let brief: Vec<(&str, u64)> =
        moves.iter().map(|e| (e["text"].as_str().unwrap_or(""), e["flows"].as_u64().unwrap_or(0))).collect();
    assert_eq!(brief, [("40 flows moved leaf-9 -> leaf-2", 40), ("2500 flows moved leaf-8 -> leaf-1", 2500)]);
    let reroute = &moves[1];
    assert_eq!(
        (&reroute["from_names"], &reroute["to_names"]),
        (&serde_json::json!(["leaf-8"]), &serde_json::json!(["leaf-1"]))
    );
    let (id, other) = (reroute["id"].as_u64().unwrap(), moves[0]["id"].as_u64().unwrap());
    every_flow_shows_its_change(&view, id, 2500, "leaf-8", "leaf-1");
    every_flow_shows_its_change(&view, other, 40, "leaf-9", "leaf-2");
    filters_keep_what_they_name(&view, id, other);
    // Every node of every event by its name, in its JSON and its text.
    for event in events_of(&view, "") {
        for node in event["nodes"].as_array().unwrap() {
            let name = node["node_name"].as_str().unwrap_or_else(|| panic!("no name: {event}"));
            assert!(event["text"].as_str().unwrap().contains(name), "{event}");
        }
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", &format!("http://{view}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--events", "2500 flows moved leaf-8 -> leaf-1", "--events-flows", "2500"])
        .args(["--events-node", "leaf-9", "--events-node-text", "40 flows moved leaf-9 -> leaf-2"])
        .args(["--events-loss", "loss on 40 flows to sink-9"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser's events checks failed: {stderr}");
    eprintln!("browser: {}", String::from_utf8_lossy(&output.stdout));
}

/// The flows fleet: 5,000 UDP flows 10.1.X.Y:(10000+f) -> 10.2.(f%25).7
/// to port 443, 80, 53 or 8080 (f%4), each over src-(f%10+1) >
/// spine-((f/7)%4+1) > leaf-(f%20+1) > sink-(f%10+1).
const FLEET_FLOWS: u32 = 5000;
const FLEET_PORTS: [u16; 4] = [443, 80, 53, 8080];

fn fleet_flow(f: u32) -> (String, [u8; 4], u16, Vec<u32>) {
    let src = format!("10.1.{}.{}", f / 200, f % 200 + 1);
    let dst = [10, 2, (f % 25) as u8, 7];
    let path = vec![1 + f % 10, 11 + (f / 7) % 4, 21 + f % 20, 51 + f % 10];
    (src, dst, FLEET_PORTS[(f % 4) as usize], path)
}

/// The names of the flows fleet's 44 nodes.
fn fleet_names() -> Vec<(u32, String)> {
    let mut names: Vec<(u32, String)> = Vec::new();
    for (first, count, tier) in [(1, 10, "src"), (11, 4, "spine"), (21, 20, "leaf"), (51, 10, "sink")] {
        names.extend((0..count).map(|i| (first + i, format!("{tier}-{}", i + 1))));
    }
    names
}

/// Flow `f`'s one report: its stack over its path, a latency of its own.
fn fleet_flow_report(f: u32) -> Vec<u8> {
    use int_core::int21::{HopMetadata, Instructions};
    let (src, dst, dport, path) = fleet_flow(f);
    let (sink, hops) = path.split_last().unwrap();
    let stack: Vec<HopMetadata> = hops
        .iter()
        .enumerate()
        .rev()
        .map(|(i, node)| {
            let t = 1_000_000 + i as u64 * 10_000 + u64::from(f) * 10;
            HopMetadata {
                node_id: Some(*node),
                hop_latency: Some(1000 + f),
                queue: Some((0, 3)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + 1000),
                ..HopMetadata::default()
            }
        })
        .collect();
    let instructions = Instructions::NODE_ID
        | Instructions::HOP_LATENCY
        | Instructions::QUEUE_OCCUPANCY
        | Instructions::INGRESS_TIMESTAMP
        | Instructions::EGRESS_TIMESTAMP;
    // The sink's ingress: latencies from 40 µs on, one flow's its own.
    let sink_in = 1_040_000 + u64::from(f) * 10 + u64::from(f % 613) * 100;
    let flow = (src.parse().unwrap(), dst.into(), 10_000 + f as u16, dport);
    collector::udp_stack_report(f + 1, *sink, flow, &stack, sink_in, (instructions, 7))
}

/// `GET path` of the view: its status and body.
fn get_status(view: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(view).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {view}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), body.to_string())
}

/// Every row `/api/flows?QUERY` matches, page by page (`limit` each):
/// each flow's source port (10000 + f) once, in the pages' order.
fn every_page(view: &str, query: &str, limit: usize) -> Vec<serde_json::Value> {
    let (mut rows, mut offset) = (Vec::new(), 0);
    loop {
        let page = get(view, &format!("/api/flows?{query}&offset={offset}&limit={limit}"));
        let flows = page["flows"].as_array().unwrap();
        assert_eq!(
            page["matched"].as_u64().unwrap() as usize > offset,
            !flows.is_empty(),
            "{query} at {offset}"
        );
        if flows.is_empty() {
            return rows;
        }
        assert_eq!(page["total"], FLEET_FLOWS);
        rows.extend(flows.iter().cloned());
        offset += limit;
    }
}

/// The fleet's flows (f) a query's rows are, sorted.
fn flows_of(rows: &[serde_json::Value]) -> Vec<u32> {
    let mut flows: Vec<u32> =
        rows.iter().map(|r| r["flow"]["src_port"].as_u64().unwrap() as u32 - 10_000).collect();
    flows.sort_unstable();
    flows
}

/// 5,000 flows, 4,000 of them past `--detailed-flows`: the API pages
/// over every flow exactly once, whatever the sort; a search by address,
/// port, address and port, node name and path returns exactly the flows
/// generated so; every flow has its p50 and p99 (a sketch's past
/// `--detailed-flows`), so sorted by p99 every row shows one; hostile
/// queries are 400 with a JSON error. Then the page, in a browser: pager,
/// search, filters.
#[test]
fn the_flows_of_a_fleet_page_and_search() {
    let names = names_file("flows-fleet-names.yaml", &fleet_names());
    let (child, listen, view) =
        start_collect_with_view(&["--quiet", "--view-sample-ms", "100", "--names", &names]);
    let _child = Ends(Some(child));
    let datagrams: Vec<Vec<u8>> = (0..FLEET_FLOWS).map(fleet_flow_report).collect();
    feed(&datagrams, &listen, |sent| wait_for_reports(&view, sent));
    // Every flow on its path.
    loop {
        let page = get(&view, "/api/flows?limit=1");
        let on_paths: u64 = (1..=10)
            .map(|sink| {
                let page = get(&view, &format!("/api/flows?limit=1&node=sink-{sink}"));
                page["matched"].as_u64().unwrap_or_else(|| panic!("/api/flows has no matched: {page}"))
            })
            .sum();
        if page["total"] == FLEET_FLOWS && on_paths == u64::from(FLEET_FLOWS) {
            break;
        }
        std::thread::yield_now();
    }
    // Three samples later every flow has its percentiles (the view
    // computes 4,096 a sample): the first 1,000 (--detailed-flows) from
    // histograms, the others from sketches.
    let (mut samples, mut at) = (0, get(&view, "/api/overview")["now_ms"].clone());
    while samples < 3 {
        let now = get(&view, "/api/overview")["now_ms"].clone();
        if now != at {
            (samples, at) = (samples + 1, now);
        }
        std::thread::yield_now();
    }
    let known = get(&view, "/api/flows?limit=1")["with_percentiles"].clone();
    assert_eq!(known, FLEET_FLOWS, "flows with a p50 and a p99, of {FLEET_FLOWS}");
    let all: Vec<u32> = (0..FLEET_FLOWS).collect();
    for (sort, limit) in [("id", 1000), ("latency", 200), ("loss", 333), ("change", 1000)] {
        let rows = every_page(&view, &format!("sort={sort}"), limit);
        assert_eq!(flows_of(&rows), all, "sort={sort}: every flow once");
    }
    // Sorted by p99: a figure on every row, the highest first.
    let rows = every_page(&view, "sort=p99", 1000);
    let shown: Vec<i64> = rows
        .iter()
        .map(|r| {
            let (latency, percentiles) = (&r["latency_ns"], r["percentiles"].as_bool().unwrap());
            assert_eq!(percentiles, !latency["p99"].is_null(), "{r}");
            latency["p99"].as_i64().or(latency["max"].as_i64()).unwrap_or_else(|| panic!("no figure: {r}"))
        })
        .collect();
    assert!(shown.windows(2).all(|w| w[0] >= w[1]), "sorted by the figure shown");
    assert_eq!(rows.iter().filter(|r| r["percentiles"] == true).count(), FLEET_FLOWS as usize);
    let want = |keep: &dyn Fn(u32) -> bool| all.iter().copied().filter(|f| keep(*f)).collect::<Vec<u32>>();
    let (node, spine) = (|f: u32| fleet_flow(f).3, |f: u32| 11 + (f / 7) % 4);
    let searches: Vec<(&str, Vec<u32>)> = vec![
        ("q=10.2.3.7", want(&|f| f % 25 == 3)),
        ("q=%3A443", want(&|f| f % 4 == 0)),
        ("q=10.2.3.7%3A443", want(&|f| f % 25 == 3 && f % 4 == 0)),
        ("q=10.1.7.1", want(&|f| f / 200 == 7 && f % 200 == 0)),
        ("q=%3A10042", vec![42]),
        ("q=10.1.3.", want(&|f| f / 200 == 3)),
        ("q=udp+%3A80", want(&|f| f % 4 == 1)),
        ("node=leaf-8", want(&|f| f % 20 == 7)),
        ("node=28", want(&|f| f % 20 == 7)),
        ("path=spine-2%3Eleaf-8", want(&|f| spine(f) == 12 && f % 20 == 7)),
        ("path=src-3+%3E+spine-4", want(&|f| f % 10 == 2 && spine(f) == 14)),
        ("path=leaf-8%3Espine-2", vec![]),
        ("node=sink-3&q=%3A53", want(&|f| node(f)[3] == 53 && f % 4 == 2)),
    ];
    for (query, flows) in searches {
        let rows = every_page(&view, &format!("{query}&sort=latency"), 100);
        assert!(query.starts_with("path=leaf-8") || !flows.is_empty(), "{query} finds none");
        assert_eq!(flows_of(&rows), flows, "{query}");
    }
    for hostile in [
        "offset=99999999999999999999999",
        "offset=100000001",
        "limit=-1",
        "limit=1001",
        "sort=%27%3Bdrop",
        "node=nobody",
        "path=leaf-8%3Enobody",
        &format!("q={}", "x".repeat(300)),
        &format!("q={}", "a+".repeat(40)),
        "offset=1e3",
    ] {
        let (status, body) = get_status(&view, &format!("/api/flows?{hostile}"));
        assert_eq!(status, 400, "{hostile}: {body}");
        let error: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{hostile}: {e}: {body}"));
        assert!(error["error"].is_string(), "{hostile}: {body}");
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let output = Command::new("python3")
        .args([script, "--url", &format!("http://{view}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--flows", &FLEET_FLOWS.to_string(), "--timeout", "60"])
        .args(["--search", "10.2.3.7:443", "--search-count", "50"])
        .args(["--node", "leaf-8", "--node-count", "250"])
        .args(["--path", "spine-2>leaf-8"])
        .args(["--path-count", &want(&|f| spine(f) == 12 && f % 20 == 7).len().to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser's flows checks failed: {stderr}");
    eprintln!("browser: {}", String::from_utf8_lossy(&output.stdout));
}

/// The congestion fleet: 50 nodes in five tiers of ten (src, spine,
/// leaf, agg, edge; ids 1-50), each hop of a report a queue figure.
/// Fifty background flows (UDP ports 1000-1049) cross one node of each
/// tier, on queues 0-3, calm (40 and a little); three steady flows (ports
/// 1-3, every 2 ms) and a bursting one (port 100: 8 reports a
/// millisecond while a burst lasts) cross leaf-7's queue 2, whose
/// occupancy is int-tools/tests/congestion.rs's model.
const BURST_NODE: u32 = 27;
const BURST_QUEUE: u8 = 2;
const CONGESTION_BURSTS: [u64; 3] = [500, 1100, 1700];
const CONGESTION_RUN_MS: u64 = 2000;

fn congestion_names() -> Vec<(u32, String)> {
    let tiers = ["src", "spine", "leaf", "agg", "edge"];
    (0..50u32).map(|n| (n + 1, format!("{}-{}", tiers[(n / 10) as usize], n % 10 + 1))).collect()
}

/// One report of `port`'s packet at `ms` (its `nth` in that ms) over
/// `path` (one node a tier), each node's queue of `queues`; the burst
/// queue holds the model's occupancy, every other one 40 and a little.
fn congestion_report(
    t0: u64,
    sequence: u32,
    port: u16,
    (ms, nth): (u64, u64),
    path: &[(u32, u8)],
) -> Vec<u8> {
    use int_core::int21::HopMetadata;
    let mut t = t0 + ms * 1_000_000 + nth * 1000;
    let mut hops: Vec<HopMetadata> = path
        .iter()
        .map(|&(node, queue)| {
            let occupancy = if (node, queue) == (BURST_NODE, BURST_QUEUE) {
                collector::burst_occupancy(ms, &CONGESTION_BURSTS, 80)
            } else {
                40 + (node + u32::from(queue)) % 7
            };
            let latency = 500 + 10 * occupancy;
            let hop = HopMetadata {
                node_id: Some(node),
                hop_latency: Some(latency),
                queue: Some((queue, occupancy)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + u64::from(latency)),
                ..HopMetadata::default()
            };
            t += u64::from(latency) + 10_000;
            hop
        })
        .collect();
    // The stack holds the newest hop first.
    hops.reverse();
    stack_report(sequence, 60, port, &hops, t)
}

/// Every report of the congestion fleet's run, in time order.
fn congestion_schedule(t0: u64) -> Vec<Vec<u8>> {
    let background = |f: u32| -> Vec<(u32, u8)> {
        (0..5u32)
            .map(|tier| {
                let node = 1 + tier * 10 + (f + tier * 3) % 10;
                let queue = ((f / 10 + tier) % 4) as u8;
                // The burst queue is the bursting and steady flows' only.
                (node, if (node, queue) == (BURST_NODE, BURST_QUEUE) { 3 } else { queue })
            })
            .collect()
    };
    let through =
        |first: u32| vec![(first, 0), (11 + first, 1), (BURST_NODE, BURST_QUEUE), (31 + first, 1), (41, 0)];
    let mut datagrams = Vec::new();
    for ms in 0..CONGESTION_RUN_MS {
        let mut send = |port: u16, nth: u64, path: &[(u32, u8)]| {
            let sequence = datagrams.len() as u32 + 1;
            datagrams.push(congestion_report(t0, sequence, port, (ms, nth), path));
        };
        if ms % 10 == 0 {
            for f in 0..50u32 {
                send(1000 + f as u16, 100 + u64::from(f), &background(f));
            }
        }
        if ms % 2 == 0 {
            for port in 1..=3u16 {
                send(port, u64::from(port), &through(u32::from(port)));
            }
        }
        if CONGESTION_BURSTS.iter().any(|start| (*start..start + 80).contains(&ms)) {
            for nth in 0..8 {
                send(100, 10 + nth, &through(5));
            }
        }
    }
    datagrams
}

/// The congestion pages at a fleet's size: 50 nodes with four queues
/// each, three bursts through leaf-7's queue 2. The view's timeline holds
/// the three episodes on that queue; each one's page names the bursting
/// flow first and the three steady flows as victims, its culprit's link
/// opens the flow's page; the heatmap has 50 rows, leaf-7's at the
/// burst's peak and hot where the bursts were, every other node calm; a
/// click on a hot cell zooms in with the burst in view. Screenshots of
/// the three pages (docs/view/congestion-*.png).
#[test]
fn the_congestion_pages_of_a_fleet_in_a_browser() {
    let names = names_file("congestion-names.yaml", &congestion_names());
    let (child, listen, view) = start_collect_with_view(&[
        "--quiet",
        "--view-sample-ms",
        "100",
        "--names",
        &names,
        "--congestion-occupancy",
        "1000",
    ]);
    let _child = Ends(Some(child));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let datagrams = congestion_schedule(now.as_secs() * 1_000_000_000);
    feed(&datagrams, &listen, |sent| wait_for_reports(&view, sent));
    // Until the view holds the three episodes, ended.
    loop {
        let episodes = get(&view, "/api/congestion?span_ms=60000");
        if episodes["in_span"] == CONGESTION_BURSTS.len() && episodes["open"] == 0 {
            break;
        }
        std::thread::yield_now();
    }
    let peak = collector::burst_occupancy(CONGESTION_BURSTS[0] + 79, &CONGESTION_BURSTS, 80);
    let culprit = "udp 10.0.0.1:100 -> 10.0.0.2:5000";
    let seen = check_in_browser(
        &view,
        &[
            "--congestion",
            "--span",
            "10000",
            "--episodes",
            &CONGESTION_BURSTS.len().to_string(),
            "--burst-queue",
            &format!("{BURST_NODE}/{BURST_QUEUE}"),
            "--burst-node",
            &BURST_NODE.to_string(),
            "--burst-peak",
            &peak.to_string(),
            "--threshold",
            "1000",
            "--culprit",
            culprit,
            "--victims",
            "3",
            "--expect-nodes",
            "50",
        ],
    );
    assert_eq!((seen["episodes"].as_u64(), seen["culprit"].as_str()), (Some(3), Some(culprit)), "{seen}");
    assert_eq!((seen["heat_rows"].as_u64(), seen["burst_peak"].as_u64()), (Some(50), Some(u64::from(peak))));
    assert_eq!(seen["curve_peak"].as_u64(), Some(u64::from(peak)), "{seen}");
    // The JSON behind the pages is the fleet's, and small.
    for path in [
        "/api/congestion?span_ms=10000",
        "/api/congestion/heatmap?span_ms=10000",
        "/api/congestion/episodes/1",
    ] {
        let body = collector::http_get(&view, path);
        eprintln!("{path}: {} bytes", body.len());
        assert!(body.len() < 64 * 1024, "{path}: {} bytes", body.len());
    }
}
