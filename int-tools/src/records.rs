//! The report records decode and collect both print (docs/output.md):
//! typed structs serialized with serde, so the same fact has the same name
//! in both tools and an aggregator reads collect's records back into the
//! same types. decode adds the wire's detail (flags, the INT stack);
//! collect adds where and when the report arrived, and node names.
//!
//! A struct's field order is the record's key order; an `Option` field is
//! written as null where unknown, except the fields only some records have
//! (arrival, names), which are left out where absent.

use int_core::flow::FlowKey;
use int_core::int21::{HopMetadata, Instructions};
use int_core::report::tr05_flow::FlowReport;
use int_core::report::tr20::{self, GroupHeaderRepr, IndividualReport};
use int_core::report::tr20_loss::LossReport;
use int_core::report::{self, Report};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema::rfc3339;

mod ifa_ipfix;
pub use ifa_ipfix::{IfaHeaders, IfaHop, IfaIpfixRecord, IpfixSource};

/// serde's derived structs also take a JSON array (their fields by
/// position); a record's flow and hops are objects, as collect writes
/// them, and an aggregator refuses an array in their place.
mod objects {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};

    /// A `T` given as a JSON object, or null.
    pub fn option<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
        Ok(Option::<Object<T>>::deserialize(d)?.map(|Object(t)| t))
    }

    /// A list of `T`, each a JSON object, or null.
    pub fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
        Ok(Option::<Vec<Object<T>>>::deserialize(d)?
            .map(|list| list.into_iter().map(|Object(t)| t).collect()))
    }

    struct Object<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(Fields(PhantomData)).map(Object)
        }
    }

    struct Fields<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
}

/// Seconds since the epoch (Host-INT's report and gap timestamps) in ns.
fn seconds(s: u32) -> Option<u64> {
    Some(u64::from(s) * 1_000_000_000)
}

/// A time's RFC 3339 form (the `time` beside `time_ns`).
fn text(ns: Option<u64>) -> Option<String> {
    ns.map(rfc3339)
}

/// A Host-INT latency report's time, to the ns: its header's second, made
/// exact by the sink's ingress timestamp (the low 32 bits of ns, which
/// wrap every 4.3 s: the one within a second of the header's). Takes the
/// header's second and the sink hop's ingress timestamp, so a caller that
/// walked the stack once passes what it found.
pub fn hostint_time_ns(header_second: u32, sink_ingress: Option<u32>) -> u64 {
    let second = u64::from(header_second) * 1_000_000_000;
    let Some(low) = sink_ingress else { return second };
    let middle = second + 500_000_000;
    let near = (middle & !0xffff_ffff) | u64::from(low);
    [near.wrapping_sub(1 << 32), near, near + (1 << 32)]
        .into_iter()
        .min_by_key(|t| t.abs_diff(middle))
        .unwrap_or(second)
}

/// A record's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordType {
    Latency,
    DropSummary,
    Tr05,
    Tr05Flow,
    Tr20,
    Tr20Loss,
    PathChange,
    Joined,
    IfaIpfix,
    Congestion,
    Malformed,
}

impl RecordType {
    /// The `type` as written (a NATS subject's word too).
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Latency => "latency",
            RecordType::DropSummary => "drop-summary",
            RecordType::Tr05 => "tr05",
            RecordType::Tr05Flow => "tr05-flow",
            RecordType::Tr20 => "tr20",
            RecordType::Tr20Loss => "tr20-loss",
            RecordType::PathChange => "path-change",
            RecordType::Joined => "joined",
            RecordType::IfaIpfix => "ifa-ipfix",
            RecordType::Congestion => "congestion",
            RecordType::Malformed => "malformed",
        }
    }
}

/// A hop's INT 2.1 metadata as collect writes it: every field, null where
/// the hop wrote all ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub node_id: Option<u32>,
    pub l1_ingress_port: Option<u16>,
    pub l1_egress_port: Option<u16>,
    pub hop_latency: Option<u32>,
    pub queue_id: Option<u8>,
    pub queue_occupancy: Option<u32>,
    pub ingress_timestamp: Option<u64>,
    pub egress_timestamp: Option<u64>,
    pub l2_ingress_port: Option<u32>,
    pub l2_egress_port: Option<u32>,
    pub egress_tx_utilization: Option<u32>,
    pub buffer_id: Option<u8>,
    pub buffer_occupancy: Option<u32>,
    pub checksum_complement: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id_name: Option<String>,
}

