//! IFA's fast paths against its general paths, under both L4 rules: the
//! initiator's fast path plans what `source::plan` plans and writes the
//! same bytes as `source::insert`; the terminator's locates what
//! `sink::find` locates and strips the same bytes; the transit's pushes
//! the same bytes with the same outcome as `transit::push` (the hop's IP
//! TTL the packet's). Over one-byte changes (to 0, to all ones, plus 36,
//! single bit flips) and every cut of fast-path frames and a few just
//! outside (a VLAN tag, TCP options, an IPv6 Hop-by-Hop header, GRE), and
//! over generated packets (options, tags, extension headers). A frame a
//! fast path declines is left as it came.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::{int21_plain_frames as plain_frames, neighbours, packet_v4_v6, Buffer};
use int_core::craft::PacketSpec;
use int_core::fast::FastFrame;
use int_core::ifa::fast_sink::FastSink;
use int_core::ifa::fast_source::FastSource;
use int_core::ifa::fast_transit::FastTransit;
use int_core::ifa::source::{self, Settings};
use int_core::ifa::{sink, transit, Domain, HopRepr, L4Rule};
use proptest::prelude::*;

const MTU: u16 = 1500;
const RULES: [L4Rule; 2] = [L4Rule::Keep, L4Rule::Cover];

fn hop(device_id: u32) -> HopRepr {
    HopRepr {
        lns: 1,
        device_id,
        queue_id: 5,
        rx_seconds: 0x1_2345,
        rx_nanoseconds: 999_999_999,
        egress_system_port: 2,
        ingress_system_port: 1,
        residence_ns: 2_500,
        ..HopRepr::default()
    }
}

/// A GRE frame (IPv4 in IPv4): IFA can ride it, no fast path reads it.
fn gre() -> Vec<u8> {
    let inner = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 8).build();
    let mut frame = PacketSpec::udp([192, 0, 2, 1].into(), [192, 0, 2, 2].into(), 1, 2, 0).build();
    frame.truncate(34);
    frame[23] = 47;
    frame.extend_from_slice(&[0, 0, 0x08, 0]);
    frame.extend_from_slice(&inner[14..]);
    let total = (frame.len() - 14) as u16;
    frame[16..18].copy_from_slice(&total.to_be_bytes());
    frame[24..26].copy_from_slice(&[0, 0]);
    let sum = int_core::checksum::checksum(&frame[14..34]);
    frame[24..26].copy_from_slice(&sum.to_be_bytes());
    frame
}

fn plain() -> Vec<Vec<u8>> {
    let mut frames = plain_frames();
    frames.push(gre());
    frames
}

/// `frame` instrumented by the general initiator under `settings`, then
/// pushed by `transits` general transits.
fn instrumented(frame: &[u8], settings: &Settings, transits: u32) -> Option<Vec<u8>> {
    let domain = Domain::default();
    let plan = source::plan(frame, &domain, MTU).ok()?;
    let mut buffer = Buffer::new(frame);
    buffer.with(|f| source::insert(f, &plan, &domain, settings, &hop(1))).unwrap();
    for n in 0..transits {
        buffer.with(|f| transit::push(f, &domain, MTU, &hop(n + 2), settings.l4)).unwrap();
    }
    Some(buffer.frame().to_vec())
}

/// IFA frames: every plain frame instrumented under both rules, inband and
/// as a probe, with 0 to 2 transit hops, and at Hop Limit 0 and at Max
/// Length (where a transit pushes nothing).
fn ifa_frames() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for l4 in RULES {
        for (inband, transits) in [(true, 0), (false, 1), (true, 2)] {
            let settings = Settings { l4, inband, ..Settings::default() };
            frames.extend(plain().iter().filter_map(|frame| instrumented(frame, &settings, transits)));
        }
        let at_limit = Settings { l4, hop_limit: 1, max_length: 16, ..Settings::default() };
        frames.extend(plain().iter().take(3).filter_map(|frame| instrumented(frame, &at_limit, 1)));
    }
    frames
}

/// For one frame: whether the terminator's fast path took it; where it
/// did, the general path found the same and strips the same bytes.
fn sink_agrees(frame: &[u8], rule: L4Rule) -> bool {
    let domain = Domain::default();
    let Some(fast) = FastSink::find(frame, &domain) else { return false };
    let general = sink::find(frame, &domain);
    assert_eq!(general, Ok(Some(fast.found)), "{frame:02x?}");
    assert_eq!(fast.report_end(), fast.found.report_end());
    let (mut mine, mut theirs) = (Buffer::new(frame), Buffer::new(frame));
    let removed = mine.with(|f| fast.strip(f, rule));
    assert_eq!(removed, theirs.with(|f| sink::strip(f, &fast.found, rule)));
    assert_eq!(removed, Some(fast.removed_len()), "{frame:02x?}");
    assert_eq!(mine.frame(), theirs.frame());
    true
}

#[test]
fn fast_sink_finds_and_strips_what_the_general_sink_does() {
    let (mut bases, mut taken, mut seen) = (0, 0, 0);
    for base in ifa_frames() {
        bases += usize::from(sink_agrees(&base, L4Rule::Keep));
        for (n, frame) in neighbours(&base).enumerate() {
            seen += 1;
            taken += usize::from(sink_agrees(&frame, RULES[n % 2]));
        }
    }
    // Every base frame of the fast path's shape (4 v4 + 3 v6 plain frames
    // of 14 instrumented per rule and case) is taken; GRE, tags, options
    // and Hop-by-Hop headers are not.
    assert_eq!(bases, 2 * (3 * 8 + 3), "bases taken");
    assert!(taken * 10 > seen, "only {taken} of {seen} neighbours taken");
}

