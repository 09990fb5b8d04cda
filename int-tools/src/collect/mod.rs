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

pub mod books;
mod error;
pub mod input;
pub mod names;
mod outputs;
pub mod stream;
mod view;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
pub use error::{ChoiceError, CollectError, NodeIdError};
use int_core::report::SinkIdWord;

use books::{hops, join, ledger, sender, summary, timeline};
use input::{receive, tr20};
use outputs::{influx, ipfix, metrics, plot, print};

use ledger::{Ledger, Limits};
pub use ledger::{Measure, Observed};
use outputs::{Counted, Output};
use sender::Sender;
use summary::Snapshot;

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Address and UDP port to receive reports on.
    #[arg(long, default_value = "0.0.0.0:32766")]
    pub listen: String,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// No line per report: summaries only (for high report rates).
    #[arg(long)]
    pub quiet: bool,
    /// Exit after this many reports (each individual report of a Telemetry
    /// Report 2.0 datagram counts; a refused datagram counts as one); with
    /// --from-nats the same (a JSON record counts one).
    #[arg(long)]
    pub count: Option<u64>,
    /// Exit after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Print the summary every this many seconds (0: only at exit).
    #[arg(long, default_value_t = 10.0)]
    pub interval: f64,
    /// Whether latency reports carry the sink id word: present, absent or
    /// detect.
    #[arg(long, default_value = "detect")]
    pub sink_id: String,
    /// Receive buffer to ask the kernel for, per socket, in bytes (as
    /// root, beyond net.core.rmem_max): room for a burst of reports while
    /// a line prints.
    #[arg(long, default_value_t = 8 << 20)]
    pub rcvbuf: usize,
    /// Sockets sharing the port (SO_REUSEPORT), each with a receiving
    /// thread: the kernel spreads senders over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub sockets: u16,
    /// Receive on a port another process already receives on (each gets
    /// some of the senders); without it, such a port is refused.
    #[arg(long)]
    pub share_port: bool,
    /// Flows followed one by one; reports of later flows count only in
    /// the totals over all flows.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_flows: usize,
    /// Flows (the first each socket sees) with latency percentiles and a
    /// timeline (about 40 KB each); the others have count, min, mean and
    /// max.
    #[arg(long, default_value_t = 1000)]
    pub detailed_flows: usize,
    /// Nodes (hops of INT 2.1 stacks, by node id) with figures of their own
    /// (about 60 KB each); hops of later nodes are counted only.
    #[arg(long, default_value_t = 10_000)]
    pub max_nodes: usize,
    /// Links between consecutive hops with figures of their own (about 30
    /// KB each).
    #[arg(long, default_value_t = 50_000)]
    pub max_links: usize,
    /// INT-MX and INT-XD: the most a packet's other postcards are waited
    /// for after its first arrived, by the collector's clock (before, a
    /// packet's group closes once every reporting node's stamps have passed
    /// it); how long a silent node holds groups open; also the most a
    /// packet's stamps may lie apart for its order to be told.
    #[arg(long, default_value_t = 1000)]
    pub join_window_ms: u64,
    /// INT-MX and INT-XD: the domain's nodes (ids as dotted quads or
    /// numbers, comma-separated); postcards from any other node are
    /// counted and never joined. Default: any node.
    #[arg(long, value_delimiter = ',', value_parser = parse_node_id)]
    pub domain_nodes: Vec<u32>,
    /// INT-MX and INT-XD: packets in a row whose postcards give part of
    /// their flow's path (its nodes in order, some missing) before that is
    /// taken as the flow's new path; until then they count as incomplete.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub join_confirm: u32,
    /// Write every latency and loss observation to this InfluxDB 1.x
    /// server (http://HOST:PORT), into --influx-db.
    #[arg(long)]
    pub influx: Option<String>,
    /// The InfluxDB database.
    #[arg(long, default_value = "int")]
    pub influx_db: String,
    /// The InfluxDB user, for a server with authentication on; the
    /// password comes from --influx-password-file or the environment's
    /// INFLUX_PASSWORD (kept off the command line).
    #[arg(long)]
    pub influx_user: Option<String>,
    /// A file holding the InfluxDB password (its first line).
    #[arg(long)]
    pub influx_password_file: Option<std::path::PathBuf>,
    /// Points per InfluxDB write.
    #[arg(long, default_value_t = 5000)]
    pub influx_batch: usize,
    /// Points waiting for InfluxDB at most; beyond, new ones are dropped
    /// and counted (a slow database never stalls the collector).
    #[arg(long, default_value_t = 200_000)]
    pub influx_buffer: usize,
    /// Publish every report to this NATS server's JetStream
    /// (nats://[USER:PASSWORD@]HOST:PORT; a cluster's servers
    /// comma-separated, tls:// for TLS), into --nats-stream, for an
    /// aggregating collect (--from-nats) over many collectors.
    #[arg(long)]
    pub nats: Option<String>,
    /// What the stream carries: batch (the report datagrams as they came,
    /// many a message: what an aggregator reads at full rate) or json
    /// (collect's JSON records, one a message, for other consumers;
    /// docs/output.md).
    #[arg(long, default_value = "batch", value_parser = parse_nats_format)]
    pub nats_format: stream::Format,
    /// Servers that keep each of the stream's messages when collect
    /// creates it: 3 in a cluster of three survives a server's loss.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=5))]
    pub nats_replicas: u16,
    /// A NATS credentials file (a user's JWT and NKey seed, as nsc writes
    /// it).
    #[arg(long)]
    pub nats_credentials: Option<std::path::PathBuf>,
    /// A CA certificate file (PEM) the NATS servers' TLS certificates are
    /// checked against; TLS is then required.
    #[arg(long)]
    pub nats_ca: Option<std::path::PathBuf>,
    /// The JetStream stream: created if missing, with subjects
    /// PREFIX.TYPE.NODE (--nats-prefix), kept --nats-max-age-s seconds and
    /// at most --nats-max-bytes.
    #[arg(long, default_value = "INT")]
    pub nats_stream: String,
    /// Read the records of --nats-stream on this NATS server instead of
    /// reports off UDP: an aggregator over the collectors that publish
    /// there (docs/scale-out.md).
    #[arg(long)]
    pub from_nats: Option<String>,
    /// The durable consumer --from-nats reads with: aggregators with one
    /// name share the records, each name reads them all.
    #[arg(long, default_value = "collect")]
    pub nats_consumer: String,
    /// The subjects' first word.
    #[arg(long, default_value = "int")]
    pub nats_prefix: String,
    /// Seconds the stream keeps a record.
    #[arg(long, default_value_t = 86_400)]
    pub nats_max_age_s: u64,
    /// Bytes the stream keeps at most (the oldest go first).
    #[arg(long, default_value_t = 1 << 30)]
    pub nats_max_bytes: u64,
    /// Reports (or JSON records) waiting for the NATS server at most;
    /// beyond, new ones are dropped and counted (a slow or absent server
    /// never stalls the collector).
    #[arg(long, default_value_t = 200_000)]
    pub nats_buffer: usize,
    /// Export per flow, hop and link figures as IPFIX (RFC 7011) to this
    /// collector: udp://HOST:PORT (or HOST:PORT) or tcp://HOST:PORT
    /// (docs/ipfix.md).
    #[arg(long)]
    pub ipfix: Option<String>,
    /// Seconds each IPFIX record covers.
    #[arg(long, default_value_t = 60.0)]
    pub ipfix_interval: f64,
    /// The IPFIX messages' Observation Domain ID.
    #[arg(long, default_value_t = 1)]
    pub ipfix_domain: u32,
    /// The enterprise number of the IPFIX elements IANA has not assigned
    /// (default: 32473, RFC 5612's number for documentation; see
    /// docs/ipfix.md).
    #[arg(long, default_value_t = ipfix::DEFAULT_PEN)]
    pub ipfix_pen: u32,
    /// No longer used (each reader adds its figures up itself, nothing is
    /// queued); accepted so that existing command lines still run.
    #[arg(long, default_value_t = 200_000, hide = true)]
    pub ipfix_buffer: usize,
    /// What each node is called: a YAML file of node ids (numbers, 0x hex
    /// or dotted quads) to names, and optionally interface names per node
    /// (docs/output.md). Every output shows the name beside the id.
    #[arg(long)]
    pub names: Option<std::path::PathBuf>,
    /// Serve Prometheus metrics on this address and port (/metrics).
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Serve the live web view on this address and port: topology, nodes,
    /// links, flows and events (/), and the JSON behind it (/api/...).
    #[arg(long)]
    pub http: Option<SocketAddr>,
    /// How often the web view copies the books, in ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    pub view_sample_ms: u64,
    /// The web view shows a node stale when no report told of it for this
    /// many seconds.
    #[arg(long, default_value_t = 30.0)]
    pub view_stale_s: f64,
    /// Flows with labels of their own in the metrics (the most reported,
    /// and the most lossy); all flows are also in the totals.
    #[arg(long, default_value_t = 20)]
    pub metrics_flows: usize,
    /// At exit, draw latency over time and the packets lost per flow into
    /// this PNG file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Redraw --plot every this many seconds while collect runs (0: at
    /// exit only); each picture replaces the last whole.
    #[arg(long, default_value_t = 0.0)]
    pub plot_interval: f64,
    /// DSCP value and mask of the INT 2.1 domain whose packets Telemetry
    /// Report 2.0 reports carry.
    #[arg(long, default_value = "0x17/0x3f")]
    pub int21_dscp: int_core::encap::DscpMatch,
    /// UDP port of the INT 2.1 domain, if it is marked by port.
    #[arg(long)]
    pub int21_port: Option<u16>,
    /// The INT 2.1 domain's Domain Specific ID: its packet numbers and
    /// loss reports (0: none).
    #[arg(long, default_value = "0x4944", value_parser = crate::decode::parse_u16)]
    pub int21_domain_id: u16,
    /// How the IOAM domain's nodes write a timestamp's fraction: posix
    /// (microseconds, as Linux writes it) or ptp (nanoseconds), as the
    /// nodes' int.timestamps.
    #[arg(long, default_value = "posix", value_parser = parse_ioam_timestamps)]
    pub ioam_timestamps: int_core::ioam::TimestampFormat,
}