impl From<&HopMetadata> for Hop {
    fn from(hop: &HopMetadata) -> Hop {
        Hop {
            node_id: hop.node_id,
            l1_ingress_port: hop.l1_ingress_port,
            l1_egress_port: hop.l1_egress_port,
            hop_latency: hop.hop_latency,
            queue_id: hop.queue.map(|q| q.0),
            queue_occupancy: hop.queue.map(|q| q.1),
            ingress_timestamp: hop.ingress_timestamp,
            egress_timestamp: hop.egress_timestamp,
            l2_ingress_port: hop.l2_ingress_port,
            l2_egress_port: hop.l2_egress_port,
            egress_tx_utilization: hop.egress_tx_utilization,
            buffer_id: hop.buffer.map(|b| b.0),
            buffer_occupancy: hop.buffer.map(|b| b.1),
            checksum_complement: hop.checksum_complement,
            node_id_name: None,
        }
    }
}

impl From<&Hop> for HopMetadata {
    fn from(hop: &Hop) -> HopMetadata {
        HopMetadata {
            node_id: hop.node_id,
            l1_ingress_port: hop.l1_ingress_port,
            l1_egress_port: hop.l1_egress_port,
            hop_latency: hop.hop_latency,
            queue: hop.queue_id.zip(hop.queue_occupancy),
            ingress_timestamp: hop.ingress_timestamp,
            egress_timestamp: hop.egress_timestamp,
            l2_ingress_port: hop.l2_ingress_port,
            l2_egress_port: hop.l2_egress_port,
            egress_tx_utilization: hop.egress_tx_utilization,
            buffer: hop.buffer_id.zip(hop.buffer_occupancy),
            checksum_complement: hop.checksum_complement,
        }
    }
}

/// A hop as decode shows it: only the fields its instructions ask for
/// (each null where the hop wrote all ones).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShownHop {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l1_ingress_port: Option<Option<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l1_egress_port: Option<Option<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_latency: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_id: Option<Option<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_occupancy: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress_timestamp: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_timestamp: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_ingress_port: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_egress_port: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_tx_utilization: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_id: Option<Option<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_occupancy: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_complement: Option<Option<u32>>,
}

/// A hop's INT 2.1 metadata: the fields `instructions` ask for (null where
/// the hop wrote all ones).
pub fn hop21(hop: &HopMetadata, instructions: Instructions) -> ShownHop {
    let all = Hop::from(hop);
    let has = |bit: Instructions| instructions.contains(bit);
    let port = has(Instructions::L1_PORT_IDS);
    let (queue, buffer, l2) = (
        has(Instructions::QUEUE_OCCUPANCY),
        has(Instructions::BUFFER_OCCUPANCY),
        has(Instructions::L2_PORT_IDS),
    );
    ShownHop {
        node_id: has(Instructions::NODE_ID).then_some(all.node_id),
        l1_ingress_port: port.then_some(all.l1_ingress_port),
        l1_egress_port: port.then_some(all.l1_egress_port),
        hop_latency: has(Instructions::HOP_LATENCY).then_some(all.hop_latency),
        queue_id: queue.then_some(all.queue_id),
        queue_occupancy: queue.then_some(all.queue_occupancy),
        ingress_timestamp: has(Instructions::INGRESS_TIMESTAMP).then_some(all.ingress_timestamp),
        egress_timestamp: has(Instructions::EGRESS_TIMESTAMP).then_some(all.egress_timestamp),
        l2_ingress_port: l2.then_some(all.l2_ingress_port),
        l2_egress_port: l2.then_some(all.l2_egress_port),
        egress_tx_utilization: has(Instructions::EGRESS_TX_UTILIZATION).then_some(all.egress_tx_utilization),
        buffer_id: buffer.then_some(all.buffer_id),
        buffer_occupancy: buffer.then_some(all.buffer_occupancy),
        checksum_complement: has(Instructions::CHECKSUM_COMPLEMENT).then_some(all.checksum_complement),
    }
}

/// A record as a JSON object, for decode to add the wire's detail to.
pub fn to_map<T: Serialize>(record: &T) -> Map<String, Value> {
    match serde_json::to_value(record) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Host-INT's latency report and int-node's TR 0.5 flow report: a flow's
/// one-way latency between its source and its sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: Option<u32>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub source_node: Option<u32>,
    pub source_port: Option<u16>,
    pub source_timestamp_ns: Option<u32>,
    pub sink_node: Option<u32>,
    pub sink_port: Option<u16>,
    pub sink_timestamp_ns: Option<u32>,
    pub flow_seq: Option<u32>,
    pub hops: Option<u8>,
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
    pub sink_node_name: Option<String>,
}

