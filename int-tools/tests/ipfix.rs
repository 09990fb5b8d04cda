//! collect's IPFIX export (docs/ipfix.md) read back: by a reader of our
//! own (every value against collect's JSON summary of the same interval),
//! by tshark's cflow dissector (nothing malformed, templates first), by
//! nfdump's nfcapd and by pmacct's nfacctd; over UDP and TCP, across a
//! collector's restart. No DPDK: reports are crafted datagrams.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "ipfix/daemon.rs"]
mod daemon;
#[path = "ipfix/decode.rs"]
mod decode;
#[path = "../../tests/common/files.rs"]
mod files;
#[path = "ipfix/inputs.rs"]
mod inputs;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use collector::{summary_of, switch_reports};
use daemon::Daemon;
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
    let port =
        |r: &Record, id| r.uint(id, None) == flow[if id == 7 { "src_port" } else { "dst_port" }].as_u64();
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
            .find(|r| {
                r.template == 259
                    && r.uint(16, PEN) == link["from"].as_u64()
                    && r.uint(17, PEN) == link["to"].as_u64()
            })
            .unwrap_or_else(|| panic!("no record of {link}"));
        let latency = &link["latency_ns"];
        assert_eq!(record.uint(18, PEN), latency["count"].as_u64(), "{link}");
        assert_eq!(
            (record.int(19, PEN), record.int(20, PEN)),
            (latency["min"].as_i64(), latency["max"].as_i64())
        );
    }
}

/// Each node's drop reports by reason (template 260) are the summary's,
/// one record per node and reason; none where it has none.
fn assert_drops_match(decoded: &Decoded, summary: &serde_json::Value) {
    let records: Vec<&Record> = decoded.records.iter().filter(|r| r.template == 260).collect();
    let mut booked = 0;
    for node in summary["nodes"].as_array().unwrap() {
        for (reason, count) in node["drops"].as_object().unwrap() {
            let (id, reason) = (node["node"].as_u64(), reason.parse::<u64>().ok());
            let record = records
                .iter()
                .find(|r| r.uint(7, PEN) == id && r.uint(22, PEN) == reason)
                .unwrap_or_else(|| panic!("no drop record of {node}"));
            assert_eq!(record.uint(23, PEN), count.as_u64(), "{node}");
            booked += 1;
        }
    }
    assert_eq!(records.len(), booked, "{records:?}");
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
    let data = text.find("FlowSet Id: (Data) (").expect("a data set");
    assert!(template < data, "templates first");
    assert!(text.contains("Version: 10"), "{text}");
}

/// `datagrams` through collect with an export over UDP (one interval,
/// sent when collect ends) and `args`: its summary and the messages,
/// read back (see [`export_by`]).
fn export(datagrams: &[Vec<u8>], args: &[&str]) -> (serde_json::Value, Vec<Vec<u8>>, Decoded) {
    export_by(|ipfix| collect(datagrams, &[ipfix, args].concat()))
}

/// What `run` exports, given the `--ipfix` arguments of one interval sent
/// at its end, and returns as its summary: the summary and the messages,
/// read back: as many records as it counts, none failed, the
/// domain its own, each sequence number the data records sent before.
fn export_by(run: impl FnOnce(&[&str]) -> serde_json::Value) -> (serde_json::Value, Vec<Vec<u8>>, Decoded) {
    let ipfix = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = format!("udp://{}", ipfix.local_addr().unwrap());
    let summary = run(&["--ipfix", &target, "--ipfix-interval", "600"]);
    let counts = &summary["ipfix"];
    let messages = receive(&ipfix, counts["messages"].as_u64().unwrap());
    let decoded = decoded(&messages);
    assert_eq!(decoded.records.len() as u64, counts["records"].as_u64().unwrap(), "{counts}");
    assert_eq!(counts["failed"].as_u64(), Some(0), "{counts}");
    let mut next = 0;
    for (sequence, records) in &decoded.sequences {
        assert_eq!(*sequence, next, "the data records sent before this message");
        next += records;
    }
    (summary, messages, decoded)
}

/// [`export`], then the checks every input passes: `flows` flows in the
/// summary, each flow's and each drop reason's record equal to it.
fn export_checked(
    datagrams: &[Vec<u8>],
    args: &[&str],
    flows: usize,
) -> (serde_json::Value, Vec<Vec<u8>>, Decoded) {
    let before = now_ns();
    let (summary, messages, decoded) = export(datagrams, args);
    assert_eq!(summary["flows"].as_array().unwrap().len(), flows, "{summary}");
    assert_flows_match(&decoded, &summary, (before, now_ns()));
    assert_drops_match(&decoded, &summary);
    (summary, messages, decoded)
}

/// The path a flow's record carries, node ids source first.
fn path_of(record: &Record) -> Vec<u32> {
    let (semantic, element, path) = basic_list_u32(record.bytes(291, None).unwrap());
    assert_eq!((semantic, element), (4, (7, 4, PEN)), "ordered, node ids");
    path
}

