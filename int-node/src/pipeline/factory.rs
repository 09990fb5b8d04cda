//! Builds each configured pipeline: its ports and queues resolved to DPDK
//! ids, its stage with the settings of its role, its counters, and a report
//! ring from each sink to the exporter.

use std::collections::BTreeMap;
use std::sync::Arc;

use int_core::generate::{Generator, GeneratorSpec};
use int_core::reference;

use super::clones::Clones;
use super::export::{self, ReportReceiver};
use super::generate::GenerateStage;
use super::ifa::sink::IfaSinkStage;
use super::ifa::source::IfaSourceStage;
use super::ifa::transit::IfaTransitStage;
use super::ifa::Ifa;
use super::int05::sink::Sink05Stage;
use super::int05::source::Source05Stage;
use super::int05::transit::Transit05Stage;
use super::int05::Int05;
use super::int21::postcard::PostcardStage;
use super::int21::sink::Sink21Stage;
use super::int21::source::Source21Stage;
use super::int21::transit::Transit21Stage;
use super::int21::Int21;
use super::ioam::sink::IoamSinkStage;
use super::ioam::source::IoamSourceStage;
use super::ioam::transit::IoamTransitStage;
use super::ioam::Ioam;
use super::rate_limit::RateLimit;
use super::reference::{Reference, ReferenceStage};
use super::report::ifa_ipfix::IfaIpfixSettings;
use super::report::tr20::Reporter21;
use super::setup::{Hop, SetupError, SinkSetup};
use super::stage::Stage;
use super::top_flows::{SharedTopFlows, TopFlows};
use super::worker::Pipeline;
use crate::config::{
    ClockSource, Config, GenerateInstrument, GenerateSettings, IfaReport, IntDomain, Mode, PipelineConfig,
    ReferenceConfig, StageConfig,
};
use crate::dpdk::lcore::{self, LcoreId};
use crate::dpdk::mbuf::RxClock;
use crate::dpdk::port::{self, QueueId};
use crate::ports::{Ports, PortsError};
use crate::stats::SharedCounters;

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

pub fn build(config: &Config, ports: &Ports) -> Result<Built, BuildError> {
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
        Stage::Int05(Int05::Source(source)) => source.top = top,
        Stage::Int05(Int05::Sink(sink)) => sink.core.top = top,
        Stage::Int21(Int21::Source(source)) => source.top = top,
        Stage::Int21(Int21::Sink(sink)) => sink.core.top = top,
        Stage::Int21(Int21::Postcard(postcard)) => postcard.top = top,
        Stage::Ioam(Ioam::Source(encap)) => encap.top = top,
        Stage::Ioam(Ioam::Sink(decap)) => decap.core.top = top,
        Stage::Ifa(Ifa::Source(source)) => source.top = top,
        Stage::Ifa(Ifa::Sink(sink)) => sink.core.top = top,
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

/// Why a pipeline could not be built from a config `check` accepted.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Ports(#[from] PortsError),
    #[error("pipeline {pipeline}: {problem}")]
    Stage { pipeline: String, problem: StageError },
}

/// What is wrong with one pipeline's stage.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("unknown port")]
    UnknownPort,
    #[error("a sink or postcard node needs an export section")]
    NoExport,
    #[error("a source of another version than its domain")]
    OtherVersion,
    #[error("no reference stage for this role in this INT version")]
    NoReference,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("reference: {0}")]
    Reference(&'static str),
    #[error("generator: {0}")]
    Generator(String),
}

