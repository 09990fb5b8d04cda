//! Finds the IP (IPv4 or IPv6) and L4 headers in an Ethernet frame: the
//! walk every transform starts with. `Ok(None)` means "not a packet for us"
//! (neither IP version); `Err` means "claims to be IP but lies".

use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use crate::error::{Layer, ParseError};
use crate::wire::{tcp, udp, EtherType, EthernetHeader, Ipv4Header, TcpHeader, UdpHeader, VlanTag};

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpVersion {
    #[default]
    V4,
    V6,
}

/// Whether a packet is a fragment, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fragment {
    #[default]
    Whole,
    /// Offset 0: holds the L4 header, whose lengths cover the whole datagram.
    First,
    /// No L4 header.
    Later,
}

/// Where an IP header and its payload lie in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpLocation {
    pub version: IpVersion,
    /// Offset of the IP header.
    pub l3: usize,
    /// Offset of the upper-layer header (IPv4: l3 + IHL x 4; IPv6: after
    /// the extension headers).
    pub l4: usize,
    /// Where the IP packet ends (IPv4: l3 + Total Length; IPv6: l3 + 40 +
    /// Payload Length); bytes after it are Ethernet padding.
    pub end: usize,
    /// The upper-layer protocol.
    pub protocol: u8,
    /// IPv4's ToS or IPv6's Traffic Class: DSCP and ECN.
    pub tos: u8,
    pub fragment: Fragment,
    /// Offset of the byte that names `protocol`: IPv4's Protocol, or the
    /// last Next Header of IPv6's chain.
    pub next_header_at: usize,
}

impl IpLocation {
    /// Bytes of upper-layer packet (what a TCP pseudo-header counts).
    #[inline]
    pub fn payload_len(&self) -> usize {
        self.end - self.l4
    }

    /// Bytes of IP packet, as an MTU counts them.
    #[inline]
    pub fn ip_len(&self) -> usize {
        self.end - self.l3
    }

    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.fragment != Fragment::Whole
    }
}

/// Walks Ethernet (and VLAN tags) to IPv4 or IPv6, checking the lengths
/// against the frame and walking IPv6's extension headers.
#[inline]
pub fn ip(frame: &[u8]) -> Result<Option<IpLocation>, ParseError> {
    match l2(frame)? {
        (EtherType::Ipv4, l3) => ipv4_at(frame, l3).map(Some),
        (EtherType::Ipv6, l3) => ipv6_at(frame, l3).map(Some),
        _ => Ok(None),
    }
}

/// The IP header of a packet a report carries from its IP header (a TR
/// 2.0 report's InType 4 or 5), cut where its reporter cut it: `l3` is 0,
/// `end` the IP packet's end or the bytes', whichever comes first (the
/// lengths past the cut cannot be checked). `Ok(None)`: neither IPv4 nor
/// IPv6.
pub fn reported_ip(packet: &[u8]) -> Result<Option<IpLocation>, ParseError> {
    match packet.first().map(|byte| byte >> 4) {
        Some(4) => ipv4_checked(packet, 0, Whole::Cut).map(Some),
        Some(6) => ipv6_checked(packet, 0, Whole::Cut).map(Some),
        _ => Ok(None),
    }
}

/// [`ip`] for IPv4 only: `Ok(None)` for any other frame.
#[inline]
pub fn ipv4(frame: &[u8]) -> Result<Option<IpLocation>, ParseError> {
    match l2(frame)? {
        (EtherType::Ipv4, l3) => ipv4_at(frame, l3).map(Some),
        _ => Ok(None),
    }
}

/// [`ip`] for IPv6 only: `Ok(None)` for any other frame.
pub fn ipv6(frame: &[u8]) -> Result<Option<IpLocation>, ParseError> {
    match l2(frame)? {
        (EtherType::Ipv6, l3) => ipv6_at(frame, l3).map(Some),
        _ => Ok(None),
    }
}

