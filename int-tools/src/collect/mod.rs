//! `int-tools collect`: the collector of every report int-node sends (and
//! Host-INT's): Host-INT's latency and Drop-Summary reports, Telemetry
//! Report 0.5, Telemetry Report 2.0 (INT-MD stacks, INT-MX and INT-XD
//! postcards, IOAM traces), received on UDP sockets sharing a port
//! (`receive`) or read back from a NATS JetStream stream (`--from-nats`,
//! `stream`). Each reader books what it takes: a ledger per flow (one-way
//! latency, packets lost by sequence gaps, report gaps per sender), a
//! per-hop view (nodes, links, paths and their changes) and postcards
//! joined into packets (`join`). Views read the books: a record per
//! report (text or JSON), a summary at an interval and at exit, a plot,
//! Prometheus metrics, a web page. Outputs take every observation: InfluxDB,
//! IPFIX, the stream (`--nats`). Every flag's mistake is a
//! [`CollectError`] naming the flag.

mod args;
pub mod books;
mod counts;
mod error;
pub mod exporters;
pub mod names;
pub mod nats;
pub mod receivers;
mod shared;
pub mod state;
pub mod stderr;
pub mod views;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use args::file::{flags as file_flags, FileError};
pub use args::CollectArgs;
pub use error::{ChoiceError, CollectError, NodeIdError};
use int_core::report::SinkIdWord;

use books::export::Exporter;
use books::{join, ledger, timeline, Books, Sizes};
use counts::Counted;
use exporters::stdout::{Print, Stdout};
use exporters::{influx, ipfix};
use names::Naming;
use receivers::{udp, How};
use shared::Shared;
use views::{health, metrics, plot, summary, web as view};

/// Files the run writes at its end, tried now: a path that cannot be
/// written fails at start, not after the whole run.
fn check_outputs(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(path) = &args.plot {
        int_os::files::writable(path)
            .map_err(|source| CollectError::PlotPath { path: path.clone(), source })?;
    }
    Ok(())
}

/// The messages' level, and the names every part that shows names is
/// handed (none without `--names`).
fn settle(args: &CollectArgs) -> Result<Naming, CollectError> {
    stderr::init(args.log);
    match &args.names {
        Some(path) => Ok(Naming::new(names::Names::load(path)?)),
        None => Ok(Naming::default()),
    }
}

/// `--check`: the settings parsed (they are, to get here) and the files
/// they name read, as a start would; nothing opened, bound or sent.
pub fn check(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(path) = &args.names {
        names::Names::load(path)?;
    }
    how(args)?;
    view_files(args)?;
    check_outputs_settings(args)?;
    match &args.config {
        Some(path) => println!("{}: ok", path.display()),
        None => println!("collect: settings ok"),
    }
    Ok(())
}

/// The outputs' and the stream's settings, built as their start builds
/// them (server names resolved, the InfluxDB password read).
fn check_outputs_settings(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(url) = &args.influx {
        influx_settings(url, args)?;
    }
    if let Some(url) = &args.nats {
        stream_settings("--nats", url, args)?;
    }
    if let Some(url) = &args.from_nats {
        stream_settings("--from-nats", url, args)?;
    }
    if let Some(target) = &args.ipfix {
        ipfix_settings(target, args)?;
    }
    Ok(())
}

