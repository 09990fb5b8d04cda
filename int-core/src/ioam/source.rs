//! The encapsulating node (RFC 9197 section 4; RFC 9486 section 4): it
//! adds the Pre-allocated Trace and fills the first slot.
//!
//! Where the trace goes: a packet without a Hop-by-Hop header gets one of
//! its own, right after the IPv6 header (PadN, the option at offset 4, its
//! padding); a packet with one gets the option appended at its end (the
//! header is 8n long, so the option starts 4n aligned). The decapsulating
//! node ([`super::sink`]) tells the two apart by the shape. Payload Length
//! and the Next Header chain follow; the upper layer's checksum does not
//! change (its pseudo-header counts the upper-layer length, not the
//! options).
//!
//! Where the domain numbers packets, the Edge-to-Edge option goes in the
//! last Destination Options header, the one for the final destination
//! (RFC 9486: the E2E option is a destination option): a header of its
//! own right before the upper layer, or the option appended to the
//! packet's own. Fragments take the trace only: their Destination Options
//! lie in the fragmentable part, which a node between the ends may not
//! change.

use super::e2e::{E2eRepr, E2eType};
use super::ipv6::{self, TraceAt, OPTION_HEADER_LEN};
use super::node::NodeData;
use super::trace::{TraceHeaderRepr, HEADER_LEN};
use super::Domain;
use crate::bytes::{byte, put_u8, span, span_mut};
use crate::error::{Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate::{self, Fragment, IpLocation};
use crate::wire::ipv6::{
    set_payload_len, DESTINATION_OPTIONS, HEADER_LEN as IPV6_LEN, HOP_BY_HOP, MAX_EXTENSIONS,
};
use crate::wire::ipv6option::{extension_chain, extension_len, options_walk, OptionsHeader};

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

    /// The Edge-to-Edge option of a packet that takes one and entered the
    /// domain when `node` says: `number` asked only where the option
    /// carries a sequence number, and `None` from it (no number to give):
    /// no option, the trace alone.
    #[inline(always)]
    pub fn e2e_of(&self, node: &NodeData, number: impl FnOnce() -> Option<u64>) -> Option<E2eRepr> {
        if self.e2e.intersects(E2eType::SEQUENCE_64 | E2eType::SEQUENCE_32) {
            number().map(|sequence| self.e2e_repr(Some(sequence), node))
        } else {
            Some(self.e2e_repr(None, node))
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

impl Domain {
    /// What an encapsulating node of the domain adds to packets of at
    /// most `max_ip_len` bytes.
    pub fn plan(&self, max_ip_len: usize) -> Plan {
        let header = TraceHeaderRepr {
            namespace: self.namespace,
            node_len: self.trace_type.node_len().min(0x1f) as u8,
            trace_type: self.trace_type,
            ..TraceHeaderRepr::default()
        };
        Plan { header, nodes: usize::from(self.nodes), max_ip_len, e2e: self.e2e }
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
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    node: &NodeData,
    number: impl FnOnce(&[u8], &IpLocation) -> Option<u64>,
) -> Result<Encapped, ParseError> {
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(Encapped::NotIpv6) };
    let bytes = frame.frame();
    let room = match Room::of(bytes, &ip, plan)? {
        Ok(room) => room,
        Err(refused) => return Ok(refused),
    };
    let Room { existing, last_doh, numbered, trace_added, e2e_added } = room;
    let e2e = if numbered { plan.e2e_of(node, || number(bytes, &ip)) } else { None };
    let e2e_added = if e2e.is_some() { e2e_added } else { 0 };
    let hbh = ip.l3 + IPV6_LEN;
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
        insert_e2e(out, &ip, last_doh, shifted, &e2e, e2e_added)?;
    }
    let node = NodeData { hop_limit: Some(byte(out, ip.l3 + 7)), ..*node };
    let trace = insert_trace(out, &ip, plan, existing, trace_added)?;
    set_payload_len(out, ip.l3, (ip.ip_len() - IPV6_LEN + trace_added + e2e_added) as u16);
    let hbh_bytes = span_mut(out, hbh, hbh + existing.unwrap_or(0) + trace_added, Layer::Ipv6Extension)?;
    ipv6::fill(hbh_bytes, &trace, &node).map_err(|_| ParseError::BadLength {
        layer: Layer::IoamTrace,
        offset: trace.data,
        value: trace.data_len,
    })?;
    Ok(Encapped::Added(trace_added + e2e_added))
}

/// What a packet has, and takes, for the trace (and the Edge-to-Edge
/// option): worked out before a byte moves.
struct Room {
    /// The length of the packet's own Hop-by-Hop header.
    existing: Option<usize>,
    /// The packet's last Destination Options header.
    last_doh: Option<OptionsHeader>,
    /// Whether the packet takes the Edge-to-Edge option.
    numbered: bool,
    trace_added: usize,
    /// Bytes of the option, where `numbered`.
    e2e_added: usize,
}

impl Room {
    /// The room for `plan` in the IPv6 packet at `ip`; `Err` what the node
    /// does instead (a trace or option of the namespace already there, or
    /// no room under the MTU and the walk's limits).
    fn of(bytes: &[u8], ip: &IpLocation, plan: &Plan) -> Result<Result<Room, Encapped>, ParseError> {
        if plan.check().is_err() {
            return Ok(Err(Encapped::TooBig));
        }
        let hbh = ip.l3 + IPV6_LEN;
        let existing = (byte(bytes, ip.l3 + 6) == HOP_BY_HOP).then(|| extension_len(bytes, hbh));
        if let Some(len) = existing {
            if ipv6::find_trace(span(bytes, hbh, hbh + len, Layer::Ipv6Extension)?, plan.header.namespace)?
                .is_some()
            {
                return Ok(Err(Encapped::AlreadyTraced));
            }
        }
        let last_doh = extension_chain(bytes, ip.l3, ip.l4).1;
        // The sender's own options must walk, or the decapsulating node could
        // not find the option after them.
        let options = match last_doh {
            Some(doh) => Some(span(bytes, doh.at, doh.at + doh.len, Layer::Ipv6Extension)?),
            None => None,
        };
        let walks = options.is_none_or(options_walk);
        if let (Some(doh), Some(options)) = (last_doh, options.filter(|_| walks)) {
            // One of the namespace's own, or one that lies, would be read as ours.
            if ipv6::find_e2e(options, plan.header.namespace).map_err(|e| e.shifted(doh.at))?.is_some() {
                return Ok(Err(Encapped::AlreadyTraced));
            }
        }
        let numbered = !plan.e2e.is_empty() && ip.fragment == Fragment::Whole && walks;
        let trace_added = plan.added_len(existing.is_some());
        let e2e_added = if numbered { plan.e2e_added_len(last_doh.is_some()) } else { 0 };
        let room = Room { existing, last_doh, numbered, trace_added, e2e_added };
        Ok(if room.fits(bytes, ip, plan.max_ip_len) { Ok(room) } else { Err(Encapped::TooBig) })
    }

    /// Whether the packet stays under the MTU, the Payload Length field,
    /// the Hop-by-Hop and Destination Options size limits and the walk's
    /// header count with what it takes. Every node's walk reads at most
    /// MAX_EXTENSIONS headers: one more and the domain's own nodes could
    /// not read what this one wrote.
    fn fits(&self, bytes: &[u8], ip: &IpLocation, max_ip_len: usize) -> bool {
        let added = self.trace_added + self.e2e_added;
        let headers_added =
            usize::from(self.existing.is_none()) + usize::from(self.numbered && self.last_doh.is_none());
        ip.ip_len() + added <= max_ip_len
            && extension_chain(bytes, ip.l3, ip.l4).0 + headers_added <= MAX_EXTENSIONS
            && ip.ip_len() - IPV6_LEN + added <= usize::from(u16::MAX)
            && self.existing.unwrap_or(0) + self.trace_added <= MAX_HOP_BY_HOP
            && self.last_doh.map_or(0, |doh| doh.len) + self.e2e_added <= MAX_HOP_BY_HOP
    }
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
            let written = ipv6::emit_hop_by_hop(
                span_mut(out, hbh, hbh + added, Layer::Ipv6Extension)?,
                next_header,
                header,
                nodes,
            );
            debug_assert_eq!(written, Ok(added));
            put_u8(out, ip.l3 + 6, HOP_BY_HOP);
        }
        Some(len) => {
            let at = hbh + len;
            let written =
                ipv6::write_option(span_mut(out, at, at + added, Layer::Ipv6Extension)?, header, nodes);
            debug_assert_eq!(written, Ok(()));
            put_u8(out, hbh + 1, ((len + added) / 8 - 1) as u8);
        }
    }
    let hbh_bytes = span(out, hbh, hbh + existing.unwrap_or(0) + added, Layer::Ipv6Extension)?;
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
) -> Result<(), ParseError> {
    let at = shifted(ip.l4);
    match doh {
        None => {
            let written = ipv6::emit_destination_options(
                span_mut(out, at, at + added, Layer::Ipv6Extension)?,
                ip.protocol,
                e2e,
            );
            debug_assert_eq!(written, Ok(added));
            put_u8(out, shifted(ip.next_header_at), DESTINATION_OPTIONS);
        }
        Some(doh) => {
            let written = ipv6::write_e2e_option(span_mut(out, at, at + added, Layer::Ipv6Extension)?, e2e);
            debug_assert_eq!(written, Ok(()));
            put_u8(out, shifted(doh.at) + 1, ((doh.len + added) / 8 - 1) as u8);
        }
    }
    Ok(())
}
