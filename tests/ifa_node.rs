//! An IFA 2.0 zone on the real binary over net_pcap vdevs: the initiator
//! adds IFA to every packet (IPv4 and IPv6, behind IPv6 extension headers
//! and VLAN tags too, TCP and UDP), two transits push their hops, the
//! terminator gives back every byte under either L4 rule and reports each
//! flow in Telemetry Report 2.0; tshark's IFA dissector reads what the
//! initiator wrote; scapy's 52 packets come back through the terminator as
//! scapy builds them without IFA; hostile IFA is counted by reason, never
//! forwarded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;

use common::*;
use int_core::ifa::{Domain, HopRepr, Refusal};
use int_core::report::tr20;

/// The zone as each node's `int` section writes it, for the node of
/// `device_id`.
fn zone(device_id: u32, l4: &str) -> String {
    format!(
        "    int: {{version: ifa, device_id: {device_id}, hop_limit: 4, max_length: 32, l4: {l4}}}\n    clock: rx-timestamp\n"
    )
}

/// What the capture times set between the initiator's RX time and the
/// terminator's.
const LATENCY_NS: u64 = 250_000;
/// Room for IFA's 40 bytes and two transits' 64 in a 1500-byte MTU.
const HEADROOM: usize = 110;

/// Near the capture times `write_pcap` gives (1.7e9 s), an hour on.
const CAPTURED_NS: u64 = (1_700_000_000 + 3600) * 1_000_000_000;

/// Sets each IFA packet's capture time to its oldest hop's RX time plus
/// `latency_ns`: the terminator's arrival, as the initiator's is the hop's.
fn retime_after_initiator(path: &Path, latency_ns: u64) {
    let domain = Domain::default();
    let frames: Vec<(u64, Vec<u8>)> = read_pcap(path)
        .into_iter()
        .map(|frame| {
            let found = domain.locate(&frame).unwrap().unwrap();
            let oldest = found.stack(&frame).hops().last().unwrap();
            (oldest.rx_ns(CAPTURED_NS) + latency_ns, frame)
        })
        .collect();
    write_pcap_at(path, &frames);
}

/// Every hop of every frame of a pcap, newest first, with the metadata
/// header's Hop Limit and Current Length.
fn stacks(path: &Path) -> Vec<(Vec<HopRepr>, u8, u8)> {
    read_pcap(path)
        .iter()
        .map(|frame| {
            let found = Domain::default().locate(frame).unwrap().expect("IFA");
            (found.stack(frame).hops().collect(), found.md.hop_limit, found.md.current_length)
        })
        .collect()
}

/// A frame's IPv4 TTL or IPv6 Hop Limit.
fn ttl_of(frame: &[u8]) -> u8 {
    let ip = int_core::locate::ip(frame).unwrap().unwrap();
    match ip.version {
        int_core::locate::IpVersion::V4 => frame[ip.l3 + 8],
        int_core::locate::IpVersion::V6 => frame[ip.l3 + 7],
    }
}

/// The chain under the L4 rule `l4`: initiator (Device ID 1), transits 5
/// and 6, terminator 2; returns the directory, the original frames and
/// the terminator's run.
fn chain(name: &str, l4: &str, collector: &str) -> (std::path::PathBuf, Vec<Vec<u8>>, Run) {
    let dir = workdir(name);
    let frames = mixed_traffic_dual(240, 12, HEADROOM);
    write_pcap(&dir.join("in.pcap"), &frames);
    let source = run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", &zone(1, l4), None));
    assert_eq!(source.counter("source", "instrumented"), 240, "{}", source.stdout());
    let transit = run_node(&dir, &node_config("transit", "ifa.pcap", "ifa2.pcap", &zone(5, l4), None));
    assert_eq!(transit.counter("transit", "pushed"), 240, "{}", transit.stdout());
    let transit = run_node(&dir, &node_config("transit", "ifa2.pcap", "ifa3.pcap", &zone(6, l4), None));
    assert_eq!(transit.counter("transit", "pushed"), 240, "{}", transit.stdout());
    retime_after_initiator(&dir.join("ifa3.pcap"), LATENCY_NS);
    let sink = run_node(&dir, &node_config("sink", "ifa3.pcap", "out.pcap", &zone(2, l4), Some(collector)));
    (dir, frames, sink)
}

