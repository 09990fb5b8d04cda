//! The IOAM encapsulating node's fast path writes what the general path
//! writes: every frame it takes among the fast-path frames, their one-byte
//! changes and cuts, gets the same bytes from `source::insert`; the frames it
//! leaves are IPv4 or past the MTU, and a plan that numbers packets has no
//! fast path. The decapsulating node's fast path reads what the general
//! path reads (`find`, the slots' figures, the flow) and restores the same
//! bytes (`sink::strip`), over traced frames, their one-byte changes and
//! cuts. The transit's fast path fills the slot or sets Overflow as
//! `transit::push` does, over the same frames and the untraced ones.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::{fast_path_ipv6_specs, neighbours, Buffer};
use int_core::craft::PacketSpec;
use int_core::fast::FastFrame;
use int_core::flow::FlowKey;
use int_core::hop_rule::HopFigures;
use int_core::ioam::e2e::E2eType;
use int_core::ioam::fast_sink::FastSink;
use int_core::ioam::fast_source::FastSource;
use int_core::ioam::fast_transit::FastTransit;
use int_core::ioam::node::NodeData;
use int_core::ioam::sink::{find, strip};
use int_core::ioam::source::{self, Encapped, Plan};
use int_core::ioam::trace::{TraceHeaderRepr, TraceType};
use int_core::ioam::transit::{push, Transited};
use int_core::ioam::TimestampFormat;

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
/// general path wrote byte for byte the same, asking for a number as
/// often (`number`: what the flow table gives, `None` when it is full).
fn agrees(plan: &Plan) -> usize {
    agrees_numbered(plan, None)
}

fn agrees_numbered(plan: &Plan, number: Option<u64>) -> usize {
    let fast = FastSource::of(plan).expect("a writable plan has a fast path");
    let mut taken = 0;
    for base in frames() {
        for frame in neighbours(&base) {
            let Some(parts) = FastFrame::read(&frame, 0) else { continue };
            let (mut fast_asked, mut general_asked) = (0, 0);
            let mut mine = Buffer::new(&frame);
            let Some(done) = mine.with(|f| {
                fast.insert(f, &parts, &element(), |_| {
                    fast_asked += 1;
                    number
                })
            }) else {
                // Left to the general path, untouched, no number spent.
                assert_eq!(mine.frame(), &frame[..]);
                assert_eq!(fast_asked, 0);
                continue;
            };
            let mut general = Buffer::new(&frame);
            let said = general.with(|f| {
                source::insert(f, plan, &element(), |_, _| {
                    general_asked += 1;
                    number
                })
            });
            assert_eq!(said, Ok(done), "{plan:?} {frame:02x?}");
            assert!(matches!(done, Encapped::Added(_)));
            assert_eq!(mine.frame(), general.frame(), "{plan:?} {frame:02x?}");
            assert_eq!(fast_asked, general_asked, "{plan:?} {frame:02x?}");
            taken += 1;
        }
    }
    taken
}

