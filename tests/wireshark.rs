//! The Wireshark dissector (tools/wireshark/int05.lua) against pcaps the
//! node wrote: every field of an INT packet in each encapsulation, a
//! latency report and a Drop-Summary report, as tshark shows them, equals
//! what int-tools decode says of the same packet.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

const LUA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/int05.lua");
const LUA21: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/int21.lua");

/// tshark's values of `fields` for every packet (one Vec per packet).
fn tshark(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    tshark_with(LUA, pcap, fields, &[])
}

/// [`tshark`] with another dissector script and more options.
fn tshark_with(script: &str, pcap: &Path, fields: &[&str], options: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-X".to_string(),
        format!("lua_script:{script}"),
        "-r".into(),
        pcap.to_string_lossy().into_owned(),
    ];
    args.extend(options.iter().map(|o| o.to_string()));
    // INT sits where port-based dissectors (HTTP on 80...) would look, and
    // its bytes look like payload to TCP's sequence analysis.
    args.extend(
        [
            "-o",
            "tcp.try_heuristic_first:TRUE",
            "-o",
            "udp.try_heuristic_first:TRUE",
            "-o",
            "tcp.analyze_sequence_numbers:FALSE",
        ]
        .map(String::from),
    );
    args.extend(["-T", "fields", "-E", "separator=;"].map(String::from));
    for field in fields {
        args.push("-e".into());
        args.push((*field).into());
    }
    let output =
        Command::new("tshark").args(&args).output().expect("tshark not found: run scripts/install-deps.sh");
    assert!(output.status.success(), "tshark: {}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("Lua: Error"), "{stderr}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

fn decode(dir: &Path, pcap: &str) -> Vec<serde_json::Value> {
    int_tools(dir, &["decode", "--json", pcap]).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn gen(dir: &Path, args: &[&str]) {
    int_tools(dir, &[&["gen"], args].concat());
}

const INT_FIELDS: [&str; 16] = [
    "int05.shim.type",
    "int05.shim.length",
    "int05.md.ver",
    "int05.md.rep",
    "int05.md.c",
    "int05.md.e",
    "int05.md.ins_cnt",
    "int05.md.max_hop_cnt",
    "int05.md.total_hop_cnt",
    "int05.md.instructions",
    "int05.hop.switch_id",
    "int05.hop.ingress_port",
    "int05.hop.egress_port",
    "int05.hop.ingress_timestamp",
    "int05.hop.egress_timestamp",
    "int05.sequence",
];

fn expected_int(int: &serde_json::Value) -> Vec<String> {
    let hop = &int["hops"][0];
    let flag = |v: &serde_json::Value| if v.as_bool().unwrap() { "1" } else { "0" }.to_string();
    vec![
        int["shim_type"].to_string(),
        int["length_words"].to_string(),
        int["version"].to_string(),
        int["rep"].to_string(),
        flag(&int["c"]),
        flag(&int["e"]),
        int["ins_cnt"].to_string(),
        int["max_hop_cnt"].to_string(),
        int["total_hop_cnt"].to_string(),
        int["instructions"].as_str().unwrap().to_string(),
        hop["switch_id"].to_string(),
        hop["ingress_port"].to_string(),
        hop["egress_port"].to_string(),
        hop["ingress_timestamp"].to_string(),
        hop["egress_timestamp"].to_string(),
        int["sequence"].to_string(),
    ]
}

#[test]
fn tshark_decodes_what_the_node_wrote() {
    let dir = workdir("wireshark");
    gen(
        &dir,
        &["--out", "plain.pcap", "--packets", "40", "--flows", "4", "--proto", "mix", "--sizes", "200"],
    );
    gen(
        &dir,
        &[
            "--out",
            "plain6.pcap",
            "--packets",
            "20",
            "--flows",
            "4",
            "--sizes",
            "200",
            "--ipv6",
            "1",
            "--ipv6-options",
        ],
    );
    // DSCP encapsulation, written by the source node.
    run_node(&dir, &node_config("source", "plain.pcap", "dscp.pcap", "", None));
    run_node(&dir, &node_config("source", "plain6.pcap", "dscp6.pcap", "", None));
    // UDP encapsulation, written by the source node.
    let ext = "    int: {encapsulation: int05-extension-udp}\n";
    run_node(&dir, &node_config("source", "plain.pcap", "ext.pcap", ext, None));
    run_node(&dir, &node_config("source", "plain6.pcap", "ext6.pcap", ext, None));

    for pcap in ["dscp.pcap", "ext.pcap", "dscp6.pcap", "ext6.pcap"] {
        let tail_field = "udp.dstport";
        let ours = decode(&dir, pcap);
        let mut fields = INT_FIELDS.to_vec();
        fields.extend(["int05.tail.proto", "int05.tail.dst_port", "int05.tail.dscp", tail_field]);
        let theirs = tshark(&dir.join(pcap), &fields);
        assert_eq!(theirs.len(), ours.len());
        for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
            let mut expected = expected_int(&o["int"]);
            let tail = &o["int"]["tail"];
            expected.extend([
                tail["protocol"].to_string(),
                tail["dst_port"].to_string(),
                tail["dscp"].to_string(),
            ]);
            assert_eq!(t[..19], expected[..], "{pcap} packet {i}");
            if pcap.starts_with("ext") {
                assert!(t[19].starts_with("33122"), "the extension UDP header: {}", t[19]);
            }
        }
    }

    // Reports written by the sink's DPDK-port exporter.
    run_port_exporter_sink(&dir, 400);
    let ours = decode(&dir, "reports.pcap");
    let fields = [
        "intreport.ver",
        "intreport.nproto",
        "intreport.d",
        "intreport.q",
        "intreport.f",
        "intreport.hw_id",
        "intreport.seq",
        "intreport.timestamp",
        "intreport.sink_id",
        "intreport.latency_ns",
        "intreport.drop.source_node",
        "intreport.drop.sink_node",
        "intreport.drop.source_port",
        "intreport.drop.sink_port",
        "intreport.drop.gap_timestamp",
        "intreport.drop.gap_sequence",
        "intreport.drop.gap_count",
        "intreport.src_port",
        "intreport.dst_port",
    ];
    let theirs = tshark(&dir.join("reports.pcap"), &fields);
    assert_eq!(theirs.len(), ours.len());
    let (mut latency, mut drops) = (0, 0);
    let flag = |v: &serde_json::Value| if v.as_bool().unwrap() { "1" } else { "0" }.to_string();
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let r = &o["report"];
        let header = [
            r["version"].to_string(),
            r["nproto"].to_string(),
            flag(&r["d"]),
            flag(&r["q"]),
            flag(&r["f"]),
            r["hw_id"].to_string(),
            r["report_seq"].to_string(),
            r["header_timestamp"].to_string(),
        ];
        assert_eq!(t[..8], header[..], "report {i} header");
        if r["type"] == "latency" {
            latency += 1;
            assert_eq!(t[8], r["sink_id"].to_string());
            assert_eq!(t[9], r["latency_ns"].to_string());
            assert_eq!(t[17], r["flow"]["src_port"].to_string());
            assert_eq!(t[18], r["flow"]["dst_port"].to_string());
        } else {
            drops += 1;
            let got: Vec<&str> = t[10..19].iter().map(String::as_str).collect();
            let want = [
                r["source_node"].to_string(),
                r["sink_node"].to_string(),
                r["source_port"].to_string(),
                r["sink_port"].to_string(),
                (r["gap_time_ns"].as_u64().unwrap() / 1_000_000_000).to_string(),
                r["flow_seq"].to_string(),
                r["lost_packets"].to_string(),
                r["flow"]["src_port"].to_string(),
                r["flow"]["dst_port"].to_string(),
            ];
            assert_eq!(got, want, "drop report {i}");
        }
    }
    assert!(latency >= 2 && drops >= 1, "{latency} latency and {drops} drop reports");
}

