//! What a configuration asks of memory, worked out before anything is
//! allocated: `check` prints it and refuses what the host cannot give, and
//! `run` refuses the same before EAL starts, so that a size no host has is
//! a clear error and never an abort halfway through start-up.

use crate::config::{Config, IntDomain, ReferenceConfig, StageConfig};
use crate::flow_table::{table_bytes, Align64, Natural};
use crate::pipeline::sink_flow::SinkFlow;

/// What one mbuf costs beside its data room: the `rte_mbuf` header (two
/// cache lines) and the mempool's object header (one).
const MBUF_OVERHEAD: u64 = 192;
/// EAL's memory with `--no-huge` and no `-m`.
const NO_HUGE_DEFAULT: u64 = 64 << 20;
/// Headroom kept for what is not counted: the binary, its libraries,
/// DPDK's own tables, thread stacks.
const UNCOUNTED: u64 = 64 << 20;

/// The memory a configuration asks for, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Process memory: flow tables, report rings and capture buffers.
    pub flow_tables: u64,
    pub report_rings: u64,
    pub captures: u64,
    /// DPDK memory: the mbufs of one mempool per NUMA socket in use.
    pub mbufs: u64,
}

/// The mbufs of the cloning sources' own pools.
fn clone_mbufs(config: &Config) -> u64 {
    let pool = |p: &crate::config::PipelineConfig| match &p.stage {
        StageConfig::Source21(settings) if settings.clone_every.is_some() => u64::from(settings.clone_mbufs),
        _ => 0,
    };
    config.pipelines.iter().map(pool).sum()
}

impl Plan {
    pub fn of(config: &Config) -> Plan {
        let flow_tables = config.pipelines.iter().map(|p| stage_table_bytes(&p.stage, p.domain)).sum();
        let rings = config.pipelines.iter().filter(|p| reports(&p.stage)).count() as u64;
        let ring_bytes =
            config.export.as_ref().map_or(0, |e| crate::pipeline::export::ring_bytes(e.ring_size));
        let captures = config.captures.iter().map(|c| c.buffer_bytes as u64).sum();
        let largest_mtu = config.ports.iter().map(|p| p.mtu).max().unwrap_or(1500);
        let per_mbuf = u64::from(crate::dpdk::mempool::data_room_for_mtu(largest_mtu)) + MBUF_OVERHEAD;
        Plan {
            flow_tables,
            report_rings: rings.saturating_mul(ring_bytes as u64),
            captures,
            mbufs: (u64::from(config.mbufs) + clone_mbufs(config)).saturating_mul(per_mbuf),
        }
    }

    /// Process memory the node allocates at start.
    pub fn process_bytes(&self) -> u64 {
        self.flow_tables.saturating_add(self.report_rings).saturating_add(self.captures)
    }

    /// One line for `check` and the log.
    pub fn describe(&self) -> String {
        format!(
            "memory: flow tables {} ({} bytes), report rings {}, capture buffers {} (process memory {}); mbufs {} of DPDK memory",
            size(self.flow_tables),
            self.flow_tables,
            size(self.report_rings),
            size(self.captures),
            size(self.process_bytes()),
            size(self.mbufs)
        )
    }

    /// What cannot be had: each problem with its figure and a hint.
    /// `available`: the host's memory for this process; `dpdk`: EAL's.
    pub fn problems(
        &self,
        available: Option<u64>,
        dpdk: Option<(u64, &str)>,
    ) -> Vec<(String, String, String)> {
        let mut problems = Vec::new();
        if let Some(available) = available {
            let need = self.process_bytes().saturating_add(UNCOUNTED);
            if need > available {
                problems.push((
                    "pipelines[].flows.capacity".to_string(),
                    format!(
                        "the flow tables, report rings and capture buffers need {} (with {} for the rest of the process), and this host has {} available",
                        size(self.process_bytes()),
                        size(UNCOUNTED),
                        size(available)
                    ),
                    "lower flows.capacity (a sink's table costs 160 bytes per flow of capacity, a source's 48), export.ring_size or capture[].buffer".to_string(),
                ));
            }
        }
        if let Some((limit, source)) = dpdk {
            if self.mbufs > limit {
                problems.push((
                    "mempool.mbufs".to_string(),
                    format!(
                        "the mbufs need {} of DPDK memory, and {source} gives {}",
                        size(self.mbufs),
                        size(limit)
                    ),
                    "lower mempool.mbufs, or give EAL more memory (-m, or more huge pages)".to_string(),
                ));
            }
        }
        problems
    }
}

/// The plan of `config` and what of it this host and EAL (`eal`, its
/// arguments) cannot give: what `check` and `run` both judge.
pub fn judge(config: &Config, eal: &[String]) -> (Plan, Vec<(String, String, String)>) {
    let plan = Plan::of(config);
    let problems = plan.problems(int_os::memory::available_bytes(), dpdk_limit(eal));
    (plan, problems)
}

