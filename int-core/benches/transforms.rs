//! ns/packet for the packet transforms at 64, 512 and 1500-byte frames:
//! source plan alone and plan + insert, transit push, sink extract + strip,
//! and latency report build. Each iteration first restores the input frame;
//! `reset_only` measures that copy alone so it can be subtracted.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use int_core::craft::PacketSpec;
use int_core::int05::sink;
use int_core::int05::source::{self, SourceConfig};
use int_core::int05::transit::{self, TransitConfig};
use int_core::int05::{Domain, HopMetadata, ShapeCache};
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};
use int_core::FrameBuf;

const HEADROOM: usize = 128;

fn frame(size: usize) -> Vec<u8> {
    // Ethernet 14 + IPv4 20 + UDP 8 + payload = size (INT must still fit
    // a 1500 MTU, so the largest frame is 1514 - 36 on the source side).
    PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 4000, 5000, size - 42).build()
}

fn instrumented(plain: &[u8]) -> Vec<u8> {
    let config = SourceConfig::host_int(9000);
    let plan = source::plan(plain, &config).unwrap();
    let mut buffer = vec![0u8; HEADROOM + plain.len()];
    buffer[HEADROOM..].copy_from_slice(plain);
    let mut view = FrameBuf::new(&mut buffer, HEADROOM, plain.len()).unwrap();
    source::insert(&mut view, &plan, &config, 1, &HopMetadata::host_int(1, 1, 1000)).unwrap();
    view.frame().to_vec()
}

fn transforms(c: &mut Criterion) {
    let mut group = c.benchmark_group("int-core");
    group.throughput(Throughput::Elements(1));
    let source_config = SourceConfig::host_int(9000);
    let transit_config = TransitConfig { domain: Domain::default(), max_ip_len: 9000 };
    let sink_config = Domain::default();
    let hop = HopMetadata::host_int(7, 2, 123_456);
    let template = source::Template::new(&source_config, &hop).unwrap();
    let header = ReportHeaderRepr::latency(0, 1_700_000_000, 0);
    for size in [64usize, 512, 1500] {
        let plain = frame(size);
        let with_int = instrumented(&plain);
        let mut buffer = vec![0u8; HEADROOM + with_int.len()];

        group.bench_with_input(BenchmarkId::new("reset_only", size), &plain, |b, plain| {
            b.iter(|| {
                buffer[HEADROOM..HEADROOM + plain.len()].copy_from_slice(plain);
                black_box(&mut buffer);
            })
        });
        group.bench_with_input(BenchmarkId::new("source_insert", size), &plain, |b, plain| {
            b.iter(|| {
                buffer[HEADROOM..HEADROOM + plain.len()].copy_from_slice(plain);
                let mut view = FrameBuf::new(&mut buffer, HEADROOM, plain.len()).unwrap();
                let plan = source::plan(view.frame(), &source_config).unwrap();
                black_box(source::insert_with(
                    &mut view,
                    &plan,
                    &source_config,
                    &template,
                    42,
                    Some(123_456),
                ))
                .unwrap();
            })
        });
        group.bench_with_input(BenchmarkId::new("source_plan", size), &plain, |b, plain| {
            b.iter(|| black_box(source::plan(black_box(plain.as_slice()), &source_config)).unwrap())
        });
        // The node's stages keep a shape cache across packets: so do these.
        let mut shapes = ShapeCache::default();
        group.bench_with_input(BenchmarkId::new("transit_push", size), &with_int, |b, with_int| {
            b.iter(|| {
                buffer[HEADROOM..HEADROOM + with_int.len()].copy_from_slice(with_int);
                let mut view = FrameBuf::new(&mut buffer, HEADROOM, with_int.len()).unwrap();
                black_box(transit::push_with(&mut view, &transit_config, &hop, &mut shapes)).unwrap();
            })
        });
        group.bench_with_input(BenchmarkId::new("sink_strip", size), &with_int, |b, with_int| {
            b.iter(|| {
                buffer[HEADROOM..HEADROOM + with_int.len()].copy_from_slice(with_int);
                let frame = &buffer[HEADROOM..HEADROOM + with_int.len()];
                let found = sink::extract_with(frame, &sink_config, &mut shapes).unwrap().unwrap();
                let mut view = FrameBuf::new(&mut buffer, HEADROOM, with_int.len()).unwrap();
                black_box(sink::strip(&mut view, &found, &sink_config)).unwrap();
            })
        });
        let found = sink::extract(&with_int, &sink_config).unwrap().unwrap();
        let mut report = [0u8; 1024];
        group.bench_with_input(BenchmarkId::new("report_build", size), &with_int, |b, with_int| {
            b.iter(|| {
                black_box(
                    LatencyReport::build(
                        &mut report,
                        with_int,
                        &found,
                        &hop,
                        &header,
                        2,
                        &ReportProfile::HOST_INT,
                    )
                    .unwrap(),
                );
            })
        });
    }
    group.finish();
}

criterion_group!(benches, transforms);
criterion_main!(benches);
