//! `int-tools decode FILE`: every packet of a capture (pcap or pcapng;
//! Ethernet, raw IP or Linux cooked; `-` for a pipe), with its
//! telemetry: an INT 0.5
//! block (any shim Type, any hop count, each hop's words named by the
//! instruction bits), an INT 2.1 block (MD or MX, in the packet or in its
//! tunnel, [`crate::decode21`]), IOAM traces and Edge-to-Edge options of
//! any namespace ([`crate::decode_ioam`]), and every report kind
//! (Host-INT latency and Drop-Summary, with or without the sink id word;
//! Telemetry Report 0.5 NProto 0-2; Telemetry Report 2.0, postcards
//! included). This file holds the packet walk, INT 0.5 and the reports.
//! Malformed packets are described with the reason, never skipped; a cut
//! capture prints every whole packet before its error. Text, or one JSON
//! object per line (docs/output.md).

// The text printer reads fields with serde_json's `value["key"]`, which
// yields Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::path::PathBuf;

use clap::Args;
use int_core::encap::Domain;
use int_core::encap::{DscpMatch, Encapsulation, TcpPlacement};
use int_core::int05::sink;
use int_core::int05::{instruction, HopMetadata, Instructions, IntBlock};
use int_core::int21;
use int_core::locate::{self, L4};
use int_core::names::parse_name;
use int_core::report::tr05_flow::FlowReport;
use int_core::report::tr20;
use int_core::report::{self, Report, SinkIdWord, DEFAULT_COLLECTOR_PORT};
use serde_json::{json, Map, Value};

use crate::{decode21, pcap};

#[derive(Debug, Args)]
pub struct DecodeArgs {
    pub file: PathBuf,
    /// One JSON object per packet.
    #[arg(long)]
    pub json: bool,
    /// DSCP value and mask marking INT (INT_05_OVER_TCP_UDP), as value/mask.
    #[arg(long, default_value = "1/1")]
    pub dscp: DscpMatch,
    /// UDP port of INT_05_EXTENSION_UDP.
    #[arg(long, default_value_t = int_core::encap::DEFAULT_EXTENSION_PORT)]
    pub udp_port: u16,
    /// before-options (Host-INT) or after-options (INT 0.5).
    #[arg(long, default_value = "before-options", value_parser = parse_name::<TcpPlacement>)]
    pub tcp_placement: TcpPlacement,
    /// UDP destination port of telemetry reports.
    #[arg(long, default_value_t = DEFAULT_COLLECTOR_PORT)]
    pub report_port: u16,
    /// DSCP value and mask marking INT 2.1 (NPT 0), as value/mask; the
    /// spec's examples use 0x17.
    #[arg(long, default_value = "0x17/0x3f")]
    pub int21_dscp: DscpMatch,
    /// UDP destination port marking INT 2.1 (NPT 1 and 2; IANA has not
    /// assigned one).
    #[arg(long)]
    pub int21_port: Option<u16>,
    /// The INT 2.1 domain's Domain Specific ID, under which int-node's
    /// sources put each flow's packet number below the stack (0: none).
    #[arg(long, default_value = "0x4944", value_parser = parse_u16)]
    pub int21_domain_id: u16,
}

/// The INT domains decode looks for, INT 2.1 first (a 2.1 block in a
/// packet that also carries a 0.5 mark is 2.1's; a 0.5 block is never
/// read as 2.1, whose shim type is in the high nibble).
pub struct Domains {
    pub int05: [Domain; 2],
    pub int21: Vec<int21::Domain>,
}

/// Why decode stops: the capture cannot be read on (the packets before
/// were printed).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Capture(#[from] crate::pcap::CaptureError),
}

/// A flag's value that is no 16-bit number.
#[derive(Debug, thiserror::Error)]
#[error("{text:?}: a number 0-65535 (decimal or 0x hex)")]
pub struct U16Error {
    text: String,
}

