//! INT 2.1 stacks as switches leave them, for the sink's hop rules: the
//! source's hop, then two switches' whose figures step during the run.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use int_core::int21::{transit, HopMetadata};

use super::*;

pub const FLOWS: usize = 3;
pub const PACKETS: usize = 90;
/// From this packet on, the middle hop (node 10.0.0.5) takes 50 us, not 5.
pub const SLOWER_FROM: usize = 45;
/// From this packet on, the last hop's (10.0.0.6) queue holds 9000.
pub const FULLER_FROM: usize = 60;

pub const INSTRUCTIONS: &str =
    "[node_id, l1_port_ids, hop_latency, queue_occupancy, ingress_timestamp, egress_timestamp]";

/// In [`path_change_stacks`], from this packet on the middle hop is
/// another switch: 10.0.0.7 in place of 10.0.0.5.
pub const MOVED_FROM: usize = SLOWER_FROM;

/// A packet after the source and the two switches: the middle one
/// `middle` (its latency 50 us where `slower`, else 5 us), the last one's
/// queue 9000 where `fuller`, else 10.
fn switch_hops(frame: &[u8], middle: u32, slower: bool, fuller: bool) -> Vec<u8> {
    let domain = dscp_domain21();
    let mut buffer = vec![0u8; 256 + frame.len()];
    buffer[256..].copy_from_slice(frame);
    let mut view = int_core::FrameBuf::new(&mut buffer, 256, frame.len()).unwrap();
    let middle = HopMetadata {
        node_id: Some(middle),
        hop_latency: Some(if slower { 50_000 } else { 5_000 }),
        queue: Some((0, 10)),
        ..HopMetadata::default()
    };
    let last = HopMetadata {
        node_id: Some(0x0a00_0006),
        hop_latency: Some(1_000),
        queue: Some((3, if fuller { 9_000 } else { 10 })),
        ..HopMetadata::default()
    };
    for hop in [middle, last] {
        transit::push(&mut view, &domain, 1500, &hop).unwrap();
    }
    view.frame().to_vec()
}

/// The stacks as the sink reads them, in `dir/hops.pcap`; the original
/// frames.
pub fn three_hop_stacks(dir: &std::path::Path) -> Vec<Vec<u8>> {
    stacks(dir, false)
}

/// [`three_hop_stacks`] whose path changes at [`MOVED_FROM`], and nothing
/// else: each flow's middle hop another switch with the same figures.
pub fn path_change_stacks(dir: &std::path::Path) -> Vec<Vec<u8>> {
    stacks(dir, true)
}

fn stacks(dir: &std::path::Path, moved: bool) -> Vec<Vec<u8>> {
    let (frames, sourced) = sourced(dir, PACKETS);
    let pushed: Vec<Vec<u8>> = sourced
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let middle = if moved && i >= MOVED_FROM { 0x0a00_0007 } else { 0x0a00_0005 };
            switch_hops(f, middle, !moved && i >= SLOWER_FROM, !moved && i >= FULLER_FROM)
        })
        .collect();
    write_pcap(&dir.join("hops.pcap"), &pushed);
    retime_after_source21(&dir.join("hops.pcap"), &dscp_domain21(), 250_000);
    frames
}

/// `count` packets of [`FLOWS`] flows through int-node's INT 2.1 source:
/// the original frames and the source's.
fn sourced(dir: &std::path::Path, count: usize) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let frames = mixed_traffic(count, FLOWS, 200);
    write_pcap(&dir.join("in.pcap"), &frames);
    // The source's times are the capture's (whole µs, as the sink reads
    // them back): the retimed latency is exactly 250 µs. On the host clock
    // it came out 249.0-250.0 µs by where the ns fell, astride the default
    // bucket bound at 250 µs: a flow reported again now and then.
    let section = format!(
        "    int: {{version: 2.1}}\n    clock: rx-timestamp\n    source: {{instructions: {INSTRUCTIONS}}}\n"
    );
    let source = run_node(dir, &node_config("source", "in.pcap", "int.pcap", &section, None));
    assert_eq!(source.counter("source", "instrumented"), count as u64, "{}", source.stdout());
    (frames, read_pcap(&dir.join("int.pcap")))
}

/// A packet as the sink's sample sees it: its flow and its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbered {
    pub flow: int_core::flow::FlowKey,
    pub sequence: u32,
}

impl Numbered {
    /// Whether the hop rule's `sample` reads it.
    pub fn taken(&self, sample: int_core::hop_rule::Sample) -> bool {
        sample.takes(Some(self.sequence), self.flow.phase())
    }
}

/// Each INT 2.1 frame's flow and packet number.
pub fn numbered(frames: &[Vec<u8>]) -> Vec<Numbered> {
    let rule = int_core::hop_rule::HopRule::default();
    let read = |frame: &Vec<u8>| {
        let found = int_core::int21::sink::extract(frame, &dscp_domain21(), &rule).unwrap().unwrap();
        Numbered { flow: found.flow, sequence: found.sequence.unwrap() }
    };
    frames.iter().map(read).collect()
}

/// Per-packet spraying over two switches: `count` packets of [`FLOWS`]
/// flows whose middle hop is 10.0.0.7 for the packets whose number
/// `sprayed` holds, 10.0.0.5 for the others, in `dir/hops.pcap`. Returns
/// the original frames, and each packet's numbers and whether it went
/// through 10.0.0.7.
pub fn sprayed_stacks(
    dir: &std::path::Path,
    count: usize,
    sprayed: impl Fn(u32) -> bool,
) -> (Vec<Vec<u8>>, Vec<(Numbered, bool)>) {
    let (frames, sourced) = sourced(dir, count);
    let packets: Vec<(Numbered, bool)> =
        numbered(&sourced).into_iter().map(|n| (n, sprayed(n.sequence))).collect();
    let pushed: Vec<Vec<u8>> = sourced
        .iter()
        .zip(&packets)
        .map(|(f, (_, moved))| switch_hops(f, if *moved { 0x0a00_0007 } else { 0x0a00_0005 }, false, false))
        .collect();
    write_pcap(&dir.join("hops.pcap"), &pushed);
    retime_after_source21(&dir.join("hops.pcap"), &dscp_domain21(), 250_000);
    (frames, packets)
}

/// The path changes a sink whose hop rule samples by `sample` reports
/// of packets that each took one of two paths (`true`: the other one):
/// per flow, the sampled packets whose path is not the last sampled one's.
pub fn path_changes(packets: &[(Numbered, bool)], sample: int_core::hop_rule::Sample) -> u64 {
    let mut last = std::collections::HashMap::new();
    let mut changes = 0;
    for (n, path) in packets.iter().filter(|(n, _)| n.taken(sample)) {
        changes += u64::from(last.insert(n.flow, *path).is_some_and(|before| before != *path));
    }
    changes
}
