//! An IOAM domain on the real binary over net_pcap vdevs: the
//! encapsulating node traces every IPv6 packet (behind extension headers
//! too) and passes IPv4 as it is, a transit node fills the next slot, the
//! decapsulating node gives back every byte and reports each flow in
//! Telemetry Report 2.0 with the packet and its trace (InType 5); collect
//! reads the trace's nodes as the path and the one-way latency from the
//! oldest slot's timestamp.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::hop_rule::Sample;
use int_core::ioam::sink;
use int_core::ioam::{ipv6, TimestampFormat};
use int_core::report::tr20;

const DOMAIN: &str = "    int: {version: ioam, namespace: 123, nodes: 8, trace_type: [hop_limit_node_id, interfaces, timestamp_seconds, timestamp_fraction, transit_delay]}\n    clock: rx-timestamp\n";
/// What the capture times set between the oldest slot and the sink.
const LATENCY_NS: u64 = 150_000;

/// Sets each traced packet's capture time to its oldest slot's timestamp
/// plus `latency_ns`: the sink's arrival, as the source's is the slot's.
fn retime_after_source(path: &std::path::Path, latency_ns: u64, format: TimestampFormat) {
    let mut last_ns = 0;
    let frames: Vec<(u64, Vec<u8>)> = read_pcap(path)
        .into_iter()
        .map(|frame| {
            if let Some(found) = sink::find(&frame, 123).unwrap() {
                let oldest = found.nodes(&frame).last().unwrap().as_hop(format);
                last_ns = oldest.ingress_timestamp.unwrap() + latency_ns;
            }
            (last_ns, frame)
        })
        .collect();
    write_pcap_at(path, &frames);
}

/// `packets` of 12 flows, IPv4 and IPv6 (`headroom` as
/// [`mixed_traffic_dual`] takes it), written to `dir`'s in.pcap; the
/// frames and how many are IPv6 (the traced ones).
fn traffic_in(dir: &std::path::Path, packets: usize, headroom: usize) -> (Vec<Vec<u8>>, u64) {
    let frames = mixed_traffic_dual(packets, 12, headroom);
    write_pcap(&dir.join("in.pcap"), &frames);
    (frames, (0..packets).filter(|i| is_ipv6_flow(i % 12)).count() as u64)
}

/// The encapsulating node of `domain` over in.pcap into ioam.pcap, every
/// IPv6 packet traced.
fn encapsulate(dir: &std::path::Path, domain: &str, ipv6_packets: u64) -> Run {
    let source = run_node(dir, &node_config("source", "in.pcap", "ioam.pcap", domain, None));
    assert_eq!(source.counter("source", "instrumented"), ipv6_packets, "{}", source.stdout());
    source
}