/// The IPv4 header at `l3`: IHL and Total Length checked against the frame.
fn ipv4_at(frame: &[u8], l3: usize) -> Result<IpLocation, ParseError> {
    ipv4_checked(frame, l3, Whole::Checked)
}

/// Whether an IP header's length must fit the bytes ([`Whole::Checked`]:
/// a frame) or may run past them ([`Whole::Cut`]: a report's copy, cut
/// after its telemetry; the location then ends with the bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Whole {
    Checked,
    Cut,
}

#[inline(always)]
fn ipv4_checked(frame: &[u8], l3: usize, whole: Whole) -> Result<IpLocation, ParseError> {
    let bytes = crate::bytes::after(frame, l3, Layer::Ipv4, 20)?;
    let (header, _) = Ipv4Header::ref_from_prefix(bytes)
        .map_err(|_| ParseError::truncated(Layer::Ipv4, l3, 20, frame.len()))?;
    if header.version() != 4 {
        return Err(ParseError::UnknownVersion { layer: Layer::Ipv4, offset: l3, value: header.version() });
    }
    let header_len = header.header_len();
    let total_len = usize::from(header.total_len.get());
    if header_len < 20 {
        return Err(ParseError::BadLength { layer: Layer::Ipv4, offset: l3, value: header_len });
    }
    if total_len < header_len {
        return Err(ParseError::BadLength { layer: Layer::Ipv4, offset: l3 + 2, value: total_len });
    }
    let total_len = match whole {
        Whole::Checked if total_len > bytes.len() => {
            return Err(ParseError::truncated(Layer::Ipv4, l3, total_len, frame.len()))
        }
        Whole::Cut if header_len > bytes.len() => {
            return Err(ParseError::truncated(Layer::Ipv4, l3, header_len, frame.len()))
        }
        Whole::Cut => total_len.min(bytes.len()),
        Whole::Checked => total_len,
    };
    let fragment = match (header.fragment_offset(), header.more_fragments()) {
        (0, false) => Fragment::Whole,
        (0, true) => Fragment::First,
        _ => Fragment::Later,
    };
    Ok(IpLocation {
        version: IpVersion::V4,
        l3,
        l4: l3 + header_len,
        end: l3 + total_len,
        protocol: header.protocol,
        tos: header.tos,
        fragment,
        next_header_at: l3 + 9,
    })
}

/// The IPv6 header at `l3` and its extension headers. Refused: headers cut
/// short or lying (a Payload Length past the frame, an extension past it,
/// a Hop-by-Hop header not first).
fn ipv6_at(frame: &[u8], l3: usize) -> Result<IpLocation, ParseError> {
    ipv6_checked(frame, l3, Whole::Checked)
}

#[inline(always)]
fn ipv6_checked(frame: &[u8], l3: usize, whole: Whole) -> Result<IpLocation, ParseError> {
    let packet = crate::bytes::after(frame, l3, Layer::Ipv6, 40)?;
    let walk = crate::wire::ipv6::walk_extensions(packet).map_err(|e| e.shifted(l3))?;
    let end = l3 + crate::wire::ipv6::HEADER_LEN + usize::from(walk.header.payload_len);
    let end = match whole {
        Whole::Checked if end > frame.len() => {
            return Err(ParseError::truncated(Layer::Ipv6, l3, end - l3, frame.len() - l3))
        }
        Whole::Checked => end,
        Whole::Cut => end.min(frame.len()),
    };
    // Offset 0 with M clear is an atomic fragment: the whole datagram
    // (RFC 6946), its L4 lengths those of an unfragmented packet.
    let fragment = match walk.fragment.map(|word| (word >> 3, word & 1 == 1)) {
        None | Some((0, false)) => Fragment::Whole,
        Some((0, true)) => Fragment::First,
        Some(_) => Fragment::Later,
    };
    Ok(IpLocation {
        version: IpVersion::V6,
        l3,
        l4: l3 + walk.upper_at,
        end,
        protocol: walk.protocol,
        tos: walk.header.traffic_class,
        fragment,
        next_header_at: l3 + walk.next_header_at,
    })
}

