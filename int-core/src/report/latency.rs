//! Host-INT's INT/IPv4 latency report (host-int-int05-format.md, "INT/IPv4
//! Report"): the fixed header with NProto 4 and F set, the sink node id word
//! (Host-INT's default; absent in the TR 0.5 profile), then the data packet
//! as the sink received it, from its IPv4 header to the end of INT: IPv4
//! header, UDP header or the first 20 bytes of TCP, and the INT block as if
//! the sink had pushed its own hop (shim Length and Total Hop Count grown,
//! the sink's hop on top) and without the tail. A UDP flow gives 92 bytes
//! with Host-INT's stack, TCP 104.
//!
//! Where we differ from Host-INT: when Max Hop Count was already reached on
//! arrival, the sink's hop is still added to the report (and E is kept as it
//! arrived): the report is the sink's own record, and without its hop the
//! latency would be lost. The packet itself never grows at the sink.

use core::net::{IpAddr, Ipv4Addr};

use zerocopy::FromBytes;

use super::tr05::{self, NextProto, ReportHeaderRepr};
use super::{ReportProfile, SinkIdWord};
use crate::bytes::{be16, be32};
use crate::error::{EmitError, Layer, ParseError};
use crate::int05::sink::Extracted;
use crate::int05::{shim, HopMetadata, IntBlock, MetadataHeaderRepr, ShimRepr, Tail, SEQUENCE_LEN};
use crate::wire::{Ipv4Header, Ipv4Repr};

/// A latency report's header flags: F (a tracked flow), not D or Q.
const FLAGS: u8 = 0x20;

/// A parsed latency report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyReport<'a> {
    pub header: ReportHeaderRepr,
    pub sink_id: Option<u32>,
    pub ip: Ipv4Repr,
    pub src_port: u16,
    pub dst_port: u16,
    pub block: IntBlock<'a>,
}

impl LatencyReport<'_> {
    /// The sink's hop (top of the stack) and the source's (bottom).
    pub fn sink_and_source(&self) -> Option<(HopMetadata, HopMetadata)> {
        let mut hops = self.block.stack.hops();
        let sink = hops.next()?;
        let source = hops.last()?;
        Some((sink, source))
    }

    /// Sink ingress time minus source ingress time (ns, low 32 bits of the
    /// epoch), unsigned as Host-INT computes it: a sink reports a latency
    /// only once it has told it apart from clock skew (ours by
    /// `latency.max_skew_ms`), so what it sends is a latency, up to 4.29 s;
    /// read as signed, one past 2^31 ns would turn negative.
    pub fn latency_ns(&self) -> Option<u32> {
        let (sink, source) = self.sink_and_source()?;
        Some(sink.ingress_timestamp?.wrapping_sub(source.ingress_timestamp?))
    }

    /// Bytes a latency report for `found` takes.
    pub fn len_for(found: &Extracted, profile: &ReportProfile) -> usize {
        tr05::HEADER_LEN + if profile.sink_id_word { 4 } else { 0 } + packet_len(found, true)
    }

    /// Writes a report for the INT packet `frame` (as received, before the
    /// strip) into `buf`; returns its length.
    pub fn build(
        buf: &mut [u8],
        frame: &[u8],
        found: &Extracted,
        sink_hop: &HopMetadata,
        header: &ReportHeaderRepr,
        sink_id: u32,
        profile: &ReportProfile,
    ) -> Result<usize, EmitError> {
        let len = Self::len_for(found, profile);
        let available = buf.len();
        let out =
            buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::LatencyReport, len, available))?;
        let short = || EmitError::no_room(Layer::LatencyReport, len, available);
        let mut at = header.emit(out)?;
        if profile.sink_id_word {
            out.get_mut(at..at + 4).ok_or_else(short)?.copy_from_slice(&sink_id.to_be_bytes());
            at += 4;
        }
        at += write_packet(out.get_mut(at..).ok_or_else(short)?, frame, found, Some(sink_hop))?;
        Ok(at)
    }

    pub fn parse(bytes: &[u8], sink_id: SinkIdWord) -> Result<LatencyReport<'_>, ParseError> {
        let header = ReportHeaderRepr::parse(bytes)?;
        if header.next_proto != NextProto::Ipv4 {
            return Err(ParseError::UnknownType {
                layer: Layer::ReportHeader,
                offset: 0,
                value: u8::from(header.next_proto),
            });
        }
        let after_header = crate::bytes::after(bytes, tr05::HEADER_LEN, Layer::LatencyReport, 4)?;
        let present = match sink_id {
            SinkIdWord::Present => true,
            SinkIdWord::Absent => false,
            SinkIdWord::Detect => !looks_like_ipv4(after_header),
        };
        let mut at = tr05::HEADER_LEN;
        let sink_id = if present {
            let word = bytes
                .get(at..at + 4)
                .ok_or_else(|| ParseError::truncated(Layer::LatencyReport, at, 4, bytes.len()))?;
            at += 4;
            Some(be32(word, 0))
        } else {
            None
        };
        let (ip, src_port, dst_port, block) = parse_packet(bytes, at)?;
        let ReportedIp::V4(ip) = ip else {
            // Host-INT's INT/IPv4 report has no IPv6 form.
            return Err(ParseError::UnknownVersion { layer: Layer::Ipv4, offset: at, value: 6 });
        };
        header.expect_flags(FLAGS)?;
        Ok(LatencyReport { header, sink_id, ip, src_port, dst_port, block })
    }

    pub fn src(&self) -> Ipv4Addr {
        self.ip.src
    }
}

