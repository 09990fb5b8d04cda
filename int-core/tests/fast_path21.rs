//! The INT 2.1 sink's fast path against its general path: for every frame
//! the fast path takes, the general path takes it too, reads the same flow,
//! packet number, source hop and D bit, and strips the same bytes, over
//! one-byte changes (to 0, to all ones, plus 36, single bit flips) and
//! every cut of INT 2.1 fast-path frames (and of a few just
//! outside it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::{
    int21_domain, int21_hop as hop, int21_plain_frames as plain_frames, int21_source, neighbours, same_flow,
    Buffer,
};
use int_core::craft::PacketSpec;
use int_core::hop_rule::{Bounds, HopRule};
use int_core::int21::fast_sink::{FastArrival, FastSink};
use int_core::int21::source::{self, SourceConfig};
use int_core::int21::{sink, transit, Domain, HeaderType, HopMetadata, Instructions, Marking, Next};

/// INT 2.1 frames: the plain frames instrumented with INT-MD under three
/// bitmaps (one without node id or timestamps), by a source without a
/// node id whose clock's high word is all ones, with D, with a transit hop
/// pushed, and INT-MX ones (left to the general path).
fn int_frames() -> Vec<Vec<u8>> {
    let full = Instructions::NODE_ID | Instructions::L1_PORT_IDS | Instructions::INGRESS_TIMESTAMP;
    let source = hop(1, 0x0102_0304_0506);
    let nameless = HopMetadata { node_id: None, ingress_timestamp: Some(0xffff_ffff_0000_0001), ..source };
    let cases = [
        (int21_source(full, HeaderType::Md), source),
        (
            int21_source(Instructions::INGRESS_TIMESTAMP | Instructions::EGRESS_TIMESTAMP, HeaderType::Md),
            source,
        ),
        (int21_source(Instructions::QUEUE_OCCUPANCY, HeaderType::Md), source),
        (int21_source(full, HeaderType::Md), nameless),
        (SourceConfig { discard: true, ..int21_source(full, HeaderType::Md) }, source),
        (int21_source(full, HeaderType::Mx), source),
    ];
    let mut frames = Vec::new();
    for (config, hop) in cases {
        for frame in plain_frames() {
            let Ok(plan) = source::plan(&frame, &config) else { continue };
            let mut buffer = Buffer::new(&frame);
            buffer.with(|f| source::insert(f, &plan, &config, &hop, 77)).unwrap();
            frames.push(buffer.frame().to_vec());
        }
    }
    let mut pushed = Buffer::new(&frames[0]);
    pushed.with(|f| transit::push(f, &int21_domain(), 1500, &hop(5, 0x0102_0304_0600))).unwrap();
    frames.push(pushed.frame().to_vec());
    frames
}

#[test]
fn fast_sink21_finds_and_restores_what_the_general_sink_does() {
    let (mut taken, mut not_int, mut bases) = ([0, 0], 0, 0);
    for base in int_frames() {
        bases += u32::from(matches!(FastSink::find(&base, &int21_domain(), &rule()), FastArrival::Int(_)));
        for frame in neighbours(&base) {
            match agrees(&frame) {
                Taken::Int(ipv6) => taken[usize::from(ipv6)] += 1,
                Taken::NotInt => not_int += 1,
                Taken::No => {}
            }
        }
    }
    // 5 fast-path frames x 5 MD sources, and the transit's.
    // 8 fast-path frames (5 IPv4, 3 IPv6) x 5 MD sources, and the transit's.
    assert_eq!(bases, 41, "INT-MD fast-path frames");
    let [v4, v6] = taken;
    assert!(v4 > 8000 && v6 > 6000, "{v4} IPv4 and {v6} IPv6 frames took the fast path");
    assert!(not_int > 80, "{not_int} frames the fast path found unmarked");
}

/// A hop rule that reads every figure it can: the two paths must agree
/// on the digest too.
fn rule() -> HopRule {
    HopRule {
        latency: Bounds::new(&[100, 10_000]).unwrap(),
        queue: Bounds::new(&[16, 1024]).unwrap(),
        queue_alert: Some(512),
        ..HopRule::default()
    }
}

