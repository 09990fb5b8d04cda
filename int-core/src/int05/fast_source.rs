//! The INT 0.5 source's fast path: Host-INT's block (DSCP marking, shim
//! Type 3, instructions 0xCC00, its own hop, Host-INT's tail) copied into a
//! fast-path frame ([`FastFrame`]) at fixed offsets, the per-packet words
//! written into the copy and the checksums following from the template's
//! sum. Every other frame and configuration is left to
//! [`super::source::plan`] and [`super::source::insert_with`], which write
//! the same bytes for the frames this path takes (`tests/fast_path05.rs`
//! holds the two together over every one-byte change and cut).

use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::source::{SourceConfig, TailStyle, Template};
use crate::int05::{Encapsulation, Instructions, ShimType};
use crate::marking::TcpPlacement;

/// Bytes of Host-INT's block: shim, metadata header, one hop of switch id,
/// port ids and both timestamps, sequence number, tail.
const FAST_BLOCK_LEN: usize = 36;
/// Offsets in that block of the words written per packet.
const FAST_INGRESS_AT: usize = 20;
const FAST_EGRESS_AT: usize = 24;
const FAST_SEQUENCE_AT: usize = 28;

/// The source's fast path: Host-INT's block into a fast-path frame
/// ([`FastFrame`]), with fixed offsets and sizes. It writes what
/// [`super::source::plan`] and [`super::source::insert_with`] write for those frames (a property test
/// holds the two together over every one-byte change and cut); every other
/// frame, and every other configuration, takes the general path.
#[derive(Debug, Clone, Copy)]
pub struct FastSource {
    block: [u8; FAST_BLOCK_LEN],
    /// The block's sum with the per-packet words zero.
    fixed_sum: u32,
    encapsulation: Encapsulation,
    max_ip_len: usize,
}

impl FastSource {
    /// The fast path of a source of Host-INT's dialect (DSCP marking,
    /// header before TCP options, shim Type 3, instructions 0xCC00, its own
    /// hop, Host-INT's tail; any DSCP, Max Hop Count and MTU); `None` for
    /// any other configuration.
    pub fn of(config: &SourceConfig, template: &Template) -> Option<FastSource> {
        let host_int = matches!(config.encapsulation, Encapsulation::OverTcpUdp { .. })
            && config.tcp_placement == TcpPlacement::BeforeOptions
            && config.shim_type == ShimType::HostIntSequence
            && config.instructions == Instructions::HOST_INT
            && config.own_hop
            && config.tail == TailStyle::HostInt;
        let offsets = (template.len, template.timestamp_at, template.sequence_at);
        let expected =
            (FAST_BLOCK_LEN, [Some(FAST_INGRESS_AT), Some(FAST_EGRESS_AT)], Some(FAST_SEQUENCE_AT));
        if !host_int || offsets != expected {
            return None;
        }
        Some(FastSource {
            block: *template.block.first_chunk()?,
            fixed_sum: template.fixed_sum,
            encapsulation: config.encapsulation,
            max_ip_len: usize::from(config.max_ip_len),
        })
    }

    /// Whether the fast path instruments this frame: not marked, and
    /// within the MTU and UDP's 16-bit length once the block is in. For any
    /// other frame the general path decides, and counts why.
    #[inline(always)]
    pub fn takes(&self, frame: &FastFrame) -> bool {
        !self.encapsulation.tos_is_marked(frame.tos)
            && frame.ip_len() + FAST_BLOCK_LEN <= self.max_ip_len
            && usize::from(frame.carrier_len) + FAST_BLOCK_LEN <= usize::from(u16::MAX)
    }

    /// Inserts the block, numbered `sequence`, with `time` in both
    /// timestamps, into a frame [`FastSource::takes`]. False (frame
    /// unchanged) when the headroom is too small.
    #[inline(always)]
    pub fn insert(&self, frame: &mut FrameBuf<'_>, parts: &FastFrame, sequence: u32, time: u32) -> bool {
        if !frame.open_gap(parts.payload_at(), FAST_BLOCK_LEN) {
            return false;
        }
        let bytes = frame.frame_mut();
        let Some(block) =
            bytes.get_mut(parts.payload_at()..).and_then(|b| b.first_chunk_mut::<FAST_BLOCK_LEN>())
        else {
            return false;
        };
        *block = self.block;
        block[FAST_INGRESS_AT..FAST_INGRESS_AT + 4].copy_from_slice(&time.to_be_bytes());
        block[FAST_EGRESS_AT..FAST_EGRESS_AT + 4].copy_from_slice(&time.to_be_bytes());
        block[FAST_SEQUENCE_AT..FAST_SEQUENCE_AT + 4].copy_from_slice(&sequence.to_be_bytes());
        let block_sum =
            self.fixed_sum + 2 * crate::checksum::word_sum(time) + crate::checksum::word_sum(sequence);
        let grown = parts.carrier_len + FAST_BLOCK_LEN as u16;
        parts.rewrite(bytes, self.encapsulation.mark_tos(parts.tos), grown, 0, block_sum);
        true
    }
}