#[test]
fn fast_source_writes_what_the_general_source_writes() {
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

/// A domain that numbers packets: the Edge-to-Edge option after the
/// trace, numbered, or left out when the flow table has no number to
/// give; an option of timestamps alone asks for none.
#[test]
fn fast_source_numbers_as_the_general_source_numbers() {
    let default = TraceType::HOP_LIM_NODE_ID
        | TraceType::INTERFACES
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION;
    let every_e2e = E2eType::SEQUENCE_64 | E2eType::TIMESTAMP_SECONDS | E2eType::TIMESTAMP_FRACTION;
    for e2e in [E2eType::SEQUENCE_32, E2eType::SEQUENCE_64, every_e2e, E2eType::TIMESTAMP_FRACTION] {
        for number in [Some(0x1_0000_0007), Some(7), None] {
            let numbered = Plan { e2e, ..plan(default, 8, 9000) };
            let taken = agrees_numbered(&numbered, number);
            assert!(taken > 700, "{taken} frames for {e2e:?}, number {number:?}");
        }
    }
    // Within an MTU that the trace alone leaves every frame and the
    // option's 16 bytes only some: its room counts, number or not.
    let numbered = Plan { e2e: E2eType::SEQUENCE_32, ..plan(default, 8, 226) };
    let (with_number, without) = (agrees_numbered(&numbered, Some(3)), agrees_numbered(&numbered, None));
    assert_eq!(with_number, without);
    let trace_only = agrees(&plan(default, 8, 226));
    assert!(with_number > 100 && with_number < trace_only, "{with_number} of {trace_only} frames");
}

#[test]
fn an_unwritable_plan_has_no_fast_path() {
    let unwritable = plan(TraceType::HOP_LIM_NODE_ID, 0, 9000);
    assert_eq!(FastSource::of(&unwritable), None);
}

/// What the decapsulating node reads of a traced packet and what it
/// leaves of it.
#[derive(Debug, PartialEq)]
struct SinkRead {
    flow: FlowKey,
    sequence: Option<u64>,
    source: (Option<u32>, Option<u64>),
    hops: Vec<Option<HopFigures>>,
    overflow: bool,
    report_end: usize,
    removed: Option<usize>,
    restored: Vec<u8>,
}

/// The general path's reading, as `IoamSinkStage` makes it.
fn general_sink(frame: &[u8], timestamps: TimestampFormat) -> Option<SinkRead> {
    let found = find(frame, 0x7b).ok()??;
    let hops: Vec<_> = found.nodes(frame).map(|node| node.as_hop(timestamps)).collect();
    let oldest = hops.last();
    let source = (
        oldest.and_then(|hop| hop.node_id),
        oldest.and_then(|hop| hop.ingress_timestamp).or(found.entered_ns(timestamps)),
    );
    let figures = hops.iter().map(|hop| {
        hop.node_id.map(|node| HopFigures {
            node,
            latency: hop.hop_latency,
            queue: hop.queue.map(|(_, q)| q),
        })
    });
    let mut buffer = Buffer::new(frame);
    let removed = buffer.with(|f| strip(f, &found));
    Some(SinkRead {
        flow: found.flow(frame),
        sequence: found.sequence(),
        source,
        hops: figures.collect(),
        overflow: found.trace.header.overflow(),
        report_end: found.report_end(),
        removed,
        restored: buffer.frame().to_vec(),
    })
}

fn fast_sink(frame: &[u8], timestamps: TimestampFormat) -> Option<SinkRead> {
    let fast = FastSink::find(frame, 0x7b)?;
    let mut buffer = Buffer::new(frame);
    let removed = buffer.with(|f| fast.strip(f));
    Some(SinkRead {
        flow: fast.flow,
        sequence: fast.sequence(),
        source: fast.source(frame, timestamps),
        hops: fast.hops(frame).collect(),
        overflow: fast.trace.header.overflow(),
        report_end: fast.report_end(),
        removed,
        restored: buffer.frame().to_vec(),
    })
}

/// A transit node's element: a delay past the top bit on one, a queue.
fn transit_element(node: u32) -> NodeData {
    NodeData {
        node_id: Some(node),
        transit_delay: Some(if node == 2 { 0x8000_0001 } else { 700 * node }),
        queue_depth: Some(node * 3),
        timestamp_seconds: Some(1_700_000_001),
        timestamp_fraction: Some(if node == 3 { u32::MAX } else { 999_999 }),
        node_id_wide: (node != 1).then_some(0x0100_0000_0000 + u64::from(node)),
        ..NodeData::default()
    }
}

/// Traced frames: each IPv6 frame with each plan's trace (with and without
/// an Edge-to-Edge option), after 0 to 2 transit nodes (and one more than
/// the slots, which overflows).
fn traced_frames() -> Vec<Vec<u8>> {
    let every = TraceType::HOP_LIM_NODE_ID
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION
        | TraceType::TRANSIT_DELAY
        | TraceType::QUEUE_DEPTH
        | TraceType::HOP_LIM_NODE_ID_WIDE;
    let default = TraceType::HOP_LIM_NODE_ID
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION
        | TraceType::TRANSIT_DELAY;
    let plans = [
        plan(default, 8, 9000),
        Plan { e2e: E2eType::SEQUENCE_32, ..plan(default, 8, 9000) },
        Plan {
            e2e: E2eType::SEQUENCE_64 | E2eType::TIMESTAMP_SECONDS | E2eType::TIMESTAMP_FRACTION,
            ..plan(every, 2, 9000)
        },
        Plan { e2e: E2eType::TIMESTAMP_SECONDS, ..plan(TraceType::HOP_LIM_NODE_ID_WIDE, 1, 9000) },
        // Every defined bit and an undefined one: the wide fields' words
        // come before those read.
        plan(TraceType::from_bits_retain(0xff_f000 | 1 << 5), 3, 9000),
        // No node id: slots the hop rule cannot name.
        plan(TraceType::QUEUE_DEPTH | TraceType::TRANSIT_DELAY, 3, 9000),
    ];
    let mut traced = Vec::new();
    for (base, plan) in frames().iter().flat_map(|frame| plans.iter().map(move |plan| (frame, plan))) {
        let mut buffer = Buffer::new(base);
        let encapped = buffer.with(|f| source::insert(f, plan, &element(), |_, _| Some(0x1_0000_0007)));
        if !matches!(encapped, Ok(Encapped::Added(_))) {
            continue;
        }
        let mut frame = buffer.frame().to_vec();
        for node in 1..=plan.nodes as u32 {
            if node <= 2 || node == plan.nodes as u32 {
                traced.push(frame.clone());
            }
            let mut buffer = Buffer::new(&frame);
            buffer.with(|f| push(f, 0x7b, &transit_element(node))).unwrap();
            frame = buffer.frame().to_vec();
        }
    }
    traced
}

#[test]
fn fast_sink_reads_and_restores_what_the_general_sink_does() {
    let (mut taken, mut frames, mut shaped) = (0, 0, 0);
    for base in traced_frames() {
        frames += 1;
        // The frame with a Hop-by-Hop header of its own got the trace
        // appended to it: the general path's.
        shaped += usize::from(FastSink::find(&base, 0x7b).is_some());
        for frame in neighbours(&base) {
            for timestamps in [TimestampFormat::Posix, TimestampFormat::Ptp] {
                let Some(fast) = fast_sink(&frame, timestamps) else { continue };
                assert_eq!(Some(&fast), general_sink(&frame, timestamps).as_ref(), "{frame:02x?}");
                taken += 1;
            }
        }
    }
    // Most single changes leave a frame of the fast path's shape.
    assert!(frames >= 54 && shaped * 4 >= frames * 3, "{shaped} of {frames} frames of the fast path's shape");
    assert!(taken > shaped * 1000, "{taken} readings of {shaped} frames' neighbours");
}

/// What a transit node's push says of a frame and the bytes it leaves;
/// the fast path's `None` leaves the frame as it came.
fn fast_transit(frame: &[u8], namespace: u16) -> Option<(Transited, Vec<u8>)> {
    let mut buffer = Buffer::new(frame);
    let Some(said) = buffer.with(|f| FastTransit.push(f, namespace, &transit_element(4))) else {
        assert_eq!(buffer.frame(), frame, "left to the general path, unchanged");
        return None;
    };
    Some((said, buffer.frame().to_vec()))
}

fn general_transit(frame: &[u8], namespace: u16) -> Option<(Transited, Vec<u8>)> {
    let mut buffer = Buffer::new(frame);
    let said = buffer.with(|f| push(f, namespace, &transit_element(4))).ok()?;
    Some((said, buffer.frame().to_vec()))
}

/// The transit's fast path fills the slot (or sets Overflow) as the
/// general path does, over traced frames (free slots, full ones, each
/// plan's trace type, with and without the Edge-to-Edge option) and the
/// untraced frames (IPv4, IPv6, TCP, UDP), their one-byte changes and
/// cuts, for the domain's namespace and another; and it takes the traced
/// frames of the encapsulating node's shape as they came.
#[test]
fn fast_transit_fills_what_the_general_transit_fills() {
    let (mut frames, mut shaped, mut taken, mut overflows) = (0, 0, 0, 0);
    for base in traced_frames().into_iter().chain(self::frames()) {
        frames += 1;
        // The encapsulating node's frame as it came (the decapsulating
        // node's fast path reads it) is taken.
        let ours = FastSink::find(&base, 0x7b).is_some();
        assert_eq!(fast_transit(&base, 0x7b).is_some(), ours, "{base:02x?}");
        shaped += usize::from(ours);
        for frame in neighbours(&base) {
            for namespace in [0x7b, 0x7c] {
                let Some(fast) = fast_transit(&frame, namespace) else { continue };
                assert_eq!(Some(&fast), general_transit(&frame, namespace).as_ref(), "{frame:02x?}");
                assert_ne!(fast.0, Transited::NotTraced);
                overflows += usize::from(fast.0 == Transited::Overflow);
                taken += 1;
            }
        }
    }
    println!("{frames} frames, {shaped} of the fast path's shape, {taken} takes, {overflows} overflows");
    // The frames with a Hop-by-Hop header of their own got the trace
    // appended to it, and the untraced ones have none: the general path's.
    assert!(
        frames >= 65 && shaped * 4 >= (frames - 5) * 3,
        "{shaped} of {frames} frames of the fast path's shape"
    );
    assert!(taken > shaped * 1000, "{taken} takes of {shaped} frames' neighbours");
    assert!(overflows > 1000, "{overflows} overflows");
}
