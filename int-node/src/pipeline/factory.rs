//! Builds each configured pipeline: its ports and queues resolved to DPDK
//! ids, its stage with the settings of its role, its counters, and a report
//! ring from each sink to the exporter.

use std::collections::BTreeMap;
use std::sync::Arc;

use int_core::generate::{Generator, GeneratorSpec};
use int_core::int05::source::{FastBlock, SourceConfig, Template};
use int_core::int05::transit::TransitConfig;
use int_core::reference;

use super::export::{self, ReportReceiver};
use super::generate::GenerateStage;
use super::int05::sink::SinkStage;
use super::int05::source::SourceStage;
use super::int05::transit::TransitStage;
use super::int21::report::Reporter21;
use super::int21::sink::Sink21Stage;
use super::int21::source::Source21Stage;
use super::int21::transit::Transit21Stage;
use super::rate_limit::RateLimit;
use super::reference::{Reference, ReferenceStage};
use super::top_flows::{SharedTopFlows, TopFlows};
use super::{Pipeline, Stage};
use crate::config::{
    ClockSource, Config, GenerateInstrument, GenerateSettings, IntDomain, Mode, PipelineConfig,
    ReferenceConfig, Source21Settings, SourceSettings, StageConfig, TunnelPlacement,
};
use crate::dpdk::lcore::{self, LcoreId};
use crate::dpdk::mbuf::RxClock;
use crate::dpdk::port::{self, QueueId};
use crate::flow_table::FlowTable;
use crate::node::ports::Ports;
use crate::node::RunError;
use crate::stats::SharedCounters;
use int_core::encap::Domain;

/// Every pipeline, ready to launch.
#[derive(Default)]
pub struct Built {
    pub by_lcore: BTreeMap<u32, Vec<Pipeline>>,
    /// Each pipeline's name and the counters it publishes.
    pub counters: Vec<(String, Arc<SharedCounters>)>,
    /// Each pipeline's top flows, as its stage publishes them (stages
    /// without a flow table publish none).
    pub top_flows: Vec<Arc<SharedTopFlows>>,
    /// The exporter's ends of the sinks' report rings.
    pub reports: Vec<ReportReceiver>,
    /// Each pipeline's name and the main lcore's end of its mailbox for
    /// reloaded settings.
    pub outboxes: Vec<(String, super::reload::Outbox)>,
    /// The packet captures, each with the rings of its taps.
    pub captures: Vec<super::capture::Capture>,
    /// Lab equipment: the impair stages' live settings and their files.
    #[cfg(feature = "lab")]
    pub impair_controls: Vec<(String, Arc<super::impair::ImpairControl>)>,
}

pub fn build(config: &Config, ports: &Ports) -> Result<Built, RunError> {
    let captures = config
        .captures
        .iter()
        .map(|c| {
            let name = config.ports.get(c.port).map_or("?", |port| port.name.as_str());
            super::capture::Capture::new(c.file.clone(), name.to_string(), c.snaplen, c.buffer_bytes)
        })
        .collect();
    let mut built = Built { captures, ..Built::default() };
    for p in &config.pipelines {
        let top = Arc::new(SharedTopFlows::default());
        built.top_flows.push(Arc::clone(&top));
        let stage = stage(config, p, ports, &mut built)?;
        let stage = with_top_flows(stage, TopFlows::new(top));
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
        let taps = taps(config, p, &mut built.captures);
        let (outbox, inbox) = super::reload::mailbox();
        built.outboxes.push((p.name.clone(), outbox));
        built.by_lcore.entry(p.lcore).or_default().push(Pipeline {
            rx: (ports.id(p.rx.port)?, QueueId(p.rx.queue)),
            tx: (ports.id(p.tx.port)?, QueueId(p.tx.queue)),
            stage,
            counters: Default::default(),
            shared: counters,
            inbox,
            taps,
        });
    }
    Ok(built)
}

