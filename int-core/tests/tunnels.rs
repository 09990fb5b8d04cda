//! INT 2.1 inside tunnels: for generated VXLAN-GPE (from VXLAN-GPE or, G
//! set, from plain VXLAN) and Geneve packets (the INT option beside
//! another), over IPv4 and IPv6, with and without an outer UDP checksum,
//! sink(transit^n(p + INT)) == p byte for byte, and every packet on the way
//! verifies by our check and by etherparse's.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::craft::{L4Spec, PacketSpec};
use int_core::int21::in_tunnel::{self, Tunnel, VXLAN_UDP_PORT};
use int_core::int21::transit::{NotPushed, Outcome};
use int_core::int21::tunnel::GpeShimRepr;
use int_core::int21::{HeaderType, HopMetadata, Instructions, MdHeaderRepr, SourceOnly};
use int_core::wire::geneve::{self, GeneveOptionRepr, GeneveRepr, INT_OPTION_CLASS, PROTOCOL_ETHERNET};
use int_core::wire::vxlan_gpe::{self, VxlanGpeRepr};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gpe,
    /// Plain VXLAN made VXLAN-GPE by the source (G).
    GpeFromVxlan,
    /// Geneve, with another option in front of INT's or not.
    Geneve {
        other_option: bool,
    },
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Gpe),
        Just(Kind::GpeFromVxlan),
        any::<bool>().prop_map(|other_option| Kind::Geneve { other_option }),
    ]
}

/// An INT-MD header and `hops` hops of node id and queue occupancy (Hop ML
/// 2), Remaining Hop Count `remaining`.
fn md_body(hops: u32, remaining: u8) -> Vec<u8> {
    let header = MdHeaderRepr {
        hop_ml: 2,
        remaining_hop_cnt: remaining,
        instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
        ..MdHeaderRepr::default()
    };
    let mut out = vec![0u8; 12 + hops as usize * 8];
    let mut at = header.emit(&mut out).unwrap();
    for node in (1..=hops).rev() {
        let hop = HopMetadata { node_id: Some(node), queue: Some((0, node * 16)), ..HopMetadata::default() };
        at += hop.emit(header.instructions, header.hop_ml, &mut out[at..]).unwrap();
    }
    out
}

/// The tunnel header and options as the tunnel had them, and as a source
/// of INT leaves them (with `body` in place); the UDP ports of each.
fn tunnel_headers(kind: Kind, body: &[u8]) -> ((Vec<u8>, u16), (Vec<u8>, u16)) {
    let words = (body.len() / 4) as u8;
    match kind {
        Kind::Gpe | Kind::GpeFromVxlan => {
            let from_vxlan = kind == Kind::GpeFromVxlan;
            let gpe = |next_protocol| VxlanGpeRepr {
                flags: vxlan_gpe::FLAG_I | vxlan_gpe::FLAG_P,
                next_protocol,
                vni: 0xabc,
            };
            let mut plain = vec![0u8; 8];
            gpe(vxlan_gpe::NEXT_ETHERNET).emit(&mut plain).unwrap();
            if from_vxlan {
                plain[0] = vxlan_gpe::FLAG_I;
                plain[3] = 0;
            }
            let mut int = vec![0u8; 12];
            gpe(vxlan_gpe::NEXT_INT).emit(&mut int).unwrap();
            let shim = GpeShimRepr {
                header_type: HeaderType::Md,
                length_words: words,
                from_vxlan,
                next_protocol: vxlan_gpe::NEXT_ETHERNET,
            };
            shim.emit(&mut int[8..]).unwrap();
            int.extend_from_slice(body);
            let plain_port = if from_vxlan { VXLAN_UDP_PORT } else { vxlan_gpe::UDP_PORT };
            ((plain, plain_port), (int, vxlan_gpe::UDP_PORT))
        }
        Kind::Geneve { other_option } => {
            let other: &[u8] =
                if other_option { &[0x01, 0x02, 0x05, 0x01, 0xde, 0xad, 0xbe, 0xef] } else { &[] };
            let base = |options_words: usize| GeneveRepr {
                options_words: options_words as u8,
                oam: false,
                critical: false,
                protocol_type: PROTOCOL_ETHERNET,
                vni: 0xabc,
            };
            let mut plain = vec![0u8; 8];
            base(other.len() / 4).emit(&mut plain).unwrap();
            plain.extend_from_slice(other);
            let mut int = vec![0u8; 8];
            base(other.len() / 4 + 1 + usize::from(words)).emit(&mut int).unwrap();
            int.extend_from_slice(other);
            let option = GeneveOptionRepr { class: INT_OPTION_CLASS, option_type: 1, length_words: words };
            let at = int.len();
            int.resize(at + 4, 0);
            option.emit(&mut int[at..]).unwrap();
            int.extend_from_slice(body);
            ((plain, geneve::UDP_PORT), (int, geneve::UDP_PORT))
        }
    }
}

