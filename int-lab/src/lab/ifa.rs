//! An IFA 2.0 zone's checks (config/lab/multihopifa.yaml and the other
//! IFA labs): what the IFA headers and hops of every terminator report
//! say, that no IFA byte reached the server's kernel, and what the
//! initiator and terminator counted.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::figures::node_counter;
use super::namespaces::Lab;
use super::topology::{node_id, node_name, IfaChecks};
use super::verdicts::Checks;
use crate::error::Error;

/// IFA header version 2.0, and the only name space whose hops are read.
const VERSION: u64 = 2;
const GNS_LOCAL: u64 = 15;
/// The IFA header's I flag: a live packet, not a probe copy.
const FLAG_INBAND: u64 = 0x04;
/// Current Length grows by a hop's 32 bytes, in 4-byte words.
const HOP_WORDS: u64 = 8;
/// The most negative link latency accepted between nodes on one host
/// clock, ns (a burst's packets share one reading).
const SKEW_TOLERANCE_NS: i64 = 100_000;

/// The IFA records (TR 2.0 reports whose packet carries IFA) of the
/// collector's output.
fn ifa_records(workdir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(workdir.join("collector.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["ifa"].is_object())
        .collect()
}

/// Every report's IFA: its stack one of the topology's paths, the
/// initiator's hop first; the headers as the initiator and its transits
/// leave them (version 2, GNS 15, Next Header the flow's protocol, I as
/// the mode says, Hop Limit down one a transit, Current Length 8 words a
/// hop); each hop LNS 1 with its system ports; each link's time forward.
pub fn check_reports(workdir: &Path, spec: &IfaChecks, checks: &mut Checks) -> Result<(), Error> {
    let paths: Vec<Vec<u64>> =
        spec.paths.iter().map(|p| p.iter().map(|id| node_id(id)).collect()).collect::<Result<_, _>>()?;
    let ports: BTreeMap<u64, [u16; 2]> =
        spec.ports.iter().map(|(id, p)| Ok((node_id(id)?, *p))).collect::<Result<_, Error>>()?;
    let records = ifa_records(workdir);
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut protocols: BTreeMap<u64, u64> = BTreeMap::new();
    let mut wrong: Vec<String> = Vec::new();
    for record in &records {
        let path = path_of(record);
        *seen.entry(names(&path)).or_default() += 1;
        *protocols.entry(record["ifa"]["next_header"].as_u64().unwrap_or(0)).or_default() += 1;
        let fault = if paths.contains(&path) {
            fault(record, &path, spec, &ports)
        } else {
            Some("a path the topology has not".to_string())
        };
        if let Some(fault) = fault {
            wrong.push(format!("{} {}: {fault}", flow_name(record), names(&path)));
        }
    }
    checks.check(
        "ifa hops",
        !records.is_empty() && wrong.is_empty(),
        format!(
            "{} reports with IFA; their paths (Device IDs, the initiator first): {}; by Next Header: {}; \
             Hop Limit {} less one a transit, I {}{}",
            records.len(),
            seen.iter().map(|(p, n)| format!("{p} x{n}")).collect::<Vec<_>>().join(", "),
            protocols.iter().map(|(p, n)| format!("{p} x{n}")).collect::<Vec<_>>().join(", "),
            spec.hop_limit,
            if spec.probe { "clear (probe copies)" } else { "set" },
            if wrong.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} wrong, first: {}",
                    wrong.len(),
                    wrong.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
                )
            }
        ),
    );
    Ok(())
}

/// The record's path, the initiator first, by Device ID.
fn path_of(record: &serde_json::Value) -> Vec<u64> {
    record["hop_metadata"]
        .as_array()
        .map(|hops| hops.iter().filter_map(|h| h["node_id"].as_u64()).collect())
        .unwrap_or_default()
}

fn names(path: &[u64]) -> String {
    format!("[{}]", path.iter().map(|id| node_name(*id)).collect::<Vec<_>>().join(", "))
}

fn flow_name(record: &serde_json::Value) -> String {
    let flow = &record["flow"];
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    format!("{}:{} > {}:{}", text(&flow["src"]), flow["src_port"], text(&flow["dst"]), flow["dst_port"])
}

