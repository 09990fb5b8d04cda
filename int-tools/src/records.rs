//! The report records decode and collect both print (docs/output.md): one
//! map per report, built here once, so the same fact has the same name in
//! both tools. decode adds the wire's detail (flags, the INT stack);
//! collect adds where and when the report arrived.

use int_core::flow::FlowKey;
use int_core::int21::{HopMetadata, Instructions};
use int_core::report::tr05_flow::FlowReport;
use int_core::report::tr20::{self, GroupHeaderRepr, IndividualReport};
use int_core::report::tr20_loss::LossReport;
use int_core::report::{self, Report};
use serde_json::{json, Map, Value};

use crate::schema::{self, put_time};

/// Seconds since the epoch (Host-INT's report and gap timestamps) in ns.
fn seconds(s: u32) -> Option<u64> {
    Some(u64::from(s) * 1_000_000_000)
}

/// A Host-INT latency report's time, to the ns: its header's second, made
/// exact by the sink's ingress timestamp (the low 32 bits of ns, which
/// wrap every 4.3 s: the one within a second of the header's). Takes the
/// header's second and the sink hop's ingress timestamp, so a caller that
/// walked the stack once passes what it found.
pub fn hostint_time_ns(header_second: u32, sink_ingress: Option<u32>) -> u64 {
    let second = u64::from(header_second) * 1_000_000_000;
    let Some(low) = sink_ingress else { return second };
    let middle = second + 500_000_000;
    let near = (middle & !0xffff_ffff) | u64::from(low);
    [near.wrapping_sub(1 << 32), near, near + (1 << 32)]
        .into_iter()
        .min_by_key(|t| t.abs_diff(middle))
        .unwrap_or(second)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A Host-INT report (latency, drop summary) or another Telemetry Report
/// 0.5 report.
pub fn hostint(parsed: &Report<'_>) -> Map<String, Value> {
    match parsed {
        Report::Latency(l) => latency(l),
        Report::DropSummary(d) => drop_summary(d),
        Report::Tr05 { header, frame, .. } => {
            let mut out = object(json!({"type": "tr05", "report_seq": header.sequence}));
            put_time(&mut out, "time", None);
            out.insert("timestamp_ns".into(), json!(header.timestamp));
            out.insert("nproto".into(), json!(u8::from(header.next_proto)));
            out.insert("inner_frame_length".into(), json!(frame.len()));
            out
        }
    }
}

fn latency(l: &report::LatencyReport<'_>) -> Map<String, Value> {
    let (sink, source) = l.sink_and_source().unzip();
    let flow = FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port);
    let mut out = object(json!({"type": "latency", "report_seq": l.header.sequence}));
    let sink_ingress = sink.and_then(|h| h.ingress_timestamp);
    put_time(&mut out, "time", Some(hostint_time_ns(l.header.timestamp, sink_ingress)));
    out.extend(object(json!({
        "flow": schema::flow(&flow),
        "source_node": source.and_then(|h| h.switch_id), "source_port": source.and_then(|h| h.ingress_port),
        "source_timestamp_ns": source.and_then(|h| h.ingress_timestamp),
        "sink_node": sink.and_then(|h| h.switch_id), "sink_port": sink.and_then(|h| h.egress_port),
        "sink_timestamp_ns": sink.and_then(|h| h.ingress_timestamp),
        "flow_seq": l.block.sequence, "hops": l.block.header.total_hop_cnt,
        "latency_ns": l.latency_ns(),
    })));
    out
}

fn drop_summary(d: &report::DropSummaryReport) -> Map<String, Value> {
    let s = &d.summary;
    let mut out = object(json!({"type": "drop-summary", "report_seq": d.header.sequence}));
    put_time(&mut out, "time", seconds(d.header.timestamp));
    out.extend(object(json!({
        "flow": schema::flow(&d.flow),
        "source_node": s.source_node, "source_port": s.source_port,
        "sink_node": s.sink_node, "sink_port": s.sink_port,
        "flow_seq": s.gap_sequence, "lost_packets": s.gap_count,
    })));
    put_time(&mut out, "gap_time", seconds(s.gap_timestamp));
    out
}

