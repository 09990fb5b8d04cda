//! The INT 0.5 transit's fast path: a packet of the sink's fast-path
//! shape ([`FastSink::find`]: an INT block after UDP, or TCP without
//! options, of a fast-path frame in the DSCP encapsulation) located at
//! fixed offsets; the push is the general path's ([`push_block`]), the
//! lengths and checksums following from the fixed offsets. Every other
//! frame is left to [`super::transit::push_with`], which gives the frames
//! this path takes the same bytes and outcome (`tests/fast_path05.rs`
//! holds the two together over every one-byte change and cut).

use crate::frame::FrameBuf;
use crate::int05::fast_sink::{FastArrival, FastSink};
use crate::int05::transit::{push_block, Block, Carriage, NotPushed, Outcome, TransitConfig};
use crate::int05::{HopMetadata, ShapeCache};

/// The fast path of an INT 0.5 transit: no state of its own (the block's
/// shape is the [`ShapeCache`] the stage shares with the general path).
#[derive(Debug, Clone, Default)]
pub struct FastTransit;

impl FastTransit {
    /// Pushes `hop` as [`super::transit::push_with`] would; `None` (frame
    /// unchanged) leaves the frame to it.
    #[inline(always)]
    pub fn push(
        &mut self,
        frame: &mut FrameBuf<'_>,
        config: &TransitConfig,
        hop: &HopMetadata,
        shapes: &mut ShapeCache,
    ) -> Option<Result<Outcome, NotPushed>> {
        let found = match FastSink::find(frame.frame(), &config.domain, shapes) {
            FastArrival::Int(found) => found,
            FastArrival::NotInt => return Some(Err(NotPushed::NotInt)),
            FastArrival::Other => return None,
        };
        let block = Block {
            at: found.frame.payload_at(),
            len: found.removed_len(),
            shim_type: found.shim_type,
            header: found.header,
            carrier_len: found.frame.carrier_len,
        };
        Some(push_block(frame, config, hop, &block, Carriage::Fixed(found.frame)))
    }
}
