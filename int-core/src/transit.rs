//! INT transit hop: push this hop's metadata on top of the stack of a packet
//! that already carries INT (INT 0.5 section 3.3), or set E when Total Hop
//! Count has reached Max Hop Count.
//!
//! A Destination-type block (shim Type 2) is left alone, as INT 0.5 asks.
//! A push that would exceed the MTU or 255 shim words is skipped whole: a
//! hop adds either all its words or none.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::carrier;
use crate::checksum;
use crate::encap::Domain;
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::int05::shim::ShimHeader;
use crate::int05::{HopMetadata, IntBlock, MetadataHeader, ShapeCache};
use crate::sink;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitConfig {
    pub domain: Domain,
    /// The largest IP packet allowed after the push (the MTU).
    pub max_ip_len: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The hop's metadata is on the stack; this many bytes were added.
    Pushed(usize),
    /// Total Hop Count had reached Max Hop Count: E is set, nothing pushed.
    MaxHopReached,
    /// A Destination-type block: transit hops ignore it.
    DestinationOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotPushed {
    NotInt,
    TooBig,
    NoHeadroom,
    Malformed(ParseError),
}

/// Pushes `hop` onto the packet's stack, or sets E, or leaves a
/// Destination-type block alone.
pub fn push(
    frame: &mut FrameBuf<'_>,
    config: &TransitConfig,
    hop: &HopMetadata,
) -> Result<Outcome, NotPushed> {
    push_with(frame, config, hop, &mut ShapeCache::default())
}

/// [`push`] with a [`ShapeCache`] kept across packets, as
/// [`sink::extract_with`].
#[inline]
pub fn push_with(
    frame: &mut FrameBuf<'_>,
    config: &TransitConfig,
    hop: &HopMetadata,
    shapes: &mut ShapeCache,
) -> Result<Outcome, NotPushed> {
    let found = sink::extract_with(frame.frame(), &config.domain, shapes)
        .map_err(NotPushed::Malformed)?
        .ok_or(NotPushed::NotInt)?;
    if !found.shim_type.is_hop_by_hop() {
        return Ok(Outcome::DestinationOnly);
    }
    let carrier_len = found.carrier_len;
    if found.header.total_hop_cnt >= found.header.max_hop_cnt {
        let bytes = frame.frame_mut();
        let head = block_head(bytes, found.block_at)?;
        let old_word = head.md.word0();
        head.md.set_max_hop_exceeded();
        let new_word = head.md.word0();
        found.carrier.update(bytes, carrier_len, carrier_len, u32::from(old_word), u32::from(new_word));
        return Ok(Outcome::MaxHopReached);
    }
    let hop_len = found.header.instructions.hop_len();
    let ip = found.ip;
    if found.block_len + hop_len > crate::int05::MAX_BLOCK_LEN {
        return Err(NotPushed::TooBig);
    }
    let old_total = ip.ip_len();
    if old_total + hop_len > usize::from(config.max_ip_len)
        || usize::from(carrier_len) + hop_len > usize::from(u16::MAX)
    {
        return Err(NotPushed::TooBig);
    }
    let stack_at = found.block_at + IntBlock::STACK_OFFSET;
    if !frame.open_gap(stack_at, hop_len) {
        return Err(NotPushed::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    // The gap was opened for exactly these words.
    hop.emit(found.header.instructions, bytes.get_mut(stack_at..).unwrap_or_default())
        .map_err(|_| NotPushed::NoHeadroom)?;
    let hop_sum = checksum::sum(0, bytes.get(stack_at..stack_at + hop_len).unwrap_or_default());
    // The shim Length word and the Max/Total Hop Count word change.
    let head = block_head(bytes, found.block_at)?;
    let old_words = u32::from(head.shim.length_word()) + u32::from(head.md.word1());
    head.shim.length += (hop_len / 4) as u8;
    head.md.total_hop_cnt += 1;
    let new_words = u32::from(head.shim.length_word()) + u32::from(head.md.word1());
    carrier::rewrite_ip(bytes, &ip, ip.tos, old_total + hop_len, ip.protocol);
    found.carrier.update(bytes, carrier_len, carrier_len + hop_len as u16, old_words, new_words + hop_sum);
    Ok(Outcome::Pushed(hop_len))
}

/// The shim and the metadata header at the front of an INT block: the
/// words a transit hop changes, as one view.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct BlockHead {
    shim: ShimHeader,
    md: MetadataHeader,
}

/// The head of the block at `at` (which the sink's walk found whole).
fn block_head(bytes: &mut [u8], at: usize) -> Result<&mut BlockHead, NotPushed> {
    crate::frame::view_mut(bytes, at, Layer::IntMetadataHeader).map_err(NotPushed::Malformed)
}
