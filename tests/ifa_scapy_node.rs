//! scapy's own IFA layers (secdev/scapy pull request 4235, code nobody here
//! wrote) dissect what int-node's initiator and a transit write, on the
//! real binary over net_pcap: every field of the IFA header, the metadata
//! header and each hop as the zone's settings and the packets say, the L4
//! header and the bytes after the stack as the original packet had them,
//! and, under scapy's L4 rule (`l4: cover`), the L4 checksum and UDP
//! Length scapy's own builder computes. Needs scapy with the pull
//! request's `scapy.contrib.ifa` (`tests/ifa/scapy_dissect.py` says how).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;

use common::*;
use int_core::locate::{self, IpVersion};
use serde_json::Value;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/scapy_dissect.py");

/// Room for IFA's 40 bytes and a transit's 32 in a 1500-byte MTU.
const HEADROOM: usize = 80;
const INITIATOR: u32 = 0xabcde;
const TRANSIT: u32 = 0x12345;
const HOP_LIMIT: u64 = 9;
const MAX_LENGTH: u64 = 40;
/// `node_config`'s one port.
const PORT: u64 = 7;

/// The zone under the L4 rule `l4`, for the node of `device_id`. The
/// node's own clock: under `clock: rx-timestamp` a replayed pcap's capture
/// times are the RX times, and the residence time (the node's clock at
/// the foretold departure minus that RX time) comes out as years,
/// written 0xffffffff.
fn zone(device_id: u32, l4: &str) -> String {
    format!(
        "    int: {{version: ifa, device_id: {device_id}, hop_limit: {HOP_LIMIT}, max_length: {MAX_LENGTH}, l4: {l4}}}\n"
    )
}

/// The node's clock (the system's) now, ns since the epoch.
fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// `run_node`, and the node's run between two readings of the clock.
fn run_timed(dir: &Path, config: &str) -> (Run, Ran) {
    let started = now_ns();
    let run = run_node(dir, config);
    (run, started..=now_ns())
}

