//! Report parsing on arbitrary bytes: no panic in any sink-id mode.
#![no_main]

use int_core::report::{self, SinkIdWord};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for mode in [SinkIdWord::Present, SinkIdWord::Absent, SinkIdWord::Detect] {
        if let Ok(report::Report::Latency(latency)) = report::parse(data, mode) {
            let _ = latency.latency_ns();
            let _ = latency.sink_and_source();
        }
    }
});
