//! The transforms against the byte layouts in the specs: Host-INT's source
//! and sink stacks, INT 0.5's TCP example, and Host-INT's report sizes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::int05::source::{self, SourceConfig, TailStyle};
use int_core::int05::transit::{Outcome, TransitConfig};
use int_core::int05::{Domain, Encapsulation, Instructions, ShimType};
use int_core::marking::TcpPlacement;
use int_core::outcome::Skip;
use int_core::report::{self, LatencyReport, ReportHeaderRepr, ReportProfile, SinkIdWord};

fn addr(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

/// Host-INT's source output for a UDP packet, DSCP encapsulation: 36 bytes
/// after the UDP header, ToS bit 0x04, lengths +36, checksums right.
#[test]
fn host_int_source_udp() {
    let original = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 64).build();
    let config = SourceConfig::host_int(1500);
    let out = run_source(&original, &config, 1);
    assert_eq!(out.len(), original.len() + 36);
    // Ethernet, IPv4 (but ToS, length, checksum), UDP ports unchanged.
    assert_eq!(out[..14], original[..14]);
    assert_eq!(out[15], 0x04, "DSCP 1 under mask 1");
    assert_eq!(u16::from_be_bytes([out[16], out[17]]), 20 + 8 + 64 + 36);
    assert_eq!(u16::from_be_bytes([out[38], out[39]]), 8 + 64 + 36);
    let block = &out[42..78];
    assert_eq!(&block[..4], &[0x03, 0x00, 0x09, 0x00]);
    assert_eq!(&block[4..12], &[0x00, 0x04, 0x02, 0x01, 0xcc, 0x00, 0x00, 0x00]);
    assert_eq!(&block[12..16], &[0x0a, 0x00, 0x00, 0x01], "source node id");
    assert_eq!(&block[16..20], &[0x00, 0x01, 0x00, 0x01], "ports");
    assert_eq!(&block[20..28], &[0x5e, 0, 0, 1, 0x5e, 0, 0, 1], "timestamps");
    assert_eq!(&block[28..32], &[0, 0, 0, 1], "sequence number");
    assert_eq!(&block[32..36], &[0, 0, 0, 0], "tail: Host-INT's zeros");
    assert_eq!(out[78..], original[42..], "payload untouched");
    verify_checksums(&out).unwrap();
}

/// Host-INT's UDP encapsulation: 44 bytes (UDP to 33122 + 36) after IPv4,
/// protocol 17, ToS unchanged, the original TCP header untouched.
#[test]
fn host_int_extension_udp_over_tcp() {
    let mut spec = PacketSpec::tcp(addr(1), addr(2), 40000, 22, 100);
    spec.tos = 0xb8;
    let original = spec.build();
    let config = SourceConfig { encapsulation: extension(33122), ..SourceConfig::host_int(1500) };
    let out = run_source(&original, &config, 7);
    assert_eq!(out.len(), original.len() + 44);
    assert_eq!(out[15], 0xb8);
    assert_eq!(out[23], 17);
    assert_eq!(&out[34..38], &[0x9c, 0x40, 0x81, 0x62], "sport, dport 33122");
    assert_eq!(u16::from_be_bytes([out[38], out[39]]), 8 + 36 + 20 + 100);
    assert_eq!(&out[40..42], &[0, 0], "checksum 0");
    assert_eq!(&out[42..46], &[0x03, 0x00, 0x09, 0x00]);
    assert_eq!(&out[74..78], &[6, 0, 0, 0], "tail: Host-INT's, the protocol alone");
    assert_eq!(out[78..], original[34..], "original TCP segment untouched");
    verify_checksums(&out).unwrap();
    let (restored, found) = run_sink(&out, &domain(&config));
    assert_eq!(found.sequence, Some(7));
    assert_eq!(found.flow.protocol, 6);
    assert_eq!((found.flow.src_port, found.flow.dst_port), (40000, 22));
    assert_eq!(restored, original);
}

