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

/// Bits 0-11, the fields, and of those the 8-byte ones.
const DEFINED: u32 = 0xfff << 12;
const WIDE: u32 = TraceType::HOP_LIM_NODE_ID_WIDE.bits()
    | TraceType::INTERFACES_WIDE.bits()
    | TraceType::NAMESPACE_DATA_WIDE.bits();

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
        // Only the bits set, bit 0 first, a 4-byte store a word: a match
        // and a slice copy for each of the twelve fields took twice the
        // time (the transit's fast path spent half its time here).
        let values = self.values();
        let mut words = out.chunks_exact_mut(4);
        let mut put = |word: u64| {
            words.next().into_iter().for_each(|out| out.copy_from_slice(&(word as u32).to_be_bytes()));
        };
        let mut left = trace_type.bits() & DEFINED;
        while left != 0 {
            let top = left.ilog2();
            left &= !(1 << top);
            let value = values.get((23 - top) as usize).copied().unwrap_or(u64::MAX);
            if WIDE & (1 << top) != 0 {
                put(value >> 32);
            }
            put(value);
        }
        // Each undefined bit: a word of all-ones.
        words.for_each(|rest| rest.fill(0xff));
        Ok(len)
    }

    /// Each field's value in [`FIELDS`]' order, right-aligned in 64 bits;
    /// all-ones where not populated.
    #[inline(always)]
    fn values(&self) -> [u64; FIELDS.len()] {
        let ones = u64::MAX;
        let short = |v: Option<u32>| u64::from(v.unwrap_or(u32::MAX));
        let hop = u64::from(self.hop_limit.unwrap_or(0xff));
        let hop_node = match (self.hop_limit, self.node_id) {
            (None, None) => ones,
            (_, id) => (hop << 24) | u64::from(id.unwrap_or(0xff_ffff) & 0xff_ffff),
        };
        let interfaces = match (self.ingress_if, self.egress_if) {
            (None, None) => ones,
            (i, e) => (u64::from(i.unwrap_or(u16::MAX)) << 16) | u64::from(e.unwrap_or(u16::MAX)),
        };
        let hop_node_wide = match (self.hop_limit, self.node_id_wide) {
            (None, None) => ones,
            (_, id) => (hop << 56) | (id.unwrap_or(ones) & 0x00ff_ffff_ffff_ffff),
        };
        [
            hop_node,
            interfaces,
            short(self.timestamp_seconds),
            short(self.timestamp_fraction),
            short(self.transit_delay),
            short(self.namespace_data),
            short(self.queue_depth),
            short(self.checksum_complement),
            hop_node_wide,
            (u64::from(self.ingress_if_wide.unwrap_or(u32::MAX)) << 32)
                | u64::from(self.egress_if_wide.unwrap_or(u32::MAX)),
            self.namespace_data_wide.unwrap_or(ones),
            short(self.buffer_occupancy),
        ]
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

    /// Every combination of the defined bits (and undefined ones): the
    /// element is each set bit's own element in the bits' order, then a
    /// word of all-ones per undefined bit.
    #[test]
    fn every_combination_is_its_fields_in_order() {
        let partial =
            NodeData { hop_limit: Some(3), egress_if: Some(4), queue_depth: Some(5), ..Default::default() };
        for node in [every_field(), partial, NodeData::default()] {
            for defined in 0..1u32 << 12 {
                let trace_type = TraceType::from_bits_retain(defined << 12 | 0b101 << 2 | 1);
                let mut expected = Vec::new();
                for (bit, words) in FIELDS.into_iter().filter(|(bit, _)| trace_type.contains(*bit)) {
                    let mut own = [0u8; 8];
                    assert_eq!(node.emit(bit, &mut own), Ok(4 * words));
                    expected.extend_from_slice(&own[..4 * words]);
                }
                expected.extend([0xff; 8]);
                let mut out = [0xa5; 80];
                assert_eq!(node.emit(trace_type, &mut out), Ok(expected.len()));
                assert_eq!(out[..expected.len()], expected[..], "{trace_type:?}");
                assert!(out[expected.len()..].iter().all(|&b| b == 0xa5), "nothing past the element");
            }
        }
    }

    /// NodeLen leaves out the opaque state snapshot and the reserved bit.
    #[test]
    fn node_len_counts_words() {
        assert_eq!(TraceType::HOP_LIM_NODE_ID.node_len(), 1);
        assert_eq!((TraceType::HOP_LIM_NODE_ID_WIDE | TraceType::INTERFACES).node_len(), 3);
        assert_eq!((TraceType::OPAQUE_STATE | TraceType::RESERVED | TraceType::TRANSIT_DELAY).node_len(), 1);
    }
}
