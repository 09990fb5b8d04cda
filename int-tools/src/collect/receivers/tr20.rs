//! collect's Telemetry Report 2.0 side: each individual report of an INT
//! 2.1, IOAM or IFA sink (RepType 1 with the sink's ingress timestamp, the
//! packet with its INT 2.1 stack, IOAM trace or IFA stack inside) gives the
//! flow, its hops and its one-way latency: the sink's ingress timestamp
//! minus the oldest hop's. A report whose packet is marked as IFA and
//! refused by IFA's checks is counted by reason (`tr20: ifa_*`), never
//! booked.

use int_core::flow::FlowKey;
use int_core::ifa;
use int_core::int21::{self, Body, HopMetadata};
use int_core::ioam::TimestampFormat;
use int_core::report::tr20::{GroupHeaderRepr, InType, IndividualReport, Report};
use int_core::report::tr20_loss::LossReport;
use int_core::{Layer, ParseError};

use super::How;
use crate::collect::books::congestion::figure::{ip_length, Carrier};
use crate::collect::books::congestion::{Packet, When};
use crate::collect::books::datagram::Arrival;
use crate::collect::books::hops::{path_change_record, path_of, Seen};
use crate::collect::books::join::{self, Postcard};
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::records::{self, Hop, IfaHeaders, IfaHop, Tr20Reading, Tr20Record};

