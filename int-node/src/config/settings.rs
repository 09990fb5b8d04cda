//! The settings of each role (`source`, `sink`, `impair`) and of `export`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use int_core::hop_rule::{Bounds, HopRule, Sample, MAX_BOUNDS};
use int_core::int05::source::TailStyle;
use int_core::int05::{instruction, Instructions, ShimType};
use int_core::int21::Instructions as Int21;
use int_core::latency::{ChangeRule, LatencyConfig};
use int_core::report::DEFAULT_COLLECTOR_PORT;

use super::choice::chosen;
use super::model::{
    ExportConfig, ExportPath, Flavour, GenerateInstrument, GenerateSettings, IfaSourceSettings,
    IoamSourceSettings, LatencyMode, MalformedPolicy, MarkedPolicy, Mode, PortConfig, PortExport,
    PostcardReport, PostcardSettings, Prefix, ProfileName, Protocol, ReportSettings, Rule, SinkSettings,
    Source05Settings, Source21Settings, StageConfig, TunnelPlacement, DEFAULT_CLONE_MBUFS,
};
use super::problems::Problems;
use super::queues::QueueUse;
use super::raw::{
    RawExport, RawExportPath, RawGenerate, RawHops, RawImpair, RawPostcard, RawRule, RawSink, RawSource,
};

pub fn source_settings(raw: &RawSource, path: &str, problems: &mut Problems) -> Source05Settings {
    let flavour = chosen(&raw.flavour, Flavour::Hostint, &format!("{path}.flavour"), problems);
    let shim_type = flavour.shim_type();
    let own_hop = raw.own_hop.unwrap_or(true);
    let max_hop_count = raw.max_hop_count.unwrap_or(2);
    if own_hop && max_hop_count == 0 {
        problems.add(
            format!("{path}.max_hop_count"),
            "0 leaves no room for the source's own hop",
            "use 1 or more, or own_hop: false",
        );
    }
    let watchlist = watchlist(&raw.watchlist, path, problems);
    check_capacity(raw.flows.capacity, path, problems);
    problems.other_version(
        path,
        &[
            ("mode", raw.mode.is_some()),
            ("discard", raw.discard.is_some()),
            ("tunnels", raw.tunnels.is_some()),
            ("clone", raw.clone.is_some()),
        ],
        "INT 2.1 sources",
        "remove it, or set int.version: 2.1 for this pipeline",
    );
    // INT 0.5's informative tail with the int05 flavour, Host-INT's with its own.
    let default_tail =
        if shim_type == ShimType::HopByHop { TailStyle::Informative } else { TailStyle::HostInt };
    Source05Settings {
        shim_type,
        instructions: instructions(raw, path, problems),
        max_hop_count,
        own_hop,
        watchlist,
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        marked: chosen(&raw.marked, MarkedPolicy::Strip, &format!("{path}.marked"), problems),
        tail: chosen(&raw.tail, default_tail, &format!("{path}.tail"), problems),
    }
}

