//! Why `int-node run` stopped: the one error of the node's start, run and
//! summary.

use crate::dpdk::DpdkError;
use crate::pipeline::factory::BuildError;
use crate::ports::PortsError;

/// Why `run` stopped before or after the packets, each with what the
/// operator needs to know.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    #[error(transparent)]
    Startup(#[from] crate::startup::Failure),
    #[error(transparent)]
    Ports(#[from] PortsError),
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The config asks for more memory than there is: each problem with
    /// its YAML path and a hint, as `check` gives them.
    #[error("{}", each_problem(.0))]
    Memory(Vec<(String, String, String)>),
    #[error("pipeline {pipeline}: lcore {lcore} is not a worker lcore of this EAL (workers: {workers:?}); add it to -l")]
    NotAWorker { pipeline: String, lcore: u32, workers: Vec<u32> },
    #[error("capture {file}: {source}")]
    Capture { file: String, source: std::io::Error },
    #[error("stats.metrics {addr}: {source}")]
    Metrics { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("export to {collector}: {source}")]
    Export { collector: String, source: std::io::Error },
    #[error("writing {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

fn each_problem(problems: &[(String, String, String)]) -> String {
    let each: Vec<String> =
        problems.iter().map(|(path, message, hint)| format!("{path}: {message} ({hint})")).collect();
    each.join("; ")
}
