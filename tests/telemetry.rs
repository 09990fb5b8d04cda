//! DPDK telemetry: with telemetry on, `dpdk-telemetry.py` (Debian's
//! dpdk-dev) reads the node's pipelines and their counters while it runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use int_core::craft::PacketSpec;

const CLIENT: &str = "/usr/bin/dpdk-telemetry.py";
const PREFIX: &str = "int-node-telemetry-test";

/// The client's answers to `commands`, one JSON value per command.
fn ask(commands: &[&str]) -> Vec<serde_json::Value> {
    ask_prefix(PREFIX, commands)
}

/// [`ask`] a node of another EAL file prefix.
fn ask_prefix(prefix: &str, commands: &[&str]) -> Vec<serde_json::Value> {
    let mut child = Command::new(CLIENT)
        .args(["-f", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(commands.join("\n").as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[test]
fn dpdk_telemetry_reads_the_pipelines_counters() {
    assert!(std::path::Path::new(CLIENT).exists(), "{CLIENT} missing: apt-get install dpdk-dev");
    let dir = workdir("telemetry");
    ten_flows_pcap(&dir);
    let config = replay_source_config(&format!("--file-prefix, {PREFIX}"), "");
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = spawn_node(&dir, 120);
    // Until the node has started and read every flow (the deadline only
    // bounds a hang).
    let started = Instant::now();
    let mut answers = Vec::new();
    while started.elapsed() < Duration::from_secs(60) {
        answers = ask(&[
            "/int_node/pipelines",
            "/int_node/pipeline,src",
            "/int_node/pipeline,nope",
            "/int_node/flows,src",
            "/int_node/exporter",
            "/ethdev/stats,0",
        ]);
        if answers.len() == 6
            && answers[1]["/int_node/pipeline"]["rx_packets"].as_u64() > Some(0)
            && answers[3]["/int_node/flows"]["live"].as_u64() == Some(10)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&mut node);
    assert_eq!(answers.len(), 6, "{answers:?}");
    let flows = &answers[3]["/int_node/flows"];
    assert_eq!(
        (flows["capacity"].as_u64(), flows["live"].as_u64(), flows["created"].as_u64()),
        (Some(65536), Some(10), Some(10)),
        "{flows}"
    );
    assert_eq!(
        answers[4]["/int_node/exporter"],
        serde_json::Value::Null,
        "no exporter on a source-only node"
    );
    // The ports are DPDK's own command's.
    assert!(answers[5]["/ethdev/stats"]["ipackets"].as_u64() > Some(0), "{}", answers[5]);
    assert_eq!(answers[0]["/int_node/pipelines"], serde_json::json!(["src"]));
    let live = &answers[1]["/int_node/pipeline"];
    let (received, instrumented) =
        (live["rx_packets"].as_u64().unwrap(), live["instrumented"].as_u64().unwrap());
    assert!(received > 0 && instrumented > 0);
    assert_eq!(live["flows_created"].as_u64(), Some(10));
    assert_eq!(answers[2]["/int_node/pipeline"], serde_json::Value::Null, "an unknown pipeline is refused");
    // Counters are read one by one while the worker publishes them, so a
    // live answer may be a burst or so apart between two counters; the
    // final ones agree, and went on from what telemetry saw.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let last = &stats["pipelines"]["src"];
    assert_eq!(last["instrumented"], last["rx_packets"], "every packet of the replay is instrumented");
    assert!(last["rx_packets"].as_u64().unwrap() > received.max(instrumented));
}

/// A sink's node answers `/int_node/exporter` with the reports it has
/// sent so far: at most what it sends in all, and some while it runs.
#[test]
fn dpdk_telemetry_reads_the_exporter() {
    assert!(std::path::Path::new(CLIENT).exists(), "{CLIENT} missing: apt-get install dpdk-dev");
    let dir = workdir("telemetry-exporter");
    let frames: Vec<Vec<u8>> = (0..10u8)
        .map(|flow| {
            let frame =
                PacketSpec::udp(Ipv4Addr::new(10, 0, 0, flow), Ipv4Addr::new(10, 1, 0, 1), 1000, 53, 30)
                    .build();
            instrument(&frame, 1, 1000)
        })
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let prefix = "int-node-telemetry-exporter";
    // Every packet's latency differs from the last report's: a report each.
    let config = replay_source_config(&format!("--file-prefix, {prefix}"), &format!(
        "export: {{collector: '{}', rate_limit: 0}}",
        collector.local_addr().unwrap()
    ))
    .replace(
        "role: source, lcore: 1, rx: {port: in}, tx: {port: out}}",
        "role: sink, lcore: 1, rx: {port: in}, tx: {port: out}, sink: {latency: {mode: absolute, threshold_ns: 0, refresh_ms: 0, max_skew_ms: 0}}}",
    );
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = spawn_node(&dir, 120);
    let started = Instant::now();
    let mut sent = None;
    while started.elapsed() < Duration::from_secs(60) {
        let answers = ask_prefix(prefix, &["/int_node/exporter"]);
        sent =
            answers.first().and_then(|a| a["/int_node/exporter"]["reports_sent"].as_u64()).filter(|n| *n > 0);
        if sent.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&mut node);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let total = stats["export"]["reports_sent"].as_u64().unwrap();
    let sent = sent.expect("telemetry saw reports sent while the node ran");
    assert!(sent <= total, "{sent} seen, {total} in all");
}

/// The answer to one command, asked until `ready` accepts it (or a minute).
fn ask_until(prefix: &str, command: &str, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let started = Instant::now();
    let mut answer = serde_json::Value::Null;
    // The deadline only bounds a hang: a loaded machine may take seconds
    // to start a node.
    while started.elapsed() < Duration::from_secs(60) {
        answer = ask_prefix(prefix, &[command]).pop().unwrap_or_default();
        if ready(&answer) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    answer
}

/// Waits until pipeline `src` has received `packets` (its replay is over),
/// then for the rankings of a sweep pass that began after that: two past
/// the last one published then. Returns them by packets and by latency.
/// The deadlines only bound a hang.
fn rankings_after_replay(prefix: &str, packets: u64) -> (serde_json::Value, serde_json::Value) {
    let received =
        |answer: &serde_json::Value| answer["/int_node/pipeline"]["rx_packets"].as_u64() == Some(packets);
    let counters = ask_until(prefix, "/int_node/pipeline,src", received);
    assert!(received(&counters), "the replay of {packets} packets never finished: {counters}");
    let pass = |answer: &serde_json::Value| answer["/int_node/top_flows"]["pass"].as_u64();
    let published = ask_until(prefix, "/int_node/top_flows,src", |a| pass(a).is_some());
    let after = pass(&published).expect("a pass number") + 2;
    let later = |answer: &serde_json::Value| pass(answer).is_some_and(|p| p >= after);
    let by_packets = ask_until(prefix, "/int_node/top_flows,src", later);
    let by_latency = ask_until(prefix, "/int_node/top_flows,src,latency", later);
    assert!(later(&by_packets) && later(&by_latency), "no pass after the replay: {by_packets} {by_latency}");
    (by_packets, by_latency)
}

/// A sink's flows, ranked by packets and by latency, each flow with its
/// own packet count and one-way latency (capture times are the sink's
/// clock): `/int_node/top_flows` answers exactly what the pcap holds.
#[test]
fn dpdk_telemetry_ranks_a_sinks_flows() {
    assert!(std::path::Path::new(CLIENT).exists(), "{CLIENT} missing: apt-get install dpdk-dev");
    let dir = workdir("telemetry-top-sink");
    // Flow k (10.0.0.k) sends 5k packets, numbered from 1, each (9-k)*100 µs
    // on the way: the most packets and the least latency go together.
    let latency_us = |k: u64| (9 - k) * 100;
    let start_ns = 1_700_000_000_000_000_000u64;
    let mut frames = Vec::new();
    for sequence in 1..=40u32 {
        for k in (1..=8u8).filter(|k| u32::from(*k) * 5 >= sequence) {
            let at_ns = start_ns + frames.len() as u64 * 1000;
            let plain =
                PacketSpec::udp(Ipv4Addr::new(10, 0, 0, k), Ipv4Addr::new(10, 1, 0, 1), 1000, 53, 30).build();
            let source_ts = (at_ns - latency_us(u64::from(k)) * 1000) as u32;
            frames.push((at_ns, instrument(&plain, sequence, source_ts)));
        }
    }
    write_pcap_at(&dir.join("in.pcap"), &frames);
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let prefix = "int-node-telemetry-top-sink";
    let config = replay_source_config(&format!("--file-prefix, {prefix}"), &format!(
        "export: {{collector: '{}', rate_limit: 0}}",
        collector.local_addr().unwrap()
    ))
    .replace("rx_pcap=in.pcap,infinite_rx=1", "rx_pcap=in.pcap")
    .replace(
        "role: source, lcore: 1, rx: {port: in}, tx: {port: out}}",
        "role: sink, lcore: 1, rx: {port: in}, tx: {port: out}, clock: rx-timestamp, sink: {latency: {mode: absolute, threshold_ns: 1}}}",
    );
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = spawn_node(&dir, 60);
    let (by_packets, by_latency) = rankings_after_replay(prefix, frames.len() as u64);
    let refused = ask_prefix(prefix, &["/int_node/top_flows,src,bytes", "/int_node/top_flows,nope"]);
    stop(&mut node);
    let flow = |k: u64| format!("udp 10.0.0.{k}:1000 -> 10.1.0.1:53");
    let (most_first, slowest_first) = ((1..=8u64).rev(), 1..=8u64);
    let expected = |order: &str, ks: Vec<u64>| {
        serde_json::json!({"/int_node/top_flows": {
            "flow": ks.iter().map(|k| flow(*k)).collect::<Vec<_>>(),
            "packets": ks.iter().map(|k| 5 * k).collect::<Vec<_>>(),
            "latency_ns": ks.iter().map(|k| latency_us(*k) * 1000).collect::<Vec<_>>(),
            "source_node": vec![0x0a00_0001u64; ks.len()],
            "order": order,
            "flows": 8,
        }})
    };
    let without_age = |mut answer: serde_json::Value| {
        let top = answer["/int_node/top_flows"].as_object_mut().unwrap();
        assert!(top.remove("pass").and_then(|p| p.as_u64()).is_some(), "a pass number");
        let age = top.remove("age_ms");
        assert!(age.and_then(|a| a.as_u64()).is_some_and(|ms| ms < 60_000), "{answer}");
        answer
    };
    assert_eq!(without_age(by_packets), expected("packets", most_first.collect()));
    assert_eq!(without_age(by_latency), expected("latency", slowest_first.collect()));
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|r| r["/int_node/top_flows"].is_null()), "{refused:?}");
}

/// A source ranks its flows by the packets it has numbered: flow k sends
/// 3^k packets, once; once the replay is over, a pass that began after it
/// ranks them with their exact counts.
#[test]
fn dpdk_telemetry_ranks_a_sources_flows() {
    assert!(std::path::Path::new(CLIENT).exists(), "{CLIENT} missing: apt-get install dpdk-dev");
    let dir = workdir("telemetry-top-source");
    let frames: Vec<Vec<u8>> = (1..=6u8)
        .flat_map(|k| {
            let frame =
                PacketSpec::udp(Ipv4Addr::new(10, 0, 0, k), Ipv4Addr::new(10, 1, 0, 1), 1000, 53, 30).build();
            std::iter::repeat_n(frame, 3usize.pow(u32::from(k)))
        })
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let prefix = "int-node-telemetry-top-source";
    let config = replay_source_config(&format!("--file-prefix, {prefix}"), "")
        .replace("rx_pcap=in.pcap,infinite_rx=1", "rx_pcap=in.pcap");
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = spawn_node(&dir, 60);
    let (answer, by_latency) = rankings_after_replay(prefix, frames.len() as u64);
    stop(&mut node);
    let top = &answer["/int_node/top_flows"];
    let flows: Vec<&str> = top["flow"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let expected: Vec<String> =
        (1..=6).rev().map(|k| format!("udp 10.0.0.{k}:1000 -> 10.1.0.1:53")).collect();
    assert_eq!(flows, expected, "{answer}");
    let packets: Vec<u64> = top["packets"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
    assert_eq!(packets, (1..=6u32).rev().map(|k| 3u64.pow(k)).collect::<Vec<_>>(), "{answer}");
    assert_eq!(top["flows"].as_u64(), Some(6));
    assert_eq!(
        by_latency["/int_node/top_flows"]["flow"],
        serde_json::json!([]),
        "a source measures no latency"
    );
}

/// Stops a node started by [`spawn_node`] (SIGINT) and checks it exits well.
fn stop(node: &mut std::process::Child) {
    Command::new("kill").args(["-INT", &node.id().to_string()]).status().unwrap();
    assert!(node.wait().unwrap().success());
}