/// The outer packet around `tunnel` and an inner frame, its UDP checksum
/// computed or 0.
fn outer(spec: &PacketSpec, port: u16, tunnel: &[u8], inner: &[u8], zero_checksum: bool) -> Vec<u8> {
    let mut spec = spec.clone();
    spec.l4 = L4Spec::Udp { src_port: 49152, dst_port: port, zero_checksum };
    spec.payload = [tunnel, inner].concat();
    spec.build()
}

/// Generated tunnel packets: the plain one and the one a source of INT made
/// of it; the outer spec's IP version, options and VLAN tag are the
/// generator's.
fn tunnel_case() -> impl Strategy<Value = (Kind, Vec<u8>, Vec<u8>, bool, (u32, u8))> {
    (kind(), packet_v4_v6(), 0u32..4, 0u8..6, any::<bool>(), 0usize..600).prop_map(
        |(kind, spec, hops, remaining, zero, inner_len)| {
            let body = md_body(hops, remaining);
            let ((plain_tunnel, plain_port), (int_tunnel, int_port)) = tunnel_headers(kind, &body);
            let inner: Vec<u8> = (0..inner_len + 14).map(|i| (i * 13 + 5) as u8).collect();
            let plain = outer(&spec, plain_port, &plain_tunnel, &inner, zero);
            let int = outer(&spec, int_port, &int_tunnel, &inner, zero);
            (kind, plain, int, zero, (hops, remaining))
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn sink_of_transit_is_the_tunnel_packet(case in tunnel_case(), transits in 0usize..5) {
        let (kind, plain, int, zero, (hops, remaining)) = case;
        let mut pushed = 0;
        prop_assert_eq!(verify_checksums_as(&int, zero), Ok(()));
        let mut packet = int;
        for node in 0..transits {
            let found = in_tunnel::find(&packet, SourceOnly::NONE).unwrap().unwrap();
            let mut buffer = Buffer::new(&packet);
            let hop = HopMetadata { node_id: Some(100 + node as u32), queue: Some((1, 7)), ..HopMetadata::default() };
            match buffer.with(|f| in_tunnel::push(f, &found.for_push(), 9000, &hop)) {
                Ok(Outcome::Pushed(8)) => pushed += 1,
                Ok(Outcome::MaxHopReached) => prop_assert_eq!(u32::from(remaining), pushed),
                Err(NotPushed::TooBig) => prop_assert!(matches!(kind, Kind::Geneve { .. }), "only a Geneve option fills up"),
                other => prop_assert!(false, "{other:?}"),
            }
            packet = buffer.frame().to_vec();
            prop_assert_eq!(verify_checksums_as(&packet, zero), Ok(()));
            prop_assert_eq!(etherparse_verdict(&packet), Ok(()));
        }
        let found = in_tunnel::find(&packet, SourceOnly::NONE).unwrap().unwrap();
        let int_core::int21::Body::Md(md) = found.body else { panic!("not MD") };
        prop_assert_eq!(u32::from(md.header.remaining_hop_cnt), u32::from(remaining) - pushed);
        prop_assert_eq!(md.hop_count() as u32, hops + pushed);
        prop_assert_eq!(md.hops().next().map(|h| h.node_id), (hops + pushed > 0).then_some(Some(if pushed > 0 { 99 + pushed } else { hops })));
        prop_assert_eq!(found.flow.dst_port, plain_dst_port(&packet));
        let mut buffer = Buffer::new(&packet);
        let removed = buffer.with(|f| in_tunnel::strip(f, &found.span())).unwrap();
        prop_assert_eq!(removed, packet.len() - plain.len());
        prop_assert_eq!(buffer.frame(), &plain[..]);
        prop_assert_eq!(in_tunnel::find(&plain, SourceOnly::NONE).unwrap(), None, "no INT left");
    }
}

/// The outer UDP destination port of a frame.
fn plain_dst_port(frame: &[u8]) -> u16 {
    let ip = int_core::locate::ip(frame).unwrap().unwrap();
    u16::from_be_bytes([frame[ip.l4 + 2], frame[ip.l4 + 3]])
}

/// Remaining Hop Count 0 sets E; an MTU too small sets M; a Geneve option
/// at 31 words takes no more.
#[test]
fn the_hop_rules_hold_in_tunnels() {
    let spec = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 0);
    let inner = vec![0x42u8; 60];
    let full_hop = HopMetadata { node_id: Some(9), queue: Some((0, 1)), ..HopMetadata::default() };
    let push = |int: &[u8], mtu: u16| {
        let found = in_tunnel::find(int, SourceOnly::NONE).unwrap().unwrap();
        let mut buffer = Buffer::new(int);
        let outcome = buffer.with(|f| in_tunnel::push(f, &found.for_push(), mtu, &full_hop));
        (outcome, buffer.frame().to_vec())
    };
    let (_, (tunnel, port)) = tunnel_headers(Kind::Gpe, &md_body(1, 0));
    let int = outer(&spec, port, &tunnel, &inner, false);
    let (outcome, out) = push(&int, 9000);
    assert_eq!(outcome, Ok(Outcome::MaxHopReached));
    assert_eq!(out[14 + 20 + 8 + 12] & 0x04, 0x04, "E set");
    assert_eq!(verify_checksums(&out), Ok(()));
    let (_, (tunnel, port)) = tunnel_headers(Kind::Gpe, &md_body(1, 3));
    let int = outer(&spec, port, &tunnel, &inner, false);
    let (outcome, out) = push(&int, (int.len() - 14) as u16 + 7);
    assert_eq!(outcome, Ok(Outcome::MtuExceeded));
    assert_eq!(out[14 + 20 + 8 + 12] & 0x02, 0x02, "M set");
    assert_eq!(verify_checksums(&out), Ok(()));
    // 12 + 8 x 14 = 124 bytes: 31 words, the most a Geneve option holds.
    let (_, (tunnel, port)) = tunnel_headers(Kind::Geneve { other_option: false }, &md_body(14, 3));
    let int = outer(&spec, port, &tunnel, &inner, false);
    let (outcome, out) = push(&int, 9000);
    assert_eq!(outcome, Err(NotPushed::TooBig));
    assert_eq!(out, int, "nothing changed");
    let found = in_tunnel::find(&int, SourceOnly::NONE).unwrap().unwrap();
    assert!(matches!(found.tunnel, Tunnel::Geneve { option_at: 50 }));
}

/// Cut anywhere inside the tunnel header or INT data, a packet is refused
/// (its UDP length lies) or not taken for INT; never read past its end.
#[test]
fn cut_tunnel_packets_are_refused() {
    let spec = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 0);
    for kind in [Kind::Gpe, Kind::GpeFromVxlan, Kind::Geneve { other_option: true }] {
        let (_, (tunnel, port)) = tunnel_headers(kind, &md_body(2, 3));
        let int = outer(&spec, port, &tunnel, &[0u8; 40], false);
        for cut in 14..int.len() {
            assert!(
                !matches!(in_tunnel::find(&int[..cut], SourceOnly::NONE), Ok(Some(_))),
                "{kind:?} cut {cut}"
            );
        }
        // Fixed UDP and IP lengths, the tunnel cut inside its INT data.
        let mut lying = int.clone();
        lying.truncate(14 + 20 + 8 + tunnel.len() - 4);
        let udp_len = (lying.len() - 34) as u16;
        lying[38..40].copy_from_slice(&udp_len.to_be_bytes());
        lying[16..18].copy_from_slice(&(udp_len + 20).to_be_bytes());
        assert!(in_tunnel::find(&lying, SourceOnly::NONE).is_err(), "{kind:?}: lying INT length");
    }
}

