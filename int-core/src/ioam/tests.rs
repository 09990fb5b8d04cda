//! The three roles together on crafted frames: encapsulate, transit,
//! find, decapsulate, every byte back.

use std::net::Ipv6Addr;

use super::e2e::*;
use super::node::NodeData;
use super::sink::*;
use super::source::*;
use super::trace::{TraceHeaderRepr, TraceType, FLAG_OVERFLOW};
use super::transit::*;
use crate::craft::PacketSpec;
use crate::error::ParseError;
use crate::frame::FrameBuf;
use crate::locate::IpLocation;
use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HOP_BY_HOP, ROUTING};

const HEADROOM: usize = 128;

fn plan(nodes: usize) -> Plan {
    let header = TraceHeaderRepr {
        namespace: 123,
        node_len: 1,
        trace_type: TraceType::HOP_LIM_NODE_ID,
        ..Default::default()
    };
    Plan { header, nodes, max_ip_len: 1500, e2e: E2eType::empty() }
}

fn unnumbered(_: &[u8], _: &IpLocation) -> Option<u64> {
    None
}

fn udp6() -> Vec<u8> {
    let (a, b) = ("2001:db8::1".parse::<Ipv6Addr>().unwrap(), "2001:db8::2".parse().unwrap());
    PacketSpec::udp6(a, b, 1000, 2000, 20).build()
}

