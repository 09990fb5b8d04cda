//! IPv6 header (RFC 8200 section 3) and the walk over its extension headers
//! (section 4) to the upper-layer header.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Traffic Class |           Flow Label                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Payload Length        |  Next Header  |   Hop Limit   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     Source Address (128 bits)                 |
//! |                  Destination Address (128 bits)               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Extension headers walked: Hop-by-Hop Options (0), Routing (43) and
//! Destination Options (60), each `(Hdr Ext Len + 1) * 8` bytes, and the
//! Fragment header (44, 8 bytes), which makes the packet a fragment (but
//! for an atomic fragment, offset 0 and M clear: RFC 6946). Any
//! other Next Header ends the walk as the upper-layer protocol (an
//! Authentication Header or ESP included: what follows them is not read).

use core::net::Ipv6Addr;

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 40;
pub const HOP_BY_HOP: u8 = 0;
pub const ROUTING: u8 = 43;
pub const FRAGMENT: u8 = 44;
pub const DESTINATION_OPTIONS: u8 = 60;
/// Extension headers a walk goes through at most: RFC 8200's recommended
/// order has each at most once (Destination Options twice).
pub const MAX_EXTENSIONS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Ipv6Header {
    /// Version (4), Traffic Class (8), Flow Label (20).
    pub version_tc_flow: U32,
    pub payload_len: U16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}
const _: () = assert!(size_of::<Ipv6Header>() == HEADER_LEN);

impl Ipv6Header {
    pub fn version(&self) -> u8 {
        (self.version_tc_flow.get() >> 28) as u8
    }

    pub fn traffic_class(&self) -> u8 {
        (self.version_tc_flow.get() >> 20) as u8
    }

    pub fn flow_label(&self) -> u32 {
        self.version_tc_flow.get() & 0x000f_ffff
    }

    /// Sets Traffic Class and Payload Length (no header checksum to follow).
    #[inline(always)]
    pub fn rewrite(&mut self, traffic_class: u8, payload_len: u16) {
        let word = self.version_tc_flow.get();
        self.version_tc_flow.set((word & 0xf00f_ffff) | (u32::from(traffic_class) << 20));
        self.payload_len.set(payload_len);
    }
}

/// A parsed IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub traffic_class: u8,
    pub flow_label: u32,
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
}

