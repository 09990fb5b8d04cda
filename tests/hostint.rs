//! What running beside Host-INT's own data path showed, pinned without it:
//! a Host-INT tail that holds the kernel's checksum completion, our
//! Host-INT-flavour output as Host-INT's sink takes it, latency reports in
//! the UDP encapsulation naming the flow's own 5-tuple, and Drop-Summary
//! reports coalesced per flow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::report::{self, Report, SinkIdWord};

fn addr(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

/// Offset of the INT tail in a Host-INT TCP packet (DSCP encapsulation,
/// INT before the options): Ethernet, IPv4, 20 TCP bytes, 32 of INT.
const TCP_TAIL_AT: usize = 14 + 20 + 20 + 32;

/// Host-INT's TCP segments under checksum offload carry the checksum
/// completion in the tail's first two bytes, outside what the TCP checksum
/// covers. The sink leaves the tail out of its checksum update: every
/// segment comes out exactly as it went into Host-INT's source.
#[test]
fn a_host_int_tail_holding_a_checksum_completion_is_restored_with_a_valid_checksum() {
    let originals: Vec<Vec<u8>> = (0..40)
        .map(|i| PacketSpec::tcp(addr(1), addr(2), 40000 + i, 22, 10 + i as usize * 7).build())
        .collect();
    let wire: Vec<Vec<u8>> = originals
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let mut packet = instrument(frame, i as u32 + 1, 1000);
            assert_eq!(&packet[TCP_TAIL_AT..TCP_TAIL_AT + 4], &[0, 0, 0, 0], "Host-INT's tail");
            packet[TCP_TAIL_AT..TCP_TAIL_AT + 2]
                .copy_from_slice(&(0xa55e_u16 ^ (i as u16 * 0x0101)).to_be_bytes());
            packet
        })
        .collect();
    let dir = workdir("hostint-completion");
    write_pcap(&dir.join("in.pcap"), &wire);
    let collector = Collector::new();
    let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", "", Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "stripped"), 40);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &originals);
}

/// Our source's Host-INT flavour (the default) writes Host-INT's zero tail
/// in the DSCP encapsulation, so the tail adds nothing to the L4 checksum:
/// a Host-INT sink, which removes the block and updates the checksum by the
/// block without the tail, gets a valid packet. Shown here on the wire:
/// the tail is zero and the checksum is right with the block in place.
#[test]
fn our_host_int_flavour_writes_the_tail_host_ints_sink_expects() {
    let frames = vec![
        PacketSpec::udp(addr(1), addr(2), 4000, 5000, 64).build(),
        PacketSpec::tcp(addr(1), addr(2), 40000, 22, 64).build(),
    ];
    let dir = workdir("hostint-flavour-tail");
    write_pcap(&dir.join("in.pcap"), &frames);
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", "", None));
    let out = read_pcap(&dir.join("int.pcap"));
    let udp_tail_at = 14 + 20 + 8 + 32;
    assert_eq!(&out[0][udp_tail_at..udp_tail_at + 4], &[0, 0, 0, 0]);
    assert_eq!(&out[1][TCP_TAIL_AT..TCP_TAIL_AT + 4], &[0, 0, 0, 0]);
    for (packet, l4_at) in [(&out[0], 34), (&out[1], 34)] {
        let total = usize::from(u16::from_be_bytes([packet[16], packet[17]]));
        let segment = &packet[l4_at..14 + total];
        let pseudo =
            int_core::checksum::pseudo_header_sum(addr(1), addr(2), packet[23], segment.len() as u16);
        assert_eq!(int_core::checksum::fold(int_core::checksum::sum(pseudo, segment)), 0xffff);
    }
}

/// In the UDP encapsulation a latency report names the flow by its own
/// header (TCP, port 22), as Host-INT's sink daemon writes it, not by the
/// extension UDP header to 33122.
#[test]
fn udp_extension_latency_reports_carry_the_inner_five_tuple() {
    let frames = vec![
        PacketSpec::tcp(addr(1), addr(2), 40000, 22, 64).build(),
        PacketSpec::udp(addr(1), addr(3), 4000, 5000, 64).build(),
    ];
    let dir = workdir("hostint-ext-report");
    write_pcap(&dir.join("in.pcap"), &frames);
    let int = "    int: {encapsulation: int05-extension-udp, udp_port: 33122}\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", int, None));
    retime_after_source(
        &dir.join("int.pcap"),
        &int_core::int05::Domain {
            encapsulation: int_core::int05::Encapsulation::ExtensionUdp { port: 33122 },
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
        },
        100_000,
    );
    let collector = Collector::new();
    let sink_section = format!("{int}    clock: rx-timestamp\n");
    run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", &sink_section, Some(&collector.addr())));
    let mut flows: Vec<(u8, u16, u16, usize)> = collector
        .reports()
        .iter()
        .filter_map(|bytes| match report::parse(bytes, SinkIdWord::Present).unwrap() {
            Report::Latency(l) => Some((u8::from(l.ip.protocol), l.src_port, l.dst_port, bytes.len())),
            _ => None,
        })
        .collect();
    flows.sort_unstable();
    assert_eq!(flows, vec![(6, 40000, 22, 104), (17, 4000, 5000, 92)]);
}

/// A flow that keeps losing packets while it speaks: its losses go out in
/// one Drop-Summary once it falls silent (Host-INT's rule), not one per
/// sweep; `loss.max_report_delay_ms: 0` asks for one per sweep.
#[test]
fn drop_summaries_are_coalesced_per_flow() {
    let base = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 20).build();
    let start_ns: u64 = 1_700_000_000 * 1_000_000_000;
    // 5000 packets 2 ms apart (10 s), every 50th lost: 100 losses.
    let frames: Vec<(u64, Vec<u8>)> = (1..=5000u32)
        .filter(|s| s % 50 != 25)
        .map(|s| {
            let at = start_ns + u64::from(s) * 2_000_000;
            (at, instrument(&base, s, (at - 100_000) as u32))
        })
        .collect();
    let mut summaries = Vec::new();
    for delay in ["60000", "0"] {
        let dir = workdir(&format!("hostint-coalesce-{delay}"));
        write_pcap_at(&dir.join("in.pcap"), &frames);
        let extra = format!(
            "    clock: rx-timestamp\n    sink: {{flows: {{capacity: 64}}, loss: {{max_report_delay_ms: {delay}}}}}\n"
        );
        let collector = Collector::new();
        let sink =
            run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", &extra, Some(&collector.addr())));
        assert_eq!(sink.counter("sink", "lost_packets"), 100);
        let counts: Vec<u32> = collector
            .reports()
            .iter()
            .filter_map(|bytes| match report::parse(bytes, SinkIdWord::Present).unwrap() {
                Report::DropSummary(d) => Some(d.summary.gap_count),
                _ => None,
            })
            .collect();
        assert_eq!(counts.iter().sum::<u32>(), 100, "delay {delay}: {counts:?}");
        summaries.push(counts.len());
    }
    assert_eq!(summaries[0], 1, "one Drop-Summary for the flow");
    assert!(summaries[1] > 1, "one per sweep when asked: {summaries:?}");
}
