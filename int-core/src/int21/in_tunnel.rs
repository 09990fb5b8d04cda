//! INT 2.1 transit and sink inside a tunnel (INT 2.1 sections 5.7.3 and
//! 5.7.4): INT-MD or INT-MX after VXLAN-GPE's INT shim (UDP 4790), or in a
//! Geneve option of class 0x0103 (UDP 6081), in the outer packet of IPv4
//! or IPv6.
//!
//! A transit hop pushes its metadata as over TCP/UDP and grows, besides the
//! outer IP and UDP lengths, the tunnel's own lengths: the INT shim's
//! Length, or the option's Length and the Geneve header's Opt Len. A
//! Geneve option holds at most 31 words: a push past them is refused whole
//! (the source should have set Remaining Hop Count to what fits).
//!
//! A sink removes the INT shim or option and its data, and gives the
//! tunnel back its own header: VXLAN-GPE's Next Protocol from the shim,
//! and where the shim's G says the packet was plain VXLAN, VXLAN itself
//! (the P flag and Next Protocol cleared, UDP port 4789); Geneve's Opt Len
//! shrunk. The encapsulated frame is never touched. The outer UDP checksum
//! follows incrementally (0, as VXLAN commonly sends, stays 0).
//!
//! The flow a tunnel packet's INT belongs to is the tunnel's: the outer
//! 5-tuple.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::error::{Layer, ParseError};
use crate::fast::FastFrame;
use crate::flow::FlowKey;
use crate::frame::FrameBuf;
use crate::locate::{self, IpLocation, L4};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use crate::wire::{geneve, vxlan_gpe};

use super::md_header::{self, MdHeader};
use super::push::{NotPushed, Outcome};
use super::tunnel::{self, GPE_SHIM_LEN};
use super::{Body, HopMetadata, MdHeaderRepr, SourceOnly};

/// VXLAN's UDP port (RFC 7348), which a packet the shim marks G goes back
/// to.
pub const VXLAN_UDP_PORT: u16 = 4789;
/// Geneve's Opt Len: 6 bits of words.
const MAX_GENEVE_OPTIONS_WORDS: usize = 63;
/// A Geneve option's Length: 5 bits of words.
const MAX_OPTION_WORDS: usize = 31;

/// Which tunnel carries the INT data, and where its INT header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tunnel {
    /// VXLAN-GPE: the INT shim at `shim_at` (frame offset).
    Gpe { shim_at: usize, next_protocol: u8, from_vxlan: bool },
    /// Geneve: the INT option's 4-byte header at `option_at`.
    Geneve { option_at: usize },
}

/// INT 2.1 found inside a tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InTunnel<'a> {
    /// The outer IP packet.
    pub ip: IpLocation,
    /// The outer UDP header's Length.
    pub udp_len: u16,
    pub tunnel: Tunnel,
    /// Frame offset of the INT-MD or INT-MX header.
    pub header_at: usize,
    pub body: Body<'a>,
    /// The tunnel's 5-tuple.
    pub flow: FlowKey,
}

impl InTunnel<'_> {
    /// Bytes of INT header and metadata (what the shim's or option's
    /// Length counts).
    pub fn body_len(&self) -> usize {
        match self.body {
            Body::Md(md) => md_header::HEADER_LEN + md.stack.len(),
            Body::Mx { source_inserted, .. } => md_header::HEADER_LEN + source_inserted.len(),
        }
    }

    /// What a sink needs once the INT data has been read.
    pub fn span(&self) -> TunnelSpan {
        TunnelSpan { ip: self.ip, udp_len: self.udp_len, tunnel: self.tunnel, body_len: self.body_len() }
    }

    /// What a transit push needs, owned: the frame may then be changed.
    pub fn for_push(&self) -> TunnelPush {
        let md = match self.body {
            Body::Md(md) => Some(md.header),
            Body::Mx { .. } => None,
        };
        TunnelPush { span: self.span(), header_at: self.header_at, md }
    }
}