/// What collect refuses beyond the parser: a datagram whose individual
/// reports do not all parse or hold none, and reports no conforming sender
/// writes: reserved bits set (the flags' Rsvd, RepMdBits bit 0 and bits
/// 9-14), a reserved InType, inner contents that contradict the InType
/// (bytes after InType None, an IPv4 or IPv6 packet of another version).
/// The text lets receivers ignore reserved bits; a collector that trusts no
/// sender refuses them, as it does for Telemetry Report 0.5.
pub fn check(report: &Report<'_>) -> Result<usize, ParseError> {
    let mut count = 0;
    // What is checked is framing, flags and lengths: the metadata's
    // values are read once, as the reports are booked.
    for individual in report.framings() {
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
    /// An INT 2.1 stack's hops, an IOAM trace's or an IFA stack's.
    pub carrier: Carrier,
    /// An IFA stack's headers as IFA wrote them, for the record (its hops
    /// as IFA wrote them are read again for a record: [`ifa_hops`]).
    pub ifa: Option<IfaHeaders>,
}

/// Reads an individual report's latency, when it is one (an IOAM
/// trace's timestamps read in `ioam_timestamps`); its path is read into
/// `room`'s allocation (taken from it only when there is a latency).
pub fn latency_of(
    report: &IndividualReport<'_>,
    domain: &int21::Domain,
    ioam_timestamps: TimestampFormat,
    room: &mut Vec<HopMetadata>,
) -> Option<Latency21> {
    let int = report.int?;
    let Some((body, flow)) = int21::find_in_report(report.inner, domain).ok().flatten() else {
        return ioam_latency_of(report, ioam_timestamps, room);
    };
    let Body::Md(md) = body else {
        return Some(Latency21 {
            flow,
            latency_ns: None,
            hops: 0,
            path: emptied(room),
            source_node: None,
            sequence: None,
            carrier: Carrier::Int21,
            ifa: None,
        });
    };
    let mut path = emptied(room);
    path.extend(md.hops());
    path.reverse();
    // The source's hop, the stack's bottom: the path's first, read once.
    let source = path.first().filter(|_| path.len() == md.hop_count());
    let latency_ns = match (int.metadata.ingress_timestamp, source.and_then(|hop| hop.ingress_timestamp)) {
        (Some(sink), Some(source)) => Some(sink.wrapping_sub(source) as i64),
        _ => None,
    };
    let source_node = source.and_then(|hop| hop.node_id);
    Some(Latency21 {
        flow,
        latency_ns,
        hops: md.hop_count(),
        path,
        source_node,
        sequence: domain.source_only.sequence_of(&md),
        carrier: Carrier::Int21,
        ifa: None,
    })
}

/// An IOAM decapsulating node's report (InType 5, the packet with its
/// trace): the trace's elements as the hops, the oldest's timestamp as
/// the source's (its fraction in the domain's `format`: `--ioam-timestamps`),
/// the Edge-to-Edge option's number as the packet's.
fn ioam_latency_of(
    report: &IndividualReport<'_>,
    format: TimestampFormat,
    room: &mut Vec<HopMetadata>,
) -> Option<Latency21> {
    let int = report.int?;
    if report.in_type != InType::Ipv6 {
        return None;
    }
    let (trace, hbh) = int_core::ioam::sink::trace_in_packet(report.inner)?;
    let e2e = int_core::ioam::sink::e2e_in_packet(report.inner, trace.header.namespace);
    let flow = int21::reported_flow(report.inner, false)?;
    let mut path = emptied(room);
    path.extend(int_core::ioam::ipv6::nodes(hbh, &trace).map(|n| n.as_hop(format)));
    path.reverse();
    let source = path.first();
    let latency_ns = match (int.metadata.ingress_timestamp, source.and_then(|hop| hop.ingress_timestamp)) {
        (Some(sink), Some(source)) => Some(sink.wrapping_sub(source) as i64),
        _ => None,
    };
    Some(Latency21 {
        flow,
        latency_ns,
        hops: path.len(),
        source_node: source.and_then(|hop| hop.node_id),
        path,
        // A 64-bit number's low half, as the node counts loss with it.
        sequence: e2e.and_then(|e2e| e2e.sequence).map(|n| n as u32),
        carrier: Carrier::Ioam,
        ifa: None,
    })
}

/// An IFA terminator's report (InType 4 or 5, the packet with its IFA as
/// it came, announced by `domain`'s protocol): the stack's hops in the
/// shared shape, read near the report's time (the terminator's ingress
/// timestamp, where its 20 bits of seconds are read as the terminator
/// read them; else the report's arrival, `arrival_ns`), the oldest hop's
/// RX time as the source's. `Ok(None)`: no IFA of `domain` (a packet
/// whose IP header cannot be read is not IFA's to refuse: the other
/// readings try it). `Err`: marked as IFA, refused by IFA's checks.
fn ifa_latency_of(
    report: &IndividualReport<'_>,
    domain: &ifa::Domain,
    arrival_ns: u64,
    room: &mut Vec<HopMetadata>,
) -> Result<Option<Latency21>, ifa::Refused> {
    let Some(int) = report.int else { return Ok(None) };
    if !matches!(report.in_type, InType::Ipv4 | InType::Ipv6) {
        return Ok(None);
    }
    let found = match ifa::sink::find_in_report(report.inner, domain) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(refused) if refused.reason == ifa::Refusal::Packet => return Ok(None),
        Err(refused) => return Err(refused),
    };
    let sink_ns = int.metadata.ingress_timestamp;
    let near_ns = sink_ns.unwrap_or(arrival_ns);
    let mut path = emptied(room);
    path.extend(found.stack(report.inner).hops().map(|hop| hop.as_hop(near_ns)));
    path.reverse();
    let source = path.first();
    let latency_ns = match (sink_ns, source.and_then(|hop| hop.ingress_timestamp)) {
        (Some(sink), Some(source)) => Some(sink.wrapping_sub(source) as i64),
        _ => None,
    };
    Ok(Some(Latency21 {
        flow: found.flow(report.inner),
        latency_ns,
        hops: path.len(),
        source_node: source.and_then(|hop| hop.node_id),
        path,
        // IFA numbers no packet.
        sequence: None,
        carrier: Carrier::Ifa,
        ifa: Some(IfaHeaders::of(&found.header, &found.md)),
    }))
}

/// Every hop of an IFA report's stack as IFA wrote it (LNS 1's fields),
/// newest first: read for a record only, so that booking an IFA report
/// allocates nothing.
fn ifa_hops(report: &IndividualReport<'_>, domain: &ifa::Domain) -> Option<Vec<IfaHop>> {
    let found = ifa::sink::find_in_report(report.inner, domain).ok().flatten()?;
    Some(found.stack(report.inner).hops().map(|hop| IfaHop::from(&hop)).collect())
}