/// INT 0.5 section 4.2: a TCP packet to port 22 marked with DSCP 0x17,
/// two hops pushing switch id and queue occupancy; the sink receives shim
/// Length 8, Ins Cnt 2, Total Hop Count 2, tail Proto 6, Port 22, DSCP 0.
#[test]
fn int05_spec_tcp_example() {
    let original = PacketSpec::tcp(addr(1), addr(2), 40000, 22, 32).build();
    let encapsulation = Encapsulation::OverTcpUdp { dscp_value: 0x17, dscp_mask: 0x3f };
    let config = SourceConfig {
        encapsulation,
        tcp_placement: TcpPlacement::AfterOptions,
        shim_type: ShimType::HopByHop,
        instructions: Instructions::from_bits_retain(0x9000),
        max_hop_cnt: 16,
        own_hop: false,
        max_ip_len: 1500,
        tail: TailStyle::Informative,
    };
    let at_source = run_source(&original, &config, 0);
    let transit = TransitConfig { domain: domain(&config), max_ip_len: 1500 };
    let (hop1, pushed) = run_transit(&at_source, &transit, 1);
    assert_eq!(pushed, Outcome::Pushed(8));
    let (hop2, _) = run_transit(&hop1, &transit, 2);
    assert_eq!(hop2[15] >> 2, 0x17, "DSCP 0x17");
    let block = &hop2[54..86];
    #[rustfmt::skip]
    let expected: [u8; 32] = [
        0x01, 0x00, 0x08, 0x00,
        0x00, 0x02, 0x10, 0x02,
        0x90, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x20,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10,
        0x06, 0x00, 0x16, 0x00,
    ];
    assert_eq!(block, &expected);
    verify_checksums(&hop2).unwrap();
    let (restored, found) = run_sink(&hop2, &domain(&config));
    assert_eq!(found.header.total_hop_cnt, 2);
    assert_eq!(restored, original);
}

/// Host-INT's sink stack in a latency report: shim Length 12, Total Hop
/// Count 2, sink hop on top, no tail; 92 bytes for UDP, 104 for TCP.
#[test]
fn host_int_latency_report_sizes_and_stack() {
    let config = SourceConfig::host_int(1500);
    for (spec, size) in [
        (PacketSpec::udp(addr(1), addr(2), 4000, 5000, 64), 92),
        (PacketSpec::tcp(addr(1), addr(2), 4000, 5000, 64), 104),
    ] {
        let original = spec.build();
        let out = run_source(&original, &config, 3);
        let found = int_core::int05::sink::extract(&out, &domain(&config)).unwrap().unwrap();
        let header = ReportHeaderRepr::latency(1, 1_700_000_000, 0);
        let sink = sink_hop(0x0a00_0002, 0x5e00_1001);
        let build = |fill: u8| {
            let mut buf = [fill; 256];
            let len = LatencyReport::build(
                &mut buf,
                &out,
                &found,
                &sink,
                &header,
                0x0a00_0002,
                &ReportProfile::HOST_INT,
            )
            .unwrap();
            (buf, len)
        };
        let (mut buf, len) = build(0xa5);
        assert_eq!(len, size);
        assert_eq!(len, LatencyReport::len_for(&found, &ReportProfile::HOST_INT));
        // Every byte is written: the node builds reports in a reused buffer.
        let (zeroed, _) = build(0);
        assert_eq!(&zeroed[..len], &buf[..len]);
        let int_at = 12 + 4 + 20 + if size == 92 { 8 } else { 20 };
        assert_eq!(&buf[int_at..int_at + 4], &[0x03, 0x00, 0x0c, 0x00]);
        assert_eq!(&buf[int_at + 4..int_at + 12], &[0x00, 0x04, 0x02, 0x02, 0xcc, 0x00, 0x00, 0x00]);
        assert_eq!(&buf[int_at + 12..int_at + 16], &[0x0a, 0x00, 0x00, 0x02], "sink hop first");
        assert_eq!(&buf[int_at + 28..int_at + 32], &[0x0a, 0x00, 0x00, 0x01], "then the source hop");
        assert_eq!(&buf[len - 4..len], &[0, 0, 0, 3], "sequence number last");
        for mode in [SinkIdWord::Present, SinkIdWord::Detect] {
            let report::Report::Latency(parsed) = report::parse(&buf[..len], mode).unwrap() else {
                panic!("not a latency report")
            };
            assert_eq!(parsed.sink_id, Some(0x0a00_0002));
            assert_eq!(parsed.latency_ns(), Some(0x1000));
            assert_eq!((parsed.src_port, parsed.dst_port), (4000, 5000));
            assert_eq!(parsed.block.sequence, Some(3));
        }
        // TR 0.5 profile: no sink id word, 4 bytes shorter, still parses.
        let len =
            LatencyReport::build(&mut buf, &out, &found, &sink, &header, 2, &ReportProfile::TR05).unwrap();
        assert_eq!(len, size - 4);
        let report::Report::Latency(parsed) = report::parse(&buf[..len], SinkIdWord::Detect).unwrap() else {
            panic!("not a latency report")
        };
        assert_eq!(parsed.sink_id, None);
        assert_eq!(parsed.latency_ns(), Some(0x1000));
    }
}

