//! Transit push and source insert on arbitrary frames: no panic, a refused
//! packet is left exactly as it was, a shape cache kept across inputs (as
//! the node keeps one) changes neither the answer nor the bytes, and the
//! fast paths, where they take a frame, give the general path's answer
//! and bytes.
#![no_main]

use std::cell::RefCell;

use int_core::int05::Domain;
use int_core::fast::FastFrame;
use int_core::int05::{HopMetadata, ShapeCache};
use int_core::int05::fast_source::FastSource;
use int_core::int05::source::{self, SourceConfig, Template};
use int_core::int05::fast_transit::FastTransit;
use int_core::int05::transit::{self, TransitConfig};
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SHAPES: RefCell<ShapeCache> = RefCell::new(ShapeCache::default());
}

fuzz_target!(|frame: &[u8]| {
    let hop = HopMetadata::host_int(7, 1, 2);
    let mut buffer = vec![0u8; 128 + frame.len()];
    buffer[128..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
    let config = TransitConfig { domain: Domain::default(), max_ip_len: 1500 };
    let pushed = transit::push(&mut view, &config, &hop);
    if pushed.is_err() {
        assert_eq!(view.frame(), frame);
    }
    let mut cached_buffer = vec![0u8; 128 + frame.len()];
    cached_buffer[128..].copy_from_slice(frame);
    let mut cached_view = FrameBuf::new(&mut cached_buffer, 128, frame.len()).unwrap();
    let cached =
        SHAPES.with(|shapes| transit::push_with(&mut cached_view, &config, &hop, &mut shapes.borrow_mut()));
    assert_eq!(cached, pushed);
    assert_eq!(cached_view.frame(), view.frame());
    let mut fast_buffer = vec![0u8; 128 + frame.len()];
    fast_buffer[128..].copy_from_slice(frame);
    let mut fast_view = FrameBuf::new(&mut fast_buffer, 128, frame.len()).unwrap();
    let fast =
        SHAPES.with(|shapes| FastTransit.push(&mut fast_view, &config, &hop, &mut shapes.borrow_mut()));
    match fast {
        Some(outcome) => {
            assert_eq!(outcome, pushed);
            assert_eq!(fast_view.frame(), view.frame());
        }
        None => assert_eq!(fast_view.frame(), frame),
    }
    let source_config = SourceConfig::host_int(1500);
    if let Ok(plan) = source::plan(frame, &source_config) {
        let mut buffer = vec![0u8; 128 + frame.len()];
        buffer[128..].copy_from_slice(frame);
        let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
        let template = Template::new(&source_config, &hop).unwrap();
        source::insert_with(&mut view, &plan, &source_config, &template, 9, Some(5)).unwrap();
        fast_source_agrees(frame, &source_config, &template, &plan, view.frame());
    } else {
        // The fast path takes nothing the general path refuses.
        let template = Template::new(&source_config, &hop).unwrap();
        let block = FastSource::of(&source_config, &template).unwrap();
        assert!(!FastFrame::read(frame, 0).is_some_and(|parts| block.takes(&parts)));
    }
});

/// Where the source's fast path takes the frame, it writes what the
/// general path wrote (`general`).
fn fast_source_agrees(
    frame: &[u8],
    config: &SourceConfig,
    template: &Template,
    plan: &source::Plan,
    general: &[u8],
) {
    let block = FastSource::of(config, template).unwrap();
    let Some(parts) = FastFrame::read(frame, 0).filter(|parts| block.takes(parts)) else { return };
    assert_eq!(parts.flow_key(frame), Some(plan.flow));
    let mut buffer = vec![0u8; 128 + frame.len()];
    buffer[128..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
    assert!(block.insert(&mut view, &parts, 9, 5));
    assert_eq!(view.frame(), general);
}
