//! Helpers shared by the integration tests: checksum verification, and the
//! node-like steps (source with a sequence number, transit, sink) over
//! vectors with headroom.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::{Ipv4Addr, Ipv6Addr};

use int_core::checksum;
use int_core::craft::{Ipv6Spec, L4Spec, PacketSpec};
use int_core::int05::sink::{self, Extracted};
use int_core::int05::source::{self, SourceConfig};
use int_core::int05::transit::{self, Outcome, TransitConfig};
use int_core::int05::{Domain, Encapsulation, HopMetadata};
use int_core::locate::{self, L4};
use int_core::FrameBuf;
use proptest::prelude::*;

pub const HEADROOM: usize = 512;

/// A frame in a buffer with `HEADROOM` bytes in front.
pub struct Buffer {
    pub bytes: Vec<u8>,
    pub start: usize,
    pub len: usize,
}

impl Buffer {
    pub fn new(frame: &[u8]) -> Self {
        let mut bytes = vec![0x5a; HEADROOM + frame.len()];
        bytes[HEADROOM..].copy_from_slice(frame);
        Buffer { bytes, start: HEADROOM, len: frame.len() }
    }

    pub fn frame(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }

    pub fn with<R>(&mut self, f: impl FnOnce(&mut FrameBuf<'_>) -> R) -> R {
        let mut frame = FrameBuf::new(&mut self.bytes, self.start, self.len).unwrap();
        let result = f(&mut frame);
        self.start = frame.start();
        self.len = frame.len();
        result
    }
}

/// Checks the IPv4 header checksum and the L4 checksum (pseudo-header
/// included, IPv4's or IPv6's; a UDP checksum of 0 passes over IPv4 and
/// fails over IPv6, which forbids it, unless `zero_udp_ok`: a packet that
/// arrived with one keeps it). In the UDP encapsulation the checksum of
/// the outer UDP header is checked over everything after it.
pub fn verify_checksums(frame: &[u8]) -> Result<(), String> {
    verify_checksums_as(frame, false)
}

pub fn verify_checksums_as(frame: &[u8], zero_udp_ok: bool) -> Result<(), String> {
    let Some(ip) = locate::ip(frame).map_err(|e| e.to_string())? else { return Ok(()) };
    let addresses = match ip.version {
        locate::IpVersion::V4 => {
            if checksum::checksum(&frame[ip.l3..ip.l4]) != 0 {
                return Err("ipv4 header checksum".into());
            }
            checksum::sum(0, &frame[ip.l3 + 12..ip.l3 + 20])
        }
        locate::IpVersion::V6 => checksum::sum(0, &frame[ip.l3 + 8..ip.l3 + 40]),
    };
    let l4 = &frame[ip.l4..ip.end];
    if ip.protocol == 17 && l4[6] == 0 && l4[7] == 0 {
        return match ip.version {
            locate::IpVersion::V6 if !zero_udp_ok => Err("udp checksum 0 over ipv6".into()),
            _ => Ok(()),
        };
    }
    let pseudo = addresses + u32::from(ip.protocol) + l4.len() as u32;
    match checksum::fold(checksum::sum(pseudo, l4)) {
        0xffff => Ok(()),
        other => Err(format!("l4 checksum sums to {other:#06x}")),
    }
}

pub fn sink_hop(node: u32, time: u32) -> HopMetadata {
    HopMetadata::host_int(node, 9, time)
}

/// Runs the source on `frame`; returns the instrumented frame.
pub fn run_source(frame: &[u8], config: &SourceConfig, sequence: u32) -> Vec<u8> {
    let plan = source::plan(frame, config).unwrap();
    let mut buffer = Buffer::new(frame);
    let hop = HopMetadata::host_int(0x0a00_0001, 1, 0x5e00_0001);
    let added = buffer.with(|f| source::insert(f, &plan, config, sequence, &hop)).unwrap();
    assert_eq!(buffer.len, frame.len() + added);
    buffer.frame().to_vec()
}

pub fn run_transit(frame: &[u8], config: &TransitConfig, node: u32) -> (Vec<u8>, Outcome) {
    let mut buffer = Buffer::new(frame);
    let hop =
        HopMetadata { switch_id: Some(node), queue_occupancy: Some(node * 16), ..HopMetadata::default() };
    let pushed = buffer.with(|f| transit::push(f, config, &hop)).unwrap();
    (buffer.frame().to_vec(), pushed)
}

pub fn run_sink(frame: &[u8], config: &Domain) -> (Vec<u8>, Extracted) {
    let found = sink::extract(frame, config).unwrap().expect("an INT packet");
    let mut buffer = Buffer::new(frame);
    buffer.with(|f| sink::strip(f, &found, config)).unwrap();
    (buffer.frame().to_vec(), found)
}

pub fn domain(config: &SourceConfig) -> Domain {
    Domain { encapsulation: config.encapsulation, tcp_placement: config.tcp_placement }
}

pub fn is_udp(frame: &[u8]) -> bool {
    let ip = locate::ip(frame).unwrap().unwrap();
    matches!(locate::l4(frame, &ip).unwrap(), Some(L4::Udp { .. }))
}

pub fn extension(port: u16) -> Encapsulation {
    Encapsulation::ExtensionUdp { port }
}

/// An oracle nobody here wrote: etherparse walks the frame (Ethernet, VLAN,
/// IPv4 lengths and options or IPv6 and its extension headers, UDP length,
/// TCP Data Offset) and recomputes the IPv4 header, UDP and TCP checksums.
/// In the UDP encapsulation it sees the outer headers only (over IPv4 the
/// extension UDP checksum is 0, as Host-INT writes it).
pub fn etherparse_verdict(frame: &[u8]) -> Result<(), String> {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let packet = SlicedPacket::from_ethernet(frame).map_err(|e| format!("etherparse: {e}"))?;
    let (v4, v6) = match &packet.net {
        Some(NetSlice::Ipv4(ip)) => {
            let header = ip.header().to_header();
            if header.calc_header_checksum() != ip.header().header_checksum() {
                return Err("etherparse: ipv4 header checksum".into());
            }
            if ip.is_payload_fragmented() {
                return Ok(());
            }
            (Some(header), None)
        }
        Some(NetSlice::Ipv6(ip)) => {
            if ip.is_payload_fragmented() {
                return Ok(());
            }
            (None, Some(ip.header().to_header()))
        }
        _ => return Err("etherparse: no IP".into()),
    };
    let verdict =
        |ok: bool, what: &str| ok.then_some(()).ok_or_else(|| format!("etherparse: {what} checksum"));
    match (packet.transport, v4, v6) {
        // Over IPv6 a 0 is judged by verify_checksums.
        (Some(TransportSlice::Udp(udp)), _, _) if udp.checksum() == 0 => Ok(()),
        (Some(TransportSlice::Udp(udp)), Some(header), _) => {
            let expected =
                udp.to_header().calc_checksum_ipv4(&header, udp.payload()).map_err(|e| e.to_string())?;
            verdict(expected == udp.checksum(), "udp")
        }
        (Some(TransportSlice::Udp(udp)), _, Some(header)) => {
            let expected =
                udp.to_header().calc_checksum_ipv6(&header, udp.payload()).map_err(|e| e.to_string())?;
            verdict(expected == udp.checksum(), "udp")
        }
        (Some(TransportSlice::Tcp(tcp)), Some(header), _) => {
            let expected =
                tcp.calc_checksum_ipv4(header.source, header.destination).map_err(|e| e.to_string())?;
            verdict(expected == tcp.checksum(), "tcp")
        }
        (Some(TransportSlice::Tcp(tcp)), _, Some(header)) => {
            let expected =
                tcp.calc_checksum_ipv6(header.source, header.destination).map_err(|e| e.to_string())?;
            verdict(expected == tcp.checksum(), "tcp")
        }
        _ => Err("etherparse: no UDP or TCP".into()),
    }
}

/// Generated IPv6 headers: random addresses and flow label, and up to
/// three extension headers in RFC 8200's order (Hop-by-Hop, Routing with
/// Segments Left 0, Destination Options), each of 8 to 24 bytes.
pub fn ipv6_spec() -> impl Strategy<Value = Ipv6Spec> {
    use int_core::craft::ipv6_options;
    use int_core::wire::ipv6::{DESTINATION_OPTIONS, HOP_BY_HOP, ROUTING};
    let extension = |kind: u8| proptest::option::of((0u8..3).prop_map(move |units| (kind, units)));
    (
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        0u32..0x10_0000,
        extension(HOP_BY_HOP),
        extension(ROUTING),
        extension(DESTINATION_OPTIONS),
    )
        .prop_map(|(src, dst, flow_label, hop, routing, destination)| {
            let extensions = [hop, routing, destination]
                .into_iter()
                .flatten()
                .map(|(kind, units)| {
                    let mut bytes = ipv6_options(units);
                    if kind == ROUTING {
                        // Routing Type 253 (RFC 4727's experimental), Segments Left 0.
                        bytes[2..].fill(0);
                        bytes[2] = 253;
                    }
                    (kind, bytes)
                })
                .collect();
            Ipv6Spec { src: src.into(), dst: dst.into(), flow_label, extensions }
        })
}

/// Whether `spec` is a UDP packet sent without a checksum (which over IPv6
/// only tunnels may do, RFC 6935): its instrumented forms keep the 0.
pub fn zero_udp(spec: &PacketSpec) -> bool {
    matches!(spec.l4, L4Spec::Udp { zero_checksum: true, .. })
}

/// The source address a flow key of `spec` carries.
pub fn spec_src(spec: &PacketSpec) -> std::net::IpAddr {
    match &spec.ipv6 {
        Some(v6) => v6.src.into(),
        None => spec.src.into(),
    }
}

/// Generated IPv4 UDP and TCP packets: IP and TCP options, VLAN tags, any
/// ToS, payloads up to 1399 bytes, zero UDP checksums.
pub fn packet() -> impl Strategy<Value = PacketSpec> {
    packet_of(Just(None))
}

/// [`packet`], IPv6 (with [`ipv6_spec`]'s extension headers) in about half
/// of them.
pub fn packet_v4_v6() -> impl Strategy<Value = PacketSpec> {
    packet_of(proptest::option::of(ipv6_spec()))
}

fn packet_of(ipv6: impl Strategy<Value = Option<Ipv6Spec>>) -> impl Strategy<Value = PacketSpec> {
    let options = |max_words: usize| {
        proptest::collection::vec(any::<u8>(), 0..=max_words).prop_map(|words| {
            // Whole 4-byte words: NOPs (1) then the generated bytes padded.
            let mut bytes: Vec<u8> = words.iter().flat_map(|w| [1, 1, 1, *w | 1]).collect();
            bytes.truncate(40);
            bytes
        })
    };
    let l4 = prop_oneof![
        (any::<u16>(), any::<u16>(), any::<bool>()).prop_map(|(src_port, dst_port, zero_checksum)| {
            L4Spec::Udp { src_port, dst_port, zero_checksum }
        }),
        (any::<u16>(), any::<u16>(), any::<u32>(), options(10))
            .prop_map(|(src_port, dst_port, seq, options)| L4Spec::Tcp { src_port, dst_port, seq, options }),
    ];
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        proptest::option::of(0u16..4096),
        any::<u8>(),
        options(10),
        l4,
        0usize..1400,
        any::<u16>(),
        ipv6,
    )
        .prop_map(|(src, dst, vlan, tos, ip_options, l4, payload_len, ident, ipv6)| PacketSpec {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            vlan,
            src: Ipv4Addr::from(src),
            dst: Ipv4Addr::from(dst),
            tos,
            ttl: 64,
            ident,
            ip_options,
            ipv6,
            l4,
            payload: (0..payload_len).map(|i| (i * 7 + 3) as u8).collect(),
        })
}