/// Initiator, two transits and terminator, under the draft's rule and
/// scapy's: every packet back byte for byte; each node's hop where it
/// belongs (Device IDs 6, 5, 1 newest first, Hop Limit down by one a
/// transit, Current Length up by 8 words); the one-way latency from the
/// initiator's RX time; one report per flow.
#[test]
fn initiator_two_transits_terminator_restore_every_byte_under_both_l4_rules() {
    for l4 in ["keep", "cover"] {
        let collector = Collector::new();
        let (dir, frames, sink) = chain(&format!("ifa-chain-{l4}"), l4, &collector.addr());
        assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
        assert_eq!(sink.counter("sink", "stripped"), 240, "{l4}: {}", sink.stdout());
        assert_eq!(sink.counter("sink", "latency_min_ns"), LATENCY_NS, "{l4}");
        assert_eq!(sink.counter("sink", "latency_max_ns"), LATENCY_NS, "{l4}");
        for (i, (hops, hop_limit, current_length)) in stacks(&dir.join("ifa3.pcap")).iter().enumerate() {
            let ids: Vec<u32> = hops.iter().map(|hop| hop.device_id).collect();
            assert_eq!(ids, [6, 5, 1], "packet {i}");
            assert_eq!((*hop_limit, *current_length), (2, 24), "packet {i}");
            assert!(hops.iter().all(|hop| hop.lns == 1 && hop.ingress_system_port == 7), "{hops:?}");
            // Each node's IP TTL as the packet arrived (none routes), and
            // the initiator's RX time: in.pcap's capture time (write_pcap:
            // 1.7e9 s, 10 us a packet), read as `clock: rx-timestamp`.
            let ttl = ttl_of(&frames[i]);
            assert!(hops.iter().all(|hop| hop.ip_ttl == ttl), "packet {i}: {hops:?}");
            let captured = 1_700_000_000_000_000_000 + i as u64 * 10_000;
            assert_eq!(hops[2].rx_ns(CAPTURED_NS), captured, "packet {i}");
        }
        let reports: usize = collector
            .reports()
            .iter()
            .map(|datagram| tr20::Report::parse(datagram).unwrap().reports().count())
            .sum();
        assert_eq!(reports, 12, "{l4}: one report per flow, its latency never changing");
        assert_eq!(sink.counter("sink", "reports_latency"), 12);
    }
}

/// Probe mode, one in 4: the initiator sends every packet as it came and,
/// after its burst, a copy of each flow's 1st, 5th, 9th... packet with
/// IFA, I clear; the terminator reads and drops the 60 copies and passes
/// the 240 originals, which come out as they went in.
#[test]
fn probe_copies_are_dropped_at_the_terminator_and_the_originals_untouched() {
    let dir = workdir("ifa-probe");
    let frames = mixed_traffic_dual(240, 12, HEADROOM);
    write_pcap(&dir.join("in.pcap"), &frames);
    let probe = "    int: {version: ifa, device_id: 1, mode: probe, probe: {one_in: 4}}\n";
    let source = run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", probe, None));
    assert_eq!(source.counter("source", "cloned"), 60, "{}", source.stdout());
    assert_eq!(source.counter("source", "instrumented"), 60);
    assert_eq!(source.counter("source", "flows_created"), 12);
    let out = read_pcap(&dir.join("ifa.pcap"));
    let (copies, originals): (Vec<_>, Vec<_>) =
        out.into_iter().partition(|frame| Domain::default().locate(frame).unwrap().is_some());
    assert_same_frames(&originals, &frames);
    assert_eq!(copies.len(), 60);
    for copy in &copies {
        let found = Domain::default().locate(copy).unwrap().unwrap();
        assert!(!found.inband(), "a probe copy has I clear");
        assert_eq!(found.hop_count(), 1);
    }
    let collector = Collector::new();
    let sink = run_node(
        &dir,
        &node_config("sink", "ifa.pcap", "out.pcap", &zone(2, "keep"), Some(&collector.addr())),
    );
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "probes_dropped"), 60, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "not_int"), 240);
    assert_eq!(sink.counter("sink", "stripped"), 0);
}

