//! The reference source: Host-INT's 36-byte block after the UDP header or
//! the TCP header, numbered per flow from 1.

use super::{marked, rewrite_ipv4, word_sum, FlowSlots, Packet, L3_AT};
use crate::encap::{Encapsulation, TcpPlacement};
use crate::frame::FrameBuf;
use crate::int05::{HopMetadata, Instructions, ShimType};
use crate::source::{SourceConfig, TailStyle, Template};

/// Bytes Host-INT's source adds: shim, metadata header, one hop, sequence
/// number and tail.
const ADDED: usize = 36;
/// Offsets in the block of the words written per packet.
const INGRESS_TIMESTAMP_AT: usize = 20;
const EGRESS_TIMESTAMP_AT: usize = 24;
const SEQUENCE_AT: usize = 28;

pub struct Source {
    block: [u8; ADDED],
    /// The block's sum with the per-packet words zero.
    fixed_sum: u32,
    marking: Encapsulation,
    max_ip_len: usize,
    /// Each flow's last sequence number.
    flows: FlowSlots<u32>,
}

impl Source {
    /// The reference for `config`, which must be Host-INT's dialect (the
    /// DSCP value and mask, MTU and Max Hop Count are free).
    pub fn new(config: &SourceConfig, hop: &HopMetadata, flows: usize) -> Result<Source, &'static str> {
        let host_int = matches!(config.encapsulation, Encapsulation::OverTcpUdp { .. })
            && config.tcp_placement == TcpPlacement::BeforeOptions
            && config.shim_type == ShimType::HostIntSequence
            && config.instructions == Instructions::HOST_INT
            && config.own_hop
            && config.tail == TailStyle::HostInt;
        if !host_int {
            return Err("the reference source speaks Host-INT's dialect only");
        }
        let template = Template::new(config, hop).map_err(|_| "the source's block cannot be written")?;
        let block = *template.block().first_chunk().ok_or("the block is not Host-INT's")?;
        let expected = (template.len(), template.timestamp_at, template.sequence_at);
        if expected != (ADDED, [Some(INGRESS_TIMESTAMP_AT), Some(EGRESS_TIMESTAMP_AT)], Some(SEQUENCE_AT)) {
            return Err("the block is not Host-INT's");
        }
        Ok(Source {
            block,
            fixed_sum: template.fixed_sum,
            marking: config.encapsulation,
            max_ip_len: usize::from(config.max_ip_len),
            flows: FlowSlots::new(flows),
        })
    }

    /// Instruments the frame with `time` in both timestamps; false (frame
    /// unchanged) for a frame of another shape, one already marked, one that
    /// would exceed the MTU, or when the flow table is full.
    #[inline(always)]
    pub fn instrument(&mut self, frame: &mut FrameBuf<'_>, time: u32) -> bool {
        let Some(packet) = Packet::read(frame.frame(), 0) else { return false };
        if marked(&self.marking, packet.tos)
            || packet.ip_len() + ADDED > self.max_ip_len
            || usize::from(packet.carrier_len) + ADDED > usize::from(u16::MAX)
        {
            return false;
        }
        let Some(sequence) = self.flows.entry(packet.key).map(|last| {
            *last = last.wrapping_add(1);
            *last
        }) else {
            return false;
        };
        if !frame.open_gap(packet.block_at, ADDED) {
            return false;
        }
        let bytes = frame.frame_mut();
        let Some(block) = bytes.get_mut(packet.block_at..).and_then(|b| b.first_chunk_mut::<ADDED>()) else {
            return false;
        };
        *block = self.block;
        block[INGRESS_TIMESTAMP_AT..INGRESS_TIMESTAMP_AT + 4].copy_from_slice(&time.to_be_bytes());
        block[EGRESS_TIMESTAMP_AT..EGRESS_TIMESTAMP_AT + 4].copy_from_slice(&time.to_be_bytes());
        block[SEQUENCE_AT..SEQUENCE_AT + 4].copy_from_slice(&sequence.to_be_bytes());
        let block_sum = self.fixed_sum + 2 * word_sum(time) + word_sum(sequence);
        rewrite_ipv4(bytes, self.marking.mark_tos(packet.tos), packet.end - L3_AT + ADDED);
        let old_len = packet.carrier_len;
        packet.carrier.update(bytes, old_len, old_len + ADDED as u16, 0, block_sum);
        true
    }

    /// Flows numbered so far.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
}