/// The multi-hop Telemetry Report 2.0 stream (three flows over nodes 1 >
/// 2 > 3, one moving to 1 > 4 > 3): one interval, exported over UDP when
/// collect ends; every flow, hop and link record equals the summary; the
/// moved flow's path is its new one, with one change; node 2's drop
/// reports by reason are the summary's; sequence numbers count data
/// records; tshark reads it all.
#[test]
fn a_multi_hop_stream_is_exported_as_collect_sums_it_up() {
    let (summary, messages, decoded) = export_checked(&switch_reports(), &["--ipfix-domain", "7"], 3);
    assert!(decoded.domains.iter().all(|d| *d == 7));
    assert_hops_and_links_match(&decoded, &summary);
    assert_eq!(decoded.records.iter().filter(|r| r.template == 260).count(), 1, "node 2's reason 71");
    let moved = serde_json::json!({"src": "10.0.0.1", "dst": "10.0.0.2", "src_port": 1, "dst_port": 5000});
    let record = flow_record(&decoded, &moved);
    assert_eq!(path_of(record), vec![1, 4, 3, 9]);
    assert_eq!(record.uint(8, PEN), Some(1), "one path change");
    let scopes = [256, 257, 258, 259, 260].map(|id| decoded.scopes.get(&id).copied());
    assert_eq!(scopes, [None, None, Some(3), Some(2), Some(2)], "hops, links, drops: options templates");
    assert!(!decoded.shared_options_set, "an options template per set, as nfdump 1.7 reads them");
    assert_tshark_reads(&workdir("ipfix-tshark"), &messages);
}

/// Host-INT's latency reports and a Drop Summary: each flow's record
/// equals the summary (packets, loss, delays, its source and sink node);
/// Host-INT reports no hops between, so no hop or link record and an
/// empty path, as docs/ipfix.md says; tshark reads it all.
#[test]
fn host_int_reports_are_exported_as_collect_sums_them_up() {
    // Three measured, one lost.
    let (summary, messages, decoded) = export_checked(&inputs::hostint_reports(), &[], 4);
    assert!(decoded.records.iter().all(|r| r.template == 256), "flows only");
    for flow in summary["flows"].as_array().unwrap() {
        let record = flow_record(&decoded, &flow["flow"]);
        assert_eq!(path_of(record), Vec::<u32>::new(), "{flow}");
        let measured = flow["latency_reports"].as_u64() != Some(0);
        let (source, sink) = if measured { (0x0a00_0001, 0x0a00_0002) } else { (1, 2) };
        assert_eq!((record.uint(5, PEN), record.uint(6, PEN)), (Some(source), Some(sink)), "{flow}");
    }
    assert_tshark_reads(&workdir("ipfix-hostint-tshark"), &messages);
}

/// IOAM decapsulating nodes' reports of IPv6 packets with their trace:
/// every flow (IPv6 template) and hop (transit delay, queue depth) record
/// equals the summary; the path is the trace's, then the sink; a trace
/// has no egress times, so no link record, as docs/ipfix.md says; tshark
/// reads it all.
#[test]
fn ioam_traces_are_exported_as_collect_sums_them_up() {
    let (summary, messages, decoded) = export_checked(&inputs::ioam_reports(), &[], 3);
    assert_hops_and_links_match(&decoded, &summary);
    assert_eq!(summary["nodes"].as_array().unwrap().len(), 4, "the sink too {}", summary["nodes"]);
    // One timestamp per node (no egress time): no link latency, in the
    // summary as in the export.
    assert_eq!(summary["links"].as_array().unwrap().len(), 0, "{}", summary["links"]);
    assert!(decoded.records.iter().all(|r| r.template != 259), "no link record");
    assert_eq!(decoded.records.iter().filter(|r| r.template == 258).count(), 3, "nodes 1-3");
    for flow in summary["flows"].as_array().unwrap() {
        let record = flow_record(&decoded, &flow["flow"]);
        assert_eq!(record.template, 257, "IPv6");
        assert_eq!(path_of(record), vec![1, 2, 3, 9], "{flow}");
    }
    assert_tshark_reads(&workdir("ipfix-ioam-tshark"), &messages);
}

/// A burst of reports (the multi-hop stream 50 times over, 3000
/// datagrams sent as fast as one socket sends) is exported whole: the
/// receivers add their figures up themselves, so no observation waits in
/// a queue that could refuse it (issue 48: before, a queue of 1 dropped).
/// Every flow, hop and link record equals the summary, and the summary
/// counts no outcome of a queue: there is none.
#[test]
fn a_burst_is_exported_whole_with_nothing_queued() {
    let burst: Vec<Vec<u8>> = (0..50).flat_map(|_| switch_reports()).collect();
    let (summary, _, decoded) = export_checked(&burst, &[], 3);
    let counted: Vec<&String> = summary["ipfix"].as_object().unwrap().keys().collect();
    assert_eq!(
        counted,
        ["records", "templates", "messages", "failed", "unrecorded", "connections", "timeouts"]
    );
    assert_hops_and_links_match(&decoded, &summary);
    let reports: u64 =
        summary["flows"].as_array().unwrap().iter().map(|f| f["latency_reports"].as_u64().unwrap()).sum();
    assert_eq!(reports, 50 * 60, "every latency report in the summary and the export");
}

