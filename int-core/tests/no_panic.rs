//! No parser or transform panics on arbitrary bytes, and a transform that
//! refuses a packet leaves it untouched.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::Buffer;
use int_core::int05::sink;
use int_core::int05::source::{self, SourceConfig};
use int_core::int05::transit::{self, TransitConfig};
use int_core::int05::{Domain, Encapsulation, HopMetadata, IntBlock, Tail};
use int_core::marking::TcpPlacement;
use int_core::report::{self, SinkIdWord};
use int_core::wire::{EthernetRepr, Ipv4Repr, TcpRepr, UdpRepr};
use proptest::prelude::*;

fn domains() -> [Domain; 3] {
    [
        Domain::default(),
        Domain {
            encapsulation: Encapsulation::ExtensionUdp { port: 33122 },
            tcp_placement: TcpPlacement::BeforeOptions,
        },
        Domain {
            encapsulation: Encapsulation::OverTcpUdp { dscp_value: 0x17, dscp_mask: 0x3f },
            tcp_placement: TcpPlacement::AfterOptions,
        },
    ]
}

/// Bytes that look like an INT packet often enough to reach deep code: a
/// real instrumented frame with some bytes overwritten or cut.
fn mangled() -> impl Strategy<Value = Vec<u8>> {
    let base = {
        let spec = int_core::craft::PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 40);
        let frame = spec.build();
        common::run_source(&frame, &SourceConfig::host_int(1500), 5)
    };
    mangled_from(base)
}

/// INT-MD (one hop) in a VXLAN-GPE and in a Geneve packet, mangled.
fn mangled_tunnels() -> impl Strategy<Value = Vec<u8>> {
    let md = [0x20, 0, 0x02, 0x03, 0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x10];
    let packet = |port: u16, tunnel: &[u8]| {
        let mut spec =
            int_core::craft::PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 49152, port, 0);
        spec.payload = [tunnel, &md, &[0x02; 14]].concat();
        spec.build()
    };
    let gpe = packet(4790, &[0x0c, 0, 0, 0x82, 0, 0, 1, 0, 0x10, 5, 0, 3]);
    let geneve = packet(6081, &[6, 0, 0x65, 0x58, 0, 0, 1, 0, 0x01, 0x03, 0x01, 5]);
    prop_oneof![mangled_from(gpe), mangled_from(geneve)]
}

fn mangled_from(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    (proptest::collection::vec((0usize..120, any::<u8>()), 0..6), 0usize..130).prop_map(
        move |(edits, cut)| {
            let mut frame = base.clone();
            for (at, value) in edits {
                if at < frame.len() {
                    frame[at] = value;
                }
            }
            frame.truncate(cut.min(frame.len()));
            frame
        },
    )
}

