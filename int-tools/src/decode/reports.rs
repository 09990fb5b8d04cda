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
/// segments of a GSO send that each read as one (a GSO send cuts its
/// payload every `size` bytes, the last segment maybe shorter, as Linux
/// allows); else the first error.
pub fn decode(payload: &[u8], int21: &[int21::Domain], domain_id: u16) -> Vec<Map<String, Value>> {
    let whole = decode_report(payload, int21, domain_id);
    if whole.is_ok() {
        return whole.into_iter().collect();
    }
    gso_segments(payload, |one| decode_report(one, int21, domain_id))
        .unwrap_or_else(|| vec![whole.unwrap_or_else(|error| error)])
}

/// Bytes the segment search may hand the reader: this many per byte of
/// the payload, and [`GSO_READ_FLOOR`] more (small payloads' sizes are
/// many to the byte). Linear in the payload, whatever the payload is.
const GSO_READ_BUDGET: usize = 4;
const GSO_READ_FLOOR: usize = 64 * 1024;

/// The segments of a GSO send in `payload`, each read by `read`, at the
/// first segment size whose every segment reads; `None` if none does
/// within [`GSO_READ_BUDGET`]. A size is read only where every segment
/// starts like the first (the same report version; a TR 2.0 group's
/// node): a GSO send's segments come from one sender, and most sizes are
/// turned down without reading a byte of them.
fn gso_segments<T, E>(payload: &[u8], mut read: impl FnMut(&[u8]) -> Result<T, E>) -> Option<Vec<T>> {
    let mut budget = payload.len().saturating_mul(GSO_READ_BUDGET).saturating_add(GSO_READ_FLOOR);
    for size in gso_segment_sizes(payload.len()) {
        if !payload.chunks(size).all(|segment| starts_alike(payload, segment)) {
            continue;
        }
        let mut segments = Vec::new();
        for segment in payload.chunks(size) {
            budget = budget.checked_sub(segment.len())?;
            match read(segment) {
                Ok(one) => segments.push(one),
                Err(_) => break,
            }
        }
        if segments.len() == payload.len().div_ceil(size) {
            return Some(segments);
        }
    }
    None
}

/// Whether `segment` starts as `first` does, as one sender's reports of
/// one kind do: Telemetry Report 2.0, the same version, hardware id and
/// node; 0.5 (Host-INT's too), the same version, Next Protocol, reserved
/// bits and hardware id (not the D, Q and F flags).
fn starts_alike(first: &[u8], segment: &[u8]) -> bool {
    let (Some(a), Some(b)) = (first.first_chunk::<8>(), segment.first_chunk::<8>()) else { return false };
    if a[0] >> 4 == tr20::VERSION {
        let group = |h: &[u8; 8]| (u16::from_be_bytes([h[0], h[1]]) >> 6, [h[4], h[5], h[6], h[7]]);
        return group(a) == group(b);
    }
    let header = |h: &[u8; 8]| [h[0], h[1] & 0x1f, h[2], h[3]];
    header(a) == header(b)
}

/// The segment sizes a GSO send of `len` bytes could have used, by the
/// most segments first ([`GSO_MAX_SEGMENTS`] down to 2: a sender's full
/// train comes first, and a size that is a multiple of the true one, whose
/// every segment starts alike too, is not read before it); for each count,
/// equal segments first, then larger ones with a shorter last segment.
/// Every size from len / 64 up comes once.
fn gso_segment_sizes(len: usize) -> impl Iterator<Item = usize> {
    (2..=GSO_MAX_SEGMENTS).rev().flat_map(move |segments| {
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
            let mut record = crate::records::to_map(&crate::records::tr05_flow(&flow));
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
    let mut out = crate::records::to_map(&crate::records::hostint(parsed));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the search hands its reader, in bytes, for `payload`, where
    /// every segment but the last reads (the costliest answer).
    fn bytes_read(payload: &[u8]) -> usize {
        let mut read = 0;
        gso_segments(payload, |segment| {
            read += segment.len();
            if segment.len() < 16 {
                Err(())
            } else {
                Ok(())
            }
        });
        read
    }

    /// The search reads at most its budget, whatever the payload: a
    /// datagram of 0x20 and zeros (each size's first segment read whole
    /// made it quadratic: over an hour at 64 KB), one whose every segment
    /// start looks alike, of every length up to 64 KB.
    #[test]
    fn the_segment_search_is_linear() {
        for len in [100, 1_000, 8_000, 65_507] {
            let budget = len * GSO_READ_BUDGET + GSO_READ_FLOOR;
            let mut tr20_zeros = vec![0u8; len];
            tr20_zeros[0] = 0x20;
            assert_eq!(bytes_read(&tr20_zeros), 0, "{len}: no size's segments start alike");
            let alike = vec![0u8; len];
            let read = bytes_read(&alike);
            assert!(read <= budget, "{len}: {read} bytes read, budget {budget}");
        }
    }

    /// Segments that start alike are one sender's: TR 2.0 groups of one
    /// node and hardware id; TR 0.5 reports of one kind, whatever their
    /// D, Q and F flags and numbers.
    #[test]
    fn segments_start_alike_when_one_sender_sent_them() {
        let group = [0x20, 0x40, 0x00, 0x07, 10, 0, 0, 1];
        let later = [0x20, 0x40, 0x01, 0x08, 10, 0, 0, 1];
        assert!(starts_alike(&group, &later));
        assert!(!starts_alike(&group, &[0x20, 0x80, 0x01, 0x08, 10, 0, 0, 1]), "another hardware id");
        assert!(!starts_alike(&group, &[0x20, 0x40, 0x01, 0x08, 10, 0, 0, 2]), "another node");
        assert!(!starts_alike(&group, &group[..7]), "shorter than a header");
        let report = [0x04, 0x20, 0x00, 0x05, 0, 0, 0, 1];
        assert!(starts_alike(&report, &[0x04, 0xa0, 0x00, 0x05, 0, 0, 0, 2]));
        assert!(!starts_alike(&report, &[0x03, 0x20, 0x00, 0x05, 0, 0, 0, 2]), "another Next Protocol");
        assert!(!starts_alike(&report, &[0x04, 0x20, 0x00, 0x06, 0, 0, 0, 2]), "another hardware id");
    }
}
