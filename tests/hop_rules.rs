//! The INT 2.1 sink's hop rules on the real binary: three-hop stacks (the
//! source's, then two switches' as a peer's transit would push them)
//! whose middle hop's latency steps up and whose last hop's queue fills.
//! The sink reports exactly what its rules say, and restores every packet.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::hops::*;
use common::*;
use int_core::hop_rule::Sample;

fn sink(dir: &std::path::Path, rules: &str) -> Run {
    let section = format!("    int: {{version: 2.1}}\n    clock: rx-timestamp\n    sink: {rules}\n");
    let collector = Collector::new();
    run_node(dir, &node_config("sink", "hops.pcap", "out.pcap", &section, Some(&collector.addr())))
}

/// Latency classes at 10 and 100 us, a queue class at 1000, a queue alert
/// at 8000 with a quota of 10 a second: each flow is reported for its
/// first packet (latency), when the middle hop slows (hop change), when
/// the last hop's queue fills (hop change); the 27 packets after that see
/// the queue over the alert threshold, and 10 of them are reported (the
/// replay lasts well under a second). The end-to-end latency never moves.
#[test]
fn the_hop_rules_report_what_changed_at_a_hop() {
    let dir = workdir("hop-rules");
    let frames = three_hop_stacks(&dir);
    let rules = "{hops: {latency_ns: [10000, 100000], queue: [1000], queue_alert: 8000, queue_quota: 10}}";
    let run = sink(&dir, rules);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let count = |name| run.counter("sink", name);
    assert_eq!((count("latency_min_ns"), count("latency_max_ns")), (250_000, 250_000), "{}", run.stdout());
    assert_eq!(count("reports_latency"), FLOWS as u64, "{}", run.stdout());
    assert_eq!(count("reports_hop_change"), 2 * FLOWS as u64, "{}", run.stdout());
    let alerts = (PACKETS - FULLER_FROM - FLOWS) as u64;
    assert_eq!(count("reports_queue"), 10);
    assert_eq!(count("reports_queue_quota"), alerts - 10);
    assert_eq!(count("reports_path_change"), 0);
    assert_eq!(count("path_untold"), 0);
    assert_eq!(count("reports_suppressed"), 0);
}

/// Without classes (the default) the same stacks are one path all along:
/// only the first packets are reported; a latency class alone sees the
/// middle hop's step and not the queue.
#[test]
fn each_rule_answers_for_its_own_figure() {
    let dir = workdir("hop-rules-each");
    three_hop_stacks(&dir);
    let run = sink(&dir, "{}");
    let count = |run: &Run, name| run.counter("sink", name);
    assert_eq!(count(&run, "reports_latency"), FLOWS as u64, "{}", run.stdout());
    assert_eq!(count(&run, "reports_hop_change") + count(&run, "reports_queue"), 0);
    let run = sink(&dir, "{hops: {latency_ns: [10000]}}");
    assert_eq!(count(&run, "reports_hop_change"), FLOWS as u64, "{}", run.stdout());
    let run = sink(&dir, "{hops: {queue: [1000]}}");
    assert_eq!(count(&run, "reports_hop_change"), FLOWS as u64, "{}", run.stdout());
}

/// `hops: {sample: 7}`: one packet in 7 of each flow feeds the path rule,
/// one number in each block of 7, drawn for the block and the flow. Each
/// flow's middle switch changes at its 16th packet. A replay cut after
/// each flow's first changed packet reports the flows whose first changed
/// packet the sample takes (every packet read, all of them); cut after
/// the 13th, every flow's change: within 2N-1 packets, the delay
/// config/README.md states.
#[test]
fn a_sampled_path_rule_reports_within_2n_minus_1_packets() {
    let dir = workdir("hop-rules-sampled");
    let frames = path_change_stacks(&dir);
    let stacks = read_pcap(&dir.join("hops.pcap"));
    let sample = Sample::every(7);
    let first_changed = numbered(&stacks[MOVED_FROM..MOVED_FROM + FLOWS]);
    let first_taken = first_changed.iter().filter(|n| n.taken(sample)).count() as u64;
    let cut = |changed: usize| {
        let name = format!("hops-{changed}.pcap");
        write_pcap(&dir.join(&name), stacks.get(..MOVED_FROM + changed * FLOWS).unwrap());
        name
    };
    let run = |pcap: &str, rules: &str| {
        let section = format!("    int: {{version: 2.1}}\n    clock: rx-timestamp\n    sink: {rules}\n");
        let collector = Collector::new();
        run_node(&dir, &node_config("sink", pcap, "out.pcap", &section, Some(&collector.addr())))
    };
    let (first, last) = (cut(1), cut(13));
    let every = run(&first, "{}");
    assert_eq!(every.counter("sink", "reports_path_change"), FLOWS as u64, "{}", every.stdout());
    let sampled = run(&first, "{hops: {sample: 7}}");
    assert_eq!(sampled.counter("sink", "reports_path_change"), first_taken, "{}", sampled.stdout());
    let sampled = run(&last, "{hops: {sample: 7}}");
    assert_eq!(sampled.counter("sink", "reports_path_change"), FLOWS as u64, "{}", sampled.stdout());
    assert_eq!(sampled.counter("sink", "path_untold"), 0);
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), frames.get(..MOVED_FROM + 13 * FLOWS).unwrap());
}

