//! INT 0.5 over TCP/UDP: the domain ([`Domain`]: where INT sits in a packet
//! and how it is announced), shim, metadata header, hop metadata stack,
//! Host-INT sequence number, tail, and [`IntBlock`], which parses and checks
//! them as one unit.
//!
//! The block as a source writes it (Host-INT's Type 3 shown):
//!
//! ```text
//! | shim (4) | metadata header (8) | stack: Total Hop Cnt x Ins Cnt x 4 |
//! | sequence number (4, Type 3 only) | tail (4) |
//! ```

pub mod fast_sink;
pub mod fast_source;
pub mod fast_transit;
pub mod hop;
pub mod instruction;
pub mod md_header;
pub mod shape;
pub mod shim;
pub mod sink;
pub mod source;
pub mod tail;
pub mod transit;

pub use hop::{HopMetadata, HopStack, INVALID};
pub use instruction::Instructions;
pub use md_header::{MetadataHeader, MetadataHeaderRepr};
pub use shape::{BlockFields, ShapeCache, SourceHop};
pub use shim::{ShimHeader, ShimRepr, ShimType};
pub use tail::{TailHeader, TailRepr};

use crate::bytes;
use crate::error::{EmitError, Layer, ParseError};
use crate::marking::{DscpMatch, TcpPlacement, DEFAULT_DSCP_MASK, DEFAULT_DSCP_VALUE};

/// Bytes of the sequence number that follows the stack in shim Type 3.
pub const SEQUENCE_LEN: usize = 4;
/// The largest INT block a shim Length can describe.
pub const MAX_BLOCK_LEN: usize = 255 * 4;
/// Host-INT's UDP port for INT_05_EXTENSION_UDP.
pub const DEFAULT_EXTENSION_PORT: u16 = 33122;
/// Bytes of the extra UDP header in INT_05_EXTENSION_UDP.
pub const EXTENSION_UDP_LEN: usize = 8;

/// What every source, transit hop and sink of one INT domain must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Domain {
    pub encapsulation: Encapsulation,
    pub tcp_placement: TcpPlacement,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encapsulation {
    /// INT_05_OVER_TCP_UDP: INT right after the L4 header, announced by DSCP
    /// bits: a packet carries INT when `(dscp & mask) == (value & mask)`.
    OverTcpUdp { dscp_value: u8, dscp_mask: u8 },
    /// INT_05_EXTENSION_UDP: a UDP header to `port` after IPv4, then INT,
    /// then the original L4 header and payload untouched.
    ExtensionUdp { port: u16 },
}

impl Default for Encapsulation {
    fn default() -> Self {
        Encapsulation::OverTcpUdp { dscp_value: DEFAULT_DSCP_VALUE, dscp_mask: DEFAULT_DSCP_MASK }
    }
}

impl Encapsulation {
    /// The DSCP mark of INT_05_OVER_TCP_UDP; none in INT_05_EXTENSION_UDP.
    #[inline]
    fn dscp(&self) -> Option<DscpMatch> {
        match *self {
            Encapsulation::OverTcpUdp { dscp_value, dscp_mask } => {
                Some(DscpMatch { value: dscp_value, mask: dscp_mask })
            }
            Encapsulation::ExtensionUdp { .. } => None,
        }
    }

    /// The ToS bits that mark INT ([`DscpMatch::tos_mask`]; none in the UDP
    /// encapsulation).
    #[inline]
    pub fn tos_mask(&self) -> u8 {
        self.dscp().map_or(0, DscpMatch::tos_mask)
    }

    /// [`DscpMatch::mark_tos`]; the UDP encapsulation leaves the ToS alone.
    #[inline]
    pub fn mark_tos(&self, tos: u8) -> u8 {
        self.dscp().map_or(tos, |dscp| dscp.mark_tos(tos))
    }

