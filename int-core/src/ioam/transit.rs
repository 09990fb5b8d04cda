//! A transit node (RFC 9197 section 4): it fills the next free slot of
//! its namespace's trace, in place.

use super::ipv6::{self, Filled};
use super::node::NodeData;
use crate::bytes::{byte, span_mut};
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate::{self};
use crate::wire::ipv6::{HEADER_LEN as IPV6_LEN, HOP_BY_HOP};
use crate::wire::ipv6option::extension_len;

/// What a transit node did to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transited {
    /// Its element written.
    Filled,
    /// No slot left: Overflow set.
    Overflow,
    /// Not IPv6, or no trace of the namespace: passed as it is.
    NotTraced,
}

/// Fills the next slot of the namespace's trace with `node` (its Hop_Lim
/// the packet's Hop Limit), or sets Overflow; leaves other namespaces and
/// other options alone. The frame keeps its length: the slot was
/// pre-allocated.
pub fn push(frame: &mut FrameBuf<'_>, namespace: u16, node: &NodeData) -> Result<Transited, ParseError> {
    let frame = frame.frame_mut();
    let Some(ip) = locate::ipv6(frame)? else { return Ok(Transited::NotTraced) };
    if byte(frame, ip.l3 + 6) != HOP_BY_HOP {
        return Ok(Transited::NotTraced);
    }
    let hbh = ip.l3 + IPV6_LEN;
    let len = extension_len(frame, hbh);
    let hop_limit = byte(frame, ip.l3 + 7);
    let hbh_bytes = span_mut(frame, hbh, hbh + len, Layer::Ipv6Extension)?;
    let Some(trace) = ipv6::find_trace(hbh_bytes, namespace)? else { return Ok(Transited::NotTraced) };
    let node = NodeData { hop_limit: Some(hop_limit), ..*node };
    match ipv6::fill(hbh_bytes, &trace, &node) {
        Ok(Filled::At(_)) => Ok(Transited::Filled),
        Ok(Filled::Overflow) => Ok(Transited::Overflow),
        Err(_) => Err(ParseError::BadLength {
            layer: Layer::IoamTrace,
            offset: hbh + trace.data,
            value: trace.data_len,
        }),
    }
}
