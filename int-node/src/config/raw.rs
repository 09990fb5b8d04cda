//! The YAML as written: serde structs that refuse unknown keys, with
//! defaults for what may be left out. Named values are [`Choice`]s, so an
//! unknown name is a problem for validation to report, not a parse error
//! that hides every other problem.

use int_core::int05::source::TailStyle;
use int_core::marking::TcpPlacement;
use serde::Deserialize;

use super::choice::Choice;
use super::model::{
    CaptureDirection, ClockSource, EncapsulationName, Flavour, GenerateInstrument, IfaL4, IfaMode,
    IfaReportName, IntVersion, IoamTimestamps, LatencyMode, MalformedPolicy, MarkedPolicy, Mode,
    PostcardReport, ProfileName, Protocol, RoleName, TunnelPlacement,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub node_id: Option<NodeId>,
    /// What the operator calls this node (its metrics' `node_name`).
    pub node_name: Option<String>,
    #[serde(default)]
    pub eal: Vec<String>,
    #[serde(default)]
    pub mempool: RawMempool,
    #[serde(default)]
    pub ports: Vec<RawPort>,
    #[serde(default)]
    pub pipelines: Vec<RawPipeline>,
    pub export: Option<RawExport>,
    #[serde(default)]
    pub stats: RawStats,
    /// Sleep this long when a worker's poll found no packet (0: busy-poll).
    #[serde(default)]
    pub idle_sleep_us: u64,
    #[serde(default)]
    pub capture: Vec<RawCapture>,
}

/// `capture[]`: a port's packets into a pcapng file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapture {
    pub port: String,
    pub direction: Option<Choice<CaptureDirection>>,
    pub file: String,
    pub snaplen: Option<u32>,
    /// Room for packets on their way to the file, per pipeline, in KiB.
    pub buffer_kb: Option<u32>,
}

