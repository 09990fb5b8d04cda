//! collect's Telemetry Report 2.0 side: each individual report of an INT
//! 2.1 sink (RepType 1 with the sink's ingress timestamp, the packet with
//! its INT 2.1 stack inside) gives the flow and its one-way latency: the
//! sink's ingress timestamp minus the bottom hop's.

use std::net::{Ipv4Addr, SocketAddr};

use int_core::flow::FlowKey;
use int_core::int21::{self, Body, HopMetadata};
use int_core::report::tr20::{GroupHeaderRepr, InType, IndividualReport, Report};
use int_core::report::tr20_loss::LossReport;
use int_core::{Layer, ParseError};
use serde_json::json;

use super::hops::{path_of, PathChange, Seen};
use super::{missing_note, Books, Measure, Observed, Output};

/// What collect refuses beyond the parser: a datagram whose individual
/// reports do not all parse or hold none, and reports no conforming sender
/// writes: reserved bits set (the flags' Rsvd, RepMdBits bit 0 and bits
/// 9-14), a reserved InType, inner contents that contradict the InType
/// (bytes after InType None, an IPv4 or IPv6 packet of another version).
/// The text lets receivers ignore reserved bits; a collector that trusts no
/// sender refuses them, as it does for Telemetry Report 0.5.
pub fn check(report: &Report<'_>) -> Result<usize, ParseError> {
    let mut count = 0;
    for individual in report.reports() {
        let individual = individual?;
        let reserved = |value: u8| ParseError::Reserved { layer: Layer::IndividualReport, offset: 0, value };
        if individual.flags_reserved != 0 {
            return Err(reserved(individual.flags_reserved));
        }
        if let Some(int) = individual.int {
            let reserved_bits = int.rep_md_bits & 0x807e;
            if reserved_bits != 0 {
                return Err(reserved((reserved_bits >> 8) as u8 | reserved_bits as u8));
            }
        }
        let version = individual.inner.first().map(|byte| byte >> 4);
        let consistent = match individual.in_type {
            InType::None => individual.inner.is_empty(),
            InType::Ipv4 => version == Some(4),
            InType::Ipv6 => version == Some(6),
            // A dropped packet's first bytes, however few: a runt is a
            // packet too.
            InType::Ethernet => !individual.inner.is_empty(),
            InType::Tlv | InType::DomainExtension => true,
            InType::Reserved(value) => {
                return Err(ParseError::UnknownType { layer: Layer::IndividualReport, offset: 0, value })
            }
        };
        if !consistent {
            return Err(ParseError::BadLength {
                layer: Layer::IndividualReport,
                offset: 0,
                value: individual.inner.len(),
            });
        }
        count += 1;
    }
    if count == 0 {
        return Err(ParseError::BadLength { layer: Layer::IndividualReport, offset: 8, value: 0 });
    }
    Ok(count)
}

/// One latency record a TR 2.0 individual report gives.
pub struct Latency21 {
    pub flow: FlowKey,
    /// Sink minus source ingress timestamps, ns (negative: clock skew).
    pub latency_ns: Option<i64>,
    pub hops: usize,
    /// Every hop's metadata, the source's first (the stack reversed).
    pub path: Vec<HopMetadata>,
    pub source_node: Option<u32>,
    /// The packet's number in its flow, where the source wrote one.
    pub sequence: Option<u32>,
}

/// Reads an individual report's latency, when it is one.
pub fn latency_of(report: &IndividualReport<'_>, domain: &int21::Domain) -> Option<Latency21> {
    let int = report.int?;
    let (body, flow) = int21::find_in_report(report.inner, domain).ok()??;
    let Body::Md(md) = body else {
        return Some(Latency21 {
            flow,
            latency_ns: None,
            hops: 0,
            path: Vec::new(),
            source_node: None,
            sequence: None,
        });
    };
    let source = md.bottom_hop();
    let latency_ns = match (int.metadata.ingress_timestamp, source.and_then(|hop| hop.ingress_timestamp)) {
        (Some(sink), Some(source)) => Some(sink.wrapping_sub(source) as i64),
        _ => None,
    };
    let mut path: Vec<HopMetadata> = md.hops().collect();
    path.reverse();
    Some(Latency21 {
        flow,
        latency_ns,
        hops: md.hop_count(),
        path,
        source_node: source.and_then(|hop| hop.node_id),
        sequence: domain.source_only.sequence_of(&md),
    })
}

