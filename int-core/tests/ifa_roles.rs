//! IFA's roles on generated IPv4 and IPv6 (with extension headers) UDP and
//! TCP packets (IP and TCP options, VLAN tags, zero UDP checksums), under
//! both L4 rules: strip(push^n(insert(p))) == p byte for byte; on the wire
//! the IPv4 checksum verifies, the hops read back newest first, and the L4
//! header is untouched (the draft's rule) or covers the metadata with a
//! checksum that verifies (scapy's rule). And the pushes a transit refuses.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::*;
use int_core::checksum;
use int_core::craft::PacketSpec;
use int_core::ifa::source::{self, Settings};
use int_core::ifa::transit::{self, Outcome};
use int_core::ifa::{sink, Domain, HopRepr, L4Rule, Located};
use int_core::locate::IpVersion;
use int_core::outcome::Skip;
use proptest::prelude::*;

const MTU: u16 = 9000;

fn hop(device_id: u32) -> HopRepr {
    HopRepr { lns: 1, device_id, ip_ttl: 63, residence_ns: device_id * 100, ..HopRepr::default() }
}

fn locate(frame: &[u8]) -> Located {
    Domain::default().locate(frame).unwrap().unwrap()
}

/// The IPv4 header checksum, and under scapy's rule the L4 checksum over
/// the L4 header, the metadata and the payload with the original protocol.
fn verify(frame: &[u8], found: &Located, rule: L4Rule, zero_udp: bool) -> Result<(), String> {
    let ip = found.ip;
    if ip.version == IpVersion::V4 && checksum::checksum(&frame[ip.l3..ip.l4]) != 0 {
        return Err("ipv4 header checksum".into());
    }
    if rule == L4Rule::Keep || zero_udp {
        return Ok(());
    }
    let addresses = match ip.version {
        IpVersion::V4 => checksum::sum(0, &frame[ip.l3 + 12..ip.l3 + 20]),
        IpVersion::V6 => checksum::sum(0, &frame[ip.l3 + 8..ip.l3 + 40]),
    };
    let segment = &frame[found.l4_at..ip.end];
    let pseudo = addresses + u32::from(found.header.next_header) + segment.len() as u32;
    match checksum::fold(checksum::sum(pseudo, segment)) {
        0xffff => Ok(()),
        other => Err(format!("l4 checksum sums to {other:#06x}")),
    }
}

fn rule() -> impl Strategy<Value = L4Rule> {
    prop_oneof![Just(L4Rule::Keep), Just(L4Rule::Cover)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn strip_of_push_of_insert_is_identity(spec in packet_v4_v6(), rule in rule(), transits in 0u32..4) {
        let original = spec.build();
        let plan = source::plan(&original, &Domain::default(), MTU).unwrap();
        let l4_len = plan.l4_len;
        let mut buffer = Buffer::new(&original);
        let settings = Settings { l4: rule, hop_limit: 3, ..Settings::default() };
        let inserted = buffer.with(|f| source::insert(f, &plan, &Domain::default(), &settings, &hop(1)));
        prop_assert_eq!(inserted, Ok(source::INSERTED_LEN));
        for n in 0..transits {
            let pushed = buffer.with(|f| transit::push(f, &Domain::default(), MTU, &hop(n + 2), rule));
            let expected = if n < 3 { Outcome::Pushed(32) } else { Outcome::HopLimitReached };
            prop_assert_eq!(pushed, Ok(expected));
        }
        let found = locate(buffer.frame());
        let pushed = transits.min(3);
        prop_assert_eq!(found.hop_count() as u32, 1 + pushed);
        prop_assert_eq!((found.md.hop_limit, found.md.current_length), (3 - pushed as u8, 8 + 8 * pushed as u8));
        let devices: Vec<u32> = found.stack(buffer.frame()).hops().map(|h| h.device_id).collect();
        let newest_first: Vec<u32> = (1..=pushed + 1).rev().collect();
        prop_assert_eq!(devices, newest_first);
        prop_assert_eq!(verify(buffer.frame(), &found, rule, zero_udp(&spec)), Ok(()));
        let l4 = &buffer.frame()[found.l4_at..found.md_at];
        let original_l4 = &original[plan.ip.l4..plan.ip.l4 + l4_len];
        if rule == L4Rule::Keep {
            prop_assert_eq!(l4, original_l4);
        }
        let removed = buffer.with(|f| sink::strip(f, &found, rule));
        prop_assert_eq!(removed, Some(found.ifa_len()));
        prop_assert_eq!(buffer.frame(), &original[..]);
    }
}

fn udp4() -> Vec<u8> {
    PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2, 40).build()
}

