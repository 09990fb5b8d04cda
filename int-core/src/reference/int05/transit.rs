//! The reference transit hop: Host-INT's 16-byte hop pushed on the stack.

use crate::checksum::word_sum;
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::Encapsulation;
use crate::reference::{BLOCK_HEAD_LEN, HOP_LEN, HOST_INT_BITMAP};

pub struct Transit {
    marking: Encapsulation,
    max_ip_len: usize,
    switch_id: u32,
    port_ids: u32,
}

impl Transit {
    pub fn new(
        marking: Encapsulation,
        max_ip_len: u16,
        switch_id: u32,
        ingress_port: u16,
        egress_port: u16,
    ) -> Self {
        let port_ids = u32::from(ingress_port) << 16 | u32::from(egress_port);
        Transit { marking, max_ip_len: usize::from(max_ip_len), switch_id, port_ids }
    }

    /// Pushes this hop with its timestamps; false (frame unchanged) for a
    /// frame of another shape, a block with another bitmap or one whose
    /// stack is full, or a push past the MTU.
    #[inline(always)]
    pub fn push(&self, frame: &mut FrameBuf<'_>, ingress: u32, egress: u32) -> bool {
        let Some(packet) = FastFrame::read_ipv4(frame.frame(), BLOCK_HEAD_LEN) else { return false };
        let Some(head) =
            frame.frame().get(packet.payload_at()..).and_then(|b| b.first_chunk::<BLOCK_HEAD_LEN>())
        else {
            return false;
        };
        let (shim_type, length_words, max_hop, total_hop) = (head[0], head[2], head[6], head[7]);
        let block_len = usize::from(length_words) * 4;
        let sequence_len = if shim_type == 3 { 4 } else { 0 };
        if !self.marking.tos_is_marked(packet.tos)
            || !matches!(shim_type, 1 | 3)
            || head[5] & 0x1f != 4
            || [head[8], head[9]] != HOST_INT_BITMAP
            || total_hop >= max_hop
            || block_len != BLOCK_HEAD_LEN + usize::from(total_hop) * HOP_LEN + sequence_len + 4
            || packet.payload_at() + block_len > packet.end()
            || block_len + HOP_LEN > crate::int05::MAX_BLOCK_LEN
            || packet.ip_len() + HOP_LEN > self.max_ip_len
            || usize::from(packet.carrier_len) + HOP_LEN > usize::from(u16::MAX)
        {
            return false;
        }
        let stack_at = packet.payload_at() + BLOCK_HEAD_LEN;
        if !frame.open_gap(stack_at, HOP_LEN) {
            return false;
        }
        let bytes = frame.frame_mut();
        let Some(block) = bytes.get_mut(packet.payload_at()..).and_then(|b| b.first_chunk_mut::<28>()) else {
            return false;
        };
        let words = [self.switch_id, self.port_ids, ingress, egress];
        for (at, word) in words.iter().enumerate() {
            let at = BLOCK_HEAD_LEN + 4 * at;
            if let Some(slot) = block.get_mut(at..at + 4) {
                slot.copy_from_slice(&word.to_be_bytes());
            }
        }
        let hop_sum: u32 = words.iter().map(|w| word_sum(*w)).sum();
        let old_words = u32::from(length_words) << 8 | u32::from(block[3]);
        let old_words = old_words + (u32::from(max_hop) << 8 | u32::from(total_hop));
        block[2] = length_words + (HOP_LEN / 4) as u8;
        block[7] = total_hop + 1;
        let new_words = old_words + (HOP_LEN as u32 / 4) * 256 + 1;
        let grown = packet.carrier_len + HOP_LEN as u16;
        packet.rewrite(bytes, packet.tos, grown, old_words, new_words + hop_sum);
        true
    }
}
