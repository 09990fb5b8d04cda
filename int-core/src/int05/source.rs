//! INT source: insert an INT 0.5 block into an IPv4 or IPv6 TCP/UDP
//! packet, in place, moving only the headers in front of it into the
//! headroom.
//!
//! DSCP encapsulation (INT_05_OVER_TCP_UDP): the block goes after the UDP
//! header or after the TCP header (before or after the options, see
//! [`TcpPlacement`]); the IP length (IPv4 Total Length, IPv6 Payload
//! Length), UDP Length and the L4 checksum grow with it and the DSCP mark
//! is set (in IPv6's Traffic Class). UDP encapsulation
//! (INT_05_EXTENSION_UDP): a UDP header to the INT port and the block go
//! right after the IP header (IPv6: after its extension headers); the
//! protocol (IPv6: the last Next Header) becomes 17; the original L4 bytes
//! are not touched. That UDP header's checksum is 0 over IPv4, as
//! Host-INT's; IPv6 forbids 0, so there it is computed (see
//! [`carrier::inserted_udp_checksum`]).
//!
//! IPv6 is ours alone: Host-INT instruments IPv4 only.
//!
//! The tail is the caller's choice ([`TailStyle`]): Host-INT's (zeros in
//! the DSCP encapsulation, the protocol alone in the UDP one), which a
//! Host-INT sink restores correctly, or INT 0.5's informative tail (the
//! original protocol, destination port and DSCP), which our sink uses to
//! give back a DSCP that carried the mark bits. Where we differ from
//! Host-INT otherwise: the MTU is the caller's, not a fixed 1500; the shim
//! Type (1 or 3), bitmap, Max Hop Count and whether the source adds its own
//! hop are the caller's.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::error::{EmitError, ParseError};
use crate::flow::{flow_key, FlowKey};
use crate::frame::FrameBuf;
use crate::int05::{
    self, Encapsulation, HopMetadata, Instructions, IntBlock, MetadataHeaderRepr, ShimType, Tail, TailRepr,
    EXTENSION_UDP_LEN,
};
use crate::locate::{self, IpLocation, IpVersion, L4};
use crate::marking::TcpPlacement;
use crate::outcome::Skip;
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
    /// The largest IP packet allowed after insertion (the MTU: IPv4 Total
    /// Length, or IPv6's 40 bytes and Payload Length).
    pub max_ip_len: u16,
    pub tail: TailStyle,
}

/// What a source writes in the INT tail.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, strum::EnumString, strum::VariantNames, strum::Display,
)]
#[strum(serialize_all = "lowercase")]
pub enum TailStyle {
    /// As Host-INT's source: zeros in the DSCP encapsulation, the original
    /// protocol alone in the UDP one. Host-INT's sink takes the tail to add
    /// nothing to the L4 checksum; a zero tail adds nothing, so its sink
    /// restores our packets with valid checksums. A sink cannot give back
    /// mark bits the original DSCP had (it clears them).
    #[default]
    HostInt,
    /// INT 0.5's tail: the original protocol, destination port and DSCP,
    /// covered by the L4 checksum. Our sink restores the DSCP exactly from
    /// it; a Host-INT sink would leave the L4 checksum off by the tail.
    Informative,
}

