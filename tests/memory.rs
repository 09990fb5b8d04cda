//! Sizes no host has: `check` works out the memory a config asks for and
//! refuses what cannot be had, naming the figure; `run` refuses the same
//! before EAL starts, never aborting on an allocation; and what `check`
//! says a flow table costs is what the running node holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A sink of `capacity` flows (and `pool` mempool settings), replaying
/// ten flows forever.
fn sink_config(capacity: &str, pool: &str, version: &str) -> String {
    replay_source_config("--no-telemetry", "export: {collector: '127.0.0.1:9'}")
        .replace(
            "role: source, lcore: 1, rx: {port: in}, tx: {port: out}}",
            &format!(
                "role: sink, lcore: 1, rx: {{port: in}}, tx: {{port: out}}, int: {{version: {version}}}, sink: {{flows: {{capacity: {capacity}}}}}}}"
            ),
        )
        .replace("mempool: {mbufs: 4095, cache: 128}", pool)
}

fn said(output: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn sizes_no_host_has_are_refused_with_their_figures() {
    let dir = workdir("memory-refused");
    ten_flows_pcap(&dir);
    let pool = "mempool: {mbufs: 4095, cache: 128}";
    let cases = [
        (
            sink_config("2147483648", pool, "0.5"),
            "the flow tables, report rings and capture buffers need 320.0 GiB",
        ),
        (sink_config("4294967295", pool, "2.1"), "need 896.0 GiB"),
        (
            sink_config("1000", "mempool: {mbufs: 2147483648, cache: 128}", "0.5"),
            "the mbufs need 4.6 TiB of DPDK memory, and EAL's -m gives 256.0 MiB",
        ),
        (
            sink_config("1000", "mempool: {mbufs: 4095, cache: 2147483648}", "0.5"),
            "mempool.cache: a cache of 2147483648 mbufs",
        ),
    ];
    for (config, expected) in cases {
        std::fs::write(dir.join("node.yaml"), &config).unwrap();
        for command in ["check", "run"] {
            let output = Command::new(BIN)
                .args([command, "--config", "node.yaml"])
                .current_dir(&dir)
                .output()
                .unwrap();
            let text = said(&output);
            // An exit code, not a signal (SIGABRT): refused, not aborted.
            let refused = if command == "check" { [2, 2] } else { [1, 2] };
            assert!(output.status.code().is_some_and(|c| refused.contains(&c)), "{command}: {text}");
            assert!(text.contains(expected), "{command}: {text}");
            assert!(!text.contains("memory allocation of"), "{command} aborted: {text}");
        }
    }
}

/// `check` counts an IOAM domain's tables as its stages make them: the
/// encapsulating node's that numbers packets (`sequence: true`), and the
/// decapsulating node's, which keeps IPv6 flows' addresses.
#[test]
fn check_counts_the_ioam_nodes_tables() {
    let dir = workdir("memory-ioam");
    ten_flows_pcap(&dir);
    let domain = "int: {version: ioam, namespace: 123, sequence: true}";
    let cases = [
        (format!("role: source, {domain}, source: {{flows: {{capacity: 1048576}}}}"), "flow tables 48.0 MiB"),
        (format!("role: sink, {domain}, sink: {{flows: {{capacity: 1048576}}}}"), "flow tables 224.0 MiB"),
    ];
    for (stage, expected) in cases {
        let config = replay_source_config("--no-telemetry", "export: {collector: '127.0.0.1:9'}")
            .replace("role: source,", &format!("{stage},"));
        std::fs::write(dir.join("node.yaml"), &config).unwrap();
        let output =
            Command::new(BIN).args(["check", "--config", "node.yaml"]).current_dir(&dir).output().unwrap();
        let text = said(&output);
        assert!(output.status.success(), "{text}");
        assert!(text.contains(expected), "{stage}: {text}");
    }
}

/// `VmRSS` of a running process, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap();
    kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
}

/// The flow tables `check` works out for a config, bytes.
fn planned_tables(dir: &std::path::Path) -> f64 {
    let output =
        Command::new(BIN).args(["check", "--config", "node.yaml"]).current_dir(dir).output().unwrap();
    let text = said(&output);
    let rest = text.split("flow tables ").nth(1).and_then(|rest| rest.split_once('(')).unwrap().1;
    let figure = rest.split(' ').next().unwrap();
    figure.parse::<f64>().unwrap()
}

/// The RSS of a node once it forwards (its counters say so), with a flow
/// table of `capacity`.
fn running_rss(dir: &std::path::Path, capacity: &str) -> (u64, f64) {
    let pool = "mempool: {mbufs: 4095, cache: 128}";
    std::fs::write(
        dir.join("node.yaml"),
        sink_config(capacity, pool, "0.5")
            .replace("--no-telemetry", "--no-telemetry, --file-prefix, int-node-memory"),
    )
    .unwrap();
    let planned = planned_tables(dir);
    let mut node = Command::new(BIN)
        .args(["run", "--config", "node.yaml", "--duration", "60"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Forwarding is the state: the start-up allocations are behind it.
    let mut log = std::io::BufReader::new(node.stderr.take().unwrap());
    let started = Instant::now();
    let mut line = String::new();
    while !line.contains(" Mpps rx_packets=") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut log, &mut line).unwrap() > 0, "the node stopped");
        assert!(started.elapsed() < Duration::from_secs(60), "no counters");
    }
    let resident = rss(node.id());
    Command::new("kill").args(["-INT", &node.id().to_string()]).status().unwrap();
    assert!(node.wait().unwrap().success());
    (resident, planned)
}

#[test]
fn a_million_flow_table_holds_what_check_said() {
    let dir = workdir("memory-rss");
    ten_flows_pcap(&dir);
    let (small, small_plan) = running_rss(&dir, "1000");
    let (large, large_plan) = running_rss(&dir, "1000000");
    let (grown, planned) = ((large - small) as f64, large_plan - small_plan);
    eprintln!("RSS {small} -> {large} bytes: {grown} grown, {planned} planned");
    assert!((grown / planned - 1.0).abs() < 0.10, "RSS grew {grown} bytes, check said {planned}");
}
