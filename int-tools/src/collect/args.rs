//! `int-tools collect`'s flags, each with its help text (clap's derive).
//! Every duration flag is read by [`duration`]: bounded, refused at parse
//! time with its bounds.

mod duration;
pub mod file;

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::exporters::ipfix;
use super::names::parse_node_id;
use super::nats as stream;

/// A flag's value that is none of its choices.
#[derive(Debug, thiserror::Error)]
#[error("{text:?}: {choices}")]
pub struct ChoiceError {
    pub text: String,
    /// The choices, each with what it means.
    pub choices: &'static str,
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Read the settings from this YAML file (/etc/int-tools/collect.yaml,
    /// config/collect/collect.yaml; every flag has a key): a flag given
    /// here overrides its key.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Check the settings (the file's and the flags') and the files they
    /// name, then exit: nothing is received, served or sent.
    #[arg(long)]
    pub check: bool,
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
    #[arg(long, value_name = "S", value_parser = duration::run_for)]
    pub duration: Option<Duration>,
    /// Collect's own messages on stderr, up to this level: error, warn,
    /// info ("listening on", what it connects to), debug. Errors are
    /// always written; records and summaries are not messages.
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = super::stderr::Level::Info)]
    pub log: super::stderr::Level,
    /// Print the summary every this many seconds (0: only at exit).
    #[arg(long, value_name = "S", default_value = "10", value_parser = duration::summary_interval)]
    pub interval: Duration,
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
    /// Flows (the first each socket sees) with a latency histogram and a
    /// timeline (about 42 KB each); the others have count, min, mean, max
    /// and percentiles from a sketch (within 1.6%, 1 KB at most).
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
    /// INT-MX and INT-XD: how long a packet's other postcards are waited
    /// for after its first arrived, by the collector's clock (before, a
    /// packet's group closes once every reporting node's stamps have passed
    /// it; after, it still waits for an earlier packet of its flow, two
    /// windows at most); how long a silent node holds groups open; also
    /// the most a packet's stamps may lie apart for its order to be told.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = duration::join_window)]
    pub join_window_ms: Duration,
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
    /// Seconds the stream keeps a record (0: until --nats-max-bytes).
    #[arg(long, value_name = "S", default_value = "86400", value_parser = duration::stream_max_age)]
    pub nats_max_age_s: Duration,
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
    #[arg(long, value_name = "S", default_value = "60", value_parser = duration::ipfix_interval)]
    pub ipfix_interval: Duration,
    /// The IPFIX messages' Observation Domain ID.
    #[arg(long, default_value_t = 1)]
    pub ipfix_domain: u32,
    /// The enterprise number of the IPFIX elements IANA has not assigned
    /// (default: 32473, RFC 5612's number for documentation; see
    /// docs/ipfix.md).
    #[arg(long, default_value_t = ipfix::DEFAULT_PEN)]
    pub ipfix_pen: u32,
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
    /// A name the web view answers to (repeat for more), besides IP
    /// addresses and localhost: a request naming any other host gets 421
    /// (a page of another site reaching the view by DNS rebinding).
    #[arg(long = "http-host", value_name = "NAME")]
    pub http_hosts: Vec<String>,
    /// Web view connections served at once; one more is closed as soon
    /// as it is accepted.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub http_connections: u64,
    /// A web view connection is closed when no whole request head
    /// arrives within this many ms of its opening or its last response.
    /// The TLS handshake counts in this time too.
    #[arg(long, value_name = "MS", default_value = "10000", value_parser = duration::http_idle)]
    pub http_idle_ms: Duration,
    /// A file whose first line is the token the web view asks for: as
    /// `Authorization: Bearer TOKEN` or as the password of HTTP Basic
    /// authentication (any user; a browser prompts). /healthz and /readyz
    /// ask for none. SIGHUP reads it again. Over a network, with TLS.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_token_file: Option<std::path::PathBuf>,
    /// A file of users the web view admits with HTTP Basic authentication:
    /// `user:hash` lines, bcrypt hashes as `htpasswd -B FILE USER` writes
    /// them. With --http-token-file, either admits. SIGHUP reads it again.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_users_file: Option<std::path::PathBuf>,
    /// Serve the web view over HTTPS (TLS 1.3) with this certificate chain
    /// (PEM, the server's certificate first); needs --http-tls-key.
    /// SIGHUP reads both again (a renewed certificate).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM: PKCS#8, RSA or EC) of --http-tls-cert.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_tls_key: Option<std::path::PathBuf>,
    /// How often the web view copies the books, in ms.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = duration::view_sample)]
    pub view_sample_ms: Duration,
    /// The web view shows a node stale when no report told of it for this
    /// many seconds.
    #[arg(long, value_name = "S", default_value = "30", value_parser = duration::view_stale)]
    pub view_stale_s: Duration,
    /// Keep the books (flows, paths and path changes, per-hop and per-link
    /// histograms, loss, timelines) and the web view's board in this
    /// folder (a redb file, collect.redb), written every
    /// --state-interval-s and at exit, read back at start: a restarted
    /// collect goes on where it was (docs/output.md).
    #[arg(long, value_name = "DIR")]
    pub state: Option<std::path::PathBuf>,
    /// Seconds between writes of --state (and one at exit).
    #[arg(long, value_name = "S", default_value = "5", value_parser = duration::state_interval)]
    pub state_interval_s: Duration,
    /// Bytes --state keeps at most: beyond, the web view's oldest events
    /// and points are left out, halving until it fits.
    #[arg(long, default_value_t = 512 << 20, value_parser = clap::value_parser!(u64).range(4096..))]
    pub state_max_bytes: u64,
    /// The web view's events and points older than this many seconds (of
    /// the view's time) are left out of --state.
    #[arg(long, value_name = "S", default_value = "604800", value_parser = duration::state_max_age)]
    pub state_max_age_s: Duration,
    /// Flows with labels of their own in the metrics (the most reported,
    /// and the most lossy); all flows are also in the totals.
    #[arg(long, default_value_t = 20)]
    pub metrics_flows: usize,
    /// Nodes with series of their own in the metrics (those with the most
    /// hops; 29 series each), and as many sinks (2 each); the rest are
    /// counted in int_collect_metrics_left_out.
    #[arg(long, default_value_t = 1000)]
    pub metrics_nodes: usize,
    /// Links with series of their own in the metrics (those with the most
    /// observations; 18 series each); the rest are counted in
    /// int_collect_metrics_left_out.
    #[arg(long, default_value_t = 4000)]
    pub metrics_links: usize,
    /// At exit, draw latency over time and the packets lost per flow into
    /// this PNG file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Redraw --plot every this many seconds while collect runs (0: at
    /// exit only); each picture replaces the last whole.
    #[arg(long, value_name = "S", default_value = "0", value_parser = duration::plot_interval)]
    pub plot_interval: Duration,
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
