//! What every part of collect counts, shown the same way everywhere: a
//! part's counts ([`Counted`]) as the summary's JSON object, its text line
//! and its Prometheus families, and the exposition format's plain writers.
//! A leaf: receivers, exporters, views and the saved state all count, and
//! none of them imports another for it.

use std::fmt::Write as _;
use std::sync::Arc;

#[cfg(test)]
use serde_json::Value;

/// An output's counts, for the summary and the Prometheus page.
pub trait Counted: Send + Sync {
    /// The summary's key (`influx`, `nats`) and the text summary's words
    /// for what it counts (`InfluxDB points`).
    fn names(&self) -> (&'static str, &'static str);
    /// Outcomes by name, in the order the summary prints them.
    fn counts(&self) -> Vec<(&'static str, u64)>;
    /// Its Prometheus families.
    fn metrics(&self, out: &mut String);
    /// Those of [`Counted::counts`] named in `names`, in the summary's
    /// order: the outcomes of one Prometheus family.
    fn outcomes(&self, names: &[&str]) -> Vec<(&'static str, u64)> {
        self.counts().into_iter().filter(|(name, _)| names.contains(name)).collect()
    }
}

/// [`Counted::counts`] of a struct of `AtomicU64` counts, each under its
/// field's name, in the order given: `counts_of!(self, written, dropped)`.
/// The summary's and the metrics' names are the fields': they cannot
/// drift apart.
macro_rules! counts_of {
    ($counts:expr, $($field:ident),+ $(,)?) => {
        vec![$((stringify!($field), $counts.$field.load(std::sync::atomic::Ordering::Relaxed))),+]
    };
}
pub(crate) use counts_of;

/// The parts' counts as the summary has them: each part's counts, by
/// name, under its key, in the parts' order.
pub struct OutputCounts<'a>(pub &'a [Arc<dyn Counted>]);

impl serde::Serialize for OutputCounts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|c| (c.names().0, Counts(c.counts()))))
    }
}

/// One part's counts, by name.
struct Counts(Vec<(&'static str, u64)>);

impl serde::Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// The outputs' counts as the summary's JSON objects, by key.
#[cfg(test)]
pub fn counts_json(counted: &[Arc<dyn Counted>]) -> Vec<(&'static str, Value)> {
    let Ok(Value::Object(all)) = serde_json::to_value(OutputCounts(counted)) else { return Vec::new() };
    counted.iter().map(|c| c.names().0).zip(all.into_iter().map(|(_, counts)| counts)).collect()
}

/// Checks how an output's counts show: its summary key and object, its
/// text summary line, and its Prometheus samples (every one: `family`'s
/// `outcomes`, in order).
#[cfg(test)]
pub fn assert_shown(
    counts: impl Counted + 'static,
    summary: (&str, Value),
    text: &str,
    family: &str,
    outcomes: &[(&str, u64)],
) {
    let counted: Vec<Arc<dyn Counted>> = vec![Arc::new(counts)];
    assert_eq!(counts_json(&counted), [summary]);
    assert_eq!(counts_text(&counted), [text]);
    let mut page = String::new();
    counted.iter().for_each(|c| c.metrics(&mut page));
    let samples: Vec<&str> = page.lines().filter(|l| !l.starts_with('#')).collect();
    let wanted: Vec<String> =
        outcomes.iter().map(|(o, n)| format!("{family}{{outcome=\"{o}\"}} {n}")).collect();
    assert_eq!(samples, wanted);
}

/// The outputs' counts as the text summary's lines.
pub fn counts_text(counted: &[Arc<dyn Counted>]) -> Vec<String> {
    counted
        .iter()
        .map(|c| {
            let counts: Vec<String> =
                c.counts().iter().map(|(name, count)| format!("{count} {name}")).collect();
            format!("{}: {}", c.names().1, counts.join(", "))
        })
        .collect()
}

pub fn metric_head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    metric_head(out, name, help, "counter");
    let _ = writeln!(out, "{name} {value}");
}

pub fn gauge(out: &mut String, name: &str, help: &str, value: u64) {
    metric_head(out, name, help, "gauge");
    let _ = writeln!(out, "{name} {value}");
}

/// A counter family with an `outcome` label (an output's counts).
pub fn counter_family(
    out: &mut String,
    name: &str,
    help: &str,
    outcomes: impl IntoIterator<Item = (&'static str, u64)>,
) {
    metric_head(out, name, help, "counter");
    for (outcome, count) in outcomes {
        let _ = writeln!(out, "{name}{{outcome=\"{outcome}\"}} {count}");
    }
}
