//! The sink on arbitrary frames: extract never panics; a shape cache kept
//! across inputs (as the node keeps one) never changes its answer; whatever
//! it accepts, strip removes exactly the INT bytes it announced, and a
//! report can be built from it; the fast path, where it takes a frame,
//! finds and restores what the general path does.
#![no_main]

use std::cell::RefCell;

use int_core::int05::{Domain, Encapsulation};
use int_core::marking::TcpPlacement;
use int_core::int05::{HopMetadata, ShapeCache};
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};
use int_core::int05::fast_sink::{FastArrival, FastSink};
use int_core::int05::sink;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SHAPES: RefCell<ShapeCache> = RefCell::new(ShapeCache::default());
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let config = Domain {
        encapsulation: if selector & 1 == 0 {
            Encapsulation::default()
        } else {
            Encapsulation::ExtensionUdp { port: 33122 }
        },
        tcp_placement: if selector & 2 == 0 {
            TcpPlacement::BeforeOptions
        } else {
            TcpPlacement::AfterOptions
        },
    };
    let extracted = sink::extract(frame, &config);
    let cached = SHAPES.with(|shapes| sink::extract_with(frame, &config, &mut shapes.borrow_mut()));
    assert_eq!(cached, extracted);
    let fast = SHAPES.with(|shapes| FastSink::find(frame, &config, &mut shapes.borrow_mut()));
    if fast == FastArrival::NotInt {
        assert_eq!(extracted, Ok(None));
    }
    let Ok(Some(found)) = extracted else {
        assert!(!matches!(fast, FastArrival::Int(_)), "the fast path took what the general path refused");
        return;
    };
    let header = ReportHeaderRepr::latency(1, 1, 0);
    let mut report = [0u8; 2048];
    let hop = HopMetadata::host_int(1, 1, 1);
    let _ = LatencyReport::build(&mut report, frame, &found, &hop, &header, 1, &ReportProfile::HOST_INT);
    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
    let removed = sink::strip(&mut view, &found, &config).expect("extract accepted it");
    assert_eq!(view.len() + removed, frame.len());
    if let FastArrival::Int(parts) = fast {
        assert_eq!(
            (parts.frame.flow_key(frame), parts.sequence, parts.source_hop),
            (Some(found.flow), found.sequence, found.source_hop)
        );
        let mut buffer = vec![0u8; 64 + frame.len()];
        buffer[64..].copy_from_slice(frame);
        let mut fast_view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
        assert_eq!(parts.strip(&mut fast_view, &config), Some(removed));
        assert_eq!(fast_view.frame(), view.frame());
    }
});
