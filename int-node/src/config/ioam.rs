//! `int` of an IOAM domain (`version: ioam`): the namespace its nodes
//! fill, the fields of the trace type, the slots the encapsulating node
//! allocates, the timestamps' fraction, and whether packets are numbered.

use int_core::ioam::e2e::E2eType;
use int_core::ioam::trace::TraceType;
use int_core::ioam::{Domain, TimestampFormat, FIELD_NAMES};

use super::choice::chosen;
use super::model::IoamTimestamps;
use super::problems::Problems;
use super::raw::RawInt;

/// What a node of the domain writes unless told: its id and Hop Limit,
/// the time the packet arrived, the time it stayed (a path, one-way
/// latency, every hop's delay).
const DEFAULT_FIELDS: [&str; 4] =
    ["hop_limit_node_id", "timestamp_seconds", "timestamp_fraction", "transit_delay"];
/// Slots unless told.
const DEFAULT_NODES: u8 = 8;

/// An IOAM domain from `int` at `path` (`pipelines[i].int`).
pub fn domain(raw: &RawInt, path: &str, problems: &mut Problems) -> Domain {
    problems.other_version(
        path,
        &[
            ("encapsulation", raw.encapsulation.is_some()),
            ("dscp", raw.dscp.is_some()),
            ("udp_port", raw.udp_port.is_some()),
            ("tcp_placement", raw.tcp_placement.is_some()),
            ("domain_specific_id", raw.domain_specific_id.is_some()),
        ],
        "INT domains",
        "an IOAM domain is its namespace, trace_type, nodes, timestamps and sequence",
    );
    let names: Vec<&str> = match &raw.trace_type {
        Some(names) => names.iter().map(String::as_str).collect(),
        None => DEFAULT_FIELDS.to_vec(),
    };
    let mut trace_type = TraceType::empty();
    for (i, name) in names.iter().enumerate() {
        match FIELD_NAMES.iter().find(|(known, _)| known == name) {
            Some((_, bit)) => trace_type |= *bit,
            None => problems.add(
                format!("{path}.trace_type[{i}]"),
                format!("unknown IOAM trace field {name:?}"),
                format!("one of {}", FIELD_NAMES.map(|(known, _)| known).join(", ")),
            ),
        }
    }
    if trace_type.is_empty() && raw.trace_type.is_some() {
        problems.add(format!("{path}.trace_type"), "no field", "name at least one, e.g. hop_limit_node_id");
    }
    let timestamps =
        match chosen(&raw.timestamps, IoamTimestamps::Posix, &format!("{path}.timestamps"), problems) {
            IoamTimestamps::Posix => TimestampFormat::Posix,
            IoamTimestamps::Ptp => TimestampFormat::Ptp,
        };
    let domain = Domain {
        namespace: raw.namespace.unwrap_or(0),
        trace_type,
        nodes: raw.nodes.unwrap_or(DEFAULT_NODES),
        timestamps,
        // Where configured, each flow's packets are numbered in an
        // Edge-to-Edge option (RFC 9197 section 4.6): loss at the sink.
        e2e: match raw.sequence {
            Some(true) => E2eType::SEQUENCE_32,
            _ => E2eType::empty(),
        },
    };
    if let Err(why) = domain.plan(usize::MAX).check() {
        problems.add(
            format!("{path}.nodes"),
            format!("{} slots of {} words: {why}", domain.nodes, trace_type.node_len()),
            "fewer nodes, or fewer trace fields",
        );
    }
    domain
}

/// IOAM's keys given in an INT domain at `path`.
pub fn refuse_in_int(raw: &RawInt, path: &str, problems: &mut Problems) {
    problems.other_version(
        path,
        &[
            ("namespace", raw.namespace.is_some()),
            ("trace_type", raw.trace_type.is_some()),
            ("nodes", raw.nodes.is_some()),
            ("timestamps", raw.timestamps.is_some()),
        ],
        "IOAM domains",
        "set int.version: ioam for an IOAM trace, or remove the key",
    );
}