#[test]
fn fast_transit_pushes_what_the_general_transit_pushes() {
    let domain = Domain::default();
    let (mut taken, mut seen) = (0, 0);
    let mut outcomes = std::collections::BTreeSet::new();
    for base in ifa_frames() {
        for (n, frame) in neighbours(&base).enumerate() {
            let rule = RULES[n % 2];
            let mtu = if n % 3 == 0 { MTU } else { frame.len() as u16 + 10 };
            seen += 1;
            let mut mine = Buffer::new(&frame);
            let Some(outcome) = mine.with(|f| FastTransit.push(f, &domain, mtu, &hop(9), rule)) else {
                assert_eq!(mine.frame(), &frame[..], "declined, yet changed");
                continue;
            };
            let found = sink::find(&frame, &domain).unwrap().unwrap();
            let with_ttl = hop(9).with_ttl(&frame, &found.ip);
            let mut theirs = Buffer::new(&frame);
            assert_eq!(theirs.with(|f| transit::push(f, &domain, mtu, &with_ttl, rule)), Ok(outcome));
            assert_eq!(mine.frame(), theirs.frame(), "{frame:02x?}");
            outcomes.insert(format!("{outcome:?}"));
            taken += 1;
        }
    }
    assert!(taken * 10 > seen, "only {taken} of {seen} neighbours taken");
    let every = ["HopLimitReached", "MaxLengthReached", "MtuExceeded", "Pushed(32)"];
    assert_eq!(outcomes.into_iter().collect::<Vec<_>>(), every);
}

/// For one frame: whether the initiator's fast path took it; where it
/// did, the general path planned the same and writes the same bytes.
fn source_agrees(frame: &[u8], settings: &Settings, mtu: u16) -> bool {
    let domain = Domain::default();
    let fast = FastSource::of(&domain, settings, mtu).expect("a fast path");
    let Some(parts) = FastFrame::read(frame, 0).filter(|parts| fast.takes(parts)) else { return false };
    let plan = source::plan(frame, &domain, mtu);
    assert_eq!(plan, Ok(fast.plan(&parts)), "{frame:02x?}");
    let plan = plan.unwrap();
    let (mut mine, mut theirs) = (Buffer::new(frame), Buffer::new(frame));
    assert!(mine.with(|f| fast.insert(f, &parts, &hop(1))));
    let with_ttl = hop(1).with_ttl(frame, &plan.ip);
    let inserted = theirs.with(|f| source::insert(f, &plan, &domain, settings, &with_ttl));
    assert_eq!(inserted, Ok(source::INSERTED_LEN));
    assert_eq!(mine.frame(), theirs.frame(), "{frame:02x?}");
    true
}

#[test]
fn fast_source_writes_what_the_general_source_writes() {
    let (mut bases, mut taken, mut seen) = (0, 0, 0);
    for (k, settings) in RULES.map(|l4| Settings { l4, ..Settings::default() }).iter().enumerate() {
        for base in plain() {
            // One MTU with room, one that the first frames just pass.
            let mtu = if k == 0 { MTU } else { base.len() as u16 + 20 };
            bases += usize::from(source_agrees(&base, settings, MTU));
            for frame in neighbours(&base) {
                seen += 1;
                taken += usize::from(source_agrees(&frame, settings, mtu));
            }
        }
    }
    // 4 IPv4 and 3 IPv6 frames of the fast path's shape, under each rule.
    assert_eq!(bases, 2 * 8, "bases taken");
    assert!(taken * 10 > seen, "only {taken} of {seen} neighbours taken");
}

#[test]
fn a_zone_whose_protocol_a_fast_frame_carries_has_no_fast_source() {
    let settings = Settings::default();
    assert!(FastSource::of(&Domain::default(), &settings, MTU).is_some());
    for protocol in [6, 17] {
        assert_eq!(FastSource::of(&Domain { protocol }, &settings, MTU), None);
    }
    let small = Settings { max_length: 7, ..settings };
    assert_eq!(FastSource::of(&Domain::default(), &small, MTU), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Generated packets (IP and TCP options, VLAN tags, IPv6 extension
    /// headers, zero UDP checksums): where a fast path takes one, it does
    /// what the general path does.
    #[test]
    fn fast_paths_agree_on_generated_packets(spec in packet_v4_v6(), cover in any::<bool>(), transits in 0u32..3) {
        let rule = if cover { L4Rule::Cover } else { L4Rule::Keep };
        let settings = Settings { l4: rule, ..Settings::default() };
        let frame = spec.build();
        source_agrees(&frame, &settings, 9000);
        let Some(ifa) = instrumented(&frame, &settings, transits) else { return Ok(()) };
        sink_agrees(&ifa, rule);
        let domain = Domain::default();
        let mut mine = Buffer::new(&ifa);
        if let Some(outcome) = mine.with(|f| FastTransit.push(f, &domain, 9000, &hop(7), rule)) {
            let found = sink::find(&ifa, &domain).unwrap().unwrap();
            let mut theirs = Buffer::new(&ifa);
            let with_ttl = hop(7).with_ttl(&ifa, &found.ip);
            prop_assert_eq!(theirs.with(|f| transit::push(f, &domain, 9000, &with_ttl, rule)), Ok(outcome));
            prop_assert_eq!(mine.frame(), theirs.frame());
        }
    }
}
