//! IFA 2.0, the Inband Flow Analyzer (draft-kumar-ippm-ifa-08): the IFA
//! header after the IP header, the metadata header and stack after the L4
//! header, as scapy pull request 4235 layers it
//! (`IP/IFA/L4/IFAMdHdr/IFAMd.../payload`) and gopacket's `layers/ifa.go`
//! draws it:
//!
//! ```text
//! IP (protocol = IFA) | IFA header | L4 header | metadata header | stack | payload
//! ```
//!
//! The L4 header is TCP, UDP (whose payload may be VXLAN on 4789,
//! VXLAN-GPE on 4790 or Geneve on 6081) or GRE (over Ethernet, IPv4 or
//! IPv6): in a tunnel, IFA follows the outer IP header and the stack sits
//! between the tunnel's UDP or GRE header and the tunnel's payload.
//!
//! What this node reads, and what it refuses with a [`Refusal`] of its own
//! (docs/ifa.md says why):
//! - version 2, GNS 15 (no global name space; each hop in Broadcom's LNS 1
//!   layout, [`hop`]); another version or GNS is refused;
//! - flags I and TA are read; MF, TS and C are refused, each by its reason
//!   (the fragment and checksum headers they announce, and tail-stamped
//!   metadata, are not read; gopacket refuses all three too);
//! - Current Length must be whole 32-byte hops, at most Max Length, and
//!   inside the IP packet;
//! - a fragment after the first carries no IFA header: not IFA.

pub mod fast_sink;
pub mod fast_source;
pub mod fast_transit;
pub mod header;
pub mod hop;
pub mod md_header;
pub mod sink;
pub mod source;
pub mod transit;

pub use header::{Flags, IfaHeaderRepr};
pub use hop::{HopRepr, PortSpeed};
pub use md_header::{Action, MdHeaderRepr};

use crate::error::{Layer, ParseError};
use crate::locate::{self, Fragment, IpLocation, PROTO_TCP, PROTO_UDP};
use crate::wire::gre::{self, GreRepr};
use crate::wire::{tcp, udp, TcpHeader, UdpHeader};
use zerocopy::FromBytes;

/// The IP protocol number SONiC and the deployed fabrics use, an
/// experimental one (Broadcom's own example, OpenBCM sdk-6.5.20
/// `src/examples/dnx/instru/cint_ifa2.c`, `DEFAULT_IP_PROTOCOL = 253`).
/// scapy's default is 131.
pub const DEFAULT_PROTOCOL: u8 = 253;
/// UDP ports whose payload, after the stack, is a tunnel.
pub const PORT_VXLAN: u16 = 4789;
pub const PORT_VXLAN_GPE: u16 = 4790;
pub const PORT_GENEVE: u16 = 6081;

/// What every node of an IFA zone must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain {
    /// The IP protocol (IPv4) or last Next Header (IPv6) that announces IFA.
    pub protocol: u8,
}

impl Default for Domain {
    fn default() -> Self {
        Domain { protocol: DEFAULT_PROTOCOL }
    }
}

/// Whether the L4 header's length and checksum cover IFA's metadata header
/// and stack. The draft's authors' IETF-104 slides: "L4 length and
/// checksum is not updated" ([`L4Rule::Keep`]); scapy pull request 4235
/// computes both over them ([`L4Rule::Cover`]), as all its test packets
/// show (`tests/ifa_scapy.rs`). A zone uses one rule at every node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum L4Rule {
    /// The draft's: IFA nodes leave the L4 length and checksum as they are.
    #[default]
    Keep,
    /// scapy's: the UDP Length and the TCP/UDP checksum cover the metadata
    /// header and stack; every node keeps them so, incrementally.
    Cover,
}

