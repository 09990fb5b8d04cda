//! The stream's JSON records (`--nats-format json`) read back by an
//! aggregator into the same ledger, per-hop view and outputs as reports
//! off a socket: serde reads each into the record types collect writes
//! ([`crate::records`]).
//!
//! A record is checked whole before any of it is booked: a message that is
//! not a record, a record of another schema or type, a field of the wrong
//! kind or out of the range its report can carry (a latency beyond
//! [`MAX_ONE_WAY_NS`], a loss beyond 32 bits, more hops than a stack or a
//! join holds) is counted in `malformed_by_reason` and books nothing.

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;
use int_core::latency::MAX_ONE_WAY_NS;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde_json::Value;
use serde_path_to_error::Segment;

use crate::collect::books::congestion::figure::Carrier;
use crate::collect::books::congestion::{Packet, When};
use crate::collect::books::hops::{Seen, MAX_PATH};
use crate::collect::books::join::Joined;
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::collect::nats::SCHEMA;
use crate::records::{
    CongestionRecord, DropSummaryRecord, FlowRecord, Hop, IfaIpfixRecord, JoinedRecord, PathChangeRecord,
    Record, RecordType, Tr05Record, Tr20LossRecord, Tr20Record,
};

/// The most hops a `tr20` record's stack holds: an INT 2.1 shim's length
/// is 8 bits of 4-byte words (an IOAM trace holds fewer), so the receiver
/// never reads more.
const MAX_STACK_HOPS: usize = 255;
/// Reasons the stream's records are refused for, at most: a type or
/// schema named in a reason is the sender's text, and beyond these each
/// new one is counted under [`OTHER`].
pub const MAX_REASONS: usize = 64;
const OTHER: &str = "stream: a record of another type or schema";

/// Why a record is refused; its text is the reason it is counted under
/// (`malformed_by_reason`), so each names the field and never a value
/// beyond a short word of the sender's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("stream: not a JSON record")]
    NotJson,
    #[error("stream: record schema {0}")]
    Schema(String),
    #[error("stream: a record of type {0}")]
    Type(String),
    #[error("stream: a measure without its flow")]
    MeasureWithoutFlow,
    #[error("stream: {0} missing")]
    Missing(&'static str),
    #[error("stream: {0} not an integer")]
    NotInteger(String),
    #[error("stream: {0} out of range")]
    OutOfRange(String),
    #[error("stream: {0} of the wrong kind")]
    WrongKind(String),
    #[error("stream: {0} given twice")]
    Twice(String),
    #[error("stream: hop_metadata over {0} hops")]
    TooManyHops(usize),
    #[error("stream: hop_metadata not a list")]
    HopsNotList,
    #[error("stream: hop_metadata[] not a hop")]
    NotHop,
    #[error("stream: flow not a flow")]
    NotFlow,
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// A report's record, into the books; counted as a report.
    Report,
    /// A record collect works out from reports (a path change, postcards
    /// joined): into the books, not counted as a report (the receiving
    /// collector counted its reports).
    Derived,
    /// Refused, counted under this reason; nothing booked.
    Malformed(String),
}

/// One message's payload and its `Int-Schema` header: checked whole, then
/// booked and printed, or refused and counted by reason; either way
/// counted once in the totals.
pub fn take_record(schema: Option<&str>, payload: &[u8], books: &mut Books) -> Taken {
    let taken = match check(schema, payload) {
        Ok((facts, record)) => {
            let derived = matches!(facts.kind, Kind::Joined { .. } | Kind::Derived);
            let taken = if derived { Taken::Derived } else { Taken::Report };
            book(&facts, books);
            books.read_back(record);
            taken
        }
        Err(reason) => Taken::Malformed(reason.to_string()),
    };
    count(books, &taken);
    taken
}

/// The record in one message, read and checked as [`take_record`] reads
/// it, booking nothing.
pub fn record_of(schema: Option<&str>, payload: &[u8]) -> Result<Record, RecordError> {
    check(schema, payload).map(|(_, record)| record)
}

