//! INT-XD on the real binary: a postcard node forwards every packet byte
//! for byte and sends exactly the postcards its report rule says, each a
//! Telemetry Report 2.0 report whose packet is the original's headers (read
//! back with etherparse, not with our parser).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::collector::link_counts;
use common::*;
use int_core::report::tr20::{self, InType, RepType};

const FLOWS: usize = 10;
const PACKETS: usize = 400;

/// A postcard's flow as etherparse reads its (cut) packet: source and
/// destination address and port.
fn flow_of(inner: &[u8]) -> (String, String, u16, u16) {
    let packet = etherparse::LaxSlicedPacket::from_ip(inner).unwrap();
    let (src, dst) = match packet.net.unwrap() {
        etherparse::LaxNetSlice::Ipv4(ip) => {
            (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
        }
        etherparse::LaxNetSlice::Ipv6(ip) => {
            (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
        }
        other => panic!("{other:?}"),
    };
    let (sport, dport) = match packet.transport.unwrap() {
        etherparse::TransportSlice::Udp(udp) => (udp.source_port(), udp.destination_port()),
        etherparse::TransportSlice::Tcp(tcp) => (tcp.source_port(), tcp.destination_port()),
        other => panic!("{other:?}"),
    };
    (src, dst, sport, dport)
}

/// A postcard as the collector got it: the node, the packet's bytes, the
/// RepMdBits.
type Card = (u32, Vec<u8>, u16);

/// Runs a postcard node with `settings` over the mixed dual-stack traffic;
/// returns the frames, the run and every postcard.
fn postcard_run(test: &str, settings: &str) -> (Vec<Vec<u8>>, Run, Vec<Card>) {
    let dir = workdir(test);
    let frames = mixed_traffic_dual(PACKETS, FLOWS, 0);
    write_pcap(&dir.join("in.pcap"), &frames);
    let collector = Collector::new();
    let section = format!("    int: {{version: 2.1}}\n    postcard: {settings}\n");
    let run =
        run_node(&dir, &node_config("postcard", "in.pcap", "out.pcap", &section, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    let mut postcards = Vec::new();
    for datagram in collector.reports() {
        let report = tr20::Report::parse(&datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            assert_eq!(individual.rep_type, RepType::Int);
            let v6 = individual.inner[0] >> 4 == 6;
            assert_eq!(individual.in_type, if v6 { InType::Ipv6 } else { InType::Ipv4 });
            let int = individual.int.unwrap();
            postcards.push((report.group.node_id, individual.inner.to_vec(), int.rep_md_bits));
        }
    }
    (frames, run, postcards)
}

/// Every 8th packet of each flow, from its first: 5 of each flow's 40,
/// each carrying that very packet's headers and first 16 payload bytes,
/// and the metadata the default instructions ask for that this node has.
#[test]
fn every_eighth_packet_gets_a_postcard_and_every_packet_passes() {
    let (frames, run, postcards) = postcard_run("postcards-every", "{report: every, every: 8}");
    assert_eq!(run.counter("postcard", "tx_packets"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "watched"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "reports_xd"), 50);
    assert_eq!(run.counter("postcard", "postcards_not_due"), (PACKETS - 50) as u64);
    assert_eq!(postcards.len(), 50);
    let mut by_flow: BTreeMap<_, Vec<&Vec<u8>>> = BTreeMap::new();
    for (node, inner, bits) in &postcards {
        assert_eq!(*node, 0x0a00_0002);
        // Level 1 ports, ingress and egress timestamps (the node id rides
        // in the group header).
        assert_eq!(*bits, 0x4c00, "{bits:#06x}");
        by_flow.entry(flow_of(inner)).or_default().push(inner);
    }
    assert_eq!(by_flow.len(), FLOWS);
    for cards in by_flow.values() {
        assert_eq!(cards.len(), 5);
    }
    // The k-th postcard of flow f is of packet f + FLOWS * 8k.
    for (i, (_, inner, _)) in postcards.iter().enumerate() {
        let flow = flow_of(inner);
        let k = postcards[..i].iter().filter(|(_, other, _)| flow_of(other) == flow).count();
        let frame = frames
            .iter()
            .skip_while(|frame| flow_of(ip_of(frame)) != flow)
            .step_by(FLOWS * 8)
            .nth(k)
            .unwrap();
        let ip = ip_of(frame);
        let payload = etherparse::LaxSlicedPacket::from_ip(ip).unwrap().transport.map(|t| match t {
            etherparse::TransportSlice::Udp(udp) => udp.payload().len(),
            etherparse::TransportSlice::Tcp(tcp) => tcp.payload().len(),
            _ => 0,
        });
        // The headers and 16 payload bytes at most, padded to a 4-byte
        // multiple (TR 2.0 counts report lengths in words).
        let cut = ip.len() - payload.unwrap().saturating_sub(16);
        assert_eq!(inner.len(), cut.next_multiple_of(4), "postcard {i}");
        assert_eq!(inner[..cut], ip[..cut], "postcard {i} (flow {flow:?}) is its packet's first bytes");
        assert!(inner[cut..].iter().all(|b| *b == 0), "postcard {i}: padding");
    }
}

/// The packet from its IP header (after Ethernet and any VLAN tag).
fn ip_of(frame: &[u8]) -> &[u8] {
    let sliced = etherparse::LaxSlicedPacket::from_ethernet(frame).unwrap();
    match sliced.net.unwrap() {
        etherparse::LaxNetSlice::Ipv4(ip) => {
            let start = ip.header().slice().as_ptr() as usize - frame.as_ptr() as usize;
            &frame[start..start + usize::from(ip.header().total_len())]
        }
        etherparse::LaxNetSlice::Ipv6(ip) => {
            let start = ip.header().slice().as_ptr() as usize - frame.as_ptr() as usize;
            &frame[start..start + 40 + usize::from(ip.header().payload_length())]
        }
        other => panic!("{other:?}"),
    }
}

/// On change, without classes: a flow's first packet only; the watchlist
/// keeps the TCP flows out (counted, passed).
#[test]
fn on_change_a_watched_flow_s_first_packet_gets_one() {
    let (_, run, postcards) =
        postcard_run("postcards-change", "{report: change, watchlist: [{protocol: udp}]}");
    let udp_flows = (0..FLOWS).filter(|f| f % 3 != 2).count() as u64;
    let per_flow = (PACKETS / FLOWS) as u64;
    assert_eq!(run.counter("postcard", "tx_packets"), PACKETS as u64);
    assert_eq!(run.counter("postcard", "watched"), udp_flows * per_flow);
    assert_eq!(run.counter("postcard", "not_watched"), (FLOWS as u64 - udp_flows) * per_flow);
    assert_eq!(run.counter("postcard", "reports_xd"), udp_flows);
    assert_eq!(run.counter("postcard", "postcards_not_due"), udp_flows * (per_flow - 1));
    let flows: std::collections::BTreeSet<_> = postcards.iter().map(|(_, inner, _)| flow_of(inner)).collect();
    assert_eq!(flows.len() as u64, udp_flows);
    assert!(flows.iter().all(|(_, _, _, dport)| *dport == 6000), "UDP flows only: {flows:?}");
}

/// Three nodes, `roles` with their settings, one after the other over
/// pcap files, every report to one collector socket: the reports.
fn chain(dir: &std::path::Path, frames: &[Vec<u8>], roles: &[(&str, &str, u8)]) -> Vec<Vec<u8>> {
    write_pcap(&dir.join("p0.pcap"), frames);
    let collector = Collector::new();
    for (i, (role, settings, node)) in roles.iter().enumerate() {
        let (input, output) = (format!("p{i}.pcap"), format!("p{}.pcap", i + 1));
        let config = node_config(role, &input, &output, settings, Some(&collector.addr()));
        let config = config.replacen("node_id: 10.0.0.", &format!("node_id: 10.0.{node}."), 1);
        run_node(dir, &config);
    }
    assert_same_frames(&read_pcap(&dir.join(format!("p{}.pcap", roles.len()))), frames);
    collector.reports()
}

/// collect's summary of `datagrams` holding `reports` reports.
fn collect_summary(datagrams: &[Vec<u8>], reports: usize) -> serde_json::Value {
    collect_summary_with(datagrams, reports, &[])
}

/// [`collect_summary`] with more arguments for collect.
fn collect_summary_with(datagrams: &[Vec<u8>], reports: usize, more: &[&str]) -> serde_json::Value {
    let count = reports.to_string();
    let args =
        [&["--quiet", "--count", &count, "--duration", "60", "--join-window-ms", "600000"], more].concat();
    let (child, listen) = common::collector::start_collector(&tools_bin(), &args);
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    common::collector::summary_of(child)
}

/// The nodes of a summary: (id, hops).
fn node_hops(summary: &serde_json::Value) -> Vec<(u64, u64)> {
    let nodes = summary["nodes"].as_array().unwrap().iter();
    nodes.map(|n| (n["node"].as_u64().unwrap(), n["hops"].as_u64().unwrap())).collect()
}

/// Mixed traffic whose packets their reports tell apart. Packets are told
/// apart by the bytes their reports carry: IPv6 has no IP identification,
/// and an INT-MX report stops after the INT header, so packets of an IPv6
/// flow whose UDP checksum is 0 (and empty ones in INT-XD) are alike:
/// their postcards can only be duplicates.
fn distinct_frames() -> Vec<Vec<u8>> {
    let mut frames = mixed_traffic_dual(144, 4, 120);
    frames.retain(|frame| {
        let sliced = etherparse::LaxSlicedPacket::from_ethernet(frame).unwrap();
        match sliced.transport.unwrap() {
            etherparse::TransportSlice::Udp(udp) => !udp.payload().is_empty() && udp.checksum() != 0,
            etherparse::TransportSlice::Tcp(tcp) => !tcp.payload().is_empty(),
            _ => false,
        }
    });
    frames
}

/// The same packets through three nodes in INT-XD (three postcard nodes)
/// and in INT-MX (source, transit, sink each reporting): the collector
/// joins each packet's three postcards into its path, and both modes give
/// the same per-hop view: each node's hops, each link's, every flow's
/// path; INT-MD's stacks give the same nodes, links and paths.
#[test]
fn postcards_of_three_nodes_join_into_the_path_an_md_stack_tells() {
    let frames = distinct_frames();
    let n = frames.len() as u64;
    let flows = frames.iter().map(|f| flow_of(ip_of(f))).collect::<std::collections::BTreeSet<_>>().len();
    assert!(flows >= 3, "{flows} flows");
    let xd = "    int: {version: 2.1}\n    postcard: {report: every}\n";
    let xd_reports = chain(
        &workdir("postcards-join-xd"),
        &frames,
        &[("postcard", xd, 1), ("postcard", xd, 2), ("postcard", xd, 3)],
    );
    let xd = collect_summary(&xd_reports, 3 * frames.len());
    let int = "    int: {version: 2.1}\n";
    let mx_source = "    int: {version: 2.1}\n    source: {mode: mx, instructions: [node_id, hop_latency, ingress_timestamp, egress_timestamp]}\n";
    let mx_reports = chain(
        &workdir("postcards-join-mx"),
        &frames,
        &[("source", mx_source, 1), ("transit", int, 2), ("sink", int, 3)],
    );
    let mx = collect_summary(&mx_reports, 3 * frames.len());
    for summary in [&xd, &mx] {
        let postcards = &summary["postcards"];
        assert_eq!(postcards["received"], 3 * n, "{postcards}");
        assert_eq!(postcards["packets"], n, "{postcards}");
        assert_eq!(
            (&postcards["unordered"], &postcards["duplicates"]),
            (&0.into(), &0.into()),
            "{postcards}"
        );
        assert_eq!(summary["paths_followed"], flows);
        assert_eq!(summary["path_changes"], 0);
    }
    // Node ids are 10.0.<position>.<role's>: compare positions.
    let at = |id: u64| (id >> 8) & 0xff;
    let links = |summary: &serde_json::Value| -> Vec<(u64, u64, u64)> {
        link_counts(summary).iter().map(|(from, to, count)| (at(*from), at(*to), *count)).collect()
    };
    let nodes = |summary: &serde_json::Value| -> Vec<(u64, u64)> {
        node_hops(summary).iter().map(|(id, hops)| (at(*id), *hops)).collect()
    };
    assert_eq!(links(&xd), [(1, 2, n), (2, 3, n)]);
    assert_eq!(links(&mx), links(&xd));
    assert_eq!(nodes(&xd), [(1, n), (2, n), (3, n)]);
    assert_eq!(nodes(&mx), nodes(&xd));
    let md_source = "    int: {version: 2.1}\n    source: {instructions: [node_id, hop_latency, ingress_timestamp, egress_timestamp]}\n";
    let md_reports = chain(
        &workdir("postcards-join-md"),
        &frames,
        &[("source", md_source, 1), ("transit", int, 2), ("sink", int, 3)],
    );
    let reports: usize = md_reports.iter().map(|d| tr20::Report::parse(d).unwrap().reports().count()).sum();
    let md = collect_summary(&md_reports, reports);
    // The sink reports on latency changes, not every packet: the same
    // nodes and links, fewer hops.
    let positions = |summary: &serde_json::Value| -> (Vec<u64>, Vec<(u64, u64)>) {
        (nodes(summary).iter().map(|n| n.0).collect(), links(summary).iter().map(|l| (l.0, l.1)).collect())
    };
    assert_eq!(positions(&md), positions(&xd));
    assert_eq!(md["paths_followed"], flows);
}

/// Clones at one in 8: the source sends every packet untouched and,
/// after the burst that carried it, a copy of each flow's 1st, 9th, 17th,
/// ... packet with INT-MD and D set; the sink reports each copy as a
/// discard and drops it, so what leaves the sink is the input, byte for
/// byte.
#[test]
fn clones_of_one_in_eight_leave_beside_untouched_originals() {
    let dir = workdir("clones");
    let frames = mixed_traffic_dual(PACKETS, FLOWS, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let source = "    int: {version: 2.1}\n    source: {clone: {every: 8}}\n";
    let run = run_node(&dir, &node_config("source", "in.pcap", "cloned.pcap", source, None));
    let mut per_flow: BTreeMap<_, usize> = BTreeMap::new();
    let mut due = Vec::new();
    for frame in &frames {
        let n = per_flow.entry(flow_of(ip_of(frame))).or_default();
        if *n % 8 == 0 {
            due.push(frame.clone());
        }
        *n += 1;
    }
    assert_eq!(due.len(), 50);
    assert_eq!(run.counter("source", "cloned"), 50);
    assert_eq!(run.counter("source", "clones_refused"), 0);
    assert_eq!(run.counter("source", "instrumented"), 50);
    assert_eq!(run.counter("source", "tx_packets"), (PACKETS + 50) as u64);
    // The originals in order, each as it came; the rest are the copies.
    let out = read_pcap(&dir.join("cloned.pcap"));
    let (mut originals, mut copies) = (Vec::new(), Vec::new());
    for frame in out {
        if frames.get(originals.len()) == Some(&frame) {
            originals.push(frame);
        } else {
            copies.push(frame);
        }
    }
    assert_same_frames(&originals, &frames);
    assert_eq!(copies.len(), due.len());
    for (copy, original) in copies.iter().zip(&due) {
        // etherparse reads the copy as the same flow's packet, grown by INT.
        assert_eq!(flow_of(ip_of(copy)), flow_of(ip_of(original)));
        assert!(copy.len() > original.len());
    }
    let collector = Collector::new();
    let sink = "    int: {version: 2.1}\n";
    let run = run_node(&dir, &node_config("sink", "cloned.pcap", "out.pcap", sink, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(run.counter("sink", "discarded"), 50);
    let mut reported = Vec::new();
    for datagram in collector.reports() {
        let report = tr20::Report::parse(&datagram).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            let drop = individual.int.unwrap().drop.unwrap();
            assert_eq!(drop.reason, tr20::DROP_DISCARD_ASKED);
            reported.push(flow_of(individual.inner));
        }
    }
    let expected: Vec<_> = due.iter().map(|frame| flow_of(ip_of(frame))).collect();
    assert_eq!(reported, expected, "a discard report for each copy, in order");
}

/// Copies under pressure (issue 44): a copy of every packet from a pool of
/// 8 mbufs, so most copies of each burst of 32 are refused. The originals
/// all leave, byte for byte (the copies' pool is not the one the port
/// receives into); a refused copy spends no number, so a sink fed the
/// result counts no loss on the copies it gets, each flow's copies
/// numbered 1, 2, 3, ... with no gap. On the main of issue 44, a refused
/// copy used up its number: a sink counted most refused copies lost.
#[test]
fn refused_clones_cost_no_original_and_no_number() {
    let dir = workdir("clones-refused");
    let frames = mixed_traffic_dual(PACKETS, FLOWS, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    let source = "    int: {version: 2.1}\n    source: {clone: {every: 1, mbufs: 8}}\n";
    let run = run_node(&dir, &node_config("source", "in.pcap", "cloned.pcap", source, None));
    let (cloned, refused) = (run.counter("source", "cloned"), run.counter("source", "clones_refused"));
    assert!(cloned >= 8 && refused > 0, "a pool of 8 refuses copies: {}", run.stats);
    assert_eq!(cloned + refused, PACKETS as u64, "each packet copied or its copy refused: {}", run.stats);
    assert_eq!(run.counter("source", "tx_dropped"), 0);
    assert_eq!(run.counter("source", "tx_packets"), PACKETS as u64 + cloned);
    let out = read_pcap(&dir.join("cloned.pcap"));
    let originals: Vec<_> = out.iter().filter(|frame| frames.contains(frame)).cloned().collect();
    assert_same_frames(&originals, &frames);
    let collector = Collector::new();
    let sink = "    int: {version: 2.1}\n";
    let run = run_node(&dir, &node_config("sink", "cloned.pcap", "out.pcap", sink, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(run.counter("sink", "discarded"), cloned);
    assert_eq!(run.counter("sink", "lost_packets"), 0, "a refused copy is no lost packet: {}", run.stats);
}

/// Copies against a TX queue with no room for them: a copy of every
/// packet, sent over a ring to a forwarder polled on the same lcore after
/// the source, which takes one burst of 32 a poll while the source brings
/// 32 originals and 32 copies: the ring fills, and from then on it has
/// room for the originals alone. Every original leaves, in order, byte for
/// byte; the copies the ring refuses (or that wait out a poll after they
/// filled it) spend no number, so the sink downstream counts no loss. On
/// the main of issue 56 each copy the ring refused spent its number: the
/// sink counted about one lost packet per refused copy.
#[test]
fn copies_the_tx_queue_refuses_cost_no_original_and_no_number() {
    let dir = workdir("clones-tx-full");
    let packets = 3000;
    let frames = mixed_traffic_dual(packets, FLOWS, 120);
    write_pcap(&dir.join("in.pcap"), &frames);
    write_pcap(&dir.join("empty.pcap"), &[]);
    let config = format!(
        "
node_id: 10.0.0.1
eal: {EAL}
ports:
  - {{name: in, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=unused.pcap'}}
  - {{name: ring, device: net_ring0}}
  - {{name: out, device: 'net_pcap1,rx_pcap=empty.pcap,tx_pcap=cloned.pcap'}}
pipelines:
  - {{name: source, role: source, lcore: 1, rx: {{port: in}}, tx: {{port: ring}}, int: {{version: 2.1}}, source: {{clone: {{every: 1}}}}}}
  - {{name: forward, role: forward, lcore: 1, rx: {{port: ring}}, tx: {{port: out}}}}
"
    );
    let run = run_node(&dir, &config);
    let counter = |name| run.counter("source", name);
    let (cloned, dropped) = (counter("cloned"), counter("clones_dropped"));
    assert!(dropped > 0, "the ring refuses copies: {}", run.stats);
    assert_eq!(counter("tx_dropped"), 0, "no original refused: {}", run.stats);
    assert_eq!(counter("tx_packets"), packets as u64 + cloned - dropped, "{}", run.stats);
    let out = read_pcap(&dir.join("cloned.pcap"));
    assert_eq!(run.counter("forward", "tx_packets"), out.len() as u64);
    let originals: Vec<_> = out.iter().filter(|frame| frames.contains(frame)).cloned().collect();
    assert_same_frames(&originals, &frames);
    let copies = (out.len() - originals.len()) as u64;
    assert_eq!(copies, cloned - dropped);
    let collector = Collector::new();
    let sink = "    int: {version: 2.1}\n";
    let run = run_node(&dir, &node_config("sink", "cloned.pcap", "out.pcap", sink, Some(&collector.addr())));
    assert_same_frames(&read_pcap(&dir.join("out.pcap")), &frames);
    assert_eq!(run.counter("sink", "discarded"), copies);
    assert_eq!(run.counter("sink", "lost_packets"), 0, "a refused copy is no lost packet: {}", run.stats);
}

/// Real postcards of three INT-XD nodes, then what goes wrong on the way
/// to the collector: one of the middle node's datagrams lost, the last
/// node's every datagram sent twice, and the first node's datagrams sent
/// again under a node id the domain does not list. The collector counts
/// each (incomplete, duplicates, unknown) and reports no path but the
/// true one: no path change, no link that skips the middle node.
#[test]
fn lost_duplicated_and_foreign_postcards_make_no_wrong_path() {
    let frames = distinct_frames();
    let n = frames.len() as u64;
    let xd = "    int: {version: 2.1}\n    postcard: {report: every}\n";
    let reports = chain(
        &workdir("postcards-hostile"),
        &frames,
        &[("postcard", xd, 1), ("postcard", xd, 2), ("postcard", xd, 3)],
    );
    let node_of = |d: &Vec<u8>| tr20::Report::parse(d).unwrap().group.node_id;
    let count = |d: &Vec<u8>| tr20::Report::parse(d).unwrap().reports().count() as u64;
    let middle: Vec<usize> = (0..reports.len()).filter(|&i| node_of(&reports[i]) == 0x0a00_0202).collect();
    assert!(middle.len() >= 3, "{} datagrams of the middle node", middle.len());
    let lost = middle[middle.len() / 2];
    let mut sent = Vec::new();
    let (mut foreign, mut twice) = (0, 0);
    for (i, datagram) in reports.iter().enumerate() {
        match node_of(datagram) {
            _ if i == lost => continue,
            0x0a00_0102 => {
                let mut spoofed = datagram.clone();
                spoofed[4..8].copy_from_slice(&[10, 0, 9, 9]);
                foreign += count(datagram);
                sent.push(datagram.clone());
                sent.push(spoofed);
            }
            0x0a00_0302 => {
                twice += count(datagram);
                sent.push(datagram.clone());
                sent.push(datagram.clone());
            }
            _ => sent.push(datagram.clone()),
        }
    }
    let missing = count(&reports[lost]);
    assert_eq!((foreign, twice), (n, n));
    let received: u64 = sent.iter().map(count).sum();
    let domain = ["--domain-nodes", "10.0.1.2,10.0.2.2,10.0.3.2"];
    let summary = collect_summary_with(&sent, received as usize, &domain);
    let postcards = &summary["postcards"];
    assert_eq!(postcards["received"], received, "{postcards}");
    assert_eq!(postcards["unknown"], n, "{postcards}");
    assert_eq!(postcards["duplicates"], n, "{postcards}");
    assert_eq!(postcards["incomplete"], missing, "{postcards}");
    assert_eq!((&postcards["packets"], &postcards["unordered"]), (&n.into(), &0.into()), "{postcards}");
    assert_eq!(summary["path_changes"], 0);
    let at = |id: u64| (id >> 8) & 0xff;
    let links: Vec<(u64, u64, u64)> =
        link_counts(&summary).iter().map(|(from, to, count)| (at(*from), at(*to), *count)).collect();
    assert_eq!(links, [(1, 2, n - missing), (2, 3, n - missing)]);
    let nodes: Vec<(u64, u64)> = node_hops(&summary).iter().map(|(id, hops)| (at(*id), *hops)).collect();
    assert_eq!(nodes, [(1, n), (2, n - missing), (3, n)]);
}

/// A router between each two nodes: every frame's TTL (Hop Limit) one
/// lower, the IPv4 header checksum made again.
fn routed(frames: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    frames
        .into_iter()
        .map(|mut frame| {
            let start = ip_of(&frame).as_ptr() as usize - frame.as_ptr() as usize;
            if frame[start] >> 4 == 6 {
                frame[start + 7] -= 1;
                return frame;
            }
            frame[start + 8] -= 1;
            let header = start..start + usize::from(frame[start] & 0x0f) * 4;
            frame[start + 10..start + 12].copy_from_slice(&[0, 0]);
            let sum =
                frame[header].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
            let folded = (sum & 0xffff) + (sum >> 16);
            let checksum = !(((folded & 0xffff) + (folded >> 16)) as u16);
            frame[start + 10..start + 12].copy_from_slice(&checksum.to_be_bytes());
            frame
        })
        .collect()
}

/// Every timestamp of a report datagram's reports moved by `by_ns` (a
/// node whose clock is off).
fn skewed(datagram: &[u8], by_ns: i64) -> Vec<u8> {
    let stamps: Vec<u64> = tr20::Report::parse(datagram)
        .unwrap()
        .reports()
        .flat_map(|r| {
            let metadata = r.unwrap().int.unwrap().metadata;
            [metadata.ingress_timestamp, metadata.egress_timestamp]
        })
        .flatten()
        .collect();
    let mut out = datagram.to_vec();
    let mut from = 0;
    for stamp in stamps {
        let at = from + out[from..].windows(8).position(|w| w == stamp.to_be_bytes()).unwrap();
        out[at..at + 8].copy_from_slice(&stamp.wrapping_add_signed(by_ns).to_be_bytes());
        from = at + 8;
    }
    out
}

/// Three INT-XD nodes with a router between each two, the middle node's
/// clock a minute behind: by the timestamps alone its postcards come first
/// and tell a consistent path 2 -> 1 -> 3 (the nodes run one after the
/// other, seconds apart however loaded the host, never a minute); the TTL
/// each node saw (64, 63, 62 along the path) says otherwise, so no packet
/// is given a path: every group unordered, its nodes' figures kept, no
/// link, no path.
#[test]
fn a_node_whose_clock_is_off_makes_no_wrong_path() {
    let dir = workdir("postcards-skew");
    let frames = distinct_frames();
    let n = frames.len() as u64;
    write_pcap(&dir.join("p0.pcap"), &frames);
    let collector = Collector::new();
    let xd = "    int: {version: 2.1}\n    postcard: {report: every}\n";
    for node in 1..=3 {
        let config =
            node_config("postcard", &format!("p{}.pcap", node - 1), "out.pcap", xd, Some(&collector.addr()));
        run_node(&dir, &config.replacen("node_id: 10.0.0.", &format!("node_id: 10.0.{node}."), 1));
        write_pcap(&dir.join(format!("p{node}.pcap")), &routed(read_pcap(&dir.join("out.pcap"))));
    }
    let minute = 60_000_000_000;
    let reports: Vec<Vec<u8>> = collector
        .reports()
        .iter()
        .map(|d| match tr20::Report::parse(d).unwrap().group.node_id {
            0x0a00_0202 => skewed(d, -minute),
            _ => d.clone(),
        })
        .collect();
    let summary = collect_summary(&reports, 3 * frames.len());
    let postcards = &summary["postcards"];
    assert_eq!((&postcards["packets"], &postcards["unordered"]), (&n.into(), &n.into()), "{postcards}");
    assert_eq!(summary["paths_followed"], 0);
    assert_eq!(summary["path_changes"], 0);
    assert!(link_counts(&summary).is_empty(), "{}", summary["links"]);
    let at = |id: u64| (id >> 8) & 0xff;
    let nodes: Vec<(u64, u64)> = node_hops(&summary).iter().map(|(id, hops)| (at(*id), *hops)).collect();
    assert_eq!(nodes, [(1, n), (2, n), (3, n)]);
}
