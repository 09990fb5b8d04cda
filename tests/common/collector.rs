//! A collector (int-tools collect) on loopback, and hand-made reports for
//! it. Shared by int-node's and int-tools' end-to-end tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};

use int_core::flow::FlowKey;
use int_core::report::{DropSummaryReport, DropSummaryRepr, ReportHeaderRepr};

/// Starts `collect --json` on a free loopback port with `extra` arguments;
/// returns it (listening) and its address.
pub fn start_collector(tools: &Path, extra: &[&str]) -> (std::process::Child, String) {
    // Port 0: the collector takes a free port itself and says which (a port
    // found free here could be taken by another test before it binds).
    let mut child = Command::new(tools)
        .args(["collect", "--listen", "127.0.0.1:0", "--json", "--interval", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let listen =
        line.split("listening on ").nth(1).and_then(|rest| rest.split(' ').next()).unwrap().to_string();
    // Keep reading what it says later: a closed pipe would end it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, listen)
}

/// The collector's closing summary (the last JSON line).
pub fn summary_of(child: std::process::Child) -> serde_json::Value {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let last = text.lines().last().unwrap();
    serde_json::from_str::<serde_json::Value>(last).unwrap()["summary"].clone()
}

/// A Drop-Summary report from node 1 to node 2 for one UDP flow.
pub fn drop_summary(sequence: u32, gap_count: u32) -> Vec<u8> {
    let report = DropSummaryReport {
        header: ReportHeaderRepr::drop_summary(sequence, 1_700_000_000, 0),
        summary: DropSummaryRepr {
            source_node: 1,
            sink_node: 2,
            gap_sequence: 100,
            gap_count,
            ..Default::default()
        },
        flow: FlowKey::v4(Ipv4Addr::new(10, 9, 9, 9), Ipv4Addr::new(10, 8, 8, 8), 17, 1, 2),
    };
    let mut buf = [0u8; 64];
    let len = report.emit(&mut buf).unwrap();
    buf[..len].to_vec()
}
