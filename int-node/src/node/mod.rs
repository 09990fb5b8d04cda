//! `int-node run`, top-down as DPDK's basicfwd: EAL, then the ports and
//! their pools ([`crate::ports`]), then the pipelines launched on worker lcores;
//! the main lcore exports reports and prints counters until it is told to
//! stop; then workers are joined, reports drained, ports closed, and the
//! final counters printed ([`summary`]).

mod error;
pub mod memory;
mod summary;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::config::Config;
use crate::dpdk::eal::Eal;
use crate::dpdk::lcore::{self, LcoreId};
use crate::pipeline::export::Exporter;
use crate::pipeline::factory;
use crate::pipeline::reload::Outbox;
use crate::pipeline::{run_worker, Pipeline};
use crate::ports::Ports;
use crate::stats::{Counter, SharedCounters};
use summary::Summary;

pub use error::RunError;

pub struct RunOptions {
    pub duration: Option<f64>,
    pub exit_on_idle_ms: Option<u64>,
    pub stats_json: Option<PathBuf>,
    /// EAL arguments that replace the config's `eal` list.
    pub eal_override: Vec<String>,
    /// The config file, read again on SIGHUP (a reload is compared with
    /// the running config).
    pub reload_from: Option<PathBuf>,
}

pub fn run(config: &Config, options: &RunOptions) -> Result<(), RunError> {
    int_os::signals::catch_stop_signals();
    if options.reload_from.is_some() {
        int_os::signals::catch_reload_signal();
    }
    let base = if options.eal_override.is_empty() { &config.eal } else { &options.eal_override };
    let plan = check_memory(config, base)?;
    for warning in crate::config::warnings(config) {
        log::warn!("{warning}");
    }
    // Written at the end: a path that cannot be written fails now.
    if let Some(path) = &options.stats_json {
        int_os::files::writable(path)
            .map_err(|source| RunError::Write { path: path.display().to_string(), source })?;
    }
    let mut args = vec![String::from("int-node")];
    args.extend(config.eal_args(base));
    log::info!("EAL arguments: {}", args.get(1..).unwrap_or(&[]).join(" "));
    let eal =
        Eal::init(&args).map_err(|error| crate::startup::eal(&error, &args, &memory::size(plan.mbufs)))?;
    check_workers(config)?;
    let mut node = Node::start(config)?;
    if let Some(path) = &options.reload_from {
        let outboxes = std::mem::take(&mut node.outboxes);
        node.reloads = Some(Reloads { path: path.clone(), running: config.clone(), outboxes });
    }
    node.serve(config, options);
    let summary = node.stop(config);
    summary.print();
    if let Some(path) = &options.stats_json {
        summary.write_json(path)?;
    }
    drop(eal);
    Ok(())
}

/// The memory the config asks for must be there (`check` says the same):
/// refused before anything is allocated, never an abort at start.
fn check_memory(config: &Config, eal: &[String]) -> Result<memory::Plan, RunError> {
    let (plan, problems) = memory::judge(config, eal);
    log::info!("{}", plan.describe());
    if problems.is_empty() {
        return Ok(plan);
    }
    Err(RunError::Memory(problems))
}

/// Every pipeline's lcore must be one of EAL's workers.
fn check_workers(config: &Config) -> Result<(), RunError> {
    let workers = lcore::workers();
    match config.pipelines.iter().find(|p| !workers.contains(&LcoreId(p.lcore))) {
        None => Ok(()),
        Some(p) => Err(RunError::NotAWorker {
            pipeline: p.name.clone(),
            lcore: p.lcore,
            workers: workers.iter().map(|l| l.0).collect(),
        }),
    }
}

/// A running node: its ports, its pipelines on their lcores, the exporter.
struct Node {
    // Dropped in this order: the exporter (its TX mbufs) before the ports
    // and their pools.
    exporter: Option<Exporter>,
    ports: Ports,
    counters: Vec<(String, Arc<SharedCounters>)>,
    quit: Arc<AtomicBool>,
    launched: Vec<LcoreId>,
    helpers: Vec<std::thread::JoinHandle<()>>,
    started: Instant,
    /// The main lcore's ends of the pipelines' mailboxes.
    outboxes: Vec<(String, Outbox)>,
    reloads: Option<Reloads>,
}

/// What a reload needs: the file, the text the running settings came
/// from, the pipelines' mailboxes.
struct Reloads {
    path: PathBuf,
    /// The configuration the running settings came from.
    running: Config,
    outboxes: Vec<(String, Outbox)>,
}

