//! decode's IOAM side: the Pre-allocated Trace in an IPv6 packet's
//! Hop-by-Hop header (any namespace), field by field, every node's
//! element newest first, and the namespace's Edge-to-Edge option.

use int_core::ioam::e2e::E2eRepr;
use int_core::ioam::node::NodeData;
use int_core::ioam::trace::TraceHeaderRepr;
use int_core::ioam::{ipv6, roles, FIELD_NAMES};
use serde_json::{json, Map, Value};

/// The trace of the IPv6 packet starting at `packet` into `out` (as
/// `ioam`); whether there was one.
pub fn decode(packet: &[u8], out: &mut Map<String, Value>) -> bool {
    let Some((trace, hbh)) = roles::trace_in_packet(packet) else { return false };
    let nodes: Vec<Value> = ipv6::nodes(hbh, &trace).map(|node| node_json(&node)).collect();
    let mut value = header_json(&trace.header);
    value.insert("slots".into(), json!(trace.data_len / (usize::from(trace.header.node_len).max(1) * 4)));
    value.insert("nodes".into(), Value::Array(nodes));
    if let Some(e2e) = roles::e2e_in_packet(packet, trace.header.namespace) {
        value.insert("e2e".into(), e2e_json(&e2e));
    }
    out.insert("ioam".into(), Value::Object(value));
    true
}

fn header_json(header: &TraceHeaderRepr) -> Map<String, Value> {
    let names: Vec<&str> = FIELD_NAMES
        .iter()
        .filter(|(_, bit)| header.trace_type.contains(*bit))
        .map(|(name, _)| *name)
        .collect();
    let mut out = Map::new();
    out.insert("namespace".into(), json!(header.namespace));
    out.insert("node_len".into(), json!(header.node_len));
    out.insert("overflow".into(), json!(header.overflow()));
    out.insert("remaining_len".into(), json!(header.remaining_len));
    out.insert("trace_type".into(), json!(format!("0x{:06x}", header.trace_type.bits())));
    out.insert("trace_fields".into(), json!(names));
    out
}

/// The Edge-to-Edge option; a field its type leaves out is null.
fn e2e_json(e2e: &E2eRepr) -> Value {
    json!({
        "e2e_type": format!("0x{:04x}", e2e.e2e_type.bits()),
        "sequence": e2e.sequence,
        "timestamp_seconds": e2e.timestamp_seconds,
        "timestamp_fraction": e2e.timestamp_fraction,
    })
}

/// One element; a field the trace type leaves out, or a node left
/// unpopulated (all ones), is null.
fn node_json(node: &NodeData) -> Value {
    json!({
        "hop_limit": node.hop_limit,
        "node_id": node.node_id,
        "ingress_if": node.ingress_if,
        "egress_if": node.egress_if,
        "timestamp_seconds": node.timestamp_seconds,
        "timestamp_fraction": node.timestamp_fraction,
        "transit_delay": node.transit_delay,
        "namespace_data": node.namespace_data,
        "queue_depth": node.queue_depth,
        "checksum_complement": node.checksum_complement,
        "node_id_wide": node.node_id_wide,
        "ingress_if_wide": node.ingress_if_wide,
        "egress_if_wide": node.egress_if_wide,
        "namespace_data_wide": node.namespace_data_wide,
        "buffer_occupancy": node.buffer_occupancy,
    })
}

/// The text form of [`decode`]'s `ioam`.
pub fn print(ioam: &Value) {
    println!(
        "  ioam namespace {} trace type {} {} | {} of {} slots filled{}",
        ioam["namespace"],
        ioam["trace_type"].as_str().unwrap_or("?"),
        ioam["trace_fields"],
        ioam["nodes"].as_array().map_or(0, Vec::len),
        ioam["slots"],
        if ioam["overflow"] == true { ", overflow" } else { "" }
    );
    if let Some(e2e) = ioam["e2e"].as_object() {
        let fields: Vec<String> =
            e2e.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| format!("{k}={v}")).collect();
        println!("  edge-to-edge: {}", fields.join(" "));
    }
    for (i, node) in ioam["nodes"].as_array().into_iter().flatten().enumerate() {
        let fields: Vec<String> = node
            .as_object()
            .map(|m| m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| format!("{k}={v}")).collect())
            .unwrap_or_default();
        println!("  node {i}: {}", fields.join(" "));
    }
}
