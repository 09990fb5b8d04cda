//! INT 2.1 source over TCP/UDP (INT 2.1 sections 5.3, 5.6, 5.7.2, 5.8): a
//! block after the L4 header marked by DSCP (NPT 0, the original DSCP kept
//! in the shim), after a UDP header whose destination port becomes the INT
//! port (NPT 1, the original port kept), or after a UDP header inserted
//! before the original TCP header (NPT 2, the original protocol kept).
//!
//! MTU (section 5.3): a packet that cannot take the fixed headers is not
//! instrumented; one that can take them but not the source's own metadata
//! is instrumented without it and gets the M bit. The L4 checksum is
//! updated incrementally (a UDP checksum of 0 stays 0); a checksum
//! complement the bitmap asks for is written as all ones, "not used"
//! (section 5.6). A UDP header the source inserts has checksum 0 over
//! IPv4, as the text recommends; IPv6 forbids 0, so there it is computed
//! (see [`carrier::inserted_udp_checksum`]). Over IPv6 the DSCP is in the
//! Traffic Class, the length Payload Length, and an inserted UDP header
//! goes after the extension headers.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::flow::flow_key;
use crate::flow::FlowKey;
use crate::frame::FrameBuf;
use crate::locate::{self, IpLocation, IpVersion, L4};
use crate::outcome::Skip;

use super::in_tunnel::{self, TunnelPlan};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use crate::wire::UdpRepr;

use super::{
    emit_md_block, Domain, HeaderType, HopMetadata, Instructions, Marking, MdHeaderRepr, MxHeaderRepr, Next,
    ShimRepr, FIXED_LEN,
};

/// The longest block a source writes: the fixed headers, its own hop (Hop
/// ML at most 31 words) and the packet number. Per packet, a buffer of this
/// size is cleared rather than one of [`super::MAX_BLOCK_LEN`].
const SOURCE_BLOCK_MAX: usize = FIXED_LEN + super::md_header::MAX_HOP_ML as usize * 4 + 4;

/// What a source of an INT 2.1 domain writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceConfig {
    pub domain: Domain,
    /// INT-MD (hops push metadata) or INT-MX (every node reports).
    pub header_type: HeaderType,
    pub instructions: Instructions,
    /// Domain specific words each hop adds after the baseline metadata.
    pub ds_words: u8,
    /// Remaining Hop Count before the source's own push.
    pub max_hops: u8,
    /// Whether the source pushes its own metadata (INT-MD).
    pub own_hop: bool,
    pub domain_id: u16,
    pub ds_instructions: u16,
    pub ds_flags: u16,
    /// D: sinks discard the packet after reporting it (probe traffic).
    pub discard: bool,
    /// The largest IP packet allowed after the insertion (the MTU).
    pub max_ip_len: u16,
}

impl SourceConfig {
    /// Hop ML: the bitmap's words and the domain specific ones.
    pub fn hop_ml(&self) -> u8 {
        (self.instructions.words() + usize::from(self.ds_words)).min(255) as u8
    }

    /// The settings a block cannot be written with.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.header_type == HeaderType::Destination {
            return Err("a source writes INT-MD or INT-MX headers");
        }
        if self.header_type == HeaderType::Md && self.hop_ml() > super::md_header::MAX_HOP_ML {
            return Err(
                "the instructions and domain words take more than 31 words per hop (Hop ML is 5 bits)",
            );
        }
        if self.header_type == HeaderType::Md && self.hop_ml() == 0 {
            return Err("INT-MD needs at least one instruction or domain word");
        }
        let others = self.ds_instructions & !super::source_only::SEQUENCE;
        if self.domain.source_only.words(self.domain_id, others) != 0 {
            return Err("the only source-only metadata a source writes is the packet number");
        }
        if self.own_hop && self.header_type == HeaderType::Md && self.max_hops == 0 {
            return Err("a Remaining Hop Count of 0 leaves no room for the source's own metadata");
        }
        Ok(())
    }

    /// Whether each packet carries its flow's number (source-only).
    pub fn numbers_packets(&self) -> bool {
        self.source_only_len() != 0
    }

    /// Bytes of source-only metadata the source adds: the packet number,
    /// when the domain defines it and the DS Instruction asks for it.
    fn source_only_len(&self) -> usize {
        if self.header_type == HeaderType::Md {
            usize::from(self.domain.source_only.words(self.domain_id, self.ds_instructions)) * 4
        } else {
            0
        }
    }

    /// Bytes the source's own metadata takes.
    fn own_hop_len(&self) -> usize {
        if self.own_hop && self.header_type == HeaderType::Md {
            usize::from(self.hop_ml()) * 4
        } else {
            0
        }
    }
}

