//! The IPv6 extension headers IOAM's roles walk and edit: a Hop-by-Hop
//! header's length, Pad1/PadN padding, the last Destination Options header
//! (the final destination's), the number of extension headers, and the
//! Payload Length. The walk that proved each header in range came first
//! (crate::locate); out of range, these read 0 and write nothing.

use crate::bytes::{byte, put};
use crate::locate::IpLocation;
use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HEADER_LEN as IPV6_LEN};

/// An options header in a packet: its offset and length, and the offset
/// of the Next Header that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OptionsHeader {
    pub(crate) at: usize,
    pub(crate) len: usize,
    pub(crate) chain_at: usize,
}
/// Writes an IPv6 header's Payload Length (the header at `l3`).
pub(crate) fn set_payload_len(bytes: &mut [u8], l3: usize, len: u16) {
    put(bytes, l3 + 4, &len.to_be_bytes());
}

/// The length of the Hop-by-Hop header at `at` (the walk checked it).
pub(crate) fn hop_by_hop_len(frame: &[u8], at: usize) -> usize {
    (usize::from(byte(frame, at + 1)) + 1) * 8
}

/// Whether `bytes` are Pad1 and PadN options only.
pub(crate) fn is_padding(bytes: &[u8]) -> bool {
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

/// The packet's last extension header if it is a Destination Options
/// header (the walk `ip` came from checked the chain).
pub(crate) fn last_destination_options(frame: &[u8], ip: &IpLocation) -> Option<OptionsHeader> {
    extension_chain(frame, ip).1
}

/// How many extension headers the packet has.
pub(crate) fn extension_count(frame: &[u8], ip: &IpLocation) -> usize {
    extension_chain(frame, ip).0
}

/// The packet's extension headers, walked again (the walk `ip` came
/// from checked the chain): how many, and the last if it is a
/// Destination Options header.
pub(crate) fn extension_chain(frame: &[u8], ip: &IpLocation) -> (usize, Option<OptionsHeader>) {
    let (mut kind, mut chain_at, mut at) = (byte(frame, ip.l3 + 6), ip.l3 + 6, ip.l3 + IPV6_LEN);
    let (mut count, mut last) = (0, None);
    while at < ip.l4 {
        let len = if kind == FRAGMENT { 8 } else { hop_by_hop_len(frame, at) };
        last = (kind == DESTINATION_OPTIONS).then_some(OptionsHeader { at, len, chain_at });
        (kind, chain_at, at, count) = (byte(frame, at), at, at + len, count + 1);
    }
    (count, last.filter(|doh| doh.at + doh.len == ip.l4))
}
