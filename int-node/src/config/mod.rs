//! The YAML configuration. [`raw`] is the file as written (serde, unknown
//! keys refused); [`validate`] checks everything before DPDK starts and
//! turns it into the typed [`model`], reporting every problem once with its
//! YAML path and a hint.

mod choice;
mod device;
mod eal;
mod model;
mod pipeline;
mod raw;
pub mod reload;
mod settings;
mod validate;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::Path;

pub use model::*;

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if !self.hint.is_empty() {
            write!(f, "\n    hint: {}", self.hint)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
}

/// The problems found so far.
#[derive(Debug, Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) {
        self.0.push(Problem { path: path.into(), message: message.into(), hint: hint.into() });
    }

    /// One problem for each of `keys` (name, given) that was given under
    /// `path` but belongs to the other INT version.
    fn other_version(&mut self, path: &str, keys: &[(&str, bool)], belongs_to: &str, hint: &str) {
        for (key, _) in keys.iter().filter(|(_, given)| *given) {
            self.add(format!("{path}.{key}"), format!("{key} is a key of {belongs_to}"), hint);
        }
    }

    fn into_result<T>(self, value: T) -> Result<T, ConfigError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ConfigError::Invalid(self.0))
        }
    }
}

/// Reads and validates a config, and checks the files it names.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with_text(path).map(|(config, _)| config)
}

/// [`load`], with the text the config was read from.
pub fn load_with_text(path: &Path) -> Result<(Config, String), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
    let config = parse(&text);
    let mut files = Problems::default();
    if let Ok(config) = &config {
        device::check_files(&config.ports, &mut files);
    }
    config.and_then(|config| files.into_result(config)).map(|config| (config, text))
}

/// Validates a config's text.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let raw: raw::RawConfig =
        serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Invalid(vec![yaml_problem(&e)]))?;
    validate::validate(&raw)
}

fn yaml_problem(error: &serde_yaml_ng::Error) -> Problem {
    let text = error.to_string();
    // serde_yaml_ng says "pipelines[0].sink: unknown field `x`, expected ...
    // at line 3 column 5": split the path from the message.
    let (path, message) = match text.split_once(": ") {
        Some((path, rest)) if !path.contains(' ') => (path.to_string(), rest.to_string()),
        _ => ("(document)".to_string(), text.clone()),
    };
    let hint = if message.contains("unknown field") {
        "check the spelling against config/README.md; every key is listed there"
    } else if message.contains("missing field") {
        "this key is required; config/README.md shows an example"
    } else if message.contains("invalid type") {
        "the value has the wrong type (a number, a string, a list?)"
    } else {
        "the file must be YAML as in config/*.yaml"
    };
    Problem { path, message, hint: hint.to_string() }
}
