//! Builds each configured pipeline: its ports and queues resolved to DPDK
//! ids, its stage with the settings of its role, its counters, and a report
//! ring from each sink to the exporter.

use std::collections::BTreeMap;
use std::sync::Arc;

use int_core::source::{SourceConfig, Template};
use int_core::transit::TransitConfig;

use super::export::{self, ReportReceiver};
use super::sink::SinkStage;
use super::source::SourceStage;
use super::transit::TransitStage;
use super::{Pipeline, Stage};
use crate::config::{ClockSource, Config, PipelineConfig, SourceSettings, StageConfig};
use crate::dpdk::lcore::{self, LcoreId};
use crate::dpdk::mbuf::RxClock;
use crate::dpdk::port::{self, QueueId};
use crate::flow_table::FlowTable;
use crate::node::ports::Ports;
use crate::node::RunError;
use crate::stats::SharedCounters;

/// Every pipeline, ready to launch.
#[derive(Default)]
pub struct Built {
    pub by_lcore: BTreeMap<u32, Vec<Pipeline>>,
    /// Each pipeline's name and the counters it publishes.
    pub counters: Vec<(String, Arc<SharedCounters>)>,
    /// The exporter's ends of the sinks' report rings.
    pub reports: Vec<ReportReceiver>,
    /// Lab equipment: the impair stages' live settings and their files.
    #[cfg(feature = "lab")]
    pub impair_controls: Vec<(String, Arc<super::impair::ImpairControl>)>,
}

pub fn build(config: &Config, ports: &Ports) -> Result<Built, RunError> {
    let mut built = Built::default();
    for p in &config.pipelines {
        let stage = stage(config, p, ports, &mut built)?;
        warn_remote_socket(p, ports)?;
        let counters = Arc::new(SharedCounters::default());
        built.counters.push((p.name.clone(), Arc::clone(&counters)));
        let name = |index: usize| config.ports.get(index).map_or("?", |c| c.name.as_str());
        log::info!(
            "pipeline {}: {} on lcore {}, rx {}:{} -> tx {}:{}",
            p.name,
            p.stage.role(),
            p.lcore,
            name(p.rx.port),
            p.rx.queue,
            name(p.tx.port),
            p.tx.queue
        );
        built.by_lcore.entry(p.lcore).or_default().push(Pipeline {
            rx: (ports.id(p.rx.port)?, QueueId(p.rx.queue)),
            tx: (ports.id(p.tx.port)?, QueueId(p.tx.queue)),
            stage,
            counters: Default::default(),
            shared: counters,
        });
    }
    Ok(built)
}

/// Pipeline `p`'s stage.
fn stage(config: &Config, p: &PipelineConfig, ports: &Ports, built: &mut Built) -> Result<Stage, RunError> {
    let int_port = |index: usize| config.ports.get(index).map(|c| c.int_port);
    let (Some(rx_int_port), Some(tx_int_port)) = (int_port(p.rx.port), int_port(p.tx.port)) else {
        return Err(RunError::Setup(format!("pipeline {}: unknown port", p.name)));
    };
    let mtu = config.ports.get(p.tx.port).map_or(1500, |c| c.mtu);
    let rx_timestamps = rx_clock(p, ports)?;
    let stage = match &p.stage {
        StageConfig::Forward => Stage::Forward,
        StageConfig::Source(settings) => {
            let hop = SourceStage::own_hop(config.node_id, rx_int_port, tx_int_port);
            let source = source_stage(config, p, settings, mtu, hop, rx_timestamps)?;
            log_flow_table(&p.name, source.flows.slot_bytes(), source.flows.bytes_per_flow());
            Stage::Source(Box::new(source))
        }
        StageConfig::Transit => Stage::Transit(Box::new(TransitStage {
            config: TransitConfig { domain: p.domain, max_ip_len: mtu },
            node_id: config.node_id,
            rx_int_port,
            tx_int_port,
            rx_timestamps,
            shapes: Default::default(),
        })),
        StageConfig::Sink(settings) => {
            let export = config
                .export
                .as_ref()
                .ok_or_else(|| RunError::Setup("a sink needs an export section".into()))?;
            let (sender, receiver) = export::report_ring(export.ring_size);
            built.reports.push(receiver);
            let sink = SinkStage::new(
                p.domain,
                settings.clone(),
                config.node_id,
                rx_int_port,
                export.profile,
                export.rate_limit,
                sender,
                rx_timestamps,
            );
            log_flow_table(&p.name, sink.flows.slot_bytes(), sink.flows.bytes_per_flow());
            Stage::Sink(Box::new(sink))
        }
        #[cfg(feature = "lab")]
        StageConfig::Impair(settings) => impair_stage(config, p, settings, ports, built)?,
    };
    Ok(stage)
}

