//! The fast path's frame. Every stage has three implementations: the
//! general path (any frame the specification allows), the fast path (the
//! frame most traffic is, read at fixed offsets with a few fixed-size
//! loads and compares) and the reference (the least work for the
//! benchmark's frame, its yardstick). A fast-path frame is Ethernet
//! without VLAN tags, then IPv4 without options and not fragmented or IPv6
//! without extension headers, then UDP (its Length agreeing with the IP
//! length) or TCP without options. Every other frame takes the general
//! walk ([`crate::locate`]), which gives fast-path frames the same answer
//! (property tests hold the two together).

use crate::bytes::{be16, be32};
use crate::carrier::Carrier;
use crate::checksum;
use crate::flow::{FlowKey, FlowWords};

/// The IP header's offset.
pub const L3_AT: usize = 14;
/// The L4 header's offset after IPv4.
pub const L4_AT: usize = L3_AT + 20;
/// The L4 header's offset after IPv6.
pub const L4_AT_V6: usize = L3_AT + 40;
const UDP_LEN: usize = 8;
const TCP_LEN: usize = 20;
/// [`FastFrame::shape`]'s bits.
const SHAPE_TCP: u8 = 1;
const SHAPE_IPV6: u8 = 2;

/// What a fast-path frame is to a sink's fast path: its general path
/// gives the same answer where this one gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastArrival<T> {
    /// An INT packet of the sink's domain, checked as the general path
    /// checks it: what the sink needs of it.
    Int(T),
    /// Not marked: the general path finds no INT either.
    NotInt,
    /// Anything else (marked without INT, a block that lies, another
    /// shape, encapsulation or header type): the general path decides.
    Other,
}

/// Where a fast-path frame's parts lie: 24 bytes, the state a fast path
/// keeps of a packet between the passes over its burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FastFrame {
    /// The flow.
    pub flow: FlowWords,
    /// Where the IP packet ends (bytes after it are Ethernet padding).
    end: u16,
    /// The L4 length: UDP Length, or the TCP segment's.
    pub carrier_len: u16,
    /// IPv4's ToS or IPv6's Traffic Class: DSCP and ECN.
    pub tos: u8,
    /// [`SHAPE_TCP`] and [`SHAPE_IPV6`].
    shape: u8,
    /// The L4 header's offset, and its payload's: kept, not derived from
    /// `shape` on every use.
    l4_at: u8,
    payload_at: u8,
}

impl FastFrame {
    /// The frame's parts, if it has the fast path's shape (IPv4 or IPv6) and at
    /// least `room` bytes of L4 payload.
    #[inline(always)]
    pub fn read(frame: &[u8], room: usize) -> Option<FastFrame> {
        // IPv4 first, at no cost to it.
        let ipv4 = Self::read_ipv4(frame, room);
        if ipv4.is_some() || frame.get(12..14) != Some(&[0x86, 0xdd]) {
            return ipv4;
        }
        Self::read_ipv6(frame, room)
    }

    /// [`FastFrame::read`] for IPv4 frames only (an IPv6 one is `None`).
    #[inline(always)]
    pub fn read_ipv4(frame: &[u8], room: usize) -> Option<FastFrame> {
        let head: &[u8; L4_AT + TCP_LEN] = frame.first_chunk()?;
        let word = |at: usize| be16(head, at);
        if word(12) != 0x0800 || head[L3_AT] != 0x45 || word(20) & 0x3fff != 0 {
            return None;
        }
        let total_len = usize::from(word(16));
        let (shape, carrier_len) = match head[23] {
            17 if usize::from(word(38)) + 20 == total_len => (0, word(38)),
            6 if head[46] >> 4 == 5 && total_len >= 40 => (SHAPE_TCP, (total_len - 20) as u16),
            _ => return None,
        };
        let flow = FlowWords {
            addresses: u64::from(be32(head, 26)) << 32 | u64::from(be32(head, 30)),
            rest: u64::from(head[23]) << 32 | u64::from(be32(head, L4_AT)),
        };
        let end = (L3_AT + total_len) as u16;
        let parts = FastFrame::new(flow, end, carrier_len, head[15], shape);
        parts.holds(frame, room).then_some(parts)
    }

