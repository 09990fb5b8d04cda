//! `int-node run`: EAL -> mempool -> ports -> pipelines on worker lcores ->
//! the main lcore exports reports and prints counters until quit -> stop,
//! close, clean up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use int_core::encap::Domain;
use int_core::source::{SourceConfig, Template};
use int_core::transit::TransitConfig;

use crate::clock::Clock;
use crate::config::{ClockSource, Config, Role};
use crate::dpdk::eal::Eal;
use crate::dpdk::lcore::{self, LcoreId};
use crate::dpdk::mbuf::RxClock;
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port::{self, Port, PortId, PortSetup, PortStats, QueueId};
use crate::dpdk::DpdkError;
use crate::flow_table::FlowTable;
use crate::pipeline::export::{self, Exporter};
use crate::pipeline::impair::{ImpairControl, ImpairStage};
use crate::pipeline::sink::SinkStage;
use crate::pipeline::source::SourceStage;
use crate::pipeline::transit::TransitStage;
use crate::pipeline::{Pipeline, Stage};
use crate::stats::{Counter, SharedCounters};

pub struct RunOptions {
    pub duration: Option<f64>,
    pub exit_on_idle_ms: Option<u64>,
    pub stats_json: Option<PathBuf>,
    pub eal_override: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    #[error("{0}")]
    Setup(String),
    #[error("writing {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// A port's name, basic counters and driver xstats.
type NamedPortStats = (String, PortStats, Vec<(String, u64)>);

pub fn run(config: &Config, options: &RunOptions) -> Result<(), RunError> {
    int_os::signals::catch_stop_signals();
    let mut args = vec![String::from("int-node")];
    if options.eal_override.is_empty() {
        args.extend(config.eal_args.iter().cloned());
    } else {
        args.extend(options.eal_override.iter().cloned());
        for port in &config.ports {
            args.push(if port.is_vdev { "--vdev".into() } else { "-a".into() });
            args.push(port.device.clone());
        }
    }
    log::info!("EAL arguments: {}", args.get(1..).unwrap_or(&[]).join(" "));
    let eal = Eal::init(&args)?;

    let workers = lcore::workers();
    for pipeline in &config.pipelines {
        if !workers.contains(&LcoreId(pipeline.lcore)) {
            return Err(RunError::Setup(format!(
                "pipeline {}: lcore {} is not a worker lcore of this EAL (workers: {:?}); add it to -l",
                pipeline.name,
                pipeline.lcore,
                workers.iter().map(|l| l.0).collect::<Vec<_>>()
            )));
        }
    }

    let pool = Mempool::new("int_node_pool", config.mbufs, config.mempool_cache, 0)?;
    log::info!(
        "mempool: {} mbufs of {} bytes, {} available",
        pool.size(),
        dpdk_sys::RTE_MBUF_DEFAULT_BUF_SIZE,
        pool.available()
    );

    let mut ports = Vec::new();
    for (index, port) in config.ports.iter().enumerate() {
        let rx_timestamps =
            config.pipelines.iter().any(|p| p.rx_port == index && p.clock == ClockSource::RxTimestamp);
        let setup = PortSetup {
            device: port.device_name().to_string(),
            rx_queues: port.rx_queues,
            tx_queues: port.tx_queues,
            rx_descriptors: port.rx_descriptors,
            tx_descriptors: port.tx_descriptors,
            mtu: Some(port.mtu),
            promiscuous: port.promiscuous,
            rx_timestamps,
        };
        ports.push(Port::configure(&port.name, &setup, &pool)?);
    }
    for port in ports.iter_mut() {
        port.start()?;
        let (up, speed) = port.link();
        let mac = port.info.mac;
        log::info!(
            "port {} (id {}, {}): {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, link {} {} Mb/s, rss {}, rx timestamps {}",
            port.name,
            port.id.0,
            port.info.driver,
            mac[0],
            mac[1],
            mac[2],
            mac[3],
            mac[4],
            mac[5],
            if up { "up" } else { "down" },
            speed,
            port.info.rss,
            port.info.rx_timestamps
        );
    }
    let port_ids: Vec<PortId> = ports.iter().map(|p| p.id).collect();
    let timestamp_field = port::rx_timestamp_field();

    // Pipelines, grouped by lcore; one report ring per sink.
    let mut by_lcore: BTreeMap<u32, Vec<Pipeline>> = BTreeMap::new();
    let mut shared: Vec<(String, Arc<SharedCounters>)> = Vec::new();
    let mut consumers = Vec::new();
    let mut impair_controls: Vec<(String, Arc<ImpairControl>, Option<std::time::SystemTime>)> = Vec::new();
    for p in &config.pipelines {
        let rx_port = port_ids.get(p.rx_port).copied().unwrap_or(PortId(0));
        let tx_port = port_ids.get(p.tx_port).copied().unwrap_or(PortId(0));
        let rx_int_port = config.ports.get(p.rx_port).map_or(0, |c| c.int_port);
        let tx_int_port = config.ports.get(p.tx_port).map_or(0, |c| c.int_port);
        let mtu = config.ports.get(p.tx_port).map_or(1500, |c| c.mtu);
        let timestamps = match p.clock {
            ClockSource::RxTimestamp => {
                let driver = ports.get(p.rx_port).map_or("", |port| port.info.driver.as_str());
                match timestamp_field {
                    Some((offset, flag)) => {
                        // net_pcap (22.11) stores sec * 1e6 + usec.
                        let ns_per_unit = if driver == "net_pcap" { 1_000 } else { 1 };
                        log::info!(
                            "pipeline {}: clock = RX timestamps of {driver} ({ns_per_unit} ns per unit)",
                            p.name
                        );
                        Some(RxClock { offset, flag, ns_per_unit })
                    }
                    None => {
                        log::warn!(
                            "pipeline {}: {driver} gives no RX timestamps; using the host clock",
                            p.name
                        );
                        None
                    }
                }
            }
            ClockSource::Host => None,
        };
        let domain = Domain { encapsulation: p.encapsulation, tcp_placement: p.tcp_placement };
        let stage = match (p.role, &p.source, &p.sink) {
            (Role::Forward, _, _) => Stage::Forward,
            (Role::Source, Some(s), _) => {
                let source_config = SourceConfig {
                    encapsulation: p.encapsulation,
                    tcp_placement: p.tcp_placement,
                    shim_type: s.shim_type,
                    instructions: s.instructions,
                    max_hop_cnt: s.max_hop_count,
                    own_hop: s.own_hop,
                    max_ip_len: mtu,
                    tail: s.tail,
                };
                source_config.check().map_err(|e| RunError::Setup(format!("pipeline {}: {e}", p.name)))?;
                let hop = SourceStage::own_hop(config.node_id, rx_int_port, tx_int_port);
                let template = Template::new(&source_config, &hop)
                    .map_err(|e| RunError::Setup(format!("pipeline {}: INT block: {e}", p.name)))?;
                Stage::Source(Box::new(SourceStage {
                    config: source_config,
                    template,
                    watchlist: s.watchlist.clone(),
                    flows: FlowTable::new(s.flow_capacity as usize),
                    idle_timeout_ns: s.idle_timeout_ms * 1_000_000,
                    rx_timestamps: timestamps,
                    last_sweep_ns: 0,
                    marked: s.marked,
                    own_reports_to: config.export.as_ref().map(|e| e.collector),
                }))
            }
            (Role::Impair, _, _) => {
                let settings = p
                    .impair
                    .clone()
                    .ok_or_else(|| RunError::Setup(format!("pipeline {}: no impair settings", p.name)))?;
                let control = Arc::new(ImpairControl::default());
                control.set(settings.loss_ppm, settings.delay_us);
                if let Some(file) = &settings.control_file {
                    impair_controls.push((file.clone(), Arc::clone(&control), None));
                }
                Stage::Impair(Box::new(ImpairStage::new(
                    control,
                    (tx_port, QueueId(p.tx_queue)),
                    settings.max_held as usize,
                    u64::from(config.node_id) ^ 0x5eed,
                )))
            }
            (Role::Transit, _, _) => Stage::Transit(Box::new(TransitStage {
                config: TransitConfig { domain, max_ip_len: mtu },
                node_id: config.node_id,
                rx_int_port,
                tx_int_port,
                rx_timestamps: timestamps,
                shapes: Default::default(),
            })),
            (Role::Sink, _, Some(s)) => {
                let Some(export) = &config.export else {
                    return Err(RunError::Setup("a sink needs an export section".into()));
                };
                let (producer, consumer) = export::report_ring(export.ring_size);
                consumers.push(consumer);
                Stage::Sink(Box::new(SinkStage::new(
                    domain,
                    s.clone(),
                    config.node_id,
                    rx_int_port,
                    export.profile,
                    export.rate_limit,
                    producer,
                    timestamps,
                )))
            }
            _ => return Err(RunError::Setup(format!("pipeline {}: settings missing for its role", p.name))),
        };
        let table_bytes = match &stage {
            Stage::Source(source) => Some((source.flows.slot_bytes(), source.flows.bytes_per_flow())),
            Stage::Sink(sink) => Some((sink.flows.slot_bytes(), sink.flows.bytes_per_flow())),
            _ => None,
        };
        if let Some((slot, per_flow)) = table_bytes {
            log::info!(
                "pipeline {}: flow state of {slot} bytes per flow; flow table of {per_flow} bytes per flow of capacity",
                p.name
            );
        }
        let counters = Arc::new(SharedCounters::default());
        shared.push((p.name.clone(), Arc::clone(&counters)));
        log::info!(
            "pipeline {}: {:?} on lcore {}, rx {}:{} -> tx {}:{}",
            p.name,
            p.role,
            p.lcore,
            config.ports.get(p.rx_port).map_or("?", |c| c.name.as_str()),
            p.rx_queue,
            config.ports.get(p.tx_port).map_or("?", |c| c.name.as_str()),
            p.tx_queue
        );
        by_lcore.entry(p.lcore).or_default().push(Pipeline {
            rx: (rx_port, QueueId(p.rx_queue)),
            tx: (tx_port, QueueId(p.tx_queue)),
            stage,
            counters: Default::default(),
            shared: counters,
        });
    }
    let mut exporter = match &config.export {
        Some(export) if !consumers.is_empty() => {
            let macs: Vec<[u8; 6]> = ports.iter().map(|p| p.info.mac).collect();
            let exporter = Exporter::new(export, consumers, &port_ids, &macs, &pool)
                .map_err(|e| RunError::Setup(format!("export to {}: {e}", export.collector)))?;
            log::info!("export: reports to {} ({:?})", exporter.collector(), export.profile.timestamp);
            Some(exporter)
        }
        _ => None,
    };

    let quit = Arc::new(AtomicBool::new(false));
    let mut launched = Vec::new();
    for (lcore_id, pipelines) in by_lcore {
        let worker_quit = Arc::clone(&quit);
        let clock = Clock::new();
        let id = LcoreId(lcore_id);
        let idle_sleep = (config.idle_sleep_us > 0).then(|| Duration::from_micros(config.idle_sleep_us));
        if let Err(error) =
            lcore::launch(id, move || crate::pipeline::run_worker(pipelines, worker_quit, clock, idle_sleep))
        {
            quit.store(true, Ordering::SeqCst);
            for started in &launched {
                lcore::wait(*started);
            }
            return Err(error.into());
        }
        launched.push(id);
    }

    // The main lcore: export, print, watch for the end.
    let started = Instant::now();
    let interval = Duration::from_millis(config.stats_interval_ms);
    let mut next_print = started + interval;
    let mut next_control = started;
    let mut last_rx = 0u64;
    let mut last_rx_change = started;
    let mut last_print_rx: Vec<u64> = vec![0; shared.len()];
    let mut last_print_at = started;
    loop {
        let exported = exporter.as_mut().map_or(0, |e| e.drain(4096));
        if exported == 0 {
            std::thread::sleep(Duration::from_micros(500));
        }
        let now = Instant::now();
        let rx: u64 = shared.iter().map(|(_, c)| c.get(Counter::rx_packets)).sum();
        if rx != last_rx {
            last_rx = rx;
            last_rx_change = now;
        }
        if now >= next_control {
            next_control = now + Duration::from_millis(100);
            for (file, control, seen) in impair_controls.iter_mut() {
                let modified = std::fs::metadata(file.as_str()).and_then(|m| m.modified()).ok();
                if modified.is_some() && modified != *seen {
                    *seen = modified;
                    let text = std::fs::read_to_string(file.as_str()).unwrap_or_default();
                    match ImpairControl::parse(&text) {
                        Some((loss_ppm, delay_us)) => {
                            control.set(loss_ppm, delay_us);
                            log::info!("impair: {file}: loss {} ppm, delay {delay_us} us", loss_ppm);
                        }
                        None => {
                            log::warn!("impair: {file}: expected `loss_percent=N delay_ms=N`, got {text:?}")
                        }
                    }
                }
            }
        }
        if now >= next_print {
            print_interval(&shared, &mut last_print_rx, now.duration_since(last_print_at));
            last_print_at = now;
            next_print = now + interval;
        }
        if int_os::signals::stop_requested() {
            log::info!("signal received: stopping");
            break;
        }
        if options.duration.is_some_and(|d| now.duration_since(started).as_secs_f64() >= d) {
            log::info!("duration reached: stopping");
            break;
        }
        if options
            .exit_on_idle_ms
            .is_some_and(|ms| now.duration_since(last_rx_change) >= Duration::from_millis(ms))
        {
            log::info!("input idle: stopping");
            break;
        }
    }
    quit.store(true, Ordering::SeqCst);
    for id in &launched {
        let ret = lcore::wait(*id);
        if ret != 0 {
            log::warn!("lcore {} returned {ret}", id.0);
        }
    }
    if let Some(exporter) = exporter.as_mut() {
        // The workers have stopped: everything left goes out now, paced.
        while exporter.pending() {
            if exporter.drain(usize::MAX) == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();

    let port_stats: Vec<NamedPortStats> =
        ports.iter().map(|p| (p.name.clone(), p.stats(), p.xstats())).collect();
    // Free what is still queued, stop and close (net_pcap writes its TX
    // file now), then count mbufs.
    let mut drained = 0;
    for (port, port_config) in ports.iter().zip(&config.ports) {
        drained += port.drain_rx(port_config.rx_queues);
    }
    for port in ports.iter_mut() {
        port.close();
    }
    drop(ports);
    let in_use = pool.in_use();
    println!("== int-node final counters ({elapsed:.2} s) ==");
    for (name, counters) in &shared {
        let values: Vec<String> = counters.snapshot().iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("pipeline {name}: {}", values.join(" "));
    }
    for (name, stats, _) in &port_stats {
        println!(
            "port {name}: rx {} tx {} missed {} rx_errors {} tx_errors {} rx_nombuf {}",
            stats.rx_packets,
            stats.tx_packets,
            stats.rx_missed,
            stats.rx_errors,
            stats.tx_errors,
            stats.rx_nombuf
        );
    }
    if let Some(exporter) = &exporter {
        println!("export: sent {} errors {}", exporter.stats.reports_sent, exporter.stats.send_errors);
    }
    println!(
        "mempool: {} of {} mbufs in use at exit ({drained} drained from RX queues)",
        in_use,
        pool.size()
    );
    println!("heap allocations on the packet path: {}", int_os::alloc::packet_path_allocations());
    if in_use != 0 {
        log::warn!("{in_use} mbufs not returned to the pool");
    }

    if let Some(path) = &options.stats_json {
        let json = serde_json::json!({
            "elapsed_s": elapsed,
            "pipelines": shared.iter().map(|(name, c)| {
                let map: serde_json::Map<String, serde_json::Value> = Counter::ALL
                    .iter()
                    .map(|k| (k.name().to_string(), serde_json::Value::from(c.get(*k))))
                    .collect();
                (name.clone(), serde_json::Value::Object(map))
            }).collect::<serde_json::Map<_, _>>(),
            "ports": port_stats.iter().map(|(name, stats, xstats)| {
                let mut value = serde_json::to_value(stats).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    let x: serde_json::Map<String, serde_json::Value> =
                        xstats.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect();
                    object.insert("xstats".into(), serde_json::Value::Object(x));
                }
                (name.clone(), value)
            }).collect::<serde_json::Map<_, _>>(),
            "export": exporter.as_ref().map(|e| serde_json::to_value(e.stats).unwrap_or_default()),
            "mempool": { "size": pool.size(), "in_use_at_exit": in_use, "drained_at_exit": drained },
            "packet_path_allocations": int_os::alloc::packet_path_allocations(),
        });
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        std::fs::write(path, text)
            .map_err(|source| RunError::Write { path: path.display().to_string(), source })?;
    }
    drop(exporter);
    drop(pool);
    drop(eal);
    Ok(())
}

fn print_interval(shared: &[(String, Arc<SharedCounters>)], last: &mut [u64], elapsed: Duration) {
    let seconds = elapsed.as_secs_f64().max(1e-9);
    for ((name, counters), previous) in shared.iter().zip(last.iter_mut()) {
        let rx = counters.get(Counter::rx_packets);
        let rate = (rx - *previous) as f64 / seconds / 1e6;
        *previous = rx;
        let values: Vec<String> = counters
            .snapshot()
            .iter()
            .filter(|(k, _)| *k != "rx_packets")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        log::info!("{name}: {rate:.3} Mpps rx={rx} {}", values.join(" "));
    }
}
