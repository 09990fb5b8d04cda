//! The source stage: instruments packets of watched IPv4 TCP/UDP flows with
//! INT 0.5, with a per-flow sequence number from 1 (shim Type 3).
//! Everything it does not instrument leaves untouched and counted, except
//! at the INT domain's edge: a packet that arrives marked is handled by
//! the [`MarkedPolicy`], so that nothing leaves marked without this
//! source's block.

use std::net::SocketAddr;

use int_core::fast::FastFrame;
use int_core::int05::fast_source::FastSource;
use int_core::int05::sink::{self, Arrival};
use int_core::int05::source::{self, SourceConfig, Template};
use int_core::int05::{Domain, HopMetadata, ShapeCache};
use int_core::outcome::Skip;

use crate::clock::Clock;
use crate::config::{MarkedPolicy, Rule, Source05Settings};
use crate::dpdk::mbuf::{Burst, RxClock, BURST};
use crate::flow_table::{Admission, FlowTable};
use crate::pipeline::setup::{Hop, SetupError};
use crate::pipeline::source_flow::{fast_flow_watched, skip_counter, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

pub struct Source05Stage {
    pub config: SourceConfig,
    /// The block with this node's constant hop words, built once.
    pub template: Template,
    pub watchlist: Vec<Rule>,
    /// Per-flow next sequence number (only for shim Type 3).
    pub flows: FlowTable<u32>,
    pub idle_timeout_ns: u64,
    pub rx_timestamps: Option<RxClock>,
    pub last_sweep_ns: u64,
    /// What happens to packets that arrive marked.
    pub marked: MarkedPolicy,
    /// The collector this node's own reports go to: never instrumented.
    pub own_reports_to: Option<SocketAddr>,
    /// The fast path, for a configuration of Host-INT's dialect.
    pub fast: Option<FastSource>,
    /// Each burst's plans between the two passes, valid where that
    /// burst's bits say: kept here, never cleared per burst.
    pub lanes: Box<Lanes>,
    /// The flows with the most packets, ranked as the ageing sweep goes.
    pub top: TopFlows,
}

/// What the second pass needs of each packet.
#[derive(Default)]
pub struct Lanes {
    fast: [FastPlan; BURST],
    general: [(source::Plan, u64); BURST],
}

/// A packet on the fast path: its frame's parts and its flow's hash.
#[derive(Debug, Clone, Copy, Default)]
struct FastPlan {
    frame: FastFrame,
    hash: u64,
}

/// A burst's outcomes, counted once per burst.
#[derive(Default)]
struct Tally {
    instrumented: u64,
    created: u64,
    evicted: u64,
}

impl Source05Stage {
    /// A source of `domain` at `hop`; `own_reports_to`: this node's
    /// collector, whose reports are never instrumented.
    pub fn new(
        domain: Domain,
        settings: &Source05Settings,
        hop: &Hop,
        own_reports_to: Option<SocketAddr>,
    ) -> Result<Self, SetupError> {
        let config = SourceConfig {
            encapsulation: domain.encapsulation,
            tcp_placement: domain.tcp_placement,
            shim_type: settings.shim_type,
            instructions: settings.instructions,
            max_hop_cnt: settings.max_hop_count,
            own_hop: settings.own_hop,
            max_ip_len: hop.max_ip_len,
            tail: settings.tail,
        };
        config.check().map_err(SetupError::Settings)?;
        let template = Template::new(&config, &Self::own_hop(hop))?;
        Ok(Source05Stage {
            fast: FastSource::of(&config, &template),
            lanes: Box::default(),
            config,
            template,
            watchlist: settings.watchlist.clone(),
            flows: FlowTable::new(settings.flow_capacity as usize),
            idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
            rx_timestamps: hop.rx_timestamps,
            last_sweep_ns: 0,
            marked: settings.marked,
            own_reports_to,
            top: TopFlows::default(),
        })
    }

    /// The source's own hop: this node's id and ports; the timestamps are
    /// written per packet.
    pub fn own_hop(hop: &Hop) -> HopMetadata {
        HopMetadata {
            switch_id: Some(hop.node_id),
            ingress_port: Some(hop.rx_int_port),
            egress_port: Some(hop.tx_int_port),
            ingress_timestamp: Some(0),
            egress_timestamp: Some(0),
            ..HopMetadata::default()
        }
    }

    /// Two passes over the burst: the first parses every packet and
    /// prefetches its flow's slot, the second numbers and instruments them,
    /// by when the slots have arrived (a burst of misses overlaps instead
    /// of queueing one per packet). A fast-path frame takes the
    /// fast path (24 bytes and a hash kept between the passes); any other
    /// the general one. Out of line: one call per burst, and the stage is
    /// its own symbol in a profile.
    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let now_ns = clock.now_ns();
        let with_sequence = self.config.shim_type.has_sequence();
        // Bit i: packet i takes the fast path, or the general one; arrived
        // marked (edge policy to apply); or leaves the burst.
        let (mut fast, mut general, mut marked, mut drop) = (0u32, 0u32, 0u32, 0u32);
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            if let Some(plan) = self.fast_plan(frame) {
                if let Some(lane) = self.lanes.fast.get_mut(i) {
                    *lane = plan;
                    fast |= 1 << i;
                }
            } else if let Some(planned) = self.plan_one(frame, i, with_sequence, &mut marked, counters) {
                if let Some(lane) = self.lanes.general.get_mut(i) {
                    *lane = planned;
                    general |= 1 << i;
                }
            }
        }
        if marked != 0 {
            general |= self.guard_edge(burst, marked, &mut drop, counters);
        }
        let mut tally = Tally::default();
        for i in 0..burst.len() {
            if fast & (1 << i) != 0 {
                self.instrument_fast(burst, i, now_ns, &mut tally, counters);
            } else if general & (1 << i) != 0 {
                self.instrument_general(burst, i, now_ns, with_sequence, &mut tally, counters);
            }
        }
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
        counters.add(Counter::instrumented, tally.instrumented);
        counters.add(Counter::flows_created, tally.created);
        counters.add(Counter::flows_evicted, tally.evicted);
        self.age(now_ns, counters);
    }

    /// A step of the ageing sweep, after a burst or on a poll that found
    /// none (flows of a source gone quiet still expire, and its rankings
    /// still complete their pass).
    #[inline]
    pub fn age(&mut self, now_ns: u64, counters: &mut Counters) {
        if self.config.shim_type.has_sequence() {
            let ageing =
                Ageing { last_sweep_ns: &mut self.last_sweep_ns, idle_timeout_ns: self.idle_timeout_ns };
            ageing.age(&mut self.flows, &mut self.top, now_ns, counters, |numbered| *numbered);
        }
    }

    /// The fast path's plan for a fast-path frame that this
    /// source instruments without further question (watched, not its own
    /// report, unmarked, within the MTU); its flow's slot starts loading.
    /// `None` sends the frame down the general path, which decides and
    /// counts.
    #[inline(always)]
    fn fast_plan(&self, frame: &[u8]) -> Option<FastPlan> {
        let block = self.fast.as_ref()?;
        let parts = FastFrame::read(frame, 0).filter(|parts| block.takes(parts))?;
        if !fast_flow_watched(&parts, frame, &self.watchlist, self.own_reports_to) {
            return None;
        }
        let hash = crate::flow_table::hash(&parts.flow);
        self.flows.prefetch(hash);
        Some(FastPlan { frame: parts, hash })
    }

    /// The second pass for a packet on the fast path: its number, then
    /// the block.
    #[inline(always)]
    fn instrument_fast(
        &mut self,
        burst: &mut Burst,
        i: usize,
        now_ns: u64,
        tally: &mut Tally,
        counters: &mut Counters,
    ) {
        let (Some(plan), Some(block)) = (self.lanes.fast.get(i).copied(), self.fast) else { return };
        let slot = self.flows.get_or_insert_words(&plan.frame.flow, plan.hash, now_ns, evictable);
        let Some(sequence) = next_sequence(slot, tally) else {
            counters.inc(Counter::flow_table_full);
            return;
        };
        let time = burst.arrival_ns(i, self.rx_timestamps, now_ns) as u32;
        match burst.with_frame(i, |f| block.insert(f, &plan.frame, sequence, time)) {
            Some(true) => tally.instrumented += 1,
            Some(false) => counters.inc(Counter::no_headroom),
            None => counters.inc(Counter::multi_segment),
        }
    }

    /// The second pass for a packet on the general path.
    #[inline(always)]
    fn instrument_general(
        &mut self,
        burst: &mut Burst,
        i: usize,
        now_ns: u64,
        with_sequence: bool,
        tally: &mut Tally,
        counters: &mut Counters,
    ) {
        let Some((plan, hash)) = self.lanes.general.get(i).copied() else { return };
        let sequence = if with_sequence {
            match next_sequence(self.flows.get_or_insert_hashed(&plan.flow, hash, now_ns, evictable), tally) {
                Some(sequence) => sequence,
                None => {
                    counters.inc(Counter::flow_table_full);
                    return;
                }
            }
        } else {
            0
        };
        let time = burst.arrival_ns(i, self.rx_timestamps, now_ns) as u32;
        let (config, template) = (&self.config, &self.template);
        match burst.with_frame(i, |f| source::insert_with(f, &plan, config, template, sequence, Some(time))) {
            Some(Ok(_)) => tally.instrumented += 1,
            Some(Err(skip)) => counters.inc(skip_counter(skip)),
            None => counters.inc(Counter::multi_segment),
        }
    }

    /// Parses packet `i`'s frame on the general path, checks the watchlist
    /// and prefetches its flow's slot; counts why a packet is left alone.
    #[inline(always)]
    fn plan_one(
        &self,
        frame: &[u8],
        i: usize,
        with_sequence: bool,
        marked: &mut u32,
        counters: &mut Counters,
    ) -> Option<(source::Plan, u64)> {
        match source::plan(frame, &self.config) {
            Ok(plan) => self.admit(plan, with_sequence, counters),
            Err(Skip::AlreadyMarked | Skip::MarkedFragment) if self.marked != MarkedPolicy::Trust => {
                *marked |= 1 << i;
                None
            }
            Err(skip) => {
                counters.inc(skip_counter(skip));
                None
            }
        }
    }

    /// A planned packet goes on if its flow is watched and it is not one of
    /// this node's own reports; its flow slot starts loading.
    #[inline(always)]
    fn admit(
        &self,
        plan: source::Plan,
        with_sequence: bool,
        counters: &mut Counters,
    ) -> Option<(source::Plan, u64)> {
        if !self.watchlist.is_empty() && !self.watchlist.iter().any(|rule| rule.matches(&plan.flow)) {
            counters.inc(Counter::not_watched);
            return None;
        }
        if let Some(collector) = self.own_reports_to {
            if crate::pipeline::source_flow::to_collector(&plan.flow, collector) {
                counters.inc(Counter::own_reports);
                return None;
            }
        }
        let hash = if with_sequence { crate::flow_table::hash(&plan.flow.words()) } else { 0 };
        if with_sequence {
            self.flows.prefetch(hash);
        }
        Some((plan, hash))
    }

    /// The INT domain's edge, for the packets that arrived marked: nothing
    /// leaves this source marked unless it carries this source's block.
    /// Returns the packets planned for the general path. Out of line:
    /// marked arrivals are the exception.
    #[inline(never)]
    fn guard_edge(&mut self, burst: &mut Burst, marked: u32, drop: &mut u32, counters: &mut Counters) -> u32 {
        let with_sequence = self.config.shim_type.has_sequence();
        let mut planned = 0;
        for i in 0..burst.len() {
            if marked & (1 << i) == 0 {
                continue;
            }
            if self.marked == MarkedPolicy::Drop {
                counters.inc(Counter::marked_dropped);
                *drop |= 1 << i;
                continue;
            }
            if let Some(plan) = self.strip_foreign(burst, i, with_sequence, counters) {
                if let Some(lane) = self.lanes.general.get_mut(i) {
                    *lane = plan;
                    planned |= 1 << i;
                }
            }
        }
        planned
    }

    /// The strip policy for one marked arrival: a well-formed INT block of
    /// this domain's encapsulation is removed (the packet restored as a
    /// sink would restore it); then the packet is instrumented if watched
    /// (a mark it still carries, such as RFC 8622's DSCP 1, stays in the
    /// tail and the sink restores it), and otherwise its mark is cleared.
    fn strip_foreign(
        &self,
        burst: &mut Burst,
        i: usize,
        with_sequence: bool,
        counters: &mut Counters,
    ) -> Option<(source::Plan, u64)> {
        let domain =
            Domain { encapsulation: self.config.encapsulation, tcp_placement: self.config.tcp_placement };
        let stripped = burst.with_frame(i, |frame| {
            match sink::classify(frame.frame(), &domain, &mut ShapeCache::default()) {
                Ok(Arrival::Int(found)) => sink::strip(frame, &found, &domain).is_some(),
                _ => false,
            }
        });
        if stripped == Some(true) {
            counters.inc(Counter::foreign_int_stripped);
        }
        let frame = burst.data(i)?;
        let unwatched = match source::plan(frame, &self.config) {
            Ok(plan) => return self.admit(plan, with_sequence, counters),
            Err(Skip::AlreadyMarked) => match source::plan_marked(frame, &self.config) {
                Ok(plan) => {
                    let admitted = self.admit(plan, with_sequence, counters);
                    if admitted.is_some() {
                        counters.inc(Counter::marked_instrumented);
                        return admitted;
                    }
                    true
                }
                Err(skip) => {
                    counters.inc(skip_counter(skip));
                    true
                }
            },
            Err(Skip::MarkedFragment) => {
                counters.inc(Counter::fragments);
                true
            }
            Err(skip) => {
                counters.inc(skip_counter(skip));
                false
            }
        };
        if unwatched {
            let config = &self.config;
            match burst.with_frame(i, |frame| source::clear_mark(frame.frame_mut(), config)) {
                Some(true) => counters.inc(Counter::mark_cleared),
                _ => counters.inc(Counter::marked_passed),
            }
        }
        None
    }
}

/// A flow that has numbered one packet may give its slot to a new flow
/// when the table is full.
fn evictable(next: &u32) -> bool {
    *next <= 1
}

/// The flow's next sequence number, from the slot the lookup found or
/// made. `None` without a slot: there is no honest number then, and the
/// packet goes on untouched rather than confuse the sink.
#[inline(always)]
fn next_sequence(slot: Option<(&mut u32, Admission)>, tally: &mut Tally) -> Option<u32> {
    let (counter, admission) = slot?;
    tally.created += u64::from(!matches!(admission, Admission::Existing { .. }));
    tally.evicted += u64::from(admission == Admission::Evicted);
    *counter = counter.wrapping_add(1);
    Some(*counter)
}
