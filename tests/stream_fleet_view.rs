//! The fleet view over a partitioned stream, on a real three-server NATS
//! JetStream cluster (R3): three aggregators over 16 partitions publish
//! their books' state every 2 s (the default `--nats-view-s`), and
//! `collect --fleet-view` merges them. Fed the traffic of
//! `stream_partitions.rs` (INT-MD reports of many flows, a third changing
//! path, loss reports, drop summaries, three switches' postcards out of
//! path order through two receivers), the view's metrics page and its
//! summary at exit equal one collector fed everything: reports, packets
//! lost, latency reports, path changes, joined postcards, and every
//! link's latency count, its p50 and p99 within one histogram bucket.
//! The aggregators then stop gracefully: their last states stay in the
//! view, its figures unchanged. And one aggregator killed (SIGKILL) in the
//! middle of its flows, once its checkpoints hold what it booked: its
//! partitions move with their books, the flows' paths go on (their path
//! changes after the kill are counted by the new owners), and the view's
//! sums still equal the one collector's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command};
use std::time::Instant;

use common::cluster::{metric, Server};
use common::partitions::{
    came, one_fleet, owned, phase, settled, skipped, wait_for, Figures, Fleet, Phase, View, CARDS, FLOWS,
    PACKETS,
};
use common::servers::{free_port, http_get, json_in, stop};
use common::*;
use serde_json::Value;

/// Stops `child` gracefully (SIGTERM) and waits for it.
fn terminate(child: &mut Child) {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
}

/// [`terminate`], and its summary at exit (its last line, `--json`).
fn summary(child: &mut Child) -> Value {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let mut text = String::new();
    child.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    assert!(child.wait().unwrap().success());
    let last = text.lines().last().unwrap();
    serde_json::from_str::<Value>(last).unwrap()["summary"].clone()
}

/// The view's aggregators: (live, stopped).
fn aggregators(port: u16) -> (u64, u64) {
    let live = metric(port, "int_collect_fleet_aggregators{state=\"live\"} ");
    (live, metric(port, "int_collect_fleet_aggregators{state=\"stopped\"} "))
}

/// Each link's latencies counted, by (from, to): off a Prometheus page.
fn metrics_links(port: u16) -> BTreeMap<(String, String), u64> {
    let page = http_get(port, "/metrics").unwrap_or_default();
    let family = "int_collect_link_latency_seconds_count{";
    let label = |line: &str, name: &str| -> String {
        let after = line.split(&format!("{name}=\"")).nth(1).unwrap_or("");
        after.split('"').next().unwrap_or("").to_string()
    };
    let links = page.lines().filter(|l| l.starts_with(family));
    links
        .map(|l| ((label(l, "from"), label(l, "to")), l.rsplit(' ').next().unwrap().parse().unwrap()))
        .collect()
}

/// Each link's latencies counted, by (from, to): off the web view's
/// topology.
fn web_links(port: u16) -> BTreeMap<(String, String), u64> {
    let topology = json_in(&http_get(port, "/api/topology").unwrap_or_default()).unwrap_or_default();
    let links = topology["links"].as_array().cloned().unwrap_or_default();
    let count = |l: &Value| l["latency_ns"]["count"].as_u64().unwrap_or(0);
    links.iter().map(|l| ((l["from"].to_string(), l["to"].to_string()), count(l))).collect()
}

/// The web view's flows with a path, and of those, how many go through
/// node 5 (the INT-MD flows that changed path).
fn web_paths(port: u16) -> (usize, usize) {
    let flows = json_in(&http_get(port, "/api/flows?limit=1000").unwrap_or_default()).unwrap_or_default();
    let flows = flows["flows"].as_array().cloned().unwrap_or_default();
    let paths: Vec<Vec<u64>> = flows
        .iter()
        .filter_map(|f| f["path"].as_array().map(|p| p.iter().filter_map(Value::as_u64).collect()))
        .collect();
    (paths.len(), paths.iter().filter(|p| p.contains(&5)).count())
}

