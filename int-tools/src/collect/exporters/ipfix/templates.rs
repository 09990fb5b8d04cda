//! The exporter's templates: which elements each record carries, in
//! order (docs/ipfix.md has the table). IANA's elements where IANA has
//! one; the others under the enterprise number of `--ipfix-pen`, their
//! ids below.

use super::message::{Field, BASIC_LIST, VARIABLE_LENGTH};

/// Template ids (RFC 7011: data sets are numbered 256 and up).
pub const FLOW_V4: u16 = 256;
pub const FLOW_V6: u16 = 257;
pub const HOP: u16 = 258;
pub const LINK: u16 = 259;
pub const DROP: u16 = 260;

/// IANA's elements.
pub mod iana {
    pub const PACKET_DELTA_COUNT: u16 = 2;
    pub const PROTOCOL_IDENTIFIER: u16 = 4;
    pub const SOURCE_TRANSPORT_PORT: u16 = 7;
    pub const SOURCE_IPV4_ADDRESS: u16 = 8;
    pub const INGRESS_INTERFACE: u16 = 10;
    pub const DESTINATION_TRANSPORT_PORT: u16 = 11;
    pub const DESTINATION_IPV4_ADDRESS: u16 = 12;
    pub const EGRESS_INTERFACE: u16 = 14;
    pub const SOURCE_IPV6_ADDRESS: u16 = 27;
    pub const DESTINATION_IPV6_ADDRESS: u16 = 28;
    /// Milliseconds too: nfdump 1.7 reads these and not the ns ones.
    pub const FLOW_START_MILLISECONDS: u16 = 152;
    pub const FLOW_END_MILLISECONDS: u16 = 153;
    pub const FLOW_START_NANOSECONDS: u16 = 156;
    pub const FLOW_END_NANOSECONDS: u16 = 157;
    /// RFC 9951's path delay elements, microseconds.
    pub const PATH_DELAY_MEAN_DELTA_MICROSECONDS: u16 = 530;
    pub const PATH_DELAY_MIN_DELTA_MICROSECONDS: u16 = 531;
    pub const PATH_DELAY_MAX_DELTA_MICROSECONDS: u16 = 532;
    pub const PATH_DELAY_SUM_DELTA_MICROSECONDS: u16 = 533;
}

/// Our elements, under the enterprise number (RFC 7013 section 4.4 asks
/// that each be documented as IANA's are: docs/ipfix.md).
pub mod ours {
    pub const LOST_PACKET_DELTA_COUNT: u16 = 1;
    pub const DELAY_MIN_NANOSECONDS: u16 = 2;
    pub const DELAY_MAX_NANOSECONDS: u16 = 3;
    pub const DELAY_SUM_NANOSECONDS: u16 = 4;
    pub const SOURCE_NODE_ID: u16 = 5;
    pub const SINK_NODE_ID: u16 = 6;
    pub const NODE_ID: u16 = 7;
    pub const PATH_CHANGE_DELTA_COUNT: u16 = 8;
    pub const HOP_REPORT_DELTA_COUNT: u16 = 9;
    pub const HOP_LATENCY_MIN: u16 = 10;
    pub const HOP_LATENCY_MAX: u16 = 11;
    pub const HOP_LATENCY_MEAN: u16 = 12;
    pub const QUEUE_OCCUPANCY_MIN: u16 = 13;
    pub const QUEUE_OCCUPANCY_MAX: u16 = 14;
    pub const QUEUE_OCCUPANCY_MEAN: u16 = 15;
    pub const LINK_FROM_NODE_ID: u16 = 16;
    pub const LINK_TO_NODE_ID: u16 = 17;
    pub const LINK_SAMPLE_DELTA_COUNT: u16 = 18;
    pub const LINK_LATENCY_MIN_NANOSECONDS: u16 = 19;
    pub const LINK_LATENCY_MAX_NANOSECONDS: u16 = 20;
    pub const LINK_LATENCY_MEAN_NANOSECONDS: u16 = 21;
    pub const DROP_REASON: u16 = 22;
    pub const DROP_REPORT_DELTA_COUNT: u16 = 23;
}

/// The fields of every template, for one enterprise number.
pub struct Templates {
    pub flow_v4: Vec<Field>,
    pub flow_v6: Vec<Field>,
    pub hop: Vec<Field>,
    pub link: Vec<Field>,
    pub drop: Vec<Field>,
    /// The element of a path's basicList.
    pub node: Field,
}

const fn iana(id: u16, length: u16) -> Field {
    Field { id, length, enterprise: None }
}

