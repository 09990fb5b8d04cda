//! What the sink forwards, judged by a parser nobody here wrote: whatever
//! arbitrary frame the sink accepts as INT, its output walks cleanly under
//! etherparse (Ethernet, IPv4 lengths, UDP length, TCP Data Offset) and
//! every checksum in it is exactly as right, or as wrong, as it was in the
//! input (IPv4 header; the L4 checksum over what the input's covered: the
//! whole carrier in the DSCP encapsulation, less a Host-INT tail, the inner
//! header in the UDP one); a UDP checksum of 0 stays 0.
#![no_main]

use int_core::checksum;
use int_core::encap::{Encapsulation, TcpPlacement, EXTENSION_UDP_LEN};
use int_core::encap::Domain;
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

/// The verdict on an L4 checksum over `segment` with the IPv4 pseudo-header.
fn l4_verdict(src: [u8; 4], dst: [u8; 4], protocol: u8, segment: &[u8]) -> Verdict {
    if protocol == 17 && segment.get(6..8) == Some(&[0, 0]) {
        return Verdict::None;
    }
    let pseudo = checksum::pseudo_header_sum(src.into(), dst.into(), protocol, segment.len() as u16);
    if checksum::fold(checksum::sum(pseudo, segment)) == 0xffff {
        Verdict::Right
    } else {
        Verdict::Wrong
    }
}

/// etherparse's walk of a frame: the IPv4 header checksum's verdict, and
/// the L4 verdict over what etherparse takes to be the segment.
fn walk(frame: &[u8]) -> (Verdict, Verdict) {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let packet = SlicedPacket::from_ethernet(frame).expect("the sink's output walks cleanly");
    let Some(NetSlice::Ipv4(ip)) = packet.net else { panic!("the sink's output lost its IPv4 header") };
    let header = ip.header().to_header();
    // Over the raw header: etherparse's own recomputation drops the
    // reserved flag bit, which the node must carry as it came.
    let ip_verdict =
        if checksum::checksum(ip.header().slice()) == 0 { Verdict::Right } else { Verdict::Wrong };
    let segment = ip.payload().payload;
    let l4 = match packet.transport {
        Some(TransportSlice::Udp(_)) => l4_verdict(header.source, header.destination, 17, segment),
        Some(TransportSlice::Tcp(_)) => l4_verdict(header.source, header.destination, 6, segment),
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
    // The input's verdicts, on what its checksums covered.
    let l3 = found.l3();
    let ip_header = &frame[l3..found.carrier_at()];
    let ihl = usize::from(ip_header[0] & 0x0f) * 4;
    let ip_in = if checksum::checksum(&frame[l3..l3 + ihl]) == 0 { Verdict::Right } else { Verdict::Wrong };
    let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
    let (src, dst) =
        (frame[l3 + 12..l3 + 16].try_into().unwrap(), frame[l3 + 16..l3 + 20].try_into().unwrap());
    let fragment = u16::from_be_bytes([frame[l3 + 6], frame[l3 + 7]]) & 0x3fff != 0;
    let l4_in = match config.encapsulation {
        // A tail that is not informative is Host-INT's, which the L4
        // checksum does not cover (its first bytes may hold the kernel's
        // checksum completion): judge the input without it.
        Encapsulation::OverTcpUdp { .. } if !found.tail_informative() => {
            let mut segment = frame[l3 + ihl..l3 + total].to_vec();
            let tail_at = found.block_at + found.block_len - 4 - (l3 + ihl);
            segment[tail_at..tail_at + 4].fill(0);
            l4_verdict(src, dst, frame[l3 + 9], &segment)
        }
        Encapsulation::OverTcpUdp { .. } => l4_verdict(src, dst, frame[l3 + 9], &frame[l3 + ihl..l3 + total]),
        Encapsulation::ExtensionUdp { .. } => {
            let inner = l3 + ihl + EXTENSION_UDP_LEN + found.block_len;
            l4_verdict(src, dst, found.tail.protocol, &frame[inner..l3 + total])
        }
    };

    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
    sink::strip(&mut view, &found, &config).expect("extract accepted it");
    let (ip_out, l4_out) = walk(view.frame());
    assert_eq!(ip_out, ip_in, "IPv4 header checksum");
    if !fragment {
        assert_eq!(l4_out, l4_in, "L4 checksum");
    }
});
