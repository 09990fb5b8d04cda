//! collect's plain Telemetry Report 0.5 side: a sink's NProto 2 flow report
//! (`int_core::report::tr05_flow`) gives the flow, the source's hop from
//! the INT stack inside, and the one-way latency: the fixed header's
//! ingress timestamp minus the source's.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};

use int_core::flow::FlowKey;
use int_core::report::tr05_flow::FlowReport;
use serde_json::json;

use crate::collect::{missing_note, FlowSummary};

/// Records and prints one flow report.
pub fn record(
    report: &FlowReport<'_>,
    from: SocketAddr,
    missing: u32,
    flows: &mut BTreeMap<FlowKey, FlowSummary>,
    json_out: bool,
) {
    let flow = FlowKey {
        src: report.ip.src,
        dst: report.ip.dst,
        protocol: report.ip.protocol,
        src_port: report.src_port,
        dst_port: report.dst_port,
    };
    let latency = report.latency_ns();
    if let Some(latency) = latency {
        flows.entry(flow).or_default().add_latency(i64::from(latency));
    }
    let source = report.source_hop();
    let (header, local) = (&report.header, &report.local);
    if json_out {
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
    } else {
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