/// The Ethernet header and up to two VLAN tags: the EtherType they lead
/// to and the offset of what follows.
pub(crate) fn l2(frame: &[u8]) -> Result<(EtherType, usize), ParseError> {
    let (ethernet, _) = EthernetHeader::ref_from_prefix(frame)
        .map_err(|_| ParseError::truncated(Layer::Ethernet, 0, 14, frame.len()))?;
    let mut ethertype = EtherType::from(ethernet.ethertype.get());
    let mut l3 = size_of::<EthernetHeader>();
    for _ in 0..crate::wire::ethernet::MAX_VLAN_TAGS {
        if !matches!(ethertype, EtherType::Vlan | EtherType::QinQ) {
            break;
        }
        let (tag, _) = VlanTag::ref_from_prefix(crate::bytes::after(frame, l3, Layer::Vlan, 4)?)
            .map_err(|_| ParseError::truncated(Layer::Vlan, l3, 4, frame.len()))?;
        ethertype = EtherType::from(tag.ethertype.get());
        l3 += size_of::<VlanTag>();
    }
    Ok((ethertype, l3))
}

/// The L4 header of a first fragment (or unfragmented packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Udp { src_port: u16, dst_port: u16, length: u16 },
    Tcp { src_port: u16, dst_port: u16, header_len: usize },
}

impl Default for L4 {
    fn default() -> Self {
        L4::Udp { src_port: 0, dst_port: 0, length: 0 }
    }
}

impl L4 {
    #[inline]
    pub fn ports(&self) -> (u16, u16) {
        match *self {
            L4::Udp { src_port, dst_port, .. } | L4::Tcp { src_port, dst_port, .. } => (src_port, dst_port),
        }
    }
}

/// The first 42 bytes of the fast-path frame: Ethernet II, IPv4 without
/// options, and the first 8 bytes of TCP or UDP (ports, then UDP's Length
/// or TCP's Sequence Number).
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct FastPrefix {
    ethernet: EthernetHeader,
    ip: Ipv4Header,
    l4: UdpHeader,
}
const _: () = assert!(size_of::<FastPrefix>() == 42);

/// Offsets of the fast-path frame's headers.
const FAST_L3: usize = size_of::<EthernetHeader>();
const FAST_L4: usize = FAST_L3 + size_of::<Ipv4Header>();

/// The walk for the fast-path frame: Ethernet II without VLAN tags, IPv4
/// without options and not fragmented, TCP or UDP with lengths that agree.
/// Its headers lie at fixed offsets, so a few compares on one fixed-size
/// view replace the general walk. `None` for any other frame: the caller
/// then takes [`ipv4`] and [`l4`], which give these frames the same answer.
#[inline(always)]
pub fn fast(frame: &[u8]) -> Option<(IpLocation, L4)> {
    let (h, _) = FastPrefix::ref_from_prefix(frame).ok()?;
    if h.ethernet.ethertype.get() != 0x0800 || h.ip.version_ihl != 0x45 {
        return None;
    }
    // Flags and Fragment Offset: MF or an offset means a fragment.
    if h.ip.flags_frag.get() & 0x3fff != 0 {
        return None;
    }
    let end = FAST_L3 + usize::from(h.ip.total_len.get());
    if end > frame.len() || end < size_of::<FastPrefix>() {
        return None;
    }
    let (src_port, dst_port) = (h.l4.src_port.get(), h.l4.dst_port.get());
    let l4 = match h.ip.protocol {
        PROTO_UDP => {
            let length = h.l4.length.get();
            if usize::from(length) != end - FAST_L4 {
                return None;
            }
            L4::Udp { src_port, dst_port, length }
        }
        PROTO_TCP => {
            let (tcp, _) = TcpHeader::ref_from_prefix(frame.get(FAST_L4..)?).ok()?;
            let header_len = tcp.header_len();
            if header_len < tcp::MIN_HEADER_LEN || FAST_L4 + header_len > end {
                return None;
            }
            L4::Tcp { src_port, dst_port, header_len }
        }
        _ => return None,
    };
    let ip = IpLocation {
        version: IpVersion::V4,
        l3: FAST_L3,
        l4: FAST_L4,
        end,
        protocol: h.ip.protocol,
        tos: h.ip.tos,
        fragment: Fragment::Whole,
        next_header_at: FAST_L3 + 9,
    };
    Some((ip, l4))
}