/// A Telemetry Report 0.5 flow report: NProto 2 with F, the Switch Local
/// header, then the packet's Ethernet header and Host-INT's report body
/// without the sink's hop; 102 bytes for a UDP flow with Host-INT's stack
/// (12 + 16 + 14 + 20 + 8 + 32 of INT: no tail, the sequence number kept). The fixed and
/// Switch Local headers byte for byte, as section 3.2 draws them.
#[test]
fn tr05_flow_report_carries_its_own_headers() {
    use int_core::report::tr05::SwitchLocalRepr;
    use int_core::report::tr05_flow::FlowReport;
    let config = SourceConfig::host_int(1500);
    let original = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 64).build();
    let out = run_source(&original, &config, 3);
    let found = int_core::int05::sink::extract(&out, &domain(&config)).unwrap().unwrap();
    let header = FlowReport::header(7, 0x5e00_0001 + 0x1000, 5);
    let local = SwitchLocalRepr {
        switch_id: 0x0a00_0002,
        ingress_port: 3,
        egress_port: 3,
        queue_id: 0,
        queue_occupancy: 0,
        egress_timestamp: 0x5e00_2002,
    };
    let mut buf = [0xa5u8; 256];
    let len = FlowReport::build(&mut buf, &out, &found, &header, &local).unwrap();
    assert_eq!((len, FlowReport::len_for(&found)), (102, 102));
    #[rustfmt::skip]
    let expected_headers = [
        0x02, 0x20, 0x00, 0x05, // Ver 0, NProto 2, F, hw_id 5
        0, 0, 0, 7, // sequence
        0x5e, 0x00, 0x10, 0x01, // ingress timestamp (ns)
        0x0a, 0x00, 0x00, 0x02, // switch id
        0x00, 0x03, 0x00, 0x03, // ingress, egress port
        0x00, 0x00, 0x00, 0x00, // queue id, occupancy
        0x5e, 0x00, 0x20, 0x02, // egress timestamp
    ];
    assert_eq!(buf[..28], expected_headers);
    assert_eq!(buf[28..42], out[..14], "the packet's Ethernet header");
    assert_eq!(buf[42..62], out[14..34], "its IPv4 header");
    assert_eq!(buf[70..74], [0x03, 0x00, 0x08, 0x00], "Host-INT's shim, Length 8: no tail, no sink hop");
    assert_eq!(buf[len - 4..len], [0, 0, 0, 3], "the sequence number last");
    let parsed = FlowReport::parse(&buf[..len]).unwrap();
    assert_eq!((parsed.header, parsed.local), (header, local));
    assert_eq!((parsed.src_port, parsed.dst_port), (4000, 5000));
    assert_eq!(parsed.latency_ns(), Some(0x1000));
    assert_eq!(parsed.block.sequence, Some(3));
    // The generic parser reads it as TR 0.5 NProto 2 with the same frame.
    let report::Report::Tr05 { switch_local, frame, .. } =
        report::parse(&buf[..len], SinkIdWord::Detect).unwrap()
    else {
        panic!("not a TR 0.5 report")
    };
    assert_eq!((switch_local, frame.len()), (Some(local), len - 28));
    for cut in 0..len {
        assert!(FlowReport::parse(&buf[..cut]).is_err(), "cut {cut}");
    }
}

