//! INT metadata header (INT 0.5 section 3.3).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Ver  |Rep|C|E|R R R| Ins Cnt |  Max Hop Cnt  | Total Hop Cnt |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Instruction Bitmap       |            Reserved           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::instruction::Instructions;
use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 8;
/// The only version INT 0.5 (and Host-INT) defines.
pub const VERSION: u8 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MetadataHeader {
    /// Ver (4) | Rep (2) | C | E.
    pub ver_rep_c_e: u8,
    /// Reserved (3) | Ins Cnt (5).
    pub ins_cnt: u8,
    pub max_hop_cnt: u8,
    pub total_hop_cnt: u8,
    pub instructions: U16,
    pub reserved: U16,
}
const _: () = assert!(size_of::<MetadataHeader>() == HEADER_LEN);

impl MetadataHeader {
    #[inline]
    pub fn version(&self) -> u8 {
        self.ver_rep_c_e >> 4
    }

    #[inline]
    pub fn replication(&self) -> u8 {
        (self.ver_rep_c_e >> 2) & 0x3
    }

    #[inline]
    pub fn copy(&self) -> bool {
        self.ver_rep_c_e & 0x2 != 0
    }

    #[inline]
    pub fn max_hop_exceeded(&self) -> bool {
        self.ver_rep_c_e & 0x1 != 0
    }

    #[inline]
    pub fn set_max_hop_exceeded(&mut self) {
        self.ver_rep_c_e |= 0x1;
    }

    #[inline]
    pub fn instruction_count(&self) -> u8 {
        self.ins_cnt & 0x1f
    }

    #[inline]
    pub fn instructions(&self) -> Instructions {
        Instructions::from_bits_retain(self.instructions.get())
    }

    /// The first 16-bit word (Ver..Ins Cnt), for checksum updates.
    #[inline]
    pub fn word0(&self) -> u16 {
        u16::from_be_bytes([self.ver_rep_c_e, self.ins_cnt])
    }

    /// The second 16-bit word (Max Hop Cnt, Total Hop Cnt).
    #[inline]
    pub fn word1(&self) -> u16 {
        u16::from_be_bytes([self.max_hop_cnt, self.total_hop_cnt])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MetadataHeaderRepr {
    pub version: u8,
    pub replication: u8,
    pub copy: bool,
    pub max_hop_exceeded: bool,
    pub instruction_count: u8,
    pub max_hop_cnt: u8,
    pub total_hop_cnt: u8,
    pub instructions: Instructions,
}

impl MetadataHeaderRepr {
    /// A source's header: version 0, no replication, Ins Cnt from the bitmap.
    pub fn new(instructions: Instructions, max_hop_cnt: u8, total_hop_cnt: u8) -> Self {
        MetadataHeaderRepr {
            version: VERSION,
            replication: 0,
            copy: false,
            max_hop_exceeded: false,
            instruction_count: instructions.count(),
            max_hop_cnt,
            total_hop_cnt,
            instructions,
        }
    }

    /// Parses the fields as they are; [`crate::int05::IntBlock::parse`]
    /// checks them against each other and the stack.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = MetadataHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntMetadataHeader, 0, HEADER_LEN, bytes.len()))?;
        Ok(MetadataHeaderRepr {
            version: header.version(),
            replication: header.replication(),
            copy: header.copy(),
            max_hop_exceeded: header.max_hop_exceeded(),
            instruction_count: header.instruction_count(),
            max_hop_cnt: header.max_hop_cnt,
            total_hop_cnt: header.total_hop_cnt,
            instructions: header.instructions(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let header = MetadataHeader {
            ver_rep_c_e: (self.version << 4)
                | ((self.replication & 0x3) << 2)
                | (u8::from(self.copy) << 1)
                | u8::from(self.max_hop_exceeded),
            ins_cnt: self.instruction_count & 0x1f,
            max_hop_cnt: self.max_hop_cnt,
            total_hop_cnt: self.total_hop_cnt,
            instructions: U16::new(self.instructions.bits()),
            reserved: U16::new(0),
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

    /// Host-INT's source header: Ins Cnt 4, Max Hop 2, Total Hop 1, 0xCC00.
    static HOST_INT_SOURCE: [u8; 8] = [0x00, 0x04, 0x02, 0x01, 0xcc, 0x00, 0x00, 0x00];
    /// INT 0.5 section 4.2: Ins Cnt 2, Max Hop 16, Total Hop 2, 0x9000.
    static SPEC_TCP_EXAMPLE: [u8; 8] = [0x00, 0x02, 0x10, 0x02, 0x90, 0x00, 0x00, 0x00];

    #[test]
    fn golden_headers() {
        let host = MetadataHeaderRepr::new(Instructions::HOST_INT, 2, 1);
        let spec = MetadataHeaderRepr::new(Instructions::from_bits_retain(0x9000), 16, 2);
        for (bytes, repr) in [(HOST_INT_SOURCE, host), (SPEC_TCP_EXAMPLE, spec)] {
            assert_eq!(MetadataHeaderRepr::parse(&bytes).unwrap(), repr);
            let mut buf = vec![0xa5; 10];
            assert_eq!(repr.emit(&mut buf).unwrap(), 8);
            assert_eq!(&buf[..8], &bytes);
            assert_eq!(&buf[8..], &[0xa5, 0xa5]);
        }
    }

    #[test]
    fn flag_bits() {
        let repr = MetadataHeaderRepr::parse(&[0x1f, 0xe4, 2, 2, 0xcc, 0, 0, 0]).unwrap();
        assert_eq!(repr.version, 1);
        assert_eq!(repr.replication, 3);
        assert!(repr.copy && repr.max_hop_exceeded);
        assert_eq!(repr.instruction_count, 4, "reserved bits above Ins Cnt ignored");
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..8 {
            assert!(MetadataHeaderRepr::parse(&HOST_INT_SOURCE[..len]).is_err());
            assert!(MetadataHeaderRepr::new(Instructions::HOST_INT, 2, 1).emit(&mut vec![0; len]).is_err());
        }
    }
}
