//! The INT domain's edge and inputs that lie, end to end on the real binary:
//! forged INT arriving at a source, DSCP 1 traffic (RFC 8622's lower effort,
//! Host-INT's default mark) through a source and a sink, a sequence number
//! 2^31 ahead, a one-packet flood against a full flow table, and the two
//! packet shapes a fuzzer found that a sink must not strip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::int05::Domain;
use int_core::report::{self, Report, SinkIdWord};

const FORGER: u32 = 0x0bad_beef;
const OUR_SOURCE: u32 = 0x0a00_0001;

fn addr(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

/// Flow A's packet carrying a forger's INT block (node 0x0badbeef, sequence
/// 2^31), flow B's DSCP 1 packet without INT, flow C's plain packet; and
/// the originals of all three.
fn edge_traffic() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let a = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 40).build();
    let mut b = PacketSpec::udp(addr(1), addr(3), 4001, 5001, 40);
    b.tos = 0x04; // DSCP 1
    let b = b.build();
    let c = PacketSpec::tcp(addr(1), addr(4), 4002, 5002, 40).build();
    let forged = instrument_as(&a, FORGER, 1 << 31, 12345);
    (vec![forged, b.clone(), c.clone()], vec![a, b, c])
}

fn run_source(name: &str, frames: &[Vec<u8>], source: &str) -> (Run, Vec<Vec<u8>>, std::path::PathBuf) {
    let dir = workdir(name);
    write_pcap(&dir.join("in.pcap"), frames);
    let run = run_node(&dir, &node_config("source", "in.pcap", "int.pcap", source, None));
    let out = read_pcap(&dir.join("int.pcap"));
    (run, out, dir)
}

/// The default policy: the forged block goes, the DSCP 1 packet is
/// instrumented with its mark kept in the (informative) tail, and a sink
/// restores all three originals byte for byte; every report names our
/// source, none the forger, and nobody claims 2^31 lost packets.
#[test]
fn a_source_strips_forged_int_and_keeps_a_dscp_1_mark() {
    let (frames, originals) = edge_traffic();
    let (source, _, dir) = run_source("edge-strip", &frames, "    source: {tail: informative}\n");
    assert_eq!(source.counter("source", "foreign_int_stripped"), 1);
    assert_eq!(source.counter("source", "marked_instrumented"), 1);
    assert_eq!(source.counter("source", "instrumented"), 3);
    retime_after_source(&dir.join("int.pcap"), &Domain::default(), 100_000);
    let collector = Collector::new();
    let clock = "    clock: rx-timestamp\n";
    let sink = run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", clock, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &originals);
    assert_eq!(sink.counter("sink", "stripped"), 3);
    let sources: Vec<u32> = collector
        .reports()
        .iter()
        .filter_map(|bytes| match report::parse(bytes, SinkIdWord::Present).unwrap() {
            Report::Latency(latency) => latency.sink_and_source().and_then(|(_, source)| source.switch_id),
            _ => None,
        })
        .collect();
    assert_eq!(sources, vec![OUR_SOURCE; 3], "one first-packet report per flow, all from our source");
    assert_eq!(sink.counter("sink", "lost_packets"), 0, "no loss claimed");
}

/// With Host-INT's tail (the hostint flavour's default) the mark cannot
/// ride in the tail: the sink clears it, as Host-INT's sink does, and DSCP 1
/// comes out as 0; everything else is restored.
#[test]
fn with_host_int_tails_a_dscp_1_mark_is_cleared_at_the_sink() {
    let (frames, originals) = edge_traffic();
    let (source, _, dir) = run_source("edge-strip-hostint-tail", &frames, "");
    assert_eq!(source.counter("source", "marked_instrumented"), 1);
    let collector = Collector::new();
    run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", "", Some(&collector.addr())));
    let out = read_pcap(&dir.join("out.pcap"));
    assert_eq!((&out[0], &out[2]), (&originals[0], &originals[2]));
    assert_eq!(out[1], cleared_dscp(&originals[1]));
}

/// `frame` with DSCP 0 and its IPv4 header checksum fixed.
fn cleared_dscp(frame: &[u8]) -> Vec<u8> {
    let mut cleared = frame.to_vec();
    cleared[15] &= 0x03;
    cleared[24..26].fill(0);
    let header_checksum = int_core::checksum::checksum(&cleared[14..34]);
    cleared[24..26].copy_from_slice(&header_checksum.to_be_bytes());
    cleared
}