/// What a TR 2.0 report's packet gives, by the protocol in it; its path
/// read into `room`'s allocation (left in `room` when there is none).
fn reading_of(
    individual: &IndividualReport<'_>,
    how: &How,
    arrival_ns: u64,
    room: &mut Vec<HopMetadata>,
) -> Result<Option<Latency21>, ifa::Refused> {
    match ifa_latency_of(individual, &how.ifa_domain, arrival_ns, room)? {
        Some(read) => Ok(Some(read)),
        None => Ok(latency_of(individual, &how.int21_domain, how.ioam_timestamps, room)),
    }
}

/// `room`'s allocation, emptied (`room` left without one).
fn emptied(room: &mut Vec<HopMetadata>) -> Vec<HopMetadata> {
    let mut path = std::mem::take(room);
    path.clear();
    path
}

/// A report whose IFA is refused: counted by reason, said, not booked.
fn refuse_ifa(refused: &ifa::Refused, arrival: &Arrival, len: usize, books: &mut Books) {
    let reason = format!("tr20: {}", refused.reason.name());
    *books.totals.malformed.entry(reason.clone()).or_default() += 1;
    books.refused(arrival, &format!("{reason}: {}", refused.error), Some(len));
}

/// Records and prints every individual report of a TR 2.0 datagram.
/// Returns the datagram's flow: its first report's, a loss report's or
/// that of the packet it carries (a postcard's, a sink's, a dropped
/// frame's). A group's reports are of one node; a datagram is taken as of
/// one flow, which is how int-node's sinks and switches send them (one
/// report a datagram).
pub fn record(report: &Report<'_>, how: &How, arrival: Arrival, books: &mut Books) -> Option<FlowKey> {
    let domain = &how.int21_domain;
    let sink_node = Some(report.group.node_id);
    let mut first = None;
    for (i, individual) in report.reports().flatten().enumerate() {
        let loss = LossReport::parse(&individual, domain.source_only.domain_id);
        if i == 0 {
            first = loss
                .as_ref()
                .map(|loss| loss.flow)
                .or_else(|| int21::reported_flow(individual.inner, individual.in_type == InType::Ethernet));
        }
        if let Some(loss) = loss {
            let measure = Measure::Lost(loss.count);
            let at_ns = Some(loss.declared_ns);
            books.observe(&Observed {
                flow: loss.flow,
                source_node: loss.source_node,
                sink_node,
                measure,
                at_ns,
            });
            books.emit(|| arrival.record(records::tr20_loss_record(&report.group, &loss)));
            continue;
        }
        let latency = match reading_of(&individual, how, arrival.at_ns, &mut books.path_room) {
            Ok(latency) => latency,
            Err(refused) => {
                refuse_ifa(&refused, &arrival, individual.inner.len(), books);
                continue;
            }
        };
        if let Some(l @ Latency21 { latency_ns: Some(ns), .. }) = &latency {
            let measure = Measure::Latency { ns: *ns, flow_seq: l.sequence, hops: u8::try_from(l.hops).ok() };
            let at_ns = individual.int.and_then(|int| int.metadata.ingress_timestamp);
            books.observe(&Observed { flow: l.flow, source_node: l.source_node, sink_node, measure, at_ns });
        }
        let group = report.group;
        let seen = latency.as_ref().filter(|l| !l.path.is_empty()).map(|l| Seen {
            flow: l.flow,
            hops: &l.path,
            sink: Some(group.node_id),
            sink_ingress_ns: individual.int.and_then(|int| int.metadata.ingress_timestamp),
            at_ms: books.ledger.time_ms(individual.int.and_then(|int| int.metadata.ingress_timestamp)),
        });
        if let Some(change) = seen.as_ref().and_then(|seen| books.observe_path(seen)) {
            books.emit(|| arrival.record(path_change_record(&change, Some(group.node_id))));
        }
        if let Some(drop) = individual.int.and_then(|int| int.drop) {
            books.observe_drop(group.node_id, drop.reason);
        }
        queues(&individual, latency.as_ref(), group.node_id, arrival.at_ns, books);
        if let Some(card) = postcard(&individual, latency.as_ref(), group.node_id, books) {
            let now_ms = books.ledger.arrival_ms();
            for joined in books.join.add(card, now_ms) {
                books.observe_joined(&joined);
            }
        }
        books.emit(|| {
            let path = seen.as_ref().and_then(path_of);
            let read = Read {
                individual: &individual,
                latency: latency.as_ref(),
                path,
                ifa_domain: &how.ifa_domain,
            };
            arrival.record(report_record(&read, &group))
        });
        if let Some(latency) = latency {
            books.path_room = latency.path;
        }
    }
    first
}

