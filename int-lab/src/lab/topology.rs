//! The lab as its YAML file describes it: hosts, links, nodes, the
//! collector and the scenario.

use serde::Deserialize;

use crate::error::{Error, Setup};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub name: String,
    pub hosts: Vec<String>,
    pub links: Vec<Link>,
    /// Frames patched through a host by tc, as a cable would (the path
    /// switch's means).
    #[serde(default)]
    pub redirects: Vec<Redirect>,
    /// Commands run in a host once the links are up: routes, sysctls, a
    /// Linux router's IOAM settings.
    #[serde(default)]
    pub setup: Vec<SetupCommand>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    pub collector: Option<CollectorSpec>,
    /// More programs, started in order after the collector and before the
    /// nodes: a nats-server, receiving collectors, an aggregator.
    #[serde(default)]
    pub processes: Vec<ProcessSpec>,
    #[serde(default)]
    pub scenario: Scenario,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// `host/interface`.
    pub a: String,
    pub b: String,
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    pub a_addr: Option<String>,
    pub b_addr: Option<String>,
    /// IPv6 addresses of the ends (dual stack), e.g. `fd00:10::1/64`.
    pub a_addr6: Option<String>,
    pub b_addr6: Option<String>,
    /// netem arguments applied at start on side a, e.g. "delay 1ms".
    pub netem: Option<String>,
}

fn default_mtu() -> u16 {
    1500
}

/// `run` (a program and its arguments) in `host`'s namespace.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupCommand {
    pub host: String,
    pub run: Vec<String>,
}

/// Every frame that arrives on `from` (`host/interface`) leaves by `to`,
/// an interface of the same host.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redirect {
    pub from: String,
    pub to: String,
}

/// The path switch: mid-flow, `at`'s frames are patched to `to` instead;
/// the flow's path must change from one through `old` to one through `new`
/// (node ids), and `sink` (a host whose node is an INT-MD sink) must have
/// reported it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSwitch {
    pub at: String,
    pub to: String,
    pub old: String,
    pub new: String,
    pub sink: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub host: String,
    /// Node config, relative to the topology file.
    pub config: String,
}

/// A program of the lab in `host`: `run` with `{tools}` as int-tools'
/// path and `{workdir}` as the run's folder; its output in
/// `<name>.log`. With `listens` (`tcp/PORT` or `udp/PORT`), the next one
/// starts once it listens there.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    pub name: String,
    pub host: String,
    pub run: Vec<String>,
    pub listens: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorSpec {
    pub host: String,
    pub listen: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// `host/interface` of the traffic's sender and receiver.
    pub client: Option<String>,
    pub server: Option<String>,
    /// `host/interface` whose egress gets netem.
    pub impaired: Option<String>,
    /// Where loss and delay come from: `netem` on `impaired`, `node` (an
    /// int-node impair pipeline reading `impair_control`), or `auto`: netem
    /// when the kernel has it, the node otherwise.
    #[serde(default)]
    pub impairment: ImpairmentChoice,
    /// The impair node's control file (in the lab's work directory) and the
    /// host whose node log carries its counters.
    pub impair_control: Option<String>,
    pub impair_host: Option<String>,
    pub tcp_transfer_mb: Option<u64>,
    pub loss_percent: Option<f64>,
    #[serde(default = "default_udp_packets")]
    pub udp_packets: u64,
    #[serde(default = "default_udp_rate")]
    pub udp_rate: f64,
    pub delay_ms: Option<u64>,
    /// The TCP transfer again over IPv6 (the ends' `a_addr6`/`b_addr6`).
    #[serde(default)]
    pub ipv6_transfer: bool,
    /// The loss check again over IPv6: for domains whose loss reports can
    /// name an IPv6 flow (TR 2.0; Host-INT's Drop-Summary cannot).
    #[serde(default)]
    pub ipv6_loss: bool,
    /// The client and server have IPv6 addresses alone: every step runs
    /// over IPv6 (an IOAM domain).
    #[serde(default)]
    pub ipv6_only: bool,
    /// Scale-out: the process named `aggregator` (`collect --from-nats
    /// --json`) must end with the summary of the lab's collector, fed the
    /// same reports, which the `receivers` shared.
    pub scale_out: Option<ScaleOut>,
    /// An IOAM domain's checks at exit: its decapsulating node numbered
    /// every packet, and a Linux router filled its slot.
    pub ioam: Option<IoamChecks>,
    /// The link the delay is on, by its ends' node ids: the delay must show
    /// on it alone (INT 2.1 stacks with timestamps).
    pub delayed_link: Option<[String; 2]>,
    /// The domain's reports are postcards (INT-MX, INT-XD): the delay is
    /// judged on the packets the collector joined from them, and no
    /// end-to-end latency is reported to check.
    #[serde(default)]
    pub joined: bool,
    /// A flow moved from one transit to another mid-run (`redirects`).
    pub path_switch: Option<PathSwitch>,
    /// Every node the collector's summary names must have hop latencies
    /// (the per-hop view has figures), but those `but` names.
    pub hop_latency: Option<HopLatency>,
    /// An IFA 2.0 zone's checks: what the IFA of every report says, no IFA
    /// byte at the server, the initiator's and terminator's counters.
    pub ifa: Option<IfaChecks>,
    /// Congestion episodes against a Linux router's bottleneck qdisc
    /// (config/lab/congestion.yaml).
    pub congestion: Option<Congestion>,
}

