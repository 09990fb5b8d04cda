//! The INT 2.1 transit's fast path against its general path: every frame
//! the fast path takes, the general path (`transit::push`) pushes too,
//! with the same outcome and byte for byte the same frame; every frame it
//! declines it leaves untouched. Over INT 2.1 frames (IPv4 and IPv6, UDP
//! and TCP, DSCP and UDP-port marking, five bitmaps with a reserved bit,
//! the checksum complement and domain specific words, 1-3 hops, at and
//! near the last hop, at and near the MTU), every one-byte change and
//! every cut of them. One `FastTransit` serves every frame, so its plan
//! changes shape as the frames do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::{int21_domain, int21_hop, int21_plain_frames as plain_frames, int21_source, neighbours, Buffer};
use int_core::int21::fast_transit::FastTransit;
use int_core::int21::source::{self, SourceConfig};
use int_core::int21::transit::{self, Outcome};
use int_core::int21::{Domain, HeaderType, HopMetadata, Instructions, Marking};

/// A hop with every value, and a checksum complement both paths must
/// write as all ones (they update the L4 checksum instead).
fn hop(node: u32, time: u64) -> HopMetadata {
    HopMetadata {
        hop_latency: Some(700),
        queue: Some((3, 0x12_3456)),
        l2_ingress_port: Some(0x0101_0101),
        l2_egress_port: Some(0x0202_0202),
        egress_tx_utilization: Some(44),
        buffer: Some((5, 77)),
        checksum_complement: Some(0x1234_5678),
        ..int21_hop(node, time)
    }
}

/// The sources' configs: bitmaps from one word to every baseline bit, a
/// reserved bit, the checksum complement, domain specific words, INT-MX,
/// one hop left after the source's (the next transit's is the last) and
/// none (E at the first transit).
fn sources(domain: Domain) -> Vec<SourceConfig> {
    let every = Instructions::from_bits_retain(0xff80);
    let bench = Instructions::NODE_ID
        | Instructions::L1_PORT_IDS
        | Instructions::INGRESS_TIMESTAMP
        | Instructions::EGRESS_TIMESTAMP;
    let odd = Instructions::from_bits_retain(0x1041) | Instructions::L2_PORT_IDS;
    let base = |instructions| SourceConfig { domain, ..int21_source(instructions, HeaderType::Md) };
    vec![
        base(bench),
        base(every),
        base(Instructions::HOP_LATENCY),
        base(odd),
        SourceConfig { ds_words: 2, ..base(Instructions::QUEUE_OCCUPANCY) },
        SourceConfig { max_hops: 2, ..base(bench) },
        SourceConfig { max_hops: 1, ..base(bench) },
        SourceConfig { header_type: HeaderType::Mx, ..base(bench) },
    ]
}

/// Each plain frame instrumented by each source, then again after one
/// and two transit hops (where the domain lets them push).
fn int_frames(domain: Domain) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for config in sources(domain) {
        for plain in plain_frames() {
            let Ok(plan) = source::plan(&plain, &config) else { continue };
            let mut buffer = Buffer::new(&plain);
            buffer.with(|f| source::insert(f, &plan, &config, &hop(1, 0x0102_0304_0506), 77)).unwrap();
            frames.push(buffer.frame().to_vec());
            for node in [2, 3] {
                let pushed = buffer.with(|f| transit::push(f, &domain, 1500, &hop(node, 0x0102_0304_0600)));
                if !matches!(pushed, Ok(Outcome::Pushed(_))) {
                    break;
                }
                frames.push(buffer.frame().to_vec());
            }
        }
    }
    frames
}

/// The MTUs a frame meets: roomy, exactly its push, one byte short.
fn mtus(frame: &[u8]) -> [u16; 3] {
    let field = |at: usize| usize::from(u16::from_be_bytes([frame[at], frame[at + 1]]));
    let ip_len = if frame[12..14] == [0x86, 0xdd] { 40 + field(18) } else { field(16) };
    let hop_len = transit_hop_len(frame).unwrap_or(0);
    [1500, (ip_len + hop_len) as u16, (ip_len + hop_len - 1) as u16]
}