/// Guards a property's generators: at least 800 of 1000 generated cases
/// must be `usable`, or the property would pass on next to nothing.
pub fn assert_mostly_usable<S: Strategy>(strategy: S, usable: impl Fn(&S::Value) -> bool) {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let used = (0..1000).filter(|_| usable(&strategy.new_tree(&mut runner).unwrap().current())).count();
    assert!(used > 800, "only {used} of 1000 generated cases usable");
}

/// Every frame one change (to 0, to all ones, plus 36, a single bit
/// flipped) or one cut away from `frame`, and `frame`.
pub fn neighbours(frame: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    let changed = (0..frame.len()).flat_map(move |at| {
        let flips = [0x01, 0x04, 0x10, 0x80].map(|bit| frame[at] ^ bit);
        [0x00, 0xff, frame[at].wrapping_add(36)].into_iter().chain(flips).map(move |value| {
            let mut mangled = frame.to_vec();
            mangled[at] = value;
            mangled
        })
    });
    let cut = (0..frame.len()).map(move |len| frame[..len].to_vec());
    std::iter::once(frame.to_vec()).chain(changed).chain(cut)
}

/// IPv6 frames' specs for the fast paths: three of the fast path's shape (UDP,
/// TCP, and UDP with `kept_tos` in its Traffic Class and a Flow Label the
/// paths must keep) and one just outside it (a Hop-by-Hop header).
pub fn fast_path_ipv6_specs(kept_tos: u8) -> Vec<PacketSpec> {
    let (a, b): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "2001:db8:ff::7".parse().unwrap());
    let mut labelled = PacketSpec { tos: kept_tos, ..PacketSpec::udp6(b, a, 1, 2, 18) };
    if let Some(ipv6) = labelled.ipv6.as_mut() {
        ipv6.flow_label = 0xabcde;
    }
    let mut hop_by_hop = PacketSpec::tcp6(a, b, 3, 4, 16);
    if let Some(ipv6) = hop_by_hop.ipv6.as_mut() {
        ipv6.extensions.push((0, int_core::craft::ipv6_options(0)));
    }
    vec![PacketSpec::udp6(a, b, 4000, 53, 12), PacketSpec::tcp6(a, b, 40000, 80, 10), labelled, hop_by_hop]
}

