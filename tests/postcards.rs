//! INT-XD on the real binary: a postcard node forwards every packet byte
//! for byte and sends exactly the postcards its report rule says, each a
//! Telemetry Report 2.0 report whose packet is the original's headers (read
//! back with etherparse, not with our parser).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::*;
use int_core::report::tr20::{self, InType, RepType};

const FLOWS: usize = 10;
const PACKETS: usize = 400;

/// A postcard's flow as etherparse reads its (cut) packet: source and
/// destination address and port.
fn flow_of(inner: &[u8]) -> (String, String, u16, u16) {
    let packet = etherparse::LaxSlicedPacket::from_ip(inner).unwrap();
    let (src, dst) = match packet.net.unwrap() {
        etherparse::LaxNetSlice::Ipv4(ip) => {
            (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
        }
        etherparse::LaxNetSlice::Ipv6(ip) => {
            (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
        }
        other => panic!("{other:?}"),
    };
    let (sport, dport) = match packet.transport.unwrap() {
        etherparse::TransportSlice::Udp(udp) => (udp.source_port(), udp.destination_port()),
        etherparse::TransportSlice::Tcp(tcp) => (tcp.source_port(), tcp.destination_port()),
        other => panic!("{other:?}"),
    };
    (src, dst, sport, dport)
}

/// Runs a postcard node with `settings` over the mixed dual-stack traffic;
/// returns the frames, the run and every postcard (node id, report).
fn postcard_run(test: &str, settings: &str) -> (Vec<Vec<u8>>, Run, Vec<(u32, Vec<u8>, u16)>) {
    let dir = workdir(test);
    let frames = mixed_traffic_dual(PACKETS, FLOWS, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let collector = Collector::new();
    let section = format!("    int: {{version: 2.1}}\n    postcard: {settings}\n");
    let run = run_node(&dir, &node_config("postcard", "in.pcap", "out.pcap", &section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let mut postcards = Vec::new();
    for datagram in collector.reports() {
        let report = tr20::Report::parse(&datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            assert_eq!(individual.rep_type, RepType::Int);
            let v6 = individual.inner[0] >> 4 == 6;
            assert_eq!(individual.in_type, if v6 { InType::Ipv6 } else { InType::Ipv4 });
            let int = individual.int.unwrap();
            postcards.push((report.group.node_id, individual.inner.to_vec(), int.rep_md_bits));
        }
    }
    (frames, run, postcards)
}

/// Every 8th packet of each flow, from its first: 5 of each flow's 40,
/// each carrying that very packet's headers and first 16 payload bytes,
/// and the metadata the default instructions ask for that this node has.
#[test]
fn every_eighth_packet_gets_a_postcard_and_every_packet_passes() {
    let (frames, run, postcards) = postcard_run("postcards-every", "{report: every, every: 8}");
    assert_eq!(run.counter("postcard", "tx_packets"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "watched"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "reports_xd"), 50);
    assert_eq!(run.counter("postcard", "postcards_not_due"), (PACKETS - 50) as u64);
    assert_eq!(postcards.len(), 50);
    let mut by_flow: BTreeMap<_, Vec<&Vec<u8>>> = BTreeMap::new();
    for (node, inner, bits) in &postcards {
        assert_eq!(*node, 0x0a00_0002);
        // Level 1 ports, ingress and egress timestamps (the node id rides
        // in the group header).
        assert_eq!(*bits, 0x4c00, "{bits:#06x}");
        by_flow.entry(flow_of(inner)).or_default().push(inner);
    }
    assert_eq!(by_flow.len(), FLOWS);
    for cards in by_flow.values() {
        assert_eq!(cards.len(), 5);
    }
    // The k-th postcard of flow f is of packet f + FLOWS * 8k.
    for (i, (_, inner, _)) in postcards.iter().enumerate() {
        let flow = flow_of(inner);
        let k = postcards[..i].iter().filter(|(_, other, _)| flow_of(other) == flow).count();
        let frame = frames
            .iter()
            .skip_while(|frame| flow_of(ip_of(frame)) != flow)
            .step_by(FLOWS * 8)
            .nth(k)
            .unwrap();
        let ip = ip_of(frame);
        let payload = etherparse::LaxSlicedPacket::from_ip(ip).unwrap().transport.map(|t| match t {
            etherparse::TransportSlice::Udp(udp) => udp.payload().len(),
            etherparse::TransportSlice::Tcp(tcp) => tcp.payload().len(),
            _ => 0,
        });
        // The headers and 16 payload bytes at most, padded to a 4-byte
        // multiple (TR 2.0 counts report lengths in words).
        let cut = ip.len() - payload.unwrap().saturating_sub(16);
        assert_eq!(inner.len(), cut.next_multiple_of(4), "postcard {i}");
        assert_eq!(inner[..cut], ip[..cut], "postcard {i} (flow {flow:?}) is its packet's first bytes");
        assert!(inner[cut..].iter().all(|b| *b == 0), "postcard {i}: padding");
    }
}

/// The packet from its IP header (after Ethernet and any VLAN tag).
fn ip_of(frame: &[u8]) -> &[u8] {
    let sliced = etherparse::LaxSlicedPacket::from_ethernet(frame).unwrap();
    match sliced.net.unwrap() {
        etherparse::LaxNetSlice::Ipv4(ip) => {
            let start = ip.header().slice().as_ptr() as usize - frame.as_ptr() as usize;
            &frame[start..start + usize::from(ip.header().total_len())]
        }
        etherparse::LaxNetSlice::Ipv6(ip) => {
            let start = ip.header().slice().as_ptr() as usize - frame.as_ptr() as usize;
            &frame[start..start + 40 + usize::from(ip.header().payload_length())]
        }
        other => panic!("{other:?}"),
    }
}

/// On change, without classes: a flow's first packet only; the watchlist
/// keeps the TCP flows out (counted, passed).
#[test]
fn on_change_a_watched_flow_s_first_packet_gets_one() {
    let (_, run, postcards) =
        postcard_run("postcards-change", "{report: change, watchlist: [{protocol: udp}]}");
    let udp_flows = (0..FLOWS).filter(|f| f % 3 != 2).count() as u64;
    let per_flow = (PACKETS / FLOWS) as u64;
    assert_eq!(run.counter("postcard", "tx_packets"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "watched"), udp_flows * per_flow);
    assert_eq!(run.counter("postcard", "not_watched"), (FLOWS as u64 - udp_flows) * per_flow);
    assert_eq!(run.counter("postcard", "reports_xd"), udp_flows);
    assert_eq!(run.counter("postcard", "postcards_not_due"), udp_flows * (per_flow - 1));
    let flows: std::collections::BTreeSet<_> = postcards.iter().map(|(_, inner, _)| flow_of(inner)).collect();
    assert_eq!(flows.len() as u64, udp_flows);
    assert!(flows.iter().all(|(_, _, _, dport)| *dport == 6000), "UDP flows only: {flows:?}");
}
