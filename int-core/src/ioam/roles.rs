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
//!
//! Where the domain numbers packets, the Edge-to-Edge option goes in the
//! last Destination Options header, the one for the final destination
//! (RFC 9486: the E2E option is a destination option): a header of its
//! own right before the upper layer, or the option appended to the
//! packet's own. Fragments take the trace only: their Destination Options
//! lie in the fragmentable part, which a node between the ends may not
//! change.

use super::e2e::{E2eRepr, E2eType};
use super::ipv6::{self, E2eAt, Filled, TraceAt, OPTION_HEADER_LEN};
use super::node::NodeData;
use super::trace::{TraceHeaderRepr, HEADER_LEN};
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate::{self, Fragment, IpLocation};
use crate::wire::ipv6::{
    DESTINATION_OPTIONS, FRAGMENT, HEADER_LEN as IPV6_LEN, HOP_BY_HOP, MAX_EXTENSIONS, ROUTING,
};

/// An options header is at most 2048 bytes (Hdr Ext Len 255).
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
    /// What the Edge-to-Edge option carries; empty: no such option.
    pub e2e: E2eType,
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

    /// Bytes the Edge-to-Edge option adds: a new Destination Options
    /// header, or the option appended to the packet's own last one.
    pub fn e2e_added_len(&self, has_destination_options: bool) -> usize {
        let option = ipv6::e2e_option_len(&self.e2e_repr(None, &NodeData::default()));
        match has_destination_options {
            true => option.next_multiple_of(8),
            false => (4 + option).next_multiple_of(8),
        }
    }

    /// The Edge-to-Edge option of a packet numbered `sequence` that
    /// entered the domain when `node` says.
    pub fn e2e_repr(&self, sequence: Option<u64>, node: &NodeData) -> E2eRepr {
        E2eRepr {
            namespace: self.header.namespace,
            e2e_type: self.e2e,
            sequence,
            timestamp_seconds: node.timestamp_seconds,
            timestamp_fraction: node.timestamp_fraction,
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
/// slot with `node` (its Hop_Lim the packet's Hop Limit); where the plan
/// has an Edge-to-Edge option, adds it too, numbered by `number` (the
/// packet's number in its group, asked only once the packet will take the
/// option; `None`: the trace alone).
pub fn encap(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    node: &NodeData,
    number: impl FnOnce(&[u8], &IpLocation) -> Option<u64>,
) -> Result<Encapped, ParseError> {
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(Encapped::NotIpv6) };
    if plan.check().is_err() {
        return Ok(Encapped::TooBig);
    }
    let bytes = frame.frame();
    let hbh = ip.l3 + IPV6_LEN;
    let existing = (byte(bytes, ip.l3 + 6) == HOP_BY_HOP).then(|| hop_by_hop_len(bytes, hbh));
    if let Some(len) = existing {
        if ipv6::find_trace(bytes.get(hbh..hbh + len).unwrap_or_default(), plan.header.namespace)?.is_some() {
            return Ok(Encapped::AlreadyTraced);
        }
    }
    let last_doh = last_destination_options(bytes, &ip);
    // The sender's own options must walk, or the decapsulating node could
    // not find the option after them.
    let walks = last_doh
        .is_none_or(|doh| ipv6::options_walk(bytes.get(doh.at..doh.at + doh.len).unwrap_or_default()));
    if let Some(doh) = last_doh.filter(|_| walks) {
        // One of the namespace's own, or one that lies, would be read as ours.
        let options = bytes.get(doh.at..doh.at + doh.len).unwrap_or_default();
        if ipv6::find_e2e(options, plan.header.namespace).map_err(|e| e.shifted(doh.at))?.is_some() {
            return Ok(Encapped::AlreadyTraced);
        }
    }
    let numbered = !plan.e2e.is_empty() && ip.fragment == Fragment::Whole && walks;
    let trace_added = plan.added_len(existing.is_some());
    let e2e_added = if numbered { plan.e2e_added_len(last_doh.is_some()) } else { 0 };
    let added = trace_added + e2e_added;
    // Every node's walk reads at most MAX_EXTENSIONS headers: one more
    // and the domain's own nodes could not read what this one wrote.
    let headers_added = usize::from(existing.is_none()) + usize::from(numbered && last_doh.is_none());
    if ip.ip_len() + added > plan.max_ip_len
        || extension_count(bytes, &ip) + headers_added > MAX_EXTENSIONS
        || ip.ip_len() - IPV6_LEN + added > usize::from(u16::MAX)
        || existing.unwrap_or(0) + trace_added > MAX_HOP_BY_HOP
        || last_doh.map_or(0, |doh| doh.len) + e2e_added > MAX_HOP_BY_HOP
    {
        return Ok(Encapped::TooBig);
    }
    let e2e = match numbered {
        true if plan.e2e.intersects(E2eType::SEQUENCE_64 | E2eType::SEQUENCE_32) => {
            number(bytes, &ip).map(|sequence| plan.e2e_repr(Some(sequence), node))
        }
        true => Some(plan.e2e_repr(None, node)),
        false => None,
    };
    let e2e_added = if e2e.is_some() { e2e_added } else { 0 };
    let at = hbh + existing.unwrap_or(0);
    // A trace of many slots outgrows an mbuf's 128 bytes of headroom:
    // then the payload moves toward the tail instead.
    if !frame.open_gap_anywhere(at, trace_added + e2e_added) {
        return Ok(Encapped::NoHeadroom);
    }
    let out = frame.frame_mut();
    if let Some(e2e) = e2e {
        // The headers between the trace and the upper layer move back
        // before the option's room.
        let gap = trace_added + e2e_added;
        out.copy_within(at + gap..ip.l4 + gap, at + trace_added);
        let shifted = |offset: usize| if offset >= at { offset + trace_added } else { offset };
        insert_e2e(out, &ip, last_doh, shifted, &e2e, e2e_added);
    }
    let node = NodeData { hop_limit: Some(byte(out, ip.l3 + 7)), ..*node };
    let trace = insert_trace(out, &ip, plan, existing, trace_added)?;
    set_payload_len(out, ip.l3, (ip.ip_len() - IPV6_LEN + trace_added + e2e_added) as u16);
    let hbh_bytes = out.get_mut(hbh..hbh + existing.unwrap_or(0) + trace_added).unwrap_or_default();
    ipv6::fill(hbh_bytes, &trace, &node).map_err(|_| ParseError::BadLength {
        layer: Layer::IoamTrace,
        offset: trace.data,
        value: trace.data_len,
    })?;
    Ok(Encapped::Added(trace_added + e2e_added))
}

/// Writes the trace's Hop-by-Hop header, or its option at the end of the
/// packet's own (`existing`, its length), into the room opened for it;
/// returns where the trace lies.
fn insert_trace(
    out: &mut [u8],
    ip: &IpLocation,
    plan: &Plan,
    existing: Option<usize>,
    added: usize,
) -> Result<TraceAt, ParseError> {
    let hbh = ip.l3 + IPV6_LEN;
    let (header, nodes) = (&plan.header, plan.nodes);
    match existing {
        None => {
            let next_header = byte(out, ip.l3 + 6);
            let written =
                ipv6::emit_hop_by_hop(out.get_mut(hbh..).unwrap_or_default(), next_header, header, nodes);
            debug_assert_eq!(written, Ok(added));
            set(out, ip.l3 + 6, HOP_BY_HOP);
        }
        Some(len) => {
            let at = hbh + len;
            let written = ipv6::write_option(out.get_mut(at..at + added).unwrap_or_default(), header, nodes);
            debug_assert_eq!(written, Ok(()));
            set(out, hbh + 1, ((len + added) / 8 - 1) as u8);
        }
    }
    let hbh_bytes = out.get(hbh..hbh + existing.unwrap_or(0) + added).unwrap_or_default();
    ipv6::find_trace(hbh_bytes, header.namespace)?.ok_or(ParseError::BadLength {
        layer: Layer::IoamOption,
        offset: hbh,
        value: added,
    })
}

/// Writes the Edge-to-Edge option into the `added` bytes opened right
/// before the upper layer: a Destination Options header of its own (the
/// Next Header that named the upper layer names it), or the option at the
/// end of the packet's last one (`doh`, which grows). `shifted` gives an
/// offset of the packet as it came in the frame now.
fn insert_e2e(
    out: &mut [u8],
    ip: &IpLocation,
    doh: Option<OptionsHeader>,
    shifted: impl Fn(usize) -> usize,
    e2e: &E2eRepr,
    added: usize,
) {
    let at = shifted(ip.l4);
    match doh {
        None => {
            let written =
                ipv6::emit_destination_options(out.get_mut(at..).unwrap_or_default(), ip.protocol, e2e);
            debug_assert_eq!(written, Ok(added));
            set(out, shifted(ip.next_header_at), DESTINATION_OPTIONS);
        }
        Some(doh) => {
            let written = ipv6::write_e2e_option(out.get_mut(at..at + added).unwrap_or_default(), e2e);
            debug_assert_eq!(written, Ok(()));
            set(out, shifted(doh.at) + 1, ((doh.len + added) / 8 - 1) as u8);
        }
    }
}

/// An options header in a packet: its offset and length, and the offset
/// of the Next Header that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OptionsHeader {
    at: usize,
    len: usize,
    chain_at: usize,
}

