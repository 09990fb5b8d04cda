//! IPv4 header (RFC 791 section 3.1), options honoured through IHL.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version|  IHL  |   DSCP    |ECN|          Total Length         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Identification        |Flags|      Fragment Offset    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Time to Live |    Protocol   |         Header Checksum       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source Address                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Destination Address                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Options                    |    Padding    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use core::net::Ipv4Addr;

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::checksum;
use crate::error::{EmitError, Layer, ParseError};

pub const MIN_HEADER_LEN: usize = 20;
pub const MAX_OPTIONS_LEN: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    Icmp,
    Tcp,
    Udp,
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        match value {
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Unknown(other) => other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Ipv4Header {
    pub version_ihl: u8,
    pub tos: u8,
    pub total_len: U16,
    pub ident: U16,
    pub flags_frag: U16,
    pub ttl: u8,
    pub protocol: u8,
    pub checksum: U16,
    pub src: [u8; 4],
    pub dst: [u8; 4],
}
const _: () = assert!(size_of::<Ipv4Header>() == MIN_HEADER_LEN);

impl Ipv4Header {
    #[inline]
    pub fn version(&self) -> u8 {
        self.version_ihl >> 4
    }

    /// Header length in bytes (IHL x 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.version_ihl & 0x0f) * 4
    }

    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos >> 2
    }

    #[inline]
    pub fn fragment_offset(&self) -> u16 {
        self.flags_frag.get() & 0x1fff
    }

    #[inline]
    pub fn more_fragments(&self) -> bool {
        self.flags_frag.get() & 0x2000 != 0
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.src)
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.dst)
    }

    /// The 16-bit word holding TTL and protocol, for checksum updates.
    #[inline]
    pub fn ttl_protocol_word(&self) -> u16 {
        u16::from_be_bytes([self.ttl, self.protocol])
    }

    /// The 16-bit word holding version, IHL and ToS, for checksum updates.
    #[inline]
    pub fn version_tos_word(&self) -> u16 {
        u16::from_be_bytes([self.version_ihl, self.tos])
    }

    /// Sets ToS, total length and protocol, updating the header checksum
    /// incrementally (RFC 1624) so that a wrong checksum stays as wrong as it
    /// was and a right one stays right.
    #[inline(always)]
    pub fn rewrite(&mut self, tos: u8, total_len: u16, protocol: u8) {
        let removed = u32::from(self.version_tos_word())
            + u32::from(self.total_len.get())
            + u32::from(self.ttl_protocol_word());
        self.tos = tos;
        self.total_len.set(total_len);
        self.protocol = protocol;
        let added =
            u32::from(self.version_tos_word()) + u32::from(total_len) + u32::from(self.ttl_protocol_word());
        self.checksum.set(checksum::adjust(self.checksum.get(), removed, added));
    }
}

/// A parsed IPv4 header. Options are kept as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub tos: u8,
    pub total_len: u16,
    pub ident: u16,
    pub flags_frag: u16,
    pub ttl: u8,
    pub protocol: IpProtocol,
    pub checksum: u16,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub options: [u8; MAX_OPTIONS_LEN],
    pub options_len: u8,
}