/// Bytes of a stage's flow table (the reference stages' own, smaller
/// tables are counted as their role's), as its stage allocates it.
fn stage_table_bytes(stage: &StageConfig, domain: IntDomain) -> u64 {
    let source = |capacity: u32| table_bytes::<u32, Natural>(capacity as usize, false);
    // INT 2.1's, IOAM's and IFA's sinks keep IPv6 flows' addresses (their loss
    // reports name the flow).
    let sink = |capacity: u32| {
        let ipv6_keys = matches!(domain, IntDomain::V21(_) | IntDomain::Ioam(_) | IntDomain::Ifa(_));
        table_bytes::<SinkFlow, Align64>(capacity as usize, ipv6_keys)
    };
    match stage {
        StageConfig::Source05(s) => source(s.flow_capacity),
        StageConfig::Source21(s) => source(s.flow_capacity),
        // A table of one flow where the domain numbers no packet.
        StageConfig::IoamSource(s) => match domain {
            IntDomain::Ioam(ioam) if !ioam.e2e.is_empty() => source(s.flow_capacity),
            _ => source(1),
        },
        // Probe mode counts each flow's packets; inband keeps no flow.
        StageConfig::IfaSource(s) => match domain {
            IntDomain::Ifa(ifa) if ifa.probe_one_in.is_some() => source(s.flow_capacity),
            _ => source(1),
        },
        StageConfig::Sink(s) => sink(s.flow_capacity),
        StageConfig::Reference(ReferenceConfig::Source05(s)) => source(s.flow_capacity),
        StageConfig::Reference(ReferenceConfig::Source21(s)) => source(s.flow_capacity),
        StageConfig::Reference(ReferenceConfig::Sink(s)) => sink(s.flow_capacity),
        _ => 0,
    }
}

/// Whether a stage has a report ring to the exporter (sinks always; INT
/// 2.1 sources and transits for INT-MX reports, counted whenever the node
/// exports).
fn reports(stage: &StageConfig) -> bool {
    matches!(stage, StageConfig::Sink(_) | StageConfig::Source21(_) | StageConfig::Transit)
}

/// EAL's memory for the mbufs, and where the figure comes from: `-m`,
/// `--no-huge`'s default, or the free huge pages.
pub fn dpdk_limit(eal: &[String]) -> Option<(u64, &'static str)> {
    let value = |flag: &str| eal.iter().position(|a| a == flag).and_then(|i| eal.get(i + 1));
    if let Some(mb) = value("-m").and_then(|v| v.parse::<u64>().ok()) {
        return Some((mb << 20, "EAL's -m"));
    }
    if let Some(list) = value("--socket-mem") {
        let mb: u64 = list.split(',').filter_map(|v| v.parse::<u64>().ok()).sum();
        return Some((mb << 20, "EAL's --socket-mem"));
    }
    if eal.iter().any(|a| a == "--no-huge") {
        return Some((NO_HUGE_DEFAULT, "EAL's --no-huge default (64 MiB)"));
    }
    int_os::memory::free_huge_page_bytes().map(|bytes| (bytes, "the free huge pages"))
}

/// `bytes` in KiB, MiB, GiB or TiB.
pub fn size(bytes: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", units.get(unit).copied().unwrap_or("?"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(128 << 20), "128.0 MiB");
        assert_eq!(size(274_877_906_944), "256.0 GiB");
    }

    #[test]
    fn a_million_flow_sink_costs_160_mib() {
        // 2M slots of a 16-byte key and a 64-byte value (a source's: 8).
        assert_eq!(table_bytes::<SinkFlow, Align64>(1 << 20, false), 160 << 20);
        assert_eq!(table_bytes::<SinkFlow, Align64>(1 << 20, true), 224 << 20);
        assert_eq!(table_bytes::<u32, Natural>(1 << 20, false), 48 << 20);
        assert_eq!(table_bytes::<SinkFlow, Align64>(1 << 31, false), 5 << 36);
    }

    #[test]
    fn eal_memory_from_its_arguments() {
        let args = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(dpdk_limit(&args(&["--no-huge", "-m", "256"])), Some((256 << 20, "EAL's -m")));
        assert_eq!(dpdk_limit(&args(&["--socket-mem", "512,512"])), Some((1 << 30, "EAL's --socket-mem")));
        assert_eq!(dpdk_limit(&args(&["--no-huge"])).map(|l| l.0), Some(64 << 20));
    }

    #[test]
    fn refuses_what_cannot_be_had_with_the_figures() {
        let plan = Plan { flow_tables: 1 << 38, report_rings: 0, captures: 0, mbufs: 1 << 40 };
        let problems = plan.problems(Some(8 << 30), Some((256 << 20, "EAL's -m")));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].1.contains("256.0 GiB") && problems[0].1.contains("8.0 GiB"), "{problems:?}");
        assert!(problems[1].1.contains("1.0 TiB") && problems[1].1.contains("256.0 MiB"), "{problems:?}");
        let small = Plan { flow_tables: 1 << 20, report_rings: 0, captures: 0, mbufs: 1 << 20 };
        assert!(small.problems(Some(8 << 30), Some((256 << 20, "EAL's -m"))).is_empty());
    }
}