/// What is wrong with a report on `path` (one of the topology's), if
/// anything: the first fault found.
fn fault(
    record: &serde_json::Value,
    path: &[u64],
    spec: &IfaChecks,
    ports: &BTreeMap<u64, [u16; 2]>,
) -> Option<String> {
    let ifa = &record["ifa"];
    let field = |name: &str| ifa[name].as_u64().unwrap_or(u64::MAX);
    let transits = path.len() as u64 - 1;
    let flags = field("flags");
    let inband = flags & FLAG_INBAND != 0;
    let expected = [
        ("version", VERSION),
        ("gns", GNS_LOCAL),
        ("hop_limit", u64::from(spec.hop_limit).saturating_sub(transits)),
        ("current_length", HOP_WORDS * path.len() as u64),
    ];
    if let Some((name, want)) = expected.iter().find(|(name, want)| field(name) != *want) {
        return Some(format!("{name} {} (expected {want})", field(name)));
    }
    if inband == spec.probe {
        return Some(format!("flags {flags:#04x}: I {}", if inband { "set" } else { "clear" }));
    }
    if ![6, 17].contains(&field("next_header")) {
        return Some(format!("next_header {} (not TCP or UDP)", field("next_header")));
    }
    // The hops as the packet carries them: newest first.
    let hops = record["ifa_hops"].as_array().cloned().unwrap_or_default();
    let carried: Vec<u64> = hops.iter().rev().filter_map(|h| h["device_id"].as_u64()).collect();
    if carried != path {
        return Some(format!("ifa_hops {} against hop_metadata", names(&carried)));
    }
    for hop in &hops {
        let device = hop["device_id"].as_u64().unwrap_or(0);
        if hop["lns"] != 1 {
            return Some(format!("{}: lns {}", node_name(device), hop["lns"]));
        }
        let Some([ingress, egress]) = ports.get(&device) else { continue };
        if hop["ingress_system_port"] != *ingress || hop["egress_system_port"] != *egress {
            return Some(format!(
                "{}: system ports {} > {} (expected {ingress} > {egress})",
                node_name(device),
                hop["ingress_system_port"],
                hop["egress_system_port"]
            ));
        }
    }
    backwards_link(record)
}

/// A link of the record's hops on which time ran backwards: the next
/// hop's RX time before this hop's. Not before this hop's RX time plus its
/// residence: a software node's residence is its burst's foretold
/// departure (`pipeline/hop_figures.rs`, capped at 320 us), which a busy
/// TCP burst's packets overtake (seen: the next hop's RX 114 us before).
fn backwards_link(record: &serde_json::Value) -> Option<String> {
    let hops = record["hop_metadata"].as_array()?;
    hops.windows(2).find_map(|pair| {
        let [a, b] = pair else { return None };
        let link = b["ingress_timestamp"].as_i64()? - a["ingress_timestamp"].as_i64()?;
        (link < -SKEW_TOLERANCE_NS)
            .then(|| format!("RX time at {} {link} ns after the hop before", b["node_id"]))
    })
}

/// No IFA byte reached the server's kernel: in its namespace's IP, TCP
/// and UDP counters, no packet of an unknown protocol (IFA's 253: a copy
/// or a packet the terminator let by), no bad IP header and no bad TCP or
/// UDP checksum (IFA bytes left inside a restored packet: the L4 checksum
/// covers the packet without them); and it took packets in.
pub fn check_delivery(lab: &Lab, server_host: &str, checks: &mut Checks) -> Result<(), Error> {
    let snmp = snmp(&lab.exec(server_host, &["cat", "/proc/net/snmp"])?);
    let get = |name: &str| snmp.get(name).copied();
    let faults = ["Ip.InUnknownProtos", "Ip.InHdrErrors", "Tcp.InCsumErrors", "Udp.InCsumErrors"];
    let clean = faults.iter().all(|name| get(name) == Some(0));
    checks.check(
        "no ifa at the server",
        clean && get("Ip.InDelivers").is_some_and(|n| n > 0),
        format!(
            "the server's kernel: {}, Ip.InDelivers {}",
            faults.iter().map(|n| format!("{n} {}", fmt(get(n)))).collect::<Vec<_>>().join(", "),
            fmt(get("Ip.InDelivers"))
        ),
    );
    Ok(())
}

fn fmt(value: Option<u64>) -> String {
    value.map_or("missing".into(), |v| v.to_string())
}

/// `/proc/net/snmp`'s counters as `Ip.InDelivers` -> value: each
/// protocol's line of names, then its line of values.
fn snmp(text: &str) -> BTreeMap<String, u64> {
    let lines: Vec<&str> = text.lines().collect();
    let mut counters = BTreeMap::new();
    for pair in lines.chunks_exact(2) {
        let [names, values] = pair else { continue };
        let (Some((protocol, names)), Some((_, values))) = (names.split_once(": "), values.split_once(": "))
        else {
            continue;
        };
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(value) = value.parse() {
                counters.insert(format!("{protocol}.{name}"), value);
            }
        }
    }
    counters
}

