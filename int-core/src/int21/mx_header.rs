//! INT 2.1 INT-MX header (INT 2.1 section 5.9): the instructions every node
//! answers in a telemetry report of its own; nothing is pushed.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver=2  |D|                     Reserved                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Instruction Bitmap       |      Domain Specific ID       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        DS Instruction         |           DS Flags            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Optional Domain Specific 'Source-Inserted' Metadata          |
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::instruction::Instructions;
use super::md_header::VERSION;
use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MxHeader {
    /// Ver (4) | D | Reserved (3).
    pub ver_d: u8,
    pub reserved: [u8; 3],
    pub instructions: U16,
    pub domain_id: U16,
    pub ds_instructions: U16,
    pub ds_flags: U16,
}
const _: () = assert!(size_of::<MxHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MxHeaderRepr {
    /// D: the sink discards the packet after reporting it.
    pub discard: bool,
    pub instructions: Instructions,
    pub domain_id: u16,
    pub ds_instructions: u16,
    pub ds_flags: u16,
}

impl MxHeaderRepr {
    /// Parses the fields; reserved bits are ignored. The version must be 2.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = MxHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntMxHeader, 0, HEADER_LEN, bytes.len()))?;
        if header.ver_d >> 4 != VERSION {
            return Err(ParseError::UnknownVersion {
                layer: Layer::IntMxHeader,
                offset: 0,
                value: header.ver_d >> 4,
            });
        }
        Ok(MxHeaderRepr {
            discard: header.ver_d & 0x08 != 0,
            instructions: Instructions::from_bits_retain(header.instructions.get()),
            domain_id: header.domain_id.get(),
            ds_instructions: header.ds_instructions.get(),
            ds_flags: header.ds_flags.get(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let header = MxHeader {
            ver_d: (VERSION << 4) | (u8::from(self.discard) << 3),
            reserved: [0; 3],
            instructions: U16::new(self.instructions.bits()),
            domain_id: U16::new(self.domain_id),
            ds_instructions: U16::new(self.ds_instructions),
            ds_flags: U16::new(self.ds_flags),
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::IntMxHeader, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT 2.1 section 6.2: Ver 2, D 0, bitmap 0x9000, domain 0.
    const SPEC_MX_HEADER: [u8; 12] = [0x20, 0, 0, 0, 0x90, 0x00, 0, 0, 0, 0, 0, 0];

    #[test]
    fn golden_header_from_the_spec_example() {
        let expected = MxHeaderRepr {
            instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
            ..MxHeaderRepr::default()
        };
        assert_eq!(MxHeaderRepr::parse(&SPEC_MX_HEADER), Ok(expected));
        let mut out = [0xa5; 12];
        assert_eq!(expected.emit(&mut out), Ok(12));
        assert_eq!(out, SPEC_MX_HEADER);
    }

    #[test]
    fn discard_reserved_and_version() {
        let repr = MxHeaderRepr {
            discard: true,
            domain_id: 7,
            ds_instructions: 0x8000,
            ds_flags: 1,
            ..MxHeaderRepr::default()
        };
        let mut out = [0; 12];
        repr.emit(&mut out).unwrap();
        assert_eq!(out[0], 0x28);
        assert_eq!(MxHeaderRepr::parse(&out), Ok(repr));
        out[1] = 0xff;
        assert_eq!(MxHeaderRepr::parse(&out), Ok(repr), "reserved bits ignored");
        out[0] = 0x18;
        assert!(matches!(MxHeaderRepr::parse(&out), Err(ParseError::UnknownVersion { value: 1, .. })));
        assert!(matches!(MxHeaderRepr::parse(&out[..4]), Err(ParseError::Truncated { .. })));
    }
}