/// Why a packet marked as IFA is refused: one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The Ethernet or IP headers lie (not IFA's fault).
    Packet,
    /// The IFA header, the L4 header or the metadata header is cut short.
    Truncated,
    /// IFA header version other than 2.
    Version,
    /// GNS other than 15.
    GlobalNameSpace,
    /// MF: a metadata fragment header follows.
    MetadataFragment,
    /// TS: the metadata is at the end of the packet.
    TailStamp,
    /// C: a checksum header follows.
    ChecksumHeader,
    /// Next Header neither TCP, UDP nor GRE: no L4 header to pass.
    NextHeader,
    /// The L4 header under IFA lies (TCP Data Offset, GRE version or bits).
    L4,
    /// Current Length is not a whole number of 32-byte hops.
    LengthNotHops,
    /// Current Length above Max Length.
    LengthPastMax,
    /// The stack runs past the IP packet.
    StackPastPacket,
}

impl Refusal {
    pub const ALL: [Refusal; 12] = [
        Refusal::Packet,
        Refusal::Truncated,
        Refusal::Version,
        Refusal::GlobalNameSpace,
        Refusal::MetadataFragment,
        Refusal::TailStamp,
        Refusal::ChecksumHeader,
        Refusal::NextHeader,
        Refusal::L4,
        Refusal::LengthNotHops,
        Refusal::LengthPastMax,
        Refusal::StackPastPacket,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::Packet => "ifa_packet_malformed",
            Refusal::Truncated => "ifa_truncated",
            Refusal::Version => "ifa_unknown_version",
            Refusal::GlobalNameSpace => "ifa_global_name_space",
            Refusal::MetadataFragment => "ifa_metadata_fragment",
            Refusal::TailStamp => "ifa_tail_stamp",
            Refusal::ChecksumHeader => "ifa_checksum_header",
            Refusal::NextHeader => "ifa_next_header",
            Refusal::L4 => "ifa_l4_malformed",
            Refusal::LengthNotHops => "ifa_length_not_hops",
            Refusal::LengthPastMax => "ifa_length_past_max",
            Refusal::StackPastPacket => "ifa_stack_past_packet",
        }
    }
}

/// A refused IFA packet: the counter it goes to and what was wrong where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub reason: Refusal,
    pub error: ParseError,
}

impl Refused {
    fn new(reason: Refusal, error: ParseError) -> Self {
        Refused { reason, error }
    }

    /// A cut header is [`Refusal::Truncated`]; any other error `otherwise`.
    fn or_truncated(otherwise: Refusal) -> impl Fn(ParseError) -> Refused {
        move |error| match error {
            ParseError::Truncated { .. } => Refused::new(Refusal::Truncated, error),
            _ => Refused::new(otherwise, error),
        }
    }
}

impl From<Refused> for ParseError {
    fn from(refused: Refused) -> ParseError {
        refused.error
    }
}

/// The header after the IFA header: the original L4 header, or a tunnel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    Tcp {
        src_port: u16,
        dst_port: u16,
    },
    /// `length` as the packet carries it: peers differ on whether it covers
    /// the metadata (docs/ifa.md).
    Udp {
        src_port: u16,
        dst_port: u16,
        length: u16,
    },
    Gre(GreRepr),
}

/// What follows the stack, by the carrier's port or protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// The TCP or UDP payload of the original packet.
    Data,
    Vxlan,
    VxlanGpe,
    Geneve,
    Ethernet,
    Ipv4,
    Ipv6,
    /// A GRE protocol other than those three.
    OtherGre(u16),
}

impl Carrier {
    /// The source and destination ports (GRE has none: 0, 0).
    pub fn ports(&self) -> (u16, u16) {
        match *self {
            Carrier::Tcp { src_port, dst_port } | Carrier::Udp { src_port, dst_port, .. } => {
                (src_port, dst_port)
            }
            Carrier::Gre(_) => (0, 0),
        }
    }

    pub fn payload(&self) -> Payload {
        match *self {
            Carrier::Tcp { .. } => Payload::Data,
            Carrier::Udp { dst_port, .. } => match dst_port {
                PORT_VXLAN => Payload::Vxlan,
                PORT_VXLAN_GPE => Payload::VxlanGpe,
                PORT_GENEVE => Payload::Geneve,
                _ => Payload::Data,
            },
            Carrier::Gre(repr) => match repr.protocol {
                gre::PROTOCOL_ETHERNET => Payload::Ethernet,
                gre::PROTOCOL_IPV4 => Payload::Ipv4,
                gre::PROTOCOL_IPV6 => Payload::Ipv6,
                other => Payload::OtherGre(other),
            },
        }
    }
}