fn parse_nats_format(text: &str) -> Result<stream::Format, ChoiceError> {
    match text {
        "batch" => Ok(stream::Format::Batch),
        "json" => Ok(stream::Format::Json),
        other => Err(ChoiceError {
            text: other.to_string(),
            choices: "batch (reports as they came) or json (collect's records)",
        }),
    }
}

fn parse_ioam_timestamps(text: &str) -> Result<int_core::ioam::TimestampFormat, ChoiceError> {
    match text {
        "posix" => Ok(int_core::ioam::TimestampFormat::Posix),
        "ptp" => Ok(int_core::ioam::TimestampFormat::Ptp),
        other => Err(ChoiceError {
            text: other.to_string(),
            choices: "posix or ptp, as the IOAM nodes' int.timestamps",
        }),
    }
}

/// How reports are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Text,
    Json,
    /// Summaries only.
    Quiet,
}

/// How datagrams are read and printed.
pub struct How {
    pub sink_id: SinkIdWord,
    pub int21_domain: int_core::int21::Domain,
    pub ioam_timestamps: int_core::ioam::TimestampFormat,
    pub output: Print,
}

/// What the collector received, refused and missed.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub received: u64,
    /// Reports received: a Telemetry Report 2.0 datagram may hold several.
    pub reports: u64,
    /// Refused reports by reason (the parser's error kind and layer).
    pub malformed: BTreeMap<String, u64>,
    /// Datagrams the kernel dropped for want of buffer room.
    pub kernel_drops: u64,
}