/// The queue figures of one individual report: its stack's or trace's
/// hops, or a postcard's own (the reporting node's), with the packet that
/// crossed them; a raised Q flag counts as the node's queue alert.
fn queues(
    individual: &IndividualReport<'_>,
    latency: Option<&Latency21>,
    node: u32,
    arrival_ns: u64,
    books: &mut Books,
) {
    if individual.flags.congested_queue {
        books.congestion.queue_alert(node);
    }
    let Some(int) = individual.int.filter(|int| int.drop.is_none()) else { return };
    let when = When { report_ns: int.metadata.ingress_timestamp, arrival_ns };
    let flow = latency.map(|l| l.flow).or_else(|| int21::reported_flow(individual.inner, false));
    let packet = flow.map(|flow| Packet {
        flow,
        bytes: ip_length(individual.inner),
        queue_alert: individual.flags.congested_queue,
    });
    match latency.filter(|l| !l.path.is_empty()) {
        Some(l) => books.observe_queues(&l.path, l.carrier, when, packet.as_ref()),
        None if matches!(individual.in_type, InType::Ipv4 | InType::Ipv6) => {
            let own = HopMetadata { node_id: int.metadata.node_id.or(Some(node)), ..int.metadata };
            books.observe_queues(&[own], Carrier::Int21, when, packet.as_ref());
        }
        None => {}
    }
}

/// An INT-MX or INT-XD node's report on a packet that passed it: its own
/// metadata, no stack, no drop (a stack is a sink's, a drop a drop report).
fn postcard(
    individual: &IndividualReport<'_>,
    latency: Option<&Latency21>,
    node: u32,
    books: &mut Books,
) -> Option<Postcard> {
    let int = individual.int.filter(|int| int.drop.is_none())?;
    if !matches!(individual.in_type, InType::Ipv4 | InType::Ipv6)
        || latency.is_some_and(|l| !l.path.is_empty())
    {
        return None;
    }
    let flow = latency.map(|l| l.flow).or_else(|| int21::reported_flow(individual.inner, false))?;
    Some(Postcard {
        flow,
        identity: join::identity(individual.inner),
        node,
        metadata: int.metadata,
        ttl: join::hop_limit(individual.inner),
        at_ms: books.ledger.time_ms(int.metadata.ingress_timestamp),
    })
}

/// What collect read of one individual report, for printing.
struct Read<'a> {
    individual: &'a IndividualReport<'a>,
    latency: Option<&'a Latency21>,
    path: Option<Vec<u32>>,
    ifa_domain: &'a ifa::Domain,
}