/// A fast path's flow is the general path's: the same key, hash and slot.
pub fn same_flow(parts: &int_core::fast::FastFrame, frame: &[u8], general: &int_core::flow::FlowKey) {
    assert_eq!(parts.flow_key(frame).as_ref(), Some(general), "{frame:02x?}");
    assert_eq!(parts.flow.hash64(), general.hash64());
    assert_eq!(parts.flow, general.words());
}

/// The INT 2.1 domain of the fast-path and reference tests: DSCP 0x17
/// marks INT-MD before TCP options; source-only metadata carries the
/// packet number.
pub fn int21_domain() -> int_core::int21::Domain {
    use int_core::int21::{source_only::SourceOnly, Marking};
    int_core::int21::Domain {
        marking: Marking::Dscp(int_core::marking::DscpMatch::new(0x17, 0x3f).unwrap()),
        tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
        source_only: SourceOnly::sequence(INT21_DOMAIN_ID),
    }
}

pub const INT21_DOMAIN_ID: u16 = 0x4944;

/// An INT 2.1 source of [`int21_domain`] that pushes its own hop and numbers
/// packets.
pub fn int21_source(
    instructions: int_core::int21::Instructions,
    header_type: int_core::int21::HeaderType,
) -> int_core::int21::source::SourceConfig {
    int_core::int21::source::SourceConfig {
        domain: int21_domain(),
        header_type,
        instructions,
        ds_words: 0,
        max_hops: 4,
        own_hop: true,
        domain_id: INT21_DOMAIN_ID,
        ds_instructions: int_core::int21::source_only::SEQUENCE,
        ds_flags: 0,
        discard: false,
        max_ip_len: 1500,
    }
}