/// In the UDP encapsulation a latency report names the flow as Host-INT's
/// sink daemon does: the IPv4 header with the tail's protocol (its checksum
/// still right), then the original L4 header (20 TCP bytes), not the
/// extension UDP header to 33122. Same size as in the DSCP encapsulation.
#[test]
fn extension_udp_latency_report_carries_the_inner_five_tuple() {
    let config = SourceConfig { encapsulation: extension(33122), ..SourceConfig::host_int(1500) };
    let original = PacketSpec::tcp(addr(1), addr(2), 40000, 22, 64).build();
    let out = run_source(&original, &config, 5);
    let found = int_core::int05::sink::extract(&out, &domain(&config)).unwrap().unwrap();
    let header = ReportHeaderRepr::latency(1, 1_700_000_000, 0);
    let mut buf = [0u8; 256];
    let sink = sink_hop(0x0a00_0002, 0x5e00_1001);
    let len =
        LatencyReport::build(&mut buf, &out, &found, &sink, &header, 2, &ReportProfile::HOST_INT).unwrap();
    assert_eq!(len, 104, "as a TCP flow's report in the DSCP encapsulation");
    let ip = &buf[16..36];
    assert_eq!(ip[9], 6, "the flow's protocol");
    assert_eq!(int_core::checksum::checksum(ip), 0, "a right header checksum");
    assert_eq!(&buf[36..56], &original[34..54], "the original TCP header");
    let report::Report::Latency(parsed) = report::parse(&buf[..len], SinkIdWord::Present).unwrap() else {
        panic!("not a latency report")
    };
    assert_eq!((u8::from(parsed.ip.protocol), parsed.src_port, parsed.dst_port), (6, 40000, 22));
    assert_eq!(parsed.block.sequence, Some(5));
}

/// Host-INT's source under the kernel's checksum offload: the checksum
/// completion lands in the first two bytes of the tail, which the L4
/// checksum does not cover. The sink leaves such a tail out of its
/// checksum update (as Host-INT's sink does): the restored TCP segment's
/// checksum is right. An informative tail (ours) is covered, and gives the
/// DSCP back.
#[test]
fn host_int_tail_with_a_checksum_completion_restores_a_valid_checksum() {
    let mut spec = PacketSpec::tcp(addr(1), addr(2), 40000, 22, 61);
    spec.tos = 0x04 | 0xb8; // EF, with the mark bit already set
    let original = spec.build();
    let config = SourceConfig::host_int(1500);
    let mut unmarked = original.clone();
    unmarked[15] = 0xb8;
    unmarked[24..26].fill(0);
    let ip_checksum = int_core::checksum::checksum(&unmarked[14..34]);
    unmarked[24..26].copy_from_slice(&ip_checksum.to_be_bytes());
    let plan = source::plan_marked(&original, &config).unwrap();
    let mut buffer = Buffer::new(&original);
    buffer.with(|f| source::insert(f, &plan, &config, 1, &sink_hop(1, 1))).unwrap();
    let mut wire = buffer.frame().to_vec();
    let tail_at = 14 + 20 + 20 + 32;
    assert_eq!(&wire[tail_at..tail_at + 4], &[0, 0, 0, 0]);
    for completion in [[0xa5, 0x5e], [0x3c, 0x51], [0xff, 0xff]] {
        wire[tail_at..tail_at + 2].copy_from_slice(&completion);
        let (restored, found) = run_sink(&wire, &domain(&config));
        assert!(!found.tail_informative());
        assert_eq!(verify_checksums(&restored), Ok(()), "tail {completion:02x?}");
        assert_eq!(restored, unmarked, "the mark cleared, as Host-INT's sink does");
    }
    let informative = SourceConfig { tail: TailStyle::Informative, ..config };
    let mut buffer = Buffer::new(&original);
    buffer.with(|f| source::insert(f, &plan, &informative, 1, &sink_hop(1, 1))).unwrap();
    let out = buffer.frame().to_vec();
    assert_eq!(&out[tail_at..tail_at + 4], &[6, 0, 22, (0x04 | 0xb8) >> 2]);
    let (restored, found) = run_sink(&out, &domain(&informative));
    assert!(found.tail_informative());
    assert_eq!(restored, original, "DSCP given back from the tail, mark bit and all");
}

