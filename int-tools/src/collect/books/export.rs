//! The books' one way out: what a reader's books hand each finding to
//! ([`Exporter`]: InfluxDB, IPFIX, the stream, standard output), and the
//! datagrams as they came to the stream's batches ([`Datagrams`]). The
//! exporters implement these; the books know no exporter.

use std::sync::Arc;

use super::datagram::{Arrival, Came, Taken};
use super::hops::{PathChange, Seen};
use super::ledger::Observed;
use crate::records::Record;

/// What an exporter takes from the books; each takes the kinds it
/// writes and ignores the others.
pub trait Exporter: Send + Sync {
    /// Whether it takes the records collect prints: building a record
    /// costs, and is skipped when no exporter wants them.
    fn wants_records(&self) -> bool {
        false
    }
    /// A record in the schema of docs/output.md.
    fn record(&self, _record: &Record) {}
    /// A record an aggregator read off the stream, its names its own:
    /// said again as it came (standard output), never published again.
    fn read_back(&self, _record: &Record) {}
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
    /// A datagram refused for `error` (`len`: its length, if read).
    fn refused(&self, _arrival: &Arrival, _error: &str, _len: Option<usize>) {}
    /// A drop report of `node` (the reporting node) for `reason`.
    fn drop_reported(&self, _node: u32, _reason: u8) {}
    /// A handle of its own for one reader's books, for an exporter that adds
    /// up per reader (IPFIX: no lock or queue shared per report); none:
    /// every reader shares this one.
    fn for_reader(&self) -> Option<Arc<dyn Exporter>> {
        None
    }
}

/// A reader's own handle for its datagrams as they came (the stream's
/// batch format): filled per datagram without a lock, handed over in
/// chunks.
pub trait Datagrams: Send {
    /// One datagram and what it was.
    fn push(&mut self, came: &Came<'_>, taken: &Taken);
    /// What is filled, if it has waited long enough.
    fn hand_over_if_due(&mut self);
    /// What is filled, now (the reader is ending).
    fn hand_over(&mut self);
}