pub fn run(args: &DecodeArgs) -> Result<(), DecodeError> {
    let tcp_placement = args.tcp_placement;
    let source_only = int21::SourceOnly::sequence(args.int21_domain_id);
    let int21_domain = |marking| int21::Domain { marking, tcp_placement, source_only };
    let domains = Domains {
        int05: [
            Domain { encapsulation: args.dscp.encapsulation(), tcp_placement },
            Domain { encapsulation: Encapsulation::ExtensionUdp { port: args.udp_port }, tcp_placement },
        ],
        int21: [Some(int21::Marking::Dscp(args.int21_dscp)), args.int21_port.map(int21::Marking::UdpPort)]
            .into_iter()
            .flatten()
            .map(int21_domain)
            .collect(),
    };
    let mut capture = pcap::Capture::open(&args.file)?;
    let mut index = 0;
    // Packet by packet: a pipe from tcpdump prints as it comes, and a file
    // cut short prints every whole packet before the error.
    while let Some(packet) = capture.next_packet() {
        let packet = packet?;
        index += 1;
        let values = match &packet.frame {
            Ok(frame) => decode_frame(index, packet.time_ns, frame, &domains, args.report_port),
            Err(why) => {
                let mut out = Map::new();
                out.insert("index".into(), json!(index));
                crate::schema::put_time(&mut out, "time", Some(packet.time_ns));
                out.extend([
                    ("kind".to_string(), json!("unreadable")),
                    ("error".to_string(), json!(why.to_string())),
                ]);
                vec![Value::Object(out)]
            }
        };
        for value in values {
            if args.json {
                println!("{value}");
            } else {
                print_text(&value);
            }
        }
    }
    Ok(())
}

/// One packet as JSON: always `index`, `time_ns`, `length`; then what it
/// is. A UDP payload of several reports back to back (a GSO send seen
/// before the kernel cut it) gives one object per report, each with
/// `segment` and `segments`.
pub fn decode_frame(
    index: usize,
    time_ns: u64,
    frame: &[u8],
    domains: &Domains,
    report_port: u16,
) -> Vec<Value> {
    let mut out = Map::new();
    out.insert("index".into(), json!(index));
    crate::schema::put_time(&mut out, "time", Some(time_ns));
    out.insert("length".into(), json!(frame.len()));
    let reports = decode_packet(frame, domains, report_port, &mut out);
    if reports.len() <= 1 {
        out.extend(reports.into_iter().flatten());
        return vec![Value::Object(out)];
    }
    let segments = reports.len();
    reports
        .into_iter()
        .enumerate()
        .map(|(i, report)| {
            let mut one = out.clone();
            one.insert("segment".into(), json!(i + 1));
            one.insert("segments".into(), json!(segments));
            one.extend(report);
            Value::Object(one)
        })
        .collect()
}

/// What the packet is, into `out`; a report payload's fields are returned
/// instead (one map per report it holds).
fn decode_packet(
    frame: &[u8],
    domains: &Domains,
    report_port: u16,
    out: &mut Map<String, Value>,
) -> Vec<Map<String, Value>> {
    let malformed = |out: &mut Map<String, Value>, error: int_core::ParseError| {
        out.insert("kind".into(), json!("malformed"));
        out.insert("error".into(), json!(error.to_string()));
    };
    let ip = match locate::ip(frame) {
        Ok(Some(ip)) => ip,
        Ok(None) => {
            out.insert("kind".into(), json!("not-ip"));
            return Vec::new();
        }
        Err(error) => {
            malformed(out, error);
            return Vec::new();
        }
    };
    ip_fields(frame, &ip, out);
    let l4 = match locate::l4(frame, &ip) {
        Ok(l4) => l4,
        Err(error) => {
            malformed(out, error);
            return Vec::new();
        }
    };
    if let Some(l4) = l4 {
        let (src_port, dst_port) = l4.ports();
        out.insert("src_port".into(), json!(src_port));
        out.insert("dst_port".into(), json!(dst_port));
        if let L4::Udp { dst_port, .. } = l4 {
            let payload = frame.get(ip.l4 + 8..ip.end).unwrap_or(&[]);
            let source_only = domains.int21.first().map_or(int21::SourceOnly::NONE, |d| d.source_only);
            if dst_port == report_port {
                return decode_reports(payload, &domains.int21, source_only.domain_id);
            }
            if decode21::decode_tunnel(dst_port, payload, &source_only, out) {
                return Vec::new();
            }
        }
    }
    if ip.version == locate::IpVersion::V6
        && crate::decode_ioam::decode(frame.get(ip.l3..).unwrap_or_default(), out)
    {
        return Vec::new();
    }
    decode_int(frame, domains, out);
    Vec::new()
}