fn source_stage(
    config: &Config,
    p: &PipelineConfig,
    settings: &SourceSettings,
    mtu: u16,
    hop: int_core::int05::HopMetadata,
    rx_timestamps: Option<RxClock>,
) -> Result<SourceStage, RunError> {
    let source_config = SourceConfig {
        encapsulation: p.domain.encapsulation,
        tcp_placement: p.domain.tcp_placement,
        shim_type: settings.shim_type,
        instructions: settings.instructions,
        max_hop_cnt: settings.max_hop_count,
        own_hop: settings.own_hop,
        max_ip_len: mtu,
        tail: settings.tail,
    };
    source_config.check().map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
    let template = Template::new(&source_config, &hop)
        .map_err(|e| RunError::Setup(format!("pipeline {}: INT block: {e}", p.name)))?;
    Ok(SourceStage {
        config: source_config,
        template,
        watchlist: settings.watchlist.clone(),
        flows: FlowTable::new(settings.flow_capacity as usize),
        idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
        rx_timestamps,
        last_sweep_ns: 0,
        marked: settings.marked,
        own_reports_to: config.export.as_ref().map(|e| e.collector),
    })
}

#[cfg(feature = "lab")]
fn impair_stage(
    config: &Config,
    p: &PipelineConfig,
    settings: &crate::config::ImpairSettings,
    ports: &Ports,
    built: &mut Built,
) -> Result<Stage, RunError> {
    use super::impair::{ImpairControl, ImpairStage};
    let control = Arc::new(ImpairControl::default());
    control.set(settings.loss_ppm, settings.delay_us);
    if let Some(file) = &settings.control_file {
        built.impair_controls.push((file.clone(), Arc::clone(&control)));
    }
    Ok(Stage::Impair(Box::new(ImpairStage::new(
        control,
        (ports.id(p.tx.port)?, QueueId(p.tx.queue)),
        settings.max_held as usize,
        u64::from(config.node_id) ^ 0x5eed,
    ))))
}

/// The RX timestamps a pipeline reads, if its clock is `rx-timestamp` and
/// the driver gives them.
fn rx_clock(p: &PipelineConfig, ports: &Ports) -> Result<Option<RxClock>, RunError> {
    if p.clock != ClockSource::RxTimestamp {
        return Ok(None);
    }
    let driver = ports.get(p.rx.port)?.info.driver.as_str();
    let Some((offset, flag)) = port::rx_timestamp_field() else {
        log::warn!("pipeline {}: {driver} gives no RX timestamps; using the host clock", p.name);
        return Ok(None);
    };
    // net_pcap (22.11) stores sec * 1e6 + usec.
    let ns_per_unit = if driver == "net_pcap" { 1_000 } else { 1 };
    log::info!("pipeline {}: clock = RX timestamps of {driver} ({ns_per_unit} ns per unit)", p.name);
    Ok(Some(RxClock { offset, flag, ns_per_unit }))
}

/// Every packet of a pipeline whose lcore sits on another socket than its
/// RX port crosses the socket interconnect: said once at start.
fn warn_remote_socket(p: &PipelineConfig, ports: &Ports) -> Result<(), RunError> {
    let lcore_socket = lcore::socket_of(LcoreId(p.lcore));
    for (which, index) in [("rx", p.rx.port), ("tx", p.tx.port)] {
        let port_socket = ports.socket(index)?;
        if i64::from(lcore_socket) != i64::from(port_socket) {
            log::warn!(
                "pipeline {}: lcore {} is on socket {lcore_socket}, its {which} port on socket {port_socket}: every packet crosses sockets; use an lcore of socket {port_socket}",
                p.name,
                p.lcore
            );
        }
    }
    Ok(())
}

fn log_flow_table(pipeline: &str, slot: usize, per_flow: usize) {
    log::info!("pipeline {pipeline}: flow state of {slot} bytes per flow; flow table of {per_flow} bytes per flow of capacity");
}
