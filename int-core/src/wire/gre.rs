//! GRE header (RFC 2784, with RFC 2890's Key and Sequence Number).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |C| |K|S| Reserved0       | Ver |         Protocol Type         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Checksum (optional)      |       Reserved1 (Optional)    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         Key (optional)                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Sequence Number (Optional)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! RFC 2784 section 2.3: a receiver that does not implement RFC 1701 must
//! discard a packet with any of bits 1-5 set; RFC 2890 gives bits 2 and 3
//! (K, S) their meaning again. So bits 1, 4 and 5 are refused, and Version
//! must be 0.

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;
/// IP protocol 47.
pub const IP_PROTOCOL: u8 = 47;
pub const PROTOCOL_ETHERNET: u16 = 0x6558;
pub const PROTOCOL_IPV4: u16 = 0x0800;
pub const PROTOCOL_IPV6: u16 = 0x86dd;

const FLAG_C: u16 = 0x8000;
const FLAG_K: u16 = 0x2000;
const FLAG_S: u16 = 0x1000;
/// Bits 1, 4 and 5: routing and RFC 1701's strict source route and recursion.
const REFUSED: u16 = 0x4c00;
const VERSION: u16 = 0x0007;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GreHeader {
    /// C | R | K | S | Reserved0 (9) | Ver (3).
    pub flags_version: U16,
    pub protocol: U16,
}
const _: () = assert!(size_of::<GreHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GreRepr {
    /// With C set: the checksum (Reserved1 is written as zero).
    pub checksum: Option<u16>,
    pub key: Option<u32>,
    pub sequence: Option<u32>,
    /// The payload's EtherType.
    pub protocol: u16,
}

impl GreRepr {
    /// Parses the header and its optional words.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, rest) = GreHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Gre, 0, HEADER_LEN, bytes.len()))?;
        let flags = header.flags_version.get();
        if flags & VERSION != 0 {
            return Err(ParseError::UnknownVersion {
                layer: Layer::Gre,
                offset: 1,
                value: (flags & VERSION) as u8,
            });
        }
        if flags & REFUSED != 0 {
            return Err(ParseError::Reserved { layer: Layer::Gre, offset: 0, value: (flags >> 8) as u8 });
        }
        let len = header_len(flags);
        if bytes.len() < len {
            return Err(ParseError::truncated(Layer::Gre, 0, len, bytes.len()));
        }
        let mut words = rest.chunks_exact(4).map(|w| match w {
            &[a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
            _ => 0,
        });
        let mut take = |present: bool| if present { words.next() } else { None };
        let checksum = take(flags & FLAG_C != 0).map(|word| (word >> 16) as u16);
        let key = take(flags & FLAG_K != 0);
        let sequence = take(flags & FLAG_S != 0);
        Ok(GreRepr { checksum, key, sequence, protocol: header.protocol.get() })
    }

    pub fn header_len(&self) -> usize {
        HEADER_LEN
            + 4 * (usize::from(self.checksum.is_some())
                + usize::from(self.key.is_some())
                + usize::from(self.sequence.is_some()))
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.header_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::no_room(Layer::Gre, len, available))?;
        let flags = if self.checksum.is_some() { FLAG_C } else { 0 }
            | if self.key.is_some() { FLAG_K } else { 0 }
            | if self.sequence.is_some() { FLAG_S } else { 0 };
        let header = GreHeader { flags_version: U16::new(flags), protocol: U16::new(self.protocol) };
        let words = [self.checksum.map(|c| u32::from(c) << 16), self.key, self.sequence];
        header.write_to_prefix(out).map_err(|_| EmitError::no_room(Layer::Gre, len, available))?;
        let slots = out.get_mut(HEADER_LEN..).unwrap_or_default().chunks_exact_mut(4);
        for (slot, word) in slots.zip(words.into_iter().flatten()) {
            slot.copy_from_slice(&word.to_be_bytes());
        }
        Ok(len)
    }
}

/// Bytes of header that the flags announce.
#[inline]
pub fn header_len(flags: u16) -> usize {
    HEADER_LEN
        + 4 * (usize::from(flags & FLAG_C != 0)
            + usize::from(flags & FLAG_K != 0)
            + usize::from(flags & FLAG_S != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scapy's `GRE(proto=0x6558)`: no optional words.
    const TRANSPARENT_ETHERNET: [u8; 4] = [0x00, 0x00, 0x65, 0x58];
    /// C, K and S: checksum 0xabcd, key 7, sequence 9, over IPv6.
    const ALL_WORDS: [u8; 16] =
        [0xb0, 0x00, 0x86, 0xdd, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x09];

    #[test]
    fn golden_headers() {
        for (bytes, expected) in [
            (&TRANSPARENT_ETHERNET[..], GreRepr { protocol: PROTOCOL_ETHERNET, ..GreRepr::default() }),
            (
                &ALL_WORDS[..],
                GreRepr { checksum: Some(0xabcd), key: Some(7), sequence: Some(9), protocol: PROTOCOL_IPV6 },
            ),
        ] {
            assert_eq!(GreRepr::parse(bytes), Ok(expected));
            assert_eq!(expected.header_len(), bytes.len());
            let mut out = vec![0xa5; bytes.len()];
            assert_eq!(expected.emit(&mut out), Ok(bytes.len()));
            assert_eq!(out, bytes);
        }
        let key_only = GreRepr { key: Some(0x0102_0304), protocol: PROTOCOL_IPV4, ..GreRepr::default() };
        let mut out = [0; 8];
        key_only.emit(&mut out).unwrap();
        assert_eq!(out, [0x20, 0x00, 0x08, 0x00, 1, 2, 3, 4]);
        assert_eq!(GreRepr::parse(&out), Ok(key_only));
    }

    #[test]
    fn every_short_prefix_is_refused_as_truncated() {
        for len in 0..ALL_WORDS.len() {
            let needed = if len < HEADER_LEN { HEADER_LEN } else { ALL_WORDS.len() };
            assert_eq!(
                GreRepr::parse(&ALL_WORDS[..len]),
                Err(ParseError::Truncated { layer: Layer::Gre, offset: 0, needed, available: len })
            );
        }
    }

    #[test]
    fn versions_and_rfc1701_bits_are_refused() {
        assert_eq!(
            GreRepr::parse(&[0x00, 0x01, 0x88, 0x0b]),
            Err(ParseError::UnknownVersion { layer: Layer::Gre, offset: 1, value: 1 })
        );
        for first in [0x40, 0x08, 0x04] {
            assert_eq!(
                GreRepr::parse(&[first, 0x00, 0x08, 0x00]),
                Err(ParseError::Reserved { layer: Layer::Gre, offset: 0, value: first })
            );
        }
    }
}
