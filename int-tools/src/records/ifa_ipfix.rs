//! collect's record of one data record of an IFA terminator's IPFIX
//! export (docs/ifa.md, "IPFIX from a terminator"): the message's fields,
//! the IFA and metadata headers, each hop as IFA wrote it (`ifa_hops`,
//! newest first) and in the shape every protocol's hops take
//! (`hop_metadata`, the source first), the flow of the packet inside and
//! the latency between the oldest and the newest hop's RX timestamps.

use int_core::flow::FlowKey;
use int_core::ifa::{Exported, HopRepr, IfaHeaderRepr, MdHeaderRepr};
use serde::{Deserialize, Serialize};

use super::{objects, Hop, RecordType};

/// The IFA header's and the metadata header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaHeaders {
    pub version: u8,
    pub gns: u8,
    pub next_header: u8,
    pub flags: u8,
    pub max_length: u8,
    pub request_vector: u8,
    pub action_vector: u8,
    pub hop_limit: u8,
    pub current_length: u8,
}

impl IfaHeaders {
    /// A packet's or an export's IFA header and metadata header.
    pub fn of(header: &IfaHeaderRepr, md: &MdHeaderRepr) -> IfaHeaders {
        IfaHeaders {
            version: header.version,
            gns: header.gns,
            next_header: header.next_header,
            flags: header.flags.bits(),
            max_length: header.max_length,
            request_vector: md.request_vector,
            action_vector: md.action.bits(),
            hop_limit: md.hop_limit,
            current_length: md.current_length,
        }
    }
}

/// One hop's every field, as IFA's LNS 1 layout carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaHop {
    pub lns: u8,
    pub device_id: u32,
    pub ip_ttl: u8,
    pub egress_port_speed: u8,
    pub congestion: u8,
    pub queue_id: u8,
    pub rx_seconds: u32,
    pub egress_system_port: u16,
    pub ingress_system_port: u16,
    pub rx_nanoseconds: u32,
    pub residence_ns: u32,
    pub opaque: [u32; 3],
}

impl From<&HopRepr> for IfaHop {
    fn from(hop: &HopRepr) -> IfaHop {
        IfaHop {
            lns: hop.lns,
            device_id: hop.device_id,
            ip_ttl: hop.ip_ttl,
            egress_port_speed: hop.egress_port_speed.code(),
            congestion: hop.congestion,
            queue_id: hop.queue_id,
            rx_seconds: hop.rx_seconds,
            egress_system_port: hop.egress_system_port,
            ingress_system_port: hop.ingress_system_port,
            rx_nanoseconds: hop.rx_nanoseconds,
            residence_ns: hop.residence_ns,
            opaque: hop.opaque,
        }
    }
}

/// The IPFIX message a record came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpfixSource {
    pub export_time: u32,
    pub sequence: u32,
    pub domain: u32,
    pub template_id: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaIpfixRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub export_time: Option<u32>,
    pub ipfix_seq: Option<u32>,
    pub observation_domain: Option<u32>,
    pub template_id: Option<u16>,
    pub ifa: Option<IfaHeaders>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    /// The exported packet's bytes (as far as the terminator cut it).
    pub packet_length: Option<usize>,
    pub hops: Option<usize>,
    pub path: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "objects::list")]
    pub hop_metadata: Option<Vec<Hop>>,
    pub ifa_hops: Option<Vec<IfaHop>>,
    /// The oldest hop's Device ID.
    pub source_node: Option<u32>,
    /// The newest hop's: the terminator's, where it wrote one.
    pub report_node: Option<u32>,
    pub latency_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reports_before: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_node_name: Option<String>,
}

impl IfaIpfixRecord {
    /// The record of one exported packet; its hops' RX times are read
    /// near `arrived_ns`, when the message came.
    pub fn new(
        source: IpfixSource,
        exported: &Exported<'_>,
        flow: Option<FlowKey>,
        packet_length: usize,
        latency_ns: Option<i64>,
        arrived_ns: u64,
    ) -> IfaIpfixRecord {
        let (header, md) = (exported.header, exported.md);
        let hops: Vec<HopRepr> = exported.stack.hops().collect();
        let path: Vec<u32> = hops.iter().rev().map(|hop| hop.device_id).collect();
        IfaIpfixRecord {
            kind: RecordType::IfaIpfix,
            export_time: Some(source.export_time),
            ipfix_seq: Some(source.sequence),
            observation_domain: Some(source.domain),
            template_id: Some(source.template_id),
            ifa: Some(IfaHeaders::of(&header, &md)),
            flow,
            packet_length: Some(packet_length),
            hops: Some(hops.len()),
            source_node: path.first().copied(),
            report_node: path.last().copied(),
            path: Some(path),
            hop_metadata: Some(hops.iter().rev().map(|hop| Hop::from(&hop.as_hop(arrived_ns))).collect()),
            ifa_hops: Some(hops.iter().map(IfaHop::from).collect()),
            latency_ns,
            from: None,
            arrival: None,
            arrival_ns: None,
            missing_reports_before: None,
            source_node_name: None,
            report_node_name: None,
        }
    }
}