/// The IP header's fields: addresses, protocol and DSCP; for IPv6 also
/// its version, Traffic Class and whether it is a fragment.
fn ip_fields(frame: &[u8], ip: &locate::IpLocation, out: &mut Map<String, Value>) {
    let text = |at: usize, len: usize| match frame.get(at..at + len) {
        Some(&[a, b, c, d]) => std::net::Ipv4Addr::new(a, b, c, d).to_string(),
        Some(bytes) => {
            bytes.try_into().map_or(String::from("?"), |o: [u8; 16]| std::net::Ipv6Addr::from(o).to_string())
        }
        None => String::from("?"),
    };
    let (src, dst) = match ip.version {
        locate::IpVersion::V4 => (text(ip.l3 + 12, 4), text(ip.l3 + 16, 4)),
        locate::IpVersion::V6 => (text(ip.l3 + 8, 16), text(ip.l3 + 24, 16)),
    };
    out.insert("src".into(), json!(src));
    out.insert("dst".into(), json!(dst));
    out.insert("protocol".into(), json!(ip.protocol));
    out.insert("dscp".into(), json!(ip.tos >> 2));
    if ip.version == locate::IpVersion::V6 {
        out.insert("ip_version".into(), json!(6));
        out.insert("traffic_class".into(), json!(ip.tos));
        out.insert("fragment".into(), json!(ip.is_fragment()));
    }
}

/// Most reports a GSO send puts in one datagram (the kernel's UDP_MAX_SEGMENTS).
const GSO_MAX_SEGMENTS: usize = 64;

/// A report payload: one report, or, where it does not read as one, the
/// segments of a GSO send that each read as one (the fewest that do: a
/// GSO send cuts its payload every `size` bytes, the last segment maybe
/// shorter, as Linux allows); else the first error.
fn decode_reports(payload: &[u8], int21: &[int21::Domain], domain_id: u16) -> Vec<Map<String, Value>> {
    let whole = decode_report(payload, int21, domain_id);
    if whole.is_ok() {
        return whole.into_iter().collect();
    }
    for size in gso_segment_sizes(payload.len()) {
        let read: Result<Vec<_>, _> =
            payload.chunks(size).map(|one| decode_report(one, int21, domain_id)).collect();
        if let Ok(reports) = read {
            return reports;
        }
    }
    vec![whole.unwrap_or_else(|error| error)]
}

/// The segment sizes a GSO send of `len` bytes could have used, by the
/// fewest segments first (2 to [`GSO_MAX_SEGMENTS`]); for each count,
/// equal segments first, then larger ones with a shorter last segment.
/// Every size from len / 64 up comes once: at most `len` tries, each
/// stopping at the first segment that does not read.
fn gso_segment_sizes(len: usize) -> impl Iterator<Item = usize> {
    (2..=GSO_MAX_SEGMENTS).flat_map(move |segments| {
        // `segments` segments of `size` bytes: (segments - 1) * size < len <= segments * size.
        let smallest = len.div_ceil(segments);
        let largest = len.saturating_sub(1) / (segments - 1);
        smallest..=largest
    })
}

