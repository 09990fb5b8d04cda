//! The fleet view's web page at a fleet's size, in a real browser: the
//! fleet of `stream_fleet_view.rs` (three servers, two receivers, three
//! aggregators over 16 partitions, `collect --fleet-view`) fed the
//! reports of 50 named nodes (10 sources, 4 spines, 26 leaves, 10 sinks)
//! and 600 flows spread over the partitions, then a reroute: 150 flows
//! off leaf-8 onto leaf-1, 40 off leaf-9 onto leaf-2, and 3 packets lost
//! on each of 40 flows to sink-1. Once the view holds every aggregator's
//! state after the reroute, its topology (nodes, links, each link's
//! count and percentiles, idle leaves) is the one collector's fed the
//! same reports, and tests/view/browser.py finds the 50 nodes drawn by
//! name, every link, the two leaves idle and no labels overlapping; a
//! rerouted flow on the flows page on its new path, its page with both;
//! the events page with each reroute as one event naming its flows and
//! nodes, and the loss. Screenshots go to `INT_VIEW_SHOTS`
//! (docs/view to refresh the docs' ones), else under target/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::cluster::Server;
use common::collector::{loss_report, path_report};
use common::partitions::{came, one_fleet, skipped, wait_for, Figures, Fleet, Phase, View};
use common::servers::{free_port, http_get, json_in};
use common::*;
use serde_json::{json, Value};

/// Flows (UDP source ports 1 to 600), those rerouted off leaf-8 (0-149)
/// and off leaf-9 (150-189).
const FLOWS: u32 = 600;
const OFF_LEAF_8: u32 = 150;
const OFF_LEAF_9: u32 = 40;
/// Flows to sink-1 that lose 3 packets each.
const LOSSY: usize = 40;

/// The 50 nodes by name: src-1..10 (ids 1-10), spine-1..4 (11-14),
/// leaf-1..26 (21-46), sink-1..10 (51-60).
fn names() -> Vec<(u32, String)> {
    let tiers = [(1, 10, "src"), (11, 4, "spine"), (21, 26, "leaf"), (51, 10, "sink")];
    tiers
        .into_iter()
        .flat_map(|(first, count, tier)| (0..count).map(move |i| (first + i, format!("{tier}-{}", i + 1))))
        .collect()
}

/// Flow `f`'s path: over leaf-8 (onto leaf-1 once rerouted), leaf-9
/// (onto leaf-2), or one of the 24 other leaves, each used; to the sink
/// of the leaf it first took (a leaf serves one sink).
fn path(f: u32, rerouted: bool) -> Vec<u32> {
    let others: Vec<u32> = (1..=26).filter(|l| ![8, 9].contains(l)).collect();
    let (first, moved) = match f {
        0..OFF_LEAF_8 => (8, 1),
        _ if f < OFF_LEAF_8 + OFF_LEAF_9 => (9, 2),
        _ => (others[(f % 24) as usize], others[(f % 24) as usize]),
    };
    let leaf = if rerouted { moved } else { first };
    vec![1 + f % 10, 11 + f % 4, 20 + leaf, 51 + (first - 1) % 10]
}

/// Flow `f`'s UDP source port.
fn port(f: u32) -> u16 {
    f as u16 + 1
}

/// The flows' reports, each flow through one receiver (a flow's reports
/// in order), numbered per sender from `numbers`; after the reroute, the
/// loss reports of the 40 lossy flows to sink-1.
fn reports(rerouted: bool, numbers: &mut [u32; 2]) -> Phase {
    let mut datagrams = Vec::new();
    let mut send = |f: u32, datagram: &dyn Fn(u32) -> Vec<u8>| {
        let sender = (f % 2) as usize;
        numbers[sender] += 1;
        datagrams.push((sender, sender, datagram(numbers[sender])));
    };
    let moved = if rerouted { 0..OFF_LEAF_8 + OFF_LEAF_9 } else { 0..FLOWS };
    for f in moved {
        send(f, &|n| path_report(n, port(f), &path(f, rerouted)));
    }
    if rerouted {
        for f in lossy() {
            send(f, &|n| loss_report(n, 51, port(f), 3));
        }
    }
    Phase { datagrams, links: 0, changes: 0 }
}

/// The flows to sink-1 that lose packets (none of them rerouted).
fn lossy() -> impl Iterator<Item = u32> {
    (OFF_LEAF_8 + OFF_LEAF_9..FLOWS).filter(|f| path(*f, false)[3] == 51).take(LOSSY)
}

/// Each flow's path on the web view at `web`, by source port.
fn paths(web: u16) -> std::collections::BTreeMap<u64, Vec<u64>> {
    let flows = json_in(&http_get(web, "/api/flows?limit=1000").unwrap_or_default()).unwrap_or_default();
    let flows = flows["flows"].as_array().cloned().unwrap_or_default();
    let port = |f: &Value| f["name"].as_str()?.split(':').nth(1)?.split(' ').next()?.parse().ok();
    flows
        .iter()
        .filter_map(|f| Some((port(f)?, f["path"].as_array()?.iter().filter_map(Value::as_u64).collect())))
        .collect()
}

