//! Checksums checked by code nobody here wrote: tshark validates the IPv4
//! header, UDP and TCP checksums (over IPv4 and IPv6) of every packet the
//! node writes (source, transit and sink output, both encapsulations). Every checksum comes out
//! exactly as right (or as wrong) as it went in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Our dissector, so that tshark reads on past the INT block (the checksums
/// are Wireshark's own).
const LUA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/int05.lua");

/// How tshark finds the INT block. The DSCP encapsulation has no port of
/// its own: only a heuristic (ours) finds the block behind a TCP or UDP
/// header, and it must come before the port tables. The UDP encapsulation
/// has its port: tried first, no other heuristic (tshark enables 64 on
/// UDP) has a say over the outer datagram.
#[derive(Clone, Copy)]
enum Find {
    Heuristic,
    Port,
}

/// tshark with our dissector over `pcap`, its options set for `find`.
fn tshark(pcap: &Path, find: Find) -> Command {
    let first = match find {
        Find::Heuristic => "TRUE",
        Find::Port => "FALSE",
    };
    let mut command = Command::new("tshark");
    command
        .args(["-X", &format!("lua_script:{LUA}"), "-r"])
        .arg(pcap)
        .args(["-o", &format!("udp.try_heuristic_first:{first}")])
        .args(["-o", &format!("tcp.try_heuristic_first:{first}")]);
    command
}

/// tshark's verdict on the IPv4, UDP and TCP checksums of each packet
/// (Wireshark's status: 0 bad, 1 good, 2 unverified, 3 not present, 4
/// illegal (a UDP checksum of 0 over IPv6); empty
/// for a header the packet does not have).
fn checksum_status(pcap: &Path, find: Find) -> Vec<[String; 3]> {
    let output = tshark(pcap, find)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args(["-T", "fields", "-E", "separator=;", "-e", "ip.checksum.status"])
        .args(["-e", "udp.checksum.status", "-e", "tcp.checksum.status"])
        .output()
        .expect("tshark not found: run scripts/install-deps.sh");
    assert!(output.status.success(), "tshark: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            // In the UDP encapsulation the outer UDP header (checksum 0, as
            // Host-INT writes it) comes first, the packet's own last.
            let mut fields = line.split(';').map(|f| f.split(',').next_back().unwrap_or("").to_string());
            [fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap()]
        })
        .collect()
}

/// Traffic of many shapes (IPv4 and IPv6, UDP with and without checksums
/// and TCP, VLAN tags, IPv4 options, IPv6 extension headers, TCP options,
/// several ToS values), the last packet with a wrong UDP checksum.
fn traffic() -> Vec<Vec<u8>> {
    let mut frames = mixed_traffic_dual(240, 17, 60);
    let mut bad =
        int_core::craft::PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 40007, 40009, 40)
            .build();
    bad[40] ^= 0x5a;
    frames.push(bad);
    frames
}

/// tshark's whole view of packet `i` (from 0), for a failure's message.
fn packet_view(pcap: &Path, find: Find, i: usize) -> String {
    let output = tshark(pcap, find)
        .args(["-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"])
        .args(["-o", "tcp.check_checksum:TRUE", "-V", "-x", "-Y"])
        .arg(format!("frame.number == {}", i + 1))
        .output()
        .expect("tshark");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn assert_same_status(stage: &str, pcap: &Path, find: Find, expected: &[[String; 3]]) {
    let seen = checksum_status(pcap, find);
    assert_eq!(seen.len(), expected.len(), "{stage}: packets");
    for (i, (seen, expected)) in seen.iter().zip(expected).enumerate() {
        // The encapsulations add or remove a UDP header: compare what both
        // have.
        for (layer, (s, e)) in ["ipv4", "udp", "tcp"].iter().zip(seen.iter().zip(expected)) {
            if !s.is_empty() && !e.is_empty() && s != e {
                panic!(
                    "{stage}: packet {i}: {layer} checksum status {s}, expected {e} (0 bad, 1 good); \
                     tshark saw ({}):\n{}",
                    pcap.display(),
                    packet_view(pcap, find, i)
                );
            }
        }
    }
}

fn chain(name: &str, int: &str, find: Find) {
    let dir = workdir(name);
    let frames = traffic();
    write_pcap(&dir.join("in.pcap"), &frames);
    let input = checksum_status(&dir.join("in.pcap"), find);
    // Good (IPv6 has no header checksum), or (UDP) a checksum of 0: none
    // over IPv4 (3), illegal over IPv6 (4), which must stay so.
    let ip_good = |s: &[String; 3]| s[0] == "1" || s[0].is_empty();
    let l4_good = |s: &[String; 3]| matches!(s[1].as_str(), "1" | "3" | "4") || s[2] == "1";
    let good = input.iter().filter(|s| ip_good(s) && l4_good(s)).count();
    assert_eq!(good, frames.len() - 1, "the input: all good but the one spoiled on purpose");
    assert!(
        input.iter().any(|s| s[1] == "3") && input.iter().any(|s| s[2] == "1"),
        "UDP without checksums, TCP"
    );
    assert_eq!(input.last().unwrap()[1], "0", "tshark sees the spoiled UDP checksum");
    assert!(input.iter().filter(|s| s[0].is_empty()).count() >= 80, "IPv6 packets");
    run_node(&dir, &node_config("source", "in.pcap", "s.pcap", int, None));
    assert_same_status("source", &dir.join("s.pcap"), find, &input);
    run_node(&dir, &node_config("transit", "s.pcap", "t.pcap", int, None));
    assert_same_status("transit", &dir.join("t.pcap"), find, &input);
    let collector = Collector::new();
    run_node(&dir, &node_config("sink", "t.pcap", "out.pcap", int, Some(&collector.addr())));
    assert_same_status("sink", &dir.join("out.pcap"), find, &input);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

#[test]
fn tshark_validates_every_checksum_in_the_dscp_encapsulation() {
    chain("checksums-dscp", "    int: {encapsulation: int05-over-tcp-udp}\n", Find::Heuristic);
}

#[test]
fn tshark_validates_every_checksum_in_the_udp_encapsulation() {
    chain(
        "checksums-udp",
        "    int: {encapsulation: int05-extension-udp, udp_port: 33122, tcp_placement: after-options}\n",
        Find::Port,
    );
}
