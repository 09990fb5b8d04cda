//! int-tools on its own: gen is reproducible, decode prints every INT and
//! report field (golden text, JSON that parses), collect refuses what its
//! emitter would not write and counts what the kernel drops. None of these
//! needs DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;

use collector::{coalesced, drop_summary, summary_of, switch_reports};
use files::*;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// Runs an int-tools command in `dir`; asserts it succeeds and returns its
/// standard output.
fn int_tools(dir: &Path, args: &[&str]) -> String {
    collector::int_tools_in(Path::new(BIN), dir, args)
}

/// SIGINT: the collector stops as an operator stops it.
fn interrupt(child: &std::process::Child) {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
}

fn start_collector(extra: &[&str]) -> (std::process::Child, String) {
    collector::start_collector(Path::new(BIN), extra)
}

/// The tour's first command in a fresh checkout: gen makes the output's
/// folder; where it cannot, it says so with the system's reason (it said
/// "Error reading bytes" of a write, the cause hidden).
#[test]
fn gen_makes_its_folder_or_says_why_not() {
    let dir = workdir("gen-folder");
    int_tools(&dir, &["gen", "--out", "demo/deeper/traffic.pcap", "--packets", "3"]);
    assert_eq!(read_pcap(&dir.join("demo/deeper/traffic.pcap")).len(), 3);
    std::fs::write(dir.join("plain"), b"a file, not a folder").unwrap();
    let output =
        Command::new(BIN).args(["gen", "--out", "plain/traffic.pcap"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        said.contains("cannot write plain/traffic.pcap: cannot make its folder plain: File exists"),
        "{said}"
    );
    assert!(!said.contains("Error reading bytes"), "{said}");
}

#[test]
fn gen_is_seeded_and_reproducible() {
    let dir = workdir("gen");
    let args = |out: &str, seed: &str| {
        vec![
            "gen",
            "--out",
            out,
            "--packets",
            "500",
            "--flows",
            "10",
            "--sizes",
            "imix",
            "--vlan",
            "0.2",
            "--tcp-options",
            "--seed",
            seed,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    for (out, seed) in [("a.pcap", "7"), ("b.pcap", "7"), ("c.pcap", "8")] {
        let a = args(out, seed);
        int_tools(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let a = read_pcap(&dir.join("a.pcap"));
    assert_eq!(a, read_pcap(&dir.join("b.pcap")), "same seed, same bytes");
    assert_ne!(a, read_pcap(&dir.join("c.pcap")), "another seed, other sizes");
    assert_eq!(a.len(), 500);
    let vlan = a.iter().filter(|f| f[12..14] == [0x81, 0x00]).count();
    assert!((50..=150).contains(&vlan), "{vlan} tagged of 500 at 20%");
    for size in [64, 576, 1500] {
        assert!(a.iter().any(|f| f.len() == size), "a {size}-byte frame");
    }
    // Loss and reordering: fewer packets, sequence numbers out of order.
    int_tools(
        &dir,
        &[
            "gen",
            "--out",
            "lossy.pcap",
            "--packets",
            "1000",
            "--flows",
            "1",
            "--proto",
            "udp",
            "--instrument",
            "hostint",
            "--loss",
            "0.1",
            "--reorder",
            "0.05",
        ],
    );
    let lossy = read_pcap(&dir.join("lossy.pcap"));
    assert!((850..=950).contains(&lossy.len()), "{} kept of 1000 at 10% loss", lossy.len());
    let config = int_core::int05::Domain::default();
    let sequences: Vec<u32> = lossy
        .iter()
        .map(|f| int_core::int05::sink::extract(f, &config).unwrap().unwrap().sequence.unwrap())
        .collect();
    assert!(sequences.windows(2).any(|w| w[1] < w[0]), "some reordering");
}

#[test]
fn decode_golden_text_and_json() {
    let dir = workdir("decode");
    int_tools(
        &dir,
        &[
            "gen",
            "--out",
            "int.pcap",
            "--packets",
            "3",
            "--flows",
            "3",
            "--proto",
            "mix",
            "--sizes",
            "100",
            "--instrument",
            "hostint",
            "--seed",
            "3",
        ],
    );
    let text = int_tools(&dir, &["decode", "int.pcap"]);
    let golden = include_str!("golden/decode-hostint.txt");
    assert_eq!(text, golden, "decode output changed; if on purpose, update tests/golden/decode-hostint.txt");
    let json = int_tools(&dir, &["decode", "--json", "int.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values.len(), 3);
    assert!(values.iter().all(|v| v["kind"] == "int"));
    assert_eq!(values[2]["flow"]["protocol"], 6, "the third flow is TCP in a mix");
    assert_eq!(values[0]["int"]["hops"][0]["switch_id"], 0x0a00_0001);
}

/// A collector trusts nothing: 2000 random datagrams are all refused and
/// counted by reason; valid reports with forged sequence numbers cannot
/// push the lost-report count past one window per datagram (and random
/// ones almost never count at all).
#[test]
fn collect_refuses_random_datagrams_and_forged_sequences() {
    // A receive buffer that holds all 3000 datagrams: a collector the
    // machine leaves unscheduled for a while still finds every one.
    let (child, listen) = start_collector(&["--duration", "600", "--rcvbuf", "33554432"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..2000 {
        let len = 1 + (next() % 200) as usize;
        let datagram: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        sender.send_to(&datagram, &listen).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..1000 {
        forger.send_to(&drop_summary(next() as u32, 1), &listen).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    // Every datagram is in the collector's socket (loopback delivers as it
    // sends): stopped now, it reads them all.
    interrupt(&child);
    let summary = summary_of(child);
    assert_eq!(summary["reports"], 3000);
    assert_eq!(summary["malformed"], 2000, "{summary}");
    let reasons = summary["malformed_by_reason"].as_object().unwrap();
    assert!(reasons.len() >= 3, "{reasons:?}");
    let lost = summary["lost_reports"].as_u64().unwrap();
    assert!(lost < 20_000, "forged sequence numbers claimed {lost} lost reports");
    assert!(summary["sequence_resyncs"].as_u64().unwrap() > 900, "{summary}");
}

/// A burst of 100,000 reports into a small receive buffer: what the kernel
/// dropped is counted (SO_MEMINFO), and received + dropped = sent.
#[test]
fn collect_counts_what_the_kernel_drops() {
    let (child, listen) = start_collector(&["--duration", "600", "--rcvbuf", "16384"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = 100_000u32;
    for sequence in 1..=sent {
        sender.send_to(&drop_summary(sequence, 1), &listen).unwrap();
    }
    interrupt(&child);
    let summary = summary_of(child);
    let received = summary["reports"].as_u64().unwrap();
    let dropped = summary["kernel_drops"].as_u64().unwrap();
    assert!(dropped > 0, "{summary}");
    assert_eq!(received + dropped, u64::from(sent), "{summary}");
    assert_eq!(summary["malformed"], 0);
    // The lost reports the sequence numbers show are the kernel's drops
    // (those before the last report received).
    assert!(summary["lost_reports"].as_u64().unwrap() <= dropped, "{summary}");
}

/// INT 2.1 section 6.1's packet (INT-MD after TCP, DSCP 0x17, two hops)
/// and section 6.3's (a UDP header before the TCP header, NPT 2), and a
/// Telemetry Report 2.0 datagram (TR 2.0 section 4.1's shape plus a
/// coalesced drop report): decode reads each field, where it used to say
/// "unknown type 16" and "unknown version 2".
#[test]
fn decode_reads_int21_and_telemetry_report_20() {
    use int_core::craft::PacketSpec;
    use int_core::int21::{emit_md_block, HopMetadata, Instructions, MdHeaderRepr, Next};
    use int_core::report::tr20::*;
    let dir = workdir("decode-int21");
    let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
    let header = MdHeaderRepr {
        hop_ml: 2,
        remaining_hop_cnt: 6,
        instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
        ..MdHeaderRepr::default()
    };
    let hops = [
        HopMetadata { node_id: Some(2), queue: Some((0, 0x20)), ..HopMetadata::default() },
        HopMetadata { node_id: Some(1), queue: Some((0, 0x10)), ..HopMetadata::default() },
    ];
    let insert = |mut frame: Vec<u8>, at: usize, next: Next| {
        let mut block = [0u8; 64];
        let len = emit_md_block(&mut block, next, &header, &hops, &[]).unwrap();
        frame.splice(at..at, block[..len].iter().copied());
        let total = u16::from_be_bytes([frame[16], frame[17]]) + len as u16;
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        frame
    };
    let mut md_over_tcp = insert(PacketSpec::tcp(a, b, 1000, 80, 20).build(), 54, Next::Dscp(0));
    md_over_tcp[15] = 0x17 << 2;
    let mut before_tcp = PacketSpec::tcp(a, b, 1000, 80, 20).build();
    before_tcp.splice(34..34, [0x30, 0x39, 0x1e, 0x61, 0, 8 + 32 + 40, 0, 0]);
    before_tcp[23] = 17;
    before_tcp[16..18].copy_from_slice(&(20u16 + 8 + 40).to_be_bytes());
    let before_tcp = insert(before_tcp, 42, Next::IpProtocol(6));
    let inner = [0x45u8; 40];
    let mut payload = vec![0u8; 256];
    let mut len = GroupHeaderRepr { hw_id: 1, sequence: 5, node_id: 3 }.emit(&mut payload).unwrap();
    let int = IntContents {
        rep_md_bits: 0x5000,
        metadata: int_core::int21::HopMetadata {
            l1_ingress_port: Some(1),
            l1_egress_port: Some(2),
            queue: Some((0, 0x40)),
            ..Default::default()
        },
        ..IntContents::default()
    };
    let first = IndividualReport {
        in_type: InType::Ipv4,
        int: Some(int),
        inner: &inner,
        flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
        ..IndividualReport::default()
    };
    len += first.emit(&mut payload[len..]).unwrap();
    let drop = IndividualReport {
        flags: ReportFlags { dropped: true, ..ReportFlags::default() },
        int: Some(IntContents {
            rep_md_bits: DROP_BIT,
            drop: Some(DropInfo { queue_id: 2, reason: 50 }),
            ..IntContents::default()
        }),
        ..first
    };
    len += drop.emit(&mut payload[len..]).unwrap();
    let report = PacketSpec::udp(a, b, 40000, 32766, len).build();
    let mut report = report;
    let at = report.len() - len;
    report[at..].copy_from_slice(&payload[..len]);
    write_pcap(&dir.join("int21.pcap"), &[md_over_tcp, before_tcp, report]);

    let json = int_tools(&dir, &["decode", "--json", "--int21-port", "7777", "int21.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let md = &values[0]["int21"];
    assert_eq!(values[0]["kind"], "int", "{}", values[0]);
    assert_eq!(
        (md["type"].as_str(), md["npt"].as_u64(), md["length_words"].as_u64()),
        (Some("md"), Some(0), Some(7))
    );
    assert_eq!((md["hop_ml"].as_u64(), md["remaining_hop_cnt"].as_u64()), (Some(2), Some(6)));
    assert_eq!(md["hops"][0]["node_id"], 2);
    assert_eq!(md["hops"][1]["queue_occupancy"], 0x10);
    assert_eq!(values[1]["int21"]["next"]["original_protocol"], 6, "{}", values[1]);
    assert_eq!(values[1]["flow"]["dst_port"], 80, "the original TCP header's port");
    let tr = &values[2]["report"];
    assert_eq!(tr["report_seq"], 5, "{}", values[2]);
    assert_eq!(tr["reports"][0]["int"]["metadata"]["l1_egress_port"], 2);
    assert_eq!(tr["reports"][0]["inner_bytes"], 40);
    assert_eq!(tr["reports"][1]["drop"]["reason_name"], "mtu check fail");
    let text = int_tools(&dir, &["decode", "--int21-port", "7777", "int21.pcap"]);
    assert!(text.contains("int 2.1 md npt 0"), "{text}");
    assert!(text.contains("report tr 2.0 seq 5"), "{text}");
}

/// gen writes each INT 2.1 variant as a source of that domain would, and
/// decode reads them back: INT-MD marked by DSCP, INT-MD behind a UDP port
/// (NPT 1 for UDP, 2 for TCP), INT-MX.
#[test]
fn gen_writes_int21_and_decode_reads_it() {
    let dir = workdir("gen-int21");
    for (variant, extra, kind, npts) in [
        ("int21-md", &[][..], "md", &[0u64][..]),
        ("int21-md-udp", &["--int21-port", "7777"][..], "md", &[1, 2][..]),
        ("int21-mx", &[][..], "mx", &[0][..]),
    ] {
        let out = format!("{variant}.pcap");
        let mut args = vec![
            "gen",
            "--out",
            &out,
            "--packets",
            "30",
            "--flows",
            "3",
            "--proto",
            "mix",
            "--instrument",
            variant,
        ];
        args.extend_from_slice(extra);
        int_tools(&dir, &args);
        let json = int_tools(&dir, &["decode", "--json", "--int21-port", "7777", &out]);
        let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(values.len(), 30);
        for value in &values {
            let int = &value["int21"];
            assert_eq!(int["type"], kind, "{variant}: {value}");
            assert!(npts.contains(&int["npt"].as_u64().unwrap()), "{variant}: {value}");
            if kind == "md" {
                assert_eq!(int["hops"][0]["node_id"], 0x0a00_0001);
            }
        }
    }
    let missing_port = Command::new(BIN)
        .args(["gen", "--out", "x.pcap", "--instrument", "int21-md-udp"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!missing_port.status.success());
    assert!(String::from_utf8_lossy(&missing_port.stderr).contains("needs --int21-port"));
}

/// decode reads IPv6 frames (after VLAN tags and extension headers): the
/// addresses, the upper-layer protocol and ports, the Traffic Class; a
/// fragment says so; a Payload Length past the frame is malformed.
#[test]
fn decode_reads_ipv6_frames() {
    let dir = workdir("decode-ipv6");
    use int_core::craft::{ipv6_options, PacketSpec};
    use int_core::wire::ipv6::{FRAGMENT, HOP_BY_HOP};
    let build = |extensions: Vec<(u8, Vec<u8>)>| {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 5000, 6000, 4);
        spec.tos = 0x48; // DSCP 18: no INT domain's mark
        spec.vlan = Some(5);
        spec.ipv6.as_mut().unwrap().extensions = extensions;
        spec.build()
    };
    let frame = build(vec![(HOP_BY_HOP, ipv6_options(0))]);
    let fragment = build(vec![(HOP_BY_HOP, ipv6_options(0)), (FRAGMENT, vec![0, 0, 0, 1, 0, 0, 0, 9])]);
    // Payload Length past the frame.
    let mut cut = frame.clone();
    cut[18 + 5] += 100;
    write_pcap(&dir.join("v6.pcap"), &[frame, fragment, cut]);
    let json = int_tools(&dir, &["decode", "--json", "v6.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!((values[0]["kind"].as_str(), values[0]["ip_version"].as_u64()), (Some("plain"), Some(6)));
    assert_eq!(
        (values[0]["src"].as_str(), values[0]["dst"].as_str()),
        (Some("2001:db8::1"), Some("2001:db8::2"))
    );
    assert_eq!((values[0]["protocol"].as_u64(), values[0]["traffic_class"].as_u64()), (Some(17), Some(0x48)));
    assert_eq!((values[0]["src_port"].as_u64(), values[0]["dst_port"].as_u64()), (Some(5000), Some(6000)));
    assert_eq!(values[1]["fragment"], true);
    assert_eq!(values[2]["kind"], "malformed");
    let text = int_tools(&dir, &["decode", "v6.pcap"]);
    assert!(text.contains("proto 17 [2001:db8::1]:5000 -> [2001:db8::2]:6000 tc 72"), "{text}");
}

/// gen writes tunnelled traffic (VXLAN, VXLAN-GPE, Geneve) with INT 2.1
/// inside the tunnel header, numbered per tunnel flow, and decode reads the
/// stack there: plain VXLAN shows as VXLAN-GPE (the source converted it).
#[test]
fn gen_writes_int21_in_tunnels() {
    let dir = workdir("gen-tunnels");
    for (tunnel, seen) in [("vxlan", "vxlan-gpe"), ("vxlan-gpe", "vxlan-gpe"), ("geneve", "geneve")] {
        let out = format!("{tunnel}.pcap");
        let args = [
            "gen",
            "--out",
            &out,
            "--packets",
            "24",
            "--flows",
            "3",
            "--tunnel",
            tunnel,
            "--instrument",
            "int21-md",
        ];
        int_tools(&dir, &args);
        let json = int_tools(&dir, &["decode", "--json", &out]);
        let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(values.len(), 24);
        for (i, value) in values.iter().enumerate() {
            let int = &value["int21"];
            assert_eq!(int["next"]["tunnel"], seen, "{tunnel}: {value}");
            assert_eq!(int["hops"][0]["node_id"], 0x0a00_0001);
            assert_eq!(
                int["sequence"].as_u64(),
                Some(i as u64 / 3 + 1),
                "{tunnel}: numbered per tunnel flow"
            );
        }
    }
}

/// decode reads INT 2.1 inside tunnels: INT-MD after a VXLAN-GPE header
/// and its INT shim (UDP 4790), INT-MX in a Geneve option of class 0x0103
/// (UDP 6081); the tunnel's fields and the hops' metadata.
#[test]
fn decode_reads_int21_in_tunnels() {
    use int_core::craft::PacketSpec;
    use int_core::int21::tunnel::GpeShimRepr;
    use int_core::int21::{HeaderType, HopMetadata, Instructions, MdHeaderRepr, MxHeaderRepr};
    use int_core::wire::{geneve, vxlan_gpe};
    let dir = workdir("decode-tunnels");
    let (a, b) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
    // VXLAN-GPE: the header, the shim, an MD header and two hops.
    let md = MdHeaderRepr {
        hop_ml: 1,
        remaining_hop_cnt: 6,
        instructions: Instructions::NODE_ID,
        ..MdHeaderRepr::default()
    };
    let mut gpe_payload = vec![0u8; 8 + 4 + 12 + 8];
    vxlan_gpe::VxlanGpeRepr { flags: vxlan_gpe::FLAG_I, next_protocol: vxlan_gpe::NEXT_INT, vni: 42 }
        .emit(&mut gpe_payload)
        .unwrap();
    GpeShimRepr {
        header_type: HeaderType::Md,
        length_words: 5,
        from_vxlan: true,
        next_protocol: vxlan_gpe::NEXT_ETHERNET,
    }
    .emit(&mut gpe_payload[8..])
    .unwrap();
    md.emit(&mut gpe_payload[12..]).unwrap();
    for (i, node) in [2u32, 1].into_iter().enumerate() {
        HopMetadata { node_id: Some(node), ..HopMetadata::default() }
            .emit(md.instructions, 1, &mut gpe_payload[24 + 4 * i..])
            .unwrap();
    }
    let mut gpe_frame = PacketSpec::udp(a, b, 1234, vxlan_gpe::UDP_PORT, gpe_payload.len()).build();
    gpe_frame[42..].copy_from_slice(&gpe_payload);
    // Geneve: the header, the INT option and an MX header.
    let base = geneve::GeneveRepr {
        options_words: 4,
        oam: false,
        critical: false,
        protocol_type: geneve::PROTOCOL_ETHERNET,
        vni: 7,
    };
    let mut geneve_payload = vec![0u8; base.len()];
    base.emit(&mut geneve_payload).unwrap();
    geneve::GeneveOptionRepr { class: geneve::INT_OPTION_CLASS, option_type: 3, length_words: 3 }
        .emit(&mut geneve_payload[8..])
        .unwrap();
    MxHeaderRepr { instructions: Instructions::NODE_ID, ..MxHeaderRepr::default() }
        .emit(&mut geneve_payload[12..])
        .unwrap();
    let mut geneve_frame = PacketSpec::udp(a, b, 1234, geneve::UDP_PORT, geneve_payload.len()).build();
    geneve_frame[42..].copy_from_slice(&geneve_payload);
    write_pcap(&dir.join("tunnels.pcap"), &[gpe_frame, geneve_frame]);
    let json = int_tools(&dir, &["decode", "--json", "tunnels.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let gpe = &values[0];
    assert_eq!(
        (gpe["kind"].as_str(), gpe["tunnel"]["type"].as_str()),
        (Some("int"), Some("vxlan-gpe")),
        "{gpe}"
    );
    assert_eq!((gpe["tunnel"]["vni"].as_u64(), gpe["tunnel"]["g"].as_bool()), (Some(42), Some(true)));
    let hops: Vec<u64> =
        gpe["int21"]["hops"].as_array().unwrap().iter().map(|h| h["node_id"].as_u64().unwrap()).collect();
    assert_eq!(hops, [2, 1]);
    let gen = &values[1];
    assert_eq!(
        (gen["tunnel"]["type"].as_str(), gen["tunnel"]["int_type"].as_str()),
        (Some("geneve"), Some("mx")),
        "{gen}"
    );
    assert_eq!(gen["int21"]["instructions"], "0x8000");
    assert_eq!(gen["tunnel"]["option_class"], "0x0103");
    let text = int_tools(&dir, &["decode", "tunnels.pcap"]);
    assert!(text.contains("hop 0: node_id=2"), "{text}");
    assert!(text.contains("  tunnel geneve vni ") && text.contains(" option class 0x0103"), "{text}");
}

/// A capture with another link type than Ethernet: raw IP (101, what
/// `tcpdump -i tun0` writes) decodes as the same packets would over
/// Ethernet; a link type decode cannot read (802.11) is refused by name,
/// never read as Ethernet (it used to print `not-ip` for every packet and
/// exit 0).
#[test]
fn decode_reads_the_link_type() {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::DataLink;
    let dir = workdir("decode-link-types");
    int_tools(&dir, &["gen", "--out", "eth.pcap", "--packets", "6", "--instrument", "int21-md"]);
    let frames = read_pcap(&dir.join("eth.pcap"));
    let write = |name: &str, datalink: DataLink, strip: usize| {
        let header = PcapHeader { datalink, ..PcapHeader::default() };
        let mut writer =
            PcapWriter::with_header(std::fs::File::create(dir.join(name)).unwrap(), header).unwrap();
        for frame in &frames {
            let data = &frame[strip..];
            writer
                .write_packet(&PcapPacket::new(std::time::Duration::ZERO, data.len() as u32, data))
                .unwrap();
        }
    };
    write("raw.pcap", DataLink::RAW, 14);
    write("wifi.pcap", DataLink::IEEE802_11, 0);
    let fields = |file: &str| -> Vec<serde_json::Value> {
        let json = int_tools(&dir, &["decode", "--json", file]);
        json.lines()
            .map(|l| {
                let mut value: serde_json::Value = serde_json::from_str(l).unwrap();
                value.as_object_mut().unwrap().remove("time_ns");
                value.as_object_mut().unwrap().remove("time");
                value.as_object_mut().unwrap().remove("length");
                value
            })
            .collect()
    };
    let (ethernet, raw) = (fields("eth.pcap"), fields("raw.pcap"));
    assert_eq!(raw.len(), 6);
    assert_eq!(raw, ethernet);
    assert!(raw.iter().all(|v| v["int21"]["type"] == "md"), "{raw:?}");
    let refused = Command::new(BIN).args(["decode", "wifi.pcap"]).current_dir(&dir).output().unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("link type 105") && said.contains("cannot be read"), "{said}");
}

/// A stream of Telemetry Report 2.0 datagrams as INT 2.1 switches send
/// them: a sink (node 9) reports three flows over 1 > 2 > 3 (node 2's hop
/// latency rising from 4 µs to 90 µs, its queue filling), then flow 1 over
/// 1 > 4 > 3; node 2 reports drops of a fourth flow's packets. `collect
/// --json` shows each hop's figures, each link's latency, the one path
/// change and the dropped packets' flow.
#[test]
fn collect_tells_every_hops_story() {
    let datagrams = switch_reports();
    let plot = workdir("hops-story").join("hops.png");
    // It ends once it has every report (a SIGINT sent before it catches
    // signals would be lost, or end it without a summary).
    let count = datagrams.len().to_string();
    let (child, listen) =
        start_collector(&["--count", &count, "--duration", "120", "--plot", plot.to_str().unwrap()]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["reports"], datagrams.len(), "{summary}");
    let node =
        |id: u64| summary["nodes"].as_array().unwrap().iter().find(|n| n["node"] == id).unwrap().clone();
    let (two, four) = (node(2), node(4));
    assert_eq!(two["hops"], 3 * 20 - 10, "{two}");
    assert_eq!(
        (two["hop_latency"]["min"].as_i64(), two["hop_latency"]["max"].as_i64()),
        (Some(4000), Some(90_000))
    );
    assert_eq!(two["queue_occupancy"]["max"], 19 * 50);
    assert_eq!(two["drops"]["71"], 5);
    assert_eq!(four["hops"], 10);
    assert_eq!(node(9)["hops"], 60, "the sink, once per report");
    let link = |from: u64, to: u64| {
        summary["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["from"] == from && l["to"] == to)
            .unwrap()
            .clone()
    };
    assert_eq!(link(1, 2)["latency_ns"]["max"], 1000);
    assert_eq!(link(3, 9)["latency_ns"]["min"], 2500);
    assert_eq!(link(1, 4)["latency_ns"]["count"], 10);
    let changes: Vec<_> = lines.iter().filter(|l| l["type"] == "path-change").collect();
    assert_eq!(changes.len(), 1, "one path change: flow 1's");
    assert_eq!(changes[0]["flow"]["src_port"], 1);
    assert_eq!(
        (changes[0]["old_path"].to_string(), changes[0]["new_path"].to_string()),
        ("[1,2,3,9]".into(), "[1,4,3,9]".into())
    );
    assert_eq!(summary["path_changes"], 1);
    assert_eq!(summary["paths_followed"], 3);
    let report = lines.iter().find(|l| l["type"] == "tr20" && l["hops"] == 3).unwrap();
    assert_eq!(report["path"].to_string(), "[1,2,3,9]", "{report}");
    assert_eq!(report["hop_metadata"][1]["node_id"], 2, "source first");
    let drops: Vec<_> = lines.iter().filter(|l| l["type"] == "tr20" && !l["drop"].is_null()).collect();
    assert_eq!(drops.len(), 5);
    assert!(drops.iter().all(|d| d["flow"]["dst_port"] == 7777 && d["report_node"] == 2), "{}", drops[0]);
    // The plot has the hop latency panel and a pair of bars for each of
    // the 5 links, no loss panel (PNG: height at bytes 20-23 of the file).
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 500 + 500 + 110 + 34 * 10 + 10);

    // The same in text: each hop of a report, the path change, the
    // dropped packets' flow, and the summary's nodes and links.
    let text = text_collect(&datagrams);
    assert!(text.contains("  hop 2: node 2, latency 4.00 µs, queue 0: 0\n"), "{text}");
    assert!(
        text.contains("Path change: Flow: udp 10.0.0.1:1 -> 10.0.0.2:5000  1 > 2 > 3 > 9  ->  1 > 4 > 3 > 9"),
        "{text}"
    );
    assert!(
        text.contains("(no INT 2.1 packet inside; its flow udp 10.0.0.5:4444 -> 10.0.0.2:7777)"),
        "{text}"
    );
    assert!(text.contains("  node 2: 50 hop(s); hop latency min/avg/max 4.00 µs/"), "{text}");
    assert!(text.contains("; drop reports: 5 for reason 71"), "{text}");
    assert!(text.contains("  link 1 > 2: min/avg/max 1.00 µs/1.00 µs/1.00 µs"), "{text}");
    assert!(text.contains("  3 flow path(s) followed, 1 path change(s)"), "{text}");
}

/// decode shows a TR 2.0 report's packet as it shows a data packet: its
/// flow and INT 2.1 stack, every hop (a switch's report); a drop report's
/// packet, its flow from the headers it has.
#[test]
fn decode_reads_the_packet_inside_a_report() {
    let dir = workdir("decode-inside");
    let datagrams = switch_reports();
    let frames: Vec<Vec<u8>> = [&datagrams[0], datagrams.last().unwrap()]
        .iter()
        .map(|payload| collector::report_frame(payload))
        .collect();
    write_pcap(&dir.join("reports.pcap"), &frames);
    let json = int_tools(&dir, &["decode", "--json", "reports.pcap"]);
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let packet = &values[0]["report"]["reports"][0]["packet"];
    assert_eq!(values[0]["report"]["reports"][0]["flow"]["src_port"], 1, "{}", values[0]);
    let hops = packet["int21"]["hops"].as_array().unwrap();
    let nodes: Vec<_> = hops.iter().map(|h| h["node_id"].as_u64().unwrap()).collect();
    assert_eq!(nodes, [3, 2, 1], "newest first, as carried");
    assert_eq!(hops[1]["hop_latency"], 4000);
    assert_eq!(hops[1]["queue_occupancy"], 0);
    let dropped = &values[1]["report"]["reports"][0];
    assert_eq!(
        (dropped["flow"]["dst_port"].as_u64(), dropped["packet"]["int21"].is_null()),
        (Some(7777), true),
        "{}",
        values[1]
    );
    let text = int_tools(&dir, &["decode", "reports.pcap"]);
    assert!(text.contains("    packet: 17 10.0.0.1:1 > 10.0.0.2:5000"), "{text}");
    assert!(text.contains("    hop 1: node_id=2 hop_latency=4000 queue_id=0 queue_occupancy=0 ingress_timestamp=12000 egress_timestamp=16000"), "{text}");
    assert!(text.contains("    dropped: reason 71 (?) queue 3"), "{text}");
    assert!(text.contains("    packet: 17 10.0.0.5:4444 > 10.0.0.2:7777"), "{text}");
}

/// `collect` in text until it has `datagrams`: what it prints.
fn text_collect(datagrams: &[Vec<u8>]) -> String {
    let count = datagrams.len().to_string();
    let (child, listen) = collector::start_collect(Path::new(BIN), &["--count", &count, "--duration", "120"]);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

/// A port another collect holds is refused, with what to do, unless
/// `--share-port`; a plot that cannot be written fails at start.
#[test]
fn collect_refuses_a_held_port_and_an_unwritable_plot() {
    let (first, listen) = start_collector(&["--duration", "600"]);
    let dir = workdir("collect-held-port");
    let second =
        Command::new(BIN).args(["collect", "--listen", &listen, "--duration", "1"]).output().unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("another process receives on this port") && said.contains("--share-port"),
        "{said}"
    );
    let shared = Command::new(BIN)
        .args(["collect", "--listen", &listen, "--duration", "1", "--share-port"])
        .output()
        .unwrap();
    assert!(shared.status.success(), "{}", String::from_utf8_lossy(&shared.stderr));
    interrupt(&first);
    summary_of(first);
    let plot = Command::new(BIN)
        .args(["collect", "--listen", "127.0.0.1:0", "--duration", "600", "--plot", "/nonexistent/plot.png"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!plot.status.success());
    assert!(String::from_utf8_lossy(&plot.stderr).contains("--plot /nonexistent/plot.png: No such file"));
}

/// TR 2.0 section 3.2's Sequence Number "reflects the sequence of
/// reports": a sender numbering each individual report (480 reports in
/// 120 datagrams of 1, 7, 3 and 5) and one numbering each datagram both
/// lose none.
#[test]
fn collect_takes_report_numbers_per_report_or_per_datagram() {
    let reports: Vec<Vec<u8>> = switch_reports().into_iter().take(60).cycle().take(480).collect();
    let mut groups = Vec::new();
    let mut at = 0;
    for size in [1, 7, 3, 5].into_iter().cycle().take(120) {
        groups.push(&reports[at..at + size]);
        at += size;
    }
    for per_report in [true, false] {
        let (child, listen) = start_collector(&["--count", "480", "--duration", "120"]);
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut number = 1;
        for (i, group) in groups.iter().enumerate() {
            let sequence = if per_report { number } else { i as u32 + 1 };
            sender.send_to(&coalesced(sequence, group), &listen).unwrap();
            number += group.len() as u32;
        }
        let summary = summary_of(child);
        assert_eq!(summary["all_flows"]["latency_reports"], 480, "{summary}");
        assert_eq!(summary["malformed"], 0, "{summary}");
        let counts = (&summary["lost_reports"], &summary["late_reports"], &summary["sequence_resyncs"]);
        assert_eq!(
            counts,
            (&serde_json::json!(0), &serde_json::json!(0), &serde_json::json!(0)),
            "per report {per_report}: {summary}"
        );
    }
}

/// A flag's mistake names that flag: a `--from-nats` server given wrong
/// is said as `--from-nats`, not as the publisher's `--nats`.
#[test]
fn collect_errors_name_their_flag() {
    let said = |args: &[&str]| {
        let output = Command::new(BIN).args(args).output().unwrap();
        assert!(!output.status.success(), "{args:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let from = said(&["collect", "--from-nats", "http://x:1", "--duration", "1"]);
    assert!(from.contains("error: --from-nats \"http://x:1\": give it as nats://HOST:PORT"), "{from}");
    let to = said(&["collect", "--listen", "127.0.0.1:0", "--nats", "http://x:1", "--duration", "1"]);
    assert!(to.contains("error: --nats \"http://x:1\": give it as nats://HOST:PORT"), "{to}");
}

/// A duration flag of collect: its unit's name in clap's message, the
/// bounds said, values too short, whether 0 is taken, values at the bounds.
struct Row {
    flag: &'static str,
    unit: &'static str,
    bounds: &'static str,
    short: &'static [&'static str],
    zero: bool,
    good: &'static [&'static str],
}

/// Every duration flag of collect refuses, as it is parsed (exit 2, no
/// panic, nothing started), a value that is not a number, infinite,
/// negative, 0 where 0 means nothing, too short to be anything but a spin,
/// or so long a clock overflows; the message names the flag, why and the
/// bounds. Values at the bounds are taken (`--count 0` ends such a run at
/// once, so an accepted value cannot hang the test either).
#[test]
fn collect_refuses_absurd_durations_by_flag_and_bounds() {
    let run = |flag: &str, value: &str| {
        // FLAG=VALUE: `-1` after a space would be read as a flag.
        let given = format!("{flag}={value}");
        let args = ["collect", "--listen", "127.0.0.1:0", "--quiet", "--count", "0", &given];
        Command::new(BIN).args(args).output().unwrap()
    };
    let common = [("NaN", "not a number"), ("inf", "too long"), ("-1", "negative"), ("1e20", "too long")];
    let table = [
        Row {
            flag: "--duration",
            unit: "S",
            bounds: "0.001 to 31536000 s",
            short: &["1e-9"],
            zero: false,
            good: &["0.001", "31536000"],
        },
        Row {
            flag: "--interval",
            unit: "S",
            bounds: "0.1 to 86400 s, or 0",
            short: &["1e-9", "0.01"],
            zero: true,
            good: &["0.1", "86400"],
        },
        Row {
            flag: "--plot-interval",
            unit: "S",
            bounds: "1 to 86400 s, or 0",
            short: &["1e-9", "0.5"],
            zero: true,
            good: &["1", "86400"],
        },
        Row {
            flag: "--ipfix-interval",
            unit: "S",
            bounds: "0.1 to 86400 s",
            short: &["1e-9", "0.05"],
            zero: false,
            good: &["0.1", "86400"],
        },
        Row {
            flag: "--view-sample-ms",
            unit: "MS",
            bounds: "10 to 60000 ms",
            short: &["1e-9", "9"],
            zero: false,
            good: &["10", "60000"],
        },
        Row {
            flag: "--view-stale-s",
            unit: "S",
            bounds: "0.1 to 604800 s",
            short: &["1e-9"],
            zero: false,
            good: &["0.1", "604800"],
        },
        Row {
            flag: "--join-window-ms",
            unit: "MS",
            bounds: "1 to 3600000 ms",
            short: &["1e-9", "0.5"],
            zero: false,
            good: &["1", "3600000"],
        },
        Row {
            flag: "--nats-max-age-s",
            unit: "S",
            bounds: "1 to 315360000 s, or 0",
            short: &["1e-9", "0.5"],
            zero: true,
            good: &["1", "315360000"],
        },
    ];
    for Row { flag, unit, bounds, short, zero, good } in table {
        let zero_refused = (!zero).then_some(("0", "0"));
        let short = short.iter().map(|v| (*v, "too short"));
        for (value, why) in common.into_iter().chain(short).chain(zero_refused) {
            let output = run(flag, value);
            let said = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{flag} {value}: {said}");
            let wanted =
                format!("invalid value '{value}' for '{flag} <{unit}>': {value} is {why}: give {bounds} (");
            assert!(said.contains(&wanted), "{flag} {value}: wanted {wanted:?} in {said}");
        }
        let zero_taken = zero.then_some("0");
        for value in good.iter().copied().chain(zero_taken) {
            let output = run(flag, value);
            assert!(output.status.success(), "{flag} {value}: {}", String::from_utf8_lossy(&output.stderr));
        }
    }
}
