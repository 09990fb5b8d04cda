//! The encapsulating node's fast path: a fast-path IPv6 frame
//! ([`FastFrame`]: no extension header, UDP or TCP) gets a Hop-by-Hop
//! header of its own, built once with its trace's first slot taken; per
//! packet the header is copied in, the slot written, Next Header and
//! Payload Length set. A packet without extension headers has no trace,
//! Edge-to-Edge option or options to walk, so the general path's searches
//! ([`super::encap::insert`]) find nothing here; it writes the same bytes
//! for the frames this path takes (a test holds the two together over
//! one-byte changes and cuts). A domain that numbers packets takes the
//! general path: its option goes before the upper layer.

use super::encap::{Encapped, Plan};
use super::ipv6::{self, Filled};
use super::node::NodeData;
use super::trace::TraceType;
use crate::bytes::{be16, byte, put, put_u8};
use crate::fast::{FastFrame, L3_AT, L4_AT_V6};
use crate::frame::FrameBuf;
use crate::wire::ipv6::HOP_BY_HOP;

/// The longest Hop-by-Hop header this path writes: an option of at most
/// 257 bytes ([`Plan::check`]) after the 4 bytes of header and PadN,
/// padded to 8.
const MAX_LEN: usize = 264;
/// Next Header, Payload Length and Hop Limit in the IPv6 header.
const NEXT_HEADER_AT: usize = L3_AT + 6;
const PAYLOAD_LEN_AT: usize = L3_AT + 4;
const HOP_LIMIT_AT: usize = L3_AT + 7;

/// A trace's Hop-by-Hop header, ready to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastEncap {
    /// The header with this node's slot taken (RemainingLen lowered) and
    /// Next Header zero.
    header: [u8; MAX_LEN],
    len: usize,
    /// Where this node's element goes in the header.
    slot: usize,
    trace_type: TraceType,
    max_ip_len: usize,
}

impl FastEncap {
    /// The fast path of `plan`; `None` where the plan numbers packets or
    /// cannot be written.
    pub fn of(plan: &Plan) -> Option<FastEncap> {
        if !plan.e2e.is_empty() || plan.check().is_err() {
            return None;
        }
        let mut header = [0u8; MAX_LEN];
        let len = ipv6::emit_hop_by_hop(&mut header, 0, &plan.header, plan.nodes).ok()?;
        let block = header.get_mut(..len)?;
        let trace = ipv6::find_trace(block, plan.header.namespace).ok()??;
        let Filled::At(slot) = ipv6::fill(block, &trace, &NodeData::default()).ok()? else { return None };
        // An element's length is its trace type's: this one fits, so
        // every packet's will (the per-packet write cannot fail).
        NodeData::default().emit(plan.header.trace_type, block.get_mut(slot..)?).ok()?;
        Some(FastEncap { header, len, slot, trace_type: plan.header.trace_type, max_ip_len: plan.max_ip_len })
    }

    /// Adds the trace to `frame` (whose parts are `parts`) with `node` in
    /// its slot (its Hop_Lim the packet's Hop Limit); `None`: not this
    /// path's frame (IPv4, or past the MTU with the trace): the general
    /// path decides.
    #[inline]
    pub fn insert(&self, frame: &mut FrameBuf<'_>, parts: &FastFrame, node: &NodeData) -> Option<Encapped> {
        let bytes = frame.frame();
        if !parts.is_ipv6() {
            return None;
        }
        let payload_len = usize::from(be16(bytes, PAYLOAD_LEN_AT));
        if L4_AT_V6 - L3_AT + payload_len + self.len > self.max_ip_len || payload_len + self.len > 0xffff {
            return None;
        }
        let (next_header, hop_limit) = (byte(bytes, NEXT_HEADER_AT), byte(bytes, HOP_LIMIT_AT));
        if !frame.open_gap_anywhere(L4_AT_V6, self.len) {
            return Some(Encapped::NoHeadroom);
        }
        let out = frame.frame_mut();
        let header = self.header.get(..self.len).unwrap_or_default();
        put(out, L4_AT_V6, header);
        put_u8(out, L4_AT_V6, next_header);
        let element = NodeData { hop_limit: Some(hop_limit), ..*node };
        let slot = out.get_mut(L4_AT_V6 + self.slot..).unwrap_or_default();
        let written = element.emit(self.trace_type, slot);
        debug_assert!(written.is_ok(), "checked in FastEncap::of");
        put_u8(out, NEXT_HEADER_AT, HOP_BY_HOP);
        put(out, PAYLOAD_LEN_AT, &((payload_len + self.len) as u16).to_be_bytes());
        Some(Encapped::Added(self.len))
    }
}
