//! The sink on arbitrary frames: extract never panics; whatever it accepts,
//! strip removes exactly the INT bytes it announced, and a report can be
//! built from it.
#![no_main]

use int_core::encap::{Encapsulation, TcpPlacement};
use int_core::int05::HopMetadata;
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};
use int_core::sink::{self, SinkConfig};
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let config = SinkConfig {
        encapsulation: if selector & 1 == 0 {
            Encapsulation::default()
        } else {
            Encapsulation::ExtensionUdp { port: 33122 }
        },
        tcp_placement: if selector & 2 == 0 { TcpPlacement::BeforeOptions } else { TcpPlacement::AfterOptions },
    };
    let Ok(Some(found)) = sink::extract(frame, &config) else { return };
    let header = ReportHeaderRepr::latency(1, 1, 0);
    let mut report = [0u8; 2048];
    let hop = HopMetadata::host_int(1, 1, 1);
    let _ = LatencyReport::build(&mut report, frame, &found, &hop, &header, 1, &ReportProfile::HOST_INT);
    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
    let removed = sink::strip(&mut view, &found, &config).expect("extract accepted it");
    assert_eq!(view.len() + removed, frame.len());
});
