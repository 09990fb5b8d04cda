//! IFA terminators' IPFIX into a real `int-tools collect --listen-ipfix`:
//! records made of scapy's IFA packets (tests/ifa, built by scapy pull
//! request 4235's layers) give every header and hop field in collect's
//! JSON as scapy built it; tshark reads the same messages as IPFIX with
//! the template's and sets' lengths right; a hostile exporter is counted
//! by reason and collect goes on. None of these needs DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use collector::{ipfix_in, of_type, tshark_ipfix, Collect};
#[path = "../../tests/common/ifa_scapy.rs"]
mod ifa_scapy;

use std::io::Read;
use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use int_core::frame::FrameBuf;
use int_core::ifa::{sink, Domain, L4Rule, Located};
use int_core::report::ifa_ipfix::{self, Elements, IfaRecord};
use int_core::wire::ipfix::{self, MessageHeader};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/");
const TEMPLATE_ID: u16 = 257;
const DOMAIN: u32 = 0x1234_5678;
/// How long a collect may take to end on its own: far beyond what a
/// loaded machine needs, only a stop for a hung one.
const DEADLINE: Duration = Duration::from_secs(120);

fn scapy_packets() -> Vec<(Vec<u8>, Value)> {
    let file = std::fs::File::open(format!("{FIXTURES}scapy_packets.pcap")).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        frames.push(packet.unwrap().data.into_owned());
    }
    let text = std::fs::read_to_string(format!("{FIXTURES}scapy_packets.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let records = json["packets"].as_array().unwrap().clone();
    assert_eq!(frames.len(), records.len());
    frames.into_iter().zip(records).collect()
}

/// What a terminator exports of `frame`: the IFA and metadata headers,
/// the stack, and the frame with its IFA stripped.
fn exported(frame: &[u8]) -> ([u8; 8], Vec<u8>, Vec<u8>) {
    let found: Located = Domain { protocol: 253 }.locate(frame).unwrap().unwrap();
    let mut headers = [0u8; 8];
    headers[..4].copy_from_slice(&frame[found.header_at..found.header_at + 4]);
    headers[4..].copy_from_slice(&frame[found.md_at..found.md_at + 4]);
    let stack = frame[found.stack_at..found.payload_at].to_vec();
    let mut buf = frame.to_vec();
    let mut view = FrameBuf::new(&mut buf, 0, frame.len()).unwrap();
    sink::strip(&mut view, &found, L4Rule::Keep).unwrap();
    (headers, stack, view.frame().to_vec())
}

fn head(sequence: u32) -> MessageHeader {
    MessageHeader { length: 0, export_time: 1_700_000_000, sequence, domain: DOMAIN }
}

fn template_message() -> Vec<u8> {
    let mut buf = [0u8; 128];
    let len = ifa_ipfix::emit_template_message(&mut buf, head(0), TEMPLATE_ID, &Elements::default()).unwrap();
    buf[..len].to_vec()
}

fn data_message(sequence: u32, frame: &[u8]) -> Vec<u8> {
    let (headers, stack, packet) = exported(frame);
    let record = IfaRecord { headers: &headers, stack: &stack, packet: &packet };
    let mut buf = vec![0u8; 65_535];
    let len = ifa_ipfix::emit_data_message(&mut buf, head(sequence), TEMPLATE_ID, &record).unwrap();
    buf.truncate(len);
    buf
}

/// The template, then a message per scapy packet.
fn messages() -> Vec<Vec<u8>> {
    let packets = scapy_packets();
    let data = packets.iter().enumerate().map(|(i, (frame, _))| data_message(i as u32, frame));
    std::iter::once(template_message()).chain(data).collect()
}

#[test]
fn collect_reads_every_field_of_scapys_packets_as_scapy_built_them() {
    let packets = scapy_packets();
    let count = packets.len().to_string();
    let collect = Collect::start(Path::new(BIN), &["--count", &count]);
    for message in messages() {
        collect.send(&message);
    }
    let (records, summary) = collect.end();
    let ifa = of_type(&records, "ifa-ipfix");
    assert_eq!(ifa.len(), packets.len());
    for (i, (record, (frame, scapy))) in ifa.iter().zip(&packets).enumerate() {
        let what = &scapy["summary"];
        assert_eq!(record["ipfix_seq"], i, "{what}");
        assert_eq!(
            (record["template_id"].as_u64(), record["observation_domain"].as_u64()),
            (Some(257), Some(DOMAIN.into()))
        );
        let headers = &record["ifa"];
        for (ours, theirs) in [
            ("version", "ver"),
            ("gns", "gns"),
            ("next_header", "nexthdr"),
            ("flags", "flags"),
            ("max_length", "maxlen"),
        ] {
            assert_eq!(headers[ours], scapy["ifa"][theirs], "{ours}: {what}");
        }
        for (ours, theirs) in [
            ("request_vector", "request"),
            ("action_vector", "action"),
            ("hop_limit", "hoplmt"),
            ("current_length", "curlen"),
        ] {
            assert_eq!(headers[ours], scapy["md"][theirs], "{ours}: {what}");
        }
        let (hops, built) = (record["ifa_hops"].as_array().unwrap(), scapy["hops"].as_array().unwrap());
        assert_eq!((hops.len(), record["hops"].as_u64()), (built.len(), Some(built.len() as u64)), "{what}");
        for (hop, fields) in hops.iter().zip(built) {
            ifa_scapy::check_hop(hop, fields, what);
        }
        // The common shape, source first: Device ID, ports, residence.
        let common = record["hop_metadata"].as_array().unwrap();
        for (hop, fields) in common.iter().zip(built.iter().rev()) {
            assert_eq!(hop["node_id"], fields["device_id"], "{what}");
            assert_eq!(hop["l1_ingress_port"], fields["sport"], "{what}");
            assert_eq!(hop["l1_egress_port"], fields["dport"], "{what}");
            assert_eq!(hop["hop_latency"], fields["latency"], "{what}");
        }
        let path: Vec<u64> = built.iter().rev().map(|h| h["device_id"].as_u64().unwrap()).collect();
        assert_eq!(record["path"], serde_json::json!(path), "{what}");
        let (_, _, stripped) = exported(frame);
        assert_eq!(record["packet_length"], stripped.len(), "{what}");
        assert!(record["flow"].is_object(), "no flow: {what}");
    }
    let counts = ipfix_in(&summary);
    assert_eq!(counts["records"], packets.len());
    assert_eq!((counts["templates"].as_u64(), counts["refused"].as_u64()), (Some(1), Some(0)));
}

/// Ethernet, IPv4 and UDP to port 4739 around each message.
fn pcap_of(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut writer = pcap_file::pcap::PcapWriter::new(&mut out).unwrap();
        for (i, message) in messages.iter().enumerate() {
            let mut spec = int_core::craft::PacketSpec::udp(
                [10, 0, 0, 1].into(),
                [10, 0, 0, 2].into(),
                40_000,
                4739,
                message.len(),
            );
            spec.ident = i as u16;
            let mut frame = spec.build();
            let at = frame.len() - message.len();
            frame[at..].copy_from_slice(message);
            // The UDP checksum no longer covers the payload: none.
            frame[at - 2..at].copy_from_slice(&[0, 0]);
            let packet =
                pcap_file::pcap::PcapPacket::new(Duration::from_secs(i as u64), frame.len() as u32, &frame);
            writer.write_packet(&packet).unwrap();
        }
    }
    out
}