/// INT in a tunnel, as a transit push needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelPush {
    pub span: TunnelSpan,
    /// Frame offset of the INT-MD or INT-MX header.
    pub header_at: usize,
    /// The INT-MD header (None: INT-MX).
    pub md: Option<MdHeaderRepr>,
}

/// Where a tunnel's INT data lies, all a sink needs to remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelSpan {
    pub ip: IpLocation,
    pub udp_len: u16,
    pub tunnel: Tunnel,
    /// Bytes of INT header and metadata.
    pub body_len: usize,
}

impl TunnelSpan {
    /// Frame offset of the tunnel header (after the outer UDP header).
    pub fn tunnel_at(&self) -> usize {
        self.ip.l4 + UDP_LEN
    }

    /// What a sink removes: the INT shim (or option header) and its data.
    pub fn int_span(&self) -> (usize, usize) {
        match self.tunnel {
            Tunnel::Gpe { shim_at, .. } => (shim_at, GPE_SHIM_LEN + self.body_len),
            Tunnel::Geneve { option_at } => (option_at, geneve::OPTION_HEADER_LEN + self.body_len),
        }
    }
}

/// The outer headers of a tunnel packet: IP and UDP.
struct Outer {
    ip: IpLocation,
    src_port: u16,
    dst_port: u16,
    length: u16,
}

/// The outer IP and UDP headers of a frame that is neither a fragment nor
/// anything but UDP.
fn outer_udp(frame: &[u8]) -> Option<Outer> {
    // A fast-path frame tells at fixed offsets whether it is UDP
    // to a tunnel port: most traffic is not, and costs no walk (the walk
    // would find the same).
    if let Some(fixed) = FastFrame::read(frame, 0) {
        let port = fixed.flow.dst_port();
        let tunnel_port = matches!(port, VXLAN_UDP_PORT | vxlan_gpe::UDP_PORT | geneve::UDP_PORT);
        if fixed.flow.protocol() != locate::PROTO_UDP || !tunnel_port {
            return None;
        }
    }
    // Outer headers that cannot be walked carry no tunnel of ours.
    let ip = locate::ip(frame).ok().flatten()?;
    if ip.is_fragment() {
        return None;
    }
    let Ok(Some(L4::Udp { src_port, dst_port, length })) = locate::l4(frame, &ip) else { return None };
    Some(Outer { ip, src_port, dst_port, length })
}

/// Finds INT 2.1 in a VXLAN-GPE or Geneve packet. `Ok(None)`: not such a
/// tunnel packet (or one without INT, or a fragment). `Err`: the tunnel
/// announces INT, but its headers or the INT data lie.
pub fn find(frame: &[u8], source_only: SourceOnly) -> Result<Option<InTunnel<'_>>, ParseError> {
    let Some(Outer { ip, src_port, dst_port, length }) = outer_udp(frame) else { return Ok(None) };
    let at = ip.l4 + UDP_LEN;
    let payload = frame
        .get(at..ip.end)
        .ok_or_else(|| ParseError::truncated(Layer::Udp, at, ip.end.saturating_sub(at), frame.len()))?;
    let shifted = |e: ParseError| e.shifted(at);
    let (tunnel, header_at, body) = match dst_port {
        vxlan_gpe::UDP_PORT => {
            let Some(gpe) = tunnel::gpe_int(payload, source_only).map_err(shifted)? else { return Ok(None) };
            let shim_at = at + vxlan_gpe::HEADER_LEN;
            let shim = gpe.shim;
            let tunnel =
                Tunnel::Gpe { shim_at, next_protocol: shim.next_protocol, from_vxlan: shim.from_vxlan };
            (tunnel, shim_at + GPE_SHIM_LEN, gpe.body)
        }
        geneve::UDP_PORT => {
            let Some(int) = tunnel::geneve_int(payload, source_only).map_err(shifted)? else {
                return Ok(None);
            };
            let option_at = at + int.option_at;
            (Tunnel::Geneve { option_at }, option_at + geneve::OPTION_HEADER_LEN, int.body)
        }
        _ => return Ok(None),
    };
    let flow = crate::flow::flow_key(frame, &ip, locate::PROTO_UDP, src_port, dst_port);
    Ok(Some(InTunnel { ip, udp_len: length, tunnel, header_at, body, flow }))
}

