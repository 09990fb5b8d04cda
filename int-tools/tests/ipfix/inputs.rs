//! Reports of the other kinds collect reads, crafted with int-core's own
//! transforms as the nodes run them: Host-INT's latency reports (INT 0.5,
//! two hops: its source and sink) and IOAM decapsulating nodes' Telemetry
//! Report 2.0 reports of IPv6 packets with their trace.

use std::net::{Ipv4Addr, Ipv6Addr};

use int_core::craft::PacketSpec;
use int_core::frame::FrameBuf;
use int_core::ioam::e2e::E2eType;
use int_core::ioam::node::NodeData;
use int_core::ioam::source::{self, Encapped, Plan};
use int_core::ioam::trace::{TraceHeaderRepr, TraceType};
use int_core::ioam::transit::{self, Transited};
use int_core::ioam::TimestampFormat;
use int_core::report::tr20::{InType, IntContents};
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};

use super::collector::{drop_summary, tr20_report};

/// Rounds of packets per flow.
const ROUNDS: u64 = 12;
/// The first packet's source time, ns since the epoch.
const T0: u64 = 1_700_000_000_000_000_000;

/// `frame` in a buffer with room before it, `f` run on it; the frame after.
fn with_headroom<R>(frame: &[u8], f: impl FnOnce(&mut FrameBuf<'_>) -> R) -> (Vec<u8>, R) {
    const HEADROOM: usize = 256;
    let mut buf = vec![0u8; HEADROOM + frame.len()];
    buf[HEADROOM..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buf, HEADROOM, frame.len()).unwrap();
    let result = f(&mut view);
    (view.frame().to_vec(), result)
}

/// The one-way latency of round `round` on flow `port`, ns: 10 µs and
/// more each round, the flows apart.
fn latency_ns(port: u16, round: u64) -> u64 {
    10_000 + round * 3_100 + u64::from(port) * 700
}

/// Host-INT's latency reports (with the sink id word) of three UDP flows
/// 10.0.0.1:1-3 > 10.0.0.2:5000, source node 10.0.0.1, sink 10.0.0.2,
/// [`ROUNDS`] packets each; then a Drop Summary of 4 packets lost on a
/// fourth flow.
pub fn hostint_reports() -> Vec<Vec<u8>> {
    use int_core::int05::source::{self, SourceConfig};
    use int_core::int05::HopMetadata;
    let config = SourceConfig::host_int(1500);
    let domain =
        int_core::int05::Domain { encapsulation: config.encapsulation, tcp_placement: config.tcp_placement };
    let (source_node, sink_node) = (0x0a00_0001, 0x0a00_0002);
    let mut reports = Vec::new();
    for round in 0..ROUNDS {
        for port in 1..=3u16 {
            let packet =
                PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), port, 5000, 64);
            let sent = (T0 + round * 1_000_000) as u32;
            let hop = HopMetadata::host_int(source_node, 1, sent);
            let original = packet.build();
            let plan = source::plan(&original, &config).unwrap();
            let sequence = round as u32 + 1;
            let (frame, added) =
                with_headroom(&original, |f| source::insert(f, &plan, &config, sequence, &hop));
            added.unwrap();
            let found = int_core::int05::sink::extract(&frame, &domain).unwrap().unwrap();
            let sink_hop =
                HopMetadata::host_int(sink_node, 9, sent.wrapping_add(latency_ns(port, round) as u32));
            let header = ReportHeaderRepr::latency(reports.len() as u32 + 1, 1_700_000_000, 0);
            let mut buf = [0u8; 256];
            let profile = &ReportProfile::HOST_INT;
            let len = LatencyReport::build(&mut buf, &frame, &found, &sink_hop, &header, sink_node, profile)
                .unwrap();
            reports.push(buf[..len].to_vec());
        }
    }
    reports.push(drop_summary(reports.len() as u32 + 1, 4));
    reports
}

/// The trace the IOAM tests write: namespace 123, four slots of node id
/// and Hop_Lim, interfaces, POSIX timestamp, transit delay and queue
/// depth.
fn ioam_plan() -> Plan {
    let trace_type = TraceType::HOP_LIM_NODE_ID
        | TraceType::INTERFACES
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION
        | TraceType::TRANSIT_DELAY
        | TraceType::QUEUE_DEPTH;
    let header = TraceHeaderRepr {
        namespace: 123,
        node_len: trace_type.node_len() as u8,
        trace_type,
        ..Default::default()
    };
    Plan { header, nodes: 4, max_ip_len: 1500, e2e: E2eType::empty() }
}

