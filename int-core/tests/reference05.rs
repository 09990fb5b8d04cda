//! The reference stages write the same bytes as the real transforms for
//! every frame of their shape, leave frames of other shapes alone, and
//! never panic on mangled ones.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::net::Ipv4Addr;

use common::{verify_checksums, Buffer};
use int_core::craft::{L4Spec, PacketSpec};
use int_core::flow::FlowKey;
use int_core::int05::sink::{self, Arrival};
use int_core::int05::source::{self, SourceConfig, Template};
use int_core::int05::transit::{self, Outcome, TransitConfig};
use int_core::int05::{Domain, Encapsulation, HopMetadata, ShapeCache};
use int_core::marking::TcpPlacement;
use int_core::reference;
use proptest::prelude::*;

const MARKING: Encapsulation = Encapsulation::OverTcpUdp { dscp_value: 0x01, dscp_mask: 0x01 };
const MAX_HOPS: u8 = 4;
const TIME: u32 = 0x1234_5678;

fn config() -> SourceConfig {
    SourceConfig { max_hop_cnt: MAX_HOPS, ..SourceConfig::host_int(1500) }
}

fn domain() -> Domain {
    Domain { encapsulation: MARKING, tcp_placement: TcpPlacement::BeforeOptions }
}

fn source_hop() -> HopMetadata {
    HopMetadata {
        switch_id: Some(9),
        ingress_port: Some(1),
        egress_port: Some(2),
        ingress_timestamp: Some(0),
        egress_timestamp: Some(0),
        ..HopMetadata::default()
    }
}

fn transit_hop(ingress: u32, egress: u32) -> HopMetadata {
    HopMetadata {
        switch_id: Some(7),
        ingress_port: Some(3),
        egress_port: Some(4),
        ingress_timestamp: Some(ingress),
        egress_timestamp: Some(egress),
        ..HopMetadata::default()
    }
}

/// A frame of the references' shape: flow `flow` of a few, UDP or TCP,
/// an unmarked DSCP.
fn common_frame(flow: u8, tcp: bool, payload: usize, tos: u8) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::new(10, 0, 0, flow), Ipv4Addr::new(10, 1, 0, 1));
    let mut spec = if tcp {
        PacketSpec::tcp(src, dst, 1000 + u16::from(flow), 80, payload)
    } else {
        PacketSpec::udp(src, dst, 1000 + u16::from(flow), 53, payload)
    };
    spec.tos = tos & !0x04;
    spec.build()
}

/// The real source: plan, this flow's next number, insert.
fn real_source(frame: &[u8], numbers: &mut HashMap<FlowKey, u32>, template: &Template) -> Vec<u8> {
    let plan = source::plan(frame, &config()).expect("instrumented");
    let sequence = numbers.entry(plan.flow).or_default();
    *sequence += 1;
    let mut buffer = Buffer::new(frame);
    buffer.with(|f| source::insert_with(f, &plan, &config(), template, *sequence, Some(TIME))).unwrap();
    buffer.frame().to_vec()
}

fn reference_source(frame: &[u8], source: &mut reference::Source) -> Vec<u8> {
    let mut buffer = Buffer::new(frame);
    assert!(buffer.with(|f| source.instrument(f, TIME)), "the reference takes a fast-path frame");
    buffer.frame().to_vec()
}

fn transit_config() -> TransitConfig {
    TransitConfig { domain: domain(), max_ip_len: 1500 }
}