/// scapy's dissection of each packet of `pcap`.
fn scapy(pcap: &Path) -> Vec<Value> {
    let output = std::process::Command::new("python3").arg(SCRIPT).arg(pcap).output().expect("python3");
    assert!(
        output.status.success(),
        "scapy with pull request 4235's IFA layers is needed (tests/ifa/scapy_dissect.py says how): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout).unwrap().as_array().unwrap().clone()
}

/// What the original packet gives: its L4 protocol, TTL or Hop Limit,
/// L4 header bytes and the bytes after them.
struct Original {
    protocol: u8,
    ttl: u8,
    l4_header: Vec<u8>,
    payload: Vec<u8>,
    ip_len: usize,
    ipv4: bool,
}

fn original(frame: &[u8]) -> Original {
    let ip = locate::ip(frame).unwrap().unwrap();
    let ipv4 = ip.version == IpVersion::V4;
    let header_len = match ip.protocol {
        6 => usize::from(frame[ip.l4 + 12] >> 4) * 4,
        17 => 8,
        other => panic!("protocol {other}"),
    };
    Original {
        protocol: ip.protocol,
        ttl: frame[ip.l3 + if ipv4 { 8 } else { 7 }],
        l4_header: frame[ip.l4..ip.l4 + header_len].to_vec(),
        payload: frame[ip.l4 + header_len..ip.end].to_vec(),
        ip_len: ip.ip_len(),
        ipv4,
    }
}

/// A hop as scapy read it is this node's: LNS 1, its Device ID, the
/// packet's TTL, its port as ingress and egress, RX queue 0, an RX time
/// while the node ran (`ran`), and 0 where a software node knows nothing
/// (speed, congestion, the opaque words).
fn check_hop(hop: &Value, device_id: u32, ttl: u8, ran: &Ran, what: &str) {
    let expected = [
        ("lns", 1),
        ("device_id", u64::from(device_id)),
        ("ttl", u64::from(ttl)),
        ("speed", 0),
        ("ecn", 0),
        ("qid", 0),
        ("dport", PORT),
        ("sport", PORT),
        ("qbytes", 0),
        ("rsvd0", 0),
        ("qcells", 0),
        ("rsvd1", 0),
    ];
    for (field, value) in expected {
        assert_eq!(hop[field].as_u64(), Some(value), "{what}: hop {field}: {hop}");
    }
    // The RX time: its 20 bits of seconds read near the run.
    let (seconds, ns) = (hop["rx_sec"].as_u64().unwrap(), hop["rx_nsec"].as_u64().unwrap());
    let rx_hop = int_core::ifa::HopRepr {
        rx_seconds: seconds as u32,
        rx_nanoseconds: ns as u32,
        ..Default::default()
    };
    let rx_ns = rx_hop.rx_ns(*ran.end());
    assert!(ns < 1_000_000_000 && ran.contains(&rx_ns), "{what}: RX time {rx_ns} not within the run {ran:?}");
    // The residence time: to the burst's foretold departure, at most
    // 320 us (`pipeline/hop_figures.rs`).
    assert!(hop["latency"].as_u64().unwrap() <= 320_000, "{what}: {hop}");
}

/// When a node ran: between two readings of the clock, ns since the epoch.
type Ran = std::ops::RangeInclusive<u64>;

/// Every field of one packet as scapy read it, `hops` the Device IDs and
/// the nodes' runs newest first.
fn check_packet(read: &Value, frame: &[u8], hops: &[(u32, Ran)], cover: bool, what: &str) {
    let o = original(frame);
    let ifa_len = 8 + 32 * hops.len();
    check_ifa_header(read, &o, ifa_len, what);
    let md = &read["md"];
    let hop_limit = HOP_LIMIT - (hops.len() as u64 - 1);
    for (field, value) in
        [("request", 0xff), ("action", 0), ("hoplmt", hop_limit), ("curlen", 8 * hops.len() as u64)]
    {
        assert_eq!(md[field].as_u64(), Some(value), "{what}: metadata {field}: {md}");
    }
    let read_hops = read["hops"].as_array().unwrap();
    assert_eq!(read_hops.len(), hops.len(), "{what}");
    for (hop, (device_id, ran)) in read_hops.iter().zip(hops) {
        check_hop(hop, *device_id, o.ttl, ran, what);
    }
    let trailer = frame.len() - locate::ip(frame).unwrap().unwrap().end;
    check_l4(read, &o, trailer, ifa_len, cover, what);
}

/// The IP header and the IFA header as scapy read them: IFA's protocol,
/// the lengths grown by `ifa_len`, the IPv4 checksum verifying; version
/// 2, GNS 15, the original protocol as Next Header, I alone, Max Length.
fn check_ifa_header(read: &Value, o: &Original, ifa_len: usize, what: &str) {
    assert_eq!(read["ip"]["protocol"], 253, "{what}: {read}");
    if o.ipv4 {
        assert_eq!(read["ip"]["length"].as_u64(), Some((o.ip_len + ifa_len) as u64), "{what}");
        assert_eq!(read["ip"]["checksum_ok"], true, "{what}");
    } else {
        assert_eq!(read["ip"]["payload_length"].as_u64(), Some((o.ip_len - 40 + ifa_len) as u64), "{what}");
    }
    let ifa = &read["ifa"];
    for (field, value) in
        [("ver", 2), ("gns", 15), ("nexthdr", u64::from(o.protocol)), ("flags", 4), ("maxlen", MAX_LENGTH)]
    {
        assert_eq!(ifa[field].as_u64(), Some(value), "{what}: IFA {field}: {ifa}");
    }
    assert_eq!(ifa["flag_names"], "I", "{what}");
}

/// The L4 header and what follows the stack as the original had them;
/// under `cover`, its checksum (and UDP Length) what scapy's builder
/// computes over the packet with its metadata (a UDP checksum of 0, none,
/// stays 0); under `keep`, untouched.
fn check_l4(read: &Value, o: &Original, trailer: usize, ifa_len: usize, cover: bool, what: &str) {
    let l4 = &read["l4"];
    let bytes = hex(l4["bytes"].as_str().unwrap());
    assert_eq!(bytes.len(), o.l4_header.len(), "{what}: {l4}");
    // Under cover the checksum (and UDP Length) are new; every other byte
    // is the original's.
    let udp = o.protocol == 17;
    let covered: &[usize] = if udp { &[4, 5, 6, 7] } else { &[16, 17] };
    for (i, (ours, theirs)) in bytes.iter().zip(&o.l4_header).enumerate() {
        if !cover || !covered.contains(&i) {
            assert_eq!(ours, theirs, "{what}: L4 byte {i}: {l4}");
        }
    }
    let after = hex(read["after_stack"].as_str().unwrap());
    assert_eq!(after.len(), o.payload.len() + trailer, "{what}: the bytes after the stack");
    assert_eq!(after[..o.payload.len()], o.payload[..], "{what}: the payload");
    if !cover {
        return;
    }
    let no_checksum = udp && o.l4_header[6..8] == [0, 0];
    if no_checksum {
        assert_eq!(l4["chksum"], 0, "{what}: {l4}");
    } else {
        assert_eq!(l4["chksum"], l4["scapy_chksum"], "{what}: scapy's builder's checksum: {l4}");
    }
    if udp {
        let length = 8 + o.payload.len() + ifa_len - 4;
        assert_eq!(l4["len"].as_u64(), Some(length as u64), "{what}: UDP Length covers the metadata: {l4}");
        assert_eq!(l4["len"], l4["scapy_len"], "{what}: {l4}");
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

/// Whether scapy can read the whole stack: it cuts a UDP payload at the
/// UDP Length, which under the draft's rule leaves out the metadata, so a
/// UDP payload shorter than the metadata cuts the stack short.
fn readable(o: &Original, hops: usize, cover: bool) -> bool {
    cover || o.protocol != 17 || o.payload.len() >= 4 + 32 * hops
}

/// The initiator (Device ID 0xabcde) then a transit (0x12345) over 48
/// packets of 12 flows (IPv4 and IPv6 behind extension headers, TCP with
/// and without options, UDP with and without checksums), under both L4
/// rules; scapy dissects each node's output. Under the draft's rule
/// (`keep`), scapy's UDP cuts its payload at the UDP Length, short of the
/// stack where the payload is shorter than the metadata: those packets
/// are read to the IFA header, the rest (every TCP packet) whole.
#[test]
fn scapy_dissects_the_initiators_and_a_transits_ifa() {
    for l4 in ["cover", "keep"] {
        let cover = l4 == "cover";
        let dir = workdir(&format!("ifa-scapy-dissects-{l4}"));
        let frames = mixed_traffic_dual(48, 12, HEADROOM);
        write_pcap(&dir.join("in.pcap"), &frames);
        let (source, initiator_ran) =
            run_timed(&dir, &node_config("source", "in.pcap", "ifa.pcap", &zone(INITIATOR, l4), None));
        assert_eq!(source.counter("source", "instrumented"), 48, "{}", source.stdout());
        let (transit, transit_ran) =
            run_timed(&dir, &node_config("transit", "ifa.pcap", "ifa2.pcap", &zone(TRANSIT, l4), None));
        assert_eq!(transit.counter("transit", "pushed"), 48, "{}", transit.stdout());
        // Read whole: TCP, UDP; and UDP read to the IFA header alone.
        let mut read = [0usize; 3];
        for (pcap, transits) in [("ifa.pcap", 0), ("ifa2.pcap", 1)] {
            let dissected = scapy(&dir.join(pcap));
            assert_eq!(dissected.len(), frames.len(), "{pcap}");
            for (i, (packet, frame)) in dissected.iter().zip(&frames).enumerate() {
                let o = original(frame);
                let mut hops = vec![(INITIATOR, initiator_ran.clone())];
                if transits == 1 {
                    hops.insert(0, (TRANSIT, transit_ran.clone()));
                }
                let what = format!("{l4}: {pcap} packet {i} ({})", packet["layers"]);
                if readable(&o, hops.len(), cover) {
                    check_packet(packet, frame, &hops, cover, &what);
                    read[usize::from(o.protocol == 17)] += 1;
                } else {
                    check_ifa_header(packet, &o, 8 + 32 * hops.len(), &what);
                    read[2] += 1;
                }
            }
        }
        // TCP and UDP packets read whole, of both files; under cover, all.
        assert!(read[0] > 0 && read[1] > 0, "{l4}: TCP, UDP, cut packets read: {read:?}");
        assert_eq!(read.iter().sum::<usize>(), 2 * frames.len());
        assert_eq!(read[2] == 0, cover, "{l4}: {read:?}");
        eprintln!(
            "{l4}: scapy read whole {} TCP and {} UDP packets, {} UDP ones to the IFA header",
            read[0], read[1], read[2]
        );
    }
}
