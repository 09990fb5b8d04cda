//! The IFA initiator: the IFA header after the IP header (the IP protocol
//! kept as its Next Header, IFA's protocol put in its place), and after the
//! L4 header the metadata header and the initiator's own hop; the IP
//! length and IPv4 checksum follow. The L4 header (TCP, UDP, or GRE in a
//! tunnel) is left as it is under [`L4Rule::Keep`], or made to cover the
//! new bytes under [`L4Rule::Cover`].

use crate::bytes::after_mut;
use crate::carrier;
use crate::checksum;
use crate::error::{EmitError, Layer, ParseError};
use crate::frame::FrameBuf;
use crate::locate::{self, IpLocation};
use crate::outcome::Skip;

use super::{
    covering, header, hop, md_header, read_l4, Action, Carrier, Domain, Flags, HopRepr, IfaHeaderRepr,
    L4Rule, MdHeaderRepr, Refusal,
};

/// Bytes an initiator adds: IFA header, metadata header and one hop.
pub const INSERTED_LEN: usize = header::HEADER_LEN + md_header::HEADER_LEN + hop::HOP_LEN;

/// What an initiator writes besides its hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Max Length, in words of stack (8 per hop).
    pub max_length: u8,
    pub hop_limit: u8,
    pub request_vector: u8,
    pub action: Action,
    /// I: a live packet; clear on a probe copy.
    pub inband: bool,
    pub l4: L4Rule,
}

impl Default for Settings {
    /// Broadcom's example values (OpenBCM sdk-6.5.20
    /// `src/examples/dnx/instru/cint_ifa2.c`: Max Length 0xff, request
    /// vector 0xff), live packets, the draft's L4 rule.
    fn default() -> Self {
        Settings {
            max_length: 0xff,
            hop_limit: 0xff,
            request_vector: 0xff,
            action: Action::empty(),
            inband: true,
            l4: L4Rule::Keep,
        }
    }
}

/// Where an initiator will write, in a frame it may instrument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub ip: IpLocation,
    pub carrier: Carrier,
    pub l4_len: usize,
}

impl Plan {
    /// The flow of the packet the plan is for: its addresses, protocol
    /// and ports (GRE: 0, 0), as a watchlist reads it.
    pub fn flow(&self, frame: &[u8]) -> crate::flow::FlowKey {
        let (src_port, dst_port) = self.carrier.ports();
        crate::flow::flow_key(frame, &self.ip, self.ip.protocol, src_port, dst_port)
    }
}

/// Whether `frame` can take IFA: unfragmented IPv4 or IPv6 over TCP, UDP
/// or GRE, not IFA already, no larger than `max_ip_len` bytes of IP packet
/// with IFA's bytes added.
pub fn plan(frame: &[u8], domain: &Domain, max_ip_len: u16) -> Result<Plan, Skip> {
    let ip = locate::ip(frame).map_err(Skip::Malformed)?.ok_or(Skip::NotIp)?;
    if ip.protocol == domain.protocol {
        return Err(Skip::AlreadyMarked);
    }
    if ip.is_fragment() {
        return Err(Skip::Fragment);
    }
    if matches!(ip.protocol, locate::PROTO_TCP | locate::PROTO_UDP) {
        locate::l4(frame, &ip).map_err(Skip::Malformed)?;
    }
    let (carrier, l4_len) =
        read_l4(frame, ip.protocol, ip.l4, ip.end).map_err(|refused| match refused.reason {
            Refusal::NextHeader => Skip::NotTcpUdp,
            _ => Skip::Malformed(refused.error),
        })?;
    if ip.ip_len() + INSERTED_LEN > usize::from(max_ip_len) {
        return Err(Skip::TooBig);
    }
    Ok(Plan { ip, carrier, l4_len })
}

/// Inserts IFA as [`plan`] found room for it, with `hop` as the first hop;
/// returns the bytes added.
pub fn insert(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    domain: &Domain,
    settings: &Settings,
    hop: &HopRepr,
) -> Result<usize, Skip> {
    let Plan { ip, carrier, l4_len } = *plan;
    if settings.max_length < (hop::HOP_LEN / 4) as u8 {
        return Err(Skip::TooBig);
    }
    if ip.l4 + l4_len > ip.end || ip.end > frame.len() {
        return Err(Skip::Malformed(ParseError::truncated(Layer::IfaHeader, ip.l4, l4_len, frame.len())));
    }
    // One gap in front of the L4 header; the L4 header then moves back to
    // just after the IFA header, leaving the gap behind it.
    if !frame.open_gap(ip.l4, INSERTED_LEN) {
        return Err(Skip::NoHeadroom);
    }
    let bytes = frame.frame_mut();
    let l4_at = ip.l4 + header::HEADER_LEN;
    let md_at = l4_at + l4_len;
    bytes.copy_within(ip.l4 + INSERTED_LEN..ip.l4 + INSERTED_LEN + l4_len, l4_at);
    let flags = if settings.inband { Flags::INBAND } else { Flags::empty() };
    let ifa = IfaHeaderRepr {
        next_header: ip.protocol,
        flags,
        max_length: settings.max_length,
        ..Default::default()
    };
    let md = MdHeaderRepr {
        request_vector: settings.request_vector,
        action: settings.action,
        hop_limit: settings.hop_limit,
        current_length: (hop::HOP_LEN / 4) as u8,
    };
    write(bytes, ip.l4, md_at, &ifa, &md, hop).map_err(|_| Skip::NoHeadroom)?;
    carrier::rewrite_ip(bytes, &ip, ip.tos, ip.ip_len() + INSERTED_LEN, domain.protocol);
    if settings.l4 == L4Rule::Cover {
        if let Some((l4, old_len)) = covering(&carrier, l4_at, ip.end + header::HEADER_LEN) {
            let added = checksum::sum(0, bytes.get(md_at..md_at + INSERTED_LEN - 4).unwrap_or_default());
            let grown = (INSERTED_LEN - header::HEADER_LEN) as u16;
            l4.update(bytes, old_len, old_len.saturating_add(grown), 0, added);
        }
    }
    Ok(INSERTED_LEN)
}

/// The IFA header at `at`, the metadata header and the hop at `md_at`.
fn write(
    bytes: &mut [u8],
    at: usize,
    md_at: usize,
    ifa: &IfaHeaderRepr,
    md: &MdHeaderRepr,
    hop: &HopRepr,
) -> Result<(), EmitError> {
    ifa.emit(after_mut(bytes, at, Layer::IfaHeader, header::HEADER_LEN)?)?;
    md.emit(after_mut(bytes, md_at, Layer::IfaMetadataHeader, md_header::HEADER_LEN)?)?;
    hop.emit(after_mut(bytes, md_at + md_header::HEADER_LEN, Layer::IfaStack, hop::HOP_LEN)?)?;
    Ok(())
}
