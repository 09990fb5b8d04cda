//! decode's IOAM side: the Pre-allocated Traces in an IPv6 packet's
//! Hop-by-Hop header (any namespace), field by field, every node's
//! element newest first, and each namespace's Edge-to-Edge option; a trace
//! that lies is named with the reason a decapsulating node of its
//! namespace counts it under.

use int_core::ioam::e2e::E2eRepr;
use int_core::ioam::ipv6::TraceAt;
use int_core::ioam::node::NodeData;
use int_core::ioam::trace::TraceHeaderRepr;
use int_core::ioam::{ipv6, sink, FIELD_NAMES};
use serde_json::{json, Map, Value};

/// The traces of the IPv6 packet starting at `packet` into `out`: the
/// first as `ioam`, the other namespaces' as `ioam_others`, and `kind`
/// (`ioam`, or `malformed-ioam` with `error`, `drop_reason` and
/// `ioam_namespace` where a trace lies); whether there was any.
pub fn decode(packet: &[u8], out: &mut Map<String, Value>) -> bool {
    let Some(hbh) = sink::hop_by_hop_in_packet(packet) else { return false };
    let mut namespaces = Vec::new();
    ipv6::trace_namespaces(hbh, |namespace| {
        if !namespaces.contains(&namespace) {
            namespaces.push(namespace);
        }
    });
    let mut traces = Vec::new();
    for namespace in namespaces {
        // An option too short to name a namespace is refused by every
        // namespace's nodes: any one asks.
        match ipv6::find_trace(hbh, namespace.unwrap_or(0)) {
            Ok(Some(trace)) => traces.push(trace_json(packet, hbh, &trace)),
            Ok(None) => {}
            Err(error) => {
                out.insert("kind".into(), json!("malformed-ioam"));
                out.insert("error".into(), json!(error.to_string()));
                out.insert("drop_reason".into(), json!(error.drop_reason().name()));
                out.insert("ioam_namespace".into(), json!(namespace));
                return true;
            }
        }
    }
    let mut traces = traces.into_iter();
    let Some(first) = traces.next() else { return false };
    out.insert("kind".into(), json!("ioam"));
    out.insert("ioam".into(), first);
    let others: Vec<Value> = traces.collect();
    if !others.is_empty() {
        out.insert("ioam_others".into(), Value::Array(others));
    }
    true
}

/// One trace: its header's fields, its slots, every node's element and
/// its namespace's Edge-to-Edge option.
fn trace_json(packet: &[u8], hbh: &[u8], trace: &TraceAt) -> Value {
    let nodes: Vec<Value> = ipv6::nodes(hbh, trace).map(|node| node_json(&node)).collect();
    let mut value = header_json(&trace.header);
    value.insert("slots".into(), json!(trace.data_len / (usize::from(trace.header.node_len).max(1) * 4)));
    value.insert("nodes".into(), Value::Array(nodes));
    if let Some(e2e) = sink::e2e_in_packet(packet, trace.header.namespace) {
        value.insert("e2e".into(), e2e_json(&e2e));
    }
    Value::Object(value)
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

#[cfg(test)]
mod tests {
    use int_core::craft::PacketSpec;
    use int_core::ioam::source::{self, Encapped};
    use int_core::ioam::trace::TraceType;
    use int_core::ioam::Domain;
    use int_core::FrameBuf;

    use super::*;

    /// Offsets in the packet (from its IPv6 header) of a trace in a
    /// Hop-by-Hop header of its own: the trace header's NodeLen byte,
    /// RemainingLen and the trace type's last byte.
    const NODE_LEN: usize = 40 + 8 + 2;
    const REMAINING_LEN: usize = 40 + 8 + 3;
    const TRACE_TYPE_LOW: usize = 40 + 8 + 6;

    fn udp6(extensions: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut spec =
            PacketSpec::udp6("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 1, 2, 9);
        spec.ipv6.as_mut().unwrap().extensions.extend_from_slice(extensions);
        spec.build()
    }

    /// `frame` traced by namespace `namespace`'s encapsulating node.
    fn traced(frame: &[u8], namespace: u16) -> Vec<u8> {
        let domain =
            Domain { namespace, trace_type: TraceType::HOP_LIM_NODE_ID, nodes: 2, ..Domain::default() };
        let mut buf = vec![0u8; 128 + frame.len()];
        buf[128..].copy_from_slice(frame);
        let mut view = FrameBuf::new(&mut buf, 128, frame.len()).unwrap();
        let done = source::insert(&mut view, &domain.plan(1500), &NodeData::default(), |_, _| None);
        assert!(matches!(done, Ok(Encapped::Added(_))), "{done:?}");
        view.frame().to_vec()
    }

    /// What decode says of the IPv6 packet of `frame` (Ethernet first).
    fn decoded(frame: &[u8]) -> Map<String, Value> {
        let mut out = Map::new();
        assert!(decode(&frame[14..], &mut out), "an IOAM packet: {:?}", &frame[14 + 40..]);
        out
    }

    /// A trace that lies is `malformed-ioam` with the reason a
    /// decapsulating node of its namespace counts it under, never `plain`.
    #[test]
    fn a_lying_trace_is_named_with_the_sink_s_reason() {
        let good = traced(&udp6(&[]), 123);
        assert_eq!(decoded(&good)["kind"], "ioam");
        let lie = |at: usize, value: u8| {
            let mut frame = good.clone();
            frame[14 + at] = value;
            frame
        };
        let misaligned = udp6(&[(
            0,
            vec![0, 2, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        )]);
        let two = traced(&traced(&udp6(&[]), 124), 123);
        let mut twice = two.clone();
        twice[14 + 40 + 8 + 1] = 123; // the first trace's namespace: 124 -> 123
        let cases = [
            (lie(REMAINING_LEN, 0x7f), "int_bad_length"),
            (lie(NODE_LEN, 0x10), "int_bad_length"),
            (lie(TRACE_TYPE_LOW, 0x02), "int_unknown_type"),
            (misaligned, "int_bad_length"),
            (twice, "int_unknown_type"),
        ];
        for (i, (frame, reason)) in cases.iter().enumerate() {
            let out = decoded(frame);
            assert_eq!(out["kind"], "malformed-ioam", "case {i}: {out:?}");
            assert_eq!(out["drop_reason"], *reason, "case {i}: {out:?}");
            assert_eq!(out["ioam_namespace"], 123, "case {i}");
            assert!(out["error"].is_string());
        }
    }

    /// Traces of two namespaces are both printed, in the header's order.
    #[test]
    fn traces_of_two_namespaces_are_both_read() {
        let two = traced(&traced(&udp6(&[]), 124), 123);
        let out = decoded(&two);
        assert_eq!(out["kind"], "ioam", "{out:?}");
        assert_eq!(out["ioam"]["namespace"], 124);
        assert_eq!(out["ioam_others"][0]["namespace"], 123);
        assert_eq!(out["ioam_others"][0]["nodes"].as_array().unwrap().len(), 1);
    }
}
