//! IOAM's roles on arbitrary frames, judged beyond "no panic": whatever
//! frame the decapsulating node accepts as traced, its output walks
//! cleanly under etherparse, is the input less exactly the bytes it said it
//! removed, and keeps the L4 checksum as right, or as wrong, as it was; a
//! transit node writes only inside the trace it found (the bytes before
//! and after the data space and header are the input's); and an
//! encapsulation followed by decapsulation gives the frame back, with the
//! packet number it was given where it was numbered; the edge's strip
//! leaves nothing the encapsulating node would take as already traced, and
//! changes nothing where it refuses.
#![no_main]

use int_core::ioam::e2e::E2eType;
use int_core::ioam::node::NodeData;
use int_core::ioam::{source::{self, Encapped}, sink, transit::{self, Transited}};
use int_core::ioam::trace::TraceType;
use int_core::ioam::{ipv6, Domain, TimestampFormat};
use int_core::locate;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

#[path = "oracle.rs"]
mod oracle;

use oracle::{ip_verdict, l4_verdict, walk};

const NAMESPACE: u16 = 123;

fn node() -> NodeData {
    NodeData { node_id: Some(7), timestamp_seconds: Some(1), timestamp_fraction: Some(2), ..NodeData::default() }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    sink_restores(frame);
    transit_stays_inside(frame);
    source_then_sink(frame, selector);
    strip_leaves_nothing_of_ours(frame, selector);
});

fn strip_leaves_nothing_of_ours(frame: &[u8], selector: u8) {
    let mut buffer = frame.to_vec();
    let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).expect("a view");
    match sink::strip_foreign(&mut view, NAMESPACE) {
        Ok(true) => {}
        Ok(false) => {
            assert_eq!(view.frame(), frame, "a strip that removed nothing changed nothing");
            return;
        }
        Err(_) => {
            // A lie found after something came out whole: what is left
            // walks, and is refused again.
            if view.frame() != frame {
                let left = view.frame().to_vec();
                assert!(locate::ipv6(&left).is_ok(), "what is left walks");
                let mut again = left.clone();
                let mut view = FrameBuf::new(&mut again, 0, left.len()).expect("a view");
                assert!(sink::strip_foreign(&mut view, NAMESPACE).is_err(), "the lie is still there");
            }
            return;
        }
    }
    assert!(view.len() < frame.len());
    let stripped = view.frame().to_vec();
    assert!(locate::ipv6(&stripped).is_ok(), "what is left walks");
    let mut buffer = vec![0u8; 256 + stripped.len()];
    buffer[256..].copy_from_slice(&stripped);
    let mut view = FrameBuf::new(&mut buffer, 256, stripped.len()).expect("a view");
    let plan = domain(selector).plan(9000);
    let encapped = source::insert(&mut view, &plan, &node(), |_, _| Some(1));
    assert_ne!(encapped, Ok(Encapped::AlreadyTraced), "nothing of ours is left");
}

/// The domain the selector byte picks: trace type, slots, numbered or not.
fn domain(selector: u8) -> Domain {
    Domain {
        namespace: NAMESPACE,
        trace_type: TraceType::from_bits_retain(u32::from(selector & 0xf0) << 16 | 0x80_0000),
        nodes: (selector & 7) + 1,
        timestamps: TimestampFormat::Posix,
        e2e: match selector & 8 {
            0 => E2eType::empty(),
            _ => E2eType::SEQUENCE_32 | E2eType::TIMESTAMP_SECONDS,
        },
    }
}

fn sink_restores(frame: &[u8]) {
    let Ok(Some(found)) = sink::find(frame, NAMESPACE) else { return };
    let mut buffer = frame.to_vec();
    let mut view = FrameBuf::new(&mut buffer, 0, frame.len()).expect("a view");
    assert!(sink::strip(&mut view, &found).is_some(), "find accepted it");
    assert_eq!(view.len() + found.removed_len(), frame.len());
    // IOAM reads no upper layer: one that lies is carried as it came.
    // Where etherparse walks the input cleanly, it walks the output so.
    if etherparse::SlicedPacket::from_ethernet(frame).is_err() {
        return;
    }
    let ip = found.ip;
    let (ip_in, addresses) = ip_verdict(frame, &ip);
    let l4_in = l4_verdict(addresses, ip.protocol, &frame[ip.l4..ip.end]);
    let (ip_out, l4_out) = walk(view.frame());
    assert_eq!(ip_out, ip_in);
    // The verdict is TCP's or UDP's; another upper layer has none here.
    if !ip.is_fragment() && matches!(ip.protocol, 6 | 17) {
        assert_eq!(l4_out, l4_in, "L4 checksum");
    }
}

fn transit_stays_inside(frame: &[u8]) {
    let mut out = frame.to_vec();
    let mut view = FrameBuf::new(&mut out, 0, frame.len()).expect("a view");
    match transit::push(&mut view, NAMESPACE, &node()) {
        Ok(Transited::Filled | Transited::Overflow) => {}
        _ => {
            assert_eq!(out, frame, "a frame transit did not fill is left as it was");
            return;
        }
    }
    let ip = locate::ipv6(frame).expect("transit read it").expect("IPv6");
    let hbh = ip.l3 + 40;
    let len = (usize::from(frame[hbh + 1]) + 1) * 8;
    let trace = ipv6::find_trace(&frame[hbh..hbh + len], NAMESPACE).expect("read").expect("there");
    let (start, end) = (hbh + trace.option, hbh + trace.data + trace.data_len);
    assert_eq!(out[..start], frame[..start], "before the option");
    assert_eq!(out[end..], frame[end..], "after the trace");
}

fn source_then_sink(frame: &[u8], selector: u8) {
    let plan = domain(selector).plan(9000);
    let mut buffer = vec![0u8; 256 + frame.len()];
    buffer[256..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 256, frame.len()).expect("a view");
    let mut numbered = false;
    let number = |_: &[u8], _: &locate::IpLocation| {
        numbered = true;
        Some(u64::from(selector) + 1)
    };
    let Ok(Encapped::Added(added)) = source::insert(&mut view, &plan, &node(), number) else { return };
    assert_eq!(view.len(), frame.len() + added);
    let traced = view.frame().to_vec();
    let found = sink::find(&traced, NAMESPACE).expect("our own trace reads").expect("and is there");
    assert_eq!(found.removed_len(), added);
    assert_eq!(found.sequence(), numbered.then_some(u64::from(selector) + 1));
    assert!(sink::strip(&mut view, &found).is_some());
    assert_eq!(view.frame(), frame, "source then sink is the frame");
}
