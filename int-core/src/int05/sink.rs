//! INT sink: recognise an INT packet, read and check its whole INT block,
//! then remove every INT byte and restore the original packet.
//!
//! Restoration, per encapsulation:
//! - DSCP (INT_05_OVER_TCP_UDP): IPv4 Total Length, UDP Length and the L4
//!   checksum shrink back (incrementally: a UDP checksum of 0 stays 0). Two
//!   kinds of tail arrive. An informative tail (INT 0.5, our source's
//!   `TailStyle::Informative`: its protocol and port are the packet's own)
//!   is covered by the L4 checksum, and the DSCP comes back from it. Any
//!   other tail is Host-INT's: its source writes zeros, and under the
//!   kernel's checksum offload the checksum completion lands in the tail's
//!   first two bytes; Host-INT's sink takes the tail to add nothing to the
//!   L4 checksum, and so does ours (subtracting it would leave the checksum
//!   off by that word). For those packets the mark bits are cleared, as
//!   Host-INT's own sink does. ECN is never touched.
//!   A tail of zeros reads the same either way. Any other tail that is not
//!   the packet's own is a guess, and the guess is checked: the L4 checksum
//!   must verify with the tail left out (Host-INT's completion), else with
//!   it covered (a peer's tail of other values), else the packet is
//!   malformed (`IntUnknownType` at the tail). A UDP checksum of 0 and a
//!   first fragment (whose checksum covers the whole datagram) have nothing
//!   to check and take Host-INT's reading.
//! - UDP (INT_05_EXTENSION_UDP): the extension UDP header and the block go;
//!   the IPv4 protocol comes back from the tail; the original L4 bytes were
//!   never changed.
//!
//! Where we differ from Host-INT: Host-INT clears the mark instead of
//! restoring the DSCP, and rewrites a UDP checksum of 0.

use crate::carrier::{self, Carrier};
use crate::checksum;
use crate::error::{Layer, ParseError};
use crate::flow::flow_key;
use crate::flow::FlowKey;
use crate::frame::FrameBuf;
use crate::int05::tail::HEADER_LEN as TAIL_LEN;
use crate::int05::{
    Domain, Encapsulation, MetadataHeaderRepr, ShapeCache, ShimType, SourceHop, Tail, TailRepr,
    EXTENSION_UDP_LEN,
};
use crate::locate::{self, Fragment, IpLocation, L4};

/// An INT packet found in a frame, with everything the sink needs after the
/// bytes are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extracted {
    /// The original flow (in the UDP encapsulation: protocol from the tail,
    /// ports from the inner L4 header).
    pub flow: FlowKey,
    pub shim_type: ShimType,
    pub header: MetadataHeaderRepr,
    pub sequence: Option<u32>,
    pub tail: TailRepr,
    /// The first hop (bottom of the stack), when there is one.
    pub source_hop: Option<SourceHop>,
    pub(crate) ip: IpLocation,
    pub(crate) carrier: Carrier,
    /// The carrier's L4 length as received.
    pub(crate) carrier_len: u16,
    /// Frame offset of the INT block's shim.
    pub block_at: usize,
    pub block_len: usize,
    /// Frame offset and length of everything the sink removes.
    pub(crate) remove_at: usize,
    pub(crate) remove_len: usize,
    /// In the DSCP encapsulation: whether the L4 checksum covers the tail
    /// (see the module notes).
    pub tail_covered: bool,
}

impl Extracted {
    /// Frame offset of the carrier header (UDP or TCP) in front of the
    /// block.
    pub fn carrier_at(&self) -> usize {
        match self.carrier {
            Carrier::Udp(at) | Carrier::Tcp(at) => at,
        }
    }

    pub fn l3(&self) -> usize {
        self.ip.l3
    }

    pub fn ip_version(&self) -> locate::IpVersion {
        self.ip.version
    }

    /// Bytes of the carrier header a latency report copies: 8 for UDP, the
    /// first 20 for TCP.
    pub fn carrier_report_len(&self) -> usize {
        match self.carrier {
            Carrier::Udp(_) => crate::wire::udp::HEADER_LEN,
            Carrier::Tcp(_) => crate::wire::tcp::MIN_HEADER_LEN,
        }
    }

