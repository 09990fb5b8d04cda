//! The YAML configuration: a raw serde layer that refuses unknown keys, then
//! `validate()`, which checks everything before DPDK starts and reports
//! every problem with its YAML path and a hint.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;

use int_core::encap::{Encapsulation, TcpPlacement, DEFAULT_EXTENSION_PORT};
use int_core::int05::{instruction, Instructions, ShimType};
use int_core::latency::{ChangeRule, LatencyConfig};
use int_core::report::{ReportProfile, DEFAULT_COLLECTOR_PORT};
use int_core::source::TailStyle;
use serde::Deserialize;

// ---------------------------------------------------------------- raw YAML

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub node_id: Option<NodeId>,
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
    pub role: String,
    pub lcore: u32,
    pub rx: RawEndpoint,
    pub tx: RawEndpoint,
    #[serde(default)]
    pub int: RawInt,
    pub source: Option<RawSource>,
    pub sink: Option<RawSink>,
    pub impair: Option<RawImpair>,
    /// `host` (default) or `rx-timestamp`.
    pub clock: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInt {
    /// `int05-over-tcp-udp` (default) or `int05-extension-udp`.
    pub encapsulation: Option<String>,
    pub dscp: Option<RawDscp>,
    pub udp_port: Option<u16>,
    /// `before-options` (default, Host-INT) or `after-options` (INT 0.5).
    pub tcp_placement: Option<String>,
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
    /// `hostint` (shim Type 3 with sequence numbers, default) or `int05`.
    pub flavour: Option<String>,
    pub instructions: Option<Vec<String>>,
    pub max_hop_count: Option<u8>,
    pub own_hop: Option<bool>,
    #[serde(default)]
    pub watchlist: Vec<RawRule>,
    #[serde(default)]
    pub flows: RawFlows,
    /// What to do with packets that arrive carrying the INT mark: `strip`
    /// (default), `drop` or `trust`.
    pub marked: Option<String>,
    /// `hostint` (Host-INT's tail, default with the hostint flavour) or
    /// `informative` (INT 0.5's, default with int05).
    pub tail: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub protocol: Option<String>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSink {
    #[serde(default)]
    pub latency: RawLatency,
    #[serde(default)]
    pub loss: RawLoss,
    #[serde(default)]
    pub flows: RawFlows,
    /// `forward` (untouched, default) or `drop`.
    pub malformed: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLatency {
    /// `buckets` (default), `absolute` or `relative`.
    pub mode: Option<String>,
    pub buckets_ns: Option<Vec<u32>>,
    pub threshold_ns: Option<u32>,
    pub threshold_percent: Option<u32>,
    pub refresh_ms: Option<u64>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// `hostint` (default) or `tr05`.
    pub profile: Option<String>,
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
}

impl Default for RawStats {
    fn default() -> Self {
        RawStats { interval_ms: default_interval() }
    }
}

fn default_interval() -> u64 {
    1000
}

// ------------------------------------------------------------- validated

#[derive(Debug, Clone)]
pub struct Config {
    pub node_id: u32,
    pub eal_args: Vec<String>,
    pub mbufs: u32,
    pub mempool_cache: u32,
    pub ports: Vec<PortConfig>,
    pub pipelines: Vec<PipelineConfig>,
    pub export: Option<ExportConfig>,
    pub stats_interval_ms: u64,
    pub idle_sleep_us: u64,
}

#[derive(Debug, Clone)]
pub struct PortConfig {
    pub name: String,
    /// The whole device string (`net_pcap0,rx_pcap=...` or a PCI address).
    pub device: String,
    pub is_vdev: bool,
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    pub mtu: u16,
    pub promiscuous: bool,
    pub int_port: u16,
}

impl PortConfig {
    /// The name EAL gives the device: the vdev name before the first comma,
    /// or the PCI address.
    pub fn device_name(&self) -> &str {
        self.device.split(',').next().unwrap_or(&self.device)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Forward,
    Source,
    Transit,
    Sink,
    Impair,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The host's CLOCK_REALTIME, read once per burst ([`crate::clock`]).
    Host,
    /// The driver's RX timestamp of each packet.
    RxTimestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedPolicy {
    Forward,
    Drop,
}

/// What a source does with a packet that arrives carrying the INT mark
/// (the INT domain's edge: what leaves a source marked must carry this
/// source's INT block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkedPolicy {
    /// Remove a well-formed INT block (restoring the packet as a sink
    /// would), then treat the packet as any other: instrument it if
    /// watched, otherwise clear the mark.
    Strip,
    /// Drop every marked arrival.
    Drop,
    /// Forward marked arrivals untouched: an upstream source of the same
    /// domain put the mark there.
    Trust,
}

#[derive(Debug, Clone)]
pub struct PipelineConfig {
    pub name: String,
    pub role: Role,
    pub lcore: u32,
    /// Index into `Config::ports`.
    pub rx_port: usize,
    pub rx_queue: u16,
    pub tx_port: usize,
    pub tx_queue: u16,
    pub encapsulation: Encapsulation,
    pub tcp_placement: TcpPlacement,
    pub clock: ClockSource,
    pub source: Option<SourceSettings>,
    pub sink: Option<SinkSettings>,
    pub impair: Option<ImpairSettings>,
}

#[derive(Debug, Clone)]
pub struct ImpairSettings {
    pub loss_ppm: u32,
    pub delay_us: u32,
    pub control_file: Option<String>,
    pub max_held: u32,
}

#[derive(Debug, Clone)]
pub struct SourceSettings {
    pub shim_type: ShimType,
    pub instructions: Instructions,
    pub max_hop_count: u8,
    pub own_hop: bool,
    pub watchlist: Vec<Rule>,
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
    pub marked: MarkedPolicy,
    pub tail: TailStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    pub addr: u32,
    pub len: u8,
}

impl Prefix {
    pub const ANY: Prefix = Prefix { addr: 0, len: 0 };

    #[inline]
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.len)) };
        u32::from(addr) & mask == self.addr & mask
    }
}

