//! The fast paths against the general path: for every frame a fast path
//! takes, the general path takes it too, reads the same fields and writes
//! the same bytes, over every one-byte change and every cut of frames of
//! the fast path's shape (with and without INT).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::{fast_path_ipv6_specs, neighbours, same_flow, Buffer};
use int_core::craft::{L4Spec, PacketSpec};
use int_core::fast::FastFrame;
use int_core::int05::fast_sink::{FastArrival, FastSink};
use int_core::int05::fast_source::FastSource;
use int_core::int05::fast_transit::FastTransit;
use int_core::int05::sink::{self, Arrival};
use int_core::int05::source::{self, SourceConfig, Template};
use int_core::int05::transit::{self, TransitConfig};
use int_core::int05::{Domain, HopMetadata, ShapeCache};
use int_core::marking::TcpPlacement;

const TIME: u32 = 0x0102_0304;
const SEQUENCE: u32 = 77;

fn hop() -> HopMetadata {
    HopMetadata::host_int(0x0a00_0009, 3, 0)
}

/// Fast-path frames, and a few just outside it.
fn base_frames() -> Vec<Vec<u8>> {
    let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7));
    let mut specs = vec![
        PacketSpec::udp(a, b, 4000, 53, 0),
        PacketSpec::udp(a, b, 4000, 53, 30),
        PacketSpec::tcp(a, b, 40000, 80, 10),
        PacketSpec { tos: 0xb8, ..PacketSpec::udp(b, a, 1, 2, 18) },
        PacketSpec { vlan: Some(7), ..PacketSpec::udp(a, b, 1, 2, 20) },
        PacketSpec {
            l4: L4Spec::Tcp { src_port: 1, dst_port: 2, seq: 9, options: vec![1, 1, 1, 1] },
            ..PacketSpec::udp(a, b, 1, 2, 20)
        },
    ];
    specs.push(PacketSpec {
        l4: L4Spec::Udp { src_port: 9, dst_port: 10, zero_checksum: true },
        ..PacketSpec::udp(a, b, 9, 10, 12)
    });
    specs.extend(fast_path_ipv6_specs(0xb8));
    specs.iter().map(PacketSpec::build).collect()
}

/// For `config`: the fast path's takes are the general path's, byte for
/// byte; returns how many IPv4 and IPv6 frames the fast path took.
fn fast_source_agrees(config: &SourceConfig) -> [usize; 2] {
    let template = Template::new(config, &hop()).unwrap();
    let fast = FastSource::of(config, &template).expect("a Host-INT configuration");
    let mut taken = [0, 0];
    for base in base_frames() {
        for frame in neighbours(&base) {
            let Some(parts) = FastFrame::read(&frame, 0).filter(|f| fast.takes(f)) else { continue };
            taken[usize::from(parts.is_ipv6())] += 1;
            let plan = source::plan(&frame, config)
                .unwrap_or_else(|skip| panic!("the general path refuses ({skip:?}) {frame:02x?}"));
            same_flow(&parts, &frame, &plan.flow);
            let mut general = Buffer::new(&frame);
            general.with(|f| source::insert_with(f, &plan, config, &template, SEQUENCE, Some(TIME))).unwrap();
            let mut mine = Buffer::new(&frame);
            assert!(mine.with(|f| fast.insert(f, &parts, SEQUENCE, TIME)));
            assert_eq!(mine.frame(), general.frame(), "{frame:02x?}");
        }
    }
    taken
}

#[test]
fn fast_source_writes_what_the_general_source_writes() {
    let [v4, v6] = fast_source_agrees(&SourceConfig::host_int(1500));
    // Most single changes leave a fast-path frame (payload
    // bytes, addresses, ports, checksums).
    assert!(v4 > 1200 && v6 > 1000, "{v4} IPv4 and {v6} IPv6 frames took the fast path");
}

#[test]
fn fast_source_keeps_the_mtu_and_dscp_of_its_configuration() {
    let small = SourceConfig { max_ip_len: 90, ..SourceConfig::host_int(1500) };
    let [v4, _] = fast_source_agrees(&small);
    assert!(v4 > 300, "{v4} IPv4 frames within an MTU of 90");
    // The shortest IPv6 frame fits an MTU of 100 with the block; others do
    // not.
    let [_, v6] = fast_source_agrees(&SourceConfig { max_ip_len: 100, ..small });
    assert!(v6 > 300, "{v6} IPv6 frames within an MTU of 100");
    let marking = int_core::int05::Encapsulation::OverTcpUdp { dscp_value: 0x2e, dscp_mask: 0x3f };
    let other_dscp = SourceConfig { encapsulation: marking, ..SourceConfig::host_int(1500) };
    let [v4, v6] = fast_source_agrees(&other_dscp);
    assert!(v4 > 1000 && v6 > 800, "{v4} IPv4 and {v6} IPv6 frames not marked with DSCP 46");
}

#[test]
fn only_host_int_configurations_have_a_fast_source() {
    let host_int = SourceConfig::host_int(1500);
    let others = [
        SourceConfig { own_hop: false, ..host_int },
        SourceConfig { shim_type: int_core::int05::ShimType::HopByHop, ..host_int },
        SourceConfig { tail: source::TailStyle::Informative, ..host_int },
        SourceConfig { tcp_placement: int_core::marking::TcpPlacement::AfterOptions, ..host_int },
        SourceConfig {
            encapsulation: int_core::int05::Encapsulation::ExtensionUdp { port: 5000 },
            ..host_int
        },
    ];
    for config in others {
        let template = Template::new(&config, &hop()).unwrap();
        assert!(FastSource::of(&config, &template).is_none(), "{config:?}");
    }
}