/// The INT 2.1 parsers and transforms on `bytes`, in a DSCP and a UDP
/// port domain: found blocks strip, a refused push or insert leaves the
/// frame alone.
fn everything_int21(bytes: &[u8]) {
    use int_core::int21::{self, source as source21, transit as transit21};
    let _ = int21::Block::parse(bytes, int21::SourceOnly::NONE);
    let _ = int21::Block::parse(bytes, int21::SourceOnly::sequence(0x4944));
    if let Ok(parsed) = report::tr20::Report::parse(bytes) {
        for individual in parsed.reports().flatten() {
            let _ = report::tr20_loss::LossReport::parse(&individual, 0x4944);
        }
        // The framing walk (collect's check) refuses what the whole one
        // refuses, where it refuses it, and frames what it reads.
        for (framed, whole) in parsed.framings().zip(parsed.reports()) {
            let whole =
                whole.map(|w| (w.rep_type, w.in_type, w.flags, w.inner, w.int.map(|i| i.ds_metadata)));
            let framed =
                framed.map(|f| (f.rep_type, f.in_type, f.flags, f.inner, f.int.map(|i| i.ds_metadata)));
            assert_eq!(framed, whole);
        }
        assert_eq!(parsed.framings().count(), parsed.reports().count());
    }
    if let Ok(flow) = report::tr05_flow::FlowReport::parse(bytes) {
        let _ = (flow.latency_ns(), flow.source_hop());
    }
    let dscp = int_core::marking::DscpMatch::new(0x17, 0x3f).unwrap();
    for marking in [int21::Marking::Dscp(dscp), int21::Marking::UdpPort(33122)] {
        let source_only = int21::SourceOnly::sequence(0x4944);
        let domain = int21::Domain { marking, tcp_placement: TcpPlacement::BeforeOptions, source_only };
        if let Ok(Some(found)) = int21::sink::extract(bytes, &domain, &int_core::hop_rule::HopRule::default())
        {
            let mut buffer = Buffer::new(bytes);
            assert!(buffer.with(|f| int21::sink::strip(f, &found)).is_some());
        }
        let hop = int21::HopMetadata { node_id: Some(1), ..Default::default() };
        let mut buffer = Buffer::new(bytes);
        if buffer.with(|f| transit21::push(f, &domain, 1500, &hop)).is_err() {
            assert_eq!(buffer.frame(), bytes, "a refused push leaves the frame alone");
        }
        let config = source21::SourceConfig {
            domain,
            header_type: int21::HeaderType::Md,
            instructions: int21::Instructions::NODE_ID | int21::Instructions::INGRESS_TIMESTAMP,
            ds_words: 0,
            max_hops: 4,
            own_hop: true,
            domain_id: 0x4944,
            ds_instructions: int21::source_only::SEQUENCE,
            ds_flags: 0,
            discard: false,
            max_ip_len: 1500,
        };
        let mut buffer = Buffer::new(bytes);
        match source21::plan(bytes, &config) {
            Ok(plan) => {
                buffer.with(|f| source21::insert(f, &plan, &config, &hop, 1)).unwrap();
            }
            Err(_) => assert_eq!(buffer.frame(), bytes),
        }
    }
}

/// The IPv6 and tunnel headers: the extension walk stays inside the bytes
/// it was given, and Geneve options found lie inside the header's length.
fn everything_tunnels(bytes: &[u8]) {
    use int_core::wire::{geneve, ipv6, vxlan_gpe};
    if let Ok(walk) = ipv6::walk_extensions(bytes) {
        assert!(walk.upper_at <= bytes.len() && walk.next_header_at < walk.upper_at);
    }
    if let Ok(Some(ip)) = int_core::locate::ipv6(bytes) {
        assert!(ip.l3 < ip.l4 && ip.l4 <= ip.end && ip.end <= bytes.len());
        let _ = int_core::locate::l4(bytes, &ip);
    }
    let _ = vxlan_gpe::VxlanGpeRepr::parse(bytes);
    let _ = int_core::int21::tunnel::GpeShimRepr::parse(bytes);
    let known = int_core::int21::SourceOnly::sequence(0x4944);
    if let Ok(Some(found)) = int_core::int21::tunnel::gpe_int(bytes, known) {
        assert!(found.len <= bytes.len());
    }
    let _ = int_core::int21::tunnel::geneve_int(bytes, known);
    if let Ok(header) = geneve::GeneveRepr::parse(bytes) {
        if let Ok(options) = geneve::options(bytes, &header) {
            assert!(options.iter().all(|(option, at)| at + option.len() <= header.len()));
        }
        let _ = geneve::find_option(bytes, &header, geneve::INT_OPTION_CLASS);
    }
}

