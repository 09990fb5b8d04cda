//! INT 2.1 shim header for TCP/UDP (INT 2.1 section 5.7.2, "INT over
//! TCP/UDP").
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Type  |NPT|R|R|    Length     |  UDP port, IP Proto, or DSCP  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Length counts the 4-byte words after the shim (the INT header and the
//! metadata stack; since INT 2.0 the shim itself is not counted). Reserved
//! bits are written as zero and ignored on reception, as the text says.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;

/// INT Header type (INT 2.1 section 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeaderType {
    /// 1: INT-MD; transit hops push their metadata.
    #[default]
    Md,
    /// 2: destination; only the sink reads it.
    Destination,
    /// 3: INT-MX; every node reports, nothing is pushed.
    Mx,
}

impl HeaderType {
    pub(crate) fn from_bits(value: u8) -> Option<HeaderType> {
        match value {
            1 => Some(HeaderType::Md),
            2 => Some(HeaderType::Destination),
            3 => Some(HeaderType::Mx),
            _ => None,
        }
    }

    pub(crate) fn bits(self) -> u8 {
        match self {
            HeaderType::Md => 1,
            HeaderType::Destination => 2,
            HeaderType::Mx => 3,
        }
    }
}

/// What the shim's last 16 bits carry, by NPT (Next Protocol Type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Next {
    /// NPT 0: INT marked by DSCP, the original DSCP in the second byte's
    /// first 6 bits (0 when the source keeps none).
    Dscp(u8),
    /// NPT 1: INT between a UDP header and its payload; the original UDP
    /// destination port, which the sink restores.
    UdpPort(u16),
    /// NPT 2: a UDP header inserted before the original L4 header; the
    /// original IP protocol.
    IpProtocol(u8),
}

impl Default for Next {
    fn default() -> Self {
        Next::Dscp(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ShimHeader {
    /// Type (4) | NPT (2) | R R.
    pub type_npt: u8,
    /// Words after the shim.
    pub length: u8,
    pub field: [u8; 2],
}
const _: () = assert!(size_of::<ShimHeader>() == HEADER_LEN);

impl ShimHeader {
    /// The first 16-bit word (Type, NPT, Length), for checksum updates.
    #[inline]
    pub fn first_word(&self) -> u16 {
        u16::from_be_bytes([self.type_npt, self.length])
    }

    #[inline]
    pub fn len_bytes(&self) -> usize {
        HEADER_LEN + usize::from(self.length) * 4
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ShimRepr {
    pub header_type: HeaderType,
    pub next: Next,
    /// Words after the shim.
    pub length_words: u8,
}

impl ShimRepr {
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (shim, _) = ShimHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntShim, 0, HEADER_LEN, bytes.len()))?;
        let header_type = HeaderType::from_bits(shim.type_npt >> 4).ok_or(ParseError::UnknownType {
            layer: Layer::IntShim,
            offset: 0,
            value: shim.type_npt >> 4,
        })?;
        let [high, low] = shim.field;
        let next = match (shim.type_npt >> 2) & 0x3 {
            0 => Next::Dscp(low >> 2),
            1 => Next::UdpPort(u16::from_be_bytes([high, low])),
            2 => Next::IpProtocol(low),
            npt => return Err(ParseError::UnknownType { layer: Layer::IntShim, offset: 0, value: npt }),
        };
        Ok(ShimRepr { header_type, next, length_words: shim.length })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let (npt, field) = match self.next {
            Next::Dscp(dscp) => (0, [0, (dscp & 0x3f) << 2]),
            Next::UdpPort(port) => (1, port.to_be_bytes()),
            Next::IpProtocol(protocol) => (2, [0, protocol]),
        };
        let shim = ShimHeader {
            type_npt: (self.header_type.bits() << 4) | (npt << 2),
            length: self.length_words,
            field,
        };
        shim.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::IntShim, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT 2.1 section 6.1: INT-MD, NPT 0, Length 7, DSCP 0 kept.
    const MD_OVER_TCP: [u8; 4] = [0x10, 0x07, 0x00, 0x00];
    /// Section 6.2: INT-MX, NPT 0, Length 3.
    const MX_OVER_TCP: [u8; 4] = [0x30, 0x03, 0x00, 0x00];
    /// Section 6.3: INT-MD after a new UDP header, NPT 2, IP proto 6.
    const MD_BEFORE_TCP: [u8; 4] = [0x18, 0x07, 0x00, 0x06];
    /// Section 6.5: INT-MD between UDP header and payload, NPT 1; the
    /// example's port XYZ is 5001 here.
    const MD_IN_UDP: [u8; 4] = [0x14, 0x07, 0x13, 0x89];

    #[test]
    fn golden_shims_from_the_spec_examples() {
        for (bytes, expected) in [
            (MD_OVER_TCP, ShimRepr { header_type: HeaderType::Md, next: Next::Dscp(0), length_words: 7 }),
            (MX_OVER_TCP, ShimRepr { header_type: HeaderType::Mx, next: Next::Dscp(0), length_words: 3 }),
            (
                MD_BEFORE_TCP,
                ShimRepr { header_type: HeaderType::Md, next: Next::IpProtocol(6), length_words: 7 },
            ),
            (MD_IN_UDP, ShimRepr { header_type: HeaderType::Md, next: Next::UdpPort(5001), length_words: 7 }),
        ] {
            assert_eq!(ShimRepr::parse(&bytes), Ok(expected));
            let mut out = [0xa5; 4];
            assert_eq!(expected.emit(&mut out), Ok(4));
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn the_original_dscp_rides_in_the_last_byte() {
        let shim = ShimRepr { header_type: HeaderType::Md, next: Next::Dscp(0x2e), length_words: 3 };
        let mut out = [0; 4];
        shim.emit(&mut out).unwrap();
        assert_eq!(out, [0x10, 0x03, 0x00, 0xb8]);
        assert_eq!(ShimRepr::parse(&out), Ok(shim));
    }

    #[test]
    fn reserved_bits_are_ignored_unknown_types_refused() {
        // R bits and the reserved byte of NPT 0 set: read as if zero.
        assert_eq!(ShimRepr::parse(&[0x13, 0x07, 0xff, 0x03]).unwrap().next, Next::Dscp(0));
        for (bytes, value) in [([0x00, 3, 0, 0], 0), ([0x40, 3, 0, 0], 4), ([0x1c, 3, 0, 0], 3)] {
            assert_eq!(
                ShimRepr::parse(&bytes),
                Err(ParseError::UnknownType { layer: Layer::IntShim, offset: 0, value })
            );
        }
        assert!(matches!(ShimRepr::parse(&MD_OVER_TCP[..3]), Err(ParseError::Truncated { .. })));
    }
}