    /// [`FastFrame::read`] for IPv6 frames: the L4 header right after the
    /// fixed header. Inline: out of line, its result came back through the
    /// stack, and IPv4's result with it, read back at another width than it
    /// was written (a stall that cost the IPv4 sink 12-23%).
    #[inline(always)]
    fn read_ipv6(frame: &[u8], room: usize) -> Option<FastFrame> {
        let head: &[u8; L4_AT_V6 + UDP_LEN] = frame.first_chunk()?;
        let word = |at: usize| be16(head, at);
        if head[L3_AT] >> 4 != 6 {
            return None;
        }
        let payload_len = word(L3_AT + 4);
        let (shape, carrier_len) = match head[L3_AT + 6] {
            17 if word(L4_AT_V6 + 4) == payload_len => (SHAPE_IPV6, payload_len),
            6 if frame.get(L4_AT_V6 + 12)? >> 4 == 5 && usize::from(payload_len) >= TCP_LEN => {
                (SHAPE_IPV6 | SHAPE_TCP, payload_len)
            }
            _ => return None,
        };
        let (src, dst) = ipv6_addresses(head)?;
        let flow = FlowWords::v6(src, dst, head[L3_AT + 6], word(L4_AT_V6), word(L4_AT_V6 + 2));
        let end = (L4_AT_V6 + usize::from(payload_len)) as u16;
        let tos = head[L3_AT] << 4 | head[L3_AT + 1] >> 4;
        let parts = FastFrame::new(flow, end, carrier_len, tos, shape);
        parts.holds(frame, room).then_some(parts)
    }

    #[inline(always)]
    fn new(flow: FlowWords, end: u16, carrier_len: u16, tos: u8, shape: u8) -> FastFrame {
        let l4_at = if shape & SHAPE_IPV6 != 0 { L4_AT_V6 } else { L4_AT };
        let payload_at = l4_at + if shape & SHAPE_TCP != 0 { TCP_LEN } else { UDP_LEN };
        FastFrame { flow, end, carrier_len, tos, shape, l4_at: l4_at as u8, payload_at: payload_at as u8 }
    }

    /// Whether `frame` holds the IP packet, with `room` bytes of payload.
    #[inline(always)]
    fn holds(&self, frame: &[u8], room: usize) -> bool {
        self.end() <= frame.len() && self.payload_at() + room <= self.end()
    }

    #[inline(always)]
    pub fn is_ipv6(&self) -> bool {
        self.shape & SHAPE_IPV6 != 0
    }

    #[inline(always)]
    fn is_tcp(&self) -> bool {
        self.shape & SHAPE_TCP != 0
    }

    /// The flow's key, its IPv6 addresses read again from `frame` (the
    /// frame this was read from).
    pub fn flow_key(&self, frame: &[u8]) -> Option<FlowKey> {
        if !self.is_ipv6() {
            return self.flow.key_v4();
        }
        let (src, dst) = ipv6_addresses(frame)?;
        Some(FlowKey {
            src: core::net::Ipv6Addr::from(*src).into(),
            dst: core::net::Ipv6Addr::from(*dst).into(),
            protocol: self.flow.protocol(),
            src_port: (self.flow.rest >> 16) as u16,
            dst_port: self.flow.dst_port(),
        })
    }

    /// The L4 header's offset.
    #[inline(always)]
    fn l4_at(&self) -> usize {
        usize::from(self.l4_at)
    }

    /// Where the L4 payload starts: where INT goes, or is.
    #[inline(always)]
    pub fn payload_at(&self) -> usize {
        usize::from(self.payload_at)
    }

    /// The header whose length and checksum cover the payload.
    #[inline(always)]
    pub(crate) fn carrier(&self) -> Carrier {
        if self.is_tcp() {
            Carrier::Tcp(self.l4_at())
        } else {
            Carrier::Udp(self.l4_at())
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
    /// ToS (Traffic Class), the IP length and the L4 length, every checksum
    /// following incrementally (a UDP checksum of 0 stays 0).
    #[inline(always)]
    pub(crate) fn rewrite(&self, bytes: &mut [u8], tos: u8, carrier_len: u16, removed: u32, added: u32) {
        let ip_len = self.ip_len() - usize::from(self.carrier_len) + usize::from(carrier_len);
        if self.is_ipv6() {
            rewrite_ipv6(bytes, tos, ip_len - (L4_AT_V6 - L3_AT));
        } else {
            rewrite_ipv4(bytes, tos, ip_len);
        }
        self.carrier().update(bytes, self.carrier_len, carrier_len, removed, added);
    }
}

/// The source and destination addresses of the IPv6 header in `frame`.
#[inline(always)]
fn ipv6_addresses(frame: &[u8]) -> Option<(&[u8; 16], &[u8; 16])> {
    let address = |at: usize| frame.get(at..at + 16).and_then(|a| a.first_chunk::<16>());
    Some((address(L3_AT + 8)?, address(L3_AT + 24)?))
}

/// Sets the IPv6 header's Traffic Class and Payload Length (no checksum;
/// the Flow Label stays).
#[inline(never)]
fn rewrite_ipv6(bytes: &mut [u8], tos: u8, payload_len: usize) {
    let Some(header) = bytes.get_mut(L3_AT..).and_then(|h| h.first_chunk_mut::<6>()) else {
        return;
    };
    header[0] = (header[0] & 0xf0) | tos >> 4;
    header[1] = (tos << 4) | (header[1] & 0x0f);
    header[4..6].copy_from_slice(&(payload_len as u16).to_be_bytes());
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_frame_is_24_bytes_between_the_passes() {
        assert_eq!(core::mem::size_of::<super::FastFrame>(), 24);
    }
}