/// Where an IFA packet's parts lie in a frame, all offsets from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub ip: IpLocation,
    pub header_at: usize,
    pub header: IfaHeaderRepr,
    /// The L4 header's offset: `header_at + 4`.
    pub l4_at: usize,
    pub carrier: Carrier,
    pub md_at: usize,
    pub md: MdHeaderRepr,
    pub stack_at: usize,
    /// Where the stack ends and the payload begins.
    pub payload_at: usize,
}

impl Located {
    /// The hops, newest (nearest the metadata header) first.
    pub fn stack<'a>(&self, frame: &'a [u8]) -> Stack<'a> {
        Stack { bytes: frame.get(self.stack_at..self.payload_at).unwrap_or_default() }
    }

    pub fn hop_count(&self) -> usize {
        self.payload_at.saturating_sub(self.stack_at) / hop::HOP_LEN
    }

    /// The original packet's flow: its addresses, the protocol IFA's Next
    /// Header kept, the carrier's ports.
    pub fn flow(&self, frame: &[u8]) -> crate::flow::FlowKey {
        let (src_port, dst_port) = self.carrier.ports();
        crate::flow::flow_key(frame, &self.ip, self.header.next_header, src_port, dst_port)
    }

    /// [`Located::flow`] as the fast tables key it, for an IPv4 packet
    /// (the sink's common case: no key to build); `None` for IPv6.
    #[inline(always)]
    pub fn flow_words(&self, frame: &[u8]) -> Option<crate::flow::FlowWords> {
        let (src_port, dst_port) = self.carrier.ports();
        crate::flow::flow_words_v4(frame, &self.ip, self.header.next_header, src_port, dst_port)
    }

    /// Where a report's copy of the packet ends: after the stack, as the
    /// other sinks' copies end after their telemetry and the L4 header's
    /// ports (IFA's L4 header lies before its stack).
    pub fn report_end(&self) -> usize {
        self.payload_at
    }

    /// Whether the packet is a live one (I set), not a probe copy.
    pub fn inband(&self) -> bool {
        self.header.flags.contains(Flags::INBAND)
    }

    /// Bytes of IFA in the packet: the IFA header, the metadata header and
    /// the stack.
    pub fn ifa_len(&self) -> usize {
        header::HEADER_LEN + md_header::HEADER_LEN + self.payload_at.saturating_sub(self.stack_at)
    }
}

/// The header whose length and checksum [`L4Rule::Cover`] keeps covering
/// the metadata, and the L4 length it counts now (UDP: its Length field;
/// TCP: the pseudo-header's, to the end of the IP packet). `None` for GRE,
/// which carries neither (its optional checksum is not written here).
fn covering(carrier: &Carrier, l4_at: usize, ip_end: usize) -> Option<(crate::carrier::Carrier, u16)> {
    match *carrier {
        Carrier::Udp { length, .. } => Some((crate::carrier::Carrier::Udp(l4_at), length)),
        Carrier::Tcp { .. } => Some((crate::carrier::Carrier::Tcp(l4_at), (ip_end - l4_at) as u16)),
        Carrier::Gre(_) => None,
    }
}

/// A metadata stack checked to be whole hops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack<'a> {
    bytes: &'a [u8],
}

impl<'a> Stack<'a> {
    pub fn hop_count(&self) -> usize {
        self.bytes.len() / hop::HOP_LEN
    }

    pub fn hops(&self) -> impl Iterator<Item = HopRepr> + 'a {
        self.bytes.chunks_exact(hop::HOP_LEN).filter_map(|bytes| HopRepr::parse(bytes).ok())
    }
}