/// tshark's own IPFIX dissector (cflow) reads the template (ID 257, three
/// enterprise fields, 8 bytes then variable twice) and every data set of
/// it, each record's three values, with no malformed or expert complaint.
#[test]
fn tshark_reads_the_messages_as_ipfix() {
    // Kept after the run: `tshark -r` it to see what the test saw.
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ifa_ipfix.pcap");
    let messages = messages();
    std::fs::write(&file, pcap_of(&messages)).unwrap();
    let text = tshark_ipfix(&file, 4739);
    let count = |needle: &str| text.matches(needle).count();
    assert_eq!(count("Version: 10"), messages.len(), "{text}");
    assert_eq!(count("Template Id: 257"), 1, "{text}");
    assert_eq!(count("Field Count: 3"), 1, "{text}");
    assert_eq!(count("FlowSet Id: Data Template (V10 [IPFIX]) (2)"), 1, "{text}");
    assert_eq!(count("FlowSet Id: (Data) (257)"), messages.len() - 1, "{text}");
    // Each data set one record, its three values read (the two variable
    // ones with their length prefixes).
    assert_eq!(count("(1 flows)"), messages.len() - 1, "{text}");
    for element in ["Type 100: Value", "Type 101: Value", "Type 102: Value"] {
        assert_eq!(count(element), messages.len() - 1, "{element}: {text}");
    }
    for message in &messages {
        let length = u16::from_be_bytes([message[2], message[3]]);
        let set_length = u16::from_be_bytes([message[18], message[19]]);
        assert!(text.contains(&format!("Length: {length}\n")), "message length {length}: {text}");
        assert!(text.contains(&format!("FlowSet Length: {set_length}\n")), "set length {set_length}: {text}");
    }
}

