//! int-node: a DPDK In-band Network Telemetry (INT 0.5) source, transit and
//! sink. `main` reads the command line and hands over to `run` or `check`.

mod cli;
mod config;
mod dpdk;
mod flow_table;
mod pipeline;
mod run;
mod stats;

use std::process::ExitCode;

use clap::Parser;
use simplelog::{ColorChoice, ConfigBuilder, LevelFilter, TermLogger, TerminalMode};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let level = cli.log.parse::<LevelFilter>().unwrap_or(LevelFilter::Info);
    let log_config =
        ConfigBuilder::new().set_time_level(LevelFilter::Off).set_target_level(LevelFilter::Off).build();
    let _ = TermLogger::init(level, log_config, TerminalMode::Stderr, ColorChoice::Never);

    match cli.command {
        cli::Command::Check { config } => match config::load(&config) {
            Ok(parsed) => {
                println!(
                    "{}: ok ({} port(s), {} pipeline(s))",
                    config.display(),
                    parsed.ports.len(),
                    parsed.pipelines.len()
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("{}: invalid configuration\n{error}", config.display());
                ExitCode::from(2)
            }
        },
        cli::Command::Run { config, duration, exit_on_idle, stats_json, eal } => {
            let parsed = match config::load(&config) {
                Ok(parsed) => parsed,
                Err(error) => {
                    eprintln!("{}: invalid configuration\n{error}", config.display());
                    return ExitCode::from(2);
                }
            };
            let options =
                run::RunOptions { duration, exit_on_idle_ms: exit_on_idle, stats_json, eal_override: eal };
            match run::run(&parsed, &options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    log::error!("{error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
