//! scapy's own IFA packets (pull request 4235, `test/contrib/ifa.uts`, all
//! 52, built with IFA's protocol set to 253 by `tests/ifa/scapy_packets.py`,
//! and one more of that script's whose hop sets every field) read by
//! int-core: every offset and every field as scapy built and dissected it.
//! And what scapy's L4 length and checksums cover, measured.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::net::{Ipv4Addr, Ipv6Addr};

use int_core::checksum;
use int_core::ifa::{sink, source, transit, Action, Carrier, Domain, HopRepr, L4Rule, Located, Payload};
use int_core::locate::IpVersion;
use int_core::FrameBuf;
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/");

fn frames() -> Vec<Vec<u8>> {
    let file = std::fs::File::open(format!("{FIXTURES}scapy_packets.pcap")).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut out = Vec::new();
    while let Some(packet) = reader.next_packet() {
        out.push(packet.unwrap().data.into_owned());
    }
    out
}

fn records() -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{FIXTURES}scapy_packets.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["ip_protocol"], 253);
    json["packets"].as_array().unwrap().clone()
}

fn num(value: &Value) -> u64 {
    value.as_u64().unwrap_or_else(|| panic!("not a number: {value}"))
}

/// Every packet, the .uts's 52 and the one with every field.
fn packets() -> Vec<(Vec<u8>, Value, Located)> {
    let (frames, records) = (frames(), records());
    assert_eq!((frames.len(), records.len()), (53, 53));
    assert_eq!(records.iter().filter(|r| r["uts"] == true).count(), 52);
    frames
        .into_iter()
        .zip(records)
        .map(|(frame, record)| {
            let found = Domain::default().locate(&frame).unwrap().unwrap();
            (frame, record, found)
        })
        .collect()
}

#[test]
fn all_52_packets_are_found_at_scapys_offsets() {
    for (frame, record, found) in packets() {
        let at = &record["offsets"];
        let summary = &record["summary"];
        let got = [found.ip.l3, found.header_at, found.l4_at, found.md_at, found.stack_at, found.payload_at];
        let want = ["ip", "ifa", "l4", "md", "stack", "payload"].map(|k| num(&at[k]) as usize);
        assert_eq!(got, want, "{summary}");
        assert_eq!(found.ip.end, num(&at["ip_end"]) as usize, "{summary}");
        let version = if found.ip.version == IpVersion::V4 { 4 } else { 6 };
        assert_eq!(version, num(&record["ip_version"]), "{summary}");
        let l4_bytes: String = frame[found.l4_at..found.md_at].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(l4_bytes, record["l4_bytes"].as_str().unwrap(), "{summary}");
    }
}

#[test]
fn every_header_field_reads_as_scapy_built_it() {
    for (_, record, found) in packets() {
        let (ifa, md) = (&record["ifa"], &record["md"]);
        let summary = &record["summary"];
        let header = found.header;
        let got = [header.version, header.gns, header.next_header, header.flags.bits(), header.max_length];
        let want = ["ver", "gns", "nexthdr", "flags", "maxlen"].map(|k| num(&ifa[k]) as u8);
        assert_eq!(got, want, "{summary}");
        let got =
            [found.md.request_vector, found.md.action.bits(), found.md.hop_limit, found.md.current_length];
        let want = ["request", "action", "hoplmt", "curlen"].map(|k| num(&md[k]) as u8);
        assert_eq!(got, want, "{summary}");
        if record["uts"] == true {
            assert_eq!(want, [238, 192, 126, 16]);
        }
    }
}

#[test]
fn every_hop_field_reads_as_scapy_built_it() {
    let mut hops = 0;
    for (frame, record, found) in packets() {
        let want = record["hops"].as_array().unwrap();
        let got: Vec<_> = found.stack(&frame).hops().collect();
        assert_eq!(got.len(), want.len());
        for (hop, fields) in got.iter().zip(want) {
            let f = |k: &str| num(&fields[k]);
            let read = [
                u64::from(hop.lns),
                u64::from(hop.device_id),
                u64::from(hop.ip_ttl),
                u64::from(hop.egress_port_speed.code()),
                u64::from(hop.congestion),
                u64::from(hop.queue_id),
                u64::from(hop.rx_seconds),
                u64::from(hop.egress_system_port),
                u64::from(hop.ingress_system_port),
                u64::from(hop.rx_nanoseconds),
                u64::from(hop.residence_ns),
                u64::from(hop.opaque[0]),
                u64::from(hop.opaque[1]),
                u64::from(hop.opaque[2]),
            ];
            // scapy splits the second opaque word into rsvd0 and qcells.
            let built = [
                f("lns"),
                f("device_id"),
                f("ttl"),
                f("speed"),
                f("ecn"),
                f("qid"),
                f("rx_sec"),
                f("dport"),
                f("sport"),
                f("rx_nsec"),
                f("latency"),
                f("qbytes"),
                (f("rsvd0") << 16) | f("qcells"),
                f("rsvd1"),
            ];
            assert_eq!(read, built, "{}", record["summary"]);
            hops += 1;
        }
    }
    assert_eq!(hops, 105);
}

