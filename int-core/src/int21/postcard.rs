//! INT-XD (INT 2.1, "INT Application Modes"): a node exports its own
//! metadata on the packets of the flows its watchlist names, and the
//! packets pass untouched ("postcards"). What such a node reads of a
//! packet: its flow, its IP version, and the bytes a report carries of it.
//!
//! A postcard carries the packet from its IP header through its TCP or UDP
//! header and the first [`PAYLOAD_BYTES`] of payload (Telemetry Report 2.0,
//! "Flow Identification": "a truncated packet fragment including the
//! original packet headers"): enough for the collector to tell the flow
//! and, with the bytes no hop changes, to match the postcards several
//! nodes send of one packet.

use core::ops::Range;

use crate::fast::{FastFrame, L3_AT};
use crate::flow::{flow_key, FlowKey};
use crate::locate::{IpVersion, L4};
use crate::outcome::Skip;
use crate::wire::udp::HEADER_LEN as UDP_LEN;

/// Payload bytes a postcard carries after the TCP or UDP header.
pub const PAYLOAD_BYTES: usize = 16;

/// A packet as an INT-XD node reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Postcard {
    pub flow: FlowKey,
    pub version: IpVersion,
    /// Where the bytes a report carries lie in the frame.
    pub contents: Range<usize>,
}

/// Reads a frame; only unfragmented TCP and UDP packets get postcards.
pub fn read(frame: &[u8]) -> Result<Postcard, Skip> {
    let (ip, l4) = crate::outcome::tcp_udp(frame)?;
    let (src_port, dst_port) = l4.ports();
    let header_len = match l4 {
        L4::Udp { .. } => UDP_LEN,
        L4::Tcp { header_len, .. } => header_len,
    };
    let end = (ip.l4 + header_len + PAYLOAD_BYTES).min(ip.end).min(frame.len());
    Ok(Postcard {
        flow: flow_key(frame, &ip, ip.protocol, src_port, dst_port),
        version: ip.version,
        contents: ip.l3..end,
    })
}

/// What [`read`] gives of a fast-path frame (`fast` read from `frame`),
/// without the general walk and without the flow's key: the IP version
/// and the bytes a report carries. A property test holds the two together.
#[inline(always)]
pub fn read_fast(frame: &[u8], fast: &FastFrame) -> (IpVersion, Range<usize>) {
    let version = if fast.is_ipv6() { IpVersion::V6 } else { IpVersion::V4 };
    let end = (fast.payload_at() + PAYLOAD_BYTES).min(fast.end()).min(frame.len());
    (version, L3_AT..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::craft::PacketSpec;
    use core::net::{Ipv4Addr, Ipv6Addr};

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// A UDP packet of 100 payload bytes: its flow, and contents from the
    /// IP header through 16 bytes of payload.
    #[test]
    fn a_udp_packet_s_postcard_holds_its_headers_and_16_payload_bytes() {
        let frame = PacketSpec::udp(A, B, 1000, 2000, 100).build();
        let postcard = read(&frame).unwrap();
        assert_eq!(postcard.contents, 14..14 + 20 + 8 + PAYLOAD_BYTES);
        assert_eq!(postcard.flow, FlowKey::v4(A, B, 17, 1000, 2000));
        assert_eq!(postcard.version, IpVersion::V4);
    }

    /// TCP (with options) and IPv6: the L4 header whole, then 16 bytes.
    #[test]
    fn tcp_and_ipv6() {
        let tcp = PacketSpec::tcp(A, B, 1000, 80, 100);
        let tcp_header = tcp.build().get(14 + 12 + 20).map(|b| usize::from(b >> 4) * 4).unwrap();
        assert_eq!(read(&tcp.build()).unwrap().contents, 14..14 + 20 + tcp_header + PAYLOAD_BYTES);
        let v6 = PacketSpec::udp6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 1, 2, 100).build();
        let postcard = read(&v6).unwrap();
        assert_eq!((postcard.version, postcard.contents), (IpVersion::V6, 14..14 + 40 + 8 + PAYLOAD_BYTES));
    }

    /// A packet shorter than the cut gives all it has, and never reads
    /// into the Ethernet padding.
    #[test]
    fn a_short_packet_gives_what_it_has() {
        let mut frame = PacketSpec::udp(A, B, 1, 2, 4).build();
        frame.resize(80, 0);
        assert_eq!(read(&frame).unwrap().contents, 14..14 + 20 + 8 + 4);
    }

    /// What is not an unfragmented TCP or UDP packet gets no postcard, and
    /// a cut frame is refused, never a panic.
    #[test]
    fn others_get_none() {
        let frame = PacketSpec::udp(A, B, 1, 2, 40).build();
        for cut in 0..14 + 20 + 8 {
            assert!(read(frame.get(..cut).unwrap()).is_err(), "cut at {cut}");
        }
        assert_eq!(read(&[0u8; 60]), Err(Skip::NotIp));
    }

    /// The fast read gives what the general one gives, flow key included,
    /// wherever the fast path takes a frame: over every one-byte change
    /// and every cut of UDP, TCP, IPv6 and padded frames.
    #[test]
    fn the_fast_read_agrees_with_the_general_one() {
        let mut padded = PacketSpec::udp(A, B, 1, 2, 4).build();
        padded.resize(80, 0);
        let frames = [
            PacketSpec::udp(A, B, 1000, 2000, 100).build(),
            PacketSpec::tcp(A, B, 1000, 80, 100).build(),
            PacketSpec::tcp6(Ipv6Addr::UNSPECIFIED, Ipv6Addr::LOCALHOST, 3, 4, 0).build(),
            PacketSpec::udp6(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED, 1, 2, 30).build(),
            padded,
        ];
        let mut taken = 0;
        let mut agree = |frame: &[u8]| {
            let Some(fast) = FastFrame::read(frame, 0) else { return };
            let general = read(frame).unwrap();
            assert_eq!(read_fast(frame, &fast), (general.version, general.contents), "{frame:02x?}");
            assert_eq!(fast.flow_key(frame), Some(general.flow));
            taken += 1;
        };
        for frame in &frames {
            for cut in 0..=frame.len() {
                agree(frame.get(..cut).unwrap());
            }
            for at in 0..frame.len() {
                for value in [0x00, 0x06, 0x11, 0x45, 0xff] {
                    let mut changed = frame.clone();
                    changed[at] = value;
                    agree(&changed);
                }
            }
        }
        assert!(taken > 1000, "{taken}");
    }
}
