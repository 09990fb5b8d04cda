//! INT tail header for TCP/UDP (INT 0.5 section 3.2.1).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Proto     |      Destination Port         | Reserved/DSCP |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Proto is the original IPv4 protocol, Destination Port the original L4
//! destination port, and the last byte the original DSCP (low 6 bits, as the
//! spec's P4 program copies `ipv4.dscp` into it). Host-INT writes zeros here
//! in its DSCP encapsulation and only Proto in its UDP encapsulation.

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TailHeader {
    pub protocol: u8,
    pub dst_port: U16,
    pub dscp: u8,
}
const _: () = assert!(size_of::<TailHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TailRepr {
    pub protocol: u8,
    pub dst_port: u16,
    pub dscp: u8,
}

impl TailRepr {
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (tail, _) = TailHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IntTail, 0, HEADER_LEN, bytes.len()))?;
        Ok(TailRepr { protocol: tail.protocol, dst_port: tail.dst_port.get(), dscp: tail.dscp })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let tail = TailHeader { protocol: self.protocol, dst_port: U16::new(self.dst_port), dscp: self.dscp };
        tail.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::IntTail, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT 0.5 section 4.2: Proto 6, Port 22, original DSCP 0.
    static SPEC_TCP_EXAMPLE: [u8; 4] = [0x06, 0x00, 0x16, 0x00];

    #[test]
    fn golden_tail() {
        let repr = TailRepr { protocol: 6, dst_port: 22, dscp: 0 };
        assert_eq!(TailRepr::parse(&SPEC_TCP_EXAMPLE).unwrap(), repr);
        let mut buf = vec![0xa5; 5];
        assert_eq!(repr.emit(&mut buf).unwrap(), 4);
        assert_eq!(&buf, &[0x06, 0x00, 0x16, 0x00, 0xa5]);
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..4 {
            assert!(TailRepr::parse(&SPEC_TCP_EXAMPLE[..len]).is_err());
            assert!(TailRepr { protocol: 17, dst_port: 1, dscp: 2 }.emit(&mut vec![0; len]).is_err());
        }
    }
}
