//! The INT 2.1 source's fast path: an INT-MD block with NPT 0 and the
//! source's own hop, put after the UDP header or the TCP header without
//! options of a fast-path frame ([`FastFrame`]) in a DSCP-marked domain. The
//! block is built once; per packet the kept DSCP, the hop's latency and
//! timestamps and the packet number are written into a copy, and the sum
//! of the checksums follows from the template's. Any other frame (marked,
//! a tunnel's, past the MTU) is left to [`super::source::plan`] and
//! [`super::source::insert`], which write the same bytes for the frames
//! this path takes (a test holds the two together over one-byte changes
//! and cuts).

use crate::checksum::{self, word_sum};
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::locate::PROTO_UDP;
use crate::marking::DscpMatch;

use super::hop::INVALID;
use super::source::{build_block, SourceConfig};
use super::{HeaderType, HopMetadata, Instructions, Marking, Next};

/// The longest block this path writes: the fixed headers, a hop of up to
/// 31 words and the packet number.
const MAX_LEN: usize = super::FIXED_LEN + 31 * 4 + 4;
/// Where the shim keeps the original DSCP (its second 16-bit word).
const DSCP_AT: usize = 2;

/// A source's block, ready to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSource {
    /// The block with the per-packet words zero.
    block: [u8; MAX_LEN],
    len: usize,
    /// The template's sum.
    fixed_sum: u32,
    /// Where the hop's latency, ingress and egress timestamps (two words
    /// each) and the packet number go, where the block has them.
    latency_at: Option<usize>,
    ingress_at: Option<usize>,
    egress_at: Option<usize>,
    sequence_at: Option<usize>,
    dscp: DscpMatch,
    max_ip_len: usize,
}

/// The times a source's own hop carries, as its stage computes them: the
/// hop latency is egress minus ingress, all ones when it does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopTimes {
    pub ingress_ns: u64,
    pub egress_ns: u64,
}

impl HopTimes {
    /// The latency word: `None` (all ones) beyond 32 bits.
    pub fn latency(&self) -> Option<u32> {
        u32::try_from(self.egress_ns.saturating_sub(self.ingress_ns)).ok()
    }
}

impl FastSource {
    /// The fast path of an INT-MD source of a DSCP-marked domain that
    /// pushes its own `hop` (whose latency and timestamps each packet
    /// sets); `None` for any other configuration.
    pub fn of(config: &SourceConfig, hop: &HopMetadata) -> Option<FastSource> {
        let Marking::Dscp(dscp) = config.domain.marking else { return None };
        if config.header_type != HeaderType::Md || !config.own_hop || config.check().is_err() {
            return None;
        }
        let zeroed = HopMetadata {
            hop_latency: Some(0),
            ingress_timestamp: Some(0),
            egress_timestamp: Some(0),
            ..*hop
        };
        let mut block = [0u8; MAX_LEN];
        let len = build_block(&mut block, (Next::Dscp(0), false), config, &zeroed, 0).ok()?;
        let instructions = config.instructions;
        // The hop follows the 16 fixed bytes; the number ends the block.
        let at = |bit| instructions.word_offset(bit).map(|words| super::FIXED_LEN + words * 4);
        Some(FastSource {
            fixed_sum: checksum::sum(0, block.get(..len)?),
            block,
            len,
            latency_at: at(Instructions::HOP_LATENCY),
            ingress_at: at(Instructions::INGRESS_TIMESTAMP),
            egress_at: at(Instructions::EGRESS_TIMESTAMP),
            sequence_at: config.numbers_packets().then(|| len - 4),
            dscp,
            max_ip_len: usize::from(config.max_ip_len),
        })
    }

    /// Whether this path instruments the frame: not marked, not UDP to a
    /// tunnel port (INT may go inside), within the MTU and UDP's 16-bit
    /// length with the whole block. For any other frame the general path
    /// decides, and counts why.
    #[inline(always)]
    pub fn takes(&self, frame: &FastFrame) -> bool {
        let tunnel = frame.flow.protocol() == PROTO_UDP
            && matches!(
                frame.flow.dst_port(),
                super::in_tunnel::VXLAN_UDP_PORT
                    | crate::wire::vxlan_gpe::UDP_PORT
                    | crate::wire::geneve::UDP_PORT
            );
        !tunnel
            && !self.dscp.tos_is_marked(frame.tos)
            && frame.ip_len() + self.len <= self.max_ip_len
            && usize::from(frame.carrier_len) + self.len <= usize::from(u16::MAX)
    }

    /// Inserts the block with `times` and `sequence` (where the domain
    /// numbers packets) into a frame [`FastSource::takes`]. False (frame
    /// unchanged) when the headroom is too small.
    #[inline(always)]
    pub fn insert(
        &self,
        frame: &mut FrameBuf<'_>,
        parts: &FastFrame,
        times: HopTimes,
        sequence: u32,
    ) -> bool {
        let at = parts.payload_at();
        if !frame.open_gap(at, self.len) {
            return false;
        }
        let bytes = frame.frame_mut();
        let (Some(block), Some(template)) = (bytes.get_mut(at..at + self.len), self.block.get(..self.len))
        else {
            return false;
        };
        block.copy_from_slice(template);
        // The template keeps DSCP 0 and zero words where these go.
        let kept_dscp = parts.tos & 0xfc;
        if let Some(byte) = block.get_mut(DSCP_AT + 1) {
            *byte = kept_dscp;
        }
        let mut sum = self.fixed_sum + u32::from(kept_dscp);
        sum += put_word(block, self.latency_at, times.latency().unwrap_or(INVALID));
        for (at, ns) in [(self.ingress_at, times.ingress_ns), (self.egress_at, times.egress_ns)] {
            sum += put_word(block, at, (ns >> 32) as u32) + put_word(block, at.map(|at| at + 4), ns as u32);
        }
        sum += put_word(block, self.sequence_at, sequence);
        let grown = parts.carrier_len + self.len as u16;
        parts.rewrite(bytes, self.dscp.mark_tos(parts.tos), grown, 0, sum);
        true
    }
}

/// Writes `value` at `at` in `block`, where the block has such a word;
/// returns what it adds to the block's sum (0 when nothing was written).
#[inline(always)]
fn put_word(block: &mut [u8], at: Option<usize>, value: u32) -> u32 {
    let Some(slot) = at.and_then(|at| block.get_mut(at..at + 4)) else { return 0 };
    slot.copy_from_slice(&value.to_be_bytes());
    word_sum(value)
}
