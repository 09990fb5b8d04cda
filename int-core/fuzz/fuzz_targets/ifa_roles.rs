//! IFA's three roles on plain packets the input shapes (IPv4 or IPv6 with
//! options, TCP, UDP or GRE, sizes up to 64 KB, padding, a first fragment;
//! Max Length, Hop Limit, MTU, headroom, hop count), under both L4 rules:
//! the initiator and each transit either do what docs/ifa.md says (the IP
//! length grows by 40, then 32 a hop, with an IPv4 checksum that verifies
//! by the sum computed here; Hop Limit falls by one, Current Length grows
//! by 8, the new hop is on top; under the draft's rule the L4 header is
//! untouched, under scapy's its checksum verifies over the metadata), or
//! refuse by the documented reason and leave the frame as it was; and the
//! terminator gives back the original bytes exactly.
#![no_main]

use int_core::ifa::source::{self, Settings};
use int_core::ifa::transit::{self, Outcome};
use int_core::ifa::{sink, Action, Domain, L4Rule};
use int_core::outcome::{NotPushed, Skip};
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

#[path = "ifa_frames.rs"]
mod ifa_frames;

use ifa_frames::{hop, hop_bytes, l4_checksum_right, Bytes, Layout, Spec, L4};

/// What the input chooses besides the packet.
#[derive(Debug, Clone, Copy)]
struct Run {
    domain: Domain,
    max_length: u8,
    hop_limit: u8,
    request_vector: u8,
    action: Action,
    inband: bool,
    mtu: u16,
    headroom: usize,
    transits: u32,
}

