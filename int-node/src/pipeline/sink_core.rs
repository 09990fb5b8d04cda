//! What every sink does, whichever protocol carried the packets (INT 0.5,
//! INT 2.1, IOAM): the flow table and its admission, the loss, latency and
//! hop rules, the queue alert quota, the clock the timeouts run on, the
//! sweep that reports losses and ages flows, and the last sweep at
//! shutdown. Each protocol's sink embeds a [`SinkCore`] and adds what is
//! its own: how a packet is read and restored, and the report format
//! (the [`SinkReports`] type parameter, known at compile time: no dynamic
//! dispatch and no branch on the protocol per packet).

use int_core::flow::FlowKey;
use int_core::hop_rule::{HopChange, HopDigest, Untold};
use int_core::latency::ReportReason;
use int_core::loss::PendingLoss;

use crate::clock::Clock;
use crate::config::{MalformedPolicy, ReportSettings, SinkSettings};
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::{sweep_budget, Admission, Align64, FlowRef, FlowTable, SWEEP_STEPS};
use crate::pipeline::rate_limit::Quota;
use crate::pipeline::sink_flow::{
    arrival, packets_per_coarse_ms, plausible_jump, record_sequence, LossPass, LossReports, SinkFlow,
};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// A sink's reports in its protocol's format: the loss reports its sweep
/// makes, and the rate limit every report keeps to.
pub trait SinkReports: LossReports {
    /// Whether the flow record's `port_or_hops` holds the hop rule's
    /// digest (the protocol tells every hop), forgotten when the rule's
    /// classes change; or the source's port (INT 0.5), kept.
    const HOP_DIGESTS: bool;
    /// Reports one flow's declared losses and counts what became of the
    /// report.
    fn send_loss(&mut self, loss: &DeclaredLoss<'_>, counters: &mut Counters);
    /// The start of a burst of `packets` that reached the stage at
    /// `burst_ns`: where the reports carry this node's hop latency, its
    /// foretold departure (nothing to do otherwise).
    #[inline(always)]
    fn begin(&mut self, _burst_ns: u64, _packets: usize) {}
    /// Hands the reports made so far to the exporter, where they wait to
    /// share a datagram (the end of a burst).
    fn flush(&mut self, counters: &mut Counters);
    /// Reports per second (0: no limit).
    fn rate_limit(&self) -> u32;
    /// A new rate limit; the allowance starts full again.
    fn set_rate_limit(&mut self, per_second: u32);
}

/// One flow's losses the sweep declared, to report.
pub struct DeclaredLoss<'a> {
    pub key: &'a FlowKey,
    pub flow: &'a SinkFlow,
    pub pending: PendingLoss,
    /// When the sweep step runs.
    pub now_ns: u64,
}

/// The settings the rules read per packet, with what is worked out of them
/// once, and the queue alert quota.
pub struct SinkRules {
    pub settings: SinkSettings,
    /// [`packets_per_coarse_ms`] at `max_flow_pps`.
    jump_per_coarse_ms: u64,
    /// Queue alert reports left this second.
    queue_quota: Quota,
}

/// The flow table, the rules, the reports and the sweep of a sink.
pub struct SinkCore<R> {
    pub flows: FlowTable<SinkFlow, Align64>,
    pub rules: SinkRules,
    pub reports: R,
    pub rx_timestamps: Option<RxClock>,
    /// RX-timestamp time minus host-clock time at the last packet: the
    /// sweep's timeouts run on the packets' clock.
    rx_clock_offset: i64,
    last_sweep_ns: u64,
    /// The busiest and slowest flows, ranked as the sweep goes.
    pub top: TopFlows,
}

impl<R: SinkReports> SinkCore<R> {
    pub fn new(
        settings: SinkSettings,
        rx_timestamps: Option<RxClock>,
        flows: FlowTable<SinkFlow, Align64>,
        reports: R,
    ) -> Self {
        SinkCore {
            flows,
            rules: SinkRules {
                jump_per_coarse_ms: packets_per_coarse_ms(settings.max_flow_pps),
                queue_quota: Quota::new(settings.reports.queue_quota),
                settings,
            },
            reports,
            rx_timestamps,
            rx_clock_offset: 0,
            last_sweep_ns: 0,
            top: TopFlows::default(),
        }
    }