impl Domain {
    /// Finds and checks the IFA parts of a frame. `Ok(None)`: not IFA of
    /// this domain (another protocol, not IP, or a fragment after the
    /// first). `Err`: marked as IFA, refused by the reason it carries.
    pub fn locate(&self, frame: &[u8]) -> Result<Option<Located>, Refused> {
        match locate::ip(frame) {
            Ok(Some(ip)) => self.locate_in(frame, ip),
            Ok(None) => Ok(None),
            Err(error) => Err(Refused::new(Refusal::Packet, error)),
        }
    }

    /// [`Domain::locate`] in a packet whose IP header `ip` locates: a
    /// frame's, or a report's copy (`locate::reported_ip`), whose stack
    /// must then be whole before the cut.
    #[inline]
    pub fn locate_in(&self, frame: &[u8], ip: IpLocation) -> Result<Option<Located>, Refused> {
        if ip.protocol != self.protocol || ip.fragment == Fragment::Later {
            return Ok(None);
        }
        let header_at = ip.l4;
        let header = read_header(frame, &ip)?;
        let l4_at = header_at + header::HEADER_LEN;
        let (carrier, l4_len) = read_l4(frame, header.next_header, l4_at, ip.end)?;
        let md_at = l4_at + l4_len;
        let md = MdHeaderRepr::parse(crate::bytes::span(frame, md_at, ip.end, Layer::IfaMetadataHeader)?)
            .map_err(|e| Refused::new(Refusal::Truncated, e.shifted(md_at)))?;
        let stack_at = md_at + md_header::HEADER_LEN;
        let payload_at = check_stack(&header, &md, md_at, ip.end)?;
        Ok(Some(Located { ip, header_at, header, l4_at, carrier, md_at, md, stack_at, payload_at }))
    }
}

impl From<ParseError> for Refused {
    /// A span the walk could not take: the header there is cut short.
    fn from(error: ParseError) -> Refused {
        Refused::new(Refusal::Truncated, error)
    }
}

/// The IFA header at `ip.l4`, refused by version, GNS and flag.
fn read_header(frame: &[u8], ip: &IpLocation) -> Result<IfaHeaderRepr, Refused> {
    let at = ip.l4;
    let header = IfaHeaderRepr::parse(crate::bytes::span(frame, at, ip.end, Layer::IfaHeader)?)
        .map_err(|e| Refused::new(Refusal::Truncated, e.shifted(at)))?;
    check_header(header, at)
}

/// A header read at `at`, refused by version, GNS and flag.
fn check_header(header: IfaHeaderRepr, at: usize) -> Result<IfaHeaderRepr, Refused> {
    let unknown =
        |offset: usize, value: u8| ParseError::UnknownType { layer: Layer::IfaHeader, offset, value };
    if header.version != header::VERSION {
        let error = ParseError::UnknownVersion { layer: Layer::IfaHeader, offset: at, value: header.version };
        return Err(Refused::new(Refusal::Version, error));
    }
    if header.gns != header::NO_GLOBAL_NAME_SPACE {
        return Err(Refused::new(Refusal::GlobalNameSpace, unknown(at, header.gns)));
    }
    for (flag, reason) in [
        (Flags::METADATA_FRAGMENT, Refusal::MetadataFragment),
        (Flags::TAIL_STAMP, Refusal::TailStamp),
        (Flags::CHECKSUM, Refusal::ChecksumHeader),
    ] {
        if header.flags.contains(flag) {
            return Err(Refused::new(reason, unknown(at + 2, flag.bits())));
        }
    }
    Ok(header)
}

/// What a terminator exports of one packet's IFA (the records of
/// [`crate::report::ifa_ipfix`]): its IFA and metadata headers and the
/// stack, checked as [`Domain::locate`] checks them in a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported<'a> {
    pub header: IfaHeaderRepr,
    pub md: MdHeaderRepr,
    pub stack: Stack<'a>,
}

