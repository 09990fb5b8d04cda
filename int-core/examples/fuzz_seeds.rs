//! Writes the fuzz targets' seed corpora (int-core/fuzz/seeds/<target>/)
//! from the golden layouts: Host-INT and INT 0.5 packets in both
//! encapsulations, after transit hops, and the reports built from them.
//! Run: cargo run -p int-core --example fuzz_seeds
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::path::Path;

use int_core::craft::PacketSpec;
use int_core::encap::Domain;
use int_core::encap::{Encapsulation, TcpPlacement};
use int_core::int05::{HopMetadata, Instructions, ShimType};
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};
use int_core::sink;
use int_core::source::{self, SourceConfig, TailStyle};
use int_core::transit::{self, TransitConfig};
use int_core::FrameBuf;

fn instrument(frame: &[u8], config: &SourceConfig, hops: usize) -> Vec<u8> {
    let mut buffer = vec![0u8; 256 + frame.len()];
    buffer[256..].copy_from_slice(frame);
    let plan = source::plan(frame, config).unwrap();
    let mut view = FrameBuf::new(&mut buffer, 256, frame.len()).unwrap();
    source::insert(&mut view, &plan, config, 42, &HopMetadata::host_int(1, 1, 1000)).unwrap();
    let transit_config = TransitConfig {
        domain: Domain { encapsulation: config.encapsulation, tcp_placement: config.tcp_placement },
        max_ip_len: 9000,
    };
    for hop in 0..hops {
        let _ = transit::push(&mut view, &transit_config, &HopMetadata::host_int(10 + hop as u32, 2, 2000));
    }
    view.frame().to_vec()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let packets =
        [PacketSpec::udp(a, b, 4000, 5000, 64).build(), PacketSpec::tcp(a, b, 40000, 22, 32).build()];
    let int05 = SourceConfig {
        encapsulation: Encapsulation::OverTcpUdp { dscp_value: 0x17, dscp_mask: 0x3f },
        tcp_placement: TcpPlacement::AfterOptions,
        shim_type: ShimType::HopByHop,
        instructions: Instructions::from_bits_retain(0x9000),
        max_hop_cnt: 16,
        own_hop: false,
        max_ip_len: 1500,
        tail: TailStyle::Informative,
    };
    let configs = [
        SourceConfig::host_int(1500),
        SourceConfig {
            encapsulation: Encapsulation::ExtensionUdp { port: 33122 },
            ..SourceConfig::host_int(1500)
        },
        int05,
    ];
    let mut frames = Vec::new();
    for packet in &packets {
        for config in &configs {
            for hops in [0, 1, 3] {
                frames.push(instrument(packet, config, hops));
            }
        }
    }
    let header = ReportHeaderRepr::latency(1, 1_700_000_000, 0);
    let mut reports = Vec::new();
    for frame in &frames {
        for config in [
            Domain::default(),
            Domain {
                encapsulation: Encapsulation::ExtensionUdp { port: 33122 },
                tcp_placement: TcpPlacement::BeforeOptions,
            },
        ] {
            if let Ok(Some(found)) = sink::extract(frame, &config) {
                let mut buf = [0u8; 1024];
                for profile in [ReportProfile::HOST_INT, ReportProfile::TR05] {
                    let len = LatencyReport::build(
                        &mut buf,
                        frame,
                        &found,
                        &HopMetadata::host_int(2, 3, 5000),
                        &header,
                        2,
                        &profile,
                    )
                    .unwrap();
                    reports.push(buf[..len].to_vec());
                }
            }
        }
    }
    let write = |target: &str, items: &[Vec<u8>], prefix: &[u8]| {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, item) in items.iter().enumerate() {
            let mut bytes = prefix.to_vec();
            bytes.extend_from_slice(item);
            std::fs::write(dir.join(format!("seed-{i:02}")), bytes).unwrap();
        }
    };
    write("sink_strip", &frames, &[0]);
    write("sink_restore", &frames, &[0]);
    write("transit_push", &frames, &[]);
    write("parse_report", &reports, &[]);
    let blocks: Vec<Vec<u8>> = frames.iter().map(|f| f[42..].to_vec()).collect();
    write("parse_int_block", &blocks, &[]);
    println!("seeds written under {}", root.display());
}
