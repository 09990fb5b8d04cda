//! collect's outputs beside its books and standard output: InfluxDB
//! (`--influx`), IPFIX (`--ipfix`) and a NATS JetStream stream (`--nats`).
//! Another (Kafka) is one more implementation of [`Output`] and
//! [`Counted`] started in [`super::start_outputs`]; the receivers do not
//! change.
//!
//! The receivers hand what they find to every output and never wait on
//! one: each output queues (IPFIX: each reader adds up an interval of its
//! own), writes on a thread of its own, and counts what it could not
//! write.

pub(super) mod influx;
pub(super) mod ipfix;
pub(super) mod label;
pub(super) mod metrics;
pub(super) mod plot;
pub(super) mod print;

use std::sync::Arc;

#[cfg(test)]
use serde_json::Value;

use super::Observed;
use crate::collect::books::hops::{PathChange, Seen};

/// What an output takes; each takes the kinds it writes and ignores the
/// others.
pub trait Output: Send + Sync {
    /// Whether it takes the records collect prints: building a record
    /// costs, and is skipped under `--quiet` when no output wants them.
    fn wants_records(&self) -> bool {
        false
    }
    /// A record in the schema of docs/output.md.
    fn record(&self, _record: &crate::records::Record) {}
    /// What is handed over next arrived at `at_ns` (ns since the epoch,
    /// once per batch of datagrams): the time of arrival without a clock
    /// read per report.
    fn arrived(&self, _at_ns: u64) {}
    /// A latency or loss observation.
    fn observed(&self, _observed: &Observed) {}
    /// A report's hops.
    fn hops(&self, _seen: &Seen<'_>) {}
    /// A flow's new path.
    fn path_change(&self, _change: &PathChange) {}
    /// A drop report of `node` (the reporting node) for `reason`.
    fn drop_reported(&self, _node: u32, _reason: u8) {}
    /// A handle of its own for one reader's books, for an output that adds
    /// up per reader (IPFIX: no lock or queue shared per report); none:
    /// every reader shares this one.
    fn for_reader(&self) -> Option<Arc<dyn Output>> {
        None
    }
}

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

/// A started output: the receivers' handle, its counts, its writer. The
/// writer ends, after writing what is queued, once every handle is gone.
pub struct Running {
    pub output: Arc<dyn Output>,
    pub counted: Arc<dyn Counted>,
    pub thread: std::thread::JoinHandle<()>,
}

/// The outputs' counts as the summary has them: each output's counts, by
/// name, under its key, in the outputs' order.
pub struct OutputCounts<'a>(pub &'a [Arc<dyn Counted>]);

impl serde::Serialize for OutputCounts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|c| (c.names().0, Counts(c.counts()))))
    }
}

/// One output's counts, by name.
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
