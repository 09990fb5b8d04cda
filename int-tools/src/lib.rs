//! int-tools: the commands around an int-node deployment that need no DPDK.
//! `decode` prints INT and report packets from a pcap, `collect` receives
//! telemetry reports on a UDP socket, `gen` writes test traffic. A collector
//! host installs this binary alone. The library holds the commands, so that
//! fuzz targets and benches reach the collector's parts (the binary is
//! `src/main.rs`).

pub mod collect;
pub mod decode;
pub mod gen;
pub mod instrument;
pub mod pcap;
pub mod records;
pub mod schema;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "int-tools", version, about = "int-node's tools: decode, collect, gen (no DPDK needed)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the INT blocks and telemetry reports in a pcap.
    Decode(decode::DecodeArgs),
    /// Receive telemetry reports on a UDP socket and print them.
    Collect(Box<collect::CollectArgs>),
    /// Write a pcap of test traffic.
    Gen(gen::GenArgs),
}

/// Why a command failed: its own error, which names the flag or the
/// input and the cause.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Decode(#[from] decode::DecodeError),
    #[error(transparent)]
    Collect(#[from] collect::CollectError),
    #[error(transparent)]
    Gen(#[from] gen::GenError),
}

/// The command line's entry: parse, run the command, say its error.
pub fn main() -> ExitCode {
    // Output is often piped into `head` or `less`: a closed stdout ends the
    // tool quietly, as it ends any Unix filter; a web client or a server
    // that closes its socket ends nothing (collect serves and sends).
    int_os::signals::sigpipe_ends_only_for_stdout();
    let result: Result<(), ToolError> = match Cli::parse().command {
        Command::Decode(args) => decode::run(&args).map_err(ToolError::from),
        Command::Collect(args) => collect::run(&args).map_err(ToolError::from),
        Command::Gen(args) => gen::run(&args).map_err(ToolError::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
