//! collect's reader of Host-INT's and INT 0.5's reports: Latency and Drop
//! Summary reports (with the one-way latency a latency report implies),
//! and other Telemetry Report 0.5 reports, printed by type.

use std::net::SocketAddr;

use int_core::flow::FlowKey;
use int_core::report::{self, Report};
use serde_json::json;

use super::{Books, Measure, Observed, Output};

/// Records and prints one report.
pub fn record(parsed: &Report<'_>, from: SocketAddr, missing: u32, books: &mut Books, output: Output) {
    match parsed {
        Report::Latency(l) => record_latency(l, from, missing, books, output),
        Report::DropSummary(d) => {
            let s = &d.summary;
            let measure = Measure::Lost(s.gap_count);
            books.observe(&Observed {
                flow: d.flow,
                source_node: Some(s.source_node),
                sink_node: Some(s.sink_node),
                measure,
            });
            match output {
                Output::Json => println!("{}", drop_summary_json(d, from, missing)),
                Output::Text => print_drop_summary(d, missing),
                Output::Quiet => {}
            }
        }
        Report::Tr05 { header, frame, .. } => {
            if output == Output::Json {
                println!(
                    "{}",
                    json!({"from": from.to_string(), "seq": header.sequence, "time": header.timestamp, "type": "tr05",
                           "nproto": u8::from(header.next_proto), "inner_frame_length": frame.len()})
                );
            } else if output == Output::Text {
                println!(
                    "Seq: {} Time: {} Type: Telemetry Report NProto {} ({} bytes of frame){}",
                    header.sequence,
                    header.timestamp,
                    u8::from(header.next_proto),
                    frame.len(),
                    missing_note(missing)
                );
            }
        }
    }
}

/// A latency report: into its flow's summary, then printed.
fn record_latency(
    l: &report::LatencyReport<'_>,
    from: SocketAddr,
    missing: u32,
    books: &mut Books,
    output: Output,
) {
    let flow = FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port);
    if let Some(ns) = l.latency_ns() {
        let (sink, source) = l.sink_and_source().unzip();
        let hops = Some(l.block.header.total_hop_cnt);
        books.observe(&Observed {
            flow,
            source_node: source.and_then(|h| h.switch_id),
            sink_node: sink.and_then(|h| h.switch_id),
            measure: Measure::Latency { ns: i64::from(ns), flow_seq: l.block.sequence, hops },
        });
    }
    match output {
        Output::Json => println!("{}", latency_json(l, &flow, from, missing)),
        Output::Text => print_latency(l, &flow, missing),
        Output::Quiet => {}
    }
}

fn latency_json(
    l: &report::LatencyReport<'_>,
    flow: &FlowKey,
    from: SocketAddr,
    missing: u32,
) -> serde_json::Value {
    let (sink, source) = l.sink_and_source().unzip();
    json!({"from": from.to_string(), "seq": l.header.sequence, "time": l.header.timestamp, "type": "latency",
           "missing_reports_before": missing,
           "source_node": source.and_then(|h| h.switch_id), "source_port": source.and_then(|h| h.ingress_port),
           "source_ts": source.and_then(|h| h.ingress_timestamp),
           "sink_node": sink.and_then(|h| h.switch_id), "sink_port": sink.and_then(|h| h.egress_port),
           "sink_ts": sink.and_then(|h| h.ingress_timestamp),
           "flow_seq": l.block.sequence, "hops": l.block.header.total_hop_cnt, "e": l.block.header.max_hop_exceeded,
           "src": flow.src.to_string(), "dst": flow.dst.to_string(), "protocol": flow.protocol,
           "src_port": flow.src_port, "dst_port": flow.dst_port, "latency_ns": l.latency_ns()})
}

fn print_latency(l: &report::LatencyReport<'_>, flow: &FlowKey, missing: u32) {
    let (sink, source) = l.sink_and_source().unzip();
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let node = |v: Option<u32>| v.map_or("-".to_string(), |v| std::net::Ipv4Addr::from(v).to_string());
    println!(
        "Seq: {} Time: {} Type: Latency{}",
        l.header.sequence,
        l.header.timestamp,
        missing_note(missing)
    );
    println!(
        "  Source node: {} port: {} ts: {}  Sink node: {} port: {} ts: {}",
        node(source.and_then(|h| h.switch_id)),
        opt(source.and_then(|h| h.ingress_port.map(u32::from))),
        opt(source.and_then(|h| h.ingress_timestamp)),
        node(sink.and_then(|h| h.switch_id)),
        opt(sink.and_then(|h| h.egress_port.map(u32::from))),
        opt(sink.and_then(|h| h.ingress_timestamp)),
    );
    let signed = l.latency_ns().map_or("-".to_string(), |v| v.to_string());
    println!("  Flow: {flow}  flow seq: {}  latency: {signed} ns", opt(l.block.sequence));
}

fn drop_summary_json(d: &report::DropSummaryReport, from: SocketAddr, missing: u32) -> serde_json::Value {
    let s = &d.summary;
    json!({"from": from.to_string(), "seq": d.header.sequence, "time": d.header.timestamp, "type": "drop-summary",
           "missing_reports_before": missing,
           "source_node": s.source_node, "source_port": s.source_port, "sink_node": s.sink_node,
           "sink_port": s.sink_port, "gap_timestamp": s.gap_timestamp, "flow_seq": s.gap_sequence,
           "gap_count": s.gap_count, "src": d.flow.src.to_string(), "dst": d.flow.dst.to_string(),
           "protocol": d.flow.protocol, "src_port": d.flow.src_port, "dst_port": d.flow.dst_port})
}

fn print_drop_summary(d: &report::DropSummaryReport, missing: u32) {
    let s = &d.summary;
    println!(
        "Seq: {} Time: {} Type: Drop Summary{}",
        d.header.sequence,
        d.header.timestamp,
        missing_note(missing)
    );
    println!(
        "  Source node: {} port: {}  Sink node: {} port: {}",
        std::net::Ipv4Addr::from(s.source_node),
        s.source_port,
        std::net::Ipv4Addr::from(s.sink_node),
        s.sink_port
    );
    println!(
        "  Flow: {}  gap timestamp: {}  flow seq: {}  gap count: {}",
        d.flow, s.gap_timestamp, s.gap_sequence, s.gap_count
    );
}

pub fn missing_note(missing: u32) -> String {
    if missing == 0 {
        String::new()
    } else {
        format!("  ({missing} report(s) lost before this one)")
    }
}