/// A tail that is neither zeros, nor the packet's own, nor a completion
/// the checksum leaves out: a UDP packet whose tail says protocol 6, port
/// 80, and whose checksum covers it. The sink checks which reading the
/// checksum agrees with: here the covered one, so the restored checksum is
/// right (it used to be taken for a completion and come out 0xf1d8, not
/// 0x47d9). A tail that no reading verifies is malformed.
#[test]
fn an_ambiguous_tail_is_read_as_the_checksum_says() {
    let original = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 64).build();
    let config = SourceConfig::host_int(1500);
    let mut wire = run_source(&original, &config, 1);
    let tail_at = 14 + 20 + 8 + 32;
    assert_eq!(&wire[tail_at..tail_at + 4], &[0, 0, 0, 0]);
    wire[tail_at..tail_at + 4].copy_from_slice(&[6, 0, 80, 0]);
    // The UDP checksum made to cover the new tail.
    wire[40..42].fill(0);
    let udp_len = wire.len() - 34;
    let pseudo = int_core::checksum::pseudo_header_sum(addr(1), addr(2), 17, udp_len as u16);
    let sum = !int_core::checksum::fold(int_core::checksum::sum(pseudo, &wire[34..]));
    wire[40..42].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(verify_checksums(&wire), Ok(()));
    let (restored, found) = run_sink(&wire, &domain(&config));
    assert!(!found.tail_informative() && found.tail_covered);
    assert_eq!(verify_checksums(&restored), Ok(()));
    assert_eq!(restored, original, "the packet before INT, checksum and all");
    // A checksum that verifies under neither reading: no guess restores it.
    let mut lying = wire.clone();
    lying[40] ^= 0x55;
    assert!(matches!(
        int_core::int05::sink::extract(&lying, &domain(&config)),
        Err(int_core::ParseError::UnknownType { layer: int_core::Layer::IntTail, .. })
    ));
}

