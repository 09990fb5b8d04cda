//! An IPv6 frame's extension-header options as etherparse slices them: a
//! reader nobody here wrote, the judge of where our IOAM code puts its
//! options. Shared by int-node's end-to-end tests (tests/common) and
//! int-core's (int-core/tests/ioam.rs includes this file by path: it
//! imports nothing but etherparse, a dev-dependency of both, so neither
//! crate's tests depend on the other's helpers).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use etherparse::{Ipv6ExtensionSlice, NetSlice, SlicedPacket};

/// The options of every Hop-by-Hop header (after its Next Header and
/// length), in order; empty where there is none.
pub fn hop_by_hop(frame: &[u8]) -> Vec<u8> {
    let packet = SlicedPacket::from_ethernet(frame).unwrap();
    let Some(NetSlice::Ipv6(ip)) = packet.net else { panic!("not IPv6") };
    let mut options = Vec::new();
    for extension in ip.extensions().clone().into_iter() {
        if let Ipv6ExtensionSlice::HopByHop(hop) = extension {
            options.extend_from_slice(hop.payload());
        }
    }
    options
}

/// The options of the Destination Options header (after its Next Header
/// and length); the header must be the last before the upper layer.
pub fn destination_options(frame: &[u8]) -> Vec<u8> {
    let packet = SlicedPacket::from_ethernet(frame).unwrap();
    assert!(packet.transport.is_some(), "etherparse reads the upper layer after it");
    let Some(NetSlice::Ipv6(ip)) = packet.net else { panic!("not IPv6") };
    let last = ip.extensions().clone().into_iter().last().expect("extension headers");
    let Ipv6ExtensionSlice::DestinationOptions(options) = last else {
        panic!("the last extension header is not Destination Options: {last:?}")
    };
    options.payload().to_vec()
}
