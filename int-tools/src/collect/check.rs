//! `--check`, and a reload's check of the file read again: every group
//! of flags turned into its part's settings by the group's own method, as
//! a start turns it (server names resolved, the files read), with nothing
//! opened, bound or sent.

use super::args::CollectArgs;
use super::error::CollectError;
use super::names;

/// `--check`: the settings parsed (they are, to get here) and the files
/// they name read, as a start would; nothing opened, bound or sent.
pub fn check(args: &CollectArgs) -> Result<(), CollectError> {
    validate(args)?;
    match &args.config {
        Some(path) => println!("{}: ok", path.display()),
        None => println!("collect: settings ok"),
    }
    Ok(())
}

/// The names read, and every group's settings built by its own method,
/// as a start builds them (server names resolved, the files read).
pub fn validate(args: &CollectArgs) -> Result<(), CollectError> {
    if let Some(path) = &args.names {
        names::Names::load(path)?;
    }
    args.receivers.how()?;
    args.view.files()?;
    args.influx.settings()?;
    args.nats.publish()?;
    args.nats.consume()?;
    args.ipfix.settings(args.books.max_flows)?;
    Ok(())
}