/// The zone's edge at the initiator, `source.marked`: scapy's 53 IFA
/// packets (from outside the zone) and one whose IFA lies. `strip` takes
/// each IFA out as the terminator would and instruments the packet anew
/// (one hop, this node's), the lying one counted by reason and dropped;
/// `drop` drops all; `trust` forwards all as they came.
#[test]
fn ifa_from_outside_the_zone_is_stripped_dropped_or_trusted_at_the_edge() {
    let dir = workdir("ifa-edge");
    let mut input = read_pcap(Path::new(&format!("{FIXTURES}scapy_packets.pcap")));
    let mut lying = input[0].clone();
    lying[49] = 12; // Current Length not whole hops
    input.push(lying);
    write_pcap(&dir.join("in.pcap"), &input);
    let zone = |marked: &str| {
        format!("    int: {{version: ifa, device_id: 1, l4: cover}}\n    source: {{marked: {marked}}}\n")
    };
    let strip = run_node(&dir, &node_config("source", "in.pcap", "out.pcap", &zone("strip"), None));
    assert_eq!(strip.counter("source", "foreign_int_stripped"), 53, "{}", strip.stdout());
    assert_eq!(strip.counter("source", "instrumented"), 53);
    assert_eq!(strip.counter("source", "ifa_length_not_hops"), 1);
    assert_eq!(strip.counter("source", "malformed_dropped"), 1);
    let out = read_pcap(&dir.join("out.pcap"));
    assert_eq!(out.len(), 53);
    for frame in &out {
        let found = Domain::default().locate(frame).unwrap().unwrap();
        let ids: Vec<u32> = found.stack(frame).hops().map(|hop| hop.device_id).collect();
        assert_eq!(ids, [1], "only this node's hop");
    }
    let drop = run_node(&dir, &node_config("source", "in.pcap", "out.pcap", &zone("drop"), None));
    assert_eq!(drop.counter("source", "marked_dropped"), 54, "{}", drop.stdout());
    assert!(read_pcap(&dir.join("out.pcap")).is_empty());
    let trust = run_node(&dir, &node_config("source", "in.pcap", "out.pcap", &zone("trust"), None));
    assert_eq!(trust.counter("source", "already_marked"), 54, "{}", trust.stdout());
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &input);
}

/// A transit pushes no hop past the initiator's Hop Limit nor its Max
/// Length: the packet passes as it came, counted by reason, and the
/// terminator still gives back every byte.
#[test]
fn hop_limit_and_max_length_stop_a_transit_and_say_so() {
    let dir = workdir("ifa-limits");
    let frames = mixed_traffic_dual(48, 12, HEADROOM);
    write_pcap(&dir.join("in.pcap"), &frames);
    for (limits, counter) in [("hop_limit: 1", "hop_limit_reached"), ("max_length: 16", "max_length_reached")]
    {
        let zone = format!("    int: {{version: ifa, device_id: 1, {limits}}}\n");
        run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", &zone, None));
        let first = run_node(&dir, &node_config("transit", "ifa.pcap", "ifa2.pcap", &zone, None));
        assert_eq!(first.counter("transit", "pushed"), 48, "{limits}: {}", first.stdout());
        let second = run_node(&dir, &node_config("transit", "ifa2.pcap", "ifa3.pcap", &zone, None));
        assert_eq!(second.counter("transit", counter), 48, "{limits}: {}", second.stdout());
        assert_eq!(second.counter("transit", "pushed"), 0);
        assert_same_frames(&read_pcap(&dir.join("ifa3.pcap")), &read_pcap(&dir.join("ifa2.pcap")));
        let collector = Collector::new();
        run_node(&dir, &node_config("sink", "ifa3.pcap", "out.pcap", &zone, Some(&collector.addr())));
        assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    }
}