/// Records and prints every individual report of a TR 2.0 datagram.
pub fn record(
    report: &Report<'_>,
    domain: &int21::Domain,
    from: SocketAddr,
    missing: u32,
    books: &mut Books,
    output: Output,
) {
    let sink_node = Some(report.group.node_id);
    for individual in report.reports().flatten() {
        if let Some(loss) = LossReport::parse(&individual, domain.source_only.domain_id) {
            let measure = Measure::Lost(loss.count);
            books.observe(&Observed { flow: loss.flow, source_node: loss.source_node, sink_node, measure });
            print_loss(&loss, report.group.node_id, report.group.sequence, from, missing, output);
            continue;
        }
        let latency = latency_of(&individual, domain);
        if let Some(l @ Latency21 { latency_ns: Some(ns), .. }) = &latency {
            let measure = Measure::Latency { ns: *ns, flow_seq: l.sequence, hops: u8::try_from(l.hops).ok() };
            books.observe(&Observed { flow: l.flow, source_node: l.source_node, sink_node, measure });
        }
        let group = report.group;
        let seen = latency.as_ref().filter(|l| !l.path.is_empty()).map(|l| Seen {
            flow: l.flow,
            hops: &l.path,
            sink: group.node_id,
            sink_ingress_ns: individual.int.and_then(|int| int.metadata.ingress_timestamp),
            at_ms: books.ledger.now_ms(),
        });
        if let Some(change) = seen.as_ref().and_then(|seen| books.observe_path(seen)) {
            print_path_change(&change, group.node_id, from, output);
        }
        let dropped = individual.int.and_then(|int| int.drop);
        if let Some(drop) = dropped {
            books.hops.observe_drop(group.node_id, drop.reason);
        }
        // The flow of the packet inside: of its INT stack, or for a packet
        // without one (a drop report's) from its headers.
        let flow = latency.as_ref().map(|l| l.flow).or_else(|| match individual.in_type {
            InType::Ipv4 | InType::Ipv6 => int21::reported_flow(individual.inner, false),
            InType::Ethernet => int21::reported_flow(individual.inner, true),
            _ => None,
        });
        let path = seen.as_ref().and_then(path_of);
        let read = Read { individual: &individual, latency: latency.as_ref(), flow, path };
        print_report(&read, &report.group, from, missing, output);
    }
}

/// What collect read of one individual report, for printing.
struct Read<'a> {
    individual: &'a IndividualReport<'a>,
    latency: Option<&'a Latency21>,
    /// The packet's flow: of its INT stack, or from its headers.
    flow: Option<FlowKey>,
    path: Option<Vec<u32>>,
}

/// One individual report, as a JSON line or text.
fn print_report(read: &Read<'_>, group: &GroupHeaderRepr, from: SocketAddr, missing: u32, output: Output) {
    let Read { individual, latency, flow, path } = read;
    let dropped = individual.int.and_then(|int| int.drop);
    if output == Output::Json {
        println!(
            "{}",
            json!({"from": from.to_string(), "seq": group.sequence, "type": "tr20",
                   "missing_reports_before": missing, "sink_node": group.node_id,
                   "rep_type": u8::from(individual.rep_type), "in_type": u8::from(individual.in_type),
                   "d": individual.flags.dropped, "f": individual.flags.tracked_flow,
                   "drop": dropped.map(|d| json!({"queue_id": d.queue_id,
                       "reason": d.reason, "reason_name": int_core::report::tr20::drop_reason_name(d.reason)})),
                   "flow": flow.as_ref().map(flow_json),
                   "hops": latency.map(|l| l.hops),
                   "path": path,
                   "hop_metadata": latency.map(|l| l.path.iter().map(hop_json).collect::<Vec<_>>()),
                   "source_node": latency.and_then(|l| l.source_node),
                   "sequence": latency.and_then(|l| l.sequence),
                   "latency_ns": latency.and_then(|l| l.latency_ns)})
        );
    } else if output == Output::Text {
        println!("Seq: {} Type: Telemetry Report 2.0{}", group.sequence, missing_note(missing));
        match latency {
            Some(l) => println!(
                "  Sink node: {}  Flow: {}  hops: {}  latency: {} ns",
                Ipv4Addr::from(group.node_id),
                l.flow,
                l.hops,
                l.latency_ns.map_or("-".to_string(), |ns| ns.to_string())
            ),
            None => println!(
                "  Sink node: {}  (no INT 2.1 packet inside{})",
                Ipv4Addr::from(group.node_id),
                flow.map_or(String::new(), |flow| format!("; its flow {flow}"))
            ),
        }
        for (i, hop) in latency.iter().flat_map(|l| l.path.iter()).enumerate() {
            println!("  hop {}: {}", i + 1, describe_hop(hop));
        }
        if let Some(d) = dropped {
            let name = int_core::report::tr20::drop_reason_name(d.reason).unwrap_or("?");
            println!("  Dropped here: reason {} ({name}), queue {}", d.reason, d.queue_id);
        }
    }
}

/// A flow's new path, as a JSON line or text.
fn print_path_change(change: &PathChange, sink_node: u32, from: SocketAddr, output: Output) {
    let names =
        |path: &[u32]| path.iter().map(|n| Ipv4Addr::from(*n).to_string()).collect::<Vec<_>>().join(" > ");
    if output == Output::Json {
        println!(
            "{}",
            json!({"from": from.to_string(), "type": "path-change", "sink_node": sink_node, "at_ms": change.at_ms,
                   "flow": flow_json(&change.flow), "old_path": change.old, "new_path": change.new})
        );
    } else if output == Output::Text {
        println!("Path change: Flow: {}  {}  ->  {}", change.flow, names(&change.old), names(&change.new));
    }
}