impl Node {
    fn start(config: &Config) -> Result<Node, RunError> {
        let ports = Ports::open(config)?;
        let built = factory::build(config, &ports)?;
        let exporter = exporter(config, &ports, built.reports)?;
        let sources = crate::telemetry::Sources {
            pipelines: built.counters.clone(),
            flow_capacity: config.pipelines.iter().map(|p| p.stage.flow_capacity()).collect(),
            top_flows: built.top_flows.clone(),
            exporter: exporter.as_ref().map(|e| Arc::clone(&e.shared)),
        };
        crate::telemetry::register(sources)?;
        let mut node = Node {
            exporter,
            ports,
            counters: built.counters,
            quit: Arc::new(AtomicBool::new(false)),
            launched: Vec::new(),
            helpers: Vec::new(),
            started: Instant::now(),
            outboxes: built.outboxes,
            reloads: None,
        };
        for capture in built.captures {
            let file = capture.file().display().to_string();
            let writer = capture
                .writer(Arc::clone(&node.quit))
                .map_err(|source| RunError::Capture { file, source })?;
            node.helpers.push(std::thread::spawn(writer));
        }
        if let Some(addr) = config.metrics {
            node.serve_metrics(addr, config)?;
        }
        #[cfg(feature = "lab")]
        for (file, control) in built.impair_controls {
            let quit = Arc::clone(&node.quit);
            node.helpers.push(std::thread::spawn(move || {
                crate::pipeline::impair::watch_control_file(file, control, quit)
            }));
        }
        let idle_sleep = (config.idle_sleep_us > 0).then(|| Duration::from_micros(config.idle_sleep_us));
        for (lcore_id, pipelines) in built.by_lcore {
            if let Err(error) = node.launch(LcoreId(lcore_id), pipelines, idle_sleep) {
                node.join_workers();
                return Err(error);
            }
        }
        Ok(node)
    }

    /// The metrics page at `addr`, on a thread of its own.
    fn serve_metrics(&mut self, addr: std::net::SocketAddr, config: &Config) -> Result<(), RunError> {
        let sources = crate::metrics::Sources {
            pipelines: (self.counters.iter().zip(&config.pipelines))
                .map(|((name, counters), p)| (name.clone(), p.stage.role(), Arc::clone(counters)))
                .collect(),
            ports: self.ports.named_ids(),
            pools: self.ports.pools(),
            export: self.exporter.as_ref().map(|e| Arc::clone(&e.shared)),
            start_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            node: (config.node_id, config.node_name.clone()),
        };
        let serve = crate::metrics::endpoint(addr, sources, Arc::clone(&self.quit))
            .map_err(|source| RunError::Metrics { addr, source })?;
        self.helpers.push(std::thread::spawn(serve));
        Ok(())
    }

    fn launch(
        &mut self,
        id: LcoreId,
        pipelines: Vec<Pipeline>,
        idle_sleep: Option<Duration>,
    ) -> Result<(), RunError> {
        let quit = Arc::clone(&self.quit);
        let clock = Clock::new();
        lcore::launch(id, move || run_worker(pipelines, quit, clock, idle_sleep))?;
        self.launched.push(id);
        Ok(())
    }

    /// The main lcore's loop: export reports, print counters every
    /// interval, until a signal, `--duration` or `--exit-on-idle`.
    fn serve(&mut self, config: &Config, options: &RunOptions) {
        let interval = Duration::from_millis(config.stats_interval_ms);
        let mut printer = IntervalPrinter::new(self.counters.len(), self.started);
        let mut idle =
            IdleWatch { last_rx: 0, since: self.started, empty_at_rx: Vec::new(), empty: Vec::new() };
        loop {
            let exported = self.exporter.as_mut().map_or(0, |e| e.drain(4096));
            if exported == 0 {
                std::thread::sleep(Duration::from_micros(500));
            }
            if int_os::signals::take_reload_request() {
                if let Some(reloads) = self.reloads.as_mut() {
                    reloads.reload();
                }
            }
            let now = Instant::now();
            idle.observe(&self.counters, now);
            if now.duration_since(printer.last) >= interval {
                printer.print(&self.counters, now);
            }
            if let Some(reason) = self.stop_reason(options, now, &idle) {
                log::info!("{reason}: stopping");
                break;
            }
        }
    }

