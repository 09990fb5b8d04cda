//! The three IOAM roles on an IPv6 frame (RFC 9197 section 4; RFC 9486
//! section 4): the encapsulating node adds the Pre-allocated Trace and
//! fills the first slot, a transit node fills the next, the decapsulating
//! node reads every slot and gives back the packet as it came.
//!
//! Where the trace goes: a packet without a Hop-by-Hop header gets one of
//! its own, right after the IPv6 header (PadN, the option at offset 4, its
//! padding); a packet with one gets the option appended at its end (the
//! header is 8n long, so the option starts 4n aligned). The decapsulating
//! node tells the two apart by the shape, and removes exactly what was
//! added: the header, or the option and its padding. Payload Length and
//! the Next Header chain follow; the upper layer's checksum does not change
//! (its pseudo-header counts the upper-layer length, not the options).

use super::ipv6::{self, Filled, TraceAt, OPTION_HEADER_LEN};
use super::node::NodeData;
use super::trace::{TraceHeaderRepr, HEADER_LEN};
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate;
use crate::wire::ipv6::{HEADER_LEN as IPV6_LEN, HOP_BY_HOP};

/// A Hop-by-Hop header is at most 2048 bytes (Hdr Ext Len 255).
const MAX_HOP_BY_HOP: usize = 256 * 8;

/// What an encapsulating node adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Namespace, NodeLen and trace type (flags 0; RemainingLen follows
    /// from `nodes`).
    pub header: TraceHeaderRepr,
    /// Slots pre-allocated, this node's included.
    pub nodes: usize,
    /// The largest IP packet allowed after the insertion (the MTU).
    pub max_ip_len: usize,
}

impl Plan {
    /// Bytes of the option and its trace.
    pub fn option_len(&self) -> usize {
        OPTION_HEADER_LEN + HEADER_LEN + self.nodes * usize::from(self.header.node_len) * 4
    }

    /// The settings no trace can be written with.
    pub fn check(&self) -> Result<(), &'static str> {
        let words = self.nodes * usize::from(self.header.node_len);
        if usize::from(self.header.node_len) != self.header.trace_type.node_len() {
            return Err("NodeLen is not the trace type's words per node");
        }
        if self.header.node_len == 0 || self.header.node_len > 31 {
            return Err("a node's element is 1 to 31 words (NodeLen is 5 bits)");
        }
        if self.nodes == 0 {
            return Err("at least one node: the encapsulating node fills the first slot");
        }
        if words > 0x7f || self.option_len() - 2 > 255 {
            return Err("the trace's data space is at most 127 words and its option at most 257 bytes");
        }
        Ok(())
    }

    /// Bytes added to a packet: a new Hop-by-Hop header, or the option
    /// appended to the packet's own.
    pub fn added_len(&self, has_hop_by_hop: bool) -> usize {
        match has_hop_by_hop {
            true => self.option_len().next_multiple_of(8),
            false => (4 + self.option_len()).next_multiple_of(8),
        }
    }
}

/// What an encapsulating node did to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encapped {
    /// The trace added (this many bytes) and this node's slot filled.
    Added(usize),
    /// Not IPv6: passed as it is.
    NotIpv6,
    /// A trace of the namespace already there: passed as it is.
    AlreadyTraced,
    /// Over the MTU (or the Hop-by-Hop limit) with the trace: passed as it is.
    TooBig,
    /// The buffer has room for the trace neither before the frame nor
    /// after it.
    NoHeadroom,
}

