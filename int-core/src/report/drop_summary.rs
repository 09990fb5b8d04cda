//! Host-INT's Drop-Summary report (host-int-int05-format.md, "Drop-Summary
//! Report"): the fixed header with NProto 3, D and F set, this summary, then
//! a synthesised IPv4 header and UDP or TCP header that name the flow.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           source node ID                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                            sink node ID                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    ingress port: source       |        egress port: sink      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                            gap timestamp                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        gap sequence number                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                             gap count                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The synthesised IPv4 header is all zero but version 4, IHL 5, protocol
//! and addresses; the UDP header carries the ports and Length 8, the TCP
//! header only the ports. 64 bytes for a UDP flow, 76 for TCP.

use core::net::Ipv4Addr;

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::tr05::{self, NextProto, ReportHeaderRepr};
use crate::bytes::{be16, be32, put};
use crate::error::{EmitError, Layer, ParseError};
use crate::flow::FlowKey;
use crate::locate::{PROTO_TCP, PROTO_UDP};

pub const SUMMARY_LEN: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct DropSummary {
    pub source_node: U32,
    pub sink_node: U32,
    pub source_port: U16,
    pub sink_port: U16,
    pub gap_timestamp: U32,
    pub gap_sequence: U32,
    pub gap_count: U32,
}
const _: () = assert!(size_of::<DropSummary>() == SUMMARY_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DropSummaryRepr {
    pub source_node: u32,
    pub sink_node: u32,
    pub source_port: u16,
    pub sink_port: u16,
    /// When the gap was first seen (the report profile's unit).
    pub gap_timestamp: u32,
    /// The first missing flow sequence number.
    pub gap_sequence: u32,
    /// Packets inferred lost.
    pub gap_count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropSummaryReport {
    pub header: ReportHeaderRepr,
    pub summary: DropSummaryRepr,
    pub flow: FlowKey,
}

impl DropSummaryReport {
    /// Report length for a flow of this protocol.
    pub fn len_for(protocol: u8) -> usize {
        tr05::HEADER_LEN + SUMMARY_LEN + 20 + if protocol == PROTO_TCP { 20 } else { 8 }
    }

    /// Host-INT's layout names an IPv4 flow only: an IPv6 flow's summary is
    /// [`EmitError::Unrepresentable`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = Self::len_for(self.flow.protocol);
        let (src, dst) = self
            .flow
            .ipv4_addrs()
            .ok_or(EmitError::Unrepresentable { layer: Layer::DropSummary, value: 16 })?;
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::DropSummary, len, available))?;
        out.fill(0);
        self.header.emit(out)?;
        let s = &self.summary;
        let summary = DropSummary {
            source_node: U32::new(s.source_node),
            sink_node: U32::new(s.sink_node),
            source_port: U16::new(s.source_port),
            sink_port: U16::new(s.sink_port),
            gap_timestamp: U32::new(s.gap_timestamp),
            gap_sequence: U32::new(s.gap_sequence),
            gap_count: U32::new(s.gap_count),
        };
        let rest = crate::bytes::after_mut(out, tr05::HEADER_LEN, Layer::DropSummary, 0)?;
        summary
            .write_to_prefix(rest)
            .map_err(|_| EmitError::no_room(Layer::DropSummary, SUMMARY_LEN, len))?;
        let ip_at = tr05::HEADER_LEN + SUMMARY_LEN;
        let flow = &self.flow;
        put(out, ip_at, &[0x45]);
        put(out, ip_at + 9, &[flow.protocol]);
        put(out, ip_at + 12, &src.octets());
        put(out, ip_at + 16, &dst.octets());
        put(out, ip_at + 20, &flow.src_port.to_be_bytes());
        put(out, ip_at + 22, &flow.dst_port.to_be_bytes());
        if flow.protocol != PROTO_TCP {
            put(out, ip_at + 24, &8u16.to_be_bytes());
        }
        Ok(len)
    }

    /// Reads a Drop-Summary report, refusing anything its emitter would not
    /// write: a length other than 64 (UDP) or 76 (TCP) bytes, flags other
    /// than D and F, and non-zero bytes where the synthesised headers are
    /// all zero.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let header = ReportHeaderRepr::parse(bytes)?;
        if header.next_proto != NextProto::DropSummary {
            return Err(ParseError::UnknownType {
                layer: Layer::ReportHeader,
                offset: 0,
                value: u8::from(header.next_proto),
            });
        }
        let rest = crate::bytes::after(bytes, tr05::HEADER_LEN, Layer::DropSummary, 0)?;
        let (s, _) = DropSummary::ref_from_prefix(rest)
            .map_err(|_| ParseError::truncated(Layer::DropSummary, 12, SUMMARY_LEN, bytes.len()))?;
        let ip_at = tr05::HEADER_LEN + SUMMARY_LEN;
        let ip: &[u8; 20] = bytes
            .get(ip_at..)
            .and_then(<[u8]>::first_chunk)
            .ok_or_else(|| ParseError::truncated(Layer::Ipv4, ip_at, 20, bytes.len()))?;
        let protocol = ip[9];
        if ip.first() != Some(&0x45) {
            return Err(ParseError::UnknownVersion { layer: Layer::Ipv4, offset: ip_at, value: ip[0] >> 4 });
        }
        if protocol != PROTO_TCP && protocol != PROTO_UDP {
            return Err(ParseError::UnknownType { layer: Layer::Ipv4, offset: ip_at + 9, value: protocol });
        }
        let len = Self::len_for(protocol);
        let all =
            bytes.get(..len).ok_or_else(|| ParseError::truncated(Layer::DropSummary, 0, len, bytes.len()))?;
        if bytes.len() != len {
            return Err(ParseError::BadLength { layer: Layer::DropSummary, offset: 0, value: bytes.len() });
        }
        header.expect_flags(FLAGS)?;
        check_synthesised(all, ip_at, protocol)?;
        let addr = |at: usize| Ipv4Addr::from(be32(all, at));
        let flow = FlowKey::v4(
            addr(ip_at + 12),
            addr(ip_at + 16),
            protocol,
            be16(all, ip_at + 20),
            be16(all, ip_at + 22),
        );
        Ok(DropSummaryReport {
            header,
            summary: DropSummaryRepr {
                source_node: s.source_node.get(),
                sink_node: s.sink_node.get(),
                source_port: s.source_port.get(),
                sink_port: s.sink_port.get(),
                gap_timestamp: s.gap_timestamp.get(),
                gap_sequence: s.gap_sequence.get(),
                gap_count: s.gap_count.get(),
            },
            flow,
        })
    }
}

