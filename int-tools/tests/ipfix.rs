//! collect's IPFIX export (docs/ipfix.md) read back: by a reader of our
//! own (every value against collect's JSON summary of the same interval),
//! by tshark's cflow dissector (nothing malformed, templates first), by
//! nfdump's nfcapd and by pmacct's nfacctd; over UDP and TCP, across a
//! collector's restart. No DPDK: reports are crafted datagrams.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "ipfix/decode.rs"]
mod decode;
#[path = "../../tests/common/files.rs"]
mod files;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use collector::{summary_of, switch_reports};
use decode::{basic_list_u32, Decoded, Record};
use files::*;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");
/// The enterprise number of our elements (collect's default).
const PEN: Option<u32> = Some(32473);

/// collect on a free port with `args`, fed `datagrams`, run to its end
/// (--count); its summary.
fn collect(datagrams: &[Vec<u8>], args: &[&str]) -> serde_json::Value {
    let count = datagrams.len().to_string();
    let (child, listen) = collector::start_collector(
        Path::new(BIN),
        &[&["--quiet", "--count", &count, "--duration", "120"], args].concat(),
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    summary_of(child)
}

/// The `messages` an exporter said it sent, off `socket`.
fn receive(socket: &UdpSocket, messages: u64) -> Vec<Vec<u8>> {
    // A guard against a hang only: the messages are in the socket's
    // buffer before collect has said it sent them.
    socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buffer = vec![0u8; 65536];
    (0..messages)
        .map(|_| {
            let n = socket.recv(&mut buffer).unwrap();
            buffer[..n].to_vec()
        })
        .collect()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn decoded(messages: &[Vec<u8>]) -> Decoded {
    let mut decoded = Decoded::default();
    for message in messages {
        decoded.message(message).unwrap();
    }
    decoded
}

/// The flow record of `flow` (the summary's object).
fn flow_record<'a>(decoded: &'a Decoded, flow: &serde_json::Value) -> &'a Record {
    let port = |r: &Record, id| r.uint(id, None) == flow[if id == 7 { "src_port" } else { "dst_port" }].as_u64();
    let address = |r: &Record, id| {
        let bytes = r.bytes(id, None).unwrap();
        let ip: std::net::IpAddr = if bytes.len() == 4 {
            <[u8; 4]>::try_from(bytes).unwrap().into()
        } else {
            <[u8; 16]>::try_from(bytes).unwrap().into()
        };
        ip.to_string()
    };
    decoded
        .records
        .iter()
        .filter(|r| r.template == 256 || r.template == 257)
        .find(|r| {
            let (src, dst) = if r.template == 256 { (8, 12) } else { (27, 28) };
            port(r, 7) && port(r, 11) && address(r, src) == flow["src"] && address(r, dst) == flow["dst"]
        })
        .unwrap_or_else(|| panic!("no record of {flow}"))
}

/// Every flow's record says what the summary says: packets seen
/// (packetDeltaCount), lost, delay min, max and sum in ns and in RFC
/// 9951's µs.
fn assert_flows_match(decoded: &Decoded, summary: &serde_json::Value, run: (u64, u64)) {
    for flow in summary["flows"].as_array().unwrap() {
        let record = flow_record(decoded, &flow["flow"]);
        let (start, end) = (record.uint(156, None).unwrap(), record.uint(157, None).unwrap());
        assert!(run.0 <= start && start <= end && end <= run.1, "times of arrival {start}, {end} in {run:?}");
        let reports = flow["latency_reports"].as_u64().unwrap();
        assert_eq!(record.uint(2, None), Some(reports), "{flow}");
        assert_eq!(record.uint(1, PEN), flow["lost_packets"].as_u64().or(Some(0)), "{flow}");
        assert_eq!(record.uint(4, None), flow["flow"]["protocol"].as_u64());
        if reports == 0 {
            continue;
        }
        let (min, max) = (flow["latency_min_ns"].as_i64().unwrap(), flow["latency_max_ns"].as_i64().unwrap());
        assert_eq!((record.int(2, PEN), record.int(3, PEN)), (Some(min), Some(max)), "{flow}");
        assert_eq!(record.uint(531, None), Some(min.max(0) as u64 / 1000), "pathDelayMin µs {flow}");
        assert_eq!(record.uint(532, None), Some(max.max(0) as u64 / 1000), "pathDelayMax µs {flow}");
        let mean = flow["latency_avg_ns"].as_i64().unwrap();
        let sum = record.int(4, PEN).unwrap();
        assert_eq!(sum / reports as i64, mean, "sum / packets is the summary's mean {flow}");
        assert_eq!(record.uint(533, None), Some(sum.max(0) as u64 / 1000));
        assert_eq!(record.uint(530, None), Some((sum / reports as i64).max(0) as u64 / 1000));
    }
}