/// Bytes [`write_packet`] writes for `found`.
pub(crate) fn packet_len(found: &Extracted, with_sink_hop: bool) -> usize {
    let hop_len = if with_sink_hop { found.header.instructions.hop_len() } else { 0 };
    (found.carrier_at() - found.l3()) + found.report_l4().1 + found.block_len - crate::int05::tail::HEADER_LEN
        + hop_len
}

/// The data packet a report carries, from the IPv4 header to the end of
/// INT: the IPv4 header and the flow's L4 header as received (in the UDP
/// encapsulation, as Host-INT's sink daemon writes them: the IPv4 protocol
/// is the flow's, from the tail, the checksum following, and the L4 header
/// is the original one after the block, so that a collector sees the flow's
/// own 5-tuple), then the INT block without its tail, with `sink_hop` on
/// top when given (shim Length and Total Hop Count grown). Returns its
/// length.
pub(crate) fn write_packet(
    out: &mut [u8],
    frame: &[u8],
    found: &Extracted,
    sink_hop: Option<&HopMetadata>,
) -> Result<usize, EmitError> {
    let len = packet_len(found, sink_hop.is_some());
    let available = out.len();
    let short = || EmitError::no_room(Layer::LatencyReport, len, available);
    let l3 = found.l3();
    let ip_len = found.carrier_at() - l3;
    let ip_bytes = frame.get(l3..found.carrier_at()).ok_or_else(short)?;
    let ip_out = out.get_mut(..ip_len).ok_or_else(short)?;
    ip_out.copy_from_slice(ip_bytes);
    if found.inner_l4().is_some() {
        set_protocol(ip_out, &found.ip, found.flow.protocol);
    }
    let mut at = ip_len;
    let (l4_at, l4_len) = found.report_l4();
    let l4 = frame.get(l4_at..l4_at + l4_len).ok_or_else(short)?;
    out.get_mut(at..at + l4_len).ok_or_else(short)?.copy_from_slice(l4);
    at += l4_len;
    let instructions = found.header.instructions;
    let hop_len = if sink_hop.is_some() { instructions.hop_len() } else { 0 };
    let stack_len = usize::from(found.header.total_hop_cnt) * instructions.hop_len();
    let new_block_len = found.block_len - crate::int05::tail::HEADER_LEN + hop_len;
    ShimRepr { int_type: found.shim_type, length_words: (new_block_len / 4) as u8 }
        .emit(out.get_mut(at..).ok_or_else(short)?)?;
    at += shim::HEADER_LEN;
    let pushed = u8::from(sink_hop.is_some());
    let md = MetadataHeaderRepr {
        total_hop_cnt: found.header.total_hop_cnt.saturating_add(pushed),
        ..found.header
    };
    at += md.emit(out.get_mut(at..).ok_or_else(short)?)?;
    if let Some(hop) = sink_hop {
        at += hop.emit(instructions, out.get_mut(at..).ok_or_else(short)?)?;
    }
    let stack_at = found.block_at + IntBlock::STACK_OFFSET;
    let stack = frame.get(stack_at..stack_at + stack_len).ok_or_else(short)?;
    out.get_mut(at..at + stack_len).ok_or_else(short)?.copy_from_slice(stack);
    at += stack_len;
    if let Some(sequence) = found.sequence {
        out.get_mut(at..at + SEQUENCE_LEN).ok_or_else(short)?.copy_from_slice(&sequence.to_be_bytes());
        at += SEQUENCE_LEN;
    }
    Ok(at)
}

