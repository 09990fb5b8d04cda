//! Where an INT 2.1 block sits in a frame, by the domain's marking (INT
//! 2.1 section 5.7.2), and the flow it belongs to: the first step of a
//! sink and a transit hop, and what decode reads.

use crate::error::{Layer, ParseError};
use crate::flow::FlowKey;
use crate::marking::{DscpMatch, TcpPlacement};
use zerocopy::FromBytes;

use crate::flow::flow_key;
use crate::locate::{self, IpLocation, L4};

use super::{Block, Body, Next};

/// What every node of an INT 2.1 domain must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain {
    pub marking: Marking,
    /// Where INT sits in a TCP segment with options.
    pub tcp_placement: TcpPlacement,
    /// The 'source-only' domain metadata the domain's sources put at the
    /// bottom of the stack.
    pub source_only: super::SourceOnly,
}

/// How packets announce INT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marking {
    /// A DSCP value or bit; INT after the TCP or UDP header (NPT 0).
    Dscp(DscpMatch),
    /// A UDP destination port: INT after the UDP header, the original port
    /// in the shim (NPT 1), or after a UDP header the source inserted, the
    /// original protocol in the shim (NPT 2).
    UdpPort(u16),
}

/// An INT 2.1 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found<'a> {
    pub ip: IpLocation,
    /// The L4 header INT follows (the inserted UDP header for NPT 2).
    pub l4: L4,
    pub block_at: usize,
    pub block: Block<'a>,
    /// The original flow: the shim's port or protocol and the original L4
    /// header's ports where NPT says so.
    pub flow: FlowKey,
}

/// What a frame is to a node of an INT 2.1 domain: the same three answers,
/// by the same rules, as an INT 0.5 sink's [`crate::int05::sink::Arrival`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival<T> {
    /// An INT packet of this domain, checked.
    Int(T),
    /// Not marked (or headers that cannot be walked to TCP or UDP, or a
    /// fragment after the first): not this domain's; forward as it is.
    NotInt,
    /// Marked, but what follows the L4 header is no INT 2.1 shim (too short
    /// for one, or a type no INT 2.1 node writes: traffic that uses the
    /// mark for something else). Forward as it is.
    MarkedNotInt,
}

impl<T> Arrival<T> {
    /// The INT packet, if it is one.
    pub fn int(self) -> Option<T> {
        match self {
            Arrival::Int(found) => Some(found),
            Arrival::NotInt | Arrival::MarkedNotInt => None,
        }
    }
}

/// Finds and parses the INT block of a frame. `Ok(None)`: not a packet of
/// this domain ([`classify`] tells why). `Err`: marked as INT, carrying a
/// shim, but the headers or the block lie.
pub fn find<'a>(frame: &'a [u8], domain: &Domain) -> Result<Option<Found<'a>>, ParseError> {
    classify(frame, domain).map(Arrival::int)
}

/// [`find`], telling marked packets without INT from unmarked ones. Only a
/// packet that is marked and starts its payload with a shim can be
/// malformed: a lie anywhere before that makes it someone else's traffic.
pub fn classify<'a>(frame: &'a [u8], domain: &Domain) -> Result<Arrival<Found<'a>>, ParseError> {
    let Some((ip, l4)) = walk(frame) else { return Ok(Arrival::NotInt) };
    let block_at = match (domain.marking, l4) {
        (Marking::Dscp(dscp), _) if !dscp.tos_is_marked(ip.tos) => return Ok(Arrival::NotInt),
        (Marking::Dscp(_), L4::Udp { .. }) => ip.l4 + crate::wire::udp::HEADER_LEN,
        (Marking::Dscp(_), L4::Tcp { header_len, .. }) => ip.l4 + domain.tcp_placement.offset(header_len),
        (Marking::UdpPort(port), L4::Udp { dst_port, .. }) if dst_port == port => {
            ip.l4 + crate::wire::udp::HEADER_LEN
        }
        (Marking::UdpPort(_), _) => return Ok(Arrival::NotInt),
    };
    // Marked, with no room for a shim where INT would be: not INT.
    let Some(region) = frame.get(block_at..ip.end).filter(|r| starts_with_a_shim(r)) else {
        return Ok(Arrival::MarkedNotInt);
    };
    let block = Block::parse(region, domain.source_only).map_err(|e| e.shifted(block_at))?;
    tcp_header_fits(&ip, l4, block.len())?;
    let flow = flow_of(frame, &ip, l4, block, block_at, domain.marking)?;
    Ok(Arrival::Int(Found { ip, l4, block_at, block, flow }))
}

