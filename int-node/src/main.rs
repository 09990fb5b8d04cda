//! int-node: a DPDK node that puts in-band telemetry into live traffic and
//! takes it out again, in three protocols: INT 0.5 (with Host-INT's
//! dialect), INT 2.1 (MD and MX; XD's postcard nodes) and IOAM (RFC 9197's
//! trace, RFC 9486's IPv6 options), each as source, transit and sink
//! (IOAM's encapsulating, transit and decapsulating nodes); its sinks and
//! postcard nodes export Telemetry Reports (TR 0.5, TR 2.0). Beside them,
//! test equipment stages: a forwarder, an impairer, the reference stages,
//! a generator. `main` reads the command line and hands over to `run` or
//! `check`.

mod cli;
mod clock;
mod config;
mod dpdk;
mod flow_table;
mod metrics;
mod node;
mod pipeline;
mod ports;
mod startup;
mod stats;
mod telemetry;

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: int_os::alloc::CountingAllocator = int_os::alloc::CountingAllocator;

use clap::Parser;
use simplelog::{ColorChoice, ConfigBuilder, LevelFilter, TermLogger, TerminalMode};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let level = cli.log.parse::<LevelFilter>().unwrap_or(LevelFilter::Info);
    let log_config =
        ConfigBuilder::new().set_time_level(LevelFilter::Off).set_target_level(LevelFilter::Off).build();
    let _ = TermLogger::init(level, log_config, TerminalMode::Stderr, ColorChoice::Never);

    match cli.command {
        cli::Command::Check { config, for_another_host } => {
            check(&config, if for_another_host { config::Host::Another } else { config::Host::This })
        }
        cli::Command::Run { config, duration, exit_on_idle, stats_json, eal } => {
            let parsed = match config::load(&config, config::Host::This) {
                Ok(loaded) => loaded,
                Err(error) => {
                    eprintln!("{}: invalid configuration\n{error}", config.display());
                    return ExitCode::from(2);
                }
            };
            let options = node::RunOptions {
                duration,
                exit_on_idle_ms: exit_on_idle,
                stats_json,
                eal_override: eal,
                reload_from: Some(config.clone()),
            };
            match node::run(&parsed, &options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    log::error!("{error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn check(path: &std::path::Path, host: config::Host) -> ExitCode {
    match config::load(path, host) {
        Ok(parsed) => {
            for warning in config::warnings(&parsed) {
                eprintln!("{}: warning: {warning}", path.display());
            }
            let (plan, problems) = node::memory::judge(&parsed, &parsed.eal);
            if !problems.is_empty() {
                eprintln!("{}: invalid configuration", path.display());
                for (key, message, hint) in problems {
                    eprintln!("  {key}: {message}\n    hint: {hint}");
                }
                eprintln!("  ({})", plan.describe());
                return ExitCode::from(2);
            }
            println!(
                "{}: ok ({} port(s), {} pipeline(s); {})",
                path.display(),
                parsed.ports.len(),
                parsed.pipelines.len(),
                plan.describe()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{}: invalid configuration\n{error}", path.display());
            ExitCode::from(2)
        }
    }
}