/// `stage`, publishing its top flows through `top` where it keeps a flow
/// table.
fn with_top_flows(mut stage: Stage, top: TopFlows) -> Stage {
    match &mut stage {
        Stage::Source(source) => source.top = top,
        Stage::Source21(source) => source.top = top,
        Stage::Sink(sink) => sink.top = top,
        Stage::Sink21(sink) => sink.top = top,
        _ => {}
    }
    stage
}

/// Pipeline `p`'s taps on the ports it receives from and sends to, where
/// a capture asks for them.
fn taps(
    config: &Config,
    p: &PipelineConfig,
    captures: &mut [super::capture::Capture],
) -> super::capture::Taps {
    let mut taps = super::capture::Taps::default();
    for (settings, capture) in config.captures.iter().zip(captures.iter_mut()) {
        if settings.port == p.rx.port && settings.direction.rx() {
            taps.rx = Some(capture.tap(true));
        }
        if settings.port == p.tx.port && settings.direction.tx() {
            taps.tx = Some(capture.tap(false));
        }
    }
    taps
}

/// Pipeline `p`'s stage.
fn stage(config: &Config, p: &PipelineConfig, ports: &Ports, built: &mut Built) -> Result<Stage, RunError> {
    let int_port = |index: usize| config.ports.get(index).map(|c| c.int_port);
    let (Some(rx_int_port), Some(tx_int_port)) = (int_port(p.rx.port), int_port(p.tx.port)) else {
        return Err(RunError::Setup(format!("pipeline {}: unknown port", p.name)));
    };
    let mtu = config.ports.get(p.tx.port).map_or(1500, |c| c.mtu);
    let rx_timestamps = rx_clock(p, ports)?;
    let stage = match (&p.stage, p.domain) {
        (StageConfig::Forward, _) => Stage::Forward,
        (StageConfig::Source(settings), IntDomain::V05(domain)) => {
            let hop = SourceStage::own_hop(config.node_id, rx_int_port, tx_int_port);
            let source = source_stage(config, domain, settings, mtu, hop, rx_timestamps)
                .map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
            log_flow_table(&p.name, source.flows.slot_bytes(), source.flows.bytes_per_flow());
            Stage::Source(Box::new(source))
        }
        (StageConfig::Source21(settings), IntDomain::V21(domain)) => {
            let ports = (rx_int_port, tx_int_port);
            let source = source21_stage(config, domain, settings, mtu, ports, rx_timestamps, built)
                .map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
            Stage::Source21(Box::new(source))
        }
        (StageConfig::Transit, IntDomain::V05(domain)) => Stage::Transit(Box::new(TransitStage {
            config: TransitConfig { domain, max_ip_len: mtu },
            node_id: config.node_id,
            rx_int_port,
            tx_int_port,
            rx_timestamps,
            shapes: Default::default(),
        })),
        (StageConfig::Transit, IntDomain::V21(domain)) => Stage::Transit21(Box::new(Transit21Stage {
            domain,
            max_ip_len: mtu,
            node_id: config.node_id,
            rx_int_port,
            tx_int_port,
            rx_timestamps,
            reporter: reporter21(config, built),
        })),
        (StageConfig::Sink(settings), domain) => {
            sink_stage(config, p, domain, settings, rx_int_port, rx_timestamps, built)?
        }
        #[cfg(feature = "lab")]
        (StageConfig::Impair(settings), _) => impair_stage(config, p, settings, ports, built)?,
        (StageConfig::Reference(reference), domain) => {
            let role = reference_stage(config, domain, reference, mtu, (rx_int_port, tx_int_port))
                .map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
            Stage::Reference(Box::new(ReferenceStage { role, rx_timestamps }))
        }
        (StageConfig::Generate(settings), _) => generate_stage(config, p, settings)?,
        (StageConfig::Source(_) | StageConfig::Source21(_), _) => {
            return Err(RunError::Setup(format!(
                "pipeline {}: a source of another INT version than its domain",
                p.name
            )))
        }
    };
    Ok(stage)
}

