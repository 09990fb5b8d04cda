//! Writes the fuzz targets' seed corpora (int-core/fuzz/seeds/<target>/)
//! from the golden layouts: Host-INT and INT 0.5 packets in both
//! encapsulations, after transit hops, and the reports built from them.
//! Run: cargo run -p int-core --example fuzz_seeds
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::path::Path;

use int_core::craft::PacketSpec;
use int_core::int05::sink;
use int_core::int05::source::{self, SourceConfig, TailStyle};
use int_core::int05::transit::{self, TransitConfig};
use int_core::int05::{Domain, Encapsulation, HopMetadata, Instructions, ShimType};
use int_core::marking::TcpPlacement;
use int_core::report::{LatencyReport, ReportHeaderRepr, ReportProfile};
use int_core::FrameBuf;

/// IPv6 UDP and TCP packets, one behind a Hop-by-Hop header, instrumented
/// by each configuration.
fn ipv6_frames(configs: &[SourceConfig]) -> Vec<Vec<u8>> {
    let (a, b) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
    let mut tcp = PacketSpec::tcp6(a, b, 40000, 22, 32);
    if let Some(v6) = tcp.ipv6.as_mut() {
        v6.extensions.push((int_core::wire::ipv6::HOP_BY_HOP, int_core::craft::ipv6_options(0)));
    }
    let packets = [PacketSpec::udp6(a, b, 4000, 5000, 64).build(), tcp.build()];
    packets.iter().flat_map(|packet| configs.iter().map(|config| instrument(packet, config, 1))).collect()
}

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
                let flow_header = int_core::report::tr05_flow::FlowReport::header(1, 5000, 0);
                let local = int_core::report::tr05::SwitchLocalRepr {
                    switch_id: 2,
                    ingress_port: 3,
                    egress_port: 3,
                    queue_id: 0,
                    queue_occupancy: 0,
                    egress_timestamp: 5000,
                };
                let len = int_core::report::tr05_flow::FlowReport::build(
                    &mut buf,
                    frame,
                    &found,
                    &flow_header,
                    &local,
                )
                .unwrap();
                reports.push(buf[..len].to_vec());
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
    let with_v6: Vec<Vec<u8>> = frames.iter().cloned().chain(ipv6_frames(&configs)).collect();
    write("sink_strip", &with_v6, &[0]);
    write("sink_restore", &with_v6, &[0]);
    write("transit_push", &with_v6, &[]);
    write("parse_report", &reports, &[]);
    let blocks: Vec<Vec<u8>> = frames.iter().map(|f| f[42..].to_vec()).collect();
    write("parse_int_block", &blocks, &[]);
    // The first byte tells parse_int21 what the domain knows: nothing (0),
    // or int-node's packet numbers (1).
    let known =
        |prefix: u8, blocks: Vec<Vec<u8>>| blocks.into_iter().map(move |b| [vec![prefix], b].concat());
    let int21: Vec<Vec<u8>> = known(0, int21_blocks()).chain(known(1, int21_numbered_blocks())).collect();
    write("parse_int21", &int21, &[]);
    write("parse_tr20", &tr20_reports(), &[]);
    write("parse_tunnels", &tunnel_headers(), &[]);
    println!("seeds written under {}", root.display());
}

/// INT 2.1 MD blocks of a few shapes (every NPT, 0-3 hops, 8-byte
/// metadata, a checksum complement) and an MX block.
fn int21_blocks() -> Vec<Vec<u8>> {
    use int_core::int21::{self, HopMetadata as Hop21, Instructions as Bits21, MdHeaderRepr, Next};
    let mut blocks = Vec::new();
    let hop = Hop21 { node_id: Some(1), ingress_timestamp: Some(7), queue: Some((1, 2)), ..Hop21::default() };
    for (bits, next) in [
        (Bits21::NODE_ID | Bits21::QUEUE_OCCUPANCY, Next::Dscp(0)),
        (Bits21::NODE_ID | Bits21::INGRESS_TIMESTAMP | Bits21::CHECKSUM_COMPLEMENT, Next::UdpPort(5001)),
        (Bits21::from_bits_retain(0xff81), Next::IpProtocol(6)),
    ] {
        for hops in 0..4 {
            let header = MdHeaderRepr {
                hop_ml: bits.words() as u8,
                remaining_hop_cnt: 8 - hops as u8,
                instructions: bits,
                ..MdHeaderRepr::default()
            };
            let mut buf = [0u8; 512];
            let len = int21::emit_md_block(&mut buf, next, &header, &vec![hop; hops], &[]).unwrap();
            blocks.push(buf[..len].to_vec());
        }
    }
    blocks.push(vec![0x30, 0x03, 0x00, 0x00, 0x20, 0, 0, 0, 0x90, 0x00, 0, 0, 0, 0, 0, 0]);
    blocks
}

