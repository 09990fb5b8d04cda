//! The source stage of an INT 2.1 domain: inserts INT-MD (with this node's
//! metadata: node id, level 1 ports, hop latency, 64-bit ingress and egress
//! timestamps) or INT-MX into packets of watched flows. At the domain's
//! edge, a packet that arrives marked is handled by the [`MarkedPolicy`]
//! as in an INT 0.5 domain. Where the domain numbers packets, each flow's
//! packets carry their number from 1 in source-only metadata. A cloning
//! source instruments copies of a share of the packets instead (see
//! [`Clones`]), numbered among their flow's copies.

use std::net::SocketAddr;

use int_core::flow::FlowKey;
use int_core::hop_rule::HopRule;
use int_core::int21::in_tunnel::TunnelPlan;
use int_core::int21::source::{self, SourceConfig};
use int_core::int21::{sink, Domain, HeaderType, HopMetadata};
use int_core::outcome::Skip;

use crate::clock::Clock;
use crate::config::{MarkedPolicy, Mode, Rule, Source21Settings, TunnelPlacement};
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::FlowRef;
use crate::flow_table::FlowTable;
use crate::pipeline::clones::Clones;
use crate::pipeline::hop_figures::HopFigures;
use crate::pipeline::report::tr20::{report_mx, Reporter21};
use crate::pipeline::setup::{Hop, SetupError};
use crate::pipeline::source_flow::{fast_flow_watched, next_number, skip_counter, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};
use int_core::fast::FastFrame;
use int_core::int21::fast_source::{FastSource, HopTimes};

pub struct Source21Stage {
    pub config: SourceConfig,
    pub watchlist: Vec<Rule>,
    pub node_id: u32,
    pub rx_int_port: u16,
    pub tx_int_port: u16,
    pub rx_timestamps: Option<RxClock>,
    pub marked: MarkedPolicy,
    /// The collector this node's own reports go to: never instrumented.
    pub own_reports_to: Option<SocketAddr>,
    /// INT-MX: this node's reports on the packets it marks.
    pub reporter: Option<Reporter21>,
    /// Per-flow last packet number, where the domain numbers packets.
    pub flows: FlowTable<u32>,
    pub idle_timeout_ns: u64,
    pub last_sweep_ns: u64,
    /// VXLAN, VXLAN-GPE and Geneve packets get INT in their tunnel header.
    pub tunnels_inside: bool,
    /// The flows with the most packets, ranked as the ageing sweep goes.
    pub top: TopFlows,
    /// The fast path, for a DSCP-marked INT-MD source that pushes its hop.
    pub fast: Option<FastSource>,
    /// Copies instrumented beside untouched originals, where configured.
    pub clones: Option<Clones>,
    /// The own hop's latency and queue, as a transit's (hop_figures.rs).
    pub figures: HopFigures,
    /// This burst's foretold TX time: every own hop's egress.
    pub egress_ns: u64,
}

impl Source21Stage {
    /// A source of `domain` at `hop`; `own_reports_to`: this node's
    /// collector, whose reports are never instrumented; `reporter`: an
    /// INT-MX domain's reports, where the node exports; `clones`: where
    /// copies are instrumented instead of the packets.
    pub fn new(
        domain: Domain,
        settings: &Source21Settings,
        hop: &Hop,
        own_reports_to: Option<SocketAddr>,
        reporter: Option<Reporter21>,
        clones: Option<Clones>,
    ) -> Result<Self, SetupError> {
        let config = Self::config(domain, settings, hop.max_ip_len);
        config.check().map_err(SetupError::Settings)?;
        // A cloning source counts every flow's packets to pick its copies.
        let counted = config.numbers_packets() || clones.is_some();
        Ok(Source21Stage {
            fast: FastSource::of(&config, &Self::own_hop(hop)),
            clones,
            config,
            watchlist: settings.watchlist.clone(),
            node_id: hop.node_id,
            rx_int_port: hop.rx_int_port,
            tx_int_port: hop.tx_int_port,
            rx_timestamps: hop.rx_timestamps,
            marked: settings.marked,
            own_reports_to,
            reporter,
            flows: FlowTable::new(if counted { settings.flow_capacity as usize } else { 1 }),
            idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
            last_sweep_ns: 0,
            tunnels_inside: settings.tunnels == TunnelPlacement::Inside,
            top: TopFlows::default(),
            figures: HopFigures::new(hop.rx_queue),
            egress_ns: 0,
        })
    }