enum Taken {
    /// Whether IPv6.
    Int(bool),
    NotInt,
    No,
}

/// One frame: the fast sink's answer is the general sink's.
fn agrees(frame: &[u8]) -> Taken {
    let general = sink::extract(frame, &int21_domain(), &rule());
    match FastSink::find(frame, &int21_domain(), &rule()) {
        FastArrival::Other => Taken::No,
        FastArrival::NotInt => {
            assert_eq!(general, Ok(None), "{frame:02x?}");
            Taken::NotInt
        }
        FastArrival::Int(fast) => {
            let Ok(Some(found)) = general else { panic!("general: {general:?} for {frame:02x?}") };
            same_flow(&fast.frame, frame, &found.flow);
            assert_eq!((fast.sequence, fast.discard), (found.sequence, found.discard));
            assert_eq!(fast.hops, found.hops, "{frame:02x?}");
            let source = found.source_hop;
            assert_eq!(fast.source_node, source.and_then(|hop| hop.node_id), "{frame:02x?}");
            assert_eq!(fast.source_ns, source.and_then(|hop| hop.ingress_timestamp), "{frame:02x?}");
            assert!(!found.is_mx && matches!(found.next, Some(Next::Dscp(_))));
            let mut general = Buffer::new(frame);
            let removed = general.with(|f| sink::strip(f, &found));
            let mut mine = Buffer::new(frame);
            assert_eq!(mine.with(|f| fast.strip(f)), removed, "{frame:02x?}");
            assert_eq!(mine.frame(), general.frame(), "{frame:02x?}");
            Taken::Int(fast.frame.is_ipv6())
        }
    }
}

/// The unchanged frames: the fast path restores the plain frame, with
/// the flow's number and the source's hop.
#[test]
fn fast_sink21_restores_the_original() {
    let full = Instructions::NODE_ID | Instructions::L1_PORT_IDS | Instructions::INGRESS_TIMESTAMP;
    let config = int21_source(full, HeaderType::Md);
    let fast_path_frames =
        plain_frames().into_iter().filter(|f| int_core::fast::FastFrame::read(f, 0).is_some());
    for original in fast_path_frames {
        let plan = source::plan(&original, &config).unwrap();
        let mut buffer = Buffer::new(&original);
        buffer.with(|f| source::insert(f, &plan, &config, &hop(1, 0x0102_0304_0506), 77)).unwrap();
        let FastArrival::Int(fast) = FastSink::find(buffer.frame(), &int21_domain(), &rule()) else {
            panic!("not taken: {original:02x?}")
        };
        assert_eq!(
            (fast.sequence, fast.source_node, fast.source_ns),
            (Some(77), Some(1), Some(0x0102_0304_0506))
        );
        buffer.with(|f| fast.strip(f)).unwrap();
        assert_eq!(buffer.frame(), &original[..]);
    }
}

