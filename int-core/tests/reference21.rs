//! The INT 2.1 reference stages write the same bytes as the real
//! transforms for every frame of their shape, number each flow from 1, and
//! leave frames of other shapes alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::net::Ipv4Addr;

use common::{fast_path_ipv6_specs, int21_domain, int21_source, Buffer};
use int_core::craft::{L4Spec, PacketSpec};
use int_core::flow::FlowKey;
use int_core::int21::fast_source::HopTimes;
use int_core::int21::source::{self, SourceConfig};
use int_core::int21::{sink, Domain, HeaderType, HopMetadata, Instructions, Marking};
use int_core::reference;

fn own_hop() -> HopMetadata {
    HopMetadata {
        node_id: Some(9),
        l1_ingress_port: Some(3),
        l1_egress_port: Some(4),
        ..HopMetadata::default()
    }
}

/// Fast-path frames: 6 flows (UDP and TCP, two sizes), three
/// packets each, interleaved.
fn common_frames() -> Vec<Vec<u8>> {
    let dst = Ipv4Addr::new(198, 51, 100, 7);
    let mut frames = Vec::new();
    for _ in 0..3 {
        for flow in 0..6u8 {
            let src = Ipv4Addr::new(192, 0, 2, flow);
            let spec = match flow % 3 {
                0 => PacketSpec::udp(src, dst, 4000 + u16::from(flow), 53, 18),
                1 => PacketSpec::tcp(src, dst, 40000, 80 + u16::from(flow), 10),
                _ => PacketSpec { tos: 0x2b, ..PacketSpec::udp(src, dst, 1, 2, 200) },
            };
            frames.push(spec.build());
        }
    }
    frames
}

/// Frames outside the reference's shape (a VLAN tag, TCP options, IPv6) and
/// one already marked.
fn other_frames() -> Vec<Vec<u8>> {
    let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7));
    let mut specs = vec![
        PacketSpec { vlan: Some(7), ..PacketSpec::udp(a, b, 1, 2, 20) },
        PacketSpec {
            l4: L4Spec::Tcp { src_port: 1, dst_port: 2, seq: 9, options: vec![1, 1, 1, 1] },
            ..PacketSpec::udp(a, b, 1, 2, 20)
        },
        PacketSpec { tos: 0x17 << 2, ..PacketSpec::udp(a, b, 1, 2, 20) },
    ];
    specs.extend(fast_path_ipv6_specs(0x2b));
    specs.iter().map(PacketSpec::build).collect()
}

/// The real source's bytes for `frame`, numbered per flow from 1.
fn real_source(
    frame: &[u8],
    config: &SourceConfig,
    times: HopTimes,
    numbers: &mut HashMap<FlowKey, u32>,
) -> Vec<u8> {
    let plan = source::plan(frame, config).unwrap();
    let number = numbers.entry(plan.flow).or_default();
    *number += 1;
    let hop = HopMetadata {
        hop_latency: times.latency(),
        ingress_timestamp: Some(times.ingress_ns),
        egress_timestamp: Some(times.egress_ns),
        ..own_hop()
    };
    let mut buffer = Buffer::new(frame);
    buffer.with(|f| source::insert(f, &plan, config, &hop, *number)).unwrap();
    buffer.frame().to_vec()
}

#[test]
fn reference_source21_writes_what_the_source_writes() {
    let full = Instructions::NODE_ID | Instructions::L1_PORT_IDS | Instructions::INGRESS_TIMESTAMP;
    let every_time =
        Instructions::HOP_LATENCY | Instructions::INGRESS_TIMESTAMP | Instructions::EGRESS_TIMESTAMP;
    let times = HopTimes { ingress_ns: 0x0102_0304_0506, egress_ns: 0x0102_0304_0600 };
    for config in [int21_source(full, HeaderType::Md), int21_source(every_time, HeaderType::Md)] {
        let mut reference = reference::Source21::new(&config, &own_hop(), 64).unwrap();
        let mut numbers = HashMap::new();
        for frame in common_frames() {
            let mut mine = Buffer::new(&frame);
            assert!(mine.with(|f| reference.instrument(f, times)));
            assert_eq!(mine.frame(), &real_source(&frame, &config, times, &mut numbers)[..]);
        }
        for frame in other_frames() {
            let mut mine = Buffer::new(&frame);
            assert!(!mine.with(|f| reference.instrument(f, times)), "{frame:02x?}");
            assert_eq!(mine.frame(), &frame[..], "left alone");
        }
    }
}

#[test]
fn reference_source21_needs_a_dscp_marked_md_source() {
    let mx =
        SourceConfig { header_type: HeaderType::Mx, ..int21_source(Instructions::NODE_ID, HeaderType::Md) };
    assert!(reference::Source21::new(&mx, &own_hop(), 64).is_err());
    let port = SourceConfig {
        domain: Domain { marking: Marking::UdpPort(7777), ..int21_domain() },
        ..int21_source(Instructions::NODE_ID, HeaderType::Md)
    };
    assert!(reference::Source21::new(&port, &own_hop(), 64).is_err());
}

#[test]
fn reference_sink21_restores_what_the_sink_restores_and_follows_numbers() {
    let config = int21_source(Instructions::NODE_ID | Instructions::INGRESS_TIMESTAMP, HeaderType::Md);
    let source_ns = 0x0102_0304_0506;
    let times = HopTimes { ingress_ns: source_ns, egress_ns: source_ns };
    let mut numbers = HashMap::new();
    let mut reference = reference::Sink21::new(int21_domain(), 64);
    let originals = common_frames();
    for (i, original) in originals.iter().enumerate() {
        let instrumented = real_source(original, &config, times, &mut numbers);
        let found = sink::extract(&instrumented, &int21_domain(), &int_core::hop_rule::HopRule::default())
            .unwrap()
            .unwrap();
        let mut general = Buffer::new(&instrumented);
        general.with(|f| sink::strip(f, &found)).unwrap();
        let mut mine = Buffer::new(&instrumented);
        let now_ns = source_ns + 1000 + i as u64;
        assert_eq!(mine.with(|f| reference.strip(f, now_ns)), Some(true), "packet {i} in order");
        assert_eq!(mine.frame(), general.frame());
        assert_eq!(mine.frame(), &original[..], "restored");
        let key = int_core::fast::FastFrame::read(original, 0).unwrap().flow;
        let flow = reference.flow([key.addresses, key.rest]).unwrap();
        assert_eq!(flow.latency_ns, 1000 + i as i64);
    }
    // A repeated packet is not in order; a plain one is left alone.
    let again = real_source(&originals[0], &config, times, &mut HashMap::new());
    let mut repeated = Buffer::new(&again);
    assert_eq!(repeated.with(|f| reference.strip(f, source_ns)), Some(false));
    let mut plain = Buffer::new(&originals[0]);
    assert_eq!(plain.with(|f| reference.strip(f, source_ns)), None);
    assert_eq!(plain.frame(), &originals[0][..]);
}
