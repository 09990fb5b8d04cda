//! Property tests: sink(transit^n(source(p))) == p for generated IPv4 and
//! IPv6 UDP/TCP packets (IPv4 options, IPv6 extension headers, VLAN, sizes
//! up to the MTU, zero UDP checksums), in both encapsulations, both shim Types and both TCP
//! placements; every intermediate packet's checksums verify, by our check
//! and by etherparse's.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::craft::{L4Spec, PacketSpec};
use int_core::int05::sink;
use int_core::int05::source::{self, SourceConfig, TailStyle};
use int_core::int05::transit::{self, Outcome, TransitConfig};
use int_core::int05::{Encapsulation, Instructions, ShapeCache, ShimType};
use int_core::marking::TcpPlacement;
use proptest::prelude::*;

const MTU: u16 = 1500;

fn source_config() -> impl Strategy<Value = SourceConfig> {
    let encapsulation = prop_oneof![
        (1u8..64, 1u8..64)
            .prop_map(|(dscp_value, dscp_mask)| Encapsulation::OverTcpUdp { dscp_value, dscp_mask }),
        any::<u16>().prop_map(|port| Encapsulation::ExtensionUdp { port }),
    ];
    (encapsulation, any::<bool>(), any::<bool>(), 1u16..=0xff, 1u8..8, any::<bool>(), any::<bool>()).prop_map(
        |(encapsulation, after_options, host_int, bits, max_hop_cnt, own_hop, informative)| SourceConfig {
            encapsulation,
            tcp_placement: if after_options {
                TcpPlacement::AfterOptions
            } else {
                TcpPlacement::BeforeOptions
            },
            shim_type: if host_int { ShimType::HostIntSequence } else { ShimType::HopByHop },
            instructions: Instructions::from_bits_retain(bits << 8),
            max_hop_cnt,
            own_hop,
            max_ip_len: MTU,
            tail: if informative { TailStyle::Informative } else { TailStyle::HostInt },
        },
    )
}

