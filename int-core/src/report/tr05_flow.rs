//! A sink's flow report in plain Telemetry Report 0.5 (telemetry-report-
//! v0.5.md sections 3.2 and 4): NProto 2, the Switch Local header with
//! this sink's metadata, then the packet as an Ethernet frame cut after
//! its INT block, so that a collector that speaks only TR 0.5 reads every
//! header it defines.
//!
//! - Fixed header: Ver 0, NProto 2, F set (a tracked flow), D and Q clear,
//!   hw_id from the profile, the exporter's sequence number, the sink's
//!   ingress time in nanoseconds (low 32 bits of the epoch).
//! - Switch Local header: switch id = the node id, ingress and egress port
//!   ids = the sink's INT port, queue id 0 and occupancy 0 (a software
//!   node has no switch queue to read), egress timestamp (ns, low 32 bits).
//! - The frame: the Ethernet header (and VLAN tags) as received, then what
//!   Host-INT's latency report carries after its header, without the
//!   sink's hop (its metadata is in the Switch Local header, as section 4
//!   allows): the IP header (IPv6: and its extension headers), the flow's
//!   L4 header (8 bytes of UDP, the
//!   first 20 of TCP) and the INT block as received, without Host-INT's
//!   tail. One-way latency is the fixed header's ingress timestamp minus
//!   the bottom hop's.
//!
//! Host-INT's INT/IPv4 latency report has no IPv6 form: a sink in
//! Host-INT's profile reports an IPv6 flow with this report instead.
//!
//! TR 0.5 has no report for packets lost between nodes (its drop report
//! is for a device that dropped a packet itself): a sink in this profile
//! counts losses (`lost_packets`) and sends none.

use super::latency::{packet_len, parse_packet, write_packet, PacketIp};
use super::tr05::{self, NextProto, ReportHeaderRepr, SwitchLocalRepr};
use crate::error::{EmitError, Layer, ParseError};
use crate::int05::sink::Extracted;
use crate::int05::{HopMetadata, IntBlock};
use crate::wire::EtherType;

/// F: a tracked flow.
const FLAGS: u8 = 0x20;

/// A parsed flow report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowReport<'a> {
    pub header: ReportHeaderRepr,
    pub local: SwitchLocalRepr,
    /// The Ethernet header and VLAN tags of the packet.
    pub ethernet: &'a [u8],
    pub ip: PacketIp,
    pub src_port: u16,
    pub dst_port: u16,
    pub block: IntBlock<'a>,
}

impl<'a> FlowReport<'a> {
    /// The fixed header of a flow report.
    pub fn header(sequence: u32, timestamp_ns: u32, hw_id: u8) -> ReportHeaderRepr {
        ReportHeaderRepr {
            next_proto: NextProto::SwitchLocalEthernet,
            timestamp: timestamp_ns,
            ..ReportHeaderRepr::latency(sequence, timestamp_ns, hw_id)
        }
    }

    /// Bytes a flow report for `found` takes.
    pub fn len_for(found: &Extracted) -> usize {
        tr05::HEADER_LEN + tr05::SWITCH_LOCAL_LEN + found.l3() + packet_len(found, false)
    }

    /// Writes the report on the INT packet `frame` (as received, before the
    /// strip) into `buf`; returns its length.
    pub fn build(
        buf: &mut [u8],
        frame: &[u8],
        found: &Extracted,
        header: &ReportHeaderRepr,
        local: &SwitchLocalRepr,
    ) -> Result<usize, EmitError> {
        let len = Self::len_for(found);
        let available = buf.len();
        let out =
            buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::ReportHeader, len, available))?;
        let short = || EmitError::no_room(Layer::ReportHeader, len, available);
        let mut at = header.emit(out)?;
        at += local.emit(out.get_mut(at..).ok_or_else(short)?)?;
        let ethernet = frame.get(..found.l3()).ok_or_else(short)?;
        out.get_mut(at..at + ethernet.len()).ok_or_else(short)?.copy_from_slice(ethernet);
        at += ethernet.len();
        at += write_packet(out.get_mut(at..).ok_or_else(short)?, frame, found, None)?;
        Ok(at)
    }

    /// Reads a flow report, refusing what its emitter would not write:
    /// another NProto, flags other than F, a frame that is not Ethernet
    /// (with up to two VLAN tags) and IP, bytes after the INT block.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ParseError> {
        let header = ReportHeaderRepr::parse(bytes)?;
        if header.next_proto != NextProto::SwitchLocalEthernet {
            return Err(ParseError::UnknownType {
                layer: Layer::ReportHeader,
                offset: 0,
                value: u8::from(header.next_proto),
            });
        }
        header.expect_flags(FLAGS)?;
        let at = tr05::HEADER_LEN;
        let local = SwitchLocalRepr::parse(crate::bytes::after(bytes, at, Layer::SwitchLocalHeader, 8)?)
            .map_err(|e| e.shifted(at))?;
        let at = at + tr05::SWITCH_LOCAL_LEN;
        let ethernet_len =
            ethernet_len(crate::bytes::after(bytes, at, Layer::Ethernet, 14)?).map_err(|e| e.shifted(at))?;
        let ethernet = bytes
            .get(at..at + ethernet_len)
            .ok_or_else(|| ParseError::truncated(Layer::Ethernet, at, ethernet_len, bytes.len()))?;
        let (ip, src_port, dst_port, block) = parse_packet(bytes, at + ethernet_len)?;
        Ok(FlowReport { header, local, ethernet, ip: ip.packet_ip(), src_port, dst_port, block })
    }

    /// The reported packet's flow.
    pub fn flow(&self) -> crate::flow::FlowKey {
        crate::flow::FlowKey {
            src: self.ip.src,
            dst: self.ip.dst,
            protocol: self.ip.protocol,
            src_port: self.src_port,
            dst_port: self.dst_port,
        }
    }

    /// The bottom hop of the stack: the source's.
    pub fn source_hop(&self) -> Option<HopMetadata> {
        self.block.stack.hops().last()
    }

    /// Sink ingress time minus the source's (ns, low 32 bits), unsigned:
    /// as a latency report's ([`super::latency::LatencyReport::latency_ns`]).
    pub fn latency_ns(&self) -> Option<u32> {
        let source = self.source_hop()?.ingress_timestamp?;
        Some(self.header.timestamp.wrapping_sub(source))
    }
}

/// Bytes of Ethernet header and VLAN tags in front of an IP header.
fn ethernet_len(frame: &[u8]) -> Result<usize, ParseError> {
    let (ethertype, len) = crate::locate::l2(frame)?;
    if !matches!(ethertype, EtherType::Ipv4 | EtherType::Ipv6) {
        let value = u16::from(ethertype);
        return Err(ParseError::UnknownType {
            layer: Layer::Ethernet,
            offset: len - 2,
            value: (value >> 8) as u8,
        });
    }
    Ok(len)
}
