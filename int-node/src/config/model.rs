//! The validated configuration: every value checked, every name resolved,
//! each pipeline's stage with exactly the settings its role needs.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use int_core::int05::source::TailStyle;
use int_core::int05::{Domain, Instructions, ShimType};
use int_core::latency::LatencyConfig;
use int_core::report::ReportProfile;
use strum::{EnumString, VariantNames};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub node_id: u32,
    /// What the operator calls this node: its metrics' and logs' name.
    pub node_name: Option<String>,
    /// The config's own EAL arguments (ports are added by [`Config::eal_args`]).
    pub eal: Vec<String>,
    pub mbufs: u32,
    pub mempool_cache: u32,
    pub ports: Vec<PortConfig>,
    pub pipelines: Vec<PipelineConfig>,
    pub export: Option<ExportConfig>,
    pub stats_interval_ms: u64,
    /// Where the Prometheus `/metrics` endpoint listens, if anywhere.
    pub metrics: Option<std::net::SocketAddr>,
    /// Packet captures, at most one per port.
    pub captures: Vec<CaptureConfig>,
    pub idle_sleep_us: u64,
}

impl Config {
    /// EAL's arguments: `base` (the config's `eal` list, or the command
    /// line's), then one `--vdev` or `-a` per port.
    pub fn eal_args(&self, base: &[String]) -> Vec<String> {
        let mut args = base.to_vec();
        for port in &self.ports {
            args.extend(port.device.eal_args());
        }
        args
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PortConfig {
    pub name: String,
    pub device: Device,
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    pub mtu: u16,
    pub promiscuous: bool,
    /// The port number written into INT hop metadata.
    pub int_port: u16,
}

/// A device as EAL knows it, its driver arguments kept apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub kind: DeviceKind,
    /// The vdev's name (`net_pcap0`) or the PCI address (`0000:03:00.0`).
    pub name: String,
    /// Driver arguments, `key=value` pairs (`rx_pcap=in.pcap`, ...).
    pub args: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Vdev,
    Pci,
}

impl Device {
    /// The device's EAL option and its value (`--vdev net_pcap0,rx_pcap=a`).
    pub fn eal_args(&self) -> [String; 2] {
        let option = match self.kind {
            DeviceKind::Vdev => "--vdev",
            DeviceKind::Pci => "-a",
        };
        let mut value = self.name.clone();
        for (key, arg) in &self.args {
            value.push_str(&format!(",{key}={arg}"));
        }
        [option.to_string(), value]
    }

    /// The values of driver argument `key`.
    pub fn arg<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.args.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A pipeline's end: a port (index into [`Config::ports`]) and a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub port: usize,
    pub queue: u16,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    pub name: String,
    pub lcore: u32,
    pub rx: Endpoint,
    pub tx: Endpoint,
    pub domain: IntDomain,
    pub clock: ClockSource,
    pub stage: StageConfig,
}

/// The INT domain a pipeline belongs to, by version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntDomain {
    /// INT 0.5 and Host-INT's dialect.
    V05(Domain),
    V21(int_core::int21::Domain),
    /// IOAM's Pre-allocated Trace over IPv6 (RFC 9197, RFC 9486).
    Ioam(int_core::ioam::Domain),
    /// IFA 2.0, the Inband Flow Analyzer (draft-kumar-ippm-ifa-08).
    Ifa(IfaDomain),
}

/// `int` of an IFA zone (`version: ifa`): what every node of the zone
/// agrees on (the protocol, the L4 rule), this node's Device ID, and what
/// its initiator writes (Hop Limit, Max Length, live packets or probes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaDomain {
    pub domain: int_core::ifa::Domain,
    pub l4: int_core::ifa::L4Rule,
    /// `None`: the node id, which then fits in 20 bits (validate checks).
    pub device_id: Option<u32>,
    pub hop_limit: u8,
    /// Max Length, in 4-byte words of stack.
    pub max_length: u8,
    /// Probe mode: one copy in this many packets of each watched flow,
    /// I clear; `None`: inband, on the live packets.
    pub probe_one_in: Option<u32>,
    /// The probe copies' own pool.
    pub probe_mbufs: u32,
    /// What the terminator reports in (`int.report`).
    pub report: IfaReport,
}

