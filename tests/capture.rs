//! The node's own packet capture: a source's port captured in both
//! directions into pcapng; what it says came in is the input pcap and
//! what it says went out is the pcap the node wrote, packet for packet
//! and byte for byte; tshark reads the file too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};

use common::*;

/// The capture's packets, inbound and outbound, and its interface's name
/// and time resolution.
fn read_capture(path: &std::path::Path) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, String, u8) {
    let mut reader = PcapNgReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let (mut inbound, mut outbound, mut name, mut resolution) = (Vec::new(), Vec::new(), String::new(), 6);
    while let Some(block) = reader.next_block() {
        match block.unwrap() {
            Block::InterfaceDescription(interface) => {
                for option in &interface.options {
                    match option {
                        InterfaceDescriptionOption::IfName(n) => name = n.to_string(),
                        InterfaceDescriptionOption::IfTsResol(r) => resolution = *r,
                        _ => {}
                    }
                }
            }
            Block::EnhancedPacket(packet) => {
                assert!(packet.timestamp.as_secs() > 1_600_000_000, "an epoch time in ns");
                assert_eq!(
                    packet.original_len as usize,
                    packet.data.len(),
                    "whole packets at the default snaplen"
                );
                match packet.options.as_slice() {
                    [EnhancedPacketOption::Flags(0b01)] => inbound.push(packet.data.to_vec()),
                    [EnhancedPacketOption::Flags(0b10)] => outbound.push(packet.data.to_vec()),
                    other => panic!("no direction: {other:?}"),
                }
            }
            _ => {}
        }
    }
    (inbound, outbound, name, resolution)
}

#[test]
fn a_capture_holds_what_came_in_and_what_went_out() {
    let dir = workdir("capture");
    let frames = mixed_traffic(600, 12, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let config = node_config("source", "in.pcap", "out.pcap", "", None)
        + "capture: [{port: in, direction: both, file: capture.pcapng}]\n";
    let run = run_node(&dir, &config);
    assert_eq!(run.counter("source", "captured"), 2 * frames.len() as u64);
    assert_eq!(run.counter("source", "capture_dropped"), 0);
    let (inbound, outbound, name, resolution) = read_capture(&dir.join("capture.pcapng"));
    assert_eq!((name.as_str(), resolution), ("in", 9));
    assert_same_frames(&inbound, &frames);
    let written = read_pcap(&dir.join("out.pcap"));
    assert_same_frames(&outbound, &written);
    assert!(written.iter().zip(&frames).any(|(out, input)| out.len() > input.len()), "the source added INT");
    // Code nobody here wrote reads it: tshark, every packet.
    let tshark = std::process::Command::new("tshark")
        .args(["-r", "capture.pcapng", "-T", "fields", "-e", "frame.len"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(tshark.status.success(), "{}", String::from_utf8_lossy(&tshark.stderr));
    assert_eq!(String::from_utf8_lossy(&tshark.stdout).lines().count(), 2 * frames.len());
    // And our decode: every packet, the instrumented ones read as INT.
    let decoded = int_tools(&dir, &["decode", "--json", "capture.pcapng"]);
    let kinds: Vec<serde_json::Value> = decoded
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].clone())
        .collect();
    assert_eq!(kinds.len(), 2 * frames.len());
    let instrumented = run.counter("source", "instrumented") as usize;
    assert_eq!(kinds.iter().filter(|k| *k == "int").count(), instrumented, "{decoded}");
    assert!(instrumented > 0);
}

/// A snap length cuts what is kept, not what is counted: every packet is
/// in the file with its true length.
#[test]
fn a_snap_length_keeps_the_start_and_the_true_length() {
    let dir = workdir("capture-snaplen");
    let frames = mixed_traffic(200, 4, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let config = node_config("forward", "in.pcap", "out.pcap", "", None)
        + "capture: [{port: in, direction: rx, file: capture.pcapng, snaplen: 64}]\n";
    run_node(&dir, &config);
    let mut reader = PcapNgReader::new(std::fs::File::open(dir.join("capture.pcapng")).unwrap()).unwrap();
    let mut seen = 0;
    while let Some(block) = reader.next_block() {
        if let Block::EnhancedPacket(packet) = block.unwrap() {
            let frame = &frames[seen];
            assert_eq!(packet.original_len as usize, frame.len());
            assert_eq!(packet.data.as_ref(), &frame[..frame.len().min(64)]);
            seen += 1;
        }
    }
    assert_eq!(seen, frames.len());
}
