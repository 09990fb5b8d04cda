//! The IOAM transit's fast path: the frame the encapsulating node writes
//! (Ethernet without tags, IPv6, a Hop-by-Hop header of its own holding
//! PadN and the namespace's trace, [`OwnHopByHop`]), checked at fixed
//! offsets; then the slot filled, or Overflow set, by the general path's
//! writer ([`ipv6::fill`]). What follows the Hop-by-Hop header is not read
//! but for where the extension headers end: the upper layer right after
//! it, or after one Destination Options header within the packet (the
//! Edge-to-Edge option's, whatever it holds), as the general walk
//! ([`crate::locate::ipv6`]) passes them. Every other frame is left to
//! [`super::transit::push`], which gives the frames this path takes the
//! same bytes and outcome (int-core's `tests/fast_ioam.rs` holds the two
//! together over every one-byte change and cut of such frames).

use super::fast_sink::{OwnHopByHop, HBH_AT};
use super::ipv6::{self, Filled};
use super::node::NodeData;
use super::transit::Transited;
use crate::bytes::byte;
use crate::fast::L3_AT;
use crate::frame::FrameBuf;
use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HOP_BY_HOP, ROUTING};
use crate::wire::ipv6option::extension_len;

/// The IPv6 header's Hop Limit: the element's Hop_Lim.
const HOP_LIMIT_AT: usize = L3_AT + 7;

/// The fast path of an IOAM transit: no state between packets (the
/// element's layout is the trace type's, read from each packet).
#[derive(Debug, Clone, Default)]
pub struct FastTransit;

impl FastTransit {
    /// Fills the next slot of the namespace's trace with `node` (its
    /// Hop_Lim the packet's Hop Limit), or sets Overflow, as
    /// [`super::transit::push`] would; `None` (frame unchanged) leaves the
    /// frame to it.
    #[inline(always)]
    pub fn push(&mut self, frame: &mut FrameBuf<'_>, namespace: u16, node: &NodeData) -> Option<Transited> {
        let bytes = frame.frame_mut();
        let own = OwnHopByHop::find(bytes, namespace)?;
        if !upper_layer_next(bytes, own.hbh_end, own.end) {
            return None;
        }
        let node = NodeData { hop_limit: Some(byte(bytes, HOP_LIMIT_AT)), ..*node };
        // The trace was checked against the header: fill cannot fail, and
        // were it to, nothing was written and the general path refuses it.
        match ipv6::fill(bytes.get_mut(HBH_AT..own.hbh_end)?, &own.trace, &node).ok()? {
            Filled::At(_) => Some(Transited::Filled),
            Filled::Overflow => Some(Transited::Overflow),
        }
    }
}

/// Whether the extension headers end after the Hop-by-Hop header that
/// ends at `hbh_end`, or after one Destination Options header there
/// within the packet (which ends at `end`): the general walk then takes
/// the packet, whatever its upper layer.
#[inline(always)]
fn upper_layer_next(frame: &[u8], hbh_end: usize, end: usize) -> bool {
    let next = match byte(frame, HBH_AT) {
        DESTINATION_OPTIONS if hbh_end + extension_len(frame, hbh_end) > end => return false,
        DESTINATION_OPTIONS => byte(frame, hbh_end),
        next => next,
    };
    !matches!(next, HOP_BY_HOP | ROUTING | FRAGMENT | DESTINATION_OPTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ioam::ipv6::emit_hop_by_hop;
    use crate::ioam::trace::{TraceHeaderRepr, TraceType};
    use crate::ioam::transit::push;

    /// An IPv6 UDP frame (Hop Limit 64) with the encapsulating node's
    /// Hop-by-Hop header: namespace 123, two slots of Hop_Lim and node id;
    /// then `after` (the bytes between it and the UDP header, whose first
    /// byte `next` names).
    fn frame(next: u8, after: &[u8]) -> Vec<u8> {
        let header = TraceHeaderRepr {
            namespace: 123,
            node_len: 1,
            trace_type: TraceType::HOP_LIM_NODE_ID,
            ..Default::default()
        };
        let mut hbh = [0u8; 24];
        assert_eq!(emit_hop_by_hop(&mut hbh, next, &header, 2), Ok(24));
        let udp = [0x10, 0x00, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00];
        let payload_len = (hbh.len() + after.len() + udp.len()) as u16;
        let mut out = vec![0u8; 12];
        out.extend([0x86, 0xdd, 0x60, 0, 0, 0]);
        out.extend(payload_len.to_be_bytes());
        out.extend([HOP_BY_HOP, 64]);
        out.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        out.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        out.extend(hbh);
        out.extend(after);
        out.extend(udp);
        out
    }

    /// Both paths over `bytes`: the fast path's answer, and whether it
    /// left what the general path leaves.
    fn both(bytes: &[u8]) -> Option<Transited> {
        let node = NodeData { node_id: Some(0xab_cdef), ..Default::default() };
        let (mut fast, mut general) = (bytes.to_vec(), bytes.to_vec());
        let len = fast.len();
        let said = FastTransit.push(&mut FrameBuf::new(&mut fast, 0, len).unwrap(), 123, &node);
        let expected = push(&mut FrameBuf::new(&mut general, 0, len).unwrap(), 123, &node);
        if said.is_some() {
            assert_eq!(said, expected.ok());
            assert_eq!(fast, general);
        } else {
            assert_eq!(fast, bytes, "declined, unchanged");
        }
        said
    }

    /// The last slot first, Hop_Lim 64 (the kernel's placement: see
    /// `ipv6.rs`), then the first, then Overflow.
    #[test]
    fn fills_the_slots_then_overflows() {
        let mut bytes = frame(17, &[]);
        let len = bytes.len();
        let node = NodeData { node_id: Some(0xab_cdef), ..Default::default() };
        let fill = |bytes: &mut Vec<u8>| FastTransit.push(&mut FrameBuf::new(bytes, 0, len)?, 123, &node);
        assert_eq!(fill(&mut bytes), Some(Transited::Filled));
        assert_eq!(bytes[54 + 20..54 + 24], [64, 0xab, 0xcd, 0xef]);
        assert_eq!(bytes[54 + 11], 1, "RemainingLen");
        assert_eq!(fill(&mut bytes), Some(Transited::Filled));
        assert_eq!(bytes[54 + 16..54 + 20], [64, 0xab, 0xcd, 0xef]);
        assert_eq!(fill(&mut bytes), Some(Transited::Overflow));
        assert_eq!(bytes[54 + 10] & 0x04, 0x04, "the O bit");
        assert_eq!(both(&frame(17, &[])), Some(Transited::Filled));
    }

    /// A Destination Options header after it is passed whatever it holds;
    /// a chain that goes on, or one that runs past the packet, is the
    /// general path's (which refuses the latter).
    #[test]
    fn takes_one_destination_options_header_and_no_more() {
        let padn = [17, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(both(&frame(DESTINATION_OPTIONS, &padn)), Some(Transited::Filled));
        let routing = [43, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(both(&frame(DESTINATION_OPTIONS, &routing)), None);
        assert_eq!(both(&frame(ROUTING, &[17, 0, 0, 0, 0, 0, 0, 0])), None);
        let long = [17, 2, 1, 4, 0, 0, 0, 0];
        assert_eq!(both(&frame(DESTINATION_OPTIONS, &long)), None);
        assert_eq!(both(&frame(59, &[])), Some(Transited::Filled), "No Next Header");
    }
}
