//! IOAM's roles over generated IPv6 packets (extension headers, VLAN tags,
//! TCP and UDP): `strip(push^n(insert(p))) == p`, each node's element
//! read back in order, Overflow exactly when the slots run out; etherparse
//! walks and checks every packet on the way; bytes changed anywhere are
//! refused or give back a packet coherent again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;
#[path = "../../tests/common/ipv6_options.rs"]
mod ipv6_options;

use common::{etherparse_verdict, ipv6_spec, packet_v4_v6, verify_checksums_as, zero_udp, Buffer};
use int_core::ioam::e2e::E2eType;
use int_core::ioam::node::NodeData;
use int_core::ioam::trace::{TraceHeaderRepr, TraceType};
use int_core::ioam::{
    sink,
    source::{self, Encapped, Plan},
    transit::{self, Transited},
};
use int_core::locate;
use proptest::prelude::*;

/// Trace types of the defined bits a software node fills (bits 0-11),
/// and sometimes an undefined one (a word of all-ones each).
fn trace_type() -> impl Strategy<Value = TraceType> {
    (1u32..0x1000, any::<bool>()).prop_map(|(defined, undefined)| {
        let bits = (defined << 12) | if undefined { 1 << 2 } else { 0 };
        TraceType::from_bits_retain(bits)
    })
}

/// What the Edge-to-Edge option carries: nothing (no option), a 32- or
/// 64-bit number, timestamps with or without one.
fn e2e_type() -> impl Strategy<Value = E2eType> {
    prop_oneof![
        Just(E2eType::empty()),
        Just(E2eType::SEQUENCE_32),
        Just(E2eType::SEQUENCE_64),
        Just(E2eType::SEQUENCE_32 | E2eType::TIMESTAMP_SECONDS | E2eType::TIMESTAMP_FRACTION),
        Just(E2eType::TIMESTAMP_SECONDS | E2eType::TIMESTAMP_FRACTION),
    ]
}

fn plan(trace_type: TraceType, nodes: usize) -> Plan {
    let header = TraceHeaderRepr {
        namespace: 0x2b,
        node_len: trace_type.node_len() as u8,
        trace_type,
        ..Default::default()
    };
    Plan { header, nodes, max_ip_len: 9000, e2e: E2eType::empty() }
}

/// Node `n`'s element: every field it has, told apart by `n`.
fn node(n: u32) -> NodeData {
    NodeData {
        node_id: Some(n),
        ingress_if: Some(n as u16),
        egress_if: Some(n as u16 + 1),
        timestamp_seconds: Some(1_700_000_000 + n),
        timestamp_fraction: Some(n * 1000),
        transit_delay: Some(n * 10),
        namespace_data: Some(0x4e53),
        queue_depth: Some(n * 3),
        checksum_complement: None,
        node_id_wide: Some(u64::from(n) << 32),
        ingress_if_wide: Some(n << 8),
        egress_if_wide: Some(n << 9),
        namespace_data_wide: Some(0x4e53_4e53),
        buffer_occupancy: Some(n * 5),
        hop_limit: None,
    }
}

/// `element` as a node with `trace_type` sees it on the wire: the fields
/// the type does not carry are gone, the Hop_Lim what the packet had.
fn as_carried(element: &NodeData, trace_type: TraceType, hop_limit: u8) -> NodeData {
    let mut out = [0u8; 128];
    let node = NodeData { hop_limit: Some(hop_limit), ..*element };
    node.emit(trace_type, &mut out).unwrap();
    NodeData::parse(trace_type, &out[..trace_type.node_len() * 4]).unwrap()
}