/// Every flow's path as `rerouted` says, by source port.
fn expected_paths(rerouted: bool) -> std::collections::BTreeMap<u64, Vec<u64>> {
    (0..FLOWS).map(|f| (u64::from(port(f)), path(f, rerouted).into_iter().map(u64::from).collect())).collect()
}

/// Sends `phase` and waits until the direct collector booked it, the
/// aggregators as much, the view (metrics on `view`) as much, and both
/// web views (`web`, the one collector's `direct_web`) place every flow
/// on its path.
fn send_and_follow(
    fleet: &Fleet,
    phase: &Phase,
    (view, web, direct_web): (u16, u16, u16),
    rerouted: bool,
) -> Figures {
    let before = Figures::of(fleet.direct_metrics).reports;
    fleet.send(phase);
    let reports = before + phase.datagrams.len() as u64;
    wait_for("the direct collector books the reports", || {
        Figures::of(fleet.direct_metrics).reports == reports
    });
    let direct = Figures::of(fleet.direct_metrics);
    let ports = fleet.live_ports();
    let mut seen = (Figures::default(), Figures::default());
    let agreed = came(|| {
        seen = (fleet.booked(&ports), Figures::of(view));
        seen == (direct, direct)
    });
    assert!(agreed, "one collector {direct:?}; the aggregators {:?}, the view {:?}", seen.0, seen.1);
    let want = expected_paths(rerouted);
    let placed = came(|| paths(web) == want && paths(direct_web) == want);
    assert!(placed, "every flow on its path (rerouted: {rerouted}) in the view and the one collector");
    direct
}

/// A topology as compared: each node's name, hops, idle mark and rank;
/// each link's names, count, p50, p99 and flows over it now.
fn topology(web: u16) -> Value {
    let topology = json_in(&http_get(web, "/api/topology").unwrap_or_default()).unwrap_or_default();
    let keep = |value: &Value, keys: &[&str]| -> Value {
        keys.iter().map(|k| (k.to_string(), value[k].clone())).collect::<serde_json::Map<_, _>>().into()
    };
    let nodes: Vec<Value> = topology["nodes"]
        .as_array()
        .map(|nodes| nodes.iter().map(|n| keep(n, &["node", "node_name", "hops", "idle", "rank"])).collect())
        .unwrap_or_default();
    let links: Vec<Value> = topology["links"]
        .as_array()
        .map(|links| {
            links
                .iter()
                .map(|l| {
                    let mut link = keep(l, &["from", "to", "from_name", "to_name", "flows", "measured"]);
                    link["latency_ns"] = keep(&l["latency_ns"], &["count", "p50", "p99"]);
                    link
                })
                .collect()
        })
        .unwrap_or_default();
    json!({"nodes": nodes, "links": links})
}

/// The events of `kind` on the web view at `web`: each one's text and
/// how many flows it names, oldest first.
fn events(web: u16, kind: &str) -> Vec<(String, u64)> {
    let page = json_in(&http_get(web, &format!("/api/events?limit=1000&kind={kind}")).unwrap_or_default());
    let events = page.unwrap_or_default()["events"].as_array().cloned().unwrap_or_default();
    let mut events: Vec<(String, u64)> = events
        .iter()
        .map(|e| (e["text"].as_str().unwrap_or("").to_string(), e["flows"].as_u64().unwrap_or(0)))
        .collect();
    events.sort();
    events
}

fn shots_dir() -> PathBuf {
    let fallback = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet-view-shots");
    common::collector::shots_dir(env!("CARGO_MANIFEST_DIR"), fallback)
}

/// tests/view/browser.py with `args` on the web view at `web`, its
/// screenshots named `fleet-view-...`: what it read, or the test fails
/// with what the page showed.
fn in_browser(web: u16, args: &[&str]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", &format!("http://127.0.0.1:{web}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--shot-prefix", "fleet-view-", "--timeout", "90"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser's checks {args:?} failed: {stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("fleet view, browser: {seen}");
    seen
}

/// chromium, chromedriver and python3 are here: the test fails naming
/// what is missing, never skips.
fn browser_found() {
    for binary in ["chromium", "chromedriver", "python3"] {
        let found =
            Command::new("sh").args(["-c", &format!("command -v {binary} >/dev/null")]).status().unwrap();
        assert!(found.success(), "{binary} is missing: run scripts/install-deps.sh");
    }
}

/// The path of flow `f` as the page writes it, by name.
fn path_text(f: u32, rerouted: bool) -> String {
    let names = names();
    let name = |id: u32| names.iter().find(|(n, _)| *n == id).map(|(_, name)| name.clone()).unwrap();
    path(f, rerouted).into_iter().map(name).collect::<Vec<_>>().join(" › ")
}