/// One report's fields (`kind`, `report`), or the error's.
fn decode_report(
    payload: &[u8],
    int21: &[int21::Domain],
    domain_id: u16,
) -> Result<Map<String, Value>, Map<String, Value>> {
    let mut out = Map::new();
    out.insert("kind".into(), json!("report"));
    let failed = |mut out: Map<String, Value>, kind: &str, error: String| {
        out.insert("kind".into(), json!(kind));
        out.insert("error".into(), json!(error));
        Err(out)
    };
    if payload.first().is_some_and(|byte| byte >> 4 == tr20::VERSION) {
        return match tr20::Report::parse(payload) {
            Ok(report) => {
                let json = decode21::report_json(&report, int21, domain_id);
                // Reports read up to one that is not: an error all the same
                // (a GSO send's next group header reads as no report).
                let whole = json.get("error").is_none_or(Value::is_null);
                out.insert("report".into(), json);
                if whole {
                    Ok(out)
                } else {
                    Err(out)
                }
            }
            Err(error) => failed(out, "report", error.to_string()),
        };
    }
    let parsed = match report::parse(payload, SinkIdWord::Detect) {
        Ok(parsed) => parsed,
        Err(error) => return failed(out, "malformed-report", error.to_string()),
    };
    // A sink's own TR 0.5 flow report: the record collect prints for it,
    // with its INT stack.
    let json = match FlowReport::parse(payload) {
        Ok(flow) => {
            let mut record = crate::records::tr05_flow(&flow);
            put_header(&mut record, &flow.header);
            if let Value::Object(whole) = report_json(&parsed) {
                record.extend(whole.into_iter().filter(|(key, _)| key == "drop" || key == "switch_local"));
            }
            record.insert("int".into(), block_json(&flow.block));
            Value::Object(record)
        }
        Err(_) => report_json(&parsed),
    };
    out.insert("report".into(), json);
    Ok(out)
}

/// A 16-bit value in decimal or 0x-prefixed hex.
pub fn parse_u16(text: &str) -> Result<u16, U16Error> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u16::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| U16Error { text: text.to_string() })
}

/// The INT block of the first domain that finds one into `out`, or
/// `plain`. An INT 2.1 error is shown only when no 0.5 domain reads the
/// packet either.
fn decode_int(frame: &[u8], domains: &Domains, out: &mut Map<String, Value>) {
    let mut int21_error = None;
    for domain in &domains.int21 {
        match int21::find(frame, domain) {
            Ok(Some(found)) => {
                out.insert("kind".into(), json!("int"));
                out.insert("int21".into(), decode21::block_json(&found, domain));
                out.insert("flow".into(), crate::schema::flow(&found.flow));
                return;
            }
            Ok(None) => {}
            Err(error) => int21_error = int21_error.or(Some(error)),
        }
    }
    decode_int05(frame, &domains.int05, out);
    if let (Some(error), Some("plain")) = (int21_error, out.get("kind").and_then(Value::as_str)) {
        out.insert("kind".into(), json!("malformed-int"));
        out.insert("error".into(), json!(error.to_string()));
        out.insert("drop_reason".into(), json!(error.drop_reason().name()));
    }
}

/// The INT 0.5 block of the first domain that finds one into `out`, or
/// `plain`.
fn decode_int05(frame: &[u8], domains: &[Domain], out: &mut Map<String, Value>) {
    for domain in domains {
        match sink::extract(frame, domain) {
            Ok(Some(found)) => {
                out.insert("kind".into(), json!("int"));
                out.insert(
                    "encapsulation".into(),
                    json!(match domain.encapsulation {
                        Encapsulation::OverTcpUdp { .. } => "int05-over-tcp-udp",
                        Encapsulation::ExtensionUdp { .. } => "int05-extension-udp",
                    }),
                );
                let block_bytes = frame.get(found.block_at..found.block_at + found.block_len).unwrap_or(&[]);
                if let Ok(block) = IntBlock::parse(block_bytes, int_core::int05::Tail::Present) {
                    out.insert("int".into(), block_json(&block));
                }
                out.insert("flow".into(), crate::schema::flow(&found.flow));
                return;
            }
            Ok(None) => {}
            Err(error) => {
                out.insert("kind".into(), json!("malformed-int"));
                out.insert("error".into(), json!(error.to_string()));
                out.insert("drop_reason".into(), json!(error.drop_reason().name()));
                return;
            }
        }
    }
    out.insert("kind".into(), json!("plain"));
}

fn hop_json(hop: &HopMetadata, instructions: Instructions) -> Value {
    let mut map = Map::new();
    for bit in instructions.each() {
        let name = bit.name().map_or_else(|| format!("reserved_{:#06x}", bit.bits()), str::to_string);
        let word = hop.word(bit);
        if bit == Instructions::PORT_IDS {
            map.insert("ingress_port".into(), json!(word >> 16));
            map.insert("egress_port".into(), json!(word & 0xffff));
        } else {
            map.insert(name, json!(word));
        }
    }
    Value::Object(map)
}