/// The IP and L4 headers of a whole packet or a first fragment, where they
/// can be walked.
fn walk(frame: &[u8]) -> Option<(IpLocation, L4)> {
    let ip = locate::ip(frame).ok()??;
    if ip.is_fragment() {
        return None;
    }
    let l4 = locate::l4(frame, &ip).ok()??;
    Some((ip, l4))
}

/// Whether `region` begins with a shim of a type INT 2.1 defines (MD,
/// destination, MX).
fn starts_with_a_shim(region: &[u8]) -> bool {
    region.len() >= super::shim::HEADER_LEN
        && region.first().is_some_and(|byte| super::shim::HeaderType::from_bits(byte >> 4).is_some())
}

/// The TCP header must fit in what stays once the block is gone: a Data
/// Offset that reaches into the INT block would restore a segment whose
/// header overruns it (the INT 0.5 sink's rule).
fn tcp_header_fits(ip: &IpLocation, l4: L4, block_len: usize) -> Result<(), ParseError> {
    match l4 {
        L4::Tcp { header_len, .. } if ip.l4 + header_len + block_len > ip.end => {
            Err(ParseError::BadLength { layer: Layer::Tcp, offset: ip.l4 + 12, value: header_len })
        }
        _ => Ok(()),
    }
}

/// The INT 2.1 header and data of a packet a telemetry report carries, and
/// its original flow: from its IPv4 or IPv6 header, possibly cut short
/// after the block (its lengths then cover more than is there). Only the
/// headers in front of the block, and with NPT 2 the original L4 header's
/// ports, are read. INT in a VXLAN-GPE or Geneve tunnel is read too; its
/// flow is the tunnel's.
pub fn find_in_report<'a>(
    packet: &'a [u8],
    domain: &Domain,
) -> Result<Option<(Body<'a>, FlowKey)>, ParseError> {
    let ip = reported_ip(packet)?;
    let l4 = ip.upper_at;
    let port =
        |at: usize| packet.get(at..at + 2).and_then(|b| b.try_into().ok()).map_or(0, u16::from_be_bytes);
    if ip.protocol == locate::PROTO_UDP {
        if let Some(body) = in_reported_tunnel(crate::bytes::after(packet, l4, Layer::Udp, 8)?, domain)? {
            let flow = FlowKey {
                src: ip.src,
                dst: ip.dst,
                protocol: ip.protocol,
                src_port: port(l4),
                dst_port: port(l4 + 2),
            };
            return Ok(Some((body, flow)));
        }
    }
    let block_at = match (domain.marking, ip.protocol) {
        (Marking::Dscp(dscp), _) if !dscp.tos_is_marked(ip.tos) => return Ok(None),
        (_, locate::PROTO_UDP) => l4 + crate::wire::udp::HEADER_LEN,
        (Marking::Dscp(_), locate::PROTO_TCP) => {
            let (tcp, _) =
                crate::wire::TcpHeader::ref_from_prefix(crate::bytes::after(packet, l4, Layer::Tcp, 20)?)
                    .map_err(|_| ParseError::truncated(Layer::Tcp, l4, 20, packet.len()))?;
            l4 + domain.tcp_placement.offset(tcp.header_len())
        }
        _ => return Ok(None),
    };
    let region = crate::bytes::after(packet, block_at, Layer::IntShim, 4)?;
    let block = Block::parse(region, domain.source_only).map_err(|e| e.shifted(block_at))?;
    let (protocol, src_port, dst_port) = match block.shim().next {
        Next::Dscp(_) => (ip.protocol, port(l4), port(l4 + 2)),
        Next::UdpPort(original) => (ip.protocol, port(l4), original),
        Next::IpProtocol(protocol) => {
            let inner = block_at + block.len();
            (protocol, port(inner), port(inner + 2))
        }
    };
    let flow = FlowKey { src: ip.src, dst: ip.dst, protocol, src_port, dst_port };
    Ok(Some((block.body(), flow)))
}

