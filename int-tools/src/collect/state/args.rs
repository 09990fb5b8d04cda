//! The state's flags, turned into its [`Settings`] here.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::Settings;
use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "State")]
pub struct StateArgs {
    /// Keep the books (flows, paths and path changes, per-hop and per-link
    /// histograms, loss, timelines) and the web view's board in this
    /// folder (a redb file, collect.redb), written every
    /// --state-interval-s and at exit, read back at start: a restarted
    /// collect goes on where it was (docs/output.md).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Seconds between writes of --state (and one at exit).
    #[arg(long, value_name = "S", default_value = "5", value_parser = duration::state_interval)]
    pub state_interval_s: Duration,
    /// Bytes --state keeps at most: beyond, the web view's oldest events
    /// and points are left out, halving until it fits.
    #[arg(long, default_value_t = 512 << 20, value_parser = clap::value_parser!(u64).range(4096..))]
    pub state_max_bytes: u64,
    /// The web view's events and points older than this many seconds (of
    /// the view's time) are left out of --state.
    #[arg(long, value_name = "S", default_value = "604800", value_parser = duration::state_max_age)]
    pub state_max_age_s: Duration,
}

impl StateArgs {
    /// The state's settings; none without `--state`.
    pub fn settings(&self) -> Option<Settings> {
        Some(Settings {
            dir: self.state.clone()?,
            interval: self.state_interval_s,
            max_bytes: self.state_max_bytes,
            max_age: self.state_max_age_s,
        })
    }
}
