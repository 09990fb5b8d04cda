//! collect's plain Telemetry Report 0.5 side: a sink's NProto 2 flow report
//! (`int_core::report::tr05_flow`) gives the flow, the source's hop from
//! the INT stack inside, and the one-way latency: the fixed header's
//! ingress timestamp minus the source's.

use int_core::report::tr05_flow::FlowReport;

use int_core::hop::Hop;

use crate::collect::books::congestion::figure::Carrier;
use crate::collect::books::congestion::{Packet, When};
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
    queues(report, flow, arrival.at_ns, books);
    books.emit(|| arrival.record(records::tr05_flow(report)));
}

/// The queue figures of a flow report: its stack's hops and the sink's
/// own queue (its switch-local header); Q counts as the sink's queue
/// alert. TR 0.5 times are 32-bit: the arrival's.
fn queues(report: &FlowReport<'_>, flow: int_core::flow::FlowKey, arrival_ns: u64, books: &mut Books) {
    let local = &report.local;
    let queue_alert = report.header.congested_queue;
    if queue_alert {
        books.congestion.queue_alert(local.switch_id);
    }
    let when = When { report_ns: None, arrival_ns };
    let packet = Packet { flow, bytes: None, queue_alert };
    books.observe_int05_queues(report.block.stack.hops(), when, Some(&packet));
    let own = Hop {
        node_id: Some(local.switch_id),
        queue: Some((local.queue_id, local.queue_occupancy)),
        ..Hop::default()
    };
    books.observe_queues(&[own], Carrier::Int05, when, Some(&packet));
}