    /// Packet `i`'s arrival time: its RX timestamp where the pipeline's
    /// clock is the driver's, the burst's host time otherwise.
    #[inline(always)]
    pub fn arrival_ns(&mut self, burst: &Burst, i: usize, burst_ns: u64) -> u64 {
        arrival(burst, i, self.rx_timestamps, burst_ns, &mut self.rx_clock_offset)
    }

    /// New report settings, between bursts, swapped whole; returns the
    /// ones replaced.
    pub fn set_reports(&mut self, new: ReportSettings) -> ReportSettings {
        let old = std::mem::replace(&mut self.rules.settings.reports, new);
        if new.queue_quota != old.queue_quota {
            self.rules.queue_quota = Quota::new(new.queue_quota);
        }
        if new.rate_limit != self.reports.rate_limit() {
            self.reports.set_rate_limit(new.rate_limit);
        }
        if R::HOP_DIGESTS && new.hops != old.hops {
            // Every flow's digest was made with the old classes: each
            // flow's next stack is its first again, not a change.
            self.flows.for_each_mut(|flow| flow.port_or_hops = 0);
        }
        old
    }

    /// The start of a burst (see [`SinkReports::begin`]).
    #[inline(always)]
    pub fn begin_burst(&mut self, burst: &Burst, burst_ns: u64) {
        self.reports.begin(burst_ns, burst.len());
    }

    /// The end of a burst: its reports handed on, the packets `drop` has
    /// a bit for taken out of it.
    #[inline(always)]
    pub fn end_burst(&mut self, burst: &mut Burst, drop: u32, counters: &mut Counters) {
        self.reports.flush(counters);
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }

    /// The incremental sweep: a 64th of the table every 64th of the sweep
    /// interval (one full pass per interval, one comparison per poll in
    /// between) declares the holes of silent flows lost, reports declared
    /// losses and ages idle flows out. `host_ns`: the host clock now (one
    /// reading per poll serves the sweep and the burst).
    pub fn sweep(&mut self, host_ns: u64, counters: &mut Counters) {
        let now_ns = host_ns.wrapping_add_signed(self.rx_clock_offset);
        let step_ns = self.rules.settings.sweep_ms.max(1) * 1_000_000 / SWEEP_STEPS;
        if now_ns.wrapping_sub(self.last_sweep_ns) < step_ns {
            return;
        }
        self.last_sweep_ns = now_ns;
        let budget = sweep_budget(self.flows.slot_count(), step_ns);
        self.sweep_slots(budget, now_ns, false, counters);
    }

    /// At shutdown: every hole is lost, and every loss reported, nothing
    /// rate-limited (as far as the report ring holds them: the exporter
    /// drains it after the workers stop; what does not fit is counted
    /// `reports_ring_full`).
    pub fn finish(&mut self, clock: &mut Clock, counters: &mut Counters) {
        self.reports.set_rate_limit(0);
        let slots = self.flows.slot_count();
        let now_ns = clock.now_ns().wrapping_add_signed(self.rx_clock_offset);
        self.sweep_slots(slots, now_ns, true, counters);
    }

    pub(crate) fn sweep_slots(
        &mut self,
        budget: usize,
        now_ns: u64,
        final_pass: bool,
        counters: &mut Counters,
    ) {
        let SinkCore { flows, reports, rules, top, .. } = self;
        let pass = LossPass { now_ns, final_pass, settings: &rules.settings, top };
        pass.sweep(flows, budget, reports, counters, |reports, key, flow, pending, counters| {
            reports.send_loss(&DeclaredLoss { key, flow, pending, now_ns }, counters)
        });
        self.top.after_sweep(self.flows.passes());
        self.reports.flush(counters);
    }
}