    /// In the DSCP encapsulation: whether the tail holds the packet's own
    /// protocol and destination port (INT 0.5's informative tail, covered by
    /// the L4 checksum), not Host-INT's zeros or checksum completion.
    pub fn tail_informative(&self) -> bool {
        self.tail.protocol == self.ip.protocol && self.tail.dst_port == self.flow.dst_port
    }

    /// In the UDP encapsulation: frame offset of the original L4 header
    /// (after the block; the sink removes the extension header as well).
    pub fn inner_l4(&self) -> Option<usize> {
        (self.remove_at != self.block_at).then_some(self.block_at + self.block_len)
    }

    /// The flow's own L4 header, as a latency report copies it: frame
    /// offset and length (8 for UDP, the first 20 bytes of TCP). In the UDP
    /// encapsulation it is the original header after the block, not the
    /// extension UDP header (as Host-INT's sink daemon writes its reports).
    pub fn report_l4(&self) -> (usize, usize) {
        match self.inner_l4() {
            Some(at) if self.flow.protocol == locate::PROTO_TCP => (at, crate::wire::tcp::MIN_HEADER_LEN),
            Some(at) => (at, crate::wire::udp::HEADER_LEN),
            None => (self.carrier_at(), self.carrier_report_len()),
        }
    }

    /// Bytes the sink removes.
    pub fn removed_len(&self) -> usize {
        self.remove_len
    }
}

/// What a frame is to a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// An INT packet of this domain, checked.
    Int(Extracted),
    /// Not marked as INT of this domain (or not a well-formed IPv4 TCP/UDP
    /// packet, or a fragment after the first): forward as it is.
    NotInt,
    /// Marked, but what follows the L4 header is no INT shim (too short
    /// for one, or a type no INT 0.5 source writes): traffic that uses the
    /// mark for something else, such as RFC 8622's lower-effort DSCP 1.
    /// Forward as it is.
    MarkedNotInt,
}

/// Finds and checks the INT block of a frame. `Ok(None)`: not an INT packet
/// of this domain (forward as it is). `Err`: it is marked as INT and
/// carries an INT shim, but the headers or the block lie (the node applies
/// its malformed policy).
pub fn extract(frame: &[u8], config: &Domain) -> Result<Option<Extracted>, ParseError> {
    extract_with(frame, config, &mut ShapeCache::default())
}

/// [`extract`] with a [`ShapeCache`] kept across packets: the same answer,
/// and a block shaped like the last good one skips the header checks.
#[inline(always)]
pub fn extract_with(
    frame: &[u8],
    config: &Domain,
    shapes: &mut ShapeCache,
) -> Result<Option<Extracted>, ParseError> {
    Ok(match classify(frame, config, shapes)? {
        Arrival::Int(found) => Some(found),
        Arrival::NotInt | Arrival::MarkedNotInt => None,
    })
}