/// The INT 2.1 dissector (tools/wireshark/int21.lua) against what the node
/// wrote in an INT 2.1 domain: the shim, header and source hop of INT-MD
/// packets over IPv4 and IPv6, marked by DSCP and by UDP port, and the
/// sink's Telemetry Report 2.0 reports from its DPDK-port exporter, as
/// tshark shows them, equal what int-tools decode says.
#[test]
fn tshark_decodes_what_an_int21_domain_wrote() {
    let dir = workdir("wireshark-int21");
    gen(
        &dir,
        &[
            "--out",
            "plain.pcap",
            "--packets",
            "30",
            "--flows",
            "4",
            "--proto",
            "mix",
            "--sizes",
            "200",
            "--ipv6",
            "0.5",
        ],
    );
    let dscp = "    int: {version: 2.1}\n";
    run_node(&dir, &node_config("source", "plain.pcap", "dscp.pcap", dscp, None));
    let port = "    int: {version: 2.1, udp_port: 7777}\n";
    run_node(&dir, &node_config("source", "plain.pcap", "port.pcap", port, None));
    let fields = [
        "int21.shim.type",
        "int21.shim.npt",
        "int21.shim.length",
        "int21.md.hop_ml",
        "int21.md.remaining_hop_cnt",
        "int21.instructions",
        "int21.hop.node_id",
        "int21.hop.ingress_timestamp",
        "int21.source_only.sequence",
    ];
    for pcap in ["dscp.pcap", "port.pcap"] {
        let ours: Vec<serde_json::Value> =
            int_tools(&dir, &["decode", "--json", "--int21-port", "7777", pcap])
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let theirs = tshark_with(LUA21, &dir.join(pcap), &fields, &["-o", "int21.udp_port:7777"]);
        assert_eq!(theirs.len(), ours.len());
        assert_eq!(ours.iter().filter(|o| o["ip_version"] == 6).count(), 15, "{pcap}: IPv6 packets");
        for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
            let int = &o["int21"];
            let hop = &int["hops"][0];
            let expected = [
                "1".to_string(),
                int["npt"].to_string(),
                int["length_words"].to_string(),
                int["hop_ml"].to_string(),
                int["remaining_hop_cnt"].to_string(),
                int["instructions"].as_str().unwrap().to_string(),
                hop["node_id"].to_string(),
                hop["ingress_timestamp"].to_string(),
                int["sequence"].to_string(),
            ];
            assert_eq!(t[..], expected[..], "{pcap} packet {i}: {o}");
        }
    }
    // The sink's reports, sent on a DPDK port into a pcap; its clock is the
    // capture time, 100 us after each source time.
    retime_after_source21(&dir.join("dscp.pcap"), &dscp_domain21(), 100_000);
    write_pcap(&dir.join("empty.pcap"), &[]);
    let sink = port_exporter_config("dscp.pcap")
        .replace("clock: rx-timestamp,", "clock: rx-timestamp, int: {version: 2.1},");
    run_node(&dir, &sink);
    let ours: Vec<serde_json::Value> = int_tools(&dir, &["decode", "--json", "reports.pcap"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!ours.is_empty());
    let fields = [
        "tr20.ver",
        "tr20.seq",
        "tr20.node_id",
        "tr20.rep_type",
        "tr20.in_type",
        "tr20.report_length",
        "tr20.md_length",
        "tr20.rep_md_bits",
        "int21.hop.ingress_timestamp",
    ];
    let theirs = tshark_with(LUA21, &dir.join("reports.pcap"), &fields, &[]);
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let report = &o["report"];
        let individuals = report["reports"].as_array().unwrap();
        // A datagram holds several reports: tshark lists each field's
        // values in order, comma-separated.
        let each = |key: &dyn Fn(&serde_json::Value) -> String| {
            individuals.iter().map(key).collect::<Vec<_>>().join(",")
        };
        let expected = [
            "2".to_string(),
            report["report_seq"].to_string(),
            report["report_node"].to_string(),
            each(&|r| r["rep_type"].to_string()),
            each(&|r| r["in_type"].to_string()),
            each(&|r| r["report_len_words"].to_string()),
            each(&|r| r["md_len_words"].to_string()),
            each(&|r| r["int"]["rep_md_bits"].as_str().unwrap().to_string()),
            individuals[0]["int"]["metadata"]["ingress_timestamp"].to_string(),
        ];
        // tshark also shows the source hop's timestamp of the packet inside
        // (after the report's own): compare the first.
        let mut t = t.clone();
        t[8] = t[8].split(',').next().unwrap().to_string();
        assert_eq!(t[..], expected[..], "report {i}: {o}");
    }
}