/// A source writing INT inside the tunnel (VXLAN made VXLAN-GPE, G set),
/// transit hops and a sink: sink(transit^n(source(p))) == p for generated
/// tunnel packets, the sink reading the source's hop and packet number, a
/// Geneve option's Remaining Hop Count kept to what 31 words hold.
#[test]
fn source_transit_sink_in_tunnels_is_identity() {
    use int_core::int21::{sink, source};
    let config = tunnel_source(20, 9000);
    let domain = config.domain;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let cases = (kind(), packet_v4_v6(), any::<bool>(), 0usize..600, 0usize..6, any::<u32>());
    let mut pushed_total = 0;
    for _ in 0..500 {
        let (kind, spec, zero, inner_len, transits, sequence) =
            proptest::strategy::ValueTree::current(&cases.new_tree(&mut runner).unwrap());
        let ((plain_tunnel, plain_port), _) = tunnel_headers(kind, &md_body(0, 0));
        let inner: Vec<u8> = (0..inner_len + 14).map(|i| (i * 13 + 5) as u8).collect();
        // Not marked for the domain's TCP/UDP INT: the tunnel carries it.
        let spec = PacketSpec { tos: spec.tos & 0x03, ..spec };
        let plain = outer(&spec, plain_port, &plain_tunnel, &inner, zero);
        let plan = source::plan_in_tunnel(&plain).unwrap().expect("a tunnel packet");
        let mut buffer = Buffer::new(&plain);
        let hop = HopMetadata { node_id: Some(1), queue: Some((0, 1)), ..HopMetadata::default() };
        buffer.with(|f| source::insert_in_tunnel(f, &plan, &config, &hop, sequence)).unwrap();
        let mut packet = buffer.frame().to_vec();
        assert_eq!(verify_checksums_as(&packet, zero), Ok(()), "{kind:?}");
        assert_eq!(etherparse_verdict(&packet), Ok(()));
        assert_eq!(source::plan_in_tunnel(&packet).unwrap(), None, "INT once only");
        if let Kind::Geneve { .. } = kind {
            let found = in_tunnel::find(&packet, domain.source_only).unwrap().unwrap();
            let int_core::int21::Body::Md(md) = found.body else { panic!("not MD") };
            let full = 12 + md.stack.len() + usize::from(md.header.remaining_hop_cnt) * 8;
            assert!(full <= 124 && full > 116, "the option fills up to 31 words: {full}");
        }
        for node in 0..transits {
            let hop = HopMetadata {
                node_id: Some(100 + node as u32),
                queue: Some((0, 2)),
                ..HopMetadata::default()
            };
            let found = in_tunnel::find(&packet, domain.source_only).unwrap().unwrap().for_push();
            let mut buffer = Buffer::new(&packet);
            match buffer.with(|f| in_tunnel::push(f, &found, 9000, &hop)) {
                Ok(Outcome::Pushed(_)) => pushed_total += 1,
                Ok(Outcome::MaxHopReached) => {}
                other => panic!("{kind:?}: {other:?}"),
            }
            packet = buffer.frame().to_vec();
            assert_eq!(verify_checksums_as(&packet, zero), Ok(()));
        }
        let found = sink::extract(&packet, &domain, &int_core::hop_rule::HopRule::default())
            .unwrap()
            .expect("INT in the tunnel");
        // The sink's fast path leaves INT in tunnels to the general one.
        let fast = int_core::int21::fast_sink::FastSink::find(
            &packet,
            &domain,
            &int_core::hop_rule::HopRule::default(),
        );
        assert_eq!(fast, int_core::int21::fast_sink::FastArrival::Other, "{kind:?}");
        assert_eq!(found.sequence, Some(sequence));
        assert_eq!(found.source_hop.unwrap().node_id, Some(1));
        let mut buffer = Buffer::new(&packet);
        buffer.with(|f| sink::strip(f, &found)).unwrap();
        assert_eq!(buffer.frame(), &plain[..], "{kind:?}");
    }
    assert!(pushed_total > 500, "transit pushed {pushed_total} times");
}