    /// This node's hop as the source writes it: its node id and the
    /// pipeline's ports (the times are each packet's).
    pub fn own_hop(hop: &Hop) -> HopMetadata {
        HopMetadata {
            node_id: Some(hop.node_id),
            l1_ingress_port: Some(hop.rx_int_port),
            l1_egress_port: Some(hop.tx_int_port),
            ..Default::default()
        }
    }

    /// The INT layer's source configuration of these settings.
    pub fn config(domain: Domain, settings: &Source21Settings, max_ip_len: u16) -> SourceConfig {
        SourceConfig {
            domain,
            header_type: match settings.mode {
                Mode::Md => HeaderType::Md,
                Mode::Mx => HeaderType::Mx,
            },
            instructions: settings.instructions,
            ds_words: 0,
            max_hops: settings.max_hops,
            own_hop: settings.own_hop,
            // The packet number rides INT-MD only: an MX header has no stack.
            domain_id: domain.source_only.domain_id,
            ds_instructions: match settings.mode {
                Mode::Md => domain.source_only.bits,
                Mode::Mx => 0,
            },
            ds_flags: 0,
            // Clones are marked D: the sink reports them, then drops them.
            discard: settings.discard || settings.clone_every.is_some(),
            max_ip_len,
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let figures = self.figures.burst(clock.now_ns(), burst.len());
        let now_ns = figures.burst_ns;
        self.egress_ns = figures.egress_ns;
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            // A cloning source counts on the fast path, so that the packets
            // not due a copy (most) leave without a plan.
            let mut counted = None;
            if let Some(parts) = self.fast_takes(frame) {
                if self.clones.is_none() {
                    self.instrument_fast(burst, i, &parts, now_ns, counters);
                    continue;
                }
                match self.due_a_copy(&parts, now_ns, counters) {
                    Some(n) => counted = Some(n),
                    None => continue,
                }
            }
            if self.tunnels_inside {
                if let Ok(Some(plan)) = source::plan_in_tunnel(frame) {
                    self.instrument_in_tunnel(burst, i, &plan, now_ns, counters);
                    continue;
                }
            }
            let Some(plan) = self.general_plan(burst, i, counters, &mut drop) else { continue };
            if !self.admit(&plan.flow, counters) {
                continue;
            }
            let n = counted.or_else(|| {
                self.next_sequence(FlowRef::Key(&plan.flow), plan.mtu_exceeded, now_ns, counters)
            });
            let Some(n) = n else { continue };
            let ingress = burst.arrival_ns(i, self.rx_timestamps, now_ns);
            let hop = self.own_hop_at(ingress);
            let numbers = self.config.numbers_packets() && !plan.mtu_exceeded;
            let cloning = self.clones.is_some();
            let due = (&plan.flow, n);
            let Some((target, j, sequence)) = target(&mut self.clones, burst, i, due, numbers, counters)
            else {
                self.spare_number(FlowRef::Key(&plan.flow), n, now_ns);
                continue;
            };
            let config = &self.config;
            match target.with_frame(j, |f| source::insert(f, &plan, config, &hop, sequence)) {
                Some(Ok(_)) => counters.inc(Counter::instrumented),
                Some(Err(skip)) => {
                    counters.inc(skip_counter(skip));
                    self.take_back_clone();
                    self.spare_number(FlowRef::Key(&plan.flow), n, now_ns);
                    continue;
                }
                None => {
                    counters.inc(Counter::shared_mbuf);
                    continue;
                }
            }
            if cloning {
                counters.inc(Counter::cloned);
            }
            if let (Some(reporter), Some(frame)) = (self.reporter.as_mut(), target.data(j)) {
                report_mx(reporter, frame, &self.config.domain, hop, now_ns, counters);
            }
            if plan.mtu_exceeded {
                counters.inc(Counter::mtu_exceeded);
            }
        }
        if let Some(reporter) = self.reporter.as_mut() {
            reporter.flush(counters);
        }
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
        self.age(now_ns, counters);
        self.figures.done(&figures);
    }

