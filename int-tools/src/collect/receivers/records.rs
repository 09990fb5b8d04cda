//! The stream's JSON records (`--nats-format json`) read back by an
//! aggregator into the same ledger, per-hop view and outputs as reports
//! off a socket.
//!
//! A record is checked whole before any of it is booked: a message that is
//! not a record, a record of another schema or type, a field of the wrong
//! kind or out of the range its report can carry (a latency beyond
//! [`MAX_ONE_WAY_NS`], a loss beyond 32 bits, more hops than a stack or a
//! join holds) is counted in `malformed_by_reason` and books nothing.

use std::net::IpAddr;

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;
use int_core::latency::MAX_ONE_WAY_NS;
use serde_json::Value;

use crate::collect::books::hops::{Seen, MAX_PATH};
use crate::collect::books::join::Joined;
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::collect::nats::SCHEMA;

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
    NotInteger(&'static str),
    #[error("stream: {0} out of range")]
    OutOfRange(&'static str),
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
        Ok((record, value)) => {
            let derived = matches!(record.kind, Kind::Joined { .. } | Kind::Derived);
            let taken = if derived { Taken::Derived } else { Taken::Report };
            book(&record, books);
            books.read_back(value);
            taken
        }
        Err(reason) => Taken::Malformed(reason.to_string()),
    };
    count(books, &taken);
    taken
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
struct Record {
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
    /// A TR 2.0 report: its stack's hops (source first) and its drop.
    Stack { report_node: u32, hops: Vec<HopMetadata>, drop_reason: Option<u8> },
    /// Postcards joined, in path order where `ordered`.
    Joined { hops: Vec<HopMetadata>, ordered: bool },
    /// A path change: worked out again from the stacks and joins.
    Derived,
}

/// The record in `payload`, checked; `Err` names why it is refused.
fn check(schema: Option<&str>, payload: &[u8]) -> Result<(Record, Value), RecordError> {
    let Ok(value) = serde_json::from_slice::<Value>(payload) else {
        return Err(RecordError::NotJson);
    };
    match schema {
        Some(SCHEMA) => {}
        other => return Err(RecordError::Schema(said(other.unwrap_or("none")).to_string())),
    }
    let kind = match value.get("type").and_then(Value::as_str) {
        Some("latency" | "tr05-flow" | "tr05" | "drop-summary" | "tr20-loss") => Kind::Flow,
        Some("tr20") => stack_of(&value)?,
        Some("joined") => Kind::Joined {
            hops: hops_of(&value, MAX_PATH)?,
            // A group the publisher could not order, or found part of its
            // flow's path, gives its nodes' figures only here too.
            ordered: field(&value, "ordered").as_bool().unwrap_or(false) && !field(&value, "path").is_null(),
        },
        Some("path-change") => Kind::Derived,
        _ => return Err(RecordError::Type(said(&field(&value, "type").to_string()).to_string())),
    };
    let record = Record {
        flow: flow_of(field(&value, "flow"))?,
        at_ns: integer(&value, "time_ns")?,
        source_node: integer(&value, "source_node")?,
        sink_node: integer(&value, "sink_node")?.or(integer(&value, "report_node")?),
        measure: measure_of(&value)?,
        kind,
    };
    if record.measure.is_some() && record.flow.is_none() {
        return Err(RecordError::MeasureWithoutFlow);
    }
    Ok((record, value))
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

/// A record's latency or loss: each within what its report can carry.
/// Only the types that carry one have one: another type's field of the
/// name is none of collect's.
fn measure_of(value: &Value) -> Result<Option<Measure>, RecordError> {
    match field(value, "type").as_str() {
        Some("drop-summary" | "tr20-loss") => {
            // Both reports carry a 32-bit count: the record must have one.
            let lost = integer::<u32>(value, "lost_packets")?.ok_or(RecordError::Missing("lost_packets"))?;
            return Ok(Some(Measure::Lost(lost)));
        }
        Some("latency" | "tr05-flow" | "tr20") => {}
        _ => return Ok(None),
    }
    let Some(ns) = integer::<i64>(value, "latency_ns")? else { return Ok(None) };
    // A sink believes no longer one-way latency, nor a negative one (clock
    // skew) of that size.
    if ns.unsigned_abs() > MAX_ONE_WAY_NS {
        return Err(RecordError::OutOfRange("latency_ns"));
    }
    let flow_seq = integer(value, "flow_seq")?;
    let hops = integer(value, "hops")?;
    Ok(Some(Measure::Latency { ns, flow_seq, hops }))
}

/// A TR 2.0 record's stack and drop.
fn stack_of(value: &Value) -> Result<Kind, RecordError> {
    let drop_reason = match &field(value, "drop") {
        Value::Null => None,
        drop => Some(integer::<u8>(drop, "reason")?.ok_or(RecordError::Missing("drop.reason"))?),
    };
    let report_node = integer(value, "report_node")?.unwrap_or(0);
    Ok(Kind::Stack { report_node, hops: hops_of(value, MAX_STACK_HOPS)?, drop_reason })
}

/// `hop_metadata` (records::hop21's form), at most `most` hops.
fn hops_of(value: &Value, most: usize) -> Result<Vec<HopMetadata>, RecordError> {
    match &field(value, "hop_metadata") {
        Value::Null => Ok(Vec::new()),
        Value::Array(hops) if hops.len() <= most => hops.iter().map(hop_of).collect(),
        Value::Array(_) => Err(RecordError::TooManyHops(most)),
        _ => Err(RecordError::HopsNotList),
    }
}

/// An integer field of `value`: `None` where absent or null, `Err` where
/// it is not an integer `T` holds (a fraction, a string, out of range).
fn integer<T: TryFrom<i128>>(value: &Value, key: &'static str) -> Result<Option<T>, RecordError> {
    let field = match value.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(field) => field,
    };
    let wide = field.as_u64().map(i128::from).or_else(|| field.as_i64().map(i128::from));
    let wide = wide.ok_or(RecordError::NotInteger(key))?;
    T::try_from(wide).map(Some).map_err(|_| RecordError::OutOfRange(key))
}

/// The books take a checked record: its measure, hops, drop.
fn book(record: &Record, books: &mut Books) {
    if let (Some(flow), Some(measure)) = (record.flow, record.measure) {
        let (source_node, sink_node, at_ns) = (record.source_node, record.sink_node, record.at_ns);
        books.observe(&Observed { flow, source_node, sink_node, measure, at_ns });
    }
    match &record.kind {
        Kind::Stack { report_node, hops, drop_reason } => {
            if let Some(reason) = drop_reason {
                books.observe_drop(*report_node, *reason);
            }
            let Some(flow) = record.flow.filter(|_| !hops.is_empty()) else { return };
            let at_ms = books.ledger.time_ms(record.at_ns);
            let (sink, sink_ingress_ns) = (Some(*report_node), record.at_ns);
            books.observe_path(&Seen { flow, hops, sink, sink_ingress_ns, at_ms });
        }
        Kind::Joined { hops, ordered } => {
            let Some(flow) = record.flow else { return };
            let at_ms = books.ledger.time_ms(hops.first().and_then(|hop| hop.ingress_timestamp));
            let joined = Joined { flow, hops: hops.clone(), ordered: *ordered, at_ms };
            books.book_joined(&joined);
        }
        Kind::Flow | Kind::Derived => {}
    }
}

/// A record's `flow`: `None` where null, `Err` where it is not a flow.
fn flow_of(flow: &Value) -> Result<Option<FlowKey>, RecordError> {
    if flow.is_null() {
        return Ok(None);
    }
    let address = |key: &str| field(flow, key).as_str().and_then(|a| a.parse::<IpAddr>().ok());
    let key = (|| {
        Some(FlowKey {
            src: address("src")?,
            dst: address("dst")?,
            protocol: integer(flow, "protocol").ok()??,
            src_port: integer(flow, "src_port").ok()??,
            dst_port: integer(flow, "dst_port").ok()??,
        })
    })();
    key.map(Some).ok_or(RecordError::NotFlow)
}

/// A hop of `hop_metadata` (records::hop21's form); a field the hop did
/// not write is null.
fn hop_of(hop: &Value) -> Result<HopMetadata, RecordError> {
    if !hop.is_object() {
        return Err(RecordError::NotHop);
    }
    let pair = |id: &'static str, occupancy: &'static str| -> Result<Option<(u8, u32)>, RecordError> {
        Ok(integer(hop, id)?.zip(integer(hop, occupancy)?))
    };
    Ok(HopMetadata {
        node_id: integer(hop, "node_id")?,
        l1_ingress_port: integer(hop, "l1_ingress_port")?,
        l1_egress_port: integer(hop, "l1_egress_port")?,
        hop_latency: integer(hop, "hop_latency")?,
        queue: pair("queue_id", "queue_occupancy")?,
        ingress_timestamp: integer(hop, "ingress_timestamp")?,
        egress_timestamp: integer(hop, "egress_timestamp")?,
        l2_ingress_port: integer(hop, "l2_ingress_port")?,
        l2_egress_port: integer(hop, "l2_egress_port")?,
        egress_tx_utilization: integer(hop, "egress_tx_utilization")?,
        buffer: pair("buffer_id", "buffer_occupancy")?,
        checksum_complement: integer(hop, "checksum_complement")?,
    })
}

/// `value`'s field `key`; null where it has none.
fn field<'a>(value: &'a Value, key: &str) -> &'a Value {
    value.get(key).unwrap_or(&Value::Null)
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
