//! The sink stage: strips INT from every INT packet (tracked flow or not),
//! forwards the restored packet, keeps per-flow latency and loss state and
//! hands reports to the exporter through a lock-free SPSC ring. Forwarding
//! never waits on export: a full ring or an exhausted rate limit drops the
//! report and counts it.

use int_core::encap::Domain;
use int_core::int05::sink::{self, Arrival, FastArrival, FastInt};
use int_core::int05::{HopMetadata, ShapeCache, SourceHop};
use int_core::latency::{LatencyConfig, ReportReason};
use int_core::locate::IpVersion;
use int_core::report::tr05::SwitchLocalRepr;
use int_core::report::tr05_flow::FlowReport;
use int_core::report::{
    DropSummaryReport, DropSummaryRepr, LatencyReport, NextProto, ReportForm, ReportHeaderRepr, ReportProfile,
};
use int_core::DropReason;

use crate::clock::Clock;
use crate::config::{MalformedPolicy, SinkSettings};
use crate::dpdk::mbuf::{Burst, RxClock, BURST};
use crate::flow_table::{sweep_budget, Admission, Align64, FlowTable, SWEEP_STEPS};
use crate::pipeline::export::{QueueError, ReportSender};
use crate::pipeline::rate_limit::RateLimit;
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_flow::{
    arrival, packets_per_coarse_ms, plausible_jump, record_sequence, LossPass, LossReports, SinkFlow,
};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// One-way latency from a source's 32-bit timestamp (low bits of epoch ns)
/// to the sink's time, in ns: `Err(skew)` when the sink's clock is behind
/// the source's by up to `max_skew_ns`, never about 4.29 s. 32 bits tell
/// apart 2^32 ns in all: `max_skew_ns` of them are skew, the rest latency
/// (the default, 2^31, splits them evenly: +-2.1 s).
#[inline]
pub fn one_way_latency(sink_ns: u64, source_ts: u32, max_skew_ns: u32) -> Result<u32, u32> {
    let difference = (sink_ns as u32).wrapping_sub(source_ts);
    let behind = difference.wrapping_neg();
    if difference != 0 && behind <= max_skew_ns {
        return Err(behind);
    }
    Ok(difference)
}

/// What the sink tracks of a packet, from either path.
struct Observed {
    sequence: Option<u32>,
    source_hop: Option<SourceHop>,
}

/// The settings tracking reads per packet, worked out once.
struct TrackRules {
    latency: LatencyConfig,
    max_skew_ns: u32,
    /// [`packets_per_coarse_ms`] at the configured `max_flow_pps`.
    jump_per_coarse_ms: u64,
}

/// Updates a flow's state from a packet, given the slot the table found or
/// made for it (`None`: the table is full); says whether to send a latency
/// report.
#[inline(always)]
fn track(
    slot: Option<(&mut SinkFlow, Admission)>,
    observed: &Observed,
    rules: &TrackRules,
    now_ns: u64,
    counters: &mut Counters,
) -> Option<ReportReason> {
    let Some((flow, admission)) = slot else {
        counters.inc(Counter::flow_table_full);
        return None;
    };
    let idle_ms = match admission {
        Admission::Existing { idle_ms } => Some(idle_ms),
        Admission::Created => {
            counters.inc(Counter::flows_created);
            None
        }
        Admission::Evicted => {
            counters.inc(Counter::flows_created);
            counters.inc(Counter::flows_evicted);
            None
        }
    };
    flow.packets = flow.packets.saturating_add(1);
    let source = observed.source_hop;
    if let Some(source) = source {
        flow.source_node = source.switch_id().unwrap_or(0);
        flow.port_or_hops = source.ingress_port().unwrap_or(0);
    }
    match observed.sequence {
        Some(sequence) => {
            let max_jump = plausible_jump(rules.jump_per_coarse_ms, idle_ms.unwrap_or(0));
            record_sequence(flow, sequence, max_jump, now_ns, counters);
        }
        None => counters.inc(Counter::no_sequence),
    }
    let source_ts = source.and_then(|hop| hop.ingress_timestamp())?;
    let latency = match one_way_latency(now_ns, source_ts, rules.max_skew_ns) {
        Ok(latency) => latency,
        Err(skew) => {
            // The sink's clock is behind the source's: skew, not latency.
            // Counted, never reported, and the flow's latency state is
            // left as it was.
            counters.inc(Counter::clock_skew);
            counters.raise(Counter::clock_skew_max_ns, u64::from(skew));
            return None;
        }
    };
    counters.lower(Counter::latency_min_ns, u64::from(latency));
    counters.raise(Counter::latency_max_ns, u64::from(latency));
    flow.latency.observe(&rules.latency, u64::from(latency), now_ns)
}

