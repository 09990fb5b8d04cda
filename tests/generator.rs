//! int-node's generator feeding a sink over a net_ring in one process (two
//! workers): flows in turn, numbered as on a live link. The sink sees
//! every flow in order, and counts lost only what the generator could not
//! hand over (the generator waits for the sink, so that is little or
//! nothing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::Command;

use common::*;

const FLOWS: u64 = 50;

fn config(collector: &str) -> String {
    format!(
        "
node_id: 10.0.0.2
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, --lcores, '0@0,1@1,2@1', --main-lcore, '2', --log-level, 'lib.eal:error', --no-telemetry, --file-prefix, int-node-generator]
mempool: {{mbufs: 8191, cache: 256}}
ports:
  - {{name: blank, device: net_null0}}
  - {{name: link, device: net_ring0}}
  - {{name: out, device: 'net_null1,no-rx=1'}}
pipelines:
  - {{name: g, role: generate, lcore: 0, rx: {{port: blank}}, tx: {{port: link}}, generate: {{flows: {FLOWS}, frame_size: 80, instrument: hostint}}}}
  - {{name: s, role: sink, lcore: 1, rx: {{port: link}}, tx: {{port: out}}, sink: {{flows: {{capacity: 1024}}}}}}
export: {{collector: '{collector}'}}
"
    )
}

#[test]
fn a_sink_fed_live_sees_its_flows_in_order() {
    let dir = workdir("generator");
    let collector = Collector::new();
    std::fs::write(dir.join("node.yaml"), config(&collector.addr())).unwrap();
    let output = Command::new(BIN)
        .args(["run", "--config", "node.yaml", "--duration", "2", "--stats-json", "stats.json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["packet_path_allocations"], 0);
    let counter = |pipeline: &str, name: &str| stats["pipelines"][pipeline][name].as_u64().unwrap();
    let (generated, sent, dropped) =
        (counter("g", "generated"), counter("g", "tx_packets"), counter("g", "tx_dropped"));
    // Enough rounds over the flows for order to mean something; not a
    // rate: on a loaded host the generator makes a tenth of its idle pace.
    assert!(generated >= 100 * FLOWS, "{generated} generated");
    assert_eq!(generated, sent + dropped);
    // What was in the ring when the workers stopped never reached the sink.
    let received = counter("s", "rx_packets");
    assert!(received <= sent && sent - received <= 1024, "sent {sent}, received {received}");
    assert_eq!(counter("s", "stripped"), received);
    assert_eq!(counter("s", "flows_created"), FLOWS);
    for name in [
        "seq_duplicates",
        "seq_reordered",
        "seq_late",
        "seq_restarts",
        "seq_implausible",
        "malformed_dropped",
    ] {
        assert_eq!(counter("s", name), 0, "{name}");
    }
    // Every packet the generator dropped is a gap the sink declared lost,
    // but for the last burst or two of a flow, which no later packet
    // revealed.
    let lost = counter("s", "lost_packets");
    assert!(lost <= dropped && dropped - lost <= 2 * 32, "dropped {dropped}, lost {lost}");
    assert!(counter("s", "latency_min_ns") > 0);
}