/// Reads the TCP or UDP header at `ip.l4`. `Ok(None)` for other protocols.
/// A UDP Length must cover its header and, in an unfragmented packet, equal
/// the IP payload length (at least that in a first fragment); a TCP Data
/// Offset must fit in the payload.
#[inline]
pub fn l4(frame: &[u8], ip: &IpLocation) -> Result<Option<L4>, ParseError> {
    upper_l4(frame, &Upper { at: ip.l4, end: ip.end, protocol: ip.protocol, fragmented: ip.is_fragment() })
}

/// Where an upper-layer header sits, whatever the IP version.
struct Upper {
    at: usize,
    end: usize,
    protocol: u8,
    fragmented: bool,
}

#[inline]
fn upper_l4(frame: &[u8], ip: &Upper) -> Result<Option<L4>, ParseError> {
    let layer = if ip.protocol == PROTO_UDP { Layer::Udp } else { Layer::Tcp };
    let payload = frame
        .get(ip.at..ip.end)
        .ok_or_else(|| ParseError::truncated(layer, ip.at, ip.end - ip.at, frame.len()))?;
    match ip.protocol {
        PROTO_UDP => {
            let (header, _) = UdpHeader::ref_from_prefix(payload)
                .map_err(|_| ParseError::truncated(Layer::Udp, ip.at, udp::HEADER_LEN, ip.end))?;
            let length = header.length.get();
            let fragmented = ip.fragmented;
            if usize::from(length) < udp::HEADER_LEN
                || (!fragmented && usize::from(length) != payload.len())
                || (fragmented && usize::from(length) < payload.len())
            {
                return Err(ParseError::BadLength {
                    layer: Layer::Udp,
                    offset: ip.at + 4,
                    value: usize::from(length),
                });
            }
            Ok(Some(L4::Udp { src_port: header.src_port.get(), dst_port: header.dst_port.get(), length }))
        }
        PROTO_TCP => {
            let (header, _) = TcpHeader::ref_from_prefix(payload)
                .map_err(|_| ParseError::truncated(Layer::Tcp, ip.at, tcp::MIN_HEADER_LEN, ip.end))?;
            let header_len = header.header_len();
            if header_len < tcp::MIN_HEADER_LEN {
                return Err(ParseError::BadLength {
                    layer: Layer::Tcp,
                    offset: ip.at + 12,
                    value: header_len,
                });
            }
            if header_len > payload.len() {
                return Err(ParseError::truncated(Layer::Tcp, ip.at, header_len, ip.end));
            }
            Ok(Some(L4::Tcp { src_port: header.src_port.get(), dst_port: header.dst_port.get(), header_len }))
        }
        _ => Ok(None),
    }
}

