//! collect's plain Telemetry Report 0.5 side: a sink's NProto 2 flow report
//! (`int_core::report::tr05_flow`) gives the flow, the source's hop from
//! the INT stack inside, and the one-way latency: the fixed header's
//! ingress timestamp minus the source's.

use int_core::report::tr05_flow::FlowReport;

use crate::collect::books::datagram::Arrival;
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::records;

/// Records and prints one flow report.
pub fn record(report: &FlowReport<'_>, arrival: Arrival, books: &mut Books) {
    let flow = report.flow();
    if let Some(ns) = report.latency_ns() {
        books.observe(&Observed {
            flow,
            source_node: report.source_hop().and_then(|h| h.switch_id),
            sink_node: Some(report.local.switch_id),
            measure: Measure::Latency {
                ns: i64::from(ns),
                flow_seq: report.block.sequence,
                hops: Some(report.block.header.total_hop_cnt),
            },
            // TR 0.5 times are 32-bit: the arrival's then.
            at_ns: None,
        });
    }
    books.emit(|| arrival.record(records::tr05_flow(report)));
}