/// A Drop-Summary's header flags: D and F.
const FLAGS: u8 = 0xa0;

/// The synthesised IPv4 and L4 headers of a Drop-Summary (at `ip_at`): only
/// version/IHL, protocol, addresses, ports and (UDP) the length 8 are set.
fn check_synthesised(report: &[u8], ip_at: usize, protocol: u8) -> Result<(), ParseError> {
    let zero_ranges: &[(usize, usize)] =
        if protocol == PROTO_TCP { &[(1, 9), (10, 12), (24, 40)] } else { &[(1, 9), (10, 12), (26, 28)] };
    for &(from, to) in zero_ranges {
        let bytes = report.get(ip_at + from..ip_at + to).ok_or_else(|| {
            ParseError::truncated(Layer::DropSummary, ip_at + from, to - from, report.len())
        })?;
        if let Some((i, value)) = bytes.iter().enumerate().find(|(_, b)| **b != 0) {
            let layer = if from < 20 { Layer::Ipv4 } else { Layer::DropSummary };
            return Err(ParseError::Reserved { layer, offset: ip_at + from + i, value: *value });
        }
    }
    if protocol != PROTO_TCP && be16(report, ip_at + 24) != 8 {
        return Err(ParseError::BadLength {
            layer: Layer::Udp,
            offset: ip_at + 24,
            value: usize::from(be16(report, ip_at + 24)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP flow 10.0.0.1:4000 -> 10.0.0.2:5000 lost 3 packets from seq 10.
    static UDP_REPORT: [u8; 64] = [
        0x03, 0xa0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x65, 0x53, 0xf1, 0x00, // header
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, // source node, sink node
        0x00, 0x01, 0x00, 0x02, 0x65, 0x53, 0xf0, 0xff, // ports, gap timestamp
        0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x03, // gap seq, gap count
        0x45, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, // IPv4
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, //
        0x0f, 0xa0, 0x13, 0x88, 0x00, 0x08, 0x00, 0x00, // UDP
    ];

    fn report(protocol: u8) -> DropSummaryReport {
        DropSummaryReport {
            header: ReportHeaderRepr::drop_summary(2, 1_700_000_000, 0),
            summary: DropSummaryRepr {
                source_node: 1,
                sink_node: 2,
                source_port: 1,
                sink_port: 2,
                gap_timestamp: 1_699_999_999,
                gap_sequence: 10,
                gap_count: 3,
            },
            flow: FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), protocol, 4000, 5000),
        }
    }

    #[test]
    fn udp_golden() {
        let mut buf = vec![0xa5; 66];
        assert_eq!(report(17).emit(&mut buf).unwrap(), 64);
        assert_eq!(&buf[..64], &UDP_REPORT);
        assert_eq!(&buf[64..], &[0xa5, 0xa5]);
        assert_eq!(DropSummaryReport::parse(&UDP_REPORT).unwrap(), report(17));
    }

    #[test]
    fn tcp_is_76_bytes_with_ports_only() {
        let mut buf = vec![0xa5; 76];
        assert_eq!(report(6).emit(&mut buf).unwrap(), 76);
        assert_eq!(&buf[56..60], &[0x0f, 0xa0, 0x13, 0x88]);
        assert!(buf[60..].iter().all(|b| *b == 0));
        assert_eq!(DropSummaryReport::parse(&buf).unwrap(), report(6));
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..UDP_REPORT.len() {
            assert!(DropSummaryReport::parse(&UDP_REPORT[..len]).is_err(), "len {len}");
            assert!(report(17).emit(&mut vec![0; len]).is_err());
        }
    }
}
