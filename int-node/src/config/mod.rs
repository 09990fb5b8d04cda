//! The YAML configuration. [`raw`] is the file as written (serde, unknown
//! keys refused); [`validate`] checks everything before DPDK starts and
//! turns it into the typed [`model`], reporting every problem once with its
//! YAML path and a hint.

mod advice;
mod choice;
mod device;
mod eal;
mod host;
mod ifa;
mod ioam;
mod model;
mod nesting;
pub mod paths;
mod pipeline;
mod problems;
mod queues;
mod raw;
pub mod reload;
mod settings;
mod structure;
mod validate;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use advice::warnings;
pub use device::pci_address;
pub use model::*;
#[cfg(feature = "lab")]
pub use settings::impair_units;

use nesting::{nesting, MAX_NESTING};
use problems::{yaml_problem, Problems};
pub use problems::{ConfigError, Problem};

/// Where a config is meant to run: checked against this host (the files
/// it reads exist, its lcores' CPUs too) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    This,
    Another,
}

/// Reads and validates a config, and checks it against `host`.
pub fn load(path: &Path, host: Host) -> Result<Config, ConfigError> {
    let text = read_text(path)?;
    let config = parse(&text).map(|mut config| {
        paths::resolve(&mut config, paths::base_dir(path));
        config
    });
    if host == Host::Another {
        return config;
    }
    // The host's problems join the file's: every problem at once.
    let mut here = Problems::default();
    host::check_cpus(&host::eal_of(&text), &mut here);
    match config {
        Ok(config) => {
            device::check_files(&config.ports, &mut here);
            here.into_result(config)
        }
        Err(ConfigError::Invalid(mut problems)) => {
            problems.extend(here.0);
            Err(ConfigError::Invalid(problems))
        }
        Err(error) => Err(error),
    }
}

/// The largest config file read: a node's config is a few KiB.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A config file's text: a regular file (not a FIFO, a device or a
/// directory, which could block or never end) of at most
/// [`MAX_FILE_BYTES`], opened without blocking.
pub fn read_text(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source: std::io::Error| ConfigError::Read { path: path.display().to_string(), source };
    let refuse = |message: String| error(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(error)?;
    let metadata = file.metadata().map_err(error)?;
    if !metadata.is_file() {
        return Err(refuse(format!("a {}, not a regular file", file_kind(metadata.file_type()))));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(refuse(format!("{} bytes, more than a config's {MAX_FILE_BYTES}", metadata.len())));
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(error)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(refuse(format!("grew past a config's {MAX_FILE_BYTES} bytes while read")));
    }
    Ok(text)
}

fn file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match kind {
        _ if kind.is_dir() => "directory",
        _ if kind.is_fifo() => "FIFO",
        _ if kind.is_char_device() => "character device",
        _ if kind.is_block_device() => "block device",
        _ if kind.is_socket() => "socket",
        _ => "special file",
    }
}

/// Validates a config's text.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    if nesting(text) > MAX_NESTING {
        return Err(ConfigError::Invalid(vec![Problem {
            path: "(document)".into(),
            message: format!("collections nest more than {MAX_NESTING} deep"),
            hint: "a config nests a few levels: see config/*.yaml".into(),
        }]));
    }
    // A syntax error stops here; the shape is checked section by section,
    // so that every unknown key and wrong type is named in one run.
    let mut document: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Invalid(vec![yaml_problem(&e)]))?;
    let error = match serde_yaml_ng::from_str::<raw::RawConfig>(text) {
        Ok(raw) => return validate::validate(&raw),
        Err(error) => error,
    };
    let mut problems = structure::problems(&mut document);
    if problems.is_empty() {
        problems.push(yaml_problem(&error));
    }
    // What is left, the faulty keys taken out, still has the problems of a
    // well-shaped file: said in the same run (none where a problem was
    // said already, at its path or under it).
    if let Ok(rest) = serde_yaml_ng::from_value::<raw::RawConfig>(document) {
        if let Err(ConfigError::Invalid(more)) = validate::validate(&rest) {
            let said: Vec<String> = problems.iter().map(|p| p.path.clone()).collect();
            problems
                .extend(more.into_iter().filter(|p| !said.iter().any(|s| p.path.starts_with(s.as_str()))));
        }
    }
    Err(ConfigError::Invalid(problems))
}
