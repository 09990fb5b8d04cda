//! IFA's walk on arbitrary frames, judged beyond "no panic": the
//! terminator's `find` answers as `Domain::locate`; a refusal's
//! `ParseError` points inside the frame; where the fast path
//! (`FastSink::find`) takes a frame, the walk finds the same; an accepted frame's offsets are
//! in order and inside the IP packet, its stack is Current Length x 4
//! bytes of whole 32-byte hops within Max Length, its headers and every
//! hop re-emit to the bytes they were read from, and the terminator strips
//! exactly the bytes the walk counted, leaving an IP packet whose length
//! and protocol say what remains. A report's copy of an accepted frame
//! (from its IP header, cut after the stack) is found as the frame is;
//! any bytes read as a report's copy are found, left or refused without a
//! panic, a refusal pointing inside them. A transit pushes onto what the walk
//! accepts (one hop on top, Hop Limit - 1, Current Length + 8, and the walk
//! accepts the result), or refuses as the walk did and changes nothing.
#![no_main]

use int_core::error::ParseError;
use int_core::ifa::fast_sink::FastSink;
use int_core::ifa::transit::{self, Outcome};
use int_core::ifa::{self, hop::HOP_LEN, sink, Domain, HopRepr, L4Rule, Located, Refused};
use int_core::outcome::NotPushed;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let domain = Domain { protocol: if selector & 1 == 0 { ifa::DEFAULT_PROTOCOL } else { 131 } };
    let located = domain.locate(frame);
    assert_eq!(sink::find(frame, &domain), located, "find is locate");
    if let Some(fast) = FastSink::find(frame, &domain) {
        assert_eq!(located, Ok(Some(fast.found)), "the fast path finds what the walk finds");
    }
    if let Err(refused) = sink::find_in_report(frame, &domain) {
        offset_inside(refused.error, frame.len(), frame.len() + 1);
    }
    let rule = if selector & 2 == 0 { L4Rule::Keep } else { L4Rule::Cover };
    pushed_or_unchanged(frame, &domain, &located, rule, selector);
    let found = match located {
        Ok(Some(found)) => found,
        Ok(None) => return,
        Err(refused) => {
            assert!(ifa::Refusal::ALL.contains(&refused.reason));
            // The IP walk (not IFA's) names an absent IPv6 extension
            // header by where it would begin, which may be the frame's end.
            let fields_end =
                if refused.reason == ifa::Refusal::Packet { frame.len() + 1 } else { frame.len() };
            offset_inside(refused.error, frame.len(), fields_end);
            return;
        }
    };
    let ip = found.ip;
    assert_eq!(ip.protocol, domain.protocol);
    assert!(ip.l3 < found.header_at && found.header_at == ip.l4);
    assert_eq!(found.l4_at, found.header_at + 4);
    assert!(found.l4_at < found.md_at && found.md_at + 4 == found.stack_at);
    assert!(found.stack_at <= found.payload_at && found.payload_at <= ip.end && ip.end <= frame.len());
    let stack_len = found.payload_at - found.stack_at;
    assert_eq!(stack_len, usize::from(found.md.current_length) * 4, "stack is Current Length x 4");
    assert_eq!(stack_len % HOP_LEN, 0, "whole hops");
    assert!(found.md.current_length <= found.header.max_length, "Current Length <= Max Length");
    assert_eq!(found.header.version, 2);
    assert_eq!(found.header.gns, 15);
    assert_eq!(found.header.flags.bits() & 0x19, 0, "MF, TS and C are refused");
    let mut word = [0u8; 4];
    found.header.emit(&mut word).expect("a read header re-emits");
    assert_eq!(word, frame[found.header_at..found.header_at + 4]);
    found.md.emit(&mut word).expect("a read metadata header re-emits");
    assert_eq!(word, frame[found.md_at..found.stack_at]);
    let stack = found.stack(frame);
    assert_eq!(stack.hop_count(), found.hop_count());
    assert_eq!(stack.hops().count(), found.hop_count(), "every hop reads");
    for (hop, bytes) in stack.hops().zip(frame[found.stack_at..found.payload_at].chunks_exact(HOP_LEN)) {
        let mut out = [0u8; HOP_LEN];
        assert_eq!(hop.emit(&mut out), Ok(HOP_LEN));
        assert_eq!(out, bytes, "a hop re-emits to its 32 bytes");
        assert_eq!(HopRepr::parse(&out), Ok(hop));
    }
    reported_as_found(frame, &domain, &found);
    stripped_as_counted(frame, &found, rule);
});

/// A report's copy of the frame, from its IP header through its stack, is
/// found with every offset shifted by the IP header's and the same IFA.
fn reported_as_found(frame: &[u8], domain: &Domain, found: &Located) {
    let l3 = found.ip.l3;
    let copy = &frame[l3..found.report_end()];
    let again = sink::find_in_report(copy, domain).expect("a copy is IFA").expect("found");
    assert_eq!((again.ip.l3, again.ip.end), (0, copy.len()));
    assert_eq!(
        (again.header_at, again.md_at, again.stack_at, again.payload_at),
        (found.header_at - l3, found.md_at - l3, found.stack_at - l3, found.payload_at - l3)
    );
    assert_eq!((again.header, again.carrier, again.md), (found.header, found.carrier, found.md));
    assert_eq!(again.flow(copy), found.flow(frame));
}