#[test]
fn source_skips_are_typed() {
    let config = SourceConfig::host_int(1500);
    let big = PacketSpec::udp(addr(1), addr(2), 1, 2, 1500 - 28 - 35).build();
    assert_eq!(source::plan(&big, &config), Err(Skip::TooBig));
    let fits = PacketSpec::udp(addr(1), addr(2), 1, 2, 1500 - 28 - 36).build();
    assert!(source::plan(&fits, &config).is_ok());
    let mut marked = PacketSpec::udp(addr(1), addr(2), 1, 2, 10);
    marked.tos = 0x04;
    assert_eq!(source::plan(&marked.build(), &config), Err(Skip::AlreadyMarked));
    let mut arp = PacketSpec::udp(addr(1), addr(2), 1, 2, 10).build();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(source::plan(&arp, &config), Err(Skip::NotIp));
    let mut icmp = PacketSpec::udp(addr(1), addr(2), 1, 2, 10).build();
    icmp[23] = 1;
    assert_eq!(source::plan(&icmp, &config), Err(Skip::NotTcpUdp));
    let mut fragment = PacketSpec::udp(addr(1), addr(2), 1, 2, 10).build();
    fragment[20..22].copy_from_slice(&[0x00, 0x10]);
    assert_eq!(source::plan(&fragment, &config), Err(Skip::Fragment));
    let mut lying = PacketSpec::udp(addr(1), addr(2), 1, 2, 10).build();
    lying[16..18].copy_from_slice(&[0x05, 0xdc]);
    assert!(matches!(source::plan(&lying, &config), Err(Skip::Malformed(_))));
    // A first fragment is never instrumented either; marked, it is told
    // apart so that the node's edge guard can clear the mark.
    let mut fragment = PacketSpec::udp(addr(1), addr(2), 1, 2, 100).build();
    fragment[20..22].copy_from_slice(&[0x20, 0x00]); // MF, offset 0
    fragment[38..40].copy_from_slice(&[0xff, 0xf0]);
    assert_eq!(source::plan(&fragment, &config), Err(Skip::Fragment));
    let mut marked_fragment = PacketSpec::udp(addr(1), addr(2), 1, 2, 100);
    marked_fragment.tos = 0x04;
    let mut marked_fragment = marked_fragment.build();
    marked_fragment[20..22].copy_from_slice(&[0x20, 0x00]);
    marked_fragment[24..26].fill(0);
    let header_checksum = int_core::checksum::checksum(&marked_fragment[14..34]);
    marked_fragment[24..26].copy_from_slice(&header_checksum.to_be_bytes());
    assert_eq!(source::plan(&marked_fragment, &config), Err(Skip::MarkedFragment));
    // Clearing the mark changes the DSCP bits and the header checksum only.
    let mut cleared = marked_fragment.clone();
    assert!(source::clear_mark(&mut cleared, &config));
    assert_eq!(cleared[15], 0x00);
    let mut expected = marked_fragment.clone();
    expected[15] = 0x00;
    expected[24..26].fill(0);
    let header_checksum = int_core::checksum::checksum(&expected[14..34]);
    expected[24..26].copy_from_slice(&header_checksum.to_be_bytes());
    assert_eq!(cleared, expected);
    // No headroom: refused, frame untouched.
    let frame = PacketSpec::udp(addr(1), addr(2), 1, 2, 10).build();
    let plan = source::plan(&frame, &config).unwrap();
    let mut bytes = frame.clone();
    let len = bytes.len();
    let mut view = int_core::FrameBuf::new(&mut bytes, 0, len).unwrap();
    let hop = sink_hop(1, 1);
    assert_eq!(source::insert(&mut view, &plan, &config, 1, &hop), Err(Skip::NoHeadroom));
    assert_eq!(bytes, frame);
}

#[test]
fn max_hop_count_sets_e_and_pushes_nothing() {
    let original = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 20).build();
    let config = SourceConfig::host_int(1500); // Max Hop 2, source is hop 1
    let transit = TransitConfig { domain: domain(&config), max_ip_len: 1500 };
    let at_source = run_source(&original, &config, 1);
    let (one, pushed) = run_transit(&at_source, &transit, 7);
    assert_eq!(pushed, Outcome::Pushed(16));
    let (two, pushed) = run_transit(&one, &transit, 8);
    assert_eq!(pushed, Outcome::MaxHopReached);
    assert_eq!(two.len(), one.len());
    assert_eq!(two[42 + 4] & 0x01, 1, "E bit");
    verify_checksums(&two).unwrap();
    let (restored, found) = run_sink(&two, &domain(&config));
    assert!(found.header.max_hop_exceeded);
    assert_eq!(found.source_hop.unwrap().switch_id(), Some(0x0a00_0001));
    assert_eq!(restored, original);
}

#[test]
fn host_int_tail_clears_mark_instead_of_restoring() {
    // A Host-INT source writes a zero tail: the sink clears the mark bits.
    let mut spec = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 20);
    spec.tos = 0xa0 | 0x02; // DSCP 40, ECN 2
    let original = spec.build();
    let config = SourceConfig::host_int(1500);
    let mut out = run_source(&original, &config, 1);
    let tail_at = 42 + 32;
    // Rewrite the tail to zeros, fixing the UDP checksum by recomputing.
    out[tail_at..tail_at + 4].copy_from_slice(&[0, 0, 0, 0]);
    out[40..42].copy_from_slice(&[0, 0]);
    let (restored, _) = run_sink(&out, &Domain::default());
    assert_eq!(restored[15], 0xa2, "mark bit cleared, ECN kept");
    assert_eq!(&restored[40..42], &[0, 0], "a zero UDP checksum stays zero");
}