/// The INT data in a reported tunnel packet's VXLAN-GPE or Geneve header
/// (`udp`: from the outer UDP header on).
fn in_reported_tunnel<'a>(udp: &'a [u8], domain: &Domain) -> Result<Option<Body<'a>>, ParseError> {
    let dst_port = udp.get(2..4).and_then(|b| b.try_into().ok()).map_or(0, u16::from_be_bytes);
    let at = crate::wire::udp::HEADER_LEN;
    let payload = crate::bytes::after(udp, at, Layer::Udp, 0)?;
    let shifted = |e: ParseError| e.shifted(at);
    Ok(match dst_port {
        crate::wire::vxlan_gpe::UDP_PORT => {
            super::tunnel::gpe_int(payload, domain.source_only).map_err(shifted)?.map(|found| found.body)
        }
        crate::wire::geneve::UDP_PORT => {
            super::tunnel::geneve_int(payload, domain.source_only).map_err(shifted)?.map(|found| found.body)
        }
        _ => None,
    })
}

/// What a report's packet says of itself up to its upper-layer header.
struct ReportedIp {
    src: core::net::IpAddr,
    dst: core::net::IpAddr,
    protocol: u8,
    tos: u8,
    upper_at: usize,
}

/// The flow of a packet a report carries, as far as its headers go (a
/// dropped packet's first bytes may end anywhere): an IPv4 or IPv6 packet,
/// or an Ethernet frame (802.1Q tags skipped) holding one. The ports are
/// those on the wire (TCP and UDP; 0 for other protocols, and for a UDP or
/// TCP header cut short). `None` where the IP header itself is not there.
pub fn reported_flow(packet: &[u8], ethernet: bool) -> Option<FlowKey> {
    let packet = reported_packet(packet, ethernet)?;
    let ip = reported_ip(packet).ok()?;
    let port = |at: usize| packet.get(at..at + 2).and_then(|b| b.try_into().ok()).map(u16::from_be_bytes);
    let l4 = matches!(ip.protocol, locate::PROTO_UDP | locate::PROTO_TCP);
    let (src_port, dst_port) = match (l4, port(ip.upper_at), port(ip.upper_at + 2)) {
        (true, Some(src), Some(dst)) => (src, dst),
        _ => (0, 0),
    };
    Some(FlowKey { src: ip.src, dst: ip.dst, protocol: ip.protocol, src_port, dst_port })
}

/// The IP packet a report carries: the whole of it, or for an Ethernet
/// frame what follows its header and 802.1Q tags, if that is IP.
pub fn reported_packet(packet: &[u8], ethernet: bool) -> Option<&[u8]> {
    if ethernet {
        ethernet_payload(packet)
    } else {
        Some(packet)
    }
}

fn ethernet_payload(frame: &[u8]) -> Option<&[u8]> {
    let mut at = 12;
    loop {
        let ethertype = frame.get(at..at + 2).and_then(|b| b.try_into().ok()).map(u16::from_be_bytes)?;
        match ethertype {
            0x8100 | 0x88a8 => at += 4,
            0x0800 | 0x86dd => return frame.get(at + 2..),
            _ => return None,
        }
    }
}