/// The packet's last extension header if it is a Destination Options
/// header (the walk `ip` came from checked the chain).
fn last_destination_options(frame: &[u8], ip: &IpLocation) -> Option<OptionsHeader> {
    extension_chain(frame, ip).1
}

/// How many extension headers the packet has.
fn extension_count(frame: &[u8], ip: &IpLocation) -> usize {
    extension_chain(frame, ip).0
}

/// The packet's extension headers, walked again (the walk `ip` came
/// from checked the chain): how many, and the last if it is a
/// Destination Options header.
fn extension_chain(frame: &[u8], ip: &IpLocation) -> (usize, Option<OptionsHeader>) {
    let (mut kind, mut chain_at, mut at) = (byte(frame, ip.l3 + 6), ip.l3 + 6, ip.l3 + IPV6_LEN);
    let (mut count, mut last) = (0, None);
    while at < ip.l4 {
        let len = if kind == FRAGMENT { 8 } else { hop_by_hop_len(frame, at) };
        last = (kind == DESTINATION_OPTIONS).then_some(OptionsHeader { at, len, chain_at });
        (kind, chain_at, at, count) = (byte(frame, at), at, at + len, count + 1);
    }
    (count, last.filter(|doh| doh.at + doh.len == ip.l4))
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

/// The flow of the IPv6 packet at `ip` (ports 0 where it has no TCP or
/// UDP header the walk can read): the group a packet is numbered in.
pub fn flow_of(frame: &[u8], ip: &IpLocation) -> crate::flow::FlowKey {
    let ports = match locate::l4(frame, ip) {
        Ok(Some(l4)) => l4.ports(),
        _ => (0, 0),
    };
    crate::flow::flow_key(frame, ip, ip.protocol, ports.0, ports.1)
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
    /// The namespace's Edge-to-Edge option, where the packet has one.
    pub e2e: Option<E2eFound>,
}

/// An Edge-to-Edge option a decapsulating node found: its Destination
/// Options header (the packet's last), the option, what to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct E2eFound {
    /// Offset of the Destination Options header, its length, and the
    /// offset of the Next Header that names it.
    pub doh: usize,
    pub doh_len: usize,
    pub chain_at: usize,
    /// The option, its offsets counted from the Destination Options header.
    pub option: E2eAt,
    /// The header was the encapsulating node's (removed whole), or only
    /// the option and its padding at its end were.
    pub whole: bool,
}

