//! The header whose length and checksum cover the INT block: the data
//! packet's own UDP or TCP header (DSCP encapsulation) or the extension UDP
//! header. Every transform that adds or removes INT bytes fixes it here,
//! incrementally, so that a right checksum stays right, a wrong one stays
//! exactly as wrong, and a UDP checksum of 0 stays 0.

use zerocopy::FromBytes;

use crate::checksum;
use crate::locate::{self, IpLocation, IpVersion};
use crate::wire::{Ipv4Header, Ipv6Header, TcpHeader, UdpHeader};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// UDP header at this frame offset.
    Udp(usize),
    /// TCP header at this frame offset.
    Tcp(usize),
}

impl Default for Carrier {
    fn default() -> Self {
        Carrier::Udp(0)
    }
}

impl Carrier {
    /// The L4 length changes from `old_len` to `new_len` (UDP: its Length
    /// field, which is also in the pseudo-header; TCP: the pseudo-header
    /// length), and 16-bit words summing to `removed` were replaced by words
    /// summing to `added` inside the checksummed bytes.
    ///
    /// Always inlined: left to the compiler it stayed a call per packet in
    /// the sink (2.6% of the stage's profile; +2% sink Mpps inlined).
    #[inline(always)]
    pub(crate) fn update(self, frame: &mut [u8], old_len: u16, new_len: u16, removed: u32, added: u32) {
        match self {
            Carrier::Udp(at) => {
                if let Some((udp, _)) = frame.get_mut(at..).and_then(|b| UdpHeader::mut_from_prefix(b).ok()) {
                    udp.length.set(new_len);
                    let removed = removed + 2 * u32::from(old_len);
                    let added = added + 2 * u32::from(new_len);
                    udp.checksum.set(checksum::adjust_udp(udp.checksum.get(), removed, added));
                }
            }
            Carrier::Tcp(at) => {
                if let Some((tcp, _)) = frame.get_mut(at..).and_then(|b| TcpHeader::mut_from_prefix(b).ok()) {
                    let removed = removed + u32::from(old_len);
                    let added = added + u32::from(new_len);
                    tcp.checksum.set(checksum::adjust(tcp.checksum.get(), removed, added));
                }
            }
        }
    }
}

/// Rewrites the IP header `ip` describes: DSCP/ECN byte, length (`ip_len`
/// bytes of IP packet from `ip.l3`) and the upper-layer protocol. IPv4:
/// ToS, Total Length and Protocol, the header checksum following
/// incrementally. IPv6: Traffic Class, Payload Length and the Next Header
/// byte that names the upper layer (after any extension headers).
#[inline(always)]
pub(crate) fn rewrite_ip(frame: &mut [u8], ip: &IpLocation, tos: u8, ip_len: usize, protocol: u8) {
    match ip.version {
        IpVersion::V4 => {
            if let Some((header, _)) =
                frame.get_mut(ip.l3..).and_then(|b| Ipv4Header::mut_from_prefix(b).ok())
            {
                header.rewrite(tos, ip_len as u16, protocol);
            }
        }
        IpVersion::V6 => rewrite_ipv6(frame, ip, tos, ip_len, protocol),
    }
}

/// [`rewrite_ip`] for IPv6, out of line: kept off the fast-path frame's path
/// (inline, it cost an IPv4 source 6% in bench/README.md's A/B).
#[cold]
#[inline(never)]
fn rewrite_ipv6(frame: &mut [u8], ip: &IpLocation, tos: u8, ip_len: usize, protocol: u8) {
    if let Some((header, _)) = frame.get_mut(ip.l3..).and_then(|b| Ipv6Header::mut_from_prefix(b).ok()) {
        header.rewrite(tos, ip_len.saturating_sub(crate::wire::ipv6::HEADER_LEN) as u16);
    }
    if let Some(next_header) = frame.get_mut(ip.next_header_at) {
        *next_header = protocol;
    }
}

/// The checksum of a UDP header a transform inserted at `udp_at` in front
/// of INT bytes and the packet's original L4 segment (`inner_protocol`, at
/// `inner_at` to the end of the IP packet), in the packet `ip` describes
/// as it is now. IPv4 leaves it 0 ("none", as Host-INT and INT 2.1 do).
/// IPv6 forbids 0 (RFC 8200 section 8.1): the sum of the original segment
/// comes from its own checksum, which made it sum to zero with its
/// pseudo-header, so the new checksum is as right, or exactly as wrong, as
/// the original one; only an original UDP checksum of 0 (no sum to start
/// from) costs a pass over the segment.
#[cold]
#[inline(never)]
pub(crate) fn inserted_udp_checksum(
    frame: &[u8],
    ip: &IpLocation,
    udp_at: usize,
    inner_at: usize,
    inner_protocol: u8,
) -> u16 {
    if ip.version == IpVersion::V4 {
        return 0;
    }
    let addresses = checksum::sum(0, frame.get(ip.l3 + 8..ip.l3 + 40).unwrap_or_default());
    let inner_len = ip.end.saturating_sub(inner_at);
    let inner = frame.get(inner_at..ip.end).unwrap_or_default();
    let original = match inner_protocol {
        locate::PROTO_TCP => crate::bytes::be16(inner, 16),
        locate::PROTO_UDP => crate::bytes::be16(inner, 6),
        _ => 0,
    };
    let inner_sum = if original == 0 {
        checksum::sum(0, inner)
    } else {
        let pseudo = addresses + u32::from(inner_protocol) + inner_len as u32;
        u32::from(!checksum::fold(pseudo))
    };
    let udp_len = ip.end.saturating_sub(udp_at) as u32;
    let pseudo = addresses + u32::from(locate::PROTO_UDP) + udp_len;
    let head = checksum::sum(0, frame.get(udp_at..inner_at).unwrap_or_default());
    match !checksum::fold(pseudo + head + inner_sum) {
        0 => 0xffff,
        sum => sum,
    }
}
