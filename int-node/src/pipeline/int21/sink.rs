//! The sink stage of an INT 2.1 domain: strips INT from every INT 2.1
//! packet, restores it, and reports to the collector in Telemetry Report
//! 2.0.
//!
//! The rule that maps our latency events onto TR 2.0: a latency report is
//! an individual report of RepType 1 (INT), InType 4 (IPv4) or 5 (IPv6), F set (D as
//! well when the packet carried D), RepMdBits 0x4C00: this node's level 1
//! ports and its ingress and egress timestamps (8 bytes, epoch ns; the node
//! id is in the group header). The inner contents are the packet as
//! received from its IP header through the INT block (and, with NPT 2,
//! the original L4 header's first bytes), so the collector reads the whole
//! stack; one-way latency is the report's ingress timestamp minus the
//! bottom hop's (the source's) ingress timestamp. A report goes out when a
//! flow's latency changes by the sink's rule, as for INT 0.5; when its
//! path (its hops' node ids) changes (`sink.path_changes`); when a hop's
//! latency or queue class changes, or a hop's queue is over the alert
//! threshold, within a quota (`sink.hops`): see [`int_core::hop_rule`].
//! The report is the same in every case; its counter says why.
//!
//! Losses: where the domain's sources number packets (source-only
//! metadata), the sink tracks each flow's numbers as an INT 0.5 sink tracks
//! Host-INT's, and reports the losses it declares by the rule of
//! [`int_core::report::tr20_loss`]. The reports of a burst or a sweep step
//! share one datagram. INT-MX packets are stripped and reported with this
//! node's metadata as every MX node reports (see [`crate::pipeline::int21::report`]).

use int_core::flow::FlowKey;
use int_core::hop_rule::{HopChange, HopDigest, HopFigures, Untold, MAX_HOPS};
use int_core::int21::fast_sink::{self, FastArrival, FastInt};
use int_core::int21::{sink, Arrival, Domain, HopMetadata};
use int_core::latency::LatencyConfig;
use int_core::report::tr20::{self, DropInfo, InType};
use int_core::report::tr20_loss::{self, LossReport};

use crate::clock::Clock;
use crate::config::{MalformedPolicy, SinkSettings};
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::{sweep_budget, Admission, Align64, FlowRef, FlowTable, SWEEP_STEPS};
use crate::pipeline::int21::report::{Reporter21, Subject};
use crate::pipeline::rate_limit::{Quota, RateLimit};
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_flow::{
    arrival, packets_per_coarse_ms, plausible_jump, record_sequence, LossPass, SinkFlow,
};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// The sink's metadata in a latency report: level 1 ports, ingress and
/// egress timestamps.
const LATENCY_MD_BITS: u16 = 0x4c00;
/// Its metadata in a drop report: level 1 ports (the egress one unknown,
/// all ones) and the ingress timestamp; bit 15 is added with the reason.
const DROP_MD_BITS: u16 = 0x4800;
/// Bytes of a dropped packet a drop report carries.
const DROPPED_BYTES: usize = 128;

/// What the sink tracks of an INT 2.1 packet, however it was read.
struct Seen<'a> {
    flow: FlowRef<'a>,
    sequence: Option<u32>,
    /// The bottom hop's node id and ingress time.
    source_node: Option<u32>,
    source_ns: Option<u64>,
    /// What the hop rule makes of the stack.
    hops: Result<HopDigest, Untold>,
    /// INT-MX: no stack to compare.
    is_mx: bool,
}

pub struct Sink21Stage {
    pub domain: Domain,
    pub settings: SinkSettings,
    latency: LatencyConfig,
    pub int_port: u16,
    pub flows: FlowTable<SinkFlow, Align64>,
    pub reporter: Reporter21,
    pub rx_timestamps: Option<RxClock>,
    last_sweep_ns: u64,
    /// RX-timestamp time minus host-clock time at the last packet: the
    /// sweep's timeouts run on the packets' clock.
    rx_clock_offset: i64,
    /// Queue alert reports left this second.
    queue_quota: Quota,
    /// [`crate::pipeline::sink_flow::packets_per_coarse_ms`] at `max_flow_pps`.
    jump_per_coarse_ms: u64,
    /// The busiest and slowest flows, ranked as the sweep goes.
    pub top: TopFlows,
    /// An IOAM domain's decapsulating node: packets carry the domain's
    /// trace, not INT 2.1.
    pub ioam: Option<int_core::ioam::Domain>,
}

