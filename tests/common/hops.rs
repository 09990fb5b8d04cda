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

/// Packet `i` after the source and the two switches (`moved`: the middle
/// one another from [`MOVED_FROM`] on, its figures never stepping).
fn switch_hops(frame: &[u8], i: usize, moved: bool) -> Vec<u8> {
    let domain = dscp_domain21();
    let mut buffer = vec![0u8; 256 + frame.len()];
    buffer[256..].copy_from_slice(frame);
    let mut view = int_core::FrameBuf::new(&mut buffer, 256, frame.len()).unwrap();
    let middle = HopMetadata {
        node_id: Some(if moved && i >= MOVED_FROM { 0x0a00_0007 } else { 0x0a00_0005 }),
        hop_latency: Some(if !moved && i >= SLOWER_FROM { 50_000 } else { 5_000 }),
        queue: Some((0, 10)),
        ..HopMetadata::default()
    };
    let last = HopMetadata {
        node_id: Some(0x0a00_0006),
        hop_latency: Some(1_000),
        queue: Some((3, if !moved && i >= FULLER_FROM { 9_000 } else { 10 })),
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
    let frames = mixed_traffic(PACKETS, FLOWS, 200);
    write_pcap(&dir.join("in.pcap"), &frames);
    // The source's times are the capture's (whole µs, as the sink reads
    // them back): the retimed latency is exactly 250 µs. On the host clock
    // it came out 249.0-250.0 µs by where the ns fell, astride the default
    // bucket bound at 250 µs: a flow reported again now and then.
    let section = format!(
        "    int: {{version: 2.1}}\n    clock: rx-timestamp\n    source: {{instructions: {INSTRUCTIONS}}}\n"
    );
    let source = run_node(dir, &node_config("source", "in.pcap", "int.pcap", &section, None));
    assert_eq!(source.counter("source", "instrumented"), PACKETS as u64, "{}", source.stdout());
    let pushed: Vec<Vec<u8>> =
        read_pcap(&dir.join("int.pcap")).iter().enumerate().map(|(i, f)| switch_hops(f, i, moved)).collect();
    write_pcap(&dir.join("hops.pcap"), &pushed);
    retime_after_source21(&dir.join("hops.pcap"), &dscp_domain21(), 250_000);
    frames
}