/// Messages a hostile exporter sends, each with the reason it is
/// counted by.
fn hostile() -> Vec<(Vec<u8>, &'static str)> {
    let template = template_message();
    let data = data_message(0, &scapy_packets()[0].0);
    let with = |message: &[u8], at: usize, bytes: &[u8]| {
        let mut out = message.to_vec();
        out[at..at + bytes.len()].copy_from_slice(bytes);
        out
    };
    let mut out = vec![
        (vec![0u8; 10], "ipfix: ipfix_truncated"),
        (with(&data, 0, &[0, 9]), "ipfix: ipfix_version"),
        (with(&data, 2, &[0xff, 0xff]), "ipfix: ipfix_message_length"),
        (with(&data, 18, &[0xff, 0xff]), "ipfix: ipfix_set_length"),
        (with(&data, 16, &[0, 7]), "ipfix: ipfix_set_id"),
        (with(&template, 22, &[0, 9]), "ipfix: ipfix_template_record"),
        (with(&template, 20, &[0, 9]), "ipfix: ipfix_template_id"),
    ];
    // A record whose stack says 8 words of hops but the headers' Max
    // Length 4: refused as the walk refuses such a packet.
    let lying = with(&data, 20 + 3, &[4]);
    out.push((lying, "ipfix: ifa_length_past_max"));
    // A huge data set of one record whose variable length runs past it.
    let mut huge = vec![0xffu8; 65_000];
    huge[..16].copy_from_slice(&head(0).with_length(65_000));
    huge[16..20].copy_from_slice(&[0x01, 0x01, 0xfd, 0xd8]);
    out.push((huge, "ipfix: ipfix_field_length"));
    out
}

trait WithLength {
    fn with_length(self, length: u16) -> [u8; 16];
}

impl WithLength for MessageHeader {
    fn with_length(self, length: u16) -> [u8; 16] {
        let mut out = [0u8; 16];
        MessageHeader { length, ..self }.emit(&mut out).unwrap();
        out
    }
}

/// A template storm from one exporter: `count` templates from id 300,
/// packed into messages of up to 2000.
fn storm(count: u16) -> Vec<Vec<u8>> {
    let fields = Elements::default().fields();
    let ids: Vec<u16> = (0..count).map(|i| 300 + i).collect();
    ids.chunks(2000)
        .map(|chunk| {
            let mut buf = vec![0u8; 65_535];
            let mut at = ipfix::MESSAGE_HEADER_LEN + ipfix::SET_HEADER_LEN;
            for id in chunk {
                at += ipfix::emit_template(&mut buf[at..], *id, &fields).unwrap();
            }
            ipfix::emit_set_header(&mut buf[16..], ipfix::TEMPLATE_SET_ID, at - 16).unwrap();
            MessageHeader { length: at as u16, ..head(0) }.emit(&mut buf).unwrap();
            buf.truncate(at);
            buf
        })
        .collect()
}

