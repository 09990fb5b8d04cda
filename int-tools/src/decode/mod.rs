//! `int-tools decode FILE`: every packet of a capture (pcap or pcapng;
//! Ethernet, raw IP or Linux cooked; `-` for a pipe), with its telemetry:
//! an INT 0.5 block (any shim Type, any hop count, each hop's words named
//! by the instruction bits), an INT 2.1 block (MD or MX, in the packet or
//! in its tunnel), IOAM traces and Edge-to-Edge options of any namespace,
//! and every report kind (Host-INT latency and Drop-Summary, with or
//! without the sink id word; Telemetry Report 0.5 NProto 0-2; Telemetry
//! Report 2.0, postcards included), and IFA 2.0 (every header and hop
//! field, over TCP, UDP or GRE, and the tunnel after its stack). This
//! module holds the capture loop and the packet walk; [`int05`],
//! [`int21`], [`ioam`] and [`ifa`] read each protocol's
//! block, [`reports`] the report datagrams, each as JSON and as text.
//! Malformed packets are described with the reason, never skipped; a cut
//! capture prints every whole packet before its error. Text, or one JSON
//! object per line (docs/output.md).

// The text printer reads fields with serde_json's `value["key"]`, which
// yields Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

pub mod ifa;
pub mod int05;
pub mod int21;
pub mod ioam;
pub mod reports;
mod text;

use std::path::PathBuf;

use clap::Args;
use int_core::int05::{Domain, Encapsulation};
use int_core::locate::{self, L4};
use int_core::marking::{DscpMatch, TcpPlacement};
use int_core::names::parse_name;
use int_core::report::DEFAULT_COLLECTOR_PORT;
use serde_json::{json, Map, Value};

use crate::pcap;

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
    #[arg(long, default_value_t = int_core::int05::DEFAULT_EXTENSION_PORT)]
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
    /// The IP protocol (IPv6: the last Next Header) announcing IFA 2.0;
    /// 253 is SONiC's and the deployed switches', scapy's is 131.
    #[arg(long, default_value_t = int_core::ifa::DEFAULT_PROTOCOL)]
    pub ifa_protocol: u8,
}

/// The INT domains decode looks for, INT 2.1 first (a 2.1 block in a
/// packet that also carries a 0.5 mark is 2.1's; a 0.5 block is never
/// read as 2.1, whose shim type is in the high nibble).
pub struct Domains {
    pub int05: [Domain; 2],
    pub int21: Vec<int_core::int21::Domain>,
    pub ifa: int_core::ifa::Domain,
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
    let source_only = int_core::int21::SourceOnly::sequence(args.int21_domain_id);
    let int21_domain = |marking| int_core::int21::Domain { marking, tcp_placement, source_only };
    let domains = Domains {
        int05: [
            Domain { encapsulation: Encapsulation::from(args.dscp), tcp_placement },
            Domain { encapsulation: Encapsulation::ExtensionUdp { port: args.udp_port }, tcp_placement },
        ],
        int21: [
            Some(int_core::int21::Marking::Dscp(args.int21_dscp)),
            args.int21_port.map(int_core::int21::Marking::UdpPort),
        ]
        .into_iter()
        .flatten()
        .map(int21_domain)
        .collect(),
        ifa: int_core::ifa::Domain { protocol: args.ifa_protocol },
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
    // IFA's protocol number says what follows the IP header: its own.
    if ifa::decode(frame, &domains.ifa, out) {
        return Vec::new();
    }
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
            let source_only =
                domains.int21.first().map_or(int_core::int21::SourceOnly::NONE, |d| d.source_only);
            if dst_port == report_port {
                return reports::decode(payload, &domains.int21, source_only.domain_id);
            }
            if int21::decode_tunnel(dst_port, payload, &source_only, out) {
                return Vec::new();
            }
        }
    }
    if ip.version == locate::IpVersion::V6 && ioam::decode(frame.get(ip.l3..).unwrap_or_default(), out) {
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
        match int_core::int21::find(frame, domain) {
            Ok(Some(found)) => {
                out.insert("kind".into(), json!("int"));
                out.insert("int21".into(), int21::block_json(&found, domain));
                out.insert("flow".into(), crate::schema::flow(&found.flow));
                return;
            }
            Ok(None) => {}
            Err(error) => int21_error = int21_error.or(Some(error)),
        }
    }
    int05::decode(frame, &domains.int05, out);
    if let (Some(error), Some("plain")) = (int21_error, out.get("kind").and_then(Value::as_str)) {
        out.insert("kind".into(), json!("malformed-int"));
        out.insert("error".into(), json!(error.to_string()));
        out.insert("drop_reason".into(), json!(error.drop_reason().name()));
    }
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
    if value.get("kind").and_then(Value::as_str) == Some("malformed-ifa") {
        println!("  ifa refused: {}", get("drop_reason").as_str().unwrap_or("?"));
    }
    if let Some(int) = value.get("int") {
        println!("  encapsulation {}", get("encapsulation").as_str().unwrap_or("?"));
        int05::print_block(int);
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
        int21::print_block(int);
    }
    if let Some(report) = value.get("report") {
        reports::print(report);
    }
    if let Some(ifa) = value.get("ifa") {
        ifa::print(ifa);
    }
    let others = value.get("ioam_others").and_then(Value::as_array).into_iter().flatten();
    for ioam in value.get("ioam").into_iter().chain(others) {
        ioam::print(ioam);
    }
}
