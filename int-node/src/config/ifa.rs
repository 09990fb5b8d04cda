//! `int` of an IFA 2.0 zone (`version: ifa`): the IP protocol that
//! announces IFA, whether the L4 header covers the metadata, this node's
//! Device ID, what its initiator writes (Hop Limit, Max Length, live
//! packets or probe copies) and what its terminator reports in (TR 2.0, or
//! IPFIX with Broadcom's template). docs/ifa.md, "The node", says why each
//! default is what it is.

use int_core::ifa::{hop, Domain, L4Rule, DEFAULT_PROTOCOL};
use int_core::report::ifa_ipfix::{Elements, DEFAULT_TEMPLATE_ID};

use super::choice::chosen;
use super::model::{IfaDomain, IfaIpfix, IfaL4, IfaMode, IfaReport, IfaReportName, DEFAULT_CLONE_MBUFS};
use super::problems::Problems;
use super::raw::{RawConfig, RawEnterprise, RawIfaIpfix, RawInt};

/// Broadcom's example initiator values (OpenBCM sdk-6.5.20
/// `cint_ifa2.c`): Hop Limit and Max Length 0xff.
const DEFAULT_HOP_LIMIT: u8 = 0xff;
const DEFAULT_MAX_LENGTH: u8 = 0xff;
/// One hop, in words: the least Max Length that lets the initiator's in.
const HOP_WORDS: u8 = (hop::HOP_LEN / 4) as u8;
/// Broadcom's example terminator (`td3_ifa_l3_term.c`): the packet cut
/// to 256 bytes, the template again every 30 s.
const DEFAULT_PACKET_MAX: u32 = 256;
const DEFAULT_TEMPLATE_SECONDS: u32 = 30;
/// collect forgets a template not sent again for 30 minutes (RFC 7011
/// section 8.4): it must come sooner.
const MAX_TEMPLATE_SECONDS: u32 = 30 * 60;

/// An IFA zone from `int` at `path` (`pipelines[i].int`).
pub fn domain(raw: &RawInt, path: &str, problems: &mut Problems) -> IfaDomain {
    problems.other_version(
        path,
        &[
            ("encapsulation", raw.encapsulation.is_some()),
            ("dscp", raw.dscp.is_some()),
            ("udp_port", raw.udp_port.is_some()),
            ("tcp_placement", raw.tcp_placement.is_some()),
            ("domain_specific_id", raw.domain_specific_id.is_some()),
            ("sequence", raw.sequence.is_some()),
        ],
        "INT domains",
        "an IFA zone is its protocol, device_id, hop_limit, max_length, l4, mode, probe, report and ipfix",
    );
    let protocol = raw.protocol.unwrap_or(DEFAULT_PROTOCOL);
    if let Some(why) = taken(protocol) {
        problems.add(
            format!("{path}.protocol"),
            format!("{protocol} is {why}"),
            "an unassigned or experimental number: 253 (the fabrics' and SONiC's) or 254",
        );
    }
    if let Some(id) = raw.device_id.filter(|id| *id > hop::MAX_DEVICE_ID) {
        problems.add(
            format!("{path}.device_id"),
            format!("{id} does not fit in 20 bits"),
            format!("0 to {} (0xfffff)", hop::MAX_DEVICE_ID),
        );
    }
    let max_length = raw.max_length.unwrap_or(DEFAULT_MAX_LENGTH);
    if max_length < HOP_WORDS {
        problems.add(
            format!("{path}.max_length"),
            format!("{max_length} words: no room for the initiator's own hop"),
            format!("{HOP_WORDS} words a hop: 8 x the hops the zone may record, up to 255"),
        );
    }
    let l4 = match chosen(&raw.l4, IfaL4::Keep, &format!("{path}.l4"), problems) {
        IfaL4::Keep => L4Rule::Keep,
        IfaL4::Cover => L4Rule::Cover,
    };
    IfaDomain {
        domain: Domain { protocol },
        l4,
        device_id: raw.device_id,
        hop_limit: raw.hop_limit.unwrap_or(DEFAULT_HOP_LIMIT),
        max_length,
        probe_one_in: probe(raw, path, problems),
        probe_mbufs: raw.probe.as_ref().and_then(|probe| probe.mbufs).unwrap_or(DEFAULT_CLONE_MBUFS),
        report: report(raw, path, problems),
    }
}

