//! Report parsing on arbitrary bytes: no panic in any sink-id mode, and a
//! TR 0.5 flow report is a TR 0.5 NProto 2 report to the generic parser,
//! with the same headers and frame.
#![no_main]

use int_core::report::tr05_flow::FlowReport;
use int_core::report::{self, SinkIdWord};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for mode in [SinkIdWord::Present, SinkIdWord::Absent, SinkIdWord::Detect] {
        if let Ok(report::Report::Latency(latency)) = report::parse(data, mode) {
            let _ = latency.latency_ns();
            let _ = latency.sink_and_source();
        }
    }
    if let Ok(flow) = FlowReport::parse(data) {
        let _ = flow.latency_ns();
        let Ok(report::Report::Tr05 { header, switch_local, frame, .. }) = report::parse(data, SinkIdWord::Detect)
        else {
            panic!("a flow report the generic parser refuses")
        };
        assert_eq!((header, switch_local), (flow.header, Some(flow.local)));
        assert_eq!(&frame[..flow.ethernet.len()], flow.ethernet);
    }
});
