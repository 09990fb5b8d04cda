//! The IOAM encapsulating node's fast path writes what the general path
//! writes: every frame it takes among the fast-path frames, their one-byte
//! changes and cuts, gets the same bytes from `encap::insert`; the frames it
//! leaves are IPv4 or past the MTU, and a plan that numbers packets has no
//! fast path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::{fast_path_ipv6_specs, neighbours, Buffer};
use int_core::craft::PacketSpec;
use int_core::fast::FastFrame;
use int_core::ioam::e2e::E2eType;
use int_core::ioam::encap::{self, Encapped, Plan};
use int_core::ioam::fast_encap::FastEncap;
use int_core::ioam::node::NodeData;
use int_core::ioam::trace::{TraceHeaderRepr, TraceType};

fn plan(trace_type: TraceType, nodes: usize, max_ip_len: usize) -> Plan {
    let header = TraceHeaderRepr {
        namespace: 0x7b,
        node_len: trace_type.node_len() as u8,
        trace_type,
        ..Default::default()
    };
    Plan { header, nodes, max_ip_len, e2e: E2eType::empty() }
}

/// The encapsulating node's element as its stage writes it.
fn element() -> NodeData {
    NodeData {
        node_id: Some(0x0a_0b0c),
        ingress_if: Some(1),
        egress_if: Some(2),
        timestamp_seconds: Some(1_700_000_000),
        timestamp_fraction: Some(123_456),
        transit_delay: Some(2_500),
        queue_depth: None,
        node_id_wide: Some(0x0a0b_0c0d),
        ingress_if_wide: Some(1),
        egress_if_wide: Some(2),
        ..NodeData::default()
    }
}

fn frames() -> Vec<Vec<u8>> {
    let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7));
    let mut specs = fast_path_ipv6_specs(0x2b);
    specs.push(PacketSpec::udp(a, b, 4000, 53, 12));
    specs.iter().map(PacketSpec::build).collect()
}

/// For `plan`: how many frames the fast path took; each it took, the
/// general path wrote byte for byte the same.
fn agrees(plan: &Plan) -> usize {
    let fast = FastEncap::of(plan).expect("a plan without numbers has a fast path");
    let mut taken = 0;
    for base in frames() {
        for frame in neighbours(&base) {
            let Some(parts) = FastFrame::read(&frame, 0) else { continue };
            let mut mine = Buffer::new(&frame);
            let Some(done) = mine.with(|f| fast.insert(f, &parts, &element())) else {
                // Left to the general path, untouched.
                assert_eq!(mine.frame(), &frame[..]);
                continue;
            };
            let mut general = Buffer::new(&frame);
            let said = general.with(|f| encap::insert(f, plan, &element(), |_, _| None));
            assert_eq!(said, Ok(done), "{plan:?} {frame:02x?}");
            assert!(matches!(done, Encapped::Added(_)));
            assert_eq!(mine.frame(), general.frame(), "{plan:?} {frame:02x?}");
            taken += 1;
        }
    }
    taken
}

#[test]
fn fast_encap_writes_what_the_general_encap_writes() {
    let every = TraceType::HOP_LIM_NODE_ID
        | TraceType::INTERFACES
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION
        | TraceType::TRANSIT_DELAY
        | TraceType::QUEUE_DEPTH
        | TraceType::HOP_LIM_NODE_ID_WIDE
        | TraceType::INTERFACES_WIDE;
    // The node's default element (4 words), 8 slots: the benchmark's.
    let default = TraceType::HOP_LIM_NODE_ID
        | TraceType::INTERFACES
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION;
    for (trace_type, nodes) in [(default, 8), (every, 5), (every, 1), (TraceType::HOP_LIM_NODE_ID, 3)] {
        let taken = agrees(&plan(trace_type, nodes, 9000));
        // Most single changes leave an IPv6 frame of the fast path's shape.
        assert!(taken > 700, "{taken} frames for {trace_type:?} x {nodes}");
    }
    // Within an MTU that leaves the longer frames to the general path.
    // (IPv6 packets of 60 to 78 bytes and a trace of 144: some fit in 210.)
    let (within, all) = (agrees(&plan(default, 8, 210)), agrees(&plan(default, 8, 9000)));
    assert!(within > 100 && within < all, "{within} of {all} frames within an MTU of 210");
}

#[test]
fn a_numbering_plan_takes_the_general_path() {
    let numbered = Plan { e2e: E2eType::SEQUENCE_64, ..plan(TraceType::HOP_LIM_NODE_ID, 4, 9000) };
    assert_eq!(FastEncap::of(&numbered), None);
    let unwritable = plan(TraceType::HOP_LIM_NODE_ID, 0, 9000);
    assert_eq!(FastEncap::of(&unwritable), None);
}
