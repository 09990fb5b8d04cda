//! One output schema (docs/output.md): the same reports, read by decode
//! from a capture and by collect off a socket, give the same values under
//! the same names; and every field decode, collect and the node's
//! `--stats-json` print is in the docs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::path::Path;

use common::collector::{report_frame, start_collector, switch_reports};
use common::*;
use serde_json::Value;

/// What collect adds to a report's record: where and when it arrived.
const ARRIVAL: [&str; 4] = ["from", "arrival", "arrival_ns", "missing_reports_before"];
/// A TR 2.0 record's fields of its group and of its individual report.
const GROUP: [&str; 4] = ["type", "report_seq", "report_node", "hw_id"];
const INDIVIDUAL: [&str; 10] = ["rep_type", "in_type", "d", "q", "f", "i", "drop", "flow", "time", "time_ns"];

fn decode(dir: &Path, file: &str) -> Vec<Value> {
    let json = int_tools(dir, &["decode", "--json", "--int21-port", "7777", file]);
    json.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// collect --json fed `datagrams` holding `reports` reports: every line,
/// the summary last.
fn collect(datagrams: &[Vec<u8>], reports: usize) -> Vec<Value> {
    let count = reports.to_string();
    let (child, listen) = start_collector(&tools_bin(), &["--count", &count, "--duration", "60"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Each Host-INT and TR 0.5 record of collect against decode's report of
/// the same sequence number: every field but the arrival's, equal.
fn same_as_decode(collected: &[Value], decoded: &[Value]) -> usize {
    let mut compared = 0;
    for record in collected.iter().filter(|r| r["type"].is_string()) {
        let report = decoded
            .iter()
            .map(|d| &d["report"])
            .find(|r| r["report_seq"] == record["report_seq"])
            .unwrap_or_else(|| panic!("decode has no report {}", record["report_seq"]));
        for (key, value) in record.as_object().unwrap().iter().filter(|(k, _)| !ARRIVAL.contains(&k.as_str()))
        {
            assert_eq!(&report[key], value, "{key}: collect {record}\ndecode {report}");
        }
        compared += 1;
    }
    compared
}

/// Each TR 2.0 record of collect against decode's group (a sender's
/// sequence number) and individual report it came from (a datagram's
/// records in order).
fn same_as_decode21(collected: &[Value], decoded: &[Value]) -> usize {
    let mut compared = 0;
    let mut at = std::collections::HashMap::new();
    for record in collected.iter().filter(|r| r["type"] == "tr20") {
        let report = decoded
            .iter()
            .map(|d| &d["report"])
            .find(|r| r["report_seq"] == record["report_seq"] && r["report_node"] == record["report_node"])
            .unwrap_or_else(|| panic!("decode has no group {record}"));
        let index =
            at.entry((record["report_node"].to_string(), record["report_seq"].to_string())).or_insert(0);
        let individual = &report["reports"][*index];
        *index += 1;
        for key in GROUP {
            assert_eq!(report[key], record[key], "{key}: collect {record}\ndecode {report}");
        }
        for key in INDIVIDUAL {
            assert_eq!(individual[key], record[key], "{key}: collect {record}\ndecode {individual}");
        }
        compared += 1;
    }
    compared
}

/// Objects whose keys are names (pipelines, ports, reasons; a pipeline's
/// counters, listed in docs/metrics.md), not fields.
const MAPS: [&str; 8] =
    ["pipelines", "pipelines.*", "ports", "xstats", "malformed_by_reason", "drops", "influx", "queue_alerts"];

/// Every field path of a record: `a.b` inside objects, `a[]` for an
/// array's elements, `a.*` for a map's entries.
fn paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            let leaf = MAPS.iter().any(|m| prefix == *m || prefix.ends_with(&format!(".{m}")));
            for (key, value) in map {
                let key = if leaf { "*" } else { key.as_str() };
                let path = if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
                paths(value, &path, out);
            }
            if map.is_empty() {
                out.insert(prefix.to_string());
            }
        }
        Value::Array(items) => {
            for item in items {
                paths(item, &format!("{prefix}[]"), out);
            }
            if items.is_empty() {
                out.insert(format!("{prefix}[]"));
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// Structures that are the same wherever they appear (one function prints
/// each), documented once: the nested path and the one it reads as.
const SHAPES: [(&str, &str); 3] = [
    ("report.int.", "int."),
    ("report.reports[].packet.int21.", "int21."),
    ("summary.flows[].flow.", "flow."),
];

/// A path in the docs' terms: a flow anywhere is `flow.…`, a nested shape
/// its own.
fn canonical(path: String) -> String {
    if let Some((_, leaf)) = path.split_once(".flow.").filter(|_| !path.starts_with("summary.")) {
        return format!("flow.{leaf}");
    }
    match SHAPES.iter().find(|(nested, _)| path.starts_with(nested)) {
        Some((nested, own)) => format!("{own}{}", &path[nested.len()..]),
        None => path,
    }
}

/// The fields of `records` docs/output.md does not list (as `` `path` ``
/// in the table of `section`).
fn undocumented(records: &[Value], section: &str) -> Vec<String> {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/output.md")).unwrap();
    let start =
        docs.find(&format!("\n## {section}")).unwrap_or_else(|| panic!("docs/output.md: no ## {section}"));
    let end = docs[start + 1..].find("\n## ").map_or(docs.len(), |at| start + 1 + at);
    let mut all = BTreeSet::new();
    for record in records {
        paths(record, "", &mut all);
    }
    let all: BTreeSet<String> = all.into_iter().map(canonical).collect();
    all.into_iter().filter(|path| !docs[start..end].contains(&format!("| `{path}` |"))).collect()
}

/// Reports of every kind through decode and collect: the same values
/// under the same names, and every field in docs/output.md.
#[test]
fn decode_and_collect_name_the_same_facts_the_same_way() {
    let (mut decoded_all, mut collected_all) = (Vec::new(), Vec::new());
    // Host-INT latency and drop-summary reports from a real sink.
    let dir = workdir("schema-hostint");
    let sink = run_port_exporter_sink(&dir, 600);
    let (decoded, sent) = (decode(&dir, "reports.pcap"), udp_payloads(&dir.join("reports.pcap")));
    let collected = collect(&sent, sent.len());
    let kinds: BTreeSet<&str> = collected.iter().filter_map(|r| r["type"].as_str()).collect();
    assert_eq!(kinds, BTreeSet::from(["drop-summary", "latency"]));
    assert_eq!(same_as_decode(&collected, &decoded), sent.len());
    decoded_all.extend(decoded);
    collected_all.extend(collected);

    // Telemetry Report 0.5 flow reports (export.profile tr05).
    let dir = workdir("schema-tr05");
    let args = ["gen", "--out", "lossy.pcap", "--packets", "200", "--flows", "3", "--proto", "udp"];
    int_tools(&dir, &[&args[..], &["--sizes", "200", "--instrument", "hostint"]].concat());
    write_pcap(&dir.join("empty.pcap"), &[]);
    run_node(&dir, &port_exporter_config("lossy.pcap").replace("export:\n", "export:\n  profile: tr05\n"));
    let (decoded, sent) = (decode(&dir, "reports.pcap"), udp_payloads(&dir.join("reports.pcap")));
    let collected = collect(&sent, sent.len());
    assert!(collected.iter().any(|r| r["type"] == "tr05-flow"), "{collected:?}");
    assert_eq!(same_as_decode(&collected, &decoded), sent.len());
    decoded_all.extend(decoded);
    collected_all.extend(collected);

    // Telemetry Report 2.0 as switches send it: INT stacks and drops.
    let dir = workdir("schema-tr20");
    let datagrams = switch_reports();
    write_pcap(&dir.join("tr20.pcap"), &datagrams.iter().map(|d| report_frame(d)).collect::<Vec<_>>());
    let decoded = decode(&dir, "tr20.pcap");
    let individuals: usize = decoded.iter().map(|d| d["report"]["reports"].as_array().unwrap().len()).sum();
    let collected = collect(&datagrams, individuals);
    assert_eq!(same_as_decode21(&collected, &decoded), individuals);
    decoded_all.extend(decoded);
    collected_all.extend(collected);

    decoded_all.extend(data_packets(&dir));
    let missing = [
        ("decode", undocumented(&decoded_all, "decode")),
        ("collect", undocumented(&collected_all, "collect")),
        ("int-node --stats-json", undocumented(&[sink.stats], "int-node --stats-json")),
    ];
    assert!(missing.iter().all(|(_, fields)| fields.is_empty()), "not in docs/output.md: {missing:#?}");
}

/// decode's records of data packets: INT 0.5, INT 2.1 MD and MX, in
/// tunnels, IFA 2.0 (an initiator's and a transit's hops), plain, not IP,
/// malformed.
fn data_packets(dir: &Path) -> Vec<Value> {
    let gen = ["gen", "--packets", "6", "--flows", "3", "--proto", "mix", "--sizes", "120"];
    let mut records = Vec::new();
    for (file, how) in [
        ("hostint.pcap", &["--instrument", "hostint"][..]),
        ("md.pcap", &["--instrument", "int21-md"]),
        ("mx.pcap", &["--instrument", "int21-mx"]),
        ("gpe.pcap", &["--instrument", "int21-md", "--tunnel", "vxlan-gpe"]),
        ("geneve.pcap", &["--instrument", "int21-md", "--tunnel", "geneve", "--ipv6", "0.5"]),
        ("ifa.pcap", &["--instrument", "ifa", "--ifa-hops", "2"]),
        ("plain.pcap", &[]),
    ] {
        int_tools(dir, &[&gen[..], &["--out", file], how].concat());
        records.extend(decode(dir, file));
    }
    let mut broken = mixed_traffic(2, 1, 0);
    broken[0].truncate(20);
    broken[1][12] = 0x88;
    write_pcap(&dir.join("broken.pcap"), &broken);
    records.extend(decode(dir, "broken.pcap"));
    records
}
