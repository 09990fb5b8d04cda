//! INT 2.1 transit hop over TCP/UDP (INT 2.1 sections 5.3, 5.8): pushes
//! Hop ML words of its metadata on top of an INT-MD stack and decrements
//! Remaining Hop Count; with none remaining it sets E, and where its words
//! would exceed the egress MTU it sets M, pushing nothing either way. A
//! hop adds all its words or none. INT-MX packets are not changed (every
//! MX node reports instead). The checksum complement, if asked for, is
//! written as all ones: the L4 checksum is updated instead. A packet of no
//! TCP/UDP marking is looked at as a tunnel (VXLAN-GPE or Geneve,
//! [`super::in_tunnel`]), whose INT data takes the push there.

use zerocopy::FromBytes;

use crate::carrier::{self, Carrier};

use crate::error::Layer;
use crate::frame::FrameBuf;
use crate::locate::L4;

use super::md_header::MdHeader;
use super::shim::ShimHeader;
use super::{find, Block, Domain, HopMetadata, FIXED_LEN, MAX_BLOCK_LEN};

use super::push::push_hop;
pub use super::push::{NotPushed, Outcome};

/// Pushes `hop` onto the stack of an INT 2.1 packet of `domain`, no larger
/// than `max_ip_len` bytes of IP packet after the push.
pub fn push(
    frame: &mut FrameBuf<'_>,
    domain: &Domain,
    max_ip_len: u16,
    hop: &HopMetadata,
) -> Result<Outcome, NotPushed> {
    let Some(found) = find(frame.frame(), domain).map_err(NotPushed::Malformed)? else {
        return push_in_tunnel(frame, domain, max_ip_len, hop);
    };
    let Block::Md(md) = found.block else { return Ok(Outcome::Mx) };
    let (ip, block_at, header, block_len) = (found.ip, found.block_at, md.header, md.len);
    // The header INT follows covers the block: the packet's own UDP or
    // TCP header, or the UDP header the source inserted (NPT 2).
    let (carrier, carrier_len) = match found.l4 {
        L4::Udp { length, .. } => (Carrier::Udp(ip.l4), length),
        L4::Tcp { .. } => (Carrier::Tcp(ip.l4), ip.payload_len() as u16),
    };
    let hop_len = usize::from(header.hop_ml) * 4;
    if header.remaining_hop_cnt == 0 {
        set_flag(frame.frame_mut(), block_at, carrier, carrier_len, MdHeader::set_max_hop_exceeded)?;
        return Ok(Outcome::MaxHopReached);
    }
    if ip.ip_len() + hop_len > usize::from(max_ip_len) {
        set_flag(frame.frame_mut(), block_at, carrier, carrier_len, MdHeader::set_mtu_exceeded)?;
        return Ok(Outcome::MtuExceeded);
    }
    if block_len + hop_len > MAX_BLOCK_LEN || usize::from(carrier_len) + hop_len > usize::from(u16::MAX) {
        return Err(NotPushed::TooBig);
    }
    let hop_sum = push_hop(frame, block_at + FIXED_LEN, &header, hop)?;
    let bytes = frame.frame_mut();
    let head = block_head(bytes, block_at)?;
    let old_words = u32::from(head.shim.first_word()) + u32::from(head.md.word1());
    head.shim.length += header.hop_ml;
    head.md.remaining_hop_cnt -= 1;
    let new_words = u32::from(head.shim.first_word()) + u32::from(head.md.word1());
    carrier::rewrite_ip(bytes, &ip, ip.tos, ip.ip_len() + hop_len, ip.protocol);
    carrier.update(bytes, carrier_len, carrier_len + hop_len as u16, old_words, new_words + hop_sum);
    Ok(Outcome::Pushed(hop_len))
}

/// [`push`] for a packet of no TCP/UDP marking: INT in its tunnel, if any.
fn push_in_tunnel(
    frame: &mut FrameBuf<'_>,
    domain: &Domain,
    max_ip_len: u16,
    hop: &HopMetadata,
) -> Result<Outcome, NotPushed> {
    let found = super::in_tunnel::find(frame.frame(), domain.source_only)
        .map_err(NotPushed::Malformed)?
        .ok_or(NotPushed::NotInt)?
        .for_push();
    super::in_tunnel::push(frame, &found, max_ip_len, hop)
}

/// Sets E or M in the header at `block_at`, the checksum following.
fn set_flag(
    bytes: &mut [u8],
    block_at: usize,
    carrier: Carrier,
    carrier_len: u16,
    set: fn(&mut MdHeader),
) -> Result<(), NotPushed> {
    let head = block_head(bytes, block_at)?;
    let old = head.md.word0();
    set(&mut head.md);
    let new = head.md.word0();
    carrier.update(bytes, carrier_len, carrier_len, u32::from(old), u32::from(new));
    Ok(())
}

/// The shim and the MD header at the front of a block, as one view.
#[derive(FromBytes, zerocopy::IntoBytes, zerocopy::KnownLayout, zerocopy::Immutable, zerocopy::Unaligned)]
#[repr(C)]
struct BlockHead {
    shim: ShimHeader,
    md: MdHeader,
}

fn block_head(bytes: &mut [u8], at: usize) -> Result<&mut BlockHead, NotPushed> {
    crate::frame::view_mut(bytes, at, Layer::IntMetadataHeader).map_err(NotPushed::Malformed)
}