/// Every lie is counted by its reason; a template storm keeps at most
/// `MAX_TEMPLATES`; data of an unknown or withdrawn template is counted;
/// the exporter's next good record is still booked.
#[test]
fn a_hostile_exporter_is_counted_and_collect_goes_on() {
    let collect = Collect::start(Path::new(BIN), &["--count", "2"]);
    let frame = &scapy_packets()[0].0;
    collect.send(&template_message());
    collect.send(&data_message(0, frame));
    let hostile = hostile();
    for (message, _) in &hostile {
        collect.send(message);
    }
    for message in storm(5000) {
        collect.send(&message);
    }
    // An unknown template's data; then the IFA template withdrawn, and
    // its data unknown too.
    let mut unknown = data_message(1, frame);
    unknown[16..18].copy_from_slice(&9999u16.to_be_bytes());
    collect.send(&unknown);
    let mut withdrawal = vec![0u8; 24];
    withdrawal[..16].copy_from_slice(&head(1).with_length(24));
    withdrawal[16..24].copy_from_slice(&[0, 2, 0, 8, 0x01, 0x01, 0, 0]);
    collect.send(&withdrawal);
    collect.send(&data_message(1, frame));
    // The template again, and a good record: the second booked.
    collect.send(&template_message());
    collect.send(&data_message(1, frame));
    let (records, summary) = collect.end();
    assert_eq!(of_type(&records, "ifa-ipfix").len(), 2);
    let counts = ipfix_in(&summary);
    assert_eq!(counts["records"], 2);
    // The IFA template twice, and as many of the storm's as there was room for.
    // collect's MAX_TEMPLATES.
    let kept = 4096;
    assert_eq!(counts["templates"].as_u64(), Some(2 + kept - 1));
    assert_eq!(counts["template_limit"].as_u64(), Some(5000 - (kept - 1)));
    assert_eq!(counts["unknown_template"], 2);
    assert_eq!(counts["withdrawn"], 1);
    assert_eq!(counts["refused"].as_u64(), Some(hostile.len() as u64));
    let text = summary.to_string();
    for (_, reason) in &hostile {
        assert!(text.contains(&format!("\"{reason}\":1")) || text.contains(reason), "{reason}: {text}");
    }
}

/// Three hops, newest first: Device IDs 3, 2, 1, resident 700, 500 and
/// 300 ns, RX 2000 ns apart.
fn three_hops() -> Vec<u8> {
    let mut stack = vec![0u8; 3 * 32];
    for (i, chunk) in stack.chunks_exact_mut(32).enumerate() {
        let n = 3 - i as u32;
        let hop = int_core::ifa::HopRepr {
            lns: 1,
            device_id: n,
            ip_ttl: 64,
            queue_id: 5,
            congestion: (n % 4) as u8,
            rx_seconds: 10,
            rx_nanoseconds: 1000 * (2 * n - 1),
            egress_system_port: 3,
            ingress_system_port: 1,
            residence_ns: 100 + 200 * n,
            ..int_core::ifa::HopRepr::default()
        };
        hop.emit(chunk).unwrap();
    }
    stack
}

