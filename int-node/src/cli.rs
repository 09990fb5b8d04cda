//! Command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "int-node",
    version,
    about = "In-band Network Telemetry on DPDK: INT 0.5 (Host-INT's dialect) and INT 2.1 source, transit and sink, with Telemetry Reports 0.5 and 2.0, over IPv4 and IPv6 and in VXLAN-GPE and Geneve"
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
        /// The node's YAML config (config/README.md); relative paths in it
        /// resolve against its own directory.
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
        /// The node's YAML config; relative paths in it resolve against its
        /// own directory.
        #[arg(long, short)]
        config: PathBuf,
        /// Check the config alone, for another host: not whether the files
        /// it reads and the CPUs its lcores need exist here.
        #[arg(long)]
        for_another_host: bool,
    },
}
