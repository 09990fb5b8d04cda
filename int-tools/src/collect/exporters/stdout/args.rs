//! Standard output's flags: how each report is said ([`Print`]) and how
//! often the summary is.

use std::time::Duration;

use clap::Args;

use super::Print;
use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Standard output")]
pub struct StdoutArgs {
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// No line per report: summaries only (for high report rates).
    #[arg(long)]
    pub quiet: bool,
    /// Print the summary every this many seconds (0: only at exit).
    #[arg(long, value_name = "S", default_value = "10", value_parser = duration::summary_interval)]
    pub interval: Duration,
}

impl StdoutArgs {
    /// How each report is said: `--quiet`, `--json` or text.
    pub fn print(&self) -> Print {
        match (self.quiet, self.json) {
            (true, _) => Print::Quiet,
            (false, true) => Print::Json,
            (false, false) => Print::Text,
        }
    }
}
