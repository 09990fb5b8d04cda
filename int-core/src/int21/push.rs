//! What a transit hop's push of its metadata comes to, over TCP/UDP
//! ([`super::transit`]) and in a tunnel ([`super::in_tunnel`]) alike.

use crate::checksum;
use crate::frame::FrameBuf;

use super::HopMetadata;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// This many bytes of metadata were pushed.
    Pushed(usize),
    /// Remaining Hop Count was 0: E is set.
    MaxHopReached,
    /// The push would exceed the MTU: M is set.
    MtuExceeded,
    /// An INT-MX packet: nothing to push.
    Mx,
}

pub use crate::outcome::NotPushed;

/// Opens room for this hop's Hop ML words at `stack_at` (the top of the
/// stack, after the MD header `header`) and writes them there, the checksum
/// complement as "not used"; returns their sum for the checksum update.
pub(crate) fn push_hop(
    frame: &mut FrameBuf<'_>,
    stack_at: usize,
    header: &super::MdHeaderRepr,
    hop: &HopMetadata,
) -> Result<u32, NotPushed> {
    let hop_len = usize::from(header.hop_ml) * 4;
    if !frame.open_gap(stack_at, hop_len) {
        return Err(NotPushed::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    let hop = HopMetadata { checksum_complement: None, ..*hop };
    hop.emit(header.instructions, header.hop_ml, bytes.get_mut(stack_at..).ok_or(NotPushed::NoHeadroom)?)
        .map_err(|_| NotPushed::NoHeadroom)?;
    Ok(checksum::sum(0, bytes.get(stack_at..stack_at + hop_len).ok_or(NotPushed::NoHeadroom)?))
}