/// nfcapd on a free loopback port, ready (it has said so), writing into
/// its directory.
struct Nfcapd {
    daemon: Daemon,
    dir: std::path::PathBuf,
}

impl Nfcapd {
    fn start(dir: &Path, port: u16) -> Nfcapd {
        std::fs::create_dir_all(dir).unwrap();
        let (port, dir_arg) = (port.to_string(), dir.to_str().unwrap());
        // docs/ipfix.md's rotation: a file a minute.
        let args = ["-E", "-b", "127.0.0.1", "-p", &port, "-w", dir_arg, "-t", "60"];
        // Its record lines (-E) as it writes them: its stdout to a pipe is
        // otherwise held in 4 KiB blocks.
        let daemon = Daemon::start("stdbuf", &[&["-oL", "nfcapd"], &args[..]].concat(), &["Startup nfcapd"]);
        Nfcapd { daemon, dir: dir.to_path_buf() }
    }

    fn wait_for(&self, wanted: impl FnMut(&str) -> bool) {
        self.daemon.wait_for(wanted);
    }

    /// Stops it (SIGTERM: its current file is written whole); every file
    /// it wrote (a rotation may have come between).
    fn stop(self) -> Vec<std::path::PathBuf> {
        self.daemon.stop("TERM");
        std::fs::read_dir(&self.dir).unwrap().map(|entry| entry.unwrap().path()).collect()
    }

    /// [`Self::stop`], then `nfdump -r` of every file, CSV.
    fn stop_and_read(self) -> Vec<Vec<String>> {
        let files = self.stop();
        let text = nfdump(&files, &["-o", "csv", "-q"]).concat();
        text.lines().map(|l| l.split(',').map(|f| f.trim().to_string()).collect()).collect()
    }
}

/// The multi-hop stream through collect, exported in one interval to the
/// collector on loopback `port`; collect's summary.
fn export_to(port: u16) -> serde_json::Value {
    let target = format!("udp://127.0.0.1:{port}");
    collect(&switch_reports(), &["--ipfix", &target, "--ipfix-interval", "600"])
}

/// A 5-tuple's addresses and ports as a collector's output gives them.
type Tuple = (String, String, Option<u64>, Option<u64>);

/// The row of `rows` whose addresses and ports, as `tuple` reads them,
/// are the summary's flow `key`'s.
fn row_of<'a, R: std::fmt::Debug>(
    rows: &'a [R],
    key: &serde_json::Value,
    tuple: impl Fn(&R) -> Tuple,
) -> &'a R {
    let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    let wanted = (text(&key["src"]), text(&key["dst"]), key["src_port"].as_u64(), key["dst_port"].as_u64());
    rows.iter().find(|r| tuple(r) == wanted).unwrap_or_else(|| panic!("{key} in {rows:?}"))
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// "YYYY-MM-DD HH:MM:SS" in UTC, as nfdump's CSV writes times.
fn utc_seconds(ns: u64) -> String {
    let rfc3339 = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns))
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    rfc3339[..19].replace('T', " ")
}

/// nfcapd collects the export (with docs/ipfix.md's rotation); nfdump
/// reads it back three ways, each showing exactly the flows collect's
/// summary has, none of the hop, link or drop records (options templates,
/// which nfdump books as no flow): its default output (Debian's build
/// shows its NSEL view: protocol, addresses and ports), `-o json` (the
/// flow's times within the run, protocol, packets: the reports the sink
/// sent) and the command docs/ipfix.md gives for times and packets.
#[test]
fn nfdump_prints_the_flows_collect_summed_up() {
    let dir = workdir("ipfix-nfdump");
    let port = free_udp_port();
    let nfcapd = Nfcapd::start(&dir, port);
    let before = now_ns();
    let summary = export_to(port);
    let after = now_ns();
    let flows = summary["flows"].as_array().unwrap();
    let mut seen = 0;
    nfcapd.wait_for(|line| {
        seen += usize::from(line.contains("src port"));
        seen == flows.len()
    });
    let files = nfcapd.stop();
    let run = (utc_seconds(before), utc_seconds(after));
    assert_nfdump_default_output(&files, flows);
    assert_nfdump_json(&files, flows, &run);
    assert_nfdump_docs_format(&dir, flows, &run);
}

/// nfdump's default output: a row per flow, each one of collect's, UDP
/// (no hop, link or drop record as a flow of protocol 0).
fn assert_nfdump_default_output(files: &[std::path::PathBuf], flows: &[serde_json::Value]) {
    let rows: Vec<String> = nfdump(files, &["-q"]).concat().lines().map(str::to_string).collect();
    assert_eq!(rows.len(), flows.len(), "{rows:#?} of {files:?}");
    // (Its columns of translated addresses are 0.0.0.0:0 for every flow.)
    assert!(rows.iter().all(|r| r.contains(" UDP ")), "no flow of protocol 0: {rows:#?}");
    for flow in flows {
        let key = &flow["flow"];
        let src = format!(" {}:{} ", key["src"].as_str().unwrap(), key["src_port"]);
        let dst = format!(" {}:{} ", key["dst"].as_str().unwrap(), key["dst_port"]);
        assert!(rows.iter().any(|r| r.contains(&src) && r.contains(&dst)), "{src} -> {dst} in {rows:#?}");
    }
}