impl Totals {
    pub fn malformed(&self) -> u64 {
        self.malformed.values().sum()
    }
}

/// One receiving socket's books.
pub struct Books {
    pub ledger: Ledger,
    /// Every hop's story: nodes, links, paths (INT 2.1 reports).
    pub hops: hops::Hops,
    pub senders: BTreeMap<SocketAddr, Sender>,
    pub totals: Totals,
    /// INT-MX and INT-XD postcards waiting for the rest of their packet's.
    pub join: join::Join,
    /// InfluxDB, a NATS stream: what the receivers hand findings to.
    pub outputs: Vec<Arc<dyn Output>>,
    /// The stream's batch format: this receiver's datagrams as they came.
    pub feed: Option<stream::publish::Feed>,
}

/// What the books keep at most: `--max-flows`, `--detailed-flows`,
/// `--max-nodes`, `--max-links`.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub flows: usize,
    pub detailed_flows: usize,
    pub nodes: usize,
    pub links: usize,
}

impl Books {
    fn new(
        sizes: Sizes,
        join: join::Join,
        outputs: Vec<Arc<dyn Output>>,
        base: Arc<timeline::TimeBase>,
    ) -> Books {
        let limits = Limits { flows: sizes.flows, detailed: sizes.detailed_flows };
        let hop_limits = hops::Limits { nodes: sizes.nodes, links: sizes.links, flows: sizes.flows };
        Books {
            ledger: Ledger::new(limits, base),
            hops: hops::Hops::new(hop_limits),
            senders: BTreeMap::new(),
            totals: Totals::default(),
            join,
            outputs,
            feed: None,
        }
    }