/// scapy's bytes for the hop with every field set are the ones written by
/// hand from Broadcom's widths in int-core's `ifa::hop` golden test.
#[test]
fn scapys_every_field_hop_is_the_hand_written_golden_hop() {
    let (frame, _, found) = packets().pop().unwrap();
    let stack: String = frame[found.stack_at..found.payload_at].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(stack, "1abcde406eaf1234010203040506070809 0a0b0c111111112222222233333333".replace(' ', ""));
}

#[test]
fn carriers_and_what_follows_the_stack_are_scapys_layers() {
    let mut kinds = std::collections::BTreeMap::new();
    for (_, record, found) in packets() {
        let summary = record["summary"].as_str().unwrap();
        let kind = record["offsets"]["l4_kind"].as_str().unwrap();
        let payload = found.carrier.payload();
        let expected = match found.carrier {
            Carrier::Tcp { src_port: 3300, dst_port: 4400 } => (kind == "tcp", Payload::Data),
            Carrier::Udp { src_port: 1100, dst_port: 2200, .. } => (kind == "udp", Payload::Data),
            Carrier::Udp { dst_port: 4789, .. } => (kind == "udp", Payload::Vxlan),
            Carrier::Udp { dst_port: 4790, .. } => (kind == "udp", Payload::VxlanGpe),
            Carrier::Gre(gre) => (
                kind == "gre",
                match gre.protocol {
                    0x6558 => Payload::Ethernet,
                    0x0800 => Payload::Ipv4,
                    _ => Payload::Ipv6,
                },
            ),
            other => panic!("{summary}: {other:?}"),
        };
        assert_eq!(expected, (true, payload), "{summary}");
        let after = record["after_stack"].as_str().unwrap().to_owned();
        *kinds.entry((format!("{payload:?}"), after)).or_insert(0) += 1;
    }
    // What scapy dissects after the stack is what int-core names.
    let kinds: Vec<_> =
        kinds.into_iter().map(|((payload, after), n)| format!("{payload} {after} {n}")).collect();
    assert_eq!(
        kinds,
        [
            "Data Raw 4",
            "Ethernet Ether 12",
            "Ipv4 IP 6",
            "Ipv6 IPv6 6",
            "Vxlan VXLAN 13",
            "VxlanGpe VXLAN 12"
        ]
    );
}

/// The L4 checksum of `segment` (checksum field zeroed) under the outer IP.
fn l4_checksum(frame: &[u8], found: &Located, protocol: u8, segment: &[u8]) -> u16 {
    let l3 = found.ip.l3;
    let len = segment.len();
    let pseudo = match found.ip.version {
        IpVersion::V4 => {
            let addr = |at: usize| Ipv4Addr::from(<[u8; 4]>::try_from(&frame[at..at + 4]).unwrap());
            checksum::pseudo_header_sum(addr(l3 + 12), addr(l3 + 16), protocol, len as u16)
        }
        IpVersion::V6 => {
            let addr = |at: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&frame[at..at + 16]).unwrap());
            let acc = checksum::sum(checksum::sum(0, &addr(l3 + 8).octets()), &addr(l3 + 24).octets());
            acc + u32::from(protocol) + len as u32
        }
    };
    let value = !checksum::fold(checksum::sum(pseudo, segment));
    if value == 0 && protocol == 17 {
        0xffff
    } else {
        value
    }
}

/// The draft's slides say IFA nodes leave the L4 length and checksum alone;
/// scapy's builder computes them over the metadata header and stack too.
/// Measured here on the 52 packets: every UDP Length and every TCP/UDP
/// checksum covers the metadata; none matches the packet without it.
#[test]
fn scapys_l4_length_and_checksum_cover_the_metadata() {
    let (mut covering, mut not_covering, mut lengths, mut gre) = (0, 0, 0, 0);
    for (frame, record, found) in packets().into_iter().filter(|(_, r, _)| r["uts"] == true) {
        let (protocol, field) = match found.carrier {
            Carrier::Tcp { .. } => (6, 16),
            Carrier::Udp { .. } => (17, 6),
            Carrier::Gre(_) => {
                gre += 1;
                continue;
            }
        };
        let header = &frame[found.l4_at..found.md_at];
        let carried = u16::from_be_bytes([header[field], header[field + 1]]);
        let mut with = frame[found.l4_at..found.ip.end].to_vec();
        let mut without = [header, &frame[found.payload_at..found.ip.end]].concat();
        for segment in [&mut with, &mut without] {
            segment[field..field + 2].fill(0);
            if protocol == 17 {
                let len = segment.len() as u16;
                segment[4..6].copy_from_slice(&len.to_be_bytes());
            }
        }
        let (sum_with, sum_without) =
            (l4_checksum(&frame, &found, protocol, &with), l4_checksum(&frame, &found, protocol, &without));
        assert_ne!(sum_with, sum_without, "{}", record["summary"]);
        covering += usize::from(carried == sum_with);
        not_covering += usize::from(carried == sum_without);
        if let Carrier::Udp { length, .. } = found.carrier {
            assert_eq!(usize::from(length), found.ip.end - found.l4_at, "{}", record["summary"]);
            assert_eq!(usize::from(length), without.len() + found.ifa_len() - 4, "{}", record["summary"]);
            lengths += 1;
        }
    }
    eprintln!(
        "scapy L4: {covering} checksums cover the metadata, {not_covering} do not; \
         {lengths} UDP Lengths cover it; {gre} GRE packets carry neither"
    );
    assert_eq!((covering, not_covering, lengths, gre), (28, 0, 26, 24));
}