/// INT in a tunnel: found, pushed and stripped in place on any bytes; a
/// frame a source plans for leaves its insert changed or whole.
fn everything_in_tunnels(bytes: &[u8]) {
    use int_core::int21::in_tunnel;
    let known = int_core::int21::SourceOnly::sequence(0x4944);
    if let Ok(Some(found)) = in_tunnel::find(bytes, known) {
        let (at, len) = found.span().int_span();
        assert!(at + len <= bytes.len());
        let hop = int_core::int21::HopMetadata { node_id: Some(1), ..Default::default() };
        let mut buffer = Buffer::new(bytes);
        let _ = buffer.with(|f| in_tunnel::push(f, &found.for_push(), 9000, &hop));
        let mut buffer = Buffer::new(bytes);
        assert!(buffer.with(|f| in_tunnel::strip(f, &found.span())).is_some());
    }
    if let Ok(Some(plan)) = in_tunnel::plan(bytes) {
        let mut buffer = Buffer::new(bytes);
        let body = [0x20, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let added = buffer.with(|f| in_tunnel::insert(f, &plan, int_core::int21::HeaderType::Md, &body));
        assert_eq!(buffer.frame().len(), bytes.len() + added.unwrap_or(0));
    }
}

fn everything(bytes: &[u8]) {
    everything_int21(bytes);
    everything_tunnels(bytes);
    everything_in_tunnels(bytes);
    let _ = EthernetRepr::parse(bytes);
    let _ = Ipv4Repr::parse(bytes);
    let _ = TcpRepr::parse(bytes);
    let _ = UdpRepr::parse(bytes);
    let _ = IntBlock::parse(bytes, Tail::Present);
    let _ = IntBlock::parse(bytes, Tail::Absent);
    for mode in [SinkIdWord::Present, SinkIdWord::Absent, SinkIdWord::Detect] {
        if let Ok(report::Report::Latency(latency)) = report::parse(bytes, mode) {
            let _ = latency.latency_ns();
        }
    }
    let hop = HopMetadata::host_int(1, 2, 3);
    for domain in domains() {
        let mut buffer = Buffer::new(bytes);
        if let Ok(Some(found)) = sink::extract(bytes, &domain) {
            let mut report = [0u8; 2048];
            let header = report::ReportHeaderRepr::parse(&[4, 0x20, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]).unwrap();
            let _ = report::LatencyReport::build(
                &mut report,
                bytes,
                &found,
                &hop,
                &header,
                1,
                &report::ReportProfile::HOST_INT,
            );
            assert!(buffer.with(|f| sink::strip(f, &found, &domain)).is_some());
        }
        let mut buffer = Buffer::new(bytes);
        let transit_config = TransitConfig { domain, max_ip_len: 1500 };
        if buffer.with(|f| transit::push(f, &transit_config, &hop)).is_err() {
            assert_eq!(buffer.frame(), bytes, "a refused push leaves the frame alone");
        }
        let source_config = SourceConfig {
            encapsulation: domain.encapsulation,
            tcp_placement: domain.tcp_placement,
            ..SourceConfig::host_int(1500)
        };
        let mut buffer = Buffer::new(bytes);
        match source::plan(bytes, &source_config) {
            Ok(plan) => {
                buffer.with(|f| source::insert(f, &plan, &source_config, 1, &hop)).unwrap();
            }
            Err(_) => assert_eq!(buffer.frame(), bytes),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        everything(&bytes);
    }

    #[test]
    fn mangled_int_packets(bytes in mangled()) {
        everything(&bytes);
    }

    #[test]
    fn mangled_tunnel_packets(bytes in mangled_tunnels()) {
        everything(&bytes);
    }
}

/// Guards the tunnel generator: a good share of its mangled packets still
/// reach the code that pushes and strips inside tunnels.
#[test]
fn mangled_tunnels_mostly_reach_the_tunnel_code() {
    use proptest::strategy::ValueTree;
    let strategy = mangled_tunnels();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let known = int_core::int21::SourceOnly::NONE;
    let found = (0..1000)
        .filter(|_| {
            let bytes = strategy.new_tree(&mut runner).unwrap().current();
            matches!(int_core::int21::in_tunnel::find(&bytes, known), Ok(Some(_)))
        })
        .count();
    assert!(found > 100, "only {found} of 1000 mangled tunnel packets carry INT");
}