/// `int.report` of an IFA zone: the form of its terminator's reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfaReport {
    /// Telemetry Report 2.0, the hops as an INT 2.1 stack.
    Tr20,
    /// IPFIX with Broadcom's terminator template (`int.ipfix`).
    Ipfix(IfaIpfix),
}

/// `int.ipfix` of an IFA zone (docs/ifa.md, "IPFIX from a terminator").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaIpfix {
    pub template_id: u16,
    pub elements: int_core::report::ifa_ipfix::Elements,
    /// The packet element is cut to this many bytes.
    pub packet_max: usize,
    pub template_every_ns: u64,
}

/// `int.report`'s names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum IfaReportName {
    Tr20,
    Ipfix,
}

impl IfaDomain {
    /// This node's Device ID: the one set, else the node id.
    pub fn device_id(&self, node_id: u32) -> u32 {
        self.device_id.unwrap_or(node_id) & int_core::ifa::hop::MAX_DEVICE_ID
    }
}

/// `int.l4` of an IFA zone: whether the L4 length and checksum cover IFA's
/// metadata ([`int_core::ifa::L4Rule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum IfaL4 {
    Keep,
    Cover,
}

/// `int.mode` of an IFA zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum IfaMode {
    /// The live packets of watched flows carry IFA (I set).
    Inband,
    /// A copy of one packet in `probe.one_in` carries it (I clear); the
    /// terminator drops the copies.
    Probe,
}

/// `int.version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
pub enum IntVersion {
    #[strum(serialize = "0.5")]
    V05,
    #[strum(serialize = "2.1")]
    V21,
    /// Not INT: IOAM's trace, beside INT in the same node.
    #[strum(serialize = "ioam")]
    Ioam,
    /// Not INT: IFA 2.0, beside INT in the same node.
    #[strum(serialize = "ifa")]
    Ifa,
}

/// `int.timestamps` in an IOAM domain: a timestamp's fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum IoamTimestamps {
    /// Microseconds, as Linux writes them.
    Posix,
    /// Nanoseconds.
    Ptp,
}

/// `source.mode` in an INT 2.1 domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum Mode {
    /// INT-MD: every hop pushes its metadata into the packet.
    Md,
    /// INT-MX: every node reports; nothing is pushed.
    Mx,
}

/// `source.tunnels` in an INT 2.1 domain: where a VXLAN, VXLAN-GPE or
/// Geneve packet carries the INT a source adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum TunnelPlacement {
    /// In the tunnel header (INT 2.1 sections 5.7.3 and 5.7.4).
    Inside,
    /// After the outer UDP header, as for any UDP packet.
    Outer,
}

/// A pipeline's stage and the settings of its role.
#[derive(Debug, Clone, PartialEq)]
pub enum StageConfig {
    Forward,
    /// A source of an INT 0.5 domain.
    Source05(Source05Settings),
    /// A source of an INT 2.1 domain.
    Source21(Source21Settings),
    Transit,
    Sink(SinkSettings),
    /// Lab equipment, in builds with the `lab` feature.
    #[cfg(feature = "lab")]
    Impair(ImpairSettings),
    /// The benchmark's yardstick for a role: int-core's reference stages.
    Reference(ReferenceConfig),
    /// A traffic generator: writes packets over what its RX port hands
    /// out (a `net_null` port's blank mbufs).
    Generate(GenerateSettings),
    /// INT-XD: reports of this node's metadata on watched flows' packets,
    /// which pass untouched.
    Postcard(PostcardSettings),
    /// An IOAM domain's source (its encapsulating node): every IPv6
    /// packet traced.
    IoamSource(IoamSourceSettings),
    /// An IFA zone's initiator: watched flows' packets (or copies of them).
    IfaSource(IfaSourceSettings),
}

