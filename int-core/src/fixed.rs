//! The common frame at fixed offsets: Ethernet without VLAN tags, IPv4
//! without options and not fragmented, then UDP (its Length agreeing with
//! IPv4's) or TCP without options. Most traffic has this shape; the fast
//! paths read it with a few fixed-size loads and compares, and every other
//! frame takes the general walk ([`crate::locate`]), which gives frames of
//! this shape the same answer.

use crate::carrier::Carrier;
use crate::checksum;
use crate::flow::FlowWords;

/// The IPv4 header's offset.
pub const L3_AT: usize = 14;
/// The L4 header's offset.
pub const L4_AT: usize = 34;
/// Where INT goes (or is) after a UDP header.
const UDP_PAYLOAD_AT: usize = L4_AT + 8;
/// Where INT goes (or is) after a TCP header without options.
const TCP_PAYLOAD_AT: usize = L4_AT + 20;

/// What a frame of the common shape is to a sink's fast path, found at
/// fixed offsets: its general path gives the same answer where this one
/// gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedArrival<T> {
    /// An INT packet of the sink's domain, checked as the general path
    /// checks it: what the sink needs of it.
    Int(T),
    /// Not marked: the general path finds no INT either.
    NotInt,
    /// Anything else (marked without INT, a block that lies, another
    /// shape, encapsulation or header type): the general path decides.
    Other,
}

/// Where a common frame's parts lie: 24 bytes, the state a fast path
/// keeps of a packet between the passes over its burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedFrame {
    /// The flow.
    pub flow: FlowWords,
    /// Where the IP packet ends (bytes after it are Ethernet padding).
    end: u16,
    /// The L4 length: UDP Length, or the TCP segment's.
    pub carrier_len: u16,
    /// IPv4's ToS: DSCP and ECN.
    pub tos: u8,
    tcp: bool,
}

impl FixedFrame {
    /// The frame's parts, if it has the common shape and at least `room`
    /// bytes of L4 payload.
    #[inline(always)]
    pub fn read(frame: &[u8], room: usize) -> Option<FixedFrame> {
        let head: &[u8; TCP_PAYLOAD_AT] = frame.first_chunk()?;
        let word = |at: usize| crate::bytes::be16(head, at);
        if word(12) != 0x0800 || head[L3_AT] != 0x45 || word(20) & 0x3fff != 0 {
            return None;
        }
        let total_len = usize::from(word(16));
        let end = L3_AT + total_len;
        let (tcp, carrier_len) = match head[23] {
            17 if usize::from(word(38)) + 20 == total_len => (false, word(38)),
            6 if head[46] >> 4 == 5 && total_len >= 40 => (true, (total_len - 20) as u16),
            _ => return None,
        };
        let payload_at = if tcp { TCP_PAYLOAD_AT } else { UDP_PAYLOAD_AT };
        if end > frame.len() || payload_at + room > end {
            return None;
        }
        let flow = FlowWords {
            addresses: u64::from(crate::bytes::be32(head, 26)) << 32
                | u64::from(crate::bytes::be32(head, 30)),
            rest: u64::from(head[23]) << 32 | u64::from(crate::bytes::be32(head, L4_AT)),
        };
        Some(FixedFrame { flow, end: end as u16, carrier_len, tos: head[15], tcp })
    }

    /// Where the L4 payload starts: where INT goes, or is.
    #[inline(always)]
    pub fn payload_at(&self) -> usize {
        if self.tcp {
            TCP_PAYLOAD_AT
        } else {
            UDP_PAYLOAD_AT
        }
    }

    /// The header whose length and checksum cover the payload.
    #[inline(always)]
    pub(crate) fn carrier(&self) -> Carrier {
        if self.tcp {
            Carrier::Tcp(L4_AT)
        } else {
            Carrier::Udp(L4_AT)
        }
    }

    /// Where the IP packet ends.
    #[inline(always)]
    pub fn end(&self) -> usize {
        usize::from(self.end)
    }

    /// Bytes of IP packet.
    #[inline(always)]
    pub fn ip_len(&self) -> usize {
        usize::from(self.end) - L3_AT
    }

    /// After INT bytes were added or removed at the payload's start, the
    /// L4 length becoming `carrier_len` and words summing to `removed`
    /// replaced by words summing to `added` under the L4 checksum: sets the
    /// ToS, the IPv4 Total Length and the L4 length, every checksum
    /// following incrementally (a UDP checksum of 0 stays 0).
    #[inline(always)]
    pub(crate) fn rewrite(&self, bytes: &mut [u8], tos: u8, carrier_len: u16, removed: u32, added: u32) {
        let ip_len = self.ip_len() - usize::from(self.carrier_len) + usize::from(carrier_len);
        rewrite_ipv4(bytes, tos, ip_len);
        self.carrier().update(bytes, self.carrier_len, carrier_len, removed, added);
    }
}

/// Sets the IPv4 header's ToS and Total Length, its checksum following
/// (RFC 1624).
#[inline(always)]
fn rewrite_ipv4(bytes: &mut [u8], tos: u8, total_len: usize) {
    let Some(header) = bytes.get_mut(L3_AT..).and_then(|h| h.first_chunk_mut::<20>()) else {
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