/// Adds the trace `plan` describes to an IPv6 frame and fills this node's
/// slot with `node` (its Hop_Lim the packet's Hop Limit).
pub fn encap(frame: &mut FrameBuf<'_>, plan: &Plan, node: &NodeData) -> Result<Encapped, ParseError> {
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(Encapped::NotIpv6) };
    if plan.check().is_err() {
        return Ok(Encapped::TooBig);
    }
    let bytes = frame.frame();
    let (next_header, hop_limit) = (byte(bytes, ip.l3 + 6), byte(bytes, ip.l3 + 7));
    let hbh = ip.l3 + IPV6_LEN;
    let existing = (next_header == HOP_BY_HOP).then(|| hop_by_hop_len(bytes, hbh));
    if let Some(len) = existing {
        if ipv6::find_trace(bytes.get(hbh..hbh + len).unwrap_or_default(), plan.header.namespace)?.is_some() {
            return Ok(Encapped::AlreadyTraced);
        }
    }
    let added = plan.added_len(existing.is_some());
    let payload_len = ip.ip_len() - IPV6_LEN + added;
    if ip.ip_len() + added > plan.max_ip_len
        || payload_len > usize::from(u16::MAX)
        || existing.unwrap_or(0) + added > MAX_HOP_BY_HOP
    {
        return Ok(Encapped::TooBig);
    }
    let at = hbh + existing.unwrap_or(0);
    // A trace of many slots outgrows an mbuf's 128 bytes of headroom:
    // then the payload moves toward the tail instead.
    if !frame.open_gap_anywhere(at, added) {
        return Ok(Encapped::NoHeadroom);
    }
    let out = frame.frame_mut();
    let (header, nodes) = (&plan.header, plan.nodes);
    match existing {
        None => {
            let written =
                ipv6::emit_hop_by_hop(out.get_mut(hbh..).unwrap_or_default(), next_header, header, nodes);
            debug_assert_eq!(written, Ok(added));
            set(out, ip.l3 + 6, HOP_BY_HOP);
        }
        Some(len) => {
            let written = ipv6::write_option(out.get_mut(at..at + added).unwrap_or_default(), header, nodes);
            debug_assert_eq!(written, Ok(()));
            set(out, hbh + 1, ((len + added) / 8 - 1) as u8);
        }
    }
    set_payload_len(out, ip.l3, payload_len as u16);
    let hbh_len = existing.unwrap_or(0) + added;
    let hbh_bytes = out.get_mut(hbh..hbh + hbh_len).unwrap_or_default();
    let trace = ipv6::find_trace(hbh_bytes, header.namespace)?.ok_or(ParseError::BadLength {
        layer: Layer::IoamOption,
        offset: at,
        value: added,
    })?;
    let node = NodeData { hop_limit: Some(hop_limit), ..*node };
    ipv6::fill(hbh_bytes, &trace, &node).map_err(|_| ParseError::BadLength {
        layer: Layer::IoamTrace,
        offset: trace.data,
        value: trace.data_len,
    })?;
    Ok(Encapped::Added(added))
}

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
/// other options alone.
pub fn transit(frame: &mut [u8], namespace: u16, node: &NodeData) -> Result<Transited, ParseError> {
    let Some(ip) = locate::ipv6(frame)? else { return Ok(Transited::NotTraced) };
    if byte(frame, ip.l3 + 6) != HOP_BY_HOP {
        return Ok(Transited::NotTraced);
    }
    let hbh = ip.l3 + IPV6_LEN;
    let len = hop_by_hop_len(frame, hbh);
    let hop_limit = byte(frame, ip.l3 + 7);
    let hbh_bytes = frame.get_mut(hbh..hbh + len).unwrap_or_default();
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

/// A trace a decapsulating node found: where it is, and what to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub ip: locate::IpLocation,
    /// Offset of the Hop-by-Hop header and its length.
    pub hbh: usize,
    pub hbh_len: usize,
    /// The trace, its offsets counted from the Hop-by-Hop header.
    pub trace: TraceAt,
    /// The header was the encapsulating node's (removed whole), or only
    /// the option and its padding at its end were.
    pub whole: bool,
}

impl Found {
    /// The Hop-by-Hop header's bytes in `frame`.
    pub fn hop_by_hop<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        frame.get(self.hbh..self.hbh + self.hbh_len).unwrap_or_default()
    }

    /// The elements the nodes wrote, newest first.
    pub fn nodes<'a>(&self, frame: &'a [u8]) -> impl Iterator<Item = NodeData> + 'a {
        ipv6::nodes(self.hop_by_hop(frame), &self.trace)
    }

    /// The packet's flow (ports 0 where it has no TCP or UDP header the
    /// walk can read).
    pub fn flow(&self, frame: &[u8]) -> crate::flow::FlowKey {
        let ports = match locate::l4(frame, &self.ip) {
            Ok(Some(l4)) => l4.ports(),
            _ => (0, 0),
        };
        crate::flow::flow_key(frame, &self.ip, self.ip.protocol, ports.0, ports.1)
    }

    /// Where a report's copy of the packet ends: after the trace and the
    /// upper layer's first 8 bytes (its ports), as far as the packet goes.
    pub fn report_end(&self) -> usize {
        (self.ip.l4 + 8).min(self.ip.end)
    }

    /// Bytes the decapsulating node removes.
    pub fn removed_len(&self) -> usize {
        match self.whole {
            true => self.hbh_len,
            false => self.hbh_len - self.trace.option,
        }
    }
}