/// The terminator's report form, with IPFIX's settings where it is IPFIX.
fn report(raw: &RawInt, path: &str, problems: &mut Problems) -> IfaReport {
    let name = chosen(&raw.report, IfaReportName::Tr20, &format!("{path}.report"), problems);
    match (name, &raw.ipfix) {
        (IfaReportName::Tr20, None) => IfaReport::Tr20,
        (IfaReportName::Tr20, Some(_)) => {
            problems.add(
                format!("{path}.ipfix"),
                "IPFIX settings with report: tr20",
                "set report: ipfix, or remove the ipfix section",
            );
            IfaReport::Tr20
        }
        (IfaReportName::Ipfix, ipfix) => {
            let path = format!("{path}.ipfix");
            IfaReport::Ipfix(self::ipfix(ipfix.as_ref().unwrap_or(&RawIfaIpfix::default()), &path, problems))
        }
    }
}

/// `int.ipfix` at `path`, each key checked, the SDK example's defaults.
fn ipfix(raw: &RawIfaIpfix, path: &str, problems: &mut Problems) -> IfaIpfix {
    let template_id = raw.template_id.unwrap_or(DEFAULT_TEMPLATE_ID);
    if template_id < 256 {
        problems.add(
            format!("{path}.template_id"),
            format!("{template_id}: IDs below 256 are the set IDs'"),
            "256 to 65535 (Broadcom's example: 257)",
        );
    }
    let packet_max = raw.packet_max.unwrap_or(DEFAULT_PACKET_MAX);
    if !(1..=u32::from(u16::MAX)).contains(&packet_max) {
        problems.add(
            format!("{path}.packet_max"),
            format!("{packet_max} bytes"),
            "1 to 65535, Broadcom's example 256 (a message is at most 1024 bytes: what the stack leaves of them is the most sent)",
        );
    }
    let seconds = raw.template_seconds.unwrap_or(DEFAULT_TEMPLATE_SECONDS);
    if !(1..=MAX_TEMPLATE_SECONDS).contains(&seconds) {
        problems.add(
            format!("{path}.template_seconds"),
            format!("{seconds} s"),
            format!("1 to {MAX_TEMPLATE_SECONDS}: collect forgets a template not sent for 30 minutes (Broadcom's example: 30)"),
        );
    }
    IfaIpfix {
        template_id,
        elements: elements(raw, path, problems),
        packet_max: packet_max as usize,
        template_every_ns: u64::from(seconds) * 1_000_000_000,
    }
}

/// The three element ids and their enterprise number.
fn elements(raw: &RawIfaIpfix, path: &str, problems: &mut Problems) -> Elements {
    let defaults = Elements::default();
    let enterprise = match &raw.enterprise {
        None => defaults.enterprise,
        Some(RawEnterprise::Name(name)) if name == "iana" => None,
        Some(RawEnterprise::Number(n)) if u32::try_from(*n).is_ok() => u32::try_from(*n).ok(),
        Some(wrong) => {
            problems.add(
                format!("{path}.enterprise"),
                format!("{wrong:?}"),
                "an enterprise number (0 to 4294967295; the E bit set) or iana (the E bit clear)",
            );
            defaults.enterprise
        }
    };
    let Some(ids) = &raw.elements else { return Elements { enterprise, ..defaults } };
    let fit = ids.iter().all(|id| *id < 0x8000);
    let distinct = ids.iter().enumerate().all(|(i, id)| !ids.get(..i).unwrap_or_default().contains(id));
    match ids.as_slice() {
        [headers, stack, packet] if fit && distinct => {
            let id = |n: &u32| *n as u16;
            Elements { headers: id(headers), stack: id(stack), packet: id(packet), enterprise }
        }
        _ => {
            problems.add(
                format!("{path}.elements"),
                format!("{ids:?}"),
                "three distinct ids below 32768 (bit 15 is the E bit): the headers', the stack's and the packet's, e.g. [100, 101, 102]",
            );
            Elements { enterprise, ..defaults }
        }
    }
}

