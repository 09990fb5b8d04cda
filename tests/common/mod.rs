//! Shared by the end-to-end tests: pcap files in and out, configs, and
//! running the real int-node binary on pcap vdevs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

pub mod cluster;
pub mod collector;
mod files;
pub mod hops;
pub mod ipv6_options;
pub mod partitions;
pub mod servers;
pub use files::*;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use int_core::craft::{L4Spec, PacketSpec};

pub const BIN: &str = env!("CARGO_BIN_EXE_int-node");

/// EAL flags that work on a machine without hugepages or NICs; each test
/// process has its own EAL, and --no-shconf lets several run at once.
pub const EAL: &str =
    "[--no-huge, -m, '256', --no-pci, --no-shconf, -l, '0-1', --log-level, 'lib.eal:error', --no-telemetry]";
/// Three lcores on this two-CPU machine: worker 2 shares CPU 0 with the
/// main lcore, which mostly sleeps.
pub const EAL_3_LCORES: &str =
    "[--no-huge, -m, '256', --no-pci, --no-shconf, --lcores, '0@0,1@1,2@0', --log-level, 'lib.eal:error', --no-telemetry]";

/// int-tools, built beside int-node by `cargo test --workspace`.
pub fn tools_bin() -> PathBuf {
    let path = Path::new(BIN).with_file_name("int-tools");
    assert!(path.is_file(), "{} missing: run the tests with --workspace", path.display());
    path
}

/// Runs an int-tools command in `dir`; asserts it succeeds and returns its
/// standard output.
pub fn int_tools(dir: &Path, args: &[&str]) -> String {
    collector::int_tools_in(&tools_bin(), dir, args)
}

/// `count` frames over `flows` flows: UDP and TCP, some with TCP options,
/// some VLAN-tagged, some with IPv4 options, sizes from 60 bytes to the
/// 1514-byte maximum of a 1500 MTU (less `headroom` for INT to fit).
pub fn mixed_traffic(count: usize, flows: usize, headroom: usize) -> Vec<Vec<u8>> {
    mixed_specs(count, flows, headroom).iter().map(PacketSpec::build).collect()
}

/// [`mixed_traffic`] in dual stack: the flows [`is_ipv6_flow`] names are
/// IPv6 (2001:db8::/64, the IPv4 flow's addresses in the low 32 bits; IPv4
/// options dropped), every third flow of them behind a Hop-by-Hop and a
/// Destination Options header. Sizes stay within the same MTU.
pub fn mixed_traffic_dual(count: usize, flows: usize, headroom: usize) -> Vec<Vec<u8>> {
    use int_core::craft::{ipv6_options, Ipv6Spec};
    use int_core::wire::ipv6::{DESTINATION_OPTIONS, HOP_BY_HOP};
    let v6 = |v4: Ipv4Addr| std::net::Ipv6Addr::from((0x2001_0db8_u128 << 96) | u128::from(u32::from(v4)));
    let mut specs = mixed_specs(count, flows, headroom);
    for (i, spec) in specs.iter_mut().enumerate() {
        let flow = i % flows;
        if !is_ipv6_flow(flow) {
            continue;
        }
        let extensions = if flow.is_multiple_of(3) {
            vec![(HOP_BY_HOP, ipv6_options(0)), (DESTINATION_OPTIONS, ipv6_options(0))]
        } else {
            Vec::new()
        };
        let grown = 20 - spec.ip_options.len() + extensions.len() * 8;
        spec.payload.truncate(spec.payload.len().saturating_sub(grown));
        spec.ip_options.clear();
        spec.ipv6 =
            Some(Ipv6Spec { src: v6(spec.src), dst: v6(spec.dst), flow_label: flow as u32, extensions });
    }
    specs.iter().map(PacketSpec::build).collect()
}

/// Four flows in ten, among them UDP flows with and without checksums and
/// TCP flows, with and without options, as in IPv4.
pub fn is_ipv6_flow(flow: usize) -> bool {
    matches!(flow % 10, 1 | 3 | 6 | 8)
}

