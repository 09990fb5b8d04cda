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
mod check;
mod counts;
mod error;
pub mod exporters;
mod exporting;
pub mod fleet;
pub mod names;
pub mod nats;
pub mod receivers;
mod reload;
mod shared;
pub mod state;
pub mod stderr;
mod values;
pub mod views;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use args::file::{flags as file_flags, FileError};
pub use args::CollectArgs;
pub use check::check;
pub use error::{ChoiceError, CollectError, NodeIdError};
pub use reload::Source;

use books::{ledger, timeline, Books, Sizes};
use counts::Counted;
use exporting::Exporting;
use names::Naming;
use receivers::{udp, How};
use shared::Shared;
use views::{health, metrics, plot, summary, web as view};

/// The messages' level, and the names every part that shows names is
/// handed (none without `--names`).
fn settle(args: &CollectArgs) -> Result<Naming, CollectError> {
    stderr::init(args.log);
    match &args.names {
        Some(path) => Ok(Naming::new(names::Names::load(path)?)),
        None => Ok(Naming::default()),
    }
}

pub fn run(args: &CollectArgs, source: Source) -> Result<(), CollectError> {
    // Caught before any socket is opened: once "listening on" is said, a
    // stop signal ends collect with its summary, never by the default action.
    int_os::signals::catch_stop_signals();
    int_os::signals::catch_reload_signal();
    let names = settle(args)?;
    let how = Arc::new(args.receivers.how()?);
    args.plot.check()?;
    let view_files = args.view.files()?;
    // Reports off UDP sockets, or records off a stream.
    let (receivers, from_stream) = match args.nats.consume()? {
        Some(settings) => (Vec::new(), Some(settings)),
        None => (args.receivers.open()?, None),
    };
    let ipfix_in = if from_stream.is_none() { open_ipfix(args)? } else { None };
    let (store, restored) = open_state(args)?;
    let view = args.view.settings(view_files.clone());
    let shown = view.as_ref().map(|settings| view::board(settings, restored.board, names.clone()));
    let started = Instant::now();
    let mut exporting = Exporting::start(args, &names)?;
    let (gathered, consumer) = stream_counts(args, from_stream.as_ref());
    let leasing = from_stream.as_ref().and_then(|_| leasing(args));
    let published = leasing.as_ref().filter(|_| !args.nats.nats_view_s.is_zero());
    let published = published.map(|_| Arc::new(fleet::publish::Counts::default()));
    let view_counts = args.view.http.map(|_| Arc::new(view::Counts::default()));
    let state_counts = store.as_ref().map(|_| Arc::new(state::Counts::default()));
    let others = &mut exporting.others;
    others.extend(consumer.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    others.extend(leasing.iter().map(|l| Arc::clone(&l.counts) as Arc<dyn Counted>));
    others.extend(checkpoints(leasing.as_ref()).map(|c| c as Arc<dyn Counted>));
    others.extend(gathered.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    others.extend(published.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    others.extend(view_counts.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    others.extend(state_counts.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    others.extend(ipfix_in.iter().map(|(_, c)| Arc::clone(c) as Arc<dyn Counted>));
    let counted = Mutex::new(exporting.counted());
    let readers = book_sets(leasing.as_ref(), receivers.len(), from_stream.is_some());
    let books = books(args, readers, &exporting, restored.books, &names);
    let shared =
        Arc::new(Shared { books, reports: AtomicU64::new(0), quit: AtomicBool::new(false), counted, names });
    let writer = match (store, state_counts) {
        (Some(store), Some(counts)) => Some(start_state(store, shown.clone(), counts, &shared)?),
        _ => None,
    };
    let attached = match (consumer.clone(), gathered.clone()) {
        (Some(counts), _) => Some(Box::new(move || counts.attached.load(Ordering::Relaxed)) as health::Ready),
        (None, counts) => {
            counts.map(|c| Box::new(move || c.attached.load(Ordering::Relaxed)) as health::Ready)
        }
    };
    let health = Arc::new(health::Health::new(attached));
    let views = start_views(args, &shared, view_counts, &health, view.zip(shown))?;
    let publisher = start_publisher(args, (from_stream.as_ref(), leasing.as_ref()), published, &shared)?;
    let mut readers = match (gathered, from_stream.clone()) {
        (Some(counts), Some(settings)) => {
            Readers::Aggregator(fleet::gather::spawn(settings, &shared, counts))
        }
        _ => {
            let stream = from_stream.zip(consumer).map(|(settings, counts)| (settings, counts, leasing));
            spawn_readers(args, receivers, stream, &shared, &how)
        }
    };
    if let (Readers::Receivers(threads), Some((socket, counts))) = (&mut readers, ipfix_in) {
        threads.push(receivers::ipfix::spawn(socket, &shared, args.receivers.ifa_elements(), counts));
    }
    let mut live = reload::Live { args: args.clone(), source, view_files };
    wait_for_the_end(args, &mut live, &mut exporting, &shared, started);
    shared.quit.store(true, Ordering::Relaxed);
    let failure = readers.join();
    close_joins(&shared);
    if let Some(publisher) = publisher {
        publisher.finish();
    }
    exporting.stop(&shared);
    for thread in views {
        let _ = thread.join();
    }
    finish(&live.args, &shared, writer)?;
    failure.map_or(Ok(()), Err)
}

/// Off a stream, the counts of what reads it: the fleet view's gathering,
/// or an aggregator's consumer.
fn stream_counts(
    args: &CollectArgs,
    from_stream: Option<&nats::Settings>,
) -> (Option<Arc<fleet::gather::Counts>>, Option<Arc<receivers::nats::Counts>>) {
    match from_stream {
        Some(_) if args.nats.fleet_view => (Some(Arc::default()), None),
        Some(_) => (None, Some(Arc::default())),
        None => (None, None),
    }
}

/// `--listen-ipfix`'s socket and its counts.
fn open_ipfix(
    args: &CollectArgs,
) -> Result<Option<(std::net::UdpSocket, Arc<receivers::ipfix::Counts>)>, CollectError> {
    let Some(listen) = &args.receivers.listen_ipfix else { return Ok(None) };
    let socket = receivers::ipfix::open(listen, args.receivers.rcvbuf)?;
    Ok(Some((socket, Arc::new(receivers::ipfix::Counts::default()))))
}

/// An aggregator's publisher of its books' state for the fleet view.
fn start_publisher(
    args: &CollectArgs,
    (from_stream, leasing): (Option<&nats::Settings>, Option<&receivers::partitions::Leasing>),
    counts: Option<Arc<fleet::publish::Counts>>,
    shared: &Arc<Shared>,
) -> Result<Option<fleet::publish::Publisher>, CollectError> {
    let (Some(settings), Some(counts)) = (from_stream, counts) else { return Ok(None) };
    let held = checkpoints(leasing);
    let publisher = fleet::publish::start(
        settings.servers.clone(),
        &settings.prefix,
        args.nats.nats_view_s,
        shared,
        (counts, held),
    )?;
    Ok(Some(publisher))
}

/// The readers' threads: the aggregator's on the stream, or a receiver's
/// per socket.
fn spawn_readers(
    args: &CollectArgs,
    receivers: Vec<udp::Receiver>,
    stream: Option<(nats::Settings, Arc<receivers::nats::Counts>, Option<receivers::partitions::Leasing>)>,
    shared: &Arc<Shared>,
    how: &Arc<How>,
) -> Readers {
    let Some((settings, counts, leasing)) = stream else {
        return Readers::Receivers(udp::spawn(receivers, shared, how));
    };
    log::info!(
        "collect: aggregating stream {} on {} as consumer {}",
        settings.stream,
        settings.servers.first(),
        args.nats.nats_consumer
    );
    let consumer = args.nats.nats_consumer.clone();
    Readers::Aggregator(match leasing {
        Some(leasing) => receivers::partitions::spawn(settings, consumer, shared, how, counts, leasing),
        None => receivers::nats::spawn(settings, consumer, shared, how, counts),
    })
}

/// The partitions an aggregator leases (`--partitions`), if any.
fn leasing(args: &CollectArgs) -> Option<receivers::partitions::Leasing> {
    let (owned, count) = (args.nats.partitions.clone()?, args.nats.nats_partitions?);
    let counts = Arc::new(nats::lease::Counts::default());
    let (ttl, checkpoint_every) = (args.nats.nats_lease_s, args.nats.nats_checkpoint_s);
    let checkpoints = Arc::default();
    Some(receivers::partitions::Leasing { count, owned, ttl, counts, checkpoint_every, checkpoints })
}

/// How many sets of books: a receiver's per socket, the aggregator's one,
/// or one a partition for an aggregator over partitions (each is
/// checkpointed and moves on its own; the views merge them).
fn book_sets(leasing: Option<&receivers::partitions::Leasing>, sockets: usize, from_stream: bool) -> usize {
    match leasing {
        Some(leasing) => usize::from(leasing.count),
        None => sockets.max(usize::from(from_stream)),
    }
}

/// The partitions' checkpoints' counts, with `--partitions` and
/// `--nats-checkpoint-s` not 0.
fn checkpoints(
    leasing: Option<&receivers::partitions::Leasing>,
) -> Option<Arc<nats::checkpoint::Checkpoints>> {
    let leasing = leasing.filter(|l| !l.checkpoint_every.is_zero())?;
    Some(Arc::clone(&leasing.checkpoints))
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
    summary::print(&snapshot, &shared.counted(), args.stdout.json, summary::Extent::Whole, &shared.names);
    if let Some(path) = &args.plot.plot {
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
    if let Some(addr) = args.metrics.metrics {
        let metrics = metrics::start(
            addr,
            Arc::clone(shared),
            args.metrics.shown(),
            Arc::clone(health),
            shared.names.clone(),
        );
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
    exporting: &Exporting,
    kept: Option<state::Kept>,
    names: &Naming,
) -> Vec<Arc<Mutex<Books>>> {
    let sizes = args.books.sizes();
    let base = Arc::new(timeline::TimeBase::resumed(kept.as_ref().and_then(|kept| kept.time_base)));
    let books: Vec<_> = (0..readers)
        .map(|_| {
            let exporters = exporting.handles();
            let mut books = Books::new(sizes, args.books.join(), exporters, Arc::clone(&base), names.clone());
            books.datagrams = exporting.datagrams();
            books.congestion = books::congestion::Congestion::new(args.congestion.settings());
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
    let Some(settings) = args.state.settings() else { return Ok((None, state::Restored::default())) };
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

/// Prints the summary at the interval until a stop signal, the count or
/// the duration; SIGHUP reloads what [`reload`] says.
fn wait_for_the_end(
    args: &CollectArgs,
    live: &mut reload::Live,
    exporting: &mut Exporting,
    shared: &Shared,
    started: Instant,
) {
    // The flags' bounds (values::duration) keep these sums from overflowing.
    let plot_every = args.plot.plot_interval;
    let mut next_summary = started + live.args.stdout.interval;
    let mut next_plot = started + plot_every;
    while !int_os::signals::stop_requested() {
        if args.count.is_some_and(|n| shared.reports.load(Ordering::Relaxed) >= n)
            || args.duration.is_some_and(|d| started.elapsed() >= d)
            || shared.quit.load(Ordering::Relaxed)
        {
            return;
        }
        if int_os::signals::take_reload_request() {
            let interval = live.args.stdout.interval;
            live.reload(exporting, shared);
            if live.args.stdout.interval != interval {
                next_summary = Instant::now() + live.args.stdout.interval;
            }
        }
        let interval = live.args.stdout.interval;
        if !interval.is_zero() && Instant::now() >= next_summary {
            let extent = summary::Extent::Worst(summary::PERIODIC_WORST);
            summary::print(
                &shared.snapshot(),
                &shared.counted(),
                live.args.stdout.json,
                extent,
                &shared.names,
            );
            next_summary = Instant::now() + interval;
        }
        if let Some(path) =
            args.plot.plot.as_ref().filter(|_| !plot_every.is_zero() && Instant::now() >= next_plot)
        {
            if let Err(error) = plot::draw(&shared.snapshot(), path, &shared.names) {
                log::warn!("collect: --plot {}: {error}", path.display());
            }
            next_plot = Instant::now() + plot_every;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
