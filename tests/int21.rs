//! An INT 2.1 domain on the real binary over net_pcap vdevs: source ->
//! transit -> sink restores every byte of IPv4 and IPv6 traffic (some of
//! it behind extension headers), in the DSCP and the UDP port marking, and the sink's Telemetry Report 2.0 latency reports carry the
//! whole stack and the one-way latency the capture times set, coalesced
//! into shared datagrams; packets lost on the way are counted from the
//! source-only packet numbers and reported as losses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::int21::{self, Body, Marking};
use int_core::report::tr20;

fn chain(name: &str, int_section: &str, domain: int21::Domain) {
    let dir = workdir(name);
    let frames = mixed_traffic_dual(240, 12, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let clocked = format!("{int_section}    clock: rx-timestamp\n");
    let source = run_node(&dir, &node_config("source", "in.pcap", "int.pcap", &clocked, None));
    assert_eq!(source.counter("source", "instrumented"), 240, "{}", source.stdout());
    let transit = run_node(&dir, &node_config("transit", "int.pcap", "int2.pcap", &clocked, None));
    assert_eq!(transit.counter("transit", "pushed"), 240, "{}", transit.stdout());
    retime_after_source21(&dir.join("int2.pcap"), &domain, 150_000);
    let collector = Collector::new();
    let sink =
        run_node(&dir, &node_config("sink", "int2.pcap", "out.pcap", &clocked, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "stripped"), 240);
    assert_eq!(sink.counter("sink", "flows_created"), 12);
    let datagrams = collector.reports();
    assert_eq!(datagrams.len() as u64, sink.counter("sink", "report_datagrams"));
    let mut individuals = Vec::new();
    for (i, datagram) in datagrams.iter().enumerate() {
        let report = tr20::Report::parse(datagram).unwrap();
        assert_eq!(report.group.node_id, 0x0a00_0002);
        assert_eq!(report.group.sequence, i as u32 + 1, "the exporter numbers TR 2.0 datagrams from 1");
        let parsed: Vec<_> = report.reports().collect::<Result<_, _>>().unwrap();
        individuals.extend(parsed.into_iter().map(|r| (r.in_type, r.int.unwrap(), r.inner.to_vec())));
    }
    assert_eq!(individuals.len() as u64, sink.counter("sink", "reports_latency"));
    assert_eq!(individuals.len(), 12, "one report per flow: the latency never changes");
    assert!(datagrams.len() < individuals.len(), "reports of a burst share a datagram: {}", datagrams.len());
    let mut ipv6 = 0;
    for (in_type, int, inner) in &individuals {
        let sink_ns = int.metadata.ingress_timestamp.unwrap();
        let found = int21::find_in_report(inner, &domain).unwrap();
        let flow = found.as_ref().map(|(_, flow)| *flow).unwrap();
        match in_type {
            tr20::InType::Ipv4 => assert!(flow.src.is_ipv4()),
            tr20::InType::Ipv6 => {
                assert!(flow.src.is_ipv6(), "{flow}");
                ipv6 += 1;
            }
            other => panic!("InType {other:?}"),
        }
        let (hops, sequence): (Vec<_>, _) = match found.map(|(block, _)| block) {
            Some(Body::Md(md)) => (md.hops().collect(), domain.source_only.sequence_of(&md)),
            other => panic!("no INT-MD block in the report's packet: {other:?}"),
        };
        assert_eq!(hops.iter().map(|h| h.node_id.unwrap()).collect::<Vec<_>>(), [0x0a00_0005, 0x0a00_0001]);
        assert_eq!(sink_ns - hops[1].ingress_timestamp.unwrap(), 150_000, "one-way latency");
        assert_eq!(sequence, Some(1), "a flow's first packet is its first report");
    }
    assert_eq!(ipv6, (0..12).filter(|&flow| is_ipv6_flow(flow)).count(), "IPv6 flows: InType 5");
    assert_eq!(sink.counter("sink", "lost_packets"), 0);
    assert_eq!(sink.counter("sink", "no_sequence"), 0);
}

#[test]
fn dscp_marked_domain_restores_every_byte_and_reports_latency() {
    chain("int21-dscp", "    int: {version: 2.1}\n", dscp_domain21());
}

#[test]
fn udp_port_marked_domain_restores_every_byte_and_reports_latency() {
    let domain = int21::Domain {
        marking: Marking::UdpPort(7777),
        tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
        source_only: int_core::int21::SourceOnly::sequence(0x4944),
    };
    chain("int21-port", "    int: {version: 2.1, udp_port: 7777}\n", domain);
}

/// `int-tools collect` reads an INT 2.1 sink's Telemetry Report 2.0
/// reports: each flow's one-way latency from the report's timestamp and the
/// stack inside, in its records and its summary.
#[test]
fn collect_reads_the_latency_of_int21_reports() {
    let dir = workdir("int21-collect");
    let domain = dscp_domain21();
    write_pcap(&dir.join("in.pcap"), &mixed_traffic(60, 6, 120));
    let clocked = "    int: {version: 2.1}\n    clock: rx-timestamp\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", clocked, None));
    retime_after_source21(&dir.join("int.pcap"), &domain, 250_000);
    let (child, listen) =
        common::collector::start_collector(&tools_bin(), &["--count", "6", "--duration", "30"]);
    run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", clocked, Some(&listen)));
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let records: Vec<_> = lines.iter().filter(|l| l["type"] == "tr20").collect();
    assert_eq!(records.len(), 6, "{lines:?}");
    for record in &records {
        assert_eq!(record["latency_ns"], 250_000, "{record}");
        assert_eq!(record["hops"], 1);
        assert_eq!(record["source_node"], 0x0a00_0001);
    }
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["lost_reports"], 0, "{summary}");
    let flows = summary["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 6);
    assert!(
        flows.iter().all(|f| f["latency_min_ns"] == 250_000 && f["latency_max_ns"] == 250_000),
        "{flows:?}"
    );
}

