//! Source, transit and sink on the real binary over net_pcap vdevs: the
//! sink's output equals the source's input byte for byte, in both
//! encapsulations and both header flavours; non-INT traffic passes
//! unchanged; reports reach a collector on loopback; losses and malformed
//! INT are counted as they should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::int05::{Domain, Encapsulation};
use int_core::marking::TcpPlacement;
use int_core::report::{self, Report, SinkIdWord};

/// Frames that are not INT candidates: ARP, ICMP, ICMPv6, a later fragment.
fn other_traffic() -> Vec<Vec<u8>> {
    let mut arp = PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1, 2, 30).build();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut icmp = PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1, 2, 30).build();
    icmp[23] = 1;
    let (a6, b6) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
    let mut ipv6 = PacketSpec::udp6(a6, b6, 1, 2, 30).build();
    ipv6[14 + 6] = 58;
    let mut fragment =
        PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1, 2, 30).build();
    fragment[20..22].copy_from_slice(&[0x00, 0x20]);
    vec![arp, icmp, ipv6, fragment]
}

fn chain(name: &str, int_section: &str, source_section: &str, domain: Domain) {
    let dir = workdir(name);
    let mut frames = mixed_traffic(300, 23, 60);
    for (i, other) in other_traffic().into_iter().enumerate() {
        frames.insert(i * 50 + 7, other);
    }
    write_pcap(&dir.join("in.pcap"), &frames);
    let source = run_node(
        &dir,
        &node_config("source", "in.pcap", "int.pcap", &format!("{int_section}{source_section}"), None),
    );
    let instrumented = read_pcap(&dir.join("int.pcap"));
    assert_eq!(instrumented.len(), frames.len());
    assert_eq!(source.counter("source", "instrumented"), 300);
    assert_eq!(source.counter("source", "not_ip"), 1);
    assert_eq!(source.counter("source", "not_tcp_udp"), 2);
    assert_eq!(source.counter("source", "fragments"), 1);
    for (i, (a, b)) in frames.iter().zip(&instrumented).enumerate() {
        let is_other = (0..4).any(|k| i == k * 50 + 7);
        assert_eq!(a == b, is_other, "packet {i}: only non-candidates pass unchanged");
    }
    retime_after_source(&dir.join("int.pcap"), &domain, 100_000);
    let collector = Collector::new();
    let sink_section = format!("{int_section}    clock: rx-timestamp\n");
    let sink =
        run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", &sink_section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "stripped"), 300);
    assert_eq!(sink.counter("sink", "not_int"), 4);
    assert_eq!(sink.counter("sink", "lost_packets"), 0);
    // One latency report per flow (the first packet): 23 flows.
    let reports = collector.reports();
    let latency: Vec<_> = reports
        .iter()
        .filter_map(|r| match report::parse(r, SinkIdWord::Detect).unwrap() {
            Report::Latency(l) => Some((l.header.sequence, l.block.header.total_hop_cnt)),
            _ => None,
        })
        .collect();
    assert!(latency.len() >= 23, "{} latency reports", latency.len());
    assert!(latency.iter().all(|(_, hops)| *hops == 2), "sink and source hops");
    let mut sequences: Vec<u32> = latency.iter().map(|(s, _)| *s).collect();
    sequences.sort_unstable();
    assert_eq!(sequences, (1..=sequences.len() as u32).collect::<Vec<_>>(), "report sequence numbers from 1");
}

#[test]
fn dscp_hostint_chain_restores_every_byte() {
    chain(
        "dscp-hostint",
        "    int: {encapsulation: int05-over-tcp-udp, dscp: {value: 1, mask: 1}}\n",
        "",
        Domain::default(),
    );
}

#[test]
fn extension_udp_int05_after_options_chain_restores_every_byte() {
    chain(
        "udp-int05",
        "    int: {encapsulation: int05-extension-udp, udp_port: 33122, tcp_placement: after-options}\n",
        "    source: {flavour: hostint, instructions: [switch_id, port_ids, ingress_timestamp, egress_timestamp, hop_latency]}\n",
        Domain {
            encapsulation: Encapsulation::ExtensionUdp { port: 33122 },
            tcp_placement: TcpPlacement::AfterOptions,
        },
    );
}