/// Each queue's last occupancy, by its labels, off a Prometheus page.
fn occupancies(port: u16) -> BTreeMap<String, u64> {
    let page = http_get(port, "/metrics").unwrap_or_default();
    let lines = page.lines().filter(|l| l.starts_with("int_collect_congestion_occupancy{"));
    lines
        .filter_map(|l| {
            let (labels, value) = l.rsplit_once(' ')?;
            Some((labels.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// A link latency's percentile, the one collector's and the view's: within
/// one bucket of the links' histograms (two significant digits: 128 to
/// 256 sub-buckets a power of two, a bucket at most 1/128 of its value).
fn within_a_bucket(what: &str, one: &Value, view: &Value) {
    let (one, view) = (one.as_i64().unwrap(), view.as_i64().unwrap());
    let bucket = one.abs() / 128 + 1;
    assert!((one - view).abs() <= bucket, "{what}: one collector {one}, fleet view {view}");
}

/// Every figure the test compares of the two summaries.
fn compare(one: &Value, view: &Value) -> usize {
    for key in ["reports", "path_changes", "postcards"] {
        assert_eq!(one[key], view[key], "{key}");
    }
    for key in ["latency_reports", "lost_packets"] {
        assert_eq!(one["all_flows"][key], view["all_flows"][key], "all_flows.{key}");
    }
    assert_eq!(one["nodes"].as_array().unwrap().len(), view["nodes"].as_array().unwrap().len());
    let (links, merged) = (one["links"].as_array().unwrap(), view["links"].as_array().unwrap());
    assert_eq!(links.len(), merged.len(), "links");
    let mut exact = 0;
    for (link, theirs) in links.iter().zip(merged) {
        let what = format!("link {} to {}", link["from"], link["to"]);
        assert_eq!((&link["from"], &link["to"]), (&theirs["from"], &theirs["to"]), "{what}");
        let (ours, theirs) = (&link["latency_ns"], &theirs["latency_ns"]);
        assert_eq!(ours["count"], theirs["count"], "{what}: count");
        for p in ["p50", "p99"] {
            within_a_bucket(&format!("{what} {p}"), &ours[p], &theirs[p]);
            exact += usize::from(ours[p] == theirs[p]);
        }
    }
    exact
}

/// The fleet (in the work directory `name`) and a fleet view that hears
/// its three aggregators, its metrics and web view ports.
fn fleet_and_view(name: &str) -> (Fleet, View, u16, u16) {
    let fleet = Fleet::start(&workdir(name));
    let urls: Vec<String> = fleet.servers.iter().map(Server::url).collect();
    let (port, web) = (free_port(), free_port());
    let view = View::spawn(&urls.join(","), port, web, &[]);
    wait_for("the view hears the three aggregators", || aggregators(port) == (3, 0));
    (fleet, view, port, web)
}

#[test]
fn the_fleet_view_of_three_aggregators_equals_one_collector() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let (mut fleet, mut view, port, web) = fleet_and_view("stream-fleet-view");
    let direct = fleet.send_three_phases();
    let ports = fleet.live_ports();
    let booked = fleet.booked(&ports);
    let mut merged = Figures::default();
    let agreed = came(|| {
        merged = Figures::of(port);
        merged == booked
    });
    let again: Vec<u64> = [
        "int_collect_nats_consumer_redelivered_total ",
        "int_collect_nats_consumer_unconfirmed_total ",
        "int_collect_nats_partition_pull_errors_total ",
    ]
    .map(|family| ports.iter().map(|p| metric(*p, family)).sum())
    .into();
    eprintln!("fleet view: direct {direct:?}; aggregators' sum {booked:?} (redelivered, unconfirmed, pull errors: {again:?}); merged {merged:?}");
    assert!(agreed, "the view's metrics {merged:?} equal the aggregators' sum {booked:?}");
    assert_eq!(merged, direct, "the view's metrics equal the one collector's");
    assert!(direct.path_changes > 0 && direct.lost_packets > 0 && direct.link_latencies > 0, "{direct:?}");
    let links = metrics_links(fleet.direct_metrics);
    let agreed = came(|| metrics_links(port) == links && web_links(web) == links);
    assert!(
        agreed,
        "each link's count: one collector {links:?}, metrics {:?}, web {:?}",
        metrics_links(port),
        web_links(web)
    );
    // Each flow's path and each queue: the flows the aggregators carry
    // (their ledgers': the INT-MD flows; postcards make no flow there)
    // are placed on the view's page as the traffic routes them, a third
    // of each phase's through node 5 at the end; the queues' last
    // figures are the one collector's.
    let phases = 3;
    let expected = (phases * usize::from(FLOWS), phases * usize::from(FLOWS).div_ceil(3));
    let placed = came(|| web_paths(web) == expected);
    assert!(placed, "the view's placed paths {:?}, the traffic's {expected:?}", web_paths(web));
    let queues = occupancies(fleet.direct_metrics);
    assert!(!queues.is_empty(), "the one collector follows queues");
    let agreed = came(|| occupancies(port) == queues);
    assert!(agreed, "queues: one collector {queues:?}, the view {:?}", occupancies(port));
    let sizes: Vec<u64> = ports.iter().map(|p| metric(*p, "int_collect_fleet_state_bytes ")).collect();
    eprintln!("fleet view: the aggregators' last states: {sizes:?} bytes");
    // A graceful stop: each aggregator's last state stays in the view.
    for aggregator in &mut fleet.aggregators {
        terminate(aggregator.as_mut().unwrap());
        aggregator.take();
    }
    wait_for("the view keeps the three stopped aggregators' last books", || aggregators(port) == (0, 3));
    assert_eq!(Figures::of(port), direct, "after the aggregators stopped");
    assert_eq!(metric(port, "int_collect_fleet_aggregators_expired_total "), 0);
    let one = summary(&mut fleet.direct.0);
    let merged = summary(view.0.as_mut().unwrap());
    view.0.take();
    let exact = compare(&one, &merged);
    let links = one["links"].as_array().unwrap().len();
    eprintln!(
        "fleet view: summaries equal; {links} links, {exact} of their {} p50/p99 exactly equal",
        2 * links
    );
    assert_eq!(merged["fleet"]["stopped"], 3);
}

/// Sends `datagrams` (part of a phase) to their receivers and to the
/// direct collector; waits until the direct collector has booked them
/// (`before` reports before) and the aggregators on `ports` as much.
fn send_part(fleet: &Fleet, datagrams: &[(usize, usize, Vec<u8>)], before: u64, ports: &[u16]) -> Figures {
    let part = Phase { datagrams: datagrams.to_vec(), links: 0, changes: 0 };
    fleet.send(&part);
    let reports = before + datagrams.len() as u64;
    wait_for("the direct collector books the part", || Figures::of(fleet.direct_metrics).reports == reports);
    let direct = Figures::of(fleet.direct_metrics);
    wait_for("the aggregators book the part", || fleet.booked(ports) == direct);
    direct
}

#[test]
fn a_killed_aggregators_partitions_move_with_their_books() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let (mut fleet, mut view, port, _) = fleet_and_view("stream-fleet-view-kill");
    let mut numbers = [0u32; 4];
    // Postcards after the kill only (a switch silent for a join window
    // closes no group). The first phase's flows go on after the kill: a
    // third of them change path then, counted only against the path
    // their checkpoint kept.
    let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, if n == 0 { 0 } else { CARDS })).collect();
    let half = usize::from(PACKETS / 2) * usize::from(common::partitions::FLOWS);
    let (before, after) = phases[0].datagrams.split_at(half);
    let ports = fleet.live_ports();
    let first = send_part(&fleet, before, 0, &ports);
    let victim = fleet.aggregator_ports[0];
    let kept = Figures::of(victim);
    wait_for("the victim's checkpoints hold all it booked", || {
        metric(victim, "int_collect_nats_checkpoint_uncovered ") == 0
            && metric(victim, "int_collect_nats_checkpoints_total{outcome=\"written\"} ") > 0
    });
    let held = metric(victim, "int_collect_nats_partitions_owned ");
    let restored_by = |ports: &[u16]| -> u64 {
        let family = "int_collect_nats_checkpoints_total{outcome=\"restored\"} ";
        ports.iter().map(|p| metric(*p, family)).sum()
    };
    let restored_before = restored_by(&ports[1..]);
    let size = metric(victim, "int_collect_nats_checkpoint_bytes ");
    let killed_at = Instant::now();
    let child = fleet.aggregators[0].take().unwrap();
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
    stop(child);
    let survivors = fleet.live_ports();
    wait_for("the survivors own the 16 partitions", || owned(&survivors).0 == 16);
    let takeover = killed_at.elapsed();
    let restored = restored_by(&survivors) - restored_before;
    let behind: u64 =
        survivors.iter().map(|p| metric(*p, "int_collect_nats_checkpoint_behind_messages_total ")).sum();
    eprintln!(
        "fleet view: killed holding {held} partitions ({kept:?} of {first:?}; its last checkpoint {size} bytes); \
         the survivors owned all 16 after {:.2} s, {restored} checkpoints read, {behind} messages behind them",
        takeover.as_secs_f64()
    );
    assert!(kept.reports > 0, "the victim booked some: {kept:?}");
    // A partition none of whose flows came has no checkpoint to read.
    assert!(
        restored > 0 && restored <= held,
        "the victim's partitions taken with their checkpoints: {restored}"
    );
    send_part(&fleet, after, first.reports, &survivors);
    for phase in &phases[1..] {
        fleet.send(phase);
    }
    let direct = settled(fleet.direct_metrics, &phases);
    let (mut booked, mut merged) = (Figures::default(), Figures::default());
    let agreed = came(|| {
        (booked, merged) = (fleet.booked(&survivors), Figures::of(port));
        booked == direct && merged == direct
    });
    eprintln!("fleet view: direct {direct:?}; survivors {booked:?}; view {merged:?}");
    assert!(
        agreed,
        "the survivors' books {booked:?} and the view's {merged:?} equal one collector's {direct:?}"
    );
    let links = metrics_links(fleet.direct_metrics);
    assert!(
        came(|| metrics_links(port) == links),
        "each link's count: {links:?}, view {:?}",
        metrics_links(port)
    );
    // The view's summary at exit: each link's p50 and p99 too.
    let one = summary(&mut fleet.direct.0);
    let merged = summary(view.0.as_mut().unwrap());
    view.0.take();
    let exact = compare(&one, &merged);
    eprintln!("fleet view: after the kill, summaries equal; {exact} p50/p99 exactly equal");
}