/// The original L4 header after an INT block carried over UDP (from `at` to
/// the end of the IP payload), of the `protocol` the block names (INT 0.5's
/// tail, INT 2.1's shim with NPT 2): a header that the restored packet can
/// stand on (a UDP Length equal to what is left, or at least that in a
/// first fragment; a TCP Data Offset that fits). Returns its ports.
pub(crate) fn l4_at(
    frame: &[u8],
    protocol: u8,
    at: usize,
    ip: &IpLocation,
) -> Result<(u16, u16), ParseError> {
    let end = ip.end;
    let layer = if protocol == PROTO_UDP { Layer::Udp } else { Layer::Tcp };
    let inner = frame.get(at..end).ok_or_else(|| ParseError::truncated(layer, at, 8, end))?;
    match protocol {
        PROTO_UDP => {
            let (udp, _) = UdpHeader::ref_from_prefix(inner)
                .map_err(|_| ParseError::truncated(Layer::Udp, at, crate::wire::udp::HEADER_LEN, end))?;
            let length = usize::from(udp.length.get());
            if length < inner.len() || (length > inner.len() && ip.fragment != Fragment::First) {
                return Err(ParseError::BadLength { layer: Layer::Udp, offset: at + 4, value: length });
            }
            Ok((udp.src_port.get(), udp.dst_port.get()))
        }
        PROTO_TCP => {
            let (tcp, _) = TcpHeader::ref_from_prefix(inner)
                .map_err(|_| ParseError::truncated(Layer::Tcp, at, crate::wire::tcp::MIN_HEADER_LEN, end))?;
            let header_len = tcp.header_len();
            if header_len < crate::wire::tcp::MIN_HEADER_LEN || header_len > inner.len() {
                return Err(ParseError::BadLength { layer: Layer::Tcp, offset: at + 12, value: header_len });
            }
            Ok((tcp.src_port.get(), tcp.dst_port.get()))
        }
        other => Err(ParseError::UnknownType { layer: Layer::IntTail, offset: at - 4, value: other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::craft::{L4Spec, PacketSpec};

    /// What the general walk says of a frame the common walk could take.
    fn general(frame: &[u8]) -> Option<(IpLocation, L4)> {
        let ip = ipv4(frame).ok()??;
        if ip.is_fragment() {
            return None;
        }
        Some((ip, l4(frame, &ip).ok()??))
    }

    fn frames() -> Vec<Vec<u8>> {
        let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let mut specs = vec![
            PacketSpec::udp(a, b, 1, 2, 22),
            PacketSpec::udp(a, b, 1, 2, 1),
            PacketSpec::tcp(a, b, 1, 2, 10),
        ];
        let mut with_options = PacketSpec::tcp(a, b, 1, 2, 4);
        if let L4Spec::Tcp { options, .. } = &mut with_options.l4 {
            *options = vec![1, 1, 1, 0];
        }
        specs.push(with_options);
        specs.iter().map(|spec| spec.build()).collect()
    }

    /// Every one-byte change and cut of UDP and TCP frames: where the fast
    /// walk answers, the general walk gives the same locations; where it
    /// does not, the frame is not of the fast path's shape. It takes the frames
    /// as built.
    #[test]
    fn common_walk_agrees_with_the_general_walk() {
        let mut taken = 0;
        for frame in frames() {
            assert_eq!(fast(&frame), general(&frame), "as built");
            assert!(fast(&frame).is_some());
            for at in 0..frame.len() {
                for value in [0x00, 0x01, 0x06, 0x08, 0x11, 0x20, 0x40, 0x45, 0x46, 0x50, 0x81, 0xff] {
                    let mut changed = frame.clone();
                    changed[at] = value;
                    if let Some(found) = fast(&changed) {
                        assert_eq!(Some(found), general(&changed), "byte {at} = {value:#x}");
                        taken += 1;
                    }
                }
                // Cut into its datagram, a frame is the general walk's
                // (which calls it truncated); cut into its padding, both
                // take it.
                let cut = &frame[..at];
                assert_eq!(fast(cut), general(cut), "cut to {at}");
                assert_eq!(
                    fast(cut).is_some(),
                    at >= 14 + usize::from(u16::from_be_bytes([frame[16], frame[17]]))
                );
            }
        }
        assert!(taken > 500, "the common walk took only {taken} changed frames");
    }

    /// The shapes the common walk leaves to the general one.
    #[test]
    fn common_walk_leaves_vlans_options_and_fragments() {
        let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let tagged = PacketSpec { vlan: Some(7), ..PacketSpec::udp(a, b, 1, 2, 20) }.build();
        let options = PacketSpec { ip_options: vec![1, 1, 1, 0], ..PacketSpec::udp(a, b, 1, 2, 20) }.build();
        let mut first_fragment = PacketSpec::udp(a, b, 1, 2, 20).build();
        first_fragment[20] |= 0x20;
        for frame in [tagged, options, first_fragment] {
            assert_eq!(fast(&frame), None);
            assert!(ipv4(&frame).unwrap().is_some(), "the general walk still reads it");
        }
    }

    /// Ethernet (with a VLAN tag if `vlan`), IPv6 2001:db8::1 -> ::2,
    /// Traffic Class 0x5c, with `extensions` (Next Header and bytes each),
    /// then UDP 5000 -> 6000 with 4 bytes of payload.
    fn ipv6_frame(vlan: bool, extensions: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 5000, 6000, 4);
        spec.tos = 0x5c;
        spec.vlan = vlan.then_some(5);
        if let Some(v6) = spec.ipv6.as_mut() {
            v6.extensions = extensions.to_vec();
        }
        spec.build()
    }

    #[test]
    fn ipv6_frames_are_walked_to_their_l4_header() {
        use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HOP_BY_HOP};
        let options = vec![0, 0, 1, 4, 0, 0, 0, 0];
        let frame =
            ipv6_frame(true, &[(HOP_BY_HOP, options.clone()), (DESTINATION_OPTIONS, options.clone())]);
        let ip = ipv6(&frame).unwrap().unwrap();
        assert_eq!((ip.l3, ip.l4, ip.end, ip.protocol, ip.tos), (18, 74, frame.len(), PROTO_UDP, 0x5c));
        assert_eq!(ip.next_header_at, 66, "the Destination Options header names UDP");
        assert_eq!((ip.version, ip.fragment), (IpVersion::V6, Fragment::Whole));
        assert_eq!(ip, super::ip(&frame).unwrap().unwrap());
        assert_eq!(l4(&frame, &ip).unwrap(), Some(L4::Udp { src_port: 5000, dst_port: 6000, length: 12 }));
        assert_eq!(ipv4(&frame), Ok(None), "not IPv4");
        let plain = ipv6_frame(false, &[]);
        assert_eq!(ipv6(&plain).unwrap().unwrap().next_header_at, 14 + 6);
        let fragment = ipv6_frame(false, &[(FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 9])]);
        assert_eq!(ipv6(&fragment).unwrap().unwrap().fragment, Fragment::First);
        // An atomic fragment (offset 0, M clear) is a whole datagram: its
        // UDP Length must match what follows (a sink once restored one
        // whose UDP Length overran the packet).
        let atomic = ipv6_frame(false, &[(FRAGMENT, vec![0, 0, 0, 0, 0, 0, 0, 9])]);
        let ip = ipv6(&atomic).unwrap().unwrap();
        assert_eq!(ip.fragment, Fragment::Whole);
        let mut overrun = atomic.clone();
        overrun[ip.l4 + 4..ip.l4 + 6].copy_from_slice(&60u16.to_be_bytes());
        assert!(l4(&overrun, &ipv6(&overrun).unwrap().unwrap()).is_err(), "UDP Length past the packet");
        let ipv4_frame = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 8).build();
        assert_eq!(ipv6(&ipv4_frame), Ok(None), "not IPv6");
    }

    #[test]
    fn lying_ipv6_lengths_are_refused() {
        let frame = ipv6_frame(false, &[]);
        for cut in 14..frame.len() {
            assert!(ipv6(&frame[..cut]).is_err(), "cut {cut}");
        }
        // A UDP Length that disagrees with Payload Length.
        let mut udp = frame.clone();
        udp[14 + 40 + 5] = 20;
        let ip = ipv6(&udp).unwrap().unwrap();
        assert!(matches!(l4(&udp, &ip), Err(ParseError::BadLength { layer: Layer::Udp, .. })));
    }
}