/// `drop` drops both marked arrivals; `trust` forwards them untouched.
#[test]
fn drop_and_trust_policies() {
    let (frames, _) = edge_traffic();
    let (dropped, out, _) = run_source("edge-drop", &frames, "    source: {marked: drop}\n");
    assert_eq!(dropped.counter("source", "marked_dropped"), 2);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), frames[2].len() + 36, "flow C, instrumented");
    let (trusted, out, _) = run_source("edge-trust", &frames, "    source: {marked: trust}\n");
    assert_eq!(trusted.counter("source", "already_marked"), 2);
    assert_eq!(&out[..2], &frames[..2], "forwarded untouched");
}

/// Marked traffic the source does not instrument leaves without the mark:
/// DSCP 1 becomes 0 (with a valid header checksum), and a forged block is
/// removed even from an unwatched flow.
#[test]
fn unwatched_marked_traffic_leaves_unmarked() {
    let (frames, originals) = edge_traffic();
    let watch_c = "    source: {watchlist: [{dst: 10.0.0.4}]}\n";
    let (source, out, _) = run_source("edge-unwatched", &frames, watch_c);
    assert_eq!(source.counter("source", "foreign_int_stripped"), 1);
    assert_eq!(source.counter("source", "mark_cleared"), 1);
    assert_eq!(out[0], originals[0], "the forged block is gone; flow A unwatched");
    assert_eq!(out[1], cleared_dscp(&originals[1]), "DSCP 1 cleared");
}

/// DSCP 1 traffic that never met a source, runts and non-IPv4 frames reach
/// a sink: forwarded untouched under both policies (`drop` is for INT
/// blocks that lie), counted as what they are.
#[test]
fn dscp_1_traffic_passes_a_sink_under_both_policies() {
    let mut frames = Vec::new();
    for (i, tcp) in [false, true, false, true].into_iter().enumerate() {
        let build = if tcp { PacketSpec::tcp } else { PacketSpec::udp };
        let mut spec = build(addr(1), addr(9), 6000 + i as u16, 80, 30);
        spec.tos = 0x04;
        frames.push(spec.build());
    }
    let mut runt = PacketSpec::udp(addr(1), addr(9), 1, 2, 10).build();
    runt.truncate(30);
    frames.push(runt);
    let mut not_ip = PacketSpec::udp(addr(1), addr(9), 1, 2, 10).build();
    not_ip[12..14].copy_from_slice(&[0x88, 0xb5]);
    frames.push(not_ip);
    for policy in ["forward", "drop"] {
        let dir = workdir(&format!("edge-dscp1-sink-{policy}"));
        write_pcap(&dir.join("in.pcap"), &frames);
        let extra = format!("    sink: {{malformed: {policy}}}\n");
        let collector = Collector::new();
        let sink =
            run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", &extra, Some(&collector.addr())));
        assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
        assert_eq!(sink.counter("sink", "marked_not_int"), 4, "{policy}");
        assert_eq!(sink.counter("sink", "not_int"), 2, "{policy}");
    }
}

/// One spoofed packet of a real flow claims a sequence number 2^31 - 1
/// ahead (the furthest that is ahead at all): not believed
/// (seq_implausible), no loss declared, and the flow goes on. Exactly 2^31
/// is as far behind as ahead: a restart, and no loss either.
#[test]
fn a_sequence_jump_of_2_pow_31_is_not_believed() {
    let base = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 40).build();
    for (jump, implausible, restarts) in [((1u32 << 31) - 1, 1, 1), (1 << 31, 0, 2)] {
        let mut frames: Vec<Vec<u8>> = (1..=50).map(|s| instrument(&base, s, 1000)).collect();
        frames.push(instrument(&base, 50 + jump, 1000));
        frames.extend((51..=100).map(|s| instrument(&base, s, 1000)));
        let dir = workdir(&format!("edge-seq-jump-{jump}"));
        write_pcap(&dir.join("in.pcap"), &frames);
        let collector = Collector::new();
        let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", "", Some(&collector.addr())));
        assert_eq!(sink.counter("sink", "stripped"), 101);
        assert_eq!(sink.counter("sink", "seq_implausible"), implausible, "jump {jump}");
        assert_eq!(sink.counter("sink", "seq_restarts"), restarts, "jump {jump}");
        assert_eq!(sink.counter("sink", "lost_packets"), 0, "jump {jump}");
    }
}