/// A node id: a number or a dotted quad.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NodeId {
    Number(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMempool {
    #[serde(default = "default_mbufs")]
    pub mbufs: u32,
    #[serde(default = "default_cache")]
    pub cache: u32,
}

impl Default for RawMempool {
    fn default() -> Self {
        RawMempool { mbufs: default_mbufs(), cache: default_cache() }
    }
}

fn default_mbufs() -> u32 {
    8191
}
fn default_cache() -> u32 {
    256
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPort {
    pub name: String,
    pub device: String,
    #[serde(default = "one")]
    pub rx_queues: u16,
    #[serde(default = "one")]
    pub tx_queues: u16,
    #[serde(default = "default_descriptors")]
    pub rx_descriptors: u16,
    #[serde(default = "default_descriptors")]
    pub tx_descriptors: u16,
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    #[serde(default = "yes")]
    pub promiscuous: bool,
    /// The port number written into INT hop metadata (default: its index).
    pub int_port: Option<u16>,
}

fn one() -> u16 {
    1
}
fn yes() -> bool {
    true
}
fn default_descriptors() -> u16 {
    1024
}
fn default_mtu() -> u16 {
    1500
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEndpoint {
    pub port: String,
    #[serde(default)]
    pub queue: u16,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPipeline {
    pub name: Option<String>,
    pub role: Choice<RoleName>,
    pub lcore: u32,
    pub rx: RawEndpoint,
    pub tx: RawEndpoint,
    #[serde(default)]
    pub int: RawInt,
    pub source: Option<RawSource>,
    pub sink: Option<RawSink>,
    pub impair: Option<RawImpair>,
    pub generate: Option<RawGenerate>,
    pub postcard: Option<RawPostcard>,
    pub clock: Option<Choice<ClockSource>>,
}

/// `pipelines[].postcard`: an INT-XD node's watchlist, instructions and
/// report rule.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPostcard {
    #[serde(default)]
    pub watchlist: Vec<RawRule>,
    pub instructions: Option<Vec<String>>,
    pub report: Option<Choice<PostcardReport>>,
    /// `report: every`: one postcard per this many packets of a flow.
    pub every: Option<u32>,
    #[serde(default)]
    pub hops: RawHops,
    #[serde(default)]
    pub flows: RawFlows,
}

/// `pipelines[].generate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    #[serde(default = "default_generate_flows")]
    pub flows: u32,
    #[serde(default = "default_frame_size")]
    pub frame_size: usize,
    pub instrument: Option<Choice<GenerateInstrument>>,
    #[serde(default)]
    pub churn: u32,
}

impl Default for RawGenerate {
    fn default() -> Self {
        RawGenerate {
            flows: default_generate_flows(),
            frame_size: default_frame_size(),
            instrument: None,
            churn: 0,
        }
    }
}

fn default_generate_flows() -> u32 {
    1000
}
fn default_frame_size() -> usize {
    64
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInt {
    pub version: Option<Choice<IntVersion>>,
    pub encapsulation: Option<Choice<EncapsulationName>>,
    pub dscp: Option<RawDscp>,
    pub udp_port: Option<u16>,
    pub tcp_placement: Option<Choice<TcpPlacement>>,
    pub domain_specific_id: Option<u16>,
    pub sequence: Option<bool>,
    /// IOAM: the namespace, the trace type's fields, the slots, the
    /// timestamps' fraction.
    pub namespace: Option<u16>,
    pub trace_type: Option<Vec<String>>,
    pub nodes: Option<u8>,
    pub timestamps: Option<Choice<IoamTimestamps>>,
    /// IFA: the IP protocol, this node's Device ID, what the initiator
    /// writes (Hop Limit, Max Length, the L4 rule), inband or probes.
    pub protocol: Option<u8>,
    pub device_id: Option<u32>,
    pub hop_limit: Option<u8>,
    pub max_length: Option<u8>,
    pub l4: Option<Choice<IfaL4>>,
    pub mode: Option<Choice<IfaMode>>,
    pub probe: Option<RawProbe>,
    /// IFA: the terminator's report form, and IPFIX's settings.
    pub report: Option<Choice<IfaReportName>>,
    pub ipfix: Option<RawIfaIpfix>,
}

/// `int.ipfix` of an IFA zone.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIfaIpfix {
    pub template_id: Option<u16>,
    pub elements: Option<Vec<u32>>,
    pub enterprise: Option<RawEnterprise>,
    pub packet_max: Option<u32>,
    pub template_seconds: Option<u32>,
}

/// An enterprise number, or `iana` (the E bit clear).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawEnterprise {
    Number(u64),
    Name(String),
}

/// `int.probe` of an IFA zone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    /// One copy in `one_in` packets of each watched flow (its 1st, N+1st, ...).
    pub one_in: u32,
    /// The copies' own pool.
    pub mbufs: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDscp {
    pub value: u8,
    pub mask: u8,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    pub flavour: Option<Choice<Flavour>>,
    /// INT 2.1: `md` or `mx`.
    pub mode: Option<Choice<Mode>>,
    pub instructions: Option<Vec<String>>,
    pub max_hop_count: Option<u8>,
    pub own_hop: Option<bool>,
    #[serde(default)]
    pub watchlist: Vec<RawRule>,
    #[serde(default)]
    pub flows: RawFlows,
    pub marked: Option<Choice<MarkedPolicy>>,
    pub tail: Option<Choice<TailStyle>>,
    /// INT 2.1: set D, for probe traffic sinks discard once reported.
    pub discard: Option<bool>,
    /// INT 2.1: `inside` or `outer`.
    pub tunnels: Option<Choice<TunnelPlacement>>,
    /// INT 2.1: copies of a share of each watched flow's packets, instrumented
    /// beside the untouched originals.
    pub clone: Option<RawClone>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClone {
    /// One copy in `every` packets of each flow (its 1st, N+1st, ...).
    pub every: u32,
    /// The mbufs of the copies' own pool (the originals' pool never lends
    /// one to a copy).
    pub mbufs: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub protocol: Option<Choice<Protocol>>,
    pub src_ports: Option<String>,
    pub dst_ports: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlows {
    #[serde(default = "default_flow_capacity")]
    pub capacity: u32,
    #[serde(default = "default_idle_ms")]
    pub idle_timeout_ms: u64,
}

impl Default for RawFlows {
    fn default() -> Self {
        RawFlows { capacity: default_flow_capacity(), idle_timeout_ms: default_idle_ms() }
    }
}

fn default_flow_capacity() -> u32 {
    65536
}
fn default_idle_ms() -> u64 {
    120_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSink {
    #[serde(default)]
    pub latency: RawLatency,
    #[serde(default)]
    pub loss: RawLoss,
    #[serde(default)]
    pub flows: RawFlows,
    pub malformed: Option<Choice<MalformedPolicy>>,
    /// INT 2.1: report a flow whose path (its hops' node ids) changes.
    #[serde(default = "yes")]
    pub path_changes: bool,
    /// INT 2.1: report a flow whose hop's latency or queue class changes,
    /// or whose hop's queue is over a threshold.
    #[serde(default)]
    pub hops: RawHops,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHops {
    #[serde(default)]
    pub latency_ns: Vec<u32>,
    #[serde(default)]
    pub queue: Vec<u32>,
    pub queue_alert: Option<u32>,
    #[serde(default = "default_queue_quota")]
    pub queue_quota: u32,
    /// INT 2.1 sink: one packet in N of each flow (by packet number) feeds
    /// the path and hop rules; 1: every packet.
    #[serde(default = "every_packet")]
    pub sample: u32,
}

fn every_packet() -> u32 {
    1
}

impl Default for RawHops {
    fn default() -> Self {
        RawHops {
            latency_ns: Vec::new(),
            queue: Vec::new(),
            queue_alert: None,
            queue_quota: default_queue_quota(),
            sample: 1,
        }
    }
}

fn default_queue_quota() -> u32 {
    100
}

impl Default for RawSink {
    fn default() -> Self {
        RawSink {
            latency: RawLatency::default(),
            loss: RawLoss::default(),
            flows: RawFlows::default(),
            malformed: None,
            path_changes: true,
            hops: RawHops::default(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLatency {
    pub mode: Option<Choice<LatencyMode>>,
    pub buckets_ns: Option<Vec<u32>>,
    pub threshold_ns: Option<u32>,
    pub threshold_percent: Option<u32>,
    pub refresh_ms: Option<u64>,
    /// How far past a bucket edge (per cent of the latency) a packet must be
    /// to move its flow to another bucket (default 6; 0: Host-INT's rule).
    pub hysteresis_percent: Option<u8>,
    /// How many packets in a row in another bucket, within the hysteresis,
    /// move a flow there (default 16; 0: never).
    pub hysteresis_packets: Option<u8>,
    /// How far a sink's clock may be behind a source's and be told from a
    /// latency (ms, at most 2147; default 2147: +-2.1 s).
    pub max_skew_ms: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoss {
    #[serde(default = "default_loss_timeout")]
    pub timeout_ms: u64,
    #[serde(default = "default_sweep")]
    pub sweep_ms: u64,
    #[serde(default = "default_max_flow_pps")]
    pub max_flow_pps: u64,
    #[serde(default = "default_max_report_delay")]
    pub max_report_delay_ms: u64,
}

impl Default for RawLoss {
    fn default() -> Self {
        RawLoss {
            timeout_ms: default_loss_timeout(),
            sweep_ms: default_sweep(),
            max_flow_pps: default_max_flow_pps(),
            max_report_delay_ms: default_max_report_delay(),
        }
    }
}

fn default_max_report_delay() -> u64 {
    5000
}

/// 64-byte frames at 10 Gb/s line rate.
fn default_max_flow_pps() -> u64 {
    14_880_952
}

fn default_loss_timeout() -> u64 {
    200
}
fn default_sweep() -> u64 {
    100
}

/// Read in every build (the YAML is the same); used where the `lab`
/// feature builds the impair stage.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "lab"), allow(dead_code))]
pub struct RawImpair {
    #[serde(default)]
    pub loss_percent: f64,
    #[serde(default)]
    pub delay_ms: f64,
    /// A file whose content (`loss_percent=2 delay_ms=20`) replaces the
    /// settings live; read every 100 ms.
    pub control_file: Option<String>,
    pub max_held: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExport {
    pub collector: String,
    pub profile: Option<Choice<ProfileName>>,
    pub rate_limit: Option<u32>,
    pub ring_size: Option<u32>,
    /// Reports per second the exporter sends at most, in bursts of 64.
    pub pace: Option<u32>,
    /// `socket` (default) or a DPDK port.
    #[serde(default)]
    pub path: RawExportPath,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawExportPath {
    pub port: Option<String>,
    pub queue: Option<u16>,
    pub src_mac: Option<String>,
    pub dst_mac: Option<String>,
    pub src_ip: Option<String>,
    pub src_port: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStats {
    #[serde(default = "default_interval")]
    pub interval_ms: u64,
    /// Address and port of a Prometheus `/metrics` endpoint.
    pub metrics: Option<String>,
}

impl Default for RawStats {
    fn default() -> Self {
        RawStats { interval_ms: default_interval(), metrics: None }
    }
}

fn default_interval() -> u64 {
    1000
}