/// The MTU (1500): the initiator leaves a packet IFA's 40 bytes would
/// take past it as it came (`too_big`), a transit one its hop's 32 bytes
/// would (`mtu_exceeded`), both passing whole to the terminator.
#[test]
fn the_mtu_stops_the_initiator_and_a_transit_and_says_so() {
    let dir = workdir("ifa-mtu");
    // Room for neither, and room for the initiator's 40 bytes alone.
    let mut frames = mixed_traffic_dual(60, 12, 20);
    frames.extend(mixed_traffic_dual(60, 12, 60));
    write_pcap(&dir.join("in.pcap"), &frames);
    let ip_len = |frame: &Vec<u8>| int_core::locate::ip(frame).unwrap().unwrap().ip_len();
    let too_big = frames.iter().filter(|f| ip_len(f) + 40 > 1500).count() as u64;
    let no_room = frames.iter().filter(|f| ip_len(f) + 40 <= 1500 && ip_len(f) + 72 > 1500).count() as u64;
    assert!(too_big > 0 && no_room > 0, "{too_big} {no_room}");
    let zone = "    int: {version: ifa, device_id: 1}\n";
    let source = run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", zone, None));
    assert_eq!(source.counter("source", "too_big"), too_big, "{}", source.stdout());
    assert_eq!(source.counter("source", "instrumented"), 120 - too_big);
    let transit = run_node(&dir, &node_config("transit", "ifa.pcap", "ifa2.pcap", zone, None));
    assert_eq!(transit.counter("transit", "mtu_exceeded"), no_room, "{}", transit.stdout());
    assert_eq!(transit.counter("transit", "pushed"), 120 - too_big - no_room);
    assert_eq!(transit.counter("transit", "not_int"), too_big);
    let collector = Collector::new();
    run_node(&dir, &node_config("sink", "ifa2.pcap", "out.pcap", zone, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

/// tshark's IFA dissector (tools/wireshark/ifa.lua) reads the initiator's
/// output with the configured Device ID, one hop, the configured Hop Limit
/// and Max Length, and Current Length 8 words.
#[test]
fn tshark_reads_the_initiators_ifa() {
    let dir = workdir("ifa-tshark");
    write_pcap(&dir.join("in.pcap"), &mixed_traffic_dual(48, 12, HEADROOM));
    let domain = "    int: {version: ifa, device_id: 0xabcde, hop_limit: 9, max_length: 40}\n";
    run_node(&dir, &node_config("source", "in.pcap", "ifa.pcap", domain, None));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/ifa.lua");
    let fields = [
        "ifa.hop.device_id",
        "ifa.md.hop_count",
        "ifa.md.hop_limit",
        "ifa.md.current_length",
        "ifa.max_length",
        "ifa.flags.i",
    ];
    let mut args = vec!["-X".to_string(), format!("lua_script:{script}"), "-r".into()];
    args.push(dir.join("ifa.pcap").to_string_lossy().into_owned());
    args.extend(["-T", "fields", "-E", "separator=;"].map(String::from));
    for field in fields {
        args.extend(["-e".to_string(), field.to_string()]);
    }
    let output = std::process::Command::new("tshark").args(&args).output().expect("tshark");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<String> = String::from_utf8(output.stdout).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 48);
    for line in lines {
        assert_eq!(
            line,
            format!("{};1;9;8;40;1", 0xabcde),
            "Device ID, hops, Hop Limit, Current Length, Max Length, I"
        );
    }
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/");

/// scapy's 52 packets (pull request 4235's ifa.uts, IFA as protocol 253)
/// through the terminator under scapy's rule (L4 length and checksum
/// cover the metadata): each comes back as scapy builds it without IFA.
/// The fixtures' 53rd packet (every field set, I clear) is a probe copy:
/// read, reported, then dropped. A real `int-tools collect` gets each
/// flow's first packet's hops with every field the shared hop carries as
/// scapy built it (Device ID, ports, residence time, queue id and
/// congestion, the RX time), and the latency from the oldest hop's RX time.
#[test]
fn scapys_52_packets_come_back_and_collect_reads_their_hops_as_scapy_built_them() {
    scapy_through_the_terminator("ifa-scapy", &[]);
}

/// The terminator's reports carry the packet with its IFA as it came, and
/// collect reads IFA by its protocol, whatever its INT 2.1 domain is: with
/// `--int21-port` (no DSCP marking) it reads every hop as well.
#[test]
fn collect_reads_the_terminators_ifa_whatever_its_int21_marking() {
    scapy_through_the_terminator("ifa-scapy-int21-port", &["--int21-port", "5000"]);
}

/// The scapy test: `collect_args` added to collect's.
fn scapy_through_the_terminator(name: &str, collect_args: &[&str]) {
    let dir = workdir(name);
    std::fs::copy(format!("{FIXTURES}scapy_packets.pcap"), dir.join("scapy.pcap")).unwrap();
    retime_after_initiator(&dir.join("scapy.pcap"), LATENCY_NS);
    let frames = read_pcap(&dir.join("scapy.pcap"));
    let mut flows: Vec<(int_core::flow::FlowKey, usize)> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let key = Domain::default().locate(frame).unwrap().unwrap().flow(frame);
        if !flows.iter().any(|(seen, _)| *seen == key) {
            flows.push((key, i));
        }
    }
    let count = flows.len().to_string();
    let mut args = vec!["--count", &count, "--duration", "30"];
    args.extend_from_slice(collect_args);
    let (child, listen) = common::collector::start_collector(&tools_bin(), &args);
    let domain = "    int: {version: ifa, device_id: 2, l4: cover}\n    clock: rx-timestamp\n";
    let sink = run_node(&dir, &node_config("sink", "scapy.pcap", "out.pcap", domain, Some(&listen)));
    let originals = read_pcap(Path::new(&format!("{FIXTURES}scapy_originals.pcap")));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &originals[..52]);
    assert_eq!(sink.counter("sink", "stripped"), 52, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "probes_dropped"), 1);
    assert_eq!(sink.counter("sink", "reports_latency"), flows.len() as u64);
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let records: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "tr20").collect();
    assert_eq!(records.len(), flows.len(), "{lines:?}");
    for (record, (key, i)) in records.iter().zip(&flows) {
        let frame = &frames[*i];
        let found = Domain::default().locate(frame).unwrap().unwrap();
        // The packet as it came: InType IPv4 or IPv6, the original flow.
        let in_type = if key.src.is_ipv6() { 5 } else { 4 };
        assert_eq!(record["in_type"], in_type, "{record}");
        assert_eq!(record["flow"]["src_port"], key.src_port, "{record}");
        assert_eq!(record["flow"]["protocol"], key.protocol, "{record}");
        let built: Vec<HopRepr> = found.stack(frame).hops().collect();
        let got = record["hop_metadata"].as_array().unwrap_or_else(|| panic!("{record}"));
        assert_eq!(got.len(), built.len(), "{record}");
        assert_eq!(record["hops"], built.len(), "{record}");
        // collect lists the path from the initiator on (the stack's oldest
        // first) to the reporting terminator.
        let mut path: Vec<u32> = built.iter().rev().map(|hop| hop.device_id).collect();
        assert_eq!(record["source_node"], path[0], "{record}");
        path.push(record["report_node"].as_u64().unwrap() as u32);
        assert_eq!(record["path"], serde_json::json!(path), "{record}");
        for (hop, built) in got.iter().zip(built.iter().rev()) {
            assert_eq!(hop["node_id"], built.device_id, "{record}");
            assert_eq!(hop["l1_ingress_port"], built.ingress_system_port, "{record}");
            assert_eq!(hop["l1_egress_port"], built.egress_system_port, "{record}");
            assert_eq!(hop["hop_latency"], built.residence_ns, "{record}");
            assert_eq!(hop["queue_id"], built.queue_id, "{record}");
            assert_eq!(hop["queue_occupancy"], built.congestion, "{record}");
            assert_eq!(hop["ingress_timestamp"], built.rx_ns(CAPTURED_NS), "{record}");
        }
        // What the shared hop has no field for: every LNS 1 field and the
        // headers, as the packet came.
        let ifa_hops = record["ifa_hops"].as_array().unwrap_or_else(|| panic!("{record}"));
        assert_eq!(ifa_hops.len(), built.len(), "{record}");
        for (hop, built) in ifa_hops.iter().zip(&built) {
            assert_eq!(hop["lns"], built.lns, "{record}");
            assert_eq!(hop["device_id"], built.device_id, "{record}");
            assert_eq!(hop["ip_ttl"], built.ip_ttl, "{record}");
            assert_eq!(hop["egress_port_speed"], built.egress_port_speed.code(), "{record}");
            assert_eq!(hop["rx_seconds"], built.rx_seconds, "{record}");
            assert_eq!(hop["rx_nanoseconds"], built.rx_nanoseconds, "{record}");
            assert_eq!(hop["opaque"], serde_json::json!(built.opaque), "{record}");
        }
        let ifa = &record["ifa"];
        assert_eq!(ifa["next_header"], found.header.next_header, "{record}");
        assert_eq!(ifa["flags"], found.header.flags.bits(), "{record}");
        assert_eq!(ifa["max_length"], found.header.max_length, "{record}");
        assert_eq!(ifa["request_vector"], found.md.request_vector, "{record}");
        assert_eq!(ifa["hop_limit"], found.md.hop_limit, "{record}");
        assert_eq!(ifa["current_length"], found.md.current_length, "{record}");
        // The capture time a pcap keeps is whole microseconds.
        let source_ns = built.last().unwrap().rx_ns(CAPTURED_NS);
        let latency = (source_ns + LATENCY_NS) / 1000 * 1000 - source_ns;
        assert_eq!(record["latency_ns"], latency, "{record}");
    }
}