/// An INT-MX domain: the source inserts the MX header, and the source, a
/// transit hop and the sink each send a Telemetry Report 2.0 report for
/// every packet with the metadata the bitmap asks for that they have;
/// nothing is pushed, and the sink restores every byte.
#[test]
fn mx_domain_reports_from_every_node() {
    let dir = workdir("int21-mx");
    let frames = mixed_traffic_dual(40, 4, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let section = "    int: {version: 2.1}\n";
    let source_section = format!(
        "{section}    source: {{mode: mx, instructions: [node_id, queue_occupancy, ingress_timestamp]}}\n"
    );
    let collector = Collector::new();
    let source = run_node(
        &dir,
        &node_config("source", "in.pcap", "int.pcap", &source_section, Some(&collector.addr())),
    );
    assert_eq!(source.counter("source", "instrumented"), 40);
    let transit =
        run_node(&dir, &node_config("transit", "int.pcap", "int2.pcap", section, Some(&collector.addr())));
    assert_eq!(transit.counter("transit", "mx_passed"), 40);
    let sink =
        run_node(&dir, &node_config("sink", "int2.pcap", "out.pcap", section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let datagrams = collector.reports();
    let mut by_node = std::collections::BTreeMap::new();
    let mut ipv6 = 0;
    for datagram in &datagrams {
        let report = tr20::Report::parse(datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            let int = individual.int.unwrap();
            // Node id in the group header, queue occupancy unknown here:
            // only the ingress timestamp of the bitmap is reported.
            assert_eq!(int.rep_md_bits, 0x0800, "{:#06x}", int.rep_md_bits);
            assert!(int.metadata.ingress_timestamp.is_some());
            let in_type = if individual.inner[0] >> 4 == 6 { tr20::InType::Ipv6 } else { tr20::InType::Ipv4 };
            assert_eq!(individual.in_type, in_type);
            ipv6 += usize::from(in_type == tr20::InType::Ipv6);
            let block =
                int21::find_in_report(individual.inner, &dscp_domain21()).unwrap().map(|(block, _)| block);
            assert!(matches!(block, Some(Body::Mx { .. })), "{block:?}");
            *by_node.entry(report.group.node_id).or_insert(0) += 1;
        }
    }
    let datagrams_sent: u64 = [(&source, "source"), (&transit, "transit"), (&sink, "sink")]
        .iter()
        .map(|(r, n)| r.counter(n, "report_datagrams"))
        .sum();
    assert_eq!(datagrams.len() as u64, datagrams_sent);
    assert_eq!(
        by_node.into_iter().collect::<Vec<_>>(),
        [(0x0a00_0001, 40), (0x0a00_0002, 40), (0x0a00_0005, 40)]
    );
    assert_eq!(ipv6, 3 * 20, "the IPv6 flows' packets, reported by each of three nodes");
    assert_eq!(sink.counter("sink", "stripped"), 40);
    for run in [(&source, "source"), (&transit, "transit"), (&sink, "sink")] {
        assert_eq!(run.0.counter(run.1, "reports_mx"), 40, "{}", run.1);
    }
}

/// Packets lost between source and sink, of an IPv4 and an IPv6 flow: the
/// sink counts them from the source-only packet numbers and reports them by
/// int-node's TR 2.0 loss rule (the IPv6 flow named by its full addresses,
/// which the flow table keeps beside its slots); `collect` prints each loss
/// record and the flows' totals.
#[test]
fn losses_are_counted_from_packet_numbers_and_reported() {
    let dir = workdir("int21-loss");
    let domain = dscp_domain21();
    let frames = mixed_traffic_dual(240, 12, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let clocked = "    int: {version: 2.1}\n    clock: rx-timestamp\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", clocked, None));
    // Flow 3 (IPv6) loses its 5th and 6th packets, flow 7 (IPv4) its 10th.
    assert!(is_ipv6_flow(3) && !is_ipv6_flow(7));
    let lost = [3 + 12 * 4, 3 + 12 * 5, 7 + 12 * 9];
    let keep = |i: &usize| !lost.contains(i);
    let instrumented = read_pcap(&dir.join("int.pcap"));
    let survivors: Vec<Vec<u8>> =
        instrumented.into_iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, f)| f).collect();
    write_pcap(&dir.join("int.pcap"), &survivors);
    retime_after_source21(&dir.join("int.pcap"), &domain, 250_000);
    let (child, listen) =
        common::collector::start_collector(&tools_bin(), &["--count", "14", "--duration", "30"]);
    let sink = run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", clocked, Some(&listen)));
    let expected: Vec<Vec<u8>> =
        frames.into_iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, f)| f).collect();
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &expected);
    assert_eq!(sink.counter("sink", "lost_packets"), 3, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "reports_loss"), 2);
    assert_eq!(sink.counter("sink", "reports_latency"), 12);
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut losses: Vec<(String, u64, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "tr20-loss")
        .map(|l| {
            assert_eq!(l["source_node"], 0x0a00_0001, "{l}");
            let src = l["flow"]["src"].as_str().unwrap().to_string();
            (src, l["first_flow_seq"].as_u64().unwrap(), l["lost_packets"].as_u64().unwrap())
        })
        .collect();
    losses.sort();
    assert_eq!(losses, [("10.0.0.8".to_string(), 10, 1), ("2001:db8::a00:4".to_string(), 5, 2)], "{lines:?}");
    let summary = &lines.last().unwrap()["summary"];
    let lost: u64 =
        summary["flows"].as_array().unwrap().iter().map(|f| f["lost_packets"].as_u64().unwrap()).sum();
    assert_eq!(lost, 3, "{summary}");
}

