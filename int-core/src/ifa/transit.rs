//! The IFA transit node: its hop goes on top of the stack, nearest the
//! metadata header (the newest first, as Broadcom's transit example writes
//! it: OpenBCM sdk-6.5.20 `src/examples/dnx/instru/cint_ifa2.c`), Hop Limit
//! goes down by one, Current Length up by 8 words; the IP length and IPv4
//! checksum follow, and the L4 header as [`L4Rule`] says. A hop adds all
//! its bytes or none: not with Hop Limit 0, past Max Length, or past the
//! MTU.

use crate::carrier;
use crate::checksum;
use crate::error::Layer;
use crate::frame::FrameBuf;
use crate::outcome::NotPushed;

use super::md_header::MdHeader;
use super::{covering, hop, Domain, HopRepr, L4Rule, Located};

/// What the push came to, when the packet is IFA of the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// This many bytes of hop were pushed.
    Pushed(usize),
    /// Hop Limit was 0: nothing pushed.
    HopLimitReached,
    /// Another hop would pass Max Length: nothing pushed.
    MaxLengthReached,
    /// Another hop would pass the MTU: nothing pushed.
    MtuExceeded,
}

/// Pushes `hop` onto the stack of an IFA packet of `domain`, no larger than
/// `max_ip_len` bytes of IP packet after the push.
pub fn push(
    frame: &mut FrameBuf<'_>,
    domain: &Domain,
    max_ip_len: u16,
    hop: &HopRepr,
    rule: L4Rule,
) -> Result<Outcome, NotPushed> {
    let found =
        domain.locate(frame.frame()).map_err(|r| NotPushed::Malformed(r.error))?.ok_or(NotPushed::NotInt)?;
    push_found(frame, &found, max_ip_len, hop, rule)
}

/// [`push`] on a packet already located ([`Domain::locate`] on this frame
/// as it is): a node that counts a refusal by its reason locates first.
pub fn push_found(
    frame: &mut FrameBuf<'_>,
    found: &Located,
    max_ip_len: u16,
    hop: &HopRepr,
    rule: L4Rule,
) -> Result<Outcome, NotPushed> {
    let (ip, md, words) = (found.ip, found.md, (hop::HOP_LEN / 4) as u8);
    if md.hop_limit == 0 {
        return Ok(Outcome::HopLimitReached);
    }
    if usize::from(md.current_length) + usize::from(words) > usize::from(found.header.max_length) {
        return Ok(Outcome::MaxLengthReached);
    }
    if ip.ip_len() + hop::HOP_LEN > usize::from(max_ip_len) {
        return Ok(Outcome::MtuExceeded);
    }
    if ip.payload_len() + hop::HOP_LEN > usize::from(u16::MAX) {
        return Err(NotPushed::TooBig);
    }
    let covered = covering(&found.carrier, found.l4_at, ip.end).filter(|_| rule == L4Rule::Cover);
    if !frame.open_gap(found.stack_at, hop::HOP_LEN) {
        return Err(NotPushed::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    let out = bytes.get_mut(found.stack_at..).ok_or(NotPushed::NoHeadroom)?;
    hop.emit(out).map_err(|_| NotPushed::NoHeadroom)?;
    let hop_sum =
        checksum::sum(0, bytes.get(found.stack_at..found.stack_at + hop::HOP_LEN).unwrap_or_default());
    let header = crate::frame::view_mut::<MdHeader>(bytes, found.md_at, Layer::IfaMetadataHeader)
        .map_err(NotPushed::Malformed)?;
    let old_word = u32::from(header.word1());
    header.hop_limit -= 1;
    header.current_length += words;
    let new_word = u32::from(header.word1());
    carrier::rewrite_ip(bytes, &ip, ip.tos, ip.ip_len() + hop::HOP_LEN, ip.protocol);
    if let Some((l4, old_len)) = covered {
        l4.update(bytes, old_len, old_len.saturating_add(hop::HOP_LEN as u16), old_word, new_word + hop_sum);
    }
    Ok(Outcome::Pushed(hop::HOP_LEN))
}
