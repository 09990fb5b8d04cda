//! int-lab: test equipment for int-node, not part of a deployment. `lab`
//! brings up a network-namespace lab around int-node processes and checks
//! what their reports say; `send` is the lab's kernel UDP traffic source;
//! `replay-reports` loads a collector.

mod error;
mod lab;
mod replay_reports;
mod send;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "int-lab", version, about = "Test equipment for int-node: namespace labs, a UDP sender")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Bring a network-namespace lab up, run its scenario, tear it down.
    Lab(lab::LabArgs),
    /// Send UDP traffic at a steady rate (one flow) through the kernel.
    Send(send::SendArgs),
    /// Replay recorded report datagrams at a collector, as fast as it goes.
    ReplayReports(replay_reports::ReplayReportsArgs),
}

fn main() -> ExitCode {
    int_os::signals::default_sigpipe();
    let result = match Cli::parse().command {
        Command::Lab(args) => lab::run(&args),
        Command::Send(args) => send::run(&args),
        Command::ReplayReports(args) => replay_reports::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