#[test]
fn source_transit_sink_restores_every_byte_and_reports_the_trace() {
    let dir = workdir("ioam-chain");
    let (frames, ipv6_packets) = traffic_in(&dir, 240, 180);
    let source = encapsulate(&dir, DOMAIN, ipv6_packets);
    assert_eq!(source.counter("source", "not_ipv6"), 240 - ipv6_packets);
    for frame in read_pcap(&dir.join("ioam.pcap")) {
        if int_core::locate::ipv6(&frame).unwrap().is_some() {
            let options = ipv6_options::hop_by_hop(&frame);
            // 8 slots of 5 words: 176 bytes, more than an mbuf's headroom.
            assert!(
                options.windows(2).any(|w| w == [0x31, 10 + 8 * 5 * 4]),
                "the option, 8 slots of 5 words"
            );
        }
    }
    let transit = run_node(&dir, &node_config("transit", "ioam.pcap", "ioam2.pcap", DOMAIN, None));
    assert_eq!(transit.counter("transit", "slots_filled"), ipv6_packets, "{}", transit.stdout());
    assert_eq!(transit.counter("transit", "not_int"), 240 - ipv6_packets);
    retime_after_source(&dir.join("ioam2.pcap"), LATENCY_NS, TimestampFormat::Posix);
    let collector = Collector::new();
    let sink =
        run_node(&dir, &node_config("sink", "ioam2.pcap", "out.pcap", DOMAIN, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "stripped"), ipv6_packets);
    assert_eq!(sink.counter("sink", "not_int"), 240 - ipv6_packets);
    assert_eq!(sink.counter("sink", "latency_max_ns"), LATENCY_NS);
    assert_eq!(sink.counter("sink", "latency_min_ns"), LATENCY_NS);
    let datagrams = collector.reports();
    let mut reports = 0;
    for datagram in &datagrams {
        let report = tr20::Report::parse(datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            assert_eq!(individual.in_type, tr20::InType::Ipv6);
            let (trace, hbh) = sink::trace_in_packet(individual.inner).unwrap();
            assert_eq!(trace.header.namespace, 123);
            let nodes: Vec<_> = ipv6::nodes(hbh, &trace).collect();
            let ids: Vec<_> = nodes.iter().map(|n| n.node_id.unwrap()).collect();
            assert_eq!(
                ids,
                [5, 1],
                "transit then encapsulating node, newest first (low 24 bits of 10.0.0.5, .1)"
            );
            assert_eq!(nodes[0].hop_limit, nodes[1].hop_limit, "neither node routes");
            let sink_ns = individual.int.unwrap().metadata.ingress_timestamp.unwrap();
            let source_ns = nodes[1].as_hop(TimestampFormat::Posix).ingress_timestamp.unwrap();
            assert_eq!(sink_ns - source_ns, LATENCY_NS);
            reports += 1;
        }
    }
    let ipv6_flows = (0..12).filter(|&flow| is_ipv6_flow(flow)).count();
    assert_eq!(reports, ipv6_flows, "one report per IPv6 flow: its latency never changes");
    assert_eq!(reports as u64, sink.counter("sink", "reports_latency"));
    collect_reads_the_path(&datagrams, ipv6_flows);
}