/// Probes and lying blocks at a 2.1 sink: a source that sets D makes every
/// packet a probe, which the sink reports (D, drop reason 202) and
/// discards; a block whose shim Length lies is dropped under `malformed:
/// drop` and reported with the packet's first bytes from its Ethernet header
/// (InType 3, D, drop reason 200).
#[test]
fn probes_and_lying_blocks_are_dropped_and_reported() {
    let dir = workdir("int21-drops");
    let frames = mixed_traffic(24, 4, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let probes = "    int: {version: 2.1}\n    source: {discard: true}\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", probes, None));
    let mut instrumented = read_pcap(&dir.join("int.pcap"));
    let lying = 5;
    let block_at =
        int21::sink::extract(&instrumented[lying], &dscp_domain21(), &int_core::hop_rule::HopRule::default())
            .unwrap()
            .unwrap()
            .block_at;
    instrumented[lying][block_at + 1] = 2; // shorter than the MD header
    write_pcap(&dir.join("int.pcap"), &instrumented);
    let collector = Collector::new();
    let sink_section = "    int: {version: 2.1}\n    sink: {malformed: drop}\n";
    let sink =
        run_node(&dir, &node_config("sink", "int.pcap", "out.pcap", sink_section, Some(&collector.addr())));
    assert!(read_pcap(&dir.join("out.pcap")).is_empty(), "probes and the lying packet go no further");
    assert_eq!((sink.counter("sink", "discarded"), sink.counter("sink", "malformed_dropped")), (23, 1));
    assert_eq!((sink.counter("sink", "reports_latency"), sink.counter("sink", "reports_drop")), (23, 1));
    assert_eq!(sink.counter("sink", "reports_loss"), 1);
    let mut reasons = std::collections::BTreeMap::new();
    for datagram in collector.reports() {
        let report = tr20::Report::parse(&datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            // The dropped packet is a hole in its flow's numbers too.
            if let Some(loss) = int_core::report::tr20_loss::LossReport::parse(&individual, 0x4944) {
                assert_eq!((loss.first_sequence, loss.count), (2, 1));
                continue;
            }
            let int = individual.int.unwrap();
            assert!(individual.flags.dropped);
            assert_eq!(int.rep_md_bits & 0x0001, 1, "bit 15: queue and drop reason");
            let reason = int.drop.unwrap().reason;
            *reasons.entry(reason).or_insert(0) += 1;
            match reason {
                tr20::DROP_DISCARD_ASKED => assert_eq!(individual.in_type, tr20::InType::Ipv4),
                tr20::DROP_INT_MALFORMED => {
                    assert_eq!(individual.in_type, tr20::InType::Ethernet);
                    let cut = instrumented[lying].len().min(128);
                    assert_eq!(individual.inner[..cut], instrumented[lying][..cut]);
                }
                other => panic!("drop reason {other}"),
            }
        }
    }
    assert_eq!(reasons.into_iter().collect::<Vec<_>>(), [(200, 1), (202, 23)]);
}