impl Ipv4Repr {
    /// Checks version and IHL and that the whole header (with options) is
    /// present; returns the header and its length. Total Length is not
    /// checked against `bytes` here: see [`crate::locate`].
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize), ParseError> {
        let (header, _) = Ipv4Header::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Ipv4, 0, MIN_HEADER_LEN, bytes.len()))?;
        if header.version() != 4 {
            return Err(ParseError::UnknownVersion {
                layer: Layer::Ipv4,
                offset: 0,
                value: header.version(),
            });
        }
        let header_len = header.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(ParseError::BadLength { layer: Layer::Ipv4, offset: 0, value: header_len });
        }
        let options_bytes = bytes
            .get(MIN_HEADER_LEN..header_len)
            .ok_or_else(|| ParseError::truncated(Layer::Ipv4, 0, header_len, bytes.len()))?;
        let mut options = [0u8; MAX_OPTIONS_LEN];
        if let Some(dst) = options.get_mut(..options_bytes.len()) {
            dst.copy_from_slice(options_bytes);
        }
        let repr = Ipv4Repr {
            tos: header.tos,
            total_len: header.total_len.get(),
            ident: header.ident.get(),
            flags_frag: header.flags_frag.get(),
            ttl: header.ttl,
            protocol: IpProtocol::from(header.protocol),
            checksum: header.checksum.get(),
            src: header.src_addr(),
            dst: header.dst_addr(),
            options,
            options_len: options_bytes.len() as u8,
        };
        Ok((repr, header_len))
    }

    pub fn header_len(&self) -> usize {
        MIN_HEADER_LEN + usize::from(self.options_len)
    }

    pub fn options(&self) -> &[u8] {
        self.options.get(..usize::from(self.options_len)).unwrap_or(&[])
    }

    /// Writes the header; the checksum field is computed when `fill_checksum`
    /// is set, and copied from `self.checksum` otherwise.
    pub fn emit(&self, buf: &mut [u8], fill_checksum: bool) -> Result<usize, EmitError> {
        let len = self.header_len();
        if len > MIN_HEADER_LEN + MAX_OPTIONS_LEN || !len.is_multiple_of(4) {
            return Err(EmitError::Unrepresentable { layer: Layer::Ipv4, value: len });
        }
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::Ipv4, len, available))?;
        let header = Ipv4Header {
            version_ihl: 0x40 | (len / 4) as u8,
            tos: self.tos,
            total_len: U16::new(self.total_len),
            ident: U16::new(self.ident),
            flags_frag: U16::new(self.flags_frag),
            ttl: self.ttl,
            protocol: u8::from(self.protocol),
            checksum: U16::new(if fill_checksum { 0 } else { self.checksum }),
            src: self.src.octets(),
            dst: self.dst.octets(),
        };
        let (head, options) = out.split_at_mut(MIN_HEADER_LEN);
        head.copy_from_slice(header.as_bytes());
        options.copy_from_slice(self.options());
        if fill_checksum {
            let sum = checksum::checksum(out).to_be_bytes();
            if let Some(field) = out.get_mut(10..12) {
                field.copy_from_slice(&sum);
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 192.168.0.1 -> 192.168.0.199, UDP, total length 115, DF, TTL 64,
    /// checksum b861 (Wikipedia's IPv4 header checksum example).
    static HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, // version 4, IHL 5, ToS 0, total length 115
        0x00, 0x00, 0x40, 0x00, // ident 0, DF
        0x40, 0x11, 0xb8, 0x61, // TTL 64, UDP, checksum
        0xc0, 0xa8, 0x00, 0x01, // src
        0xc0, 0xa8, 0x00, 0xc7, // dst
    ];

    fn header_repr() -> Ipv4Repr {
        Ipv4Repr {
            tos: 0,
            total_len: 115,
            ident: 0,
            flags_frag: 0x4000,
            ttl: 64,
            protocol: IpProtocol::Udp,
            checksum: 0xb861,
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            options: [0; MAX_OPTIONS_LEN],
            options_len: 0,
        }
    }

    #[test]
    fn parse_golden() {
        assert_eq!(Ipv4Repr::parse(&HEADER).unwrap(), (header_repr(), 20));
    }

    #[test]
    fn emit_golden_with_computed_checksum() {
        let mut buf = vec![0xa5; 24];
        assert_eq!(header_repr().emit(&mut buf, true).unwrap(), 20);
        assert_eq!(&buf[..20], &HEADER);
        assert_eq!(&buf[20..], &[0xa5; 4]);
    }

    #[test]
    fn options_round_trip() {
        let mut repr = header_repr();
        repr.options[..4].copy_from_slice(&[0x94, 0x04, 0x00, 0x00]); // router alert
        repr.options_len = 4;
        let mut buf = vec![0xa5; 24];
        assert_eq!(repr.emit(&mut buf, true).unwrap(), 24);
        assert_eq!(buf[0], 0x46);
        let (parsed, len) = Ipv4Repr::parse(&buf).unwrap();
        assert_eq!(len, 24);
        assert_eq!(parsed.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(checksum::checksum(&buf), 0);
    }

    #[test]
    fn truncation_and_bad_fields_rejected() {
        for len in 0..HEADER.len() {
            assert!(Ipv4Repr::parse(&HEADER[..len]).is_err(), "len {len}");
        }
        let mut v6 = HEADER;
        v6[0] = 0x65;
        assert!(matches!(Ipv4Repr::parse(&v6), Err(ParseError::UnknownVersion { value: 6, .. })));
        let mut short_ihl = HEADER;
        short_ihl[0] = 0x44;
        assert!(matches!(Ipv4Repr::parse(&short_ihl), Err(ParseError::BadLength { value: 16, .. })));
        let mut long_ihl = HEADER;
        long_ihl[0] = 0x46; // claims options that are not there
        assert!(matches!(Ipv4Repr::parse(&long_ihl), Err(ParseError::Truncated { .. })));
    }

    #[test]
    fn rewrite_keeps_checksum_valid() {
        let mut bytes = HEADER;
        let (header, _) = Ipv4Header::mut_from_prefix(&mut bytes).unwrap();
        header.rewrite(0x04, 115 + 36, 17);
        assert_eq!(checksum::checksum(&bytes), 0);
        assert_eq!(bytes[1], 0x04);
    }
}
