//! collect's reader of Host-INT's and INT 0.5's reports: Latency and Drop
//! Summary reports (with the one-way latency a latency report implies),
//! and other Telemetry Report 0.5 reports, printed by type.

use int_core::flow::FlowKey;
use int_core::report::{self, Report};

use crate::collect::books::congestion::{Packet, When};
use crate::collect::books::datagram::Arrival;
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::records;

/// Records and prints one report.
pub fn record(parsed: &Report<'_>, arrival: Arrival, books: &mut Books) {
    match parsed {
        Report::Latency(l) => observe_latency(l, arrival.at_ns, books),
        Report::DropSummary(d) => {
            let s = &d.summary;
            books.observe(&Observed {
                flow: d.flow,
                source_node: Some(s.source_node),
                sink_node: Some(s.sink_node),
                measure: Measure::Lost(s.gap_count),
                at_ns: Some(u64::from(d.header.timestamp) * 1_000_000_000),
            });
        }
        Report::Tr05 { .. } => {}
    }
    books.emit(|| arrival.record(records::hostint(parsed)));
}

/// The flow a Host-INT or INT 0.5 report is about (a plain TR 0.5 report
/// has none here: a sink's flow report is read by `tr05`).
pub fn flow_of(parsed: &Report<'_>) -> Option<FlowKey> {
    match parsed {
        Report::Latency(l) => {
            Some(FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port))
        }
        Report::DropSummary(d) => Some(d.flow),
        Report::Tr05 { .. } => None,
    }
}

/// A latency report into its flow's summary. The stack is walked once
/// (the walk is the largest share of a report's reading): the latency and
/// the time come from the sink and source hops it gives.
fn observe_latency(l: &report::LatencyReport<'_>, arrival_ns: u64, books: &mut Books) {
    let Some((sink, source)) = l.sink_and_source() else { return };
    // As LatencyReport::latency_ns: sink minus source ingress, unsigned.
    let (Some(sink_ns), Some(source_ns)) = (sink.ingress_timestamp, source.ingress_timestamp) else { return };
    let flow = FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port);
    let at_ns = records::hostint_time_ns(l.header.timestamp, Some(sink_ns));
    books.observe(&Observed {
        flow,
        source_node: source.switch_id,
        sink_node: sink.switch_id,
        measure: Measure::Latency {
            ns: i64::from(sink_ns.wrapping_sub(source_ns)),
            flow_seq: l.block.sequence,
            hops: Some(l.block.header.total_hop_cnt),
        },
        at_ns: Some(at_ns),
    });
    // Every hop's queue figures; the report does not carry the packet's
    // length.
    let when = When { report_ns: Some(at_ns), arrival_ns };
    let packet = Packet { flow, bytes: None, queue_alert: false };
    books.observe_int05_queues(l.block.stack.hops(), when, Some(&packet));
}