/// The IP header a report's packet starts with, as far as a collector
/// reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketIp {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// The flow's protocol (in the UDP encapsulation, restored from the
    /// tail by the sink that wrote the report).
    pub protocol: u8,
}

/// What [`parse_packet`] read: the IPv4 header whole (Host-INT's latency
/// report keeps it), or an IPv6 one as a [`PacketIp`].
pub(crate) enum ReportedIp {
    V4(Ipv4Repr),
    V6(PacketIp),
}

impl ReportedIp {
    pub(crate) fn packet_ip(&self) -> PacketIp {
        match self {
            ReportedIp::V4(ip) => {
                PacketIp { src: ip.src.into(), dst: ip.dst.into(), protocol: u8::from(ip.protocol) }
            }
            ReportedIp::V6(ip) => *ip,
        }
    }
}

/// Reads what [`write_packet`] wrote, at `at` in `bytes` to their end: the
/// IP header (IPv4, or IPv6 and its extension headers), the flow's ports
/// and the INT block (nothing may trail it).
pub(crate) fn parse_packet(
    bytes: &[u8],
    at: usize,
) -> Result<(ReportedIp, u16, u16, IntBlock<'_>), ParseError> {
    let packet = crate::bytes::after(bytes, at, Layer::LatencyReport, 20)?;
    let (ip, ip_len) = if packet.first().is_some_and(|byte| byte >> 4 == 6) {
        let walk = crate::wire::ipv6::walk_extensions(packet).map_err(|e| e.shifted(at))?;
        let ip =
            PacketIp { src: walk.header.src.into(), dst: walk.header.dst.into(), protocol: walk.protocol };
        (ReportedIp::V6(ip), walk.upper_at)
    } else {
        let (ip, ip_len) = Ipv4Repr::parse(packet).map_err(|e| e.shifted(at))?;
        (ReportedIp::V4(ip), ip_len)
    };
    let mut at = at + ip_len;
    let carrier_len = match ip.packet_ip().protocol {
        crate::locate::PROTO_UDP => crate::wire::udp::HEADER_LEN,
        crate::locate::PROTO_TCP => crate::wire::tcp::MIN_HEADER_LEN,
        value => {
            return Err(ParseError::UnknownType { layer: Layer::LatencyReport, offset: at - ip_len, value })
        }
    };
    let carrier = bytes
        .get(at..at + carrier_len)
        .ok_or_else(|| ParseError::truncated(Layer::LatencyReport, at, carrier_len, bytes.len()))?;
    let (src_port, dst_port) = (be16(carrier, 0), be16(carrier, 2));
    at += carrier_len;
    let block = IntBlock::parse(crate::bytes::after(bytes, at, Layer::IntShim, 4)?, Tail::Absent)
        .map_err(|e| e.shifted(at))?;
    if at + block.len() != bytes.len() {
        return Err(ParseError::BadLength { layer: Layer::LatencyReport, offset: at, value: bytes.len() });
    }
    Ok((ip, src_port, dst_port, block))
}

/// An IPv4 header with IHL 5-15 and protocol TCP or UDP.
fn looks_like_ipv4(bytes: &[u8]) -> bool {
    match (bytes.first(), bytes.get(9)) {
        (Some(&vihl), Some(&protocol)) => vihl >> 4 == 4 && vihl & 0x0f >= 5 && matches!(protocol, 6 | 17),
        _ => false,
    }
}

/// Sets the protocol of the IP headers `ip` (as `location` found them in
/// the frame): IPv4's, its checksum following incrementally, or the last
/// Next Header of IPv6's chain.
fn set_protocol(ip: &mut [u8], location: &crate::locate::IpLocation, protocol: u8) {
    if location.version == crate::locate::IpVersion::V6 {
        if let Some(byte) = ip.get_mut(location.next_header_at - location.l3) {
            *byte = protocol;
        }
        return;
    }
    let Ok((header, _)) = Ipv4Header::mut_from_prefix(ip) else { return };
    let old = header.ttl_protocol_word();
    header.protocol = protocol;
    let checksum =
        crate::checksum::adjust(header.checksum.get(), u32::from(old), u32::from(header.ttl_protocol_word()));
    header.checksum.set(checksum);
}
