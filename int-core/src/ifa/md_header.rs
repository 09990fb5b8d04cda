//! The IFA metadata header (draft-kumar-ippm-ifa-08), as google/gopacket's
//! `layers/ifa.go` reproduces the draft's figure:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Request Vector| Action Vector |   Hop Limit   | Current Length|
//! |               |L|C|R|R|R|R|R|R|               |               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! It follows the L4 header; the metadata stack follows it. Current Length
//! counts the stack in 4-byte words (the header itself not counted): scapy
//! pull request 4235 writes `(len(p) - 4) // 4` (`scapy/contrib/ifa.py`,
//! `IFAMdHdr.post_build`), 16 for two 32-byte hops, and Broadcom's transit
//! example grows it from 8 to 16 as it adds one (OpenBCM sdk-6.5.20
//! `src/examples/dnx/instru/cint_ifa2.c`).

use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;

bitflags! {
    /// The Action Vector. Reserved bits are kept (`from_bits_retain`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Action: u8 {
        /// L: loss measurement.
        const LOSS = 0x80;
        /// C: colour, the packet is marked.
        const COLOR = 0x40;
        const _ = !0;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MdHeader {
    pub request_vector: u8,
    pub action_vector: u8,
    pub hop_limit: u8,
    /// Words of stack.
    pub current_length: u8,
}
const _: () = assert!(size_of::<MdHeader>() == HEADER_LEN);

impl MdHeader {
    /// The second 16-bit word (Hop Limit, Current Length), for checksum
    /// updates.
    #[inline]
    pub fn word1(&self) -> u16 {
        u16::from_be_bytes([self.hop_limit, self.current_length])
    }

    /// Bytes of stack that Current Length announces.
    #[inline]
    pub fn stack_len(&self) -> usize {
        usize::from(self.current_length) * 4
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MdHeaderRepr {
    pub request_vector: u8,
    pub action: Action,
    pub hop_limit: u8,
    /// In 4-byte words.
    pub current_length: u8,
}

impl MdHeaderRepr {
    /// Reads the four fields; refuses only a header cut short.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = MdHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IfaMetadataHeader, 0, HEADER_LEN, bytes.len()))?;
        Ok(MdHeaderRepr {
            request_vector: header.request_vector,
            action: Action::from_bits_retain(header.action_vector),
            hop_limit: header.hop_limit,
            current_length: header.current_length,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let header = MdHeader {
            request_vector: self.request_vector,
            action_vector: self.action.bits(),
            hop_limit: self.hop_limit,
            current_length: self.current_length,
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::IfaMetadataHeader, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }

    /// Bytes of stack that Current Length announces.
    #[inline]
    pub fn stack_len(&self) -> usize {
        usize::from(self.current_length) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scapy pull request 4235's `IFAMdHdr(request=238, action=192,
    /// hoplmt=126)` over two hops: Current Length 16.
    const SCAPY: [u8; 4] = [238, 0xc0, 126, 16];
    /// OpenBCM sdk-6.5.20 `src/examples/dnx/instru/cint_ifa2.c`, the transit
    /// node's output: request 0xff, no action, Hop Limit 254, two hops.
    const BROADCOM_TRANSIT: [u8; 4] = [0xff, 0x00, 0xfe, 0x10];

    #[test]
    fn golden_headers_from_the_peers() {
        for (bytes, expected) in [
            (
                SCAPY,
                MdHeaderRepr {
                    request_vector: 238,
                    action: Action::LOSS | Action::COLOR,
                    hop_limit: 126,
                    current_length: 16,
                },
            ),
            (
                BROADCOM_TRANSIT,
                MdHeaderRepr {
                    request_vector: 0xff,
                    action: Action::empty(),
                    hop_limit: 254,
                    current_length: 16,
                },
            ),
        ] {
            assert_eq!(MdHeaderRepr::parse(&bytes), Ok(expected));
            assert_eq!(expected.stack_len(), 64);
            let mut out = [0xa5; 4];
            assert_eq!(expected.emit(&mut out), Ok(4));
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn reserved_action_bits_are_kept() {
        let header = MdHeaderRepr::parse(&[0, 0x3f, 1, 8]).unwrap();
        assert_eq!(header.action.bits(), 0x3f);
        assert!(!header.action.contains(Action::LOSS));
        let (zero_copy, _) = MdHeader::ref_from_prefix(&SCAPY[..]).unwrap();
        assert_eq!((zero_copy.word1(), zero_copy.stack_len()), (0x7e10, 64));
    }

    #[test]
    fn every_short_prefix_is_refused_as_truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                MdHeaderRepr::parse(&SCAPY[..len]),
                Err(ParseError::Truncated {
                    layer: Layer::IfaMetadataHeader,
                    offset: 0,
                    needed: 4,
                    available: len
                })
            );
            let mut out = vec![0xa5; len];
            assert!(matches!(MdHeaderRepr::default().emit(&mut out), Err(EmitError::NoRoom { .. })));
        }
    }
}
