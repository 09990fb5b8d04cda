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

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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

/// The command line, with collect's `--config` file read into it: the
/// file's keys become flags after the command line's, for the flags not
/// given there (so that those win), and clap reads both at once. The
/// first reading only tells which flags were given, so it leaves out the
/// rules between flags (`--http-token-file` needs `--http`): the file may
/// hold the other half. Also the flags the file gave.
fn read(argv: &[OsString]) -> Result<(Cli, Vec<OsString>), Failure> {
    let lenient = Cli::command().mut_subcommand("collect", |collect| {
        collect.mut_args(|arg| arg.requires(clap::builder::Resettable::Reset))
    });
    let given = lenient.try_get_matches_from(argv).map_err(|error| Failure::Clap(error, Vec::new()))?;
    let from_file = match given.subcommand() {
        Some(("collect", given)) => collect::file_flags(given)
            .map_err(|error| Failure::Tool(collect::CollectError::from(error).into()))?,
        _ => Vec::new(),
    };
    let all = argv.iter().chain(from_file.iter()).cloned();
    let matches = Cli::command().try_get_matches_from(all);
    let cli = matches.and_then(|matches| Cli::from_arg_matches(&matches));
    match cli {
        Ok(cli) => Ok((cli, from_file)),
        Err(error) => Err(Failure::Clap(error, from_file)),
    }
}

/// Why the command line gives no command: clap's error (with the flags
/// the file gave), or the config file's.
enum Failure {
    Clap(clap::Error, Vec<OsString>),
    Tool(ToolError),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Clap(error, from_file) => {
                write!(f, "{}", error.to_string().trim_end())?;
                if !from_file.is_empty() {
                    let given: Vec<_> = from_file.iter().map(|flag| flag.to_string_lossy()).collect();
                    write!(f, "\ncollect --config: the file gave {}", given.join(" "))?;
                }
                Ok(())
            }
            Failure::Tool(error) => write!(f, "{error}"),
        }
    }
}

/// [`read`] of the process's command line; clap's mistakes end it as
/// clap ends it (help and version too).
fn parse() -> Result<(Cli, Vec<OsString>), ToolError> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    match read(&argv) {
        Ok(read) => Ok(read),
        Err(Failure::Tool(error)) => Err(error),
        Err(Failure::Clap(error, from_file)) => {
            if !from_file.is_empty() && error.use_stderr() {
                let given: Vec<_> = from_file.iter().map(|flag| flag.to_string_lossy()).collect();
                eprintln!("collect --config: the file gave {}", given.join(" "));
            }
            error.exit()
        }
    }
}

/// collect's settings read again from the process's command line and the
/// config file as it is now (SIGHUP), with the flags the file gave; every
/// problem said.
fn collect_again() -> Result<(collect::CollectArgs, Vec<OsString>), String> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    match read(&argv).map_err(|failure| failure.to_string())? {
        (Cli { command: Command::Collect(args) }, from_file) => Ok((*args, from_file)),
        _ => Err("not collect's command line".to_string()),
    }
}

/// The command line's entry: parse, run the command, say its error.
pub fn main() -> ExitCode {
    // Output is often piped into `head` or `less`: a closed stdout ends the
    // tool quietly, as it ends any Unix filter; a web client or a server
    // that closes its socket ends nothing (collect serves and sends).
    int_os::signals::sigpipe_ends_only_for_stdout();
    let result: Result<(), ToolError> = match parse().map(|(cli, from_file)| (cli.command, from_file)) {
        Err(error) => Err(error),
        Ok((Command::Decode(args), _)) => decode::run(&args).map_err(ToolError::from),
        Ok((Command::Collect(args), _)) if args.check => collect::check(&args).map_err(ToolError::from),
        Ok((Command::Collect(args), from_file)) => {
            let source = collect::Source { from_file, again: Box::new(collect_again) };
            collect::run(&args, source).map_err(ToolError::from)
        }
        Ok((Command::Gen(args), _)) => gen::run(&args).map_err(ToolError::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
