//! INT source: insert an INT 0.5 block into an IPv4 TCP/UDP packet, in
//! place, moving only the headers in front of it into the headroom.
//!
//! DSCP encapsulation (INT_05_OVER_TCP_UDP): the block goes after the UDP
//! header or after the TCP header (before or after the options, see
//! [`TcpPlacement`]); IPv4 Total Length, UDP Length and the L4 checksum grow
//! with it and the DSCP mark is set. UDP encapsulation
//! (INT_05_EXTENSION_UDP): a UDP header to the INT port and the block go
//! right after IPv4; protocol becomes 17; the original L4 bytes are not
//! touched.
//!
//! Where we differ from Host-INT: the tail carries the original protocol,
//! destination port and DSCP in both encapsulations, as INT 0.5 asks (a
//! Host-INT sink ignores them; our sink uses them to restore the packet
//! exactly); the MTU is the caller's, not a fixed 1500; the shim Type (1 or
//! 3), bitmap, Max Hop Count and whether the source adds its own hop are
//! the caller's.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::encap::{Encapsulation, TcpPlacement, EXTENSION_UDP_LEN};
use crate::error::ParseError;
use crate::flow::FlowKey;
use crate::frame::FrameBuf;
use crate::int05::{self, HopMetadata, Instructions, IntBlock, MetadataHeaderRepr, ShimType, Tail, TailRepr};
use crate::locate::{self, Ipv4Location, L4};
use crate::wire::UdpRepr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceConfig {
    pub encapsulation: Encapsulation,
    pub tcp_placement: TcpPlacement,
    /// `HostIntSequence` (Type 3, with a flow sequence number) or `HopByHop`
    /// (Type 1, plain INT 0.5).
    pub shim_type: ShimType,
    pub instructions: Instructions,
    pub max_hop_cnt: u8,
    /// Whether the source pushes its own hop (Total Hop Count 1) or only the
    /// header (Total Hop Count 0).
    pub own_hop: bool,
    /// The largest IPv4 Total Length allowed after insertion (the MTU).
    pub max_ip_len: u16,
}

impl SourceConfig {
    /// Host-INT's source: Type 3, 0xCC00, Max Hop 2, own hop, DSCP 0x01/0x01.
    pub fn host_int(mtu: u16) -> Self {
        SourceConfig {
            encapsulation: Encapsulation::default(),
            tcp_placement: TcpPlacement::BeforeOptions,
            shim_type: ShimType::HostIntSequence,
            instructions: Instructions::HOST_INT,
            max_hop_cnt: 2,
            own_hop: true,
            max_ip_len: mtu,
        }
    }

    /// Bytes of the INT block this source writes.
    pub fn block_len(&self) -> usize {
        IntBlock::fixed_len(self.shim_type, Tail::Present)
            + if self.own_hop { self.instructions.hop_len() } else { 0 }
    }

    /// Bytes added to each instrumented packet.
    pub fn added_len(&self) -> usize {
        self.block_len()
            + match self.encapsulation {
                Encapsulation::ExtensionUdp { .. } => EXTENSION_UDP_LEN,
                Encapsulation::OverTcpUdp { .. } => 0,
            }
    }

    /// Problems that make this configuration unusable, if any.
    pub fn check(&self) -> Result<(), &'static str> {
        if !matches!(self.shim_type, ShimType::HopByHop | ShimType::HostIntSequence) {
            return Err("shim type must be 1 (hop-by-hop) or 3 (Host-INT)");
        }
        if self.instructions.count() > 31 {
            return Err("at most 31 instructions fit in Ins Cnt");
        }
        if self.own_hop && self.max_hop_cnt == 0 {
            return Err("max hop count 0 leaves no room for the source's own hop");
        }
        if self.block_len() > int05::MAX_BLOCK_LEN {
            return Err("the INT block would exceed 255 words");
        }
        if let Encapsulation::OverTcpUdp { dscp_mask, .. } = self.encapsulation {
            if dscp_mask & 0x3f == 0 {
                return Err("a DSCP mask of 0 marks nothing");
            }
        }
        Ok(())
    }
}

/// Why a packet leaves the source untouched. Each is counted by the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    NotIpv4,
    NotTcpUdp,
    /// A fragment other than the first: it has no L4 header.
    LaterFragment,
    /// Already carries this domain's INT mark or port: not instrumented twice.
    AlreadyMarked,
    /// The result would exceed the MTU.
    TooBig,
    /// The buffer has too little headroom (a node bug or a tiny mbuf).
    NoHeadroom,
    /// The headers lie; the packet is forwarded as it is.
    Malformed(ParseError),
}

/// A packet the source will instrument: its flow and where INT goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub flow: FlowKey,
    ip: Ipv4Location,
    l4: L4,
    /// Frame offset where the gap opens.
    insert_at: usize,
}