/// A packet the source will instrument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub flow: FlowKey,
    pub ip: IpLocation,
    pub l4: L4,
    /// Where the block (or, for NPT 2, the new UDP header) goes.
    pub insert_at: usize,
    pub next: Next,
    /// The MTU leaves no room for the source's own metadata: M is set.
    pub mtu_exceeded: bool,
}

impl Plan {
    /// Bytes the insertion adds: the block and, for NPT 2, a UDP header.
    pub fn added_len(&self, config: &SourceConfig) -> usize {
        let own = if self.mtu_exceeded { 0 } else { config.own_hop_len() + config.source_only_len() };
        let udp = if matches!(self.next, Next::IpProtocol(_)) { UDP_LEN } else { 0 };
        udp + FIXED_LEN + own
    }
}

/// Decides whether and where to instrument a frame. Reads only.
pub fn plan(frame: &[u8], config: &SourceConfig) -> Result<Plan, Skip> {
    plan_as(frame, config, false)
}

/// [`plan`] for a packet that carries the DSCP mark but no INT block (the
/// node's edge guard decided to instrument it): the shim keeps its DSCP,
/// mark bits and all, and the sink restores it.
pub fn plan_marked(frame: &[u8], config: &SourceConfig) -> Result<Plan, Skip> {
    plan_as(frame, config, true)
}

/// Clears a DSCP-marked domain's mark bits (the IPv4 checksum following):
/// what a source does to a marked packet it does not instrument. False,
/// changing nothing, for a port-marked domain and frames that are not IPv4.
pub fn clear_mark(frame: &mut [u8], config: &SourceConfig) -> bool {
    let Marking::Dscp(dscp) = config.domain.marking else { return false };
    let Ok(Some(ip)) = locate::ip(frame) else { return false };
    let tos = ip.tos & !dscp.tos_mask();
    carrier::rewrite_ip(frame, &ip, tos, ip.ip_len(), ip.protocol);
    true
}

fn plan_as(frame: &[u8], config: &SourceConfig, marked_is_fine: bool) -> Result<Plan, Skip> {
    let (ip, l4) = crate::outcome::tcp_udp(frame)?;
    let (src_port, dst_port) = l4.ports();
    let (insert_at, next) = match (config.domain.marking, l4) {
        (Marking::Dscp(dscp), _) if !marked_is_fine && dscp.tos_is_marked(ip.tos) => {
            return Err(Skip::AlreadyMarked)
        }
        (Marking::Dscp(_), L4::Udp { .. }) => (ip.l4 + UDP_LEN, Next::Dscp(ip.tos >> 2)),
        (Marking::Dscp(_), L4::Tcp { header_len, .. }) => {
            (ip.l4 + config.domain.tcp_placement.offset(header_len), Next::Dscp(ip.tos >> 2))
        }
        (Marking::UdpPort(port), L4::Udp { dst_port, .. }) if dst_port == port => {
            return Err(Skip::AlreadyMarked)
        }
        (Marking::UdpPort(_), L4::Udp { dst_port, .. }) => (ip.l4 + UDP_LEN, Next::UdpPort(dst_port)),
        (Marking::UdpPort(_), L4::Tcp { .. }) => (ip.l4, Next::IpProtocol(ip.protocol)),
    };
    let mut plan = Plan {
        flow: flow_key(frame, &ip, ip.protocol, src_port, dst_port),
        ip,
        l4,
        insert_at,
        next,
        mtu_exceeded: false,
    };
    let ip_len = ip.ip_len();
    if ip_len + plan.added_len(config) > usize::from(config.max_ip_len) {
        plan.mtu_exceeded = true;
        if ip_len + plan.added_len(config) > usize::from(config.max_ip_len) {
            return Err(Skip::TooBig);
        }
    }
    if let L4::Udp { length, .. } = l4 {
        if usize::from(length) + plan.added_len(config) > usize::from(u16::MAX) {
            return Err(Skip::TooBig);
        }
    }
    Ok(plan)
}