pub fn mixed_specs(count: usize, flows: usize, headroom: usize) -> Vec<PacketSpec> {
    (0..count)
        .map(|i| {
            let flow = i % flows;
            let src = Ipv4Addr::new(10, 0, (flow / 250) as u8, (flow % 250) as u8 + 1);
            let dst = Ipv4Addr::new(10, 1, 0, 1);
            let payload = [0usize, 18, 100, 512, 1000, 1472 - headroom][i % 6];
            let mut spec = if flow % 3 == 2 {
                let mut spec = PacketSpec::tcp(src, dst, 40000 + flow as u16, 80, payload.saturating_sub(12));
                if flow.is_multiple_of(2) {
                    spec.l4 = L4Spec::Tcp {
                        src_port: 40000 + flow as u16,
                        dst_port: 80,
                        seq: i as u32,
                        options: vec![0x02, 0x04, 0x05, 0xb4, 0x01, 0x01, 0x04, 0x02],
                    };
                    spec.payload.truncate(payload.saturating_sub(20));
                }
                spec
            } else {
                let mut spec = PacketSpec::udp(src, dst, 5000 + flow as u16, 6000, payload);
                spec.l4 = L4Spec::Udp {
                    src_port: 5000 + flow as u16,
                    dst_port: 6000,
                    zero_checksum: flow % 4 == 1,
                };
                spec
            };
            if i % 7 == 3 {
                spec.vlan = Some(100);
                spec.payload.truncate(spec.payload.len().saturating_sub(4));
            }
            if i % 11 == 5 {
                spec.ip_options = vec![0x94, 0x04, 0x00, 0x00];
                spec.payload.truncate(spec.payload.len().saturating_sub(4));
            }
            spec.tos = [0x00, 0xb8, 0x28, 0x02][i % 4];
            spec.ident = i as u16;
            for (j, byte) in spec.payload.iter_mut().enumerate() {
                *byte = (i + j) as u8;
            }
            spec
        })
        .collect()
}

pub struct Run {
    pub output: Output,
    pub stats: serde_json::Value,
}

impl Run {
    pub fn counter(&self, pipeline: &str, name: &str) -> u64 {
        self.stats["pipelines"][pipeline][name]
            .as_u64()
            .unwrap_or_else(|| panic!("no counter {pipeline}.{name}"))
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
}

/// Runs `int-node run` on `config` (YAML text) until its pcap input has been
/// idle for a while; returns the process output and the JSON counters.
pub fn run_node(dir: &Path, config: &str) -> Run {
    let config_path = dir.join("node.yaml");
    std::fs::write(&config_path, config).unwrap();
    let stats_path = dir.join("stats.json");
    let output = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&config_path)
        .args(["--exit-on-idle", "700", "--duration", "60", "--stats-json"])
        .arg(&stats_path)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "int-node failed: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).unwrap()).unwrap();
    // Every run proves it: forwarding, instrumenting, stripping and
    // reporting allocate nothing on the worker lcores.
    assert_eq!(stats["packet_path_allocations"], 0, "heap allocations on the packet path");
    Run { output, stats }
}

/// Asserts two pcaps' packets are equal, one by one, naming the first that
/// differs.
pub fn assert_same_frames(actual: &[Vec<u8>], expected: &[Vec<u8>]) {
    assert_eq!(actual.len(), expected.len(), "packet count");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        if a != e {
            let at = a.iter().zip(e.iter()).position(|(x, y)| x != y).unwrap_or(a.len().min(e.len()));
            panic!("packet {i} differs at byte {at} (lengths {} and {})", a.len(), e.len());
        }
    }
}

/// A collector for the sink's reports: a UDP socket on loopback.
pub struct Collector {
    pub socket: std::net::UdpSocket,
}

impl Collector {
    pub fn new() -> Self {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        Collector { socket }
    }

    pub fn addr(&self) -> String {
        self.socket.local_addr().unwrap().to_string()
    }

