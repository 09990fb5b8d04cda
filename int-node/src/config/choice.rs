//! A setting whose value is one of an enum's names.

use std::str::FromStr;

use int_core::names::{parse_name, UnknownName};
use serde::{Deserialize, Deserializer};
use strum::VariantNames;

use super::problems::Problems;

/// A named value as the YAML wrote it. Deserializing never fails on an
/// unknown name: validation reports it as one problem among the others,
/// with the valid names (taken from the enum) and the nearest of them.
#[derive(Debug, Clone)]
pub struct Choice<T>(Result<T, UnknownName>);

/// A name as YAML may write it: a string, or a number (`version: 2.1`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Written {
    Text(String),
    Integer(i64),
    Number(f64),
}

impl<'de, T: FromStr + VariantNames> Deserialize<'de> for Choice<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = match Written::deserialize(deserializer)? {
            Written::Text(text) => text,
            Written::Integer(n) => n.to_string(),
            Written::Number(x) => x.to_string(),
        };
        Ok(Choice(parse_name(&text)))
    }
}

impl<T: Copy> Choice<T> {
    /// The value, where the name named one.
    pub fn value(&self) -> Option<T> {
        self.0.as_ref().ok().copied()
    }

    /// The value, or a problem at `path` (then `None`).
    pub fn get(&self, path: &str, problems: &mut Problems) -> Option<T> {
        match &self.0 {
            Ok(value) => Some(*value),
            Err(unknown) => {
                problems.add(path, format!("unknown value {:?}", unknown.given), unknown.hint());
                None
            }
        }
    }
}

/// An optional named setting: its value, `default` when it is left out,
/// or `default` and a problem when it names nothing.
pub fn chosen<T: Copy>(choice: &Option<Choice<T>>, default: T, path: &str, problems: &mut Problems) -> T {
    choice.as_ref().map_or(Some(default), |c| c.get(path, problems)).unwrap_or(default)
}