/// Host-INT's drop summary: packets a flow lost in a gap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropSummaryRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: Option<u32>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub source_node: Option<u32>,
    pub source_port: Option<u16>,
    pub sink_node: Option<u32>,
    pub sink_port: Option<u16>,
    pub flow_seq: Option<u32>,
    pub lost_packets: Option<u32>,
    pub gap_time: Option<String>,
    pub gap_time_ns: Option<u64>,
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
    pub sink_node_name: Option<String>,
}

/// Another Telemetry Report 0.5 report: its header's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tr05Record {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: Option<u32>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
    pub timestamp_ns: Option<u32>,
    pub nproto: Option<u8>,
    pub inner_frame_length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reports_before: Option<u32>,
}

/// A Telemetry Report 2.0 group header: the fields every report in it
/// shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tr20Group {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: u32,
    pub report_node: u32,
    pub hw_id: u8,
}

/// A TR 2.0 individual report's drop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropRecord {
    pub queue_id: Option<u8>,
    pub reason: Option<u8>,
    pub reason_name: Option<String>,
}

/// An individual report: its kind, flags, drop, the flow of the packet in
/// it and the reporting node's time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tr20Individual {
    pub rep_type: u8,
    pub in_type: u8,
    pub d: bool,
    pub q: bool,
    pub f: bool,
    pub i: bool,
    pub drop: Option<DropRecord>,
    pub flow: Option<FlowKey>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
}

/// What collect reads of an individual report beyond the report's own
/// fields: the INT stack inside, the path it gives, the latency.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tr20Reading {
    pub hops: Option<usize>,
    pub path: Option<Vec<u32>>,
    pub hop_metadata: Option<Vec<Hop>>,
    pub source_node: Option<u32>,
    pub flow_seq: Option<u32>,
    pub latency_ns: Option<i64>,
    /// An IFA terminator's report: the packet's IFA headers and every hop
    /// as IFA wrote it, newest first.
    pub ifa: Option<IfaHeaders>,
    pub ifa_hops: Option<Vec<IfaHop>>,
}

/// collect's record of a TR 2.0 individual report: its group's fields,
/// its own, and what collect read of the packet inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tr20Record {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: Option<u32>,
    pub report_node: Option<u32>,
    pub hw_id: Option<u8>,
    pub rep_type: Option<u8>,
    pub in_type: Option<u8>,
    pub d: Option<bool>,
    pub q: Option<bool>,
    pub f: Option<bool>,
    pub i: Option<bool>,
    pub drop: Option<DropRecord>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
    pub hops: Option<usize>,
    pub path: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "objects::list")]
    pub hop_metadata: Option<Vec<Hop>>,
    pub source_node: Option<u32>,
    pub flow_seq: Option<u32>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_names: Option<Vec<Option<String>>>,
    /// An IFA terminator's report (left out for other protocols): the IFA
    /// and metadata headers, as an `ifa-ipfix` record's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifa: Option<IfaHeaders>,
    /// Its hops, every LNS 1 field, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifa_hops: Option<Vec<IfaHop>>,
}

impl Tr20Record {
    pub fn new(group: Tr20Group, individual: Tr20Individual, reading: Tr20Reading) -> Tr20Record {
        Tr20Record {
            kind: RecordType::Tr20,
            report_seq: Some(group.report_seq),
            report_node: Some(group.report_node),
            hw_id: Some(group.hw_id),
            rep_type: Some(individual.rep_type),
            in_type: Some(individual.in_type),
            d: Some(individual.d),
            q: Some(individual.q),
            f: Some(individual.f),
            i: Some(individual.i),
            drop: individual.drop,
            flow: individual.flow,
            time: individual.time,
            time_ns: individual.time_ns,
            hops: reading.hops,
            path: reading.path,
            hop_metadata: reading.hop_metadata,
            source_node: reading.source_node,
            flow_seq: reading.flow_seq,
            latency_ns: reading.latency_ns,
            ifa: reading.ifa,
            ifa_hops: reading.ifa_hops,
            from: None,
            arrival: None,
            arrival_ns: None,
            missing_reports_before: None,
            source_node_name: None,
            report_node_name: None,
            path_names: None,
        }
    }
}