/// An INT 2.1 hop: node id, L1 ports and both timestamps.
pub fn int21_hop(node: u32, time: u64) -> int_core::int21::HopMetadata {
    int_core::int21::HopMetadata {
        node_id: Some(node),
        l1_ingress_port: Some(1),
        l1_egress_port: Some(2),
        ingress_timestamp: Some(time),
        egress_timestamp: Some(time + 5),
        ..int_core::int21::HopMetadata::default()
    }
}

/// Plain frames for the INT 2.1 fast paths' tests: fast-path frames (UDP,
/// zero-checksum UDP, TCP, a kept DSCP) and two outside it (a VLAN tag, TCP
/// options), then [`fast_path_ipv6_specs`]'s.
pub fn int21_plain_frames() -> Vec<Vec<u8>> {
    let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7));
    let specs = [
        PacketSpec::udp(a, b, 4000, 53, 0),
        PacketSpec::udp(a, b, 4000, 53, 30),
        PacketSpec::tcp(a, b, 40000, 80, 10),
        PacketSpec { tos: 0x2b, ..PacketSpec::udp(b, a, 1, 2, 18) },
        PacketSpec {
            l4: L4Spec::Udp { src_port: 9, dst_port: 10, zero_checksum: true },
            ..PacketSpec::udp(a, b, 9, 10, 12)
        },
        PacketSpec { vlan: Some(7), ..PacketSpec::udp(a, b, 1, 2, 20) },
        PacketSpec {
            l4: L4Spec::Tcp { src_port: 1, dst_port: 2, seq: 9, options: vec![1, 1, 1, 1] },
            ..PacketSpec::udp(a, b, 1, 2, 20)
        },
    ];
    specs.iter().chain(&fast_path_ipv6_specs(0x2b)).map(PacketSpec::build).collect()
}