/// One watchlist rule: all its parts must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub src: Prefix,
    pub dst: Prefix,
    /// None = TCP and UDP.
    pub protocol: Option<u8>,
    pub src_ports: (u16, u16),
    pub dst_ports: (u16, u16),
}

impl Rule {
    #[inline]
    pub fn matches(&self, flow: &int_core::flow::FlowKey) -> bool {
        self.src.contains(flow.src)
            && self.dst.contains(flow.dst)
            && self.protocol.is_none_or(|p| p == flow.protocol)
            && (self.src_ports.0..=self.src_ports.1).contains(&flow.src_port)
            && (self.dst_ports.0..=self.dst_ports.1).contains(&flow.dst_port)
    }
}

#[derive(Debug, Clone)]
pub struct SinkSettings {
    pub latency: LatencyConfig,
    pub loss_timeout_ms: u64,
    pub sweep_ms: u64,
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
    pub malformed: MalformedPolicy,
    /// The fastest a flow's packets can come: a sequence jump larger than
    /// the flow could have made since its last packet is not believed.
    pub max_flow_pps: u64,
    /// A flow's losses go out in one Drop-Summary once the flow has been
    /// silent for the loss timeout (as Host-INT does), or once the first of
    /// them is this old while the flow keeps speaking; 0 = at every sweep.
    pub max_report_delay_ms: u64,
    /// A sink time up to this far behind a source's timestamp is clock skew,
    /// not a latency of almost 2^32 ns.
    pub max_skew_ns: u32,
}

#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub collector: std::net::SocketAddrV4,
    pub profile: ReportProfile,
    /// Reports per second per sink pipeline; 0 = unlimited.
    pub rate_limit: u32,
    pub ring_size: u32,
    /// Reports per second the exporter sends at most (bursts of up to 64):
    /// a sink's burst allowance does not land on the collector all at
    /// once. 0 = as fast as they come.
    pub pace: u32,
    pub path: ExportPath,
}

#[derive(Debug, Clone)]
pub enum ExportPath {
    Socket,
    Port { port: usize, queue: u16, src_mac: [u8; 6], dst_mac: [u8; 6], src_ip: Ipv4Addr, src_port: u16 },
}

// ------------------------------------------------------------------ errors

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if !self.hint.is_empty() {
            write!(f, "\n    hint: {}", self.hint)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
}

struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) {
        self.0.push(Problem { path: path.into(), message: message.into(), hint: hint.into() });
    }
}

/// A PCI address as EAL takes it after `-a`: `[domain:]bus:device.function`
/// in hex, optionally followed by driver arguments after a comma. Returns
/// the address with its domain (`0000:` when left out), lower case.
fn pci_address(device: &str) -> Option<String> {
    let address = device.split(',').next()?;
    let parts: Vec<&str> = address.split(':').collect();
    let (domain, bus, rest) = match parts.as_slice() {
        [bus, rest] => ("0000", *bus, *rest),
        [domain, bus, rest] => (*domain, *bus, *rest),
        _ => return None,
    };
    let (dev, function) = rest.split_once('.')?;
    let hex = |text: &str, max_len: usize| {
        !text.is_empty() && text.len() <= max_len && text.chars().all(|c| c.is_ascii_hexdigit())
    };
    if !(hex(domain, 4) && hex(bus, 2) && hex(dev, 2) && function.len() == 1 && hex(function, 1)) {
        return None;
    }
    Some(format!("{domain:0>4}:{bus:0>2}:{dev:0>2}.{function}").to_ascii_lowercase())
}

/// What identifies a device to EAL: the vdev's name, or the PCI address.
fn device_identity(device: &str) -> String {
    pci_address(device).unwrap_or_else(|| device.split(',').next().unwrap_or(device).to_string())
}

/// A vdev's `key=value` arguments.
fn vdev_args(device: &str) -> impl Iterator<Item = (&str, &str)> {
    device.split(',').skip(1).filter_map(|arg| arg.split_once('='))
}

/// Files a vdev writes (net_pcap's `tx_pcap`), which must not be shared.
fn written_files(device: &str) -> Vec<&str> {
    vdev_args(device).filter(|(key, _)| *key == "tx_pcap").map(|(_, file)| file).collect()
}

/// Refuses port `i` when an earlier port names the same device (two
/// lcores would poll one queue: corrupted packets and a corrupted pool) or
/// writes the same file (each writer truncates the other's packets).
fn check_aliases(ports: &[RawPort], i: usize, path: &str, problems: &mut Problems) {
    let Some(port) = ports.get(i) else { return };
    let identity = device_identity(&port.device);
    let writes = written_files(&port.device);
    for (j, earlier) in ports.iter().enumerate().take(i) {
        if device_identity(&earlier.device) == identity {
            problems.add(
                format!("{path}.device"),
                format!("device {identity:?} is also ports[{j}] ({:?})", earlier.name),
                "one port per device: give each vdev its own name (net_pcap0, net_pcap1, ...) and each NIC its own PCI address",
            );
        }
        for file in written_files(&earlier.device).into_iter().filter(|file| writes.contains(file)) {
            problems.add(
                format!("{path}.device"),
                format!("tx_pcap {file:?} is also written by ports[{j}] ({:?})", earlier.name),
                "give each port its own output file",
            );
        }
    }
    for (_, file) in vdev_args(&port.device).filter(|(key, _)| *key == "rx_pcap") {
        if writes.contains(&file) {
            problems.add(
                format!("{path}.device"),
                format!("{file:?} is both read (rx_pcap) and written (tx_pcap)"),
                "write the output to another file",
            );
        }
    }
}

