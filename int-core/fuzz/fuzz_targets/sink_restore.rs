//! What the sink forwards, judged by a parser nobody here wrote: whatever
//! arbitrary frame the sink accepts as INT, its output walks cleanly under
//! etherparse (Ethernet, IPv4 lengths or IPv6 and its extension headers,
//! UDP length, TCP Data Offset) and
//! every checksum in it is exactly as right, or as wrong, as it was in the
//! input (IPv4 header; the L4 checksum over what the input's covered: the
//! whole carrier in the DSCP encapsulation, less a Host-INT tail, the inner
//! header in the UDP one); a UDP checksum of 0 stays 0.
#![no_main]

use int_core::checksum;
use int_core::encap::{Encapsulation, TcpPlacement, EXTENSION_UDP_LEN};
use int_core::encap::Domain;
use int_core::locate::{self, IpVersion};
use int_core::sink;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

/// A checksum's verdict: right, wrong, or (UDP) none.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Right,
    Wrong,
    None,
}

/// The verdict on an L4 checksum over `segment` with a pseudo-header of
/// `addresses` (the sum of IPv4's 8 or IPv6's 32 address bytes).
fn l4_verdict(addresses: u32, protocol: u8, segment: &[u8]) -> Verdict {
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
fn walk(frame: &[u8]) -> (Verdict, Verdict) {
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

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let config = Domain {
        encapsulation: if selector & 1 == 0 {
            Encapsulation::default()
        } else {
            Encapsulation::ExtensionUdp { port: 33122 }
        },
        tcp_placement: if selector & 2 == 0 {
            TcpPlacement::BeforeOptions
        } else {
            TcpPlacement::AfterOptions
        },
    };
    let Ok(Some(found)) = sink::extract(frame, &config) else { return };
    let Ok(Some(ip)) = locate::ip(frame) else { panic!("extract accepted a frame with no IP header") };
    // The input's verdicts, on what its checksums covered.
    let (ip_in, addresses) = match ip.version {
        IpVersion::V4 => {
            let right = checksum::checksum(&frame[ip.l3..ip.l4]) == 0;
            (if right { Verdict::Right } else { Verdict::Wrong }, checksum::sum(0, &frame[ip.l3 + 12..ip.l3 + 20]))
        }
        IpVersion::V6 => (Verdict::Right, checksum::sum(0, &frame[ip.l3 + 8..ip.l3 + 40])),
    };
    let l4_in = match config.encapsulation {
        // A tail that is not informative is Host-INT's, which the L4
        // checksum does not cover (its first bytes may hold the kernel's
        // checksum completion): judge the input without it.
        Encapsulation::OverTcpUdp { .. } if !found.tail_informative() => {
            let mut segment = frame[ip.l4..ip.end].to_vec();
            let tail_at = found.block_at + found.block_len - 4 - ip.l4;
            segment[tail_at..tail_at + 4].fill(0);
            l4_verdict(addresses, ip.protocol, &segment)
        }
        Encapsulation::OverTcpUdp { .. } => l4_verdict(addresses, ip.protocol, &frame[ip.l4..ip.end]),
        Encapsulation::ExtensionUdp { .. } => {
            let inner = ip.l4 + EXTENSION_UDP_LEN + found.block_len;
            l4_verdict(addresses, found.tail.protocol, &frame[inner..ip.end])
        }
    };

    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
    sink::strip(&mut view, &found, &config).expect("extract accepted it");
    let (ip_out, l4_out) = walk(view.frame());
    assert_eq!(ip_out, ip_in, "IPv4 header checksum");
    if !ip.is_fragment() {
        assert_eq!(l4_out, l4_in, "L4 checksum");
    }
});