    /// Empty books of at most `sizes`, with the join's defaults and no
    /// outputs (for tests and fuzz targets).
    pub fn bounded(sizes: Sizes) -> Books {
        Books::new(sizes, join::Join::new(1000, Vec::new(), 32), Vec::new(), Default::default())
    }

    /// [`Books::bounded`] with the IPFIX export's recorder, its intervals
    /// taken by no exporter (for tests: what the export costs a reader).
    pub fn bounded_exporting(sizes: Sizes) -> Books {
        let mut books = Books::bounded(sizes);
        books.outputs.push(ipfix::detached(sizes.flows));
        books
    }

    /// A record: built only when it is printed or published.
    pub fn emit(&self, print: Print, record: impl FnOnce() -> serde_json::Value) {
        if print == Print::Quiet && !self.outputs.iter().any(|o| o.wants_records()) {
            return;
        }
        let mut record = record();
        if let Some(object) = record.as_object_mut() {
            names::annotate(object);
        }
        for output in self.outputs.iter().filter(|o| o.wants_records()) {
            output.record(&record);
        }
        print::print(&record, print);
    }

    /// The batch taken next arrived at `at_ns`, ns since the epoch.
    pub fn arrived(&mut self, at_ns: u64) {
        for output in &self.outputs {
            output.arrived(at_ns);
        }
    }

    pub fn observe(&mut self, observed: &Observed) {
        self.ledger.observe(observed);
        for output in &self.outputs {
            output.observed(observed);
        }
    }

    /// A drop report of `node` for `reason`: into the per-hop view and the
    /// outputs.
    pub fn observe_drop(&mut self, node: u32, reason: u8) {
        self.hops.observe_drop(node, reason);
        for output in &self.outputs {
            output.drop_reported(node, reason);
        }
    }

    /// A report's hops and path: into the per-hop view and the outputs;
    /// returns the flow's path change, if any.
    pub fn observe_path(&mut self, seen: &hops::Seen<'_>) -> Option<hops::PathChange> {
        let change = self.hops.observe(seen);
        for output in &self.outputs {
            output.hops(seen);
            if let Some(change) = &change {
                output.path_change(change);
            }
        }
        change
    }

    /// A packet's postcards put together: its nodes' figures, and where
    /// their order can be told, its links and path; printed as a `joined`
    /// record, and a path change as for a stack.
    pub fn observe_joined(&mut self, joined: &join::Joined, print: Print) {
        let seen = hops::Seen {
            flow: joined.flow,
            hops: &joined.hops,
            sink: None,
            sink_ingress_ns: None,
            at_ms: joined.at_ms,
        };
        // An order that cannot be told, or part of the flow's path: its
        // nodes' figures only.
        let fit = joined.ordered.then(|| self.join.fit(joined, self.hops.followed(&joined.flow)));
        let change = match fit {
            Some(join::Fit::Whole) => self.observe_path(&seen),
            Some(join::Fit::Confirmed) => {
                let change = self.observe_path(&seen);
                self.hops.settle(&joined.flow);
                change
            }
            // The path its first packets gave lacked a node: replaced, no
            // path change.
            Some(join::Fit::Grown) => {
                self.hops.forget_path(&joined.flow);
                self.observe_path(&seen)
            }
            Some(join::Fit::Part) | None => {
                self.hops.observe_nodes(&seen);
                None
            }
        };
        let complete = fit.map(|fit| fit != join::Fit::Part);
        self.emit(print, || serde_json::Value::Object(join::record(joined, complete)));
        if let Some(change) = change {
            self.emit(print, || serde_json::Value::Object(tr20::path_change_record(&change, None)));
        }
    }

