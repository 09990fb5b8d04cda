//! What a step comes to when it leaves a packet as it came, in every
//! protocol: why a source skips it ([`Skip`]), why a transit hop pushes
//! nothing onto it ([`NotPushed`]).

use crate::error::ParseError;
use crate::locate::{self, IpLocation, L4};

/// Why a packet leaves the source untouched. Each is counted by the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Neither IPv4 nor IPv6.
    NotIp,
    NotTcpUdp,
    /// A fragment, first or later: never instrumented (a later one has no
    /// L4 header; growing a first one would leave the later ones' offsets
    /// behind, and its L4 length and checksum cover the whole datagram).
    Fragment,
    /// A fragment that carries this domain's INT mark (DSCP encapsulation).
    MarkedFragment,
    /// Already carries this domain's INT mark or port: not instrumented twice.
    AlreadyMarked,
    /// The result would exceed the MTU.
    TooBig,
    /// The buffer has too little headroom (a node bug or a tiny mbuf).
    NoHeadroom,
    /// The headers lie; the packet is forwarded as it is.
    Malformed(ParseError),
}

/// Why a transit hop pushed nothing onto a packet, in either INT version
/// (it goes on unchanged but for `Malformed`, which the node's policy
/// handles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotPushed {
    /// No INT of the domain in the packet.
    NotInt,
    /// The block would pass what its length field can say.
    TooBig,
    /// No room in front of the frame to open.
    NoHeadroom,
    Malformed(ParseError),
}

/// The IP and TCP or UDP headers of a frame a source or an INT-XD node
/// may work on: unfragmented TCP or UDP over IPv4 or IPv6.
pub fn tcp_udp(frame: &[u8]) -> Result<(IpLocation, L4), Skip> {
    let ip = locate::ip(frame).map_err(Skip::Malformed)?.ok_or(Skip::NotIp)?;
    if !matches!(ip.protocol, locate::PROTO_TCP | locate::PROTO_UDP) {
        return Err(Skip::NotTcpUdp);
    }
    if ip.is_fragment() {
        return Err(Skip::Fragment);
    }
    let l4 = locate::l4(frame, &ip).map_err(Skip::Malformed)?.ok_or(Skip::NotTcpUdp)?;
    Ok((ip, l4))
}