    /// Packet `i`'s plan on the general path; `None` (counted) when it is
    /// not instrumented, its bit set in `drop` when the edge policy drops
    /// it.
    #[inline(always)]
    fn general_plan(
        &self,
        burst: &mut Burst,
        i: usize,
        counters: &mut Counters,
        drop: &mut u32,
    ) -> Option<source::Plan> {
        match source::plan(burst.data(i)?, &self.config) {
            Ok(plan) => Some(plan),
            Err(Skip::AlreadyMarked) if self.marked == MarkedPolicy::Drop => {
                counters.inc(Counter::marked_dropped);
                *drop |= 1 << i;
                None
            }
            Err(Skip::AlreadyMarked) if self.marked == MarkedPolicy::Strip => {
                self.strip_foreign(burst, i, counters)
            }
            Err(skip) => {
                counters.inc(skip_counter(skip));
                None
            }
        }
    }

    /// A step of the ageing sweep (see [`crate::pipeline::int05::source::Source05Stage::age`]).
    #[inline]
    pub fn age(&mut self, now_ns: u64, counters: &mut Counters) {
        if self.config.numbers_packets() || self.clones.is_some() {
            let ageing =
                Ageing { last_sweep_ns: &mut self.last_sweep_ns, idle_timeout_ns: self.idle_timeout_ns };
            ageing.age(&mut self.flows, &mut self.top, now_ns, counters, |numbered| *numbered);
        }
    }

