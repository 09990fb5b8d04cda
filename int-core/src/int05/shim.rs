//! INT shim header for TCP/UDP (INT 0.5 section 3.2.1; Type 3 from Host-INT's
//! "Host INT extensions to INT version 0.5").
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Type     |    Reserved   |     Length    |    Reserved   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Length counts 4-byte words from the shim to the tail inclusive.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ShimType {
    /// 1: hop-by-hop; transit hops push their metadata.
    #[default]
    HopByHop,
    /// 2: destination; only the sink reads it.
    Destination,
    /// 3: Host-INT: hop-by-hop with a flow sequence number after the stack.
    HostIntSequence,
    Unknown(u8),
}

impl From<u8> for ShimType {
    fn from(value: u8) -> Self {
        match value {
            1 => ShimType::HopByHop,
            2 => ShimType::Destination,
            3 => ShimType::HostIntSequence,
            other => ShimType::Unknown(other),
        }
    }
}

impl From<ShimType> for u8 {
    fn from(value: ShimType) -> Self {
        match value {
            ShimType::HopByHop => 1,
            ShimType::Destination => 2,
            ShimType::HostIntSequence => 3,
            ShimType::Unknown(other) => other,
        }
    }
}

impl ShimType {
    /// Whether a 4-byte sequence number follows the metadata stack.
    #[inline]
    pub fn has_sequence(self) -> bool {
        self == ShimType::HostIntSequence
    }

    /// Whether a transit hop pushes its metadata.
    #[inline]
    pub fn is_hop_by_hop(self) -> bool {
        matches!(self, ShimType::HopByHop | ShimType::HostIntSequence)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ShimHeader {
    pub int_type: u8,
    pub reserved0: u8,
    /// 4-byte words, shim to tail inclusive.
    pub length: u8,
    pub reserved1: u8,
}
const _: () = assert!(size_of::<ShimHeader>() == HEADER_LEN);

impl ShimHeader {
    #[inline]
    pub fn shim_type(&self) -> ShimType {
        ShimType::from(self.int_type)
    }

    #[inline]
    pub fn len_bytes(&self) -> usize {
        usize::from(self.length) * 4
    }

    /// The second 16-bit word (Length, Reserved), for checksum updates.
    #[inline]
    pub fn length_word(&self) -> u16 {
        u16::from_be_bytes([self.length, self.reserved1])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShimRepr {
    pub int_type: ShimType,
    pub length_words: u8,
}

impl ShimRepr {
    /// Parses the shim. Unknown types are returned, not refused: the caller
    /// decides (see [`crate::int05::IntBlock::parse`]).
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = ShimHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntShim, 0, HEADER_LEN, bytes.len()))?;
        Ok(ShimRepr { int_type: header.shim_type(), length_words: header.length })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let header = ShimHeader {
            int_type: u8::from(self.int_type),
            reserved0: 0,
            length: self.length_words,
            reserved1: 0,
        };
        header.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::IntShim, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host-INT's source shim: Type 3, Length 9 words.
    static HOST_INT_SOURCE: [u8; 4] = [0x03, 0x00, 0x09, 0x00];
    /// INT 0.5 section 4.2's shim: Type 1 (hop-by-hop), Length 8.
    static SPEC_TCP_EXAMPLE: [u8; 4] = [0x01, 0x00, 0x08, 0x00];

    #[test]
    fn golden_shims() {
        let host = ShimRepr { int_type: ShimType::HostIntSequence, length_words: 9 };
        let spec = ShimRepr { int_type: ShimType::HopByHop, length_words: 8 };
        for (bytes, repr) in [(HOST_INT_SOURCE, host), (SPEC_TCP_EXAMPLE, spec)] {
            assert_eq!(ShimRepr::parse(&bytes).unwrap(), repr);
            let mut buf = vec![0xa5; 6];
            assert_eq!(repr.emit(&mut buf).unwrap(), 4);
            assert_eq!(&buf[..4], &bytes);
            assert_eq!(&buf[4..], &[0xa5, 0xa5]);
        }
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..4 {
            assert!(ShimRepr::parse(&HOST_INT_SOURCE[..len]).is_err());
            assert!(ShimRepr { int_type: ShimType::HopByHop, length_words: 8 }
                .emit(&mut vec![0; len])
                .is_err());
        }
    }

    #[test]
    fn unknown_type_keeps_value() {
        let repr = ShimRepr::parse(&[0x07, 0, 5, 0]).unwrap();
        assert_eq!(repr.int_type, ShimType::Unknown(7));
        assert_eq!(u8::from(repr.int_type), 7);
        assert!(!repr.int_type.is_hop_by_hop());
    }
}
