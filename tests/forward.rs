//! The DPDK plumbing, proved with the `forward` role on net_pcap vdevs: the
//! output pcap equals the input, packet for packet; two lcores over two
//! port pairs; every mbuf back in the pool at exit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;

#[test]
fn forward_is_byte_exact() {
    let dir = workdir("forward");
    let frames = mixed_traffic(400, 37, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let config = format!(
        "
eal: {EAL}
ports:
  - name: pcap
    device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap
pipelines:
  - name: fwd
    role: forward
    lcore: 1
    rx: {{port: pcap}}
    tx: {{port: pcap}}
"
    );
    let run = run_node(&dir, &config);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(run.counter("fwd", "rx_packets"), 400);
    assert_eq!(run.counter("fwd", "tx_packets"), 400);
    assert_eq!(run.stats["mempool"]["in_use_at_exit"], 0, "every mbuf back in the pool");
    assert!(run.stdout().contains("mempool: 0 of"));
}

#[test]
fn two_lcores_two_port_pairs() {
    let dir = workdir("two-lcores");
    let a = mixed_traffic(300, 11, 0);
    let b: Vec<Vec<u8>> = mixed_traffic(250, 5, 0).into_iter().rev().collect();
    write_pcap(&dir.join("a.pcap"), &a);
    write_pcap(&dir.join("b.pcap"), &b);
    let config = format!(
        "
eal: {EAL_3_LCORES}
ports:
  - {{name: in_a, device: 'net_pcap0,rx_pcap=a.pcap,tx_pcap=unused_a.pcap'}}
  - {{name: out_a, device: 'net_pcap1,rx_pcap=empty.pcap,tx_pcap=out_a.pcap'}}
  - {{name: in_b, device: 'net_pcap2,rx_pcap=b.pcap,tx_pcap=unused_b.pcap'}}
  - {{name: out_b, device: 'net_pcap3,rx_pcap=empty.pcap,tx_pcap=out_b.pcap'}}
pipelines:
  - {{name: a, role: forward, lcore: 1, rx: {{port: in_a}}, tx: {{port: out_a}}}}
  - {{name: b, role: forward, lcore: 2, rx: {{port: in_b}}, tx: {{port: out_b}}}}
"
    );
    write_pcap(&dir.join("empty.pcap"), &[]);
    let run = run_node(&dir, &config);
    assert_same_frames(&read_pcap(&dir.join("out_a.pcap")), &a);
    assert_same_frames(&read_pcap(&dir.join("out_b.pcap")), &b);
    assert_eq!(run.counter("a", "tx_packets"), 300);
    assert_eq!(run.counter("b", "tx_packets"), 250);
    assert_eq!(run.stats["mempool"]["in_use_at_exit"], 0);
}

/// TX-queue-full drops free their mbufs: a net_ring port whose ring nobody
/// drains fills up, the node frees what the queue refuses, and after the
/// shutdown drain every mbuf is back.
#[test]
fn tx_queue_full_drops_leak_nothing() {
    let dir = workdir("tx-full");
    let frames = mixed_traffic(3000, 7, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let config = format!(
        "
eal: {EAL}
ports:
  - {{name: pcap, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=unused.pcap'}}
  - {{name: ring, device: net_ring0}}
pipelines:
  - {{name: fwd, role: forward, lcore: 1, rx: {{port: pcap}}, tx: {{port: ring}}}}
"
    );
    let run = run_node(&dir, &config);
    let sent = run.counter("fwd", "tx_packets");
    let dropped = run.counter("fwd", "tx_dropped");
    assert_eq!(sent + dropped, 3000);
    assert!(dropped > 0, "the ring should have filled (sent {sent})");
    assert_eq!(run.stats["mempool"]["in_use_at_exit"], 0, "sent {sent}, dropped {dropped}");
}
