//! UDP header (RFC 768).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Source Port          |       Destination Port        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            Length             |           Checksum            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct UdpHeader {
    pub src_port: U16,
    pub dst_port: U16,
    pub length: U16,
    pub checksum: U16,
}
const _: () = assert!(size_of::<UdpHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub length: u16,
    pub checksum: u16,
}

impl UdpRepr {
    /// Parses the header; the Length field must cover at least the header.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = UdpHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Udp, 0, HEADER_LEN, bytes.len()))?;
        let length = header.length.get();
        if usize::from(length) < HEADER_LEN {
            return Err(ParseError::BadLength { layer: Layer::Udp, offset: 0, value: usize::from(length) });
        }
        Ok(UdpRepr {
            src_port: header.src_port.get(),
            dst_port: header.dst_port.get(),
            length,
            checksum: header.checksum.get(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let header = UdpHeader {
            src_port: U16::new(self.src_port),
            dst_port: U16::new(self.dst_port),
            length: U16::new(self.length),
            checksum: U16::new(self.checksum),
        };
        header.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::Udp, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 48879 -> 53, length 12, checksum 0x124c.
    static HEADER: [u8; 8] = [0xbe, 0xef, 0x00, 0x35, 0x00, 0x0c, 0x12, 0x4c];

    fn repr() -> UdpRepr {
        UdpRepr { src_port: 48879, dst_port: 53, length: 12, checksum: 0x124c }
    }

    #[test]
    fn parse_and_emit_golden() {
        assert_eq!(UdpRepr::parse(&HEADER).unwrap(), repr());
        let mut buf = vec![0xa5; 10];
        assert_eq!(repr().emit(&mut buf).unwrap(), 8);
        assert_eq!(&buf[..8], &HEADER);
        assert_eq!(&buf[8..], &[0xa5, 0xa5]);
    }

    #[test]
    fn truncation_and_short_length_rejected() {
        for len in 0..HEADER.len() {
            assert!(UdpRepr::parse(&HEADER[..len]).is_err(), "len {len}");
            assert!(repr().emit(&mut vec![0; len]).is_err());
        }
        let mut short = HEADER;
        short[5] = 7;
        assert_eq!(
            UdpRepr::parse(&short),
            Err(ParseError::BadLength { layer: Layer::Udp, offset: 0, value: 7 })
        );
    }
}