fn instrumented(settings: &Settings) -> Buffer {
    let frame = udp4();
    let plan = source::plan(&frame, &Domain::default(), MTU).unwrap();
    let mut buffer = Buffer::new(&frame);
    buffer.with(|f| source::insert(f, &plan, &Domain::default(), settings, &hop(1))).unwrap();
    buffer
}

#[test]
fn a_transit_pushes_nothing_past_hop_limit_max_length_or_mtu() {
    let push = |buffer: &mut Buffer, mtu: u16| {
        let before = buffer.frame().to_vec();
        let outcome = buffer.with(|f| transit::push(f, &Domain::default(), mtu, &hop(9), L4Rule::Keep));
        (outcome, before == buffer.frame())
    };
    let mut spent = instrumented(&Settings { hop_limit: 0, ..Settings::default() });
    assert_eq!(push(&mut spent, MTU), (Ok(Outcome::HopLimitReached), true));
    let mut full = instrumented(&Settings { max_length: 15, ..Settings::default() });
    assert_eq!(push(&mut full, MTU), (Ok(Outcome::MaxLengthReached), true));
    let mut two = instrumented(&Settings { max_length: 16, ..Settings::default() });
    assert_eq!(push(&mut two, MTU), (Ok(Outcome::Pushed(32)), false));
    assert_eq!(push(&mut two, MTU), (Ok(Outcome::MaxLengthReached), true));
    let mut big = instrumented(&Settings::default());
    let ip_len = locate(big.frame()).ip.ip_len() as u16;
    assert_eq!(push(&mut big, ip_len + 31), (Ok(Outcome::MtuExceeded), true));
    assert_eq!(push(&mut big, ip_len + 32), (Ok(Outcome::Pushed(32)), false));
    let mut plain = Buffer::new(&udp4());
    let outcome = plain.with(|f| transit::push(f, &Domain::default(), MTU, &hop(9), L4Rule::Keep));
    assert_eq!(outcome, Err(int_core::outcome::NotPushed::NotInt));
}

#[test]
fn an_initiator_leaves_ifa_fragments_other_protocols_and_big_packets_alone() {
    let domain = Domain::default();
    let ifa = instrumented(&Settings::default());
    assert_eq!(source::plan(ifa.frame(), &domain, MTU), Err(Skip::AlreadyMarked));
    let mut fragment = udp4();
    fragment[20] = 0x20;
    assert_eq!(source::plan(&fragment, &domain, MTU), Err(Skip::Fragment));
    let mut icmp = udp4();
    icmp[23] = 1;
    icmp[24..26].copy_from_slice(&[0, 0]);
    assert_eq!(source::plan(&icmp, &domain, MTU), Err(Skip::NotTcpUdp));
    let ip_len = (udp4().len() - 14) as u16;
    assert_eq!(source::plan(&udp4(), &domain, ip_len + 39), Err(Skip::TooBig));
    assert!(source::plan(&udp4(), &domain, ip_len + 40).is_ok());
    let plan = source::plan(&udp4(), &domain, MTU).unwrap();
    let frame = udp4();
    let mut tight = vec![0; 39 + frame.len()];
    tight[39..].copy_from_slice(&frame);
    let mut fb = int_core::FrameBuf::new(&mut tight, 39, frame.len()).unwrap();
    let inserted = source::insert(&mut fb, &plan, &domain, &Settings::default(), &hop(1));
    assert_eq!((inserted, fb.frame() == &frame[..]), (Err(Skip::NoHeadroom), true));
}

/// Every frame one change or one cut away from IFA frames (IPv4 UDP and
/// IPv6 TCP, both rules): the walk, the transit and the terminator never
/// panic; what the walk takes, the terminator strips, and the transit
/// either pushes a hop or says why not.
#[test]
fn no_panic_on_any_neighbour_of_an_ifa_frame() {
    let tcp6 =
        PacketSpec::tcp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 5, 6, 20).build();
    let (mut located, mut stripped) = (0, 0);
    for (frame, rule) in [(udp4(), L4Rule::Keep), (tcp6, L4Rule::Cover)] {
        let plan = source::plan(&frame, &Domain::default(), MTU).unwrap();
        let mut buffer = Buffer::new(&frame);
        let settings = Settings { l4: rule, ..Settings::default() };
        buffer.with(|f| source::insert(f, &plan, &Domain::default(), &settings, &hop(1))).unwrap();
        for neighbour in neighbours(buffer.frame()) {
            let Ok(Some(found)) = Domain::default().locate(&neighbour) else { continue };
            located += 1;
            let mut pushed = Buffer::new(&neighbour);
            let _ = pushed.with(|f| transit::push(f, &Domain::default(), MTU, &hop(2), rule));
            let mut strip = Buffer::new(&neighbour);
            stripped += usize::from(strip.with(|f| sink::strip(f, &found, rule)).is_some());
        }
    }
    assert_eq!(located, stripped);
    assert!(located > 500, "only {located} neighbours located");
}