/// An IOAM node's element: its id, interfaces 1 and 2, the time it saw
/// the packet (POSIX: µs), its transit delay and queue depth.
fn ioam_node(id: u32, at_ns: u64, delay_ns: u32, queue: u32) -> NodeData {
    let (seconds, fraction) = TimestampFormat::Posix.split(at_ns);
    NodeData {
        node_id: Some(id),
        ingress_if: Some(1),
        egress_if: Some(2),
        timestamp_seconds: Some(seconds),
        timestamp_fraction: Some(fraction),
        transit_delay: Some(delay_ns),
        queue_depth: Some(queue),
        ..NodeData::default()
    }
}

/// IOAM decapsulating node 9's reports (Telemetry Report 2.0, InType
/// IPv6, the packet with its trace) of three UDP flows 2001:db8::1:1-3 >
/// 2001:db8::2:5000 over nodes 1 > 2 > 3, [`ROUNDS`] packets each: node 2's
/// transit delay and queue rising by round, node 3's steady.
pub fn ioam_reports() -> Vec<Vec<u8>> {
    let plan = ioam_plan();
    let (src, dst) = ("2001:db8::1".parse::<Ipv6Addr>().unwrap(), "2001:db8::2".parse().unwrap());
    let mut reports = Vec::new();
    for round in 0..ROUNDS {
        for port in 1..=3u16 {
            let sent = T0 + round * 1_000_000;
            let original = PacketSpec::udp6(src, dst, port, 5000, 40).build();
            let (mut frame, added) = with_headroom(&original, |f| {
                source::insert(f, &plan, &ioam_node(1, sent, 500, 0), |_, _| None)
            });
            assert!(matches!(added, Ok(Encapped::Added(_))), "{added:?}");
            let node2 = ioam_node(2, sent + 4_000, 1_000 + round as u32 * 250, round as u32 * 40);
            let node3 = ioam_node(3, sent + 8_000, 700, 3);
            for node in [node2, node3] {
                let len = frame.len();
                let mut view = FrameBuf::new(&mut frame, 0, len).unwrap();
                assert_eq!(transit::push(&mut view, 123, &node), Ok(Transited::Filled));
            }
            let metadata = int_core::int21::HopMetadata {
                l1_ingress_port: Some(1),
                l1_egress_port: Some(2),
                ingress_timestamp: Some(sent + latency_ns(port, round)),
                egress_timestamp: Some(sent + latency_ns(port, round)),
                ..Default::default()
            };
            let int = IntContents { rep_md_bits: 0x4c00, metadata, ..IntContents::default() };
            reports.push(tr20_report(reports.len() as u32 + 1, 9, InType::Ipv6, &frame[14..], int));
        }
    }
    reports
}

/// An IFA terminator's IPFIX export (docs/ifa.md, "IPFIX from a
/// terminator"): the template, then a message per packet of two UDP flows
/// over Device IDs 1 > 2 > 3 (the terminator's hop newest), each hop
/// resident 100 ns times its id plus the round, 10 µs between hops, its
/// queue 5 at congestion level id mod 3.
pub fn ifa_messages() -> Vec<Vec<u8>> {
    use int_core::ifa::HopRepr;
    use int_core::report::ifa_ipfix::{self, Elements, IfaRecord};
    use int_core::wire::ipfix::MessageHeader;
    let head = |sequence| MessageHeader { length: 0, export_time: 1_700_000_000, sequence, domain: 9 };
    let mut buf = vec![0u8; 2048];
    let len = ifa_ipfix::emit_template_message(&mut buf, head(0), 257, &Elements::default()).unwrap();
    let mut out = vec![buf[..len].to_vec()];
    for round in 0..ROUNDS as u32 {
        for port in [1000u16, 1001] {
            let mut stack = vec![0u8; 96];
            for (at, id) in [(0, 3u32), (32, 2), (64, 1)] {
                let hop = HopRepr {
                    lns: 1,
                    device_id: id,
                    rx_seconds: 7,
                    rx_nanoseconds: 10_000 * id,
                    residence_ns: 100 * id + round,
                    queue_id: 5,
                    congestion: (id % 3) as u8,
                    ..HopRepr::default()
                };
                hop.emit(&mut stack[at..]).unwrap();
            }
            let packet =
                PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), port, 2000, 32)
                    .build();
            let headers = [0x2f, 17, 0x04, 0xff, 0, 0, 0xfe, 24];
            let record = IfaRecord { headers: &headers, stack: &stack, packet: &packet };
            let sequence = out.len() as u32 - 1;
            let len = ifa_ipfix::emit_data_message(&mut buf, head(sequence), 257, &record).unwrap();
            out.push(buf[..len].to_vec());
        }
    }
    out
}
