//! The INT 2.1 sink's fast path: an INT-MD block announced by NPT 0 after
//! the UDP header, or the TCP header without options, of a fast-path frame
//! ([`FastFrame`]) in a DSCP-marked domain, read at fixed offsets. Every
//! other frame is left to [`super::sink::extract`], which gives the frames
//! this path takes the same answer (a property test holds the two together
//! over every one-byte change and cut of such frames).

use crate::bytes::be32;
use crate::checksum;
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::hop_rule::{HopDigest, HopRule, Untold};

use super::hop::INVALID;
use super::md_header::MdHeaderRepr;
use super::{Domain, Instructions, Marking, MdBlock, MdStack, FIXED_LEN};

/// What a DSCP-marked domain's sink finds in a fast-path frame
/// ([`super::sink::extract`] decides what it leaves).
pub type FastArrival = crate::fast::FastArrival<FastSink>;

/// An INT-MD fast-path packet: what the sink needs of it to
/// track its flow and to restore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSink {
    pub frame: FastFrame,
    /// D: the sink discards the packet once reported.
    pub discard: bool,
    /// The flow's packet number, where the domain defines it and the block
    /// carries it.
    pub sequence: Option<u32>,
    /// The bottom hop's node id and ingress time (the source's, when it
    /// pushed), as [`super::HopMetadata`] reads them.
    pub source_node: Option<u32>,
    pub source_ns: Option<u64>,
    /// [`super::MdStack::hop_digest`] where
    /// [`crate::hop_rule::HopRule::sampled`] takes the packet.
    pub hops: Result<HopDigest, Untold>,
    /// The DSCP the shim kept.
    dscp: u8,
    block_len: u16,
}

impl FastSink {
    /// [`super::sink::extract`]'s fast path, for fast-path frames whose
    /// block is INT-MD with NPT 0.
    #[inline(always)]
    pub fn find(frame: &[u8], domain: &Domain, rule: &HopRule) -> FastArrival {
        let Marking::Dscp(dscp) = domain.marking else { return FastArrival::Other };
        let Some(parts) = FastFrame::read(frame, 0) else { return FastArrival::Other };
        if !dscp.tos_is_marked(parts.tos) {
            // INT may be inside a tunnel, whatever the outer DSCP.
            return if is_tunnel(&parts) { FastArrival::Other } else { FastArrival::NotInt };
        }
        // Without TCP options, both TCP placements put INT after 20 bytes.
        let block_at = parts.payload_at();
        let Some(block) = frame.get(block_at..parts.end()) else { return FastArrival::Other };
        match read_md(block, domain, rule, parts) {
            Some(found) => FastArrival::Int(found),
            None => FastArrival::Other,
        }
    }

    /// [`super::sink::strip`] for a packet [`FastSink::find`] found: the
    /// same bytes. Returns the bytes removed, or `None` (frame unchanged)
    /// if the frame is shorter than `self` says.
    #[inline(always)]
    pub fn strip(&self, frame: &mut FrameBuf<'_>) -> Option<usize> {
        let (block_at, block_len) = (self.frame.payload_at(), usize::from(self.block_len));
        let block_sum = checksum::sum(0, frame.frame().get(block_at..block_at + block_len)?);
        if block_at + block_len > self.frame.end() || !frame.close_gap(block_at, block_len) {
            return None;
        }
        let tos = (self.dscp << 2) | (self.frame.tos & 0x03);
        self.frame.rewrite(frame.frame_mut(), tos, self.frame.carrier_len - self.block_len, block_sum, 0);
        Some(block_len)
    }

    /// Bytes the sink removes.
    pub fn removed_len(&self) -> usize {
        usize::from(self.block_len)
    }
}

/// Whether the frame is UDP to a port of a tunnel that carries INT inside
/// ([`super::in_tunnel`]).
#[inline(always)]
fn is_tunnel(frame: &FastFrame) -> bool {
    frame.flow.protocol() == crate::locate::PROTO_UDP
        && matches!(frame.flow.dst_port(), crate::wire::vxlan_gpe::UDP_PORT | crate::wire::geneve::UDP_PORT)
}

/// The INT-MD block (shim type 1, NPT 0) at the start of `block`, which
/// runs to the end of the IP packet; `None` for anything else.
#[inline(always)]
fn read_md(block: &[u8], domain: &Domain, rule: &HopRule, frame: FastFrame) -> Option<FastSink> {
    let (head, md, len) = md_block(block, domain, TYPE_MD_NPT_0)?;
    let header = md.header;
    let (source_node, source_ns) = bottom_hop(&md);
    let sequence = domain.source_only.sequence_of(&md);
    Some(FastSink {
        frame,
        discard: header.discard,
        sequence,
        source_node,
        source_ns,
        hops: rule.sampled(sequence, frame.flow.phase(), |rule| md.hop_digest(rule)),
        dscp: head[3] >> 2,
        block_len: len as u16,
    })
}

/// The first byte of an INT-MD shim with NPT 0 (DSCP marking) and with
/// NPT 1 (UDP port marking), its two reserved bits clear.
pub(crate) const TYPE_MD_NPT_0: u8 = 0x10;
pub(crate) const TYPE_MD_NPT_1: u8 = 0x14;

/// The INT-MD block at the start of `block` (which runs to the end of the
/// IP packet), its shim's type and NPT `type_npt` (the two reserved bits
/// not looked at), checked as [`super::Block::parse`] checks it: its fixed
/// headers, its stack and its length in bytes; `None` for anything else.
#[inline(always)]
pub(crate) fn md_block<'a>(
    block: &'a [u8],
    domain: &Domain,
    type_npt: u8,
) -> Option<(&'a [u8; FIXED_LEN], MdStack<'a>, usize)> {
    let head: &[u8; FIXED_LEN] = block.first_chunk()?;
    if head[0] & 0xfc != type_npt {
        return None;
    }
    let len = 4 + usize::from(head[1]) * 4;
    let stack = block.get(FIXED_LEN..len)?;
    let header = MdHeaderRepr::parse(head.get(4..)?).ok()?;
    let source_only_words = domain.source_only.words(header.domain_id, header.ds_instructions);
    MdBlock::check(&header, stack.len(), source_only_words).ok()?;
    Some((head, MdStack { header, stack, source_only_words }, len))
}

/// The bottom hop's node id and ingress timestamp, all ones read as
/// `None` (as [`super::HopMetadata::parse`] reads them).
#[inline(always)]
fn bottom_hop(md: &MdStack<'_>) -> (Option<u32>, Option<u64>) {
    let Some(bottom) = md.hop_count().checked_sub(1) else { return (None, None) };
    let (instructions, at) = (md.header.instructions, bottom * usize::from(md.header.hop_ml) * 4);
    let word = |words: usize| be32(md.stack, at + words * 4);
    let node = instructions.word_offset(Instructions::NODE_ID).map(word).filter(|&id| id != INVALID);
    let ingress = instructions.word_offset(Instructions::INGRESS_TIMESTAMP).and_then(|words| {
        let (high, low) = (word(words), word(words + 1));
        (high != INVALID || low != INVALID).then_some((u64::from(high) << 32) | u64::from(low))
    });
    (node, ingress)
}
