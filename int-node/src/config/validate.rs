//! From the YAML as written to a [`Config`]: every value checked before
//! DPDK starts, every problem reported with its YAML path and a hint.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use super::choice::chosen;
use super::device::{check_aliases, parse_device};
use super::eal;
use super::model::{
    CaptureConfig, CaptureDirection, Config, Device, DeviceKind, PipelineConfig, PortConfig, StageConfig,
};
use super::pipeline::pipeline;
use super::problems::{ConfigError, Problems};
use super::queues::QueueUse;
use super::raw::{NodeId, RawConfig, RawPort};
use super::settings::export_settings;

/// A sink or postcard node asked for, even one with other problems,
/// needs an export.
fn check_export_needed(raw: &RawConfig, has_export: bool, problems: &mut Problems) {
    let reporting = raw.pipelines.iter().find_map(|p| {
        p.role
            .value()
            .filter(|role| matches!(role, super::model::RoleName::Sink | super::model::RoleName::Postcard))
    });
    if let (false, Some(role)) = (has_export, reporting) {
        problems.add(
            "export",
            format!("a {role} pipeline needs an export section"),
            "add export: {collector: 127.0.0.1:32766}",
        );
    }
}

/// DPDK's limits on a mempool's per-lcore cache: at most
/// `RTE_MEMPOOL_CACHE_MAX_SIZE` (512), and no more than two thirds of the
/// pool (`rte_mempool_create` refuses more).
fn check_mempool_cache(cache: u32, mbufs: u32, problems: &mut Problems) {
    if cache > 512 || u64::from(cache) * 3 > u64::from(mbufs) * 2 {
        problems.add(
            "mempool.cache",
            format!("a cache of {cache} mbufs per lcore in a pool of {mbufs}"),
            "DPDK takes at most 512, and at most two thirds of mempool.mbufs; 256 suits most nodes",
        );
    }
}

pub fn validate(raw: &RawConfig) -> Result<Config, ConfigError> {
    let mut problems = Problems::default();
    let node_id = node_id(raw, &mut problems);
    super::ifa::check_device_ids(raw, node_id, &mut problems);
    if raw.mempool.mbufs < 1023 {
        problems.add(
            "mempool.mbufs",
            format!("{} mbufs is too few", raw.mempool.mbufs),
            "use at least 1023; 8191 suits a demo",
        );
    }
    check_mempool_cache(raw.mempool.cache, raw.mempool.mbufs, &mut problems);
    let ports = ports(&raw.ports, &mut problems);
    let port_index: BTreeMap<String, usize> =
        ports.iter().enumerate().map(|(i, port)| (port.name.clone(), i)).collect();
    if raw.pipelines.is_empty() {
        problems.add(
            "pipelines",
            "no pipelines",
            "add one, e.g. role: forward, lcore: 1, rx: {port: in}, tx: {port: out}",
        );
    }
    let mut queues = QueueUse::default();
    let mut pipelines: Vec<PipelineConfig> = raw
        .pipelines
        .iter()
        .enumerate()
        .filter_map(|(i, p)| pipeline(i, p, &ports, &port_index, &mut queues, &mut problems))
        .collect();
    check_lcores(&raw.eal, &raw.pipelines.iter().map(|p| p.lcore).collect::<Vec<_>>(), &mut problems);
    let export = raw.export.as_ref().map(|e| export_settings(e, &port_index, &ports, &queues, &mut problems));
    if let Some(export) = &export {
        sinks_keep_to(export.rate_limit, &mut pipelines);
    }
    check_export_needed(raw, export.is_some(), &mut problems);
    check_profile(raw, &pipelines, &mut problems);
    let metrics = stats(raw, &mut problems);
    check_unpolled(&ports, &pipelines, &mut problems);
    let captures = captures(raw, &port_index, &mut problems);
    let node_name = node_name(raw, &mut problems);
    problems.into_result(Config {
        node_id,
        node_name,
        eal: raw.eal.clone(),
        mbufs: raw.mempool.mbufs,
        mempool_cache: raw.mempool.cache,
        ports,
        pipelines,
        export,
        stats_interval_ms: raw.stats.interval_ms,
        metrics,
        captures,
        idle_sleep_us: raw.idle_sleep_us,
    })
}

