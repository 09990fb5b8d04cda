//! Reports from a real sink, read by the tools: a port exporter's frames
//! decode, and a collector receives a sink's reports and finds gaps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::UdpSocket;

use common::collector::{drop_summary, start_collector};
use common::*;

/// A sink whose exporter is a DPDK port (net_pcap): its report frames are
/// Ethernet/IPv4/UDP to the collector, and decode reads both kinds back.
#[test]
fn port_exporter_frames_decode() {
    let dir = workdir("port-export");
    let run = run_port_exporter_sink(&dir, 600);
    let frames = read_pcap(&dir.join("reports.pcap"));
    assert_eq!(frames.len() as u64, run.stats["export"]["reports_sent"].as_u64().unwrap());
    assert!(!frames.is_empty());
    let json = int_tools(&dir, &["decode", "--json", "reports.pcap"]);
    let mut kinds = std::collections::BTreeMap::new();
    let mut lost = 0;
    for (i, line) in json.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "report", "{line}");
        assert_eq!(v["dst"], "192.0.2.9");
        assert_eq!(v["report"]["report_seq"], i as u64 + 1, "report sequence numbers count up from 1");
        *kinds.entry(v["report"]["type"].as_str().unwrap().to_string()).or_insert(0) += 1;
        if v["report"]["type"] == "drop-summary" {
            lost += v["report"]["lost_packets"].as_u64().unwrap();
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
    let (child, listen) = start_collector(&tools_bin(), &["--count", "5", "--duration", "30"]);

    int_tools(
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
    let lossy = flows.iter().find(|f| f["flow"]["src"] == "10.9.9.9").unwrap();
    assert_eq!(lossy["lost_packets"], 10);
    assert_eq!(flows.iter().filter(|f| f["latency_reports"] == 1).count(), 3);
}

/// `export.profile: tr05`: a sink's flow reports are Telemetry Report 0.5's
/// own (NProto 2, the Switch Local header, the Ethernet frame with the INT
/// stack), collect reads their one-way latency, and a loss is counted at
/// the sink but not reported (TR 0.5 has no report for it).
#[test]
fn tr05_profile_sends_switch_local_flow_reports() {
    let dir = workdir("tr05-profile");
    let frames = mixed_traffic(120, 6, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", "", None));
    // Flow 1 loses its third packet on the way.
    let lost = 1 + 6 * 2;
    let survivors: Vec<Vec<u8>> = read_pcap(&dir.join("int.pcap"))
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != lost)
        .map(|(_, f)| f)
        .collect();
    write_pcap(&dir.join("int.pcap"), &survivors);
    let domain = int_core::int05::Domain::default();
    retime_after_source(&dir.join("int.pcap"), &domain, 150_000);
    let (child, listen) = start_collector(&tools_bin(), &["--count", "6", "--duration", "30"]);
    let config = node_config("sink", "int.pcap", "out.pcap", "    clock: rx-timestamp\n", Some(&listen))
        .replace("export: {collector: ", "export: {profile: tr05, collector: ");
    let sink = run_node(&dir, &config);
    assert_eq!(sink.counter("sink", "lost_packets"), 1);
    assert_eq!(sink.counter("sink", "reports_drop_summary"), 0, "no loss report in TR 0.5");
    assert_eq!(sink.counter("sink", "reports_latency"), 6);
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let records: Vec<_> = lines.iter().filter(|l| l["type"] == "tr05-flow").collect();
    assert_eq!(records.len(), 6, "{lines:?}");
    for record in &records {
        // net_pcap keeps capture times to the microsecond.
        let latency = record["latency_ns"].as_i64().unwrap();
        assert!((149_000..=150_000).contains(&latency), "{record}");
        assert_eq!(
            (record["source_node"].as_u64(), record["sink_node"].as_u64()),
            (Some(0x0a00_0001), Some(0x0a00_0002))
        );
        assert_eq!((record["hops"].as_u64(), record["flow_seq"].as_u64()), (Some(1), Some(1)), "{record}");
    }
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["malformed"], 0, "{summary}");
}

/// An IPv6 collector: the sink's reports reach it over the kernel's IPv6
/// socket (`export.collector: '[::1]:PORT'`), and collect, listening on
/// IPv6, reads all three.
#[test]
fn reports_reach_an_ipv6_collector() {
    let dir = workdir("collect-ipv6");
    let (child, listen) =
        start_collector(&tools_bin(), &["--listen", "[::1]:0", "--count", "3", "--duration", "30"]);
    assert!(listen.starts_with("[::1]:"), "{listen}");
    let gen = ["gen", "--out", "int.pcap", "--packets", "30", "--flows", "3", "--proto", "udp"];
    int_tools(&dir, &[&gen[..], &["--sizes", "100", "--instrument", "hostint"]].concat());
    let clock = "    clock: rx-timestamp\n";
    let sink = run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", clock, Some(&listen)));
    assert_eq!(sink.counter("sink", "reports_latency"), 3, "{}", sink.stdout());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|v| v["type"] == "latency").count(), 3, "{lines:?}");
    assert_eq!(lines.last().unwrap()["summary"]["reports"], 3);
}
