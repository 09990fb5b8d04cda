//! Transit push and source insert on arbitrary frames: no panic, a refused
//! packet is left exactly as it was, and a shape cache kept across inputs
//! (as the node keeps one) changes neither the answer nor the bytes.
#![no_main]

use std::cell::RefCell;

use int_core::int05::{HopMetadata, ShapeCache};
use int_core::encap::Domain;
use int_core::source::{self, SourceConfig};
use int_core::transit::{self, TransitConfig};
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
    let source_config = SourceConfig::host_int(1500);
    if let Ok(plan) = source::plan(frame, &source_config) {
        let mut buffer = vec![0u8; 128 + frame.len()];
        buffer[128..].copy_from_slice(frame);
        let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
        source::insert(&mut view, &plan, &source_config, 1, &hop).unwrap();
    }
});