impl E2eFound {
    /// Bytes the decapsulating node removes.
    pub fn removed_len(&self) -> usize {
        match self.whole {
            true => self.doh_len,
            false => self.doh_len - self.option.option,
        }
    }
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

    /// The packet's flow (see [`flow_of`]).
    pub fn flow(&self, frame: &[u8]) -> crate::flow::FlowKey {
        flow_of(frame, &self.ip)
    }

    /// Where a report's copy of the packet ends: after the trace and the
    /// upper layer's first 8 bytes (its ports), as far as the packet goes.
    pub fn report_end(&self) -> usize {
        (self.ip.l4 + 8).min(self.ip.end)
    }

    /// Bytes the decapsulating node removes: the trace's and the
    /// Edge-to-Edge option's.
    pub fn removed_len(&self) -> usize {
        self.trace_removed_len() + self.e2e.map_or(0, |e2e| e2e.removed_len())
    }

    fn trace_removed_len(&self) -> usize {
        match self.whole {
            true => self.hbh_len,
            false => self.hbh_len - self.trace.option,
        }
    }

    /// The packet's number in its group, from the Edge-to-Edge option.
    pub fn sequence(&self) -> Option<u64> {
        self.e2e.and_then(|e2e| e2e.option.repr.sequence)
    }

    /// The time (ns since the epoch) the packet entered the domain, from
    /// the Edge-to-Edge option's timestamp words; `None` without both, or
    /// with a fraction past a second (all ones: not populated).
    pub fn entered_ns(&self, format: super::TimestampFormat) -> Option<u64> {
        let repr = self.e2e?.option.repr;
        format.join(repr.timestamp_seconds?, repr.timestamp_fraction?)
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
    let whole =
        added_shape(bytes, trace.option, trace.data + trace.data_len).ok_or(ParseError::BadLength {
            layer: Layer::IoamOption,
            offset: hbh + trace.option,
            value: hbh_len,
        })?;
    let e2e = find_e2e(frame, &ip, namespace)?;
    Ok(Some(Found { ip, hbh, hbh_len, trace, whole, e2e }))
}

/// The namespace's Edge-to-Edge option in the packet's last Destination
/// Options header, if there is one; refused where it lies or where no
/// encapsulating node of ours puts it. A header whose options do not walk
/// has none: the encapsulating node adds none to such a header.
fn find_e2e(frame: &[u8], ip: &IpLocation, namespace: u16) -> Result<Option<E2eFound>, ParseError> {
    let Some(doh) = last_destination_options(frame, ip) else { return Ok(None) };
    let bytes = frame.get(doh.at..doh.at + doh.len).unwrap_or_default();
    if !ipv6::options_walk(bytes) {
        return Ok(None); // the sender's: no encapsulating node of ours added to it
    }
    let Some(option) = ipv6::find_e2e(bytes, namespace).map_err(|e| e.shifted(doh.at))? else {
        return Ok(None);
    };
    let whole = added_shape(bytes, option.option, option.end).ok_or(ParseError::BadLength {
        layer: Layer::IoamOption,
        offset: doh.at + option.option,
        value: doh.len,
    })?;
    Ok(Some(E2eFound { doh: doh.at, doh_len: doh.len, chain_at: doh.chain_at, option, whole }))
}

/// Whether an option from `option` to `end` of an options header lies as
/// an encapsulating node of ours puts it: `Some(true)` alone in a header
/// of its own (PadN, the option at offset 4, padding), `Some(false)`
/// appended (at an 8n offset past 0, padding only after it), else `None`.
fn added_shape(header: &[u8], option: usize, end: usize) -> Option<bool> {
    let padding_only = header.get(end..).is_some_and(is_padding);
    let whole = option == 4 && header.get(2..4) == Some(&[1, 0]) && padding_only;
    let appended = option >= 8 && option.is_multiple_of(8) && padding_only;
    (whole || appended).then_some(whole)
}

/// The first trace in an IPv6 packet that starts at its IPv6 header (a
/// report's copy of it, perhaps cut after the headers): its header and
/// the Hop-by-Hop header's bytes, to read the elements from.
pub fn trace_in_packet(packet: &[u8]) -> Option<(TraceAt, &[u8])> {
    let hbh = hop_by_hop_in_packet(packet)?;
    Some((ipv6::first_trace(hbh).ok()??, hbh))
}

/// The Hop-by-Hop header of an IPv6 packet that starts at its IPv6
/// header, if it has one and it is whole.
pub fn hop_by_hop_in_packet(packet: &[u8]) -> Option<&[u8]> {
    if packet.first().map(|b| b >> 4) != Some(6) || byte(packet, 6) != HOP_BY_HOP {
        return None;
    }
    packet.get(IPV6_LEN..IPV6_LEN + hop_by_hop_len(packet, IPV6_LEN))
}

/// The Edge-to-Edge option of `namespace` in an IPv6 packet that starts
/// at its IPv6 header (a report's copy, perhaps cut after the headers), in
/// its last extension header if that is a Destination Options header.
pub fn e2e_in_packet(packet: &[u8], namespace: u16) -> Option<E2eRepr> {
    if packet.first().map(|b| b >> 4) != Some(6) {
        return None;
    }
    let (mut kind, mut at, mut last) = (byte(packet, 6), IPV6_LEN, None);
    for _ in 0..=MAX_EXTENSIONS {
        let len = match kind {
            HOP_BY_HOP | ROUTING | DESTINATION_OPTIONS => hop_by_hop_len(packet, at),
            FRAGMENT => 8,
            _ => break,
        };
        let header = packet.get(at..at + len)?;
        last = (kind == DESTINATION_OPTIONS).then_some(header);
        (kind, at) = (byte(header, 0), at + len);
    }
    Some(ipv6::find_e2e(last?, namespace).ok()??.repr)
}

/// Removes what the encapsulating node added: the trace, then the
/// Edge-to-Edge option (the headers before it moved once, over fewer
/// bytes); false, changing nothing, if the frame is not the one `found`
/// was read from.
pub fn decap(frame: &mut FrameBuf<'_>, found: &Found) -> bool {
    if frame.frame().len() < found.ip.end {
        return false;
    }
    let removed = found.trace_removed_len();
    let removed_at = found.hbh + found.hbh_len - removed;
    let next_header = byte(frame.frame(), found.hbh);
    if !frame.close_gap(removed_at, removed) {
        return false;
    }
    let out = frame.frame_mut();
    match found.whole {
        true => set(out, found.ip.l3 + 6, next_header),
        false => set(out, found.hbh + 1, ((found.hbh_len - removed) / 8 - 1) as u8),
    }
    set_payload_len(out, found.ip.l3, (found.ip.ip_len() - IPV6_LEN - found.removed_len()) as u16);
    let Some(e2e) = &found.e2e else { return true };
    // Where the option's header and the Next Header naming it lie now.
    let moved = |offset: usize| if offset >= removed_at + removed { offset - removed } else { offset };
    let chain_at = match found.whole && e2e.chain_at == found.hbh {
        true => found.ip.l3 + 6, // the removed header's Next Header went there
        false => moved(e2e.chain_at),
    };
    remove_e2e(frame, e2e, moved(e2e.doh), chain_at)
}

/// Removes the Edge-to-Edge option `e2e` whose Destination Options header
/// now lies at `doh`, named by the Next Header at `chain_at`: the header,
/// or the option and its padding at its end. Payload Length is the
/// caller's.
fn remove_e2e(frame: &mut FrameBuf<'_>, e2e: &E2eFound, doh: usize, chain_at: usize) -> bool {
    let gap = e2e.removed_len();
    let next_header = byte(frame.frame(), doh);
    if !frame.close_gap(doh + e2e.doh_len - gap, gap) {
        return false;
    }
    let out = frame.frame_mut();
    match e2e.whole {
        true => set(out, chain_at, next_header),
        false => set(out, doh + 1, ((e2e.doh_len - gap) / 8 - 1) as u8),
    }
    true
}

/// The edge's `strip` policy: removes what came from outside the domain
/// in the namespace's name, as the decapsulating node would (the trace
/// with its Edge-to-Edge option, or such an option alone), until none is
/// left; whether anything was removed. Refused, changing nothing, where
/// the first lies or lies where no encapsulating node of ours puts it.
pub fn strip_foreign(frame: &mut FrameBuf<'_>, namespace: u16) -> Result<bool, ParseError> {
    let mut stripped = false;
    // Each round removes a header's worth: the walk's headers bound them.
    for _ in 0..=MAX_EXTENSIONS {
        // A lie found after something came out whole is still a lie: what
        // is left would be taken as ours (fuzz: a second Edge-to-Edge
        // option of the namespace, not where a node of ours puts one).
        match strip_once(frame, namespace) {
            Ok(true) => stripped = true,
            Ok(false) => return Ok(stripped),
            Err(error) => return Err(error),
        }
    }
    Ok(stripped)
}

/// One round of [`strip_foreign`].
fn strip_once(frame: &mut FrameBuf<'_>, namespace: u16) -> Result<bool, ParseError> {
    if let Some(found) = find(frame.frame(), namespace)? {
        return Ok(decap(frame, &found));
    }
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(false) };
    let Some(e2e) = find_e2e(frame.frame(), &ip, namespace)? else { return Ok(false) };
    if !remove_e2e(frame, &e2e, e2e.doh, e2e.chain_at) {
        return Ok(false);
    }
    set_payload_len(frame.frame_mut(), ip.l3, (ip.ip_len() - IPV6_LEN - e2e.removed_len()) as u16);
    Ok(true)
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
        Plan { header, nodes, max_ip_len: 1500, e2e: E2eType::empty() }
    }

    fn unnumbered(_: &[u8], _: &IpLocation) -> Option<u64> {
        None
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
        let (out, done) = with_headroom(&original, |f| encap(f, &plan(2), &node(0x0a0b0c), unnumbered));
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
        let (mut out, done) = with_headroom(&original, |f| encap(f, &plan(3), &node(1), unnumbered));
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
        let (_, again) = with_headroom(&out, |f| encap(f, &plan(3), &node(1), unnumbered));
        assert_eq!(again, Ok(Encapped::AlreadyTraced));
    }

    #[test]
    fn what_does_not_fit_passes_as_it_is() {
        let original = udp6();
        let small = Plan { max_ip_len: 40 + 28 + 23, ..plan(2) };
        assert_eq!(
            with_headroom(&original, |f| encap(f, &small, &node(1), unnumbered)),
            (original.clone(), Ok(Encapped::TooBig))
        );
        let mut buf = original.clone();
        let len = buf.len();
        let mut tight = FrameBuf::new(&mut buf, 0, len).unwrap();
        assert_eq!(encap(&mut tight, &plan(2), &node(1), unnumbered), Ok(Encapped::NoHeadroom));
        assert_eq!(buf, original);
        let v4 = PacketSpec::udp("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), 1, 2, 9).build();
        assert_eq!(with_headroom(&v4, |f| encap(f, &plan(2), &node(1), unnumbered)).1, Ok(Encapped::NotIpv6));
    }

    /// A trace where no encapsulating node of ours puts it (the option in
    /// the middle of the header) cannot be taken out without a trace: refused.
    #[test]
    fn a_trace_not_at_the_end_is_refused() {
        let original = udp6();
        let (mut out, _) = with_headroom(&original, |f| encap(f, &plan(1), &node(1), unnumbered));
        assert!(find(&out, 123).unwrap().unwrap().whole);
        // The PadN after the option becomes a Router Alert.
        assert_eq!(out[54 + 20..54 + 24], [1, 2, 0, 0]);
        out[54 + 20..54 + 24].copy_from_slice(&[0x05, 0x02, 0x00, 0x00]);
        assert!(find(&out, 123).is_err());
    }

    fn numbered(sequence: u64) -> impl FnOnce(&[u8], &IpLocation) -> Option<u64> {
        move |_, _| Some(sequence)
    }

    fn plan_numbered(nodes: usize) -> Plan {
        Plan { e2e: E2eType::SEQUENCE_32, ..plan(nodes) }
    }

    /// Numbered: the trace in a Hop-by-Hop header, the Edge-to-Edge option
    /// in a Destination Options header of its own before the upper layer
    /// (PadN, the option at offset 4: type 0x11, IOAM-Opt-Type 3,
    /// namespace 123, E2E-Type bit 1, the number).
    #[test]
    fn the_number_rides_a_destination_option_before_the_upper_layer() {
        let original = udp6();
        let (out, done) = with_headroom(&original, |f| encap(f, &plan_numbered(1), &node(1), numbered(7)));
        assert_eq!(done, Ok(Encapped::Added(24 + 16)));
        assert_eq!(out[14 + 6], HOP_BY_HOP);
        assert_eq!(out[54], DESTINATION_OPTIONS, "the Hop-by-Hop header names the new header");
        let doh: [u8; 16] = [17, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 7];
        assert_eq!(out[78..94], doh);
        assert_eq!(out[94..], original[54..]);
        assert_eq!(u16::from_be_bytes([out[18], out[19]]), 28 + 40);
        let found = find(&out, 123).unwrap().unwrap();
        assert_eq!(found.sequence(), Some(7));
        assert_eq!(found.removed_len(), 40);
        assert_eq!(found.ip.l4, 94);
        let (back, done) = with_headroom(&out, |f| decap(f, &found));
        assert!(done);
        assert_eq!(back, original);
    }

    /// Behind the sender's own Hop-by-Hop, Routing and Destination Options
    /// headers: the trace appended to the first, the option to the last.
    #[test]
    fn the_number_is_appended_to_the_packet_s_last_destination_options() {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        let extensions = &mut spec.ipv6.as_mut().unwrap().extensions;
        extensions.push((HOP_BY_HOP, vec![0, 0, 5, 2, 0, 0, 1, 0]));
        extensions.push((43, vec![0, 0, 4, 0, 0, 0, 0, 0]));
        extensions.push((DESTINATION_OPTIONS, vec![0, 0, 1, 4, 0, 0, 0, 0]));
        let original = spec.build();
        let (out, done) = with_headroom(&original, |f| encap(f, &plan_numbered(2), &node(1), numbered(9)));
        assert_eq!(done, Ok(Encapped::Added(24 + 16)));
        let found = find(&out, 123).unwrap().unwrap();
        let e2e = found.e2e.unwrap();
        assert!(!found.whole && !e2e.whole);
        assert_eq!((e2e.doh, e2e.doh_len, e2e.option.option), (54 + 32 + 8, 24, 8));
        assert_eq!(out[e2e.doh..e2e.doh + 2], [17, 2], "the header grew by the option");
        assert_eq!(found.sequence(), Some(9));
        let (back, done) = with_headroom(&out, |f| decap(f, &found));
        assert!(done);
        assert_eq!(back, original);
    }

    /// A fragment takes the trace alone, and so does a packet the caller
    /// has no number for (a full flow table).
    #[test]
    fn fragments_and_unnumbered_packets_take_the_trace_alone() {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        spec.ipv6.as_mut().unwrap().extensions.push((FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 5]));
        let fragment = spec.build();
        let asked = std::cell::Cell::new(false);
        let number = |_: &[u8], _: &IpLocation| {
            asked.set(true);
            Some(1)
        };
        let (out, done) = with_headroom(&fragment, |f| encap(f, &plan_numbered(1), &node(1), number));
        assert_eq!(done, Ok(Encapped::Added(24)));
        assert!(!asked.get(), "a fragment is not numbered");
        assert_eq!(find(&out, 123).unwrap().unwrap().e2e, None);
        let (out, done) = with_headroom(&udp6(), |f| encap(f, &plan_numbered(1), &node(1), unnumbered));
        assert_eq!(done, Ok(Encapped::Added(24)));
        assert_eq!(find(&out, 123).unwrap().unwrap().sequence(), None);
    }

    /// A packet whose own last Destination Options header already holds an
    /// Edge-to-Edge option of the namespace is left as it is: a good one as
    /// already traced, one that lies as malformed (either would be read as
    /// ours at the decapsulating node).
    #[test]
    fn the_sender_s_own_option_of_the_namespace_is_not_traced_over() {
        let spec = |option: Vec<u8>| {
            let mut spec =
                PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
            spec.ipv6.as_mut().unwrap().extensions.push((DESTINATION_OPTIONS, option));
            spec.build()
        };
        let good = spec(vec![0, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1]);
        let (out, done) = with_headroom(&good, |f| encap(f, &plan_numbered(1), &node(1), numbered(2)));
        assert_eq!((out, done), (good, Ok(Encapped::AlreadyTraced)));
        let misaligned = spec(vec![0, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1, 0]);
        assert!(with_headroom(&misaligned, |f| encap(f, &plan(1), &node(1), unnumbered)).1.is_err());
    }

    fn udp6_with(extensions: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        spec.ipv6.as_mut().unwrap().extensions.extend_from_slice(extensions);
        spec.build()
    }

    /// Every node's walk reads 8 extension headers: a packet the trace or
    /// the number's header would take past them passes as it is (counted
    /// too big), and one they leave at 8 is traced and reads back.
    #[test]
    fn no_trace_takes_a_packet_past_the_headers_a_walk_reads() {
        let padding = || (DESTINATION_OPTIONS, vec![0, 0, 1, 4, 0, 0, 0, 0]);
        let eight = udp6_with(&vec![padding(); 8]);
        let (out, done) = with_headroom(&eight, |f| encap(f, &plan(1), &node(1), unnumbered));
        assert_eq!((out, done), (eight, Ok(Encapped::TooBig)));
        let mut seven = vec![padding(); 6];
        seven.push((ROUTING, vec![0, 0, 4, 0, 0, 0, 0, 0]));
        let seven = udp6_with(&seven);
        let (out, done) = with_headroom(&seven, |f| encap(f, &plan_numbered(1), &node(1), numbered(1)));
        assert_eq!((out, done), (seven.clone(), Ok(Encapped::TooBig)), "the trace and the number: 9");
        let (out, done) = with_headroom(&seven, |f| encap(f, &plan(2), &node(1), unnumbered));
        assert_eq!(done, Ok(Encapped::Added(24)), "the trace alone: 8");
        let found = find(&out, 123).unwrap().unwrap();
        assert_eq!(transit(&mut out.clone(), 123, &node(2)), Ok(Transited::Filled));
        assert_eq!(with_headroom(&out, |f| decap(f, &found)), (seven, true));
    }

    /// A trace of namespace 124 whose NodeLen disagrees with its trace
    /// type is 124's nodes' business: ours pass it (no trace of ours),
    /// the encapsulating node adds ours after it, and decapsulation takes
    /// only ours out.
    #[test]
    fn another_namespace_s_lying_trace_passes_every_role() {
        let (mut theirs, _) = with_headroom(&udp6(), |f| encap(f, &plan(2), &node(1), unnumbered));
        theirs[54 + 8 + 1] = 124; // the namespace's low byte
        theirs[54 + 8 + 2] = 0x10; // NodeLen 2 for a one-word trace type
        assert_eq!(find(&theirs, 123), Ok(None));
        assert_eq!(transit(&mut theirs.clone(), 123, &node(2)), Ok(Transited::NotTraced));
        let (ours, done) = with_headroom(&theirs, |f| encap(f, &plan(2), &node(3), unnumbered));
        assert_eq!(done, Ok(Encapped::Added(24)));
        let found = find(&ours, 123).unwrap().unwrap();
        assert_eq!(with_headroom(&ours, |f| decap(f, &found)), (theirs, true));
    }

    /// At the edge, what comes in the namespace's name from outside (a
    /// trace with made-up nodes and its number behind the sender's own
    /// Hop-by-Hop header, or a number alone) is removed as the
    /// decapsulating node would: the sender's packet as it was sent.
    #[test]
    fn strip_removes_what_came_from_outside_in_our_name() {
        let sent = udp6_with(&[(HOP_BY_HOP, vec![0, 0, 5, 2, 0, 0, 1, 0])]);
        let (forged, _) = with_headroom(&sent, |f| encap(f, &plan_numbered(2), &node(666), numbered(5)));
        assert!(find(&forged, 123).unwrap().unwrap().e2e.is_some());
        assert_eq!(with_headroom(&forged, |f| strip_foreign(f, 123)), (sent.clone(), Ok(true)));
        assert_eq!(with_headroom(&forged, |f| strip_foreign(f, 124)), (forged.clone(), Ok(false)));
        let number_alone = udp6_with(&[(
            DESTINATION_OPTIONS,
            vec![0, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1],
        )]);
        assert_eq!(with_headroom(&number_alone, |f| strip_foreign(f, 123)), (udp6_with(&[]), Ok(true)));
        // One that lies is refused, the frame unchanged.
        let mut lying = forged.clone();
        lying[54 + 8 + 6] = 0x10; // the trace's NodeLen: 2 words for 1
        assert!(with_headroom(&lying, |f| strip_foreign(f, 123)).1.is_err());
    }

    /// An option of the namespace that is not where our encapsulating
    /// node puts it, or that lies, is refused with the packet.
    #[test]
    fn a_misplaced_or_lying_number_is_refused() {
        let (out, _) = with_headroom(&udp6(), |f| encap(f, &plan_numbered(1), &node(1), numbered(3)));
        let mut lying = out.clone();
        lying[78 + 5] = 6; // option length: 6 bytes of data, the number cut off
        lying[78 + 12..78 + 16].copy_from_slice(&[1, 2, 0, 0]);
        assert!(find(&lying, 123).is_err());
        let mut both_bits = out.clone();
        both_bits[78 + 10] = 0xc0;
        assert!(find(&both_bits, 123).is_err());
        let mut other = out;
        other[78 + 9] = 124; // another namespace's: passed over, left in
        assert_eq!(find(&other, 123).unwrap().unwrap().e2e, None);
    }
}