/// A refusal names a place in the frame: a field before `fields_end`, or
/// (cut short) where the bytes that were needed begin, at most its end.
fn offset_inside(error: ParseError, len: usize, fields_end: usize) {
    match error {
        ParseError::Truncated { offset, needed, available, .. } => {
            assert!(offset <= len, "{error:?} past a frame of {len}");
            assert!(available < needed, "{error:?} is not short");
        }
        ParseError::UnknownVersion { offset, .. }
        | ParseError::UnknownType { offset, .. }
        | ParseError::BadLength { offset, .. }
        | ParseError::Reserved { offset, .. }
        | ParseError::StackMismatch { offset, .. }
        | ParseError::HopCountExceeded { offset, .. } => {
            assert!(offset < fields_end, "{error:?} past a frame of {len}")
        }
    }
}

/// The terminator removes exactly what the walk counted: the bytes before
/// the IFA header (but the IP length and protocol) and from the payload
/// on are the input's, the L4 header follows the IP header, the IP length
/// shrinks by as much, and the protocol is Next Header's.
fn stripped_as_counted(frame: &[u8], found: &ifa::Located, rule: L4Rule) {
    let mut buffer = frame.to_vec();
    let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).expect("a view");
    let removed = sink::strip(&mut view, found, rule);
    assert_eq!(removed, Some(found.ifa_len()), "strip takes what find located");
    let out = view.frame();
    let ip = found.ip;
    assert_eq!(out.len(), frame.len() - found.ifa_len());
    assert_eq!(out[..ip.l3], frame[..ip.l3], "the link header");
    assert_eq!(out[found.md_at - 4..], frame[found.payload_at..], "the payload and padding");
    let l4_len = found.md_at - found.l4_at;
    let l4 = &out[found.header_at..found.header_at + l4_len];
    if rule == L4Rule::Keep || matches!(found.carrier, ifa::Carrier::Gre(_)) {
        assert_eq!(l4, &frame[found.l4_at..found.md_at], "the L4 header");
    }
    assert_eq!(out[ip.next_header_at], found.header.next_header, "the protocol");
    let (length_at, before) = match ip.version {
        int_core::locate::IpVersion::V4 => (ip.l3 + 2, ip.end - ip.l3),
        int_core::locate::IpVersion::V6 => (ip.l3 + 4, ip.end - ip.l3 - 40),
    };
    let length = usize::from(u16::from_be_bytes([out[length_at], out[length_at + 1]]));
    assert_eq!(length, before - found.ifa_len(), "the IP length");
}

/// A transit on any frame: a refused walk is `Malformed` with the walk's
/// error, no IFA is `NotInt`, and where nothing is pushed nothing changes;
/// a pushed hop lies on top of the stack the walk found, and the walk
/// accepts the result with one hop more.
fn pushed_or_unchanged(
    frame: &[u8],
    domain: &Domain,
    located: &Result<Option<Located>, Refused>,
    rule: L4Rule,
    selector: u8,
) {
    let headroom = if selector & 4 == 0 { 64 } else { 31 };
    let mtu = if selector & 8 == 0 { u16::MAX } else { 1500 };
    let mut buffer = vec![0u8; headroom + frame.len()];
    buffer[headroom..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, headroom, frame.len()).expect("a view");
    let hop = HopRepr { lns: 1, device_id: 0xabcde, ip_ttl: 9, ..HopRepr::default() };
    let outcome = transit::push(&mut view, domain, mtu, &hop, rule);
    let found = match located {
        Err(refused) => return assert_eq!(outcome, Err(NotPushed::Malformed(refused.error))),
        Ok(None) => return assert_eq!(outcome, Err(NotPushed::NotInt)),
        Ok(Some(found)) => found,
    };
    if outcome != Ok(Outcome::Pushed(HOP_LEN)) {
        assert_eq!(view.frame(), frame, "{outcome:?} changes nothing");
        return;
    }
    let out = view.frame();
    assert!(found.md.hop_limit > 0);
    assert!(found.md.current_length + 8 <= found.header.max_length);
    let after = domain.locate(out).expect("the walk takes a pushed frame").expect("still IFA");
    assert_eq!(after.md.hop_limit, found.md.hop_limit - 1, "Hop Limit - 1");
    assert_eq!(after.md.current_length, found.md.current_length + 8, "Current Length + 8");
    assert_eq!(after.hop_count(), found.hop_count() + 1);
    assert_eq!(after.stack(out).hops().next(), Some(hop), "the new hop on top");
    assert_eq!(out[found.stack_at + HOP_LEN..], frame[found.stack_at..], "the older hops and payload");
    assert_eq!(out[..found.ip.l3], frame[..found.ip.l3], "the link header");
}