/// [`extract_with`], telling marked packets without INT from unmarked ones.
///
/// Always inlined into the node's packet loop: a call per packet costs a
/// stage 8-10% at 64 B (bench/README.md).
#[inline(always)]
pub fn classify(frame: &[u8], config: &Domain, shapes: &mut ShapeCache) -> Result<Arrival, ParseError> {
    let (ip, l4) = match locate::fast(frame) {
        Some((ip, l4)) if is_marked(&ip, config) => (ip, l4),
        Some(_) => return Ok(Arrival::NotInt),
        None => match walk(frame, config) {
            Some(found) => found,
            None => return Ok(Arrival::NotInt),
        },
    };
    let (block_at, carrier, carrier_len) = match (config.encapsulation, l4) {
        (Encapsulation::ExtensionUdp { port }, L4::Udp { dst_port, length, .. }) => {
            if dst_port != port {
                return Ok(Arrival::NotInt);
            }
            (ip.l4 + EXTENSION_UDP_LEN, Carrier::Udp(ip.l4), length)
        }
        (Encapsulation::ExtensionUdp { .. }, L4::Tcp { .. }) => return Ok(Arrival::NotInt),
        (Encapsulation::OverTcpUdp { .. }, L4::Udp { length, .. }) => {
            (ip.l4 + crate::wire::udp::HEADER_LEN, Carrier::Udp(ip.l4), length)
        }
        (Encapsulation::OverTcpUdp { .. }, L4::Tcp { header_len, .. }) => {
            (ip.l4 + config.tcp_placement.offset(header_len), Carrier::Tcp(ip.l4), ip.payload_len() as u16)
        }
    };
    // Marked, with no room for a shim where INT would be: not INT.
    let Some(region) = frame.get(block_at..ip.end).filter(|r| starts_with_a_shim(r)) else {
        return Ok(Arrival::MarkedNotInt);
    };
    let block = shapes.parse(region, Tail::Present).map_err(|e| e.shifted(block_at))?;
    let tail = block.tail;
    let block_len = block.len;
    let after = block_at + block_len;
    let tail_covered = match config.encapsulation {
        Encapsulation::OverTcpUdp { .. } => {
            let informative = tail.protocol == ip.protocol && tail.dst_port == l4.ports().1;
            tail_covered(frame, &ip, l4, after - TAIL_LEN, informative)?
        }
        Encapsulation::ExtensionUdp { .. } => false,
    };
    let (flow, remove_at, remove_len) = match config.encapsulation {
        Encapsulation::ExtensionUdp { .. } => {
            let (src_port, dst_port) = locate::l4_at(frame, tail.protocol, after, &ip)?;
            (flow_key(frame, &ip, tail.protocol, src_port, dst_port), ip.l4, EXTENSION_UDP_LEN + block_len)
        }
        Encapsulation::OverTcpUdp { .. } => {
            if let L4::Tcp { header_len, .. } = l4 {
                // The TCP header must fit in what stays once the block is
                // gone: a Data Offset that reaches into the INT block would
                // restore a segment whose header overruns it.
                if ip.l4 + header_len + block_len > ip.end {
                    return Err(ParseError::BadLength {
                        layer: Layer::Tcp,
                        offset: ip.l4 + 12,
                        value: header_len,
                    });
                }
            }
            let (src_port, dst_port) = l4.ports();
            (flow_key(frame, &ip, ip.protocol, src_port, dst_port), block_at, block_len)
        }
    };
    Ok(Arrival::Int(Extracted {
        flow,
        shim_type: block.shim_type,
        header: block.header,
        sequence: block.sequence,
        tail,
        source_hop: block.source_hop,
        ip,
        carrier,
        carrier_len,
        block_at,
        block_len,
        remove_at,
        remove_len,
        tail_covered,
    }))
}

/// Whether the L4 checksum covers the tail at `tail_at`: the packet's own
/// (informative) tail yes, zeros either way, any other by the checksum's
/// own word (module notes); `Err` where no reading verifies.
fn tail_covered(
    frame: &[u8],
    ip: &IpLocation,
    l4: L4,
    tail_at: usize,
    informative: bool,
) -> Result<bool, ParseError> {
    let truncated = || ParseError::truncated(Layer::IntTail, tail_at, TAIL_LEN, ip.end);
    let tail = frame.get(tail_at..tail_at + TAIL_LEN).ok_or_else(truncated)?;
    let no_checksum = matches!(l4, L4::Udp { .. }) && frame.get(ip.l4 + 6..ip.l4 + 8) == Some(&[0, 0]);
    if informative || tail.iter().all(|b| *b == 0) || ip.is_fragment() || no_checksum {
        return Ok(informative);
    }
    let pseudo = pseudo_header_sum(frame, ip).ok_or_else(truncated)?;
    let before = checksum::sum(pseudo, frame.get(ip.l4..tail_at).ok_or_else(truncated)?);
    let without = checksum::sum(before, frame.get(tail_at + TAIL_LEN..ip.end).ok_or_else(truncated)?);
    if checksum::fold(without) == 0xffff {
        return Ok(false);
    }
    if checksum::fold(checksum::sum(without, tail)) == 0xffff {
        return Ok(true);
    }
    Err(ParseError::UnknownType {
        layer: Layer::IntTail,
        offset: tail_at,
        value: tail.first().copied().ok_or_else(truncated)?,
    })
}