    /// Every postcard still waiting, joined (collect is stopping).
    pub fn close_joins(&mut self, print: Print) {
        for joined in self.join.close_all() {
            self.observe_joined(&joined, print);
        }
    }

    /// Each sender's report sequence.
    pub fn sender(&mut self, from: SocketAddr) -> &mut Sender {
        self.senders.entry(from).or_default()
    }
}

/// Everything the receivers share with the main thread and the metrics.
pub struct Shared {
    pub books: Vec<Arc<Mutex<Books>>>,
    pub reports: AtomicU64,
    pub quit: AtomicBool,
    /// The outputs' counts, for the summary and the metrics.
    pub outputs: Vec<Arc<dyn Counted>>,
}

impl Shared {
    /// Every receiver's books, merged.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::merge(self.books.iter().filter_map(|books| books.lock().ok().map(|b| Snapshot::of(&b))))
    }

    /// [`Shared::snapshot`], the books moved out rather than copied
    /// (collect is ending): no second copy of the books at their largest.
    pub fn take_snapshot(&self) -> Snapshot {
        Snapshot::merge(
            self.books.iter().filter_map(|books| books.lock().ok().map(|mut b| Snapshot::take(&mut b))),
        )
    }

    /// [`Shared::snapshot`] with only the flows a scrape of `top` flows
    /// shows ([`ledger::Ledger::view`]).
    pub fn view(&self, top: usize) -> Snapshot {
        Snapshot::merge(
            self.books.iter().filter_map(|books| books.lock().ok().map(|b| Snapshot::view(&b, top))),
        )
    }
}

/// Files the run writes at its end, tried now: a path that cannot be
/// written fails at start, not after the whole run.
fn check_outputs(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(path) = &args.plot {
        int_os::files::writable(path)
            .map_err(|source| CollectError::PlotPath { path: path.clone(), source })?;
    }
    Ok(())
}

pub fn run(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(path) = &args.names {
        names::install(names::Names::load(path)?);
    }
    let how = Arc::new(how(args)?);
    check_outputs(args)?;
    // Reports off UDP sockets, or records off a stream.
    let (receivers, from_stream) = match &args.from_nats {
        Some(url) => (Vec::new(), Some(stream_settings("--from-nats", url, args)?)),
        None => (receive::open(&args.listen, args.sockets, args.rcvbuf, args.share_port)?, None),
    };
    int_os::signals::catch_stop_signals();
    let started = Instant::now();
    let (running, feeder) = start_outputs(args)?;
    let consumer = from_stream.as_ref().map(|_| Arc::new(stream::consume::Counts::default()));
    let mut counted: Vec<Arc<dyn Counted>> = running.iter().map(|r| Arc::clone(&r.counted)).collect();
    counted.extend(consumer.iter().map(|c| Arc::clone(c) as Arc<dyn Counted>));
    let readers = receivers.len().max(usize::from(from_stream.is_some()));
    let books = books(args, readers, &running, feeder.as_ref());
    // The publisher ends when the last receiver's feed does.
    drop(feeder);
    let shared = Arc::new(Shared {
        books,
        reports: AtomicU64::new(0),
        quit: AtomicBool::new(false),
        outputs: counted,
    });
    let views = start_views(args, &shared)?;
    let readers = match (from_stream, consumer) {
        (Some(settings), Some(counts)) => {
            eprintln!(
                "collect: aggregating stream {} on {} as consumer {}",
                settings.stream,
                settings.servers.first(),
                args.nats_consumer
            );
            let consumer = args.nats_consumer.clone();
            Readers::Aggregator(stream::consume::spawn(settings, consumer, &shared, &how, counts))
        }
        _ => Readers::Receivers(receive::spawn(receivers, &shared, &how)),
    };
    wait_for_the_end(args, &shared, started);
    shared.quit.store(true, Ordering::Relaxed);
    let failure = readers.join();
    close_joins(&shared, how.output);
    stop_outputs(&shared, running);
    for thread in views {
        let _ = thread.join();
    }
    let snapshot = shared.take_snapshot();
    summary::print(&snapshot, &shared.outputs, args.json);
    if let Some(path) = &args.plot {
        plot::draw(&snapshot, path).map_err(|cause| CollectError::Plot { path: path.clone(), cause })?;
        eprintln!("collect: plot written to {}", path.display());
    }
    failure.map_or(Ok(()), Err)
}

