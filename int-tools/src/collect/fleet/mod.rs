//! One fleet view over the aggregators of a partitioned stream
//! (docs/scale-out.md, "One fleet view"). Each aggregator's books are
//! whole for its flows; it publishes them ([`publish`]) as a [`State`] to
//! `PREFIX-view.ID` every `--nats-view-s` and once at a graceful stop, and
//! `collect --fleet-view` ([`gather`]) merges the latest state of every
//! aggregator into books of its own, which its summary, metrics and web
//! view read as any collector's: sums added, latency histograms merged
//! bucket by bucket (never percentiles averaged).

pub mod gather;
pub mod publish;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::collect::books::congestion;
use crate::collect::books::hops::Hops;
use crate::collect::books::join::Counts as JoinCounts;
use crate::collect::books::ledger::Ledger;
use crate::collect::books::sender::Sender;
use crate::collect::books::snapshot::Snapshot;
use crate::collect::books::Totals;

/// The flows an aggregator's state carries at most, the most reported
/// and the most lossy (the overall figures count them all).
pub const FLOWS: usize = 1000;

/// What an aggregator publishes of its books, and the fleet view reads:
/// the one type both sides use, in CBOR (as `--state` keeps books).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The aggregator's id, as its subject says it.
    pub id: String,
    /// Its publishing interval: the view drops it after three silent ones.
    pub every_ms: u64,
    /// Sent at a graceful stop: its books are final, kept by the view.
    pub last: bool,
    /// The overall latency and packets lost, and the [`FLOWS`] flows.
    pub ledger: Ledger,
    /// Nodes, links, sinks, path changes; each flow's path stays home.
    pub hops: Hops,
    pub senders: BTreeMap<SocketAddr, Sender>,
    pub totals: Totals,
    pub joins: JoinCounts,
    /// An aggregator over partitions: each partition's books it holds.
    /// The view takes a partition's books from its latest owner's state
    /// only, so a partition taken over with its checkpoint is counted
    /// once (these, where present, stand for the books above).
    #[serde(default)]
    pub partitions: Vec<Partition>,
}

/// One partition's books in its owner's state (as a state of their own),
/// and the revision of the lease its owner took it at: a later owner's is
/// higher.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Partition {
    pub partition: u8,
    pub epoch: u64,
    pub books: State,
}

impl Partition {
    pub fn of(snapshot: Snapshot, partition: u8, epoch: u64) -> Partition {
        Partition { partition, epoch, books: State::of(snapshot, "", 0, false) }
    }
}

impl State {
    pub fn of(snapshot: Snapshot, id: &str, every_ms: u64, last: bool) -> State {
        State {
            id: id.to_string(),
            every_ms,
            last,
            ledger: snapshot.ledger,
            hops: snapshot.hops.without_paths(),
            senders: snapshot.senders,
            totals: snapshot.totals,
            joins: snapshot.joins,
            partitions: Vec::new(),
        }
    }

    /// As a snapshot, to merge with the others'.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            ledger: self.ledger.clone(),
            hops: self.hops.clone(),
            senders: self.senders.clone(),
            totals: self.totals.clone(),
            joins: self.joins,
            congestion: congestion::View::default(),
        }
    }

    pub fn encode(&self) -> Result<Vec<u8>, ciborium::ser::Error<std::io::Error>> {
        let mut bytes = Vec::new();
        ciborium::into_writer(self, &mut bytes)?;
        Ok(bytes)
    }

    pub fn decode(bytes: &[u8]) -> Result<State, ciborium::de::Error<std::io::Error>> {
        ciborium::from_reader(bytes)
    }
}

/// The subject an aggregator's states go to.
pub fn subject(prefix: &str, id: &str) -> String {
    format!("{prefix}-view.{id}")
}

/// The subjects of every aggregator's states.
pub fn subjects(prefix: &str) -> String {
    format!("{prefix}-view.*")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::latency::Latency;
    use crate::collect::books::{Books, Sizes};

    const SIZES: Sizes = Sizes { flows: 100, detailed_flows: 10, nodes: 10, links: 10 };

    /// Books whose link 1 to 2 took `values`, and `reports` reports.
    fn books(values: impl Iterator<Item = i64>, reports: u64) -> Books {
        let mut books = Books::bounded(SIZES);
        let mut latency = Latency::new(2);
        values.for_each(|ns| latency.record(ns));
        books.hops.links.insert((1, 2), latency);
        books.totals.reports = reports;
        books
    }

    /// Two aggregators' states, through CBOR and merged, give the link's
    /// distribution of one collector that took every value: the same
    /// count and the same percentiles (histograms merged bucket by bucket),
    /// and the reports summed.
    #[test]
    fn two_states_merged_are_the_books_of_one() {
        let values: Vec<i64> =
            (0..5000).map(|i| 10_000 + (i * 7919) % 90_000).chain([4_000_000; 60]).collect();
        let whole = books(values.iter().copied(), 30);
        let halves = [0, 1].map(|half| {
            let mine = values.iter().enumerate().filter(|(i, _)| i % 2 == half).map(|(_, v)| *v);
            let state = State::of(Snapshot::of(&books(mine, 10 + 10 * half as u64)), "a", 2000, false);
            State::decode(&state.encode().unwrap()).unwrap()
        });
        let merged = Snapshot::merge(halves.iter().map(State::snapshot));
        assert_eq!(merged.totals.reports, 30);
        let (ours, theirs) = (&merged.hops.links[&(1, 2)], &whole.hops.links[&(1, 2)]);
        assert_eq!(ours.count(), theirs.count());
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(ours.quantile(q), theirs.quantile(q), "q {q}");
        }
        assert!(State::decode(b"not a state").is_err());
    }
}