/// A node's drop reports of one reason.
fn drop_fields(pen: u32) -> Vec<Field> {
    let ours = |id: u16, length: u16| Field { id, length, enterprise: Some(pen) };
    vec![
        ours(ours::NODE_ID, 4),
        ours(ours::DROP_REASON, 1),
        iana(iana::FLOW_START_NANOSECONDS, 8),
        iana(iana::FLOW_END_NANOSECONDS, 8),
        ours(ours::DROP_REPORT_DELTA_COUNT, 8),
    ]
}

impl Templates {
    pub fn new(pen: u32) -> Templates {
        let ours = |id: u16, length: u16| Field { id, length, enterprise: Some(pen) };
        let flow = |src: u16, dst: u16, address: u16| {
            vec![
                iana(src, address),
                iana(dst, address),
                iana(iana::PROTOCOL_IDENTIFIER, 1),
                iana(iana::SOURCE_TRANSPORT_PORT, 2),
                iana(iana::DESTINATION_TRANSPORT_PORT, 2),
                iana(iana::FLOW_START_MILLISECONDS, 8),
                iana(iana::FLOW_END_MILLISECONDS, 8),
                iana(iana::FLOW_START_NANOSECONDS, 8),
                iana(iana::FLOW_END_NANOSECONDS, 8),
                iana(iana::PACKET_DELTA_COUNT, 8),
                ours(ours::LOST_PACKET_DELTA_COUNT, 8),
                iana(iana::PATH_DELAY_MIN_DELTA_MICROSECONDS, 4),
                iana(iana::PATH_DELAY_MAX_DELTA_MICROSECONDS, 4),
                iana(iana::PATH_DELAY_MEAN_DELTA_MICROSECONDS, 4),
                iana(iana::PATH_DELAY_SUM_DELTA_MICROSECONDS, 8),
                ours(ours::DELAY_MIN_NANOSECONDS, 8),
                ours(ours::DELAY_MAX_NANOSECONDS, 8),
                ours(ours::DELAY_SUM_NANOSECONDS, 8),
                ours(ours::SOURCE_NODE_ID, 4),
                ours(ours::SINK_NODE_ID, 4),
                iana(BASIC_LIST, VARIABLE_LENGTH),
                ours(ours::PATH_CHANGE_DELTA_COUNT, 4),
            ]
        };
        let hop = vec![
            ours(ours::NODE_ID, 4),
            iana(iana::INGRESS_INTERFACE, 4),
            iana(iana::EGRESS_INTERFACE, 4),
            iana(iana::FLOW_START_NANOSECONDS, 8),
            iana(iana::FLOW_END_NANOSECONDS, 8),
            ours(ours::HOP_REPORT_DELTA_COUNT, 8),
            ours(ours::HOP_LATENCY_MIN, 4),
            ours(ours::HOP_LATENCY_MAX, 4),
            ours(ours::HOP_LATENCY_MEAN, 4),
            ours(ours::QUEUE_OCCUPANCY_MIN, 4),
            ours(ours::QUEUE_OCCUPANCY_MAX, 4),
            ours(ours::QUEUE_OCCUPANCY_MEAN, 4),
        ];
        let link = vec![
            ours(ours::LINK_FROM_NODE_ID, 4),
            ours(ours::LINK_TO_NODE_ID, 4),
            iana(iana::FLOW_START_NANOSECONDS, 8),
            iana(iana::FLOW_END_NANOSECONDS, 8),
            ours(ours::LINK_SAMPLE_DELTA_COUNT, 8),
            ours(ours::LINK_LATENCY_MIN_NANOSECONDS, 8),
            ours(ours::LINK_LATENCY_MAX_NANOSECONDS, 8),
            ours(ours::LINK_LATENCY_MEAN_NANOSECONDS, 8),
        ];
        Templates {
            flow_v4: flow(iana::SOURCE_IPV4_ADDRESS, iana::DESTINATION_IPV4_ADDRESS, 4),
            flow_v6: flow(iana::SOURCE_IPV6_ADDRESS, iana::DESTINATION_IPV6_ADDRESS, 16),
            hop,
            link,
            drop: drop_fields(pen),
            node: ours(ours::NODE_ID, 4),
        }
    }

    /// Each template with its id and its scope, in the order they are
    /// sent. Flows are data templates (scope 0). Hops, links and drop
    /// reasons are options templates (RFC 7011 section 3.4.2.2), their
    /// first fields the scope (the node and interfaces, the two nodes, the
    /// node and reason): they describe the network, not a flow, and a flow
    /// collector (nfdump) books no flow of them.
    pub fn all(&self) -> [(u16, u16, &[Field]); 5] {
        [
            (FLOW_V4, 0, &self.flow_v4),
            (FLOW_V6, 0, &self.flow_v6),
            (HOP, 3, &self.hop),
            (LINK, 2, &self.link),
            (DROP, 2, &self.drop),
        ]
    }
}