impl StageConfig {
    /// Flows its flow table holds, for stages that keep one.
    pub fn flow_capacity(&self) -> Option<u32> {
        match self {
            StageConfig::Source05(s) => Some(s.flow_capacity),
            StageConfig::Source21(s) => Some(s.flow_capacity),
            StageConfig::Sink(s) => Some(s.flow_capacity),
            StageConfig::Postcard(s) => Some(s.flow_capacity),
            StageConfig::IoamSource(s) => Some(s.flow_capacity),
            StageConfig::IfaSource(s) => Some(s.flow_capacity),
            _ => None,
        }
    }
}

/// `pipelines[].generate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerateSettings {
    pub flows: u32,
    pub frame_size: usize,
    pub instrument: GenerateInstrument,
    /// Flows replaced by new ones after each round over them.
    pub churn: u32,
}

/// `generate.instrument`: what the generated packets carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum GenerateInstrument {
    /// Plain UDP.
    None,
    /// Host-INT's INT 0.5 block, numbered per flow, stamped now, as a
    /// source at this node would write it.
    Hostint,
}

/// A reference stage and the settings of the role it stands beside.
#[derive(Debug, Clone, PartialEq)]
pub enum ReferenceConfig {
    Source05(Source05Settings),
    Transit,
    Sink(SinkSettings),
    /// An INT 2.1 domain's source (its sink is `Sink`, with the same
    /// settings as INT 0.5's).
    Source21(Source21Settings),
}

impl StageConfig {
    pub fn role(&self) -> RoleName {
        match self {
            StageConfig::Forward => RoleName::Forward,
            StageConfig::Source05(_)
            | StageConfig::Source21(_)
            | StageConfig::IoamSource(_)
            | StageConfig::IfaSource(_) => RoleName::Source,
            StageConfig::Transit => RoleName::Transit,
            StageConfig::Sink(_) => RoleName::Sink,
            #[cfg(feature = "lab")]
            StageConfig::Impair(_) => RoleName::Impair,
            StageConfig::Reference(ReferenceConfig::Source05(_) | ReferenceConfig::Source21(_)) => {
                RoleName::ReferenceSource
            }
            StageConfig::Reference(ReferenceConfig::Transit) => RoleName::ReferenceTransit,
            StageConfig::Reference(ReferenceConfig::Sink(_)) => RoleName::ReferenceSink,
            StageConfig::Generate(_) => RoleName::Generate,
            StageConfig::Postcard(_) => RoleName::Postcard,
        }
    }
}

/// `pipelines[].role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum RoleName {
    Source,
    Transit,
    Sink,
    Forward,
    /// Lab equipment: drops and delays packets.
    Impair,
    /// The benchmark's yardsticks (int-core's `reference` stages): the least
    /// work a role can do on the benchmark's frames, in an INT 0.5 domain
    /// of Host-INT's dialect. Not for traffic: any other frame passes
    /// untouched.
    #[strum(serialize = "reference-source")]
    ReferenceSource,
    #[strum(serialize = "reference-transit")]
    ReferenceTransit,
    #[strum(serialize = "reference-sink")]
    ReferenceSink,
    /// A traffic generator for benchmarks and labs: flows in turn, each
    /// numbered as on a live link, over the blank mbufs of a `net_null` RX
    /// port.
    Generate,
    /// INT-XD: exports this node's metadata on watched flows' packets,
    /// forwarding them untouched.
    Postcard,
}

impl RoleName {
    /// The role whose settings section this role reads.
    pub fn settings_role(self) -> RoleName {
        match self {
            RoleName::ReferenceSource => RoleName::Source,
            RoleName::ReferenceTransit => RoleName::Transit,
            RoleName::ReferenceSink => RoleName::Sink,
            role => role,
        }
    }
}

/// `pipelines[].clock`: what stamps a packet's arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "kebab-case")]
pub enum ClockSource {
    /// The host's CLOCK_REALTIME, read once per burst ([`crate::clock`]):
    /// one clock for every process on the host.
    Host,
    /// The driver's RX timestamp of each packet.
    RxTimestamp,
}

