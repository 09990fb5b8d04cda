//! What a config's check finds wrong: each problem with its YAML path and
//! a hint, all of them gathered before a config is refused.

use std::fmt;

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
pub(super) struct Problems(pub(super) Vec<Problem>);

impl Problems {
    pub(super) fn add(
        &mut self,
        path: impl Into<String>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.0.push(Problem { path: path.into(), message: message.into(), hint: hint.into() });
    }

    /// One problem for each of `keys` (name, given) that was given under
    /// `path` but belongs to the other INT version.
    pub(super) fn other_version(&mut self, path: &str, keys: &[(&str, bool)], belongs_to: &str, hint: &str) {
        for (key, _) in keys.iter().filter(|(_, given)| *given) {
            self.add(format!("{path}.{key}"), format!("{key} is a key of {belongs_to}"), hint);
        }
    }

    pub(super) fn into_result<T>(self, value: T) -> Result<T, ConfigError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ConfigError::Invalid(self.0))
        }
    }
}

pub(super) fn yaml_problem(error: &serde_yaml_ng::Error) -> Problem {
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