    /// The flow's next packet number (0 where the domain numbers none,
    /// and counted all the same when cloning); `None` when the flow table
    /// has no slot for it: without an honest number the packet leaves
    /// untouched rather than confuse the sink.
    fn next_sequence(
        &mut self,
        flow: FlowRef<'_>,
        mtu_exceeded: bool,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<u32> {
        if self.clones.is_none() && (!self.config.numbers_packets() || mtu_exceeded) {
            return Some(0);
        }
        next_number(&mut self.flows, flow, now_ns, counters)
    }

    /// A frame the fast path instruments without further question: of the
    /// fast path's shape and taken by [`FastSource::takes`], watched, not this
    /// node's report. `None` sends it down the general path, which decides
    /// and counts.
    #[inline(always)]
    fn fast_takes(&self, frame: &[u8]) -> Option<FastFrame> {
        let fast = self.fast.as_ref()?;
        let parts = FastFrame::read(frame, 0).filter(|parts| fast.takes(parts))?;
        fast_flow_watched(&parts, frame, &self.watchlist, self.own_reports_to).then_some(parts)
    }

    /// A cloning source's fast-path packet counted in its flow: the
    /// flow's count if the packet is due a copy, else `None` (it leaves as
    /// it came).
    #[inline(always)]
    fn due_a_copy(&mut self, parts: &FastFrame, now_ns: u64, counters: &mut Counters) -> Option<u32> {
        let n = self.next_sequence(FlowRef::Words(&parts.flow), false, now_ns, counters)?;
        self.clones.as_ref()?.copy_number(n).map(|_| n)
    }

    /// Packet `i` on the fast path: numbered, then its block written.
    #[inline(always)]
    fn instrument_fast(
        &mut self,
        burst: &mut Burst,
        i: usize,
        parts: &FastFrame,
        now_ns: u64,
        counters: &mut Counters,
    ) {
        let Some(sequence) = self.next_sequence(FlowRef::Words(&parts.flow), false, now_ns, counters) else {
            return;
        };
        let ingress_ns = burst.arrival_ns(i, self.rx_timestamps, now_ns);
        let times = HopTimes { ingress_ns, egress_ns: self.egress_ns };
        let Some(fast) = self.fast.as_ref() else { return };
        match burst.with_frame(i, |f| fast.insert(f, parts, times, sequence)) {
            Some(true) => counters.inc(Counter::instrumented),
            Some(false) => counters.inc(Counter::no_headroom),
            None => counters.inc(Counter::shared_mbuf),
        }
    }

    /// A tunnel packet: INT into its tunnel header, numbered and reported as
    /// any other.
    #[inline(never)]
    fn instrument_in_tunnel(
        &mut self,
        burst: &mut Burst,
        i: usize,
        plan: &TunnelPlan,
        now_ns: u64,
        counters: &mut Counters,
    ) {
        if !self.admit(&plan.flow, counters) {
            return;
        }
        let mtu_exceeded = match source::tunnel_mtu_exceeded(plan, &self.config) {
            Ok(exceeded) => exceeded,
            Err(skip) => return counters.inc(skip_counter(skip)),
        };
        let Some(n) = self.next_sequence(FlowRef::Key(&plan.flow), mtu_exceeded, now_ns, counters) else {
            return;
        };
        let ingress = burst.arrival_ns(i, self.rx_timestamps, now_ns);
        let hop = self.own_hop_at(ingress);
        let numbers = self.config.numbers_packets() && !mtu_exceeded;
        let cloning = self.clones.is_some();
        let due = (&plan.flow, n);
        let Some((target, j, sequence)) = target(&mut self.clones, burst, i, due, numbers, counters) else {
            return self.spare_number(FlowRef::Key(&plan.flow), n, now_ns);
        };
        let config = &self.config;
        match target.with_frame(j, |f| source::insert_in_tunnel(f, plan, config, &hop, sequence)) {
            Some(Ok(_)) => {
                counters.inc(Counter::instrumented);
                counters.inc(Counter::instrumented_in_tunnel);
                if cloning {
                    counters.inc(Counter::cloned);
                }
                if mtu_exceeded {
                    counters.inc(Counter::mtu_exceeded);
                }
            }
            Some(Err(skip)) => {
                counters.inc(skip_counter(skip));
                self.take_back_clone();
                return self.spare_number(FlowRef::Key(&plan.flow), n, now_ns);
            }
            None => return counters.inc(Counter::shared_mbuf),
        }
        if let (Some(reporter), Some(frame)) = (self.reporter.as_mut(), target.data(j)) {
            report_mx(reporter, frame, &self.config.domain, hop, now_ns, counters);
        }
    }

    /// Frees the copy just made, where cloning: INT did not fit in it.
    fn take_back_clone(&mut self) {
        if let Some(clones) = self.clones.as_mut() {
            clones.take_back();
        }
    }

    /// A copy due for the flow's `n`th packet was not made (no mbuf in the
    /// copies' pool, or INT did not fit): the flow's count goes back one,
    /// so that its next packet is copied in its place with the same number.
    /// A refused copy spends no number, and a sink sees no loss for it.
    #[cold]
    fn spare_number(&mut self, flow: FlowRef<'_>, n: u32, now_ns: u64) {
        if self.clones.as_ref().and_then(|clones| clones.copy_number(n)).is_none() {
            return;
        }
        if let Some((count, _)) = self.flows.get_or_insert_flow(flow, now_ns, |_| false) {
            if *count == n {
                *count = n.wrapping_sub(1);
            }
        }
    }

    /// Copies `from..to` of this poll did not leave (the TX queue refused
    /// them, or they were held back): their flows' counts go back
    /// ([`Clones::unsent`]), so that they spend no number and a sink sees
    /// no loss for them.
    #[cold]
    pub fn give_back_numbers(&mut self, from: usize, to: usize) {
        let (Some(clones), flows) = (self.clones.as_ref(), &mut self.flows) else { return };
        for (flow, n) in clones.unsent(from, to) {
            if let Some((count, _)) = flows.get_or_insert_flow(FlowRef::Key(flow), self.egress_ns, |_| false)
            {
                *count = n.wrapping_sub(1);
            }
        }
    }

    /// This node's metadata: the time the packet arrived and leaves.
    fn own_hop_at(&self, ingress_ns: u64) -> HopMetadata {
        let egress_ns = self.egress_ns;
        HopMetadata {
            node_id: Some(self.node_id),
            l1_ingress_port: Some(self.rx_int_port),
            l1_egress_port: Some(self.tx_int_port),
            hop_latency: HopTimes { ingress_ns, egress_ns }.latency(),
            ingress_timestamp: Some(ingress_ns),
            egress_timestamp: Some(egress_ns),
            ..HopMetadata::default()
        }
    }

    /// Whether a flow is instrumented: watched, and not this node's reports.
    fn admit(&self, flow: &FlowKey, counters: &mut Counters) -> bool {
        if !self.watchlist.is_empty() && !self.watchlist.iter().any(|rule| rule.matches(flow)) {
            counters.inc(Counter::not_watched);
            return false;
        }
        if let Some(collector) = self.own_reports_to {
            if crate::pipeline::source_flow::to_collector(flow, collector) {
                counters.inc(Counter::own_reports);
                return false;
            }
        }
        true
    }

    /// The strip policy: a foreign INT 2.1 block of this domain is removed
    /// (the packet restored as a sink would); then the packet is planned as
    /// any other, its mark kept in the shim if it still carries one, or,
    /// when it will not be instrumented, its mark cleared.
    #[inline(never)]
    fn strip_foreign(&self, burst: &mut Burst, i: usize, counters: &mut Counters) -> Option<source::Plan> {
        let domain = self.config.domain;
        let stripped =
            burst.with_frame(i, |frame| match sink::extract(frame.frame(), &domain, &HopRule::default()) {
                Ok(Some(found)) => sink::strip(frame, &found).is_some(),
                _ => false,
            });
        if stripped == Some(true) {
            counters.inc(Counter::foreign_int_stripped);
        }
        let frame = burst.data(i)?;
        let plan = source::plan(frame, &self.config).or_else(|_| source::plan_marked(frame, &self.config));
        match plan {
            Ok(plan)
                if self.watchlist.is_empty()
                    || self.watchlist.iter().any(|rule| rule.matches(&plan.flow)) =>
            {
                counters.inc(Counter::marked_instrumented);
                Some(plan)
            }
            _ => {
                let config = &self.config;
                match burst.with_frame(i, |frame| source::clear_mark(frame.frame_mut(), config)) {
                    Some(true) => counters.inc(Counter::mark_cleared),
                    _ => counters.inc(Counter::marked_passed),
                }
                None
            }
        }
    }
}

/// Where packet `i`'s INT goes, given its flow and the flow's count `n`
/// (`due`; `n` is its packet number, where not cloning): into the packet itself, or, when cloning,
/// into a copy of it if the flow's `n`th packet is due one. The burst, the
/// index in it and the number to write (`numbers`: whether the domain
/// numbers this packet); `None`: nothing to instrument.
#[inline(always)]
fn target<'a>(
    clones: &'a mut Option<Clones>,
    burst: &'a mut Burst,
    i: usize,
    due: (&FlowKey, u32),
    numbers: bool,
    counters: &mut Counters,
) -> Option<(&'a mut Burst, usize, u32)> {
    let n = due.1;
    let Some(clones) = clones.as_mut() else { return Some((burst, i, n)) };
    let number = clones.copy_number(n)?;
    let j = clones.copy(burst, i, due, counters)?;
    Some((&mut clones.out, j, if numbers { number } else { 0 }))
}
