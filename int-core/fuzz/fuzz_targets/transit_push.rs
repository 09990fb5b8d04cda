//! Transit push and source insert on arbitrary frames: no panic, and a
//! refused packet is left exactly as it was.
#![no_main]

use int_core::int05::HopMetadata;
use int_core::sink::SinkConfig;
use int_core::source::{self, SourceConfig};
use int_core::transit::{self, TransitConfig};
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frame: &[u8]| {
    let hop = HopMetadata::host_int(7, 1, 2);
    let mut buffer = vec![0u8; 128 + frame.len()];
    buffer[128..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
    let config = TransitConfig { domain: SinkConfig::default(), max_ip_len: 1500 };
    if transit::push(&mut view, &config, &hop).is_err() {
        assert_eq!(view.frame(), frame);
    }
    let source_config = SourceConfig::host_int(1500);
    if let Ok(plan) = source::plan(frame, &source_config) {
        let mut buffer = vec![0u8; 128 + frame.len()];
        buffer[128..].copy_from_slice(frame);
        let mut view = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
        source::insert(&mut view, &plan, &source_config, 1, &hop).unwrap();
    }
});
