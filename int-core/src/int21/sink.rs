//! INT 2.1 sink over TCP/UDP: removes the block (and the UDP header a
//! source inserted for NPT 2) and restores what the shim kept: the DSCP
//! (NPT 0), the UDP destination port (NPT 1) or the IP protocol (NPT 2).
//! Lengths and checksums are fixed incrementally; a UDP checksum of 0
//! stays 0. A packet of no TCP/UDP marking is looked at as a tunnel
//! (VXLAN-GPE or Geneve, [`super::in_tunnel`]), whose INT is removed there.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::error::ParseError;
use crate::frame::FrameBuf;
use crate::hop_rule::{HopDigest, HopRule, Untold};
use crate::locate::L4;
use crate::wire::udp::HEADER_LEN as UDP_LEN;

use super::find::Arrival;
use super::in_tunnel::{self, InTunnel, TunnelSpan};
use super::{Body, Domain, Found, HopMetadata, Next};

/// What a sink keeps of an INT 2.1 packet once its bytes are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extracted {
    pub flow: crate::flow::FlowKey,
    /// What the shim kept (None in a tunnel).
    pub next: Option<Next>,
    /// INT carried in a tunnel: where, for the strip.
    pub tunnel: Option<TunnelSpan>,
    /// D: discard the packet once reported.
    pub discard: bool,
    /// INT-MD: hops that pushed, and the bottom one (the source's, when it
    /// pushed), read in place.
    pub hop_count: usize,
    pub source_hop: Option<HopMetadata>,
    /// [`super::MdStack::hop_digest`] where [`HopRule::sampled`] takes the
    /// packet (INT-MX: [`Untold::NoHops`]).
    pub hops: Result<HopDigest, Untold>,
    /// The flow's packet number the source put in source-only metadata.
    pub sequence: Option<u32>,
    pub is_mx: bool,
    /// The block's instruction bitmap (INT-MX: what every node reports).
    pub instructions: super::Instructions,
    pub ip: crate::locate::IpLocation,
    pub l4: L4,
    pub block_at: usize,
    pub block_len: usize,
    block_sum: u32,
}

impl Extracted {
    /// Where the packet a report carries ends: after the block and, for
    /// NPT 2, the original L4 header's first 20 bytes (TCP) or 8 (UDP);
    /// never past the IP packet.
    pub fn report_end(&self) -> usize {
        let after = match self.next {
            Some(Next::IpProtocol(6)) => 20,
            Some(Next::IpProtocol(_)) => UDP_LEN,
            Some(Next::Dscp(_) | Next::UdpPort(_)) | None => 0,
        };
        (self.block_at + self.block_len + after).min(self.ip.end)
    }
}

/// Finds and reads the INT 2.1 block of a frame (see [`find`]), or the
/// INT data in its tunnel.
pub fn extract(frame: &[u8], domain: &Domain, rule: &HopRule) -> Result<Option<Extracted>, ParseError> {
    classify(frame, domain, rule).map(Arrival::int)
}

/// [`extract`], telling marked packets without INT from unmarked ones
/// ([`super::find::classify`]).
pub fn classify(frame: &[u8], domain: &Domain, rule: &HopRule) -> Result<Arrival<Extracted>, ParseError> {
    Ok(match super::find::classify(frame, domain)? {
        Arrival::Int(found) => Arrival::Int(extracted(frame, &found, domain, rule)),
        Arrival::MarkedNotInt => Arrival::MarkedNotInt,
        Arrival::NotInt => match in_tunnel::find(frame, domain.source_only)? {
            Some(found) => Arrival::Int(extracted_in_tunnel(&found, domain, rule)),
            None => Arrival::NotInt,
        },
    })
}

/// What a sink keeps of INT in a tunnel: the block is the INT shim (or
/// option) and its data.
fn extracted_in_tunnel(found: &InTunnel<'_>, domain: &Domain, rule: &HopRule) -> Extracted {
    let span = found.span();
    let (block_at, block_len) = span.int_span();
    let (src_port, dst_port) = (found.flow.src_port, found.flow.dst_port);
    let carried = Carried {
        flow: found.flow,
        next: None,
        tunnel: Some(span),
        ip: found.ip,
        l4: L4::Udp { src_port, dst_port, length: found.udp_len },
        block_at,
        block_len,
        block_sum: 0,
    };
    carried.with_body(found.body, domain, rule)
}