/// INT-MD blocks with int-node's source-only packet number (ID 0x4944),
/// after the byte that tells the fuzz target the domain knows it.
fn int21_numbered_blocks() -> Vec<Vec<u8>> {
    use int_core::int21::{self, source_only::SEQUENCE, HopMetadata as Hop21, Instructions as Bits21};
    let header = int21::MdHeaderRepr {
        hop_ml: 3,
        remaining_hop_cnt: 5,
        instructions: Bits21::NODE_ID | Bits21::INGRESS_TIMESTAMP,
        domain_id: 0x4944,
        ds_instructions: SEQUENCE,
        ..int21::MdHeaderRepr::default()
    };
    let hop = Hop21 { node_id: Some(1), ingress_timestamp: Some(7), ..Hop21::default() };
    (0..3)
        .map(|hops| {
            let mut buf = vec![0u8; 256];
            let len = int21::emit_md_block(
                &mut buf,
                int21::Next::Dscp(0),
                &header,
                &vec![hop; hops],
                &[0, 0, 0, 9],
            )
            .unwrap();
            buf[..len].to_vec()
        })
        .collect()
}

/// Telemetry Report 2.0 datagrams: one INT report with a truncated packet,
/// a coalesced pair with a drop report.
fn tr20_reports() -> Vec<Vec<u8>> {
    use int_core::report::tr20::{
        DropInfo, GroupHeaderRepr, InType, IndividualReport, IntContents, RepType, ReportFlags,
    };
    let inner = [0x45u8; 40];
    let latency = IndividualReport {
        rep_type: RepType::Int,
        in_type: InType::Ipv4,
        flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
        int: Some(IntContents { rep_md_bits: 0x5c00, ..IntContents::default() }),
        inner: &inner,
        ..IndividualReport::default()
    };
    let drop = IndividualReport {
        flags: ReportFlags { dropped: true, ..ReportFlags::default() },
        int: Some(IntContents {
            rep_md_bits: 0x0001,
            drop: Some(DropInfo { queue_id: 0, reason: 50 }),
            ..IntContents::default()
        }),
        ..latency
    };
    let mut datagrams = Vec::new();
    for reports in [vec![latency], vec![latency, drop]] {
        let mut buf = [0u8; 512];
        let mut at = GroupHeaderRepr { hw_id: 0, sequence: 1, node_id: 2 }.emit(&mut buf).unwrap();
        for report in reports {
            at += report.emit(&mut buf[at..]).unwrap();
        }
        datagrams.push(buf[..at].to_vec());
    }
    datagrams
}