impl Ipv6Repr {
    /// Checks the version and that the 40 bytes are there. Payload Length
    /// is not checked against `bytes` here: see [`crate::locate`].
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = Ipv6Header::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Ipv6, 0, HEADER_LEN, bytes.len()))?;
        if header.version() != 6 {
            return Err(ParseError::UnknownVersion {
                layer: Layer::Ipv6,
                offset: 0,
                value: header.version(),
            });
        }
        Ok(Ipv6Repr {
            traffic_class: header.traffic_class(),
            flow_label: header.flow_label(),
            payload_len: header.payload_len.get(),
            next_header: header.next_header,
            hop_limit: header.hop_limit,
            src: Ipv6Addr::from(header.src),
            dst: Ipv6Addr::from(header.dst),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.flow_label > 0x000f_ffff {
            return Err(EmitError::Unrepresentable { layer: Layer::Ipv6, value: self.flow_label as usize });
        }
        let header = Ipv6Header {
            version_tc_flow: U32::new((6 << 28) | (u32::from(self.traffic_class) << 20) | self.flow_label),
            payload_len: U16::new(self.payload_len),
            next_header: self.next_header,
            hop_limit: self.hop_limit,
            src: self.src.octets(),
            dst: self.dst.octets(),
        };
        header.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::Ipv6, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

/// Where the extension headers of a packet lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extensions {
    /// Offset of the upper-layer header, counted from the IPv6 header.
    pub upper_at: usize,
    /// Its protocol (the last Next Header).
    pub protocol: u8,
    /// Offset of the Next Header field that names it (6 when there are no
    /// extension headers): the byte a transform rewrites to insert a header.
    pub next_header_at: usize,
    /// The Fragment header's offset-and-flags word (Fragment Offset << 3,
    /// then two reserved bits and M), when one was walked: the packet is a
    /// fragment.
    pub fragment: Option<u16>,
    /// The fixed header the walk started from.
    pub header: Ipv6Repr,
}

/// Walks the extension headers of the IPv6 packet at the start of `packet`
/// (its fixed header and as much of its payload as there is). Refuses a
/// header cut short, one that runs past Payload Length, and more than
/// [`MAX_EXTENSIONS`] of them.
pub fn walk_extensions(packet: &[u8]) -> Result<Extensions, ParseError> {
    let header = Ipv6Repr::parse(packet)?;
    let end = HEADER_LEN + usize::from(header.payload_len);
    let mut walk = Extensions {
        upper_at: HEADER_LEN,
        protocol: header.next_header,
        next_header_at: 6,
        fragment: None,
        header,
    };
    // One round more than the headers allowed: the last only finds the
    // upper layer (or one header too many).
    for walked in 0..=MAX_EXTENSIONS {
        let Some(len) = walk.header_len(packet)? else { return Ok(walk) };
        if walked == MAX_EXTENSIONS {
            break;
        }
        walk = walk.next(packet, len, end)?;
    }
    Err(ParseError::BadLength {
        layer: Layer::Ipv6Extension,
        offset: walk.upper_at,
        value: MAX_EXTENSIONS + 1,
    })
}

impl Extensions {
    /// The length of the extension header the walk stands on; `None` at
    /// the upper layer.
    #[inline]
    fn header_len(&self, packet: &[u8]) -> Result<Option<usize>, ParseError> {
        Ok(Some(match self.protocol {
            HOP_BY_HOP | ROUTING | DESTINATION_OPTIONS => {
                let ext_len = *packet.get(self.upper_at + 1).ok_or_else(|| {
                    ParseError::truncated(Layer::Ipv6Extension, self.upper_at, 2, packet.len())
                })?;
                (usize::from(ext_len) + 1) * 8
            }
            FRAGMENT => 8,
            _ => return Ok(None),
        }))
    }

    /// The walk one header on, past the `len` bytes of the one it stands
    /// on, once that header is checked: where it may be, that it ends
    /// within Payload Length (`end`) and the packet, a Fragment header at
    /// most once (its word kept).
    #[inline]
    fn next(mut self, packet: &[u8], len: usize, end: usize) -> Result<Extensions, ParseError> {
        if self.protocol == HOP_BY_HOP && self.upper_at != HEADER_LEN {
            // RFC 8200 section 4.3: only right after the IPv6 header.
            return Err(ParseError::UnknownType {
                layer: Layer::Ipv6Extension,
                offset: self.next_header_at,
                value: 0,
            });
        }
        let next_end = self.upper_at + len;
        if next_end > end {
            return Err(ParseError::BadLength {
                layer: Layer::Ipv6Extension,
                offset: self.upper_at,
                value: len,
            });
        }
        let next = *packet
            .get(self.upper_at)
            .ok_or_else(|| ParseError::truncated(Layer::Ipv6Extension, self.upper_at, len, packet.len()))?;
        if packet.len() < next_end {
            return Err(ParseError::truncated(Layer::Ipv6Extension, self.upper_at, len, packet.len()));
        }
        if self.protocol == FRAGMENT {
            if self.fragment.is_some() {
                // RFC 8200 section 4.1: at most once. Which of two would
                // say whether this is a fragment?
                return Err(ParseError::UnknownType {
                    layer: Layer::Ipv6Extension,
                    offset: self.next_header_at,
                    value: FRAGMENT,
                });
            }
            let word = packet.get(self.upper_at + 2..self.upper_at + 4).and_then(|b| b.try_into().ok());
            self.fragment = word.map(u16::from_be_bytes);
        }
        Ok(Extensions { upper_at: next_end, protocol: next, next_header_at: self.upper_at, ..self })
    }
}

/// Writes the Payload Length of the IPv6 header at `l3` in a packet (a
/// walk proved it in range; out of range, nothing is written).
pub fn set_payload_len(bytes: &mut [u8], l3: usize, len: u16) {
    crate::bytes::put(bytes, l3 + 4, &len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP packet 2001:db8::1 -> 2001:db8::2, Traffic Class 0x5c, Flow
    /// Label 0x12345, hop limit 64, with `extensions` (each a Next Header
    /// and its bytes) before an 8-byte UDP header.
    fn packet(extensions: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let ext_len: usize = extensions.iter().map(|(_, bytes)| bytes.len()).sum();
        let first = extensions.first().map_or(17, |(kind, _)| *kind);
        let mut out = vec![0u8; HEADER_LEN];
        let repr = Ipv6Repr {
            traffic_class: 0x5c,
            flow_label: 0x12345,
            payload_len: (ext_len + 8) as u16,
            next_header: first,
            hop_limit: 64,
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
        };
        repr.emit(&mut out).unwrap();
        for (i, (_, bytes)) in extensions.iter().enumerate() {
            let mut bytes = bytes.clone();
            bytes[0] = extensions.get(i + 1).map_or(17, |(kind, _)| *kind);
            out.extend(bytes);
        }
        out.extend([0x13, 0x88, 0x17, 0x70, 0, 8, 0, 0]);
        out
    }

    fn options(len_units: u8) -> Vec<u8> {
        let mut bytes = vec![0u8; (usize::from(len_units) + 1) * 8];
        bytes[1] = len_units;
        bytes[2] = 1; // PadN over the rest
        bytes[3] = (bytes.len() - 4) as u8;
        bytes
    }

    /// The fixed header byte for byte: version 6, Traffic Class 0x5c, Flow
    /// Label 0x12345.
    #[test]
    fn golden_fixed_header() {
        let bytes = packet(&[]);
        assert_eq!(bytes[..8], [0x65, 0xc1, 0x23, 0x45, 0x00, 0x08, 17, 64]);
        assert_eq!(bytes[8..10], [0x20, 0x01]);
        let parsed = Ipv6Repr::parse(&bytes).unwrap();
        assert_eq!((parsed.traffic_class, parsed.flow_label, parsed.payload_len), (0x5c, 0x12345, 8));
        let mut again = [0u8; HEADER_LEN];
        parsed.emit(&mut again).unwrap();
        assert_eq!(again[..], bytes[..HEADER_LEN]);
        for cut in 0..HEADER_LEN {
            assert!(matches!(Ipv6Repr::parse(&bytes[..cut]), Err(ParseError::Truncated { .. })));
        }
        let mut v4 = bytes.clone();
        v4[0] = 0x45;
        assert!(matches!(Ipv6Repr::parse(&v4), Err(ParseError::UnknownVersion { .. })));
    }

    #[test]
    fn rewrite_keeps_version_and_flow_label() {
        let mut bytes = packet(&[]);
        let (header, _) = Ipv6Header::mut_from_prefix(&mut bytes).unwrap();
        header.rewrite(0xa3, 0x1234);
        assert_eq!(bytes[..6], [0x6a, 0x31, 0x23, 0x45, 0x12, 0x34]);
    }

    #[test]
    fn walks_to_the_upper_layer() {
        let plain = walk_extensions(&packet(&[])).unwrap();
        assert_eq!((plain.upper_at, plain.protocol, plain.next_header_at, plain.fragment), (40, 17, 6, None));
        assert_eq!(plain.header, Ipv6Repr::parse(&packet(&[])).unwrap());
        let three =
            packet(&[(HOP_BY_HOP, options(0)), (ROUTING, options(2)), (DESTINATION_OPTIONS, options(1))]);
        let walked = walk_extensions(&three).unwrap();
        assert_eq!(
            (walked.upper_at, walked.protocol, walked.next_header_at, walked.fragment),
            (88, 17, 72, None)
        );
        let first = packet(&[(FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 7])]);
        assert_eq!(walk_extensions(&first).unwrap().fragment, Some(1), "offset 0, M");
        let later = packet(&[(FRAGMENT, vec![0, 0, 0x05, 0x58, 0, 0, 0, 7])]);
        assert_eq!(walk_extensions(&later).unwrap().fragment.map(|word| word >> 3), Some(171));
    }

    #[test]
    fn lying_and_cut_extensions_are_refused() {
        let bytes = packet(&[(ROUTING, options(1))]);
        for cut in HEADER_LEN..HEADER_LEN + 16 {
            assert!(walk_extensions(&bytes[..cut]).is_err(), "cut {cut}");
        }
        // An extension running past Payload Length.
        let mut long = bytes.clone();
        long[HEADER_LEN + 1] = 200;
        assert!(matches!(walk_extensions(&long), Err(ParseError::BadLength { .. })));
        // Hop-by-Hop anywhere but first.
        let late = packet(&[(ROUTING, options(0)), (HOP_BY_HOP, options(0))]);
        assert!(matches!(walk_extensions(&late), Err(ParseError::UnknownType { .. })));
        // A chain longer than any RFC 8200 order.
        let many: Vec<_> = (0..9).map(|_| (DESTINATION_OPTIONS, options(0))).collect();
        assert!(matches!(walk_extensions(&packet(&many)), Err(ParseError::BadLength { value: 9, .. })));
        // As many as allowed (8) pass, to the upper layer after them.
        let eight = walk_extensions(&packet(&many[..MAX_EXTENSIONS])).unwrap();
        assert_eq!((eight.upper_at, eight.protocol), (HEADER_LEN + 8 * MAX_EXTENSIONS, 17));
        // Two Fragment headers, a later fragment's then an atomic one's:
        // which one says whether this is a fragment? (The last one used to
        // win, and a later fragment passed for a whole packet.)
        let twice = packet(&[(FRAGMENT, vec![0, 0, 0x05, 0x58, 0, 0, 0, 7]), (FRAGMENT, vec![0; 8])]);
        assert!(matches!(walk_extensions(&twice), Err(ParseError::UnknownType { value: FRAGMENT, .. })));
    }
}