/// The totals of one message: a refused one counts as a report, as a
/// refused datagram does at a receiver.
fn count(books: &mut Books, taken: &Taken) {
    let totals = &mut books.totals;
    totals.received += 1;
    match taken {
        Taken::Report => totals.reports += 1,
        Taken::Derived => {}
        Taken::Malformed(reason) => {
            totals.reports += 1;
            let known = totals.malformed.contains_key(reason) || totals.malformed.len() < MAX_REASONS;
            let reason = if known { reason.clone() } else { OTHER.to_string() };
            *totals.malformed.entry(reason).or_default() += 1;
        }
    }
}

/// A record's facts, every field checked: what the books take.
struct Facts {
    kind: Kind,
    flow: Option<FlowKey>,
    at_ns: Option<u64>,
    source_node: Option<u32>,
    sink_node: Option<u32>,
    measure: Option<Measure>,
}

enum Kind {
    /// Host-INT's and TR 0.5's reports, TR 2.0 loss: the measure only.
    Flow,
    /// A TR 2.0 report: its stack's hops (source first), its reporting
    /// sink and its drop; an IFA terminator's record: its stack's hops,
    /// the terminator's among them (no sink beyond them).
    Stack { report_node: Option<u32>, hops: Vec<HopMetadata>, drop_reason: Option<u8> },
    /// Postcards joined, in path order where `ordered`.
    Joined { hops: Vec<HopMetadata>, ordered: bool },
    /// A path change, a congestion episode: worked out again from the
    /// stacks and joins.
    Derived,
}

/// The record in `payload`, read and checked; `Err` names why it is
/// refused.
fn check(schema: Option<&str>, payload: &[u8]) -> Result<(Facts, Record), RecordError> {
    // JSON is UTF-8: serde_json skips a field the record does not name
    // without reading its text, so the whole message is checked here.
    std::str::from_utf8(payload).map_err(|_| RecordError::NotJson)?;
    let kind = type_of(payload)?;
    match schema {
        Some(SCHEMA) => {}
        other => return Err(RecordError::Schema(said(other.unwrap_or("none")).to_string())),
    }
    let refused = || RecordError::Type(said(&kind.to_string()).to_string());
    let record: Record = match RecordType::deserialize(&kind).map_err(|_| refused())? {
        RecordType::Latency | RecordType::Tr05Flow => read::<FlowRecord>(payload)?.into(),
        RecordType::DropSummary => read::<DropSummaryRecord>(payload)?.into(),
        RecordType::Tr05 => read::<Tr05Record>(payload)?.into(),
        RecordType::Tr20 => read::<Tr20Record>(payload)?.into(),
        RecordType::Tr20Loss => read::<Tr20LossRecord>(payload)?.into(),
        RecordType::PathChange => read::<PathChangeRecord>(payload)?.into(),
        RecordType::Joined => read::<JoinedRecord>(payload)?.into(),
        RecordType::IfaIpfix => read::<IfaIpfixRecord>(payload)?.into(),
        RecordType::Congestion => read::<CongestionRecord>(payload)?.into(),
        RecordType::Malformed => return Err(refused()),
    };
    let facts = facts_of(&record)?;
    if facts.measure.is_some() && facts.flow.is_none() {
        return Err(RecordError::MeasureWithoutFlow);
    }
    Ok((facts, record))
}

/// A message's `type` (null where it has none, or is no JSON object), if
/// it is JSON.
fn type_of(payload: &[u8]) -> Result<Value, RecordError> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        kind: Option<Value>,
    }
    if !payload.trim_ascii_start().starts_with(b"{") {
        let json = serde_json::from_slice::<IgnoredAny>(payload);
        return json.map(|_| Value::Null).map_err(|_| RecordError::NotJson);
    }
    match serde_json::from_slice::<Head>(payload) {
        Ok(head) => Ok(head.kind.unwrap_or(Value::Null)),
        // `type` given twice.
        Err(error) if error.is_data() => Ok(Value::Null),
        Err(_) => Err(RecordError::NotJson),
    }
}

/// The record of type `T` in `payload`; `Err` names the field serde
/// refused and why.
fn read<T: DeserializeOwned>(payload: &[u8]) -> Result<T, RecordError> {
    let mut json = serde_json::Deserializer::from_slice(payload);
    serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path: Vec<&Segment> = error.path().iter().collect();
        refusal(&path, &error.inner().to_string())
    })
}

