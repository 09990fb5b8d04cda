//! TCP header (RFC 793 section 3.1), options through Data Offset.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Source Port          |       Destination Port        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Acknowledgment Number                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Data |           |U|A|P|R|S|F|                               |
//! | Offset| Reserved  |R|C|S|S|Y|I|            Window             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Checksum            |         Urgent Pointer        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Options                    |    Padding    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const MIN_HEADER_LEN: usize = 20;
pub const MAX_OPTIONS_LEN: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TcpHeader {
    pub src_port: U16,
    pub dst_port: U16,
    pub seq: U32,
    pub ack: U32,
    /// Data Offset (4 bits), reserved (3), NS and the eight flag bits.
    pub offset_flags: U16,
    pub window: U16,
    pub checksum: U16,
    pub urgent: U16,
}
const _: () = assert!(size_of::<TcpHeader>() == MIN_HEADER_LEN);

impl TcpHeader {
    /// Header length in bytes (Data Offset x 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.offset_flags.get() >> 12) * 4
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// The 12 bits below Data Offset: reserved bits and flags.
    pub flags: u16,
    pub window: u16,
    pub checksum: u16,
    pub urgent: u16,
    pub options: [u8; MAX_OPTIONS_LEN],
    pub options_len: u8,
}

impl TcpRepr {
    /// Parses the header with its options; returns it with its length.
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize), ParseError> {
        let (header, _) = TcpHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Tcp, 0, MIN_HEADER_LEN, bytes.len()))?;
        let header_len = header.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(ParseError::BadLength { layer: Layer::Tcp, offset: 0, value: header_len });
        }
        let option_bytes = bytes
            .get(MIN_HEADER_LEN..header_len)
            .ok_or_else(|| ParseError::truncated(Layer::Tcp, 0, header_len, bytes.len()))?;
        let mut options = [0u8; MAX_OPTIONS_LEN];
        if let Some(dst) = options.get_mut(..option_bytes.len()) {
            dst.copy_from_slice(option_bytes);
        }
        let repr = TcpRepr {
            src_port: header.src_port.get(),
            dst_port: header.dst_port.get(),
            seq: header.seq.get(),
            ack: header.ack.get(),
            flags: header.offset_flags.get() & 0x0fff,
            window: header.window.get(),
            checksum: header.checksum.get(),
            urgent: header.urgent.get(),
            options,
            options_len: option_bytes.len() as u8,
        };
        Ok((repr, header_len))
    }

    pub fn header_len(&self) -> usize {
        MIN_HEADER_LEN + usize::from(self.options_len)
    }

    pub fn options(&self) -> &[u8] {
        self.options.get(..usize::from(self.options_len)).unwrap_or(&[])
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.header_len();
        if len > MIN_HEADER_LEN + MAX_OPTIONS_LEN || !len.is_multiple_of(4) {
            return Err(EmitError::Unrepresentable { layer: Layer::Tcp, value: len });
        }
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::Tcp, len, available))?;
        let header = TcpHeader {
            src_port: U16::new(self.src_port),
            dst_port: U16::new(self.dst_port),
            seq: U32::new(self.seq),
            ack: U32::new(self.ack),
            offset_flags: U16::new(((len as u16 / 4) << 12) | (self.flags & 0x0fff)),
            window: U16::new(self.window),
            checksum: U16::new(self.checksum),
            urgent: U16::new(self.urgent),
        };
        let (head, options) = out.split_at_mut(MIN_HEADER_LEN);
        head.copy_from_slice(header.as_bytes());
        options.copy_from_slice(self.options());
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40000 -> 22, seq 1, ack 2, data offset 6 (one MSS option 1460),
    /// ACK|PSH, window 65535, checksum 0xabcd.
    static HEADER: [u8; 24] = [
        0x9c, 0x40, 0x00, 0x16, // ports
        0x00, 0x00, 0x00, 0x01, // seq
        0x00, 0x00, 0x00, 0x02, // ack
        0x60, 0x18, 0xff, 0xff, // offset 6, ACK|PSH, window
        0xab, 0xcd, 0x00, 0x00, // checksum, urgent
        0x02, 0x04, 0x05, 0xb4, // MSS 1460
    ];

    fn repr() -> TcpRepr {
        let mut options = [0u8; MAX_OPTIONS_LEN];
        options[..4].copy_from_slice(&[0x02, 0x04, 0x05, 0xb4]);
        TcpRepr {
            src_port: 40000,
            dst_port: 22,
            seq: 1,
            ack: 2,
            flags: 0x018,
            window: 0xffff,
            checksum: 0xabcd,
            urgent: 0,
            options,
            options_len: 4,
        }
    }

    #[test]
    fn parse_and_emit_golden() {
        assert_eq!(TcpRepr::parse(&HEADER).unwrap(), (repr(), 24));
        let mut buf = vec![0xa5; 26];
        assert_eq!(repr().emit(&mut buf).unwrap(), 24);
        assert_eq!(&buf[..24], &HEADER);
        assert_eq!(&buf[24..], &[0xa5, 0xa5]);
    }

    #[test]
    fn truncation_and_bad_offset_rejected() {
        for len in 0..HEADER.len() {
            assert!(TcpRepr::parse(&HEADER[..len]).is_err(), "len {len}");
            assert!(repr().emit(&mut vec![0; len]).is_err());
        }
        let mut small = HEADER;
        small[12] = 0x40;
        assert!(matches!(TcpRepr::parse(&small), Err(ParseError::BadLength { value: 16, .. })));
    }
}