fn extracted(frame: &[u8], found: &Found<'_>, domain: &Domain, rule: &HopRule) -> Extracted {
    let (block_at, block_len) = (found.block_at, found.block.len());
    let block_sum = checksum::sum(0, frame.get(block_at..block_at + block_len).unwrap_or_default());
    let carried = Carried {
        flow: found.flow,
        next: Some(found.block.shim().next),
        tunnel: None,
        ip: found.ip,
        l4: found.l4,
        block_at,
        block_len,
        block_sum,
    };
    carried.with_body(found.block.body(), domain, rule)
}

/// Where a block was found and what carries it: an [`Extracted`] but for
/// what its body says.
struct Carried {
    flow: crate::flow::FlowKey,
    next: Option<Next>,
    tunnel: Option<TunnelSpan>,
    ip: crate::locate::IpLocation,
    l4: L4,
    block_at: usize,
    block_len: usize,
    block_sum: u32,
}

impl Carried {
    /// With what the sink reads of the INT-MD or INT-MX body: D, the hops,
    /// the source's hop and packet number, MX, the bitmap.
    fn with_body(self, body: Body<'_>, domain: &Domain, rule: &HopRule) -> Extracted {
        let Carried { flow, next, tunnel, ip, l4, block_at, block_len, block_sum } = self;
        let (discard, hop_count, source_hop, sequence, is_mx, instructions, hops) = match body {
            Body::Md(md) => {
                let sequence = domain.source_only.sequence_of(&md);
                let header = md.header;
                let hops = rule.sampled(sequence, flow.phase(), |rule| md.hop_digest(rule));
                (header.discard, md.hop_count(), md.bottom_hop(), sequence, false, header.instructions, hops)
            }
            Body::Mx { header, .. } => {
                (header.discard, 0, None, None, true, header.instructions, Err(Untold::NoHops))
            }
        };
        Extracted {
            flow,
            next,
            tunnel,
            discard,
            hop_count,
            source_hop,
            hops,
            sequence,
            is_mx,
            instructions,
            ip,
            l4,
            block_at,
            block_len,
            block_sum,
        }
    }
}

/// Removes the INT bytes `found` describes and restores the packet. Returns
/// the bytes removed, or `None` (frame unchanged) if `found` does not fit
/// this frame.
pub fn strip(frame: &mut FrameBuf<'_>, found: &Extracted) -> Option<usize> {
    let next = match (found.next, &found.tunnel) {
        (Some(next), _) => next,
        (None, Some(tunnel)) => return in_tunnel::strip(frame, tunnel),
        (None, None) => return None,
    };
    let ip = found.ip;
    let (remove_at, remove_len) = match next {
        Next::IpProtocol(_) => (ip.l4, UDP_LEN + found.block_len),
        Next::Dscp(_) | Next::UdpPort(_) => (found.block_at, found.block_len),
    };
    if remove_at + remove_len > ip.end || !frame.close_gap(remove_at, remove_len) {
        return None;
    }
    let bytes = frame.frame_mut();
    let new_len = ip.ip_len() - remove_len;
    let removed = remove_len as u16;
    match (next, found.l4) {
        (Next::Dscp(dscp), l4) => {
            carrier::rewrite_ip(bytes, &ip, (dscp << 2) | (ip.tos & 0x03), new_len, ip.protocol);
            let (carrier, old_len) = match l4 {
                L4::Udp { length, .. } => (Carrier::Udp(ip.l4), length),
                L4::Tcp { .. } => (Carrier::Tcp(ip.l4), ip.payload_len() as u16),
            };
            carrier.update(bytes, old_len, old_len - removed, found.block_sum, 0);
        }
        (Next::UdpPort(original), L4::Udp { length, dst_port, .. }) => {
            carrier::rewrite_ip(bytes, &ip, ip.tos, new_len, ip.protocol);
            bytes.get_mut(ip.l4 + 2..ip.l4 + 4)?.copy_from_slice(&original.to_be_bytes());
            let (old_word, new_word) = (u32::from(dst_port), u32::from(original));
            Carrier::Udp(ip.l4).update(bytes, length, length - removed, old_word + found.block_sum, new_word);
        }
        (Next::UdpPort(_), L4::Tcp { .. }) => return None,
        (Next::IpProtocol(protocol), _) => carrier::rewrite_ip(bytes, &ip, ip.tos, new_len, protocol),
    }
    Some(remove_len)
}