/// Telemetry Report 0.5's own flow reports (`export.profile: tr05`): the
/// fixed and Switch Local headers as the dissector shows them, and the
/// packet inside as Wireshark's own Ethernet and IPv4 dissectors and the
/// INT 0.5 dissector read it, equal what int-tools decode says.
#[test]
fn tshark_decodes_tr05_flow_reports() {
    let dir = workdir("wireshark-tr05");
    gen(
        &dir,
        &["--out", "plain.pcap", "--packets", "40", "--flows", "4", "--proto", "mix", "--sizes", "200"],
    );
    run_node(&dir, &node_config("source", "plain.pcap", "dscp.pcap", "", None));
    // The sink's clock is the capture time: 100 us after each source time,
    // whichever clock net_pcap stamped its output with.
    retime_after_source(&dir.join("dscp.pcap"), &int_core::int05::Domain::default(), 100_000);
    write_pcap(&dir.join("empty.pcap"), &[]);
    let sink = port_exporter_config("dscp.pcap").replace("export:\n", "export:\n  profile: tr05\n");
    run_node(&dir, &sink);
    let ours = decode(&dir, "reports.pcap");
    assert!(!ours.is_empty());
    let fields = [
        "intreport.nproto",
        "intreport.f",
        "intreport.seq",
        "intreport.timestamp",
        "intreport.switch_id",
        "intreport.ingress_port",
        "intreport.egress_timestamp",
        "ip.src",
        "udp.srcport",
        "tcp.srcport",
        "int05.hop.switch_id",
        "int05.hop.ingress_timestamp",
    ];
    let theirs = tshark(&dir.join("reports.pcap"), &fields);
    assert_eq!(theirs.len(), ours.len());
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let r = &o["report"];
        let local = &r["switch_local"];
        let hop = &r["int"]["hops"][0];
        let (tcp, port) = (r["flow"]["protocol"] == 6, &r["flow"]["src_port"]);
        let expected = [
            "2".to_string(),
            "1".to_string(),
            r["report_seq"].to_string(),
            r["sink_timestamp_ns"].to_string(),
            local["switch_id"].to_string(),
            local["ingress_port"].to_string(),
            local["egress_timestamp"].to_string(),
            // The report's own IPv4 source, then the packet's.
            format!("192.0.2.2,{}", r["flow"]["src"].as_str().unwrap()),
            // The report's UDP source port, then the packet's L4 one.
            if tcp { "32766".to_string() } else { format!("32766,{port}") },
            if tcp { port.to_string() } else { String::new() },
            hop["switch_id"].to_string(),
            hop["ingress_timestamp"].to_string(),
        ];
        assert_eq!(t[..], expected[..], "report {i}: {o}");
        assert_eq!(r["type"], "tr05-flow");
    }
}

/// The INT 2.1 dissector on a sink's loss and drop reports: a packet lost
/// between source and sink and one whose block lies (dropped under
/// `malformed: drop`) give a TR 2.0 loss report (int-node's rule) and a drop
/// report (RepMdBits bit 15); tshark's fields equal decode's.
#[test]
fn tshark_decodes_int21_loss_and_drop_reports() {
    let dir = workdir("wireshark-int21-drops");
    gen(
        &dir,
        &["--out", "plain.pcap", "--packets", "40", "--flows", "4", "--proto", "udp", "--sizes", "200"],
    );
    run_node(&dir, &node_config("source", "plain.pcap", "int.pcap", "    int: {version: 2.1}\n", None));
    let mut frames = read_pcap(&dir.join("int.pcap"));
    frames.remove(9);
    let domain = dscp_domain21();
    let block_at =
        int_core::int21::sink::extract(&frames[20], &domain, &int_core::hop_rule::HopRule::default())
            .unwrap()
            .unwrap()
            .block_at;
    frames[20][block_at + 1] = 2;
    write_pcap(&dir.join("int.pcap"), &frames);
    write_pcap(&dir.join("empty.pcap"), &[]);
    let sink = port_exporter_config("int.pcap").replace(
        "clock: rx-timestamp,",
        "clock: rx-timestamp, int: {version: 2.1}, sink: {malformed: drop},",
    );
    run_node(&dir, &sink);
    let ours: Vec<serde_json::Value> = decode(&dir, "reports.pcap");
    let fields = ["tr20.drop_reason", "tr20.loss.first_sequence", "tr20.loss.count", "tr20.loss.source_node"];
    let theirs = tshark_with(LUA21, &dir.join("reports.pcap"), &fields, &[]);
    assert_eq!(theirs.len(), ours.len());
    let (mut drops, mut losses, mut lost) = (0, 0, 0);
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let individuals = o["report"]["reports"].as_array().unwrap();
        let join = |values: Vec<String>| values.join(",");
        let reasons: Vec<String> = individuals
            .iter()
            .filter(|r| !r["drop"].is_null())
            .map(|r| r["drop"]["reason"].to_string())
            .collect();
        let loss: Vec<&serde_json::Value> =
            individuals.iter().filter(|r| !r["loss"].is_null()).map(|r| &r["loss"]).collect();
        drops += reasons.len();
        losses += loss.len();
        lost += loss.iter().map(|l| l["lost_packets"].as_u64().unwrap()).sum::<u64>();
        let expected = [
            join(reasons),
            join(loss.iter().map(|l| l["first_flow_seq"].to_string()).collect()),
            join(loss.iter().map(|l| l["lost_packets"].to_string()).collect()),
            join(loss.iter().map(|l| l["source_node"].to_string()).collect()),
        ];
        assert_eq!(t[..], expected[..], "datagram {i}: {o}");
    }
    // Both packets were flow 1's: its two holes leave in one loss report.
    assert_eq!(
        (drops, losses, lost),
        (1, 1, 2),
        "one drop report; the lost and the dropped packet as losses"
    );
}

