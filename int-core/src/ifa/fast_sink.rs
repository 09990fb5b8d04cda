//! The IFA terminator's fast path: the frame an initiator writes on the
//! fast path's traffic (`int_core::fast`: Ethernet without VLAN tags, IPv4
//! without options and not fragmented or IPv6 without extension headers),
//! then the IFA header (version 2, GNS 15, no MF, TS or C), UDP or TCP
//! without options, the metadata header and a stack of whole hops, read at
//! fixed offsets into the [`Located`] the general walk would give. The
//! writes that follow (the strip, a transit's push) are the general
//! path's own, already straight-line: what the general path spends is the
//! walk (VLAN tags, IPv6's extension headers, the error values of every
//! step), and that is what this path leaves out. Every other frame (GRE,
//! a refused or cut one) is left to [`super::sink::find`], which gives the
//! frames this path takes the same answer (`tests/fast_ifa.rs` holds the
//! two together over every one-byte change and cut of such frames).

use crate::bytes::be16;
use crate::fast::{L3_AT, L4_AT, L4_AT_V6};
use crate::frame::FrameBuf;
use crate::locate::{Fragment, IpLocation, IpVersion, PROTO_TCP, PROTO_UDP};
use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HOP_BY_HOP, ROUTING};

use super::{
    header, hop, md_header, Action, Carrier, Domain, Flags, IfaHeaderRepr, L4Rule, Located, MdHeaderRepr,
};

/// The first byte of every IFA header this node reads: version 2, GNS 15.
const VERSION_GNS: u8 = (header::VERSION << 4) | header::NO_GLOBAL_NAME_SPACE;
/// The flags the general walk refuses.
const REFUSED: Flags = Flags::METADATA_FRAGMENT.union(Flags::TAIL_STAMP).union(Flags::CHECKSUM);
const UDP_LEN: usize = 8;
const TCP_LEN: usize = 20;

/// An IFA packet of the fast path's shape: where its parts lie, as
/// [`super::sink::find`] locates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSink {
    pub found: Located,
}

impl FastSink {
    /// The frame's IFA of `domain`, if the frame has the fast path's
    /// shape; `None`: the general path decides.
    #[inline(always)]
    pub fn find(frame: &[u8], domain: &Domain) -> Option<FastSink> {
        let ip = ip_at_fixed(frame, domain.protocol)?;
        locate_at_fixed(frame, ip).map(|found| FastSink { found })
    }

    /// Removes the IFA, as [`super::sink::strip`]; the bytes removed, or
    /// `None` (the frame unchanged).
    #[inline(always)]
    pub fn strip(&self, frame: &mut FrameBuf<'_>, rule: L4Rule) -> Option<usize> {
        super::sink::strip(frame, &self.found, rule)
    }

    /// Where a report's copy of the packet ends ([`Located::report_end`]).
    pub fn report_end(&self) -> usize {
        self.found.report_end()
    }

    /// Bytes the terminator removes.
    pub fn removed_len(&self) -> usize {
        self.found.ifa_len()
    }
}

/// The IP header of a fast-path frame whose upper-layer protocol is
/// `protocol`, checked as [`crate::locate::ip`] checks it; `None` for any
/// other frame (the general walk decides).
#[inline(always)]
pub(crate) fn ip_at_fixed(frame: &[u8], protocol: u8) -> Option<IpLocation> {
    let head: &[u8; L4_AT] = frame.first_chunk()?;
    match be16(head, 12) {
        0x0800 => {
            // IHL 5, not a fragment (DF may be set).
            if head[L3_AT] != 0x45 || be16(head, L3_AT + 6) & 0x3fff != 0 || head[L3_AT + 9] != protocol {
                return None;
            }
            let total_len = usize::from(be16(head, L3_AT + 2));
            let end = L3_AT + total_len;
            if total_len < 20 || end > frame.len() {
                return None;
            }
            let tos = head[L3_AT + 1];
            Some(fixed(IpVersion::V4, L4_AT, end, protocol, tos, L3_AT + 9))
        }
        0x86dd => {
            let head: &[u8; L4_AT_V6] = frame.first_chunk()?;
            // An extension header's number would start the walk there.
            let extension = matches!(protocol, HOP_BY_HOP | ROUTING | FRAGMENT | DESTINATION_OPTIONS);
            if head[L3_AT] >> 4 != 6 || head[L3_AT + 6] != protocol || extension {
                return None;
            }
            let end = L4_AT_V6 + usize::from(be16(head, L3_AT + 4));
            if end > frame.len() {
                return None;
            }
            let tos = head[L3_AT] << 4 | head[L3_AT + 1] >> 4;
            Some(fixed(IpVersion::V6, L4_AT_V6, end, protocol, tos, L3_AT + 6))
        }
        _ => None,
    }
}