/// `pipelines[].int.encapsulation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
pub enum EncapsulationName {
    /// INT after the L4 header, announced by DSCP bits.
    #[strum(serialize = "int05-over-tcp-udp")]
    OverTcpUdp,
    /// An extra UDP header after IPv4, then INT.
    #[strum(serialize = "int05-extension-udp")]
    ExtensionUdp,
}

/// `source.flavour`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum Flavour {
    /// Host-INT's shim Type 3 with sequence numbers.
    Hostint,
    /// INT 0.5's hop-by-hop shim Type 1.
    Int05,
}

impl Flavour {
    pub fn shim_type(self) -> ShimType {
        match self {
            Flavour::Hostint => ShimType::HostIntSequence,
            Flavour::Int05 => ShimType::HopByHop,
        }
    }
}

/// `sink.malformed`: what happens to a packet whose INT block lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum MalformedPolicy {
    /// Forwarded untouched.
    Forward,
    Drop,
}

/// `source.marked`: what a source does with a packet that arrives carrying
/// the INT mark (the INT domain's edge: what leaves a source marked must
/// carry this source's INT block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
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

/// `sink.latency.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum LatencyMode {
    /// Host-INT's: a report when the latency moves to another bucket.
    Buckets,
    Absolute,
    Relative,
}

/// `capture[].direction`: what a capture takes of its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum CaptureDirection {
    /// What the port received.
    Rx,
    /// What the node handed the port to send.
    Tx,
    Both,
}

impl CaptureDirection {
    pub fn rx(self) -> bool {
        matches!(self, CaptureDirection::Rx | CaptureDirection::Both)
    }

    pub fn tx(self) -> bool {
        matches!(self, CaptureDirection::Tx | CaptureDirection::Both)
    }
}

/// A port's packets, written to a pcapng file as they pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureConfig {
    /// Index into [`Config::ports`].
    pub port: usize,
    pub direction: CaptureDirection,
    pub file: std::path::PathBuf,
    pub snaplen: u32,
    pub buffer_bytes: usize,
}

/// `watchlist[].protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum Protocol {
    Udp,
    Tcp,
    Any,
}

impl Protocol {
    /// The IPv4 protocol number, `None` for any of TCP and UDP.
    pub fn number(self) -> Option<u8> {
        match self {
            Protocol::Udp => Some(17),
            Protocol::Tcp => Some(6),
            Protocol::Any => None,
        }
    }
}

/// `export.profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum ProfileName {
    /// Host-INT's reports: seconds, a sink id word.
    Hostint,
    /// Telemetry Report 0.5: nanoseconds.
    Tr05,
}

impl ProfileName {
    pub fn profile(self) -> ReportProfile {
        match self {
            ProfileName::Hostint => ReportProfile::HOST_INT,
            ProfileName::Tr05 => ReportProfile::TR05,
        }
    }
}

