//! The decapsulating node (RFC 9197 section 4), the sink: finding a
//! namespace's trace (and Edge-to-Edge option) in an IPv6 frame (where it
//! lies, what was added with it, the packet's flow), and, having read every
//! slot, giving back the packet as it came, removing exactly what the
//! encapsulating node added (a header of its own, or the option and its
//! padding; the Edge-to-Edge option alike). At a domain's edge it strips a
//! foreign trace of the namespace the same way. The same reading works
//! read-only in a packet a report carries.

use super::e2e::E2eRepr;
use super::ipv6::{self, E2eAt, TraceAt};
use super::node::NodeData;
use crate::bytes::{byte, put_u8};
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate::{self, IpLocation};
use crate::wire::ipv6::{
    set_payload_len, DESTINATION_OPTIONS, FRAGMENT, HEADER_LEN as IPV6_LEN, HOP_BY_HOP, MAX_EXTENSIONS,
    ROUTING,
};
use crate::wire::ipv6option::{extension_chain, extension_len, is_padding, options_walk};

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
    pub fn nodes<'a>(&self, frame: &'a [u8]) -> impl DoubleEndedIterator<Item = NodeData> + 'a {
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

    pub(crate) fn trace_removed_len(&self) -> usize {
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
    pub fn entered_ns(&self, format: super::time::TimestampFormat) -> Option<u64> {
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
    let hbh_len = extension_len(frame, hbh);
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
pub(crate) fn find_e2e(
    frame: &[u8],
    ip: &IpLocation,
    namespace: u16,
) -> Result<Option<E2eFound>, ParseError> {
    let Some(doh) = extension_chain(frame, ip.l3, ip.l4).1 else { return Ok(None) };
    let bytes = frame.get(doh.at..doh.at + doh.len).unwrap_or_default();
    if !options_walk(bytes) {
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
#[inline(always)]
pub(crate) fn added_shape(header: &[u8], option: usize, end: usize) -> Option<bool> {
    let padding_only = header.get(end..).is_some_and(is_padding);
    let whole = option == 4 && header.get(2..4) == Some(&[1, 0]) && padding_only;
    let appended = option >= 8 && option.is_multiple_of(8) && padding_only;
    (whole || appended).then_some(whole)
}

/// Removes what the encapsulating node added: the trace, then the
/// Edge-to-Edge option (the headers before it moved once, over fewer
/// bytes); the bytes removed, as INT's `strip` says them. `None`, changing
/// nothing, if the frame is not the one `found` was read from.
pub fn strip(frame: &mut FrameBuf<'_>, found: &Found) -> Option<usize> {
    if frame.frame().len() < found.ip.end {
        return None;
    }
    let removed = found.trace_removed_len();
    let removed_at = found.hbh + found.hbh_len - removed;
    let next_header = byte(frame.frame(), found.hbh);
    if !frame.close_gap(removed_at, removed) {
        return None;
    }
    let out = frame.frame_mut();
    match found.whole {
        true => put_u8(out, found.ip.l3 + 6, next_header),
        false => put_u8(out, found.hbh + 1, ((found.hbh_len - removed) / 8 - 1) as u8),
    }
    set_payload_len(out, found.ip.l3, (found.ip.ip_len() - IPV6_LEN - found.removed_len()) as u16);
    let Some(e2e) = &found.e2e else { return Some(found.removed_len()) };
    // Where the option's header and the Next Header naming it lie now.
    let moved = |offset: usize| if offset >= removed_at + removed { offset - removed } else { offset };
    let chain_at = match found.whole && e2e.chain_at == found.hbh {
        true => found.ip.l3 + 6, // the removed header's Next Header went there
        false => moved(e2e.chain_at),
    };
    remove_e2e(frame, e2e, moved(e2e.doh), chain_at).then_some(found.removed_len())
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
        true => put_u8(out, chain_at, next_header),
        false => put_u8(out, doh + 1, ((e2e.doh_len - gap) / 8 - 1) as u8),
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
        return Ok(strip(frame, &found).is_some());
    }
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(false) };
    let Some(e2e) = find_e2e(frame.frame(), &ip, namespace)? else { return Ok(false) };
    if !remove_e2e(frame, &e2e, e2e.doh, e2e.chain_at) {
        return Ok(false);
    }
    set_payload_len(frame.frame_mut(), ip.l3, (ip.ip_len() - IPV6_LEN - e2e.removed_len()) as u16);
    Ok(true)
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
    packet.get(IPV6_LEN..IPV6_LEN + extension_len(packet, IPV6_LEN))
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
            HOP_BY_HOP | ROUTING | DESTINATION_OPTIONS => extension_len(packet, at),
            FRAGMENT => 8,
            _ => break,
        };
        let header = packet.get(at..at + len)?;
        last = (kind == DESTINATION_OPTIONS).then_some(header);
        (kind, at) = (byte(header, 0), at + len);
    }
    Some(ipv6::find_e2e(last?, namespace).ok()??.repr)
}
