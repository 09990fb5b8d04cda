//! IFA frames the roles wrote (an initiator and 0-7 transits, under either
//! L4 rule), each with one lie the input chooses: Current Length, Max
//! Length below it, a hop count past the packet, the flags, GNS, version,
//! Next Header, the IP packet cut short (its length fixed, or the frame
//! cut as it is). The walk refuses exactly what docs/ifa.md says it
//! refuses, by the reason it names, and accepts the rest; what it accepts
//! the terminator strips without corrupting: the original exactly when
//! the lie was in the bytes it removes, else a packet whose IP length,
//! IPv4 checksum (by the sum computed here), protocol and L4 header are
//! right for what is left; and a location taken before the lie strips
//! nothing from a frame cut under it, leaving it as it was.
#![no_main]

use int_core::ifa::source::{self, Settings};
use int_core::ifa::{sink, transit, Domain, L4Rule, Located, Refusal};
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

#[path = "ifa_frames.rs"]
mod ifa_frames;

use ifa_frames::{hop, Bytes, Layout, Spec};

const HEADROOM: usize = 40 + 7 * 32;

/// A valid IFA frame, the original it was built from, and where its IFA
/// parts lie (frame offsets).
struct Valid {
    original: Vec<u8>,
    frame: Vec<u8>,
    layout: Layout,
    md_at: usize,
    payload_at: usize,
    end: usize,
}

fn instrument(spec: &Spec, rule: L4Rule, transits: u32, max_length: u8) -> Option<Valid> {
    let (original, layout) = spec.build();
    let domain = Domain::default();
    let plan = source::plan(&original, &domain, u16::MAX).ok()?;
    let mut buffer = vec![0u8; HEADROOM + original.len()];
    buffer[HEADROOM..].copy_from_slice(&original);
    let mut view = FrameBuf::new(&mut buffer, HEADROOM, original.len())?;
    let settings = Settings { max_length: max_length.max(8), l4: rule, ..Settings::default() };
    source::insert(&mut view, &plan, &domain, &settings, &hop(0)).ok()?;
    for n in 1..=transits {
        transit::push(&mut view, &domain, u16::MAX, &hop(n), rule).ok()?;
    }
    let frame = view.frame().to_vec();
    let found = domain.locate(&frame).ok()??;
    let end = found.ip.end;
    Some(Valid { original, frame, layout, md_at: found.md_at, payload_at: found.payload_at, end })
}

/// What docs/ifa.md says the walk does with the IFA fields of `frame`,
/// laid out as `valid` but for the IP packet ending at `end`.
fn expected(frame: &[u8], valid: &Valid, end: usize) -> Result<(), Refusal> {
    let at = valid.layout.l4;
    // A byte past the cut is never judged: a truncation is found first.
    let byte = |i: usize| frame.get(i).copied().unwrap_or(0);
    let (version, gns, next, flags, max) =
        (byte(at) >> 4, byte(at) & 0x0f, byte(at + 1), byte(at + 2), byte(at + 3));
    let current = byte(valid.md_at + 3);
    let l4_len = valid.md_at - at - 4;
    let checks = [
        (end < at + 4, Refusal::Truncated),
        (version != 2, Refusal::Version),
        (gns != 15, Refusal::GlobalNameSpace),
        (flags & 0x10 != 0, Refusal::MetadataFragment),
        (flags & 0x08 != 0, Refusal::TailStamp),
        (flags & 0x01 != 0, Refusal::ChecksumHeader),
        (!matches!(next, 6 | 17 | 47), Refusal::NextHeader),
        (end < at + 4 + l4_len, Refusal::Truncated),
        (end < valid.md_at + 4, Refusal::Truncated),
        ((usize::from(current) * 4) % 32 != 0, Refusal::LengthNotHops),
        (current > max, Refusal::LengthPastMax),
        (valid.md_at + 4 + usize::from(current) * 4 > end, Refusal::StackPastPacket),
    ];
    match checks.iter().find(|(refused, _)| *refused) {
        Some((_, reason)) => Err(*reason),
        None => Ok(()),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes::new(data);
    let spec = Spec::read(&mut bytes);
    let (choice, value, extra) = (bytes.byte(), bytes.byte(), bytes.u16());
    let rule = if choice & 0x80 == 0 { L4Rule::Keep } else { L4Rule::Cover };
    let transits = u32::from(choice >> 4) & 7;
    let Some(valid) = instrument(&spec, rule, transits, (extra >> 8) as u8) else { return };
    let mut frame = valid.frame.clone();
    let (at, md_at, layout) = (valid.layout.l4, valid.md_at, valid.layout);
    let mut end = valid.end;
    let mut known = true;
    match choice & 0x0f {
        0 => frame[md_at + 3] = value,
        1 => frame[at + 3] = value % frame[md_at + 3].max(1),
        2 => {
            frame[at + 3] = 0xff;
            frame[md_at + 3] = frame[md_at + 3].saturating_add(8 * (value % 32).max(1));
        }
        3 => frame[at + 2] = value,
        4 => frame[at] = 0x20 | (value & 0x0f),
        5 => frame[at] = (value << 4) | 0x0f,
        6 => {
            // TCP, UDP and GRE read one another's headers as they can.
            known = !matches!(value, 6 | 17 | 47);
            frame[at + 1] = value;
        }
        7 | 8 => {
            // The IP packet cut short, its length saying so.
            end = at + usize::from(extra) % (valid.end - at + 1);
            layout.set_end(&mut frame, end);
            if choice & 0x0f == 7 {
                frame.truncate(end);
            }
        }
        _ => {
            // The frame cut as it is: the IP header's length lies.
            let cut = usize::from(extra) % (frame.len() + 1);
            frame.truncate(cut);
            return cut_as_it_is(&frame, &valid, rule);
        }
    }
    let located = Domain::default().locate(&frame);
    if known {
        let reason = located.as_ref().map(|_| ()).map_err(|refused| refused.reason);
        assert_eq!(reason, expected(&frame, &valid, end), "the walk's answer");
    }
    if let Ok(Some(found)) = located {
        stripped(&frame, &found, &valid, rule);
    }
    if frame.len() < valid.end {
        stale_strip_refused(&frame, &valid, rule);
    }
});