#[test]
fn dscp_plain_int05_type1_chain() {
    let dir = workdir("int05-type1");
    let frames = mixed_traffic(120, 9, 60);
    write_pcap(&dir.join("in.pcap"), &frames);
    let int = "    int: {encapsulation: int05-over-tcp-udp, dscp: {value: 0x17, mask: 0x3f}, tcp_placement: after-options}\n";
    let source = "    source: {flavour: int05, instructions: [switch_id, queue_occupancy], max_hop_count: 16, own_hop: false}\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", &format!("{int}{source}"), None));
    let int_frames = read_pcap(&dir.join("int.pcap"));
    // Shim Type 1, Length 4 words (no hop, no sequence number).
    let udp = &int_frames[0];
    assert_eq!(&udp[42..46], &[0x01, 0x00, 0x04, 0x00]);
    let collector = Collector::new();
    let sink = run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", int, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "no_sequence"), 120);
}

/// Source -> transit -> transit -> sink with Max Hop Count 2: the second
/// transit hop finds the stack full and sets E.
#[test]
fn max_hop_count_reached_sets_e_in_the_report() {
    let dir = workdir("max-hop");
    let frames = mixed_traffic(60, 3, 60);
    write_pcap(&dir.join("in.pcap"), &frames);
    run_node(&dir, &node_config("source", "in.pcap", "s.pcap", "", None));
    let first = run_node(&dir, &node_config("transit", "s.pcap", "t1.pcap", "", None));
    assert_eq!(first.counter("transit", "pushed"), 60);
    let second = run_node(&dir, &node_config("transit", "t1.pcap", "t2.pcap", "", None));
    assert_eq!(second.counter("transit", "max_hop_reached"), 60);
    // However long the four runs took, the sink measures 200 us.
    retime_after_source(&dir.join("t2.pcap"), &Domain::default(), 200_000);
    let collector = Collector::new();
    let clock = "    clock: rx-timestamp\n";
    run_node(&dir, &node_config("sink", "t2.pcap", "out.pcap", clock, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let reports = collector.reports();
    assert!(!reports.is_empty());
    for bytes in &reports {
        let Report::Latency(latency) = report::parse(bytes, SinkIdWord::Present).unwrap() else { continue };
        let header = latency.block.header;
        assert!(header.max_hop_exceeded, "E bit");
        assert_eq!((header.max_hop_cnt, header.total_hop_cnt), (2, 3), "source + transit + sink's own hop");
        let ids: Vec<u32> = latency.block.stack.hops().map(|h| h.switch_id.unwrap()).collect();
        assert_eq!(ids, vec![0x0a00_0002, 0x0a00_0005, 0x0a00_0001], "sink, transit, source");
        assert_eq!(latency.sink_id, Some(0x0a00_0002));
    }
}

/// 70,000 live flows: the source's and the sink's flow tables outgrow the
/// caches (over 2 MiB of slots, so the first pass prefetches two slots per
/// flow); the chain still restores every byte and numbers every flow from 1
/// with no loss.
#[test]
fn many_flows_outgrow_the_caches_and_restore_every_byte() {
    const FLOWS: usize = 70_000;
    let dir = workdir("many-flows");
    let frames: Vec<Vec<u8>> = (0..2 * FLOWS)
        .map(|i| {
            let flow = i % FLOWS;
            let src = Ipv4Addr::new(10, (flow >> 16) as u8, (flow >> 8) as u8, flow as u8);
            let dst = Ipv4Addr::new(10, 200, 0, 1);
            // Neighbours differ in protocol and length: a parse applied to
            // the wrong packet would show in the bytes.
            let payload = [18, 40, 7][i % 3];
            if flow.is_multiple_of(2) {
                PacketSpec::udp(src, dst, 4000, 5000, payload).build()
            } else {
                PacketSpec::tcp(src, dst, 4000, 80, payload).build()
            }
        })
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let capacity = "    source: {flows: {capacity: 131072}}\n";
    let source = run_node(&dir, &node_config("source", "in.pcap", "int.pcap", capacity, None));
    assert_eq!(source.counter("source", "instrumented"), 2 * FLOWS as u64);
    assert_eq!(source.counter("source", "flows_created"), FLOWS as u64);
    let collector = Collector::new();
    let capacity = "    sink: {flows: {capacity: 131072}}\n";
    let sink =
        run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", capacity, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "stripped"), 2 * FLOWS as u64);
    assert_eq!(sink.counter("sink", "flows_created"), FLOWS as u64);
    assert_eq!(sink.counter("sink", "lost_packets"), 0);
    assert_eq!(sink.counter("sink", "seq_restarts"), 0, "every flow numbered 1, 2");
}

/// A 9000-byte MTU network gets INT: mbufs are sized from the largest
/// port MTU, so jumbo frames arrive in one segment, are instrumented up to
/// the MTU and restored byte for byte; a frame with no room left under the
/// MTU passes untouched.
#[test]
fn jumbo_frames_are_instrumented_and_restored() {
    let dir = workdir("jumbo");
    let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    // IPv4 Total Lengths 1500, 4000, 8900 and 8964 (+36 bytes of INT =
    // 9000), and 9000, which has no room left.
    let fits = [1500usize, 4000, 8900, 8964];
    let mut frames = Vec::new();
    for (i, ip_len) in fits.iter().chain(&[9000]).enumerate() {
        for flow in 0..4u16 {
            let spec = if flow % 2 == 0 {
                PacketSpec::udp(src, dst, 1000 + flow, 2000, ip_len - 28)
            } else {
                PacketSpec::tcp(src, dst, 1000 + flow, 80, ip_len - 40)
            };
            let mut frame = spec.build();
            frame[60] = i as u8;
            frames.push(frame);
        }
    }
    write_pcap(&dir.join("in.pcap"), &frames);
    let jumbo = |config: String| config.replace("    int_port: 7\n", "    int_port: 7\n    mtu: 9000\n");
    let source = run_node(&dir, &jumbo(node_config("source", "in.pcap", "int.pcap", "", None)));
    assert_eq!(source.counter("source", "instrumented"), 16, "{}", source.stdout());
    assert_eq!(source.counter("source", "too_big"), 4);
    assert_eq!(source.counter("source", "multi_segment"), 0);
    let instrumented = read_pcap(&dir.join("int.pcap"));
    assert_eq!(instrumented.iter().map(Vec::len).max(), Some(9014), "a 9000-byte IP packet with its INT");
    let collector = Collector::new();
    let sink =
        run_node(&dir, &jumbo(node_config("sink", "int.pcap", "out.pcap", "", Some(&collector.addr()))));
    assert_eq!(sink.counter("sink", "stripped"), 16);
    assert_eq!(sink.counter("sink", "multi_segment"), 0);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

/// Dual-stack traffic through an INT 0.5 domain in both encapsulations:
/// IPv6 flows (some behind extension headers) are instrumented, pushed on
/// and restored byte for byte beside IPv4 ones. Host-INT's latency report
/// has no IPv6 form: IPv4 flows get it, IPv6 flows a TR 0.5 flow report
/// (NProto 2) naming their IPv6 addresses, with the one-way latency the
/// capture times set.
#[test]
fn ipv6_flows_restore_every_byte_and_report_in_tr05() {
    for (name, int, domain) in [
        ("ipv6-dscp", "    int: {encapsulation: int05-over-tcp-udp}\n", Domain::default()),
        (
            "ipv6-udp",
            "    int: {encapsulation: int05-extension-udp, udp_port: 33122}\n",
            Domain { encapsulation: Encapsulation::ExtensionUdp { port: 33122 }, ..Domain::default() },
        ),
    ] {
        let dir = workdir(name);
        let flows = 20;
        let frames = mixed_traffic_dual(200, flows, 60);
        write_pcap(&dir.join("in.pcap"), &frames);
        let source = run_node(&dir, &node_config("source", "in.pcap", "s.pcap", int, None));
        assert_eq!(source.counter("source", "instrumented"), 200, "{name}");
        let transit = run_node(&dir, &node_config("transit", "s.pcap", "t.pcap", int, None));
        assert_eq!(transit.counter("transit", "pushed"), 200, "{name}");
        retime_after_source(&dir.join("t.pcap"), &domain, 100_000);
        let collector = Collector::new();
        let sink_section = format!("{int}    clock: rx-timestamp\n");
        let sink = run_node(
            &dir,
            &node_config("sink", "t.pcap", "out.pcap", &sink_section, Some(&collector.addr())),
        );
        assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
        assert_eq!(sink.counter("sink", "stripped"), 200, "{name}");
        let (mut v4, mut v6) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for datagram in collector.reports() {
            match report::parse(&datagram, SinkIdWord::Detect).unwrap() {
                Report::Latency(l) => {
                    v4.insert(l.src_port);
                }
                Report::Tr05 { .. } => {
                    let flow = report::tr05_flow::FlowReport::parse(&datagram).unwrap();
                    assert!(flow.ip.src.is_ipv6(), "{name}: {:?}", flow.ip);
                    // The pcap's capture times have microseconds.
                    let latency = flow.latency_ns().unwrap();
                    assert!((99_000..=100_000).contains(&latency), "{name}: one-way latency {latency} ns");
                    assert_eq!(flow.block.header.total_hop_cnt, 2, "{name}: source and transit hops");
                    v6.insert(flow.src_port);
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        let ipv6_flows = (0..flows).filter(|&flow| is_ipv6_flow(flow)).count();
        assert_eq!((v4.len(), v6.len()), (flows - ipv6_flows, ipv6_flows), "{name}: a report per flow");
    }
}