    /// Whether a ToS carries the INT mark (DSCP encapsulation only).
    #[inline]
    pub fn tos_is_marked(&self, tos: u8) -> bool {
        self.dscp().is_some_and(|dscp| dscp.tos_is_marked(tos))
    }
}

impl From<DscpMatch> for Encapsulation {
    /// INT_05_OVER_TCP_UDP, marked by this DSCP value and mask.
    fn from(dscp: DscpMatch) -> Encapsulation {
        Encapsulation::OverTcpUdp { dscp_value: dscp.value, dscp_mask: dscp.mask }
    }
}

/// Whether the block ends with a tail: data packets have one; the copy of the
/// block inside a Host-INT latency report does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    Present,
    Absent,
}

/// A parsed, checked INT block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntBlock<'a> {
    pub shim: ShimRepr,
    pub header: MetadataHeaderRepr,
    pub stack: HopStack<'a>,
    pub sequence: Option<u32>,
    pub tail: Option<TailRepr>,
}

impl<'a> IntBlock<'a> {
    /// Bytes before the stack: shim and metadata header.
    pub const STACK_OFFSET: usize = shim::HEADER_LEN + md_header::HEADER_LEN;

    /// The fixed part of a block (everything but the stack).
    pub fn fixed_len(shim_type: ShimType, tail: Tail) -> usize {
        Self::STACK_OFFSET
            + if shim_type.has_sequence() { SEQUENCE_LEN } else { 0 }
            + if tail == Tail::Present { tail::HEADER_LEN } else { 0 }
    }

    /// Parses the block at the front of `bytes` and checks it whole: a known
    /// shim Type, version 0, Ins Cnt equal to the bitmap's bit count, Total
    /// Hop Count at most Max Hop Count (one more in a report, where the sink
    /// always adds its hop), and a shim Length that is exactly the
    /// fixed part plus Ins Cnt x 4 x Total Hop Count. Offsets in errors
    /// count from the front of `bytes`.
    #[inline(always)]
    pub fn parse(bytes: &'a [u8], tail: Tail) -> Result<Self, ParseError> {
        let shim = ShimRepr::parse(bytes)?;
        if let ShimType::Unknown(value) = shim.int_type {
            return Err(ParseError::UnknownType { layer: Layer::IntShim, offset: 0, value });
        }
        let len = usize::from(shim.length_words) * 4;
        let fixed = Self::fixed_len(shim.int_type, tail);
        if len < fixed {
            return Err(ParseError::BadLength { layer: Layer::IntShim, offset: 2, value: len });
        }
        let block =
            bytes.get(..len).ok_or_else(|| ParseError::truncated(Layer::IntShim, 0, len, bytes.len()))?;
        let header_bytes = bytes::after(block, shim::HEADER_LEN, Layer::IntMetadataHeader, 8)?;
        let header = MetadataHeaderRepr::parse(header_bytes)
            .map_err(|_| ParseError::truncated(Layer::IntMetadataHeader, 4, 8, block.len()))?;
        if header.version != md_header::VERSION {
            return Err(ParseError::UnknownVersion {
                layer: Layer::IntMetadataHeader,
                offset: 4,
                value: header.version,
            });
        }
        let stack_bytes = len - fixed;
        let hop_len = usize::from(header.instruction_count) * 4;
        if header.instruction_count != header.instructions.count()
            || hop_len * usize::from(header.total_hop_cnt) != stack_bytes
        {
            return Err(ParseError::StackMismatch {
                offset: 4,
                ins_cnt: header.instruction_count,
                total_hop_cnt: header.total_hop_cnt,
                stack_bytes,
            });
        }
        // In a report (no tail) the sink has pushed its own hop, which it
        // does even on a full stack (see report::latency): one over Max.
        let allowed = match tail {
            Tail::Present => u16::from(header.max_hop_cnt),
            Tail::Absent => u16::from(header.max_hop_cnt) + 1,
        };
        if u16::from(header.total_hop_cnt) > allowed {
            return Err(ParseError::HopCountExceeded {
                offset: 4,
                total_hop_cnt: header.total_hop_cnt,
                max_hop_cnt: header.max_hop_cnt,
            });
        }
        let stack_end = Self::STACK_OFFSET + stack_bytes;
        let stack_bytes = block.get(Self::STACK_OFFSET..stack_end).ok_or_else(|| {
            ParseError::truncated(Layer::IntStack, Self::STACK_OFFSET, stack_bytes, block.len())
        })?;
        let stack = HopStack::new(header.instructions, stack_bytes);
        let mut offset = stack_end;
        let sequence = if shim.int_type.has_sequence() {
            let word = block
                .get(offset..)
                .and_then(<[u8]>::first_chunk::<SEQUENCE_LEN>)
                .ok_or_else(|| ParseError::truncated(Layer::IntSequence, offset, 4, block.len()))?;
            offset += SEQUENCE_LEN;
            Some(u32::from_be_bytes(*word))
        } else {
            None
        };
        let tail = match tail {
            Tail::Present => Some(
                TailRepr::parse(bytes::after(block, offset, Layer::IntTail, 4)?)
                    .map_err(|_| ParseError::truncated(Layer::IntTail, offset, 4, block.len()))?,
            ),
            Tail::Absent => None,
        };
        Ok(IntBlock { shim, header, stack, sequence, tail })
    }