/// A sink of the pipeline's domain, with its report ring to the exporter.
fn sink_stage(
    config: &Config,
    p: &PipelineConfig,
    domain: IntDomain,
    settings: &crate::config::SinkSettings,
    int_port: u16,
    rx_timestamps: Option<RxClock>,
    built: &mut Built,
) -> Result<Stage, RunError> {
    let export =
        config.export.as_ref().ok_or_else(|| RunError::Setup("a sink needs an export section".into()))?;
    let (sender, receiver) = export::report_ring(export.ring_size);
    built.reports.push(receiver);
    let stage = match domain {
        IntDomain::V05(domain) => {
            let sink = SinkStage::new(
                domain,
                settings.clone(),
                config.node_id,
                int_port,
                export.profile,
                export.rate_limit,
                sender,
                rx_timestamps,
            );
            log_flow_table(&p.name, sink.flows.slot_bytes(), sink.flows.bytes_per_flow());
            Stage::Sink(Box::new(sink))
        }
        IntDomain::V21(domain) => Stage::Sink21(Box::new(Sink21Stage {
            domain,
            settings: settings.clone(),
            latency: settings.latency,
            int_port,
            flows: FlowTable::with_ipv6_keys(settings.flow_capacity as usize),
            reporter: Reporter21::new(sender, RateLimit::new(export.rate_limit), config.node_id),
            rx_timestamps,
            last_sweep_ns: 0,
            rx_clock_offset: 0,
            jump_per_coarse_ms: super::sink_flow::packets_per_coarse_ms(settings.max_flow_pps),
            top: TopFlows::default(),
        })),
    };
    Ok(stage)
}

/// An INT 2.1 source, with its fast path where its configuration has one.
fn source21_stage(
    config: &Config,
    domain: int_core::int21::Domain,
    settings: &Source21Settings,
    mtu: u16,
    (rx_int_port, tx_int_port): (u16, u16),
    rx_timestamps: Option<RxClock>,
    built: &mut Built,
) -> Result<Source21Stage, &'static str> {
    let config21 = source21_config(domain, settings, mtu);
    config21.check()?;
    let numbered = config21.numbers_packets();
    let own_hop = own_hop21(config.node_id, rx_int_port, tx_int_port);
    Ok(Source21Stage {
        fast: int_core::int21::fast_source::FastSource::of(&config21, &own_hop),
        config: config21,
        watchlist: settings.watchlist.clone(),
        node_id: config.node_id,
        rx_int_port,
        tx_int_port,
        rx_timestamps,
        marked: settings.marked,
        own_reports_to: config.export.as_ref().map(|e| e.collector),
        reporter: (settings.mode == Mode::Mx).then(|| reporter21(config, built)).flatten(),
        flows: FlowTable::new(if numbered { settings.flow_capacity as usize } else { 1 }),
        idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
        last_sweep_ns: 0,
        tunnels_inside: settings.tunnels == TunnelPlacement::Inside,
        top: TopFlows::default(),
    })
}

/// A report ring to the exporter for an INT 2.1 source or transit stage
/// (their INT-MX reports), when the node exports.
fn reporter21(config: &Config, built: &mut Built) -> Option<Reporter21> {
    let export = config.export.as_ref()?;
    let (sender, receiver) = export::report_ring(export.ring_size);
    built.reports.push(receiver);
    Some(Reporter21::new(sender, RateLimit::new(export.rate_limit), config.node_id))
}

/// An INT 2.1 source's own hop: its node id and the pipeline's ports (the
/// times are each packet's).
fn own_hop21(node_id: u32, rx_int_port: u16, tx_int_port: u16) -> int_core::int21::HopMetadata {
    int_core::int21::HopMetadata {
        node_id: Some(node_id),
        l1_ingress_port: Some(rx_int_port),
        l1_egress_port: Some(tx_int_port),
        ..Default::default()
    }
}