/// For `config`: every frame the fast source takes, the general source
/// takes too and writes byte for byte the same (hop latency within 32 bits
/// and beyond); returns how many IPv4 and IPv6 frames the fast path took.
fn fast_source_agrees(config: &SourceConfig) -> [usize; 2] {
    use int_core::fast::FastFrame;
    use int_core::int21::fast_source::{FastSource, HopTimes};
    let own = HopMetadata {
        node_id: Some(9),
        l1_ingress_port: Some(3),
        l1_egress_port: Some(4),
        ..HopMetadata::default()
    };
    let fast = FastSource::of(config, &own).expect("a DSCP-marked INT-MD source");
    let times = [
        HopTimes { ingress_ns: 0x0102_0304_0506, egress_ns: 0x0102_0304_0600 },
        HopTimes { ingress_ns: 7, egress_ns: 7 + (1 << 33) },
    ];
    let mut taken = [0, 0];
    for base in plain_frames() {
        for frame in neighbours(&base) {
            let Some(parts) = FastFrame::read(&frame, 0).filter(|f| fast.takes(f)) else { continue };
            taken[usize::from(parts.is_ipv6())] += 1;
            let plan = source::plan(&frame, config)
                .unwrap_or_else(|skip| panic!("the general path refuses ({skip:?}) {frame:02x?}"));
            assert!(!plan.mtu_exceeded);
            same_flow(&parts, &frame, &plan.flow);
            for (n, times) in times.iter().enumerate() {
                let hop = HopMetadata {
                    hop_latency: times.latency(),
                    ingress_timestamp: Some(times.ingress_ns),
                    egress_timestamp: Some(times.egress_ns),
                    ..own
                };
                let sequence = 77 + n as u32;
                let mut general = Buffer::new(&frame);
                general.with(|f| source::insert(f, &plan, config, &hop, sequence)).unwrap();
                let mut mine = Buffer::new(&frame);
                assert!(mine.with(|f| fast.insert(f, &parts, *times, sequence)));
                assert_eq!(mine.frame(), general.frame(), "{config:?} {frame:02x?}");
            }
        }
    }
    taken
}

#[test]
fn fast_source21_writes_what_the_general_source_writes() {
    let full = Instructions::NODE_ID | Instructions::L1_PORT_IDS | Instructions::INGRESS_TIMESTAMP;
    let every_time =
        Instructions::HOP_LATENCY | Instructions::INGRESS_TIMESTAMP | Instructions::EGRESS_TIMESTAMP;
    let configs = [
        int21_source(full, HeaderType::Md),
        SourceConfig { ds_instructions: 0, ..int21_source(every_time, HeaderType::Md) },
        int21_source(Instructions::QUEUE_OCCUPANCY | Instructions::CHECKSUM_COMPLEMENT, HeaderType::Md),
        SourceConfig { discard: true, ds_words: 2, max_hops: 9, ..int21_source(every_time, HeaderType::Md) },
    ];
    for config in configs {
        let [v4, v6] = fast_source_agrees(&config);
        // Most single changes leave an unmarked frame of the fast path's shape.
        assert!(v4 > 1000 && v6 > 700, "{v4} IPv4 and {v6} IPv6 frames took the fast path for {config:?}");
    }
    // Within an MTU that leaves some frames out (the general path sets M).
    let small = SourceConfig { max_ip_len: 90, ..int21_source(full, HeaderType::Md) };
    assert!(fast_source_agrees(&small)[0] > 100);
    let [_, v6] = fast_source_agrees(&SourceConfig { max_ip_len: 110, ..small });
    assert!(v6 > 100, "{v6} IPv6 frames within an MTU of 110");
}

#[test]
fn only_dscp_marked_md_sources_that_push_have_a_fast_path() {
    use int_core::int21::fast_source::FastSource;
    let full = Instructions::NODE_ID | Instructions::INGRESS_TIMESTAMP;
    let own = HopMetadata { node_id: Some(9), ..HopMetadata::default() };
    assert!(FastSource::of(&int21_source(full, HeaderType::Md), &own).is_some());
    let port_marked = Domain { marking: Marking::UdpPort(5000), ..int21_domain() };
    // UDP to a tunnel port: the stage may put INT inside the tunnel.
    let fast = FastSource::of(&int21_source(full, HeaderType::Md), &own).unwrap();
    for port in [4789, 4790, 6081, 4788] {
        let frame = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1000, port, 30).build();
        let parts = int_core::fast::FastFrame::read(&frame, 0).unwrap();
        assert_eq!(fast.takes(&parts), port == 4788, "port {port}");
    }
    for other in [
        int21_source(full, HeaderType::Mx),
        SourceConfig { own_hop: false, ..int21_source(full, HeaderType::Md) },
        SourceConfig { domain: port_marked, ..int21_source(full, HeaderType::Md) },
    ] {
        assert!(FastSource::of(&other, &own).is_none(), "{other:?}");
    }
}
