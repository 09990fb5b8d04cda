//! The sink stage of an INT 0.5 domain: strips INT from every INT packet
//! (tracked flow or not), forwards the restored packet, keeps per-flow
//! latency and loss state (every sink's core,
//! [`crate::pipeline::sink_core`]) and hands reports to the exporter
//! through a lock-free SPSC ring ([`crate::pipeline::report::tr05`]).
//! Forwarding never waits on export: a full ring or an exhausted rate
//! limit drops the report and counts it.

use int_core::int05::fast_sink::{FastArrival, FastSink};
use int_core::int05::sink::{self, Arrival};
use int_core::int05::{Domain, ShapeCache, SourceHop};
use int_core::latency::ReportReason;
use int_core::report::ReportProfile;
use int_core::DropReason;

use crate::dpdk::mbuf::{Burst, BURST};
use crate::flow_table::{Admission, FlowTable};
use crate::pipeline::rate_limit::RateLimit;
use crate::pipeline::report::tr05::SinkReporter05;
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{SinkCore, SinkRules};
use crate::pipeline::sink_flow::SinkFlow;
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

/// Updates a flow's state from a packet, given the slot the table found or
/// made for it (`None`: the table is full); says whether to send a latency
/// report. The source hop names the flow's source node and port (its
/// Drop-Summary's); a sink clock behind the source's is skew, not latency.
#[inline(always)]
fn track(
    rules: &SinkRules,
    slot: Option<(&mut SinkFlow, Admission)>,
    observed: &Observed,
    now_ns: u64,
    counters: &mut Counters,
) -> Option<ReportReason> {
    let flow = rules.admit(slot, observed.sequence, now_ns, counters)?;
    let source = observed.source_hop;
    if let Some(source) = source {
        flow.source_node = source.switch_id().unwrap_or(0);
        flow.port_or_hops = source.ingress_port().unwrap_or(0);
    }
    let source_ts = source.and_then(|hop| hop.ingress_timestamp())?;
    let latency = one_way_latency(now_ns, source_ts, rules.settings.reports.max_skew_ns)
        .map(u64::from)
        .map_err(|skew| -i128::from(skew));
    rules.latency(flow, latency, now_ns, counters)
}

/// Each burst's finds between the two passes, valid where that burst's
/// bits say: kept in the stage, never cleared per burst.
#[derive(Default)]
pub struct SinkLanes {
    fast: [(FastSink, u64); BURST],
    general: [(sink::Extracted, u64); BURST],
}

pub struct Sink05Stage {
    pub domain: Domain,
    /// The last INT block shape that passed the checks.
    shapes: ShapeCache,
    lanes: Box<SinkLanes>,
    pub core: SinkCore<SinkReporter05>,
}

