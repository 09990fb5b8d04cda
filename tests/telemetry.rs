//! DPDK telemetry: with telemetry on, `dpdk-telemetry.py` (Debian's
//! dpdk-dev) reads the node's pipelines and their counters while it runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

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
    let mut node = spawn_node(&dir, 6);
    // Until the node has started (or 5 s).
    let started = Instant::now();
    let mut answers = Vec::new();
    while started.elapsed() < Duration::from_secs(5) {
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
    assert!(node.wait().unwrap().success());
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
            let frame = int_core::craft::PacketSpec::udp(
                std::net::Ipv4Addr::new(10, 0, 0, flow),
                std::net::Ipv4Addr::new(10, 1, 0, 1),
                1000,
                53,
                30,
            )
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
    let mut node = spawn_node(&dir, 5);
    let started = Instant::now();
    let mut sent = None;
    while started.elapsed() < Duration::from_secs(4) {
        let answers = ask_prefix(prefix, &["/int_node/exporter"]);
        sent =
            answers.first().and_then(|a| a["/int_node/exporter"]["reports_sent"].as_u64()).filter(|n| *n > 0);
        if sent.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(node.wait().unwrap().success());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let total = stats["export"]["reports_sent"].as_u64().unwrap();
    let sent = sent.expect("telemetry saw reports sent while the node ran");
    assert!(sent <= total, "{sent} seen, {total} in all");
}