    /// Length of the block in bytes (the shim Length).
    pub fn len(&self) -> usize {
        usize::from(self.shim.length_words) * 4
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes a whole block: shim (Length computed), `header` (Ins Cnt and Total
/// Hop Count taken from `instructions` and `hops`), the hops (most recent
/// first), the sequence number if the shim Type carries one, and the tail if
/// given. Returns the bytes written.
pub fn emit_block(
    buf: &mut [u8],
    shim_type: ShimType,
    header: &MetadataHeaderRepr,
    hops: &[HopMetadata],
    sequence: u32,
    tail: Option<&TailRepr>,
) -> Result<usize, EmitError> {
    let tail_presence = if tail.is_some() { Tail::Present } else { Tail::Absent };
    let hop_len = header.instructions.hop_len();
    let len = IntBlock::fixed_len(shim_type, tail_presence) + hop_len * hops.len();
    if len > MAX_BLOCK_LEN || hops.len() > usize::from(u8::MAX) {
        return Err(EmitError::Unrepresentable { layer: Layer::IntShim, value: len });
    }
    let available = buf.len();
    let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::IntShim, len, available))?;
    ShimRepr { int_type: shim_type, length_words: (len / 4) as u8 }.emit(out)?;
    let header = MetadataHeaderRepr {
        instruction_count: header.instructions.count(),
        total_hop_cnt: hops.len() as u8,
        ..*header
    };
    let mut offset = shim::HEADER_LEN;
    offset += header.emit(bytes::after_mut(out, offset, Layer::IntMetadataHeader, 8)?)?;
    for hop in hops {
        offset += hop.emit(header.instructions, bytes::after_mut(out, offset, Layer::IntStack, hop_len)?)?;
    }
    if shim_type.has_sequence() {
        if let Some(slot) = out.get_mut(offset..offset + SEQUENCE_LEN) {
            slot.copy_from_slice(&sequence.to_be_bytes());
        }
        offset += SEQUENCE_LEN;
    }
    if let Some(tail) = tail {
        offset += tail.emit(bytes::after_mut(out, offset, Layer::IntTail, 4)?)?;
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host-INT's source block (host-int-int05-format.md, "Combined INT
    /// header sequence sent in packets from source hosts"): 36 bytes.
    pub(crate) static HOST_INT_SOURCE_BLOCK: [u8; 36] = [
        0x03, 0x00, 0x09, 0x00, // shim: Type 3, Length 9
        0x00, 0x04, 0x02, 0x01, // Ver 0, Ins Cnt 4, Max Hop 2, Total Hop 1
        0xcc, 0x00, 0x00, 0x00, // bitmap 0xCC00
        0x0a, 0x00, 0x00, 0x01, // source node id
        0x00, 0x01, 0x00, 0x01, // ingress port 1, egress port 1
        0x5e, 0x00, 0x00, 0x01, // ingress timestamp
        0x5e, 0x00, 0x00, 0x01, // egress timestamp
        0x00, 0x00, 0x00, 0x01, // sequence number 1
        0x00, 0x00, 0x00, 0x00, // tail: Host-INT writes zeros in DSCP mode
    ];

    /// INT 0.5 section 4.2 (INT over TCP): shim Length 8, Ins Cnt 2 (switch
    /// id, queue occupancy), two hops, tail Proto 6, Port 22, DSCP 0.
    static SPEC_TCP_BLOCK: [u8; 32] = [
        0x01, 0x00, 0x08, 0x00, // shim: Type 1 (hop-by-hop), Length 8
        0x00, 0x02, 0x10, 0x02, // Ins Cnt 2, Max Hop 16, Total Hop 2
        0x90, 0x00, 0x00, 0x00, // bitmap: bits 0 and 3
        0x00, 0x00, 0x00, 0x02, // sw id of hop2
        0x00, 0x00, 0x00, 0x20, // queue occupancy of hop2
        0x00, 0x00, 0x00, 0x01, // sw id of hop1
        0x00, 0x00, 0x00, 0x10, // queue occupancy of hop1
        0x06, 0x00, 0x16, 0x00, // tail: Proto 6, Port 22, DSCP 0
    ];

    #[test]
    fn host_int_source_block_golden() {
        let block = IntBlock::parse(&HOST_INT_SOURCE_BLOCK, Tail::Present).unwrap();
        assert_eq!(block.len(), 36);
        assert_eq!(block.sequence, Some(1));
        let hops: Vec<_> = block.stack.hops().collect();
        assert_eq!(hops, vec![HopMetadata::host_int(0x0a00_0001, 1, 0x5e00_0001)]);
        let mut buf = vec![0xa5; 38];
        let header = MetadataHeaderRepr::new(Instructions::HOST_INT, 2, 0);
        let tail = TailRepr { protocol: 0, dst_port: 0, dscp: 0 };
        let written =
            emit_block(&mut buf, ShimType::HostIntSequence, &header, &hops, 1, Some(&tail)).unwrap();
        assert_eq!(written, 36);
        assert_eq!(&buf[..36], &HOST_INT_SOURCE_BLOCK);
        assert_eq!(&buf[36..], &[0xa5, 0xa5]);
    }

    #[test]
    fn spec_tcp_block_golden() {
        let block = IntBlock::parse(&SPEC_TCP_BLOCK, Tail::Present).unwrap();
        assert_eq!(block.shim.int_type, ShimType::HopByHop);
        assert_eq!(block.header.total_hop_cnt, 2);
        assert_eq!(block.tail, Some(TailRepr { protocol: 6, dst_port: 22, dscp: 0 }));
        let hops: Vec<_> = block.stack.hops().collect();
        assert_eq!(hops[0].switch_id, Some(2));
        assert_eq!(hops[0].queue_occupancy, Some(0x20));
        assert_eq!(hops[1].switch_id, Some(1));
        let mut buf = vec![0xa5; 32];
        emit_block(&mut buf, ShimType::HopByHop, &block.header, &hops, 0, block.tail.as_ref()).unwrap();
        assert_eq!(buf, SPEC_TCP_BLOCK);
    }

    #[test]
    fn every_truncation_rejected() {
        for len in 0..HOST_INT_SOURCE_BLOCK.len() {
            assert!(IntBlock::parse(&HOST_INT_SOURCE_BLOCK[..len], Tail::Present).is_err(), "len {len}");
        }
        for len in 0..SPEC_TCP_BLOCK.len() {
            assert!(IntBlock::parse(&SPEC_TCP_BLOCK[..len], Tail::Present).is_err(), "len {len}");
        }
    }

    #[test]
    fn lies_are_refused() {
        let mut bad_type = HOST_INT_SOURCE_BLOCK;
        bad_type[0] = 9;
        assert!(matches!(
            IntBlock::parse(&bad_type, Tail::Present),
            Err(ParseError::UnknownType { layer: Layer::IntShim, value: 9, .. })
        ));
        let mut bad_version = HOST_INT_SOURCE_BLOCK;
        bad_version[4] = 0x10;
        assert!(matches!(
            IntBlock::parse(&bad_version, Tail::Present),
            Err(ParseError::UnknownVersion { value: 1, .. })
        ));
        let mut long_shim = HOST_INT_SOURCE_BLOCK;
        long_shim[2] = 10;
        assert!(matches!(IntBlock::parse(&long_shim, Tail::Present), Err(ParseError::Truncated { .. })));
        let mut short_shim = HOST_INT_SOURCE_BLOCK;
        short_shim[2] = 3;
        assert!(matches!(IntBlock::parse(&short_shim, Tail::Present), Err(ParseError::BadLength { .. })));
        let mut ins_cnt = HOST_INT_SOURCE_BLOCK;
        ins_cnt[5] = 3;
        assert!(matches!(IntBlock::parse(&ins_cnt, Tail::Present), Err(ParseError::StackMismatch { .. })));
        let mut hops = HOST_INT_SOURCE_BLOCK;
        hops[7] = 2;
        assert!(matches!(IntBlock::parse(&hops, Tail::Present), Err(ParseError::StackMismatch { .. })));
        let mut over = SPEC_TCP_BLOCK;
        over[6] = 1; // Max Hop 1 < Total Hop 2
        assert!(matches!(IntBlock::parse(&over, Tail::Present), Err(ParseError::HopCountExceeded { .. })));
        // In a report (no tail) the sink's hop may go one over Max Hop Count.
        let report = &SPEC_TCP_BLOCK[..28];
        let mut one_over = report.to_vec();
        one_over[2] = 7;
        one_over[6] = 1;
        assert!(IntBlock::parse(&one_over, Tail::Absent).is_ok());
        one_over[6] = 0;
        assert!(matches!(IntBlock::parse(&one_over, Tail::Absent), Err(ParseError::HopCountExceeded { .. })));
    }

    #[test]
    fn host_int_default_mark_is_tos_bit_0x04() {
        let encap = Encapsulation::default();
        assert_eq!(encap.tos_mask(), 0x04);
        assert_eq!(encap.mark_tos(0x00), 0x04);
        assert_eq!(encap.mark_tos(0xb8), 0xbc); // EF keeps its other bits
        assert!(encap.tos_is_marked(0x07));
        assert!(!encap.tos_is_marked(0x03));
    }

    #[test]
    fn a_dscp_match_marks_as_its_encapsulation_does() {
        let wide = DscpMatch { value: 0x17, mask: 0x3f };
        for tos in 0..=u8::MAX {
            assert_eq!(wide.mark_tos(tos), Encapsulation::from(wide).mark_tos(tos));
            assert_eq!(wide.tos_is_marked(tos), Encapsulation::from(wide).tos_is_marked(tos));
        }
    }

    #[test]
    fn value_outside_mask_is_ignored() {
        let encap = Encapsulation::OverTcpUdp { dscp_value: 0x17, dscp_mask: 0x3f };
        assert_eq!(encap.mark_tos(0x01), 0x5d);
        assert!(encap.tos_is_marked(0x5e));
        assert!(!Encapsulation::ExtensionUdp { port: 1 }.tos_is_marked(0xff));
    }
}