impl SourceConfig {
    /// Host-INT's source: Type 3, 0xCC00, Max Hop 2, own hop, DSCP 0x01/0x01,
    /// Host-INT's tail.
    pub fn host_int(mtu: u16) -> Self {
        SourceConfig {
            encapsulation: Encapsulation::default(),
            tcp_placement: TcpPlacement::BeforeOptions,
            shim_type: ShimType::HostIntSequence,
            instructions: Instructions::HOST_INT,
            max_hop_cnt: 2,
            own_hop: true,
            max_ip_len: mtu,
            tail: TailStyle::HostInt,
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

/// A packet the source will instrument: its flow and where INT goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plan {
    pub flow: FlowKey,
    ip: IpLocation,
    l4: L4,
    /// Frame offset where the gap opens.
    insert_at: usize,
}

/// Decides whether and where to instrument a frame. Reads only.
///
/// Always inlined into the node's packet loop: a call per packet costs a
/// stage 8-10% at 64 B (bench/README.md).
#[inline(always)]
pub fn plan(frame: &[u8], config: &SourceConfig) -> Result<Plan, Skip> {
    plan_as(frame, config, false)
}

/// [`plan`] for a packet that already carries the mark but no INT block of
/// this domain (the node's edge guard decided to instrument it): the tail
/// keeps its DSCP, and the sink restores it.
pub fn plan_marked(frame: &[u8], config: &SourceConfig) -> Result<Plan, Skip> {
    plan_as(frame, config, true)
}

#[inline(always)]
fn plan_as(frame: &[u8], config: &SourceConfig, marked_is_fine: bool) -> Result<Plan, Skip> {
    let (ip, l4) = match locate::fast(frame) {
        Some(found) => found,
        None => walk(frame, config)?,
    };
    let (src_port, dst_port) = l4.ports();
    let insert_at = match (config.encapsulation, l4) {
        (Encapsulation::OverTcpUdp { .. }, _)
            if !marked_is_fine && config.encapsulation.tos_is_marked(ip.tos) =>
        {
            return Err(Skip::AlreadyMarked)
        }
        (Encapsulation::ExtensionUdp { port }, L4::Udp { dst_port, .. })
            if !marked_is_fine && dst_port == port =>
        {
            return Err(Skip::AlreadyMarked)
        }
        (Encapsulation::ExtensionUdp { .. }, _) => ip.l4,
        (Encapsulation::OverTcpUdp { .. }, L4::Udp { .. }) => ip.l4 + crate::wire::udp::HEADER_LEN,
        (Encapsulation::OverTcpUdp { .. }, L4::Tcp { header_len, .. }) => {
            ip.l4 + config.tcp_placement.offset(header_len)
        }
    };
    if ip.ip_len() + config.added_len() > usize::from(config.max_ip_len) {
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

/// The general walk, for frames [`locate::fast`] does not take.
#[inline(never)]
fn walk(frame: &[u8], config: &SourceConfig) -> Result<(IpLocation, L4), Skip> {
    let ip = locate::ip(frame).map_err(Skip::Malformed)?.ok_or(Skip::NotIp)?;
    if !matches!(ip.protocol, locate::PROTO_TCP | locate::PROTO_UDP) {
        return Err(Skip::NotTcpUdp);
    }
    if ip.is_fragment() {
        let marked = matches!(config.encapsulation, Encapsulation::OverTcpUdp { .. })
            && config.encapsulation.tos_is_marked(ip.tos);
        return Err(if marked { Skip::MarkedFragment } else { Skip::Fragment });
    }
    let l4 = locate::l4(frame, &ip).map_err(Skip::Malformed)?.ok_or(Skip::NotTcpUdp)?;
    Ok((ip, l4))
}

/// Clears this domain's DSCP mark bits of an IP packet (an IPv4 header
/// checksum follows): what a source does to a marked packet it does not
/// instrument, so that nothing leaves it marked without its INT block.
/// Returns false, changing nothing, in the UDP encapsulation (the mark is
/// a destination port, which cannot be cleared) and for frames that are not
/// IP.
pub fn clear_mark(frame: &mut [u8], config: &SourceConfig) -> bool {
    if !matches!(config.encapsulation, Encapsulation::OverTcpUdp { .. }) {
        return false;
    }
    let Ok(Some(ip)) = locate::ip(frame) else { return false };
    let tos = ip.tos & !config.encapsulation.tos_mask();
    carrier::rewrite_ip(frame, &ip, tos, ip.ip_len(), ip.protocol);
    true
}

/// The INT block a source writes, built once per configuration and node:
/// per packet only the sequence number, the timestamps and the tail change,
/// so insertion is one copy, a few stores and a checksum over those words.
#[derive(Debug, Clone)]
pub struct Template {
    pub(super) block: [u8; int05::MAX_BLOCK_LEN],
    pub(super) len: usize,
    /// Sum of the block with every per-packet word zeroed.
    pub(super) fixed_sum: u32,
    pub(super) timestamp_at: [Option<usize>; 2],
    pub(super) sequence_at: Option<usize>,
    tail_at: usize,
}

impl Template {
    /// The block for `config`, with `hop` as the source's own metadata
    /// (when `own_hop`). Its ingress and egress timestamp words are
    /// rewritten per packet when [`insert_with`] is given a timestamp.
    pub fn new(config: &SourceConfig, hop: &HopMetadata) -> Result<Template, EmitError> {
        let mut block = [0u8; int05::MAX_BLOCK_LEN];
        let header = MetadataHeaderRepr::new(config.instructions, config.max_hop_cnt, 0);
        let hops = if config.own_hop { core::slice::from_ref(hop) } else { &[] };
        let zero_tail = TailRepr { protocol: 0, dst_port: 0, dscp: 0 };
        let len = int05::emit_block(&mut block, config.shim_type, &header, hops, 0, Some(&zero_tail))?;
        let hop_at = IntBlock::STACK_OFFSET;
        let word_at = |bit: Instructions| {
            if config.own_hop {
                config.instructions.word_offset(bit).map(|offset| hop_at + offset)
            } else {
                None
            }
        };
        let timestamp_at =
            [word_at(Instructions::INGRESS_TIMESTAMP), word_at(Instructions::EGRESS_TIMESTAMP)];
        let tail_at = len - crate::int05::tail::HEADER_LEN;
        let sequence_at = config.shim_type.has_sequence().then_some(tail_at - int05::SEQUENCE_LEN);
        let mut template = Template { block, len, fixed_sum: 0, timestamp_at, sequence_at, tail_at };
        let mut zeroed = template.block;
        for at in template.timestamp_at.iter().flatten() {
            crate::bytes::put(&mut zeroed, *at, &[0; 4]);
        }
        let available = zeroed.len();
        let zeroed =
            zeroed.get(..len).ok_or(EmitError::no_room(crate::error::Layer::IntShim, len, available))?;
        template.fixed_sum = checksum::sum(0, zeroed);
        Ok(template)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Inserts the block planned by [`plan`], built from `template`, with
/// `sequence` (Type 3) and, when given, `timestamp` in the source hop's
/// ingress and egress timestamp words (Host-INT writes the same time in
/// both). Returns the bytes added.
///
/// Always inlined into the node's packet loop: a call per packet costs a
/// stage 8-10% at 64 B (bench/README.md).
#[inline(always)]
pub fn insert_with(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    config: &SourceConfig,
    template: &Template,
    sequence: u32,
    timestamp: Option<u32>,
) -> Result<usize, Skip> {
    let added = config.added_len();
    let block_len = template.len;
    if block_len != config.block_len() {
        return Err(Skip::Malformed(ParseError::BadLength {
            layer: crate::error::Layer::IntShim,
            offset: 0,
            value: block_len,
        }));
    }
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
        udp.emit(bytes.get_mut(block_at..).ok_or(Skip::NoHeadroom)?).map_err(|_| Skip::NoHeadroom)?;
        block_at += EXTENSION_UDP_LEN;
        protocol = locate::PROTO_UDP;
    }
    let Some(block) = bytes.get_mut(block_at..block_at + block_len) else {
        return Err(Skip::NoHeadroom);
    };
    crate::frame::copy_small(block, template.block.get(..block_len).ok_or(Skip::TooBig)?);
    let block_sum = fill_block(block, template, config, &ip, dst_port, sequence, timestamp);
    carrier::rewrite_ip(bytes, &ip, config.encapsulation.mark_tos(ip.tos), ip.ip_len() + added, protocol);
    fix_l4_checksum(bytes, plan, config, added, block_sum);
    Ok(added)
}

/// Writes the packet's own words into a block copied from the template
/// (timestamps, sequence number, tail) and returns the block's sum for
/// the checksum: the template's fixed part plus those words.
#[inline(always)]
fn fill_block(
    block: &mut [u8],
    template: &Template,
    config: &SourceConfig,
    ip: &IpLocation,
    dst_port: u16,
    sequence: u32,
    timestamp: Option<u32>,
) -> u32 {
    let mut block_sum = template.fixed_sum;
    if let Some(time) = timestamp {
        for at in template.timestamp_at.iter().flatten() {
            crate::bytes::put(block, *at, &time.to_be_bytes());
            block_sum += crate::checksum::word_sum(time);
        }
    } else {
        for at in template.timestamp_at.iter().flatten() {
            block_sum += crate::checksum::word_sum(crate::bytes::be32(block, *at));
        }
    }
    if let Some(at) = template.sequence_at {
        crate::bytes::put(block, at, &sequence.to_be_bytes());
        block_sum += crate::checksum::word_sum(sequence);
    }
    let tail = match (config.tail, config.encapsulation) {
        (TailStyle::Informative, _) => [ip.protocol, (dst_port >> 8) as u8, dst_port as u8, ip.tos >> 2],
        (TailStyle::HostInt, Encapsulation::OverTcpUdp { .. }) => [0; 4],
        (TailStyle::HostInt, Encapsulation::ExtensionUdp { .. }) => [ip.protocol, 0, 0, 0],
    };
    crate::bytes::put(block, template.tail_at, &tail);
    block_sum += crate::checksum::word_sum(u32::from_be_bytes(tail));
    block_sum
}

/// After the insertion: the checksum covering the block. DSCP: the
/// carrier's, grown by the block's sum. UDP encapsulation: over IPv6, the
/// extension UDP header's own (0 over IPv4).
#[inline(always)]
fn fix_l4_checksum(bytes: &mut [u8], plan: &Plan, config: &SourceConfig, added: usize, block_sum: u32) {
    let ip = plan.ip;
    match config.encapsulation {
        Encapsulation::OverTcpUdp { .. } => {
            let (carrier, old_len) = match plan.l4 {
                L4::Udp { length, .. } => (Carrier::Udp(ip.l4), length),
                L4::Tcp { .. } => (Carrier::Tcp(ip.l4), ip.payload_len() as u16),
            };
            carrier.update(bytes, old_len, old_len + added as u16, 0, block_sum);
        }
        Encapsulation::ExtensionUdp { .. } if ip.version == IpVersion::V6 => {
            let grown = IpLocation { end: ip.end + added, ..ip };
            let sum = carrier::inserted_udp_checksum(bytes, &grown, ip.l4, ip.l4 + added, ip.protocol);
            crate::bytes::put(bytes, ip.l4 + 6, &sum.to_be_bytes());
        }
        Encapsulation::ExtensionUdp { .. } => {}
    }
}

/// [`insert_with`] for one packet: builds the template from `hop` first.
/// For tools and tests; the node keeps a [`Template`].
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    config: &SourceConfig,
    sequence: u32,
    hop: &HopMetadata,
) -> Result<usize, Skip> {
    // A block that cannot be written is one beyond what a shim can say.
    let template = Template::new(config, hop).map_err(|_| Skip::TooBig)?;
    insert_with(frame, plan, config, &template, sequence, None)
}