/// The packet as the source would see it: not already marked, IP length
/// within the MTU once INT is added. With Host-INT's tail a sink cannot
/// give back mark bits the original DSCP had: such packets start without.
fn instrumentable(spec: &PacketSpec, config: &SourceConfig) -> Option<Vec<u8>> {
    let mut spec = spec.clone();
    if config.tail == TailStyle::HostInt {
        spec.tos &= !config.encapsulation.tos_mask();
    }
    let frame = spec.build();
    source::plan(&frame, config).ok().map(|_| frame)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn sink_of_source_is_identity(spec in packet_v4_v6(), config in source_config(), transits in 0usize..4, seq in any::<u32>()) {
        prop_assume!(config.check().is_ok());
        let Some(original) = instrumentable(&spec, &config) else { return Ok(()) };
        let zero = zero_udp(&spec);
        prop_assert!(verify_checksums_as(&original, zero).is_ok());
        prop_assert_eq!(etherparse_verdict(&original), Ok(()));
        let mut packet = run_source(&original, &config, seq);
        prop_assert_eq!(verify_checksums_as(&packet, zero), Ok(()));
        prop_assert_eq!(etherparse_verdict(&packet), Ok(()));
        let transit = TransitConfig { domain: domain(&config), max_ip_len: MTU + 200 };
        let mut hops = u8::from(config.own_hop);
        for node in 0..transits {
            let (next, pushed) = run_transit(&packet, &transit, node as u32 + 100);
            match pushed {
                Outcome::Pushed(n) => {
                    prop_assert_eq!(n, config.instructions.hop_len());
                    hops += 1;
                }
                Outcome::MaxHopReached => prop_assert_eq!(hops, config.max_hop_cnt),
                Outcome::DestinationOnly => prop_assert!(false, "source writes hop-by-hop types"),
            }
            prop_assert_eq!(verify_checksums_as(&next, zero), Ok(()));
            prop_assert_eq!(etherparse_verdict(&next), Ok(()));
            packet = next;
        }
        let (restored, found) = run_sink(&packet, &domain(&config));
        prop_assert_eq!(found.header.total_hop_cnt, hops);
        prop_assert_eq!(found.sequence, config.shim_type.has_sequence().then_some(seq));
        let (src_port, dst_port) = match spec.l4 {
            L4Spec::Udp { src_port, dst_port, .. } | L4Spec::Tcp { src_port, dst_port, .. } => (src_port, dst_port),
        };
        prop_assert_eq!((found.flow.src_port, found.flow.dst_port), (src_port, dst_port));
        prop_assert_eq!(found.flow.src, spec_src(&spec));
        prop_assert_eq!(restored, original);
    }

    /// The node's path (a template built once, the time patched per packet)
    /// writes exactly what a fresh per-packet build writes.
    #[test]
    fn template_matches_fresh_build(spec in packet_v4_v6(), config in source_config(), seq in any::<u32>(), time in any::<u32>()) {
        prop_assume!(config.check().is_ok());
        let Some(original) = instrumentable(&spec, &config) else { return Ok(()) };
        let plan = source::plan(&original, &config).unwrap();
        let hop = |t: u32| int_core::int05::HopMetadata { hop_latency: Some(5), ..int_core::int05::HopMetadata::host_int(9, 2, t) };
        let mut fresh = Buffer::new(&original);
        fresh.with(|f| source::insert(f, &plan, &config, seq, &hop(time))).unwrap();
        let template = source::Template::new(&config, &hop(0)).unwrap();
        let mut patched = Buffer::new(&original);
        patched.with(|f| source::insert_with(f, &plan, &config, &template, seq, Some(time))).unwrap();
        prop_assert_eq!(patched.frame(), fresh.frame());
        prop_assert_eq!(verify_checksums_as(patched.frame(), zero_udp(&spec)), Ok(()));
    }

    /// Checksums that were wrong on arrival stay exactly as wrong after the
    /// round trip: the node never "fixes" or further breaks a packet.
    #[test]
    fn wrong_checksums_survive_unchanged(spec in packet_v4_v6(), config in source_config(), junk in any::<u16>()) {
        prop_assume!(config.check().is_ok());
        let Some(mut original) = instrumentable(&spec, &config) else { return Ok(()) };
        let ip = int_core::locate::ip(&original).unwrap().unwrap();
        let at = if is_udp(&original) { ip.l4 + 6 } else { ip.l4 + 16 };
        prop_assume!(junk != 0 && junk != 0xffff);
        original[at..at + 2].copy_from_slice(&junk.to_be_bytes());
        let packet = run_source(&original, &config, 1);
        let (restored, _) = run_sink(&packet, &domain(&config));
        prop_assert_eq!(restored, original);
    }

    /// One shape cache kept across packets of many shapes (configurations,
    /// hop counts, cuts), as the node's sink and transit stages keep one,
    /// gives exactly the parser's answers and bytes.
    #[test]
    fn a_kept_shape_cache_answers_as_the_parser(
        items in proptest::collection::vec((packet_v4_v6(), source_config(), 0usize..3, any::<u32>()), 1..8),
        rounds in 1usize..3,
    ) {
        let mut shapes = ShapeCache::default();
        let hop = sink_hop(7, 1);
        for _ in 0..rounds {
            for (spec, config, transits, seq) in &items {
                if config.check().is_err() {
                    continue;
                }
                let Some(original) = instrumentable(spec, config) else { continue };
                let mut packet = run_source(&original, config, *seq);
                let transit = TransitConfig { domain: domain(config), max_ip_len: MTU + 200 };
                for _ in 0..*transits {
                    let mut cold = Buffer::new(&packet);
                    let mut warm = Buffer::new(&packet);
                    let pushed = cold.with(|f| transit::push(f, &transit, &hop));
                    prop_assert_eq!(warm.with(|f| transit::push_with(f, &transit, &hop, &mut shapes)), pushed);
                    prop_assert_eq!(warm.frame(), cold.frame());
                    packet = cold.frame().to_vec();
                }
                // Whole, and cut inside the block (a lying length).
                for len in [packet.len(), packet.len() - 1, packet.len() - 5] {
                    let frame = &packet[..len];
                    let sink_config = domain(config);
                    prop_assert_eq!(
                        sink::extract_with(frame, &sink_config, &mut shapes),
                        sink::extract(frame, &sink_config)
                    );
                }
            }
        }
    }
}

/// Guards the generators: most generated cases must reach the round trip,
/// or the properties above would pass on nothing.
#[test]
fn most_generated_packets_are_instrumented() {
    assert_mostly_usable((packet_v4_v6(), source_config()), |(spec, config)| {
        config.check().is_ok() && instrumentable(spec, config).is_some()
    });
    let v6 = (ipv6_spec(), packet(), source_config())
        .prop_map(|(v6, spec, config)| (PacketSpec { ipv6: Some(v6), ..spec }, config));
    assert_mostly_usable(v6, |(spec, config)| {
        config.check().is_ok() && instrumentable(spec, config).is_some()
    });
}