fn originals() -> Vec<Vec<u8>> {
    let file = std::fs::File::open(format!("{FIXTURES}scapy_originals.pcap")).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut out = Vec::new();
    while let Some(packet) = reader.next_packet() {
        out.push(packet.unwrap().data.into_owned());
    }
    out
}

/// `bytes` in a buffer with `headroom` bytes in front, as a node's mbuf.
fn in_buffer(bytes: &[u8], headroom: usize) -> Vec<u8> {
    let mut buf = vec![0xa5; headroom + bytes.len() + 64];
    buf[headroom..headroom + bytes.len()].copy_from_slice(bytes);
    buf
}

/// scapy's 53 packets through int-core's terminator under scapy's rule
/// (the L4 length and checksum cover the metadata): every IFA byte goes,
/// and each is byte for byte the packet scapy builds without IFA.
#[test]
fn the_terminator_restores_what_scapy_builds_without_ifa() {
    for ((frame, record, found), original) in packets().into_iter().zip(originals()) {
        let mut buf = in_buffer(&frame, 0);
        let mut fb = FrameBuf::new(&mut buf, 0, frame.len()).unwrap();
        assert_eq!(sink::strip(&mut fb, &found, L4Rule::Cover), Some(found.ifa_len()));
        assert_eq!(fb.frame(), &original[..], "{}", record["summary"]);
    }
}

/// Under the draft's rule the terminator leaves the L4 header as it came:
/// scapy's packets then differ from their originals in exactly the UDP
/// Length and checksum, or the TCP checksum, and nowhere in GRE packets.
#[test]
fn under_the_drafts_rule_only_scapys_l4_length_and_checksum_differ() {
    let mut differing = std::collections::BTreeMap::new();
    for ((frame, record, found), original) in packets().into_iter().zip(originals()) {
        let mut buf = in_buffer(&frame, 0);
        let mut fb = FrameBuf::new(&mut buf, 0, frame.len()).unwrap();
        sink::strip(&mut fb, &found, L4Rule::Keep).unwrap();
        let l4 = found.header_at;
        let offsets: Vec<_> =
            (0..original.len()).filter(|&i| fb.frame()[i] != original[i]).map(|i| i - l4).collect();
        let expected: &[usize] = match found.carrier {
            Carrier::Udp { .. } => &[4, 5, 6, 7],
            Carrier::Tcp { .. } => &[16, 17],
            Carrier::Gre(_) => &[],
        };
        assert!(offsets.iter().all(|o| expected.contains(o)), "{}: {offsets:?}", record["summary"]);
        *differing.entry(format!("{:?}", offsets)).or_insert(0) += 1;
    }
    // The UDP Length's high byte is 0 with and without the metadata.
    let counts: Vec<_> = differing.into_iter().collect();
    assert_eq!(counts, [("[16, 17]".to_owned(), 2), ("[5, 6, 7]".to_owned(), 27), ("[]".to_owned(), 24)]);
}

/// scapy's originals through int-core's initiator (scapy's bottom hop,
/// `src_md`) and transit (its top hop, `tri_md`), under scapy's rule: the
/// bytes scapy built, for all 52 packets of the .uts.
#[test]
fn initiator_then_transit_write_what_scapy_builds() {
    let settings = source::Settings {
        max_length: 255,
        hop_limit: 127,
        request_vector: 238,
        action: Action::LOSS | Action::COLOR,
        inband: true,
        l4: L4Rule::Cover,
    };
    for ((frame, record, found), original) in packets().into_iter().zip(originals()) {
        if record["uts"] != true {
            continue;
        }
        let hops: Vec<HopRepr> = found.stack(&frame).hops().collect();
        let mut buf = in_buffer(&original, 128);
        let mut fb = FrameBuf::new(&mut buf, 128, original.len()).unwrap();
        let plan = source::plan(fb.frame(), &Domain::default(), 9000).unwrap();
        assert_eq!(source::insert(&mut fb, &plan, &Domain::default(), &settings, &hops[1]), Ok(40));
        let pushed = transit::push(&mut fb, &Domain::default(), 9000, &hops[0], L4Rule::Cover);
        assert_eq!(pushed, Ok(transit::Outcome::Pushed(32)));
        assert_eq!(fb.frame(), &frame[..], "{}", record["summary"]);
    }
}
