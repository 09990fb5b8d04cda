//! The stream on a real three-server NATS JetStream cluster (Debian's
//! nats-server, three of them on loopback ports, started and stopped
//! here), its stream kept by all three (R3): two receiving collectors
//! publish, two aggregators share one consumer, each told of one server
//! only; the stream's leader (or an aggregator's one server) is killed
//! mid-run and started again later. Every report sent is booked
//! exactly once across the aggregators, and their sums equal one
//! collector fed every report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{metric, start_cluster, wait_healthy, Server};
use common::collector::{drop_summary, stack_report, start_collector};
use common::servers::{free_port, http_get, json_in, NATS};
use common::*;
use serde_json::Value;

const STREAM_BYTES: &str = "67108864";

/// The stream's leader, as a server's monitoring page says.
fn stream_leader(servers: &[Server]) -> Option<String> {
    servers.iter().filter(|s| s.child.is_some()).find_map(|s| {
        let page = json_in(&http_get(s.monitor, "/jsz?accounts=true&streams=true")?)?;
        let accounts = page["account_details"].as_array()?.clone();
        accounts.iter().find_map(|account| {
            let streams = account["stream_detail"].as_array()?;
            let stream = streams.iter().find(|stream| stream["name"] == "INT")?;
            stream["cluster"]["leader"].as_str().map(str::to_string)
        })
    })
}

/// Pull requests waiting on the consumer `shared`, as a server's
/// monitoring page says (each aggregator keeps some open).
fn waiting_pulls(servers: &[Server]) -> u64 {
    let detail = |s: &Server| -> Option<u64> {
        let page = json_in(&http_get(s.monitor, "/jsz?accounts=true&streams=true&consumers=true")?)?;
        let accounts = page["account_details"].as_array()?.clone();
        accounts.iter().find_map(|account| {
            let streams = account["stream_detail"].as_array()?;
            let stream = streams.iter().find(|stream| stream["name"] == "INT")?;
            let consumers = stream["consumer_detail"].as_array()?;
            consumers.iter().find(|c| c["name"] == "shared")?["num_waiting"].as_u64()
        })
    };
    servers.iter().filter(|s| s.child.is_some()).filter_map(detail).max().unwrap_or(0)
}