fn ipv6_packet() -> impl Strategy<Value = int_core::craft::PacketSpec> {
    (packet_v4_v6(), ipv6_spec()).prop_map(|(mut spec, v6)| {
        spec.ipv6 = Some(v6);
        spec
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn sink_of_transits_of_source_is_the_packet(
        spec in ipv6_packet(),
        trace_type in trace_type(),
        nodes in 1usize..6,
        transits in 0usize..7,
        e2e in e2e_type(),
        sequence in any::<u32>(),
    ) {
        let original = spec.build();
        let plan = Plan { e2e, ..plan(trace_type, nodes) };
        prop_assume!(plan.check().is_ok());
        let ip = locate::ipv6(&original).unwrap().unwrap();
        let hop_limit = original[ip.l3 + 7];
        let mut buffer = Buffer::new(&original);
        let number = |_: &[u8], _: &locate::IpLocation| Some(u64::from(sequence));
        let added = buffer.with(|f| source::insert(f, &plan, &node(1), number)).unwrap();
        prop_assert!(matches!(added, Encapped::Added(_)), "{:?}", added);
        for n in 0..transits {
            let expected = if n + 1 < nodes { Transited::Filled } else { Transited::Overflow };
            let pushed = buffer.with(|f| transit::push(f, plan.header.namespace, &node(n as u32 + 2)));
            prop_assert_eq!(pushed, Ok(expected));
            prop_assert_eq!(buffer.with(|f| transit::push(f, 7, &node(99))), Ok(Transited::NotTraced));
        }
        let traced = buffer.frame().to_vec();
        etherparse_verdict(&traced).map_err(TestCaseError::fail)?;
        verify_checksums_as(&traced, zero_udp(&spec)).map_err(TestCaseError::fail)?;
        let options = ipv6_options::hop_by_hop(&traced);
        prop_assert!(!options.is_empty(), "etherparse found no Hop-by-Hop header");
        prop_assert!(options.windows(2).any(|w| w == [0x31, plan.option_len() as u8 - 2]));
        let found = sink::find(&traced, plan.header.namespace).unwrap().unwrap();
        let whole = ip.fragment == locate::Fragment::Whole;
        prop_assert_eq!(found.e2e.is_some(), whole && !e2e.is_empty(), "the option where numbered");
        let numbered = whole && e2e.intersects(E2eType::SEQUENCE_32 | E2eType::SEQUENCE_64);
        prop_assert_eq!(found.sequence(), numbered.then_some(u64::from(sequence)));
        if let Some(e2e) = found.e2e.filter(|e| e.option.repr.e2e_type.contains(E2eType::TIMESTAMP_SECONDS)) {
            prop_assert_eq!(e2e.option.repr.timestamp_seconds, node(1).timestamp_seconds);
        }
        let filled = (transits + 1).min(nodes);
        prop_assert_eq!(found.trace.header.overflow(), transits + 1 > nodes);
        let read: Vec<NodeData> = found.nodes(&traced).collect();
        let expected: Vec<NodeData> = (1..=filled as u32).rev().map(|n| as_carried(&node(n), trace_type, hop_limit)).collect();
        prop_assert_eq!(read, expected);
        prop_assert!(buffer.with(|f| sink::strip(f, &found).is_some()));
        prop_assert_eq!(buffer.frame(), &original[..]);
    }

    /// One byte changed anywhere in a traced packet: refused, passed over,
    /// or, where read, given back as a packet whose headers agree again
    /// (the walk reads it, etherparse too): never a panic, never a slice past
    /// the frame.
    #[test]
    fn a_changed_byte_is_refused_or_gives_a_coherent_packet(
        spec in ipv6_packet(),
        trace_type in trace_type(),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
        e2e in e2e_type(),
    ) {
        let original = spec.build();
        let plan = Plan { e2e, ..plan(trace_type, 3) };
        prop_assume!(plan.check().is_ok());
        let mut buffer = Buffer::new(&original);
        buffer.with(|f| source::insert(f, &plan, &node(1), |_, _| Some(5))).unwrap();
        let mut traced = buffer.frame().to_vec();
        let at = at.index(traced.len());
        traced[at] = value;
        if let Ok(Some(found)) = sink::find(&traced, plan.header.namespace) {
            let _ = found.nodes(&traced).count();
            let mut changed = Buffer::new(&traced);
            prop_assert!(changed.with(|f| sink::strip(f, &found).is_some()));
            prop_assert!(locate::ipv6(changed.frame()).is_ok(), "a restored packet the walk refuses");
        }
        let _ = Buffer::new(&traced).with(|f| transit::push(f, plan.header.namespace, &node(2)));
    }
}

/// The generators give IPv6 packets the encapsulating node takes.
#[test]
fn the_generated_packets_are_mostly_traced() {
    common::assert_mostly_usable(ipv6_packet(), |spec| {
        let mut buffer = Buffer::new(&spec.build());
        matches!(
            buffer.with(|f| source::insert(f, &plan(TraceType::HOP_LIM_NODE_ID, 4), &node(1), |_, _| None)),
            Ok(Encapped::Added(_))
        )
    });
}

/// Every cut of a traced packet: refused or read within the bytes.
#[test]
fn every_cut_of_a_traced_packet_is_safe() {
    let spec = int_core::craft::PacketSpec::udp6(
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
        1,
        2,
        30,
    );
    let mut buffer = Buffer::new(&spec.build());
    buffer
        .with(|f| source::insert(f, &plan(TraceType::from_bits_retain(0xff_f000), 3), &node(1), |_, _| None))
        .unwrap();
    let traced = buffer.frame().to_vec();
    for cut in 0..traced.len() {
        if let Ok(Some(found)) = sink::find(&traced[..cut], 0x2b) {
            assert!(found.hbh + found.hbh_len <= cut);
        }
    }
}
