//! The plot's flags: its file, tried at start, and how often it is
//! redrawn.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Plot")]
pub struct PlotArgs {
    /// At exit, draw latency over time and the packets lost per flow into
    /// this PNG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Redraw --plot every this many seconds while collect runs (0: at
    /// exit only); each picture replaces the last whole.
    #[arg(long, value_name = "S", default_value = "0", value_parser = duration::plot_interval)]
    pub plot_interval: Duration,
}

/// The plot's file cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("--plot {}: {source}", path.display())]
pub struct PathError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl PlotArgs {
    /// The file the run draws into at its end, tried now: a path that
    /// cannot be written fails at start, not after the whole run.
    pub fn check(&self) -> Result<(), PathError> {
        match &self.plot {
            Some(path) => {
                int_os::files::writable(path).map_err(|source| PathError { path: path.clone(), source })
            }
            None => Ok(()),
        }
    }
}