/// Each burst's finds between the two passes, valid where that burst's
/// bits say: kept in the stage, never cleared per burst.
#[derive(Default)]
pub struct SinkLanes {
    fast: [(FastInt, u64); BURST],
    general: [(sink::Extracted, u64); BURST],
}

pub struct SinkStage {
    pub domain: Domain,
    pub settings: SinkSettings,
    pub node_id: u32,
    pub int_port: u16,
    pub profile: ReportProfile,
    pub flows: FlowTable<SinkFlow, Align64>,
    /// The last INT block shape that passed the checks.
    shapes: ShapeCache,
    pub reports: ReportSender,
    pub limit: RateLimit,
    pub rx_timestamps: Option<RxClock>,
    /// RX-timestamp time minus host-clock time at the last packet: the sweep's
    /// timeouts run on the same clock as the packets' times.
    rx_clock_offset: i64,
    last_sweep_ns: u64,
    rules: TrackRules,
    lanes: Box<SinkLanes>,
    /// The busiest and slowest flows, ranked as the sweep goes.
    pub top: TopFlows,
}

impl SinkStage {
    /// A sink of `domain` that reports in `profile`'s form.
    pub fn new(domain: Domain, profile: ReportProfile, setup: SinkSetup) -> Self {
        let SinkSetup { settings, hop, rate_limit, reports } = setup;
        SinkStage {
            domain,
            flows: FlowTable::new(settings.flow_capacity as usize),
            shapes: ShapeCache::default(),
            rules: TrackRules {
                latency: settings.latency,
                max_skew_ns: settings.max_skew_ns,
                jump_per_coarse_ms: packets_per_coarse_ms(settings.max_flow_pps),
            },
            lanes: Box::default(),
            settings,
            node_id: hop.node_id,
            int_port: hop.rx_int_port,
            profile,
            reports,
            limit: RateLimit::new(rate_limit),
            rx_timestamps: hop.rx_timestamps,
            rx_clock_offset: 0,
            last_sweep_ns: 0,
            top: TopFlows::default(),
        }
    }

