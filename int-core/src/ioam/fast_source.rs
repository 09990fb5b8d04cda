//! The encapsulating node's fast path: a fast-path IPv6 frame
//! ([`FastFrame`]: no extension header, UDP or TCP) gets a Hop-by-Hop
//! header of its own, built once with its trace's first slot taken; per
//! packet the header is copied in, the slot written, Next Header and
//! Payload Length set. A packet without extension headers has no trace,
//! Edge-to-Edge option or options to walk, so the general path's searches
//! ([`super::source::insert`]) find nothing here; it writes the same bytes
//! for the frames this path takes (a test holds the two together over
//! one-byte changes and cuts). Where the domain numbers packets, the
//! Edge-to-Edge option's Destination Options header follows the
//! Hop-by-Hop header, as the general path puts it: right before the upper
//! layer, which here is right after the trace.

use super::ipv6::{self, Filled};
use super::node::NodeData;
use super::source::{Encapped, Plan};
use super::trace::TraceType;
use crate::bytes::{be16, byte, put, put_u8};
use crate::fast::{FastFrame, L3_AT, L4_AT_V6};
use crate::frame::FrameBuf;
use crate::wire::ipv6::{DESTINATION_OPTIONS, HOP_BY_HOP};

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
pub struct FastSource {
    /// The header with this node's slot taken (RemainingLen lowered) and
    /// Next Header zero.
    header: [u8; MAX_LEN],
    len: usize,
    /// Where this node's element goes in the header.
    slot: usize,
    trace_type: TraceType,
    max_ip_len: usize,
    /// Bytes of the Edge-to-Edge option's Destination Options header; 0
    /// where the domain does not number packets.
    e2e_len: usize,
    plan: Plan,
}

impl FastSource {
    /// The fast path of `plan`; `None` where the plan cannot be written.
    pub fn of(plan: &Plan) -> Option<FastSource> {
        if plan.check().is_err() {
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
        let e2e_len = if plan.e2e.is_empty() { 0 } else { plan.e2e_added_len(false) };
        // The option's header fits its room, so every packet's will.
        let mut doh = [0u8; MAX_LEN];
        let sample = plan.e2e_repr(Some(0), &NodeData::default());
        if e2e_len > 0 && ipv6::emit_destination_options(doh.get_mut(..e2e_len)?, 0, &sample) != Ok(e2e_len) {
            return None;
        }
        let (trace_type, max_ip_len) = (plan.header.trace_type, plan.max_ip_len);
        Some(FastSource { header, len, slot, trace_type, max_ip_len, e2e_len, plan: *plan })
    }

    /// Adds the trace to `frame` (whose parts are `parts`) with `node` in
    /// its slot (its Hop_Lim the packet's Hop Limit), and where the domain
    /// numbers packets the Edge-to-Edge option, numbered by `number` (of
    /// the frame's parts, asked as the general path asks it; `None`: the
    /// trace alone). `None`: not this path's frame (IPv4, or past the MTU
    /// with what it takes): the general path decides.
    #[inline(always)]
    pub fn insert(
        &self,
        frame: &mut FrameBuf<'_>,
        parts: &FastFrame,
        node: &NodeData,
        number: impl FnOnce(&FastFrame) -> Option<u64>,
    ) -> Option<Encapped> {
        if !parts.is_ipv6() {
            return None;
        }
        if self.e2e_len > 0 {
            return self.insert_numbered(frame, parts, node, number);
        }
        let (payload_len, next_header, hop_limit) = self.fits(frame.frame(), self.len)?;
        if !frame.open_gap_anywhere(L4_AT_V6, self.len) {
            return Some(Encapped::NoHeadroom);
        }
        Some(self.write(frame.frame_mut(), next_header, hop_limit, node, payload_len, self.len))
    }

    /// [`FastSource::insert`] where the domain numbers packets (out of line:
    /// the plain trace's path stays as short as it was).
    #[inline(never)]
    fn insert_numbered(
        &self,
        frame: &mut FrameBuf<'_>,
        parts: &FastFrame,
        node: &NodeData,
        number: impl FnOnce(&FastFrame) -> Option<u64>,
    ) -> Option<Encapped> {
        // The option's room counts whether or not a number comes.
        let (payload_len, next_header, hop_limit) = self.fits(frame.frame(), self.len + self.e2e_len)?;
        let e2e = self.plan.e2e_of(node, || number(parts));
        let added = self.len + if e2e.is_some() { self.e2e_len } else { 0 };
        if !frame.open_gap_anywhere(L4_AT_V6, added) {
            return Some(Encapped::NoHeadroom);
        }
        let out = frame.frame_mut();
        let after_trace = match e2e {
            Some(e2e) => {
                // Its Destination Options header names the upper layer.
                let room = out.get_mut(L4_AT_V6 + self.len..).unwrap_or_default();
                let written = ipv6::emit_destination_options(room, next_header, &e2e);
                debug_assert_eq!(written, Ok(self.e2e_len), "checked in FastSource::of");
                DESTINATION_OPTIONS
            }
            None => next_header,
        };
        Some(self.write(out, after_trace, hop_limit, node, payload_len, added))
    }

    /// The IPv6 packet's Payload Length, Next Header and Hop Limit, where
    /// `added` bytes keep it within the MTU and the Payload Length field.
    #[inline(always)]
    fn fits(&self, bytes: &[u8], added: usize) -> Option<(usize, u8, u8)> {
        let payload_len = usize::from(be16(bytes, PAYLOAD_LEN_AT));
        if L4_AT_V6 - L3_AT + payload_len + added > self.max_ip_len || payload_len + added > 0xffff {
            return None;
        }
        Some((payload_len, byte(bytes, NEXT_HEADER_AT), byte(bytes, HOP_LIMIT_AT)))
    }

    /// Into the `added` bytes opened after the IPv6 header: the trace's
    /// header (naming `after_trace`), this node's element in its slot;
    /// then the IPv6 header's Next Header and Payload Length.
    #[inline(always)]
    fn write(
        &self,
        out: &mut [u8],
        after_trace: u8,
        hop_limit: u8,
        node: &NodeData,
        payload_len: usize,
        added: usize,
    ) -> Encapped {
        let header = self.header.get(..self.len).unwrap_or_default();
        put(out, L4_AT_V6, header);
        put_u8(out, L4_AT_V6, after_trace);
        let element = NodeData { hop_limit: Some(hop_limit), ..*node };
        let slot = out.get_mut(L4_AT_V6 + self.slot..).unwrap_or_default();
        let written = element.emit(self.trace_type, slot);
        debug_assert!(written.is_ok(), "checked in FastSource::of");
        put_u8(out, NEXT_HEADER_AT, HOP_BY_HOP);
        put(out, PAYLOAD_LEN_AT, &((payload_len + added) as u16).to_be_bytes());
        Encapped::Added(added)
    }
}