/// Writes the block `plan` describes: the source's own `hop` and the
/// flow's packet number `sequence` where the domain carries it (unless the
/// MTU left no room), lengths, marks and checksums. Returns the bytes
/// added.
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    config: &SourceConfig,
    hop: &HopMetadata,
    sequence: u32,
) -> Result<usize, Skip> {
    let mut block = [0u8; SOURCE_BLOCK_MAX];
    let block_len = build_block(&mut block, (plan.next, plan.mtu_exceeded), config, hop, sequence)?;
    let block = block.get(..block_len).ok_or(Skip::TooBig)?;
    let added = plan.added_len(config);
    let ip = plan.ip;
    let payload_len = ip.payload_len();
    if !frame.open_gap(plan.insert_at, added) {
        return Err(Skip::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    let mut block_at = plan.insert_at;
    if matches!(plan.next, Next::IpProtocol(_)) {
        let udp = UdpRepr {
            src_port: plan.flow.hash64() as u16 | 0xc000,
            dst_port: udp_port(config),
            length: (UDP_LEN + block_len + payload_len) as u16,
            checksum: 0,
        };
        udp.emit(bytes.get_mut(block_at..).ok_or(Skip::NoHeadroom)?).map_err(|_| Skip::NoHeadroom)?;
        block_at += UDP_LEN;
    }
    bytes.get_mut(block_at..block_at + block_len).ok_or(Skip::NoHeadroom)?.copy_from_slice(block);
    let block_sum = checksum::sum(0, block);
    let grown = IpLocation { end: ip.end + added, ..ip };
    let new_len = grown.ip_len();
    match (plan.next, plan.l4) {
        (Next::Dscp(_), l4) => {
            let tos = match config.domain.marking {
                Marking::Dscp(dscp) => dscp.mark_tos(ip.tos),
                Marking::UdpPort(_) => ip.tos,
            };
            carrier::rewrite_ip(bytes, &ip, tos, new_len, ip.protocol);
            let (carrier, old_len) = carrier_of(l4, &ip);
            carrier.update(bytes, old_len, old_len + added as u16, 0, block_sum);
        }
        (Next::UdpPort(original), L4::Udp { length, .. }) => {
            carrier::rewrite_ip(bytes, &ip, ip.tos, new_len, ip.protocol);
            let port = udp_port(config);
            bytes.get_mut(ip.l4 + 2..ip.l4 + 4).ok_or(Skip::NoHeadroom)?.copy_from_slice(&port.to_be_bytes());
            let (old_word, new_word) = (u32::from(original), u32::from(port));
            Carrier::Udp(ip.l4).update(bytes, length, length + added as u16, old_word, new_word + block_sum);
        }
        (Next::UdpPort(_), L4::Tcp { .. }) => return Err(Skip::NotTcpUdp),
        (Next::IpProtocol(protocol), _) => {
            carrier::rewrite_ip(bytes, &ip, ip.tos, new_len, locate::PROTO_UDP);
            if ip.version == IpVersion::V6 {
                let sum = carrier::inserted_udp_checksum(bytes, &grown, ip.l4, ip.l4 + added, protocol);
                crate::bytes::put(bytes, ip.l4 + 6, &sum.to_be_bytes());
            }
        }
    }
    Ok(added)
}

/// The INT UDP port of a port-marked domain (0 for a DSCP one, never used).
fn udp_port(config: &SourceConfig) -> u16 {
    match config.domain.marking {
        Marking::UdpPort(port) => port,
        Marking::Dscp(_) => 0,
    }
}

/// The header whose length and checksum cover a block after the L4 header.
fn carrier_of(l4: L4, ip: &IpLocation) -> (Carrier, u16) {
    match l4 {
        L4::Udp { length, .. } => (Carrier::Udp(ip.l4), length),
        L4::Tcp { .. } => (Carrier::Tcp(ip.l4), ip.payload_len() as u16),
    }
}

/// The shim (announcing `next`), header and (INT-MD) the source's own
/// metadata and source-only packet number, unless `mtu_exceeded` (M);
/// returns the block's length. Without room for them (M),
/// the DS Instruction stops announcing the packet number.
pub(crate) fn build_block(
    buf: &mut [u8],
    (next, mtu_exceeded): (Next, bool),
    config: &SourceConfig,
    hop: &HopMetadata,
    sequence: u32,
) -> Result<usize, Skip> {
    let too_big = |_| Skip::TooBig;
    match config.header_type {
        HeaderType::Md => {
            let pushes = !mtu_exceeded && config.own_hop;
            let numbered = !mtu_exceeded && config.source_only_len() != 0;
            let mut ds_instructions = config.ds_instructions;
            if !numbered {
                ds_instructions &= !config.domain.source_only.bits;
            }
            let header = MdHeaderRepr {
                discard: config.discard,
                max_hop_exceeded: false,
                mtu_exceeded,
                hop_ml: config.hop_ml(),
                remaining_hop_cnt: config.max_hops.saturating_sub(u8::from(pushes)),
                instructions: config.instructions,
                domain_id: config.domain_id,
                ds_instructions,
                ds_flags: config.ds_flags,
            };
            let hop = HopMetadata { checksum_complement: None, ..*hop };
            let hops = if pushes { core::slice::from_ref(&hop) } else { &[] };
            let number = sequence.to_be_bytes();
            let source_only = if numbered { &number[..] } else { &[] };
            emit_md_block(buf, next, &header, hops, source_only).map_err(too_big)
        }
        HeaderType::Mx | HeaderType::Destination => {
            let shim = ShimRepr { header_type: HeaderType::Mx, next, length_words: 3 };
            let header = MxHeaderRepr {
                discard: config.discard,
                instructions: config.instructions,
                domain_id: config.domain_id,
                ds_instructions: config.ds_instructions,
                ds_flags: config.ds_flags,
            };
            let at = shim.emit(buf).map_err(too_big)?;
            Ok(at + header.emit(buf.get_mut(at..).ok_or(Skip::TooBig)?).map_err(too_big)?)
        }
    }
}

/// A tunnel packet (VXLAN, VXLAN-GPE or Geneve) whose INT goes inside its
/// tunnel header ([`in_tunnel`]): `Ok(None)` for any other frame.
pub fn plan_in_tunnel(frame: &[u8]) -> Result<Option<TunnelPlan>, Skip> {
    in_tunnel::plan(frame).map_err(Skip::Malformed)
}

/// Writes INT inside the tunnel `plan` found: the header, the source's own
/// metadata and packet number as over TCP/UDP (a Geneve option's Remaining
/// Hop Count kept to what its 31 words hold). Where they would pass
/// `max_ip_len`, the header alone with M, as over TCP/UDP; where even that
/// would, nothing. Returns the bytes added.
pub fn insert_in_tunnel(
    frame: &mut FrameBuf<'_>,
    plan: &TunnelPlan,
    config: &SourceConfig,
    hop: &HopMetadata,
    sequence: u32,
) -> Result<usize, Skip> {
    let mut block = [0u8; SOURCE_BLOCK_MAX];
    let mtu_exceeded = tunnel_mtu_exceeded(plan, config)?;
    let len = build_block(&mut block, (Next::Dscp(0), mtu_exceeded), config, hop, sequence)?;
    let body = block.get_mut(super::shim::HEADER_LEN..len).ok_or(Skip::TooBig)?;
    if config.header_type == HeaderType::Md {
        cap_remaining_hops(body, plan.max_body_len(), config);
    }
    let header_type = if config.header_type == HeaderType::Mx { HeaderType::Mx } else { HeaderType::Md };
    in_tunnel::insert(frame, plan, header_type, body).ok_or(Skip::TooBig)
}

/// INT 2.1 section 5.3 for a packet instrumented in its tunnel: whether the
/// MTU leaves room for the header alone (M), not for the source's own
/// metadata and packet number. `Err`: not even for the header.
pub fn tunnel_mtu_exceeded(plan: &TunnelPlan, config: &SourceConfig) -> Result<bool, Skip> {
    let header = super::md_header::HEADER_LEN;
    let full = header + config.own_hop_len() + config.source_only_len();
    let fits = |body: usize| plan.ip.ip_len() + plan.added_len(body) <= usize::from(config.max_ip_len);
    match (fits(full), fits(header)) {
        (true, _) => Ok(false),
        (false, true) => Ok(true),
        (false, false) => Err(Skip::TooBig),
    }
}

/// Keeps an INT-MD body's Remaining Hop Count to the hops `room` bytes of
/// INT data can still take.
fn cap_remaining_hops(body: &mut [u8], room: usize, config: &SourceConfig) {
    let hop_len = usize::from(config.hop_ml()) * 4;
    let free = room.saturating_sub(body.len());
    let fits = free.checked_div(hop_len).unwrap_or(0).min(usize::from(u8::MAX)) as u8;
    if let Some(remaining) = body.get_mut(3) {
        *remaining = (*remaining).min(fits);
    }
}
