//! INT 2.1 property tests: sink(transit^n(source(p))) == p for generated
//! IPv4 and IPv6 (with extension headers) UDP/TCP packets in every marking (DSCP with NPT 0, a UDP port with
//! NPT 1 for UDP and NPT 2 for TCP), TCP placements before and after the
//! options, zero UDP checksums, the checksum complement asked for or not,
//! INT-MD (with the source-only packet number or without) and INT-MX;
//! every packet on the wire verifies by our check and by
//! etherparse's, and the hop rules hold (Remaining Hop Count, E, M).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::craft::{L4Spec, PacketSpec};
use int_core::int21::sink;
use int_core::int21::source::{self, SourceConfig};
use int_core::int21::source_only::{SourceOnly, SEQUENCE};
use int_core::int21::transit::{self, Outcome};
use int_core::int21::{Domain, HeaderType, HopMetadata, Instructions, Marking, Next};
use int_core::marking::{DscpMatch, TcpPlacement};
use proptest::prelude::*;

const MTU: u16 = 1500;

fn config() -> impl Strategy<Value = SourceConfig> {
    let marking = prop_oneof![
        (1u8..64, 1u8..64).prop_map(|(value, mask)| Marking::Dscp(DscpMatch::new(value, mask).unwrap())),
        (1024u16..65535).prop_map(Marking::UdpPort),
    ];
    let shape = (1u16..0x3ff, 0u8..21, 1u8..6, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>());
    (marking, any::<bool>(), shape).prop_map(
        |(marking, after_options, (bits, ds_words, max_hops, own_hop, mx, complement, numbered))| {
            // Bits 0-8 of the bitmap from `bits`, bit 15 when asked.
            let instructions = Instructions::from_bits_retain(((bits & 0x1ff) << 7) | u16::from(complement));
            SourceConfig {
                domain: Domain {
                    marking,
                    tcp_placement: if after_options {
                        TcpPlacement::AfterOptions
                    } else {
                        TcpPlacement::BeforeOptions
                    },
                    source_only: SourceOnly::sequence(DOMAIN_ID),
                },
                header_type: if mx { HeaderType::Mx } else { HeaderType::Md },
                instructions,
                ds_words,
                max_hops,
                own_hop,
                domain_id: DOMAIN_ID,
                ds_instructions: if numbered { SEQUENCE } else { 0 },
                ds_flags: 0,
                discard: false,
                max_ip_len: MTU,
            }
        },
    )
}

const DOMAIN_ID: u16 = 0x4944;

fn hop(node: u32) -> HopMetadata {
    HopMetadata {
        node_id: Some(node),
        l1_ingress_port: Some(1),
        l1_egress_port: Some(2),
        hop_latency: Some(3),
        ingress_timestamp: Some(0x0123_4567_89ab_cdef),
        egress_timestamp: Some(0x0123_4567_89ab_cdf0),
        checksum_complement: Some(5),
        ..HopMetadata::default()
    }
}