/// Decides whether and where to instrument a frame. Reads only.
#[inline]
pub fn plan(frame: &[u8], config: &SourceConfig) -> Result<Plan, Skip> {
    let ip = locate::ipv4(frame).map_err(Skip::Malformed)?.ok_or(Skip::NotIpv4)?;
    if !matches!(ip.protocol, locate::PROTO_TCP | locate::PROTO_UDP) {
        return Err(Skip::NotTcpUdp);
    }
    if ip.fragment_offset != 0 {
        return Err(Skip::LaterFragment);
    }
    let l4 = locate::l4(frame, &ip).map_err(Skip::Malformed)?.ok_or(Skip::NotTcpUdp)?;
    let (src_port, dst_port) = l4.ports();
    let insert_at = match (config.encapsulation, l4) {
        (Encapsulation::OverTcpUdp { .. }, _) if config.encapsulation.tos_is_marked(ip.tos) => {
            return Err(Skip::AlreadyMarked)
        }
        (Encapsulation::ExtensionUdp { port }, L4::Udp { dst_port, .. }) if dst_port == port => {
            return Err(Skip::AlreadyMarked)
        }
        (Encapsulation::ExtensionUdp { .. }, _) => ip.l4,
        (Encapsulation::OverTcpUdp { .. }, L4::Udp { .. }) => ip.l4 + crate::wire::udp::HEADER_LEN,
        (Encapsulation::OverTcpUdp { .. }, L4::Tcp { header_len, .. }) => {
            ip.l4 + config.tcp_placement.offset(header_len)
        }
    };
    if ip.end - ip.l3 + config.added_len() > usize::from(config.max_ip_len) {
        return Err(Skip::TooBig);
    }
    // A first fragment's UDP Length covers the whole datagram: it must
    // still fit in 16 bits after the insertion.
    if let L4::Udp { length, .. } = l4 {
        if usize::from(length) + config.added_len() > usize::from(u16::MAX) {
            return Err(Skip::TooBig);
        }
    }
    let flow = flow_key(frame, &ip, ip.protocol, src_port, dst_port);
    Ok(Plan { flow, ip, l4, insert_at })
}

pub(crate) fn flow_key(
    frame: &[u8],
    ip: &Ipv4Location,
    protocol: u8,
    src_port: u16,
    dst_port: u16,
) -> FlowKey {
    let addr = |at: usize| match frame.get(at..at + 4) {
        Some(&[a, b, c, d]) => core::net::Ipv4Addr::new(a, b, c, d),
        _ => core::net::Ipv4Addr::UNSPECIFIED,
    };
    FlowKey { src: addr(ip.l3 + 12), dst: addr(ip.l3 + 16), protocol, src_port, dst_port }
}

/// Inserts the block planned by [`plan`]: `sequence` goes into a Type 3
/// shim, `hop` is the source's own metadata (used when `own_hop`). Returns
/// the bytes added.
#[inline]
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    config: &SourceConfig,
    sequence: u32,
    hop: &HopMetadata,
) -> Result<usize, Skip> {
    let added = config.added_len();
    let block_len = config.block_len();
    let ip = plan.ip;
    let (src_port, dst_port) = plan.l4.ports();
    let original_payload_len = ip.payload_len();
    if !frame.open_gap(plan.insert_at, added) {
        return Err(Skip::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    let mut block_at = plan.insert_at;
    let mut protocol = ip.protocol;
    if let Encapsulation::ExtensionUdp { port } = config.encapsulation {
        let udp = UdpRepr {
            src_port,
            dst_port: port,
            length: (EXTENSION_UDP_LEN + block_len + original_payload_len) as u16,
            checksum: 0,
        };
        udp.emit(bytes.get_mut(block_at..).unwrap_or(&mut [])).map_err(Skip::Malformed)?;
        block_at += EXTENSION_UDP_LEN;
        protocol = locate::PROTO_UDP;
    }
    let header = MetadataHeaderRepr::new(config.instructions, config.max_hop_cnt, 0);
    let tail = TailRepr { protocol: ip.protocol, dst_port, dscp: ip.tos >> 2 };
    let hops = if config.own_hop { core::slice::from_ref(hop) } else { &[] };
    let block = bytes.get_mut(block_at..block_at + block_len).unwrap_or(&mut []);
    int05::emit_block(block, config.shim_type, &header, hops, sequence, Some(&tail))
        .map_err(Skip::Malformed)?;
    let block_sum = checksum::sum(0, block);

    let old_total = (ip.end - ip.l3) as u16;
    let new_total = old_total + added as u16;
    carrier::rewrite_ipv4(bytes, ip.l3, config.encapsulation.mark_tos(ip.tos), new_total, protocol);
    if let Encapsulation::OverTcpUdp { .. } = config.encapsulation {
        let (carrier, old_len) = match plan.l4 {
            L4::Udp { length, .. } => (Carrier::Udp(ip.l4), length),
            L4::Tcp { .. } => (Carrier::Tcp(ip.l4), original_payload_len as u16),
        };
        carrier.update(bytes, old_len, old_len + added as u16, 0, block_sum);
    }
    Ok(added)
}