/// INT 2.1 in VXLAN-GPE and Geneve after a transit hop, as the dissector
/// shows it inside Wireshark's own VXLAN and Geneve dissectors: the INT
/// shim's G and Next Protocol (VXLAN-GPE), the option's Type (Geneve), and
/// both hops' node ids equal what int-tools decode says; the encapsulated
/// Ethernet frame is dissected after the INT data.
#[test]
fn tshark_decodes_int21_in_tunnels() {
    let dir = workdir("wireshark-tunnels");
    let frames: Vec<Vec<u8>> =
        (0..9).map(|i| tunnel_packet((i % 3) as u8, i >= 4, false, 1 << 60, 64).0).collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    run_node(&dir, &node_config("transit", "in.pcap", "t.pcap", "    int: {version: 2.1}\n", None));
    let fields =
        ["int21gpe.g", "int21gpe.next_protocol", "int21geneve.type", "int21.hop.node_id", "eth.type"];
    let theirs = tshark_with(LUA21, &dir.join("t.pcap"), &fields, &[]);
    let ours: Vec<serde_json::Value> = int_tools(&dir, &["decode", "--json", "t.pcap"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(theirs.len(), 9);
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let hops = o["int21"]["hops"].as_array().unwrap();
        let node_ids: Vec<String> = hops.iter().map(|h| h["node_id"].to_string()).collect();
        let tunnel: [&str; 3] = match i % 3 {
            0 => ["0", "0x03", ""],
            1 => ["1", "0x03", ""],
            _ => ["", "", "1"],
        };
        assert_eq!(t[..4], [tunnel[0], tunnel[1], tunnel[2], &node_ids.join(",")], "packet {i}: {o}");
        assert!(t[4].split(',').count() == 2, "the frame inside the tunnel is dissected: {t:?}");
    }
}

/// A drop report's packet (InType 3: from its Ethernet header, as a sink
/// under `malformed: drop` sends it) goes to Wireshark's own Ethernet,
/// IPv4 and UDP dissectors: tshark names the dropped packet's addresses
/// and ports after the report's own.
#[test]
fn tshark_reads_the_packet_a_drop_report_carries() {
    let dir = workdir("wireshark-drop21");
    let args =
        ["gen", "--out", "int.pcap", "--packets", "4", "--flows", "1", "--proto", "udp", "--sizes", "200"];
    int_tools(&dir, &[&args[..], &["--instrument", "int21-md"]].concat());
    let mut frames = read_pcap(&dir.join("int.pcap"));
    // Packet 2's shim claims 255 words: it lies, and the sink drops it.
    frames[2][43] = 0xff;
    write_pcap(&dir.join("lying.pcap"), &frames);
    write_pcap(&dir.join("empty.pcap"), &[]);
    let sink = port_exporter_config("lying.pcap").replace(
        "clock: rx-timestamp,",
        "clock: rx-timestamp, int: {version: 2.1}, sink: {malformed: drop},",
    );
    let run = run_node(&dir, &sink);
    assert_eq!(run.counter("sink", "reports_drop"), 1, "{}", run.stdout());
    let fields = ["tr20.in_type", "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "eth.src"];
    let theirs = tshark_with(LUA21, &dir.join("reports.pcap"), &fields, &[]);
    let drop = theirs.iter().find(|t| t[0].split(',').any(|v| v == "3")).expect("a report of InType 3");
    // gen's frames: Ethernet, IPv4 without options, UDP.
    let packet = &frames[2];
    let address =
        |at: usize| std::net::Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    let port = |at: usize| u16::from_be_bytes([packet[at], packet[at + 1]]).to_string();
    let mac = packet[6..12].iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    let values = |field: &String| field.split(',').map(str::to_string).collect::<Vec<_>>();
    // The datagram's own headers, then each report's packet: every report
    // of the datagram has one (tshark lists them in order).
    let reports = values(&drop[0]).len();
    let sources = values(&drop[1]);
    assert_eq!(sources.len(), 1 + reports, "{drop:?}");
    assert_eq!(sources[0], "192.0.2.2", "the report's own source: {drop:?}");
    assert_eq!(sources.last(), Some(&address(26).to_string()), "{drop:?}");
    assert_eq!(values(&drop[2]).last(), Some(&address(30).to_string()), "{drop:?}");
    assert_eq!(values(&drop[3]).last(), Some(&port(34)), "{drop:?}");
    assert_eq!(values(&drop[4]).last(), Some(&port(36)), "{drop:?}");
    // Only the drop report's packet has an Ethernet header.
    assert_eq!(values(&drop[5]), ["02:00:00:00:00:02".to_string(), mac], "{drop:?}");
}

/// A GSO send captured on the sending host (five Drop-Summaries back to
/// back in one UDP datagram): the INT 0.5 dissector shows all five.
#[test]
fn tshark_reads_every_report_of_a_gso_send() {
    let dir = workdir("wireshark-gso");
    let payload: Vec<u8> =
        (1..=5).flat_map(|sequence| common::collector::drop_summary(sequence, sequence)).collect();
    write_pcap(&dir.join("gso.pcap"), &[common::collector::report_frame(&payload)]);
    let theirs = tshark(&dir.join("gso.pcap"), &["intreport.seq", "intreport.drop.gap_count"]);
    assert_eq!(theirs, [["1,2,3,4,5", "1,2,3,4,5"]], "{theirs:?}");
}

/// A GSO send of Telemetry Report 2.0 groups (two of a switch's groups
/// back to back in one datagram): the INT 2.1 dissector shows both.
#[test]
fn tshark_reads_every_group_of_a_tr20_gso_send() {
    let dir = workdir("wireshark-gso21");
    let group = common::collector::switch_reports()[0].clone();
    let payload = [group.clone(), group].concat();
    write_pcap(&dir.join("gso.pcap"), &[common::collector::report_frame(&payload)]);
    let theirs = tshark_with(LUA21, &dir.join("gso.pcap"), &["tr20.node_id", "tr20.rep_type"], &[]);
    assert_eq!(theirs, [["9,9", "1,1"]], "{theirs:?}");
}

/// tshark's own dissectors' values of `fields`, `;` between them, a line
/// per packet (no script of ours loaded).
fn tshark_builtin(pcap: &Path, fields: &[&str]) -> String {
    let mut args = vec!["-r".to_string(), pcap.to_string_lossy().into_owned()];
    args.extend(["-T", "fields", "-E", "separator=;"].map(String::from));
    args.extend(fields.iter().flat_map(|f| ["-e".to_string(), f.to_string()]));
    let output =
        Command::new("tshark").args(&args).output().expect("tshark not found: run scripts/install-deps.sh");
    assert!(output.status.success(), "tshark: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// IOAM: an IPv6 Hop-by-Hop Pre-allocated Trace written by int-core (room
/// for three nodes, two of them filled, every kind of field but the
/// namespace data), read by Wireshark's own IOAM dissector: the header and
/// each node's fields as written, newest first, the third slot free.
#[test]
fn tshark_reads_the_ioam_trace_int_core_writes() {
    use int_core::ioam::ipv6;
    use int_core::ioam::node::NodeData;
    use int_core::ioam::trace::{TraceHeaderRepr, TraceType};
    let dir = workdir("wireshark-ioam");
    let trace_type = TraceType::HOP_LIM_NODE_ID
        | TraceType::INTERFACES
        | TraceType::TIMESTAMP_SECONDS
        | TraceType::TIMESTAMP_FRACTION
        | TraceType::TRANSIT_DELAY
        | TraceType::QUEUE_DEPTH
        | TraceType::HOP_LIM_NODE_ID_WIDE
        | TraceType::BUFFER_OCCUPANCY;
    let node_len = trace_type.node_len() as u8;
    let header = TraceHeaderRepr { namespace: 123, node_len, trace_type, ..Default::default() };
    let mut hbh = vec![0u8; 256];
    let len = ipv6::emit_hop_by_hop(&mut hbh, 17, &header, 3).unwrap();
    hbh.truncate(len);
    let node = |hop: u8, id: u32| NodeData {
        hop_limit: Some(hop),
        node_id: Some(id),
        ingress_if: Some(u16::from(hop)),
        egress_if: Some(u16::from(hop) + 1),
        timestamp_seconds: Some(1_700_000_000 + u32::from(hop)),
        timestamp_fraction: Some(500_000),
        transit_delay: Some(1_000 * u32::from(hop)),
        queue_depth: Some(7),
        node_id_wide: Some(0x0001_0203_0405_0607 + u64::from(id)),
        buffer_occupancy: None,
        ..NodeData::default()
    };
    for written in [node(64, 0xab_cdef), node(63, 0x12)] {
        let trace = ipv6::find_trace(&hbh, 123).unwrap().unwrap();
        ipv6::fill(&mut hbh, &trace, &written).unwrap();
    }
    let mut spec = int_core::craft::PacketSpec::udp6(
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
        4000,
        5000,
        32,
    );
    spec.ipv6.as_mut().unwrap().extensions.push((0, hbh));
    write_pcap(&dir.join("ioam.pcap"), &[spec.build()]);
    let fields = [
        "ipv6.opt.ioam.opt_type",
        "ipv6.opt.ioam.trace.ns",
        "ipv6.opt.ioam.trace.nodelen",
        "ipv6.opt.ioam.trace.remlen",
        "ipv6.opt.ioam.trace.type",
        "ipv6.opt.ioam.trace.flag.o",
        "ipv6.opt.ioam.trace.node.hlim",
        "ipv6.opt.ioam.trace.node.id",
        "ipv6.opt.ioam.trace.node.iif",
        "ipv6.opt.ioam.trace.node.eif",
        "ipv6.opt.ioam.trace.node.tss",
        "ipv6.opt.ioam.trace.node.tsf",
        "ipv6.opt.ioam.trace.node.trdelay",
        "ipv6.opt.ioam.trace.node.qdepth",
        "ipv6.opt.ioam.trace.node.id_wide",
        "ipv6.opt.ioam.trace.node.bufoccup",
        "ipv6.opt.ioam.trace.free_space",
        "udp.dstport",
    ];
    let seen = tshark_builtin(&dir.join("ioam.pcap"), &fields);
    // tshark shows these fields in hex, each node's (newest first) after a
    // comma; Hop_Lim twice per node, in the short and the wide field.
    let two = |a: String, b: String| format!("{a},{b}");
    let wide = |id: u64| format!("{:#018x}", 0x0001_0203_0405_0607 + id);
    let expected = [
        "0".to_string(),
        "123".into(),
        node_len.to_string(),
        node_len.to_string(),
        format!("{:#08x}", trace_type.bits()),
        "0".into(),
        "63,63,64,64".into(),
        two(format!("{:#08x}", 0x12), format!("{:#08x}", 0xab_cdef)),
        two(format!("{:#06x}", 63), format!("{:#06x}", 64)),
        two(format!("{:#06x}", 64), format!("{:#06x}", 65)),
        two(format!("{:#010x}", 1_700_000_063), format!("{:#010x}", 1_700_000_064)),
        two(format!("{:#010x}", 500_000), format!("{:#010x}", 500_000)),
        two(format!("{:#010x}", 63_000), format!("{:#010x}", 64_000)),
        two(format!("{:#010x}", 7), format!("{:#010x}", 7)),
        two(wide(0x12), wide(0xab_cdef)),
        "0xffffffff,0xffffffff".into(),
        "00".repeat(usize::from(node_len) * 4),
        "5000".into(),
    ];
    assert_eq!(seen.trim_end().split(';').collect::<Vec<_>>(), expected, "{seen}");
}

/// IOAM's Edge-to-Edge option as int-core's encapsulating node writes it
/// (a 32-bit packet number), read by tshark: a Destination Options header
/// of 16 bytes right before UDP (Next Header 17), PadN, then option type
/// 0x11 ("may change: no") of 10 bytes: Reserved, IOAM-Opt-Type 3,
/// Namespace-ID 123, E2E-Type 0x4000, the number. Wireshark 4.0's IOAM
/// dissector knows option 0x31 only (RFC 9486 assigned 0x11 later), so it
/// shows the option's bytes, not its fields.
#[test]
fn tshark_reads_the_ioam_edge_to_edge_option_int_core_writes() {
    use int_core::ioam::e2e::E2eType;
    use int_core::ioam::node::NodeData;
    use int_core::ioam::source::{self, Encapped, Plan};
    use int_core::ioam::trace::{TraceHeaderRepr, TraceType};
    let dir = workdir("wireshark-ioam-e2e");
    let header = TraceHeaderRepr {
        namespace: 123,
        node_len: 1,
        trace_type: TraceType::HOP_LIM_NODE_ID,
        ..Default::default()
    };
    let plan = Plan { header, nodes: 2, max_ip_len: 1500, e2e: E2eType::SEQUENCE_32 };
    let original = int_core::craft::PacketSpec::udp6(
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
        4000,
        5000,
        32,
    )
    .build();
    let mut bytes = vec![0u8; 128 + original.len()];
    bytes[128..].copy_from_slice(&original);
    let mut view = int_core::FrameBuf::new(&mut bytes, 128, original.len()).unwrap();
    let node = NodeData { node_id: Some(1), ..NodeData::default() };
    let added = source::insert(&mut view, &plan, &node, |_, _| Some(0x0102_0304)).unwrap();
    assert_eq!(added, Encapped::Added(24 + 16));
    write_pcap(&dir.join("e2e.pcap"), &[view.frame().to_vec()]);
    let fields = [
        "ipv6.dstopts.nxt",
        "ipv6.dstopts.len_oct",
        "ipv6.opt.type",
        "ipv6.opt.type.change",
        "ipv6.opt.length",
        "ipv6.opt.unknown",
        "ipv6.opt.ioam.trace.ns",
        "udp.dstport",
    ];
    let seen = tshark_builtin(&dir.join("e2e.pcap"), &fields);
    // Options of both headers in order: the trace's PadN and 0x31, then
    // the Destination Options header's PadN and 0x11.
    let expected =
        ["17", "16", "0x01,0x31,0x01,0x11", "0,1,0,0", "0,18,0,10", "0003007b400001020304", "123", "5000"];
    assert_eq!(seen.trim_end().split(';').collect::<Vec<_>>(), expected, "{seen}");
}

const LUA_IFA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/ifa.lua");
const IFA_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/scapy_packets");

/// The IFA dissector's values of `fields` for every packet, then the
/// packet's expert messages. A Lua error while dissecting is no error to
/// tshark: Wireshark shows it as the expert message "Lua Error: ...", which
/// fails here.
fn tshark_ifa(pcap: &Path, fields: &[&str], options: &[&str]) -> Vec<Vec<String>> {
    let fields = [fields, &["_ws.expert.message"]].concat();
    let rows = tshark_with(LUA_IFA, pcap, &fields, options);
    for (i, row) in rows.iter().enumerate() {
        assert!(!row.last().unwrap().contains("Lua Error"), "packet {i}: {row:?}");
    }
    rows
}

/// A tshark value list ("0x04", "2850,2577") as numbers.
fn numbers(value: &str) -> Vec<u64> {
    value
        .split(',')
        .filter(|v| !v.is_empty())
        .map(|v| match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => v.parse().unwrap_or_else(|_| panic!("not a number: {v}")),
        })
        .collect()
}

const IFA_FIELDS: [&str; 31] = [
    "ifa.version",
    "ifa.gns",
    "ifa.next_header",
    "ifa.flags",
    "ifa.flags.mf",
    "ifa.flags.ts",
    "ifa.flags.i",
    "ifa.flags.ta",
    "ifa.flags.c",
    "ifa.max_length",
    "ifa.max_length_bytes",
    "ifa.md.request_vector",
    "ifa.md.action_vector",
    "ifa.md.action.l",
    "ifa.md.action.c",
    "ifa.md.hop_limit",
    "ifa.md.current_length",
    "ifa.md.current_length_bytes",
    "ifa.md.hop_count",
    "ifa.hop.lns",
    "ifa.hop.device_id",
    "ifa.hop.ttl",
    "ifa.hop.port_speed",
    "ifa.hop.congestion",
    "ifa.hop.queue_id",
    "ifa.hop.rx_seconds",
    "ifa.hop.egress_port",
    "ifa.hop.ingress_port",
    "ifa.hop.rx_nanoseconds",
    "ifa.hop.residence_ns",
    "ifa.hop.opaque",
];

/// What [`IFA_FIELDS`] must show of one packet, from scapy's own
/// dissection of it (tests/ifa/scapy_packets.json): each field's values,
/// hop by hop where the field is a hop's.
fn scapy_ifa_fields(packet: &serde_json::Value) -> Vec<Vec<u64>> {
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    let (ifa, md, hops) = (&packet["ifa"], &packet["md"], packet["hops"].as_array().unwrap());
    let (flags, action) = (n(&ifa["flags"]), n(&md["action"]));
    let bit = |value: u64, shift: u32| vec![(value >> shift) & 1];
    let mut fields = vec![
        vec![n(&ifa["ver"])],
        vec![n(&ifa["gns"])],
        vec![n(&ifa["nexthdr"])],
        vec![flags],
        bit(flags, 4),
        bit(flags, 3),
        bit(flags, 2),
        bit(flags, 1),
        bit(flags, 0),
        vec![n(&ifa["maxlen"])],
        vec![n(&ifa["maxlen"]) * 4],
        vec![n(&md["request"])],
        vec![action],
        bit(action, 7),
        bit(action, 6),
        vec![n(&md["hoplmt"])],
        vec![n(&md["curlen"])],
        vec![n(&md["curlen"]) * 4],
        vec![hops.len() as u64],
    ];
    let each = |key: &str| hops.iter().map(|h| n(&h[key])).collect::<Vec<_>>();
    for key in
        ["lns", "device_id", "ttl", "speed", "ecn", "qid", "rx_sec", "dport", "sport", "rx_nsec", "latency"]
    {
        fields.push(each(key));
    }
    // The three opaque words: scapy's qbytes, rsvd0 and qcells, rsvd1.
    fields.push(
        hops.iter()
            .flat_map(|h| [n(&h["qbytes"]), n(&h["rsvd0"]) << 16 | n(&h["qcells"]), n(&h["rsvd1"])])
            .collect(),
    );
    fields
}

const IFA_L4_FIELDS: [&str; 14] = [
    "ifa.udp.srcport",
    "ifa.udp.dstport",
    "ifa.udp.length",
    "ifa.udp.checksum",
    "ifa.tcp.srcport",
    "ifa.tcp.dstport",
    "ifa.tcp.seq",
    "ifa.tcp.ack",
    "ifa.tcp.hdr_len",
    "ifa.tcp.window",
    "ifa.tcp.checksum",
    "ifa.tcp.urgent_pointer",
    "ifa.gre.flags",
    "ifa.gre.protocol",
];

/// What [`IFA_L4_FIELDS`] must show: the L4 header's bytes as scapy wrote
/// them, field by field; empty for the other two kinds.
fn scapy_l4_fields(packet: &serde_json::Value) -> Vec<Vec<u64>> {
    let hex = packet["l4_bytes"].as_str().unwrap();
    let bytes: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let be =
        |at: usize, len: usize| vec![bytes[at..at + len].iter().fold(0u64, |v, b| v << 8 | u64::from(*b))];
    let mut fields = vec![vec![]; IFA_L4_FIELDS.len()];
    match packet["offsets"]["l4_kind"].as_str().unwrap() {
        "udp" => fields[..4].clone_from_slice(&[be(0, 2), be(2, 2), be(4, 2), be(6, 2)]),
        "tcp" => fields[4..12].clone_from_slice(&[
            be(0, 2),
            be(2, 2),
            be(4, 4),
            be(8, 4),
            vec![u64::from(bytes[12] >> 4)],
            be(14, 2),
            be(16, 2),
            be(18, 2),
        ]),
        _ => fields[12..].clone_from_slice(&[be(0, 2), be(2, 2)]),
    }
    fields
}

/// The IFA dissector (tools/wireshark/ifa.lua) against scapy's own IFA
/// packets (scapy pull request 4235's 52 test packets and one whose hop
/// sets every field, tests/ifa/scapy_packets.*): every IFA header,
/// metadata header, hop and L4 header field equals scapy's dissection of
/// the same packet, no Lua error on any.
#[test]
fn tshark_reads_every_ifa_field_as_scapy_built_it() {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{IFA_FIXTURES}.json")).unwrap()).unwrap();
    let packets = json["packets"].as_array().unwrap();
    assert_eq!(packets.len(), 53);
    let fields = [&IFA_FIELDS[..], &IFA_L4_FIELDS[..]].concat();
    let theirs = tshark_ifa(Path::new(&format!("{IFA_FIXTURES}.pcap")), &fields, &[]);
    assert_eq!(theirs.len(), packets.len());
    for (i, (t, packet)) in theirs.iter().zip(packets).enumerate() {
        let seen: Vec<Vec<u64>> = t[..fields.len()].iter().map(|v| numbers(v)).collect();
        let expected = [scapy_ifa_fields(packet), scapy_l4_fields(packet)].concat();
        for (field, (s, e)) in fields.iter().zip(seen.iter().zip(&expected)) {
            assert_eq!(s, e, "packet {i} ({}): {field}", packet["summary"]);
        }
    }
}

/// What follows the stack goes to Wireshark's own dissectors: VXLAN (UDP
/// 4789) and VXLAN-GPE (4790) with the frame or packet inside, GRE's
/// Ethernet, IPv4 and IPv6, and their inner UDP and TCP; the payload of
/// IFA over plain UDP and TCP as data. Each of the 53 packets shows the
/// inner headers scapy put there (by its summary) and no others; one made
/// Geneve (UDP 6081) shows Geneve's VNI and the packet inside.
#[test]
fn tshark_hands_the_payload_after_the_ifa_stack_to_wiresharks_dissectors() {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{IFA_FIXTURES}.json")).unwrap()).unwrap();
    let fields = ["eth.src", "ip.src", "ipv6.src", "vxlan.vni", "udp.srcport", "tcp.srcport", "data.len"];
    let theirs = tshark_ifa(Path::new(&format!("{IFA_FIXTURES}.pcap")), &fields, &[]);
    for (i, (t, packet)) in theirs.iter().zip(json["packets"].as_array().unwrap()).enumerate() {
        let summary = packet["summary"].as_str().unwrap();
        let inner = summary.split("IFAMdHdr / ").nth(1).unwrap();
        let tunnel = packet["group"] != "tcp_udp";
        let v4 = packet["ip_version"] == 4;
        // Outer headers, then the inner ones.
        let mut eth = vec![if tunnel { "b6:18:00:22:22:00" } else { "b6:18:00:11:11:00" }];
        let mut ip = vec![];
        let mut ipv6 = vec![];
        match (tunnel, v4) {
            (true, true) => ip.push("172.1.1.0"),
            (true, false) => ipv6.push("1000::1"),
            (false, true) => ip.push("198.1.1.7"),
            (false, false) => ipv6.push("1000::7"),
        }
        if inner.contains("Ether") {
            eth.push("b6:18:00:11:11:00");
        }
        if tunnel && inner.contains("198.1.1.7") {
            ip.push("198.1.1.7");
        }
        if tunnel && inner.contains("1000::7") {
            ipv6.push("1000::7");
        }
        let mut expected: Vec<String> = [eth, ip, ipv6].iter().map(|v| v.join(",")).collect();
        let vni = if !inner.starts_with("VXLAN") {
            ""
        } else if tunnel {
            "1000"
        } else {
            "1"
        };
        expected.push(vni.into());
        expected.push(if tunnel && inner.contains("UDP") { "1100" } else { "" }.into());
        expected.push(if tunnel && inner.contains("TCP") { "3300" } else { "" }.into());
        if packet["group"] == "every_field" {
            // One hop sets every field: its VXLAN carries an Ethernet frame
            // of EtherType 0x9000 (Wireshark's loopback).
            expected = ["02:00:00:00:00:01,02:00:00:00:00:01", "10.0.0.1", "", "1", "", ""]
                .map(String::from)
                .to_vec();
        }
        assert_eq!(t[..6], expected[..], "packet {i}: {summary}");
        // IFA's own payload as data (a tunnel's inner TCP payload is
        // Wireshark's TCP's to show or not).
        if !tunnel {
            assert_eq!(t[6], "64", "packet {i}: {summary}");
        }
    }
    // Geneve (UDP 6081): scapy's first IPv4 VXLAN packet with the VXLAN
    // header made a Geneve header (no options, protocol 0x6558, VNI 1000).
    let (frames, packets) = ifa_fixtures();
    let at = |part: &str| packets[28]["offsets"][part].as_u64().unwrap() as usize;
    let mut geneve = frames[28].clone();
    geneve[at("l4") + 2..at("l4") + 4].copy_from_slice(&6081u16.to_be_bytes());
    geneve[at("payload")..at("payload") + 4].copy_from_slice(&[0, 0, 0x65, 0x58]);
    let dir = workdir("wireshark-ifa-geneve");
    write_pcap(&dir.join("geneve.pcap"), &[geneve]);
    let theirs = tshark_ifa(&dir.join("geneve.pcap"), &["ifa.udp.dstport", "geneve.vni", "ip.src"], &[]);
    assert_eq!(theirs[0][..3], ["6081", "0x0003e8", "172.1.1.0,198.1.1.7"], "{theirs:?}");
}

/// scapy's IFA packets as frames, and scapy's record of each.
fn ifa_fixtures() -> (Vec<Vec<u8>>, Vec<serde_json::Value>) {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{IFA_FIXTURES}.json")).unwrap()).unwrap();
    let frames = read_pcap(Path::new(&format!("{IFA_FIXTURES}.pcap")));
    (frames, json["packets"].as_array().unwrap().clone())
}

/// The frame cut to `len` bytes, its IPv4 Total Length or IPv6 Payload
/// Length saying so: a packet whose IFA lies, not a short capture.
fn ifa_cut(frame: &[u8], len: usize) -> Vec<u8> {
    let mut cut = frame[..len].to_vec();
    let (at, ip_len) = if cut[12..14] == [0x08, 0x00] { (16, len - 14) } else { (18, len - 54) };
    cut[at..at + 2].copy_from_slice(&(ip_len as u16).to_be_bytes());
    cut
}

/// Each refusal docs/ifa.md lists, written into scapy's packets (a byte
/// changed, or the packet cut), shows as expert info named by int-core's
/// counter; the IFA header is still shown, and no Lua error. A capture cut
/// short (snap length) is `ifa_truncated` too.
#[test]
fn tshark_shows_each_ifa_refusal_as_expert_info() {
    let dir = workdir("wireshark-ifa-refusals");
    let (frames, packets) = ifa_fixtures();
    let (udp4, tcp4, udp6, gre4) = (0, 1, 2, 4);
    let at = |i: usize, part: &str| packets[i]["offsets"][part].as_u64().unwrap() as usize;
    let with = |i: usize, part: &str, delta: usize, value: u8| {
        let mut frame = frames[i].clone();
        frame[at(i, part) + delta] = value;
        frame
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("ifa_unknown_version", with(udp4, "ifa", 0, 0x3f)),
        ("ifa_global_name_space", with(udp4, "ifa", 0, 0x23)),
        ("ifa_metadata_fragment", with(udp4, "ifa", 2, 0x14)),
        ("ifa_tail_stamp", with(udp4, "ifa", 2, 0x0c)),
        ("ifa_checksum_header", with(udp4, "ifa", 2, 0x05)),
        ("ifa_next_header", with(udp4, "ifa", 1, 1)),
        // TCP Data Offset 2 words; GRE version 1.
        ("ifa_l4_malformed", with(tcp4, "l4", 12, 0x20)),
        ("ifa_l4_malformed", with(gre4, "l4", 1, 0x01)),
        // Current Length 12 words; Max Length 8 under 16; 248 words.
        ("ifa_length_not_hops", with(udp4, "md", 3, 12)),
        ("ifa_length_past_max", with(udp4, "ifa", 3, 8)),
        ("ifa_stack_past_packet", with(udp4, "md", 3, 248)),
        ("ifa_stack_past_packet", with(udp6, "md", 3, 40)),
        ("ifa_stack_past_packet", ifa_cut(&frames[udp4], at(udp4, "stack") + 40)),
        ("ifa_truncated", ifa_cut(&frames[udp4], at(udp4, "md") + 2)),
        ("ifa_truncated", ifa_cut(&frames[tcp4], at(tcp4, "l4") + 10)),
        ("ifa_truncated", ifa_cut(&frames[udp6], at(udp6, "ifa") + 2)),
    ];
    let pcap = dir.join("refused.pcap");
    write_pcap(&pcap, &cases.iter().map(|(_, frame)| frame.clone()).collect::<Vec<_>>());
    let fields = ["ifa.version", "ifa.md.hop_count", "_ws.col.Info"];
    let theirs = tshark_ifa(&pcap, &fields, &[]);
    assert_eq!(theirs.len(), cases.len());
    for (i, (t, (reason, _))) in theirs.iter().zip(&cases).enumerate() {
        let expert = &t[3];
        let named: Vec<&str> = expert.split('(').skip(1).filter_map(|m| m.split(')').next()).collect();
        assert_eq!(named, [*reason], "case {i}: {t:?}");
        assert!(t[2].ends_with(&format!("refused: {reason}")), "case {i}: the Info column: {t:?}");
        let version = match i {
            0 => "3",
            15 => "",
            _ => "2",
        };
        assert_eq!(t[0], version, "case {i}: the IFA header is shown: {t:?}");
    }
    // The stack cut after 40 of its 64 bytes still shows its first hop.
    assert_eq!(theirs[12][1], "1", "{:?}", theirs[12]);

    // A capture cut in the stack (snap length 90 of 178 bytes).
    let snapped = dir.join("snapped.pcap");
    let file = std::fs::File::create(&snapped).unwrap();
    let mut writer = pcap_file::pcap::PcapWriter::new(file).unwrap();
    let frame = &frames[udp4];
    let packet =
        pcap_file::pcap::PcapPacket::new(std::time::Duration::ZERO, frame.len() as u32, &frame[..90]);
    writer.write_packet(&packet).unwrap();
    drop(writer);
    let theirs = tshark_ifa(&snapped, &["ifa.version", "ifa.md.hop_count"], &[]);
    assert_eq!(theirs[0][..2], ["2", "1"], "{theirs:?}");
    assert!(theirs[0][2].contains("(ifa_truncated)"), "{theirs:?}");
}

/// Hostile IFA: every byte from the IFA header to the payload of eight of
/// scapy's packets (IPv4 and IPv6; UDP, TCP, GRE, VXLAN) set to 0x00 and
/// to 0xff; each packet, and three whose lengths lie (TCP Data Offset 15,
/// GRE with checksum, key and sequence, Current Length 248), cut at every
/// length after its IP header, with its IP length telling the truth and
/// lying: the dissector dissects every packet that reaches it and never
/// raises a Lua error.
#[test]
fn tshark_reads_any_changed_or_cut_ifa_packet_without_a_lua_error() {
    let dir = workdir("wireshark-ifa-hostile");
    let (frames, packets) = ifa_fixtures();
    let at = |i: usize, part: &str| packets[i]["offsets"][part].as_u64().unwrap() as usize;
    let mut hostile = Vec::new();
    let mut bases = Vec::new();
    for i in [0, 1, 2, 3, 4, 16, 28, 52] {
        for offset in at(i, "ifa")..at(i, "payload") {
            for value in [0x00, 0xff] {
                let mut frame = frames[i].clone();
                frame[offset] = value;
                hostile.push(frame);
            }
        }
        bases.push((at(i, "ifa"), frames[i].clone()));
    }
    let changed = hostile.len();
    for (i, part, delta, value) in [(1, "l4", 12, 0xf0), (4, "l4", 0, 0xb0), (0, "md", 3, 248)] {
        let mut frame = frames[i].clone();
        frame[at(i, part) + delta] = value;
        bases.push((at(i, "ifa"), frame));
    }
    for (ifa_at, frame) in &bases {
        for len in *ifa_at..frame.len() {
            hostile.push(ifa_cut(frame, len));
            hostile.push(frame[..len].to_vec());
        }
    }
    let pcap = dir.join("hostile.pcap");
    write_pcap(&pcap, &hostile);
    let theirs = tshark_ifa(&pcap, &["frame.protocols"], &[]);
    assert_eq!(theirs.len(), hostile.len());
    // A changed byte leaves the IP header whole: IFA is dissected.
    let dissected = theirs[..changed].iter().filter(|t| t[0].contains(":ifa")).count();
    assert_eq!(dissected, changed, "of {} packets", hostile.len());
}

/// The IP protocol is the preference's (253 by default); scapy's 131 is
/// read only when a preference says so, over IPv4 and IPv6.
#[test]
fn tshark_reads_ifa_on_the_ip_protocol_its_preferences_name() {
    let dir = workdir("wireshark-ifa-protocol");
    let (frames, _) = ifa_fixtures();
    let (mut v4, mut v6) = (frames[0].clone(), frames[2].clone());
    // IPv4's Protocol, IPv6's Next Header.
    v4[23] = 131;
    v6[20] = 131;
    let pcap = dir.join("protocols.pcap");
    write_pcap(&pcap, &[frames[0].clone(), frames[2].clone(), v4, v6]);
    let versions = |options: &[&str]| -> Vec<String> {
        tshark_ifa(&pcap, &["ifa.version"], options).into_iter().map(|t| t[0].clone()).collect()
    };
    assert_eq!(versions(&[]), ["2", "2", "", ""]);
    assert_eq!(versions(&["-o", "ifa.also_131:TRUE"]), ["2", "2", "2", "2"]);
    assert_eq!(versions(&["-o", "ifa.ip_protocol:131"]), ["", "", "2", "2"]);
}