/// What a sink tracks of a packet of a protocol that tells each hop and
/// a 64-bit source time (INT 2.1, IOAM), however it was read.
pub struct Seen {
    pub sequence: Option<u32>,
    /// The oldest hop's (the source's) node id and ingress time.
    pub source_node: Option<u32>,
    pub source_ns: Option<u64>,
    /// What the hop rule makes of the stack.
    pub hops: Result<HopDigest, Untold>,
    /// INT-MX: no stack to compare.
    pub is_mx: bool,
}

impl<R> SinkCore<R> {
    /// Updates the flow's loss, latency and path state from a packet of
    /// [`Seen`]'s protocols; says whether to report, and why: the report's
    /// counter (a latency change, a new path, a hop's change or queue).
    #[inline(always)]
    pub fn track(
        &mut self,
        flow: FlowRef<'_>,
        seen: &Seen,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<Counter> {
        let slot = self.flows.get_or_insert_flow(flow, now_ns, SinkFlow::evictable);
        let rules = &mut self.rules;
        let flow = rules.admit(slot, seen.sequence, now_ns, counters)?;
        if let Some(node) = seen.source_node {
            flow.source_node = node;
        }
        let hop_report = rules.hops(flow, seen.hops, !seen.is_mx, now_ns, counters);
        let Some(source_ns) = seen.source_ns else { return hop_report };
        // 64-bit timestamps, a signed difference: no 32-bit split.
        let latency = int_core::latency::one_way_latency64(now_ns, source_ns);
        let latency_report = rules.latency(flow, latency, now_ns, counters).map(|_| Counter::reports_latency);
        hop_report.or(latency_report)
    }
}

impl SinkRules {
    /// A flow's slot as the table found or made it (`None`: the table is
    /// full): admission counted, the packet counted and its number (if it
    /// carries one) recorded for the loss rule. The flow, to go on with.
    #[inline(always)]
    pub fn admit<'f>(
        &self,
        slot: Option<(&'f mut SinkFlow, Admission)>,
        sequence: Option<u32>,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<&'f mut SinkFlow> {
        let Some((flow, admission)) = slot else {
            counters.inc(Counter::flow_table_full);
            return None;
        };
        let idle_ms = match admission {
            Admission::Existing { idle_ms } => idle_ms,
            Admission::Created | Admission::Evicted => {
                counters.inc(Counter::flows_created);
                counters.add(Counter::flows_evicted, u64::from(admission == Admission::Evicted));
                0
            }
        };
        flow.packets = flow.packets.saturating_add(1);
        match sequence {
            Some(sequence) => {
                let max_jump = plausible_jump(self.jump_per_coarse_ms, idle_ms);
                record_sequence(flow, sequence, max_jump, now_ns, counters);
            }
            None => counters.inc(Counter::no_sequence),
        }
        Some(flow)
    }