/// What the initiator and terminator counted: inband, the terminator
/// stripped packets and dropped no copy; in probe mode, every copy the
/// initiator sent ended at the terminator (`probes_dropped`) and none was
/// stripped; in both, nothing refused.
pub fn at_exit(workdir: &Path, spec: &IfaChecks, checks: &mut Checks) {
    let initiator = |name| node_counter(workdir, &spec.initiator, name);
    let terminator = |name| node_counter(workdir, &spec.terminator, name);
    let (instrumented, cloned, clones_dropped, clones_refused) = (
        initiator("instrumented"),
        initiator("cloned"),
        initiator("clones_dropped"),
        initiator("clones_refused"),
    );
    let (stripped, probes, malformed, not_int) = (
        terminator("stripped"),
        terminator("probes_dropped"),
        terminator("malformed_dropped"),
        terminator("not_int"),
    );
    let ok = if spec.probe {
        cloned > 0 && probes == cloned - clones_dropped.min(cloned) && stripped == 0 && not_int > 0
    } else {
        instrumented > 0 && stripped > 0 && probes == 0 && cloned == 0
    };
    checks.check(
        if spec.probe { "ifa probe copies" } else { "ifa counters" },
        ok && malformed == 0,
        format!(
            "the initiator in {}: instrumented {instrumented}, cloned {cloned}, clones_dropped {clones_dropped}, \
             clones_refused {clones_refused}; the terminator in {}: stripped {stripped}, probes_dropped {probes}, \
             not_int {not_int}, malformed_dropped {malformed}",
            spec.initiator, spec.terminator
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernels_counters() {
        let text = "Ip: Forwarding InReceives InUnknownProtos\nIp: 2 15 0\nUdp: InDatagrams InCsumErrors\nUdp: 7 1\n";
        let counters = snmp(text);
        assert_eq!(counters.get("Ip.InReceives"), Some(&15));
        assert_eq!(counters.get("Ip.InUnknownProtos"), Some(&0));
        assert_eq!(counters.get("Udp.InCsumErrors"), Some(&1));
        assert_eq!(counters.len(), 5);
    }

    #[test]
    fn judges_a_reports_ifa() {
        let spec = IfaChecks {
            paths: vec![vec!["0xa01".into(), "0xa05".into()]],
            hop_limit: 8,
            ports: [("0xa05".to_string(), [5, 6])].into_iter().collect(),
            initiator: "src".into(),
            terminator: "sink".into(),
            probe: false,
        };
        let ports = BTreeMap::from([(0xa05, [5, 6])]);
        let hop = |id: u64, ports: [u16; 2]| serde_json::json!({"lns": 1, "device_id": id, "ingress_system_port": ports[0], "egress_system_port": ports[1]});
        let mut record = serde_json::json!({
            "ifa": {"version": 2, "gns": 15, "next_header": 17, "flags": 4, "hop_limit": 7, "current_length": 16},
            "ifa_hops": [hop(0xa05, [5, 6]), hop(0xa01, [1, 2])],
            "hop_metadata": [
                {"node_id": 0xa01, "ingress_timestamp": 100, "egress_timestamp": 200},
                {"node_id": 0xa05, "ingress_timestamp": 300, "egress_timestamp": 400},
            ],
        });
        assert_eq!(fault(&record, &[0xa01, 0xa05], &spec, &ports), None);
        record["ifa"]["hop_limit"] = serde_json::json!(8);
        assert_eq!(fault(&record, &[0xa01, 0xa05], &spec, &ports).unwrap(), "hop_limit 8 (expected 7)");
        record["ifa"]["hop_limit"] = serde_json::json!(7);
        record["ifa"]["flags"] = serde_json::json!(0);
        assert_eq!(fault(&record, &[0xa01, 0xa05], &spec, &ports).unwrap(), "flags 0x00: I clear");
        record["ifa"]["flags"] = serde_json::json!(4);
        record["ifa_hops"][0] = hop(0xa05, [6, 5]);
        assert!(fault(&record, &[0xa01, 0xa05], &spec, &ports).unwrap().contains("system ports 6 > 5"));
        record["ifa_hops"][0] = hop(0xa05, [5, 6]);
        record["hop_metadata"][1]["ingress_timestamp"] = serde_json::json!(100 - 100_000);
        assert_eq!(fault(&record, &[0xa01, 0xa05], &spec, &ports), None);
        record["hop_metadata"][1]["ingress_timestamp"] = serde_json::json!(100 - 100_001);
        assert!(fault(&record, &[0xa01, 0xa05], &spec, &ports)
            .unwrap()
            .starts_with("RX time at 2565 -100001 ns"));
    }
}