    /// Every report received so far (waits up to 300 ms for the last).
    pub fn reports(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok(n) = self.socket.recv(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }
}

/// The pipelines section of a one-pipeline node from `input` to `output`.
pub fn node_config(role: &str, input: &str, output: &str, extra: &str, export: Option<&str>) -> String {
    let export = export.map(|addr| format!("export: {{collector: '{addr}'}}\n")).unwrap_or_default();
    format!(
        "
node_id: 10.0.0.{id}
eal: {EAL}
ports:
  - name: in
    device: net_pcap0,rx_pcap={input},tx_pcap={output}
    int_port: 7
pipelines:
  - name: {role}
    role: {role}
    lcore: 1
    rx: {{port: in}}
    tx: {{port: in}}
{extra}
{export}",
        // A reference stage stands in for its role's node.
        id = match role.trim_start_matches("reference-") {
            "source" => 1,
            "transit" => 5,
            _ => 2,
        }
    )
}

/// Instruments `frame` as our source would (Host-INT profile), with the
/// source hop's timestamp and the sequence number given.
pub fn instrument(frame: &[u8], sequence: u32, source_ts: u32) -> Vec<u8> {
    instrument_as(frame, 0x0a00_0001, sequence, source_ts)
}

/// [`instrument`] by a source of another node id (a forger, in tests of the
/// domain's edge).
pub fn instrument_as(frame: &[u8], node_id: u32, sequence: u32, source_ts: u32) -> Vec<u8> {
    use int_core::int05::source::{self, SourceConfig};
    use int_core::int05::HopMetadata;
    let config = SourceConfig::host_int(1500);
    let plan = source::plan(frame, &config).unwrap();
    let mut buffer = vec![0u8; 128 + frame.len()];
    buffer[128..].copy_from_slice(frame);
    let mut view = int_core::FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
    source::insert(&mut view, &plan, &config, sequence, &HopMetadata::host_int(node_id, 1, source_ts))
        .unwrap();
    view.frame().to_vec()
}

/// Runs a sink on `packets` generated INT packets of 2 UDP flows with 5%
/// loss, whose exporter is a second net_pcap port: its report frames
/// (Ethernet/IPv4/UDP to 192.0.2.9:32766) land in `dir`/reports.pcap.
pub fn run_port_exporter_sink(dir: &Path, packets: u32) -> Run {
    let packets = packets.to_string();
    let args = ["gen", "--out", "lossy.pcap", "--packets", &packets, "--flows", "2", "--proto", "udp"];
    int_tools(dir, &[&args[..], &["--sizes", "200", "--instrument", "hostint", "--loss", "0.05"]].concat());
    write_pcap(&dir.join("empty.pcap"), &[]);
    run_node(dir, &port_exporter_config("lossy.pcap"))
}

pub fn port_exporter_config(input: &str) -> String {
    format!(
        "
node_id: 10.0.0.2
eal: {EAL}
ports:
  - {{name: data, device: 'net_pcap0,rx_pcap={input},tx_pcap=out.pcap', int_port: 3}}
  - {{name: mgmt, device: 'net_pcap1,rx_pcap=empty.pcap,tx_pcap=reports.pcap'}}
pipelines:
  - {{name: sink, role: sink, lcore: 1, clock: rx-timestamp, rx: {{port: data}}, tx: {{port: data}}}}
export:
  collector: 192.0.2.9:32766
  path: {{port: mgmt, src_mac: '02:00:00:00:00:02', dst_mac: '02:00:00:00:00:09', src_ip: 192.0.2.2}}
"
    )
}

/// Rewrites a pcap of Host-INT-encapsulated packets so that each INT
/// packet's capture time is `latency_ns` after its source timestamp (other
/// packets: now): a sink run with
/// `clock: rx-timestamp` then measures that latency, however long the test
/// took between the source's run and the sink's (INT 0.5 timestamps are
/// 32-bit: a wait of over 2.1 s reads as clock skew).
pub fn retime_after_source(path: &Path, domain: &int_core::int05::Domain, latency_ns: u64) {
    let now_ns =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let frames: Vec<(u64, Vec<u8>)> = read_pcap(path)
        .into_iter()
        .map(|frame| {
            let found = int_core::int05::sink::extract(&frame, domain).ok().flatten();
            let Some(source_ts) = found.and_then(|f| f.source_hop).and_then(|hop| hop.ingress_timestamp())
            else {
                return (now_ns, frame);
            };
            // The latest time at or before now whose low 32 bits are the
            // source's timestamp.
            let mut source_ns = (now_ns & !u64::from(u32::MAX)) | u64::from(source_ts);
            if source_ns > now_ns {
                source_ns -= 1 << 32;
            }
            (source_ns + latency_ns, frame)
        })
        .collect();
    write_pcap_at(path, &frames);
}

/// The INT 2.1 domain a node speaks by default: DSCP 0x17 marks INT-MD
/// before TCP options, and source-only metadata carries the sequence.
pub fn dscp_domain21() -> int_core::int21::Domain {
    int_core::int21::Domain {
        marking: int_core::int21::Marking::Dscp(int_core::marking::DscpMatch::new(0x17, 0x3f).unwrap()),
        tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
        source_only: int_core::int21::SourceOnly::sequence(0x4944),
    }
}

/// Rewrites each INT 2.1 packet's capture time to its source's ingress
/// timestamp plus `latency_ns`: a sink clocked by capture times then
/// measures exactly that latency. An INT-MX packet (no source hop) takes
/// the time of the packet before it.
pub fn retime_after_source21(path: &Path, domain: &int_core::int21::Domain, latency_ns: u64) {
    let mut last_ns = 0;
    let frames: Vec<(u64, Vec<u8>)> = read_pcap(path)
        .into_iter()
        .map(|frame| {
            let found =
                int_core::int21::sink::extract(&frame, domain, &int_core::hop_rule::HopRule::default())
                    .unwrap()
                    .unwrap();
            let source_ns = found.source_hop.and_then(|hop| hop.ingress_timestamp);
            last_ns = source_ns.map_or(last_ns, |ns| ns + latency_ns);
            (last_ns, frame)
        })
        .collect();
    write_pcap_at(path, &frames);
}

/// A tunnel packet as a peer's INT 2.1 source leaves it, and as it was:
/// VXLAN-GPE (from VXLAN-GPE, or from plain VXLAN with G), or Geneve, with
/// an INT-MD header and the source's hop (node id 1, ingress time
/// `source_ns`) or an INT-MX header, over IPv4 or IPv6; the outer UDP
/// checksum computed.
pub fn tunnel_packet(kind: u8, ipv6: bool, mx: bool, source_ns: u64, inner_len: usize) -> (Vec<u8>, Vec<u8>) {
    use int_core::int21::tunnel::GpeShimRepr;
    use int_core::int21::{HeaderType, HopMetadata, Instructions, MdHeaderRepr, MxHeaderRepr};
    use int_core::wire::{geneve, vxlan_gpe};
    let instructions =
        Instructions::NODE_ID | Instructions::INGRESS_TIMESTAMP | Instructions::EGRESS_TIMESTAMP;
    let header = MdHeaderRepr {
        hop_ml: instructions.words() as u8,
        remaining_hop_cnt: 4,
        instructions,
        ..MdHeaderRepr::default()
    };
    let mut body = vec![0u8; 12 + instructions.words() * 4];
    let at = header.emit(&mut body).unwrap();
    let hop = HopMetadata {
        node_id: Some(1),
        ingress_timestamp: Some(source_ns),
        egress_timestamp: Some(source_ns),
        ..HopMetadata::default()
    };
    hop.emit(instructions, header.hop_ml, &mut body[at..]).unwrap();
    let header_type = if mx { HeaderType::Mx } else { HeaderType::Md };
    if mx {
        body = vec![0u8; 12];
        MxHeaderRepr { instructions, ..MxHeaderRepr::default() }.emit(&mut body).unwrap();
    }
    let words = (body.len() / 4) as u8;
    let (plain_tunnel, plain_port, int_tunnel, int_port) = if kind < 2 {
        let from_vxlan = kind == 1;
        let mut plain = vec![if from_vxlan { 0x08 } else { 0x0c }, 0, 0, if from_vxlan { 0 } else { 3 }];
        plain.extend([0, 0x0a, 0xbc, 0]);
        let mut int = vec![0x0c, 0, 0, vxlan_gpe::NEXT_INT, 0, 0x0a, 0xbc, 0, 0, 0, 0, 0];
        let shim = GpeShimRepr { header_type, length_words: words, from_vxlan, next_protocol: 3 };
        shim.emit(&mut int[8..]).unwrap();
        int.extend(&body);
        (plain, if from_vxlan { 4789 } else { vxlan_gpe::UDP_PORT }, int, vxlan_gpe::UDP_PORT)
    } else {
        let plain = vec![0x00, 0x00, 0x65, 0x58, 0, 0x0a, 0xbc, 0];
        let mut int = vec![1 + words, 0x00, 0x65, 0x58, 0, 0x0a, 0xbc, 0, 0, 0, 0, 0];
        let option = geneve::GeneveOptionRepr {
            class: geneve::INT_OPTION_CLASS,
            option_type: if mx { 3 } else { 1 },
            length_words: words,
        };
        option.emit(&mut int[8..]).unwrap();
        int.extend(&body);
        (plain, geneve::UDP_PORT, int, geneve::UDP_PORT)
    };
    let inner: Vec<u8> = (0..inner_len).map(|i| (i * 7) as u8).collect();
    let frame = |tunnel: &[u8], port: u16| {
        let mut spec = if ipv6 {
            PacketSpec::udp6("2001:db8::a".parse().unwrap(), "2001:db8::b".parse().unwrap(), 49152, port, 0)
        } else {
            PacketSpec::udp([10, 9, 0, 1].into(), [10, 9, 0, 2].into(), 49152, port, 0)
        };
        spec.payload = [tunnel, &inner].concat();
        spec.build()
    };
    (frame(&int_tunnel, int_port), frame(&plain_tunnel, plain_port))
}

/// A replay of ten UDP flows (10.0.0.0-9 to 10.1.0.1), one packet each,
/// written to `dir/in.pcap`, for nodes that run until told to stop.
pub fn ten_flows_pcap(dir: &Path) {
    let frames: Vec<Vec<u8>> = (0..10u8)
        .map(|flow| {
            PacketSpec::udp(Ipv4Addr::new(10, 0, 0, flow), Ipv4Addr::new(10, 1, 0, 1), 1000, 53, 30).build()
        })
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
}

/// Starts `int-node run` on `dir/node.yaml` for at most `seconds`, its
/// output discarded, its counters to `dir/stats.json` at the end.
pub fn spawn_node(dir: &Path, seconds: u32) -> std::process::Child {
    Command::new(BIN)
        .args([
            "run",
            "--config",
            "node.yaml",
            "--duration",
            &seconds.to_string(),
            "--stats-json",
            "stats.json",
        ])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A node whose pipeline `src` (a source on lcore 1) replays `in.pcap`
/// forever to net_null; `eal_tail` ends its EAL list, `extra` adds
/// top-level keys.
pub fn replay_source_config(eal_tail: &str, extra: &str) -> String {
    format!(
        "
node_id: 10.0.0.1
node_name: edge-a
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, -l, 0-1, --log-level, 'lib.eal:error', {eal_tail}]
mempool: {{mbufs: 4095, cache: 128}}
ports:
  - {{name: in, device: 'net_pcap0,rx_pcap=in.pcap,infinite_rx=1'}}
  - {{name: out, device: 'net_null0,no-rx=1'}}
pipelines:
  - {{name: src, role: source, lcore: 1, rx: {{port: in}}, tx: {{port: out}}}}
idle_sleep_us: 100
{extra}
"
    )
}

/// [`replay_source_config`] with a sink beside it replaying a recorded
/// link (`link.pcap`, [`recorded_link`]) forever, its reports sent to
/// `collector`; both pipelines' metrics on `metrics_port`; `prefix`: the
/// EAL file prefix (one per test).
pub fn replay_source_and_sink_config(prefix: &str, metrics_port: u16, collector: &str) -> String {
    let source = replay_source_config(
        &format!("--no-telemetry, --file-prefix, {prefix}"),
        &format!("stats: {{metrics: '127.0.0.1:{metrics_port}'}}\nexport: {{collector: '{collector}', rate_limit: 0}}"),
    );
    source.replace(
        "pipelines:\n",
        "  - {name: link, device: 'net_pcap1,rx_pcap=link.pcap,infinite_rx=1'}\n  - {name: drain, device: 'net_null1,no-rx=1'}\npipelines:\n  - {name: snk, role: sink, lcore: 1, rx: {port: link}, tx: {port: drain}, sink: {latency: {mode: absolute, threshold_ns: 1}}}\n",
    )
}

/// A recorded link for the collector's tests (`link.pcap`): UDP flows of
/// Host-INT packets whose one-way latency is `latency_us` plus up to
/// `jitter_us`, a share `loss` of them lost.
pub struct LinkSpec {
    pub packets: usize,
    pub flows: u32,
    pub latency_us: u32,
    pub jitter_us: u32,
    pub loss: f64,
    pub seed: u32,
}

pub fn recorded_link(dir: &Path, link: &LinkSpec) {
    let numbers = [link.packets.to_string(), link.flows.to_string(), link.latency_us.to_string()];
    let more = [link.jitter_us.to_string(), link.loss.to_string(), link.seed.to_string()];
    int_tools(
        dir,
        &[
            "gen",
            "--out",
            "link.pcap",
            "--packets",
            &numbers[0],
            "--flows",
            &numbers[1],
            "--proto",
            "udp",
            "--sizes",
            "128",
            "--instrument",
            "hostint",
            "--latency-us",
            &numbers[2],
            "--jitter-us",
            &more[0],
            "--loss",
            &more[1],
            "--seed",
            &more[2],
        ],
    );
}

/// A sink on `dir/link.pcap`, clocked by capture times, reporting every
/// latency change, with no report rate limit, to `collector`.
pub fn run_reporting_sink(dir: &Path, collector: &str) -> Run {
    let extra = format!(
        "    clock: rx-timestamp
    sink:
      latency: {{mode: absolute, threshold_ns: 1}}
      loss: {{timeout_ms: 100, sweep_ms: 50}}
export: {{collector: '{collector}', rate_limit: 0}}
"
    );
    run_node(dir, &node_config("sink", "link.pcap", "out.pcap", &extra, None))
}
