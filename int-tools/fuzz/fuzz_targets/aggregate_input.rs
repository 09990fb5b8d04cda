//! What an aggregator reads off the stream, judged beyond "no panic": any
//! bytes as a run of messages (split at 0xFF, a byte no JSON text holds; a
//! message starting 0xFE comes without its `Int-Schema` header) into one
//! set of small books. Each message is either booked or counted malformed
//! by a `stream:` reason, exactly one of the two, and counted once; a
//! refused one changes no book; the books stay within their sizes and the
//! reasons within their cap; a loss or latency booked is the record's
//! value, within what its report carries; the totals are the exact sums of
//! what was booked (never wrapped).
#![no_main]

use int_core::latency::MAX_ONE_WAY_NS;
use int_tools::collect::receivers::records::{take_record, Taken, MAX_REASONS};
use int_tools::collect::books::{Books, Sizes};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const SIZES: Sizes = Sizes { flows: 4, detailed_flows: 2, nodes: 8, links: 8 };
/// Messages per input at most: enough to fill every book past its size.
const MESSAGES: usize = 64;

/// What the books must hold: the sums of what was booked, kept wide.
#[derive(Default)]
struct Model {
    lost: u128,
    latencies: u64,
    latency_sum: i128,
}

fuzz_target!(|data: &[u8]| {
    let mut books = Books::bounded(SIZES);
    let mut model = Model::default();
    for message in data.split(|byte| *byte == 0xFF).take(MESSAGES) {
        let (schema, payload) = match message.split_first() {
            Some((0xFE, rest)) => (None, rest),
            _ => (Some("1"), message),
        };
        take_one(&mut books, &mut model, schema, payload);
    }
});

fn take_one(books: &mut Books, model: &mut Model, schema: Option<&str>, payload: &[u8]) {
    let before = Counts::of(books);
    let taken = take_record(schema, payload, books);
    let after = Counts::of(books);
    assert_eq!(after.received, before.received + 1, "each message counted once");
    match &taken {
        Taken::Malformed(reason) => {
            assert!(reason.starts_with("stream: "), "{reason}");
            assert_eq!(after.malformed, before.malformed + 1, "refused: {reason}");
            assert_eq!(after.reports, before.reports + 1, "a refused message counts as one report");
            assert_eq!(after.booked, before.booked, "a refused message books nothing: {reason}");
        }
        Taken::Report | Taken::Derived => {
            assert_eq!(after.malformed, before.malformed, "booked, not refused");
            let report = u64::from(taken == Taken::Report);
            assert_eq!(after.reports, before.reports + report);
            assert!(serde_json::from_slice::<Value>(payload).is_ok(), "only a JSON record is booked");
            assert_eq!(schema, Some("1"), "only a record of our schema is booked");
            model.add(payload);
        }
    }
    within_sizes(books);
    assert_eq!(u128::from(books.ledger.overall.lost), model.lost, "losses summed exactly");
    assert_eq!(books.ledger.overall.latency.count(), model.latencies);
    assert_eq!(books.ledger.overall.latency.sum(), model.latency_sum, "latencies summed exactly");
}

impl Model {
    /// A booked record's loss or latency, read here from its text.
    fn add(&mut self, payload: &[u8]) {
        let Ok(record) = serde_json::from_slice::<Value>(payload) else { return };
        match record.get("type").and_then(Value::as_str) {
            Some("drop-summary" | "tr20-loss") => {
                let lost =
                    record.get("lost_packets").and_then(Value::as_u64).expect("a loss booked has its count");
                assert!(lost <= u64::from(u32::MAX), "a loss beyond 32 bits booked: {lost}");
                self.lost += u128::from(lost);
            }
            Some("latency" | "tr05-flow" | "tr20") => {
                let Some(ns) = record.get("latency_ns").and_then(Value::as_i64) else { return };
                assert!(ns.unsigned_abs() <= MAX_ONE_WAY_NS, "a latency beyond a minute booked: {ns}");
                self.latencies += 1;
                self.latency_sum += i128::from(ns);
            }
            _ => {}
        }
    }
}

/// The books' sizes and totals a message may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    received: u64,
    reports: u64,
    malformed: u64,
    /// What a record books: flows, observations, nodes and their hops,
    /// links, paths, drops.
    booked: (usize, u64, u64, usize, u64, usize, usize, u64),
}

impl Counts {
    fn of(books: &Books) -> Counts {
        let (ledger, hops) = (&books.ledger, &books.hops);
        let node_hops: u64 = hops.nodes.values().map(|n| n.hops).sum();
        let drops: u64 = hops.nodes.values().flat_map(|n| n.drops.values()).sum();
        let observations = ledger.overall.latency.count() + ledger.untracked;
        Counts {
            received: books.totals.received,
            reports: books.totals.reports,
            malformed: books.totals.malformed(),
            booked: (
                ledger.flows.len(),
                observations + ledger.overall.lost,
                node_hops,
                hops.nodes.len(),
                drops + hops.untracked.nodes,
                hops.links.len(),
                hops.paths(),
                hops.untracked.unusable_paths,
            ),
        }
    }
}

fn within_sizes(books: &Books) {
    let (ledger, hops) = (&books.ledger, &books.hops);
    assert!(ledger.flows.len() <= SIZES.flows);
    let detailed = ledger.flows.values().filter(|f| f.latency.has_percentiles()).count();
    assert!(detailed <= SIZES.detailed_flows);
    assert!(hops.nodes.len() <= SIZES.nodes);
    assert!(hops.links.len() <= SIZES.links);
    assert!(hops.paths() <= SIZES.flows);
    assert!(books.totals.malformed.len() <= MAX_REASONS + 1, "reasons: {:?}", books.totals.malformed.keys());
}
