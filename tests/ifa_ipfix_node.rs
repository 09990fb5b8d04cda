//! The IFA terminator under `int.report: ipfix`, on the real binary over
//! net_pcap vdevs: initiator, two transits and terminator; the terminator
//! reports every packet (a queue alert at 0) in IPFIX with Broadcom's
//! template into a real `int-tools collect --listen-ipfix`, which reads
//! each record's IFA headers, hops, packet and flow; tshark's own IPFIX
//! dissector reads the same export captured on a net_pcap export port;
//! probe copies are reported stripped, then dropped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;

use common::collector::{ipfix_in, of_type, tshark_ipfix, Collect};
use common::*;
use int_core::flow::FlowKey;
use int_core::ifa::Domain;
use serde_json::Value;

/// Room for IFA's 40 bytes and two transits' 64 in a 1500-byte MTU.
const HEADROOM: usize = 110;
/// The terminator's packet cut (the default 256 would keep these packets
/// whole: a smaller one shows the cut).
const PACKET_MAX: usize = 128;
const PACKETS: usize = 240;

/// The zone's `int` at the node of `device_id`: every node reads the same.
fn int(device_id: u32, extra: &str) -> String {
    format!(
        "{{version: ifa, device_id: {device_id}, hop_limit: 4, max_length: 32, report: ipfix, ipfix: {{packet_max: {PACKET_MAX}}}{extra}}}"
    )
}

/// [`int`] and the capture times as the clock, as a pipeline's lines.
fn zone(device_id: u32, extra: &str) -> String {
    format!("    int: {}\n    clock: rx-timestamp\n", int(device_id, extra))
}

/// Every packet reported: each one's queue (congestion 0) is at the alert.
const EVERY_PACKET: &str = "{hops: {queue_alert: 0, queue_quota: 0}}";

/// The terminator's lines: [`zone`], every packet reported.
fn terminator(extra: &str) -> String {
    format!("{}    sink: {EVERY_PACKET}\n", zone(2, extra))
}

/// Initiator 1, transits 5 and 6 over `in.pcap` into `ifa3.pcap`.
fn through_the_zone(dir: &Path, frames: &[Vec<u8>]) {
    write_pcap(&dir.join("in.pcap"), frames);
    let source = run_node(dir, &node_config("source", "in.pcap", "ifa.pcap", &zone(1, ""), None));
    assert_eq!(source.counter("source", "instrumented"), frames.len() as u64, "{}", source.stdout());
    for (device, from, to) in [(5, "ifa.pcap", "ifa2.pcap"), (6, "ifa2.pcap", "ifa3.pcap")] {
        let transit = run_node(dir, &node_config("transit", from, to, &zone(device, ""), None));
        assert_eq!(transit.counter("transit", "pushed"), frames.len() as u64, "{}", transit.stdout());
    }
}

fn flow_json(key: &FlowKey) -> (String, String, u8, u16, u16) {
    (key.src.to_string(), key.dst.to_string(), key.protocol, key.src_port, key.dst_port)
}

fn flow_of(record: &Value) -> (String, String, u8, u16, u16) {
    let flow = &record["flow"];
    let text = |name: &str| flow[name].as_str().unwrap_or_else(|| panic!("{record}")).to_string();
    let number = |name: &str| flow[name].as_u64().unwrap_or_else(|| panic!("{record}"));
    (text("src"), text("dst"), number("protocol") as u8, number("src_port") as u16, number("dst_port") as u16)
}