/// Probe mode's one-in-N, where `mode: probe` sets it.
fn probe(raw: &RawInt, path: &str, problems: &mut Problems) -> Option<u32> {
    let mode = chosen(&raw.mode, IfaMode::Inband, &format!("{path}.mode"), problems);
    match (mode, &raw.probe) {
        (IfaMode::Inband, None) => None,
        (IfaMode::Inband, Some(_)) => {
            problems.add(
                format!("{path}.probe"),
                "probe settings in inband mode",
                "set mode: probe, or remove the probe section",
            );
            None
        }
        (IfaMode::Probe, None) => {
            problems.add(
                format!("{path}.probe"),
                "mode: probe without probe.one_in",
                "add probe: {one_in: N} (one copy in N packets of each watched flow)",
            );
            None
        }
        (IfaMode::Probe, Some(probe)) => {
            if probe.one_in == 0 {
                problems.add(
                    format!("{path}.probe.one_in"),
                    "0 packets",
                    "1 to copy every packet, N for one in N",
                );
            }
            if probe.mbufs.is_some_and(|mbufs| !(1..=1 << 20).contains(&mbufs)) {
                problems.add(
                    format!("{path}.probe.mbufs"),
                    format!("{} mbufs", probe.mbufs.unwrap_or_default()),
                    "1 to 1048576: the copies in flight at once (a TX ring's worth: the default 2047)",
                );
            }
            Some(probe.one_in.max(1))
        }
    }
}

/// What a protocol number already names, that IFA must not take: a
/// protocol the walk to it reads, or that it carries.
fn taken(protocol: u8) -> Option<&'static str> {
    match protocol {
        0 | 43 | 44 | 50 | 51 | 60 | 135 | 139 | 140 => Some("an IPv6 extension header"),
        4 | 41 => Some("IP in IP"),
        6 => Some("TCP"),
        17 => Some("UDP"),
        47 => Some("GRE"),
        1 | 58 => Some("ICMP"),
        _ => None,
    }
}

/// IFA's keys given in another version's `int` at `path`.
pub fn refuse_elsewhere(raw: &RawInt, path: &str, problems: &mut Problems) {
    problems.other_version(
        path,
        &[
            ("protocol", raw.protocol.is_some()),
            ("device_id", raw.device_id.is_some()),
            ("hop_limit", raw.hop_limit.is_some()),
            ("max_length", raw.max_length.is_some()),
            ("l4", raw.l4.is_some()),
            ("mode", raw.mode.is_some()),
            ("probe", raw.probe.is_some()),
            ("report", raw.report.is_some()),
            ("ipfix", raw.ipfix.is_some()),
        ],
        "IFA zones",
        "set int.version: ifa for IFA 2.0, or remove the key",
    );
}

/// An IFA pipeline without `device_id` takes the node id, which must then
/// fit in IFA's 20 bits.
pub fn check_device_ids(raw: &RawConfig, node_id: u32, problems: &mut Problems) {
    if node_id <= hop::MAX_DEVICE_ID {
        return;
    }
    for (i, pipeline) in raw.pipelines.iter().enumerate() {
        let ifa =
            pipeline.int.version.as_ref().and_then(|v| v.value()) == Some(super::model::IntVersion::Ifa);
        if ifa && pipeline.int.device_id.is_none() {
            problems.add(
                format!("pipelines[{i}].int.device_id"),
                format!("node_id {node_id:#x} does not fit in IFA's 20-bit Device ID"),
                format!(
                    "set device_id (e.g. {}, the node id's low 20 bits, if no other node of the zone has them)",
                    node_id & hop::MAX_DEVICE_ID
                ),
            );
        }
    }
}