/// An IPv6 UDP packet behind a Hop-by-Hop and a Destination Options header
/// through Host-INT's source in both encapsulations: the mark in the
/// Traffic Class (Flow Label untouched), Payload Length +36 (+44), the block
/// after the UDP header, or a UDP header to port 33122 after the last
/// extension header, whose Next Header becomes 17, with a checksum that
/// etherparse verifies (IPv6 forbids 0); the sink gives back every byte.
#[test]
fn ipv6_source_marks_traffic_class_and_inserts_after_the_extensions() {
    use int_core::craft::{ipv6_options, Ipv6Spec};
    use int_core::wire::ipv6::{DESTINATION_OPTIONS, HOP_BY_HOP};
    let mut spec =
        PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 4000, 5000, 64);
    spec.tos = 0xb8;
    spec.ipv6 = Some(Ipv6Spec {
        flow_label: 0x12345,
        extensions: vec![(HOP_BY_HOP, ipv6_options(0)), (DESTINATION_OPTIONS, ipv6_options(1))],
        ..spec.ipv6.unwrap()
    });
    let original = spec.build();
    let l4 = 14 + 40 + 8 + 16;
    let dscp = SourceConfig::host_int(1500);
    let out = run_source(&original, &dscp, 1);
    assert_eq!(out[14..18], [0x6b, 0xc1, 0x23, 0x45], "Traffic Class 0xbc, Flow Label kept");
    assert_eq!(u16::from_be_bytes([out[18], out[19]]), 24 + 8 + 64 + 36);
    assert_eq!(out[l4 + 8..l4 + 12], [0x03, 0x00, 0x09, 0x00], "the shim after the UDP header");
    assert_eq!(etherparse_verdict(&out), Ok(()));
    let (restored, found) = run_sink(&out, &domain(&dscp));
    assert_eq!(found.flow.src, "2001:db8::1".parse::<std::net::IpAddr>().unwrap());
    assert_eq!(restored, original);

    let udp = SourceConfig { encapsulation: Encapsulation::ExtensionUdp { port: 33122 }, ..dscp };
    let out = run_source(&original, &udp, 1);
    assert_eq!(out[14..18], original[14..18], "no mark in the UDP encapsulation");
    assert_eq!(u16::from_be_bytes([out[18], out[19]]), 24 + 8 + 64 + 44);
    assert_eq!((out[14 + 6], out[14 + 40], out[14 + 48]), (HOP_BY_HOP, DESTINATION_OPTIONS, 17));
    assert_eq!(u16::from_be_bytes([out[l4 + 2], out[l4 + 3]]), 33122);
    assert_eq!(u16::from_be_bytes([out[l4 + 4], out[l4 + 5]]), 8 + 36 + 8 + 64);
    assert_ne!(u16::from_be_bytes([out[l4 + 6], out[l4 + 7]]), 0, "IPv6 forbids a UDP checksum of 0");
    assert_eq!(verify_checksums(&out), Ok(()));
    assert_eq!(etherparse_verdict(&out), Ok(()));
    assert_eq!(out[l4 + 8 + 36..], original[l4..], "the original UDP header and payload untouched");
    let (restored, _) = run_sink(&out, &domain(&udp));
    assert_eq!(restored, original);

    // A fragment is never instrumented, first or later.
    let mut fragment = spec.clone();
    fragment.ipv6.as_mut().unwrap().extensions =
        vec![(int_core::wire::ipv6::FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 7])];
    assert_eq!(source::plan(&fragment.build(), &dscp), Err(Skip::Fragment));
}