/// The packet as a source would see it: not marked by the domain already.
fn instrumentable(spec: &PacketSpec, config: &SourceConfig) -> Option<Vec<u8>> {
    let mut spec = spec.clone();
    if let Marking::Dscp(dscp) = config.domain.marking {
        spec.tos &= !dscp.tos_mask();
    }
    let frame = spec.build();
    source::plan(&frame, config).ok().map(|_| frame)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn sink_of_source_is_identity(spec in packet_v4_v6(), config in config(), transits in 0usize..4, sequence in any::<u32>()) {
        prop_assume!(config.check().is_ok());
        let Some(original) = instrumentable(&spec, &config) else { return Ok(()) };
        let plan = source::plan(&original, &config).unwrap();
        let mut buffer = Buffer::new(&original);
        let added = buffer.with(|f| source::insert(f, &plan, &config, &hop(1), sequence)).unwrap();
        prop_assert_eq!(added, plan.added_len(&config));
        let mut packet = buffer.frame().to_vec();
        prop_assert_eq!(verify_checksums_as(&packet, zero_udp(&spec)), Ok(()));
        prop_assert_eq!(etherparse_verdict(&packet), Ok(()));
        let pushes_at_source =
            usize::from(config.own_hop && config.header_type == HeaderType::Md && !plan.mtu_exceeded);
        let mut hops = pushes_at_source;
        for node in 0..transits {
            let mut buffer = Buffer::new(&packet);
            let outcome = buffer.with(|f| transit::push(f, &config.domain, MTU + 400, &hop(100 + node as u32))).unwrap();
            match outcome {
                Outcome::Pushed(n) => {
                    prop_assert_eq!(n, usize::from(config.hop_ml()) * 4);
                    hops += 1;
                    prop_assert!(hops <= usize::from(config.max_hops), "pushed past Remaining Hop Count");
                }
                Outcome::MaxHopReached => prop_assert_eq!(hops, usize::from(config.max_hops)),
                Outcome::Mx => prop_assert_eq!(config.header_type, HeaderType::Mx),
                Outcome::MtuExceeded => prop_assert!(false, "the transit MTU leaves room"),
            }
            packet = buffer.frame().to_vec();
            prop_assert_eq!(verify_checksums_as(&packet, zero_udp(&spec)), Ok(()));
            prop_assert_eq!(etherparse_verdict(&packet), Ok(()));
        }
        if let int_core::int21::Block::Md(md) = int_core::int21::find(&packet, &config.domain).unwrap().unwrap().block {
            prop_assert_eq!(usize::from(md.header.remaining_hop_cnt), usize::from(config.max_hops) - hops);
            prop_assert_eq!(md.header.max_hop_exceeded, transits > 0 && hops == usize::from(config.max_hops) && transits > hops - pushes_at_source);
        }
        let found = sink::extract(&packet, &config.domain, &int_core::hop_rule::HopRule::default()).unwrap().unwrap();
        prop_assert_eq!(found.hop_count, hops);
        prop_assert_eq!(found.is_mx, config.header_type == HeaderType::Mx);
        let numbered = config.ds_instructions == SEQUENCE && config.header_type == HeaderType::Md && !plan.mtu_exceeded;
        prop_assert_eq!(found.sequence, Some(sequence).filter(|_| numbered));
        if pushes_at_source == 1 {
            prop_assert_eq!(found.source_hop.unwrap().node_id, Some(1).filter(|_| config.instructions.contains(Instructions::NODE_ID)));
        }
        let (src_port, dst_port) = match spec.l4 {
            L4Spec::Udp { src_port, dst_port, .. } | L4Spec::Tcp { src_port, dst_port, .. } => (src_port, dst_port),
        };
        prop_assert_eq!((found.flow.src_port, found.flow.dst_port), (src_port, dst_port));
        prop_assert_eq!(found.flow.src, spec_src(&spec));
        let expected_next = match (config.domain.marking, is_udp(&original)) {
            (Marking::Dscp(_), _) => matches!(found.next, Some(Next::Dscp(_))),
            (Marking::UdpPort(_), true) => matches!(found.next, Some(Next::UdpPort(_))),
            (Marking::UdpPort(_), false) => matches!(found.next, Some(Next::IpProtocol(6))),
        };
        prop_assert!(expected_next, "{:?}", found.next);
        let mut buffer = Buffer::new(&packet);
        let removed = buffer.with(|f| sink::strip(f, &found)).unwrap();
        prop_assert_eq!(removed, packet.len() - original.len());
        prop_assert_eq!(buffer.frame(), &original[..]);
    }

    /// A source whose MTU leaves room for the fixed headers but not its own
    /// metadata instruments without it and sets M; a transit hop that
    /// cannot push within its MTU sets M and pushes nothing.
    #[test]
    fn the_mtu_rules(spec in packet_v4_v6(), config in config()) {
        let config = SourceConfig { header_type: HeaderType::Md, own_hop: true, ..config };
        prop_assume!(config.check().is_ok());
        let Some(original) = instrumentable(&spec, &config) else { return Ok(()) };
        let ip_len = (original.len() - 14 - if spec.vlan.is_some() { 4 } else { 0 }) as u16;
        let udp = if matches!(config.domain.marking, Marking::UdpPort(_)) && !is_udp(&original) { 8 } else { 0 };
        let tight = SourceConfig { max_ip_len: ip_len + 16 + udp, ..config };
        let plan = source::plan(&original, &tight).unwrap();
        prop_assert!(plan.mtu_exceeded);
        let mut buffer = Buffer::new(&original);
        buffer.with(|f| source::insert(f, &plan, &tight, &hop(1), 7)).unwrap();
        let packet = buffer.frame().to_vec();
        let found = sink::extract(&packet, &config.domain, &int_core::hop_rule::HopRule::default()).unwrap().unwrap();
        prop_assert_eq!(found.hop_count, 0);
        let int_core::int21::Block::Md(md) = int_core::int21::find(&packet, &config.domain).unwrap().unwrap().block else { panic!() };
        prop_assert!(md.header.mtu_exceeded);
        prop_assert_eq!(md.header.remaining_hop_cnt, config.max_hops, "nothing pushed, nothing decremented");
        let mut at_transit = Buffer::new(&packet);
        let outcome = at_transit.with(|f| transit::push(f, &config.domain, ip_len + 16 + udp, &hop(2))).unwrap();
        prop_assert_eq!(outcome, Outcome::MtuExceeded);
        prop_assert_eq!(at_transit.frame().len(), packet.len());
        prop_assert_eq!(verify_checksums_as(at_transit.frame(), zero_udp(&spec)), Ok(()));
        let mut restored = Buffer::new(at_transit.frame());
        let found = sink::extract(at_transit.frame(), &config.domain, &int_core::hop_rule::HopRule::default()).unwrap().unwrap();
        restored.with(|f| sink::strip(f, &found)).unwrap();
        prop_assert_eq!(restored.frame(), &original[..]);
    }
}

