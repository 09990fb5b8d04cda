//! The INT 0.5 sink's fast path: an INT block after the UDP header, or
//! the TCP header without options, of a fast-path frame ([`FastFrame`]) in
//! the DSCP encapsulation, read at fixed offsets (its shape through the
//! sink's [`ShapeCache`]). Every other frame is left to
//! [`super::sink::classify`], which gives the frames this path takes the
//! same answer (`tests/fast_path05.rs` holds the two together over every
//! one-byte change and cut of such frames).

use crate::checksum;
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::sink::starts_with_a_shim;
use crate::int05::tail::HEADER_LEN as TAIL_LEN;
use crate::int05::{
    Domain, Encapsulation, MetadataHeaderRepr, ShapeCache, ShimType, SourceHop, Tail, TailRepr,
};

/// What a fast-path frame ([`FastFrame`]) is to a sink of the
/// DSCP encapsulation ([`super::sink::classify`] decides what it leaves).
pub type FastArrival = crate::fast::FastArrival<FastSink>;

/// An INT fast-path packet: what a sink needs of it between the
/// passes over its burst, and to restore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FastSink {
    pub frame: FastFrame,
    pub shim_type: ShimType,
    pub header: MetadataHeaderRepr,
    pub sequence: Option<u32>,
    pub source_hop: Option<SourceHop>,
    tail: TailRepr,
    block_len: u16,
}

impl FastSink {
    /// [`super::sink::classify`]'s fast path, for fast-path frames in the
    /// DSCP encapsulation: the same answer for every frame it does not
    /// leave to the general path.
    #[inline(always)]
    pub fn find(frame: &[u8], config: &Domain, shapes: &mut ShapeCache) -> FastArrival {
        if !matches!(config.encapsulation, Encapsulation::OverTcpUdp { .. }) {
            return FastArrival::Other;
        }
        let Some(parts) = FastFrame::read(frame, 0) else { return FastArrival::Other };
        if !config.encapsulation.tos_is_marked(parts.tos) {
            return FastArrival::NotInt;
        }
        let block_at = parts.payload_at();
        let Some(region) = frame.get(block_at..parts.end()).filter(|r| starts_with_a_shim(r)) else {
            return FastArrival::Other;
        };
        let Ok(block) = shapes.parse(region, Tail::Present) else { return FastArrival::Other };
        let informative =
            block.tail.protocol == parts.flow.protocol() && block.tail.dst_port == parts.flow.dst_port();
        let Some(tail) = region.get(block.len - TAIL_LEN..block.len) else { return FastArrival::Other };
        if !informative && tail.iter().any(|b| *b != 0) {
            // A tail whose reading needs the checksum's word: the general path.
            return FastArrival::Other;
        }
        FastArrival::Int(FastSink {
            frame: parts,
            shim_type: block.shim_type,
            header: block.header,
            sequence: block.sequence,
            source_hop: block.source_hop,
            tail: block.tail,
            block_len: block.len as u16,
        })
    }

    /// [`super::sink::strip`] for a packet [`FastSink::find`] found: the
    /// same bytes. Returns the bytes removed, or `None` (frame unchanged)
    /// if the frame is shorter than `self` says.
    #[inline(always)]
    pub fn strip(&self, frame: &mut FrameBuf<'_>, config: &Domain) -> Option<usize> {
        let (block_at, block_len) = (self.frame.payload_at(), usize::from(self.block_len));
        let informative = self.tail_informative();
        let covered = if informative { block_len } else { block_len - TAIL_LEN };
        let block_sum = checksum::sum(0, frame.frame().get(block_at..block_at + covered)?);
        if block_at + block_len > self.frame.end() || !frame.close_gap(block_at, block_len) {
            return None;
        }
        let tos = self.frame.tos;
        let tos = if informative {
            (self.tail.dscp << 2) | (tos & 0x03)
        } else {
            tos & !config.encapsulation.tos_mask()
        };
        self.frame.rewrite(frame.frame_mut(), tos, self.frame.carrier_len - self.block_len, block_sum, 0);
        Some(block_len)
    }

    /// Bytes the sink removes.
    pub fn removed_len(&self) -> usize {
        usize::from(self.block_len)
    }

    /// Whether the tail is INT 0.5's informative one (see
    /// [`Extracted::tail_informative`]).
    #[inline(always)]
    fn tail_informative(&self) -> bool {
        self.tail.protocol == self.frame.flow.protocol() && self.tail.dst_port == self.frame.flow.dst_port()
    }
}
