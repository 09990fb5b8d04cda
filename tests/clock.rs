//! One time base per host: a source and a sink in two processes, started
//! seconds apart, joined by a memif link. Every latency the sink measures is
//! the source's timestamp subtracted from its own clock, so with one host
//! clock none can be negative (causality), and the smallest bounds how far
//! the sink's clock could be ahead. The replay carries 100,000 flows for
//! seconds: a clock that never steps back expires none of them while they
//! speak.
//!
//! INT_NODE_CLOCK_SECONDS sets how long the sink runs (default 6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const FLOWS: u32 = 100_000;

fn node(name: &str, node_id: &str, lcores: &str, ports: &str, pipeline: &str, export: &str) -> String {
    format!(
        "
node_id: {node_id}
eal: [--no-huge, -m, '1024', --no-pci, --no-shconf, --lcores, '{lcores}', --log-level, 'lib.eal:error', --no-telemetry]
# infinite_rx holds the whole pcap in mbufs.
mempool: {{mbufs: 131071}}
ports:
{ports}
pipelines:
  - {{name: {name}, role: {name}, lcore: 1, rx: {{port: in}}, tx: {{port: out}}, {pipeline}}}
{export}"
    )
}

#[test]
fn two_processes_share_one_clock_and_expire_no_live_flow() {
    let seconds: u64 = std::env::var("INT_NODE_CLOCK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let dir = workdir("clock");
    let packets = FLOWS.to_string();
    int_tools(
        &dir,
        &["gen", "--out", "in.pcap", "--packets", &packets, "--flows", &packets, "--sizes", "64"],
    );
    let socket = dir.join("memif.sock");
    let _ = std::fs::remove_file(&socket);
    let flows = format!("{{flows: {{capacity: {}}}}}", 2 * FLOWS);
    // The source's worker on CPU 1, the sink's on CPU 0.
    let source = node(
        "source",
        "10.0.0.1",
        "0@0,1@1",
        &format!(
            "  - {{name: in, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=unused.pcap,infinite_rx=1'}}\n  \
             - {{name: out, device: 'net_memif0,role=server,socket={}'}}",
            socket.display()
        ),
        &format!("source: {flows}"),
        "",
    );
    let collector = Collector::new();
    let sink = node(
        "sink",
        "10.0.0.2",
        "0@1,1@0",
        &format!(
            "  - {{name: in, device: 'net_memif0,role=client,socket={}'}}\n  - {{name: out, device: 'net_null0'}}",
            socket.display()
        ),
        &format!("sink: {flows}"),
        &format!("export: {{collector: '{}'}}", collector.addr()),
    );
    std::fs::write(dir.join("source.yaml"), source).unwrap();
    std::fs::write(dir.join("sink.yaml"), sink).unwrap();
    // The source runs until the sink is done (then SIGINT).
    let mut source_run = Command::new(BIN)
        .args(["run", "--config", "source.yaml", "--stats-json", "source.json", "--duration", "3600"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once it forwards (its first counters line), however long a loaded
    // machine took to start it; its log read on in the background.
    let mut log = std::io::BufReader::new(source_run.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains(" Mpps ") {
        assert!(std::io::BufRead::read_line(&mut log, &mut said).unwrap() > 0, "the source stopped: {said}");
    }
    let source_log = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut log, &mut rest).map(|_| said + &rest).unwrap_or_default()
    });
    // The sink started 3 s later: a per-process clock would have a phase
    // of its own (the wait is the test's design, not a wait for a state).
    std::thread::sleep(Duration::from_secs(3));
    let sink_run = Command::new(BIN)
        .args(["run", "--config", "sink.yaml", "--stats-json", "sink.json", "--duration"])
        .arg(seconds.to_string())
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(sink_run.status.success(), "{}", String::from_utf8_lossy(&sink_run.stderr));
    Command::new("kill").args(["-INT", &source_run.id().to_string()]).status().unwrap();
    let status = source_run.wait().unwrap();
    assert!(status.success(), "{}", source_log.join().unwrap());
    let stats = |file: &str, pipeline: &str| -> serde_json::Value {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        json["pipelines"][pipeline].clone()
    };
    let (source, sink) = (stats("source.json", "source"), stats("sink.json", "sink"));
    eprintln!("sink over {seconds} s: {sink}");
    assert!(sink["stripped"].as_u64().unwrap() > u64::from(FLOWS), "the sink saw every flow again: {sink}");
    assert_eq!(sink["clock_skew"], 0, "a latency below zero: the clocks disagree: {sink}");
    let min = sink["latency_min_ns"].as_u64().unwrap();
    assert!(
        (1..2_000_000).contains(&min),
        "smallest latency {min} ns: the sink's clock ahead by at most that"
    );
    assert_eq!(source["clock_steps_back"], 0);
    assert_eq!(sink["clock_steps_back"], 0);
    // A flow forgotten while it speaks would be created again (and the
    // source would number it from 1, a restart at the sink).
    assert_eq!(source["flows_created"], u64::from(FLOWS), "{source}");
    // The sink may miss a flow altogether when the memif ring overflows on
    // a loaded host; what it must never do is make one twice.
    let created = sink["flows_created"].as_u64().unwrap();
    assert!(created <= u64::from(FLOWS) && created > u64::from(FLOWS) / 2, "{sink}");
    assert_eq!(sink["seq_restarts"], 0, "{sink}");
}