    /// New report settings, between bursts; returns the ones replaced.
    pub fn set_reports(
        &mut self,
        reports: crate::pipeline::reload::SinkReports,
    ) -> crate::pipeline::reload::SinkReports {
        let old = crate::pipeline::reload::SinkReports {
            latency: self.rules.latency,
            max_skew_ns: self.rules.max_skew_ns,
            rate_limit: self.limit.per_second(),
            path_changes: self.settings.path_changes,
            hops: self.settings.hops,
            queue_quota: self.settings.queue_quota,
        };
        // INT 2.1's hop rules are kept (and not applied).
        (self.settings.path_changes, self.settings.hops, self.settings.queue_quota) =
            (reports.path_changes, reports.hops, reports.queue_quota);
        self.rules.latency = reports.latency;
        self.settings.latency = reports.latency;
        self.rules.max_skew_ns = reports.max_skew_ns;
        self.settings.max_skew_ns = reports.max_skew_ns;
        if reports.rate_limit != old.rate_limit {
            self.limit = RateLimit::new(reports.rate_limit);
        }
        old
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

    /// Two passes over the burst: the first finds and checks every INT
    /// block and prefetches its flow's slot, the second tracks, reports and
    /// strips, by when the slots have arrived (a burst of misses overlaps
    /// instead of queueing one per packet). A fast-path frame
    /// takes the fast path; any other the general one. Out of line: one call
    /// per burst, and the stage is its own symbol in a profile.
    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        // Bit i: packet i takes the fast path, or the general one; or
        // leaves the burst (dropped by policy).
        let (mut fast, mut general, mut drop) = (0u32, 0u32, 0u32);
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frame_ahead(burst, i, counters) else { continue };
            match sink::classify_fast(frame, &self.domain, &mut self.shapes) {
                FastArrival::Int(found) => {
                    let hash = found.frame.flow.hash64();
                    self.flows.prefetch(hash);
                    if let Some(lane) = self.lanes.fast.get_mut(i) {
                        *lane = (found, hash);
                        fast |= 1 << i;
                    }
                }
                FastArrival::NotInt => counters.inc(Counter::not_int),
                FastArrival::Other => {
                    if let Some(entry) = self.extract_one(frame, i, &mut drop, counters) {
                        if let Some(lane) = self.lanes.general.get_mut(i) {
                            *lane = entry;
                            general |= 1 << i;
                        }
                    }
                }
            }
        }
        let mut stripped = 0;
        for i in 0..burst.len() {
            let done = if fast & (1 << i) != 0 {
                self.sink_fast(burst, i, burst_ns, counters)
            } else if general & (1 << i) != 0 {
                self.sink_general(burst, i, burst_ns, counters)
            } else {
                continue;
            };
            if done {
                stripped += 1;
            } else {
                // Cannot happen for a frame the first pass accepted; never
                // forward a half-restored packet all the same.
                counters.inc(Counter::malformed(DropReason::PacketMalformed));
                drop |= 1 << i;
            }
        }
        counters.add(Counter::stripped, stripped);
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }

    /// The second pass for a packet on the fast path: track, report (the
    /// report reads the packet through the general path: a report is the
    /// exception), strip. False if it could not be stripped.
    #[inline(always)]
    fn sink_fast(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some((found, hash)) = self.lanes.fast.get(i).copied() else { return false };
        let now_ns = self.packet_time(burst, i, burst_ns);
        let slot = self.flows.get_or_insert_words(&found.frame.flow, hash, now_ns, SinkFlow::evictable);
        let observed = Observed { sequence: found.sequence, source_hop: found.source_hop };
        if track(slot, &observed, &self.rules, now_ns, counters).is_some() {
            self.report_found_again(burst, i, now_ns, counters);
        }
        let domain = &self.domain;
        burst.with_frame(i, |f| sink::strip_fast(f, &found, domain)) == Some(Some(found.removed_len()))
    }

    /// The second pass for a packet on the general path.
    #[inline(always)]
    fn sink_general(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some((found, hash)) = self.lanes.general.get(i).copied() else { return false };
        let now_ns = self.packet_time(burst, i, burst_ns);
        if self.track(&found, hash, now_ns, counters).is_some() {
            if let Some(frame) = burst.data(i) {
                self.latency_report(frame, &found, now_ns, counters);
            }
        }
        let domain = &self.domain;
        matches!(burst.with_frame(i, |f| sink::strip(f, &found, domain)), Some(Some(_)))
    }

    /// Packet `i`'s arrival time: its RX timestamp where the pipeline's
    /// clock is the driver's, the burst's host time otherwise.
    #[inline(always)]
    fn packet_time(&mut self, burst: &Burst, i: usize, burst_ns: u64) -> u64 {
        arrival(burst, i, self.rx_timestamps, burst_ns, &mut self.rx_clock_offset)
    }

    /// A latency report for a packet the fast path tracked: the general
    /// path reads it again for the report's fields. Out of line: reports
    /// are the exception.
    #[inline(never)]
    fn report_found_again(&mut self, burst: &Burst, i: usize, now_ns: u64, counters: &mut Counters) {
        let Some(frame) = burst.data(i) else { return };
        if let Ok(Arrival::Int(found)) = sink::classify(frame, &self.domain, &mut self.shapes) {
            self.latency_report(frame, &found, now_ns, counters);
        }
    }

    /// Finds and checks the INT block of packet `i`'s frame on the general
    /// path and prefetches its flow's slot; counts and applies the
    /// malformed policy.
    #[inline(always)]
    fn extract_one(
        &mut self,
        frame: &[u8],
        i: usize,
        drop: &mut u32,
        counters: &mut Counters,
    ) -> Option<(sink::Extracted, u64)> {
        match sink::classify(frame, &self.domain, &mut self.shapes) {
            Ok(Arrival::Int(found)) => {
                let hash = found.flow.hash64();
                self.flows.prefetch(hash);
                Some((found, hash))
            }
            Ok(Arrival::NotInt) => {
                counters.inc(Counter::not_int);
                None
            }
            Ok(Arrival::MarkedNotInt) => {
                counters.inc(Counter::marked_not_int);
                None
            }
            Err(error) => {
                counters.inc(Counter::malformed(error.drop_reason()));
                if self.settings.malformed == MalformedPolicy::Drop {
                    counters.inc(Counter::malformed_dropped);
                    *drop |= 1 << i;
                } else {
                    counters.inc(Counter::malformed_forwarded);
                }
                None
            }
        }
    }

    /// Updates the flow's state; says whether to send a latency report.
    #[inline]
    fn track(
        &mut self,
        found: &sink::Extracted,
        hash: u64,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<ReportReason> {
        let slot = self.flows.get_or_insert_hashed(&found.flow, hash, now_ns, SinkFlow::evictable);
        let observed = Observed { sequence: found.sequence, source_hop: found.source_hop };
        track(slot, &observed, &self.rules, now_ns, counters)
    }

    fn latency_report(
        &mut self,
        frame: &[u8],
        found: &sink::Extracted,
        now_ns: u64,
        counters: &mut Counters,
    ) {
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
                self.reports.queue(LatencyReport::len_for(found, profile), |out| {
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
                self.reports.queue(FlowReport::len_for(found), |out| {
                    FlowReport::build(out, frame, found, &header, &local)
                })
            }
        };
        match queued {
            Ok(()) => counters.inc(Counter::reports_latency),
            Err(QueueError::Full) => counters.inc(Counter::reports_ring_full),
            Err(QueueError::TooBig) => counters.inc(Counter::reports_too_big),
        }
    }

    /// The incremental sweep: a full pass over the table every sweep
    /// interval. Flushes holes of flows whose head has not moved for the
    /// loss timeout, sends Drop-Summary reports for declared losses, and
    /// ages idle flows out (after reporting their last losses).
    /// `host_ns`: the host clock now (one reading per poll serves the sweep
    /// and the burst).
    pub fn sweep(&mut self, host_ns: u64, counters: &mut Counters) {
        let now_ns = host_ns.wrapping_add_signed(self.rx_clock_offset);
        // A 64th of the table every 64th of the sweep interval: one full
        // pass per interval, and one comparison per poll in between.
        let step_ns = self.settings.sweep_ms.max(1) * 1_000_000 / SWEEP_STEPS;
        if now_ns.wrapping_sub(self.last_sweep_ns) < step_ns {
            return;
        }
        self.last_sweep_ns = now_ns;
        let budget = sweep_budget(self.flows.slot_count(), step_ns);
        self.sweep_slots(budget, now_ns, false, counters);
    }

    fn sweep_slots(&mut self, budget: usize, now_ns: u64, final_pass: bool, counters: &mut Counters) {
        let header = self.header(NextProto::DropSummary, now_ns);
        let (node_id, int_port, unit) = (self.node_id, self.int_port, self.profile.timestamp);
        // Telemetry Report 0.5 has no report for losses between nodes: they
        // are counted (`lost_packets`) and go no further.
        let sends = self.profile.form == ReportForm::HostInt;
        let SinkStage { flows, reports, limit, settings, top, .. } = self;
        let pass = LossPass { now_ns, final_pass, settings, top };
        pass.sweep(
            flows,
            budget,
            &mut Ring { sender: reports, limit, sends },
            counters,
            |ring, key, flow, pending, counters| {
                if !ring.sends {
                    return;
                }
                let report = DropSummaryReport {
                    header,
                    summary: DropSummaryRepr {
                        source_node: flow.source_node,
                        sink_node: node_id,
                        source_port: flow.port_or_hops,
                        sink_port: int_port,
                        gap_timestamp: unit.from_ns(pending.first_declared_ns),
                        gap_sequence: pending.first_sequence,
                        gap_count: pending.count,
                    },
                    flow: *key,
                };
                match ring.sender.queue(DropSummaryReport::len_for(key.protocol), |out| report.emit(out)) {
                    Ok(()) => counters.inc(Counter::reports_drop_summary),
                    Err(QueueError::Full) => counters.inc(Counter::reports_ring_full),
                    Err(QueueError::TooBig) => counters.inc(Counter::reports_too_big),
                }
            },
        );
        self.top.after_sweep(self.flows.passes());
    }

    /// At shutdown: declare every hole lost and report what is pending (as
    /// much as the report ring holds: the exporter drains it after the
    /// workers stop; what does not fit is counted `reports_ring_full`).
    pub fn finish(&mut self, clock: &mut Clock, counters: &mut Counters) {
        let now_ns = clock.now_ns().wrapping_add_signed(self.rx_clock_offset);
        // Nothing is rate-limited on the way out.
        self.limit = RateLimit::new(0);
        let slots = self.flows.slot_count();
        self.sweep_slots(slots, now_ns, true, counters);
    }
}