/// Problems only the file system can show: an input pcap that is not
/// there (net_pcap would fail at start with a line buried in EAL's log).
/// Paths are relative to the working directory, as the node opens them.
fn check_files(raw: &RawConfig) -> Vec<Problem> {
    let mut problems = Problems(Vec::new());
    for (i, port) in raw.ports.iter().enumerate() {
        for (_, file) in vdev_args(&port.device).filter(|(key, _)| *key == "rx_pcap") {
            if !Path::new(file).is_file() {
                let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
                problems.add(
                    format!("ports[{i}].device"),
                    format!("rx_pcap {file:?} does not exist (relative to {cwd})"),
                    "give the path of an existing pcap file, relative to where the node runs",
                );
            }
        }
    }
    problems.0
}

// --------------------------------------------------------------- loading

/// Reads, validates and checks the files a config names.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
    let raw: RawConfig =
        serde_yaml_ng::from_str(&text).map_err(|e| ConfigError::Invalid(vec![yaml_problem(&e)]))?;
    let files = check_files(&raw);
    match validate(&raw) {
        Err(ConfigError::Invalid(mut problems)) => {
            problems.extend(files);
            Err(ConfigError::Invalid(problems))
        }
        Ok(_) if !files.is_empty() => Err(ConfigError::Invalid(files)),
        other => other,
    }
}

#[cfg(test)]
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let raw: RawConfig =
        serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Invalid(vec![yaml_problem(&e)]))?;
    validate(&raw)
}

fn yaml_problem(error: &serde_yaml_ng::Error) -> Problem {
    let text = error.to_string();
    // serde_yaml_ng says "pipelines[0].sink: unknown field `x`, expected ...
    // at line 3 column 5": split the path from the message.
    let (path, message) = match text.split_once(": ") {
        Some((path, rest)) if !path.contains(' ') => (path.to_string(), rest.to_string()),
        _ => ("(document)".to_string(), text.clone()),
    };
    let hint = if message.contains("unknown field") {
        "check the spelling against config/README.md; every key is listed there"
    } else if message.contains("missing field") {
        "this key is required; config/README.md shows an example"
    } else if message.contains("invalid type") {
        "the value has the wrong type (a number, a string, a list?)"
    } else {
        "the file must be YAML as in config/*.yaml"
    };
    Problem { path, message, hint: hint.to_string() }
}

fn parse_node_id(id: &NodeId) -> Option<u32> {
    match id {
        NodeId::Number(n) => u32::try_from(*n).ok(),
        NodeId::Text(text) => {
            if let Ok(addr) = text.parse::<Ipv4Addr>() {
                return Some(u32::from(addr));
            }
            let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
            u32::from_str_radix(hex, 16).ok()
        }
    }
}

fn parse_prefix(text: &str) -> Option<Prefix> {
    let (addr, len) = match text.split_once('/') {
        Some((addr, len)) => (addr, len.parse::<u8>().ok()?),
        None => (text, 32),
    };
    let addr = addr.parse::<Ipv4Addr>().ok()?;
    (len <= 32).then_some(Prefix { addr: u32::from(addr), len })
}

fn parse_ports(text: &str) -> Option<(u16, u16)> {
    match text.split_once('-') {
        Some((lo, hi)) => {
            let (lo, hi) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
            (lo <= hi).then_some((lo, hi))
        }
        None => {
            let port = text.trim().parse().ok()?;
            Some((port, port))
        }
    }
}

pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in mac.iter_mut() {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

pub fn validate(raw: &RawConfig) -> Result<Config, ConfigError> {
    let mut problems = Problems(Vec::new());
    let node_id = match &raw.node_id {
        None => 0,
        Some(id) => parse_node_id(id).unwrap_or_else(|| {
            problems.add(
                "node_id",
                "not a 32-bit node id",
                "a number, 0x-hex, or a dotted quad such as 10.0.0.1",
            );
            0
        }),
    };
    if raw.mempool.mbufs < 1023 {
        problems.add(
            "mempool.mbufs",
            format!("{} mbufs is too few", raw.mempool.mbufs),
            "use at least 1023; 8191 suits a demo",
        );
    }

    let mut ports = Vec::new();
    let mut port_index = BTreeMap::new();
    if raw.ports.is_empty() {
        problems.add(
            "ports",
            "no ports",
            "add at least one port, e.g. device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap",
        );
    }
    for (i, port) in raw.ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        if port.name.is_empty() {
            problems.add(format!("{path}.name"), "empty name", "give the port a short name to refer to it");
        }
        if port_index.insert(port.name.clone(), i).is_some() {
            problems.add(
                format!("{path}.name"),
                format!("port name {:?} used twice", port.name),
                "names must be unique",
            );
        }
        let is_vdev = port.device.starts_with("net_") || port.device.starts_with("eth_");
        let is_pci = !is_vdev && pci_address(&port.device).is_some();
        if !is_vdev && !is_pci {
            problems.add(
                format!("{path}.device"),
                format!("{:?} is neither a vdev nor a PCI address", port.device),
                "use a vdev such as net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap or net_null0, or a PCI address such as 0000:03:00.0 (driver arguments after a comma)",
            );
        }
        check_aliases(&raw.ports, i, &path, &mut problems);
        if port.rx_queues == 0 || port.tx_queues == 0 {
            problems.add(
                format!("{path}.rx_queues"),
                "a port needs at least one RX and one TX queue",
                "set rx_queues and tx_queues to 1 or more",
            );
        }
        if !(68..=9600).contains(&port.mtu) {
            problems.add(
                format!("{path}.mtu"),
                format!("MTU {} out of range", port.mtu),
                "68..9600; 1500 for Ethernet",
            );
        }
        ports.push(PortConfig {
            name: port.name.clone(),
            device: port.device.clone(),
            is_vdev,
            rx_queues: port.rx_queues,
            tx_queues: port.tx_queues,
            rx_descriptors: port.rx_descriptors,
            tx_descriptors: port.tx_descriptors,
            mtu: port.mtu,
            promiscuous: port.promiscuous,
            int_port: port.int_port.unwrap_or(i as u16),
        });
    }

    let mut pipelines = Vec::new();
    let mut rx_used = BTreeSet::new();
    let mut tx_used: BTreeMap<(usize, u16), u32> = BTreeMap::new();
    if raw.pipelines.is_empty() {
        problems.add(
            "pipelines",
            "no pipelines",
            "add one, e.g. role: forward, lcore: 1, rx: {port: in}, tx: {port: out}",
        );
    }
    for (i, p) in raw.pipelines.iter().enumerate() {
        let path = format!("pipelines[{i}]");
        let role = match p.role.as_str() {
            "forward" => Role::Forward,
            "source" => Role::Source,
            "transit" => Role::Transit,
            "sink" => Role::Sink,
            "impair" => Role::Impair,
            other => {
                problems.add(
                    format!("{path}.role"),
                    format!("unknown role {other:?}"),
                    "one of: source, transit, sink, forward, impair",
                );
                Role::Forward
            }
        };
        if p.lcore == 0 {
            problems.add(
                format!("{path}.lcore"),
                "lcore 0 is the main lcore (stats and export)",
                "use a worker lcore from the EAL -l list, e.g. 1",
            );
        }
        let mut endpoint = |e: &RawEndpoint, which: &str, is_rx: bool| -> usize {
            let Some(&index) = port_index.get(&e.port) else {
                problems.add(
                    format!("{path}.{which}.port"),
                    format!("no port named {:?}", e.port),
                    format!("ports are: {}", port_index.keys().cloned().collect::<Vec<_>>().join(", ")),
                );
                return 0;
            };
            let Some(port) = ports.get(index) else { return 0 };
            let queues = if is_rx { port.rx_queues } else { port.tx_queues };
            if e.queue >= queues {
                problems.add(
                    format!("{path}.{which}.queue"),
                    format!("port {:?} has {queues} {which} queue(s)", e.port),
                    format!("use 0..{} or raise ports[{index}].{which}_queues", queues.saturating_sub(1)),
                );
            }
            index
        };
        let rx_port = endpoint(&p.rx, "rx", true);
        let tx_port = endpoint(&p.tx, "tx", false);
        if !rx_used.insert((rx_port, p.rx.queue)) {
            problems.add(
                format!("{path}.rx"),
                "this RX queue is already polled by another pipeline",
                "each RX queue belongs to one pipeline (no locks on the packet path)",
            );
        }
        if let Some(other) = tx_used.insert((tx_port, p.tx.queue), p.lcore) {
            if other != p.lcore {
                problems.add(
                    format!("{path}.tx"),
                    "this TX queue is used by a pipeline on another lcore",
                    "TX queues are not thread-safe: give each lcore its own queue",
                );
            }
        }

        let encapsulation = match p.int.encapsulation.as_deref().unwrap_or("int05-over-tcp-udp") {
            "int05-over-tcp-udp" => {
                let (value, mask) = p.int.dscp.as_ref().map_or((0x01, 0x01), |d| (d.value, d.mask));
                if value > 63 || mask > 63 || mask == 0 {
                    problems.add(
                        format!("{path}.int.dscp"),
                        format!("value {value} / mask {mask}"),
                        "DSCP value and mask are 6-bit (0..63), mask non-zero; Host-INT uses 1 / 1",
                    );
                }
                if p.int.udp_port.is_some() {
                    problems.add(
                        format!("{path}.int.udp_port"),
                        "udp_port applies to int05-extension-udp only",
                        "remove it, or set encapsulation: int05-extension-udp",
                    );
                }
                Encapsulation::OverTcpUdp { dscp_value: value, dscp_mask: mask }
            }
            "int05-extension-udp" => {
                if p.int.dscp.is_some() {
                    problems.add(
                        format!("{path}.int.dscp"),
                        "dscp applies to int05-over-tcp-udp only",
                        "remove it, or set encapsulation: int05-over-tcp-udp",
                    );
                }
                Encapsulation::ExtensionUdp { port: p.int.udp_port.unwrap_or(DEFAULT_EXTENSION_PORT) }
            }
            other => {
                problems.add(
                    format!("{path}.int.encapsulation"),
                    format!("unknown encapsulation {other:?}"),
                    "int05-over-tcp-udp (DSCP marking) or int05-extension-udp (extra UDP header)",
                );
                Encapsulation::default()
            }
        };
        let tcp_placement = match p.int.tcp_placement.as_deref().unwrap_or("before-options") {
            "before-options" => TcpPlacement::BeforeOptions,
            "after-options" => TcpPlacement::AfterOptions,
            other => {
                problems.add(
                    format!("{path}.int.tcp_placement"),
                    format!("unknown placement {other:?}"),
                    "before-options (Host-INT) or after-options (INT 0.5)",
                );
                TcpPlacement::BeforeOptions
            }
        };
        let clock = match p.clock.as_deref().unwrap_or("host") {
            "host" => ClockSource::Host,
            "rx-timestamp" => ClockSource::RxTimestamp,
            other => {
                problems.add(
                    format!("{path}.clock"),
                    format!("unknown clock {other:?}"),
                    "host (default: CLOCK_REALTIME, one clock for every process on the host) or rx-timestamp",
                );
                ClockSource::Host
            }
        };

        let source = match (role, &p.source) {
            (Role::Source, raw_source) => {
                let default = RawSource::default();
                Some(source_settings(
                    raw_source.as_ref().unwrap_or(&default),
                    &format!("{path}.source"),
                    &mut problems,
                ))
            }
            (_, Some(_)) => {
                problems.add(
                    format!("{path}.source"),
                    "source settings on a pipeline that is not a source",
                    "remove the section or set role: source",
                );
                None
            }
            _ => None,
        };
        let sink = match (role, &p.sink) {
            (Role::Sink, raw_sink) => {
                let default = RawSink::default();
                Some(sink_settings(
                    raw_sink.as_ref().unwrap_or(&default),
                    &format!("{path}.sink"),
                    &mut problems,
                ))
            }
            (_, Some(_)) => {
                problems.add(
                    format!("{path}.sink"),
                    "sink settings on a pipeline that is not a sink",
                    "remove the section or set role: sink",
                );
                None
            }
            _ => None,
        };
        let impair = match (role, &p.impair) {
            (Role::Impair, raw) => {
                let default = RawImpair::default();
                let raw = raw.as_ref().unwrap_or(&default);
                let text = format!("loss_percent={} delay_ms={}", raw.loss_percent, raw.delay_ms);
                let (loss_ppm, delay_us) = crate::pipeline::impair::ImpairControl::parse(&text)
                    .unwrap_or_else(|| {
                        problems.add(
                            format!("{path}.impair"),
                            "loss_percent must be 0-100 and delay_ms 0-10000",
                            "e.g. {loss_percent: 1, delay_ms: 20}",
                        );
                        (0, 0)
                    });
                Some(ImpairSettings {
                    loss_ppm,
                    delay_us,
                    control_file: raw.control_file.clone(),
                    max_held: raw.max_held.unwrap_or(65536),
                })
            }
            (_, Some(_)) => {
                problems.add(
                    format!("{path}.impair"),
                    "impair settings on a pipeline that is not impair",
                    "remove the section or set role: impair",
                );
                None
            }
            _ => None,
        };
        pipelines.push(PipelineConfig {
            name: p.name.clone().unwrap_or_else(|| format!("{}{i}", p.role)),
            role,
            lcore: p.lcore,
            rx_port,
            rx_queue: p.rx.queue,
            tx_port,
            tx_queue: p.tx.queue,
            encapsulation,
            tcp_placement,
            clock,
            source,
            sink,
            impair,
        });
    }

    let has_sink = pipelines.iter().any(|p| p.role == Role::Sink);
    let export = match &raw.export {
        Some(e) => Some(export_settings(e, &port_index, &ports, &tx_used, &mut problems)),
        None => {
            if has_sink {
                problems.add(
                    "export",
                    "a sink pipeline needs an export section",
                    "add export: {collector: 127.0.0.1:32766}",
                );
            }
            None
        }
    };
    if raw.stats.interval_ms == 0 {
        problems.add("stats.interval_ms", "0 ms", "a positive interval, e.g. 1000");
    }
    if !problems.0.is_empty() {
        return Err(ConfigError::Invalid(problems.0));
    }

    // EAL arguments: the config's own, then one --vdev / -a per port.
    let mut eal_args = raw.eal.clone();
    for port in &ports {
        eal_args.push(if port.is_vdev { "--vdev".into() } else { "-a".into() });
        eal_args.push(port.device.clone());
    }
    Ok(Config {
        node_id,
        eal_args,
        mbufs: raw.mempool.mbufs,
        mempool_cache: raw.mempool.cache,
        ports,
        pipelines,
        export,
        stats_interval_ms: raw.stats.interval_ms,
        idle_sleep_us: raw.idle_sleep_us,
    })
}