/// INT 2.1 in VXLAN-GPE and Geneve tunnels through the real binary: a
/// transit hop pushes its metadata inside the tunnel (and reports INT-MX
/// packets), the sink takes the INT data out and gives back the tunnel
/// packet as it was before INT, byte for byte (plain VXLAN where the shim
/// says G), and reports each tunnel's latency in TR 2.0 with the stack read
/// from inside the tunnel.
#[test]
fn tunnels_through_transit_and_sink() {
    let dir = workdir("int21-tunnels");
    let (mut int, mut plain) = (Vec::new(), Vec::new());
    for i in 0..36 {
        let (kind, ipv6, mx) = ((i % 3) as u8, i % 2 == 1, i % 6 == 5);
        let (with_int, without) = tunnel_packet(kind, ipv6, mx, 1_700_000_000_000_000_000, 60 + i * 20);
        int.push(with_int);
        plain.push(without);
    }
    write_pcap(&dir.join("in.pcap"), &int);
    let clocked = "    int: {version: 2.1}\n    clock: rx-timestamp\n";
    let collector = Collector::new();
    let transit =
        run_node(&dir, &node_config("transit", "in.pcap", "t.pcap", clocked, Some(&collector.addr())));
    assert_eq!(transit.counter("transit", "pushed"), 30, "{}", transit.stdout());
    assert_eq!(transit.counter("transit", "mx_passed"), 6);
    assert_eq!(transit.counter("transit", "reports_mx"), 6);
    let domain = dscp_domain21();
    retime_after_source21(&dir.join("t.pcap"), &domain, 150_000);
    let sink = run_node(&dir, &node_config("sink", "t.pcap", "out.pcap", clocked, Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "stripped"), 36, "{}", sink.stdout());
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &plain);
    let (mut reported, mut mx) = (0, 0);
    for datagram in collector.reports() {
        for individual in tr20::Report::parse(&datagram).unwrap().reports() {
            let individual = individual.unwrap();
            let (body, flow) = int21::find_in_report(individual.inner, &domain).unwrap().unwrap();
            assert_eq!(flow.src_port, 49152, "the tunnel's flow");
            let Body::Md(md) = body else {
                mx += 1;
                continue;
            };
            let hops: Vec<_> = md.hops().collect();
            assert_eq!(hops.iter().map(|h| h.node_id.unwrap()).collect::<Vec<_>>(), [0x0a00_0005, 1]);
            let sink_ns = individual.int.unwrap().metadata.ingress_timestamp.unwrap();
            assert_eq!(sink_ns - hops[1].ingress_timestamp.unwrap(), 150_000, "one-way latency");
            reported += 1;
        }
    }
    // Four tunnel flows; the IPv6 Geneve one carries INT-MX only.
    assert!(reported >= 3, "a latency report per INT-MD tunnel flow: {reported}");
    assert_eq!(mx, 12, "INT-MX packets reported by transit and sink");
}