/// Per-packet spraying over two switches: the odd-numbered packets of
/// each flow, or three in four, go through another middle switch than
/// the others. Every packet read, each switch between two packets is a
/// path change. Sampled one in 2 (odd numbers) or one in 4 (three in
/// four), the sample sees both switches and reports each change between
/// the packets it takes, as many as [`path_changes`] counts from
/// [`Sample::takes`]; taking the multiples of N, it saw one switch only
/// and reported none.
#[test]
fn a_sampled_path_rule_sees_sprayed_packets() {
    let odd: fn(u32) -> bool = |n| n % 2 == 1;
    let three_in_four: fn(u32) -> bool = |n| n % 4 != 0;
    let patterns = [("odd", 2, odd), ("three-in-four", 4, three_in_four)];
    for (name, every, sprayed) in patterns {
        let dir = workdir(&format!("hop-rules-sprayed-{name}"));
        let (frames, packets) = sprayed_stacks(&dir, 300, sprayed);
        let all = sink(&dir, "{}");
        let count = |run: &Run, name| run.counter("sink", name);
        assert_eq!(
            count(&all, "reports_path_change"),
            path_changes(&packets, Sample::every(1)),
            "{}",
            all.stdout()
        );
        let sampled = sink(&dir, &format!("{{hops: {{sample: {every}}}}}"));
        let expected = path_changes(&packets, Sample::every(every));
        assert!(expected >= 10, "{name}: {expected}");
        assert_eq!(count(&sampled, "reports_path_change"), expected, "{name}: {}", sampled.stdout());
        assert_eq!(count(&sampled, "reports_suppressed") + count(&sampled, "path_untold"), 0);
        assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    }
}

/// int-node's own transit hop, on the host clock: each packet's hop
/// latency is the time from its burst's arrival at the stage to its TX
/// (its egress time minus its ingress time), foretold from the burst
/// before: 0 in the first burst (32 packets from net_pcap), never after;
/// the queue is all ones: net_pcap does not count its RX queue.
#[test]
fn a_transit_tells_its_hop_latency() {
    let dir = workdir("hop-rules-transit");
    three_hop_stacks(&dir);
    let section = "    int: {version: 2.1}\n";
    let transit = run_node(&dir, &node_config("transit", "int.pcap", "t.pcap", section, None));
    assert_eq!(transit.counter("transit", "pushed"), PACKETS as u64, "{}", transit.stdout());
    let rule = int_core::hop_rule::HopRule::default();
    for (i, frame) in read_pcap(&dir.join("t.pcap")).iter().enumerate() {
        let found = int_core::int21::find(frame, &dscp_domain21()).unwrap().unwrap();
        let int_core::int21::Body::Md(md) = found.block.body() else { panic!("not MD") };
        let hop = md.hops().next().unwrap();
        assert_eq!(hop.node_id, Some(0x0a00_0005));
        let (ingress, egress) = (hop.ingress_timestamp.unwrap(), hop.egress_timestamp.unwrap());
        let latency = u64::from(hop.hop_latency.unwrap());
        assert_eq!(latency, egress - ingress);
        assert!(latency < 10_000_000, "{latency} ns");
        assert!(i < 32 || latency > 0, "packet {i}: {latency} ns");
        assert_eq!(hop.queue, None, "net_pcap does not count its queue");
        assert!(md.hop_digest(&rule).is_ok());
    }
}