/// Every packet's record in a real collect, in order: Template ID 257 in
/// observation domain 2 (the terminator's Device ID), the IFA headers as
/// the zone wrote them (version 2, Max Length 32, Hop Limit 2 and Current
/// Length 24 after two transits, I set), hops 6, 5, 1 newest first with
/// every field as the terminator received them, the
/// packet without its IFA (its length the original's, cut to
/// `packet_max`) and its flow; the template sent and read once; every
/// packet back byte for byte.
#[test]
fn the_terminator_reports_every_packet_in_ipfix_into_collect() {
    let dir = workdir("ifa-ipfix-node");
    let frames = mixed_traffic_dual(PACKETS, 12, HEADROOM);
    through_the_zone(&dir, &frames);
    let collect = Collect::start(&tools_bin(), &["--count", &PACKETS.to_string()]);
    let config = node_config("sink", "ifa3.pcap", "out.pcap", &terminator(""), Some(&collect.ipfix));
    let sink = run_node(&dir, &config);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "stripped"), PACKETS as u64, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "ifa_ipfix_records"), PACKETS as u64, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "ifa_ipfix_templates"), 1, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "report_datagrams"), 0, "no TR 2.0: {}", sink.stdout());
    let (records, summary) = collect.end();
    let ifa = of_type(&records, "ifa-ipfix");
    assert_eq!(ifa.len(), PACKETS, "{records:?}");
    let stacks = read_pcap(&dir.join("ifa3.pcap"));
    let mut cut = 0;
    for (i, record) in ifa.iter().enumerate() {
        assert_eq!(record["ipfix_seq"], i, "{record}");
        assert_eq!(
            (record["template_id"].as_u64(), record["observation_domain"].as_u64()),
            (Some(257), Some(2))
        );
        let found = Domain::default().locate(&stacks[i]).unwrap().unwrap();
        let headers = &record["ifa"];
        assert_eq!(headers["version"], 2, "{record}");
        assert_eq!(headers["next_header"], found.header.next_header, "{record}");
        assert_eq!(headers["flags"], found.header.flags.bits(), "{record}");
        assert_eq!(headers["flags"].as_u64().unwrap() & 0x04, 0x04, "I set: {record}");
        assert_eq!((headers["max_length"].as_u64(), headers["hop_limit"].as_u64()), (Some(32), Some(2)));
        assert_eq!(headers["current_length"], 24, "{record}");
        assert_eq!(record["path"], serde_json::json!([1, 5, 6]), "{record}");
        let ids: Vec<u64> =
            record["ifa_hops"].as_array().unwrap().iter().map(|h| h["device_id"].as_u64().unwrap()).collect();
        assert_eq!(ids, [6, 5, 1], "{record}");
        // Every hop as the terminator received it, newest first.
        for (got, hop) in record["ifa_hops"].as_array().unwrap().iter().zip(found.stack(&stacks[i]).hops()) {
            let fields = [
                ("ip_ttl", u64::from(hop.ip_ttl)),
                ("queue_id", u64::from(hop.queue_id)),
                ("rx_seconds", u64::from(hop.rx_seconds)),
                ("rx_nanoseconds", u64::from(hop.rx_nanoseconds)),
                ("residence_ns", u64::from(hop.residence_ns)),
                ("ingress_system_port", u64::from(hop.ingress_system_port)),
                ("egress_system_port", u64::from(hop.egress_system_port)),
            ];
            for (name, value) in fields {
                assert_eq!(got[name], value, "{name}: {record}");
            }
        }
        assert_eq!(record["packet_length"], frames[i].len().min(PACKET_MAX), "{record}");
        cut += usize::from(frames[i].len() > PACKET_MAX);
        assert_eq!(flow_of(record), flow_json(&found.flow(&stacks[i])), "{record}");
    }
    assert!(cut > 0 && cut < PACKETS, "{cut} of {PACKETS} packets longer than {PACKET_MAX}");
    let counts = ipfix_in(&summary);
    assert_eq!(counts["records"], PACKETS, "{counts}");
    assert_eq!((counts["templates"].as_u64(), counts["refused"].as_u64()), (Some(1), Some(0)), "{counts}");
}

