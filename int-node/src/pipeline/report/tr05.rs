//! The reports of an INT 0.5 sink, in its export profile's form: a latency
//! report on a packet (Host-INT's INT/IPv4 report, or a plain Telemetry
//! Report 0.5 flow report), and Host-INT's Drop-Summary for the losses its
//! sweep declares. Each report goes straight into the report ring, within
//! the rate limit; a full ring drops the report and counts it.

use int_core::int05::{sink, HopMetadata};
use int_core::locate::IpVersion;
use int_core::report::tr05::SwitchLocalRepr;
use int_core::report::tr05_flow::FlowReport;
use int_core::report::{
    DropSummaryReport, DropSummaryRepr, LatencyReport, NextProto, ReportForm, ReportHeaderRepr, ReportProfile,
};

use crate::pipeline::export::{QueueError, ReportSender};
use crate::pipeline::rate_limit::RateLimit;
use crate::pipeline::sink_core::{DeclaredLoss, SinkReports};
use crate::pipeline::sink_flow::LossReports;
use crate::stats::{Counter, Counters};

pub struct SinkReporter05 {
    sender: ReportSender,
    limit: RateLimit,
    pub profile: ReportProfile,
    node_id: u32,
    /// This node's INT port (the sink's RX port), in its reports.
    int_port: u16,
}

impl SinkReporter05 {
    pub fn new(
        sender: ReportSender,
        limit: RateLimit,
        profile: ReportProfile,
        node_id: u32,
        int_port: u16,
    ) -> Self {
        SinkReporter05 { sender, limit, profile, node_id, int_port }
    }

    /// A report header stamped now; the exporter writes its own sequence
    /// number over the 0.
    fn header(&self, next_proto: NextProto, now_ns: u64) -> ReportHeaderRepr {
        let timestamp = self.profile.timestamp.from_ns(now_ns);
        match next_proto {
            NextProto::DropSummary => ReportHeaderRepr::drop_summary(0, timestamp, self.profile.hw_id),
            _ => ReportHeaderRepr::latency(0, timestamp, self.profile.hw_id),
        }
    }

    /// Whether losses are reported at all: Telemetry Report 0.5 has no
    /// report for losses between nodes, so in its form they are counted
    /// (`lost_packets`) and go no further.
    fn sends_losses(&self) -> bool {
        self.profile.form == ReportForm::HostInt
    }

    /// A latency report on packet `frame`, as the general path found it.
    pub fn latency(&mut self, frame: &[u8], found: &sink::Extracted, now_ns: u64, counters: &mut Counters) {
        if !self.limit.allow(now_ns) {
            counters.inc(Counter::reports_suppressed);
            return;
        }
        let (node_id, profile) = (self.node_id, &self.profile);
        // Host-INT's INT/IPv4 report has no IPv6 form: an IPv6 flow is
        // reported as in plain TR 0.5.
        let form = match found.ip_version() {
            IpVersion::V4 => profile.form,
            IpVersion::V6 => ReportForm::Tr05,
        };
        let queued = match form {
            ReportForm::HostInt => {
                let sink_hop = HopMetadata::host_int(node_id, self.int_port, now_ns as u32);
                let header = self.header(NextProto::Ipv4, now_ns);
                self.sender.queue(LatencyReport::len_for(found, profile), |out| {
                    LatencyReport::build(out, frame, found, &sink_hop, &header, node_id, profile)
                })
            }
            ReportForm::Tr05 => {
                let header = FlowReport::header(0, now_ns as u32, profile.hw_id);
                let local = SwitchLocalRepr {
                    switch_id: node_id,
                    ingress_port: self.int_port,
                    egress_port: self.int_port,
                    queue_id: 0,
                    queue_occupancy: 0,
                    egress_timestamp: now_ns as u32,
                };
                self.sender.queue(FlowReport::len_for(found), |out| {
                    FlowReport::build(out, frame, found, &header, &local)
                })
            }
        };
        count_queued(queued, Counter::reports_latency, counters);
    }
}

/// What became of a report handed to the ring.
fn count_queued(queued: Result<(), QueueError>, kind: Counter, counters: &mut Counters) {
    match queued {
        Ok(()) => counters.inc(kind),
        Err(QueueError::Full) => counters.inc(Counter::reports_ring_full),
        Err(QueueError::TooBig) => counters.inc(Counter::reports_too_big),
    }
}

impl LossReports for SinkReporter05 {
    fn has_room(&self) -> bool {
        !self.sends_losses() || self.sender.has_room()
    }
    fn allow(&mut self, now_ns: u64) -> bool {
        !self.sends_losses() || self.limit.allow(now_ns)
    }
}

impl SinkReports for SinkReporter05 {
    /// The source's port, not a digest.
    const HOP_DIGESTS: bool = false;
    /// A Drop-Summary (Host-INT's form only).
    fn send_loss(&mut self, loss: &DeclaredLoss<'_>, counters: &mut Counters) {
        if !self.sends_losses() {
            return;
        }
        let report = DropSummaryReport {
            header: self.header(NextProto::DropSummary, loss.now_ns),
            summary: DropSummaryRepr {
                source_node: loss.flow.source_node,
                sink_node: self.node_id,
                source_port: loss.flow.port_or_hops,
                sink_port: self.int_port,
                gap_timestamp: self.profile.timestamp.from_ns(loss.pending.first_declared_ns),
                gap_sequence: loss.pending.first_sequence,
                gap_count: loss.pending.count,
            },
            flow: *loss.key,
        };
        let queued = self.sender.queue(DropSummaryReport::len_for(loss.key.protocol), |out| report.emit(out));
        count_queued(queued, Counter::reports_drop_summary, counters);
    }
    /// Every report is in the ring already.
    fn flush(&mut self, _: &mut Counters) {}
    fn rate_limit(&self) -> u32 {
        self.limit.per_second()
    }
    fn set_rate_limit(&mut self, per_second: u32) {
        self.limit = RateLimit::new(per_second);
    }
}
