//! Reference stages: the least work an INT 0.5 source, transit hop and sink
//! can do for the benchmark's frame (Ethernet without VLAN tags, IPv4
//! without options, not fragmented, UDP or TCP without options, Host-INT's
//! dialect: DSCP marking, shim Type 3, instructions 0xCC00, a zero tail).
//! Fixed offsets, fixed-size loads and stores, no checks beyond that shape,
//! no watchlist, no edge guard, no ageing and no reports.
//!
//! They are the benchmark's yardstick, not a product: each real stage's work
//! per packet is given as a multiple of its reference's, measured on the
//! same host in the same run, so that the figure moves with the code and
//! not with the host. For every frame they take they write the same bytes
//! as the real stage (`tests/reference.rs`); every other frame they leave
//! alone.

mod sink;
mod source;
mod table;
mod transit;

pub use sink::{Sink, SinkFlow};
pub use source::Source;
pub use table::FlowSlots;
pub use transit::Transit;

use crate::carrier::Carrier;
use crate::checksum;
use crate::encap::Encapsulation;

/// Ethernet and IPv4 without options: the L4 header's offset.
const L4_AT: usize = 34;
/// The IPv4 header's offset.
const L3_AT: usize = 14;
/// Where the block goes after a UDP header.
const UDP_BLOCK_AT: usize = L4_AT + 8;
/// Where the block goes after a TCP header without options.
const TCP_BLOCK_AT: usize = L4_AT + 20;
/// The shim and the metadata header.
const BLOCK_HEAD_LEN: usize = 12;
/// Host-INT's hop: switch id, port ids, ingress and egress timestamps.
const HOP_LEN: usize = 16;
/// Host-INT's instruction bitmap for that hop.
const HOST_INT_BITMAP: [u8; 2] = [0xcc, 0x00];

/// An IPv4 TCP or UDP packet at fixed offsets, as far as the references
/// read it.
#[derive(Debug, Clone, Copy)]
struct Packet {
    /// Where INT goes or is.
    block_at: usize,
    /// Where the IP packet ends.
    end: usize,
    tos: u8,
    carrier: Carrier,
    /// The carrier's L4 length (UDP Length, or the TCP segment's).
    carrier_len: u16,
    /// Addresses, then protocol and ports: the flow.
    key: [u64; 2],
}

impl Packet {
    /// The packet, if `frame` has the references' shape and at least
    /// `room` bytes from the block's offset to the packet's end.
    #[inline(always)]
    fn read(frame: &[u8], room: usize) -> Option<Packet> {
        let head: &[u8; TCP_BLOCK_AT] = frame.first_chunk()?;
        let word = |at: usize| crate::bytes::be16(head, at);
        if word(12) != 0x0800 || head[L3_AT] != 0x45 || word(20) & 0x3fff != 0 {
            return None;
        }
        let total_len = usize::from(word(16));
        let end = L3_AT + total_len;
        let (block_at, carrier, carrier_len) = match head[23] {
            17 if usize::from(word(38)) + 20 == total_len => (UDP_BLOCK_AT, Carrier::Udp(L4_AT), word(38)),
            6 if head[46] >> 4 == 5 => (TCP_BLOCK_AT, Carrier::Tcp(L4_AT), (total_len - 20) as u16),
            _ => return None,
        };
        if end > frame.len() || block_at + room > end {
            return None;
        }
        let addresses =
            u64::from(crate::bytes::be32(head, 26)) << 32 | u64::from(crate::bytes::be32(head, 30));
        let ports = u64::from(crate::bytes::be32(head, L4_AT));
        let key = [addresses, u64::from(head[23]) << 32 | ports];
        Some(Packet { block_at, end, tos: head[15], carrier, carrier_len, key })
    }

    fn ip_len(&self) -> usize {
        self.end - L3_AT
    }
}

/// Whether `tos` carries the DSCP mark of `marking`.
#[inline(always)]
fn marked(marking: &Encapsulation, tos: u8) -> bool {
    marking.tos_is_marked(tos)
}

/// Sets the IPv4 header's ToS and Total Length, the header checksum
/// following (RFC 1624).
#[inline(always)]
fn rewrite_ipv4(bytes: &mut [u8], tos: u8, total_len: usize) {
    let Some(header) = bytes.get_mut(L3_AT..L3_AT + 20).and_then(|h| h.first_chunk_mut::<20>()) else {
        return;
    };
    let removed = u32::from(u16::from_be_bytes([header[0], header[1]]))
        + u32::from(u16::from_be_bytes([header[2], header[3]]));
    header[1] = tos;
    header[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
    let added = u32::from(u16::from_be_bytes([header[0], tos])) + total_len as u32;
    let old = u16::from_be_bytes([header[10], header[11]]);
    header[10..12].copy_from_slice(&checksum::adjust(old, removed, added).to_be_bytes());
}

/// The two 16-bit halves of a word, added.
#[inline(always)]
fn word_sum(value: u32) -> u32 {
    (value >> 16) + (value & 0xffff)
}
