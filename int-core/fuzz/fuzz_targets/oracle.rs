//! The oracle the sink fuzz targets share: etherparse's walk of what a
//! sink forwards, and the verdict on each checksum in it.

use int_core::checksum;
use int_core::locate::{IpLocation, IpVersion};

/// A checksum's verdict: right, wrong, or (UDP) none.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Right,
    Wrong,
    None,
}

/// The verdict on an L4 checksum over `segment` with a pseudo-header of
/// `addresses` (the sum of IPv4's 8 or IPv6's 32 address bytes).
pub fn l4_verdict(addresses: u32, protocol: u8, segment: &[u8]) -> Verdict {
    if protocol == 17 && segment.get(6..8) == Some(&[0, 0]) {
        return Verdict::None;
    }
    let pseudo = addresses + u32::from(protocol) + segment.len() as u32;
    if checksum::fold(checksum::sum(pseudo, segment)) == 0xffff {
        Verdict::Right
    } else {
        Verdict::Wrong
    }
}

/// etherparse's walk of a frame: the IPv4 header checksum's verdict (IPv6
/// has none: Right), and the L4 verdict over what etherparse takes to be
/// the segment.
pub fn walk(frame: &[u8]) -> (Verdict, Verdict) {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let packet = SlicedPacket::from_ethernet(frame).expect("the sink's output walks cleanly");
    let (ip_verdict, addresses, segment) = match &packet.net {
        // Over the raw header: etherparse's own recomputation drops the
        // reserved flag bit, which the node must carry as it came.
        Some(NetSlice::Ipv4(ip)) => {
            let verdict =
                if checksum::checksum(ip.header().slice()) == 0 { Verdict::Right } else { Verdict::Wrong };
            let header = ip.header();
            let addresses = checksum::sum(checksum::sum(0, &header.source()), &header.destination());
            (verdict, addresses, ip.payload().payload)
        }
        Some(NetSlice::Ipv6(ip)) => {
            let header = ip.header();
            let addresses = checksum::sum(checksum::sum(0, &header.source()), &header.destination());
            (Verdict::Right, addresses, ip.payload().payload)
        }
        _ => panic!("the sink's output lost its IP header"),
    };
    let l4 = match packet.transport {
        Some(TransportSlice::Udp(_)) => l4_verdict(addresses, 17, segment),
        Some(TransportSlice::Tcp(_)) => l4_verdict(addresses, 6, segment),
        // A first fragment: its L4 checksum covers the whole datagram.
        _ => Verdict::None,
    };
    (ip_verdict, l4)
}

/// The input's IPv4 header checksum verdict (IPv6: Right) and the sum of
/// its addresses, for the L4 pseudo-header.
pub fn ip_verdict(frame: &[u8], ip: &IpLocation) -> (Verdict, u32) {
    match ip.version {
        IpVersion::V4 => {
            let right = checksum::checksum(&frame[ip.l3..ip.l4]) == 0;
            (if right { Verdict::Right } else { Verdict::Wrong }, checksum::sum(0, &frame[ip.l3 + 12..ip.l3 + 20]))
        }
        IpVersion::V6 => (Verdict::Right, checksum::sum(0, &frame[ip.l3 + 8..ip.l3 + 40])),
    }
}