pub fn flow_json(flow: &FlowKey) -> serde_json::Value {
    json!({"src": flow.src.to_string(), "dst": flow.dst.to_string(), "protocol": flow.protocol,
           "src_port": flow.src_port, "dst_port": flow.dst_port})
}

/// A hop's metadata as JSON: the fields it carries (null where not).
fn hop_json(hop: &HopMetadata) -> serde_json::Value {
    json!({"node_id": hop.node_id, "ingress_port": hop.l1_ingress_port, "egress_port": hop.l1_egress_port,
           "hop_latency": hop.hop_latency, "queue_id": hop.queue.map(|q| q.0), "queue_occupancy": hop.queue.map(|q| q.1),
           "ingress_ns": hop.ingress_timestamp, "egress_ns": hop.egress_timestamp,
           "l2_ingress_port": hop.l2_ingress_port, "l2_egress_port": hop.l2_egress_port,
           "egress_tx_utilization": hop.egress_tx_utilization,
           "buffer_id": hop.buffer.map(|b| b.0), "buffer_occupancy": hop.buffer.map(|b| b.1)})
}

/// "node 10.0.0.2 ports 1 > 2, latency 4000, queue 0: 12, in 5 out 4005".
fn describe_hop(hop: &HopMetadata) -> String {
    let mut parts =
        vec![format!("node {}", hop.node_id.map_or("?".to_string(), |n| Ipv4Addr::from(n).to_string()))];
    if let (Some(i), Some(e)) = (hop.l1_ingress_port, hop.l1_egress_port) {
        parts.push(format!("ports {i} > {e}"));
    }
    if let Some(latency) = hop.hop_latency {
        parts.push(format!("latency {latency}"));
    }
    if let Some((id, occupancy)) = hop.queue {
        parts.push(format!("queue {id}: {occupancy}"));
    }
    if let (Some(i), Some(e)) = (hop.ingress_timestamp, hop.egress_timestamp) {
        parts.push(format!("in {i} out {e}"));
    }
    parts.join(", ")
}

/// One loss report, as a JSON line or text.
fn print_loss(loss: &LossReport, sink_node: u32, seq: u32, from: SocketAddr, missing: u32, output: Output) {
    if output == Output::Json {
        println!(
            "{}",
            json!({"from": from.to_string(), "seq": seq, "type": "tr20-loss", "missing_reports_before": missing,
                   "sink_node": sink_node, "source_node": loss.source_node, "flow": flow_json(&loss.flow),
                   "first_lost_sequence": loss.first_sequence, "lost": loss.count, "declared_ns": loss.declared_ns})
        );
    } else if output == Output::Text {
        println!("Seq: {seq} Type: Telemetry Report 2.0 (loss){}", missing_note(missing));
        println!(
            "  Sink node: {}  Flow: {}  lost {} packet(s) from number {}",
            std::net::Ipv4Addr::from(sink_node),
            loss.flow,
            loss.count,
            loss.first_sequence
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use int_core::int21::HopMetadata;
    use int_core::report::tr20::{DropInfo, GroupHeaderRepr, IntContents, RepType, ReportFlags};

    /// A drop report as int-node's sinks write one for a frame they drop:
    /// RepType INT, InType Ethernet, D, the frame's first bytes.
    fn drop_report(packet: &[u8]) -> Vec<u8> {
        let mut datagram = vec![0u8; 256];
        let mut len = GroupHeaderRepr { hw_id: 0, sequence: 1, node_id: 2 }.emit(&mut datagram).unwrap();
        let metadata =
            HopMetadata { l1_ingress_port: Some(3), ingress_timestamp: Some(5), ..HopMetadata::default() };
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type: InType::Ethernet,
            flags: ReportFlags { dropped: true, ..ReportFlags::default() },
            int: Some(IntContents {
                rep_md_bits: 0x4801,
                metadata,
                drop: Some(DropInfo { queue_id: 0, reason: 202 }),
                ..IntContents::default()
            }),
            inner: packet,
            ..IndividualReport::default()
        };
        len += report.emit(&mut datagram[len..]).unwrap();
        datagram.truncate(len);
        datagram
    }

    /// A drop report on a 10-byte runt is a report: the collector takes our
    /// own sinks' reports whatever the dropped frame's length; an Ethernet
    /// report with no packet at all contradicts its InType.
    #[test]
    fn drop_reports_of_runts_are_accepted() {
        let datagram = drop_report(&[0xab; 10]);
        assert_eq!(check(&Report::parse(&datagram).unwrap()), Ok(1));
        let empty = drop_report(&[]);
        assert!(matches!(check(&Report::parse(&empty).unwrap()), Err(ParseError::BadLength { .. })));
    }
}