/// A frame cut anywhere, its IP length left lying: refused as a packet
/// that lies where the cut is inside the IP packet; where only padding
/// went, the walk finds what it found before.
fn cut_as_it_is(frame: &[u8], valid: &Valid, rule: L4Rule) {
    let located = Domain::default().locate(frame);
    if frame.len() < valid.end {
        let reason = located.map(|_| ()).map_err(|refused| refused.reason);
        assert_eq!(reason, Err(Refusal::Packet), "a cut IP packet");
        stale_strip_refused(frame, valid, rule);
        return;
    }
    let found = located.expect("only padding went").expect("still IFA");
    assert_eq!(found, Domain::default().locate(&valid.frame).expect("valid").expect("IFA"));
    stripped(frame, &found, valid, rule);
}

/// A location taken on the valid frame, used on a frame cut shorter than
/// its IP packet: nothing stripped, nothing changed.
fn stale_strip_refused(frame: &[u8], valid: &Valid, rule: L4Rule) {
    let stale = Domain::default().locate(&valid.frame).expect("valid").expect("IFA");
    let mut buffer = frame.to_vec();
    let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).expect("a view");
    assert_eq!(sink::strip(&mut view, &stale, rule), None, "a stale location on a cut frame");
    assert_eq!(view.frame(), frame, "a refused strip changes nothing");
}

/// What the terminator leaves of an accepted frame: the original exactly
/// when the walk found the layout the roles wrote (a lie only in the bytes
/// the terminator removes), else a packet right for what is left.
fn stripped(frame: &[u8], found: &Located, valid: &Valid, rule: L4Rule) {
    let mut buffer = frame.to_vec();
    let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).expect("a view");
    assert_eq!(sink::strip(&mut view, found, rule), Some(found.ifa_len()), "strip takes what the walk found");
    let out = view.frame();
    let layout = valid.layout;
    let same_md = frame.get(valid.md_at..valid.md_at + 4) == valid.frame.get(valid.md_at..valid.md_at + 4);
    let same_layout = found.md_at == valid.md_at && found.payload_at == valid.payload_at;
    let same_next = found.header.next_header == valid.layout.protocol;
    if same_layout && same_next && found.ip.end == valid.end && same_md {
        let kept = frame.len() - (valid.frame.len() - valid.original.len());
        assert_eq!(out, &valid.original[..kept], "the original, exactly");
        return;
    }
    let end = found.ip.end - found.ifa_len();
    assert_eq!(out.len(), frame.len() - found.ifa_len());
    assert_eq!(layout.length_field(out), layout.length_for(end), "IP length");
    assert!(layout.ipv4_checksum_right(out), "IPv4 header checksum");
    assert_eq!(out[layout.protocol_at()], found.header.next_header, "the protocol");
    assert_eq!(out[..layout.l3], valid.original[..layout.l3], "the link header");
    let l4_len = found.md_at - found.l4_at;
    if rule == L4Rule::Keep {
        assert_eq!(out[layout.l4..layout.l4 + l4_len], frame[found.l4_at..found.md_at], "the L4 header");
    }
    assert_eq!(out[layout.l4 + l4_len..], frame[found.payload_at..], "what follows the stack");
}