impl Run {
    fn read(bytes: &mut Bytes<'_>, ip_len: usize) -> Run {
        let bits = bytes.byte();
        let (max_length, hop_limit, mtu) = (bytes.byte(), bytes.byte(), bytes.u16());
        Run {
            domain: Domain { protocol: if bits & 1 == 0 { 253 } else { 131 } },
            max_length: if bits & 2 == 0 { max_length } else { max_length % 72 },
            hop_limit: if bits & 4 == 0 { hop_limit } else { hop_limit % 10 },
            request_vector: bytes.byte(),
            action: Action::from_bits_retain(bytes.byte()),
            inband: bits & 8 == 0,
            mtu: if bits & 0x10 == 0 {
                mtu
            } else {
                (ip_len + 40 + usize::from(mtu % 300)).min(65535) as u16
            },
            headroom: 2 * usize::from(bytes.byte()),
            transits: u32::from(bits >> 5),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes::new(data);
    let spec = Spec::read(&mut bytes);
    let (original, layout) = spec.build();
    let run = Run::read(&mut bytes, layout.ip_len());
    for rule in [L4Rule::Keep, L4Rule::Cover] {
        roles(&spec, &original, &layout, &run, rule);
    }
});

fn roles(spec: &Spec, original: &[u8], layout: &Layout, run: &Run, rule: L4Rule) {
    let planned = source::plan(original, &run.domain, run.mtu);
    let expected = if spec.fragment {
        Err(Skip::Fragment)
    } else if layout.ip_len() + 40 > usize::from(run.mtu) {
        Err(Skip::TooBig)
    } else {
        Ok(())
    };
    assert_eq!(planned.map(|_| ()), expected, "plan");
    let Ok(plan) = planned else { return };
    let mut buffer = vec![0u8; run.headroom + original.len()];
    buffer[run.headroom..].copy_from_slice(original);
    let mut view = FrameBuf::new(&mut buffer, run.headroom, original.len()).expect("a view");
    let settings = Settings {
        max_length: run.max_length,
        hop_limit: run.hop_limit,
        request_vector: run.request_vector,
        action: run.action,
        inband: run.inband,
        l4: rule,
    };
    let inserted = source::insert(&mut view, &plan, &run.domain, &settings, &hop(0));
    let expected = if run.max_length < 8 {
        Err(Skip::TooBig)
    } else if run.headroom < 40 {
        Err(Skip::NoHeadroom)
    } else {
        Ok(40)
    };
    assert_eq!(inserted, expected, "insert");
    if inserted.is_err() {
        assert_eq!(view.frame(), original, "a refused insert changes nothing");
        return;
    }
    initiated(view.frame(), original, layout, run, rule);
    let md_at = layout.l4 + 4 + layout.l4_len;
    let mut pushed = 0;
    for n in 1..=run.transits {
        let headroom = view.headroom();
        let before = view.frame().to_vec();
        let outcome = transit::push(&mut view, &run.domain, run.mtu, &hop(n), rule);
        let expected = expected_push(&before, layout, md_at, run.mtu, headroom);
        assert_eq!(outcome, expected, "push {n}");
        if outcome != Ok(Outcome::Pushed(32)) {
            assert_eq!(view.frame(), &before[..], "a refused push changes nothing");
            continue;
        }
        pushed += 1;
        transited(view.frame(), &before, layout, md_at, n, rule);
    }
    let found = sink::find(view.frame(), &run.domain).expect("our own IFA reads").expect("and is there");
    assert_eq!(found.hop_count(), 1 + pushed);
    let devices: Vec<u32> = found.stack(view.frame()).hops().map(|h| h.device_id).collect();
    let newest_first: Vec<u32> = (0..=pushed as u32).rev().map(|n| hop(n).device_id).collect();
    assert_eq!(devices, newest_first, "hops newest first");
    assert_eq!(sink::strip(&mut view, &found, rule), Some(40 + 32 * pushed));
    assert_eq!(view.frame(), original, "strip(push^n(insert(p))) == p");
}

/// The IP length, the IPv4 checksum (by the sum computed here) and the
/// L4 header as the rule says.
fn ip_and_l4(frame: &[u8], layout: &Layout, grown: usize, rule: L4Rule) {
    let ifa_end = layout.end + grown;
    assert_eq!(layout.length_field(frame), layout.length_for(ifa_end), "IP length");
    assert!(layout.ipv4_checksum_right(frame), "IPv4 header checksum");
    let l4_at = layout.l4 + 4;
    let segment = &frame[l4_at..ifa_end];
    let cover = rule == L4Rule::Cover && layout.protocol != L4::Gre.protocol();
    if cover {
        let right = l4_checksum_right(layout.addresses(frame), layout.protocol, segment);
        assert!(right, "the L4 checksum covers the metadata");
        if layout.protocol == L4::Udp.protocol() {
            let length = usize::from(u16::from_be_bytes([segment[4], segment[5]]));
            assert_eq!(length, segment.len(), "UDP Length covers the metadata");
        }
    }
}

/// The initiator's output: the IFA header after IP, the L4 header, the
/// metadata header and its hop.
fn initiated(frame: &[u8], original: &[u8], layout: &Layout, run: &Run, rule: L4Rule) {
    assert_eq!(frame.len(), original.len() + 40);
    ip_and_l4(frame, layout, 40, rule);
    assert_eq!(frame[layout.protocol_at()], run.domain.protocol);
    let at = layout.l4;
    let flags = if run.inband { 0x04 } else { 0 };
    assert_eq!(frame[at..at + 4], [0x2f, layout.protocol, flags, run.max_length], "IFA header");
    let l4 = &frame[at + 4..at + 4 + layout.l4_len];
    let original_l4 = &original[at..at + layout.l4_len];
    if rule == L4Rule::Keep || layout.protocol == L4::Gre.protocol() {
        assert_eq!(l4, original_l4, "the L4 header is the original's");
    }
    let md_at = at + 4 + layout.l4_len;
    let md = [run.request_vector, run.action.bits(), run.hop_limit, 8];
    assert_eq!(frame[md_at..md_at + 4], md, "metadata header");
    assert_eq!(frame[md_at + 4..md_at + 36], hop_bytes(&hop(0)), "the initiator's hop");
    assert_eq!(frame[md_at + 36..], original[at + layout.l4_len..], "payload and padding");
}

/// What docs/ifa.md says a push does to `before`.
fn expected_push(
    before: &[u8],
    layout: &Layout,
    md_at: usize,
    mtu: u16,
    headroom: usize,
) -> Result<Outcome, NotPushed> {
    let (hop_limit, current) = (before[md_at + 2], usize::from(before[md_at + 3]));
    let max_length = usize::from(before[layout.l4 + 3]);
    let ip_len = layout.ip_len() + 40 + 4 * (current - 8);
    if hop_limit == 0 {
        Ok(Outcome::HopLimitReached)
    } else if current + 8 > max_length {
        Ok(Outcome::MaxLengthReached)
    } else if ip_len + 32 > usize::from(mtu) {
        Ok(Outcome::MtuExceeded)
    } else if headroom < 32 {
        Err(NotPushed::NoHeadroom)
    } else {
        Ok(Outcome::Pushed(32))
    }
}

/// A transit's output: its hop on top, Hop Limit - 1, Current Length + 8.
fn transited(frame: &[u8], before: &[u8], layout: &Layout, md_at: usize, n: u32, rule: L4Rule) {
    assert_eq!(frame.len(), before.len() + 32);
    let current = usize::from(frame[md_at + 3]);
    ip_and_l4(frame, layout, 40 + 4 * (current - 8), rule);
    assert_eq!(frame[md_at + 2], before[md_at + 2] - 1, "Hop Limit falls by one");
    assert_eq!(current, usize::from(before[md_at + 3]) + 8, "Current Length grows by 8");
    assert_eq!(frame[md_at..md_at + 2], before[md_at..md_at + 2]);
    assert_eq!(frame[..layout.l3], before[..layout.l3], "the link header");
    assert_eq!(frame[layout.l4..layout.l4 + 4], before[layout.l4..layout.l4 + 4], "the IFA header");
    assert_eq!(frame[md_at + 4..md_at + 36], hop_bytes(&hop(n)), "the new hop on top");
    assert_eq!(frame[md_at + 36..], before[md_at + 4..], "the older hops, payload and padding");
}
