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
    let mut child = Command::new(CLIENT)
        .args(["-f", PREFIX])
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
    let frames: Vec<Vec<u8>> = (0..10u8)
        .map(|flow| {
            PacketSpec::udp(Ipv4Addr::new(10, 0, 0, flow), Ipv4Addr::new(10, 1, 0, 1), 1000, 53, 30).build()
        })
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let config = format!(
        "
node_id: 10.0.0.1
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, -l, 0-1, --log-level, 'lib.eal:error', --file-prefix, {PREFIX}]
mempool: {{mbufs: 4095, cache: 128}}
ports:
  - {{name: in, device: 'net_pcap0,rx_pcap=in.pcap,infinite_rx=1'}}
  - {{name: out, device: 'net_null0,no-rx=1'}}
pipelines:
  - {{name: src, role: source, lcore: 1, rx: {{port: in}}, tx: {{port: out}}}}
idle_sleep_us: 100
"
    );
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let mut node = Command::new(BIN)
        .args(["run", "--config", "node.yaml", "--duration", "6", "--stats-json", "stats.json"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the node has started (or 5 s).
    let started = Instant::now();
    let mut answers = Vec::new();
    while started.elapsed() < Duration::from_secs(5) {
        answers = ask(&["/int_node/pipelines", "/int_node/pipeline,src", "/int_node/pipeline,nope"]);
        if answers.len() == 3 && answers[1]["/int_node/pipeline"]["rx_packets"].as_u64() > Some(0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(node.wait().unwrap().success());
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["/int_node/pipelines"], serde_json::json!(["src"]));
    let live = &answers[1]["/int_node/pipeline"];
    let received = live["rx_packets"].as_u64().unwrap();
    assert!(received > 0);
    assert_eq!(live["instrumented"].as_u64(), Some(received), "every packet of the replay is instrumented");
    assert_eq!(live["flows_created"].as_u64(), Some(10));
    assert_eq!(answers[2]["/int_node/pipeline"], serde_json::Value::Null, "an unknown pipeline is refused");
    // The counters went on from what telemetry saw.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    assert!(stats["pipelines"]["src"]["rx_packets"].as_u64().unwrap() > received);
}
