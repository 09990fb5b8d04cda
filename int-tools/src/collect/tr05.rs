//! collect's plain Telemetry Report 0.5 side: a sink's NProto 2 flow report
//! (`int_core::report::tr05_flow`) gives the flow, the source's hop from
//! the INT stack inside, and the one-way latency: the fixed header's
//! ingress timestamp minus the source's.

use std::net::{Ipv4Addr, SocketAddr};

use int_core::flow::FlowKey;
use int_core::report::tr05_flow::FlowReport;
use serde_json::json;

use super::{missing_note, Books, Measure, Observed, Output};

/// Records and prints one flow report.
pub fn record(report: &FlowReport<'_>, from: SocketAddr, missing: u32, books: &mut Books, output: Output) {
    let flow = FlowKey {
        src: report.ip.src,
        dst: report.ip.dst,
        protocol: report.ip.protocol,
        src_port: report.src_port,
        dst_port: report.dst_port,
    };
    let latency = report.latency_ns();
    let source = report.source_hop();
    let (header, local) = (&report.header, &report.local);
    if let Some(ns) = latency {
        books.observe(&Observed {
            flow,
            source_node: source.and_then(|h| h.switch_id),
            sink_node: Some(local.switch_id),
            measure: Measure::Latency {
                ns: i64::from(ns),
                flow_seq: report.block.sequence,
                hops: Some(report.block.header.total_hop_cnt),
            },
        });
    }
    if output == Output::Json {
        println!(
            "{}",
            json!({"from": from.to_string(), "seq": header.sequence, "time": header.timestamp, "type": "tr05-flow",
                   "missing_reports_before": missing,
                   "source_node": source.and_then(|h| h.switch_id), "source_port": source.and_then(|h| h.ingress_port),
                   "source_ts": source.and_then(|h| h.ingress_timestamp),
                   "sink_node": local.switch_id, "sink_port": local.ingress_port, "sink_ts": header.timestamp,
                   "flow_seq": report.block.sequence, "hops": report.block.header.total_hop_cnt,
                   "src": flow.src.to_string(), "dst": flow.dst.to_string(), "protocol": flow.protocol,
                   "src_port": flow.src_port, "dst_port": flow.dst_port, "latency_ns": latency})
        );
    } else if output == Output::Text {
        println!(
            "Seq: {} Time: {} Type: Telemetry Report 0.5 flow report{}",
            header.sequence,
            header.timestamp,
            missing_note(missing)
        );
        let signed = latency.map_or("-".to_string(), |v| v.to_string());
        println!(
            "  Sink node: {} port: {}  Flow: {flow}  flow seq: {}  latency: {signed} ns",
            Ipv4Addr::from(local.switch_id),
            local.ingress_port,
            report.block.sequence.map_or("-".to_string(), |s| s.to_string())
        );
    }
}