/// Pushes `hop` onto the INT-MD stack `found` describes, or sets E (no
/// Remaining Hop Count) or M (the push would pass `max_ip_len` bytes of
/// outer IP packet), as over TCP/UDP; INT-MX packets are left alone.
pub fn push(
    frame: &mut FrameBuf<'_>,
    found: &TunnelPush,
    max_ip_len: u16,
    hop: &HopMetadata,
) -> Result<Outcome, NotPushed> {
    let Some(header) = found.md else { return Ok(Outcome::Mx) };
    let span = found.span;
    let hop_len = usize::from(header.hop_ml) * 4;
    let udp = Carrier::Udp(span.ip.l4);
    if header.remaining_hop_cnt == 0 {
        set_flag(frame.frame_mut(), found, MdHeader::set_max_hop_exceeded)?;
        return Ok(Outcome::MaxHopReached);
    }
    if span.ip.ip_len() + hop_len > usize::from(max_ip_len) {
        set_flag(frame.frame_mut(), found, MdHeader::set_mtu_exceeded)?;
        return Ok(Outcome::MtuExceeded);
    }
    if !room_for(frame.frame(), &span, hop_len) {
        return Err(NotPushed::TooBig);
    }
    let hop_sum = super::push::push_hop(frame, found.header_at + md_header::HEADER_LEN, &header, hop)?;
    let bytes = frame.frame_mut();
    let words = header.hop_ml;
    let (mut old, mut new) = grow_tunnel_lengths(bytes, &span, words);
    let (o, n) = patch16(bytes, found.header_at + 2, |[hop_ml, remaining]| [hop_ml, remaining - 1]);
    (old, new) = (old + o, new + n);
    carrier::rewrite_ip(bytes, &span.ip, span.ip.tos, span.ip.ip_len() + hop_len, span.ip.protocol);
    udp.update(bytes, span.udp_len, span.udp_len + hop_len as u16, old, new + hop_sum);
    Ok(Outcome::Pushed(hop_len))
}

/// Whether the tunnel's lengths can count `hop_len` more bytes: the INT
/// shim's 8 bits, or the Geneve option's 5 and Opt Len's 6, and the outer
/// UDP Length's 16.
fn room_for(frame: &[u8], found: &TunnelSpan, hop_len: usize) -> bool {
    let words = (found.body_len + hop_len) / 4;
    let fits = match found.tunnel {
        Tunnel::Gpe { .. } => words <= usize::from(u8::MAX),
        Tunnel::Geneve { .. } => {
            let options_words = usize::from(frame.get(found.tunnel_at()).map_or(0, |b| b & 0x3f));
            words <= MAX_OPTION_WORDS && options_words + hop_len / 4 <= MAX_GENEVE_OPTIONS_WORDS
        }
    };
    fits && usize::from(found.udp_len) + hop_len <= usize::from(u16::MAX)
}

/// Adds `words` to the tunnel's own length fields; returns the sums of the
/// 16-bit words before and after, for the UDP checksum.
fn grow_tunnel_lengths(bytes: &mut [u8], found: &TunnelSpan, words: u8) -> (u32, u32) {
    match found.tunnel {
        Tunnel::Gpe { shim_at, .. } => patch16(bytes, shim_at, |[kind, length]| [kind, length + words]),
        Tunnel::Geneve { option_at } => {
            let (o1, n1) = patch16(bytes, found.tunnel_at(), |[ver_len, flags]| [ver_len + words, flags]);
            let (o2, n2) = patch16(bytes, option_at + 2, |[kind, length]| [kind, length + words]);
            (o1 + o2, n1 + n2)
        }
    }
}

