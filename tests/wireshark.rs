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
