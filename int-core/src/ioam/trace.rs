//! The IOAM Pre-allocated and Incremental Trace Option-Types (RFC 9197
//! section 4.4; the last draft, ippm-ioam-data-17 section 5.4): an 8-byte
//! header, then the node data list, each node's element NodeLen words long,
//! the newest first.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Namespace-ID           |NodeLen  | Flags | RemainingLen|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |               IOAM-Trace-Type                 |  Reserved     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! In the pre-allocated form the whole data space travels from the start;
//! a node writes its element at word `RemainingLen - NodeLen` of it and
//! lowers RemainingLen by NodeLen, or, without room, sets the Overflow
//! flag and writes nothing.

use bitflags::bitflags;
use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 8;

/// Flags: Overflow, the most significant of the four.
pub const FLAG_OVERFLOW: u8 = 0b1000;

bitflags! {
    /// IOAM-Trace-Type, 24 bits; bit 0 is the most significant. The data
    /// fields of a node's element follow the bits' order. Undefined bits
    /// (12-21) are kept: each asks for a word a node fills with all-ones.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct TraceType: u32 {
        /// bit 0: Hop_Lim and node_id, short (1 + 3 bytes).
        const HOP_LIM_NODE_ID = 1 << 23;
        /// bit 1: ingress_if_id and egress_if_id, short (2 + 2 bytes).
        const INTERFACES = 1 << 22;
        /// bit 2: timestamp seconds.
        const TIMESTAMP_SECONDS = 1 << 21;
        /// bit 3: timestamp fraction.
        const TIMESTAMP_FRACTION = 1 << 20;
        /// bit 4: transit delay (ns; the top bit marks an overflow).
        const TRANSIT_DELAY = 1 << 19;
        /// bit 5: namespace specific data, short.
        const NAMESPACE_DATA = 1 << 18;
        /// bit 6: queue depth.
        const QUEUE_DEPTH = 1 << 17;
        /// bit 7: checksum complement.
        const CHECKSUM_COMPLEMENT = 1 << 16;
        /// bit 8: Hop_Lim and node_id, wide (1 + 7 bytes).
        const HOP_LIM_NODE_ID_WIDE = 1 << 15;
        /// bit 9: ingress_if_id and egress_if_id, wide (4 + 4 bytes).
        const INTERFACES_WIDE = 1 << 14;
        /// bit 10: namespace specific data, wide (8 bytes).
        const NAMESPACE_DATA_WIDE = 1 << 13;
        /// bit 11: buffer occupancy.
        const BUFFER_OCCUPANCY = 1 << 12;
        /// bit 22: the variable-length Opaque State Snapshot.
        const OPAQUE_STATE = 1 << 1;
        /// bit 23: reserved, zero on transmission, ignored on receipt.
        const RESERVED = 1;
        const _ = 0xff_ffff;
    }
}

/// Bits 12-21: undefined, a word each.
const UNDEFINED: u32 = 0x3ff << 2;
/// The fields eight bytes long.
const WIDE: u32 = (1 << 15) | (1 << 14) | (1 << 13);

impl TraceType {
    /// The 4-octet words each node adds for these bits: NodeLen (the
    /// opaque state snapshot aside, which NodeLen does not count).
    pub fn node_len(self) -> usize {
        let fields = self.bits() & !(TraceType::OPAQUE_STATE.bits() | TraceType::RESERVED.bits());
        (fields.count_ones() + (fields & WIDE).count_ones()) as usize
    }

    /// The undefined bits set.
    pub fn undefined(self) -> u32 {
        self.bits() & UNDEFINED
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TraceHeader {
    pub namespace: U16,
    /// NodeLen (5) | Flags (4) | RemainingLen (7).
    pub lengths: U16,
    pub trace_type: [u8; 3],
    pub reserved: u8,
}
const _: () = assert!(size_of::<TraceHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TraceHeaderRepr {
    pub namespace: u16,
    /// Words per node element (5 bits).
    pub node_len: u8,
    /// The four flag bits; [`FLAG_OVERFLOW`] the first.
    pub flags: u8,
    /// Words of data space still free (7 bits).
    pub remaining_len: u8,
    pub trace_type: TraceType,
}

impl TraceHeaderRepr {
    /// The header's fields as carried. Whether they agree with each other
    /// and with the option is [`TraceHeaderRepr::check`]'s question.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = TraceHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IoamTrace, 0, HEADER_LEN, bytes.len()))?;
        let lengths = header.lengths.get();
        let [a, b, c] = header.trace_type;
        Ok(TraceHeaderRepr {
            namespace: header.namespace.get(),
            node_len: (lengths >> 11) as u8,
            flags: ((lengths >> 7) & 0x0f) as u8,
            remaining_len: (lengths & 0x7f) as u8,
            trace_type: TraceType::from_bits_retain(u32::from_be_bytes([0, a, b, c])),
        })
    }

    /// Refuses a header that contradicts itself or its `data_len` bytes
    /// of data space: NodeLen 0 or not what the trace type asks for, a
    /// RemainingLen past the data space, a data space not a whole number
    /// of words.
    pub fn check(&self, data_len: usize) -> Result<(), ParseError> {
        let bad = |offset: usize, value: usize| {
            Err(ParseError::BadLength { layer: Layer::IoamTrace, offset, value })
        };
        if self.node_len == 0 || usize::from(self.node_len) != self.trace_type.node_len() {
            return bad(2, usize::from(self.node_len));
        }
        if !data_len.is_multiple_of(4) {
            return bad(HEADER_LEN, data_len);
        }
        if usize::from(self.remaining_len) * 4 > data_len {
            return bad(3, usize::from(self.remaining_len));
        }
        Ok(())
    }

    pub fn overflow(&self) -> bool {
        self.flags & FLAG_OVERFLOW != 0
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let [_, a, b, c] = self.trace_type.bits().to_be_bytes();
        let lengths = (u16::from(self.node_len & 0x1f) << 11)
            | (u16::from(self.flags & 0x0f) << 7)
            | u16::from(self.remaining_len & 0x7f);
        let header = TraceHeader {
            namespace: U16::new(self.namespace),
            lengths: U16::new(lengths),
            trace_type: [a, b, c],
            reserved: 0,
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::IoamTrace, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue's kernel example: namespace 123, NodeLen 1, RemainingLen
    /// 2, trace type 0x800000.
    const HEADER: [u8; 8] = [0x00, 0x7b, 0x08, 0x02, 0x80, 0x00, 0x00, 0x00];

    #[test]
    fn golden_header_round_trips() {
        let repr = TraceHeaderRepr {
            namespace: 123,
            node_len: 1,
            flags: 0,
            remaining_len: 2,
            trace_type: TraceType::HOP_LIM_NODE_ID,
        };
        assert_eq!(TraceHeaderRepr::parse(&HEADER), Ok(repr));
        let mut out = [0xa5; 8];
        assert_eq!(repr.emit(&mut out), Ok(8));
        assert_eq!(out, HEADER);
        assert_eq!(repr.check(8), Ok(()));
        let overflowed = TraceHeaderRepr { flags: FLAG_OVERFLOW, ..repr };
        overflowed.emit(&mut out).unwrap();
        assert_eq!(out[2..4], [0x0c, 0x02]);
        assert!(TraceHeaderRepr::parse(&out).unwrap().overflow());
    }

    #[test]
    fn truncated_at_every_length() {
        for cut in 0..HEADER_LEN {
            assert!(TraceHeaderRepr::parse(&HEADER[..cut]).is_err());
        }
    }
}