/// Rewrites the 16-bit word at `at` with `change`; returns it before and
/// after.
fn patch16(bytes: &mut [u8], at: usize, change: impl FnOnce([u8; 2]) -> [u8; 2]) -> (u32, u32) {
    let Some(word) = bytes.get_mut(at..at + 2).and_then(|w| <&mut [u8; 2]>::try_from(w).ok()) else {
        return (0, 0);
    };
    let old = *word;
    *word = change(old);
    (u32::from(u16::from_be_bytes(old)), u32::from(u16::from_be_bytes(*word)))
}

/// Sets E or M in the MD header, the UDP checksum following.
fn set_flag(bytes: &mut [u8], found: &TunnelPush, set: fn(&mut MdHeader)) -> Result<(), NotPushed> {
    let header: &mut MdHeader = crate::frame::view_mut(bytes, found.header_at, Layer::IntMetadataHeader)
        .map_err(NotPushed::Malformed)?;
    let old = header.word0();
    set(header);
    let new = header.word0();
    let span = found.span;
    Carrier::Udp(span.ip.l4).update(bytes, span.udp_len, span.udp_len, u32::from(old), u32::from(new));
    Ok(())
}

/// Removes the INT shim or option and its data and gives the tunnel header
/// back its own fields (see the module notes). Returns the bytes removed,
/// or `None` (frame unchanged) if `found` does not fit this frame.
pub fn strip(frame: &mut FrameBuf<'_>, found: &TunnelSpan) -> Option<usize> {
    let (at, len) = found.int_span();
    if at + len > found.ip.end || found.ip.end > frame.len() {
        return None;
    }
    let removed_sum = checksum::sum(0, frame.frame().get(at..at + len)?);
    if !frame.close_gap(at, len) {
        return None;
    }
    let bytes = frame.frame_mut();
    let (old, new) = restore_tunnel_header(bytes, found, (len / 4) as u8);
    let ip = found.ip;
    carrier::rewrite_ip(bytes, &ip, ip.tos, ip.ip_len() - len, ip.protocol);
    Carrier::Udp(ip.l4).update(bytes, found.udp_len, found.udp_len - len as u16, removed_sum + old, new);
    Some(len)
}

/// The tunnel header as it was before INT: VXLAN-GPE's Next Protocol (and
/// plain VXLAN where G says so), or Geneve's Opt Len less the option's
/// `words`. Returns the changed words' sums before and after.
fn restore_tunnel_header(bytes: &mut [u8], found: &TunnelSpan, words: u8) -> (u32, u32) {
    let at = found.tunnel_at();
    match found.tunnel {
        Tunnel::Gpe { next_protocol, from_vxlan: false, .. } => {
            patch16(bytes, at + 2, |[reserved, _]| [reserved, next_protocol])
        }
        Tunnel::Gpe { from_vxlan: true, .. } => {
            let (o1, n1) = patch16(bytes, at, |[flags, reserved]| [flags & !vxlan_gpe::FLAG_P, reserved]);
            let (o2, n2) = patch16(bytes, at + 2, |[reserved, _]| [reserved, 0]);
            let (o3, n3) = patch16(bytes, found.ip.l4 + 2, |_| VXLAN_UDP_PORT.to_be_bytes());
            (o1 + o2 + o3, n1 + n2 + n3)
        }
        Tunnel::Geneve { .. } => {
            patch16(bytes, at, |[ver_len, flags]| [(ver_len & 0xc0) | ((ver_len & 0x3f) - words), flags])
        }
    }
}

/// A tunnel packet a source can instrument inside its tunnel header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelPlan {
    pub ip: IpLocation,
    pub udp_len: u16,
    pub kind: TunnelKind,
    /// Frame offset where the INT shim or option goes.
    pub insert_at: usize,
    /// The tunnel's 5-tuple as it leaves the source (VXLAN made VXLAN-GPE
    /// goes to UDP 4790).
    pub flow: FlowKey,
}