    /// A one-way latency for the flow's latency rule: `Err` a difference
    /// it does not believe ([`count_unbelieved`]). Says whether to report.
    #[inline(always)]
    pub fn latency(
        &self,
        flow: &mut SinkFlow,
        latency: Result<u64, i128>,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<ReportReason> {
        let latency = match latency {
            Ok(latency) => latency,
            Err(difference) => {
                count_unbelieved(difference, counters);
                return None;
            }
        };
        counters.lower(Counter::latency_min_ns, latency);
        counters.raise(Counter::latency_max_ns, latency);
        flow.latency.observe(&self.settings.reports.latency, latency, now_ns)
    }

    /// What the path and hop rules say of a flow's new stack (a path told
    /// before and told differently now, a hop's class changed, a hop's
    /// queue over the alert threshold within the quota): the report's
    /// counter. The flow's digest is updated; a flow's first stack is the
    /// latency rule's first report. Without classes every change is the
    /// path's (an 8-bit path digest that missed it cannot make it a hop's).
    /// `untold_counts`: a stack the rule cannot digest is counted
    /// `path_untold` (not for INT-MX, which carries none); one the rules
    /// did not read ([`Untold::Skipped`]: sampled out, or rules off) is not.
    #[inline(always)]
    pub fn hops(
        &mut self,
        flow: &mut SinkFlow,
        hops: Result<HopDigest, Untold>,
        untold_counts: bool,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<Counter> {
        let digest = match hops {
            Ok(digest) => digest,
            Err(Untold::Skipped) => return None,
            Err(_) => {
                counters.add(Counter::path_untold, u64::from(untold_counts));
                return None;
            }
        };
        let change = digest.change_from(flow.port_or_hops, flow.path);
        (flow.port_or_hops, flow.path) = (digest.hops(), digest.path());
        let classes = self.settings.reports.hops.has_classes();
        let report = match change {
            Some(HopChange::Hop) if classes => Some(Counter::reports_hop_change),
            Some(_) if self.settings.reports.path_changes => Some(Counter::reports_path_change),
            _ => None,
        };
        if report.is_some() || !digest.queue_alert() {
            return report;
        }
        if self.queue_quota.allow(now_ns) {
            Some(Counter::reports_queue)
        } else {
            counters.inc(Counter::reports_queue_quota);
            None
        }
    }

    /// A packet whose headers lie: counted by reason, then by the
    /// `malformed` policy. Returns whether it goes on.
    pub fn malformed(&self, error: int_core::ParseError, counters: &mut Counters) -> bool {
        counters.inc(Counter::malformed(error.drop_reason()));
        if self.settings.malformed == MalformedPolicy::Drop {
            counters.inc(Counter::malformed_dropped);
            return false;
        }
        counters.inc(Counter::malformed_forwarded);
        true
    }
}

/// Counts how a packet's restoration went; whether it goes on (not when it
/// could not be restored, nor a probe that asked to be discarded).
#[inline(always)]
pub fn restored(restored: bool, discard: bool, counters: &mut Counters) -> bool {
    if !restored {
        counters.inc(Counter::malformed(int_core::DropReason::PacketMalformed));
    } else {
        counters.inc(Counter::stripped);
    }
    if discard {
        counters.inc(Counter::discarded);
    }
    restored && !discard
}

/// A one-way latency the sink does not believe: negative (the sink's clock
/// behind the source's: `clock_skew`, the largest kept) or over
/// [`int_core::latency::MAX_ONE_WAY_NS`] (a source clock far behind, or a
/// timestamp that lies: `latency_too_long`). Neither feeds the flow's
/// latency rule, and the flow's latency state is left as it was: its first
/// believable packet is reported as its first.
fn count_unbelieved(difference: i128, counters: &mut Counters) {
    if difference < 0 {
        counters.inc(Counter::clock_skew);
        counters
            .raise(Counter::clock_skew_max_ns, u64::try_from(difference.unsigned_abs()).unwrap_or(u64::MAX));
    } else {
        counters.inc(Counter::latency_too_long);
    }
}

/// A sink's settings and hop for unit tests, and a report ring of 16.
#[cfg(test)]
pub(crate) mod testing {
    use crate::config::{MalformedPolicy, ReportSettings, SinkSettings};
    use crate::pipeline::export::{report_ring, ReportReceiver};
    use crate::pipeline::setup::{Hop, SinkSetup};

    pub const LOSS_TIMEOUT_MS: u64 = 200;

    pub fn setup() -> (SinkSetup, ReportReceiver) {
        let settings = SinkSettings {
            reports: ReportSettings {
                latency: int_core::latency::LatencyConfig::default(),
                max_skew_ns: 1 << 31,
                rate_limit: 0,
                path_changes: true,
                hops: int_core::hop_rule::HopRule::default(),
                queue_quota: 100,
            },
            loss_timeout_ms: LOSS_TIMEOUT_MS,
            sweep_ms: 100,
            flow_capacity: 64,
            idle_timeout_ms: 120_000,
            malformed: MalformedPolicy::Forward,
            max_flow_pps: 14_880_952,
            max_report_delay_ms: 5000,
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
        (SinkSetup { settings, hop, reports: sender }, receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::int05::sink::Sink05Stage;
    use crate::pipeline::int21::sink::Sink21Stage;
    use int_core::report::ReportProfile;
    use std::net::Ipv4Addr;

    fn sink21() -> Sink21Stage {
        let domain = int_core::int21::Domain {
            marking: int_core::int21::Marking::UdpPort(0),
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(crate::pipeline::report::NODE_DOMAIN_ID),
        };
        Sink21Stage::new(domain, testing::setup().0)
    }

    fn key() -> FlowKey {
        FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 4000, 5000)
    }

    /// The flow of `key()` in `core`'s table, made with `port_or_hops`.
    fn flow_with<R: SinkReports>(core: &mut SinkCore<R>, port_or_hops: u16) {
        if let Some((flow, _)) = core.flows.get_or_insert(&key(), 0, SinkFlow::evictable) {
            flow.port_or_hops = port_or_hops;
        }
    }

    /// New hop classes make every INT 2.1 (and IOAM) flow's next stack its
    /// first again; an INT 0.5 flow's field holds its source's port, which
    /// Drop-Summary reports name, and stays.
    #[test]
    fn new_hop_classes_forget_digests_not_int05_source_ports() {
        let mut sink21 = sink21();
        let (setup, _receiver) = testing::setup();
        let mut sink05 = Sink05Stage::new(int_core::int05::Domain::default(), ReportProfile::HOST_INT, setup);
        flow_with(&mut sink21.core, 0x1234);
        flow_with(&mut sink05.core, 7);
        let settings = &sink21.core.rules.settings.reports;
        let new = ReportSettings {
            latency: settings.latency,
            max_skew_ns: settings.max_skew_ns,
            rate_limit: 0,
            path_changes: settings.path_changes,
            hops: int_core::hop_rule::HopRule { queue_alert: Some(100), ..settings.hops },
            queue_quota: settings.queue_quota,
        };
        sink21.core.set_reports(new);
        sink05.core.set_reports(new);
        assert_eq!(sink21.core.flows.get(&key()).map(|f| f.port_or_hops), Some(0));
        assert_eq!(sink05.core.flows.get(&key()).map(|f| f.port_or_hops), Some(7));
    }

    /// A stack the hop rule cannot digest is counted, but not an INT-MX
    /// packet's (it carries none), nor one the rules did not read (sampled
    /// out, or rules off); none is reported, and the flow keeps its digest.
    #[test]
    fn untold_stacks_are_counted_but_not_mx_nor_skipped() {
        let mut sink = sink21();
        let (mut counters, mut flow) = (Counters::default(), SinkFlow::default());
        (flow.port_or_hops, flow.path) = (0x1234, 0x56);
        let rules = &mut sink.core.rules;
        assert_eq!(rules.hops(&mut flow, Err(Untold::TooMany), true, 0, &mut counters), None);
        assert_eq!(rules.hops(&mut flow, Err(Untold::TooMany), false, 0, &mut counters), None);
        assert_eq!(rules.hops(&mut flow, Err(Untold::Skipped), true, 0, &mut counters), None);
        assert_eq!(counters.get(Counter::path_untold), 1);
        assert_eq!((flow.port_or_hops, flow.path), (0x1234, 0x56));
    }

    /// A sink clock behind the source's is skew (the largest kept), one
    /// too far ahead is not believed; neither feeds the latency rule, so
    /// the first believable latency is the flow's first report.
    #[test]
    fn unbelieved_latencies_are_counted_not_reported() {
        let sink = sink21();
        let (mut counters, mut flow) = (Counters::default(), SinkFlow::default());
        let rules = &sink.core.rules;
        assert_eq!(rules.latency(&mut flow, Err(-5), 0, &mut counters), None);
        assert_eq!(rules.latency(&mut flow, Err(-3), 0, &mut counters), None);
        assert_eq!(rules.latency(&mut flow, Err(1 << 40), 0, &mut counters), None);
        assert!(rules.latency(&mut flow, Ok(1000), 0, &mut counters).is_some());
        let counted = [Counter::clock_skew, Counter::clock_skew_max_ns, Counter::latency_too_long];
        assert_eq!(counted.map(|c| counters.get(c)), [2, 5, 1]);
        assert_eq!(counters.get(Counter::latency_min_ns), 1000);
    }
}
