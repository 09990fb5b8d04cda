//! INT 2.1 INT-MD metadata header (INT 2.1 section 5.8).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver=2  |D|E|M|      Reserved           |  Hop ML |RemainingHopCnt|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Instruction Bitmap       |      Domain Specific ID       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        DS Instruction         |           DS Flags            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::instruction::Instructions;
use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 12;
/// The version INT 2.0 and 2.1 write.
pub const VERSION: u8 = 2;
/// Hop ML is 5 bits.
pub const MAX_HOP_ML: u8 = 31;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MdHeader {
    /// Ver (4) | D | E | M | Reserved.
    pub ver_flags: u8,
    pub reserved: u8,
    /// Reserved (3) | Hop ML (5).
    pub hop_ml: u8,
    pub remaining_hop_cnt: u8,
    pub instructions: U16,
    pub domain_id: U16,
    pub ds_instructions: U16,
    pub ds_flags: U16,
}
const _: () = assert!(size_of::<MdHeader>() == HEADER_LEN);

impl MdHeader {
    #[inline]
    pub fn version(&self) -> u8 {
        self.ver_flags >> 4
    }

    #[inline]
    pub fn hop_ml(&self) -> u8 {
        self.hop_ml & 0x1f
    }

    /// The first 16-bit word (Ver, D, E, M, reserved), for checksum updates.
    #[inline]
    pub fn word0(&self) -> u16 {
        u16::from_be_bytes([self.ver_flags, self.reserved])
    }

    /// The second 16-bit word (Hop ML, Remaining Hop Count).
    #[inline]
    pub fn word1(&self) -> u16 {
        u16::from_be_bytes([self.hop_ml, self.remaining_hop_cnt])
    }

    #[inline]
    pub fn set_max_hop_exceeded(&mut self) {
        self.ver_flags |= 0x04;
    }

    #[inline]
    pub fn set_mtu_exceeded(&mut self) {
        self.ver_flags |= 0x02;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MdHeaderRepr {
    /// D: the sink discards the packet after reporting it.
    pub discard: bool,
    /// E: a node could not push because Remaining Hop Count was 0.
    pub max_hop_exceeded: bool,
    /// M: a node could not push without exceeding its egress MTU.
    pub mtu_exceeded: bool,
    /// Per-hop metadata length in words (source-only metadata excluded).
    pub hop_ml: u8,
    pub remaining_hop_cnt: u8,
    pub instructions: Instructions,
    pub domain_id: u16,
    pub ds_instructions: u16,
    pub ds_flags: u16,
}

impl MdHeaderRepr {
    /// Parses the fields; reserved bits are ignored (INT 2.1 section 5.8).
    /// The version must be 2.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = MdHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntMetadataHeader, 0, HEADER_LEN, bytes.len()))?;
        if header.version() != VERSION {
            return Err(ParseError::UnknownVersion {
                layer: Layer::IntMetadataHeader,
                offset: 0,
                value: header.version(),
            });
        }
        Ok(MdHeaderRepr {
            discard: header.ver_flags & 0x08 != 0,
            max_hop_exceeded: header.ver_flags & 0x04 != 0,
            mtu_exceeded: header.ver_flags & 0x02 != 0,
            hop_ml: header.hop_ml(),
            remaining_hop_cnt: header.remaining_hop_cnt,
            instructions: Instructions::from_bits_retain(header.instructions.get()),
            domain_id: header.domain_id.get(),
            ds_instructions: header.ds_instructions.get(),
            ds_flags: header.ds_flags.get(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.hop_ml > MAX_HOP_ML {
            return Err(EmitError::Unrepresentable {
                layer: Layer::IntMetadataHeader,
                value: usize::from(self.hop_ml),
            });
        }
        let header = MdHeader {
            ver_flags: (VERSION << 4)
                | (u8::from(self.discard) << 3)
                | (u8::from(self.max_hop_exceeded) << 2)
                | (u8::from(self.mtu_exceeded) << 1),
            reserved: 0,
            hop_ml: self.hop_ml,
            remaining_hop_cnt: self.remaining_hop_cnt,
            instructions: U16::new(self.instructions.bits()),
            domain_id: U16::new(self.domain_id),
            ds_instructions: U16::new(self.ds_instructions),
            ds_flags: U16::new(self.ds_flags),
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::IntMetadataHeader, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT 2.1 section 6.1 (and 6.3, 6.5): Ver 2, Hop ML 2, Remaining Hop
    /// Count 6 (8, less two pushes), bitmap 0x9000, domain 0.
    const SPEC_MD_HEADER: [u8; 12] = [0x20, 0x00, 0x02, 0x06, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];

    #[test]
    fn golden_header_from_the_spec_examples() {
        let expected = MdHeaderRepr {
            hop_ml: 2,
            remaining_hop_cnt: 6,
            instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
            ..MdHeaderRepr::default()
        };
        assert_eq!(MdHeaderRepr::parse(&SPEC_MD_HEADER), Ok(expected));
        let mut out = [0xa5; 12];
        assert_eq!(expected.emit(&mut out), Ok(12));
        assert_eq!(out, SPEC_MD_HEADER);
    }

    #[test]
    fn flags_and_domain_fields() {
        let repr = MdHeaderRepr {
            discard: true,
            max_hop_exceeded: true,
            mtu_exceeded: true,
            hop_ml: 31,
            remaining_hop_cnt: 0,
            instructions: Instructions::from_bits_retain(0xffff),
            domain_id: 0x1234,
            ds_instructions: 0x8001,
            ds_flags: 0x00ff,
        };
        let mut out = [0; 12];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, [0x2e, 0x00, 0x1f, 0x00, 0xff, 0xff, 0x12, 0x34, 0x80, 0x01, 0x00, 0xff]);
        assert_eq!(MdHeaderRepr::parse(&out), Ok(repr));
        assert_eq!(
            MdHeaderRepr { hop_ml: 32, ..repr }.emit(&mut out),
            Err(EmitError::Unrepresentable { layer: Layer::IntMetadataHeader, value: 32 })
        );
    }

    #[test]
    fn reserved_bits_are_ignored_other_versions_refused() {
        let mut bytes = SPEC_MD_HEADER;
        bytes[0] |= 0x01;
        bytes[1] = 0xff;
        bytes[2] |= 0xe0;
        assert_eq!(MdHeaderRepr::parse(&bytes).unwrap().hop_ml, 2);
        bytes[0] = 0x00;
        assert_eq!(
            MdHeaderRepr::parse(&bytes),
            Err(ParseError::UnknownVersion { layer: Layer::IntMetadataHeader, offset: 0, value: 0 })
        );
        assert!(matches!(MdHeaderRepr::parse(&SPEC_MD_HEADER[..11]), Err(ParseError::Truncated { .. })));
    }
}