/// A synthetic terminator's records reach the per-hop books: the
/// Prometheus page counts each Device ID's hops and sums its residence
/// times as hop latency, and the web view's topology shows each node's
/// hops and hop latency, as for any protocol's hops.
#[test]
fn ifa_hops_reach_the_metrics_and_the_web_view() {
    let args =
        ["--json", "--listen-ipfix", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--http", "127.0.0.1:0"];
    let words = ["listening on ", "IFA IPFIX on ", "metrics on http://", "view on http://"];
    let (mut child, said) = collector::start_collect_saying(Path::new(BIN), &args, &words);
    let mut pipe = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut out = String::new();
        pipe.read_to_string(&mut out).unwrap();
        out
    });
    let (ipfix, metrics, view) = (&said[1], &said[2], &said[3]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.send_to(&template_message(), ipfix).unwrap();
    let headers = [0x2f, 17, 0x04, 0xff, 0, 0, 0xfe, 24];
    let stack = three_hops();
    let packet =
        int_core::craft::PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1000, 2000, 0).build();
    for sequence in 0..5 {
        let record = IfaRecord { headers: &headers, stack: &stack, packet: &packet };
        let mut buf = [0u8; 512];
        let len = ifa_ipfix::emit_data_message(&mut buf, head(sequence), TEMPLATE_ID, &record).unwrap();
        socket.send_to(&buf[..len], ipfix).unwrap();
    }
    let started = Instant::now();
    let page = loop {
        let page = collector::http_get(metrics, "/metrics");
        if page.contains("int_collect_ipfix_in_records_total 5") {
            break page;
        }
        assert!(started.elapsed() < DEADLINE, "the records never came: {page}");
        std::thread::sleep(Duration::from_millis(20));
    };
    for (node, residence_ns) in [(1, 300), (2, 500), (3, 700)] {
        let hops = format!("int_collect_node_hops_total{{node=\"{node}\",node_name=\"{node}\"}} 5\n");
        assert!(page.contains(&hops), "{hops}: {page}");
        let sum = format!("int_collect_hop_latency_seconds_sum{{node=\"{node}\",node_name=\"{node}\"}} ");
        let line = page.lines().find(|l| l.starts_with(&sum)).unwrap_or_else(|| panic!("{sum}: {page}"));
        let seconds: f64 = line[sum.len()..].parse().unwrap();
        assert!((seconds - 5.0 * f64::from(residence_ns) * 1e-9).abs() < 1e-12, "{line}");
    }
    let nodes = loop {
        let topology: Value = serde_json::from_str(&collector::http_get(view, "/api/topology")).unwrap();
        let nodes = topology["nodes"].as_array().cloned().unwrap_or_default();
        if nodes.len() == 3 && nodes.iter().all(|n| n["hops"] == 5) {
            break nodes;
        }
        assert!(started.elapsed() < DEADLINE, "the view never showed them: {topology}");
        std::thread::sleep(Duration::from_millis(20));
    };
    for (node, residence_ns) in [(1, 300), (2, 500), (3, 700)] {
        let shown = nodes.iter().find(|n| n["node"] == node).unwrap();
        assert_eq!(
            (shown["hop_latency"]["min"].as_u64(), shown["hop_latency"]["max"].as_u64()),
            (Some(residence_ns), Some(residence_ns)),
            "{shown}"
        );
    }
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
    let out = stdout.join().unwrap();
    let records: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ifa = of_type(&records, "ifa-ipfix");
    assert_eq!(ifa.len(), 5);
    // RX 5000 ns at the newest hop, 1000 ns at the oldest.
    assert!(ifa.iter().all(|r| r["latency_ns"] == 4000 && r["path"] == serde_json::json!([1, 2, 3])));
    // Each hop's congestion level and residence are its queue's figures.
    let summary = &records.last().unwrap()["summary"]["congestion"];
    for (node, residence_ns) in [(1, 300), (2, 500), (3, 700)] {
        let queues = summary["queues"].as_array().unwrap();
        let queue = queues.iter().find(|q| q["node"] == node && q["queue_id"] == 5);
        let queue = queue.unwrap_or_else(|| panic!("node {node} queue 5: {summary:#}"));
        assert_eq!((&queue["occupancy"], &queue["hop_latency_ns"]), (&json!(node % 4), &json!(residence_ns)));
    }
}
