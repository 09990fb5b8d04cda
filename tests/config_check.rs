//! `int-node check`: every example config passes; a bad one gets one line
//! per problem with its YAML path and a hint, and a non-zero exit code,
//! without starting DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn examples(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(examples(&path));
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
    out
}

#[test]
fn every_example_config_passes_check() {
    let config_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let files = examples(&config_dir);
    assert!(files.len() >= 5, "{files:?}");
    for file in files.iter().filter(|f| !f.to_string_lossy().contains("/lab/")) {
        let output = Command::new(BIN).args(["check", "--config"]).arg(file).output().unwrap();
        assert!(output.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stdout).contains(": ok ("));
    }
}

#[test]
fn bad_config_names_every_problem() {
    let dir = workdir("bad-config");
    std::fs::write(
        dir.join("bad.yaml"),
        "
ports:
  - {name: in, device: 'net_pcap0,rx_pcap=a.pcap'}
pipelines:
  - role: source
    lcore: 1
    rx: {port: in}
    tx: {port: out}
    source: {instructions: [switch_id, colour], watchlist: [{dst: 10.0.0.0/40}]}
  - role: sink
    lcore: 1
    rx: {port: in}
    tx: {port: in}
    sink: {latency: {refresh_ms: 86400000}}
",
    )
    .unwrap();
    let output = Command::new(BIN).args(["check", "--config"]).arg(dir.join("bad.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "pipelines[0].tx.port: no port named \"out\"",
        "pipelines[0].source.instructions[1]: unknown instruction \"colour\"",
        "pipelines[0].source.watchlist[0].dst: \"10.0.0.0/40\" is not an IPv4 prefix",
        "pipelines[1].rx: this RX queue is already polled by another pipeline",
        "export: a sink pipeline needs an export section",
        "pipelines[1].sink.latency.refresh_ms: 86400000 ms is longer than a flow's report clock can count",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(stderr.matches("hint: ").count() >= 6, "a hint per problem:\n{stderr}");

    std::fs::write(dir.join("typo.yaml"), "ports: []\npipelins: []\n").unwrap();
    let output = Command::new(BIN).args(["check", "--config"]).arg(dir.join("typo.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `pipelins`"), "{stderr}");
    assert!(stderr.contains("hint: check the spelling"), "{stderr}");

    let output = Command::new(BIN).args(["check", "--config", "/nonexistent/x.yaml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read /nonexistent/x.yaml"));
}