pub fn block_json(block: &IntBlock<'_>) -> Value {
    let h = &block.header;
    let names: Vec<&str> =
        instruction::NAMES.iter().filter(|(_, bit)| h.instructions.contains(*bit)).map(|(n, _)| *n).collect();
    json!({
        "shim_type": u8::from(block.shim.int_type),
        "length_words": block.shim.length_words,
        "version": h.version,
        "rep": h.replication,
        "c": h.copy,
        "e": h.max_hop_exceeded,
        "ins_cnt": h.instruction_count,
        "max_hop_cnt": h.max_hop_cnt,
        "total_hop_cnt": h.total_hop_cnt,
        "instructions": format!("{:#06x}", h.instructions.bits()),
        "instruction_names": names,
        "hops": block.stack.hops().map(|hop| hop_json(&hop, h.instructions)).collect::<Vec<_>>(),
        "sequence": block.sequence,
        "tail": block.tail.map(|t| json!({"protocol": t.protocol, "dst_port": t.dst_port, "dscp": t.dscp})),
    })
}

/// A Host-INT or Telemetry Report 0.5 report: the record collect prints
/// too, with the header's flags and the INT stack beside.
pub fn report_json(parsed: &Report<'_>) -> Value {
    let mut out = crate::records::hostint(parsed);
    let header = match parsed {
        Report::Latency(l) => &l.header,
        Report::DropSummary(d) => &d.header,
        Report::Tr05 { header, .. } => header,
    };
    put_header(&mut out, header);
    match parsed {
        Report::Latency(latency) => {
            out.insert("sink_id".into(), json!(latency.sink_id));
            out.insert("int".into(), block_json(&latency.block));
        }
        Report::DropSummary(_) => {}
        Report::Tr05 { drop, switch_local, .. } => {
            out.insert(
                "drop".into(),
                json!(drop.map(|d| json!({"switch_id": d.switch_id, "ingress_port": d.ingress_port,
                "egress_port": d.egress_port, "queue_id": d.queue_id, "drop_reason": d.drop_reason}))),
            );
            out.insert(
                "switch_local".into(),
                json!(switch_local.map(|l| json!({"switch_id": l.switch_id,
                "ingress_port": l.ingress_port, "egress_port": l.egress_port, "queue_id": l.queue_id,
                "queue_occupancy": l.queue_occupancy, "egress_timestamp": l.egress_timestamp}))),
            );
        }
    }
    Value::Object(out)
}

/// The report header's fields beside the record's own.
fn put_header(out: &mut Map<String, Value>, h: &report::ReportHeaderRepr) {
    out.extend([
        ("version".to_string(), json!(h.version)),
        ("nproto".to_string(), json!(u8::from(h.next_proto))),
        ("d".to_string(), json!(h.dropped)),
        ("q".to_string(), json!(h.congested_queue)),
        ("f".to_string(), json!(h.tracked_flow)),
        ("hw_id".to_string(), json!(h.hw_id)),
        ("header_timestamp".to_string(), json!(h.timestamp)),
    ]);
}