/// Every sink keeps to the export's rate limit (`export.rate_limit`).
fn sinks_keep_to(rate_limit: u32, pipelines: &mut [PipelineConfig]) {
    for pipeline in pipelines {
        if let StageConfig::Sink(settings) = &mut pipeline.stage {
            settings.reports.rate_limit = rate_limit;
        }
    }
}

/// `export.profile` shapes INT 0.5 sinks' reports: only where there is one.
fn check_profile(raw: &RawConfig, pipelines: &[PipelineConfig], problems: &mut Problems) {
    let sink_05 = pipelines
        .iter()
        .any(|p| matches!((&p.stage, p.domain), (StageConfig::Sink(_), super::model::IntDomain::V05(_))));
    if raw.export.as_ref().is_some_and(|e| e.profile.is_some()) && !sink_05 {
        problems.add(
            "export.profile",
            "the profile shapes INT 0.5 sinks' reports, and this node has none",
            "remove it: INT 2.1 domains send Telemetry Report 2.0",
        );
    }
}

/// `stats`: a positive interval, and the metrics page's address if asked.
fn stats(raw: &RawConfig, problems: &mut Problems) -> Option<std::net::SocketAddr> {
    if raw.stats.interval_ms == 0 {
        problems.add("stats.interval_ms", "0 ms", "a positive interval, e.g. 1000");
    }
    raw.stats.metrics.as_ref().and_then(|text| {
        let addr = text.parse().ok();
        if addr.is_none() {
            problems.add(
                "stats.metrics",
                format!("{text:?} is not an address and port"),
                "e.g. 127.0.0.1:9464",
            );
        }
        addr
    })
}

/// `capture[]`: each names a port once; the file's folder must exist.
fn captures(
    raw: &RawConfig,
    port_index: &BTreeMap<String, usize>,
    problems: &mut Problems,
) -> Vec<CaptureConfig> {
    let mut seen = std::collections::BTreeSet::new();
    let mut captures = Vec::new();
    for (i, capture) in raw.capture.iter().enumerate() {
        let path = format!("capture[{i}]");
        let direction =
            chosen(&capture.direction, CaptureDirection::Both, &format!("{path}.direction"), problems);
        let Some(&port) = port_index.get(&capture.port) else {
            let names: Vec<&str> = port_index.keys().map(String::as_str).collect();
            problems.add(
                format!("{path}.port"),
                format!("no port named {:?}", capture.port),
                format!("one of {names:?}"),
            );
            continue;
        };
        if !seen.insert(port) {
            problems.add(
                format!("{path}.port"),
                "a second capture of this port",
                "one capture per port; use direction: both",
            );
        }
        let snaplen = capture.snaplen.unwrap_or(65_535);
        if snaplen < 64 {
            problems.add(
                format!("{path}.snaplen"),
                format!("{snaplen} bytes"),
                "at least 64, e.g. 65535 (whole packets)",
            );
        }
        let buffer_kb = capture.buffer_kb.unwrap_or(4096);
        if !(64..=1 << 20).contains(&buffer_kb) {
            problems.add(format!("{path}.buffer_kb"), format!("{buffer_kb} KiB"), "64 to 1048576, e.g. 4096");
        }
        let file = std::path::PathBuf::from(&capture.file);
        let folder = file.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !folder.is_dir() {
            problems.add(
                format!("{path}.file"),
                format!("no folder {}", folder.display()),
                "a file in an existing folder",
            );
        }
        captures.push(CaptureConfig {
            port,
            direction,
            file,
            snaplen,
            buffer_bytes: buffer_kb as usize * 1024,
        });
    }
    captures
}

fn node_name(raw: &RawConfig, problems: &mut Problems) -> Option<String> {
    let name = raw.node_name.as_ref()?;
    let fits = (1..=64).contains(&name.chars().count()) && !name.chars().any(char::is_control);
    if !fits {
        problems.add(
            "node_name",
            format!("{name:?} is not a name"),
            "1 to 64 printable characters, e.g. edge-a",
        );
    }
    Some(name.clone())
}

fn node_id(raw: &RawConfig, problems: &mut Problems) -> u32 {
    let Some(id) = &raw.node_id else { return 0 };
    parse_node_id(id).unwrap_or_else(|| {
        problems.add(
            "node_id",
            "not a 32-bit node id",
            "a number, 0x-hex, or a dotted quad such as 10.0.0.1",
        );
        0
    })
}

