//! The IFA header (draft-kumar-ippm-ifa-08), as google/gopacket's
//! `layers/ifa.go` reproduces the draft's figure:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Ver=2 |  GNS  |NextHdr = IP_xx|R|R|R|M|T|I|T|C|   Max Length  |
//! |       |       |               | | | |F|S| |A| |               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! It follows the IP header, whose protocol the initiator replaced by IFA's
//! and kept here as Next Header. Max Length bounds the metadata stack in
//! 4-byte words, the unit of the metadata header's Current Length: Broadcom's
//! SDK refuses a Max Length below its initial Current Length of 8, one
//! 32-byte hop (OpenBCM sdk-6.5.20 `src/bcm/dnx/instru/instru_ifa1.c`,
//! `CONST_IFA2_INITIAL_CURRENT_LENGTH`, "Max length should be at least
//! Metadata length"). Parsing reads every field; which versions, name spaces
//! and flags a node accepts is the caller's choice ([`super::find`]).

use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;
/// The version IFA 2.0 writes.
pub const VERSION: u8 = 2;
/// GNS 15: no global name space; each hop's format is its LNS's.
pub const NO_GLOBAL_NAME_SPACE: u8 = 0x0f;

bitflags! {
    /// The flags byte. Reserved bits are kept (`from_bits_retain`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Flags: u8 {
        /// MF: a metadata fragment header follows.
        const METADATA_FRAGMENT = 0x10;
        /// TS: tail stamping; the metadata sits at the end of the packet.
        const TAIL_STAMP = 0x08;
        /// I: inband, a live packet; clear on a probe copy.
        const INBAND = 0x04;
        /// TA: turn around.
        const TURN_AROUND = 0x02;
        /// C: a checksum header follows.
        const CHECKSUM = 0x01;
        const _ = !0;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct IfaHeader {
    /// Version (4) | GNS (4).
    pub version_gns: u8,
    /// The original IP protocol.
    pub next_header: u8,
    pub flags: u8,
    /// Words of metadata stack allowed.
    pub max_length: u8,
}
const _: () = assert!(size_of::<IfaHeader>() == HEADER_LEN);

impl IfaHeader {
    #[inline]
    pub fn version(&self) -> u8 {
        self.version_gns >> 4
    }

    #[inline]
    pub fn gns(&self) -> u8 {
        self.version_gns & 0x0f
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IfaHeaderRepr {
    pub version: u8,
    /// Global name space (4 bits).
    pub gns: u8,
    pub next_header: u8,
    pub flags: Flags,
    /// In 4-byte words.
    pub max_length: u8,
}

impl Default for IfaHeaderRepr {
    fn default() -> Self {
        IfaHeaderRepr {
            version: VERSION,
            gns: NO_GLOBAL_NAME_SPACE,
            next_header: 0,
            flags: Flags::empty(),
            max_length: 0xff,
        }
    }
}

impl IfaHeaderRepr {
    /// Reads the four fields; refuses only a header cut short.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = IfaHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IfaHeader, 0, HEADER_LEN, bytes.len()))?;
        Ok(IfaHeaderRepr {
            version: header.version(),
            gns: header.gns(),
            next_header: header.next_header,
            flags: Flags::from_bits_retain(header.flags),
            max_length: header.max_length,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.version > 0x0f || self.gns > 0x0f {
            return Err(EmitError::Unrepresentable {
                layer: Layer::IfaHeader,
                value: usize::from(self.version.max(self.gns)),
            });
        }
        let header = IfaHeader {
            version_gns: (self.version << 4) | self.gns,
            next_header: self.next_header,
            flags: self.flags.bits(),
            max_length: self.max_length,
        };
        header
            .write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::IfaHeader, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }

    /// Max Length in bytes of stack.
    #[inline]
    pub fn max_stack_len(&self) -> usize {
        usize::from(self.max_length) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scapy pull request 4235's `IFA(ver=2, gns=15, flags=4, maxlen=255)`
    /// over TCP: 0x2f, Next Header 6, I set, Max Length 255.
    const SCAPY_TCP: [u8; 4] = [0x2f, 0x06, 0x04, 0xff];
    /// OpenBCM sdk-6.5.20 `src/examples/dnx/instru/cint_ifa2.c`, the
    /// initiator's output: `2f0600ff`, a probe (I clear).
    const BROADCOM_PROBE: [u8; 4] = [0x2f, 0x06, 0x00, 0xff];

    #[test]
    fn golden_headers_from_the_peers() {
        for (bytes, flags) in [(SCAPY_TCP, Flags::INBAND), (BROADCOM_PROBE, Flags::empty())] {
            let expected = IfaHeaderRepr { next_header: 6, flags, ..IfaHeaderRepr::default() };
            assert_eq!(IfaHeaderRepr::parse(&bytes), Ok(expected));
            let mut out = [0xa5; 4];
            assert_eq!(expected.emit(&mut out), Ok(4));
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn every_flag_has_its_bit_and_reserved_bits_are_kept() {
        for (bit, flag) in [
            (0x10, Flags::METADATA_FRAGMENT),
            (0x08, Flags::TAIL_STAMP),
            (0x04, Flags::INBAND),
            (0x02, Flags::TURN_AROUND),
            (0x01, Flags::CHECKSUM),
        ] {
            assert_eq!(IfaHeaderRepr::parse(&[0x2f, 17, bit, 8]).map(|h| h.flags), Ok(flag));
        }
        let header = IfaHeaderRepr::parse(&[0x31, 47, 0xe0, 16]).unwrap();
        assert_eq!((header.version, header.gns, header.next_header), (3, 1, 47));
        assert_eq!((header.flags.bits(), header.max_stack_len()), (0xe0, 64));
        let mut out = [0; 4];
        header.emit(&mut out).unwrap();
        assert_eq!(out, [0x31, 47, 0xe0, 16]);
    }

    #[test]
    fn every_short_prefix_is_refused_as_truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                IfaHeaderRepr::parse(&SCAPY_TCP[..len]),
                Err(ParseError::Truncated { layer: Layer::IfaHeader, offset: 0, needed: 4, available: len })
            );
            let mut out = vec![0xa5; len];
            assert!(matches!(IfaHeaderRepr::default().emit(&mut out), Err(EmitError::NoRoom { .. })));
        }
    }

    #[test]
    fn fields_wider_than_four_bits_cannot_be_written() {
        let mut out = [0; 4];
        let wide = IfaHeaderRepr { gns: 16, ..IfaHeaderRepr::default() };
        assert_eq!(
            wide.emit(&mut out),
            Err(EmitError::Unrepresentable { layer: Layer::IfaHeader, value: 16 })
        );
    }
}