/// A loss report's own fields (int-node's rule, in the domain's Domain
/// Specific data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LossFields {
    pub flow: FlowKey,
    pub source_node: Option<u32>,
    pub first_flow_seq: u32,
    pub lost_packets: u32,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
}

/// collect's record of a TR 2.0 loss report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tr20LossRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_seq: Option<u32>,
    pub report_node: Option<u32>,
    pub hw_id: Option<u8>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub source_node: Option<u32>,
    pub first_flow_seq: Option<u32>,
    pub lost_packets: Option<u32>,
    pub time: Option<String>,
    pub time_ns: Option<u64>,
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

/// A flow's new path (`report_node`: the sink whose report told it; none
/// for a path of joined postcards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathChangeRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub report_node: Option<u32>,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub old_path: Option<Vec<u32>>,
    pub new_path: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reports_before: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path_names: Option<Vec<Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_path_names: Option<Vec<Option<String>>>,
}

/// A packet's postcards joined: its flow, its nodes' metadata in path
/// order, whether it holds its flow's whole path (`complete`; null where
/// the order cannot be told), and its path where it does (null otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinedRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub nodes: Option<Vec<Option<u32>>>,
    pub ordered: Option<bool>,
    pub complete: Option<bool>,
    pub path: Option<Vec<Option<u32>>>,
    #[serde(default, deserialize_with = "objects::list")]
    pub hop_metadata: Option<Vec<Hop>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_names: Option<Vec<Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_names: Option<Vec<Option<String>>>,
}

/// A datagram collect refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MalformedRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub error: String,
    pub length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reports_before: Option<u32>,
}

/// A flow's part in a congestion episode: its packets across the queue
/// while it lasted, their bytes where the reports carry the packet's IP
/// length, their share of the episode's packets, and the flow's latency
/// before and at most during it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowPart {
    #[serde(default, deserialize_with = "objects::option")]
    pub flow: Option<FlowKey>,
    pub packets: u64,
    pub bytes: u64,
    pub share: f64,
    pub latency_before_ns: Option<i64>,
    pub latency_max_ns: Option<i64>,
}

/// One queue's congestion episode (docs/congestion.md): the node and
/// queue, the occupancy's unit, when it opened and closed and why, its
/// peaks and thresholds, the packets, bytes and flows that crossed the
/// queue while it lasted, the culprits (flows ranked by share) and the
/// victims (flows whose latency rose).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CongestionRecord {
    #[serde(rename = "type")]
    pub kind: RecordType,
    pub node: u32,
    pub queue_id: u8,
    pub unit: String,
    pub trigger: String,
    pub start: Option<String>,
    pub start_ns: u64,
    pub end: Option<String>,
    pub end_ns: Option<u64>,
    pub duration_ns: Option<u64>,
    pub ended: Option<String>,
    pub peak_occupancy: Option<u32>,
    pub peak_hop_latency_ns: Option<u32>,
    pub threshold_occupancy: Option<u32>,
    pub threshold_hop_latency_ns: Option<u32>,
    pub packets: u64,
    pub bytes: u64,
    pub flows: u64,
    pub other_packets: u64,
    pub queue_alerts: u64,
    pub culprits: Vec<FlowPart>,
    pub victims: Vec<FlowPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

// A share is a ratio of counts, never NaN: equality is an equivalence.
impl Eq for CongestionRecord {}

/// Every record collect prints, as it prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Record {
    Flow(FlowRecord),
    DropSummary(DropSummaryRecord),
    Tr05(Tr05Record),
    Tr20(Tr20Record),
    Tr20Loss(Tr20LossRecord),
    PathChange(PathChangeRecord),
    Joined(JoinedRecord),
    IfaIpfix(IfaIpfixRecord),
    Congestion(CongestionRecord),
    Malformed(MalformedRecord),
}

impl Record {
    pub fn kind(&self) -> RecordType {
        match self {
            Record::Flow(r) => r.kind,
            Record::DropSummary(r) => r.kind,
            Record::Tr05(r) => r.kind,
            Record::Tr20(r) => r.kind,
            Record::Tr20Loss(r) => r.kind,
            Record::PathChange(r) => r.kind,
            Record::Joined(r) => r.kind,
            Record::IfaIpfix(r) => r.kind,
            Record::Congestion(r) => r.kind,
            Record::Malformed(r) => r.kind,
        }
    }