/// The same terminator exporting through a net_pcap port: tshark's IPFIX
/// dissector (cflow) reads the template once (ID 257, three fields) and a
/// data set of it in every other datagram, each with the three values,
/// with nothing malformed.
#[test]
fn tshark_reads_the_terminators_export() {
    let dir = workdir("ifa-ipfix-tshark");
    let frames = mixed_traffic_dual(48, 6, HEADROOM);
    through_the_zone(&dir, &frames);
    write_pcap(&dir.join("empty.pcap"), &[]);
    // Its export port writes Ethernet/IPv4/UDP to 192.0.2.9:32766.
    let config = port_exporter_config("ifa3.pcap").replace(
        "clock: rx-timestamp,",
        &format!("clock: rx-timestamp, int: {}, sink: {EVERY_PACKET},", int(2, "")),
    );
    let sink = run_node(&dir, &config);
    assert_eq!(sink.counter("sink", "ifa_ipfix_records"), 48, "{}", sink.stdout());
    let file = dir.join("reports.pcap");
    assert_eq!(read_pcap(&file).len(), 49, "the template and 48 records");
    let text = tshark_ipfix(&file, 32766);
    let count = |needle: &str| text.matches(needle).count();
    assert_eq!(count("Version: 10"), 49, "{text}");
    assert_eq!(count("Observation Domain Id: 2"), 49, "{text}");
    assert_eq!(count("Template Id: 257"), 1, "{text}");
    assert_eq!(count("Field Count: 3"), 1, "{text}");
    assert_eq!(count("FlowSet Id: (Data) (257)"), 48, "{text}");
    // Each record's three values: the 8 header bytes (version 2, the
    // zone's Max Length 32 and Current Length 24), the stack, the packet.
    assert_eq!(count("Type 100: Value (hex bytes): 2f "), 48, "{text}");
    assert_eq!(count(" 20 ff 00 02 18\n"), 48, "{text}");
    assert_eq!(count("Type 101: Value"), 48, "{text}");
    assert_eq!(count("Type 102: Value"), 48, "{text}");
}

/// Probe mode, one in 4: the terminator reports each probe copy (its
/// packet the original, stripped) and drops it; the originals pass.
#[test]
fn probe_copies_are_reported_stripped_then_dropped() {
    let dir = workdir("ifa-ipfix-probes");
    let frames = mixed_traffic_dual(PACKETS, 12, HEADROOM);
    write_pcap(&dir.join("in.pcap"), &frames);
    let probe = ", mode: probe, probe: {one_in: 4}";
    let source = run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", &zone(1, probe), None));
    assert_eq!(source.counter("source", "cloned"), 60, "{}", source.stdout());
    let collect = Collect::start(&tools_bin(), &["--count", "60"]);
    let config = node_config("sink", "ifa.pcap", "out.pcap", &terminator(probe), Some(&collect.ipfix));
    let sink = run_node(&dir, &config);
    assert_eq!(sink.counter("sink", "probes_dropped"), 60, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "ifa_ipfix_records"), 60, "{}", sink.stdout());
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let (records, summary) = collect.end();
    let ifa = of_type(&records, "ifa-ipfix");
    assert_eq!(ifa.len(), 60);
    let copies: Vec<Vec<u8>> = read_pcap(&dir.join("ifa.pcap"))
        .into_iter()
        .filter(|f| Domain::default().locate(f).unwrap().is_some())
        .collect();
    assert_eq!(copies.len(), 60);
    for (record, copy) in ifa.iter().zip(&copies) {
        let found = Domain::default().locate(copy).unwrap().unwrap();
        assert_eq!(record["ifa"]["flags"].as_u64().unwrap() & 0x04, 0, "I clear: {record}");
        assert_eq!(record["path"], serde_json::json!([1]), "{record}");
        let original = copy.len() - found.ifa_len();
        assert_eq!(record["packet_length"], original.min(PACKET_MAX), "{record}");
        assert_eq!(flow_of(record), flow_json(&found.flow(copy)), "{record}");
    }
    assert_eq!(ipfix_in(&summary)["templates"], 1);
}