/// Hostile IFA at the terminator: each refusal counted under its own name
/// and the packet dropped, never forwarded with IFA in it; the good
/// packets beside them come back whole.
#[test]
fn hostile_ifa_is_counted_by_reason_and_never_forwarded() {
    let dir = workdir("ifa-hostile");
    let good = read_pcap(Path::new(&format!("{FIXTURES}scapy_packets.pcap")));
    let originals = read_pcap(Path::new(&format!("{FIXTURES}scapy_originals.pcap")));
    let base = &good[0]; // IPv4, UDP, two hops: IFA header at 34, metadata header at 46
    let mut hostile: Vec<(Refusal, Vec<u8>)> = Vec::new();
    let with = |at: usize, byte: u8| {
        let mut frame = base.clone();
        frame[at] = byte;
        frame
    };
    hostile.push((Refusal::Version, with(34, 0x3f)));
    hostile.push((Refusal::GlobalNameSpace, with(34, 0x21)));
    hostile.push((Refusal::MetadataFragment, with(36, 0x14)));
    hostile.push((Refusal::TailStamp, with(36, 0x0c)));
    hostile.push((Refusal::ChecksumHeader, with(36, 0x05)));
    hostile.push((Refusal::NextHeader, with(35, 1)));
    hostile.push((Refusal::LengthNotHops, with(49, 12)));
    hostile.push((Refusal::LengthPastMax, {
        let mut frame = with(37, 8);
        frame[49] = 16;
        frame
    }));
    hostile.push((Refusal::StackPastPacket, with(49, 200)));
    // Cut inside the UDP header, the IP length saying so; or not saying so.
    hostile.push((Refusal::Truncated, {
        let mut frame = base[..40].to_vec();
        frame[16..18].copy_from_slice(&26u16.to_be_bytes());
        frame
    }));
    hostile.push((Refusal::Packet, base[..40].to_vec()));
    let tcp = &good[1]; // IPv4, TCP: Data Offset at 38 + 12
    hostile.push((Refusal::L4, {
        let mut frame = tcp.clone();
        frame[50] = 0x40;
        frame
    }));
    for (reason, frame) in &hostile {
        assert_eq!(Domain::default().locate(frame).map(|_| ()).unwrap_err().reason, *reason);
    }
    let mut input: Vec<Vec<u8>> = hostile.iter().map(|(_, frame)| frame.clone()).collect();
    input.push(base.clone());
    write_pcap(&dir.join("in.pcap"), &input);
    let collector = Collector::new();
    let domain = "    int: {version: ifa, device_id: 2, l4: cover}\n";
    let sink = run_node(&dir, &node_config("sink", "in.pcap", "out.pcap", domain, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &originals[..1]);
    for (reason, _) in &hostile {
        assert_eq!(sink.counter("sink", reason.name()), 1, "{reason:?}: {}", sink.stdout());
    }
    assert_eq!(sink.counter("sink", "malformed_dropped"), hostile.len() as u64);
    assert_eq!(sink.counter("sink", "reports_drop"), 0, "never reported");
}