/// A pushed hop's length, as the general path pushes it.
fn transit_hop_len(frame: &[u8]) -> Option<usize> {
    let mut buffer = Buffer::new(frame);
    let domains = [int21_domain(), port_domain()];
    domains.iter().find_map(|domain| match buffer.with(|f| transit::push(f, domain, 9000, &hop(9, 9))) {
        Ok(Outcome::Pushed(len)) => Some(len),
        _ => None,
    })
}

fn port_domain() -> Domain {
    Domain { marking: Marking::UdpPort(5000), ..int21_domain() }
}

/// Whether the fast path took `frame`; where it did, the general path
/// agreed, and where it did not, the frame is as it was.
fn agrees(fast: &mut FastTransit, frame: &[u8], domain: &Domain, mtu: u16) -> bool {
    let me = hop(7, 0x0a0b_0c0d_0e0f);
    let mut mine = Buffer::new(frame);
    let Some(outcome) = mine.with(|f| fast.push(f, domain, mtu, &me)) else {
        assert_eq!(mine.frame(), frame, "declined and changed: {frame:02x?}");
        return false;
    };
    let mut general = Buffer::new(frame);
    let said = general.with(|f| transit::push(f, domain, mtu, &me));
    assert_eq!(said, Ok(outcome), "mtu {mtu} {frame:02x?}");
    assert_eq!(mine.frame(), general.frame(), "mtu {mtu} {frame:02x?}");
    true
}

#[test]
fn fast_transit21_pushes_what_the_general_transit_pushes() {
    let mut fast = FastTransit::default();
    for domain in [int21_domain(), port_domain()] {
        let (mut bases, mut taken, mut seen) = (0, [0, 0], 0);
        for base in int_frames(domain) {
            let ipv6 = base[12..14] == [0x86, 0xdd];
            for mtu in mtus(&base) {
                bases += usize::from(agrees(&mut fast, &base, &domain, mtu));
                for frame in neighbours(&base) {
                    seen += 1;
                    taken[usize::from(ipv6)] += usize::from(agrees(&mut fast, &frame, &domain, mtu));
                }
            }
        }
        let [v4, v6] = taken;
        eprintln!("{:?}: {bases} base frames and {v4} + {v6} of {seen} neighbours taken", domain.marking);
        assert!(bases > 40 && v4 > 5000 && v6 > 5000, "{bases} bases, {v4} IPv4 and {v6} IPv6 taken");
    }
}

/// The shapes the fast path leaves: E (no hop left), M (one byte short
/// of the MTU) and INT-MX, each left untouched for the general path.
#[test]
fn last_hop_mtu_and_mx_take_the_general_path() {
    let mut fast = FastTransit::default();
    let domain = int21_domain();
    let configs = sources(domain);
    let plain = &plain_frames()[1];
    let frame_of = |config: &SourceConfig| {
        let plan = source::plan(plain, config).unwrap();
        let mut buffer = Buffer::new(plain);
        buffer.with(|f| source::insert(f, &plan, config, &hop(1, 5), 77)).unwrap();
        buffer.frame().to_vec()
    };
    let (bench, last, mx) = (frame_of(&configs[0]), frame_of(&configs[6]), frame_of(&configs[7]));
    let short = mtus(&bench)[2];
    assert!(agrees(&mut fast, &bench, &domain, mtus(&bench)[1]));
    assert!(!agrees(&mut fast, &bench, &domain, short));
    assert!(!agrees(&mut fast, &last, &domain, 1500));
    assert!(!agrees(&mut fast, &mx, &domain, 1500));
    let general = |frame: &[u8], mtu| Buffer::new(frame).with(|f| transit::push(f, &domain, mtu, &hop(2, 2)));
    assert_eq!(general(&bench, short), Ok(Outcome::MtuExceeded));
    assert_eq!(general(&last, 1500), Ok(Outcome::MaxHopReached));
    assert_eq!(general(&mx, 1500), Ok(Outcome::Mx));
}