pub fn run(args: &CollectArgs) -> Result<(), CollectError> {
    let names = settle(args)?;
    let how = Arc::new(how(args)?);
    check_outputs(args)?;
    let view_files = view_files(args)?;
    // Reports off UDP sockets, or records off a stream.
    let (receivers, from_stream) = match &args.from_nats {
        Some(url) => (Vec::new(), Some(stream_settings("--from-nats", url, args)?)),
        None => (udp::open(&args.listen, args.sockets, args.rcvbuf, args.share_port)?, None),
    };
    let (store, restored) = open_state(args)?;
    let view = args.http.map(|addr| view_settings(addr, args, view_files.clone()));
    let shown = view.as_ref().map(|settings| view::board(settings, restored.board, names.clone()));
    int_os::signals::catch_stop_signals();
    int_os::signals::catch_reload_signal();
    let started = Instant::now();
    let (running, feeder) = start_exporters(args, &names)?;
    let consumer = from_stream.as_ref().map(|_| Arc::new(receivers::nats::Counts::default()));
    let view_counts = args.http.map(|_| Arc::new(view::Counts::default()));
    let state_counts = store.as_ref().map(|_| Arc::new(state::Counts::default()));
    let mut counted: Vec<Arc<dyn Counted>> = running.iter().map(|r| Arc::clone(&r.counted)).collect();
    counted.extend(consumer.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    counted.extend(view_counts.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    counted.extend(state_counts.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    let readers = receivers.len().max(usize::from(from_stream.is_some()));
    let books = books(args, readers, &running, feeder.as_ref(), restored.books, &names);
    // The publisher ends when the last receiver's feed does.
    drop(feeder);
    let shared =
        Arc::new(Shared { books, reports: AtomicU64::new(0), quit: AtomicBool::new(false), counted, names });
    let writer = match (store, state_counts) {
        (Some(store), Some(counts)) => Some(start_state(store, shown.clone(), counts, &shared)?),
        _ => None,
    };
    let attached = consumer
        .clone()
        .map(|counts| Box::new(move || counts.attached.load(Ordering::Relaxed)) as health::Ready);
    let health = Arc::new(health::Health::new(attached));
    let views = start_views(args, &shared, view_counts, &health, view.zip(shown))?;
    let readers = spawn_readers(args, receivers, from_stream.zip(consumer), &shared, &how);
    wait_for_the_end(args, &shared, started, &view_files);
    shared.quit.store(true, Ordering::Relaxed);
    let failure = readers.join();
    close_joins(&shared);
    stop_exporters(&shared, running);
    for thread in views {
        let _ = thread.join();
    }
    finish(args, &shared, writer)?;
    failure.map_or(Ok(()), Err)
}

/// The readers' threads: the aggregator's on the stream, or a receiver's
/// per socket.
fn spawn_readers(
    args: &CollectArgs,
    receivers: Vec<udp::Receiver>,
    stream: Option<(nats::Settings, Arc<receivers::nats::Counts>)>,
    shared: &Arc<Shared>,
    how: &Arc<How>,
) -> Readers {
    let Some((settings, counts)) = stream else {
        return Readers::Receivers(udp::spawn(receivers, shared, how));
    };
    log::info!(
        "collect: aggregating stream {} on {} as consumer {}",
        settings.stream,
        settings.servers.first(),
        args.nats_consumer
    );
    let consumer = args.nats_consumer.clone();
    Readers::Aggregator(receivers::nats::spawn(settings, consumer, shared, how, counts))
}

/// After the readers stopped: the last state (what they booked up to their
/// stop), the summary and the plot.
fn finish(
    args: &CollectArgs,
    shared: &Shared,
    writer: Option<std::thread::JoinHandle<state::Writer>>,
) -> Result<(), CollectError> {
    let snapshot = shared.take_snapshot();
    if let Some(mut writer) = writer.and_then(|thread| thread.join().ok()) {
        writer.write(&snapshot);
    }
    summary::print(&snapshot, &shared.counted, args.json, summary::Extent::Whole, &shared.names);
    if let Some(path) = &args.plot {
        plot::draw(&snapshot, path, &shared.names)
            .map_err(|cause| CollectError::Plot { path: path.clone(), cause })?;
        log::info!("collect: plot written to {}", path.display());
    }
    Ok(())
}

/// Every reader's postcards still waiting for their join, written out:
/// the readers have stopped.
fn close_joins(shared: &Shared) {
    for books in &shared.books {
        if let Ok(mut books) = books.lock() {
            books.close_joins();
        }
    }
}

/// The views on their own threads: Prometheus metrics (`--metrics`) and
/// the web page (`--http`), each bound now (a taken port fails at start).
fn start_views(
    args: &CollectArgs,
    shared: &Arc<Shared>,
    view_counts: Option<Arc<view::Counts>>,
    health: &Arc<health::Health>,
    view: Option<(view::Settings, view::Shown)>,
) -> Result<Vec<std::thread::JoinHandle<()>>, CollectError> {
    let mut threads = Vec::new();
    if let Some(addr) = args.metrics {
        let shown = metrics::Shown {
            flows: args.metrics_flows,
            nodes: args.metrics_nodes,
            links: args.metrics_links,
        };
        let metrics =
            metrics::start(addr, Arc::clone(shared), shown, Arc::clone(health), shared.names.clone());
        threads.push(metrics.map_err(|source| CollectError::Metrics { addr, source })?);
    }
    if let (Some((settings, shown)), Some(counts)) = (view, view_counts) {
        threads.extend(view::start(settings, Arc::clone(shared), counts, Arc::clone(health), shown)?);
    }
    Ok(threads)
}

/// The readers' threads: the receivers', or the aggregator's.
enum Readers {
    Receivers(Vec<std::thread::JoinHandle<Result<(), udp::ReceiveError>>>),
    Aggregator(std::thread::JoinHandle<Result<(), nats::StreamError>>),
}

impl Readers {
    /// Waits for every reader; the last one's failure, if any.
    fn join(self) -> Option<CollectError> {
        match self {
            Readers::Receivers(threads) => threads
                .into_iter()
                .filter_map(|thread| thread.join().ok()?.err())
                .last()
                .map(CollectError::from),
            Readers::Aggregator(thread) => thread.join().ok()?.err().map(CollectError::from),
        }
    }
}

/// Each reader's books (a receiver's, or the aggregator's), with the
/// exporters (standard output first) and, in the stream's batch format,
/// its datagrams' handle.
fn books(
    args: &CollectArgs,
    readers: usize,
    running: &[exporters::Running],
    feeder: Option<&exporters::nats::Feeder>,
    kept: Option<state::Kept>,
    names: &Naming,
) -> Vec<Arc<Mutex<Books>>> {
    let sizes = Sizes {
        flows: args.max_flows,
        detailed_flows: args.detailed_flows,
        nodes: args.max_nodes,
        links: args.max_links,
    };
    let base = Arc::new(timeline::TimeBase::resumed(kept.as_ref().and_then(|kept| kept.time_base)));
    let books: Vec<_> = (0..readers)
        .map(|_| {
            let window_ms = u64::try_from(args.join_window_ms.as_millis()).unwrap_or(u64::MAX);
            let join = join::Join::new(window_ms, args.domain_nodes.clone(), args.join_confirm);
            let stdout: Arc<dyn Exporter> = Arc::new(Stdout { print: print(args), names: names.clone() });
            let others =
                running.iter().map(|r| r.exporter.for_reader().unwrap_or_else(|| Arc::clone(&r.exporter)));
            let exporters = std::iter::once(stdout).chain(others).collect();
            let mut books = Books::new(sizes, join, exporters, Arc::clone(&base), names.clone());
            books.datagrams =
                feeder.map(|feeder| Box::new(feeder.feed()) as Box<dyn books::export::Datagrams>);
            books
        })
        .collect();
    let books = match kept {
        Some(kept) => resume(books, kept, sizes, &base),
        None => books,
    };
    books.into_iter().map(|books| Arc::new(Mutex::new(books))).collect()
}

/// The first reader's books take the kept ones (under this run's
/// limits); every reader takes the kept paths, so that a flow's next path
/// is told against its last whichever socket its reports reach.
fn resume(
    mut books: Vec<Books>,
    kept: state::Kept,
    sizes: Sizes,
    base: &Arc<timeline::TimeBase>,
) -> Vec<Books> {
    let mut hops = kept.hops;
    hops.bounded_by(books::hops::Limits { nodes: sizes.nodes, links: sizes.links, flows: sizes.flows });
    for other in books.iter_mut().skip(1) {
        other.hops.follow_paths_of(&hops);
    }
    if let Some(first) = books.first_mut() {
        let mut ledger = kept.ledger;
        ledger
            .resume(ledger::Limits { flows: sizes.flows, detailed: sizes.detailed_flows }, Arc::clone(base));
        (first.ledger, first.hops, first.senders, first.totals) = (ledger, hops, kept.senders, kept.totals);
        first.join.counts = kept.joins;
    }
    books
}

type StateStore = (state::Settings, state::Store);

/// `--state`: the state opened and read back (none without the flag).
fn open_state(args: &CollectArgs) -> Result<(Option<StateStore>, state::Restored), CollectError> {
    let Some(settings) = state_settings(args) else { return Ok((None, state::Restored::default())) };
    let (store, restored) = state::open(&settings)?;
    let file = store.file().display();
    match &restored.books {
        Some(kept) => log::info!(
            "collect: state read back from {file}: {} report(s), {} flow(s), {} node(s)",
            kept.totals.reports,
            kept.ledger.flows.len(),
            kept.hops.nodes.len()
        ),
        None => log::info!("collect: state kept in {file} (none yet)"),
    }
    Ok((Some((settings, store)), restored))
}

fn state_settings(args: &CollectArgs) -> Option<state::Settings> {
    Some(state::Settings {
        dir: args.state.clone()?,
        interval: args.state_interval_s,
        max_bytes: args.state_max_bytes,
        max_age: args.state_max_age_s,
    })
}

/// The state's writer on its thread.
fn start_state(
    (settings, store): StateStore,
    board: Option<view::Shown>,
    counts: Arc<state::Counts>,
    shared: &Arc<Shared>,
) -> Result<std::thread::JoinHandle<state::Writer>, CollectError> {
    let writer = state::Writer { store, board, settings, counts };
    writer.spawn(Arc::clone(shared)).map_err(|source| CollectError::StateThread { source })
}

/// The web view's credentials and TLS files, read at start: a file that
/// does not serve stops collect before it receives anything.
fn view_files(args: &CollectArgs) -> Result<view::Files, CollectError> {
    let access = view::auth::Access::open(args.http_token_file.as_deref(), args.http_users_file.as_deref())?;
    let tls = view::tls::Tls::open(args.http_tls_cert.as_deref(), args.http_tls_key.as_deref())?;
    Ok(view::Files { access: access.map(Arc::new), tls: tls.map(Arc::new) })
}

fn view_settings(addr: SocketAddr, args: &CollectArgs, files: view::Files) -> view::Settings {
    let limits = view::Limits {
        connections: usize::try_from(args.http_connections).unwrap_or(usize::MAX),
        idle: args.http_idle_ms,
    };
    view::Settings {
        addr,
        sample: args.view_sample_ms,
        stale_after: args.view_stale_s,
        hosts: args.http_hosts.clone(),
        limits,
        files,
    }
}

fn how(args: &CollectArgs) -> Result<How, CollectError> {
    let int21_domain = int_core::int21::Domain {
        marking: match args.int21_port {
            Some(port) => int_core::int21::Marking::UdpPort(port),
            None => int_core::int21::Marking::Dscp(args.int21_dscp),
        },
        tcp_placement: int_core::encap::TcpPlacement::BeforeOptions,
        source_only: int_core::int21::SourceOnly::sequence(args.int21_domain_id),
    };
    let sink_id = match args.sink_id.as_str() {
        "present" => SinkIdWord::Present,
        "absent" => SinkIdWord::Absent,
        "detect" => SinkIdWord::Detect,
        other => return Err(CollectError::SinkId(other.to_string())),
    };
    Ok(How { sink_id, int21_domain, ioam_timestamps: args.ioam_timestamps })
}

/// How standard output says each report: `--quiet`, `--json` or text.
fn print(args: &CollectArgs) -> Print {
    match (args.quiet, args.json) {
        (true, _) => Print::Quiet,
        (false, true) => Print::Json,
        (false, false) => Print::Text,
    }
}

/// Every output the arguments ask for, started; the stream's batch
/// format feeds the receivers' datagrams through the feeder.
fn start_exporters(
    args: &CollectArgs,
    names: &Naming,
) -> Result<(Vec<exporters::Running>, Option<exporters::nats::Feeder>), CollectError> {
    let mut running = Vec::new();
    let mut feeder = None;
    if let Some(url) = &args.influx {
        running.push(start_influx(url, args, names)?);
    }
    if let Some(url) = &args.nats {
        let settings = stream_settings("--nats", url, args)?;
        log::info!("collect: publishing to NATS JetStream at {url}, stream {}", settings.stream);
        let (publisher, feeds) = exporters::nats::start(settings)?;
        running.push(publisher);
        feeder = feeds;
    }
    if let Some(target) = &args.ipfix {
        running.push(start_ipfix(target, args)?);
    }
    Ok((running, feeder))
}

/// The outputs end, after writing what is queued, once the receivers'
/// handles are gone.
fn stop_exporters(shared: &Shared, running: Vec<exporters::Running>) {
    for books in &shared.books {
        if let Ok(mut books) = books.lock() {
            books.exporters.clear();
            if let Some(mut datagrams) = books.datagrams.take() {
                datagrams.hand_over();
            }
        }
    }
    for exporters::Running { exporter, thread, .. } in running {
        drop(exporter);
        let _ = thread.join();
    }
}

/// The stream of `--nats` or `--from-nats`.
fn stream_settings(
    flag: &'static str,
    url: &str,
    args: &CollectArgs,
) -> Result<nats::Settings, CollectError> {
    let mut servers = nats::Servers::parse(url).map_err(|source| CollectError::Servers { flag, source })?;
    servers.credentials.clone_from(&args.nats_credentials);
    servers.ca.clone_from(&args.nats_ca);
    let word = |text: &str| {
        !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !word(&args.nats_stream) || !word(&args.nats_prefix) || !word(&args.nats_consumer) {
        return Err(CollectError::StreamNames);
    }
    Ok(nats::Settings {
        servers,
        stream: args.nats_stream.clone(),
        prefix: args.nats_prefix.clone(),
        max_age: args.nats_max_age_s,
        max_bytes: args.nats_max_bytes,
        replicas: usize::from(args.nats_replicas),
        buffer: args.nats_buffer,
        format: args.nats_format,
    })
}

fn ipfix_settings(target: &str, args: &CollectArgs) -> Result<ipfix::Settings, CollectError> {
    let (server, transport) = ipfix::Settings::parse_target(target).map_err(CollectError::IpfixTarget)?;
    Ok(ipfix::Settings {
        server,
        transport,
        interval: args.ipfix_interval,
        domain: args.ipfix_domain,
        pen: args.ipfix_pen,
        limit: args.max_flows,
    })
}

fn start_ipfix(target: &str, args: &CollectArgs) -> Result<exporters::Running, CollectError> {
    let settings = ipfix_settings(target, args)?;
    log::info!("collect: exporting IPFIX to {target} every {} s", args.ipfix_interval.as_secs_f64());
    Ok(ipfix::start(settings))
}

fn influx_settings(url: &str, args: &CollectArgs) -> Result<influx::Settings, CollectError> {
    let (server, host) = influx::Settings::parse_url(url)?;
    if args.influx_db.is_empty() || !args.influx_db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(CollectError::InfluxDb(args.influx_db.clone()));
    }
    Ok(influx::Settings {
        server,
        host,
        authorization: influx_authorization(args)?,
        database: args.influx_db.clone(),
        batch: args.influx_batch.max(1),
        flush: Duration::from_millis(500),
        buffer: args.influx_buffer,
    })
}

fn start_influx(url: &str, args: &CollectArgs, names: &Naming) -> Result<exporters::Running, CollectError> {
    let settings = influx_settings(url, args)?;
    log::info!("collect: writing to InfluxDB at {url}, database {}", settings.database);
    Ok(influx::start(settings, names.clone()))
}

/// The Basic authorization of --influx-user, with its password from the
/// file or the environment.
fn influx_authorization(args: &CollectArgs) -> Result<Option<String>, CollectError> {
    let Some(user) = &args.influx_user else {
        return match args.influx_password_file {
            Some(_) => Err(CollectError::PasswordWithoutUser),
            None => Ok(None),
        };
    };
    let password = match &args.influx_password_file {
        Some(file) => std::fs::read_to_string(file)
            .map_err(|source| CollectError::PasswordFile { path: file.clone(), source })?
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        None => std::env::var("INFLUX_PASSWORD").map_err(|_| CollectError::NoPassword)?,
    };
    Ok(Some(int_os::http::basic_auth(user, &password)))
}

/// Prints the summary at the interval until a stop signal, the count or
/// the duration.
fn wait_for_the_end(args: &CollectArgs, shared: &Shared, started: Instant, view_files: &view::Files) {
    // The flags' bounds (args::duration) keep these sums from overflowing.
    let (interval, plot_every) = (args.interval, args.plot_interval);
    let mut next_summary = started + interval;
    let mut next_plot = started + plot_every;
    while !int_os::signals::stop_requested() {
        if args.count.is_some_and(|n| shared.reports.load(Ordering::Relaxed) >= n)
            || args.duration.is_some_and(|d| started.elapsed() >= d)
            || shared.quit.load(Ordering::Relaxed)
        {
            return;
        }
        if int_os::signals::take_reload_request() {
            reload(args, view_files, &shared.names);
        }
        if !interval.is_zero() && Instant::now() >= next_summary {
            let extent = summary::Extent::Worst(summary::PERIODIC_WORST);
            summary::print(&shared.snapshot(), &shared.counted, args.json, extent, &shared.names);
            next_summary = Instant::now() + interval;
        }
        if let Some(path) =
            args.plot.as_ref().filter(|_| !plot_every.is_zero() && Instant::now() >= next_plot)
        {
            if let Err(error) = plot::draw(&shared.snapshot(), path, &shared.names) {
                log::warn!("collect: --plot {}: {error}", path.display());
            }
            next_plot = Instant::now() + plot_every;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGHUP: reads the files the flags name again (the names of `--names`,
/// the web view's credentials and TLS files); collect goes on whatever
/// they hold, and says what it took or, keeping what it had, why not.
fn reload(args: &CollectArgs, view_files: &view::Files, names: &Naming) {
    view_files.reload();
    let Some(path) = &args.names else {
        if view_files.access.is_none() && view_files.tls.is_none() {
            log::warn!("collect: SIGHUP: nothing to reload (no --names, no web view files)");
        }
        return;
    };
    match names.reload(path) {
        Ok(count) => {
            log::info!("collect: SIGHUP: reloaded --names {}: {count} node(s) named", path.display())
        }
        Err(error) => {
            log::warn!("collect: SIGHUP: {error}; keeping the names before ({} node(s))", names.count())
        }
    }
}
