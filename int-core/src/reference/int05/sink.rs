//! The reference sink: removes Host-INT's block, clears the mark, and keeps
//! each flow's last sequence number and latency.

use crate::checksum;
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::Encapsulation;
use crate::reference::{key, FlowSlots, BLOCK_HEAD_LEN, HOP_LEN, HOST_INT_BITMAP};

/// Bytes of sequence number and tail after the stack.
const SEQUENCE_AND_TAIL: usize = 8;

/// What the reference sink keeps per flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkFlow {
    pub last_sequence: u32,
    /// The last packet's one-way latency (ns, signed: clocks may disagree).
    pub latency_ns: i32,
}

pub struct Sink {
    marking: Encapsulation,
    flows: FlowSlots<SinkFlow>,
}

impl Sink {
    pub fn new(marking: Encapsulation, flows: usize) -> Self {
        Sink { marking, flows: FlowSlots::new(flows) }
    }

    /// Strips the block, given the time now (ns, low 32 bits); `Some(true)`
    /// when the packet's number followed its flow's last one. `None` (frame
    /// unchanged) for a frame of another shape, another bitmap, a tail
    /// that is not Host-INT's, or a full flow table.
    #[inline(always)]
    pub fn strip(&mut self, frame: &mut FrameBuf<'_>, now: u32) -> Option<bool> {
        let packet = FastFrame::read_ipv4(frame.frame(), BLOCK_HEAD_LEN)?;
        let bytes = frame.frame();
        let head = bytes.get(packet.payload_at()..)?.first_chunk::<BLOCK_HEAD_LEN>()?;
        let (length_words, total_hop) = (head[2], usize::from(head[7]));
        let block_len = usize::from(length_words) * 4;
        if !self.marking.tos_is_marked(packet.tos)
            || head[0] != 3
            || [head[8], head[9]] != HOST_INT_BITMAP
            || total_hop == 0
            || block_len != BLOCK_HEAD_LEN + total_hop * HOP_LEN + SEQUENCE_AND_TAIL
            || packet.payload_at() + block_len > packet.end()
        {
            return None;
        }
        let block = bytes.get(packet.payload_at()..packet.payload_at() + block_len)?;
        let word = |at: usize| crate::bytes::be32(block, at);
        let sequence = word(block_len - SEQUENCE_AND_TAIL);
        let tail = word(block_len - 4);
        if tail >> 24 == u32::from(packet.flow.protocol()) && (tail >> 8) as u16 == packet.flow.dst_port() {
            return None;
        }
        let ingress = word(BLOCK_HEAD_LEN + (total_hop - 1) * HOP_LEN + 8);
        let block_sum = checksum::sum(0, block.get(..block_len - 4)?);
        let flow = self.flows.entry(key(&packet))?;
        let in_order = sequence == flow.last_sequence.wrapping_add(1);
        *flow = SinkFlow { last_sequence: sequence, latency_ns: now.wrapping_sub(ingress) as i32 };
        if !frame.close_gap(packet.payload_at(), block_len) {
            return None;
        }
        let shrunk = packet.carrier_len - block_len as u16;
        packet.rewrite(frame.frame_mut(), packet.tos & !self.marking.tos_mask(), shrunk, block_sum, 0);
        Some(in_order)
    }

    /// The state of `key`'s flow (addresses, then protocol and ports), for
    /// tests.
    pub fn flow(&self, key: [u64; 2]) -> Option<SinkFlow> {
        self.flows.get(key).copied()
    }
}
