//! decode's text form: the pieces every protocol's printer shares.

// serde_json's `value["key"]` yields Null for a missing key and never
// panics.
#![allow(clippy::indexing_slicing)]

use serde_json::Value;

/// A hop's fields as `name=value`, space-separated, in the JSON's order.
pub fn hop_fields(hop: &Value) -> String {
    let fields: Vec<String> =
        hop.as_object().map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect()).unwrap_or_default();
    fields.join(" ")
}

/// A flow as `PROTOCOL SRC:PORT ARROW DST:PORT`.
pub fn flow(flow: &Value, arrow: &str) -> String {
    format!(
        "{} {}:{} {arrow} {}:{}",
        flow["protocol"],
        flow["src"].as_str().unwrap_or("?"),
        flow["src_port"],
        flow["dst"].as_str().unwrap_or("?"),
        flow["dst_port"]
    )
}
