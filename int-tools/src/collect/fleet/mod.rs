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

/// The closed congestion episodes an aggregator's state carries at most,
/// the newest (each with its culprits and victims, about half a KB: the
/// 1000 the books keep would fill most of a message).
pub const EPISODES: usize = 100;

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
    /// Nodes, links, sinks, path changes, and the paths of the flows the
    /// ledger carries (the others' stay home, only counted).
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
    /// Every queue's last figures and counts, its open episode with its
    /// culprits and victims, and the [`EPISODES`] newest closed episodes
    /// (a state without them, from an earlier release, has none).
    #[serde(default)]
    pub congestion: congestion::View,
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
        let carried = |flow: &_| snapshot.ledger.flows.contains_key(flow);
        let hops = snapshot.hops.with_paths_of(carried);
        let mut congestion = snapshot.congestion;
        let older = congestion.recent.len().saturating_sub(EPISODES);
        congestion.recent.drain(..older);
        State {
            id: id.to_string(),
            every_ms,
            last,
            ledger: snapshot.ledger,
            hops,
            senders: snapshot.senders,
            totals: snapshot.totals,
            joins: snapshot.joins,
            partitions: Vec::new(),
            congestion,
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
            congestion: self.congestion.clone(),
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

    /// A state at fleet scale, 50 nodes and 1000 flows of five hops each
    /// (their paths carried, each flow's latency and some loss, every
    /// node's queue followed, bursts making episodes with culprits and
    /// victims, more than a state carries): within the servers' 1 MB
    /// max_payload (625 KB), its paths and queues through CBOR whole, its
    /// episodes the newest.
    #[test]
    fn a_state_at_fleet_scale_fits_a_message() {
        use crate::collect::books::congestion::figure::Carrier;
        use crate::collect::books::congestion::{Packet, When};
        use crate::collect::books::hops::Seen;
        use crate::collect::books::ledger::{Measure, Observed};
        use int_core::flow::FlowKey;
        use int_core::hop::Hop;
        let sizes = Sizes { flows: 5000, detailed_flows: 1000, nodes: 64, links: 512 };
        let mut books = Books::bounded(sizes);
        let t0 = 1_700_000_000_000_000_000u64;
        for report in 0..20u64 {
            for f in 0..1000u32 {
                let flow = FlowKey::v4(
                    [10, 1, (f >> 8) as u8, f as u8].into(),
                    [10, 2, 0, 1].into(),
                    17,
                    7000,
                    5000,
                );
                let at = t0 + report * 1_000_000 + u64::from(f) * 1000;
                let burst = (10..13).contains(&report) && f % 7 == 0;
                let hops: Vec<Hop> = (0..5u32)
                    .map(|h| Hop {
                        node_id: Some((f + h * 11) % 50 + 1),
                        hop_latency: Some(700 + h),
                        queue: Some((0, if burst { 4000 } else { 10 + h })),
                        ingress_timestamp: Some(at + u64::from(h) * 10_000),
                        egress_timestamp: Some(at + u64::from(h) * 10_000 + 700),
                        ..Hop::default()
                    })
                    .collect();
                let seen = Seen {
                    flow,
                    hops: &hops,
                    sink: Some(99),
                    sink_ingress_ns: Some(at + 60_000),
                    at_ms: report,
                };
                books.hops.observe(&seen);
                let when = When { report_ns: Some(at + 60_000), arrival_ns: at + 70_000 };
                let packet = Packet { flow, bytes: Some(1500), queue_alert: false };
                books.congestion.hops(&hops, Carrier::Int21, when, Some(&packet));
                let latency = Measure::Latency { ns: 60_000 + i64::from(f), flow_seq: None, hops: Some(5) };
                let measure = if report == 19 && f % 3 == 0 { Measure::Lost(2) } else { latency };
                let observed =
                    Observed { flow, source_node: Some(1), sink_node: Some(99), measure, at_ns: Some(at) };
                books.ledger.observe(&observed);
            }
        }
        let state = State::of(Snapshot::view(&books, FLOWS), "a", 2000, false);
        let bytes = state.encode().unwrap();
        let back = State::decode(&bytes).unwrap();
        let episodes: usize = back.congestion.recent.len()
            + back.congestion.queues.values().filter(|q| q.open.is_some()).count();
        eprintln!(
            "a state of {} nodes, {} flows, {} paths, {} queues, {episodes} episodes: {} bytes",
            back.hops.nodes.len(),
            back.ledger.flows.len(),
            back.hops.paths(),
            back.congestion.queues.len(),
            bytes.len()
        );
        assert_eq!(back.ledger.flows.len(), 1000);
        assert_eq!(back.hops.paths(), 1000);
        assert_eq!(back.congestion.queues.len(), 50);
        let view = books.congestion.view();
        assert_eq!(back.congestion.queues, view.queues);
        assert_eq!(
            back.congestion.recent,
            view.recent.iter().skip(view.recent.len() - EPISODES).cloned().collect::<Vec<_>>()
        );
        assert!(view.recent.len() > EPISODES, "the bursts made more episodes than a state carries");
        assert!(bytes.len() < 1 << 20, "{} bytes", bytes.len());
    }
}