/// The namespace's trace in an IPv6 frame, if there is one. Refused: a
/// trace that lies, and one not where an encapsulating node puts it (it
/// could not be removed without a trace of its own).
pub fn find(frame: &[u8], namespace: u16) -> Result<Option<Found>, ParseError> {
    let Some(ip) = locate::ipv6(frame)? else { return Ok(None) };
    if byte(frame, ip.l3 + 6) != HOP_BY_HOP {
        return Ok(None);
    }
    let hbh = ip.l3 + IPV6_LEN;
    let hbh_len = hop_by_hop_len(frame, hbh);
    let bytes = frame.get(hbh..hbh + hbh_len).unwrap_or_default();
    let Some(trace) = ipv6::find_trace(bytes, namespace)? else { return Ok(None) };
    let option_end = trace.data + trace.data_len;
    let padding_only = bytes.get(option_end..).is_some_and(is_padding);
    let whole = trace.option == 4 && bytes.get(2..4) == Some(&[1, 0]) && padding_only;
    let appended = trace.option >= 8 && trace.option.is_multiple_of(8) && padding_only;
    if !(whole || appended) {
        return Err(ParseError::BadLength {
            layer: Layer::IoamOption,
            offset: hbh + trace.option,
            value: hbh_len,
        });
    }
    Ok(Some(Found { ip, hbh, hbh_len, trace, whole }))
}

/// The first trace in an IPv6 packet that starts at its IPv6 header (a
/// report's copy of it, perhaps cut after the headers): its header and
/// the Hop-by-Hop header's bytes, to read the elements from.
pub fn trace_in_packet(packet: &[u8]) -> Option<(TraceAt, &[u8])> {
    if packet.first().map(|b| b >> 4) != Some(6) || byte(packet, 6) != HOP_BY_HOP {
        return None;
    }
    let hbh = packet.get(IPV6_LEN..IPV6_LEN + hop_by_hop_len(packet, IPV6_LEN))?;
    Some((ipv6::first_trace(hbh).ok()??, hbh))
}

/// Removes what the encapsulating node added; false, changing nothing,
/// if the frame is not the one `found` was read from.
pub fn decap(frame: &mut FrameBuf<'_>, found: &Found) -> bool {
    let removed = found.removed_len();
    let l3 = found.ip.l3;
    let payload_len = found.ip.ip_len() - IPV6_LEN - removed;
    let next_header = byte(frame.frame(), found.hbh);
    let at = found.hbh + found.hbh_len - removed;
    if !frame.close_gap(at, removed) {
        return false;
    }
    let out = frame.frame_mut();
    match found.whole {
        true => set(out, l3 + 6, next_header),
        false => set(out, found.hbh + 1, ((found.hbh_len - removed) / 8 - 1) as u8),
    }
    set_payload_len(out, l3, payload_len as u16);
    true
}

/// Whether `bytes` are Pad1 and PadN options only.
fn is_padding(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = bytes.get(at) {
        at += match kind {
            0 => 1,
            1 => 2 + usize::from(byte(bytes, at + 1)),
            _ => return false,
        };
    }
    at == bytes.len()
}

/// The length of the Hop-by-Hop header at `at` (the walk checked it).
fn hop_by_hop_len(frame: &[u8], at: usize) -> usize {
    (usize::from(byte(frame, at + 1)) + 1) * 8
}

fn byte(bytes: &[u8], at: usize) -> u8 {
    bytes.get(at).copied().unwrap_or(0)
}

fn set(bytes: &mut [u8], at: usize, value: u8) {
    if let Some(b) = bytes.get_mut(at) {
        *b = value;
    }
}

