//! decode's reports: Host-INT's latency and Drop-Summary reports (with or
//! without the sink id word), Telemetry Report 0.5 (NProto 0-2, a sink's
//! own flow report with its stack) and Telemetry Report 2.0 (read by
//! [`super::int21`]); a datagram that is no report read as a GSO send's
//! segments. As JSON and as text.

// The text printer reads fields with serde_json's `value["key"]`, which
// yields Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use int_core::int21;
use int_core::report::tr05_flow::FlowReport;
use int_core::report::tr20;
use int_core::report::{self, Report, SinkIdWord};
use serde_json::{json, Map, Value};

/// Most reports a GSO send puts in one datagram (the kernel's UDP_MAX_SEGMENTS).
const GSO_MAX_SEGMENTS: usize = 64;

/// A report payload: one report, or, where it does not read as one, the
/// segments of a GSO send that each read as one (the fewest that do: a
/// GSO send cuts its payload every `size` bytes, the last segment maybe
/// shorter, as Linux allows); else the first error.
pub fn decode(payload: &[u8], int21: &[int21::Domain], domain_id: u16) -> Vec<Map<String, Value>> {
    let whole = decode_report(payload, int21, domain_id);
    if whole.is_ok() {
        return whole.into_iter().collect();
    }
    for size in gso_segment_sizes(payload.len()) {
        let read: Result<Vec<_>, _> =
            payload.chunks(size).map(|one| decode_report(one, int21, domain_id)).collect();
        if let Ok(reports) = read {
            return reports;
        }
    }
    vec![whole.unwrap_or_else(|error| error)]
}

/// The segment sizes a GSO send of `len` bytes could have used, by the
/// fewest segments first (2 to [`GSO_MAX_SEGMENTS`]); for each count,
/// equal segments first, then larger ones with a shorter last segment.
/// Every size from len / 64 up comes once: at most `len` tries, each
/// stopping at the first segment that does not read.
fn gso_segment_sizes(len: usize) -> impl Iterator<Item = usize> {
    (2..=GSO_MAX_SEGMENTS).flat_map(move |segments| {
        // `segments` segments of `size` bytes: (segments - 1) * size < len <= segments * size.
        let smallest = len.div_ceil(segments);
        let largest = len.saturating_sub(1) / (segments - 1);
        smallest..=largest
    })
}

/// One report's fields (`kind`, `report`), or the error's.
fn decode_report(
    payload: &[u8],
    int21: &[int21::Domain],
    domain_id: u16,
) -> Result<Map<String, Value>, Map<String, Value>> {
    let mut out = Map::new();
    out.insert("kind".into(), json!("report"));
    let failed = |mut out: Map<String, Value>, kind: &str, error: String| {
        out.insert("kind".into(), json!(kind));
        out.insert("error".into(), json!(error));
        Err(out)
    };
    if payload.first().is_some_and(|byte| byte >> 4 == tr20::VERSION) {
        return match tr20::Report::parse(payload) {
            Ok(report) => {
                let json = super::int21::report_json(&report, int21, domain_id);
                // Reports read up to one that is not: an error all the same
                // (a GSO send's next group header reads as no report).
                let whole = json.get("error").is_none_or(Value::is_null);
                out.insert("report".into(), json);
                if whole {
                    Ok(out)
                } else {
                    Err(out)
                }
            }
            Err(error) => failed(out, "report", error.to_string()),
        };
    }
    let parsed = match report::parse(payload, SinkIdWord::Detect) {
        Ok(parsed) => parsed,
        Err(error) => return failed(out, "malformed-report", error.to_string()),
    };
    // A sink's own TR 0.5 flow report: the record collect prints for it,
    // with its INT stack.
    let json = match FlowReport::parse(payload) {
        Ok(flow) => {
            let mut record = crate::records::tr05_flow(&flow);
            put_header(&mut record, &flow.header);
            if let Value::Object(whole) = report_json(&parsed) {
                record.extend(whole.into_iter().filter(|(key, _)| key == "drop" || key == "switch_local"));
            }
            record.insert("int".into(), super::int05::block_json(&flow.block));
            Value::Object(record)
        }
        Err(_) => report_json(&parsed),
    };
    out.insert("report".into(), json);
    Ok(out)
}

/// A Host-INT or Telemetry Report 0.5 report: the record collect prints
/// too, with the header's flags and the INT stack beside.
pub fn report_json(parsed: &Report<'_>) -> Value {
    let mut out = crate::records::hostint(parsed);
    let header = match parsed {
        Report::Latency(l) => &l.header,
        Report::DropSummary(d) => &d.header,
        Report::Tr05 { header, .. } => header,
    };
    put_header(&mut out, header);
    match parsed {
        Report::Latency(latency) => {
            out.insert("sink_id".into(), json!(latency.sink_id));
            out.insert("int".into(), super::int05::block_json(&latency.block));
        }
        Report::DropSummary(_) => {}
        Report::Tr05 { drop, switch_local, .. } => {
            out.insert(
                "drop".into(),
                json!(drop.map(|d| json!({"switch_id": d.switch_id, "ingress_port": d.ingress_port,
                "egress_port": d.egress_port, "queue_id": d.queue_id, "drop_reason": d.drop_reason}))),
            );
            out.insert(
                "switch_local".into(),
                json!(switch_local.map(|l| json!({"switch_id": l.switch_id,
                "ingress_port": l.ingress_port, "egress_port": l.egress_port, "queue_id": l.queue_id,
                "queue_occupancy": l.queue_occupancy, "egress_timestamp": l.egress_timestamp}))),
            );
        }
    }
    Value::Object(out)
}

/// The report header's fields beside the record's own.
fn put_header(out: &mut Map<String, Value>, h: &report::ReportHeaderRepr) {
    out.extend([
        ("version".to_string(), json!(h.version)),
        ("nproto".to_string(), json!(u8::from(h.next_proto))),
        ("d".to_string(), json!(h.dropped)),
        ("q".to_string(), json!(h.congested_queue)),
        ("f".to_string(), json!(h.tracked_flow)),
        ("hw_id".to_string(), json!(h.hw_id)),
        ("header_timestamp".to_string(), json!(h.timestamp)),
    ]);
}

/// The text form of a report's JSON.
pub fn print(report: &Value) {
    if report["type"] == "tr20" {
        super::int21::print_report(report);
        return;
    }
    let r = |k: &str| report.get(k).cloned().unwrap_or(Value::Null);
    println!(
        "  report {} seq {} time {} nproto {} d {} q {} f {} hw_id {}",
        r("type").as_str().unwrap_or("?"),
        r("report_seq"),
        r("time").as_str().unwrap_or("-"),
        r("nproto"),
        r("d"),
        r("q"),
        r("f"),
        r("hw_id")
    );
    let flow = r("flow");
    if !flow.is_null() {
        println!("  flow proto {}", super::text::flow(&flow, "->"));
    }
    match r("type").as_str() {
        Some("latency") => {
            let latency = r("latency_ns").as_i64().map_or("-".to_string(), crate::schema::human_ns);
            println!(
                "  sink id {} source node {} sink node {} latency {latency}",
                r("sink_id"),
                r("source_node"),
                r("sink_node"),
            );
            super::int05::print_block(&r("int"));
        }
        Some("drop-summary") => println!(
            "  source node {} port {} sink node {} port {} gap at {} flow seq {} lost {}",
            r("source_node"),
            r("source_port"),
            r("sink_node"),
            r("sink_port"),
            r("gap_time").as_str().unwrap_or("-"),
            r("flow_seq"),
            r("lost_packets")
        ),
        _ => println!("  {}", report),
    }
}
