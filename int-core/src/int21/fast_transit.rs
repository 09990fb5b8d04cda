//! The INT 2.1 transit's fast path: an INT-MD block right after the UDP
//! header, or the TCP header without options, of a fast-path frame
//! ([`FastFrame`]), announced as the domain says (DSCP with NPT 0, or the
//! domain's UDP port with NPT 1), read at fixed offsets; this hop's words
//! written from a plan made once per instruction bitmap and Hop ML (not a
//! dispatch per field per packet), the lengths and checksums following
//! incrementally. A packet at its last hop (E), one the push would take
//! past the MTU (M), an MX block and every other frame are declined: the
//! general path ([`super::transit::push`]) takes them, and gives the frames
//! this path takes the same bytes and outcome (int-core's
//! `tests/fast_transit21.rs` holds the two together over every one-byte
//! change and cut of such frames).

use crate::fast::FastFrame;
use crate::frame::FrameBuf;

use super::fast_sink::{md_block, TYPE_MD_NPT_0, TYPE_MD_NPT_1};
use super::hop::INVALID;
use super::md_header::{MdHeaderRepr, MAX_HOP_ML};
use super::push::Outcome;
use super::{Domain, HopMetadata, Instructions, Marking, FIXED_LEN, MAX_BLOCK_LEN};

/// The baseline bits with a value, in bit order: a hop's words for bit
/// `BITS[b]` sit at `1 + 2 * b` and `2 + 2 * b` of [`HopWords`].
const BITS: [Instructions; 9] = [
    Instructions::NODE_ID,
    Instructions::L1_PORT_IDS,
    Instructions::HOP_LATENCY,
    Instructions::QUEUE_OCCUPANCY,
    Instructions::INGRESS_TIMESTAMP,
    Instructions::EGRESS_TIMESTAMP,
    Instructions::L2_PORT_IDS,
    Instructions::EGRESS_TX_UTILIZATION,
    Instructions::BUFFER_OCCUPANCY,
];
/// Every word a hop can write, [`INVALID`] first (reserved bits, domain
/// specific metadata and the checksum complement write it).
type HopWords = [u32; 1 + 2 * BITS.len()];

/// Which of [`HopWords`] each of a hop's words is, for one instruction
/// bitmap and Hop ML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    instructions: Instructions,
    hop_ml: u8,
    slots: [u8; MAX_HOP_ML as usize],
}

impl Plan {
    /// The words [`HopMetadata::emit`] writes, as slots: the bitmap's bits
    /// in order (8-byte bits take two), the rest all ones.
    fn new(instructions: Instructions, hop_ml: u8) -> Plan {
        let mut slots = [0; MAX_HOP_ML as usize];
        let mut words = slots.iter_mut();
        for bit in (instructions - Instructions::CHECKSUM_COMPLEMENT).each() {
            let first = BITS.iter().position(|&known| known == bit).map_or(0, |b| 1 + 2 * b as u8);
            for (k, slot) in words.by_ref().take(bit.bit_words()).enumerate() {
                *slot = if first == 0 { 0 } else { first + k as u8 };
            }
        }
        Plan { instructions, hop_ml, slots }
    }
}

/// The fast path's state, kept across packets by its stage: the plan of
/// the last shape seen (a benchmark's or a domain's traffic is one).
#[derive(Debug, Clone)]
pub struct FastTransit {
    plan: Plan,
}

impl Default for FastTransit {
    fn default() -> Self {
        FastTransit { plan: Plan::new(Instructions::empty(), 0) }
    }
}