fn set_payload_len(bytes: &mut [u8], l3: usize, len: u16) {
    if let Some(field) = bytes.get_mut(l3 + 4..l3 + 6) {
        field.copy_from_slice(&len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::super::trace::{TraceType, FLAG_OVERFLOW};
    use super::*;
    use crate::craft::PacketSpec;

    const HEADROOM: usize = 128;

    fn plan(nodes: usize) -> Plan {
        let header = TraceHeaderRepr {
            namespace: 123,
            node_len: 1,
            trace_type: TraceType::HOP_LIM_NODE_ID,
            ..Default::default()
        };
        Plan { header, nodes, max_ip_len: 1500 }
    }

    fn udp6() -> Vec<u8> {
        let (a, b) = ("2001:db8::1".parse::<Ipv6Addr>().unwrap(), "2001:db8::2".parse().unwrap());
        PacketSpec::udp6(a, b, 1000, 2000, 20).build()
    }

    /// The frame in a buffer with headroom; `f` runs on it; the frame after.
    fn with_headroom<R>(frame: &[u8], f: impl FnOnce(&mut FrameBuf<'_>) -> R) -> (Vec<u8>, R) {
        let mut buf = vec![0u8; HEADROOM + frame.len()];
        buf[HEADROOM..].copy_from_slice(frame);
        let mut view = FrameBuf::new(&mut buf, HEADROOM, frame.len()).unwrap();
        let result = f(&mut view);
        (view.frame().to_vec(), result)
    }

    fn node(id: u32) -> NodeData {
        NodeData { node_id: Some(id), ..Default::default() }
    }

    /// Without a Hop-by-Hop header: the header the kernel was sent in the
    /// issue's check (PadN, the option at offset 4, two slots), this
    /// node's element in the last slot.
    #[test]
    fn encap_writes_the_header_the_kernel_reads() {
        let original = udp6();
        let (out, done) = with_headroom(&original, |f| encap(f, &plan(2), &node(0x0a0b0c)));
        assert_eq!(done, Ok(Encapped::Added(24)));
        assert_eq!(out.len(), original.len() + 24);
        assert_eq!(out[14 + 6], HOP_BY_HOP, "IPv6 Next Header");
        assert_eq!(u16::from_be_bytes([out[18], out[19]]), 28 + 24, "Payload Length");
        let expected: [u8; 24] = [
            17, 2, 1, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x01, 0x80, 0x00, 0x00, 0x00, 0, 0, 0, 0, 64,
            0x0a, 0x0b, 0x0c,
        ];
        assert_eq!(out[54..78], expected);
        assert_eq!(out[78..], original[54..], "the upper layer as it was");
        let found = find(&out, 123).unwrap().unwrap();
        assert!(found.whole);
        assert_eq!(
            found.nodes(&out).collect::<Vec<_>>(),
            [NodeData { hop_limit: Some(64), ..node(0x0a0b0c) }]
        );
        let (back, done) = with_headroom(&out, |f| decap(f, &found));
        assert!(done);
        assert_eq!(back, original);
    }

    /// With a Hop-by-Hop header of the sender's: the option appended, the
    /// header grown; filled by two transits, then the third finds no room.
    #[test]
    fn an_existing_header_gets_the_option_appended_and_keeps_its_own() {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        let router_alert = vec![0, 0, 5, 2, 0, 0, 1, 0];
        spec.ipv6.as_mut().unwrap().extensions.push((HOP_BY_HOP, router_alert.clone()));
        let original = spec.build();
        let (mut out, done) = with_headroom(&original, |f| encap(f, &plan(3), &node(1)));
        assert_eq!(done, Ok(Encapped::Added(24)));
        assert_eq!(out[55], 3, "Hdr Ext Len: 8 + 24 bytes");
        assert_eq!(out[56..62], router_alert[2..], "the sender's option first");
        assert_eq!(out[62..64], [0x31, 22], "three slots: 4 + 8 + 12 bytes");
        assert_eq!(transit(&mut out[..], 123, &node(2)), Ok(Transited::Filled));
        assert_eq!(transit(&mut out[..], 123, &node(3)), Ok(Transited::Filled));
        assert_eq!(transit(&mut out[..], 123, &node(4)), Ok(Transited::Overflow));
        assert_eq!(transit(&mut out[..], 124, &node(4)), Ok(Transited::NotTraced));
        let found = find(&out, 123).unwrap().unwrap();
        assert!(!found.whole);
        assert_eq!(found.trace.header.flags, FLAG_OVERFLOW);
        let ids: Vec<_> = found.nodes(&out).map(|n| n.node_id.unwrap()).collect();
        assert_eq!(ids, [3, 2, 1], "newest first");
        let (back, done) = with_headroom(&out, |f| decap(f, &found));
        assert!(done);
        assert_eq!(back, original);
        let (_, again) = with_headroom(&out, |f| encap(f, &plan(3), &node(1)));
        assert_eq!(again, Ok(Encapped::AlreadyTraced));
    }

    #[test]
    fn what_does_not_fit_passes_as_it_is() {
        let original = udp6();
        let small = Plan { max_ip_len: 40 + 28 + 23, ..plan(2) };
        assert_eq!(
            with_headroom(&original, |f| encap(f, &small, &node(1))),
            (original.clone(), Ok(Encapped::TooBig))
        );
        let mut buf = original.clone();
        let len = buf.len();
        let mut tight = FrameBuf::new(&mut buf, 0, len).unwrap();
        assert_eq!(encap(&mut tight, &plan(2), &node(1)), Ok(Encapped::NoHeadroom));
        assert_eq!(buf, original);
        let v4 = PacketSpec::udp("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), 1, 2, 9).build();
        assert_eq!(with_headroom(&v4, |f| encap(f, &plan(2), &node(1))).1, Ok(Encapped::NotIpv6));
    }

    /// A trace where no encapsulating node of ours puts it (the option in
    /// the middle of the header) cannot be taken out without a trace: refused.
    #[test]
    fn a_trace_not_at_the_end_is_refused() {
        let original = udp6();
        let (mut out, _) = with_headroom(&original, |f| encap(f, &plan(1), &node(1)));
        assert!(find(&out, 123).unwrap().unwrap().whole);
        // The PadN after the option becomes a Router Alert.
        assert_eq!(out[54 + 20..54 + 24], [1, 2, 0, 0]);
        out[54 + 20..54 + 24].copy_from_slice(&[0x05, 0x02, 0x00, 0x00]);
        assert!(find(&out, 123).is_err());
    }
}