/// One watchlist rule; `rule_path` names it in problems.
fn watch_rule(rule: &RawRule, rule_path: &str, problems: &mut Problems) -> Rule {
    let mut prefix = |value: &Option<String>, key: &str| match value {
        None => Prefix::ANY,
        Some(text) => parse_prefix(text).unwrap_or_else(|| {
            problems.add(
                format!("{rule_path}.{key}"),
                format!("{text:?} is not an IPv4 prefix"),
                "e.g. 10.0.0.0/8 or 192.168.1.7",
            );
            Prefix::ANY
        }),
    };
    let src = prefix(&rule.src, "src");
    let dst = prefix(&rule.dst, "dst");
    let protocol = match rule.protocol.as_deref() {
        None | Some("any") => None,
        Some("udp") => Some(17),
        Some("tcp") => Some(6),
        Some(other) => {
            problems.add(
                format!("{rule_path}.protocol"),
                format!("unknown protocol {other:?}"),
                "udp, tcp or any",
            );
            None
        }
    };
    let mut ports = |value: &Option<String>, key: &str| match value {
        None => (0, u16::MAX),
        Some(text) => parse_ports(text).unwrap_or_else(|| {
            problems.add(
                format!("{rule_path}.{key}"),
                format!("{text:?} is not a port range"),
                "a port (80) or a range (1000-2000)",
            );
            (0, u16::MAX)
        }),
    };
    let src_ports = ports(&rule.src_ports, "src_ports");
    let dst_ports = ports(&rule.dst_ports, "dst_ports");
    Rule { src, dst, protocol, src_ports, dst_ports }
}

/// `source.marked`: what a source does with packets that arrive marked.
fn marked_policy(raw: &RawSource, path: &str, problems: &mut Problems) -> MarkedPolicy {
    match raw.marked.as_deref().unwrap_or("strip") {
        "strip" => MarkedPolicy::Strip,
        "drop" => MarkedPolicy::Drop,
        "trust" => MarkedPolicy::Trust,
        other => {
            problems.add(
                format!("{path}.marked"),
                format!("unknown policy {other:?}"),
                "strip (foreign INT removed, mark cleared unless instrumented), drop, or trust (an upstream source of this domain)",
            );
            MarkedPolicy::Strip
        }
    }
}

/// `source.tail`: Host-INT's tail by default with the hostint flavour,
/// INT 0.5's informative one with int05.
fn tail_style(raw: &RawSource, shim_type: ShimType, path: &str, problems: &mut Problems) -> TailStyle {
    let default_tail = if shim_type == ShimType::HopByHop { "informative" } else { "hostint" };
    match raw.tail.as_deref().unwrap_or(default_tail) {
        "hostint" => TailStyle::HostInt,
        "informative" => TailStyle::Informative,
        other => {
            problems.add(
                format!("{path}.tail"),
                format!("unknown tail {other:?}"),
                "hostint (zeros: a Host-INT sink restores the packets) or informative (protocol, port and DSCP: our sink gives the DSCP back exactly)",
            );
            TailStyle::HostInt
        }
    }
}

