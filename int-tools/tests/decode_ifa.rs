//! decode and gen speak IFA 2.0: decode names every field of scapy's own
//! IFA packets (pull request 4235, `tests/ifa/scapy_packets.*`, all 53) as
//! scapy built them, names each packet IFA refuses by its reason, and
//! reads what `gen --instrument ifa` writes; int-core's terminator gives
//! back gen's plain packets from it byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/files.rs"]
mod files;
#[path = "../../tests/common/ifa_scapy.rs"]
mod ifa_scapy;

use std::path::Path;
use std::process::Command;

use files::*;
use int_core::ifa::{sink, Domain, L4Rule, Refusal};
use int_core::FrameBuf;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/");

/// Runs int-tools in `dir`; asserts it succeeds; its standard output.
fn int_tools(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).current_dir(dir).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// decode's JSON records of `file`.
fn decode(dir: &Path, file: &str, extra: &[&str]) -> Vec<Value> {
    let json = int_tools(dir, &[&["decode", "--json"], extra, &[file]].concat());
    json.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn scapy_records() -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{FIXTURES}scapy_packets.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["ip_protocol"], 253);
    json["packets"].as_array().unwrap().clone()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

fn bits(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// The IFA header's and metadata header's fields against scapy's.
fn check_headers(ifa: &Value, record: &Value) {
    let (h, md, summary) = (&ifa["header"], &ifa["md"], &record["summary"]);
    let built = &record["ifa"];
    for (ours, scapys) in
        [("version", "ver"), ("gns", "gns"), ("next_header", "nexthdr"), ("max_length", "maxlen")]
    {
        assert_eq!(h[ours], built[scapys], "{ours}: {summary}");
    }
    let flags = built["flags"].as_u64().unwrap();
    assert_eq!(bits(&h["flags"]), flags, "{summary}");
    for (name, bit) in [("mf", 0x10), ("ts", 0x08), ("i", 0x04), ("ta", 0x02), ("c", 0x01)] {
        assert_eq!(h[name], flags & bit != 0, "{name}: {summary}");
    }
    let built = &record["md"];
    for (ours, scapys) in
        [("request_vector", "request"), ("hop_limit", "hoplmt"), ("current_length", "curlen")]
    {
        assert_eq!(md[ours], built[scapys], "{ours}: {summary}");
    }
    let action = built["action"].as_u64().unwrap();
    assert_eq!(bits(&md["action_vector"]), action, "{summary}");
    assert_eq!((md["l"] == true, md["c"] == true), (action & 0x80 != 0, action & 0x40 != 0), "{summary}");
}

/// Every hop's fields against scapy's (its names beside ours; scapy
/// splits the second opaque word into rsvd0 and qcells).
fn check_hops(ifa: &Value, record: &Value) -> usize {
    let (ours, built) = (ifa["hops"].as_array().unwrap(), record["hops"].as_array().unwrap());
    assert_eq!(ours.len(), built.len(), "{}", record["summary"]);
    assert_eq!(ifa["hop_count"], built.len());
    for (hop, fields) in ours.iter().zip(built) {
        let f = |k: &str| fields[k].as_u64().unwrap();
        ifa_scapy::check_hop(hop, fields, &record["summary"]);
        let gbps = [10, 25, 40, 50, 100, 200, 400].get(f("speed") as usize).copied();
        assert_eq!(hop["egress_port_speed_gbps"].as_u64(), gbps);
    }
    ours.len()
}

/// The carrier, what follows the stack and the offsets against scapy's.
fn check_carrier(packet: &Value, record: &Value) {
    let (ifa, summary) = (&packet["ifa"], &record["summary"]);
    let (carrier, l4) = (&ifa["carrier"], hex(record["l4_bytes"].as_str().unwrap()));
    let word = |at: usize| u64::from(u16::from_be_bytes([l4[at], l4[at + 1]]));
    let long = |at: usize| u64::from(u32::from_be_bytes([l4[at], l4[at + 1], l4[at + 2], l4[at + 3]]));
    let offsets = &record["offsets"];
    assert_eq!(carrier["type"], offsets["l4_kind"], "{summary}");
    match carrier["type"].as_str().unwrap() {
        "gre" => {
            assert_eq!(bits(&carrier["protocol"]), word(2), "{summary}");
            let flags = word(0);
            let mut at = 4;
            for (name, bit) in [("checksum", 0x8000), ("key", 0x2000), ("sequence", 0x1000)] {
                let carried =
                    (flags & bit != 0).then(|| if name == "checksum" { word(at) } else { long(at) });
                assert_eq!(carrier[name].as_u64(), carried, "{name}: {summary}");
                at += if carried.is_some() { 4 } else { 0 };
            }
        }
        kind => {
            assert_eq!(
                (carrier["src_port"].as_u64(), carrier["dst_port"].as_u64()),
                (Some(word(0)), Some(word(2)))
            );
            assert_eq!(
                (&packet["src_port"], &packet["dst_port"]),
                (&carrier["src_port"], &carrier["dst_port"])
            );
            assert_eq!(carrier["checksum"], record["l4_coverage"]["carried_checksum"], "{summary}");
            if kind == "udp" {
                assert_eq!(carrier["length"], record["l4_coverage"]["carried_length"], "{summary}");
            }
        }
    }
    let after = match ifa["payload"].as_str().unwrap() {
        "data" => "Raw",
        "ethernet" => "Ether",
        "ipv4" => "IP",
        "ipv6" => "IPv6",
        "vxlan" | "vxlan-gpe" => "VXLAN",
        other => panic!("{summary}: {other}"),
    };
    assert_eq!(after, record["after_stack"], "{summary}");
    if after == "VXLAN" {
        assert!(ifa["tunnel"]["vni"].is_u64(), "{summary}: {}", ifa["tunnel"]);
    }
    for key in ["ip", "ifa", "l4", "md", "stack", "payload", "ip_end"] {
        assert_eq!(ifa["offsets"][key], offsets[key], "{key}: {summary}");
    }
}

/// Every field path of `value` (`a.b`, `a[]` for an array's elements).
fn paths(value: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| paths(v, &format!("{prefix}.{k}"), out)),
        Value::Array(items) => items.iter().for_each(|v| paths(v, &format!("{prefix}[]"), out)),
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// The fields of the `ifa` blocks of `records` that docs/output.md's
/// decode table does not name.
fn undocumented(records: &[Value]) -> Vec<String> {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/output.md")).unwrap();
    let start = docs.find("\n## decode").unwrap();
    let end = docs[start + 1..].find("\n## ").map_or(docs.len(), |at| start + 1 + at);
    let mut all = std::collections::BTreeSet::new();
    records.iter().for_each(|record| paths(&record["ifa"], "ifa", &mut all));
    all.into_iter().filter(|path| !docs[start..end].contains(&format!("`{path}`"))).collect()
}

/// Every field of each of scapy's 53 packets, as decode names it, is the
/// value scapy built; under another protocol number none is IFA.
#[test]
fn decode_names_every_field_of_scapys_packets() {
    let dir = workdir("decode-ifa-scapy");
    let pcap = format!("{FIXTURES}scapy_packets.pcap");
    let (decoded, records) = (decode(&dir, &pcap, &[]), scapy_records());
    assert_eq!((decoded.len(), records.len()), (53, 53));
    let mut hops = 0;
    for (packet, record) in decoded.iter().zip(&records) {
        assert_eq!(packet["kind"], "ifa", "{}: {packet}", record["summary"]);
        assert_eq!(packet["protocol"], 253);
        check_headers(&packet["ifa"], record);
        hops += check_hops(&packet["ifa"], record);
        check_carrier(packet, record);
    }
    assert_eq!(hops, 105);
    assert_eq!(undocumented(&decoded), Vec::<String>::new(), "not in docs/output.md");
    let text = int_tools(&dir, &["decode", &pcap]);
    assert_eq!(text.matches("\n  ifa v2 gns 15 next header ").count(), 53, "{text}");
    assert!(text.contains("  hop 0: lns=1 device_id=703710 ip_ttl=64 egress_port_speed=6 egress_port_speed_gbps=400 congestion=3 queue_id=42"), "{text}");
    let other = decode(&dir, &pcap, &["--ifa-protocol", "131"]);
    assert!(other.iter().all(|p| p["kind"] == "plain" && p.get("ifa").is_none()), "{other:?}");
}

/// scapy's first packet (IPv4, UDP) or second (IPv4, TCP) with the
/// lie that IFA refuses for `reason`.
fn refused_by(reason: Refusal) -> Vec<u8> {
    let frames = read_pcap(&Path::new(FIXTURES).join("scapy_packets.pcap"));
    let (mut udp, mut tcp) = (frames[0].clone(), frames[1].clone());
    // IPv4 at 14, IFA header at 34, L4 at 38, the metadata header at 46
    // (UDP) or 58 (TCP).
    let (ifa, md) = (34, 46);
    match reason {
        Refusal::Packet => udp[16..18].copy_from_slice(&0xffffu16.to_be_bytes()),
        Refusal::Truncated => {
            udp[16..18].copy_from_slice(&26u16.to_be_bytes());
            udp.truncate(14 + 26);
        }
        Refusal::Version => udp[ifa] = 0x3f,
        Refusal::GlobalNameSpace => udp[ifa] = 0x21,
        Refusal::MetadataFragment => udp[ifa + 2] |= 0x10,
        Refusal::TailStamp => udp[ifa + 2] |= 0x08,
        Refusal::ChecksumHeader => udp[ifa + 2] |= 0x01,
        Refusal::NextHeader => udp[ifa + 1] = 1,
        Refusal::L4 => {
            tcp[38 + 12] = 0x40;
            return tcp;
        }
        Refusal::LengthNotHops => udp[md + 3] = 12,
        Refusal::LengthPastMax => udp[ifa + 3] = 8,
        Refusal::StackPastPacket => udp[md + 3] = 40,
    }
    udp
}

/// One packet per reason IFA refuses: decode names the reason, as JSON
/// and as text; a packet whose IP header lies is `malformed` whatever
/// its protocol (no IFA reason is the IP header's).
#[test]
fn decode_names_each_refusal() {
    let dir = workdir("decode-ifa-refused");
    let frames: Vec<Vec<u8>> = Refusal::ALL.iter().map(|reason| refused_by(*reason)).collect();
    write_pcap(&dir.join("refused.pcap"), &frames);
    let decoded = decode(&dir, "refused.pcap", &[]);
    let text = int_tools(&dir, &["decode", "refused.pcap"]);
    assert_eq!(decoded.len(), Refusal::ALL.len());
    for (packet, reason) in decoded.iter().zip(Refusal::ALL) {
        assert!(packet["error"].is_string(), "{reason:?}: {packet}");
        assert!(packet.get("ifa").is_none());
        if reason == Refusal::Packet {
            assert_eq!(packet["kind"], "malformed", "{packet}");
            continue;
        }
        assert_eq!(packet["kind"], "malformed-ifa", "{reason:?}: {packet}");
        assert_eq!(packet["drop_reason"], reason.name(), "{packet}");
        assert!(text.contains(&format!("\n  ifa refused: {}\n", reason.name())), "{reason:?}: {text}");
    }
}

/// `gen --instrument ifa --ifa-hops N` writes what int-core's initiator and
/// N-1 transits write: decode reads N hops, newest first, with the
/// metadata header they leave; int-core's terminator gives back, byte for
/// byte, the packets gen writes plain (the same flows, with as much more
/// payload as IFA took), over UDP and TCP, IPv4 and IPv6, VLANs, IPv6
/// extension headers and VXLAN.
#[test]
fn gen_writes_ifa_that_decode_reads_and_the_terminator_strips() {
    let dir = workdir("gen-ifa");
    let common = [
        "--packets",
        "24",
        "--flows",
        "6",
        "--proto",
        "mix",
        "--ipv6",
        "0.5",
        "--vlan",
        "0.3",
        "--tcp-options",
    ];
    for (hops, tunnel) in
        [(1u8, &[][..]), (3, &[]), (31, &["--tunnel", "vxlan"][..]), (2, &["--ipv6-options"][..])]
    {
        let added = 8 + 32 * usize::from(hops);
        let (ifa_size, plain_size) = ((1200 + added).to_string(), "1200".to_string());
        let hops_arg = hops.to_string();
        let ifa_args =
            ["--instrument", "ifa", "--ifa-hops", &hops_arg, "--sizes", &ifa_size, "--out", "ifa.pcap"];
        int_tools(&dir, &[&["gen"], &common[..], tunnel, &ifa_args].concat());
        int_tools(
            &dir,
            &[&["gen"], &common[..], tunnel, &["--sizes", &plain_size, "--out", "plain.pcap"]].concat(),
        );
        let decoded = decode(&dir, "ifa.pcap", &[]);
        assert_eq!(decoded.len(), 24);
        assert_eq!(undocumented(&decoded), Vec::<String>::new(), "not in docs/output.md");
        for packet in &decoded {
            let ifa = &packet["ifa"];
            assert_eq!(packet["kind"], "ifa", "{packet}");
            assert_eq!(ifa["hop_count"], hops);
            assert_eq!(ifa["md"]["current_length"], 8 * u64::from(hops));
            assert_eq!(ifa["md"]["hop_limit"], 255 - u64::from(hops - 1));
            assert_eq!(ifa["header"]["i"], true);
            let devices: Vec<u64> =
                ifa["hops"].as_array().unwrap().iter().map(|h| h["device_id"].as_u64().unwrap()).collect();
            assert_eq!(devices, (1..=u64::from(hops)).rev().collect::<Vec<_>>());
            let tunnelled = if tunnel.contains(&"--tunnel") { "vxlan" } else { "data" };
            assert_eq!(ifa["payload"], tunnelled, "{packet}");
        }
        let (ifa, plain) = (read_pcap(&dir.join("ifa.pcap")), read_pcap(&dir.join("plain.pcap")));
        assert_eq!(ifa.len(), plain.len());
        for (i, (frame, plain)) in ifa.iter().zip(&plain).enumerate() {
            let mut buffer = frame.clone();
            let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).unwrap();
            let found = sink::find(view.frame(), &Domain::default()).unwrap().unwrap();
            assert_eq!(sink::strip(&mut view, &found, L4Rule::Keep), Some(added));
            assert_eq!(view.frame(), &plain[..], "hops {hops} {tunnel:?}: packet {i}");
        }
    }
}