/// Why serde refused a field, by where it is (`path`) and serde's own
/// words (`message`): serde's messages name the type expected and never
/// the field, so the reason names the field and a word for the problem.
fn refusal(path: &[&Segment], message: &str) -> RecordError {
    let key = |segment: &Segment| match segment {
        Segment::Map { key } => Some(key.clone()),
        _ => None,
    };
    let top = path.first().and_then(|segment| key(segment));
    let field = path.iter().rev().find_map(|segment| key(segment)).unwrap_or_else(|| "record".into());
    let integer = ["u8", "u16", "u32", "u64", "i64", "usize"]
        .iter()
        .any(|t| message.contains(&format!("expected {t}")));
    match (top.as_deref(), path.len()) {
        (Some("flow"), _) => return RecordError::NotFlow,
        (Some("hop_metadata"), 1) => return RecordError::HopsNotList,
        (Some("hop_metadata"), 2) => return RecordError::NotHop,
        _ => {}
    }
    if message.starts_with("invalid value") && integer {
        RecordError::OutOfRange(field)
    } else if message.starts_with("invalid type") && integer {
        RecordError::NotInteger(field)
    } else if let Some(twice) = message.strip_prefix("duplicate field `") {
        RecordError::Twice(twice.split('`').next().unwrap_or_default().to_string())
    } else {
        RecordError::WrongKind(field)
    }
}

/// The sender's text in a reason, if it is a short word; else "other"
/// (a reason's text is a key the summary keeps).
fn said(text: &str) -> &str {
    let word = |c: char| c.is_ascii_alphanumeric() || "-_\"".contains(c);
    if text.len() <= 32 && text.chars().all(word) {
        text
    } else {
        "other"
    }
}

/// What the books take of a record, each within what its report can
/// carry. Only the types that carry a measure have one: another type's
/// field of the name is none of collect's.
fn facts_of(record: &Record) -> Result<Facts, RecordError> {
    let facts = |kind, flow, at_ns, (source_node, sink_node), measure| Facts {
        kind,
        flow,
        at_ns,
        source_node,
        sink_node,
        measure,
    };
    Ok(match record {
        Record::Flow(r) => {
            let measure = latency(r.latency_ns, r.flow_seq, r.hops)?;
            facts(Kind::Flow, r.flow, r.time_ns, (r.source_node, r.sink_node), measure)
        }
        Record::DropSummary(r) => {
            let measure = Some(Measure::Lost(r.lost_packets.ok_or(RecordError::Missing("lost_packets"))?));
            facts(Kind::Flow, r.flow, r.time_ns, (r.source_node, r.sink_node), measure)
        }
        Record::Tr20Loss(r) => {
            let measure = Some(Measure::Lost(r.lost_packets.ok_or(RecordError::Missing("lost_packets"))?));
            facts(Kind::Flow, r.flow, r.time_ns, (r.source_node, r.report_node), measure)
        }
        Record::Tr20(r) => {
            let hops = match r.latency_ns {
                Some(_) => r
                    .hops
                    .map(u8::try_from)
                    .transpose()
                    .map_err(|_| RecordError::OutOfRange("hops".into()))?,
                None => None,
            };
            let measure = latency(r.latency_ns, r.flow_seq, hops)?;
            facts(stack_of(r)?, r.flow, r.time_ns, (r.source_node, r.report_node), measure)
        }
        Record::IfaIpfix(r) => {
            let hops =
                r.hops.map(u8::try_from).transpose().map_err(|_| RecordError::OutOfRange("hops".into()))?;
            let measure = latency(r.latency_ns, None, hops)?;
            let kind = Kind::Stack {
                report_node: None,
                hops: hops_of(r.hop_metadata.as_deref(), MAX_STACK_HOPS)?,
                drop_reason: None,
            };
            facts(kind, r.flow, None, (r.source_node, r.report_node), measure)
        }
        Record::Joined(r) => {
            // A group the publisher could not order, or found part of its
            // flow's path, gives its nodes' figures only here too.
            let ordered = r.ordered == Some(true) && r.path.is_some();
            let kind = Kind::Joined { hops: hops_of(r.hop_metadata.as_deref(), MAX_PATH)?, ordered };
            facts(kind, r.flow, None, (None, None), None)
        }
        Record::PathChange(r) => facts(Kind::Derived, r.flow, None, (None, r.report_node), None),
        // The aggregator finds its own episodes in the stacks and joins.
        Record::Congestion(_) => facts(Kind::Derived, None, None, (None, None), None),
        Record::Tr05(r) => facts(Kind::Flow, None, r.time_ns, (None, None), None),
        Record::Malformed(_) => return Err(RecordError::Type(RecordType::Malformed.as_str().into())),
    })
}