/// A trace of one slot, filled by the encapsulating node: the transit node
/// finds no slot left, sets Overflow and counts it in IOAM's word
/// (`trace_overflow`, not INT's `max_hop_reached`, nor `slots_filled`);
/// the decapsulating node counts the Overflow it finds and still gives
/// back every byte.
#[test]
fn a_full_trace_is_counted_as_overflow_in_ioam_words() {
    let dir = workdir("ioam-overflow");
    let (frames, ipv6_packets) = traffic_in(&dir, 48, 120);
    let one_slot = DOMAIN.replace("nodes: 8,", "nodes: 1,");
    encapsulate(&dir, &one_slot, ipv6_packets);
    let transit = run_node(&dir, &node_config("transit", "ioam.pcap", "ioam2.pcap", &one_slot, None));
    let transit_counts = &transit.stats["pipelines"]["transit"];
    assert_eq!(transit.counter("transit", "trace_overflow"), ipv6_packets, "{transit_counts}");
    for word in ["slots_filled", "pushed", "max_hop_reached"] {
        assert_eq!(transit_counts[word].as_u64().unwrap_or(0), 0, "{word}: {transit_counts}");
    }
    let collector = Collector::new();
    let sink =
        run_node(&dir, &node_config("sink", "ioam2.pcap", "out.pcap", &one_slot, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(sink.counter("sink", "trace_overflow"), ipv6_packets, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "stripped"), ipv6_packets);
    assert_eq!(sink.stats["pipelines"]["sink"]["max_hop_reached"].as_u64().unwrap_or(0), 0);
}

/// Numbered (`sequence: true`): the encapsulating node numbers each IPv6
/// flow's packets from 1 in an Edge-to-Edge option (etherparse finds it in
/// a Destination Options header right before the upper layer); packets
/// lost between the ends are counted by the sink from the numbers and
/// reported by the INT sink's loss rule, `collect` prints each loss, and
/// the packets that arrive come back byte for byte. The domain writes PTP
/// timestamps (ns fractions): `collect --ioam-timestamps ptp` reads the
/// latency right, and each flow's first report's packet number.
#[test]
fn numbered_packets_give_the_loss_between_the_ends() {
    let dir = workdir("ioam-loss");
    let (frames, v6_packets) = traffic_in(&dir, 240, 180);
    let numbered = DOMAIN.replace("nodes: 8,", "nodes: 4, sequence: true, timestamps: ptp,");
    let source = encapsulate(&dir, &numbered, v6_packets);
    let v6_flows: Vec<usize> = (0..12).filter(|&flow| is_ipv6_flow(flow)).collect();
    assert_eq!(source.counter("source", "flows_created"), v6_flows.len() as u64);
    let traced = read_pcap(&dir.join("ioam.pcap"));
    for (i, frame) in traced.iter().enumerate() {
        if is_ipv6_flow(i % 12) {
            let options = ipv6_options::destination_options(frame);
            // Type 0x11, 10 bytes, IOAM-Opt-Type 3; in a header of its own or
            // after the sender's options, 4n from the header's start.
            let at = options.windows(4).position(|w| w == [0x11, 10, 0, 3]).expect("the option");
            assert_eq!((at + 2) % 4, 0, "aligned");
            let option = &options[at..];
            let number = (i / 12 + 1) as u32;
            assert_eq!(option[4..8], [0, 123, 0x40, 0], "namespace 123, E2E-Type bit 1");
            assert_eq!(option[8..12], number.to_be_bytes(), "packet {i}: its flow's number");
        }
    }
    // The first IPv6 flow loses its 5th and 6th packets, the second its 10th.
    let lost = [v6_flows[0] + 12 * 4, v6_flows[0] + 12 * 5, v6_flows[1] + 12 * 9];
    let keep = |i: &usize| !lost.contains(i);
    let survivors: Vec<Vec<u8>> =
        traced.into_iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, f)| f).collect();
    write_pcap(&dir.join("ioam.pcap"), &survivors);
    retime_after_source(&dir.join("ioam.pcap"), LATENCY_NS, TimestampFormat::Ptp);
    let records = v6_flows.len() + 2;
    let (child, listen) = common::collector::start_collector(
        &tools_bin(),
        &["--count", &records.to_string(), "--duration", "30", "--ioam-timestamps", "ptp"],
    );
    let sink = run_node(&dir, &node_config("sink", "ioam.pcap", "out.pcap", &numbered, Some(&listen)));
    let expected: Vec<Vec<u8>> =
        frames.into_iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, f)| f).collect();
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &expected);
    assert_eq!(sink.counter("sink", "lost_packets"), 3, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "no_sequence"), 0);
    assert_eq!(sink.counter("sink", "reports_loss"), 2);
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut losses: Vec<(u64, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "tr20-loss")
        .map(|l| {
            assert_eq!(l["source_node"], 1, "the oldest slot's node: {l}");
            (l["first_flow_seq"].as_u64().unwrap(), l["lost_packets"].as_u64().unwrap())
        })
        .collect();
    losses.sort();
    assert_eq!(losses, [(5, 2), (10, 1)], "{lines:?}");
    let firsts: Vec<_> = lines.iter().filter(|l| l["type"] == "tr20").collect();
    assert_eq!(firsts.len(), v6_flows.len(), "{lines:?}");
    for record in firsts {
        assert_eq!(
            (record["latency_ns"].as_u64(), record["flow_seq"].as_u64()),
            (Some(LATENCY_NS), Some(1)),
            "{record}"
        );
    }
    assert_eq!(sink.counter("sink", "latency_max_ns"), LATENCY_NS, "the node reads ptp too");
}