/// int-node's own INT 0.5 sink's Telemetry Report 0.5 flow report.
pub fn tr05_flow(report: &FlowReport<'_>) -> Map<String, Value> {
    let flow = report.flow();
    let source = report.source_hop();
    let mut out = object(json!({"type": "tr05-flow", "report_seq": report.header.sequence}));
    put_time(&mut out, "time", None);
    out.extend(object(json!({
        "flow": schema::flow(&flow),
        "source_node": source.and_then(|h| h.switch_id), "source_port": source.and_then(|h| h.ingress_port),
        "source_timestamp_ns": source.and_then(|h| h.ingress_timestamp),
        "sink_node": report.local.switch_id, "sink_port": report.local.ingress_port,
        "sink_timestamp_ns": report.header.timestamp,
        "flow_seq": report.block.sequence, "hops": report.block.header.total_hop_cnt,
        "latency_ns": report.latency_ns(),
    })));
    out
}

/// A Telemetry Report 2.0 group header: the fields every report in it
/// shares.
pub fn tr20_group(group: &GroupHeaderRepr) -> Map<String, Value> {
    object(
        json!({"type": "tr20", "report_seq": group.sequence, "report_node": group.node_id, "hw_id": group.hw_id}),
    )
}

/// An individual report: its kind, flags, drop, the flow of the packet in
/// it (`flow`, when its headers give one) and the reporting node's time
/// (its ingress timestamp, when reported).
pub fn tr20_individual(individual: &IndividualReport<'_>, flow: Option<&FlowKey>) -> Map<String, Value> {
    let f = individual.flags;
    let drop = individual.int.and_then(|int| int.drop);
    let mut out = object(json!({
        "rep_type": u8::from(individual.rep_type), "in_type": u8::from(individual.in_type),
        "d": f.dropped, "q": f.congested_queue, "f": f.tracked_flow, "i": f.intermediate,
        "drop": drop.map(|d| json!({"queue_id": d.queue_id, "reason": d.reason,
                                     "reason_name": tr20::drop_reason_name(d.reason)})),
        "flow": flow.map(schema::flow),
    }));
    put_time(&mut out, "time", individual.int.and_then(|int| int.metadata.ingress_timestamp));
    out
}

/// A loss report (int-node's rule, in the domain's Domain Specific data).
pub fn tr20_loss(loss: &LossReport) -> Map<String, Value> {
    let mut out = object(json!({
        "flow": schema::flow(&loss.flow), "source_node": loss.source_node,
        "first_flow_seq": loss.first_sequence, "lost_packets": loss.count,
    }));
    put_time(&mut out, "time", Some(loss.declared_ns));
    out
}

/// A hop's INT 2.1 metadata: the fields `instructions` ask for (null where
/// the hop wrote all ones).
pub fn hop21(hop: &HopMetadata, instructions: Instructions) -> Value {
    let mut map = Map::new();
    let mut put = |bit: Instructions, key: &str, value: Value| {
        if instructions.contains(bit) {
            map.insert(key.into(), value);
        }
    };
    put(Instructions::NODE_ID, "node_id", json!(hop.node_id));
    put(Instructions::L1_PORT_IDS, "l1_ingress_port", json!(hop.l1_ingress_port));
    put(Instructions::L1_PORT_IDS, "l1_egress_port", json!(hop.l1_egress_port));
    put(Instructions::HOP_LATENCY, "hop_latency", json!(hop.hop_latency));
    put(Instructions::QUEUE_OCCUPANCY, "queue_id", json!(hop.queue.map(|q| q.0)));
    put(Instructions::QUEUE_OCCUPANCY, "queue_occupancy", json!(hop.queue.map(|q| q.1)));
    put(Instructions::INGRESS_TIMESTAMP, "ingress_timestamp", json!(hop.ingress_timestamp));
    put(Instructions::EGRESS_TIMESTAMP, "egress_timestamp", json!(hop.egress_timestamp));
    put(Instructions::L2_PORT_IDS, "l2_ingress_port", json!(hop.l2_ingress_port));
    put(Instructions::L2_PORT_IDS, "l2_egress_port", json!(hop.l2_egress_port));
    put(Instructions::EGRESS_TX_UTILIZATION, "egress_tx_utilization", json!(hop.egress_tx_utilization));
    put(Instructions::BUFFER_OCCUPANCY, "buffer_id", json!(hop.buffer.map(|b| b.0)));
    put(Instructions::BUFFER_OCCUPANCY, "buffer_occupancy", json!(hop.buffer.map(|b| b.1)));
    put(Instructions::CHECKSUM_COMPLEMENT, "checksum_complement", json!(hop.checksum_complement));
    Value::Object(map)
}
