//! collect's own messages on stderr (`--log LEVEL`): each line as it was
//! always written ("collect: listening on ..."), at its level through the
//! `log` crate, so that `--log warn` keeps the journal to what needs a
//! look. Errors are always written. The records and summaries (stdout)
//! are not messages: `--quiet` and `--interval` govern them.

use log::{LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, metadata: &Metadata) -> bool {
        // Only this workspace's messages: a dependency's debug lines would
        // come without context.
        metadata.level() <= log::max_level() && metadata.target().starts_with("int_")
    }

    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{}", record.args());
        }
    }

    fn flush(&self) {}
}

static STDERR: Stderr = Stderr;

/// Messages up to `level` on stderr from now on (errors whatever it is).
pub fn init(level: Level) {
    // A second run in one process keeps the logger, takes the level.
    let _ = log::set_logger(&STDERR);
    log::set_max_level(LevelFilter::from(level));
}

/// `--log`'s levels (clap lists them in its refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl From<Level> for LevelFilter {
    fn from(level: Level) -> LevelFilter {
        match level {
            Level::Error => LevelFilter::Error,
            Level::Warn => LevelFilter::Warn,
            Level::Info => LevelFilter::Info,
            Level::Debug => LevelFilter::Debug,
        }
    }
}