/// The sink's reports through `collect`: every flow's path is the
/// trace's nodes, oldest first, and its latency the capture times'.
fn collect_reads_the_path(datagrams: &[Vec<u8>], flows: usize) {
    let (child, listen) = common::collector::start_collector(
        &tools_bin(),
        &["--count", &flows.to_string(), "--duration", "30"],
    );
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let records: Vec<_> = lines.iter().filter(|l| l["type"] == "tr20").collect();
    assert_eq!(records.len(), flows, "{lines:?}");
    for record in &records {
        assert_eq!(record["latency_ns"], LATENCY_NS, "{record}");
        assert_eq!(record["hops"], 2);
        assert_eq!(record["source_node"], 1);
        assert_eq!(
            record["path"],
            serde_json::json!([1, 5, 0x0a00_0002]),
            "the trace's nodes, then the sink"
        );
        assert_eq!(record["hop_metadata"][1]["l1_ingress_port"], 7, "{record}");
        assert_eq!(record["hop_metadata"][1]["node_id"], 5, "{record}");
    }
}

/// A packet whose trace lies, at the decapsulating node: counted by
/// reason and, with `malformed: drop`, dropped with a drop report; never
/// a latency report, never forwarded half restored.
#[test]
fn a_lying_trace_is_dropped_and_reported() {
    let dir = workdir("ioam-lies");
    let frames = mixed_traffic_dual(20, 10, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    run_node(&dir, &node_config("source", "in.pcap", "ioam.pcap", DOMAIN, None));
    let mut traced = read_pcap(&dir.join("ioam.pcap"));
    let liars: Vec<usize> =
        (0..traced.len()).filter(|&i| sink::find(&traced[i], 123).unwrap().is_some()).collect();
    for &i in &liars {
        let found = sink::find(&traced[i], 123).unwrap().unwrap();
        // RemainingLen past the data space.
        traced[i][found.hbh + found.trace.option + 7] = 0x7f;
    }
    write_pcap(&dir.join("lies.pcap"), &traced);
    let collector = Collector::new();
    let drop = format!("{DOMAIN}    sink: {{malformed: drop}}\n");
    let sink = run_node(&dir, &node_config("sink", "lies.pcap", "out.pcap", &drop, Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "malformed_int_bad_length"), liars.len() as u64);
    assert_eq!(sink.counter("sink", "malformed_dropped"), liars.len() as u64);
    assert_eq!(sink.counter("sink", "reports_latency"), 0);
    assert_eq!(sink.counter("sink", "reports_drop"), liars.len() as u64);
    let out = read_pcap(&dir.join("out.pcap"));
    let honest: Vec<Vec<u8>> =
        frames.iter().enumerate().filter(|(i, _)| !liars.contains(i)).map(|(_, f)| f.clone()).collect();
    assert_same_frames(&out, &honest);
}

/// `gen --instrument ioam` writes traffic a decapsulating node takes
/// (every IPv6 packet traced, IPv4 plain), and `decode` prints each trace
/// field by field as the node's own parse reads it.
#[test]
fn gen_writes_and_decode_reads_ioam() {
    let dir = workdir("ioam-tools");
    int_tools(
        &dir,
        &[
            "gen",
            "--out",
            "traced.pcap",
            "--packets",
            "40",
            "--flows",
            "4",
            "--proto",
            "mix",
            "--sizes",
            "300",
            "--ipv6",
            "0.5",
            "--instrument",
            "ioam",
        ],
    );
    let traced = read_pcap(&dir.join("traced.pcap"));
    let ipv6: Vec<&Vec<u8>> =
        traced.iter().filter(|f| int_core::locate::ipv6(f).unwrap().is_some()).collect();
    assert_eq!(ipv6.len(), 20);
    let domain = "    int: {version: ioam, namespace: 123}\n";
    let collector = Collector::new();
    let sink =
        run_node(&dir, &node_config("sink", "traced.pcap", "out.pcap", domain, Some(&collector.addr())));
    assert_eq!(sink.counter("sink", "stripped"), 20, "{}", sink.stdout());
    assert_eq!(sink.counter("sink", "not_int"), 20);
    // gen numbers each flow's packets: none lost, none without a number.
    assert_eq!((sink.counter("sink", "lost_packets"), sink.counter("sink", "no_sequence")), (0, 0));
    let decoded = int_tools(&dir, &["decode", "--json", "traced.pcap"]);
    let records: Vec<serde_json::Value> = decoded.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ioam: Vec<_> = records.iter().filter(|r| r["kind"] == "ioam").collect();
    assert_eq!(ioam.len(), 20);
    for (record, frame) in ioam.iter().zip(&ipv6) {
        let found = sink::find(frame, 123).unwrap().unwrap();
        let node = found.nodes(frame).next().unwrap();
        let trace = &record["ioam"];
        assert_eq!(trace["namespace"], 123);
        assert_eq!(trace["slots"], 8);
        assert_eq!(trace["remaining_len"], 7 * 4);
        assert_eq!(
            trace["trace_fields"],
            serde_json::json!([
                "hop_limit_node_id",
                "timestamp_seconds",
                "timestamp_fraction",
                "transit_delay"
            ])
        );
        let element = &trace["nodes"][0];
        assert_eq!(element["node_id"], node.node_id.unwrap());
        assert_eq!(element["hop_limit"], 64);
        assert_eq!(element["timestamp_seconds"], node.timestamp_seconds.unwrap());
        assert_eq!(element["timestamp_fraction"], node.timestamp_fraction.unwrap());
        assert!(element["ingress_if"].is_null(), "a field the trace type leaves out");
        assert_eq!(trace["e2e"]["e2e_type"], "0x4000");
        assert_eq!(trace["e2e"]["sequence"], found.sequence().unwrap());
    }
}

/// The encapsulating node is the domain's edge: IPv6 packets that arrive
/// with a trace and number of the namespace (here made by a node outside
/// it, then a transit with a made-up node 5) are not taken as ours. Under
/// `strip` (the default) the trace and number come out and the packet is
/// traced as any other: the sink reads this node alone, counts no loss
/// and gives back the sender's packets; `drop` drops them; `trust`
/// forwards them as they came (`already_marked`).
#[test]
fn a_trace_from_outside_the_domain_is_stripped_at_its_edge() {
    let dir = workdir("ioam-edge");
    let (frames, ipv6_packets) = traffic_in(&dir, 240, 180);
    let numbered = DOMAIN.replace("nodes: 8,", "nodes: 4, sequence: true,");
    run_node(&dir, &node_config("source", "in.pcap", "outside.pcap", &numbered, None));
    run_node(&dir, &node_config("transit", "outside.pcap", "forged.pcap", &numbered, None));
    let forged = read_pcap(&dir.join("forged.pcap"));
    let edge = run_node(&dir, &node_config("source", "forged.pcap", "edge.pcap", &numbered, None));
    assert_eq!(edge.counter("source", "foreign_int_stripped"), ipv6_packets, "{}", edge.stdout());
    assert_eq!(edge.counter("source", "instrumented"), ipv6_packets);
    assert_eq!(edge.counter("source", "already_marked"), 0);
    let collector = Collector::new();
    let sink =
        run_node(&dir, &node_config("sink", "edge.pcap", "out.pcap", &numbered, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!((sink.counter("sink", "stripped"), sink.counter("sink", "lost_packets")), (ipv6_packets, 0));
    for datagram in collector.reports() {
        for individual in tr20::Report::parse(&datagram).unwrap().reports() {
            let (trace, hbh) = sink::trace_in_packet(individual.unwrap().inner).unwrap();
            let ids: Vec<_> = ipv6::nodes(hbh, &trace).map(|n| n.node_id.unwrap()).collect();
            assert_eq!(ids, [1], "this node alone, not the made-up path");
        }
    }
    for (policy, counter, out) in
        [("drop", "marked_dropped", 240 - ipv6_packets), ("trust", "already_marked", 240)]
    {
        let config = format!("{numbered}    source: {{marked: {policy}}}\n");
        let edge = run_node(&dir, &node_config("source", "forged.pcap", "edge.pcap", &config, None));
        assert_eq!(edge.counter("source", counter), ipv6_packets, "{policy}: {}", edge.stdout());
        let sent = read_pcap(&dir.join("edge.pcap"));
        assert_eq!(sent.len() as u64, out, "{policy}");
        let kept: Vec<Vec<u8>> =
            forged.iter().filter(|f| policy == "trust" || !is_traced(f)).cloned().collect();
        assert_same_frames(&sent, &kept);
    }
}

/// [`DOMAIN`] with 4 slots (room for the number in every frame), numbered.
fn numbered_domain() -> String {
    DOMAIN.replace("nodes: 8,", "nodes: 4, sequence: true,")
}

/// In [`numbered_through`], from each flow's 16th packet (index 15) on
/// the transit's slot is another node's.
const MOVED_FROM: usize = 15;

/// A traced packet as the hop rule's sample sees it.
struct Traced {
    /// Its index in the capture.
    at: usize,
    number: u64,
    flow: int_core::flow::FlowKey,
}

impl Traced {
    fn taken(&self, sample: Sample) -> bool {
        sample.takes(Some(self.number as u32), self.flow.phase())
    }
}

/// `packets` of 12 flows (IPv4 and IPv6), the IPv6 ones numbered by the
/// encapsulating node; each trace's next slot then filled as a transit
/// node fills it, with node id `transit(k, n)` for its flow's `k`th
/// packet (from 0), numbered `n`. Writes `dir`'s hops.pcap (not yet
/// retimed); returns the frames sent in and the traced packets.
fn numbered_through(
    dir: &std::path::Path,
    packets: usize,
    transit: impl Fn(usize, u64) -> u32,
) -> (Vec<Vec<u8>>, Vec<Traced>) {
    let (frames, ipv6_packets) = traffic_in(dir, packets, 180);
    encapsulate(dir, &numbered_domain(), ipv6_packets);
    let mut numbers = Vec::new();
    let mut traced = read_pcap(&dir.join("ioam.pcap"));
    for (i, frame) in traced.iter_mut().enumerate() {
        if let Some(found) = sink::find(frame, 123).unwrap() {
            let number = found.sequence().unwrap();
            numbers.push(Traced { at: i, number, flow: found.flow(frame) });
            let node_id = Some(transit(i / 12, number));
            let node = int_core::ioam::node::NodeData { node_id, ..Default::default() };
            let len = frame.len();
            let mut view = int_core::FrameBuf::new(frame, 0, len).unwrap();
            let pushed = int_core::ioam::transit::push(&mut view, 123, &node).unwrap();
            assert_eq!(pushed, int_core::ioam::transit::Transited::Filled);
        }
    }
    write_pcap(&dir.join("hops.pcap"), &traced);
    (frames, numbers)
}

/// The decapsulating node honours `sink.hops.sample` as the INT 2.1 sink
/// does: with `sample: 7` one packet in 7 of each flow (one Edge-to-Edge
/// number in each block of 7, drawn for the block and the flow) feeds the
/// path rule. Each flow's transit node changes at its 16th packet. A
/// replay cut after each flow's first changed packet reports the flows
/// whose first changed packet the sample takes (every packet read, all of
/// them); cut after the 13th, every flow's change: within 2N-1 packets.
/// Flows with the sender's own extension headers take the general path,
/// the others the fast one.
#[test]
fn a_sampled_path_rule_reports_within_2n_minus_1_packets_over_ioam() {
    let dir = workdir("ioam-hops-sampled");
    let moved = |k, _| if k < MOVED_FROM { 5 } else { 7 };
    let (frames, packets) = numbered_through(&dir, 12 * (MOVED_FROM + 13), moved);
    let v6_flows = (0..12).filter(|&flow| is_ipv6_flow(flow)).count() as u64;
    let first_changed = packets.iter().filter(|p| p.at / 12 == MOVED_FROM);
    let first_taken = first_changed.filter(|p| p.taken(Sample::every(7))).count() as u64;
    let traced = read_pcap(&dir.join("hops.pcap"));
    let cut = |changed: usize| {
        let name = format!("hops-{changed}.pcap");
        write_pcap(&dir.join(&name), &traced[..12 * (MOVED_FROM + changed)]);
        retime_after_source(&dir.join(&name), LATENCY_NS, TimestampFormat::Posix);
        name
    };
    let run = |pcap: &str, rules: &str| {
        let section = format!("{}    sink: {rules}\n", numbered_domain());
        let collector = Collector::new();
        run_node(&dir, &node_config("sink", pcap, "out.pcap", &section, Some(&collector.addr())))
    };
    let (first, last) = (cut(1), cut(13));
    let every = run(&first, "{}");
    assert_eq!(every.counter("sink", "reports_path_change"), v6_flows, "{}", every.stdout());
    let sampled = run(&first, "{hops: {sample: 7}}");
    assert_eq!(sampled.counter("sink", "reports_path_change"), first_taken, "{}", sampled.stdout());
    let sampled = run(&last, "{hops: {sample: 7}}");
    assert_eq!(sampled.counter("sink", "reports_path_change"), v6_flows, "{}", sampled.stdout());
    assert_eq!(sampled.counter("sink", "path_untold"), 0);
    assert_eq!(sampled.counter("sink", "reports_latency"), v6_flows, "the latency never changes");
    assert_eq!(sampled.counter("sink", "latency_max_ns"), LATENCY_NS);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

/// Per-packet spraying over two transit nodes: each flow's odd-numbered
/// packets go through node 7, the others through node 5. Sampled one in
/// 2, the decapsulating node sees both and reports each change between
/// the packets it takes (taking the even numbers only, it reported none).
#[test]
fn a_sampled_path_rule_sees_sprayed_packets_over_ioam() {
    let dir = workdir("ioam-hops-sprayed");
    let (frames, packets) = numbered_through(&dir, 12 * 60, |_, n| if n % 2 == 1 { 7 } else { 5 });
    retime_after_source(&dir.join("hops.pcap"), LATENCY_NS, TimestampFormat::Posix);
    let mut last = std::collections::HashMap::new();
    let changes = packets
        .iter()
        .filter(|p| p.taken(Sample::every(2)))
        .filter(|p| last.insert(p.flow, p.number % 2).is_some_and(|before| before != p.number % 2))
        .count() as u64;
    assert!(changes >= 10, "{changes}");
    let section = format!("{}    sink: {{hops: {{sample: 2}}}}\n", numbered_domain());
    let collector = Collector::new();
    let run =
        run_node(&dir, &node_config("sink", "hops.pcap", "out.pcap", &section, Some(&collector.addr())));
    assert_eq!(run.counter("sink", "reports_path_change"), changes, "{}", run.stdout());
    assert_eq!(run.counter("sink", "reports_suppressed") + run.counter("sink", "path_untold"), 0);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

/// A packet the sample passes over reads no slot: the transit node writes
/// the encapsulating node's id again, so every trace the hop rule reads is
/// untold (a node twice) and counted `path_untold`. With `sample: 7` only
/// the packets the sample takes are counted; with no rule on
/// (`path_changes: false`) none are.
#[test]
fn a_sampled_out_trace_is_not_read() {
    let dir = workdir("ioam-hops-unread");
    let (frames, numbers) = numbered_through(&dir, 12 * 30, |_, _| 1);
    retime_after_source(&dir.join("hops.pcap"), LATENCY_NS, TimestampFormat::Posix);
    let read = numbers.iter().filter(|p| p.taken(Sample::every(7))).count() as u64;
    assert!(read > 0 && read < numbers.len() as u64 / 5, "{read} of {}", numbers.len());
    let run = |rules: &str| {
        let section = format!("{}    sink: {rules}\n", numbered_domain());
        let collector = Collector::new();
        run_node(&dir, &node_config("sink", "hops.pcap", "out.pcap", &section, Some(&collector.addr())))
    };
    let sampled = run("{hops: {sample: 7}}");
    assert_eq!(sampled.counter("sink", "stripped"), numbers.len() as u64, "{}", sampled.stdout());
    assert_eq!(sampled.counter("sink", "path_untold"), read, "{}", sampled.stdout());
    let off = run("{path_changes: false}");
    assert_eq!(off.counter("sink", "path_untold"), 0, "{}", off.stdout());
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
}

fn is_traced(frame: &[u8]) -> bool {
    sink::find(frame, 123).unwrap().is_some()
}
