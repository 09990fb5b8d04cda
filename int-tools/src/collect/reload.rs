//! SIGHUP. Without `--config`: the files the flags name read again (the
//! names, the web view's credentials and TLS files). With it: the file
//! read again as at start (the command line's flags still win) and
//! checked whole; a file with problems is said, problem by problem, and
//! the settings before are kept. Otherwise what can change live takes
//! effect: the names, the log level, standard output's mode and summary
//! interval, each exporter whose group changed (restarted by
//! [`Exporting::apply`]) and the congestion thresholds (for the figures
//! from then on); the books are otherwise untouched. Every other change is
//! said to need a restart, and kept as it was.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::{Args, Command};

use super::args::CollectArgs;
use super::books::congestion::args::CongestionArgs;
use super::check;
use super::exporters::influx::args::InfluxArgs;
use super::exporters::ipfix::args::IpfixArgs;
use super::exporters::stdout::args::StdoutArgs;
use super::exporting::Exporting;
use super::names::Naming;
use super::nats::args::NatsArgs;
use super::shared::Shared;
use super::stderr;
use super::views::web as view;

/// The settings read again and the flags the file gave, or every problem.
pub type Again = Box<dyn Fn() -> Result<(CollectArgs, Vec<OsString>), String>>;

/// Where the settings come from, to read them again.
pub struct Source {
    /// The flags the config file gave (none without `--config`).
    pub from_file: Vec<OsString>,
    /// The command line and the config file read again, as at start: the
    /// settings and the flags the file gave, or every problem said.
    pub again: Again,
}

/// The settings in effect, and the files SIGHUP reads again.
pub struct Live {
    pub args: CollectArgs,
    pub source: Source,
    pub view_files: view::Files,
}

impl Live {
    /// SIGHUP: see the module's text.
    pub fn reload(&mut self, exporting: &mut Exporting, shared: &Shared) {
        let Some(config) = self.args.config.clone() else {
            self.view_files.reload();
            return reload_names(&shared.names, self.args.names.as_deref(), self.view_files_none());
        };
        let file = config.display();
        let (new, from_file) = match (self.source.again)() {
            Ok(read) => read,
            Err(problems) => {
                return log::warn!(
                    "collect: SIGHUP: {problems}\ncollect: SIGHUP: keeping the settings before"
                );
            }
        };
        if let Err(error) = check::validate(&new) {
            return log::warn!("collect: SIGHUP: --config {file}: {error}; keeping the settings before");
        }
        let live = live_flags(self.args.nats.from_nats.is_some());
        for flag in changed(&self.source.from_file, &from_file) {
            if !live.contains(&flag) {
                log::warn!("collect: SIGHUP: --{flag} needs a restart; kept");
            }
        }
        let applied = self.applied(new);
        stderr::init(applied.log);
        self.view_files.reload();
        reload_names(&shared.names, applied.names.as_deref(), false);
        if applied.names.is_none() && self.args.names.is_some() {
            shared.names.clear();
        }
        exporting.apply(&applied, shared);
        if applied.congestion != self.args.congestion {
            reset_congestion(shared, &applied);
        }
        log::info!("collect: SIGHUP: read --config {file} again");
        (self.args, self.source.from_file) = (applied, from_file);
    }

    fn view_files_none(&self) -> bool {
        self.view_files.access.is_none() && self.view_files.tls.is_none()
    }

    /// The settings before with what can change live taken from `new`.
    fn applied(&self, new: CollectArgs) -> CollectArgs {
        let mut applied = self.args.clone();
        applied.log = new.log;
        applied.names = new.names;
        applied.stdout = new.stdout;
        applied.influx = new.influx;
        applied.ipfix = new.ipfix;
        let queues = self.args.congestion.congestion_queues;
        applied.congestion = CongestionArgs { congestion_queues: queues, ..new.congestion };
        if self.args.nats.from_nats.is_none() {
            applied.nats =
                NatsArgs { from_nats: None, nats_consumer: applied.nats.nats_consumer, ..new.nats };
        }
        applied
    }
}

/// Every reader's congestion books judged by the new settings from now on.
fn reset_congestion(shared: &Shared, applied: &CollectArgs) {
    for books in &shared.books {
        // A reader that panicked holding its books has left them: the
        // others still take the settings.
        if let Ok(mut books) = books.lock() {
            books.congestion.reset_settings(applied.congestion.settings());
        }
    }
    log::info!("collect: SIGHUP: congestion thresholds applied to the figures from now on");
}

/// `--names` read again; said whether it took or, keeping the names
/// before, why not.
fn reload_names(names: &Naming, path: Option<&std::path::Path>, nothing_else: bool) {
    let Some(path) = path else {
        if nothing_else {
            log::warn!("collect: SIGHUP: nothing to reload (no --names, no web view files)");
        }
        return;
    };
    match names.reload(path) {
        Ok(count) => {
            log::info!("collect: SIGHUP: reloaded --names {}: {count} node(s) named", path.display())
        }
        Err(error) => {
            log::warn!("collect: SIGHUP: {error}; keeping the names before ({} node(s))", names.count())
        }
    }
}

/// The flags (long names) a reload applies: the names, the log level,
/// standard output's, the exporters' (the stream's only while collect
/// does not read it: the consumer needs a restart), the congestion
/// thresholds (not the number of queues followed).
fn live_flags(consuming: bool) -> Vec<String> {
    let mut command = Command::new("collect");
    command = StdoutArgs::augment_args(command);
    command = InfluxArgs::augment_args(command);
    command = IpfixArgs::augment_args(command);
    command = CongestionArgs::augment_args(command);
    if !consuming {
        command = NatsArgs::augment_args(command);
    }
    let longs = command.get_arguments().filter_map(|arg| arg.get_long()).map(str::to_string);
    // The queues followed bound what is kept: a restart changes them.
    let restart = ["from-nats", "nats-consumer", "congestion-queues"];
    let mut live: Vec<String> = longs.filter(|long| !restart.contains(&long.as_str())).collect();
    live.extend(["names", "log"].map(str::to_string));
    live
}

/// The flags (long names) whose values differ between two lists of
/// `--flag=value` (or `--flag`) the file gave.
fn changed(before: &[OsString], after: &[OsString]) -> Vec<String> {
    let by_flag = |flags: &[OsString]| {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for flag in flags {
            let text = flag.to_string_lossy();
            let text = text.trim_start_matches('-');
            let (name, value) = text.split_once('=').unwrap_or((text, ""));
            map.entry(name.to_string()).or_default().push(value.to_string());
        }
        map
    };
    let (before, after) = (by_flag(before), by_flag(after));
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names.into_iter().filter(|name| before.get(*name) != after.get(*name)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flag changed, added or removed is named once; the same values
    /// in another order of flags are no change.
    #[test]
    fn changed_flags_are_named() {
        let flags = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        let before = flags(&["--listen=a", "--json", "--http-host=x", "--http-host=y"]);
        let after = flags(&["--http-host=x", "--http-host=y", "--listen=b", "--ipfix=c"]);
        assert_eq!(changed(&before, &after), ["ipfix", "json", "listen"]);
        assert!(changed(&before, &before).is_empty());
        let live = live_flags(false);
        assert!(live.contains(&"influx-db".to_string()) && live.contains(&"nats-stream".to_string()));
        assert!(!live.contains(&"from-nats".to_string()) && !live.contains(&"listen".to_string()));
        assert!(!live_flags(true).contains(&"nats-stream".to_string()));
        assert!(live.contains(&"congestion-occupancy".to_string()));
        assert!(!live.contains(&"congestion-queues".to_string()));
    }
}
