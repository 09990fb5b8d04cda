//! The benchmark's reference stages on the real binary (net_pcap, RX
//! timestamps as the clock): every frame of their shape comes out as the
//! real stage writes it, every other frame passes untouched and counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::int05::source::SourceConfig;
use int_core::int05::HopMetadata;
use int_core::reference;

const CLOCKED: &str = "    clock: rx-timestamp\n";

/// Which frames have the references' shape: those an in-process reference
/// source takes.
fn common_shape(frames: &[Vec<u8>]) -> Vec<bool> {
    let mut source =
        reference::Source::new(&SourceConfig::host_int(1500), &HopMetadata::default(), 64).unwrap();
    taken_by(frames, |view| source.instrument(view, 0))
}

/// Whether `instrument` takes each of `frames`.
fn taken_by(
    frames: &[Vec<u8>],
    mut instrument: impl FnMut(&mut int_core::FrameBuf<'_>) -> bool,
) -> Vec<bool> {
    frames
        .iter()
        .map(|frame| {
            let mut buffer = vec![0u8; 128 + frame.len()];
            buffer[128..].copy_from_slice(frame);
            let mut view = int_core::FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
            instrument(&mut view)
        })
        .collect()
}

/// 300 mixed frames, and which of them `shape` finds of the fast path's shape.
/// Frames of other shapes (VLAN tags, IPv4 options, TCP options) get flows
/// of their own: the real source numbers a flow's packets of every shape,
/// the reference only those of its own.
fn mixed_frames(shape: impl Fn(&[Vec<u8>]) -> Vec<bool>) -> (Vec<Vec<u8>>, Vec<bool>, u64) {
    let mut specs = mixed_specs(300, 23, 60);
    let common = shape(&specs.iter().map(PacketSpec::build).collect::<Vec<_>>());
    for (spec, common) in specs.iter_mut().zip(&common) {
        if !common {
            spec.src = Ipv4Addr::new(10, 9, 0, spec.src.octets()[3]);
        }
    }
    let frames: Vec<Vec<u8>> = specs.iter().map(PacketSpec::build).collect();
    assert_eq!(shape(&frames), common);
    let taken = common.iter().filter(|c| **c).count() as u64;
    assert!((100..300).contains(&taken), "{taken} fast-path frames: both kinds are tested");
    (frames, common, taken)
}

/// Runs `role` and `reference-role` on `input`, with `extra` in both
/// pipelines; returns both outputs and the reference's run.
fn both(
    dir: &std::path::Path,
    (role, extra): (&str, &str),
    input: &str,
    export: Option<&str>,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Run) {
    let real_out = format!("{role}.pcap");
    run_node(dir, &node_config(role, input, &real_out, extra, export));
    let reference_role = format!("reference-{role}");
    let reference_out = format!("{reference_role}.pcap");
    let run = run_node(dir, &node_config(&reference_role, input, &reference_out, extra, None));
    (read_pcap(&dir.join(real_out)), read_pcap(&dir.join(reference_out)), run)
}

/// The IPv4 header checksum and the L4 checksum of a frame of the common
/// shape (a UDP checksum of 0 means none).
fn assert_checksums_hold(frame: &[u8]) {
    use int_core::checksum;
    assert_eq!(checksum::checksum(&frame[14..34]), 0, "IPv4 header checksum");
    let end = 14 + usize::from(u16::from_be_bytes([frame[16], frame[17]]));
    let l4 = &frame[34..end];
    if frame[23] == 17 && l4[6..8] == [0, 0] {
        return;
    }
    let addresses = checksum::sum(0, &frame[26..34]);
    let pseudo = addresses + u32::from(frame[23]) + l4.len() as u32;
    assert_eq!(checksum::fold(checksum::sum(pseudo, l4)), 0xffff, "L4 checksum");
}

#[test]
fn reference_stages_write_what_their_stages_write() {
    let dir = workdir("reference_stages");
    let (frames, common, taken) = mixed_frames(common_shape);
    write_pcap(&dir.join("in.pcap"), &frames);

    let (instrumented, mine, run) = both(&dir, ("source", CLOCKED), "in.pcap", None);
    assert_eq!(run.counter("reference-source", "instrumented"), taken);
    assert_eq!(run.counter("reference-source", "not_common"), 300 - taken);
    for (i, ((frame, real), mine)) in frames.iter().zip(&instrumented).zip(&mine).enumerate() {
        assert_eq!(mine, if common[i] { real } else { frame }, "source, packet {i}");
    }

    let (pushed, mine, run) = both(&dir, ("transit", CLOCKED), "source.pcap", None);
    assert_eq!(run.counter("reference-transit", "pushed"), taken);
    for (i, ((before, real), mine)) in instrumented.iter().zip(&pushed).zip(&mine).enumerate() {
        if !common[i] {
            assert_eq!(mine, before, "transit, packet {i}");
            continue;
        }
        // The egress timestamp is the host's clock at the push: everything
        // else, and the checksums, must agree.
        assert_checksums_hold(mine);
        let egress_at = if real[23] == 17 { 42 + 24 } else { 54 + 24 };
        let checksum_at = if real[23] == 17 { 34 + 6 } else { 34 + 16 };
        let differ: Vec<usize> = (0..real.len()).filter(|&b| real[b] != mine[b]).collect();
        assert!(
            differ.iter().all(|b| (egress_at..egress_at + 4).contains(b) || (checksum_at..checksum_at + 2).contains(b)),
            "transit, packet {i}: bytes {differ:?} differ"
        );
    }

    let collector = Collector::new();
    let (restored, mine, run) = both(&dir, ("sink", CLOCKED), "transit.pcap", Some(&collector.addr()));
    assert_same_frames(&restored, &frames);
    assert_eq!(run.counter("reference-sink", "stripped"), taken);
    assert_eq!(run.counter("reference-sink", "seq_out_of_order"), 0);
    for (i, ((real, mine), before)) in restored.iter().zip(&mine).zip(&pushed).enumerate() {
        assert_eq!(mine, if common[i] { real } else { before }, "sink, packet {i}");
    }
}

/// Which frames have the INT 2.1 references' shape: those an in-process
/// INT 2.1 reference source takes.
fn common_shape21(frames: &[Vec<u8>]) -> Vec<bool> {
    use int_core::int21::fast_source::HopTimes;
    use int_core::int21::{source::SourceConfig, HeaderType, HopMetadata, Instructions};
    let config = SourceConfig {
        domain: dscp_domain21(),
        header_type: HeaderType::Md,
        instructions: Instructions::NODE_ID,
        ds_words: 0,
        max_hops: 4,
        own_hop: true,
        domain_id: 0x4944,
        ds_instructions: int_core::int21::source_only::SEQUENCE,
        ds_flags: 0,
        discard: false,
        max_ip_len: 1500,
    };
    let mut source = reference::Source21::new(&config, &HopMetadata::default(), 64).unwrap();
    taken_by(frames, |view| source.instrument(view, HopTimes { ingress_ns: 0, egress_ns: 0 }))
}

#[test]
fn int21_reference_stages_write_what_their_stages_write() {
    let dir = workdir("reference_stages21");
    let (frames, common, taken) = mixed_frames(common_shape21);
    write_pcap(&dir.join("in.pcap"), &frames);
    let int21 = format!("    int: {{version: 2.1}}\n{CLOCKED}");

    let (instrumented, mine, run) = both(&dir, ("source", &int21), "in.pcap", None);
    assert_eq!(run.counter("reference-source", "instrumented"), taken);
    assert_eq!(run.counter("reference-source", "not_common"), 300 - taken);
    for (i, ((frame, real), mine)) in frames.iter().zip(&instrumented).zip(&mine).enumerate() {
        if !common[i] {
            assert_eq!(mine, frame, "source, packet {i}");
            continue;
        }
        // The egress timestamp is the host's clock at the burst: everything
        // else, and the checksums, must agree.
        assert_checksums_hold(mine);
        let payload_at = if real[23] == 17 { 42 } else { 54 };
        let egress_at = payload_at + 32;
        let checksum_at = if real[23] == 17 { 34 + 6 } else { 34 + 16 };
        let differ: Vec<usize> = (0..real.len()).filter(|&b| real[b] != mine[b]).collect();
        assert!(
            differ.iter().all(|b| (egress_at..egress_at + 8).contains(b) || (checksum_at..checksum_at + 2).contains(b)),
            "source, packet {i}: bytes {differ:?} differ"
        );
    }

    let collector = Collector::new();
    let (restored, mine, run) = both(&dir, ("sink", &int21), "source.pcap", Some(&collector.addr()));
    assert_same_frames(&restored, &frames);
    assert_eq!(run.counter("reference-sink", "stripped"), taken);
    assert_eq!(run.counter("reference-sink", "seq_out_of_order"), 0);
    for (i, ((real, mine), before)) in restored.iter().zip(&mine).zip(&instrumented).enumerate() {
        assert_eq!(mine, if common[i] { real } else { before }, "sink, packet {i}");
    }
}