impl Sink05Stage {
    /// A sink of `domain` that reports in `profile`'s form.
    pub fn new(domain: Domain, profile: ReportProfile, setup: SinkSetup) -> Self {
        let SinkSetup { settings, hop, reports } = setup;
        let reports = SinkReporter05::new(
            reports,
            RateLimit::new(settings.reports.rate_limit),
            profile,
            hop.node_id,
            hop.rx_int_port,
        );
        let flows = FlowTable::new(settings.flow_capacity as usize);
        Sink05Stage {
            domain,
            shapes: ShapeCache::default(),
            lanes: Box::default(),
            core: SinkCore::new(settings, hop.rx_timestamps, flows, reports),
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
        self.core.begin_burst(burst, burst_ns);
        // Bit i: packet i takes the fast path, or the general one; or
        // leaves the burst (dropped by policy).
        let (mut fast, mut general, mut drop) = (0u32, 0u32, 0u32);
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            match FastSink::find(frame, &self.domain, &mut self.shapes) {
                FastArrival::Int(found) => {
                    let hash = crate::flow_table::hash(&found.frame.flow);
                    self.core.flows.prefetch(hash);
                    if let Some(lane) = self.lanes.fast.get_mut(i) {
                        *lane = (found, hash);
                        fast |= 1 << i;
                    }
                }
                FastArrival::NotInt => counters.inc(Counter::not_int),
                FastArrival::Other => {
                    if let Some(entry) = self.find_one(frame, i, &mut drop, counters) {
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
                self.take_fast(burst, i, burst_ns, counters)
            } else if general & (1 << i) != 0 {
                self.take_general(burst, i, burst_ns, counters)
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
        self.core.end_burst(burst, drop, counters);
    }

    /// The second pass for a packet on the fast path: track, report (the
    /// report reads the packet through the general path: a report is the
    /// exception), strip. False if it could not be stripped.
    #[inline(always)]
    fn take_fast(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some((found, hash)) = self.lanes.fast.get(i).copied() else { return false };
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let slot = self.core.flows.get_or_insert_words(&found.frame.flow, hash, now_ns, SinkFlow::evictable);
        let observed = Observed { sequence: found.sequence, source_hop: found.source_hop };
        if track(&self.core.rules, slot, &observed, now_ns, counters).is_some() {
            self.report_found_again(burst, i, now_ns, counters);
        }
        let domain = &self.domain;
        burst.with_frame(i, |f| found.strip(f, domain)) == Some(Some(found.removed_len()))
    }

    /// The second pass for a packet on the general path.
    #[inline(always)]
    fn take_general(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some((found, hash)) = self.lanes.general.get(i).copied() else { return false };
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        if self.track(&found, hash, now_ns, counters).is_some() {
            if let Some(frame) = burst.data(i) {
                self.core.reports.latency(frame, &found, now_ns, counters);
            }
        }
        let domain = &self.domain;
        matches!(burst.with_frame(i, |f| sink::strip(f, &found, domain)), Some(Some(_)))
    }

    /// A latency report for a packet the fast path tracked: the general
    /// path reads it again for the report's fields. Out of line: reports
    /// are the exception.
    #[inline(never)]
    fn report_found_again(&mut self, burst: &Burst, i: usize, now_ns: u64, counters: &mut Counters) {
        let Some(frame) = burst.data(i) else { return };
        if let Ok(Arrival::Int(found)) = sink::classify(frame, &self.domain, &mut self.shapes) {
            self.core.reports.latency(frame, &found, now_ns, counters);
        }
    }

    /// Finds and checks the INT block of packet `i`'s frame on the general
    /// path and prefetches its flow's slot; counts and applies the
    /// malformed policy.
    #[inline(always)]
    fn find_one(
        &mut self,
        frame: &[u8],
        i: usize,
        drop: &mut u32,
        counters: &mut Counters,
    ) -> Option<(sink::Extracted, u64)> {
        match sink::classify(frame, &self.domain, &mut self.shapes) {
            Ok(Arrival::Int(found)) => {
                let hash = crate::flow_table::hash(&found.flow.words());
                self.core.flows.prefetch(hash);
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
                if !self.core.rules.malformed(error, counters) {
                    *drop |= 1 << i;
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
        let slot = self.core.flows.get_or_insert_hashed(&found.flow, hash, now_ns, SinkFlow::evictable);
        let observed = Observed { sequence: found.sequence, source_hop: found.source_hop };
        track(&self.core.rules, slot, &observed, now_ns, counters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow_table::Align64;
    use crate::pipeline::export::{ReportReceiver, REPORT_MAX};
    use crate::pipeline::sink_core::SinkReports;
    use crate::pipeline::sink_flow::{packets_per_coarse_ms, plausible_jump};
    use int_core::craft::PacketSpec;
    use int_core::int05::source::{self, SourceConfig};
    use int_core::int05::HopMetadata;
    use int_core::latency::LatencyConfig;
    use int_core::report::{self, SinkIdWord};
    use int_core::FrameBuf;

    const MS: u64 = 1_000_000;

    fn stage(domain: Domain) -> (Sink05Stage, ReportReceiver) {
        let (setup, receiver) = crate::pipeline::sink_core::testing::setup();
        (Sink05Stage::new(domain, ReportProfile::HOST_INT, setup), receiver)
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
        use crate::config::ReportSettings;
        use crate::pipeline::reload::{mailbox, Update};
        use int_core::latency::ChangeRule;
        let (sink, _receiver) = stage(Domain::default());
        let mut stage =
            crate::pipeline::stage::Stage::Int05(crate::pipeline::int05::Int05::Sink(Box::new(sink)));
        let (mut outbox, mut inbox) = mailbox();
        let latency = LatencyConfig { rule: ChangeRule::Absolute { ns: 5_000 }, refresh_ns: 7 * MS };
        let hops = int_core::hop_rule::HopRule::default();
        let new = ReportSettings {
            latency,
            max_skew_ns: 1_000,
            rate_limit: 100,
            path_changes: false,
            hops,
            queue_quota: 5,
        };
        assert!(outbox.post(Update::Reports(new)));
        assert_eq!(inbox.apply(|update| stage.apply(update)), 1);
        assert_eq!(inbox.apply(|update| stage.apply(update)), 0, "taken once");
        let crate::pipeline::stage::Stage::Int05(crate::pipeline::int05::Int05::Sink(sink)) = &stage else {
            panic!()
        };
        let settings = &sink.core.rules.settings.reports;
        assert_eq!(
            (settings.latency, settings.max_skew_ns, sink.core.reports.rate_limit()),
            (latency, 1_000, 100)
        );
        assert_eq!((settings.path_changes, settings.queue_quota), (false, 5));
        assert_eq!(sink.core.flows.slot_count(), 128, "the table made for 64 flows");
        outbox.drop_spent();
    }

    #[test]
    fn holes_are_lost_after_the_flow_is_silent_for_the_timeout() {
        let config = SourceConfig::host_int(1500);
        let domain = Domain { encapsulation: config.encapsulation, tcp_placement: config.tcp_placement };
        let (mut sink, mut receiver) = stage(domain);
        let mut counters = Counters::default();
        let t0 = 10_000 * MS;
        let slots = sink.core.flows.slot_count();
        for (sequence, at) in [(1, t0), (2, t0 + MS), (4, t0 + 2 * MS), (4, t0 + 150 * MS)] {
            let found = arrival(&config, &domain, sequence);
            sink.track(&found, crate::flow_table::hash(&found.flow.words()), at, &mut counters);
        }
        // 250 ms after the head moved, but 100 ms after the duplicate.
        sink.core.sweep_slots(slots, t0 + 250 * MS, false, &mut counters);
        assert_eq!(counters.get(Counter::lost_packets), 0, "the flow spoke 100 ms ago");
        assert!(receiver.pop_into(&mut [0u8; REPORT_MAX]).is_none());
        sink.core.sweep_slots(slots, t0 + 360 * MS, false, &mut counters);
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
    fn flow_values_are_one_cache_line() {
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
        assert_eq!(table.slot_bytes(), 16 + 64, "a key, and a value of one cache line");
        let source: FlowTable<u32> = FlowTable::new(1000);
        assert_eq!(source.slot_bytes(), 16 + 8);
    }
}
