//! VXLAN-GPE header (draft-ietf-nvo3-vxlan-gpe, as INT 2.1 section 5.7.3
//! uses it), UDP port 4790.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |R|R|Ver|I|P|B|O|           Reserved            | Next Protocol |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                VXLAN Network Identifier (VNI) |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const UDP_PORT: u16 = 4790;
pub const HEADER_LEN: usize = 8;
/// Next Protocol values (INT's is not yet assigned: INT 2.1 proposes it).
pub const NEXT_IPV4: u8 = 0x01;
pub const NEXT_IPV6: u8 = 0x02;
pub const NEXT_ETHERNET: u8 = 0x03;
pub const NEXT_NSH: u8 = 0x04;
pub const NEXT_INT: u8 = 0x82;
/// Flag bits of the first byte.
pub const FLAG_I: u8 = 0x08;
pub const FLAG_P: u8 = 0x04;
pub const FLAG_B: u8 = 0x02;
pub const FLAG_O: u8 = 0x01;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct VxlanGpeHeader {
    pub flags: u8,
    pub reserved: [u8; 2],
    pub next_protocol: u8,
    /// VNI (24) and a reserved byte.
    pub vni_reserved: U32,
}
const _: () = assert!(size_of::<VxlanGpeHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VxlanGpeRepr {
    /// I, B and O as they are (P is always set: the header is GPE's).
    pub flags: u8,
    pub next_protocol: u8,
    pub vni: u32,
}

impl VxlanGpeRepr {
    /// Refuses a version other than 0 and a header without P (plain VXLAN,
    /// whose payload is Ethernet with no Next Protocol).
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = VxlanGpeHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::VxlanGpe, 0, HEADER_LEN, bytes.len()))?;
        let version = (header.flags >> 4) & 0x03;
        if version != 0 {
            return Err(ParseError::UnknownVersion { layer: Layer::VxlanGpe, offset: 0, value: version });
        }
        if header.flags & FLAG_P == 0 {
            return Err(ParseError::UnknownType { layer: Layer::VxlanGpe, offset: 0, value: header.flags });
        }
        Ok(VxlanGpeRepr {
            flags: header.flags & (FLAG_I | FLAG_B | FLAG_O),
            next_protocol: header.next_protocol,
            vni: header.vni_reserved.get() >> 8,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.vni > 0x00ff_ffff {
            return Err(EmitError::Unrepresentable { layer: Layer::VxlanGpe, value: self.vni as usize });
        }
        let header = VxlanGpeHeader {
            flags: (self.flags & (FLAG_I | FLAG_B | FLAG_O)) | FLAG_P,
            reserved: [0; 2],
            next_protocol: self.next_protocol,
            vni_reserved: U32::new(self.vni << 8),
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::VxlanGpe, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let repr = VxlanGpeRepr { flags: FLAG_I, next_protocol: NEXT_INT, vni: 0x00ab_cdef };
        let mut out = [0u8; HEADER_LEN];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, [0x0c, 0, 0, 0x82, 0xab, 0xcd, 0xef, 0]);
        assert_eq!(VxlanGpeRepr::parse(&out), Ok(repr));
        for cut in 0..HEADER_LEN {
            assert!(matches!(VxlanGpeRepr::parse(&out[..cut]), Err(ParseError::Truncated { .. })));
        }
        let plain_vxlan = [0x08, 0, 0, 0, 0xab, 0xcd, 0xef, 0];
        assert!(matches!(VxlanGpeRepr::parse(&plain_vxlan), Err(ParseError::UnknownType { .. })));
        let version_1 = [0x1c, 0, 0, 0x82, 0, 0, 1, 0];
        assert!(matches!(VxlanGpeRepr::parse(&version_1), Err(ParseError::UnknownVersion { .. })));
        assert!(VxlanGpeRepr { vni: 1 << 24, ..repr }.emit(&mut out).is_err());
    }
}