/// Each node's hop records add up to its figures in the summary (the
/// sink's own reports aside), each link's record to the link's.
fn assert_hops_and_links_match(decoded: &Decoded, summary: &serde_json::Value) {
    let hops: Vec<&Record> = decoded.records.iter().filter(|r| r.template == 258).collect();
    for node in summary["nodes"].as_array().unwrap() {
        let id = node["node"].as_u64().unwrap();
        let ours: Vec<_> = hops.iter().filter(|r| r.uint(7, PEN) == Some(id)).collect();
        if ours.is_empty() {
            continue;
        }
        let reports: u64 = ours.iter().map(|r| r.uint(9, PEN).unwrap()).sum();
        assert!(reports <= node["hops"].as_u64().unwrap(), "{node}");
        let min = ours.iter().map(|r| r.uint(10, PEN).unwrap()).min();
        let max = ours.iter().map(|r| r.uint(11, PEN).unwrap()).max();
        assert_eq!((min, max), (node["hop_latency"]["min"].as_u64(), node["hop_latency"]["max"].as_u64()));
        let queue_max = ours.iter().map(|r| r.uint(14, PEN).unwrap()).max();
        assert_eq!(queue_max, node["queue_occupancy"]["max"].as_u64(), "{node}");
    }
    for link in summary["links"].as_array().unwrap() {
        let record = decoded
            .records
            .iter()
            .find(|r| r.template == 259 && r.uint(16, PEN) == link["from"].as_u64() && r.uint(17, PEN) == link["to"].as_u64())
            .unwrap_or_else(|| panic!("no record of {link}"));
        let latency = &link["latency_ns"];
        assert_eq!(record.uint(18, PEN), latency["count"].as_u64(), "{link}");
        assert_eq!((record.int(19, PEN), record.int(20, PEN)), (latency["min"].as_i64(), latency["max"].as_i64()));
    }
}

/// tshark's cflow dissector reads every message: nothing malformed, no
/// error, the templates' set before any data set.
fn assert_tshark_reads(dir: &Path, messages: &[Vec<u8>]) {
    let frames: Vec<Vec<u8>> = messages.iter().map(|m| collector::report_frame(m)).collect();
    let pcap = dir.join("ipfix.pcap");
    write_pcap(&pcap, &frames);
    let output = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-d", "udp.port==32766,cflow", "-V"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.matches("Cisco NetFlow/IPFIX").count(), messages.len(), "{text}");
    for bad in ["Malformed", "[Expert Info (Error", "[Expert Info (Warning", "no template found"] {
        assert!(!text.contains(bad), "{bad}: {text}");
    }
    let template = text.find("FlowSet Id: Data Template (V10 [IPFIX]) (2)").expect("a template set");
    let data = text.find("FlowSet Id: (Data) (256)").expect("a data set");
    assert!(template < data, "templates first");
    assert!(text.contains("Version: 10"), "{text}");
}

/// The multi-hop Telemetry Report 2.0 stream (three flows over nodes 1 >
/// 2 > 3, one moving to 1 > 4 > 3): one interval, exported over UDP when
/// collect ends; every flow, hop and link record equals the summary; the
/// moved flow's path is its new one, with one change; sequence numbers
/// count data records; tshark reads it all.
#[test]
fn a_multi_hop_stream_is_exported_as_collect_sums_it_up() {
    let ipfix = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = format!("udp://{}", ipfix.local_addr().unwrap());
    let datagrams = switch_reports();
    let before = now_ns();
    let summary = collect(&datagrams, &["--ipfix", &target, "--ipfix-interval", "600", "--ipfix-domain", "7"]);
    let run = (before, now_ns());
    let counts = &summary["ipfix"];
    let messages = receive(&ipfix, counts["messages"].as_u64().unwrap());
    let decoded = decoded(&messages);
    assert_eq!(decoded.records.len() as u64, counts["records"].as_u64().unwrap(), "{counts}");
    assert_eq!((counts["dropped"].as_u64(), counts["failed"].as_u64()), (Some(0), Some(0)), "{counts}");
    assert!(decoded.domains.iter().all(|d| *d == 7));
    let mut next = 0;
    for (sequence, records) in &decoded.sequences {
        assert_eq!(*sequence, next, "the data records sent before this message");
        next += records;
    }
    assert_flows_match(&decoded, &summary, run);
    assert_hops_and_links_match(&decoded, &summary);
    let moved = serde_json::json!({"src": "10.0.0.1", "dst": "10.0.0.2", "src_port": 1, "dst_port": 5000});
    let record = flow_record(&decoded, &moved);
    let (semantic, element, path) = basic_list_u32(record.bytes(291, None).unwrap());
    assert_eq!((semantic, element, path), (4, (7, 4, PEN), vec![1, 4, 3, 9]), "ordered, node ids");
    assert_eq!(record.uint(8, PEN), Some(1), "one path change");
    assert_tshark_reads(&workdir("ipfix-tshark"), &messages);
}

#[test]
fn nfdump_experiment() {
    let dir = workdir("ipfix-nfdump");
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut nfcapd = Command::new("nfcapd")
        .args(["-E", "-b", "127.0.0.1", "-p", &port.to_string(), "-w", dir.to_str().unwrap(), "-t", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let target = format!("udp://127.0.0.1:{port}");
    let summary = collect(&switch_reports(), &["--ipfix", &target, "--ipfix-interval", "600"]);
    eprintln!("{}", summary["ipfix"]);
    std::thread::sleep(Duration::from_secs(1));
    Command::new("kill").args(["-TERM", &nfcapd.id().to_string()]).status().unwrap();
    let out = nfcapd.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).lines().take(25).collect::<Vec<_>>().join("\n"));
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let o = Command::new("nfdump").args(["-r", p.to_str().unwrap(), "-o", "csv"]).output().unwrap();
        eprintln!("{p:?}\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    }
    panic!();
}