/// An aggregator under the shared consumer, serving metrics on `port`.
fn spawn_aggregator(urls: &str, port: u16) -> Child {
    Command::new(tools_bin())
        .args(["collect", "--from-nats", urls, "--nats-consumer", "shared", "--nats-replicas", "3"])
        .args(["--quiet", "--json", "--interval", "0", "--duration", "600", "--nats-max-bytes", STREAM_BYTES])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A child's summary once it stops (SIGINT).
fn summary_of(child: Child) -> Value {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["summary"].clone()
}

/// Feed `n` of each receiver: drop summaries, and TR 2.0 stacks of a
/// fixed three-hop path (no path changes: aggregators sharing a consumer
/// each see part of a flow).
fn feeds(n: u32) -> [Vec<Vec<u8>>; 2] {
    use int_core::int21::HopMetadata;
    let hop = |node: u32, at: u64| HopMetadata {
        node_id: Some(node),
        hop_latency: Some(700 + node),
        ingress_timestamp: Some(at),
        egress_timestamp: Some(at + 700),
        ..Default::default()
    };
    let drops = (1..=n).map(|s| drop_summary(s, s % 3)).collect();
    let stacks = (1..=n)
        .map(|s| {
            let t = 1_700_000_000_000_000_000 + u64::from(s) * 1_000_000;
            stack_report(
                s,
                9,
                7000 + (s % 4) as u16,
                &[hop(3, t + 20_000), hop(2, t + 10_000), hop(1, t)],
                t + 30_000,
            )
        })
        .collect();
    [drops, stacks]
}

#[test]
fn a_cluster_that_loses_its_stream_leader_loses_no_report() {
    if !Path::new(NATS).exists() {
        eprintln!("skipped: {NATS} missing (apt-get install nats-server; scripts/install-deps.sh does)");
        return;
    }
    let dir = workdir("stream-cluster");
    let mut servers = start_cluster(&dir);
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    let urls = urls.join(",");
    // Each aggregator is told of one server: it finds the others from it
    // (the cluster's discovery), and one of the two loses its server.
    let aggregator_ports = [free_port(), free_port()];
    let aggregators = [0, 1].map(|n| spawn_aggregator(&servers[n].url(), aggregator_ports[n]));
    let per_phase = 300u32;
    let feeds = feeds(3 * per_phase);
    let total: usize = feeds.iter().map(Vec::len).sum();
    let receiver_ports = [free_port(), free_port()];
    let receivers: Vec<(Child, String)> = receiver_ports
        .iter()
        .zip(&feeds)
        .map(|(port, feed)| {
            let metrics = format!("127.0.0.1:{port}");
            let count = feed.len().to_string();
            let args =
                ["--quiet", "--count", &count, "--duration", "600", "--nats", &urls, "--nats-replicas", "3"];
            let more = ["--nats-max-bytes", STREAM_BYTES, "--metrics", &metrics];
            start_collector(&tools_bin(), &[&args[..], &more[..]].concat())
        })
        .collect();
    let (direct, direct_at) =
        start_collector(&tools_bin(), &["--quiet", "--count", &total.to_string(), "--duration", "600"]);
    let senders = [UdpSocket::bind("127.0.0.1:0").unwrap(), UdpSocket::bind("127.0.0.1:0").unwrap()];
    let send = |phase: usize| {
        let range = phase * per_phase as usize..(phase + 1) * per_phase as usize;
        for i in range {
            for ((sender, feed), (_, at)) in senders.iter().zip(&feeds).zip(&receivers) {
                sender.send_to(&feed[i], at).unwrap();
                sender.send_to(&feed[i], &direct_at).unwrap();
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    };
    let acked = |n: u64, what: &str| {
        let started = Instant::now();
        for port in receiver_ports {
            while metric(port, "int_collect_nats_records_total{outcome=\"acked\"}") < n {
                assert!(started.elapsed() < Duration::from_secs(120), "{what}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    // Both aggregators pull before any report is sent: they share from the
    // first message on.
    let started = Instant::now();
    while waiting_pulls(&servers) < 2 {
        assert!(started.elapsed() < Duration::from_secs(120), "both aggregators pull");
        std::thread::sleep(Duration::from_millis(20));
    }
    send(0);
    acked(u64::from(per_phase), "the first third acknowledged");
    // The stream's leader, unless it is n2: then n0, an aggregator's only
    // server named.
    let leader = stream_leader(&servers).expect("the stream has a leader");
    let killed = servers.iter().position(|s| s.name == leader).filter(|n| *n < 2).unwrap_or(0);
    servers[killed].kill();
    send(1);
    acked(2 * u64::from(per_phase), "the second third acknowledged by the two servers left");
    servers[killed].start();
    wait_healthy(&servers);
    send(2);
    let published: Vec<Value> = receivers.into_iter().map(|(child, _)| summary_after_count(child)).collect();
    for summary in &published {
        let nats = &summary["nats"];
        assert_eq!((&nats["dropped"], &nats["lost"]), (&0.into(), &0.into()), "{nats}");
        assert_eq!(nats["acked"], 3 * per_phase, "{nats}");
    }
    let reports: u64 = published.iter().map(|s| s["reports"].as_u64().unwrap()).sum();
    let started = Instant::now();
    let booked = || aggregator_ports.iter().map(|p| metric(*p, "int_collect_reports_total")).sum::<u64>();
    while booked() < reports {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the aggregators book {} of {reports}",
            booked()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let summaries: Vec<Value> = aggregators.into_iter().map(summary_of).collect();
    let direct = summary_after_count(direct);
    for server in &mut servers {
        server.kill();
    }
    let said: Vec<String> =
        summaries.iter().map(|s| format!("{} {}", s["reports"], s["nats_consumer"])).collect();
    eprintln!(
        "cluster: {} killed (leader {leader}); the aggregators booked {said:?} of {reports} reports",
        servers[killed].name
    );
    let sum =
        |key: &dyn Fn(&Value) -> &Value| summaries.iter().map(|s| key(s).as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum(&|s| &s["reports"]), direct["reports"].as_u64().unwrap(), "each report once");
    for key in ["lost_reports", "malformed", "late_reports", "sequence_resyncs"] {
        assert_eq!(sum(&|s| &s[key]), direct[key].as_u64().unwrap(), "{key}");
    }
    let lost = sum(&|s| &s["all_flows"]["lost_packets"]);
    assert_eq!(lost, direct["all_flows"]["lost_packets"].as_u64().unwrap(), "packets lost");
    let latencies = sum(&|s| &s["all_flows"]["latency_reports"]);
    assert_eq!(latencies, direct["all_flows"]["latency_reports"].as_u64().unwrap(), "latency reports");
    assert!(
        summaries.iter().all(|s| s["reports"].as_u64().unwrap() > 0),
        "both aggregators took some: {said:?}"
    );
}

/// A collect's summary once it stopped at its count.
fn summary_after_count(child: Child) -> Value {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["summary"].clone()
}