/// A source of an INT 2.1 domain: the mode, the INT 2.1 instruction names,
/// Remaining Hop Count (`max_hop_count`, default 8 as in the spec's
/// examples); the INT 0.5 keys `flavour` and `tail` do not apply.
/// The source keys of INT's versions alone, each with whether `raw` gives
/// it: IOAM's and IFA's sources refuse them.
fn int_source_keys(raw: &RawSource) -> [(&'static str, bool); 9] {
    [
        ("flavour", raw.flavour.is_some()),
        ("mode", raw.mode.is_some()),
        ("instructions", raw.instructions.is_some()),
        ("max_hop_count", raw.max_hop_count.is_some()),
        ("own_hop", raw.own_hop.is_some()),
        ("tail", raw.tail.is_some()),
        ("discard", raw.discard.is_some()),
        ("tunnels", raw.tunnels.is_some()),
        ("clone", raw.clone.is_some()),
    ]
}

/// An IOAM domain's encapsulating node: of the source section, only the
/// flow table that numbers packets and the edge's `marked` policy.
pub fn ioam_source_settings(raw: &RawSource, path: &str, problems: &mut Problems) -> IoamSourceSettings {
    let keys = int_source_keys(raw);
    let watchlist = [("watchlist", !raw.watchlist.is_empty())];
    problems.other_version(
        path,
        &[&keys[..], &watchlist].concat(),
        "INT sources",
        "an IOAM domain's encapsulating node traces every IPv6 packet (the trace is set in int); its source section has only flows and marked",
    );
    check_capacity(raw.flows.capacity, path, problems);
    IoamSourceSettings {
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        marked: chosen(&raw.marked, MarkedPolicy::Strip, &format!("{path}.marked"), problems),
    }
}

/// An IFA zone's initiator: of the source section, the watchlist, the
/// flow table (probe mode counts each flow's packets in it) and the edge's
/// `marked` policy; what it writes is set in `int`.
pub fn ifa_source_settings(raw: &RawSource, path: &str, problems: &mut Problems) -> IfaSourceSettings {
    problems.other_version(
        path,
        &int_source_keys(raw),
        "INT sources",
        "an IFA initiator is set in int (hop_limit, max_length, mode, probe); its source section has watchlist, flows and marked",
    );
    check_capacity(raw.flows.capacity, path, problems);
    IfaSourceSettings {
        watchlist: watchlist(&raw.watchlist, path, problems),
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        marked: chosen(&raw.marked, MarkedPolicy::Strip, &format!("{path}.marked"), problems),
    }
}

pub fn source21_settings(raw: &RawSource, path: &str, problems: &mut Problems) -> Source21Settings {
    problems.other_version(
        path,
        &[("flavour", raw.flavour.is_some()), ("tail", raw.tail.is_some())],
        "INT 0.5 sources",
        "remove it; an INT 2.1 source is set by mode, instructions and max_hop_count",
    );
    let instructions = match &raw.instructions {
        None => Int21::NODE_ID | Int21::L1_PORT_IDS | Int21::INGRESS_TIMESTAMP | Int21::EGRESS_TIMESTAMP,
        Some(names) => named_bits(names, &int_core::int21::instruction::NAMES, path, problems),
    };
    let own_hop = raw.own_hop.unwrap_or(true);
    let max_hops = raw.max_hop_count.unwrap_or(8);
    let mode = chosen(&raw.mode, Mode::Md, &format!("{path}.mode"), problems);
    if own_hop && mode == Mode::Md && max_hops == 0 {
        problems.add(
            format!("{path}.max_hop_count"),
            "0 leaves no room for the source's own hop",
            "use 1 or more, or own_hop: false",
        );
    }
    if instructions.words() > usize::from(int_core::int21::md_header::MAX_HOP_ML) {
        problems.add(
            format!("{path}.instructions"),
            "more than 31 words per hop",
            "Hop ML is 5 bits: ask for fewer",
        );
    }
    check_capacity(raw.flows.capacity, path, problems);
    if raw.clone.as_ref().is_some_and(|clone| clone.every == 0) {
        problems.add(format!("{path}.clone.every"), "0 packets", "1 to copy every packet, N for one in N");
    }
    let clone_mbufs = raw.clone.as_ref().and_then(|clone| clone.mbufs).unwrap_or(DEFAULT_CLONE_MBUFS);
    if !(1..=1 << 20).contains(&clone_mbufs) {
        problems.add(
            format!("{path}.clone.mbufs"),
            format!("{clone_mbufs} mbufs"),
            "1 to 1048576: the copies in flight at once (a TX ring's worth: the default 2047)",
        );
    }
    Source21Settings {
        mode,
        instructions,
        max_hops,
        own_hop,
        watchlist: watchlist(&raw.watchlist, path, problems),
        marked: chosen(&raw.marked, MarkedPolicy::Strip, &format!("{path}.marked"), problems),
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        discard: raw.discard.unwrap_or(false),
        tunnels: chosen(&raw.tunnels, TunnelPlacement::Inside, &format!("{path}.tunnels"), problems),
        clone_every: raw.clone.as_ref().map(|clone| clone.every),
        clone_mbufs,
    }
}

/// An INT-XD node: its watchlist, the INT 2.1 instructions it reports
/// (the source's default), and which packets get a postcard.
pub fn postcard_settings(raw: &RawPostcard, path: &str, problems: &mut Problems) -> PostcardSettings {
    let instructions = match &raw.instructions {
        None => Int21::NODE_ID | Int21::L1_PORT_IDS | Int21::INGRESS_TIMESTAMP | Int21::EGRESS_TIMESTAMP,
        Some(names) => named_bits(names, &int_core::int21::instruction::NAMES, path, problems),
    };
    let report = chosen(&raw.report, PostcardReport::Change, &format!("{path}.report"), problems);
    let every = raw.every.unwrap_or(1);
    if every == 0 {
        problems.add(format!("{path}.every"), "0 packets", "1 for every packet, N for one in N");
    }
    if raw.every.is_some() && report != PostcardReport::Every {
        problems.add(
            format!("{path}.every"),
            "every without report: every",
            "set report: every, or remove it",
        );
    }
    if raw.hops.queue_alert.is_some() {
        problems.add(
            format!("{path}.hops.queue_alert"),
            "a queue alert on a postcard node",
            "remove it: a postcard reports classes (latency_ns, queue) only",
        );
    }
    if raw.hops.sample != 1 {
        problems.add(
            format!("{path}.hops.sample"),
            format!("{} on a postcard node", raw.hops.sample),
            "remove it: a sink's setting; a postcard node samples with report: every",
        );
    }
    check_capacity(raw.flows.capacity, path, problems);
    PostcardSettings {
        watchlist: watchlist(&raw.watchlist, path, problems),
        instructions,
        report,
        every: every.max(1),
        hops: hop_rule(&raw.hops, path, problems),
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
    }
}

/// The bits of `names` in `table`; a problem, with the nearest name, for
/// each that is not there.
fn named_bits<B: Copy + core::ops::BitOrAssign + Default>(
    names: &[String],
    table: &[(&'static str, B)],
    path: &str,
    problems: &mut Problems,
) -> B {
    let valid: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    let mut bits = B::default();
    for (i, name) in names.iter().enumerate() {
        match table.iter().find(|(n, _)| n == name) {
            Some((_, bit)) => bits |= *bit,
            None => {
                let list = format!("one of: {}", valid.join(", "));
                let hint = match int_core::names::closest(name, &valid) {
                    Some(near) => format!("did you mean {near}? {list}"),
                    None => list,
                };
                problems.add(
                    format!("{path}.instructions[{i}]"),
                    format!("unknown instruction {name:?}"),
                    hint,
                );
            }
        }
    }
    bits
}

fn watchlist(rules: &[RawRule], path: &str, problems: &mut Problems) -> Vec<Rule> {
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| watch_rule(rule, &format!("{path}.watchlist[{i}]"), problems))
        .collect()
}

/// `source.instructions`: Host-INT's set when left out.
fn instructions(raw: &RawSource, path: &str, problems: &mut Problems) -> Instructions {
    let Some(names) = &raw.instructions else { return Instructions::HOST_INT };
    named_bits(names, &instruction::NAMES, path, problems)
}

fn check_capacity(capacity: u32, path: &str, problems: &mut Problems) {
    if capacity == 0 {
        problems.add(
            format!("{path}.flows.capacity"),
            "0 flows",
            "the per-lcore flow table size, e.g. 65536",
        );
    }
}

/// One watchlist rule; `rule_path` names it in problems.
fn watch_rule(rule: &RawRule, rule_path: &str, problems: &mut Problems) -> Rule {
    let mut prefix = |value: &Option<String>, key: &str| match value {
        None => Prefix::ANY,
        Some(text) => parse_prefix(text).unwrap_or_else(|| {
            problems.add(
                format!("{rule_path}.{key}"),
                format!("{text:?} is not an IPv4 or IPv6 prefix"),
                "e.g. 10.0.0.0/8, 192.168.1.7 or 2001:db8::/32",
            );
            Prefix::ANY
        }),
    };
    let src = prefix(&rule.src, "src");
    let dst = prefix(&rule.dst, "dst");
    let protocol = chosen(&rule.protocol, Protocol::Any, &format!("{rule_path}.protocol"), problems).number();
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

/// `ADDR/LEN` or `ADDR` (the whole address), IPv4 or IPv6.
pub fn parse_prefix(text: &str) -> Option<Prefix> {
    let (addr, len) = match text.split_once('/') {
        Some((addr, len)) => (addr, Some(len.parse::<u8>().ok()?)),
        None => (text, None),
    };
    match addr.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(addr) => {
            let len = len.unwrap_or(32);
            (len <= 32).then_some(Prefix::V4 { addr: u32::from(addr), len })
        }
        std::net::IpAddr::V6(addr) => {
            let len = len.unwrap_or(128);
            (len <= 128).then_some(Prefix::V6 { addr: u128::from(addr), len })
        }
    }
}

pub fn parse_ports(text: &str) -> Option<(u16, u16)> {
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

pub fn sink_settings(raw: &RawSink, path: &str, problems: &mut Problems) -> SinkSettings {
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
    check_capacity(raw.flows.capacity, path, problems);
    if raw.loss.max_flow_pps == 0 {
        problems.add(
            format!("{path}.loss.max_flow_pps"),
            "0 packets per second",
            "the fastest one flow can send, e.g. 14880952 (10 Gb/s of 64-byte frames)",
        );
    }
    // Problems in a fixed order: `malformed`'s, then the latency's and hops'.
    let malformed = chosen(&raw.malformed, MalformedPolicy::Forward, &format!("{path}.malformed"), problems);
    SinkSettings {
        reports: ReportSettings {
            latency: LatencyConfig { rule, refresh_ns },
            max_skew_ns: max_skew_ns(raw, path, problems),
            // The export's, once validated.
            rate_limit: 0,
            path_changes: raw.path_changes,
            hops: sink_hop_rule(raw, path, problems),
            queue_quota: raw.hops.queue_quota,
        },
        loss_timeout_ms: raw.loss.timeout_ms,
        sweep_ms: raw.loss.sweep_ms,
        flow_capacity: raw.flows.capacity,
        idle_timeout_ms: raw.flows.idle_timeout_ms,
        malformed,
        max_flow_pps: raw.loss.max_flow_pps,
        max_report_delay_ms: raw.loss.max_report_delay_ms,
    }
}

/// A sink's `sink.hops` with its sample: none where no rule reads a hop
/// (`path_changes: false`, no class, no queue alert), so that the sink
/// does not digest stacks no rule looks at.
fn sink_hop_rule(raw: &RawSink, path: &str, problems: &mut Problems) -> HopRule {
    let rule = hop_rule(&raw.hops, path, problems);
    let every = raw.hops.sample;
    if every == 0 {
        problems.add(
            format!("{path}.hops.sample"),
            "0",
            "one packet in N of each flow feeds the hop rules, e.g. 16; 1 feeds every packet",
        );
    }
    let read = raw.path_changes || rule.has_classes() || rule.queue_alert.is_some();
    let sample = if read { Sample::every(every.max(1)) } else { Sample::NONE };
    HopRule { sample, ..rule }
}

/// `sink.hops`: the classes of a hop's latency and queue occupancy.
fn hop_rule(raw: &RawHops, path: &str, problems: &mut Problems) -> HopRule {
    let mut bounds = |list: &[u32], key: &str, example: &str| {
        Bounds::new(list).unwrap_or_else(|| {
            problems.add(
                format!("{path}.hops.{key}"),
                format!("{list:?}"),
                format!("at most {MAX_BOUNDS} bounds, each above the one before, e.g. {example}"),
            );
            Bounds::default()
        })
    };
    let latency = bounds(&raw.latency_ns, "latency_ns", "[10000, 100000, 1000000]");
    let queue = bounds(&raw.queue, "queue", "[1000, 10000]");
    HopRule { latency, queue, queue_alert: raw.queue_alert, sample: Sample::default() }
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
    let latency = &raw.latency;
    let (rule, key, message, hint) =
        match chosen(&latency.mode, LatencyMode::Buckets, &format!("{path}.latency.mode"), problems) {
            LatencyMode::Buckets => match &latency.buckets_ns {
                None => (Some(default.rule), "", "", ""),
                Some(list) => (
                    ChangeRule::buckets(list),
                    "buckets_ns",
                    "buckets must increase and be at most 16",
                    "e.g. [50000, 100000, 250000, 500000, 1000000]",
                ),
            },
            LatencyMode::Absolute => (
                latency.threshold_ns.map(|ns| ChangeRule::Absolute { ns }),
                "threshold_ns",
                "absolute mode needs threshold_ns",
                "e.g. threshold_ns: 100000",
            ),
            LatencyMode::Relative => (
                latency.threshold_percent.filter(|p| *p > 0).map(|percent| ChangeRule::Relative { percent }),
                "threshold_percent",
                "relative mode needs a positive threshold_percent",
                "e.g. threshold_percent: 20",
            ),
        };
    let rule = rule.unwrap_or_else(|| {
        problems.add(format!("{path}.latency.{key}"), message, hint);
        default.rule
    });
    let rule = latency.hysteresis_packets.map_or(rule, |packets| rule.with_lasting(packets));
    match latency.hysteresis_percent {
        Some(percent) if percent > 50 => {
            problems.add(
                format!("{path}.latency.hysteresis_percent"),
                format!("{percent} % would hold a flow in its bucket past the next edge"),
                "at most 50; the default 6 holds a flow that jitters across an edge, 0 is Host-INT's rule",
            );
            rule
        }
        Some(percent) => rule.with_hysteresis(percent),
        None => rule,
    }
}

/// `generate`: the generator's flows, frame size and INT.
pub fn generate_settings(raw: Option<&RawGenerate>, path: &str, problems: &mut Problems) -> StageConfig {
    let default = RawGenerate::default();
    let raw = raw.unwrap_or(&default);
    if raw.flows == 0 || raw.flows > 1 << 24 {
        problems.add(format!("{path}.flows"), "flows must be 1-16777216", "e.g. flows: 1000");
    }
    if !(60..=1514).contains(&raw.frame_size) {
        problems.add(format!("{path}.frame_size"), "frame_size must be 60-1514 bytes", "e.g. frame_size: 64");
    }
    let instrument =
        chosen(&raw.instrument, GenerateInstrument::None, &format!("{path}.instrument"), problems);
    if raw.churn > raw.flows {
        problems.add(format!("{path}.churn"), "churn must be at most flows", "e.g. flows: 10000, churn: 100");
    }
    StageConfig::Generate(GenerateSettings {
        flows: raw.flows,
        frame_size: raw.frame_size,
        instrument,
        churn: raw.churn,
    })
}

/// (loss ppm, delay us) of a loss of 0-100 % and a delay of 0-10 s, as
/// the config and the control file give them.
#[cfg(feature = "lab")]
pub fn impair_units(loss_percent: f64, delay_ms: f64) -> Option<(u32, u32)> {
    let loss_ok = (0.0..=100.0).contains(&loss_percent);
    let delay_ok = (0.0..=10_000.0).contains(&delay_ms);
    (loss_ok && delay_ok).then_some(((loss_percent * 10_000.0) as u32, (delay_ms * 1_000.0) as u32))
}

/// `impair`: lab equipment, in builds with the `lab` feature only.
#[cfg(feature = "lab")]
pub fn impair_settings(raw: Option<&RawImpair>, path: &str, problems: &mut Problems) -> Option<StageConfig> {
    let default = RawImpair::default();
    let raw = raw.unwrap_or(&default);
    let units = impair_units(raw.loss_percent, raw.delay_ms);
    let (loss_ppm, delay_us) = units.unwrap_or_else(|| {
        problems.add(
            path,
            "loss_percent must be 0-100 and delay_ms 0-10000",
            "e.g. {loss_percent: 1, delay_ms: 20}",
        );
        (0, 0)
    });
    Some(StageConfig::Impair(super::model::ImpairSettings {
        loss_ppm,
        delay_us,
        control_file: raw.control_file.clone(),
        max_held: raw.max_held.unwrap_or(65536),
    }))
}

#[cfg(not(feature = "lab"))]
pub fn impair_settings(_: Option<&RawImpair>, path: &str, problems: &mut Problems) -> Option<StageConfig> {
    let role_path = path.replace(".impair", ".role");
    problems.add(
        role_path,
        "impair is lab equipment, left out of this build",
        "build int-node with --features lab (int-lab's labs do), or use another role",
    );
    None
}

pub fn export_settings(
    raw: &RawExport,
    port_index: &BTreeMap<String, usize>,
    ports: &[PortConfig],
    queues: &QueueUse,
    problems: &mut Problems,
) -> ExportConfig {
    let ring_size = raw.ring_size.unwrap_or(4096);
    if ring_size < 16 {
        problems.add("export.ring_size", format!("{ring_size} reports"), "at least 16; 4096 by default");
    }
    let collector = collector(&raw.collector, problems);
    let path = export_path(&raw.path, port_index, ports, queues, problems);
    if collector.is_ipv6() && matches!(path, ExportPath::Port(_)) {
        problems.add(
            "export.collector",
            format!("{collector} is IPv6, and a DPDK port sends reports over IPv4 only"),
            "an IPv4 collector, or the kernel's socket (leave out export.path)",
        );
    }
    ExportConfig {
        collector,
        profile: chosen(&raw.profile, ProfileName::Hostint, "export.profile", problems).profile(),
        rate_limit: raw.rate_limit.unwrap_or(10_000),
        ring_size,
        pace: raw.pace.unwrap_or(100_000),
        path,
    }
}

/// `export.collector`: an address (IPv4 or IPv6) or a host name, with a
/// port or without (32766). A name is resolved now, so that `check` says
/// one that does not resolve; its first address is used.
fn collector(text: &str, problems: &mut Problems) -> SocketAddr {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return address;
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return SocketAddr::new(ip, DEFAULT_COLLECTOR_PORT);
    }
    let has_port = text.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    let named = if has_port { text.to_string() } else { format!("{text}:{DEFAULT_COLLECTOR_PORT}") };
    let resolved = std::net::ToSocketAddrs::to_socket_addrs(&named).map(|mut all| all.next());
    match resolved {
        Ok(Some(address)) => address,
        failed => {
            let why = failed.map_or_else(|e| e.to_string(), |_| "no address".to_string());
            problems.add(
                "export.collector",
                format!("{text:?}: {why}"),
                "ADDR, ADDR:PORT, [IPv6]:PORT, HOST or HOST:PORT, e.g. 10.0.0.9:32766 or collector.example:32766",
            );
            SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_COLLECTOR_PORT))
        }
    }
}

