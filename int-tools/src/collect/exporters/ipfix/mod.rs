//! collect's IPFIX exporter (`--ipfix udp://HOST:PORT` or `tcp://...`,
//! RFC 7011): per export interval (`--ipfix-interval`) a data record per
//! flow, per hop, per link and per node's drop reason (docs/ipfix.md).
//! Each reader adds its reports' figures up into an interval of its own
//! ([`Recorder`]): nothing crosses a thread per report. At the interval's
//! end the exporter's thread takes and merges them ([`Tables::take`]) and
//! writes the messages.

pub mod args;
mod exporter;
mod interval;
mod message;
mod shared;
mod templates;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Running;
use crate::collect::books::export::Exporter;
use crate::collect::books::hops::{PathChange, Seen};
use crate::collect::books::ledger::Observed;
use crate::collect::counts::{counter_family, counts_of, Counted};
use shared::Table;
pub use shared::{Counts, Settings, Tables, TargetCause, TargetError, Transport};

/// The enterprise number our own elements are under by default: RFC
/// 5612's, for documentation and examples. The project has none of its
/// own; an operator with one gives it with `--ipfix-pen`.
pub const DEFAULT_PEN: u32 = 32473;

/// A reader's end: it adds what its books are given to its own table
/// (locked by this reader only, but for the exporter's take once an
/// interval). The exporter ends once every recorder is gone.
pub struct Recorder {
    table: Table,
    tables: Arc<Tables>,
    limit: usize,
    /// When the reader's current batch arrived (ns since the epoch); 0: a
    /// reader that does not say (the aggregator), the clock is read.
    arrival_ns: AtomicU64,
    /// Never sends: its channel's end tells the exporter the readers are.
    alive: SyncSender<()>,
}

impl Exporter for Recorder {
    fn for_reader(&self) -> Option<Arc<dyn Exporter>> {
        let table = self.tables.add(self.limit);
        let (tables, limit, alive) = (Arc::clone(&self.tables), self.limit, self.alive.clone());
        Some(Arc::new(Recorder { table, tables, limit, arrival_ns: AtomicU64::new(0), alive }))
    }

    fn arrived(&self, at_ns: u64) {
        self.arrival_ns.store(at_ns, Ordering::Relaxed);
    }

    fn observed(&self, observed: &Observed) {
        if let Ok(mut interval) = self.table.lock() {
            interval.observed(observed, self.arrival());
        }
    }

    fn hops(&self, seen: &Seen<'_>) {
        if let Ok(mut interval) = self.table.lock() {
            interval.hops(seen, self.arrival());
        }
    }

    fn path_change(&self, change: &PathChange) {
        if let Ok(mut interval) = self.table.lock() {
            interval.path_change(change.flow, self.arrival());
        }
    }

    fn drop_reported(&self, node: u32, reason: u8) {
        if let Ok(mut interval) = self.table.lock() {
            interval.drop_reported(node, reason, self.arrival());
        }
    }
}

impl Recorder {
    /// When the report being added arrived: ns since the epoch.
    fn arrival(&self) -> u64 {
        match self.arrival_ns.load(Ordering::Relaxed) {
            0 => now_ns(),
            at_ns => at_ns,
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("ipfix", "IPFIX records")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, records, templates, messages, failed, unrecorded, connections, timeouts)
    }

    fn metrics(&self, out: &mut String) {
        counter_family(
            out,
            "int_collect_ipfix_records_total",
            "IPFIX data records by outcome (records: sent).",
            self.outcomes(&["records", "failed", "unrecorded"]),
        );
        counter_family(
            out,
            "int_collect_ipfix_connections_total",
            "IPFIX TCP connections by outcome (opened; dropped as a send timed out).",
            self.outcomes(&["connections", "timeouts"]),
        );
    }
}

/// A recorder whose intervals no exporter takes: what a reader does for
/// the export, without a thread (tests).
pub fn detached(limit: usize) -> Arc<dyn Exporter> {
    let (alive, _) = mpsc::sync_channel(0);
    let tables = Arc::new(Tables::default());
    let table = tables.add(limit);
    Arc::new(Recorder { table, tables, limit, arrival_ns: AtomicU64::new(0), alive })
}

/// Starts the exporter's thread; it exports the last interval and ends
/// once every [`Recorder`] is dropped.
pub fn start(settings: Settings) -> Running {
    let (alive, ended) = mpsc::sync_channel(0);
    let counts = Arc::new(Counts::default());
    let tables = Arc::new(Tables::default());
    let limit = settings.limit;
    let table = tables.add(limit);
    let arrival_ns = AtomicU64::new(0);
    let recorder = Recorder { table, tables: Arc::clone(&tables), limit, arrival_ns, alive };
    let exporter = exporter::Exporter::new(settings, Arc::clone(&counts));
    let thread = std::thread::spawn(move || exporter.run(&tables, &ended));
    Running { exporter: Arc::new(recorder), counted: counts, thread }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts as the summary, the text summary and the Prometheus page
    /// show them: no `dropped` (nothing is queued, so nothing is refused);
    /// records by outcome, and TCP connections opened and timed out.
    #[test]
    fn counts_in_the_summary_and_on_the_page() {
        use crate::collect::counts::{counts_json, counts_text};
        let counts = Counts::default();
        counts.records.store(9, Ordering::Relaxed);
        counts.unrecorded.store(1, Ordering::Relaxed);
        counts.connections.store(3, Ordering::Relaxed);
        counts.timeouts.store(2, Ordering::Relaxed);
        let counted: Vec<Arc<dyn Counted>> = vec![Arc::new(counts)];
        let summary = serde_json::json!({"records": 9, "templates": 0, "messages": 0, "failed": 0,
                                         "unrecorded": 1, "connections": 3, "timeouts": 2});
        assert_eq!(counts_json(&counted), [("ipfix", summary)]);
        assert_eq!(
            counts_text(&counted),
            ["IPFIX records: 9 records, 0 templates, 0 messages, 0 failed, 1 unrecorded, 3 connections, 2 timeouts"]
        );
        let mut page = String::new();
        counted[0].metrics(&mut page);
        let samples: Vec<&str> = page.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "int_collect_ipfix_records_total{outcome=\"records\"} 9",
                "int_collect_ipfix_records_total{outcome=\"failed\"} 0",
                "int_collect_ipfix_records_total{outcome=\"unrecorded\"} 1",
                "int_collect_ipfix_connections_total{outcome=\"connections\"} 3",
                "int_collect_ipfix_connections_total{outcome=\"timeouts\"} 2",
            ]
        );
    }
}