impl Sink21Stage {
    pub fn new(domain: Domain, setup: SinkSetup) -> Self {
        let SinkSetup { settings, hop, rate_limit, reports } = setup;
        Sink21Stage {
            domain,
            latency: settings.latency,
            int_port: hop.rx_int_port,
            flows: FlowTable::with_ipv6_keys(settings.flow_capacity as usize),
            reporter: Reporter21::new(reports, RateLimit::new(rate_limit), hop.node_id),
            rx_timestamps: hop.rx_timestamps,
            last_sweep_ns: 0,
            rx_clock_offset: 0,
            jump_per_coarse_ms: packets_per_coarse_ms(settings.max_flow_pps),
            queue_quota: Quota::new(settings.queue_quota),
            top: TopFlows::default(),
            settings,
            ioam: None,
        }
    }

    /// The decapsulating node of an IOAM domain: reads every slot of the
    /// domain's trace, reports as the INT 2.1 sink does, gives back the
    /// packet as it came.
    pub fn ioam(domain: int_core::ioam::Domain, setup: SinkSetup) -> Self {
        // No INT 2.1 packet is read: the domain only names the Domain
        // Specific ID loss reports carry their figures under, int-node's
        // default, which collect reads unless told another.
        let unused = Domain {
            marking: int_core::int21::Marking::UdpPort(0),
            tcp_placement: int_core::encap::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(crate::config::INT21_DOMAIN_ID),
        };
        Sink21Stage { ioam: Some(domain), ..Sink21Stage::new(unused, setup) }
    }

    /// New report settings, between bursts; returns the ones replaced.
    pub fn set_reports(
        &mut self,
        reports: crate::pipeline::reload::SinkReports,
    ) -> crate::pipeline::reload::SinkReports {
        let old = crate::pipeline::reload::SinkReports {
            latency: self.latency,
            max_skew_ns: self.settings.max_skew_ns,
            rate_limit: self.reporter.rate_limit(),
            path_changes: self.settings.path_changes,
            hops: self.settings.hops,
            queue_quota: self.settings.queue_quota,
        };
        if reports.hops != old.hops {
            // Every flow's digest was made with the old classes: each
            // flow's next stack is its first again, not a change.
            self.flows.for_each_mut(|flow| flow.port_or_hops = 0);
        }
        if reports.queue_quota != old.queue_quota {
            self.queue_quota = Quota::new(reports.queue_quota);
        }
        (self.settings.path_changes, self.settings.hops, self.settings.queue_quota) =
            (reports.path_changes, reports.hops, reports.queue_quota);
        self.latency = reports.latency;
        self.settings.latency = reports.latency;
        self.settings.max_skew_ns = reports.max_skew_ns;
        if reports.rate_limit != old.rate_limit {
            self.reporter.set_rate_limit(reports.rate_limit);
        }
        old
    }

    /// One step of the sweep: a 64th of the table every 64th of the sweep
    /// interval declares the holes of silent flows lost, reports declared
    /// losses and ages idle flows out.
    pub fn sweep(&mut self, host_ns: u64, counters: &mut Counters) {
        let now_ns = host_ns.wrapping_add_signed(self.rx_clock_offset);
        let step_ns = self.settings.sweep_ms.max(1) * 1_000_000 / SWEEP_STEPS;
        if now_ns.wrapping_sub(self.last_sweep_ns) < step_ns {
            return;
        }
        self.last_sweep_ns = now_ns;
        let budget = sweep_budget(self.flows.slot_count(), step_ns);
        self.sweep_slots(budget, now_ns, false, counters);
    }