/// The tunnel a source found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelKind {
    /// Plain VXLAN (UDP 4789): made VXLAN-GPE, the shim's G set.
    Vxlan,
    /// VXLAN-GPE whose Next Protocol is this.
    Gpe { next_protocol: u8 },
    /// Geneve with this many words of options already.
    Geneve { options_words: u8 },
}

impl TunnelPlan {
    /// Bytes a source adds for `body_len` bytes of INT header and data.
    pub fn added_len(&self, body_len: usize) -> usize {
        GPE_SHIM_LEN + body_len
    }

    /// The most bytes of INT header and data this tunnel can carry: a
    /// Geneve option's 31 words, and what Opt Len's 63 leave.
    pub fn max_body_len(&self) -> usize {
        match self.kind {
            TunnelKind::Vxlan | TunnelKind::Gpe { .. } => usize::from(u8::MAX) * 4,
            TunnelKind::Geneve { options_words } => {
                let left = MAX_GENEVE_OPTIONS_WORDS.saturating_sub(usize::from(options_words) + 1);
                left.min(MAX_OPTION_WORDS) * 4
            }
        }
    }
}

/// Whether and where a source can put INT inside this frame's tunnel: a
/// VXLAN, VXLAN-GPE or Geneve packet (by its UDP destination port) that
/// carries no INT yet. `Ok(None)`: no such tunnel packet.
pub fn plan(frame: &[u8]) -> Result<Option<TunnelPlan>, ParseError> {
    let Some(Outer { ip, src_port, dst_port, length }) = outer_udp(frame) else { return Ok(None) };
    let at = ip.l4 + UDP_LEN;
    let payload = frame
        .get(at..ip.end)
        .ok_or_else(|| ParseError::truncated(Layer::Udp, at, ip.end.saturating_sub(at), frame.len()))?;
    let shifted = |e: ParseError| e.shifted(at);
    let (kind, insert_at) = match dst_port {
        VXLAN_UDP_PORT => {
            // RFC 7348: I set, the rest of the first word reserved.
            let flags = *payload.first().ok_or_else(|| ParseError::truncated(Layer::VxlanGpe, at, 8, 0))?;
            if payload.len() < vxlan_gpe::HEADER_LEN || flags & vxlan_gpe::FLAG_I == 0 {
                return Ok(None);
            }
            (TunnelKind::Vxlan, at + vxlan_gpe::HEADER_LEN)
        }
        vxlan_gpe::UDP_PORT => {
            let gpe = vxlan_gpe::VxlanGpeRepr::parse(payload).map_err(shifted)?;
            if gpe.next_protocol == vxlan_gpe::NEXT_INT {
                return Ok(None);
            }
            (TunnelKind::Gpe { next_protocol: gpe.next_protocol }, at + vxlan_gpe::HEADER_LEN)
        }
        geneve::UDP_PORT => {
            let header = geneve::GeneveRepr::parse(payload).map_err(shifted)?;
            if geneve::find_option(payload, &header, geneve::INT_OPTION_CLASS).map_err(shifted)?.is_some() {
                return Ok(None);
            }
            (TunnelKind::Geneve { options_words: header.options_words }, at + header.len())
        }
        _ => return Ok(None),
    };
    let leaving_port = if kind == TunnelKind::Vxlan { vxlan_gpe::UDP_PORT } else { dst_port };
    let flow = crate::flow::flow_key(frame, &ip, locate::PROTO_UDP, src_port, leaving_port);
    Ok(Some(TunnelPlan { ip, udp_len: length, kind, insert_at, flow }))
}

