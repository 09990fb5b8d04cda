//! The tools around the node: gen is reproducible, decode prints every INT
//! and report field (golden text, JSON that parses), collect receives real
//! UDP reports on loopback and detects lost reports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};

use common::*;
use int_core::flow::FlowKey;
use int_core::report::{DropSummaryReport, DropSummaryRepr, ReportHeaderRepr};

#[test]
fn gen_is_seeded_and_reproducible() {
    let dir = workdir("gen");
    let args = |out: &str, seed: &str| {
        vec![
            "gen",
            "--out",
            out,
            "--packets",
            "500",
            "--flows",
            "10",
            "--sizes",
            "imix",
            "--vlan",
            "0.2",
            "--tcp-options",
            "--seed",
            seed,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    for (out, seed) in [("a.pcap", "7"), ("b.pcap", "7"), ("c.pcap", "8")] {
        let a = args(out, seed);
        int_node(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let a = read_pcap(&dir.join("a.pcap"));
    assert_eq!(a, read_pcap(&dir.join("b.pcap")), "same seed, same bytes");
    assert_ne!(a, read_pcap(&dir.join("c.pcap")), "another seed, other sizes");
    assert_eq!(a.len(), 500);
    let vlan = a.iter().filter(|f| f[12..14] == [0x81, 0x00]).count();
    assert!((50..=150).contains(&vlan), "{vlan} tagged of 500 at 20%");
    for size in [64, 576, 1500] {
        assert!(a.iter().any(|f| f.len() == size), "a {size}-byte frame");
    }
    // Loss and reordering: fewer packets, sequence numbers out of order.
    int_node(
        &dir,
        &[
            "gen",
            "--out",
            "lossy.pcap",
            "--packets",
            "1000",
            "--flows",
            "1",
            "--proto",
            "udp",
            "--instrument",
            "hostint",
            "--loss",
            "0.1",
            "--reorder",
            "0.05",
        ],
    );
    let lossy = read_pcap(&dir.join("lossy.pcap"));
    assert!((850..=950).contains(&lossy.len()), "{} kept of 1000 at 10% loss", lossy.len());
    let config = int_core::sink::SinkConfig::default();
    let sequences: Vec<u32> = lossy
        .iter()
        .map(|f| int_core::sink::extract(f, &config).unwrap().unwrap().sequence.unwrap())
        .collect();
    assert!(sequences.windows(2).any(|w| w[1] < w[0]), "some reordering");
}

#[test]
fn decode_golden_text_and_json() {
    let dir = workdir("decode");
    int_node(
        &dir,
        &[
            "gen",
            "--out",
            "int.pcap",
            "--packets",
            "3",
            "--flows",
            "3",
            "--proto",
            "mix",
            "--sizes",
            "100",
            "--instrument",
            "hostint",
            "--seed",
            "3",
        ],
    );
    let text = int_node(&dir, &["decode", "int.pcap"]);
    let golden = include_str!("golden/decode-hostint.txt");
    assert_eq!(text, golden, "decode output changed; if on purpose, update tests/golden/decode-hostint.txt");
    let json = int_node(&dir, &["decode", "--json", "int.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values.len(), 3);
    assert!(values.iter().all(|v| v["kind"] == "int"));
    assert_eq!(values[2]["flow"]["protocol"], 6, "the third flow is TCP in a mix");
    assert_eq!(values[0]["int"]["hops"][0]["switch_id"], 0x0a00_0001);
}

/// A sink whose exporter is a DPDK port (net_pcap): its report frames are
/// Ethernet/IPv4/UDP to the collector, and decode reads both kinds back.
#[test]
fn port_exporter_frames_decode() {
    let dir = workdir("port-export");
    let run = run_port_exporter_sink(&dir, 600);
    let frames = read_pcap(&dir.join("reports.pcap"));
    assert_eq!(frames.len() as u64, run.stats["export"]["reports_sent"].as_u64().unwrap());
    assert!(!frames.is_empty());
    let json = int_node(&dir, &["decode", "--json", "reports.pcap"]);
    let mut kinds = std::collections::BTreeMap::new();
    let mut lost = 0;
    for (i, line) in json.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "report", "{line}");
        assert_eq!(v["dst"], "192.0.2.9");
        assert_eq!(
            v["report"]["header"]["sequence"],
            i as u64 + 1,
            "report sequence numbers count up from 1"
        );
        *kinds.entry(v["report"]["type"].as_str().unwrap().to_string()).or_insert(0) += 1;
        if v["report"]["type"] == "drop-summary" {
            lost += v["report"]["gap_count"].as_u64().unwrap();
            assert_eq!(v["report"]["sink_port"], 3);
        } else {
            assert_eq!(v["report"]["sink_id"], 0x0a00_0002);
        }
    }
    assert_eq!(kinds["latency"], 2, "one first-packet report per flow");
    assert_eq!(lost, run.counter("sink", "lost_packets"));
    assert!(lost > 0);
    // Every report frame has a valid IPv4 header checksum.
    for frame in &frames {
        assert_eq!(int_core::checksum::checksum(&frame[14..34]), 0);
    }
}

/// The collector on a real UDP socket: reports from a sink run, then two
/// hand-made Drop-Summaries with a report sequence gap between them.
#[test]
fn collect_receives_reports_and_finds_gaps() {
    let dir = workdir("collect");
    let (child, listen) = start_collector(&["--count", "5", "--duration", "30"]);

    int_node(
        &dir,
        &[
            "gen",
            "--out",
            "int.pcap",
            "--packets",
            "30",
            "--flows",
            "3",
            "--proto",
            "udp",
            "--sizes",
            "100",
            "--instrument",
            "hostint",
        ],
    );
    // Clocked by capture times: gen's source timestamps are in them.
    let clock = "    clock: rx-timestamp\n";
    run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", clock, Some(&listen)));
    // Three latency reports came from the sink (seq 1-3). Now seq 10 and 12
    // from another sender: one report lost between them.
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for (sequence, count) in [(10u32, 4u32), (12, 6)] {
        sender.send_to(&drop_summary(sequence, count), &listen).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 6, "5 records and the summary");
    let latency: Vec<_> = lines.iter().filter(|v| v["type"] == "latency").collect();
    assert_eq!(latency.len(), 3);
    for record in &latency {
        assert_eq!(record["source_node"], 0x0a00_0001);
        assert_eq!(record["sink_node"], 0x0a00_0002);
        assert!(record["latency_ns"].is_u64());
        assert_eq!(record["flow_seq"], 1);
    }
    assert_eq!(lines[4]["missing_reports_before"], 1);
    let summary = &lines[5]["summary"];
    assert_eq!(summary["reports"], 5);
    assert_eq!(summary["lost_reports"], 1);
    let flows = summary["flows"].as_array().unwrap();
    let lossy = flows.iter().find(|f| f["src"] == "10.9.9.9").unwrap();
    assert_eq!(lossy["lost_packets"], 10);
    assert_eq!(flows.iter().filter(|f| f["latency_reports"] == 1).count(), 3);
}

/// Starts `collect --json` on a free loopback port with `extra` arguments;
/// returns it (listening) and its address.
fn start_collector(extra: &[&str]) -> (std::process::Child, String) {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(BIN)
        .args(["collect", "--listen", &listen, "--json", "--interval", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    (child, listen)
}

/// The collector's closing summary (the last JSON line).
fn summary_of(child: std::process::Child) -> serde_json::Value {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let last = text.lines().last().unwrap();
    serde_json::from_str::<serde_json::Value>(last).unwrap()["summary"].clone()
}

/// A Drop-Summary report from node 1 to node 2 for one UDP flow.
fn drop_summary(sequence: u32, gap_count: u32) -> Vec<u8> {
    let report = DropSummaryReport {
        header: ReportHeaderRepr::drop_summary(sequence, 1_700_000_000, 0),
        summary: DropSummaryRepr {
            source_node: 1,
            sink_node: 2,
            gap_sequence: 100,
            gap_count,
            ..Default::default()
        },
        flow: FlowKey {
            src: Ipv4Addr::new(10, 9, 9, 9),
            dst: Ipv4Addr::new(10, 8, 8, 8),
            protocol: 17,
            src_port: 1,
            dst_port: 2,
        },
    };
    let mut buf = [0u8; 64];
    let len = report.emit(&mut buf).unwrap();
    buf[..len].to_vec()
}

/// A collector trusts nothing: 2000 random datagrams are all refused and
/// counted by reason; valid reports with forged sequence numbers cannot
/// push the lost-report count past one window per datagram (and random
/// ones almost never count at all).
#[test]
fn collect_refuses_random_datagrams_and_forged_sequences() {
    let (child, listen) = start_collector(&["--duration", "4"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..2000 {
        let len = 1 + (next() % 200) as usize;
        let datagram: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        sender.send_to(&datagram, &listen).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..1000 {
        forger.send_to(&drop_summary(next() as u32, 1), &listen).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    let summary = summary_of(child);
    assert_eq!(summary["reports"], 3000);
    assert_eq!(summary["malformed"], 2000, "{summary}");
    let reasons = summary["malformed_by_reason"].as_object().unwrap();
    assert!(reasons.len() >= 3, "{reasons:?}");
    let lost = summary["lost_reports"].as_u64().unwrap();
    assert!(lost < 20_000, "forged sequence numbers claimed {lost} lost reports");
    assert!(summary["sequence_resyncs"].as_u64().unwrap() > 900, "{summary}");
}

/// A burst of 100,000 reports into a small receive buffer: what the kernel
/// dropped is counted (SO_MEMINFO), and received + dropped = sent.
#[test]
fn collect_counts_what_the_kernel_drops() {
    let (child, listen) = start_collector(&["--duration", "5", "--rcvbuf", "16384"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = 100_000u32;
    for sequence in 1..=sent {
        sender.send_to(&drop_summary(sequence, 1), &listen).unwrap();
    }
    let summary = summary_of(child);
    let received = summary["reports"].as_u64().unwrap();
    let dropped = summary["kernel_drops"].as_u64().unwrap();
    assert!(dropped > 0, "{summary}");
    assert_eq!(received + dropped, u64::from(sent), "{summary}");
    assert_eq!(summary["malformed"], 0);
    // The lost reports the sequence numbers show are the kernel's drops
    // (those before the last report received).
    assert!(summary["lost_reports"].as_u64().unwrap() <= dropped, "{summary}");
}