#[inline(always)]
fn fixed(
    version: IpVersion,
    l4: usize,
    end: usize,
    protocol: u8,
    tos: u8,
    next_header_at: usize,
) -> IpLocation {
    IpLocation { version, l3: L3_AT, l4, end, protocol, tos, fragment: Fragment::Whole, next_header_at }
}

/// IFA after the IP header `ip`: the IFA header, UDP or TCP without
/// options, the metadata header and a stack of whole hops inside the IP
/// packet, as [`Domain::locate_in`] checks them; `None` for anything else.
#[inline(always)]
fn locate_at_fixed(frame: &[u8], ip: IpLocation) -> Option<Located> {
    let packet = frame.get(..ip.end)?;
    let header_at = ip.l4;
    let ifa: &[u8; header::HEADER_LEN] = packet.get(header_at..)?.first_chunk()?;
    let flags = Flags::from_bits_retain(ifa[2]);
    if ifa[0] != VERSION_GNS || flags.intersects(REFUSED) {
        return None;
    }
    let l4_at = header_at + header::HEADER_LEN;
    let (carrier, l4_len) = carrier_at(packet, ifa[1], l4_at)?;
    let md_at = l4_at + l4_len;
    let md: &[u8; md_header::HEADER_LEN] = packet.get(md_at..)?.first_chunk()?;
    let (max_length, current_length) = (ifa[3], md[3]);
    let stack_at = md_at + md_header::HEADER_LEN;
    let payload_at = stack_at + usize::from(current_length) * 4;
    let whole_hops = (usize::from(current_length) * 4).is_multiple_of(hop::HOP_LEN);
    if !whole_hops || current_length > max_length || payload_at > ip.end {
        return None;
    }
    let header = IfaHeaderRepr {
        version: header::VERSION,
        gns: header::NO_GLOBAL_NAME_SPACE,
        next_header: ifa[1],
        flags,
        max_length,
    };
    let md = MdHeaderRepr {
        request_vector: md[0],
        action: Action::from_bits_retain(md[1]),
        hop_limit: md[2],
        current_length,
    };
    Some(Located { ip, header_at, header, l4_at, carrier, md_at, md, stack_at, payload_at })
}

/// The UDP header, or the TCP header without options, at `at`; its
/// length.
#[inline(always)]
fn carrier_at(packet: &[u8], next_header: u8, at: usize) -> Option<(Carrier, usize)> {
    let l4 = packet.get(at..)?;
    let ports = |l4: &[u8]| (be16(l4, 0), be16(l4, 2));
    match next_header {
        PROTO_UDP => {
            let udp: &[u8; UDP_LEN] = l4.first_chunk()?;
            let (src_port, dst_port) = ports(udp);
            // A tunnel's stack lies before its payload as any other's:
            // the port only names what follows (Carrier::payload).
            Some((Carrier::Udp { src_port, dst_port, length: be16(udp, 4) }, UDP_LEN))
        }
        PROTO_TCP => {
            let tcp: &[u8; TCP_LEN] = l4.first_chunk()?;
            if tcp[12] >> 4 != 5 {
                return None;
            }
            let (src_port, dst_port) = ports(tcp);
            Some((Carrier::Tcp { src_port, dst_port }, TCP_LEN))
        }
        _ => None,
    }
}
