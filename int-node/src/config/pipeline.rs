//! `pipelines[]`: each pipeline's ports and queues, its INT domain, its
//! clock, and the stage its role names with that role's settings.

use std::collections::BTreeMap;

use int_core::int05::{Domain, Encapsulation, DEFAULT_EXTENSION_PORT};
use int_core::int21::SourceOnly;
use int_core::marking::{DscpMatch, TcpPlacement};

use super::choice::chosen;
use super::model::{
    ClockSource, EncapsulationName, Endpoint, IntDomain, IntVersion, PipelineConfig, PortConfig,
    ReferenceConfig, RoleName, StageConfig,
};
use super::problems::Problems;
use super::queues::QueueUse;
use super::raw::{RawEndpoint, RawInt, RawPipeline, RawPostcard, RawSink, RawSource};
use super::settings::{
    generate_settings, ifa_source_settings, impair_settings, ioam_source_settings, postcard_settings,
    sink_settings, source21_settings, source_settings,
};
use crate::pipeline::report::NODE_DOMAIN_ID;

/// Pipeline `i`, or `None` when its role or a port is unknown (each
/// problem reported once, none that follows from it).
pub fn pipeline(
    i: usize,
    raw: &RawPipeline,
    ports: &[PortConfig],
    port_index: &BTreeMap<String, usize>,
    queues: &mut QueueUse,
    problems: &mut Problems,
) -> Option<PipelineConfig> {
    let path = format!("pipelines[{i}]");
    let role = raw.role.get(&format!("{path}.role"), problems);
    let rx = endpoint(&raw.rx, Direction::Rx, &path, ports, port_index, problems);
    let tx = endpoint(&raw.tx, Direction::Tx, &path, ports, port_index, problems);
    if let Some(rx) = rx {
        if !queues.claim_rx(rx.port, rx.queue) {
            problems.add(
                format!("{path}.rx"),
                "this RX queue is already polled by another pipeline",
                "each RX queue belongs to one pipeline (no locks on the packet path)",
            );
        }
    }
    if let Some(tx) = tx {
        if queues.claim_tx(tx.port, tx.queue, raw.lcore).is_some_and(|other| other != raw.lcore) {
            problems.add(
                format!("{path}.tx"),
                "this TX queue is used by a pipeline on another lcore",
                "TX queues are not thread-safe: give each lcore its own queue",
            );
        }
    }
    let domain = domain(&raw.int, &path, problems);
    let clock = chosen(&raw.clock, ClockSource::Host, &format!("{path}.clock"), problems);
    let stage = stage(role?, raw, domain, &path, problems)?;
    Some(PipelineConfig {
        name: raw.name.clone().unwrap_or_else(|| format!("{}{i}", stage.role())),
        lcore: raw.lcore,
        rx: rx?,
        tx: tx?,
        domain,
        clock,
        stage,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Rx,
    Tx,
}

fn endpoint(
    raw: &RawEndpoint,
    direction: Direction,
    path: &str,
    ports: &[PortConfig],
    port_index: &BTreeMap<String, usize>,
    problems: &mut Problems,
) -> Option<Endpoint> {
    let which = if direction == Direction::Rx { "rx" } else { "tx" };
    let Some((index, port)) = port_index.get(&raw.port).and_then(|&i| Some((i, ports.get(i)?))) else {
        let names: Vec<&str> = port_index.keys().map(String::as_str).collect();
        let hint = match int_core::names::closest(&raw.port, &names) {
            Some(name) => format!("did you mean {name}? ports are: {}", names.join(", ")),
            None => format!("ports are: {}", names.join(", ")),
        };
        problems.add(format!("{path}.{which}.port"), format!("no port named {:?}", raw.port), hint);
        return None;
    };
    let queues = if direction == Direction::Rx { port.rx_queues } else { port.tx_queues };
    if raw.queue >= queues {
        problems.add(
            format!("{path}.{which}.queue"),
            format!("port {:?} has {queues} {which} queue(s)", raw.port),
            format!("use 0..{} or raise ports[{index}].{which}_queues", queues.saturating_sub(1)),
        );
    }
    Some(Endpoint { port: index, queue: raw.queue })
}

/// `int`: the version, then that version's marking and TCP placement.
fn domain(raw: &RawInt, path: &str, problems: &mut Problems) -> IntDomain {
    let version = chosen(&raw.version, IntVersion::V05, &format!("{path}.int.version"), problems);
    if version != IntVersion::Ioam {
        super::ioam::refuse_in_int(raw, &format!("{path}.int"), problems);
    }
    if version != IntVersion::Ifa {
        super::ifa::refuse_elsewhere(raw, &format!("{path}.int"), problems);
    }
    match version {
        IntVersion::V05 => IntDomain::V05(domain05(raw, path, problems)),
        IntVersion::V21 => IntDomain::V21(domain21(raw, path, problems)),
        IntVersion::Ioam => IntDomain::Ioam(super::ioam::domain(raw, &format!("{path}.int"), problems)),
        IntVersion::Ifa => IntDomain::Ifa(super::ifa::domain(raw, &format!("{path}.int"), problems)),
    }
}

/// The DSCP match an `int.dscp` section gives, or `default`.
fn dscp_match(raw: &RawInt, default: DscpMatch, path: &str, problems: &mut Problems) -> DscpMatch {
    let dscp = raw.dscp.as_ref().map_or(Ok(default), |d| DscpMatch::new(d.value, d.mask));
    dscp.unwrap_or_else(|error| {
        problems.add(format!("{path}.dscp"), error.to_string(), "value and mask in 0..63, mask non-zero");
        default
    })
}

/// An INT 2.1 domain: marked by `int.udp_port` (NPT 1 for UDP, 2 for TCP)
/// or else by `int.dscp` (NPT 0; the spec's examples use 0x17/0x3f).
fn domain21(raw: &RawInt, path: &str, problems: &mut Problems) -> int_core::int21::Domain {
    let path = format!("{path}.int");
    if raw.encapsulation.is_some() {
        problems.add(
            format!("{path}.encapsulation"),
            "encapsulation names INT 0.5 encapsulations",
            "an INT 2.1 domain is marked by int.dscp (INT after TCP/UDP) or int.udp_port (INT behind a UDP port)",
        );
    }
    if raw.dscp.is_some() && raw.udp_port.is_some() {
        problems.add(
            format!("{path}.udp_port"),
            "both dscp and udp_port given",
            "an INT 2.1 domain has one marking",
        );
    }
    let marking = match raw.udp_port {
        Some(port) => int_core::int21::Marking::UdpPort(port),
        None => int_core::int21::Marking::Dscp(dscp_match(raw, INT21_DSCP, &path, problems)),
    };
    let tcp_placement =
        chosen(&raw.tcp_placement, TcpPlacement::BeforeOptions, &format!("{path}.tcp_placement"), problems);
    let source_only = source_only(raw, &path, problems);
    int_core::int21::Domain { marking, tcp_placement, source_only }
}

/// The domain's Domain Specific ID and whether its sources number each
/// flow's packets in source-only metadata under it (on by default: a sink
/// counts losses from them).
fn source_only(raw: &RawInt, path: &str, problems: &mut Problems) -> SourceOnly {
    let domain_id = raw.domain_specific_id.unwrap_or(NODE_DOMAIN_ID);
    if raw.sequence.unwrap_or(true) && domain_id == 0 {
        problems.add(
            format!("{path}.domain_specific_id"),
            "the default Domain Specific ID 0 defines no domain metadata (INT 2.1 section 5.8), so no packet numbers",
            "pick an ID of your domain, 0x0001-0xFFFF, or set int.sequence: false",
        );
    }
    match raw.sequence.unwrap_or(true) {
        true => SourceOnly::sequence(domain_id),
        false => SourceOnly { domain_id, bits: 0, wide: 0 },
    }
}

/// INT 2.1 section 5.8 puts domain metadata before a hop's checksum
/// complement; int-node's source puts its packet number below its whole
/// hop, so the two are not written together.
fn complement_below_numbers(
    settings: &super::model::Source21Settings,
    domain: &int_core::int21::Domain,
    path: &str,
    problems: &mut Problems,
) {
    let complement = settings.instructions.contains(int_core::int21::Instructions::CHECKSUM_COMPLEMENT);
    if complement && settings.mode == super::model::Mode::Md && domain.source_only.bits != 0 {
        problems.add(
            format!("{path}.instructions"),
            "checksum_complement with packet numbers: the number would sit after the source's complement word",
            "drop checksum_complement, or set int.sequence: false",
        );
    }
}

/// The DSCP the INT 2.1 spec's examples mark INT with.
const INT21_DSCP: DscpMatch = DscpMatch { value: 0x17, mask: 0x3f };

/// An INT 0.5 domain: the encapsulation, its DSCP mark or UDP port, the TCP
/// placement.
fn domain05(raw: &RawInt, path: &str, problems: &mut Problems) -> Domain {
    let path = format!("{path}.int");
    let name =
        chosen(&raw.encapsulation, EncapsulationName::OverTcpUdp, &format!("{path}.encapsulation"), problems);
    let (wrong_key, other) = match name {
        EncapsulationName::OverTcpUdp => {
            (raw.udp_port.is_some().then_some("udp_port"), "int05-extension-udp")
        }
        EncapsulationName::ExtensionUdp => (raw.dscp.is_some().then_some("dscp"), "int05-over-tcp-udp"),
    };
    if let Some(key) = wrong_key {
        problems.add(
            format!("{path}.{key}"),
            format!("{key} applies to {other} only"),
            format!("remove it, or set encapsulation: {other}"),
        );
    }
    let encapsulation = match name {
        EncapsulationName::OverTcpUdp => {
            Encapsulation::from(dscp_match(raw, DscpMatch::HOST_INT, &path, problems))
        }
        EncapsulationName::ExtensionUdp => {
            Encapsulation::ExtensionUdp { port: raw.udp_port.unwrap_or(DEFAULT_EXTENSION_PORT) }
        }
    };
    let tcp_placement =
        chosen(&raw.tcp_placement, TcpPlacement::BeforeOptions, &format!("{path}.tcp_placement"), problems);
    problems.other_version(
        &path,
        &[("domain_specific_id", raw.domain_specific_id.is_some()), ("sequence", raw.sequence.is_some())],
        "INT 2.1 domains",
        "an INT 0.5 domain numbers packets with Host-INT's sequence block (source.flavour: hostint)",
    );
    Domain { encapsulation, tcp_placement }
}

/// The stage `role` names, with its settings; a problem for each section
/// that belongs to another role.
fn stage(
    role: RoleName,
    raw: &RawPipeline,
    domain: IntDomain,
    path: &str,
    problems: &mut Problems,
) -> Option<StageConfig> {
    let sections = [
        ("source", raw.source.is_some(), RoleName::Source),
        ("sink", raw.sink.is_some(), RoleName::Sink),
        ("impair", raw.impair.is_some(), RoleName::Impair),
        ("generate", raw.generate.is_some(), RoleName::Generate),
        ("postcard", raw.postcard.is_some(), RoleName::Postcard),
    ];
    for (section, present, owner) in sections {
        if present && role.settings_role() != owner {
            problems.add(
                format!("{path}.{section}"),
                format!("{section} settings on a {role} pipeline"),
                format!("remove the section or set role: {owner}"),
            );
        }
    }
    Some(match role {
        RoleName::Forward => StageConfig::Forward,
        RoleName::Transit => StageConfig::Transit,
        RoleName::Source => {
            let (settings, path) = (source_section(raw), format!("{path}.source"));
            match domain {
                IntDomain::Ioam(_) => {
                    StageConfig::IoamSource(ioam_source_settings(settings, &path, problems))
                }
                IntDomain::Ifa(_) => StageConfig::IfaSource(ifa_source_settings(settings, &path, problems)),
                IntDomain::V05(_) => StageConfig::Source05(source_settings(settings, &path, problems)),
                IntDomain::V21(domain) => {
                    let settings = source21_settings(settings, &path, problems);
                    complement_below_numbers(&settings, &domain, &path, problems);
                    StageConfig::Source21(settings)
                }
            }
        }
        RoleName::Sink => {
            StageConfig::Sink(sink_settings(sink_section(raw), &format!("{path}.sink"), problems))
        }
        RoleName::Impair => impair_settings(raw.impair.as_ref(), &format!("{path}.impair"), problems)?,
        RoleName::Generate => generate_settings(raw.generate.as_ref(), &format!("{path}.generate"), problems),
        RoleName::Postcard => {
            let path = format!("{path}.postcard");
            if !matches!(domain, IntDomain::V21(_)) {
                problems.add(
                    path.clone(),
                    "INT-XD postcards outside an INT 2.1 domain",
                    "set int.version: 2.1 for this pipeline",
                );
            }
            StageConfig::Postcard(postcard_settings(postcard_section(raw), &path, problems))
        }
        RoleName::ReferenceSource | RoleName::ReferenceTransit | RoleName::ReferenceSink => {
            reference(role, raw, domain, path, problems)?
        }
    })
}

/// A reference stage, with its role's settings: a source, transit hop or
/// sink in an INT 0.5 domain, a source or sink in an INT 2.1 one.
fn reference(
    role: RoleName,
    raw: &RawPipeline,
    domain: IntDomain,
    path: &str,
    problems: &mut Problems,
) -> Option<StageConfig> {
    let (source, sink) = (format!("{path}.source"), format!("{path}.sink"));
    Some(StageConfig::Reference(match (role, domain) {
        (_, IntDomain::Ioam(_) | IntDomain::Ifa(_)) => {
            let domain = if matches!(domain, IntDomain::Ifa(_)) { "an IFA zone" } else { "an IOAM domain" };
            problems.add(
                format!("{path}.role"),
                format!("{role}: no reference stage in {domain}"),
                "use source, transit or sink".to_string(),
            );
            return None;
        }
        (RoleName::ReferenceSource, IntDomain::V05(_)) => {
            ReferenceConfig::Source05(source_settings(source_section(raw), &source, problems))
        }
        (RoleName::ReferenceSink, _) => {
            ReferenceConfig::Sink(sink_settings(sink_section(raw), &sink, problems))
        }
        (RoleName::ReferenceSource, IntDomain::V21(_)) => {
            ReferenceConfig::Source21(source21_settings(source_section(raw), &source, problems))
        }
        (_, IntDomain::V05(_)) => ReferenceConfig::Transit,
        (_, IntDomain::V21(_)) => {
            problems.add(
                format!("{path}.role"),
                format!("{role} runs in an INT 0.5 domain only"),
                "remove int.version, or use transit".to_string(),
            );
            return None;
        }
    }))
}

/// The pipeline's `source` section, or its defaults.
fn source_section(raw: &RawPipeline) -> &RawSource {
    static DEFAULT: std::sync::OnceLock<RawSource> = std::sync::OnceLock::new();
    raw.source.as_ref().unwrap_or_else(|| DEFAULT.get_or_init(RawSource::default))
}

/// The pipeline's `postcard` section, or its defaults.
fn postcard_section(raw: &RawPipeline) -> &RawPostcard {
    static DEFAULT: std::sync::OnceLock<RawPostcard> = std::sync::OnceLock::new();
    raw.postcard.as_ref().unwrap_or_else(|| DEFAULT.get_or_init(RawPostcard::default))
}

/// The pipeline's `sink` section, or its defaults.
fn sink_section(raw: &RawPipeline) -> &RawSink {
    static DEFAULT: std::sync::OnceLock<RawSink> = std::sync::OnceLock::new();
    raw.sink.as_ref().unwrap_or_else(|| DEFAULT.get_or_init(RawSink::default))
}