/// Pipeline `p`'s stage.
fn stage(config: &Config, p: &PipelineConfig, ports: &Ports, built: &mut Built) -> Result<Stage, BuildError> {
    let failed = |problem: StageError| BuildError::Stage { pipeline: p.name.clone(), problem };
    let hop = hop(config, p, ports)?.ok_or_else(|| failed(StageError::UnknownPort))?;
    let own_reports_to = config.export.as_ref().map(|e| e.collector);
    let stage = match (&p.stage, p.domain) {
        (StageConfig::Forward, _) => Stage::Forward,
        (StageConfig::Source05(settings), IntDomain::V05(domain)) => {
            let source =
                Source05Stage::new(domain, settings, &hop, own_reports_to).map_err(|e| failed(e.into()))?;
            log_flow_table(&p.name, source.flows.slot_bytes(), source.flows.bytes_per_flow());
            Stage::Int05(Int05::Source(Box::new(source)))
        }
        (StageConfig::Source21(settings), IntDomain::V21(domain)) => {
            let reporter = (settings.mode == Mode::Mx).then(|| reporter21(config, built)).flatten();
            let clones = clones(settings, p, ports, built)?;
            let source = Source21Stage::new(domain, settings, &hop, own_reports_to, reporter, clones)
                .map_err(|e| failed(e.into()))?;
            Stage::Int21(Int21::Source(Box::new(source)))
        }
        (StageConfig::Transit, IntDomain::V05(domain)) => {
            Stage::Int05(Int05::Transit(Box::new(Transit05Stage::new(domain, &hop))))
        }
        (StageConfig::Transit, IntDomain::V21(domain)) => Stage::Int21(Int21::Transit(Box::new(
            Transit21Stage::new(domain, &hop, reporter21(config, built)),
        ))),
        (StageConfig::IoamSource(settings), IntDomain::Ioam(domain)) => {
            let encap = IoamSourceStage::new(&domain, &hop, settings)
                .map_err(|e| failed(SetupError::Settings(e).into()))?;
            Stage::Ioam(Ioam::Source(Box::new(encap)))
        }
        (StageConfig::Transit, IntDomain::Ioam(domain)) => {
            Stage::Ioam(Ioam::Transit(Box::new(IoamTransitStage::new(&domain, &hop))))
        }
        (StageConfig::IfaSource(settings), IntDomain::Ifa(zone)) => {
            let probes = match zone.probe_one_in {
                Some(every) => {
                    let name = format!("int_node_probes_{}", built.counters.len());
                    Some(Clones::new(every, ports.own_pool(&name, zone.probe_mbufs, p.tx.port)?))
                }
                None => None,
            };
            let source = IfaSourceStage::new(&zone, settings, &hop, own_reports_to, probes);
            Stage::Ifa(Ifa::Source(Box::new(source)))
        }
        (StageConfig::Transit, IntDomain::Ifa(zone)) => {
            Stage::Ifa(Ifa::Transit(Box::new(IfaTransitStage::new(&zone, &hop))))
        }
        (StageConfig::Sink(settings), domain) => {
            sink_stage(config, p, domain, settings, hop, built).map_err(failed)?
        }
        #[cfg(feature = "lab")]
        (StageConfig::Impair(settings), _) => impair_stage(config, p, settings, ports, built)?,
        (StageConfig::Reference(reference), domain) => {
            let role = reference_stage(domain, reference, &hop).map_err(failed)?;
            Stage::Reference(Box::new(ReferenceStage { role, rx_timestamps: hop.rx_timestamps }))
        }
        (StageConfig::Generate(settings), _) => generate_stage(config, settings).map_err(failed)?,
        (StageConfig::Postcard(settings), _) => {
            let reporter = reporter21(config, built).ok_or_else(|| failed(StageError::NoExport))?;
            let postcard = PostcardStage::new(settings, hop, own_reports_to, reporter);
            log_flow_table(&p.name, postcard.flows.slot_bytes(), postcard.flows.bytes_per_flow());
            Stage::Int21(Int21::Postcard(Box::new(postcard)))
        }
        (
            StageConfig::Source05(_)
            | StageConfig::Source21(_)
            | StageConfig::IoamSource(_)
            | StageConfig::IfaSource(_),
            _,
        ) => return Err(failed(StageError::OtherVersion)),
    };
    Ok(stage)
}

/// A cloning INT 2.1 source's copies, where it clones. They come from a
/// pool of their own, on the socket of the port they leave by: never from
/// the pool the ports receive into.
fn clones(
    settings: &crate::config::Source21Settings,
    p: &PipelineConfig,
    ports: &Ports,
    built: &Built,
) -> Result<Option<Clones>, PortsError> {
    let Some(every) = settings.clone_every else { return Ok(None) };
    let name = format!("int_node_clones_{}", built.counters.len());
    Ok(Some(Clones::new(every, ports.own_pool(&name, settings.clone_mbufs, p.tx.port)?)))
}

/// Where pipeline `p` runs as a hop of a path: `None` for a port the
/// config lacks.
fn hop(config: &Config, p: &PipelineConfig, ports: &Ports) -> Result<Option<Hop>, BuildError> {
    let int_port = |index: usize| config.ports.get(index).map(|c| c.int_port);
    let (Some(rx_int_port), Some(tx_int_port)) = (int_port(p.rx.port), int_port(p.tx.port)) else {
        return Ok(None);
    };
    Ok(Some(Hop {
        node_id: config.node_id,
        rx_int_port,
        tx_int_port,
        max_ip_len: config.ports.get(p.tx.port).map_or(1500, |c| c.mtu),
        rx_timestamps: rx_clock(p, ports)?,
        rx_queue: Some((ports.id(p.rx.port)?, QueueId(p.rx.queue))),
    }))
}