/// The IPv4 header, or the IPv6 header and its extension headers, at the
/// start of a report's packet.
fn reported_ip(packet: &[u8]) -> Result<ReportedIp, ParseError> {
    if packet.first().is_some_and(|byte| byte >> 4 == 6) {
        let walk = crate::wire::ipv6::walk_extensions(packet)?;
        return Ok(ReportedIp {
            src: walk.header.src.into(),
            dst: walk.header.dst.into(),
            protocol: walk.protocol,
            tos: walk.header.traffic_class,
            upper_at: walk.upper_at,
        });
    }
    let (ip, _) = crate::wire::Ipv4Header::ref_from_prefix(packet)
        .map_err(|_| ParseError::truncated(Layer::Ipv4, 0, 20, packet.len()))?;
    Ok(ReportedIp {
        src: ip.src_addr().into(),
        dst: ip.dst_addr().into(),
        protocol: ip.protocol,
        tos: ip.tos,
        upper_at: ip.header_len(),
    })
}

/// The original flow, by NPT; an NPT the marking does not allow is refused.
fn flow_of(
    frame: &[u8],
    ip: &IpLocation,
    l4: L4,
    block: Block<'_>,
    block_at: usize,
    marking: Marking,
) -> Result<FlowKey, ParseError> {
    let (src_port, dst_port) = l4.ports();
    match (marking, block.shim().next) {
        (Marking::Dscp(_), Next::Dscp(_)) => Ok(flow_key(frame, ip, ip.protocol, src_port, dst_port)),
        (Marking::UdpPort(_), Next::UdpPort(original)) => {
            Ok(flow_key(frame, ip, ip.protocol, src_port, original))
        }
        (Marking::UdpPort(_), Next::IpProtocol(protocol)) => {
            let (src, dst) = crate::locate::l4_at(frame, protocol, block_at + block.len(), ip)?;
            Ok(flow_key(frame, ip, protocol, src, dst))
        }
        (_, next) => {
            let npt = match next {
                Next::Dscp(_) => 0,
                Next::UdpPort(_) => 1,
                Next::IpProtocol(_) => 2,
            };
            Err(ParseError::UnknownType { layer: Layer::IntShim, offset: block_at, value: npt })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::craft::PacketSpec;
    use crate::int21::{emit_md_block, HopMetadata, Instructions, MdHeaderRepr};

    /// A dropped packet's flow from its first bytes: an Ethernet frame cut
    /// inside its UDP header names the addresses and protocol, ports 0; an
    /// IPv6 packet and a VLAN-tagged frame name the whole 5-tuple; a frame
    /// that is not IP names nothing.
    #[test]
    fn a_reported_packet_names_its_flow_as_far_as_its_headers_go() {
        let frame = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 4000, 5000, 64).build();
        let whole = reported_flow(&frame, true).unwrap();
        assert_eq!(whole, FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 4000, 5000));
        assert_eq!(reported_flow(&frame[14..], false), Some(whole));
        let cut = reported_flow(&frame[..14 + 20 + 3], true).unwrap();
        assert_eq!((cut.src_port, cut.dst_port, cut.protocol), (0, 0, 17));
        assert_eq!(reported_flow(&frame[..14 + 19], true), None);
        let mut tagged = frame.clone();
        tagged.splice(12..12, [0x81, 0x00, 0x00, 0x07]);
        assert_eq!(reported_flow(&tagged, true), Some(whole));
        let v6 = PacketSpec::tcp6("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap(), 1, 2, 10).build();
        let flow = reported_flow(&v6, true).unwrap();
        assert_eq!(
            (flow.src.to_string().as_str(), flow.protocol, flow.src_port, flow.dst_port),
            ("fd00::1", 6, 1, 2)
        );
        let mut arp = frame;
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(reported_flow(&arp, true), None);
    }

    fn header() -> MdHeaderRepr {
        MdHeaderRepr {
            hop_ml: 2,
            remaining_hop_cnt: 6,
            instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
            ..MdHeaderRepr::default()
        }
    }

    /// `frame` with `block` after byte `at`, IPv4 and UDP lengths grown
    /// (checksums are not the point here).
    fn with_block(
        mut frame: Vec<u8>,
        at: usize,
        block: &[u8],
        tos: Option<u8>,
        udp_dst: Option<u16>,
    ) -> Vec<u8> {
        frame.splice(at..at, block.iter().copied());
        let total = u16::from_be_bytes([frame[16], frame[17]]) + block.len() as u16;
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        if let Some(tos) = tos {
            frame[15] = tos;
        }
        if frame[23] == 17 {
            let udp_len = u16::from_be_bytes([frame[38], frame[39]]) + block.len() as u16;
            frame[38..40].copy_from_slice(&udp_len.to_be_bytes());
            if let Some(port) = udp_dst {
                frame[36..38].copy_from_slice(&port.to_be_bytes());
            }
        }
        frame
    }

    #[test]
    fn dscp_marked_md_after_tcp() {
        let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let frame = PacketSpec::tcp(a, b, 1000, 80, 20).build();
        let hops = [HopMetadata { node_id: Some(2), ..HopMetadata::default() }];
        let mut block = [0u8; 64];
        let len = emit_md_block(&mut block, Next::Dscp(0), &header(), &hops, &[]).unwrap();
        let marked = with_block(frame, 54, &block[..len], Some(0x17 << 2), None);
        let domain = Domain {
            marking: Marking::Dscp(DscpMatch::new(0x17, 0x3f).unwrap()),
            tcp_placement: TcpPlacement::BeforeOptions,
            source_only: crate::int21::SourceOnly::NONE,
        };
        let found = find(&marked, &domain).unwrap().unwrap();
        assert_eq!(found.block_at, 54);
        assert_eq!((found.flow.protocol, found.flow.src_port, found.flow.dst_port), (6, 1000, 80));
        let Block::Md(md) = found.block else { panic!("not MD") };
        assert_eq!(md.hops().next().unwrap().node_id, Some(2));
        // Unmarked, the same bytes are no INT packet.
        let mut plain = marked.clone();
        plain[15] = 0;
        assert_eq!(find(&plain, &domain), Ok(None));
    }

    #[test]
    fn udp_port_marking_restores_the_flow_from_the_shim() {
        let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let domain = Domain {
            marking: Marking::UdpPort(7777),
            tcp_placement: TcpPlacement::BeforeOptions,
            source_only: crate::int21::SourceOnly::NONE,
        };
        let mut block = [0u8; 64];
        // NPT 1: the original destination port 5001 in the shim.
        let len = emit_md_block(&mut block, Next::UdpPort(5001), &header(), &[], &[]).unwrap();
        let frame =
            with_block(PacketSpec::udp(a, b, 4000, 5001, 30).build(), 42, &block[..len], None, Some(7777));
        let found = find(&frame, &domain).unwrap().unwrap();
        assert_eq!((found.flow.protocol, found.flow.dst_port), (17, 5001));
        // NPT 2: a UDP header before the original TCP header.
        let len = emit_md_block(&mut block, Next::IpProtocol(6), &header(), &[], &[]).unwrap();
        let mut frame = PacketSpec::tcp(a, b, 1000, 80, 20).build();
        let udp = [0x30, 0x39, 0x1e, 0x61, 0, 8 + 40, 0, 0];
        frame.splice(34..34, udp);
        frame[23] = 17;
        let total = u16::from_be_bytes([frame[16], frame[17]]) + 8;
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        let frame = with_block(frame, 42, &block[..len], None, None);
        let found = find(&frame, &domain).unwrap().unwrap();
        assert_eq!((found.flow.protocol, found.flow.src_port, found.flow.dst_port), (6, 1000, 80));
        // The port marking with an NPT 0 shim is refused.
        let len = emit_md_block(&mut block, Next::Dscp(0), &header(), &[], &[]).unwrap();
        let frame =
            with_block(PacketSpec::udp(a, b, 4000, 5001, 30).build(), 42, &block[..len], None, Some(7777));
        assert!(matches!(find(&frame, &domain), Err(ParseError::UnknownType { layer: Layer::IntShim, .. })));
    }
}