/// An INT 0.5 sink's report ring and rate limit.
pub(crate) struct Ring<'a> {
    sender: &'a mut ReportSender,
    limit: &'a mut RateLimit,
    /// Whether losses are reported at all (not in plain TR 0.5).
    sends: bool,
}

impl LossReports for Ring<'_> {
    fn has_room(&self) -> bool {
        !self.sends || self.sender.has_room()
    }
    fn allow(&mut self, now_ns: u64) -> bool {
        !self.sends || self.limit.allow(now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::export::{report_ring, ReportReceiver, REPORT_MAX};
    use crate::pipeline::setup::Hop;
    use int_core::craft::PacketSpec;
    use int_core::int05::source::{self, SourceConfig};
    use int_core::report::{self, SinkIdWord};
    use int_core::FrameBuf;

    const MS: u64 = 1_000_000;
    const LOSS_TIMEOUT_MS: u64 = 200;

    fn stage(domain: Domain) -> (SinkStage, ReportReceiver) {
        let settings = SinkSettings {
            latency: LatencyConfig::default(),
            loss_timeout_ms: LOSS_TIMEOUT_MS,
            sweep_ms: 100,
            flow_capacity: 64,
            idle_timeout_ms: 120_000,
            malformed: MalformedPolicy::Forward,
            max_flow_pps: 14_880_952,
            max_report_delay_ms: 5000,
            max_skew_ns: 1 << 31,
            path_changes: true,
            hops: int_core::hop_rule::HopRule::default(),
            queue_quota: 100,
        };
        let (sender, receiver) = report_ring(16);
        let hop = Hop {
            node_id: 2,
            rx_int_port: 2,
            tx_int_port: 2,
            max_ip_len: 1500,
            rx_timestamps: None,
            rx_queue: None,
        };
        let setup = SinkSetup { settings, hop, rate_limit: 0, reports: sender };
        (SinkStage::new(domain, ReportProfile::HOST_INT, setup), receiver)
    }

    /// One instrumented packet of a single UDP flow, as the sink finds it.
    fn arrival(config: &SourceConfig, domain: &Domain, sequence: u32) -> sink::Extracted {
        let frame = PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 4000, 5000, 32).build();
        let mut buffer = vec![0u8; 128 + frame.len()];
        buffer[128..].copy_from_slice(&frame);
        let mut frame_buf = FrameBuf::new(&mut buffer, 128, frame.len()).unwrap();
        let plan = source::plan(frame_buf.frame(), config).unwrap();
        let hop = HopMetadata::host_int(1, 1, 0);
        source::insert(&mut frame_buf, &plan, config, sequence, &hop).unwrap();
        sink::extract(frame_buf.frame(), domain).unwrap().unwrap()
    }

    /// A hole is declared lost once the flow has been silent for the loss
    /// timeout: a late duplicate keeps it waiting, though the head has not
    /// moved since the hole opened. The loss then leaves as a Drop-Summary.
    /// A reload's report settings reach the stage through its mailbox
    /// between bursts, once, and the stage keeps its flows.
    #[test]
    fn reloaded_report_settings_are_swapped_in_once() {
        use crate::pipeline::reload::{mailbox, SinkReports, Update};
        use int_core::latency::ChangeRule;
        let (sink, _receiver) = stage(Domain::default());
        let mut stage = crate::pipeline::Stage::Sink(Box::new(sink));
        let (mut outbox, mut inbox) = mailbox();
        let latency = LatencyConfig { rule: ChangeRule::Absolute { ns: 5_000 }, refresh_ns: 7 * MS };
        let hops = int_core::hop_rule::HopRule::default();
        let new = SinkReports {
            latency,
            max_skew_ns: 1_000,
            rate_limit: 100,
            path_changes: false,
            hops,
            queue_quota: 5,
        };
        assert!(outbox.post(Update::SinkReports(new)));
        assert_eq!(inbox.apply(&mut stage), 1);
        assert_eq!(inbox.apply(&mut stage), 0, "taken once");
        let crate::pipeline::Stage::Sink(sink) = &stage else { panic!() };
        assert_eq!(
            (sink.rules.latency, sink.rules.max_skew_ns, sink.limit.per_second()),
            (latency, 1_000, 100)
        );
        assert_eq!(sink.settings.latency, latency);
        assert_eq!((sink.settings.path_changes, sink.settings.queue_quota), (false, 5));
        assert_eq!(sink.flows.slot_count(), 128, "the table made for 64 flows");
        outbox.drop_spent();
    }

    #[test]
    fn holes_are_lost_after_the_flow_is_silent_for_the_timeout() {
        let config = SourceConfig::host_int(1500);
        let domain = Domain { encapsulation: config.encapsulation, tcp_placement: config.tcp_placement };
        let (mut sink, mut receiver) = stage(domain);
        let mut counters = Counters::default();
        let t0 = 10_000 * MS;
        let slots = sink.flows.slot_count();
        for (sequence, at) in [(1, t0), (2, t0 + MS), (4, t0 + 2 * MS), (4, t0 + 150 * MS)] {
            let found = arrival(&config, &domain, sequence);
            sink.track(&found, found.flow.hash64(), at, &mut counters);
        }
        // 250 ms after the head moved, but 100 ms after the duplicate.
        sink.sweep_slots(slots, t0 + 250 * MS, false, &mut counters);
        assert_eq!(counters.get(Counter::lost_packets), 0, "the flow spoke 100 ms ago");
        assert!(receiver.pop_into(&mut [0u8; REPORT_MAX]).is_none());
        sink.sweep_slots(slots, t0 + 360 * MS, false, &mut counters);
        assert_eq!(counters.get(Counter::lost_packets), 1, "silent for 210 ms: sequence 3 is lost");
        let mut out = [0u8; REPORT_MAX];
        let len = receiver.pop_into(&mut out).expect("a Drop-Summary");
        let report::Report::DropSummary(summary) = report::parse(&out[..len], SinkIdWord::Detect).unwrap()
        else {
            panic!("not a Drop-Summary")
        };
        assert_eq!((summary.summary.gap_sequence, summary.summary.gap_count), (3, 1));
    }

    #[test]
    fn flow_slots_are_one_cache_line() {
        assert_eq!(std::mem::size_of::<SinkFlow>(), 44);
        assert_eq!(packets_per_coarse_ms(1_000_000), 1049);
        assert_eq!(plausible_jump(1049, 0), 1049 + 64);
        assert_eq!(plausible_jump(1049, 9), 10 * 1049 + 64);
        assert_eq!(plausible_jump(packets_per_coarse_ms(u64::MAX), u32::MAX), int_core::loss::MAX_JUMP);
        let even = 1 << 31;
        assert_eq!(one_way_latency(5_000_000_000, 5_000_000_000u64 as u32 + 1000, even), Err(1000));
        assert_eq!(one_way_latency((1 << 32) + 500, u32::MAX - 499, even), Ok(1000));
        assert_eq!(one_way_latency(3_000_000_000, 0, even), Err(((1u64 << 32) - 3_000_000_000) as u32));
        // Skew of at most 1 s: a 3 s latency is told apart; no skew: all is
        // latency, unsigned, as Host-INT computes it.
        assert_eq!(one_way_latency(3_000_000_000, 0, 1_000_000_000), Ok(3_000_000_000));
        assert_eq!(
            one_way_latency(3_000_000_000, 5_000_000_000u64 as u32, 0),
            Ok(3_000_000_000u32.wrapping_sub(5_000_000_000u64 as u32))
        );
        let table: FlowTable<SinkFlow, Align64> = FlowTable::new(1000);
        assert_eq!(table.slot_bytes(), 64);
        let source: FlowTable<u32> = FlowTable::new(1000);
        assert_eq!(source.slot_bytes(), 32);
    }
}