fn source_settings(raw: &RawSource, path: &str, problems: &mut Problems) -> SourceSettings {
    let shim_type = match raw.flavour.as_deref().unwrap_or("hostint") {
        "hostint" => ShimType::HostIntSequence,
        "int05" => ShimType::HopByHop,
        other => {
            problems.add(
                format!("{path}.flavour"),
                format!("unknown flavour {other:?}"),
                "hostint (shim Type 3 with sequence numbers) or int05 (Type 1)",
            );
            ShimType::HostIntSequence
        }
    };
    let mut instructions = Instructions::empty();
    match &raw.instructions {
        None => instructions = Instructions::HOST_INT,
        Some(names) => {
            for (i, name) in names.iter().enumerate() {
                match Instructions::from_config_name(name) {
                    Some(bit) => instructions |= bit,
                    None => problems.add(
                        format!("{path}.instructions[{i}]"),
                        format!("unknown instruction {name:?}"),
                        format!(
                            "one of: {}",
                            instruction::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                        ),
                    ),
                }
            }
        }
    }
    let own_hop = raw.own_hop.unwrap_or(true);
    let max_hop_count = raw.max_hop_count.unwrap_or(2);
    if own_hop && max_hop_count == 0 {
        problems.add(
            format!("{path}.max_hop_count"),
            "0 leaves no room for the source's own hop",
            "use 1 or more, or own_hop: false",
        );
    }
    let watchlist = raw
        .watchlist
        .iter()
        .enumerate()
        .map(|(i, rule)| watch_rule(rule, &format!("{path}.watchlist[{i}]"), problems))
        .collect();
    if raw.flows.capacity == 0 {
        problems.add(
            format!("{path}.flows.capacity"),
            "0 flows",
            "the per-lcore flow table size, e.g. 65536",
        );
    }
    let marked = marked_policy(raw, path, problems);
    let tail = tail_style(raw, shim_type, path, problems);
    SourceSettings {
        shim_type,
        instructions,
        max_hop_count,
        own_hop,
        watchlist,
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        marked,
        tail,
    }
}

/// `latency.max_skew_ms` in ns: at most 2^31 ns (half of what 32 bits tell).
fn max_skew_ns(raw: &RawSink, path: &str, problems: &mut Problems) -> u32 {
    const EVEN: u32 = 1 << 31;
    match raw.latency.max_skew_ms {
        None => EVEN,
        Some(ms) if u64::from(ms) * 1_000_000 <= u64::from(EVEN) => ms * 1_000_000,
        Some(ms) => {
            problems.add(
                format!("{path}.latency.max_skew_ms"),
                format!("{ms} ms is more than half of what a 32-bit timestamp tells"),
                "at most 2147; 0 reads every difference as a latency (Host-INT's unsigned rule)",
            );
            EVEN
        }
    }
}

/// `sink.latency`'s mode and its thresholds.
fn change_rule(raw: &RawSink, default: &LatencyConfig, path: &str, problems: &mut Problems) -> ChangeRule {
    match raw.latency.mode.as_deref().unwrap_or("buckets") {
        "buckets" => match &raw.latency.buckets_ns {
            None => default.rule,
            Some(list) => ChangeRule::buckets(list).unwrap_or_else(|| {
                problems.add(
                    format!("{path}.latency.buckets_ns"),
                    "buckets must increase and be at most 16",
                    "e.g. [50000, 100000, 250000, 500000, 1000000]",
                );
                default.rule
            }),
        },
        "absolute" => match raw.latency.threshold_ns {
            Some(ns) => ChangeRule::Absolute { ns },
            None => {
                problems.add(
                    format!("{path}.latency.threshold_ns"),
                    "absolute mode needs threshold_ns",
                    "e.g. threshold_ns: 100000",
                );
                default.rule
            }
        },
        "relative" => match raw.latency.threshold_percent {
            Some(percent) if percent > 0 => ChangeRule::Relative { percent },
            _ => {
                problems.add(
                    format!("{path}.latency.threshold_percent"),
                    "relative mode needs a positive threshold_percent",
                    "e.g. threshold_percent: 20",
                );
                default.rule
            }
        },
        other => {
            problems.add(
                format!("{path}.latency.mode"),
                format!("unknown mode {other:?}"),
                "buckets (Host-INT), absolute or relative",
            );
            default.rule
        }
    }
}

fn sink_settings(raw: &RawSink, path: &str, problems: &mut Problems) -> SinkSettings {
    let default = LatencyConfig::default();
    let rule = change_rule(raw, &default, path, problems);
    let refresh_ns = raw.latency.refresh_ms.map_or(default.refresh_ns, |ms| ms.saturating_mul(1_000_000));
    if refresh_ns > int_core::ticks::MAX_INTERVAL_NS {
        problems.add(
            format!("{path}.latency.refresh_ms"),
            format!("{} ms is longer than a flow's report clock can count", refresh_ns / 1_000_000),
            "at most 2199023 (36 minutes), or 0 for no refresh",
        );
    }
    if raw.loss.sweep_ms == 0 {
        problems.add(
            format!("{path}.loss.sweep_ms"),
            "0 ms",
            "how often to look for losses to report, e.g. 100",
        );
    }
    let malformed = match raw.malformed.as_deref().unwrap_or("forward") {
        "forward" => MalformedPolicy::Forward,
        "drop" => MalformedPolicy::Drop,
        other => {
            problems.add(
                format!("{path}.malformed"),
                format!("unknown policy {other:?}"),
                "forward (untouched) or drop",
            );
            MalformedPolicy::Forward
        }
    };
    if raw.flows.capacity == 0 {
        problems.add(
            format!("{path}.flows.capacity"),
            "0 flows",
            "the per-lcore flow table size, e.g. 65536",
        );
    }
    if raw.loss.max_flow_pps == 0 {
        problems.add(
            format!("{path}.loss.max_flow_pps"),
            "0 packets per second",
            "the fastest one flow can send, e.g. 14880952 (10 Gb/s of 64-byte frames)",
        );
    }
    SinkSettings {
        latency: LatencyConfig { rule, refresh_ns },
        loss_timeout_ms: raw.loss.timeout_ms,
        sweep_ms: raw.loss.sweep_ms,
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        malformed,
        max_flow_pps: raw.loss.max_flow_pps,
        max_report_delay_ms: raw.loss.max_report_delay_ms,
        max_skew_ns: max_skew_ns(raw, path, problems),
    }
}