/// INT fast-path frames: the base frames instrumented, with
/// Host-INT's tail and with INT 0.5's informative one, and one with a
/// transit hop pushed.
fn int_frames() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for tail in [source::TailStyle::HostInt, source::TailStyle::Informative] {
        let config = SourceConfig { tail, max_hop_cnt: 3, ..SourceConfig::host_int(1500) };
        let template = Template::new(&config, &hop()).unwrap();
        for frame in base_frames() {
            let Ok(plan) = source::plan(&frame, &config) else { continue };
            let mut buffer = Buffer::new(&frame);
            buffer.with(|f| source::insert_with(f, &plan, &config, &template, SEQUENCE, Some(TIME))).unwrap();
            frames.push(buffer.frame().to_vec());
        }
    }
    let transit = TransitConfig { domain: domain(), max_ip_len: 1500 };
    let mut pushed = Buffer::new(&frames[0]);
    let hop = HopMetadata::host_int(0x0a00_0005, 2, TIME + 10);
    pushed.with(|f| transit::push(f, &transit, &hop)).unwrap();
    frames.push(pushed.frame().to_vec());
    frames
}

fn domain() -> Domain {
    Domain {
        encapsulation: SourceConfig::host_int(1500).encapsulation,
        tcp_placement: TcpPlacement::BeforeOptions,
    }
}

#[test]
fn fast_sink_finds_and_restores_what_the_general_sink_does() {
    let (mut taken, mut bases) = ([0, 0], 0);
    for base in int_frames() {
        // A cache warmed by the unchanged frame, as on a path where most
        // blocks share a shape, and a cold one.
        let mut warm = ShapeCache::default();
        if !matches!(FastSink::find(&base, &domain(), &mut warm), FastArrival::Int(_)) {
            continue;
        }
        bases += 1;
        for frame in neighbours(&base) {
            for mut shapes in [warm, ShapeCache::default()] {
                if let Some(ipv6) = fast_sink_agrees(&frame, &mut shapes) {
                    taken[usize::from(ipv6)] += 1;
                }
            }
        }
    }
    assert!(bases >= 15, "{bases} INT fast-path frames");
    let [v4, v6] = taken;
    assert!(v4 > 2000 && v6 > 2000, "{v4} IPv4 and {v6} IPv6 frames took the fast path");
}

/// One frame: the fast sink's answer is the general sink's; when the fast
/// path took it, whether it is IPv6.
fn fast_sink_agrees(frame: &[u8], shapes: &mut ShapeCache) -> Option<bool> {
    let general = sink::classify(frame, &domain(), &mut ShapeCache::default());
    match FastSink::find(frame, &domain(), shapes) {
        FastArrival::Other => None,
        FastArrival::NotInt => {
            assert_eq!(general, Ok(Arrival::NotInt), "{frame:02x?}");
            None
        }
        FastArrival::Int(fast) => {
            let Ok(Arrival::Int(found)) = general else { panic!("general: {general:?} for {frame:02x?}") };
            same_flow(&fast.frame, frame, &found.flow);
            assert_eq!((fast.sequence, fast.source_hop), (found.sequence, found.source_hop));
            assert_eq!(fast.removed_len(), found.removed_len());
            let mut general = Buffer::new(frame);
            general.with(|f| sink::strip(f, &found, &domain())).unwrap();
            let mut mine = Buffer::new(frame);
            assert_eq!(mine.with(|f| fast.strip(f, &domain())), Some(found.removed_len()));
            assert_eq!(mine.frame(), general.frame(), "{frame:02x?}");
            Some(fast.frame.is_ipv6())
        }
    }
}

#[test]
fn fast_transit_pushes_what_the_general_transit_pushes() {
    let hop = HopMetadata::host_int(0x0a00_0005, 2, TIME + 10);
    let (mut taken, mut outcomes) = ([0, 0], std::collections::BTreeSet::new());
    // An MTU of 100 leaves some frames no room for the hop.
    let configs = [1500, 100].map(|mtu| TransitConfig { domain: domain(), max_ip_len: mtu });
    let cases = int_frames().into_iter().flat_map(|base| configs.map(|config| (base.clone(), config)));
    for (base, config) in cases {
        for frame in neighbours(&base) {
            let mut mine = Buffer::new(&frame);
            let Some(fast) = mine.with(|f| FastTransit.push(f, &config, &hop, &mut ShapeCache::default()))
            else {
                assert_eq!(mine.frame(), &frame[..], "left to the general path unchanged");
                continue;
            };
            taken[usize::from(frame.get(12..14) == Some(&[0x86, 0xdd]))] += 1;
            let mut general = Buffer::new(&frame);
            let expected = general.with(|f| transit::push(f, &config, &hop));
            assert_eq!(fast, expected, "{frame:02x?}");
            assert_eq!(mine.frame(), general.frame(), "{frame:02x?}");
            outcomes.insert(format!("{fast:?}"));
        }
    }
    let [v4, v6] = taken;
    assert!(v4 > 3000 && v6 > 3000, "{v4} IPv4 and {v6} IPv6 frames took the fast path");
    // Pushed, E set at Max Hop Count, not INT, too big.
    assert!(outcomes.len() >= 4, "{outcomes:?}");
}