    /// At shutdown: every hole is lost, and every loss reported (as far as
    /// the report ring holds them).
    pub fn finish(&mut self, clock: &mut Clock, counters: &mut Counters) {
        self.reporter.unlimit();
        let slots = self.flows.slot_count();
        let now_ns = clock.now_ns().wrapping_add_signed(self.rx_clock_offset);
        self.sweep_slots(slots, now_ns, true, counters);
    }

    fn sweep_slots(&mut self, budget: usize, now_ns: u64, final_pass: bool, counters: &mut Counters) {
        let domain_id = self.domain.source_only.domain_id;
        let Sink21Stage { flows, reporter, settings, top, .. } = self;
        let pass = LossPass { now_ns, final_pass, settings, top };
        pass.sweep(flows, budget, reporter, counters, |reporter, key, flow, pending, counters| {
            let report = LossReport {
                flow: *key,
                first_sequence: pending.first_sequence,
                count: pending.count,
                source_node: (flow.source_node != 0).then_some(flow.source_node),
                declared_ns: pending.first_declared_ns,
            };
            let build = |out: &mut [u8]| report.emit(domain_id, out);
            reporter.add(tr20_loss::LEN, build, Counter::reports_loss, counters);
        });
        self.top.after_sweep(self.flows.passes());
        self.reporter.flush(counters);
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frame_ahead(burst, i, counters) else { continue };
            if let Some(ioam) = self.ioam {
                if !self.take_ioam(burst, i, &ioam, burst_ns, counters) {
                    drop |= 1 << i;
                }
                continue;
            }
            let keep = match fast_sink::extract_fast(frame, &self.domain, &self.settings.hops) {
                FastArrival::Int(fast) => self.take_fast(burst, i, &fast, burst_ns, counters),
                FastArrival::NotInt => {
                    counters.inc(Counter::not_int);
                    true
                }
                FastArrival::Other => self.take_general(burst, i, burst_ns, counters),
            };
            if !keep {
                drop |= 1 << i;
            }
        }
        self.reporter.flush(counters);
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }

    /// The time packet `i` arrived, on the clock the sweep's timeouts run on.
    #[inline(always)]
    fn arrival_ns(&mut self, burst: &Burst, i: usize, burst_ns: u64) -> u64 {
        arrival(burst, i, self.rx_timestamps, burst_ns, &mut self.rx_clock_offset)
    }

    /// Packet `i`, INT-MD of the fast path's shape ([`fast_sink::extract_fast`]):
    /// tracked, reported when its flow's latency changed (read again by the
    /// general path for the report, a packet in a hundred or so) or when it
    /// carries D, and restored. Returns whether it goes on.
    #[inline(always)]
    fn take_fast(
        &mut self,
        burst: &mut Burst,
        i: usize,
        fast: &FastInt,
        burst_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let now_ns = self.arrival_ns(burst, i, burst_ns);
        let key = if fast.frame.is_ipv6() { ipv6_key(burst, i, fast) } else { None };
        let seen = Seen {
            flow: key.as_ref().map_or(FlowRef::Words(&fast.frame.flow), FlowRef::Key),
            sequence: fast.sequence,
            source_node: fast.source_node,
            source_ns: fast.source_ns,
            hops: fast.hops,
            is_mx: false,
        };
        let why = self.track(&seen, now_ns, counters).or(fast.discard.then_some(Counter::reports_latency));
        if let Some(why) = why {
            if let Some(Ok(Some(found))) =
                burst.data(i).map(|frame| sink::extract(frame, &self.domain, &self.settings.hops))
            {
                if let Some(frame) = burst.data(i) {
                    self.report(frame, &found, now_ns, why, counters);
                }
            }
        }
        let restored = matches!(burst.with_frame(i, |f| fast_sink::strip_fast(f, fast)), Some(Some(_)));
        self.restored(restored, fast.discard, counters)
    }

    /// Packet `i`, read by the general path: not INT, malformed (dropped
    /// with a drop report, or forwarded, by policy), or INT 2.1 to track,
    /// report and restore. Returns whether it goes on.
    fn take_general(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some(frame) = burst.data(i) else { return true };
        let found = match sink::classify(frame, &self.domain, &self.settings.hops) {
            Ok(Arrival::Int(found)) => found,
            Ok(Arrival::NotInt) => {
                counters.inc(Counter::not_int);
                return true;
            }
            Ok(Arrival::MarkedNotInt) => {
                counters.inc(Counter::marked_not_int);
                return true;
            }
            Err(error) => return self.malformed(frame, error, burst_ns, counters),
        };
        let now_ns = self.arrival_ns(burst, i, burst_ns);
        let seen = Seen {
            flow: FlowRef::Key(&found.flow),
            sequence: found.sequence,
            source_node: found.source_hop.and_then(|hop| hop.node_id),
            source_ns: found.source_hop.and_then(|hop| hop.ingress_timestamp),
            hops: found.hops,
            is_mx: found.is_mx,
        };
        // Probes (D) are reported every time: the report is their point.
        let always = (found.is_mx || found.discard).then_some(Counter::reports_latency);
        if let Some(why) = self.track(&seen, now_ns, counters).or(always) {
            if let Some(frame) = burst.data(i) {
                self.report(frame, &found, now_ns, why, counters);
            }
        }
        let restored = matches!(burst.with_frame(i, |f| sink::strip(f, &found)), Some(Some(_)));
        self.restored(restored, found.discard, counters)
    }

    /// Packet `i` at an IOAM domain's decapsulating node: not traced,
    /// malformed (by policy), or traced: tracked (the oldest slot's node
    /// and timestamp as the source's, every slot's node id, transit delay
    /// and queue depth for the hop rule, the Edge-to-Edge option's packet
    /// number for loss and, where the trace has no time, its entry time),
    /// reported, and restored. Returns whether it goes on.
    fn take_ioam(
        &mut self,
        burst: &mut Burst,
        i: usize,
        ioam: &int_core::ioam::Domain,
        burst_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let Some(frame) = burst.data(i) else { return true };
        let found = match int_core::ioam::find::find(frame, ioam.namespace) {
            Ok(Some(found)) => found,
            Ok(None) => {
                counters.inc(Counter::not_int);
                return true;
            }
            Err(error) => return self.malformed(frame, error, burst_ns, counters),
        };
        let now_ns = self.arrival_ns(burst, i, burst_ns);
        let Some(frame) = burst.data(i) else { return true };
        let key = found.flow(frame);
        // Every element read once: the hop rule's figures, newest first,
        // and the oldest's (the encapsulating node's) id and time.
        let (mut figures, mut count, mut oldest) = ([None; MAX_HOPS], 0, None);
        for node in found.nodes(frame) {
            let hop = node.as_hop(ioam.timestamps);
            let told = hop.node_id.map(|id| HopFigures {
                node: id,
                latency: hop.hop_latency,
                queue: hop.queue.map(|(_, q)| q),
            });
            if let Some(slot) = figures.get_mut(count) {
                *slot = told;
            }
            count += 1;
            oldest = Some(hop);
        }
        let hops = match figures.get(..count) {
            Some(told) => self.settings.hops.digest(told.iter().copied()),
            None => Err(Untold::TooMany),
        };
        let seen = Seen {
            flow: FlowRef::Key(&key),
            // A 64-bit number's low half: the loss count wraps as a 32-bit one does.
            sequence: found.sequence().map(|n| n as u32),
            source_node: oldest.and_then(|hop| hop.node_id),
            source_ns: oldest.and_then(|hop| hop.ingress_timestamp).or(found.entered_ns(ioam.timestamps)),
            hops,
            is_mx: false,
        };
        if found.trace.header.overflow() {
            counters.inc(Counter::max_hop_reached);
        }
        if let Some(why) = self.track(&seen, now_ns, counters) {
            if let Some(inner) = frame.get(found.ip.l3..found.report_end()) {
                let (metadata, rep_md_bits) = (self.own(now_ns), LATENCY_MD_BITS);
                let subject =
                    Subject { packet: inner, in_type: InType::Ipv6, rep_md_bits, metadata, drop: None };
                self.reporter.report(subject, now_ns, why, counters);
            }
        }
        let restored = matches!(burst.with_frame(i, |f| int_core::ioam::decap::decap(f, &found)), Some(true));
        self.restored(restored, false, counters)
    }

    /// A packet whose headers lie: counted, then dropped with a drop
    /// report or forwarded, by policy. Returns whether it goes on.
    fn malformed(
        &mut self,
        frame: &[u8],
        error: int_core::ParseError,
        now_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        counters.inc(Counter::malformed(error.drop_reason()));
        if self.settings.malformed == MalformedPolicy::Drop {
            counters.inc(Counter::malformed_dropped);
            self.drop_report(frame, now_ns, counters);
            return false;
        }
        counters.inc(Counter::malformed_forwarded);
        true
    }

    /// Counts how a packet's restoration went; whether it goes on (not
    /// when it could not be restored, nor a probe that asked to be
    /// discarded).
    #[inline(always)]
    fn restored(&self, restored: bool, discard: bool, counters: &mut Counters) -> bool {
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

    /// Updates the flow's loss, latency and path state; says whether to
    /// report, and why: the report's counter (a latency change, or a new
    /// path: the path rule).
    #[inline(always)]
    fn track(&mut self, seen: &Seen<'_>, now_ns: u64, counters: &mut Counters) -> Option<Counter> {
        let admitted = self.flows.get_or_insert_flow(seen.flow, now_ns, |f| f.packets <= 1);
        let Some((flow, admission)) = admitted else {
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
        if let Some(node) = seen.source_node {
            flow.source_node = node;
        }
        let hop_report = hop_report(flow, seen, &self.settings, &mut self.queue_quota, now_ns, counters);
        match seen.sequence {
            Some(sequence) => {
                let max_jump = plausible_jump(self.jump_per_coarse_ms, idle_ms);
                record_sequence(flow, sequence, max_jump, now_ns, counters);
            }
            None => counters.inc(Counter::no_sequence),
        }
        let Some(source_ns) = seen.source_ns else { return hop_report };
        // 64-bit timestamps, a signed difference: no 32-bit split.
        let latency = match int_core::latency::one_way_latency64(now_ns, source_ns) {
            Ok(latency) => latency,
            Err(difference) => {
                count_unbelieved(difference, counters);
                return hop_report;
            }
        };
        counters.lower(Counter::latency_min_ns, latency);
        counters.raise(Counter::latency_max_ns, latency);
        let latency_report =
            flow.latency.observe(&self.latency, latency, now_ns).map(|_| Counter::reports_latency);
        hop_report.or(latency_report)
    }

    /// This node's report on a packet: its ports and timestamps (and hop
    /// latency, zero at the sink), for a latency change or an INT-MX packet.
    fn report(
        &mut self,
        frame: &[u8],
        found: &sink::Extracted,
        now_ns: u64,
        why: Counter,
        counters: &mut Counters,
    ) {
        let Some(inner) = frame.get(found.ip.l3..found.report_end()) else { return };
        let (rep_md_bits, kind) = if found.is_mx {
            (found.instructions.bits(), Counter::reports_mx)
        } else {
            (LATENCY_MD_BITS, why)
        };
        let drop = found.discard.then_some(DropInfo { queue_id: 0, reason: tr20::DROP_DISCARD_ASKED });
        let in_type = crate::pipeline::int21::report::in_type_of(found.ip.version);
        let subject = Subject { packet: inner, in_type, rep_md_bits, metadata: self.own(now_ns), drop };
        self.reporter.report(subject, now_ns, kind, counters);
    }

    /// This node's metadata in its reports on packets it received: its
    /// port and the time (hop latency zero: it is the last node).
    fn own(&self, now_ns: u64) -> HopMetadata {
        HopMetadata {
            l1_ingress_port: Some(self.int_port),
            l1_egress_port: Some(self.int_port),
            hop_latency: Some(0),
            ingress_timestamp: Some(now_ns),
            egress_timestamp: Some(now_ns),
            ..HopMetadata::default()
        }
    }

    /// A drop report on a packet this sink drops for its lying INT
    /// (`malformed: drop`): D, the reason [`tr20::DROP_INT_MALFORMED`], the
    /// sink's ingress port and time, and the packet's first bytes from its
    /// Ethernet header (InType 3: how far its headers can be believed is
    /// not known).
    fn drop_report(&mut self, frame: &[u8], now_ns: u64, counters: &mut Counters) {
        // Its first bytes, or the whole packet if it is shorter.
        let packet = frame.get(..DROPPED_BYTES).unwrap_or(frame);
        let metadata = HopMetadata {
            l1_ingress_port: Some(self.int_port),
            ingress_timestamp: Some(now_ns),
            ..HopMetadata::default()
        };
        let drop = Some(DropInfo { queue_id: 0, reason: tr20::DROP_INT_MALFORMED });
        let subject =
            Subject { packet, in_type: InType::Ethernet, rep_md_bits: DROP_MD_BITS, metadata, drop };
        self.reporter.report(subject, now_ns, Counter::reports_drop, counters);
    }
}

/// What the path and hop rules say of a flow's new stack (a path told
/// before and told differently now, a hop's class changed, a hop's queue
/// over the alert threshold within the quota): the report's counter. The
/// flow's digest is updated; a flow's first stack is the latency rule's
/// first report. Without classes every change is the path's (an 8-bit
/// path digest that missed it cannot make it a hop's).
#[inline(always)]
fn hop_report(
    flow: &mut SinkFlow,
    seen: &Seen<'_>,
    settings: &SinkSettings,
    quota: &mut Quota,
    now_ns: u64,
    counters: &mut Counters,
) -> Option<Counter> {
    let digest = match seen.hops {
        Ok(digest) => digest,
        Err(_) if seen.is_mx => return None,
        Err(_) => {
            counters.inc(Counter::path_untold);
            return None;
        }
    };
    let change = digest.change_from(flow.port_or_hops, flow.path);
    (flow.port_or_hops, flow.path) = (digest.hops(), digest.path());
    let rule = &settings.hops;
    let classes = rule.has_classes();
    let report = match change {
        Some(HopChange::Hop) if classes => Some(Counter::reports_hop_change),
        Some(_) if settings.path_changes => Some(Counter::reports_path_change),
        _ => None,
    };
    if report.is_some() || !digest.queue_alert() {
        return report;
    }
    if quota.allow(now_ns) {
        Some(Counter::reports_queue)
    } else {
        counters.inc(Counter::reports_queue_quota);
        None
    }
}

/// The key of packet `i`'s IPv6 flow, read from the frame: the table keeps
/// an IPv6 flow's addresses beside its slot, so such a flow is named by
/// its key. Out of line, to keep IPv4's path as short as it was.
#[inline(never)]
fn ipv6_key(burst: &Burst, i: usize, fast: &FastInt) -> Option<FlowKey> {
    burst.data(i).and_then(|frame| fast.frame.flow_key(frame))
}

/// A one-way latency the sink does not believe: negative (the sink's clock
/// behind the source's: `clock_skew`, the largest kept) or over
/// [`int_core::latency::MAX_ONE_WAY_NS`] (a source clock far behind, or a
/// timestamp that lies: `latency_too_long`). Neither feeds the flow's
/// latency rule: its first believable packet is reported as its first.
fn count_unbelieved(difference: i128, counters: &mut Counters) {
    if difference < 0 {
        counters.inc(Counter::clock_skew);
        counters
            .raise(Counter::clock_skew_max_ns, u64::try_from(difference.unsigned_abs()).unwrap_or(u64::MAX));
    } else {
        counters.inc(Counter::latency_too_long);
    }
}