    /// The node that reported it: its report node, else its sink.
    pub fn node(&self) -> Option<u32> {
        match self {
            Record::Flow(r) => r.sink_node,
            Record::DropSummary(r) => r.sink_node,
            Record::Tr20(r) => r.report_node,
            Record::Tr20Loss(r) => r.report_node,
            Record::PathChange(r) => r.report_node,
            Record::IfaIpfix(r) => r.report_node,
            Record::Congestion(r) => Some(r.node),
            Record::Tr05(_) | Record::Joined(_) | Record::Malformed(_) => None,
        }
    }

    /// Where and when its report arrived, and how many of its sender's
    /// reports went missing just before it (a joined packet has no one
    /// report: it takes none).
    pub fn arrived(&mut self, from: String, at_ns: u64, missing: u32) {
        let (arrival, arrival_ns, missing) = (Some(rfc3339(at_ns)), Some(at_ns), Some(missing));
        let from = Some(from);
        macro_rules! set {
            ($r:expr) => {{
                ($r.from, $r.arrival, $r.arrival_ns, $r.missing_reports_before) =
                    (from, arrival, arrival_ns, missing);
            }};
        }
        match self {
            Record::Flow(r) => set!(r),
            Record::DropSummary(r) => set!(r),
            Record::Tr05(r) => set!(r),
            Record::Tr20(r) => set!(r),
            Record::Tr20Loss(r) => set!(r),
            Record::PathChange(r) => set!(r),
            Record::Malformed(r) => set!(r),
            Record::IfaIpfix(r) => set!(r),
            Record::Joined(_) | Record::Congestion(_) => {}
        }
    }
}

/// A Host-INT report (latency, drop summary) or another Telemetry Report
/// 0.5 report.
pub fn hostint(parsed: &Report<'_>) -> Record {
    match parsed {
        Report::Latency(l) => Record::Flow(latency(l)),
        Report::DropSummary(d) => Record::DropSummary(drop_summary(d)),
        Report::Tr05 { header, frame, .. } => Record::Tr05(Tr05Record {
            kind: RecordType::Tr05,
            report_seq: Some(header.sequence),
            time: None,
            time_ns: None,
            timestamp_ns: Some(header.timestamp),
            nproto: Some(u8::from(header.next_proto)),
            inner_frame_length: Some(frame.len()),
            from: None,
            arrival: None,
            arrival_ns: None,
            missing_reports_before: None,
        }),
    }
}

fn latency(l: &report::LatencyReport<'_>) -> FlowRecord {
    let (sink, source) = l.sink_and_source().unzip();
    let flow = FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port);
    let sink_ingress = sink.and_then(|h| h.ingress_timestamp);
    let time_ns = Some(hostint_time_ns(l.header.timestamp, sink_ingress));
    FlowRecord {
        kind: RecordType::Latency,
        report_seq: Some(l.header.sequence),
        time: text(time_ns),
        time_ns,
        flow: Some(flow),
        source_node: source.and_then(|h| h.switch_id),
        source_port: source.and_then(|h| h.ingress_port),
        source_timestamp_ns: source.and_then(|h| h.ingress_timestamp),
        sink_node: sink.and_then(|h| h.switch_id),
        sink_port: sink.and_then(|h| h.egress_port),
        sink_timestamp_ns: sink_ingress,
        flow_seq: l.block.sequence,
        hops: Some(l.block.header.total_hop_cnt),
        latency_ns: l.latency_ns().map(i64::from),
        from: None,
        arrival: None,
        arrival_ns: None,
        missing_reports_before: None,
        source_node_name: None,
        sink_node_name: None,
    }
}

fn drop_summary(d: &report::DropSummaryReport) -> DropSummaryRecord {
    let s = &d.summary;
    let (time_ns, gap_time_ns) = (seconds(d.header.timestamp), seconds(s.gap_timestamp));
    DropSummaryRecord {
        kind: RecordType::DropSummary,
        report_seq: Some(d.header.sequence),
        time: text(time_ns),
        time_ns,
        flow: Some(d.flow),
        source_node: Some(s.source_node),
        source_port: Some(s.source_port),
        sink_node: Some(s.sink_node),
        sink_port: Some(s.sink_port),
        flow_seq: Some(s.gap_sequence),
        lost_packets: Some(s.gap_count),
        gap_time: text(gap_time_ns),
        gap_time_ns,
        from: None,
        arrival: None,
        arrival_ns: None,
        missing_reports_before: None,
        source_node_name: None,
        sink_node_name: None,
    }
}