/// Guards the generators: most generated cases must reach the round trip.
#[test]
fn most_generated_packets_are_instrumented() {
    assert_mostly_usable((packet_v4_v6(), config()), |(spec, config)| {
        config.check().is_ok() && instrumentable(spec, config).is_some()
    });
}

/// The longest block a source writes (Hop ML 31: every baseline bit 0-8,
/// the checksum complement and domain words; its own hop and the packet
/// number) fits, and the sink takes it out again.
#[test]
fn the_longest_source_block_fits() {
    let instructions = Instructions::from_bits_retain((0x1ff << 7) | 1);
    let config = SourceConfig {
        domain: Domain {
            marking: Marking::Dscp(DscpMatch::new(0x17, 0x3f).unwrap()),
            tcp_placement: TcpPlacement::BeforeOptions,
            source_only: SourceOnly::sequence(DOMAIN_ID),
        },
        header_type: HeaderType::Md,
        instructions,
        ds_words: 31 - instructions.words() as u8,
        max_hops: 5,
        own_hop: true,
        domain_id: DOMAIN_ID,
        ds_instructions: SEQUENCE,
        ds_flags: 0,
        discard: false,
        max_ip_len: MTU,
    };
    assert_eq!(config.hop_ml(), 31);
    assert_eq!(config.check(), Ok(()));
    let original = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1000, 2000, 100).build();
    let plan = source::plan(&original, &config).unwrap();
    let mut buffer = Buffer::new(&original);
    let added = buffer.with(|f| source::insert(f, &plan, &config, &hop(1), 77)).unwrap();
    assert_eq!(added, 4 + 12 + 31 * 4 + 4);
    let packet = buffer.frame().to_vec();
    let found =
        sink::extract(&packet, &config.domain, &int_core::hop_rule::HopRule::default()).unwrap().unwrap();
    assert_eq!((found.hop_count, found.sequence), (1, Some(77)));
    assert_eq!(found.source_hop.and_then(|hop| hop.node_id), Some(1));
    let mut buffer = Buffer::new(&packet);
    buffer.with(|f| sink::strip(f, &found)).unwrap();
    assert_eq!(buffer.frame(), &original[..]);
}