/// A sink of the pipeline's domain, with its report ring to the exporter.
fn sink_stage(
    config: &Config,
    p: &PipelineConfig,
    domain: IntDomain,
    settings: &crate::config::SinkSettings,
    hop: Hop,
    built: &mut Built,
) -> Result<Stage, StageError> {
    let export = config.export.as_ref().ok_or(StageError::NoExport)?;
    let (sender, receiver) = export::report_ring(export.ring_size);
    built.reports.push(receiver);
    let setup = SinkSetup { settings: settings.clone(), hop, reports: sender };
    let stage = match domain {
        IntDomain::V05(domain) => {
            let sink = Sink05Stage::new(domain, export.profile, setup);
            log_flow_table(&p.name, sink.core.flows.slot_bytes(), sink.core.flows.bytes_per_flow());
            Stage::Int05(Int05::Sink(Box::new(sink)))
        }
        IntDomain::V21(domain) => Stage::Int21(Int21::Sink(Box::new(Sink21Stage::new(domain, setup)))),
        IntDomain::Ioam(domain) => Stage::Ioam(Ioam::Sink(Box::new(IoamSinkStage::new(&domain, setup)))),
        IntDomain::Ifa(zone) => {
            let ipfix = match zone.report {
                IfaReport::Tr20 => None,
                IfaReport::Ipfix(ipfix) => Some(IfaIpfixSettings {
                    template_id: ipfix.template_id,
                    elements: ipfix.elements,
                    // The hops name nodes by Device ID: so does the domain.
                    domain: zone.device_id(setup.hop.node_id),
                    packet_max: ipfix.packet_max,
                    template_every_ns: ipfix.template_every_ns,
                }),
            };
            Stage::Ifa(Ifa::Sink(Box::new(IfaSinkStage::new(zone.domain, zone.l4, setup, ipfix))))
        }
    };
    Ok(stage)
}

/// A report ring to the exporter for an INT 2.1 source or transit stage
/// (their INT-MX reports), when the node exports.
fn reporter21(config: &Config, built: &mut Built) -> Option<Reporter21> {
    let export = config.export.as_ref()?;
    let (sender, receiver) = export::report_ring(export.ring_size);
    built.reports.push(receiver);
    Some(Reporter21::new(sender, RateLimit::new(export.rate_limit), config.node_id))
}

/// The generator, writing INT as a source at this node would.
fn generate_stage(config: &Config, settings: &GenerateSettings) -> Result<Stage, StageError> {
    let spec = GeneratorSpec {
        flows: settings.flows,
        frame_size: settings.frame_size,
        int_source: (settings.instrument == GenerateInstrument::Hostint).then_some(config.node_id),
        churn: settings.churn,
    };
    let generator = Generator::new(&spec).map_err(StageError::Generator)?;
    Ok(Stage::Generate(Box::new(GenerateStage { generator })))
}

/// A reference stage for the role `reference` names, beside what that
/// role's settings would build.
fn reference_stage(
    domain: IntDomain,
    reference: &ReferenceConfig,
    hop: &Hop,
) -> Result<Reference, StageError> {
    Ok(match (reference, domain) {
        (ReferenceConfig::Source05(settings), IntDomain::V05(domain)) => {
            let source = Source05Stage::new(domain, settings, hop, None)?;
            let own = Source05Stage::own_hop(hop);
            let flows = settings.flow_capacity as usize;
            Reference::Source05(
                reference::Source::new(&source.config, &own, flows).map_err(StageError::Reference)?,
            )
        }
        (ReferenceConfig::Transit, IntDomain::V05(domain)) => Reference::Transit05(reference::Transit::new(
            domain.encapsulation,
            hop.max_ip_len,
            hop.node_id,
            hop.rx_int_port,
            hop.tx_int_port,
        )),
        (ReferenceConfig::Sink(settings), IntDomain::V05(domain)) => {
            Reference::Sink05(reference::Sink::new(domain.encapsulation, settings.flow_capacity as usize))
        }
        (ReferenceConfig::Source21(settings), IntDomain::V21(domain)) => {
            let own = Source21Stage::own_hop(hop);
            let source = Source21Stage::config(domain, settings, hop.max_ip_len);
            let flows = settings.flow_capacity as usize;
            Reference::Source21(
                reference::Source21::new(&source, &own, flows).map_err(StageError::Reference)?,
            )
        }
        (ReferenceConfig::Sink(settings), IntDomain::V21(domain)) => {
            Reference::Sink21(reference::Sink21::new(domain, settings.flow_capacity as usize))
        }
        _ => return Err(StageError::NoReference),
    })
}

#[cfg(feature = "lab")]
fn impair_stage(
    config: &Config,
    p: &PipelineConfig,
    settings: &crate::config::ImpairSettings,
    ports: &Ports,
    built: &mut Built,
) -> Result<Stage, BuildError> {
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
fn rx_clock(p: &PipelineConfig, ports: &Ports) -> Result<Option<RxClock>, PortsError> {
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
fn warn_remote_socket(p: &PipelineConfig, ports: &Ports) -> Result<(), PortsError> {
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
