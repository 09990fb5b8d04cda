//! INT transit hop: push this hop's metadata on top of the stack of a packet
//! that already carries INT (INT 0.5 section 3.3), or set E when Total Hop
//! Count has reached Max Hop Count.
//!
//! A Destination-type block (shim Type 2) is left alone, as INT 0.5 asks.
//! A push that would exceed the MTU or 255 shim words is skipped whole: a
//! hop adds either all its words or none.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::carrier::{self, Carrier};
use crate::error::Layer;
use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::shim::ShimHeader;
use crate::int05::sink;
use crate::int05::{Domain, HopMetadata, IntBlock, MetadataHeader, MetadataHeaderRepr, ShapeCache, ShimType};
use crate::locate::IpLocation;

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

pub use crate::outcome::NotPushed;

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
    let block = Block {
        at: found.block_at,
        len: found.block_len,
        shim_type: found.shim_type,
        header: found.header,
        carrier_len: found.carrier_len,
    };
    push_block(frame, config, hop, &block, Carriage::General { ip: found.ip, carrier: found.carrier })
}

/// The INT block a transit hop pushes onto.
pub(super) struct Block {
    /// Frame offset of the shim.
    pub(super) at: usize,
    pub(super) len: usize,
    pub(super) shim_type: ShimType,
    pub(super) header: MetadataHeaderRepr,
    /// The carrier's L4 length as received.
    pub(super) carrier_len: u16,
}

/// Where the block's carrier lies, as either path found it.
#[derive(Clone, Copy)]
pub(super) enum Carriage {
    General { ip: IpLocation, carrier: Carrier },
    Fixed(FastFrame),
}

impl Carriage {
    fn ip_len(&self) -> usize {
        match self {
            Carriage::General { ip, .. } => ip.ip_len(),
            Carriage::Fixed(frame) => frame.ip_len(),
        }
    }

    /// Words summing to `removed` became words summing to `added` inside
    /// the L4 checksum, with the lengths unchanged.
    #[inline(always)]
    fn update(&self, bytes: &mut [u8], carrier_len: u16, removed: u32, added: u32) {
        let carrier = match self {
            Carriage::General { carrier, .. } => *carrier,
            Carriage::Fixed(frame) => frame.carrier(),
        };
        carrier.update(bytes, carrier_len, carrier_len, removed, added);
    }

    /// `grown` bytes were added inside the carrier (now `carrier_len`
    /// long), words summing to `removed` becoming words summing to
    /// `added`: the IP length and the carrier follow.
    #[inline(always)]
    fn grow(&self, bytes: &mut [u8], carrier_len: u16, grown: usize, removed: u32, added: u32) {
        match self {
            Carriage::General { ip, carrier } => {
                carrier::rewrite_ip(bytes, ip, ip.tos, ip.ip_len() + grown, ip.protocol);
                carrier.update(bytes, carrier_len, carrier_len + grown as u16, removed, added);
            }
            Carriage::Fixed(frame) => {
                frame.rewrite(bytes, frame.tos, carrier_len + grown as u16, removed, added)
            }
        }
    }
}

/// Pushes `hop` onto `block`, or sets E, or leaves a Destination-type
/// block alone.
#[inline(always)]
pub(super) fn push_block(
    frame: &mut FrameBuf<'_>,
    config: &TransitConfig,
    hop: &HopMetadata,
    block: &Block,
    carriage: Carriage,
) -> Result<Outcome, NotPushed> {
    if !block.shim_type.is_hop_by_hop() {
        return Ok(Outcome::DestinationOnly);
    }
    let carrier_len = block.carrier_len;
    if block.header.total_hop_cnt >= block.header.max_hop_cnt {
        let bytes = frame.frame_mut();
        let head = block_head(bytes, block.at)?;
        let old_word = head.md.word0();
        head.md.set_max_hop_exceeded();
        let new_word = head.md.word0();
        carriage.update(bytes, carrier_len, u32::from(old_word), u32::from(new_word));
        return Ok(Outcome::MaxHopReached);
    }
    let hop_len = block.header.instructions.hop_len();
    if block.len + hop_len > crate::int05::MAX_BLOCK_LEN {
        return Err(NotPushed::TooBig);
    }
    if carriage.ip_len() + hop_len > usize::from(config.max_ip_len)
        || usize::from(carrier_len) + hop_len > usize::from(u16::MAX)
    {
        return Err(NotPushed::TooBig);
    }
    let stack_at = block.at + IntBlock::STACK_OFFSET;
    if !frame.open_gap(stack_at, hop_len) {
        return Err(NotPushed::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    // The gap was opened for exactly these words.
    let hop_sum = hop
        .emit_summed(block.header.instructions, bytes.get_mut(stack_at..).ok_or(NotPushed::NoHeadroom)?)
        .map_err(|_| NotPushed::NoHeadroom)?;
    // The shim Length word and the Max/Total Hop Count word change.
    let head = block_head(bytes, block.at)?;
    let old_words = u32::from(head.shim.length_word()) + u32::from(head.md.word1());
    head.shim.length += (hop_len / 4) as u8;
    head.md.total_hop_cnt += 1;
    let new_words = u32::from(head.shim.length_word()) + u32::from(head.md.word1());
    carriage.grow(bytes, carrier_len, hop_len, old_words, new_words + hop_sum);
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
