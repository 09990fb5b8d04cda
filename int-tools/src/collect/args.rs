//! `int-tools collect`'s flags, each with its help text (clap's derive):
//! the run's own here, every part's in a group beside that part (its
//! `args.rs`), flattened in and turned into that part's settings there.
//! `collect --help` lists them by part. Every duration flag is read by
//! [`duration`]: bounded, refused at parse time with its bounds.

pub mod file;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::books::args::BookArgs;
use super::books::congestion::args::CongestionArgs;
use super::exporters::influx::args::InfluxArgs;
use super::exporters::ipfix::args::IpfixArgs;
use super::exporters::stdout::args::StdoutArgs;
use super::nats::args::NatsArgs;
use super::receivers::args::ReceiverArgs;
use super::state::args::StateArgs;
use super::stderr::Level;
use super::values::duration;
use super::views::metrics::args::MetricsArgs;
use super::views::plot::args::PlotArgs;
use super::views::web::args::ViewArgs;

#[derive(Debug, Clone, PartialEq, Args)]
pub struct CollectArgs {
    /// Read the settings from this YAML file (/etc/int-tools/collect.yaml,
    /// config/collect/collect.yaml; every flag has a key): a flag given
    /// here overrides its key.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Check the settings (the file's and the flags') and the files they
    /// name, then exit: nothing is received, served or sent.
    #[arg(long)]
    pub check: bool,
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
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = Level::Info)]
    pub log: Level,
    /// What each node is called: a YAML file of node ids (numbers, 0x hex
    /// or dotted quads) to names, and optionally interface names per node
    /// (docs/output.md). Every output shows the name beside the id.
    #[arg(long)]
    pub names: Option<PathBuf>,
    #[command(flatten)]
    pub receivers: ReceiverArgs,
    #[command(flatten)]
    pub books: BookArgs,
    #[command(flatten)]
    pub congestion: CongestionArgs,
    #[command(flatten)]
    pub stdout: StdoutArgs,
    #[command(flatten)]
    pub influx: InfluxArgs,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub ipfix: IpfixArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub plot: PlotArgs,
}