/// int-node's own INT 0.5 sink's Telemetry Report 0.5 flow report.
pub fn tr05_flow(report: &FlowReport<'_>) -> FlowRecord {
    let source = report.source_hop();
    FlowRecord {
        kind: RecordType::Tr05Flow,
        report_seq: Some(report.header.sequence),
        time: None,
        time_ns: None,
        flow: Some(report.flow()),
        source_node: source.and_then(|h| h.switch_id),
        source_port: source.and_then(|h| h.ingress_port),
        source_timestamp_ns: source.and_then(|h| h.ingress_timestamp),
        sink_node: Some(report.local.switch_id),
        sink_port: Some(report.local.ingress_port),
        sink_timestamp_ns: Some(report.header.timestamp),
        flow_seq: report.block.sequence,
        hops: Some(report.block.header.total_hop_cnt),
        latency_ns: report.latency_ns().map(i64::from),
        from: None,
        arrival: None,
        arrival_ns: None,
        missing_reports_before: None,
        source_node_name: None,
        sink_node_name: None,
    }
}

/// A Telemetry Report 2.0 group header's fields.
pub fn tr20_group(group: &GroupHeaderRepr) -> Tr20Group {
    Tr20Group {
        kind: RecordType::Tr20,
        report_seq: group.sequence,
        report_node: group.node_id,
        hw_id: group.hw_id,
    }
}

/// An individual report's fields, with the flow of the packet in it
/// (`flow`, when its headers give one).
pub fn tr20_individual(individual: &IndividualReport<'_>, flow: Option<&FlowKey>) -> Tr20Individual {
    let f = individual.flags;
    let drop = individual.int.and_then(|int| int.drop);
    let time_ns = individual.int.and_then(|int| int.metadata.ingress_timestamp);
    Tr20Individual {
        rep_type: u8::from(individual.rep_type),
        in_type: u8::from(individual.in_type),
        d: f.dropped,
        q: f.congested_queue,
        f: f.tracked_flow,
        i: f.intermediate,
        drop: drop.map(|d| DropRecord {
            queue_id: Some(d.queue_id),
            reason: Some(d.reason),
            reason_name: tr20::drop_reason_name(d.reason).map(str::to_string),
        }),
        flow: flow.copied(),
        time: text(time_ns),
        time_ns,
    }
}

/// A loss report's own fields.
pub fn tr20_loss(loss: &LossReport) -> LossFields {
    let time_ns = Some(loss.declared_ns);
    LossFields {
        flow: loss.flow,
        source_node: loss.source_node,
        first_flow_seq: loss.first_sequence,
        lost_packets: loss.count,
        time: text(time_ns),
        time_ns,
    }
}

/// collect's record of a loss report in a group.
pub fn tr20_loss_record(group: &GroupHeaderRepr, loss: &LossReport) -> Tr20LossRecord {
    let fields = tr20_loss(loss);
    Tr20LossRecord {
        kind: RecordType::Tr20Loss,
        report_seq: Some(group.sequence),
        report_node: Some(group.node_id),
        hw_id: Some(group.hw_id),
        flow: Some(fields.flow),
        source_node: fields.source_node,
        first_flow_seq: Some(fields.first_flow_seq),
        lost_packets: Some(fields.lost_packets),
        time: fields.time,
        time_ns: fields.time_ns,
        from: None,
        arrival: None,
        arrival_ns: None,
        missing_reports_before: None,
        source_node_name: None,
        report_node_name: None,
    }
}

macro_rules! into_record {
    ($($variant:ident($record:ty)),*) => {$(
        impl From<$record> for Record {
            fn from(record: $record) -> Record {
                Record::$variant(record)
            }
        }
    )*};
}
into_record!(
    Flow(FlowRecord),
    DropSummary(DropSummaryRecord),
    Tr05(Tr05Record),
    Tr20(Tr20Record),
    Tr20Loss(Tr20LossRecord),
    PathChange(PathChangeRecord),
    Joined(JoinedRecord),
    IfaIpfix(IfaIpfixRecord),
    Congestion(CongestionRecord),
    Malformed(MalformedRecord)
);

#[cfg(test)]
mod tests {
    use super::*;

    /// A type's text (a NATS subject's word) is the `type` serde writes.
    #[test]
    fn a_types_text_is_what_serde_writes() {
        use RecordType::*;
        for kind in
            [Latency, DropSummary, Tr05, Tr05Flow, Tr20, Tr20Loss, PathChange, Joined, Congestion, Malformed]
        {
            assert_eq!(serde_json::to_value(kind).ok(), Some(Value::from(kind.as_str())));
        }
    }
}