/// The L4 pseudo-header's sum: addresses, protocol, upper-layer length
/// (`None` for a frame shorter than the IP header it was located with).
fn pseudo_header_sum(frame: &[u8], ip: &IpLocation) -> Option<u32> {
    let addresses = match ip.version {
        locate::IpVersion::V4 => frame.get(ip.l3 + 12..ip.l3 + 20)?,
        locate::IpVersion::V6 => frame.get(ip.l3 + 8..ip.l3 + 40)?,
    };
    let length = ip.payload_len() as u32;
    Some(checksum::sum(0, addresses) + u32::from(ip.protocol) + (length >> 16) + (length & 0xffff))
}

/// Whether `region` is long enough for an INT shim and starts with a type an
/// INT 0.5 source writes (1, 2 or 3).
#[inline(always)]
pub(super) fn starts_with_a_shim(region: &[u8]) -> bool {
    region.len() >= crate::int05::shim::HEADER_LEN && matches!(region.first(), Some(1..=3))
}

/// Whether the IP header announces INT of this domain.
#[inline(always)]
fn is_marked(ip: &IpLocation, config: &Domain) -> bool {
    match config.encapsulation {
        Encapsulation::OverTcpUdp { .. } => {
            config.encapsulation.tos_is_marked(ip.tos)
                && matches!(ip.protocol, locate::PROTO_TCP | locate::PROTO_UDP)
        }
        Encapsulation::ExtensionUdp { .. } => ip.protocol == locate::PROTO_UDP,
    }
}

/// The general walk, for frames [`locate::fast`] does not take. A frame
/// whose Ethernet, IP or L4 header lies is not INT: INT is only ever
/// looked for behind headers that stand (the malformed policy is for INT
/// blocks). A first fragment may carry INT (a Host-INT source instruments
/// first fragments; stripping restores its original length, so the later
/// fragments line up again); later fragments have no L4 header.
#[inline(never)]
fn walk(frame: &[u8], config: &Domain) -> Option<(IpLocation, L4)> {
    let ip = locate::ip(frame).ok()??;
    if ip.fragment == Fragment::Later || !is_marked(&ip, config) {
        return None;
    }
    let l4 = locate::l4(frame, &ip).ok()??;
    Some((ip, l4))
}

/// Removes every INT byte found by [`extract`] and restores the original
/// headers. Returns the bytes removed, or `None` (frame unchanged) if
/// `found` does not describe this frame.
///
/// Always inlined into the node's packet loop: a call per packet costs a
/// stage 8-10% at 64 B (bench/README.md).
#[inline(always)]
pub fn strip(frame: &mut FrameBuf<'_>, found: &Extracted, config: &Domain) -> Option<usize> {
    let ip = found.ip;
    if found.remove_at + found.remove_len > ip.end || ip.end > frame.len() {
        return None;
    }
    // The tail counts in the L4 checksum only when it is informative (see
    // the module notes).
    let covered = if found.tail_covered { found.block_len } else { found.block_len - TAIL_LEN };
    let block_sum = checksum::sum(0, frame.frame().get(found.block_at..found.block_at + covered)?);
    if !frame.close_gap(found.remove_at, found.remove_len) {
        return None;
    }
    let bytes = frame.frame_mut();
    let removed = found.remove_len as u16;
    let new_len = ip.ip_len() - found.remove_len;
    match config.encapsulation {
        Encapsulation::ExtensionUdp { .. } => {
            carrier::rewrite_ip(bytes, &ip, ip.tos, new_len, found.tail.protocol);
        }
        Encapsulation::OverTcpUdp { .. } => {
            let tos = if found.tail_informative() {
                (found.tail.dscp << 2) | (ip.tos & 0x03)
            } else {
                ip.tos & !config.encapsulation.tos_mask()
            };
            carrier::rewrite_ip(bytes, &ip, tos, new_len, ip.protocol);
            found.carrier.update(bytes, found.carrier_len, found.carrier_len - removed, block_sum, 0);
        }
    }
    Some(found.remove_len)
}