/// The frame in a buffer with headroom; `f` runs on it; the frame after.
fn with_headroom<R>(frame: &[u8], f: impl FnOnce(&mut FrameBuf<'_>) -> R) -> (Vec<u8>, R) {
    let mut buf = vec![0u8; HEADROOM + frame.len()];
    buf[HEADROOM..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buf, HEADROOM, frame.len()).unwrap();
    let result = f(&mut view);
    (view.frame().to_vec(), result)
}

/// `push` on a frame without headroom: a transit node fills a slot in
/// place, the frame keeps its length.
fn push_in(frame: &mut [u8], namespace: u16, node: &NodeData) -> Result<Transited, ParseError> {
    let len = frame.len();
    push(&mut FrameBuf::new(frame, 0, len).unwrap(), namespace, node)
}

fn node(id: u32) -> NodeData {
    NodeData { node_id: Some(id), ..Default::default() }
}

/// Without a Hop-by-Hop header: the header the kernel was sent in the
/// issue's check (PadN, the option at offset 4, two slots), this
/// node's element in the last slot.
#[test]
fn source_writes_the_header_the_kernel_reads() {
    let original = udp6();
    let (out, done) = with_headroom(&original, |f| insert(f, &plan(2), &node(0x0a0b0c), unnumbered));
    assert_eq!(done, Ok(Encapped::Added(24)));
    assert_eq!(out.len(), original.len() + 24);
    assert_eq!(out[14 + 6], HOP_BY_HOP, "IPv6 Next Header");
    assert_eq!(u16::from_be_bytes([out[18], out[19]]), 28 + 24, "Payload Length");
    let expected: [u8; 24] = [
        17, 2, 1, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x01, 0x80, 0x00, 0x00, 0x00, 0, 0, 0, 0, 64, 0x0a,
        0x0b, 0x0c,
    ];
    assert_eq!(out[54..78], expected);
    assert_eq!(out[78..], original[54..], "the upper layer as it was");
    let found = find(&out, 123).unwrap().unwrap();
    assert!(found.whole);
    assert_eq!(found.nodes(&out).collect::<Vec<_>>(), [NodeData { hop_limit: Some(64), ..node(0x0a0b0c) }]);
    let (back, done) = with_headroom(&out, |f| strip(f, &found).is_some());
    assert!(done);
    assert_eq!(back, original);
}

/// With a Hop-by-Hop header of the sender's: the option appended, the
/// header grown; filled by two transits, then the third finds no room.
#[test]
fn an_existing_header_gets_the_option_appended_and_keeps_its_own() {
    let mut spec = PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
    let router_alert = vec![0, 0, 5, 2, 0, 0, 1, 0];
    spec.ipv6.as_mut().unwrap().extensions.push((HOP_BY_HOP, router_alert.clone()));
    let original = spec.build();
    let (mut out, done) = with_headroom(&original, |f| insert(f, &plan(3), &node(1), unnumbered));
    assert_eq!(done, Ok(Encapped::Added(24)));
    assert_eq!(out[55], 3, "Hdr Ext Len: 8 + 24 bytes");
    assert_eq!(out[56..62], router_alert[2..], "the sender's option first");
    assert_eq!(out[62..64], [0x31, 22], "three slots: 4 + 8 + 12 bytes");
    assert_eq!(push_in(&mut out, 123, &node(2)), Ok(Transited::Filled));
    assert_eq!(push_in(&mut out, 123, &node(3)), Ok(Transited::Filled));
    assert_eq!(push_in(&mut out, 123, &node(4)), Ok(Transited::Overflow));
    assert_eq!(push_in(&mut out, 124, &node(4)), Ok(Transited::NotTraced));
    let found = find(&out, 123).unwrap().unwrap();
    assert!(!found.whole);
    assert_eq!(found.trace.header.flags, FLAG_OVERFLOW);
    let ids: Vec<_> = found.nodes(&out).map(|n| n.node_id.unwrap()).collect();
    assert_eq!(ids, [3, 2, 1], "newest first");
    let (back, done) = with_headroom(&out, |f| strip(f, &found).is_some());
    assert!(done);
    assert_eq!(back, original);
    let (_, again) = with_headroom(&out, |f| insert(f, &plan(3), &node(1), unnumbered));
    assert_eq!(again, Ok(Encapped::AlreadyTraced));
}

#[test]
fn what_does_not_fit_passes_as_it_is() {
    let original = udp6();
    let small = Plan { max_ip_len: 40 + 28 + 23, ..plan(2) };
    assert_eq!(
        with_headroom(&original, |f| insert(f, &small, &node(1), unnumbered)),
        (original.clone(), Ok(Encapped::TooBig))
    );
    let mut buf = original.clone();
    let len = buf.len();
    let mut tight = FrameBuf::new(&mut buf, 0, len).unwrap();
    assert_eq!(insert(&mut tight, &plan(2), &node(1), unnumbered), Ok(Encapped::NoHeadroom));
    assert_eq!(buf, original);
    let v4 = PacketSpec::udp("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), 1, 2, 9).build();
    assert_eq!(with_headroom(&v4, |f| insert(f, &plan(2), &node(1), unnumbered)).1, Ok(Encapped::NotIpv6));
}

/// A trace where no encapsulating node of ours puts it (the option in
/// the middle of the header) cannot be taken out without a trace: refused.
#[test]
fn a_trace_not_at_the_end_is_refused() {
    let original = udp6();
    let (mut out, _) = with_headroom(&original, |f| insert(f, &plan(1), &node(1), unnumbered));
    assert!(find(&out, 123).unwrap().unwrap().whole);
    // The PadN after the option becomes a Router Alert.
    assert_eq!(out[54 + 20..54 + 24], [1, 2, 0, 0]);
    out[54 + 20..54 + 24].copy_from_slice(&[0x05, 0x02, 0x00, 0x00]);
    assert!(find(&out, 123).is_err());
}

fn numbered(sequence: u64) -> impl FnOnce(&[u8], &IpLocation) -> Option<u64> {
    move |_, _| Some(sequence)
}

fn plan_numbered(nodes: usize) -> Plan {
    Plan { e2e: E2eType::SEQUENCE_32, ..plan(nodes) }
}

/// Numbered: the trace in a Hop-by-Hop header, the Edge-to-Edge option
/// in a Destination Options header of its own before the upper layer
/// (PadN, the option at offset 4: type 0x11, IOAM-Opt-Type 3,
/// namespace 123, E2E-Type bit 1, the number).
#[test]
fn the_number_rides_a_destination_option_before_the_upper_layer() {
    let original = udp6();
    let (out, done) = with_headroom(&original, |f| insert(f, &plan_numbered(1), &node(1), numbered(7)));
    assert_eq!(done, Ok(Encapped::Added(24 + 16)));
    assert_eq!(out[14 + 6], HOP_BY_HOP);
    assert_eq!(out[54], DESTINATION_OPTIONS, "the Hop-by-Hop header names the new header");
    let doh: [u8; 16] = [17, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 7];
    assert_eq!(out[78..94], doh);
    assert_eq!(out[94..], original[54..]);
    assert_eq!(u16::from_be_bytes([out[18], out[19]]), 28 + 40);
    let found = find(&out, 123).unwrap().unwrap();
    assert_eq!(found.sequence(), Some(7));
    assert_eq!(found.removed_len(), 40);
    assert_eq!(found.ip.l4, 94);
    let (back, done) = with_headroom(&out, |f| strip(f, &found).is_some());
    assert!(done);
    assert_eq!(back, original);
}

/// Behind the sender's own Hop-by-Hop, Routing and Destination Options
/// headers: the trace appended to the first, the option to the last.
#[test]
fn the_number_is_appended_to_the_packet_s_last_destination_options() {
    let mut spec = PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
    let extensions = &mut spec.ipv6.as_mut().unwrap().extensions;
    extensions.push((HOP_BY_HOP, vec![0, 0, 5, 2, 0, 0, 1, 0]));
    extensions.push((43, vec![0, 0, 4, 0, 0, 0, 0, 0]));
    extensions.push((DESTINATION_OPTIONS, vec![0, 0, 1, 4, 0, 0, 0, 0]));
    let original = spec.build();
    let (out, done) = with_headroom(&original, |f| insert(f, &plan_numbered(2), &node(1), numbered(9)));
    assert_eq!(done, Ok(Encapped::Added(24 + 16)));
    let found = find(&out, 123).unwrap().unwrap();
    let e2e = found.e2e.unwrap();
    assert!(!found.whole && !e2e.whole);
    assert_eq!((e2e.doh, e2e.doh_len, e2e.option.option), (54 + 32 + 8, 24, 8));
    assert_eq!(out[e2e.doh..e2e.doh + 2], [17, 2], "the header grew by the option");
    assert_eq!(found.sequence(), Some(9));
    let (back, done) = with_headroom(&out, |f| strip(f, &found).is_some());
    assert!(done);
    assert_eq!(back, original);
}

/// A fragment takes the trace alone, and so does a packet the caller
/// has no number for (a full flow table).
#[test]
fn fragments_and_unnumbered_packets_take_the_trace_alone() {
    let mut spec = PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
    spec.ipv6.as_mut().unwrap().extensions.push((FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 5]));
    let fragment = spec.build();
    let asked = std::cell::Cell::new(false);
    let number = |_: &[u8], _: &IpLocation| {
        asked.set(true);
        Some(1)
    };
    let (out, done) = with_headroom(&fragment, |f| insert(f, &plan_numbered(1), &node(1), number));
    assert_eq!(done, Ok(Encapped::Added(24)));
    assert!(!asked.get(), "a fragment is not numbered");
    assert_eq!(find(&out, 123).unwrap().unwrap().e2e, None);
    let (out, done) = with_headroom(&udp6(), |f| insert(f, &plan_numbered(1), &node(1), unnumbered));
    assert_eq!(done, Ok(Encapped::Added(24)));
    assert_eq!(find(&out, 123).unwrap().unwrap().sequence(), None);
}

/// A packet whose own last Destination Options header already holds an
/// Edge-to-Edge option of the namespace is left as it is: a good one as
/// already traced, one that lies as malformed (either would be read as
/// ours at the decapsulating node).
#[test]
fn the_sender_s_own_option_of_the_namespace_is_not_traced_over() {
    let spec = |option: Vec<u8>| {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        spec.ipv6.as_mut().unwrap().extensions.push((DESTINATION_OPTIONS, option));
        spec.build()
    };
    let good = spec(vec![0, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1]);
    let (out, done) = with_headroom(&good, |f| insert(f, &plan_numbered(1), &node(1), numbered(2)));
    assert_eq!((out, done), (good, Ok(Encapped::AlreadyTraced)));
    let misaligned = spec(vec![0, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1, 0]);
    assert!(with_headroom(&misaligned, |f| insert(f, &plan(1), &node(1), unnumbered)).1.is_err());
}

fn udp6_with(extensions: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut spec = PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
    spec.ipv6.as_mut().unwrap().extensions.extend_from_slice(extensions);
    spec.build()
}

/// Every node's walk reads 8 extension headers: a packet the trace or
/// the number's header would take past them passes as it is (counted
/// too big), and one they leave at 8 is traced and reads back.
#[test]
fn no_trace_takes_a_packet_past_the_headers_a_walk_reads() {
    let padding = || (DESTINATION_OPTIONS, vec![0, 0, 1, 4, 0, 0, 0, 0]);
    let eight = udp6_with(&vec![padding(); 8]);
    let (out, done) = with_headroom(&eight, |f| insert(f, &plan(1), &node(1), unnumbered));
    assert_eq!((out, done), (eight, Ok(Encapped::TooBig)));
    let mut seven = vec![padding(); 6];
    seven.push((ROUTING, vec![0, 0, 4, 0, 0, 0, 0, 0]));
    let seven = udp6_with(&seven);
    let (out, done) = with_headroom(&seven, |f| insert(f, &plan_numbered(1), &node(1), numbered(1)));
    assert_eq!((out, done), (seven.clone(), Ok(Encapped::TooBig)), "the trace and the number: 9");
    let (out, done) = with_headroom(&seven, |f| insert(f, &plan(2), &node(1), unnumbered));
    assert_eq!(done, Ok(Encapped::Added(24)), "the trace alone: 8");
    let found = find(&out, 123).unwrap().unwrap();
    assert_eq!(push_in(&mut out.clone(), 123, &node(2)), Ok(Transited::Filled));
    assert_eq!(with_headroom(&out, |f| strip(f, &found).is_some()), (seven, true));
}

/// A trace of namespace 124 whose NodeLen disagrees with its trace
/// type is 124's nodes' business: ours pass it (no trace of ours),
/// the encapsulating node adds ours after it, and decapsulation takes
/// only ours out.
#[test]
fn another_namespace_s_lying_trace_passes_every_role() {
    let (mut theirs, _) = with_headroom(&udp6(), |f| insert(f, &plan(2), &node(1), unnumbered));
    theirs[54 + 8 + 1] = 124; // the namespace's low byte
    theirs[54 + 8 + 2] = 0x10; // NodeLen 2 for a one-word trace type
    assert_eq!(find(&theirs, 123), Ok(None));
    assert_eq!(push_in(&mut theirs.clone(), 123, &node(2)), Ok(Transited::NotTraced));
    let (ours, done) = with_headroom(&theirs, |f| insert(f, &plan(2), &node(3), unnumbered));
    assert_eq!(done, Ok(Encapped::Added(24)));
    let found = find(&ours, 123).unwrap().unwrap();
    assert_eq!(with_headroom(&ours, |f| strip(f, &found).is_some()), (theirs, true));
}

/// At the edge, what comes in the namespace's name from outside (a
/// trace with made-up nodes and its number behind the sender's own
/// Hop-by-Hop header, or a number alone) is removed as the
/// decapsulating node would: the sender's packet as it was sent.
#[test]
fn strip_removes_what_came_from_outside_in_our_name() {
    let sent = udp6_with(&[(HOP_BY_HOP, vec![0, 0, 5, 2, 0, 0, 1, 0])]);
    let (forged, _) = with_headroom(&sent, |f| insert(f, &plan_numbered(2), &node(666), numbered(5)));
    assert!(find(&forged, 123).unwrap().unwrap().e2e.is_some());
    assert_eq!(with_headroom(&forged, |f| strip_foreign(f, 123)), (sent.clone(), Ok(true)));
    assert_eq!(with_headroom(&forged, |f| strip_foreign(f, 124)), (forged.clone(), Ok(false)));
    let number_alone =
        udp6_with(&[(DESTINATION_OPTIONS, vec![0, 1, 1, 0, 0x11, 10, 0, 3, 0, 123, 0x40, 0, 0, 0, 0, 1])]);
    assert_eq!(with_headroom(&number_alone, |f| strip_foreign(f, 123)), (udp6_with(&[]), Ok(true)));
    // One that lies is refused, the frame unchanged.
    let mut lying = forged.clone();
    lying[54 + 8 + 6] = 0x10; // the trace's NodeLen: 2 words for 1
    assert!(with_headroom(&lying, |f| strip_foreign(f, 123)).1.is_err());
}

/// An option of the namespace that is not where our encapsulating
/// node puts it, or that lies, is refused with the packet.
#[test]
fn a_misplaced_or_lying_number_is_refused() {
    let (out, _) = with_headroom(&udp6(), |f| insert(f, &plan_numbered(1), &node(1), numbered(3)));
    let mut lying = out.clone();
    lying[78 + 5] = 6; // option length: 6 bytes of data, the number cut off
    lying[78 + 12..78 + 16].copy_from_slice(&[1, 2, 0, 0]);
    assert!(find(&lying, 123).is_err());
    let mut both_bits = out.clone();
    both_bits[78 + 10] = 0xc0;
    assert!(find(&both_bits, 123).is_err());
    let mut other = out;
    other[78 + 9] = 124; // another namespace's: passed over, left in
    assert_eq!(find(&other, 123).unwrap().unwrap().e2e, None);
}