fn export_path(
    raw: &RawExportPath,
    port_index: &BTreeMap<String, usize>,
    ports: &[PortConfig],
    queues: &QueueUse,
    problems: &mut Problems,
) -> ExportPath {
    let Some(name) = &raw.port else {
        if raw.queue.is_some() || raw.src_mac.is_some() || raw.dst_mac.is_some() || raw.src_ip.is_some() {
            problems.add(
                "export.path",
                "queue/MACs/src_ip given without a port",
                "set export.path.port, or remove them to use a kernel UDP socket",
            );
        }
        return ExportPath::Socket;
    };
    let queue = raw.queue.unwrap_or(0);
    let port = match port_index.get(name).and_then(|&i| Some((i, ports.get(i)?))) {
        Some((i, config)) => {
            if queue >= config.tx_queues {
                problems.add(
                    "export.path.queue",
                    format!("port {name:?} has {} TX queue(s)", config.tx_queues),
                    "raise the port's tx_queues and give the exporter its own queue",
                );
            } else if queues.tx_used(i, queue) {
                problems.add(
                    "export.path.queue",
                    "this TX queue is used by a pipeline",
                    "the exporter runs on the main lcore: give it its own TX queue",
                );
            }
            i
        }
        None => {
            problems.add("export.path.port", format!("no port named {name:?}"), "name one of the ports");
            0
        }
    };
    let src_ip = raw.src_ip.as_deref().and_then(|ip| ip.parse::<Ipv4Addr>().ok()).unwrap_or_else(|| {
        problems.add(
            "export.path.src_ip",
            "missing or not an IPv4 address",
            "the reports' source address, e.g. 10.0.0.2",
        );
        Ipv4Addr::UNSPECIFIED
    });
    ExportPath::Port(PortExport {
        port,
        queue,
        src_mac: mac(&raw.src_mac, "src_mac", problems),
        dst_mac: mac(&raw.dst_mac, "dst_mac", problems),
        src_ip,
        src_port: raw.src_port.unwrap_or(32766),
    })
}

/// A port exporter's MAC address `key`, required.
fn mac(value: &Option<String>, key: &str, problems: &mut Problems) -> [u8; 6] {
    match value.as_deref().map(parse_mac) {
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
    }
}