/// An IPv6 UDP packet with Hop-by-Hop and Destination Options headers (bare
/// and in an Ethernet frame), a
/// VXLAN-GPE header with the INT shim, and a Geneve header with the INT
/// option.
fn tunnel_headers() -> Vec<Vec<u8>> {
    use int_core::int21::{tunnel::GpeShimRepr, HeaderType};
    use int_core::wire::{geneve, ipv6, vxlan_gpe};
    let mut ipv6_packet = vec![0u8; ipv6::HEADER_LEN];
    let header = ipv6::Ipv6Repr {
        traffic_class: 0x5c,
        flow_label: 1,
        payload_len: 8 + 8 + 8,
        next_header: ipv6::HOP_BY_HOP,
        hop_limit: 64,
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
    };
    header.emit(&mut ipv6_packet).unwrap();
    ipv6_packet.extend([ipv6::DESTINATION_OPTIONS, 0, 1, 4, 0, 0, 0, 0]);
    ipv6_packet.extend([17, 0, 1, 4, 0, 0, 0, 0]);
    ipv6_packet.extend([0x13, 0x88, 0x17, 0x70, 0, 8, 0, 0]);
    let mut gpe = vec![0u8; 8 + 4 + 12];
    let gpe_header =
        vxlan_gpe::VxlanGpeRepr { flags: vxlan_gpe::FLAG_I, next_protocol: vxlan_gpe::NEXT_INT, vni: 1 };
    gpe_header.emit(&mut gpe).unwrap();
    let shim = GpeShimRepr {
        header_type: HeaderType::Mx,
        length_words: 3,
        from_vxlan: false,
        next_protocol: vxlan_gpe::NEXT_ETHERNET,
    };
    shim.emit(&mut gpe[8..]).unwrap();
    gpe[12] = 0x20;
    let base = geneve::GeneveRepr {
        options_words: 4,
        oam: false,
        critical: false,
        protocol_type: geneve::PROTOCOL_ETHERNET,
        vni: 1,
    };
    let mut geneve_bytes = vec![0u8; base.len()];
    base.emit(&mut geneve_bytes).unwrap();
    let option =
        geneve::GeneveOptionRepr { class: geneve::INT_OPTION_CLASS, option_type: 3, length_words: 3 };
    option.emit(&mut geneve_bytes[8..]).unwrap();
    geneve_bytes[12] = 0x20;
    let mut framed = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd];
    framed.extend(&ipv6_packet);
    let mut seeds = vec![ipv6_packet, framed, gpe, geneve_bytes];
    seeds.extend(tunnel_frames());
    seeds
}

/// Whole frames with INT-MD in a tunnel: VXLAN-GPE over IPv4, Geneve over
/// IPv6, each with one hop and an inner Ethernet header.
fn tunnel_frames() -> Vec<Vec<u8>> {
    use int_core::int21::{tunnel::GpeShimRepr, HeaderType, HopMetadata, Instructions, MdHeaderRepr};
    use int_core::wire::{geneve, vxlan_gpe};
    let header = MdHeaderRepr {
        hop_ml: 2,
        remaining_hop_cnt: 3,
        instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
        ..MdHeaderRepr::default()
    };
    let mut body = vec![0u8; 20];
    let at = header.emit(&mut body).unwrap();
    let hop = HopMetadata { node_id: Some(1), queue: Some((0, 5)), ..HopMetadata::default() };
    hop.emit(header.instructions, header.hop_ml, &mut body[at..]).unwrap();
    let inner = [0x02u8; 14];
    let mut gpe = vec![0u8; 12];
    vxlan_gpe::VxlanGpeRepr {
        flags: vxlan_gpe::FLAG_I | vxlan_gpe::FLAG_P,
        next_protocol: vxlan_gpe::NEXT_INT,
        vni: 1,
    }
    .emit(&mut gpe)
    .unwrap();
    let shim =
        GpeShimRepr { header_type: HeaderType::Md, length_words: 5, from_vxlan: true, next_protocol: 3 };
    shim.emit(&mut gpe[8..]).unwrap();
    let mut over_v4 = PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 49152, 4790, 0);
    over_v4.payload = [&gpe[..], &body, &inner].concat();
    let base = geneve::GeneveRepr {
        options_words: 6,
        oam: false,
        critical: false,
        protocol_type: geneve::PROTOCOL_ETHERNET,
        vni: 1,
    };
    let mut geneve_bytes = vec![0u8; 12];
    base.emit(&mut geneve_bytes).unwrap();
    let option =
        geneve::GeneveOptionRepr { class: geneve::INT_OPTION_CLASS, option_type: 1, length_words: 5 };
    option.emit(&mut geneve_bytes[8..]).unwrap();
    let (a, b) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
    let mut over_v6 = PacketSpec::udp6(a, b, 49152, 6081, 0);
    over_v6.payload = [&geneve_bytes[..], &body, &inner].concat();
    vec![over_v4.build(), over_v6.build()]
}