pub fn parse_node_id(id: &NodeId) -> Option<u32> {
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

/// Every port, a problem for each that is wrong. A port whose device does
/// not parse is kept under its name (the config is refused anyway), so that
/// pipelines naming it get no problem of their own.
fn ports(raw: &[RawPort], problems: &mut Problems) -> Vec<PortConfig> {
    if raw.is_empty() {
        problems.add(
            "ports",
            "no ports",
            "add at least one port, e.g. device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap",
        );
    }
    let mut devices = Vec::new();
    let mut ports = Vec::new();
    for (i, port) in raw.iter().enumerate() {
        check_port(i, port, raw, problems);
        let device = parse_device(&port.device).unwrap_or_else(|| {
            problems.add(
                format!("ports[{i}].device"),
                format!("{:?} is neither a vdev nor a PCI address", port.device),
                "use a vdev such as net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap or net_null0, or a PCI address such as 0000:03:00.0 (driver arguments key=value after a comma)",
            );
            Device { kind: DeviceKind::Vdev, name: port.device.clone(), args: Vec::new() }
        });
        devices.push((i, port.name.as_str(), device.clone()));
        ports.push(PortConfig {
            name: port.name.clone(),
            device,
            rx_queues: port.rx_queues,
            tx_queues: port.tx_queues,
            rx_descriptors: port.rx_descriptors,
            tx_descriptors: port.tx_descriptors,
            mtu: port.mtu,
            promiscuous: port.promiscuous,
            int_port: port.int_port.unwrap_or(i as u16),
        });
    }
    check_aliases(&devices, problems);
    ports
}

fn check_port(i: usize, port: &RawPort, all: &[RawPort], problems: &mut Problems) {
    let path = format!("ports[{i}]");
    if port.name.is_empty() {
        problems.add(format!("{path}.name"), "empty name", "give the port a short name to refer to it");
    }
    if all.iter().take(i).any(|earlier| earlier.name == port.name) {
        problems.add(
            format!("{path}.name"),
            format!("port name {:?} used twice", port.name),
            "names must be unique",
        );
    }
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
}

/// A port whose pipelines poll some of its RX queues must have them poll
/// all: RSS spreads flows over every queue, and a queue nobody polls is
/// traffic dropped without a word. (A port no pipeline reads is a TX
/// port: its RX queue is left alone.)
fn check_unpolled(ports: &[PortConfig], pipelines: &[PipelineConfig], problems: &mut Problems) {
    for (i, port) in ports.iter().enumerate() {
        let polled: BTreeSet<u16> = pipelines.iter().filter(|p| p.rx.port == i).map(|p| p.rx.queue).collect();
        let unpolled: Vec<String> =
            (0..port.rx_queues).filter(|q| !polled.contains(q)).map(|q| q.to_string()).collect();
        if !polled.is_empty() && !unpolled.is_empty() {
            problems.add(
                format!("ports[{i}].rx_queues"),
                format!(
                    "{} RX queues, but no pipeline polls queue(s) {}: the packets RSS puts there are never read",
                    port.rx_queues,
                    unpolled.join(", ")
                ),
                format!("set rx_queues: {}, or add a pipeline for each queue (rx: {{port: {}, queue: N}})", polled.len(), port.name),
            );
        }
    }
}

/// A pipeline's lcore must be a worker: not EAL's main lcore (0 when the
/// config gives no lcore list) and, when the config gives a list, in it
/// (EAL would start, then the node would refuse).
fn check_lcores(eal_args: &[String], lcores: &[u32], problems: &mut Problems) {
    let eal = eal::lcores(eal_args);
    let main = eal.as_ref().map_or(0, |eal| eal.main);
    for (i, &lcore) in lcores.iter().enumerate() {
        let path = format!("pipelines[{i}].lcore");
        if lcore == main {
            problems.add(
                path,
                format!("lcore {lcore} is EAL's main lcore (stats and export)"),
                "use a worker lcore from the EAL lcore list, e.g. 1",
            );
        } else if let Some(eal) = eal.as_ref().filter(|eal| !eal.all.contains(&lcore)) {
            problems.add(
                path,
                format!("lcore {lcore} is not in the EAL lcore list ({})", eal.given_by),
                "add it to the eal list's lcores, or use one of them",
            );
        }
    }
}
