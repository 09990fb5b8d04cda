//! `collect --config FILE`: the flags' settings as a YAML file grouped by
//! the part of collect they set ([`keys`]). Each value goes through its
//! flag's own parser (bounds, choices, [`super::duration`]), so the file
//! and the flags take exactly the same values; every problem is named at
//! once with its YAML path and a hint, as int-node's config does. The file
//! becomes flags: those given on the command line win.

mod keys;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command};
#[cfg(test)]
use keys::KEYS;
use serde_yaml_ng::Value;

use super::CollectArgs;

/// One problem in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "  {}: {}", self.path, self.message)?;
        if !self.hint.is_empty() {
            write!(f, "\n    hint: {}", self.hint)?;
        }
        Ok(())
    }
}

/// Why a config file gives no flags: unreadable, or its problems.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("--config {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("--config {}: invalid configuration\n{}", path.display(), lines(problems))]
    Invalid { path: PathBuf, problems: Vec<Problem> },
}

fn lines(problems: &[Problem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// A config file is a few KiB: a larger one is no config.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The flags the file of `--config` (if given) adds to the command line
/// `given`: one `--flag=value` per value, for every flag not on the
/// command line itself.
pub fn flags(given: &ArgMatches) -> Result<Vec<OsString>, FileError> {
    let Some(path) = given.get_one::<PathBuf>("config") else { return Ok(Vec::new()) };
    let text = read(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let settings =
        settings(&text, base).map_err(|problems| FileError::Invalid { path: path.clone(), problems })?;
    let explicit = |id: &str| given.value_source(id) == Some(ValueSource::CommandLine);
    Ok(settings.into_iter().filter(|s| !explicit(s.id)).flat_map(Setting::flags).collect())
}

fn read(path: &Path) -> Result<String, FileError> {
    let error = |source| FileError::Read { path: path.to_path_buf(), source };
    let metadata = std::fs::metadata(path).map_err(error)?;
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        let why = format!("not a regular file of at most {MAX_FILE_BYTES} bytes");
        return Err(error(std::io::Error::new(std::io::ErrorKind::InvalidInput, why)));
    }
    std::fs::read_to_string(path).map_err(error)
}

/// A key's values as its flag takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub id: &'static str,
    long: String,
    /// The values; none for a switch that is on.
    pub values: Vec<OsString>,
}

impl Setting {
    fn flags(self) -> Vec<OsString> {
        if self.values.is_empty() {
            return vec![OsString::from(format!("--{}", self.long))];
        }
        let long = self.long;
        self.values
            .into_iter()
            .map(|value| {
                let mut flag = OsString::from(format!("--{long}="));
                flag.push(value);
                flag
            })
            .collect()
    }
}

/// Every setting of the file's `text` (relative paths taken from `base`),
/// or every problem in it.
pub fn settings(text: &str, base: &Path) -> Result<Vec<Setting>, Vec<Problem>> {
    let document: Value = serde_yaml_ng::from_str(text).map_err(|error| {
        let hint = "the file must be YAML, as config/collect/collect.yaml".to_string();
        vec![Problem { path: "(document)".into(), message: error.to_string(), hint }]
    })?;
    let mut read =
        Reading { command: CollectArgs::augment_args(Command::new("collect")), ..Reading::default() };
    match document {
        Value::Mapping(top) => read.mapping("", &top, base),
        Value::Null => {}
        _ => read.problem(
            "(document)",
            "not a mapping of keys to values",
            "see config/collect/collect.yaml".into(),
        ),
    }
    if read.problems.is_empty() {
        Ok(read.settings)
    } else {
        Err(read.problems)
    }
}

/// The file read so far.
#[derive(Default)]
struct Reading {
    command: Command,
    settings: Vec<Setting>,
    problems: Vec<Problem>,
}

impl Reading {
    fn problem(&mut self, path: &str, message: impl Into<String>, hint: String) {
        self.problems.push(Problem { path: path.to_string(), message: message.into(), hint });
    }

    /// The keys of `section` ("": the top level).
    fn mapping(&mut self, section: &str, mapping: &serde_yaml_ng::Mapping, base: &Path) {
        for (key, value) in mapping {
            let Some(name) = key.as_str() else {
                let hint = format!("keys here: {}", keys::names_under(section).join(", "));
                self.problem(section_or_document(section), format!("a key that is no word: {key:?}"), hint);
                continue;
            };
            let path = if section.is_empty() { name.to_string() } else { format!("{section}.{name}") };
            let is_section = section.is_empty() && keys::is_section(name);
            match (keys::at(&path), value) {
                (Some(key), value) => self.key(key, value, base),
                (None, Value::Mapping(inner)) if is_section => self.mapping(name, inner, base),
                (None, Value::Null) if is_section => {}
                (None, _) if is_section => {
                    let hint = format!("{name}'s keys: {}", keys::names_under(name).join(", "));
                    self.problem(&path, "a section: a mapping of keys to values", hint)
                }
                (None, _) => self.unknown(section, name, &path),
            }
        }
    }

    fn unknown(&mut self, section: &str, name: &str, path: &str) {
        let names = keys::names_under(section);
        let list = names.join(", ");
        let place = if section.is_empty() { "the top level".to_string() } else { section.to_string() };
        let hint = match int_core::names::closest(name, &names) {
            Some(near) => format!("did you mean {near}? {place}'s keys: {list}"),
            None => format!("{place}'s keys: {list}"),
        };
        self.problem(path, format!("unknown key `{name}`"), hint);
    }

    /// One key's value, read as its flag reads it.
    fn key(&mut self, key: &keys::Key, value: &Value, base: &Path) {
        let Some(arg) = self.command.get_arguments().find(|arg| arg.get_id() == key.id).cloned() else {
            return;
        };
        let long = arg.get_long().unwrap_or(key.id).to_string();
        let hint = || format!("{} is --{long}: `int-tools collect --help` says what it takes", key.path);
        let texts = match texts(&arg, value) {
            Ok(Some(texts)) => texts,
            Ok(None) => return,
            Err(wrong) => {
                return self.problem(&format!("{}{}", key.path, wrong.at), wrong.to_string(), hint())
            }
        };
        let mut values = Vec::new();
        let mut refused = false;
        for (at, text) in texts {
            let value = if key.is_path { base.join(&text).into_os_string() } else { OsString::from(&text) };
            match parse(&arg, &long, &value) {
                Ok(()) => values.push(value),
                Err(error) => {
                    refused = true;
                    self.problem(&format!("{}{at}", key.path), cause(&error), hint());
                }
            }
        }
        // A refused value leaves no setting: a list is the file's whole.
        if !refused {
            self.settings.push(Setting { id: key.id, long, values });
        }
    }
}

fn section_or_document(section: &str) -> &str {
    if section.is_empty() {
        "(document)"
    } else {
        section
    }
}

/// A value of a type its key does not take, at its place in the key
/// (`[2]` in a list, or nothing).
#[derive(Debug, thiserror::Error)]
#[error("{found}, where {wanted} is expected")]
struct WrongType {
    at: String,
    found: &'static str,
    wanted: &'static str,
}

impl WrongType {
    fn at(mut self, at: String) -> WrongType {
        self.at = at;
        self
    }
}

/// A value's texts, each with its place (`[2]` in a list): none for a
/// switch that is off or a key left empty.
fn texts(arg: &Arg, value: &Value) -> Result<Option<Vec<(String, String)>>, WrongType> {
    match (arg.get_action(), value) {
        (_, Value::Null) => Ok(None),
        // No values is the list flags' default: no flag at all.
        (ArgAction::Append, Value::Sequence(items)) if items.is_empty() => Ok(None),
        (ArgAction::SetTrue, Value::Bool(on)) => Ok(on.then(Vec::new)),
        (ArgAction::SetTrue, other) => {
            Err(WrongType { at: String::new(), found: kind(other), wanted: "true or false" })
        }
        (ArgAction::Append, Value::Sequence(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = format!("[{i}]");
                scalar(item).map(|text| (at.clone(), text)).map_err(|wrong| wrong.at(at))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        (_, value) => scalar(value).map(|text| Some(vec![(String::new(), text)])),
    }
}

/// A single value as its flag's text.
fn scalar(value: &Value) -> Result<String, WrongType> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        other => Err(WrongType { at: String::new(), found: kind(other), wanted: "one value" }),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// `value` read by the flag's own parser, alone: the flags it needs
/// beside it are checked once the file's and the command line's meet.
fn parse(arg: &Arg, long: &str, value: &OsString) -> Result<(), clap::Error> {
    let alone = Command::new("collect")
        .no_binary_name(true)
        .arg(arg.clone().requires(clap::builder::Resettable::Reset));
    let mut flag = OsString::from(format!("--{long}="));
    flag.push(value);
    alone.try_get_matches_from([flag]).map(drop)
}

/// What a flag's parser said of a value: its own error's words where it
/// has one (a duration's bounds), clap's otherwise.
fn cause(error: &clap::Error) -> String {
    use std::error::Error;
    if let Some(source) = error.source() {
        return source.to_string();
    }
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

#[cfg(test)]
mod tests;