fn export_settings(
    raw: &RawExport,
    port_index: &BTreeMap<String, usize>,
    ports: &[PortConfig],
    tx_used: &BTreeMap<(usize, u16), u32>,
    problems: &mut Problems,
) -> ExportConfig {
    let collector = match raw.collector.parse::<std::net::SocketAddrV4>() {
        Ok(addr) => addr,
        Err(_) => match raw.collector.parse::<Ipv4Addr>() {
            Ok(ip) => std::net::SocketAddrV4::new(ip, DEFAULT_COLLECTOR_PORT),
            Err(_) => {
                problems.add(
                    "export.collector",
                    format!("{:?} is not an IPv4 address", raw.collector),
                    "ADDR or ADDR:PORT, e.g. 10.0.0.9:32766",
                );
                std::net::SocketAddrV4::new(Ipv4Addr::LOCALHOST, DEFAULT_COLLECTOR_PORT)
            }
        },
    };
    let profile = match raw.profile.as_deref().unwrap_or("hostint") {
        "hostint" => ReportProfile::HOST_INT,
        "tr05" => ReportProfile::TR05,
        other => {
            problems.add(
                "export.profile",
                format!("unknown profile {other:?}"),
                "hostint (seconds, sink id word) or tr05 (nanoseconds)",
            );
            ReportProfile::HOST_INT
        }
    };
    let ring_size = raw.ring_size.unwrap_or(4096);
    if ring_size < 16 {
        problems.add("export.ring_size", format!("{ring_size} reports"), "at least 16; 4096 by default");
    }
    let p = &raw.path;
    let path = match &p.port {
        None => {
            if p.queue.is_some() || p.src_mac.is_some() || p.dst_mac.is_some() || p.src_ip.is_some() {
                problems.add(
                    "export.path",
                    "queue/MACs/src_ip given without a port",
                    "set export.path.port, or remove them to use a kernel UDP socket",
                );
            }
            ExportPath::Socket
        }
        Some(name) => {
            let port = match port_index.get(name) {
                Some(&i) => i,
                None => {
                    problems.add(
                        "export.path.port",
                        format!("no port named {name:?}"),
                        "name one of the ports",
                    );
                    0
                }
            };
            let queue = p.queue.unwrap_or(0);
            if let Some(cfg) = ports.get(port) {
                if queue >= cfg.tx_queues {
                    problems.add(
                        "export.path.queue",
                        format!("port {name:?} has {} TX queue(s)", cfg.tx_queues),
                        "raise the port's tx_queues and give the exporter its own queue",
                    );
                }
            }
            if tx_used.contains_key(&(port, queue)) {
                problems.add(
                    "export.path.queue",
                    "this TX queue is used by a pipeline",
                    "the exporter runs on the main lcore: give it its own TX queue",
                );
            }
            let mac = |value: &Option<String>, key: &str, problems: &mut Problems| match value
                .as_deref()
                .map(parse_mac)
            {
                Some(Some(mac)) => mac,
                Some(None) => {
                    problems.add(
                        format!("export.path.{key}"),
                        "not a MAC address",
                        "six hex bytes, e.g. 02:00:00:00:00:09",
                    );
                    [0; 6]
                }
                None => {
                    problems.add(
                        format!("export.path.{key}"),
                        "missing",
                        "a port exporter writes Ethernet headers: give both MACs",
                    );
                    [0; 6]
                }
            };
            let src_mac = mac(&p.src_mac, "src_mac", problems);
            let dst_mac = mac(&p.dst_mac, "dst_mac", problems);
            let src_ip = match p.src_ip.as_deref().map(str::parse::<Ipv4Addr>) {
                Some(Ok(ip)) => ip,
                _ => {
                    problems.add(
                        "export.path.src_ip",
                        "missing or not an IPv4 address",
                        "the reports' source address, e.g. 10.0.0.2",
                    );
                    Ipv4Addr::UNSPECIFIED
                }
            };
            ExportPath::Port { port, queue, src_mac, dst_mac, src_ip, src_port: p.src_port.unwrap_or(32766) }
        }
    };
    ExportConfig {
        collector,
        profile,
        rate_limit: raw.rate_limit.unwrap_or(10_000),
        ring_size,
        pace: raw.pace.unwrap_or(100_000),
        path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "
eal: [--no-huge, -m, '512', --no-pci, --no-shconf, -l, 0-1]
ports:
  - name: in
    device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap
pipelines:
  - role: forward
    lcore: 1
    rx: {port: in}
    tx: {port: in}
";

    fn problems(text: &str) -> Vec<Problem> {
        match parse(text) {
            Err(ConfigError::Invalid(problems)) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    }

    #[test]
    fn minimal_forward() {
        let config = parse(MINIMAL).unwrap();
        assert_eq!(config.ports[0].device_name(), "net_pcap0");
        assert_eq!(config.eal_args.last().unwrap(), "net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap");
        assert_eq!(config.pipelines[0].role, Role::Forward);
        assert_eq!(config.pipelines[0].name, "forward0");
    }

    #[test]
    fn unknown_key_names_its_path() {
        let text = MINIMAL.replace("    lcore: 1", "    lcore: 1\n    colour: red");
        let problems = problems(&text);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "pipelines[0]");
        assert!(problems[0].message.contains("unknown field `colour`"), "{}", problems[0].message);
    }

    #[test]
    fn every_problem_is_reported() {
        let text = "
node_id: not-an-id
ports:
  - name: in
    device: eth0
    mtu: 20
pipelines:
  - role: sorce
    lcore: 0
    rx: {port: nowhere}
    tx: {port: in, queue: 3}
    int: {encapsulation: int05-extension-udp, dscp: {value: 1, mask: 1}}
  - role: sink
    lcore: 1
    rx: {port: in}
    tx: {port: in}
    sink: {latency: {buckets_ns: [5, 4]}, malformed: explode}
";
        let paths: Vec<String> = problems(text).into_iter().map(|p| p.path).collect();
        for expected in [
            "node_id",
            "ports[0].device",
            "ports[0].mtu",
            "pipelines[0].role",
            "pipelines[0].lcore",
            "pipelines[0].rx.port",
            "pipelines[0].tx.queue",
            "pipelines[0].int.dscp",
            "pipelines[1].sink.latency.buckets_ns",
            "pipelines[1].sink.malformed",
            "export",
        ] {
            assert!(paths.iter().any(|p| p == expected), "no problem at {expected}; got {paths:?}");
        }
    }

    const TWO_PORTS: &str = "
ports:
  - {name: a, device: 'DEVICE_A'}
  - {name: b, device: 'DEVICE_B'}
pipelines:
  - {role: forward, lcore: 1, rx: {port: a}, tx: {port: b}}
";

    fn two_ports(a: &str, b: &str) -> Result<Config, ConfigError> {
        parse(&TWO_PORTS.replace("DEVICE_A", a).replace("DEVICE_B", b))
    }

    #[test]
    fn ports_cannot_alias_a_device_or_an_output() {
        let problems_of = |a: &str, b: &str| match two_ports(a, b) {
            Err(ConfigError::Invalid(problems)) => problems,
            other => panic!("{a} / {b}: expected problems, got {other:?}"),
        };
        for (a, b, says) in [
            (
                "net_pcap0,rx_pcap=a.pcap,tx_pcap=x.pcap",
                "net_pcap0,rx_pcap=b.pcap,tx_pcap=y.pcap",
                "also ports[0]",
            ),
            ("net_null0", "net_null0", "also ports[0]"),
            ("0000:03:00.0", "03:00.0,rxq_cqe_comp_en=0", "also ports[0]"),
            (
                "net_pcap0,rx_pcap=a.pcap,tx_pcap=x.pcap",
                "net_pcap1,rx_pcap=b.pcap,tx_pcap=x.pcap",
                "also written",
            ),
        ] {
            let problems = problems_of(a, b);
            assert_eq!(problems.len(), 1, "{a} / {b}: {problems:?}");
            assert_eq!(problems[0].path, "ports[1].device");
            assert!(problems[0].message.contains(says), "{}", problems[0].message);
        }
        let same_file = problems_of("net_pcap0,rx_pcap=a.pcap,tx_pcap=a.pcap", "net_null0");
        assert_eq!(same_file[0].path, "ports[0].device");
        assert!(same_file[0].message.contains("both read"), "{}", same_file[0].message);
    }

    #[test]
    fn pci_addresses_with_driver_arguments() {
        let config = two_ports("0000:03:00.0,rxq_cqe_comp_en=0", "03:00.1").unwrap();
        assert!(!config.ports[0].is_vdev);
        assert_eq!(config.eal_args[config.eal_args.len() - 3], "0000:03:00.0,rxq_cqe_comp_en=0");
        assert_eq!(pci_address("0000:3B:00.0"), Some("0000:3b:00.0".into()));
        assert_eq!(pci_address("3b:00.0"), Some("0000:3b:00.0".into()));
        for bad in ["eth0", "3b:00", "3b:00.12", "zz:00.0", "0000:3b:00:0"] {
            assert_eq!(pci_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn watchlist_rules() {
        let rule = Rule {
            src: parse_prefix("10.0.0.0/8").unwrap(),
            dst: Prefix::ANY,
            protocol: Some(17),
            src_ports: (0, u16::MAX),
            dst_ports: parse_ports("5000-5010").unwrap(),
        };
        let flow = |src: [u8; 4], protocol: u8, dst_port: u16| int_core::flow::FlowKey {
            src: Ipv4Addr::from(src),
            dst: Ipv4Addr::new(1, 2, 3, 4),
            protocol,
            src_port: 1,
            dst_port,
        };
        assert!(rule.matches(&flow([10, 1, 2, 3], 17, 5005)));
        assert!(!rule.matches(&flow([11, 1, 2, 3], 17, 5005)));
        assert!(!rule.matches(&flow([10, 1, 2, 3], 6, 5005)));
        assert!(!rule.matches(&flow([10, 1, 2, 3], 17, 5011)));
        assert_eq!(parse_prefix("10.0.0.1/33"), None);
        assert_eq!(parse_ports("9-3"), None);
        assert_eq!(parse_mac("02:00:00:00:00:0a"), Some([2, 0, 0, 0, 0, 10]));
    }

    #[test]
    fn node_id_forms() {
        assert_eq!(parse_node_id(&NodeId::Number(7)), Some(7));
        assert_eq!(parse_node_id(&NodeId::Text("10.0.0.1".into())), Some(0x0a00_0001));
        assert_eq!(parse_node_id(&NodeId::Text("0xcafe".into())), Some(0xcafe));
        assert_eq!(parse_node_id(&NodeId::Number(1 << 40)), None);
    }
}
