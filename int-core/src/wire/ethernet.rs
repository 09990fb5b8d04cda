//! Ethernet II (IEEE 802.3) with up to two 802.1Q / 802.1ad tags.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Destination MAC (6 bytes)                  |
//! +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+      Source MAC (6 bytes)     +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           EtherType           |   [802.1Q: TCI, EtherType]... |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

/// The most tags we look through (QinQ).
pub const MAX_VLAN_TAGS: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    Ipv6,
    Vlan,
    QinQ,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86dd => EtherType::Ipv6,
            0x8100 => EtherType::Vlan,
            0x88a8 => EtherType::QinQ,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Vlan => 0x8100,
            EtherType::QinQ => 0x88a8,
            EtherType::Unknown(other) => other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct EthernetHeader {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub ethertype: U16,
}
const _: () = assert!(size_of::<EthernetHeader>() == 14);

/// An 802.1Q tag: the TCI and the EtherType that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct VlanTag {
    pub tci: U16,
    pub ethertype: U16,
}
const _: () = assert!(size_of::<VlanTag>() == 4);

/// A parsed Ethernet header with its tags. `ethertype` is the innermost one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// (tag protocol identifier, TCI), outermost first.
    pub vlans: [Option<(u16, u16)>; MAX_VLAN_TAGS],
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Parses the header and its tags; returns it with its length in bytes.
    /// A third tag is left unparsed: its EtherType is reported as the
    /// payload type, which nothing here will match.
    pub fn parse(frame: &[u8]) -> Result<(Self, usize), ParseError> {
        let (header, _) = EthernetHeader::ref_from_prefix(frame)
            .map_err(|_| ParseError::truncated(Layer::Ethernet, 0, 14, frame.len()))?;
        let mut repr = EthernetRepr {
            dst: header.dst,
            src: header.src,
            vlans: [None; MAX_VLAN_TAGS],
            ethertype: EtherType::from(header.ethertype.get()),
        };
        let mut offset = size_of::<EthernetHeader>();
        for slot in repr.vlans.iter_mut() {
            let tpid = u16::from(repr.ethertype);
            if !matches!(repr.ethertype, EtherType::Vlan | EtherType::QinQ) {
                break;
            }
            let tag = frame
                .get(offset..)
                .and_then(|rest| VlanTag::ref_from_prefix(rest).ok())
                .map(|(tag, _)| tag)
                .ok_or_else(|| ParseError::truncated(Layer::Vlan, offset, 4, frame.len()))?;
            *slot = Some((tpid, tag.tci.get()));
            repr.ethertype = EtherType::from(tag.ethertype.get());
            offset += size_of::<VlanTag>();
        }
        Ok((repr, offset))
    }

    pub fn header_len(&self) -> usize {
        size_of::<EthernetHeader>() + self.vlans.iter().flatten().count() * size_of::<VlanTag>()
    }

    /// Writes the header into the front of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.header_len();
        if buf.len() < len {
            return Err(EmitError::no_room(Layer::Ethernet, len, buf.len()));
        }
        let mut tags = self.vlans.iter().flatten();
        let mut next = tags.next().copied();
        let first_type = next.map_or(u16::from(self.ethertype), |(tpid, _)| tpid);
        let header = EthernetHeader { dst: self.dst, src: self.src, ethertype: U16::new(first_type) };
        header.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::Ethernet, 14, len))?;
        let mut offset = size_of::<EthernetHeader>();
        while let Some((_, tci)) = next {
            next = tags.next().copied();
            let inner = next.map_or(u16::from(self.ethertype), |(tpid, _)| tpid);
            let tag = VlanTag { tci: U16::new(tci), ethertype: U16::new(inner) };
            let slot = buf.get_mut(offset..).ok_or_else(|| EmitError::no_room(Layer::Vlan, 4, len))?;
            tag.write_to_prefix(slot).map_err(|_| EmitError::no_room(Layer::Vlan, 4, len))?;
            offset += size_of::<VlanTag>();
        }
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// dst 02:00:00:00:00:02, src 02:00:00:00:00:01, 802.1Q VID 100 PCP 5,
    /// then IPv4.
    static TAGGED: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x81, 0x00, 0xa0, 0x64, // 802.1Q, PCP 5, VID 100
        0x08, 0x00, // IPv4
    ];

    fn tagged_repr() -> EthernetRepr {
        EthernetRepr {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            vlans: [Some((0x8100, 0xa064)), None],
            ethertype: EtherType::Ipv4,
        }
    }

    #[test]
    fn parse_tagged() {
        let (repr, len) = EthernetRepr::parse(&TAGGED).unwrap();
        assert_eq!(len, 18);
        assert_eq!(repr, tagged_repr());
    }

    #[test]
    fn emit_tagged() {
        let mut buf = vec![0xa5; 20];
        assert_eq!(tagged_repr().emit(&mut buf).unwrap(), 18);
        assert_eq!(&buf[..18], &TAGGED);
        assert_eq!(&buf[18..], &[0xa5, 0xa5]);
    }

    #[test]
    fn qinq_round_trip() {
        let repr = EthernetRepr { vlans: [Some((0x88a8, 7)), Some((0x8100, 100))], ..tagged_repr() };
        let mut buf = vec![0xa5; 22];
        assert_eq!(repr.emit(&mut buf).unwrap(), 22);
        assert_eq!(EthernetRepr::parse(&buf).unwrap(), (repr, 22));
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..TAGGED.len() {
            assert!(EthernetRepr::parse(&TAGGED[..len]).is_err(), "len {len}");
        }
        let mut short = [0u8; 17];
        assert!(tagged_repr().emit(&mut short).is_err());
    }

    #[test]
    fn unknown_ethertype_keeps_value() {
        assert_eq!(EtherType::from(0x1234), EtherType::Unknown(0x1234));
        assert_eq!(u16::from(EtherType::Unknown(0x1234)), 0x1234);
    }
}