/// `nfdump -o json`: each flow's first and last time within the `run`
/// (UTC seconds), its protocol and packets.
fn assert_nfdump_json(files: &[std::path::PathBuf], flows: &[serde_json::Value], run: &(String, String)) {
    let json: Vec<serde_json::Value> = nfdump(files, &["-o", "json"])
        .iter()
        .flat_map(|text| serde_json::from_str::<Vec<serde_json::Value>>(text).unwrap())
        .collect();
    assert_eq!(json.len(), flows.len(), "{json:#?}");
    for flow in flows {
        let record = row_of(&json, &flow["flow"], |r| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (text(&r["src4_addr"]), text(&r["dst4_addr"]), r["src_port"].as_u64(), r["dst_port"].as_u64())
        });
        assert_eq!(record["proto"], 17, "{record}");
        assert_eq!(record["in_packets"], flow["latency_reports"], "{record}");
        let time = |name: &str| record[name].as_str().unwrap()[..19].replace('T', " ");
        let (start, end) = (time("first"), time("last"));
        assert!(run.0 <= start && start <= end && end <= run.1, "{record} in {run:?}");
    }
}

/// docs/ipfix.md's nfdump command, as an operator pastes it (nfcapd's
/// folder `dir`): each flow's start, end, protocol, addresses, ports and
/// packets.
fn assert_nfdump_docs_format(dir: &Path, flows: &[serde_json::Value], run: &(String, String)) {
    let command = docs_block("sh-nfdump").replace("/var/cache/nfdump", dir.to_str().unwrap());
    let output = Command::new("sh").args(["-c", command.trim()]).env("TZ", "UTC").output().unwrap();
    assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<Vec<&str>> =
        text.lines().filter(|l| l.contains(" -> ")).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), flows.len(), "{text}");
    for flow in flows {
        // start (date, time), end (date, time), protocol, src, ->, dst, packets
        let row = row_of(&rows, &flow["flow"], |r| {
            let split = |a: &str| a.rsplit_once(':').map(|(ip, port)| (ip.to_string(), port.parse().ok()));
            let ((src, sp), (dst, dp)) = (split(r[5]).unwrap(), split(r[7]).unwrap());
            (src, dst, sp, dp)
        });
        let (start, end) = (format!("{} {}", row[0], row[1]), format!("{} {}", row[2], row[3]));
        assert!(run.0.as_str() <= &start[..19] && start <= end && &end[..19] <= run.1.as_str(), "{row:?}");
        assert_eq!(row[4], "UDP", "{row:?}");
        assert_eq!(row[8], flow["latency_reports"].to_string(), "packets {row:?}");
    }
}

/// `nfdump -r` of each of `files`, in UTC, with `args`: what it printed
/// of each.
fn nfdump(files: &[std::path::PathBuf], args: &[&str]) -> Vec<String> {
    files
        .iter()
        .map(|file| {
            let output = Command::new("nfdump")
                .env("TZ", "UTC")
                .args(["-r", file.to_str().unwrap()])
                .args(args)
                .output()
                .unwrap();
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            String::from_utf8(output.stdout).unwrap()
        })
        .collect()
}