/// Reads an export's 8 bytes of headers and its stack. The refusals and
/// their order are the walk's (version, GNS, MF, TS, C, then Current
/// Length); a stack shorter than Current Length is
/// [`Refusal::StackPastPacket`], bytes after it are refused with
/// [`Refusal::LengthNotHops`] (Current Length and the stack disagree).
/// Offsets are within the headers, then the stack after them.
pub fn exported<'a>(headers: &[u8], stack: &'a [u8]) -> Result<Exported<'a>, Refused> {
    let header = IfaHeaderRepr::parse(headers).map_err(|e| Refused::new(Refusal::Truncated, e))?;
    let header = check_header(header, 0)?;
    let md_bytes = headers.get(header::HEADER_LEN..).unwrap_or_default();
    let md = MdHeaderRepr::parse(md_bytes)
        .map_err(|e| Refused::new(Refusal::Truncated, e.shifted(header::HEADER_LEN)))?;
    let md_at = header::HEADER_LEN;
    let end = md_at + md_header::HEADER_LEN + stack.len();
    let payload_at = check_stack(&header, &md, md_at, end)?;
    if payload_at != end {
        let error = ParseError::BadLength { layer: Layer::IfaStack, offset: md_at + 3, value: stack.len() };
        return Err(Refused::new(Refusal::LengthNotHops, error));
    }
    Ok(Exported { header, md, stack: Stack { bytes: stack } })
}

/// The L4 header that IFA's Next Header names, and its length.
fn read_l4(frame: &[u8], next: u8, at: usize, end: usize) -> Result<(Carrier, usize), Refused> {
    let bytes = |layer| crate::bytes::span(frame, at, end, layer);
    match next {
        PROTO_TCP => {
            let (tcp, _) = TcpHeader::ref_from_prefix(bytes(Layer::Tcp)?)
                .map_err(|_| ParseError::truncated(Layer::Tcp, at, tcp::MIN_HEADER_LEN, end))?;
            let len = tcp.header_len();
            if len < tcp::MIN_HEADER_LEN {
                let error = ParseError::BadLength { layer: Layer::Tcp, offset: at + 12, value: len };
                return Err(Refused::new(Refusal::L4, error));
            }
            if at + len > end {
                return Err(ParseError::truncated(Layer::Tcp, at, len, end).into());
            }
            Ok((Carrier::Tcp { src_port: tcp.src_port.get(), dst_port: tcp.dst_port.get() }, len))
        }
        PROTO_UDP => {
            let (udp, _) = UdpHeader::ref_from_prefix(bytes(Layer::Udp)?)
                .map_err(|_| ParseError::truncated(Layer::Udp, at, udp::HEADER_LEN, end))?;
            let (src_port, dst_port, length) = (udp.src_port.get(), udp.dst_port.get(), udp.length.get());
            Ok((Carrier::Udp { src_port, dst_port, length }, udp::HEADER_LEN))
        }
        gre::IP_PROTOCOL => {
            let repr = GreRepr::parse(bytes(Layer::Gre)?)
                .map_err(|e| Refused::or_truncated(Refusal::L4)(e.shifted(at)))?;
            Ok((Carrier::Gre(repr), repr.header_len()))
        }
        other => {
            let error = ParseError::UnknownType { layer: Layer::IfaHeader, offset: at - 3, value: other };
            Err(Refused::new(Refusal::NextHeader, error))
        }
    }
}

/// Current Length against the hop size, Max Length and the packet: where
/// the payload begins.
fn check_stack(
    header: &IfaHeaderRepr,
    md: &MdHeaderRepr,
    md_at: usize,
    end: usize,
) -> Result<usize, Refused> {
    let stack_at = md_at + md_header::HEADER_LEN;
    let stack_len = md.stack_len();
    let length =
        |layer| ParseError::BadLength { layer, offset: md_at + 3, value: usize::from(md.current_length) };
    if !stack_len.is_multiple_of(hop::HOP_LEN) {
        return Err(Refused::new(Refusal::LengthNotHops, length(Layer::IfaStack)));
    }
    if md.current_length > header.max_length {
        return Err(Refused::new(Refusal::LengthPastMax, length(Layer::IfaMetadataHeader)));
    }
    if stack_at + stack_len > end {
        let error = ParseError::truncated(Layer::IfaStack, stack_at, stack_len, end);
        return Err(Refused::new(Refusal::StackPastPacket, error));
    }
    Ok(stack_at + stack_len)
}

#[cfg(test)]
mod tests;
