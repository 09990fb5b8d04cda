//! `collect --state DIR`: a collector (and an aggregator on a real
//! nats-server) stopped by SIGINT and started again with the same state
//! shows the same view and prints the same summary, and tells a flow's
//! next path against the one it kept; a state it cannot read stops it
//! with the file named and a hint; the view's events are kept within the
//! state's age and size bounds, the newest first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::Value;

use collector::{loss_report, stack_report, summary_of};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// An empty folder for one test.
fn workdir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// collect with its view on a free port and `args`; returns it, where it
/// listens for reports (none for an aggregator) and where its view is.
fn start(args: &[&str]) -> (Child, Option<String>, String) {
    let mut args = [&["--http", "127.0.0.1:0", "--quiet", "--json", "--view-sample-ms", "50"], args].concat();
    args.extend(["--view-stale-s", "3600"]);
    let aggregator = args.contains(&"--from-nats");
    let words: &[&str] =
        if aggregator { &["view on http://"] } else { &["listening on ", "view on http://"] };
    let (child, mut said) = collector::start_collect_saying(Path::new(BIN), &args, words);
    let view = said.pop().unwrap();
    (child, said.pop(), view)
}

fn get(view: &str, path: &str) -> Value {
    let body = collector::http_get(view, path);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// SIGINT, as an operator's Ctrl-C or systemd's stop: the summary it
/// prints at exit.
fn interrupt(child: Child) -> Value {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    summary_of(child)
}

/// One report of flow `port` over `path` (source first, the sink last).
fn path_report(sequence: u32, port: u16, path: &[u32]) -> Vec<u8> {
    use int_core::int21::HopMetadata;
    let (sink, hops) = path.split_last().unwrap();
    let stack: Vec<HopMetadata> = hops
        .iter()
        .enumerate()
        .rev()
        .map(|(i, node)| {
            let t = 1_000_000 + i as u64 * 10_000 + u64::from(port) * 10;
            HopMetadata {
                node_id: Some(*node),
                hop_latency: Some(1000 + u32::from(port) * 7 + i as u32 * 300),
                queue: Some((0, 3 + i as u32)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + 1000 + u64::from(port) * 7),
                ..HopMetadata::default()
            }
        })
        .collect();
    stack_report(sequence, *sink, port, &stack, 1_000_000 + hops.len() as u64 * 10_000)
}

/// The fleet's reports: flows from UDP ports 1 to 8 over 1 > 2 > 9 or
/// 1 > 3 > 9, three rounds; flows 3 and 5 lose packets (4 and 7); then
/// flow 1 moves to 1 > 4 > 9.
fn fleet() -> Vec<Vec<u8>> {
    let mut datagrams = Vec::new();
    for round in 0..3u32 {
        for port in 1..=8u16 {
            let sequence = datagrams.len() as u32 + 1;
            datagrams.push(path_report(sequence, port, &[1, 2 + u32::from(port % 2), 9]));
        }
        if round == 1 {
            datagrams.push(loss_report(datagrams.len() as u32 + 1, 9, 3, 4));
            datagrams.push(loss_report(datagrams.len() as u32 + 1, 9, 5, 7));
        }
    }
    datagrams.push(path_report(datagrams.len() as u32 + 1, 1, &[1, 4, 9]));
    datagrams
}

fn send(listen: &str, datagrams: &[Vec<u8>]) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        socket.send_to(datagram, listen).unwrap();
    }
}

/// Events of `kind` in the view.
fn events(view: &str, kind: &str) -> Vec<Value> {
    let all = get(view, "/api/events?limit=10000")["events"].as_array().unwrap().clone();
    all.into_iter().filter(|e| e["kind"] == kind).collect()
}

/// Waits for the view to show `reports` reports, `changes` path changes
/// and `losses` loss events.
fn wait_for(view: &str, reports: u64, changes: usize, losses: usize) {
    while get(view, "/api/overview")["reports"].as_u64() != Some(reports)
        || events(view, "path_change").len() != changes
        || events(view, "loss").len() != losses
    {
        std::thread::yield_now();
    }
}

/// `value` without what moves with the clock: `now_ms`, how long ago
/// (`..._ago`), and when a node was last on a path (now, for a node on
/// one).
fn timeless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !["now_ms", "on_path_ms"].contains(&k.as_str()) && !k.ends_with("_ago"))
                .map(|(k, v)| (k.clone(), timeless(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

/// What an operator sees: the overview, the flows, flow 1's page (the
/// moved one), the topology and the events.
fn pages(view: &str) -> Value {
    let flows = get(view, "/api/flows?limit=1000");
    let moved =
        flows["flows"].as_array().unwrap().iter().find(|f| f["name"].as_str().unwrap().contains(":1 "));
    let id = moved.expect("flow 1 in the view")["id"].as_u64().unwrap();
    timeless(&serde_json::json!({
        "overview": get(view, "/api/overview"),
        "flows": flows,
        "flow": get(view, &format!("/api/flows/{id}")),
        "topology": get(view, "/api/topology"),
        "events": get(view, "/api/events?limit=10000"),
    }))
}

/// The summary's books: without the counts of this run's outputs (the
/// view's requests, the state's writes).
fn books_of(mut summary: Value) -> Value {
    for output in ["view", "state", "nats_consumer"] {
        summary.as_object_mut().unwrap().remove(output);
    }
    summary
}

/// A collector fed a fleet with loss and a path change, stopped by SIGINT
/// and started again with the same --state: the same overview, flows, flow
/// page, topology and events, the same summary; flow 1's next path is a
/// change from the path it was on before the restart.
#[test]
fn a_restarted_collector_goes_on_where_it_was() {
    let dir = workdir("state-restart");
    let state = dir.join("state");
    let args = ["--state", state.to_str().unwrap()];
    let datagrams = fleet();
    let (first, listen, view) = start(&args);
    send(listen.as_deref().unwrap(), &datagrams);
    wait_for(&view, datagrams.len() as u64, 1, 2);
    let before = pages(&view);
    assert_eq!(before["overview"]["flows"], 8);
    let first = interrupt(first);
    assert_eq!(first["path_changes"], 1, "{first}");

    let (second, _, view) = start(&args);
    assert_eq!(pages(&view), before, "the view goes on where it was");
    let second = interrupt(second);
    assert_eq!(books_of(second), books_of(first.clone()), "the summary goes on where it was");

    let (third, listen, view) = start(&args);
    send(listen.as_deref().unwrap(), &[path_report(1, 1, &[1, 2, 9])]);
    wait_for(&view, datagrams.len() as u64 + 1, 2, 2);
    // The newest first.
    let change = events(&view, "path_change").remove(0);
    assert!(change["text"].as_str().unwrap().ends_with("path 1 > 4 > 9 -> 1 > 2 > 9"), "{change}");
    let third = interrupt(third);
    assert_eq!(third["path_changes"], 2, "{third}");
    assert_eq!(third["reports"].as_u64(), Some(datagrams.len() as u64 + 1));
}