    fn stop_reason(&self, options: &RunOptions, now: Instant, idle: &IdleWatch) -> Option<&'static str> {
        if int_os::signals::stop_requested() {
            return Some("signal received");
        }
        if options.duration.is_some_and(|d| now.duration_since(self.started).as_secs_f64() >= d) {
            return Some("duration reached");
        }
        let idle_limit = options.exit_on_idle_ms.map(Duration::from_millis);
        idle_limit.is_some_and(|limit| idle.idle_for(now) >= limit).then_some("input idle")
    }

    /// Stops the workers, sends what reports are left, closes the ports.
    fn stop(mut self, config: &Config) -> Summary {
        self.join_workers();
        if let Some(exporter) = self.exporter.as_mut() {
            // The workers have stopped: everything left goes out now, paced.
            while exporter.pending() {
                if exporter.drain(usize::MAX) == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let ports = self.ports.stats();
        let export = self.exporter.take().map(|exporter| exporter.stats);
        let (drained, in_use, pool_size) = self.ports.close(&config.ports);
        Summary { elapsed, pipelines: self.counters, ports, export, pool_size, in_use, drained }
    }

    fn join_workers(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
        for id in self.launched.drain(..) {
            let ret = lcore::wait(id);
            if ret != 0 {
                log::warn!("lcore {} returned {ret}", id.0);
            }
        }
        for helper in self.helpers.drain(..) {
            let _ = helper.join();
        }
    }
}

/// The exporter, when a sink has reports to send.
fn exporter(
    config: &Config,
    ports: &Ports,
    reports: Vec<crate::pipeline::export::ReportReceiver>,
) -> Result<Option<Exporter>, RunError> {
    let Some(export) = config.export.as_ref().filter(|_| !reports.is_empty()) else { return Ok(None) };
    let port = match &export.path {
        crate::config::ExportPath::Socket => None,
        crate::config::ExportPath::Port(path) => Some((ports.id(path.port)?, ports.pool(path.port)?)),
    };
    let exporter = Exporter::new(export, reports, port)
        .map_err(|source| RunError::Export { collector: export.collector.to_string(), source })?;
    log::info!("export: reports to {} ({:?})", exporter.collector(), export.profile.timestamp);
    Ok(Some(exporter))
}

/// When packets last arrived, for `--exit-on-idle`: the input is idle
/// only once every worker has itself polled and found nothing since, so a
/// worker that the machine did not schedule is not taken for idle input.
struct IdleWatch {
    last_rx: u64,
    since: Instant,
    /// Each pipeline's `empty_polls` when packets last arrived, and now.
    empty_at_rx: Vec<u64>,
    empty: Vec<u64>,
}

impl IdleWatch {
    fn observe(&mut self, counters: &[(String, Arc<SharedCounters>)], now: Instant) {
        let rx = counters.iter().map(|(_, c)| c.get(Counter::rx_packets)).sum();
        self.empty.clear();
        self.empty.extend(counters.iter().map(|(_, c)| c.get(Counter::empty_polls)));
        if rx != self.last_rx || self.empty_at_rx.len() != self.empty.len() {
            self.last_rx = rx;
            self.since = now;
            self.empty_at_rx.clone_from(&self.empty);
        }
    }

    /// How long the input has been idle: since packets last arrived, once
    /// every pipeline has polled empty since then (else zero).
    fn idle_for(&self, now: Instant) -> Duration {
        let every_worker_saw_it = self.empty.iter().zip(&self.empty_at_rx).all(|(now, then)| now > then);
        if every_worker_saw_it {
            now.duration_since(self.since)
        } else {
            Duration::ZERO
        }
    }
}

/// Each pipeline's rate and counters, every interval.
struct IntervalPrinter {
    last_rx: Vec<u64>,
    last: Instant,
}

impl IntervalPrinter {
    fn new(pipelines: usize, started: Instant) -> Self {
        IntervalPrinter { last_rx: vec![0; pipelines], last: started }
    }

    fn print(&mut self, counters: &[(String, Arc<SharedCounters>)], now: Instant) {
        let seconds = now.duration_since(self.last).as_secs_f64().max(1e-9);
        self.last = now;
        for ((name, counters), previous) in counters.iter().zip(self.last_rx.iter_mut()) {
            let rx = counters.get(Counter::rx_packets);
            let rate = rx.saturating_sub(*previous) as f64 / seconds / 1e6;
            *previous = rx;
            let values: Vec<String> = counters
                .snapshot()
                .iter()
                .filter(|(k, _)| *k != "rx_packets")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            log::info!("{name}: {rate:.3} Mpps rx_packets={rx} {}", values.join(" "));
        }
    }
}

impl Reloads {
    /// Reads the config file again and hands each pipeline its new
    /// reloadable settings; a config that is invalid, or that changes
    /// what needs a restart, is refused whole and the running settings
    /// stay.
    fn reload(&mut self) {
        let path = self.path.display().to_string();
        log::info!("reload: reading {path} (SIGHUP)");
        let text = match crate::config::read_text(&self.path) {
            Ok(text) => text,
            Err(error) => return log::error!("reload refused: {path}: {error}; the running settings stay"),
        };
        let config = match crate::config::parse(&text) {
            Ok(mut config) => {
                crate::config::paths::resolve(&mut config, crate::config::paths::base_dir(&self.path));
                config
            }
            Err(error) => {
                return log::error!("reload refused: {path} is invalid; the running settings stay\n{error}");
            }
        };
        let restart = crate::config::reload::restart_needed(&self.running, &config);
        if !restart.is_empty() {
            return log::error!(
                "reload refused: {} changed, which needs a restart (a reload changes only {}); the running settings stay",
                restart.join(", "),
                crate::config::reload::RELOADABLE.join(", ")
            );
        }
        let mut posted = 0;
        for (name, update) in crate::pipeline::reload::updates(&config) {
            let Some((_, outbox)) = self.outboxes.iter_mut().find(|(n, _)| *n == name) else { continue };
            if outbox.post(update) {
                posted += 1;
            } else {
                log::warn!("reload: pipeline {name} has not taken the earlier settings; this one is dropped");
            }
        }
        self.running = config;
        log::info!("reload: new settings posted to {posted} pipeline(s)");
    }
}