impl FastTransit {
    /// Pushes `hop` as [`super::transit::push`] would; `None` (frame
    /// unchanged) leaves the frame to it.
    #[inline(always)]
    pub fn push(
        &mut self,
        frame: &mut FrameBuf<'_>,
        domain: &Domain,
        max_ip_len: u16,
        hop: &HopMetadata,
    ) -> Option<Outcome> {
        let (parts, header, block_len) = read_md(frame.frame(), domain)?;
        let hop_len = usize::from(header.hop_ml) * 4;
        // E, M, an empty hop and a push too big: the general path's.
        if header.remaining_hop_cnt == 0
            || header.hop_ml == 0
            || parts.ip_len() + hop_len > usize::from(max_ip_len)
            || block_len + hop_len > MAX_BLOCK_LEN
            || usize::from(parts.carrier_len) + hop_len > usize::from(u16::MAX)
        {
            return None;
        }
        if self.plan.instructions != header.instructions || self.plan.hop_ml != header.hop_ml {
            self.plan = Plan::new(header.instructions, header.hop_ml);
        }
        let block_at = parts.payload_at();
        if !frame.open_gap(block_at + FIXED_LEN, hop_len) {
            return None;
        }
        // Every write below lies in this span, so none of their checks can
        // fail once the gap is open: no frame is left half pushed. (The
        // gap opened inside the frame, so this cannot fail either; were it
        // to, the frame goes back as it came.)
        if frame.frame().len() < block_at + FIXED_LEN + hop_len {
            frame.close_gap(block_at + FIXED_LEN, hop_len);
            return None;
        }
        let bytes = frame.frame_mut();
        let hop_sum = write_hop(bytes.get_mut(block_at + FIXED_LEN..)?, &self.plan, &hop_words(hop))?;
        // The shim's Length and the MD header's Remaining Hop Count.
        let (length_at, remaining_at) = (block_at + 1, block_at + 7);
        let old_words = word16(bytes, block_at) + word16(bytes, block_at + 6);
        *bytes.get_mut(length_at)? += header.hop_ml;
        *bytes.get_mut(remaining_at)? -= 1;
        let new_words = word16(bytes, block_at) + word16(bytes, block_at + 6);
        let carrier_len = parts.carrier_len + hop_len as u16;
        parts.rewrite(bytes, parts.tos, carrier_len, old_words, new_words + hop_sum);
        Some(Outcome::Pushed(hop_len))
    }
}

/// The 16-bit word at `at`, 0 past the end.
#[inline(always)]
fn word16(bytes: &[u8], at: usize) -> u32 {
    u32::from(crate::bytes::be16(bytes, at))
}

/// A fast-path frame whose payload starts with an INT-MD block of the
/// domain's marking, checked as [`super::find::classify`] checks it: the
/// frame's parts, the MD header and the block's length.
#[inline(always)]
fn read_md(frame: &[u8], domain: &Domain) -> Option<(FastFrame, MdHeaderRepr, usize)> {
    let parts = FastFrame::read(frame, 0)?;
    // Type 1 with the NPT the marking asks.
    let type_npt = match domain.marking {
        Marking::Dscp(dscp) if dscp.tos_is_marked(parts.tos) => TYPE_MD_NPT_0,
        Marking::UdpPort(port)
            if parts.flow.protocol() == crate::locate::PROTO_UDP && parts.flow.dst_port() == port =>
        {
            TYPE_MD_NPT_1
        }
        Marking::Dscp(_) | Marking::UdpPort(_) => return None,
    };
    let block = frame.get(parts.payload_at()..parts.end())?;
    let (_, md, len) = md_block(block, domain, type_npt)?;
    Some((parts, md.header, len))
}

/// Every word `hop` can write, at the slots [`Plan`] names.
#[inline(always)]
fn hop_words(hop: &HopMetadata) -> HopWords {
    let mut words = [INVALID; 1 + 2 * BITS.len()];
    for (b, &bit) in BITS.iter().enumerate() {
        let [first, second] = hop.words(bit);
        if let Some(pair) = words.get_mut(1 + 2 * b..3 + 2 * b) {
            pair.copy_from_slice(&[first, second]);
        }
    }
    words
}

/// Writes the plan's words of `words` at the start of `stack`; returns
/// their sum in 16-bit words, for the checksum update.
#[inline(always)]
fn write_hop(stack: &mut [u8], plan: &Plan, words: &HopWords) -> Option<u32> {
    let hop_ml = usize::from(plan.hop_ml);
    let out = stack.get_mut(..hop_ml * 4)?;
    let mut sum = 0;
    for (slot, &at) in out.chunks_exact_mut(4).zip(&plan.slots) {
        let word = words.get(usize::from(at)).copied().unwrap_or(INVALID);
        slot.copy_from_slice(&word.to_be_bytes());
        sum += (word >> 16) + (word & 0xffff);
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark's bitmap (node id, L1 ports, both timestamps) and a
    /// reserved bit, the checksum complement and domain specific words.
    #[test]
    fn a_plan_names_each_word_as_emit_writes_it() {
        let plan = Plan::new(Instructions::from_bits_retain(0xcc00), 6);
        assert_eq!(plan.slots[..6], [1, 3, 9, 10, 11, 12]);
        let plan = Plan::new(Instructions::from_bits_retain(0x8041), 4);
        assert_eq!(plan.slots[..4], [1, 0, 0, 0]);
        let hop = HopMetadata { node_id: Some(7), egress_timestamp: Some(5 << 32 | 6), ..Default::default() };
        let plan = Plan::new(Instructions::from_bits_retain(0x8400), 5);
        let mut written = [0u8; 20];
        let mut emitted = [0u8; 20];
        write_hop(&mut written, &plan, &hop_words(&hop));
        hop.emit(plan.instructions, 5, &mut emitted).ok();
        assert_eq!(written, emitted);
    }
}
