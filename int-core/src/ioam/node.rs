//! One node's data element of an IOAM trace (RFC 9197 section 4.4.2; the
//! last draft's 5.4.2): the fields the trace type asks for, in its bits'
//! order, each a whole number of words. A field the node cannot fill is
//! all-ones ("not populated"), and so is each word of an undefined bit;
//! reading, all-ones gives `None`.

use super::trace::TraceType;
use crate::error::{EmitError, Layer, ParseError};

/// A node's data. `None`: not populated (all-ones on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeData {
    /// The packet's Hop Limit (TTL) as it leaves this node.
    pub hop_limit: Option<u8>,
    /// 24 bits in the short form.
    pub node_id: Option<u32>,
    pub ingress_if: Option<u16>,
    pub egress_if: Option<u16>,
    pub timestamp_seconds: Option<u32>,
    pub timestamp_fraction: Option<u32>,
    /// ns; the top bit set: the delay overflowed.
    pub transit_delay: Option<u32>,
    pub namespace_data: Option<u32>,
    pub queue_depth: Option<u32>,
    pub checksum_complement: Option<u32>,
    /// 56 bits in the wide form (its Hop_Lim is `hop_limit`).
    pub node_id_wide: Option<u64>,
    pub ingress_if_wide: Option<u32>,
    pub egress_if_wide: Option<u32>,
    pub namespace_data_wide: Option<u64>,
    pub buffer_occupancy: Option<u32>,
}

/// The words of each bit with a field, in the bits' order (bits 0-11).
const FIELDS: [(TraceType, usize); 12] = [
    (TraceType::HOP_LIM_NODE_ID, 1),
    (TraceType::INTERFACES, 1),
    (TraceType::TIMESTAMP_SECONDS, 1),
    (TraceType::TIMESTAMP_FRACTION, 1),
    (TraceType::TRANSIT_DELAY, 1),
    (TraceType::NAMESPACE_DATA, 1),
    (TraceType::QUEUE_DEPTH, 1),
    (TraceType::CHECKSUM_COMPLEMENT, 1),
    (TraceType::HOP_LIM_NODE_ID_WIDE, 2),
    (TraceType::INTERFACES_WIDE, 2),
    (TraceType::NAMESPACE_DATA_WIDE, 2),
    (TraceType::BUFFER_OCCUPANCY, 1),
];

impl NodeData {
    /// This element as the shared [`Hop`](crate::hop::Hop), for readers of
    /// every protocol (the sink's hop rule, the collector's per-hop view): node id (the
    /// short one, else the wide one's low 32 bits), interfaces as level 1
    /// ports, transit delay as hop latency (none when it overflowed),
    /// queue depth and buffer occupancy (id 0), the timestamp as the
    /// ingress timestamp.
    pub fn as_hop(&self, timestamps: super::TimestampFormat) -> crate::hop::Hop {
        crate::hop::Hop {
            node_id: self.node_id.or(self.node_id_wide.map(|wide| wide as u32)),
            l1_ingress_port: self.ingress_if,
            l1_egress_port: self.egress_if,
            hop_latency: self.transit_delay.filter(|delay| delay >> 31 == 0),
            queue: self.queue_depth.map(|depth| (0, depth)),
            ingress_timestamp: self
                .timestamp_seconds
                .zip(self.timestamp_fraction)
                .and_then(|(seconds, fraction)| timestamps.join(seconds, fraction)),
            buffer: self.buffer_occupancy.map(|occupancy| (0, occupancy)),
            ..Default::default()
        }
    }