fn flows() -> impl Strategy<Value = Vec<(u8, bool, usize, u8)>> {
    prop::collection::vec((1u8..6, any::<bool>(), 0usize..200, any::<u8>()), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Source, then transit hops, then sink: at each step the reference's
    /// bytes are the real transform's, with valid checksums.
    #[test]
    fn references_write_what_the_stages_write(packets in flows(), hops in 0u8..MAX_HOPS) {
        let template = Template::new(&config(), &source_hop()).unwrap();
        let mut reference_source_stage = reference::Source::new(&config(), &source_hop(), 64).unwrap();
        let reference_transit = reference::Transit::new(MARKING, 1500, 7, 3, 4);
        let mut reference_sink = reference::Sink::new(MARKING, 64);
        let mut numbers = HashMap::new();
        for (flow, tcp, payload, tos) in packets {
            let original = common_frame(flow, tcp, payload, tos);
            let mut frame = real_source(&original, &mut numbers, &template);
            prop_assert_eq!(&reference_source(&original, &mut reference_source_stage), &frame);
            prop_assert!(verify_checksums(&frame).is_ok());
            for hop in 0..hops {
                let (ingress, egress) = (TIME + u32::from(hop), TIME + 100);
                let mut real = Buffer::new(&frame);
                let outcome = real.with(|f| transit::push(f, &transit_config(), &transit_hop(ingress, egress)));
                prop_assert_eq!(outcome, Ok(Outcome::Pushed(16)));
                let mut mine = Buffer::new(&frame);
                prop_assert!(mine.with(|f| reference_transit.push(f, ingress, egress)));
                prop_assert_eq!(mine.frame(), real.frame());
                frame = real.frame().to_vec();
            }
            let mut real = Buffer::new(&frame);
            let found = match sink::classify(&frame, &domain(), &mut ShapeCache::default()) {
                Ok(Arrival::Int(found)) => found,
                other => panic!("not INT: {other:?}"),
            };
            real.with(|f| sink::strip(f, &found, &domain())).unwrap();
            let mut mine = Buffer::new(&frame);
            prop_assert!(mine.with(|f| reference_sink.strip(f, TIME + 500)).is_some());
            prop_assert_eq!(mine.frame(), real.frame());
            prop_assert_eq!(&mine.frame()[..original.len()], &original[..]);
        }
    }

    /// Any one byte changed or the frame cut: the references do not panic,
    /// and whatever both the reference and the real stage take comes out
    /// the same.
    #[test]
    fn references_agree_on_mangled_frames(
        flow in 1u8..6, tcp: bool, payload in 0usize..64, at in 0usize..200, value: u8, cut in 0usize..200,
    ) {
        let template = Template::new(&config(), &source_hop()).unwrap();
        let original = common_frame(flow, tcp, payload, 0);
        let instrumented = real_source(&original, &mut HashMap::new(), &template);
        for base in [&original, &instrumented] {
            let mut mangled = base.clone();
            if let Some(byte) = mangled.get_mut(at) {
                *byte = value;
            }
            mangled.truncate(mangled.len().saturating_sub(cut % 8 * (cut % 3)));
            check_source_agrees(&mangled, &template)?;
            check_transit_agrees(&mangled)?;
            check_sink_agrees(&mangled)?;
        }
    }
}

fn check_source_agrees(frame: &[u8], template: &Template) -> Result<(), TestCaseError> {
    let mut stage = reference::Source::new(&config(), &source_hop(), 8).unwrap();
    let mut mine = Buffer::new(frame);
    if !mine.with(|f| stage.instrument(f, TIME)) {
        prop_assert_eq!(mine.frame(), frame, "refused frames stay as they were");
        return Ok(());
    }
    if let Ok(plan) = source::plan(frame, &config()) {
        let mut real = Buffer::new(frame);
        if real.with(|f| source::insert_with(f, &plan, &config(), template, 1, Some(TIME))).is_ok() {
            prop_assert_eq!(mine.frame(), real.frame());
        }
    }
    Ok(())
}

fn check_transit_agrees(frame: &[u8]) -> Result<(), TestCaseError> {
    let stage = reference::Transit::new(MARKING, 1500, 7, 3, 4);
    let mut mine = Buffer::new(frame);
    if !mine.with(|f| stage.push(f, TIME, TIME)) {
        prop_assert_eq!(mine.frame(), frame, "refused frames stay as they were");
        return Ok(());
    }
    let mut real = Buffer::new(frame);
    if let Ok(Outcome::Pushed(_)) =
        real.with(|f| transit::push(f, &transit_config(), &transit_hop(TIME, TIME)))
    {
        prop_assert_eq!(mine.frame(), real.frame());
    }
    Ok(())
}

fn check_sink_agrees(frame: &[u8]) -> Result<(), TestCaseError> {
    let mut stage = reference::Sink::new(MARKING, 8);
    let mut mine = Buffer::new(frame);
    if mine.with(|f| stage.strip(f, TIME)).is_none() {
        prop_assert_eq!(mine.frame(), frame, "refused frames stay as they were");
        return Ok(());
    }
    if let Ok(Arrival::Int(found)) = sink::classify(frame, &domain(), &mut ShapeCache::default()) {
        let mut real = Buffer::new(frame);
        if real.with(|f| sink::strip(f, &found, &domain())).is_some() {
            prop_assert_eq!(mine.frame(), real.frame());
        }
    }
    Ok(())
}

/// Frames of other shapes pass the references untouched.
#[test]
fn other_shapes_are_left_alone() {
    let base = PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1, 2, 40);
    let shapes = [
        PacketSpec { vlan: Some(5), ..base.clone() },
        PacketSpec { ip_options: vec![1, 1, 1, 0], ..base.clone() },
        PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 40),
        PacketSpec {
            l4: L4Spec::Tcp { src_port: 1, dst_port: 2, seq: 1, options: vec![1, 1, 1, 1] },
            ..base.clone()
        },
        PacketSpec { tos: 0x04, ..base.clone() },
    ];
    let mut source = reference::Source::new(&config(), &source_hop(), 8).unwrap();
    for spec in shapes {
        let frame = spec.build();
        let mut buffer = Buffer::new(&frame);
        assert!(!buffer.with(|f| source.instrument(f, TIME)), "{spec:?}");
        assert_eq!(buffer.frame(), &frame[..]);
    }
    assert_eq!(source.flows(), 0);
}

/// The reference sink keeps each flow's last number and latency, and tells
/// a number that follows from one that does not.
#[test]
fn reference_sink_follows_sequence_numbers() {
    let template = Template::new(&config(), &source_hop()).unwrap();
    let mut numbers = HashMap::new();
    let mut sink = reference::Sink::new(MARKING, 8);
    let original = common_frame(1, false, 20, 0);
    let frames: Vec<_> = (0..4).map(|_| real_source(&original, &mut numbers, &template)).collect();
    let mut in_order = Vec::new();
    for at in [0, 1, 3, 2] {
        let mut buffer = Buffer::new(&frames[at]);
        in_order.push(buffer.with(|f| sink.strip(f, TIME.wrapping_add(1500))).unwrap());
    }
    assert_eq!(in_order, [true, true, false, false]);
    let key =
        [u64::from(u32::from(Ipv4Addr::new(10, 0, 0, 1))) << 32 | 0x0a01_0001, 17 << 32 | 1001 << 16 | 53];
    let flow = sink.flow(key).unwrap();
    assert_eq!(flow, reference::SinkFlow { last_sequence: 3, latency_ns: 1500 });
}