/// A source that sees the tunnel puts INT into it: VXLAN (made VXLAN-GPE,
/// G set), VXLAN-GPE and Geneve packets over IPv4 and IPv6 go through
/// source, transit and sink of an INT 2.1 domain and come out as they went
/// in, byte for byte, with the source's packet numbers tracked at the sink.
#[test]
fn tunnels_from_source_to_sink() {
    let dir = workdir("int21-tunnel-source");
    let plain: Vec<Vec<u8>> =
        (0..48).map(|i| tunnel_packet((i % 3) as u8, i % 2 == 1, false, 0, 40 + i * 25).1).collect();
    write_pcap(&dir.join("in.pcap"), &plain);
    let section = "    int: {version: 2.1}\n";
    let source = run_node(&dir, &node_config("source", "in.pcap", "s.pcap", section, None));
    assert_eq!(source.counter("source", "instrumented_in_tunnel"), 48, "{}", source.stdout());
    let transit = run_node(&dir, &node_config("transit", "s.pcap", "t.pcap", section, None));
    assert_eq!(transit.counter("transit", "pushed"), 48);
    let collector = Collector::new();
    let sink = run_node(&dir, &node_config("sink", "t.pcap", "out.pcap", section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &plain);
    assert_eq!(sink.counter("sink", "stripped"), 48);
    assert_eq!(sink.counter("sink", "lost_packets"), 0);
    assert_eq!(sink.counter("sink", "no_sequence"), 0, "every packet numbered by the source");
    // Four tunnel flows: VXLAN-GPE and Geneve over two IP versions (the
    // VXLAN packets, made VXLAN-GPE, share the VXLAN-GPE tunnel's 5-tuple).
    assert_eq!(sink.counter("sink", "flows_created"), 4);
    // The same packets instrumented outside the tunnel instead.
    let outer = format!("{section}    source: {{tunnels: outer}}\n");
    let source = run_node(&dir, &node_config("source", "in.pcap", "o.pcap", &outer, None));
    assert_eq!(source.counter("source", "instrumented"), 48);
    assert_eq!(source.counter("source", "instrumented_in_tunnel"), 0);
    run_node(&dir, &node_config("sink", "o.pcap", "out2.pcap", section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out2.pcap")), &plain);
}

/// The path rule: source -> transit -> sink, and from the middle of the
/// run one flow's packets cross another transit node (10.0.0.6 in place of
/// 10.0.0.5). The sink reports that flow once for its new path (the
/// others' paths never change); the collector shows the one change, old
/// and new path. With `path_changes: false` nothing is reported for it.
#[test]
fn a_path_change_is_reported_once_per_flow() {
    let dir = workdir("int21-path");
    let flows = 3;
    let frames = mixed_traffic(60, flows, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let int21 = "    int: {version: 2.1}\n    clock: rx-timestamp\n";
    run_node(&dir, &node_config("source", "in.pcap", "int.pcap", int21, None));
    run_node(&dir, &node_config("transit", "int.pcap", "a.pcap", int21, None));
    let other = node_config("transit", "int.pcap", "b.pcap", int21, None).replace("10.0.0.5", "10.0.0.6");
    run_node(&dir, &other);
    // Flow 0's packets of the second half come through the other node.
    let moved = |i: usize| i.is_multiple_of(flows) && i >= 30;
    let (a, b) = (read_pcap(&dir.join("a.pcap")), read_pcap(&dir.join("b.pcap")));
    let mixed: Vec<Vec<u8>> =
        a.into_iter().zip(b).enumerate().map(|(i, (a, b))| if moved(i) { b } else { a }).collect();
    write_pcap(&dir.join("mixed.pcap"), &mixed);
    retime_after_source21(&dir.join("mixed.pcap"), &dscp_domain21(), 250_000);
    let sink_section = int21;
    let (child, listen) =
        common::collector::start_collector(&tools_bin(), &["--count", "4", "--duration", "30"]);
    let sink = run_node(&dir, &node_config("sink", "mixed.pcap", "out.pcap", sink_section, Some(&listen)));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "reports_path_change"), 1, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "reports_latency"), flows as u64, "each flow's first packet");
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let changes: Vec<_> = lines.iter().filter(|l| l["type"] == "path-change").collect();
    assert_eq!(changes.len(), 1, "{lines:?}");
    let node = |last: u32| 0x0a00_0000u32 + last;
    assert_eq!(changes[0]["old_path"], serde_json::json!([node(1), node(5), node(2)]));
    assert_eq!(changes[0]["new_path"], serde_json::json!([node(1), node(6), node(2)]));

    let off = "    int: {version: 2.1}\n    clock: rx-timestamp\n    sink: {path_changes: false}\n";
    let collector = Collector::new();
    let sink = run_node(&dir, &node_config("sink", "mixed.pcap", "out.pcap", off, Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "reports_path_change"), 0);
    assert_eq!(sink.counter("sink", "reports_latency"), flows as u64);
}
