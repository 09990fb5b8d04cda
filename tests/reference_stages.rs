//! The benchmark's reference stages on the real binary (net_pcap, RX
//! timestamps as the clock): every frame of their shape comes out as the
//! real stage writes it, every other frame passes untouched and counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use int_core::craft::PacketSpec;
use int_core::int05::HopMetadata;
use int_core::reference;
use int_core::source::SourceConfig;

const CLOCKED: &str = "    clock: rx-timestamp\n";

/// Which frames have the references' shape: those an in-process reference
/// source takes.
fn common_shape(frames: &[Vec<u8>]) -> Vec<bool> {
    let mut source =
        reference::Source::new(&SourceConfig::host_int(1500), &HopMetadata::default(), 64).unwrap();
    frames
        .iter()
        .map(|frame| {
            let mut buffer = vec![0u8; 64 + frame.len()];
            buffer[64..].copy_from_slice(frame);
            let mut view = int_core::FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
            source.instrument(&mut view, 0)
        })
        .collect()
}

/// Runs `role` and `reference-role` on `input`; returns both outputs and the
/// reference's run.
fn both(
    dir: &std::path::Path,
    role: &str,
    input: &str,
    export: Option<&str>,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Run) {
    let real_out = format!("{role}.pcap");
    run_node(dir, &node_config(role, input, &real_out, CLOCKED, export));
    let reference_role = format!("reference-{role}");
    let reference_out = format!("{reference_role}.pcap");
    let run = run_node(dir, &node_config(&reference_role, input, &reference_out, CLOCKED, None));
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
    // Frames of other shapes (VLAN tags, IPv4 options, TCP options) get
    // flows of their own: the real source numbers a flow's packets of
    // every shape, the reference only those of its own.
    let mut specs = mixed_specs(300, 23, 60);
    let common = common_shape(&specs.iter().map(PacketSpec::build).collect::<Vec<_>>());
    for (spec, common) in specs.iter_mut().zip(&common) {
        if !common {
            spec.src = Ipv4Addr::new(10, 9, 0, spec.src.octets()[3]);
        }
    }
    let frames: Vec<Vec<u8>> = specs.iter().map(PacketSpec::build).collect();
    assert_eq!(common_shape(&frames), common);
    let taken = common.iter().filter(|c| **c).count() as u64;
    assert!((100..300).contains(&taken), "{taken} frames of the common shape: both kinds are tested");
    write_pcap(&dir.join("in.pcap"), &frames);

    let (instrumented, mine, run) = both(&dir, "source", "in.pcap", None);
    assert_eq!(run.counter("reference-source", "instrumented"), taken);
    assert_eq!(run.counter("reference-source", "not_common"), 300 - taken);
    for (i, ((frame, real), mine)) in frames.iter().zip(&instrumented).zip(&mine).enumerate() {
        assert_eq!(mine, if common[i] { real } else { frame }, "source, packet {i}");
    }

    let (pushed, mine, run) = both(&dir, "transit", "source.pcap", None);
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
    let (restored, mine, run) = both(&dir, "sink", "transit.pcap", Some(&collector.addr()));
    assert_same_frames(&restored, &frames);
    assert_eq!(run.counter("reference-sink", "stripped"), taken);
    assert_eq!(run.counter("reference-sink", "seq_out_of_order"), 0);
    for (i, ((real, mine), before)) in restored.iter().zip(&mine).zip(&pushed).enumerate() {
        assert_eq!(mine, if common[i] { real } else { before }, "sink, packet {i}");
    }
}
