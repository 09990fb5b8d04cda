//! Files a program writes when it ends, tried when it starts.

use std::path::Path;

/// Opens `path` for writing (creating it, keeping what is there), so that a
/// path that cannot be written fails now rather than after a whole run.
pub fn writable(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path).map(drop)
}
