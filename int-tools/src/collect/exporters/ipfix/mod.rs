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
mod templates;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Running;
use crate::collect::books::export::Exporter;
use crate::collect::books::hops::{PathChange, Seen};
use crate::collect::books::ledger::Observed;
use crate::collect::counts::{counter_family, counts_of, Counted};
use interval::Interval;

/// The enterprise number our own elements are under by default: RFC
/// 5612's, for documentation and examples. The project has none of its
/// own; an operator with one gives it with `--ipfix-pen`.
pub const DEFAULT_PEN: u32 = 32473;

/// How messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: SocketAddr,
    pub transport: Transport,
    pub interval: Duration,
    pub domain: u32,
    pub pen: u32,
    /// Flows, hops and links each kept per interval at most.
    pub limit: usize,
}

impl Settings {
    /// Reads `udp://HOST:PORT`, `tcp://HOST:PORT` or `HOST:PORT` (UDP).
    pub fn parse_target(target: &str) -> Result<(SocketAddr, Transport), TargetError> {
        let error = |cause| TargetError { target: target.to_string(), cause };
        let (transport, rest) = match target.split_once("://") {
            Some(("udp", rest)) => (Transport::Udp, rest),
            Some(("tcp", rest)) => (Transport::Tcp, rest),
            Some((other, _)) => return Err(error(TargetCause::Scheme(other.to_string()))),
            None => (Transport::Udp, target),
        };
        let server = rest
            .to_socket_addrs()
            .map_err(|e| error(TargetCause::Address(e)))?
            .next()
            .ok_or_else(|| error(TargetCause::NoAddress))?;
        Ok((server, transport))
    }
}

/// An `--ipfix` target the exporter cannot send to.
#[derive(Debug, thiserror::Error)]
#[error("--ipfix {target:?}: {cause}")]
pub struct TargetError {
    pub target: String,
    pub cause: TargetCause,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetCause {
    #[error("{0}:// is not spoken, udp:// or tcp://")]
    Scheme(String),
    #[error("{0}; give it as udp://HOST:PORT or tcp://HOST:PORT")]
    Address(std::io::Error),
    #[error("the host has no address")]
    NoAddress,
}

/// What the exporter did, shared with the summary.
#[derive(Debug, Default)]
pub struct Counts {
    pub messages: AtomicU64,
    /// Data records sent.
    pub records: AtomicU64,
    /// Template records sent (each template, each time).
    pub templates: AtomicU64,
    /// Data records not sent: no connection, or the send failed.
    pub failed: AtomicU64,
    /// Flows, hops and links beyond an interval's limit.
    pub unrecorded: AtomicU64,
    pub connections: AtomicU64,
    /// TCP connections dropped because a message did not go within
    /// [`exporter::SEND_TIMEOUT`] (a collector that stopped reading).
    pub timeouts: AtomicU64,
}

/// One reader's interval; the exporter takes it at the interval's end.
type Table = Arc<Mutex<Interval>>;

/// Every reader's table, for the exporter.
#[derive(Default)]
pub struct Tables {
    list: Mutex<Vec<Table>>,
}

impl Tables {
    fn add(&self, limit: usize) -> Table {
        let table = Arc::new(Mutex::new(Interval::new(limit)));
        if let Ok(mut list) = self.list.lock() {
            list.push(Arc::clone(&table));
        }
        table
    }

    /// Every reader's interval, taken (each starts a new one) and merged.
    pub fn take(&self, limit: usize) -> Interval {
        let tables = self.list.lock().map(|list| list.clone()).unwrap_or_default();
        let mut merged = Interval::new(limit);
        for table in tables {
            // A reader holds its table for one report at a time.
            let Ok(mut interval) = table.lock() else { continue };
            let taken = std::mem::replace(&mut *interval, Interval::new(limit));
            drop(interval);
            if merged.is_empty() && merged.unrecorded == 0 {
                merged = taken;
            } else {
                merged.merge(taken);
            }
        }
        merged
    }
}

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