/// A latency, if the record has one: a sink believes no longer one-way
/// latency, nor a negative one (clock skew) of that size.
fn latency(ns: Option<i64>, flow_seq: Option<u32>, hops: Option<u8>) -> Result<Option<Measure>, RecordError> {
    let Some(ns) = ns else { return Ok(None) };
    if ns.unsigned_abs() > MAX_ONE_WAY_NS {
        return Err(RecordError::OutOfRange("latency_ns".into()));
    }
    Ok(Some(Measure::Latency { ns, flow_seq, hops }))
}

/// A TR 2.0 record's stack and drop.
fn stack_of(record: &Tr20Record) -> Result<Kind, RecordError> {
    let drop_reason = match &record.drop {
        None => None,
        Some(drop) => Some(drop.reason.ok_or(RecordError::Missing("drop.reason"))?),
    };
    let report_node = Some(record.report_node.unwrap_or(0));
    Ok(Kind::Stack {
        report_node,
        hops: hops_of(record.hop_metadata.as_deref(), MAX_STACK_HOPS)?,
        drop_reason,
    })
}

/// `hop_metadata`, at most `most` hops.
fn hops_of(hops: Option<&[Hop]>, most: usize) -> Result<Vec<HopMetadata>, RecordError> {
    match hops {
        None => Ok(Vec::new()),
        Some(hops) if hops.len() <= most => Ok(hops.iter().map(HopMetadata::from).collect()),
        Some(_) => Err(RecordError::TooManyHops(most)),
    }
}

/// The books take a checked record: its measure, hops, drop.
fn book(record: &Facts, books: &mut Books) {
    if let (Some(flow), Some(measure)) = (record.flow, record.measure) {
        let (source_node, sink_node, at_ns) = (record.source_node, record.sink_node, record.at_ns);
        books.observe(&Observed { flow, source_node, sink_node, measure, at_ns });
    }
    match &record.kind {
        Kind::Stack { report_node, hops, drop_reason } => {
            if let Some(reason) = drop_reason {
                books.observe_drop(report_node.unwrap_or(0), *reason);
            }
            let Some(flow) = record.flow.filter(|_| !hops.is_empty()) else { return };
            books.observe_queues(hops, Carrier::Int21, when(record.at_ns), Some(&packet(flow)));
            let at_ms = books.ledger.time_ms(record.at_ns);
            let (sink, sink_ingress_ns) = (*report_node, record.at_ns);
            books.observe_path(&Seen { flow, hops, sink, sink_ingress_ns, at_ms });
        }
        Kind::Joined { hops, ordered } => {
            let Some(flow) = record.flow else { return };
            books.observe_queues(hops, Carrier::Int21, when(None), Some(&packet(flow)));
            let at_ms = books.ledger.time_ms(hops.first().and_then(|hop| hop.ingress_timestamp));
            let joined = Joined { flow, hops: hops.clone(), ordered: *ordered, at_ms };
            books.book_joined(&joined);
        }
        Kind::Flow | Kind::Derived => {}
    }
}

/// A record's hops' time: their own stamps, else the record's, else none
/// (a stream read back has no arrival of its own: docs/congestion.md).
fn when(at_ns: Option<u64>) -> When {
    When { report_ns: at_ns, arrival_ns: at_ns.unwrap_or(0) }
}

