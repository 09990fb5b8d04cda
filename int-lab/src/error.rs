//! What can go wrong in the lab and its tools, by kind: the message says
//! what, where, and the way out where there is one.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command the lab runs (`ip`, `tc`, `ethtool`, `int-node check`...)
    /// failed.
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    /// A file, socket or process the lab needs, and the system's answer.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// The topology file or the command line asks for what cannot be.
    #[error("{0}")]
    Setup(Setup),
    /// A state of the lab did not come before the deadline.
    #[error("no {what} after {seconds} s")]
    Timeout { what: String, seconds: u64 },
    #[error("interrupted")]
    Interrupted,
    /// A process of the lab exited while the lab ran.
    #[error("{name} exited early ({status}); see {}", logs.display())]
    Exited { name: String, status: String, logs: PathBuf },
    /// Something the lab reads (a node's log, `tc`'s output) lacks what it
    /// looks for.
    #[error("no {what} in {place}")]
    Missing { what: String, place: String },
    /// The scenario ran and these checks failed.
    #[error("lab: {} check(s) failed: {}", .0.len(), .0.join(", "))]
    Failed(Vec<String>),
}

/// Why a lab or a tool cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum Setup {
    #[error("the lab creates network namespaces: run it as root")]
    NotRoot,
    #[error("{}: {message}", file.display())]
    Topology { file: PathBuf, message: String },
    #[error("{0:?}: expected host/interface")]
    Endpoint(String),
    #[error("{endpoint} has no {version} address in {lab}")]
    NoAddress { endpoint: String, version: &'static str, lab: String },
    #[error("namespace {0} exists already (an earlier run kept up?): `int-lab lab --down --topology ...` or `ip netns del {0}`")]
    NamespaceExists(String),
    #[error("{} not found: build the workspace (cargo build --workspace)", .0.display())]
    NoProgram(PathBuf),
    #[error("impairment by node needs impair_control and impair_host")]
    NodeImpairment,
    #[error("{client} and {server} need IPv6 addresses (a_addr6, b_addr6) for the IPv6 checks")]
    NoIpv6 { client: String, server: String },
    #[error("{0}")]
    Argument(&'static str),
    #[error("listens: {0:?}: expected tcp/PORT or udp/PORT")]
    Listens(String),
    #[error("{0:?} is no node id: a node is named by its node id (10.10.255.5) or an IFA Device ID (0xa05 or 2565), e.g. delayed_link: [10.10.255.5, 10.10.255.6]")]
    NodeId(String),
}

impl Error {
    /// An I/O error with what it was about.
    pub fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.to_string();
        move |source| Error::Io { what, source }
    }
}

impl From<Setup> for Error {
    fn from(setup: Setup) -> Error {
        Error::Setup(setup)
    }
}
