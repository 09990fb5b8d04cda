//! Why collect stops, by part: each error names the flag or the input and
//! the cause. A flag's mistake stops collect before it receives; a
//! receiver's or the aggregator's failure ends the run and is said at its
//! end, after the summary.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use super::args::ChoiceError;
use super::exporters::influx;
use super::names;
pub use super::names::NodeIdError;
use super::nats::{ServersError, StreamError};
use super::receivers::udp::ReceiveError;
use super::views::plot;
use super::views::web::ViewError;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    File(#[from] super::args::file::FileError),
    #[error(transparent)]
    Names(#[from] names::NamesError),
    /// The plot's file cannot be written (tried at start).
    #[error("--plot {}: {source}", path.display())]
    PlotPath { path: PathBuf, source: std::io::Error },
    #[error("--plot {}: {cause}", path.display())]
    Plot { path: PathBuf, cause: plot::Failure },
    #[error(transparent)]
    Receive(#[from] ReceiveError),
    #[error("--metrics {addr}: {source}")]
    Metrics { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    View(#[from] ViewError),
    #[error(transparent)]
    HttpAccess(#[from] super::views::web::auth::AccessError),
    #[error(transparent)]
    HttpTls(#[from] super::views::web::tls::TlsError),
    #[error("{flag} {source}")]
    Servers { flag: &'static str, source: ServersError },
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("--nats-stream, --nats-prefix, --nats-consumer: letters, digits, _ and - only")]
    StreamNames,
    #[error("--sink-id {0:?}: present, absent or detect")]
    SinkId(String),
    #[error(transparent)]
    InfluxUrl(#[from] influx::UrlError),
    #[error("--influx-db {0:?}: letters, digits and _ only")]
    InfluxDb(String),
    #[error("--influx-password-file: only with --influx-user")]
    PasswordWithoutUser,
    #[error("--influx-password-file {}: {source}", path.display())]
    PasswordFile { path: PathBuf, source: std::io::Error },
    #[error("--influx-user: a password in --influx-password-file or the environment's INFLUX_PASSWORD")]
    NoPassword,
    #[error(transparent)]
    State(#[from] super::state::StoreError),
    #[error("--state: the state's writer thread: {source}")]
    StateThread { source: std::io::Error },
    #[error(transparent)]
    IpfixTarget(#[from] super::exporters::ipfix::TargetError),
}