/// A record's packet: its flow; its bytes and Q flag are not in the record.
fn packet(flow: FlowKey) -> Packet {
    Packet { flow, bytes: None, queue_alert: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::Sizes;

    const SIZES: Sizes = Sizes { flows: 4, detailed_flows: 2, nodes: 8, links: 8 };
    const FLOW: &str = r#"{"src":"10.0.0.1","dst":"10.0.0.2","protocol":17,"src_port":1,"dst_port":2}"#;

    fn take(books: &mut Books, record: &str) -> Taken {
        take_record(Some(SCHEMA), record.as_bytes(), books)
    }

    /// A TR 2.0 record whose latency is good but one of whose hops lies
    /// books nothing: not its latency, not its other hops.
    #[test]
    fn a_record_is_booked_whole_or_not_at_all() {
        let mut books = Books::bounded(SIZES);
        let hops = r#"[{"node_id":1,"hop_latency":5},{"node_id":2,"hop_latency":"5"}]"#;
        let record = format!(
            r#"{{"type":"tr20","flow":{FLOW},"latency_ns":900,"report_node":9,"hop_metadata":{hops}}}"#
        );
        assert_eq!(take(&mut books, &record), Taken::Malformed("stream: hop_latency not an integer".into()));
        assert_eq!((books.ledger.overall.latency.count(), books.hops.nodes.len()), (0, 0));
        let good = record.replace(r#""5"}"#, "7}");
        assert_eq!(take(&mut books, &good), Taken::Report);
        assert_eq!((books.ledger.overall.latency.count(), books.hops.nodes.len()), (1, 3));
        assert_eq!((books.totals.reports, books.totals.malformed()), (2, 1));
    }

    /// Path changes and joined postcards are worked out from reports the
    /// receiving collector counted: booked, not counted as reports.
    #[test]
    fn derived_records_are_no_reports() {
        let mut books = Books::bounded(SIZES);
        // A field of another type's name is none of a path change's (fuzz
        // found its latency booked).
        let change =
            format!(r#"{{"type":"path-change","flow":{FLOW},"old_path":[1],"new_path":[2],"latency_ns":5}}"#);
        let joined =
            format!(r#"{{"type":"joined","flow":{FLOW},"ordered":false,"hop_metadata":[{{"node_id":3}}]}}"#);
        assert_eq!(take(&mut books, &change), Taken::Derived);
        assert_eq!(take(&mut books, &joined), Taken::Derived);
        assert_eq!((books.totals.reports, books.hops.nodes.len()), (0, 1));
        assert_eq!(books.ledger.overall.latency.count(), 0);
    }

    /// A congestion record as collect writes it reads back whole (the
    /// stream's JSON round trip), is derived (the aggregator finds its own
    /// episodes in the stacks) and books nothing.
    #[test]
    fn a_congestion_record_reads_back_and_books_nothing() {
        use crate::collect::books::congestion::settings::{Settings, Thresholds};
        use crate::collect::books::congestion::{figure::Carrier, Congestion, Packet, When};
        use int_core::hop::Hop;
        let global = Thresholds { occupancy: Some(100), latency_ns: None };
        let mut congestion = Congestion::new(Settings { global, ..Settings::default() });
        let flow = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 1, 2);
        let packet = Packet { flow, bytes: Some(900), queue_alert: true };
        for (ms, occupancy) in [(1, 500u32), (2, 10)] {
            let at = 1_700_000_000_000_000_000 + ms * 1_000_000;
            let hop = Hop {
                node_id: Some(4),
                queue: Some((1, occupancy)),
                egress_timestamp: Some(at),
                ..Hop::default()
            };
            congestion.hops(
                &[hop],
                Carrier::Int21,
                When { report_ns: Some(at), arrival_ns: 0 },
                Some(&packet),
            );
        }
        let episode = congestion.take_closed().pop().unwrap();
        let written =
            serde_json::to_string(&Record::from(crate::collect::books::congestion::record::record(&episode)))
                .unwrap();
        let record = record_of(Some(SCHEMA), written.as_bytes()).unwrap();
        let Record::Congestion(read) = &record else { panic!("{record:?}") };
        assert_eq!(
            (read.node, read.queue_id, read.packets, read.bytes, read.queue_alerts),
            (4, 1, 1, 900, 1)
        );
        assert_eq!(read.culprits[0].flow, Some(flow));
        let mut books = Books::bounded(SIZES);
        assert_eq!(take(&mut books, &written), Taken::Derived);
        assert_eq!((books.totals.reports, books.congestion.counts.figures), (0, 0));
    }

    /// A record is read as its type's fields: one of the wrong kind, even
    /// one the books do not read, or one given twice, refuses the record
    /// by the field's name; nothing of it is booked or passed on.
    #[test]
    fn a_field_of_the_wrong_kind_is_refused_by_name() {
        let mut books = Books::bounded(SIZES);
        let flag = format!(r#"{{"type":"tr20","flow":{FLOW},"d":"yes","latency_ns":900}}"#);
        assert_eq!(take(&mut books, &flag), Taken::Malformed("stream: d of the wrong kind".into()));
        let twice = format!(r#"{{"type":"latency","flow":{FLOW},"latency_ns":1,"latency_ns":2}}"#);
        assert_eq!(take(&mut books, &twice), Taken::Malformed("stream: latency_ns given twice".into()));
        let path = format!(r#"{{"type":"path-change","flow":{FLOW},"old_path":"1 2","new_path":[2]}}"#);
        assert_eq!(take(&mut books, &path), Taken::Malformed("stream: old_path of the wrong kind".into()));
        assert_eq!((books.ledger.overall.latency.count(), books.totals.malformed()), (0, 3));
    }

    /// serde's structs take an array for their fields in order: a flow or
    /// a hop so written is no flow or hop collect wrote, and is refused.
    #[test]
    fn a_flow_or_a_hop_written_as_an_array_is_refused() {
        let mut books = Books::bounded(SIZES);
        let flow = r#"{"type":"latency","flow":["10.0.0.1","10.0.0.2",17,1,2],"latency_ns":900}"#;
        assert_eq!(take(&mut books, flow), Taken::Malformed("stream: flow not a flow".into()));
        let hop = format!(r#"{{"type":"tr20","report_node":3,"flow":{FLOW},"hop_metadata":[[1,2,3]]}}"#);
        assert_eq!(take(&mut books, &hop), Taken::Malformed("stream: hop_metadata[] not a hop".into()));
        let hops = format!(r#"{{"type":"tr20","report_node":3,"flow":{FLOW},"hop_metadata":{{"a":1}}}}"#);
        assert_eq!(take(&mut books, &hops), Taken::Malformed("stream: hop_metadata not a list".into()));
        assert_eq!((books.ledger.overall.latency.count(), books.totals.malformed()), (0, 3));
    }

    /// A message that is no UTF-8 is no JSON, even where the bytes that
    /// are not sit in a field no record has (serde skips those unread).
    #[test]
    fn a_record_that_is_no_utf8_is_refused() {
        let mut books = Books::bounded(SIZES);
        let mut record =
            format!(r#"{{"type":"path-change","flow":{FLOW},"old_path":[1],"new_path":[2],"x":"a?"}}"#)
                .into_bytes();
        let at = record.iter().position(|b| *b == b'?').unwrap();
        record[at] = 0xEF;
        let taken = take_record(Some(SCHEMA), &record, &mut books);
        assert_eq!(taken, Taken::Malformed("stream: not a JSON record".into()));
    }

    /// Types and schemas are the sender's text: a reason names a short
    /// word, and at most MAX_REASONS reasons are kept.
    #[test]
    fn reasons_stay_few() {
        let mut books = Books::bounded(SIZES);
        for n in 0..200 {
            take(&mut books, &format!(r#"{{"type":"kind-{n}"}}"#));
        }
        take(&mut books, &format!(r#"{{"type":"{}"}}"#, "x".repeat(100)));
        take_record(Some("a schema of many words"), b"{}", &mut books);
        let malformed = &books.totals.malformed;
        assert_eq!(malformed.len(), MAX_REASONS + 1, "{malformed:?}");
        assert_eq!(malformed.get(OTHER), Some(&(202 - MAX_REASONS as u64)));
        assert_eq!(malformed.get("stream: a record of type \"kind-0\""), Some(&1));
    }
}
