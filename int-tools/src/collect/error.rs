//! Why collect stops, by part: each error names the flag or the input and
//! the cause. A flag's mistake stops collect before it receives; a
//! receiver's or the aggregator's failure ends the run and is said at its
//! end, after the summary.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::exporters::influx;
use super::names;
pub use super::names::NodeIdError;
use super::nats::args as stream;
use super::nats::StreamError;
use super::receivers::udp::ReceiveError;
pub use super::values::ChoiceError;
use super::views::plot;
use super::views::web::ViewError;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    File(#[from] super::args::file::FileError),
    #[error(transparent)]
    Names(#[from] names::NamesError),
    /// The plot's file cannot be written (tried at start).
    #[error(transparent)]
    PlotPath(#[from] plot::args::PathError),
    #[error("--plot {}: {cause}", path.display())]
    Plot { path: PathBuf, cause: plot::Failure },
    #[error(transparent)]
    Receive(#[from] ReceiveError),
    #[error("--metrics {addr}: {source}")]
    Metrics { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    View(#[from] ViewError),
    #[error(transparent)]
    ViewFiles(#[from] super::views::web::args::FilesError),
    #[error(transparent)]
    StreamSettings(#[from] stream::SettingsError),
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error(transparent)]
    SinkId(#[from] super::receivers::args::SinkIdError),
    #[error(transparent)]
    Influx(#[from] influx::args::SettingsError),
    #[error(transparent)]
    State(#[from] super::state::StoreError),
    #[error("--state: the state's writer thread: {source}")]
    StateThread { source: std::io::Error },
    #[error(transparent)]
    IpfixTarget(#[from] super::exporters::ipfix::TargetError),
}