/// Every reader's postcards still waiting for their join, written out:
/// the readers have stopped.
fn close_joins(shared: &Shared, output: Print) {
    for books in &shared.books {
        if let Ok(mut books) = books.lock() {
            books.close_joins(output);
        }
    }
}

/// The views on their own threads: Prometheus metrics (`--metrics`) and
/// the web page (`--http`), each bound now (a taken port fails at start).
fn start_views(
    args: &CollectArgs,
    shared: &Arc<Shared>,
) -> Result<Vec<std::thread::JoinHandle<()>>, CollectError> {
    let mut threads = Vec::new();
    if let Some(addr) = args.metrics {
        let metrics = metrics::start(addr, Arc::clone(shared), args.metrics_flows);
        threads.push(metrics.map_err(|source| CollectError::Metrics { addr, source })?);
    }
    if let Some(addr) = args.http {
        threads.extend(view::start(view_settings(addr, args)?, Arc::clone(shared))?);
    }
    Ok(threads)
}

/// The readers' threads: the receivers', or the aggregator's.
enum Readers {
    Receivers(Vec<std::thread::JoinHandle<Result<(), receive::ReceiveError>>>),
    Aggregator(std::thread::JoinHandle<Result<(), stream::StreamError>>),
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
/// outputs and, in the stream's batch format, a feed each.
fn books(
    args: &CollectArgs,
    readers: usize,
    running: &[outputs::Running],
    feeder: Option<&stream::publish::Feeder>,
) -> Vec<Arc<Mutex<Books>>> {
    let sizes = Sizes {
        flows: args.max_flows,
        detailed_flows: args.detailed_flows,
        nodes: args.max_nodes,
        links: args.max_links,
    };
    let base = Arc::new(timeline::TimeBase::default());
    (0..readers)
        .map(|_| {
            let join = join::Join::new(args.join_window_ms, args.domain_nodes.clone(), args.join_confirm);
            let outputs = running
                .iter()
                .map(|r| r.output.for_reader().unwrap_or_else(|| Arc::clone(&r.output)))
                .collect();
            let mut books = Books::new(sizes, join, outputs, Arc::clone(&base));
            books.feed = feeder.map(stream::publish::Feeder::feed);
            Arc::new(Mutex::new(books))
        })
        .collect()
}

fn view_settings(addr: SocketAddr, args: &CollectArgs) -> Result<view::Settings, CollectError> {
    let stale_after = seconds("--view-stale-s", args.view_stale_s)?;
    Ok(view::Settings { addr, sample: Duration::from_millis(args.view_sample_ms), stale_after })
}

/// A node id as the node's config writes it (a dotted quad) or a number.
pub(crate) fn parse_node_id(text: &str) -> Result<u32, NodeIdError> {
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
    let number = match hex {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse::<u32>().ok(),
    };
    number
        .or_else(|| text.parse::<std::net::Ipv4Addr>().ok().map(u32::from))
        .ok_or_else(|| NodeIdError(text.to_string()))
}

/// A flag's duration in seconds, above 0.
fn seconds(flag: &'static str, value: f64) -> Result<Duration, CollectError> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(CollectError::Seconds { flag, value })
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
    let output = match (args.quiet, args.json) {
        (true, _) => Print::Quiet,
        (false, true) => Print::Json,
        (false, false) => Print::Text,
    };
    Ok(How { sink_id, int21_domain, ioam_timestamps: args.ioam_timestamps, output })
}

/// Every output the arguments ask for, started; the stream's batch
/// format feeds the receivers' datagrams through the feeder.
fn start_outputs(
    args: &CollectArgs,
) -> Result<(Vec<outputs::Running>, Option<stream::publish::Feeder>), CollectError> {
    let mut running = Vec::new();
    let mut feeder = None;
    if let Some(url) = &args.influx {
        running.push(start_influx(url, args)?);
    }
    if let Some(url) = &args.nats {
        let settings = stream_settings("--nats", url, args)?;
        eprintln!("collect: publishing to NATS JetStream at {url}, stream {}", settings.stream);
        let (publisher, feeds) = stream::publish::start(settings)?;
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
fn stop_outputs(shared: &Shared, running: Vec<outputs::Running>) {
    for books in &shared.books {
        if let Ok(mut books) = books.lock() {
            books.outputs.clear();
            if let Some(mut feed) = books.feed.take() {
                feed.hand_over();
            }
        }
    }
    for outputs::Running { output, thread, .. } in running {
        drop(output);
        let _ = thread.join();
    }
}

/// The stream of `--nats` or `--from-nats`.
fn stream_settings(
    flag: &'static str,
    url: &str,
    args: &CollectArgs,
) -> Result<stream::Settings, CollectError> {
    let mut servers = stream::Servers::parse(url).map_err(|source| CollectError::Servers { flag, source })?;
    servers.credentials.clone_from(&args.nats_credentials);
    servers.ca.clone_from(&args.nats_ca);
    let word = |text: &str| {
        !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !word(&args.nats_stream) || !word(&args.nats_prefix) || !word(&args.nats_consumer) {
        return Err(CollectError::StreamNames);
    }
    Ok(stream::Settings {
        servers,
        stream: args.nats_stream.clone(),
        prefix: args.nats_prefix.clone(),
        max_age: Duration::from_secs(args.nats_max_age_s),
        max_bytes: args.nats_max_bytes,
        replicas: usize::from(args.nats_replicas),
        buffer: args.nats_buffer,
        format: args.nats_format,
    })
}

fn start_ipfix(target: &str, args: &CollectArgs) -> Result<outputs::Running, CollectError> {
    let (server, transport) = ipfix::Settings::parse_target(target).map_err(CollectError::IpfixTarget)?;
    let interval = seconds("--ipfix-interval", args.ipfix_interval)?;
    let settings = ipfix::Settings {
        server,
        transport,
        interval,
        domain: args.ipfix_domain,
        pen: args.ipfix_pen,
        limit: args.max_flows,
    };
    eprintln!("collect: exporting IPFIX to {target} every {} s", args.ipfix_interval);
    Ok(ipfix::start(settings))
}

fn start_influx(url: &str, args: &CollectArgs) -> Result<outputs::Running, CollectError> {
    let (server, host) = influx::Settings::parse_url(url)?;
    if args.influx_db.is_empty() || !args.influx_db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(CollectError::InfluxDb(args.influx_db.clone()));
    }
    let settings = influx::Settings {
        server,
        host,
        authorization: influx_authorization(args)?,
        database: args.influx_db.clone(),
        batch: args.influx_batch.max(1),
        flush: Duration::from_millis(500),
        buffer: args.influx_buffer,
    };
    eprintln!("collect: writing to InfluxDB at {url}, database {}", settings.database);
    Ok(influx::start(settings))
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
fn wait_for_the_end(args: &CollectArgs, shared: &Shared, started: Instant) {
    let interval = Duration::from_secs_f64(args.interval.max(0.001));
    let mut next_summary = started + interval;
    let plot_every = Duration::from_secs_f64(args.plot_interval.max(0.001));
    let mut next_plot = started + plot_every;
    while !int_os::signals::stop_requested() {
        if args.count.is_some_and(|n| shared.reports.load(Ordering::Relaxed) >= n)
            || args.duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d)
            || shared.quit.load(Ordering::Relaxed)
        {
            return;
        }
        if args.interval > 0.0 && Instant::now() >= next_summary {
            summary::print(&shared.snapshot(), &shared.outputs, args.json);
            next_summary = Instant::now() + interval;
        }
        if let Some(path) =
            args.plot.as_ref().filter(|_| args.plot_interval > 0.0 && Instant::now() >= next_plot)
        {
            if let Err(error) = plot::draw(&shared.snapshot(), path) {
                eprintln!("collect: --plot {}: {error}", path.display());
            }
            next_plot = Instant::now() + plot_every;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