/// Puts `body` (an INT-MD or INT-MX header and its data, `header_type`)
/// into the tunnel `plan` found: after VXLAN-GPE's header under an INT shim
/// (plain VXLAN made VXLAN-GPE, G set), or as the last Geneve option. The
/// outer lengths and UDP checksum follow (0 stays 0). Returns the bytes
/// added, or `None` (frame unchanged) without headroom or room in the
/// tunnel's lengths.
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &TunnelPlan,
    header_type: super::HeaderType,
    body: &[u8],
) -> Option<usize> {
    let added = plan.added_len(body.len());
    if body.len() > plan.max_body_len()
        || !body.len().is_multiple_of(4)
        || usize::from(plan.udp_len) + added > usize::from(u16::MAX)
        || !frame.open_gap(plan.insert_at, added)
    {
        return None;
    }
    let bytes = frame.frame_mut();
    let words = (body.len() / 4) as u8;
    let head = tunnel_int_head(plan.kind, header_type, words);
    bytes.get_mut(plan.insert_at..plan.insert_at + GPE_SHIM_LEN)?.copy_from_slice(&head);
    bytes.get_mut(plan.insert_at + GPE_SHIM_LEN..plan.insert_at + added)?.copy_from_slice(body);
    let inserted = checksum::sum(0, bytes.get(plan.insert_at..plan.insert_at + added)?);
    let (old, new) = announce_int(bytes, plan, 1 + words);
    let ip = plan.ip;
    carrier::rewrite_ip(bytes, &ip, ip.tos, ip.ip_len() + added, ip.protocol);
    Carrier::Udp(ip.l4).update(bytes, plan.udp_len, plan.udp_len + added as u16, old, new + inserted);
    Some(added)
}

/// The 4 bytes in front of the INT data: VXLAN-GPE's INT shim (Next
/// Protocol: what the GPE header named; Ethernet after plain VXLAN, G set)
/// or the Geneve option header (class 0x0103, Type = the header type).
fn tunnel_int_head(kind: TunnelKind, header_type: super::HeaderType, words: u8) -> [u8; 4] {
    let mut head = [0u8; 4];
    let _ = match kind {
        TunnelKind::Vxlan | TunnelKind::Gpe { .. } => {
            let (next_protocol, from_vxlan) = match kind {
                TunnelKind::Gpe { next_protocol } => (next_protocol, false),
                _ => (vxlan_gpe::NEXT_ETHERNET, true),
            };
            tunnel::GpeShimRepr { header_type, length_words: words, from_vxlan, next_protocol }
                .emit(&mut head)
        }
        TunnelKind::Geneve { .. } => {
            let option_type = if header_type == super::HeaderType::Mx { 3 } else { 1 };
            geneve::GeneveOptionRepr { class: geneve::INT_OPTION_CLASS, option_type, length_words: words }
                .emit(&mut head)
        }
    };
    head
}

/// The tunnel header announcing INT: VXLAN-GPE's Next Protocol 0x82 (plain
/// VXLAN made VXLAN-GPE: P set, UDP 4790), or Geneve's Opt Len grown by
/// the option's `words`. Returns the changed words' sums before and after.
fn announce_int(bytes: &mut [u8], plan: &TunnelPlan, words: u8) -> (u32, u32) {
    let at = plan.ip.l4 + UDP_LEN;
    match plan.kind {
        TunnelKind::Gpe { .. } => patch16(bytes, at + 2, |[reserved, _]| [reserved, vxlan_gpe::NEXT_INT]),
        TunnelKind::Vxlan => {
            let (o1, n1) = patch16(bytes, at, |[flags, reserved]| [flags | vxlan_gpe::FLAG_P, reserved]);
            let (o2, n2) = patch16(bytes, at + 2, |[reserved, _]| [reserved, vxlan_gpe::NEXT_INT]);
            let (o3, n3) = patch16(bytes, plan.ip.l4 + 2, |_| vxlan_gpe::UDP_PORT.to_be_bytes());
            (o1 + o2 + o3, n1 + n2 + n3)
        }
        TunnelKind::Geneve { .. } => patch16(bytes, at, |[ver_len, flags]| [ver_len + words, flags]),
    }
}