/// The INT 2.1 source configuration of a pipeline.
fn source21_config(
    domain: int_core::int21::Domain,
    settings: &Source21Settings,
    mtu: u16,
) -> int_core::int21::source::SourceConfig {
    int_core::int21::source::SourceConfig {
        domain,
        header_type: match settings.mode {
            Mode::Md => int_core::int21::HeaderType::Md,
            Mode::Mx => int_core::int21::HeaderType::Mx,
        },
        instructions: settings.instructions,
        ds_words: 0,
        max_hops: settings.max_hops,
        own_hop: settings.own_hop,
        // The packet number rides INT-MD only: an MX header has no stack.
        domain_id: domain.source_only.domain_id,
        ds_instructions: match settings.mode {
            Mode::Md => domain.source_only.bits,
            Mode::Mx => 0,
        },
        ds_flags: 0,
        discard: settings.discard,
        max_ip_len: mtu,
    }
}

fn source_stage(
    config: &Config,
    domain: Domain,
    settings: &SourceSettings,
    mtu: u16,
    hop: int_core::int05::HopMetadata,
    rx_timestamps: Option<RxClock>,
) -> Result<SourceStage, String> {
    let source_config = SourceConfig {
        encapsulation: domain.encapsulation,
        tcp_placement: domain.tcp_placement,
        shim_type: settings.shim_type,
        instructions: settings.instructions,
        max_hop_cnt: settings.max_hop_count,
        own_hop: settings.own_hop,
        max_ip_len: mtu,
        tail: settings.tail,
    };
    source_config.check()?;
    let template = Template::new(&source_config, &hop).map_err(|e| format!("INT block: {e}"))?;
    Ok(SourceStage {
        fast: FastBlock::of(&source_config, &template),
        lanes: Box::default(),
        config: source_config,
        template,
        watchlist: settings.watchlist.clone(),
        flows: FlowTable::new(settings.flow_capacity as usize),
        idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
        rx_timestamps,
        last_sweep_ns: 0,
        marked: settings.marked,
        own_reports_to: config.export.as_ref().map(|e| e.collector),
        top: TopFlows::default(),
    })
}

/// The generator, writing INT as a source at this node would.
fn generate_stage(
    config: &Config,
    p: &PipelineConfig,
    settings: &GenerateSettings,
) -> Result<Stage, RunError> {
    let spec = GeneratorSpec {
        flows: settings.flows,
        frame_size: settings.frame_size,
        int_source: (settings.instrument == GenerateInstrument::Hostint).then_some(config.node_id),
        churn: settings.churn,
    };
    let generator =
        Generator::new(&spec).map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
    Ok(Stage::Generate(Box::new(GenerateStage { generator })))
}

/// A reference stage for the role `reference` names, beside what that
/// role's settings would build.
fn reference_stage(
    config: &Config,
    domain: IntDomain,
    reference: &ReferenceConfig,
    mtu: u16,
    (rx_int_port, tx_int_port): (u16, u16),
) -> Result<Reference, String> {
    Ok(match (reference, domain) {
        (ReferenceConfig::Source(settings), IntDomain::V05(domain)) => {
            let hop = SourceStage::own_hop(config.node_id, rx_int_port, tx_int_port);
            let source = source_stage(config, domain, settings, mtu, hop, None)?;
            let flows = settings.flow_capacity as usize;
            Reference::Source(reference::Source::new(&source.config, &hop, flows)?)
        }
        (ReferenceConfig::Transit, IntDomain::V05(domain)) => Reference::Transit(reference::Transit::new(
            domain.encapsulation,
            mtu,
            config.node_id,
            rx_int_port,
            tx_int_port,
        )),
        (ReferenceConfig::Sink(settings), IntDomain::V05(domain)) => {
            Reference::Sink(reference::Sink::new(domain.encapsulation, settings.flow_capacity as usize))
        }
        (ReferenceConfig::Source21(settings), IntDomain::V21(domain)) => {
            let hop = own_hop21(config.node_id, rx_int_port, tx_int_port);
            let source = source21_config(domain, settings, mtu);
            Reference::Source21(reference::Source21::new(&source, &hop, settings.flow_capacity as usize)?)
        }
        (ReferenceConfig::Sink(settings), IntDomain::V21(domain)) => {
            Reference::Sink21(reference::Sink21::new(domain, settings.flow_capacity as usize))
        }
        _ => return Err("no reference stage for this role in this INT version".into()),
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