fn print_text(value: &Value) {
    let get = |k: &str| value.get(k).cloned().unwrap_or(Value::Null);
    let mut line = format!(
        "#{} {} {} bytes {}",
        get("index"),
        get("time").as_str().unwrap_or("-"),
        get("length"),
        get("kind").as_str().unwrap_or("?")
    );
    if let (Some(segment), Some(segments)) = (value.get("segment"), value.get("segments")) {
        line.push_str(&format!(" ({segment} of {segments} in one GSO datagram)"));
    }
    if let (Some(src), Some(dst)) = (value.get("src"), value.get("dst")) {
        let port = |k: &str| value.get(k).map(|p| format!(":{p}")).unwrap_or_default();
        // IPv6 addresses in brackets before a port, and a Traffic Class.
        let (v6, class) = match value.get("traffic_class") {
            Some(tc) => (true, format!("tc {tc}")),
            None => (false, format!("dscp {}", get("dscp"))),
        };
        let addr = |a: &Value| {
            let a = a.as_str().unwrap_or("?");
            if v6 {
                format!("[{a}]")
            } else {
                a.to_string()
            }
        };
        line.push_str(&format!(
            " proto {} {}{} -> {}{} {class}",
            get("protocol"),
            addr(src),
            port("src_port"),
            addr(dst),
            port("dst_port"),
        ));
    }
    println!("{line}");
    if let Some(error) = value.get("error") {
        println!("  error: {}", error.as_str().unwrap_or("?"));
    }
    if let Some(int) = value.get("int") {
        println!("  encapsulation {}", get("encapsulation").as_str().unwrap_or("?"));
        print_block(int);
    }
    if let Some(tunnel) = value.get("tunnel") {
        let class = tunnel.get("option_class").and_then(Value::as_str).map(|c| format!(" option class {c}"));
        println!(
            "  tunnel {} vni {}{}",
            tunnel["type"].as_str().unwrap_or("?"),
            tunnel["vni"],
            class.unwrap_or_default()
        );
    }
    if let Some(int) = value.get("int21") {
        decode21::print_block(int);
    }
    if let Some(report) = value.get("report") {
        print_report(report);
    }
    let others = value.get("ioam_others").and_then(Value::as_array).into_iter().flatten();
    for ioam in value.get("ioam").into_iter().chain(others) {
        crate::decode_ioam::print(ioam);
    }
}

fn print_report(report: &Value) {
    if report["type"] == "tr20" {
        decode21::print_report(report);
        return;
    }
    let r = |k: &str| report.get(k).cloned().unwrap_or(Value::Null);
    println!(
        "  report {} seq {} time {} nproto {} d {} q {} f {} hw_id {}",
        r("type").as_str().unwrap_or("?"),
        r("report_seq"),
        r("time").as_str().unwrap_or("-"),
        r("nproto"),
        r("d"),
        r("q"),
        r("f"),
        r("hw_id")
    );
    let flow = r("flow");
    if !flow.is_null() {
        println!(
            "  flow proto {} {}:{} -> {}:{}",
            flow["protocol"],
            flow["src"].as_str().unwrap_or("?"),
            flow["src_port"],
            flow["dst"].as_str().unwrap_or("?"),
            flow["dst_port"]
        );
    }
    match r("type").as_str() {
        Some("latency") => {
            let latency = r("latency_ns").as_i64().map_or("-".to_string(), crate::schema::human_ns);
            println!(
                "  sink id {} source node {} sink node {} latency {latency}",
                r("sink_id"),
                r("source_node"),
                r("sink_node"),
            );
            print_block(&r("int"));
        }
        Some("drop-summary") => println!(
            "  source node {} port {} sink node {} port {} gap at {} flow seq {} lost {}",
            r("source_node"),
            r("source_port"),
            r("sink_node"),
            r("sink_port"),
            r("gap_time").as_str().unwrap_or("-"),
            r("flow_seq"),
            r("lost_packets")
        ),
        _ => println!("  {}", report),
    }
}

fn print_block(int: &Value) {
    println!(
        "  shim type {} length {} words | ver {} rep {} c {} e {} ins_cnt {} max_hop {} total_hop {} instructions {} {}",
        int["shim_type"],
        int["length_words"],
        int["version"],
        int["rep"],
        int["c"],
        int["e"],
        int["ins_cnt"],
        int["max_hop_cnt"],
        int["total_hop_cnt"],
        int["instructions"].as_str().unwrap_or("?"),
        int["instruction_names"]
    );
    if let Some(hops) = int["hops"].as_array() {
        for (i, hop) in hops.iter().enumerate() {
            let fields: Vec<String> = hop
                .as_object()
                .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                .unwrap_or_default();
            println!("  hop {i}: {}", fields.join(" "));
        }
    }
    if !int["sequence"].is_null() {
        println!("  sequence {}", int["sequence"]);
    }
    if !int["tail"].is_null() {
        println!(
            "  tail proto {} dst_port {} dscp {}",
            int["tail"]["protocol"], int["tail"]["dst_port"], int["tail"]["dscp"]
        );
    }
}