#[test]
fn the_fleet_views_pages_at_50_nodes_through_a_reroute() {
    if skipped() {
        return;
    }
    browser_found();
    let _one = one_fleet();
    let dir = workdir("stream-fleet-browser");
    let names_file = dir.join("names.yaml");
    let lines: String = names().iter().map(|(id, name)| format!("  {id}: {name}\n")).collect();
    std::fs::write(&names_file, format!("nodes:\n{lines}")).unwrap();
    let names_file = names_file.to_str().unwrap();
    let sample = ["--view-sample-ms", "200", "--names", names_file];
    let direct_web = free_port();
    let http = format!("127.0.0.1:{direct_web}");
    let fleet = Fleet::start_with(&dir, &[&sample[..], &["--http", &http]].concat());
    let urls: Vec<String> = fleet.servers.iter().map(Server::url).collect();
    let (metrics, web) = (free_port(), free_port());
    let _view = View::spawn(&urls.join(","), metrics, web, &sample);
    wait_for("the view hears the three aggregators", || {
        common::cluster::metric(metrics, "int_collect_fleet_aggregators{state=\"live\"} ") == 3
    });
    let mut numbers = [0u32; 2];
    send_and_follow(&fleet, &reports(false, &mut numbers), (metrics, web, direct_web), false);
    let after = send_and_follow(&fleet, &reports(true, &mut numbers), (metrics, web, direct_web), true);
    assert_eq!(after.path_changes, u64::from(OFF_LEAF_8 + OFF_LEAF_9), "{after:?}");
    assert_eq!(after.lost_packets, 3 * LOSSY as u64, "{after:?}");
    // The view's topology is the one collector's: every node by name, its
    // hops, idle mark and rank; every link with its count and percentiles.
    let one = topology(direct_web);
    let agreed = came(|| topology(web) == one);
    assert!(agreed, "topology: one collector {one}\nfleet view {}", topology(web));
    let (nodes, links) = (one["nodes"].as_array().unwrap(), one["links"].as_array().unwrap());
    assert_eq!(nodes.len(), 50, "{one}");
    let idle: Vec<String> =
        nodes.iter().filter(|n| n["idle"] == true).map(|n| n["node"].to_string()).collect();
    assert_eq!(idle, ["28", "29"], "leaf-8 and leaf-9 idle");
    // Its events are the one collector's: each reroute one event naming
    // its flows (no flow shown flapping back), the loss one event.
    let moves = vec![
        (format!("{OFF_LEAF_8} flows moved leaf-8 -> leaf-1"), u64::from(OFF_LEAF_8)),
        (format!("{OFF_LEAF_9} flows moved leaf-9 -> leaf-2"), u64::from(OFF_LEAF_9)),
    ];
    let loss = vec![(format!("loss on {LOSSY} flows to sink-1: {} packet(s) lost", 3 * LOSSY), LOSSY as u64)];
    for (kind, want) in [("path_change", moves), ("loss", loss)] {
        let agreed = came(|| events(web, kind) == want && events(direct_web, kind) == want);
        assert!(
            agreed,
            "{kind}: {want:?}; one collector {:?}, fleet view {:?}",
            events(direct_web, kind),
            events(web, kind)
        );
    }
    let link_list: Vec<String> = links.iter().map(|l| format!("{}-{}", l["from"], l["to"])).collect();
    eprintln!("fleet view: topology equal: {} nodes, {} links, idle {idle:?}", nodes.len(), links.len());
    let named: Vec<String> = names().iter().map(|(id, name)| format!("{id}={name}")).collect();
    let seen = in_browser(
        web,
        &[
            &["--layout", "topology", "--expect-nodes", "50", "--idle", "28,29"],
            &["--expect-links", &link_list.join(","), "--nodes", &named.join(",")][..],
        ]
        .concat(),
    );
    assert_eq!(seen["links"], links.len(), "{seen}");
    // A rerouted flow (off leaf-8) on the flows page, on its new path; its
    // page with both paths.
    let f = 17;
    in_browser(
        web,
        &[
            "--rerouted",
            &format!(":{}", port(f)),
            "--old-path",
            &path_text(f, false),
            "--new-path",
            &path_text(f, true),
        ],
    );
    let events = format!("{OFF_LEAF_8} flows moved leaf-8 -> leaf-1");
    in_browser(
        web,
        &[
            "--events",
            &events,
            "--events-flows",
            &OFF_LEAF_8.to_string(),
            "--events-node",
            "leaf-9",
            "--events-node-text",
            &format!("{OFF_LEAF_9} flows moved leaf-9 -> leaf-2"),
            "--events-loss",
            &format!("loss on {LOSSY} flows to sink-1"),
        ],
    );
}