#[cfg(feature = "lab")]
#[derive(Debug, Clone, PartialEq)]
pub struct ImpairSettings {
    pub loss_ppm: u32,
    pub delay_us: u32,
    pub control_file: Option<String>,
    pub max_held: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Source05Settings {
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

/// A source of an INT 2.1 domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Source21Settings {
    pub mode: Mode,
    pub instructions: int_core::int21::Instructions,
    /// Remaining Hop Count before the source's own push.
    pub max_hops: u8,
    pub own_hop: bool,
    pub watchlist: Vec<Rule>,
    pub marked: MarkedPolicy,
    /// Flows numbered at once (where the domain numbers packets).
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
    /// D: every sink discards the packet once it has reported it.
    pub discard: bool,
    pub tunnels: TunnelPlacement,
    /// Clones (INT 2.1, "INT Applied to Synthetic Traffic"): one packet in
    /// this many of each watched flow is copied, the copy instrumented with
    /// D set and sent beside the original, which leaves untouched.
    pub clone_every: Option<u32>,
    /// The mbufs of the copies' own pool: a copy never takes an mbuf from
    /// the pool the ports receive into.
    pub clone_mbufs: u32,
}

/// The copies' pool when `clone.mbufs` is not set: enough for a TX ring of
/// 1024 full of copies.
pub const DEFAULT_CLONE_MBUFS: u32 = 2047;

/// An IOAM domain's encapsulating node: its flow table numbers each
/// flow's packets, where the domain numbers them (`int.sequence`); what
/// arrives with a trace or number of the namespace gets `marked`.
#[derive(Debug, Clone, PartialEq)]
pub struct IoamSourceSettings {
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
    pub marked: MarkedPolicy,
}

/// An IFA zone's initiator: the flows it watches (all, when none is
/// listed), the flow table that counts each flow's packets for probe
/// mode, and what a packet that arrives with IFA of the zone gets.
#[derive(Debug, Clone, PartialEq)]
pub struct IfaSourceSettings {
    pub watchlist: Vec<Rule>,
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
    pub marked: MarkedPolicy,
}

/// An INT-XD node (INT 2.1 section 5.9, "INT-XD"): for packets of watched
/// flows, reports of the metadata the instructions ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct PostcardSettings {
    pub watchlist: Vec<Rule>,
    pub instructions: int_core::int21::Instructions,
    pub report: PostcardReport,
    /// `report: every`: a postcard on a flow's 1st, (1+N)th, ... packet.
    pub every: u32,
    /// `report: change`: the classes of this node's hop latency and queue.
    pub hops: int_core::hop_rule::HopRule,
    pub flow_capacity: u32,
    pub idle_timeout_ms: u64,
}

/// `postcard.report`: which packets of a watched flow get a postcard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum PostcardReport {
    /// One in `every` packets of each flow (sampling; 1: every packet).
    Every,
    /// A flow's first packet, then each whose hop latency or queue class
    /// differs from the last reported one.
    Change,
}

/// An address prefix of a watchlist rule: of one IP version, or any
/// address of either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    Any,
    V4 { addr: u32, len: u8 },
    V6 { addr: u128, len: u8 },
}

impl Prefix {
    pub const ANY: Prefix = Prefix::Any;

    /// An IPv4 prefix matches IPv4 addresses only, an IPv6 one IPv6 ones.
    #[inline]
    pub fn contains(&self, addr: IpAddr) -> bool {
        match (*self, addr) {
            (Prefix::Any, _) => true,
            (Prefix::V4 { addr: prefix, len }, IpAddr::V4(addr)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
                u32::from(addr) & mask == prefix & mask
            }
            (Prefix::V6 { addr: prefix, len }, IpAddr::V6(addr)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
                u128::from(addr) & mask == prefix & mask
            }
            _ => false,
        }
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

/// A sink's settings that a reload changes (SIGHUP): the running sink
/// swaps them whole, between bursts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReportSettings {
    pub latency: LatencyConfig,
    /// A sink time up to this far behind a source's timestamp is clock skew,
    /// not a latency of almost 2^32 ns.
    pub max_skew_ns: u32,
    /// Reports per second (`export.rate_limit`, the same for every sink);
    /// 0 = no limit.
    pub rate_limit: u32,
    /// INT 2.1: a flow whose path changes is reported (the path rule).
    pub path_changes: bool,
    /// INT 2.1: the hop rule's classes and queue alert.
    pub hops: int_core::hop_rule::HopRule,
    /// Queue alert reports per second per pipeline at most; 0 = no limit.
    pub queue_quota: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SinkSettings {
    pub reports: ReportSettings,
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
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExportConfig {
    pub collector: SocketAddr,
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

#[derive(Debug, Clone, PartialEq)]
pub enum ExportPath {
    Socket,
    Port(PortExport),
}

/// Reports sent as Ethernet frames on a DPDK port's TX queue.
#[derive(Debug, Clone, PartialEq)]
pub struct PortExport {
    /// Index into [`Config::ports`].
    pub port: usize,
    pub queue: u16,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: Ipv4Addr,
    pub src_port: u16,
}