/// A sink with room for 64 flows: 20 flows speak, 5000 invented flows of
/// one packet each arrive, the 20 speak again. The flood only ever takes
/// the place of its own kind: no established flow was forgotten (one that
/// had been would come back at sequence 6, with 1-5 counted lost).
#[test]
fn a_one_packet_flood_cannot_evict_established_flows() {
    let flow = |i: u16| PacketSpec::udp(addr(1), addr(2), 10_000 + i, 5000, 20).build();
    let mut frames = Vec::new();
    for sequence in 1..=5 {
        frames.extend((0..20).map(|i| instrument(&flow(i), sequence, 1000)));
    }
    for i in 0..5000u16 {
        let invented = PacketSpec::udp(Ipv4Addr::new(10, 66, (i >> 8) as u8, i as u8), addr(2), i, 5000, 20);
        frames.push(instrument(&invented.build(), 1, 1000));
    }
    for sequence in 6..=10 {
        frames.extend((0..20).map(|i| instrument(&flow(i), sequence, 1000)));
    }
    let dir = workdir("edge-flood");
    write_pcap(&dir.join("in.pcap"), &frames);
    let collector = Collector::new();
    let extra = "    sink: {flows: {capacity: 64}}\n";
    let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", extra, Some(&collector.addr())));
    let counters = &sink.stats["pipelines"]["sink"];
    assert_eq!(sink.counter("sink", "stripped"), frames.len() as u64);
    assert_eq!(sink.counter("sink", "lost_packets"), 0, "an established flow was evicted: {counters}");
    assert_eq!(sink.counter("sink", "seq_restarts"), 0, "{counters}");
    assert!(sink.counter("sink", "flows_evicted") > 4000, "{counters}");
}

/// The two shapes a fuzzer found: a TCP Data Offset that only fits by
/// counting the INT block (before-options placement), and an inner UDP
/// Length of 0 in the UDP encapsulation. Stripped, either would leave an
/// invalid packet: they are malformed, forwarded untouched (or dropped).
#[test]
fn the_fuzzer_shapes_are_malformed_not_stripped() {
    let tcp = PacketSpec::tcp(addr(1), addr(2), 4000, 5000, 8).build();
    let mut offset_lies = instrument(&tcp, 1, 1000);
    offset_lies[14 + 20 + 12] = 0xf0; // 60 bytes: 20 + 36 (INT) + 8 >= 60 > 20 + 8
    let dir = workdir("edge-fuzz-tcp");
    write_pcap(&dir.join("in.pcap"), std::slice::from_ref(&offset_lies));
    let collector = Collector::new();
    let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", "", Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "malformed_packet_malformed"), 1);
    assert_eq!(read_pcap(&dir.join("out.pcap")), vec![offset_lies]);

    let udp = PacketSpec::udp(addr(1), addr(2), 4000, 5000, 16).build();
    let mut inner_zero = instrument_extension_udp(&udp);
    let inner = 14 + 20 + 8 + 36;
    inner_zero[inner + 4..inner + 6].fill(0);
    let dir = workdir("edge-fuzz-udp");
    write_pcap(&dir.join("in.pcap"), std::slice::from_ref(&inner_zero));
    let int = "    int: {encapsulation: int05-extension-udp, udp_port: 33122}\n    sink: {malformed: drop}\n";
    let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", int, Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "malformed_packet_malformed"), 1);
    assert_eq!(sink.counter("sink", "malformed_dropped"), 1);
    assert!(read_pcap(&dir.join("out.pcap")).is_empty());
}

/// `frame` with Host-INT's block in the UDP extension encapsulation.
fn instrument_extension_udp(frame: &[u8]) -> Vec<u8> {
    use int_core::int05::source::{self, SourceConfig};
    use int_core::int05::{Encapsulation, HopMetadata};
    let config = SourceConfig {
        encapsulation: Encapsulation::ExtensionUdp { port: 33122 },
        ..SourceConfig::host_int(1500)
    };
    let plan = source::plan(frame, &config).unwrap();
    let mut buffer = vec![0u8; 128 + frame.len()];
    buffer[128..].copy_from_slice(frame);
    let mut view = int_core::FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
    source::insert(&mut view, &plan, &config, 1, &HopMetadata::host_int(OUR_SOURCE, 1, 1000)).unwrap();
    view.frame().to_vec()
}