    /// Writes this node's element for `trace_type` (NodeLen words) at the
    /// start of `buf`.
    pub fn emit(&self, trace_type: TraceType, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = trace_type.node_len() * 4;
        let room = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::no_room(Layer::IoamTrace, len, room))?;
        let mut at = 0;
        for (bit, words) in FIELDS {
            if trace_type.contains(bit) {
                let field = self.field(bit);
                if let (Some(o), Some(value)) = (out.get_mut(at..at + 4 * words), field.get(8 - 4 * words..))
                {
                    o.copy_from_slice(value);
                }
                at += 4 * words;
            }
        }
        // Each undefined bit: a word of all-ones.
        out.get_mut(at..).into_iter().for_each(|rest| rest.fill(0xff));
        Ok(len)
    }

    /// A field's bytes, right-aligned in 8.
    fn field(&self, bit: TraceType) -> [u8; 8] {
        let ones = u64::MAX;
        let short = |v: Option<u32>| u64::from(v.unwrap_or(u32::MAX));
        let value = match bit {
            TraceType::HOP_LIM_NODE_ID => match (self.hop_limit, self.node_id) {
                (None, None) => ones,
                (hop, id) => {
                    (u64::from(hop.unwrap_or(0xff)) << 24) | u64::from(id.unwrap_or(0xff_ffff) & 0xff_ffff)
                }
            },
            TraceType::INTERFACES => match (self.ingress_if, self.egress_if) {
                (None, None) => ones,
                (i, e) => (u64::from(i.unwrap_or(u16::MAX)) << 16) | u64::from(e.unwrap_or(u16::MAX)),
            },
            TraceType::TIMESTAMP_SECONDS => short(self.timestamp_seconds),
            TraceType::TIMESTAMP_FRACTION => short(self.timestamp_fraction),
            TraceType::TRANSIT_DELAY => short(self.transit_delay),
            TraceType::NAMESPACE_DATA => short(self.namespace_data),
            TraceType::QUEUE_DEPTH => short(self.queue_depth),
            TraceType::CHECKSUM_COMPLEMENT => short(self.checksum_complement),
            TraceType::HOP_LIM_NODE_ID_WIDE => match (self.hop_limit, self.node_id_wide) {
                (None, None) => ones,
                (hop, id) => {
                    (u64::from(hop.unwrap_or(0xff)) << 56) | (id.unwrap_or(ones) & 0x00ff_ffff_ffff_ffff)
                }
            },
            TraceType::INTERFACES_WIDE => {
                (u64::from(self.ingress_if_wide.unwrap_or(u32::MAX)) << 32)
                    | u64::from(self.egress_if_wide.unwrap_or(u32::MAX))
            }
            TraceType::NAMESPACE_DATA_WIDE => self.namespace_data_wide.unwrap_or(ones),
            _ => short(self.buffer_occupancy),
        };
        value.to_be_bytes()
    }

    /// Reads a node's element for `trace_type` from the start of `bytes`.
    pub fn parse(trace_type: TraceType, bytes: &[u8]) -> Result<NodeData, ParseError> {
        let len = trace_type.node_len() * 4;
        let element = bytes.get(..len).ok_or(ParseError::truncated(Layer::IoamTrace, 0, len, bytes.len()))?;
        let mut node = NodeData::default();
        let mut at = 0;
        for (bit, words) in FIELDS {
            if !trace_type.contains(bit) {
                continue;
            }
            // Words read in place: a copy through a buffer cost a stalled
            // load per field (a fifth of the decapsulating node's time).
            let word = |at: usize| u64::from(crate::bytes::be32(element, at));
            let value = if words == 2 { (word(at) << 32) | word(at + 4) } else { word(at) };
            node.set(bit, value, words);
            at += 4 * words;
        }
        Ok(node)
    }

    /// Sets `bit`'s field from its `words`-word value; all-ones: unset.
    fn set(&mut self, bit: TraceType, value: u64, words: usize) {
        let all_ones = if words == 2 { u64::MAX } else { u64::from(u32::MAX) };
        if value == all_ones {
            return;
        }
        let short = Some(value as u32);
        match bit {
            TraceType::HOP_LIM_NODE_ID => {
                self.hop_limit = Some((value >> 24) as u8);
                self.node_id = Some(value as u32 & 0xff_ffff);
            }
            TraceType::INTERFACES => {
                self.ingress_if = Some((value >> 16) as u16);
                self.egress_if = Some(value as u16);
            }
            TraceType::TIMESTAMP_SECONDS => self.timestamp_seconds = short,
            TraceType::TIMESTAMP_FRACTION => self.timestamp_fraction = short,
            TraceType::TRANSIT_DELAY => self.transit_delay = short,
            TraceType::NAMESPACE_DATA => self.namespace_data = short,
            TraceType::QUEUE_DEPTH => self.queue_depth = short,
            TraceType::CHECKSUM_COMPLEMENT => self.checksum_complement = short,
            TraceType::HOP_LIM_NODE_ID_WIDE => {
                self.hop_limit = Some((value >> 56) as u8);
                self.node_id_wide = Some(value & 0x00ff_ffff_ffff_ffff);
            }
            TraceType::INTERFACES_WIDE => {
                self.ingress_if_wide = Some((value >> 32) as u32);
                self.egress_if_wide = Some(value as u32);
            }
            TraceType::NAMESPACE_DATA_WIDE => self.namespace_data_wide = Some(value),
            _ => self.buffer_occupancy = short,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_field() -> NodeData {
        NodeData {
            hop_limit: Some(64),
            node_id: Some(0x12_3456),
            ingress_if: Some(1),
            egress_if: Some(2),
            timestamp_seconds: Some(1_700_000_000),
            timestamp_fraction: Some(123_456_789),
            transit_delay: Some(5_000),
            namespace_data: Some(0xdead_beef),
            queue_depth: Some(42),
            checksum_complement: Some(0x1234),
            node_id_wide: Some(0x00ab_cdef_0123_4567),
            ingress_if_wide: Some(100_000),
            egress_if_wide: Some(200_000),
            namespace_data_wide: Some(0x0102_0304_0506_0708),
            buffer_occupancy: Some(9),
        }
    }

    /// Every defined bit: 12 fields in 15 words, in the bits' order.
    #[test]
    fn every_field_round_trips_in_its_place() {
        let all = TraceType::from_bits_retain(0xfff000);
        assert_eq!(all.node_len(), 15);
        let mut out = [0u8; 60];
        assert_eq!(every_field().emit(all, &mut out), Ok(60));
        assert_eq!(out[..4], [64, 0x12, 0x34, 0x56]);
        assert_eq!(out[4..8], [0, 1, 0, 2]);
        assert_eq!(out[32..40], [64, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67]);
        assert_eq!(out[56..60], 9u32.to_be_bytes());
        assert_eq!(NodeData::parse(all, &out), Ok(every_field()));
    }

    /// What a node cannot fill is all-ones, as is each undefined bit's
    /// word; read back, all-ones is "not populated".
    #[test]
    fn unpopulated_and_undefined_are_all_ones() {
        let trace_type =
            TraceType::HOP_LIM_NODE_ID | TraceType::QUEUE_DEPTH | TraceType::from_bits_retain(1 << 11);
        assert_eq!(trace_type.node_len(), 3);
        assert_eq!(trace_type.undefined(), 1 << 11);
        let node = NodeData { hop_limit: Some(3), node_id: Some(9), ..Default::default() };
        let mut out = [0u8; 12];
        node.emit(trace_type, &mut out).unwrap();
        assert_eq!(out, [3, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(NodeData::parse(trace_type, &out), Ok(node));
        assert!(NodeData::parse(trace_type, &out[..11]).is_err());
        assert!(node.emit(trace_type, &mut out[..8]).is_err());
    }

    /// NodeLen leaves out the opaque state snapshot and the reserved bit.
    #[test]
    fn node_len_counts_words() {
        assert_eq!(TraceType::HOP_LIM_NODE_ID.node_len(), 1);
        assert_eq!((TraceType::HOP_LIM_NODE_ID_WIDE | TraceType::INTERFACES).node_len(), 3);
        assert_eq!((TraceType::OPAQUE_STATE | TraceType::RESERVED | TraceType::TRANSIT_DELAY).node_len(), 1);
    }
}
