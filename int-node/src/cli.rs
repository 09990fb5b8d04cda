//! Command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "int-node",
    version,
    about = "DPDK In-band Network Telemetry (INT 0.5) source, transit and sink"
)]
pub struct Cli {
    /// Log level: error, warn, info, debug, trace.
    #[arg(long, global = true, default_value = "info")]
    pub log: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the node until SIGINT/SIGTERM (or --duration / --exit-on-idle).
    Run {
        #[arg(long, short)]
        config: PathBuf,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Stop once no packet has arrived for this many ms and every
        /// worker has polled its queues empty since the last one: for
        /// pcap input, which just ends.
        #[arg(long)]
        exit_on_idle: Option<u64>,
        /// Write the final counters as JSON to this file.
        #[arg(long)]
        stats_json: Option<PathBuf>,
        /// EAL arguments that replace the config's `eal` list (ports are
        /// still added), in testpmd's form: -- -l 0-1 --no-huge ...
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// Validate a config without starting DPDK.
    Check {
        #[arg(long, short)]
        config: PathBuf,
    },
}
