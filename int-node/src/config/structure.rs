//! The file's shape, section by section: where serde stops at the first
//! unknown key or wrong type, every section and every list item is read on
//! its own, so that one run names each such problem (a syntax error still
//! stops the read: nothing after it can be trusted).

use serde::de::DeserializeOwned;
use serde_yaml_ng::Value;

use super::problems::{yaml_problem, Problem};
use super::raw::{NodeId, RawCapture, RawExport, RawMempool, RawPipeline, RawPort, RawStats};

/// The top-level keys, as [`super::raw::RawConfig`] has them.
const KEYS: [&str; 10] = [
    "node_id",
    "node_name",
    "eal",
    "mempool",
    "ports",
    "pipelines",
    "export",
    "stats",
    "idle_sleep_us",
    "capture",
];

/// Every unknown key and every value of the wrong shape in `document`,
/// each taken out of it: what is left may be read for the problems a
/// well-shaped file can still have.
pub fn problems(document: &mut Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    let Value::Mapping(top) = document else {
        problems.push(Problem {
            path: "(document)".into(),
            message: "not a mapping of keys to values".into(),
            hint: "a config is `key: value` lines, as in config/*.yaml".into(),
        });
        return problems;
    };
    let mut unknown_keys = Vec::new();
    for (key, value) in top.iter_mut() {
        let Some(name) = key.as_str() else { continue };
        match name {
            "node_id" => one::<NodeId>(value, name, &mut problems),
            "node_name" => one::<String>(value, name, &mut problems),
            "eal" => one::<Vec<String>>(value, name, &mut problems),
            "mempool" => one::<RawMempool>(value, name, &mut problems),
            "ports" => each::<RawPort>(value, name, &mut problems),
            "pipelines" => each::<RawPipeline>(value, name, &mut problems),
            "export" => one::<RawExport>(value, name, &mut problems),
            "stats" => one::<RawStats>(value, name, &mut problems),
            "idle_sleep_us" => one::<u64>(value, name, &mut problems),
            "capture" => each::<RawCapture>(value, name, &mut problems),
            unknown => {
                // Worded as serde words the unknown keys below the top.
                let expected: Vec<String> = KEYS.iter().map(|key| format!("`{key}`")).collect();
                problems.push(Problem {
                    path: unknown.to_string(),
                    message: format!("unknown field `{unknown}`, expected one of {}", expected.join(", ")),
                    hint: "check the spelling against config/README.md; every key is listed there".into(),
                });
                unknown_keys.push(key.clone());
            }
        }
    }
    for key in unknown_keys {
        top.remove(&key);
    }
    problems
}

/// Most problems named in one section.
const MAX_PER_SECTION: usize = 16;

/// A section read as `T`: each problem, with the section's path in front.
/// After each, the key at fault is taken out and the section read again,
/// until it reads, or what is left is a missing key (which the removal
/// may have caused: not said).
fn one<T: DeserializeOwned>(value: &mut Value, path: &str, problems: &mut Vec<Problem>) {
    for attempt in 0..MAX_PER_SECTION {
        // Read from text, not from the value: only that reading says the
        // path of the key at fault. Its line numbers are the snippet's:
        // dropped.
        let text = serde_yaml_ng::to_string(&*value).unwrap_or_default();
        let Err(error) = serde_yaml_ng::from_str::<T>(&text) else { return };
        let mut problem = yaml_problem(&error);
        if let Some((message, _)) = problem.message.split_once(" at line ") {
            problem.message = message.to_string();
        }
        if attempt > 0 && problem.message.contains("missing field") {
            return;
        }
        let inner =
            if problem.path == "(document)" { String::new() } else { std::mem::take(&mut problem.path) };
        problem.path = join(path, &inner);
        let unknown = problem.message.contains("unknown field").then(|| problem.message.split('`').nth(1));
        let mended = match (unknown.flatten(), placeholder(&problem.message)) {
            (Some(key), _) => remove(value, &inner, Some(key.to_string())),
            // A value of the wrong type is replaced by one of the right
            // type (its problem said): a required key stays there.
            (None, Some(right)) => replace(value, &inner, right),
            (None, None) => remove(value, &inner, None),
        };
        problems.push(problem);
        if !mended {
            return;
        }
    }
}

fn join(path: &str, inner: &str) -> String {
    match inner {
        "" => path.to_string(),
        inner if inner.starts_with('[') => format!("{path}{inner}"),
        inner => format!("{path}.{inner}"),
    }
}

/// A value of the type serde expected (`expected u32`, `a string`, ...).
fn placeholder(message: &str) -> Option<Value> {
    let expected = message.split("expected ").nth(1)?;
    let numbers = ["u8", "u16", "u32", "u64", "usize", "i32", "i64", "f64", "a number", "an integer"];
    if numbers.iter().any(|n| expected.starts_with(n)) {
        Some(Value::Number(0.into()))
    } else if expected.starts_with("a string") {
        Some(Value::String(String::new()))
    } else if expected.starts_with("a boolean") {
        Some(Value::Bool(false))
    } else if expected.starts_with("a sequence") {
        Some(Value::Sequence(Vec::new()))
    } else {
        None
    }
}

/// Puts `new` at `path` in `value`; whether there was a value to replace.
fn replace(value: &mut Value, path: &str, new: Value) -> bool {
    match at(value, path) {
        Some(old) => {
            *old = new;
            true
        }
        None => false,
    }
}

/// The value at `path` (`a.b[2].c`; empty: `value` itself).
fn at<'v>(value: &'v mut Value, path: &str) -> Option<&'v mut Value> {
    let mut at = value;
    for step in path.split('.').filter(|s| !s.is_empty()) {
        let (name, index) = match step.split_once('[') {
            Some((name, rest)) => (name, Some(rest.trim_end_matches(']').parse::<usize>().ok()?)),
            None => (step, None),
        };
        if !name.is_empty() {
            at = at.get_mut(name)?;
        }
        if let Some(i) = index {
            at = at.get_mut(i)?;
        }
    }
    Some(at)
}

/// Takes the value at `path` out of `value`, or key `key` of the mapping
/// there; whether anything was taken.
fn remove(value: &mut Value, path: &str, key: Option<String>) -> bool {
    let (parent, last) = match key {
        Some(key) => (path, key),
        None => match path.rsplit_once('.') {
            Some((parent, last)) if !last.contains('[') => (parent, last.to_string()),
            None if !path.is_empty() && !path.contains('[') => ("", path.to_string()),
            _ => return false,
        },
    };
    at(value, parent).and_then(Value::as_mapping_mut).and_then(|map| map.remove(last.as_str())).is_some()
}

/// A list whose items are each read as `T`.
fn each<T: DeserializeOwned>(value: &mut Value, path: &str, problems: &mut Vec<Problem>) {
    match value {
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                one::<T>(item, &format!("{path}[{i}]"), problems);
            }
        }
        _ => one::<Vec<T>>(value, path, problems),
    }
}