/// A UDP export is read again by a collector that restarted: nfcapd is
/// stopped and another started on its port; the next interval's
/// templates come with its records, and it decodes them.
#[test]
fn a_restarted_nfcapd_reads_the_udp_export_again() {
    let dir = workdir("ipfix-nfcapd-restart");
    let port = free_udp_port();
    let first = Nfcapd::start(&dir.join("first"), port);
    let target = format!("udp://127.0.0.1:{port}");
    let (child, listen) = collector::start_collector(
        Path::new(BIN),
        &["--quiet", "--duration", "120", "--ipfix", &target, "--ipfix-interval", "0.2"],
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let reports = switch_reports();
    for datagram in &reports {
        sender.send_to(datagram, &listen).unwrap();
    }
    first.wait_for(|line| line.contains("src port"));
    assert!(!first.stop_and_read().is_empty());
    let second = Nfcapd::start(&dir.join("second"), port);
    for datagram in &reports {
        sender.send_to(datagram, &listen).unwrap();
    }
    second.wait_for(|line| line.contains("src port"));
    assert!(second.stop_and_read().iter().any(|r| r.len() > 7 && r[7] == "UDP"));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let summary = summary_of(child);
    assert_eq!(summary["ipfix"]["failed"], 0, "{summary}");
}

/// One IPFIX message off a TCP stream (its length is in its header).
fn read_message(stream: &mut std::net::TcpStream) -> Vec<u8> {
    use std::io::Read;
    let mut message = vec![0u8; 4];
    stream.read_exact(&mut message).unwrap();
    let length = usize::from(u16::from_be_bytes([message[2], message[3]]));
    message.resize(length, 0);
    stream.read_exact(&mut message[4..]).unwrap();
    message
}

/// Messages off one connection until one holds data records: the
/// first must be the templates, its sequence number 0.
fn read_until_data(stream: &mut std::net::TcpStream) -> Decoded {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut decoded = Decoded::default();
    let first = read_message(stream);
    decoded.message(&first).unwrap();
    assert!(!decoded.templates.is_empty() && decoded.records.is_empty(), "templates first");
    assert_eq!(decoded.sequences[0].0, 0, "a new session starts at 0");
    while decoded.records.is_empty() {
        decoded.message(&read_message(stream)).unwrap();
    }
    decoded
}

/// Over TCP the templates go first on each connection; when the
/// listener restarts, the exporter connects again and sends them again
/// before its records.
#[test]
fn a_tcp_export_reconnects_and_sends_its_templates_first() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let target = format!("tcp://{address}");
    let (child, listen) = collector::start_collector(
        Path::new(BIN),
        &["--quiet", "--duration", "120", "--ipfix", &target, "--ipfix-interval", "0.2"],
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let reports = switch_reports();
    let (mut stream, _) = listener.accept().unwrap();
    for datagram in &reports {
        sender.send_to(datagram, &listen).unwrap();
    }
    let first = read_until_data(&mut stream);
    assert!(first.records.iter().any(|r| r.template == 256));
    drop((stream, listener));
    let listener = std::net::TcpListener::bind(address).unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    for datagram in &reports {
        sender.send_to(datagram, &listen).unwrap();
    }
    let second = read_until_data(&mut stream);
    assert!(second.records.iter().any(|r| r.template == 256 || r.template == 258));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let summary = summary_of(child);
    assert_eq!(summary["ipfix"]["connections"], 2, "{}", summary["ipfix"]);
}

/// 1,000 flows' Telemetry Report 2.0 datagrams (UDP ports 1-1000, over
/// nodes 1 > 2, sink 9), numbered from `first`: a flow record each per
/// interval, about 100 KB of export.
fn thousand_flows(first: u32) -> Vec<Vec<u8>> {
    let hop = |node: u32, at: u64| int_core::int21::HopMetadata {
        node_id: Some(node),
        hop_latency: Some(1000),
        queue: Some((0, 1)),
        ingress_timestamp: Some(at),
        egress_timestamp: Some(at + 1000),
        ..Default::default()
    };
    (1..=1000u16)
        .map(|port| {
            collector::stack_report(first + u32::from(port), 9, port, &[hop(2, 3000), hop(1, 1000)], 6000)
        })
        .collect()
}

/// A sample of collect's metrics page: the value of the line starting
/// with `name` (0 where there is none).
fn metric(server: &str, name: &str) -> u64 {
    let page = collector::http_get(server, "/metrics");
    page.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or(0)
}

/// Kills collect if the test ends before it does.
struct Running(Option<std::process::Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TCP collector that accepts and never reads (issue 56: collect froze
/// in a write and never ended). Fed reports until its send buffers are
/// full, the exporter drops each connection whose message does not go
/// within the send timeout, counts it and the records failed, and tries
/// again later; SIGINT then ends collect, exit 0 with its summary.
#[test]
fn a_collector_that_never_reads_costs_counted_records_not_the_stop() {
    const PATIENCE: Duration = Duration::from_secs(60);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("tcp://{}", listener.local_addr().unwrap());
    // Every connection taken and held open, never read.
    std::thread::spawn(move || listener.incoming().map_while(Result::ok).collect::<Vec<_>>());
    let args = ["--json", "--quiet", "--duration", "600", "--ipfix", &target, "--ipfix-interval", "0.1"];
    let (child, said) = collector::start_collect_saying(
        Path::new(BIN),
        &[&args[..], &["--metrics", "127.0.0.1:0"]].concat(),
        &["listening on ", "metrics on http://"],
    );
    let mut child = Running(Some(child));
    // Read as it comes: a summary larger than the pipe holds would block
    // collect's exit.
    let mut stdout = child.0.as_mut().unwrap().stdout.take().unwrap();
    let output = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let (listen, metrics) = (&said[0], &said[1]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let timeouts = "int_collect_ipfix_connections_total{outcome=\"timeouts\"}";
    let fed = std::time::Instant::now();
    // Until a send timed out (or long past when one must have).
    for round in 0.. {
        if metric(metrics, timeouts) > 0 || fed.elapsed() > PATIENCE {
            break;
        }
        for datagram in thousand_flows(round * 1000) {
            sender.send_to(&datagram, listen).unwrap();
        }
    }
    let pid = child.0.as_ref().unwrap().id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.0.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(stopped.elapsed() < PATIENCE, "collect still runs {PATIENCE:?} after SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let output = output.join().unwrap();
    let summary: serde_json::Value = serde_json::from_str(output.lines().last().unwrap()).unwrap();
    let ipfix = &summary["summary"]["ipfix"];
    assert!(ipfix["timeouts"].as_u64().unwrap() >= 1, "{ipfix}");
    assert!(ipfix["connections"].as_u64().unwrap() >= ipfix["timeouts"].as_u64().unwrap(), "{ipfix}");
    assert!(ipfix["failed"].as_u64().unwrap() > 0, "{ipfix}");
    assert!(ipfix["records"].as_u64().unwrap() > 0, "{ipfix}");
}

/// The body of docs/ipfix.md's code block tagged `tag`, its two-space
/// indent removed: what an operator pastes is what the tests run.
fn docs_block(tag: &str) -> String {
    let docs = include_str!("../../docs/ipfix.md");
    let start = docs.find(&format!("```{tag}\n")).unwrap_or_else(|| panic!("no {tag} block")) + tag.len() + 4;
    let body = &docs[start..];
    let end = body.find("```").unwrap();
    body[..end].lines().map(|l| format!("{}\n", l.trim_start_matches("  "))).collect()
}

/// What nfacctd says once its core listens and its print plugin (a
/// process of its own) has its cache.
const NFACCTD_READY: [&str; 2] = ["waiting for NetFlow/IPFIX data", "cache entries="];

/// nfacctd, configured as docs/ipfix.md says (its port, files and a 1 s
/// refresh set for the test), ready on a free loopback port.
struct Nfacctd {
    daemon: Daemon,
    output: std::path::PathBuf,
}

impl Nfacctd {
    fn start(dir: &Path, port: u16) -> Nfacctd {
        let primitives = dir.join("int-primitives.lst");
        let output = dir.join("int-flows.json");
        std::fs::write(&primitives, docs_block("pmacct-primitives")).unwrap();
        let config = docs_block("pmacct-config")
            .replace("nfacctd_ip: 0.0.0.0", "nfacctd_ip: 127.0.0.1")
            .replace("nfacctd_port: 4739", &format!("nfacctd_port: {port}"))
            .replace("/etc/pmacct/int-primitives.lst", primitives.to_str().unwrap())
            .replace("/var/lib/pmacct/int-flows.json", output.to_str().unwrap())
            .replace("print_refresh_time: 60", "print_refresh_time: 1");
        let conf = dir.join("nfacctd.conf");
        std::fs::write(&conf, config).unwrap();
        let daemon = Daemon::start("nfacctd", &["-f", conf.to_str().unwrap()], &NFACCTD_READY);
        Nfacctd { daemon, output }
    }

    /// The JSON lines its print plugin has written.
    fn rows(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        // A line being written is not one yet.
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }
}

/// pmacct's nfacctd, with docs/ipfix.md's primitives and config, prints
/// each flow's 5-tuple, packets, loss, RFC 9951's delay elements, our ns
/// delays, node ids and path changes as collect's summary has them.
#[test]
fn pmacct_prints_the_delays_collect_summed_up() {
    let dir = workdir("ipfix-pmacct");
    let port = free_udp_port();
    let nfacctd = Nfacctd::start(&dir, port);
    let (summary, messages, _) = export(&switch_reports(), &[]);
    let flows = summary["flows"].as_array().unwrap();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = || {
        for message in &messages {
            sender.send_to(message, ("127.0.0.1", port)).unwrap();
        }
    };
    // Each flow's row once (the same export sent again adds the same rows).
    let udp_rows = |rows: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        let mut seen = std::collections::BTreeSet::new();
        rows.into_iter().filter(|r| r["ip_proto"] == "udp" && seen.insert(r.to_string())).collect()
    };
    send();
    // The print plugin writes its cache at each refresh and says so.
    // nfacctd 1.7.7 on a loaded machine at times books nothing of the
    // messages its core logged as received (2 runs in 12, one CPU kept
    // busy): after 5 refreshes without them they go again, as a lost UDP
    // export's next interval would.
    let mut purges = 0;
    nfacctd.daemon.wait_for(|line| {
        if !line.contains("Purging cache - END") {
            return false;
        }
        if udp_rows(nfacctd.rows()).len() >= flows.len() {
            return true;
        }
        purges += 1;
        if purges % 5 == 0 {
            send();
        }
        false
    });
    let rows = udp_rows(nfacctd.rows());
    let others: Vec<_> = nfacctd.rows().into_iter().filter(|r| r["ip_proto"] != "udp").collect();
    nfacctd.daemon.stop("INT");
    assert!(others.is_empty(), "hop, link and drop records (options data) booked as flows: {others:?}");
    assert_pmacct_docs_command(&nfacctd.output, flows);
    assert_eq!(rows.len(), flows.len(), "{rows:?}");
    for flow in flows {
        let key = &flow["flow"];
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let row = row_of(&rows, key, |r| {
            (text(&r["ip_src"]), text(&r["ip_dst"]), r["port_src"].as_u64(), r["port_dst"].as_u64())
        });
        // pmacct's JSON writes a custom u_int primitive as a string.
        let value = |name: &str| row[name].as_str().and_then(|v| v.parse::<u64>().ok());
        let reports = flow["latency_reports"].as_u64().unwrap();
        assert_eq!(value("packet_delta_count"), Some(reports), "{row}");
        assert_eq!(value("lost_packets"), flow["lost_packets"].as_u64().or(Some(0)), "{row}");
        let (min, max) = (flow["latency_min_ns"].as_u64().unwrap(), flow["latency_max_ns"].as_u64().unwrap());
        assert_eq!((value("delay_min_ns"), value("delay_max_ns")), (Some(min), Some(max)), "{row}");
        assert_eq!(
            (value("path_delay_min_us"), value("path_delay_max_us")),
            (Some(min / 1000), Some(max / 1000))
        );
        let sum = value("delay_sum_ns").unwrap();
        assert_eq!(sum / reports, flow["latency_avg_ns"].as_u64().unwrap(), "sum / packets: the mean {row}");
        assert_eq!(value("path_delay_sum_us"), Some(sum / 1000), "{row}");
        assert_eq!(value("path_delay_mean_us"), Some(sum / reports / 1000), "{row}");
        assert_eq!((value("source_node"), value("sink_node")), (Some(1), Some(9)), "{row}");
        let moved = key["src_port"] == 1;
        assert_eq!(value("path_changes"), Some(u64::from(moved)), "{row}");
    }
}

/// docs/ipfix.md's jq command over nfacctd's `output`, as an operator
/// pastes it: each flow's packets, loss and mean delay (µs) as collect's
/// summary has them.
fn assert_pmacct_docs_command(output: &Path, flows: &[serde_json::Value]) {
    let command = docs_block("sh-pmacct").replace("/var/lib/pmacct/int-flows.json", output.to_str().unwrap());
    let printed = Command::new("sh").args(["-c", command.trim()]).output().unwrap();
    assert!(printed.status.success(), "{command}: {}", String::from_utf8_lossy(&printed.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(printed.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for flow in flows {
        let line = lines.iter().find(|l| l["port_src"] == flow["flow"]["src_port"]).expect("a line per flow");
        let reports = flow["latency_reports"].as_u64().unwrap();
        let mean_us = flow["latency_avg_ns"].as_u64().unwrap() / 1000;
        let lost = flow["lost_packets"].as_u64().unwrap_or(0);
        let wanted =
            [("packet_delta_count", reports), ("lost_packets", lost), ("path_delay_mean_us", mean_us)];
        for (name, value) in wanted {
            assert_eq!(line[name], value.to_string(), "{name}: {line}");
        }
    }
}

/// A record's fields and their bytes.
type Fields = Vec<(decode::Field, Vec<u8>)>;

/// Every record of a decoded export but its times (arrivals differ from
/// one collect to another), sorted.
fn records_but_times(decoded: &Decoded) -> Vec<(u16, Fields)> {
    let times = [152, 153, 156, 157];
    let mut records: Vec<_> = decoded
        .records
        .iter()
        .map(|r| (r.template, r.fields.iter().filter(|(f, _)| !times.contains(&f.0)).cloned().collect()))
        .collect();
    records.sort();
    records
}

/// A collector publishes the multi-hop stream to a nats-server's
/// JetStream in `format` (`batch`, `json`), every datagram or record
/// acknowledged; an aggregator (`collect --from-nats`) reads it all back
/// and exports: its summary and export, read back.
fn aggregated_export(test: &str, format: &str) -> (serde_json::Value, Decoded) {
    let dir = workdir(test);
    let port = servers::free_port();
    let nats = servers::start_nats(&dir, port, &[]);
    let url = format!("nats://127.0.0.1:{port}");
    let reports = switch_reports();
    // The default stream (1 GiB) needs more free disk than a test has.
    let stream = ["--nats", &url, "--nats-format", format, "--nats-max-bytes", "67108864"];
    let published = collect(&reports, &stream);
    let counts = &published["nats"];
    assert_eq!((counts["dropped"].as_u64(), counts["lost"].as_u64()), (Some(0), Some(0)), "{counts}");
    // --count counts reports, in either format (not the JSON format's
    // path-change records).
    let records = published["reports"].as_u64().unwrap().to_string();
    let (aggregated, _, decoded) = export_by(|ipfix| {
        let output = Command::new(BIN)
            .args(["collect", "--from-nats", &url, "--quiet", "--json", "--interval", "0"])
            .args(&stream[2..])
            .args(["--count", &records, "--duration", "60"])
            .args(ipfix)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).unwrap();
        serde_json::from_str::<serde_json::Value>(text.lines().last().unwrap()).unwrap()["summary"].clone()
    });
    servers::stop(nats);
    assert!(!decoded.records.is_empty());
    (aggregated, decoded)
}

/// An aggregator exports the same records, times aside, as one receiving
/// collector fed the same reports, over a stream in the batch format (the
/// datagrams as they came) and in the JSON format (collect's records).
#[test]
fn an_aggregator_exports_what_one_receiving_collector_exports() {
    let (direct, _, received) = export(&switch_reports(), &[]);
    for format in ["batch", "json"] {
        let (aggregated, from_stream) = aggregated_export(&format!("ipfix-aggregator-{format}"), format);
        assert_eq!(aggregated["flows"], direct["flows"], "the same books ({format})");
        assert_eq!(records_but_times(&from_stream), records_but_times(&received), "{format}");
    }
}

/// IFA hops read off a terminator's IPFIX (`--listen-ipfix`) are exported
/// as any protocol's: each flow's record (its latency, the newest hop's
/// RX timestamp minus the oldest's) and each Device ID's hop records equal
/// the summary, the path is the Device IDs source first; tshark reads it.
#[test]
fn ifa_hops_from_a_terminators_ipfix_are_exported() {
    let messages = inputs::ifa_messages();
    let records = (messages.len() - 1).to_string();
    let before = now_ns();
    let (summary, exported, decoded) = export_by(|ipfix| {
        let args = [
            &["--json", "--quiet", "--count", &records, "--duration", "120", "--listen-ipfix", "127.0.0.1:0"],
            ipfix,
        ]
        .concat();
        let (child, said) =
            collector::start_collect_saying(Path::new(BIN), &args, &["listening on ", "IFA IPFIX on "]);
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        for message in &messages {
            sender.send_to(message, &said[1]).unwrap();
        }
        summary_of(child)
    });
    assert_eq!(summary["flows"].as_array().unwrap().len(), 2, "{summary}");
    assert_flows_match(&decoded, &summary, (before, now_ns()));
    // Each Device ID's hop record: its hops and residence times as the
    // summary has them; IFA reports no queue occupancy, its congestion
    // level stands in the queue's figure (`HopRepr::as_hop`).
    for node in summary["nodes"].as_array().unwrap() {
        let id = node["node"].as_u64().unwrap();
        let ours: Vec<&Record> =
            decoded.records.iter().filter(|r| r.template == 258 && r.uint(7, PEN) == Some(id)).collect();
        assert_eq!(ours.iter().map(|r| r.uint(9, PEN).unwrap()).sum::<u64>(), 24, "{node}");
        assert_eq!(node["hops"], 24);
        let min = ours.iter().map(|r| r.uint(10, PEN).unwrap()).min();
        let max = ours.iter().map(|r| r.uint(11, PEN).unwrap()).max();
        assert_eq!((min, max), (Some(100 * id), Some(100 * id + 11)), "{node}");
        assert_eq!((min, max), (node["hop_latency"]["min"].as_u64(), node["hop_latency"]["max"].as_u64()));
        assert!(ours.iter().all(|r| r.uint(14, PEN) == Some(id % 3)), "{node}");
    }
    assert_eq!(summary["nodes"].as_array().unwrap().len(), 3);
    for port in [1000, 1001] {
        let flow =
            serde_json::json!({"src": "10.0.0.1", "dst": "10.0.0.2", "src_port": port, "dst_port": 2000});
        assert_eq!(path_of(flow_record(&decoded, &flow)), vec![1, 2, 3]);
    }
    assert_tshark_reads(&workdir("ipfix-ifa-tshark"), &exported);
}

/// A collector reading a terminator's IPFIX publishes its `ifa-ipfix`
/// records to a nats-server's JetStream (JSON format); an aggregator
/// (`--from-nats`) books them as the receiving collector did: the same
/// flows and nodes.
#[test]
fn an_aggregator_books_ifa_records_off_the_stream_as_the_receiver_did() {
    let dir = workdir("ipfix-ifa-nats");
    let port = servers::free_port();
    let nats = servers::start_nats(&dir, port, &[]);
    let url = format!("nats://127.0.0.1:{port}");
    let messages = inputs::ifa_messages();
    let records = (messages.len() - 1).to_string();
    let stream = ["--nats", &url, "--nats-format", "json", "--nats-max-bytes", "67108864"];
    let receiving =
        ["--json", "--quiet", "--count", &records, "--duration", "120", "--listen-ipfix", "127.0.0.1:0"];
    let args = [&receiving[..], &stream].concat();
    let (child, said) =
        collector::start_collect_saying(Path::new(BIN), &args, &["listening on ", "IFA IPFIX on "]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for message in &messages {
        sender.send_to(message, &said[1]).unwrap();
    }
    let published = summary_of(child);
    let counts = &published["nats"];
    assert_eq!((counts["dropped"].as_u64(), counts["lost"].as_u64()), (Some(0), Some(0)), "{counts}");
    let output = Command::new(BIN)
        .args(["collect", "--from-nats", &url, "--quiet", "--json", "--interval", "0"])
        .args(&stream[2..])
        .args(["--count", &records, "--duration", "60"])
        .output()
        .unwrap();
    servers::stop(nats);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let aggregated =
        serde_json::from_str::<serde_json::Value>(text.lines().last().unwrap()).unwrap()["summary"].clone();
    assert_eq!(aggregated["flows"].as_array().unwrap().len(), 2, "{aggregated}");
    assert_eq!(aggregated["flows"], published["flows"]);
    assert_eq!(aggregated["nodes"], published["nodes"]);
}