/// A flow bursting on a schedule through a bottleneck while steady flows
/// cross it: the collector's episodes of the router's queue are judged
/// against the qdisc's backlog, sampled.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Congestion {
    /// `host/interface` whose root qdisc is the bottleneck (sampled).
    pub bottleneck: String,
    /// The router's IOAM node id (`net.ipv6.ioam6_id`): its queue.
    pub node: u32,
    /// A backlog of this many bytes is congested (the collector's
    /// threshold for that node, and the lab's for the samples) until it
    /// falls under half of it.
    pub threshold_bytes: u32,
    #[serde(default = "default_bursts")]
    pub bursts: u32,
    /// Each burst: packets of `burst_size` UDP payload bytes at `burst_rate`.
    pub burst_packets: u64,
    pub burst_size: usize,
    pub burst_rate: f64,
    /// Steady flows, each of 200-byte datagrams at `steady_rate`.
    pub steady_flows: u16,
    pub steady_rate: f64,
    /// Calm between a burst's fall and the next burst, ms.
    pub gap_ms: u64,
    /// The most an episode's start or end may miss the backlog's rise or
    /// fall, as the samples bound them, ms.
    pub tolerance_ms: f64,
}

/// What an IFA lab checks (config/lab/multihopifa.yaml): every report's
/// stack is one of `paths` (Device IDs, the initiator's first), with the
/// metadata header the initiator's `hop_limit` leaves after its hops, I
/// set (I clear under `probe`); every hop in `ports` carries its ingress
/// and egress system ports. `initiator` and `terminator` are hosts whose
/// counters are read at exit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IfaChecks {
    pub paths: Vec<Vec<String>>,
    pub hop_limit: u8,
    #[serde(default)]
    pub ports: std::collections::BTreeMap<String, [u16; 2]>,
    pub initiator: String,
    pub terminator: String,
    #[serde(default)]
    pub probe: bool,
}

/// What an IOAM lab checks at exit: `sink` (the host of the
/// decapsulating node) took the trace out of packets and found each one
/// numbered (`no_sequence` 0); `kernel_node` (a Linux router's
/// `net.ipv6.ioam6_id`) filled its slot of the traces the collector read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoamChecks {
    pub sink: String,
    pub kernel_node: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleOut {
    pub aggregator: String,
    /// The receiving collectors' process names: each must take some of
    /// the reports, all of them together.
    pub receivers: Vec<String>,
}

/// The hop latency check's exceptions: node ids whose reports carry none
/// (an INT-MD sink's own hop: its ports and time only).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopLatency {
    #[serde(default)]
    pub but: Vec<String>,
}

/// Where a scenario's loss and delay come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImpairmentChoice {
    /// netem when the kernel has it, the impair node otherwise.
    #[default]
    Auto,
    Netem,
    Node,
}

fn default_bursts() -> u32 {
    10
}
fn default_udp_packets() -> u64 {
    20_000
}
fn default_udp_rate() -> f64 {
    4_000.0
}

/// A node's id as the collector writes it: a node id as a dotted quad
/// (10.10.255.5), or a number (an IFA Device ID: 0xa05 or 2565).
pub fn node_id(text: &str) -> Result<u64, Error> {
    let number = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => {
            text.parse::<std::net::Ipv4Addr>().map(|ip| u64::from(u32::from(ip))).ok().or(text.parse().ok())
        }
    };
    number.ok_or_else(|| Setup::NodeId(text.into()).into())
}

/// A node id as a lab names it: a dotted quad, or an IFA Device ID (20
/// bits) in hex.
pub fn node_name(id: u64) -> String {
    match u32::try_from(id) {
        Ok(id) if id >= 1 << 20 => std::net::Ipv4Addr::from(id).to_string(),
        _ => format!("{id:#x}"),
    }
}

/// `host/interface` as its two parts.
pub fn split(endpoint: &str) -> Result<(&str, &str), Error> {
    endpoint.split_once('/').ok_or_else(|| Setup::Endpoint(endpoint.to_string()).into())
}

/// `endpoint`'s IPv4 address.
pub fn addr_of(endpoint: &str, topology: &Topology) -> Result<String, Error> {
    address(endpoint, topology, |l| (&l.a_addr, &l.b_addr))
        .ok_or_else(|| no_address(endpoint, "IPv4", topology))
}

/// `endpoint`'s IPv6 address.
pub fn addr6_of(endpoint: &str, topology: &Topology) -> Result<String, Error> {
    address(endpoint, topology, |l| (&l.a_addr6, &l.b_addr6))
        .ok_or_else(|| no_address(endpoint, "IPv6", topology))
}

fn no_address(endpoint: &str, version: &'static str, topology: &Topology) -> Error {
    Setup::NoAddress { endpoint: endpoint.to_string(), version, lab: topology.name.clone() }.into()
}

/// The address (without prefix length) `field` gives `endpoint`'s end of
/// its link.
fn address(
    endpoint: &str,
    topology: &Topology,
    field: impl Fn(&Link) -> (&Option<String>, &Option<String>),
) -> Option<String> {
    topology
        .links
        .iter()
        .find_map(|l| {
            let (a, b) = field(l);
            if l.a == endpoint {
                a.clone()
            } else if l.b == endpoint {
                b.clone()
            } else {
                None
            }
        })
        .and_then(|a| a.split('/').next().map(str::to_string))
}
