//! The output schema's shared pieces (docs/output.md): a flow, a time in
//! both forms, a duration for people. decode, collect and the node's
//! `--stats-json` name the same facts the same way through these.

use int_core::flow::FlowKey;
use serde_json::{json, Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A flow: addresses as text, the protocol as its number.
pub fn flow(flow: &FlowKey) -> Value {
    json!({"src": flow.src.to_string(), "dst": flow.dst.to_string(), "protocol": flow.protocol,
           "src_port": flow.src_port, "dst_port": flow.dst_port})
}

/// ns since the epoch as RFC 3339 in UTC, to the ns.
pub fn rfc3339(ns: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns))
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// `key` (RFC 3339) and `key_ns`: null both when the time is unknown.
pub fn put_time(out: &mut Map<String, Value>, key: &str, ns: Option<u64>) {
    out.insert(key.into(), json!(ns.map(rfc3339)));
    out.insert(format!("{key}_ns"), json!(ns));
}

/// ns since the epoch, now.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A duration in ns for people: ns, µs, ms or s, three significant digits.
pub fn human_ns(ns: i64) -> String {
    let magnitude = ns.unsigned_abs() as f64;
    let (value, unit) = match ns.unsigned_abs() {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (magnitude / 1e3, "µs"),
        1_000_000..1_000_000_000 => (magnitude / 1e6, "ms"),
        _ => (magnitude / 1e9, "s"),
    };
    let sign = if ns < 0 { "-" } else { "" };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{sign}{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_to_the_ns() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123456789Z");
        let mut out = Map::new();
        put_time(&mut out, "time", None);
        assert_eq!(Value::Object(out), json!({"time": null, "time_ns": null}));
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(human_ns(999), "999 ns");
        assert_eq!(human_ns(150_000), "150 µs");
        assert_eq!(human_ns(1_234_567), "1.23 ms");
        assert_eq!(human_ns(976_540_802), "977 ms");
        assert_eq!(human_ns(-25_500), "-25.5 µs");
        assert_eq!(human_ns(3_000_000_000), "3.00 s");
    }
}