/// A source's MTU rule inside a tunnel (INT 2.1 section 5.3): without room
/// for its own metadata, the header alone with M; without room for that,
/// the packet is left alone.
#[test]
fn a_tunnel_source_keeps_to_the_mtu() {
    use int_core::int21::{sink, source};
    use int_core::outcome::Skip;
    let domain = tunnel_source(4, 9000).domain;
    let spec = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 0);
    let ((tunnel, port), _) = tunnel_headers(Kind::Gpe, &md_body(0, 0));
    let plain = outer(&spec, port, &tunnel, &[0x42; 100], false);
    let ip_len = (plain.len() - 14) as u16;
    // Header only: 4 (shim) + 12; with the hop (node id, queue) and the
    // packet number: 4 + 12 + 8 + 4.
    for (mtu, expected) in [(ip_len + 28, Ok(28)), (ip_len + 27, Ok(16)), (ip_len + 15, Err(Skip::TooBig))] {
        let config = tunnel_source(4, mtu);
        let plan = source::plan_in_tunnel(&plain).unwrap().unwrap();
        let mut buffer = Buffer::new(&plain);
        let hop = HopMetadata { node_id: Some(1), queue: Some((0, 1)), ..HopMetadata::default() };
        let added = buffer.with(|f| source::insert_in_tunnel(f, &plan, &config, &hop, 9));
        assert_eq!(added, expected, "MTU {mtu}");
        if let Ok(added) = added {
            assert_eq!(verify_checksums(buffer.frame()), Ok(()));
            let found = sink::extract(buffer.frame(), &domain, &int_core::hop_rule::HopRule::default())
                .unwrap()
                .unwrap();
            let int_core::int21::Body::Md(md) =
                in_tunnel::find(buffer.frame(), domain.source_only).unwrap().unwrap().body
            else {
                panic!("not MD")
            };
            assert_eq!(md.header.mtu_exceeded, added == 16, "M only without the source's metadata");
            assert_eq!((found.hop_count, found.sequence), if added == 16 { (0, None) } else { (1, Some(9)) });
        } else {
            assert_eq!(buffer.frame(), &plain[..], "left alone");
        }
    }
}

/// An INT-MD source of a DSCP-marked domain that numbers packets: node id
/// and queue occupancy (Hop ML 2), Remaining Hop Count `max_hops`.
fn tunnel_source(max_hops: u8, max_ip_len: u16) -> int_core::int21::source::SourceConfig {
    use int_core::int21::{Domain, Marking};
    use int_core::marking::{DscpMatch, TcpPlacement};
    int_core::int21::source::SourceConfig {
        domain: Domain {
            marking: Marking::Dscp(DscpMatch::new(0x17, 0x3f).unwrap()),
            tcp_placement: TcpPlacement::BeforeOptions,
            source_only: SourceOnly::sequence(0x4944),
        },
        header_type: HeaderType::Md,
        instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
        ds_words: 0,
        max_hops,
        own_hop: true,
        domain_id: 0x4944,
        ds_instructions: int_core::int21::source_only::SEQUENCE,
        ds_flags: 0,
        discard: false,
        max_ip_len,
    }
}