/// One individual report's record: the group's fields, the report's, and
/// what collect reads from the packet inside (its flow: of its INT stack,
/// or for a packet without one, a drop report's, from its headers).
fn report_record(read: &Read<'_>, group: &GroupHeaderRepr) -> Tr20Record {
    let Read { individual, latency, path, ifa_domain } = read;
    let flow = latency.map(|l| l.flow).or_else(|| match individual.in_type {
        InType::Ipv4 | InType::Ipv6 => int21::reported_flow(individual.inner, false),
        InType::Ethernet => int21::reported_flow(individual.inner, true),
        _ => None,
    });
    let reading = Tr20Reading {
        hops: latency.map(|l| l.hops),
        path: path.clone(),
        hop_metadata: latency.map(|l| l.path.iter().map(Hop::from).collect()),
        source_node: latency.and_then(|l| l.source_node),
        flow_seq: latency.and_then(|l| l.sequence),
        latency_ns: latency.and_then(|l| l.latency_ns),
        ifa: latency.and_then(|l| l.ifa),
        ifa_hops: latency.and_then(|l| l.ifa).and_then(|_| ifa_hops(individual, ifa_domain)),
    };
    Tr20Record::new(records::tr20_group(group), records::tr20_individual(individual, flow.as_ref()), reading)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::congestion::figure::Unit;
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

    /// The sink's ingress time in the IFA reports below; the hops' RX
    /// times are read near it.
    const SINK_NS: u64 = 1_700_000_000 * 1_000_000_000 + 500_000;

    /// An IPv4 UDP packet with IFA (protocol 253) of two hops, the source's
    /// (Device ID 11, queue 5, congestion 2) RX'd 500 us before `SINK_NS`,
    /// a transit's (12, queue 3, congestion 1) 200 us before, cut after
    /// the stack as int-node's terminator cuts it (the IP length still
    /// counts the 20 bytes of payload left out). `current_length` in words.
    fn ifa_packet(current_length: u8) -> Vec<u8> {
        let seconds = (1_700_000_000u64 & 0xf_ffff) as u32;
        let hop = |device_id, rx_nanoseconds, queue_id, congestion| ifa::HopRepr {
            lns: 1,
            device_id,
            ip_ttl: 64,
            queue_id,
            congestion,
            rx_seconds: seconds,
            rx_nanoseconds,
            residence_ns: 700,
            egress_system_port: 9,
            ingress_system_port: 8,
            ..ifa::HopRepr::default()
        };
        let mut stack = [0u8; 64];
        hop(12, 300_000, 3, 1).emit(&mut stack[..32]).unwrap();
        hop(11, 0, 5, 2).emit(&mut stack[32..]).unwrap();
        let mut packet = vec![0x45, 0, 0, 120, 0, 0, 0, 0, 64, ifa::DEFAULT_PROTOCOL, 0, 0];
        packet.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        // IFA header: version 2, GNS 15, Next Header UDP, I, Max Length.
        packet.extend_from_slice(&[0x2f, 17, 0x04, 0xff]);
        packet.extend_from_slice(&[0x04, 0x4c, 0x08, 0xae, 0, 100, 0, 0]);
        packet.extend_from_slice(&[0xee, 0xc0, 0x7e, current_length]);
        packet.extend_from_slice(&stack);
        packet
    }

    /// A terminator's TR 2.0 datagram on `packet` (InType 4, the sink's
    /// ingress time `SINK_NS`), from node 2.
    fn terminator_report(packet: &[u8]) -> Vec<u8> {
        let mut datagram = vec![0u8; 512];
        let mut len = GroupHeaderRepr { hw_id: 0, sequence: 1, node_id: 2 }.emit(&mut datagram).unwrap();
        let metadata = HopMetadata {
            l1_ingress_port: Some(1),
            l1_egress_port: Some(1),
            ingress_timestamp: Some(SINK_NS),
            egress_timestamp: Some(SINK_NS),
            ..HopMetadata::default()
        };
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type: InType::Ipv4,
            flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
            int: Some(IntContents { rep_md_bits: 0x4c00, metadata, ..IntContents::default() }),
            inner: packet,
            ..IndividualReport::default()
        };
        len += report.emit(&mut datagram[len..]).unwrap();
        datagram.truncate(len);
        datagram
    }

    /// How collect reads by default but for `--int21-port 5000`: IFA is
    /// found by its protocol whatever the INT 2.1 domain's marking.
    fn how() -> How {
        How {
            sink_id: int_core::report::SinkIdWord::Detect,
            int21_domain: int21::Domain {
                marking: int21::Marking::UdpPort(5000),
                tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
                source_only: int21::SourceOnly::sequence(0x4944),
            },
            ioam_timestamps: TimestampFormat::Posix,
            ifa_domain: ifa::Domain::default(),
        }
    }

    fn books() -> Books {
        use crate::collect::books::Sizes;
        Books::bounded(Sizes { flows: 4, detailed_flows: 2, nodes: 8, links: 8 })
    }

    fn arrival() -> Arrival {
        Arrival { from: "127.0.0.1:9".parse().unwrap(), at_ns: SINK_NS + 1_000_000, missing: 0 }
    }

    /// An IFA terminator's report is booked as IOAM's are: the flow's
    /// latency from the oldest hop's RX time, the path from the source to
    /// the terminator in the per-hop view, and each hop's queue id with
    /// its 2-bit congestion as a queue figure of unit `unknown`.
    #[test]
    fn an_ifa_terminators_report_books_its_hops() {
        let datagram = terminator_report(&ifa_packet(16));
        let report = Report::parse(&datagram).unwrap();
        assert_eq!(check(&report), Ok(1));
        let mut books = books();
        record(&report, &how(), arrival(), &mut books);
        assert!(books.totals.malformed.is_empty(), "{:?}", books.totals.malformed);
        let flow = FlowKey {
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            protocol: 17,
            src_port: 1100,
            dst_port: 2222,
        };
        let flows = books.ledger.flows_by_reports();
        assert_eq!(flows.len(), 1);
        assert_eq!(*flows[0].0, flow);
        assert_eq!(flows[0].1.latency.count(), 1);
        assert_eq!(books.hops.followed(&flow).map(|(path, _)| path.to_vec()), Some(vec![11, 12, 2]));
        assert!(books.hops.nodes.contains_key(&11) && books.hops.nodes.contains_key(&12));
        let queues = books.congestion.view().queues;
        let source = &queues[&(11, 5)];
        assert_eq!(
            (source.occupancy, source.unit, source.hop_latency_ns),
            (Some(2), Unit::Unknown, Some(700))
        );
        assert_eq!(queues[&(12, 3)].occupancy, Some(1));
        // The reading itself: the source first, its RX time read near the
        // sink's, the latency from it.
        let individual = report.reports().next().unwrap().unwrap();
        let read = ifa_latency_of(&individual, &ifa::Domain::default(), 0, &mut Vec::new()).unwrap().unwrap();
        assert_eq!(read.latency_ns, Some(500_000));
        assert_eq!(read.path[0].ingress_timestamp, Some(SINK_NS - 500_000));
        assert_eq!((read.hops, read.source_node, read.carrier), (2, Some(11), Carrier::Ifa));
        // Every IFA field, for the record: the headers, the hops newest first.
        let headers = read.ifa.unwrap();
        assert_eq!((headers.next_header, headers.current_length, headers.hop_limit), (17, 16, 0x7e));
        let hops = ifa_hops(&individual, &ifa::Domain::default()).unwrap();
        let lns: Vec<_> =
            hops.iter().map(|hop| (hop.device_id, hop.lns, hop.ip_ttl, hop.congestion)).collect();
        assert_eq!(lns, [(12, 1, 64, 1), (11, 1, 64, 2)]);
        // Another zone's protocol: not IFA.
        let other = ifa::Domain { protocol: 131 };
        assert!(ifa_latency_of(&individual, &other, 0, &mut Vec::new()).unwrap().is_none());
    }

    /// A report whose IFA lies (Current Length not whole hops) is counted
    /// by IFA's reason and booked nowhere.
    #[test]
    fn a_refused_ifa_in_a_report_is_counted_never_booked() {
        let datagram = terminator_report(&ifa_packet(15));
        let report = Report::parse(&datagram).unwrap();
        let mut books = books();
        record(&report, &how(), arrival(), &mut books);
        assert_eq!(books.totals.malformed.get("tr20: ifa_length_not_hops"), Some(&1));
        assert!(books.ledger.flows_by_reports().is_empty());
        assert!(books.hops.nodes.is_empty(), "{:?}", books.hops.nodes.keys());
        assert_eq!(books.congestion.queues(), 0);
    }
}
