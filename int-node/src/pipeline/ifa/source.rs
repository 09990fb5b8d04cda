//! The initiator of an IFA zone: [`int_core::ifa::source`] on the packets
//! of watched flows, this node's hop as the first; a fast-path frame
//! ([`int_core::fast::FastFrame`]) planned at fixed offsets
//! ([`FastSource`]), every other by the walk. Inband, the live
//! packets carry IFA (I set). In probe mode (`int.mode: probe`), the
//! packets pass untouched and a copy of one packet in N of each watched
//! flow carries IFA with I clear ([`Clones`], as INT 2.1's clones: the
//! copies from a pool of their own, sent after their originals' burst
//! into the room it left); the terminator reads and drops the copies.
//!
//! The initiator is the zone's edge: a packet that arrives with IFA of
//! the zone came from outside (no node of the zone is before it), and its
//! hops would be read as the zone's. `source.marked` says what it gets,
//! as at an INT source's edge: `strip` (the default) removes IFA as the
//! terminator would and treats the packet as any other, `drop` drops it,
//! `trust` forwards it as it came (an initiator behind another of the
//! zone). Under `strip`, IFA that cannot come out whole (refused, counted
//! by reason) is dropped: never forwarded into the zone. In probe mode a
//! stripped packet passes without a copy.

use std::net::SocketAddr;

use int_core::fast::FastFrame;
use int_core::ifa::fast_source::FastSource;
use int_core::ifa::source::{self, Settings};
use int_core::ifa::{sink, Domain, HopRepr};
use int_core::FrameBuf;

use super::hop::OwnHop;
use crate::clock::Clock;
use crate::config::{IfaDomain, IfaSourceSettings, MarkedPolicy, Rule};
use crate::dpdk::mbuf::Burst;
use crate::flow_table::{FlowRef, FlowTable};
use crate::pipeline::clones::Clones;
use crate::pipeline::setup::Hop;
use crate::pipeline::source_flow::{fast_flow_watched, next_number, skip_counter, to_collector, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

pub struct IfaSourceStage {
    write: Write,
    hop: OwnHop,
    pub watchlist: Vec<Rule>,
    /// What a packet that arrives with IFA of the zone gets.
    marked: MarkedPolicy,
    /// Probe mode: the copies of this poll.
    pub probes: Option<Clones>,
    /// Probe mode: each watched flow's packets, counted.
    flows: FlowTable<u32>,
    idle_timeout_ns: u64,
    last_sweep_ns: u64,
    /// The flows with the most packets (probe mode's table), ranked as
    /// the ageing sweep goes.
    pub top: TopFlows,
}

/// What the initiator writes, and where it stops.
#[derive(Clone, Copy)]
struct Write {
    /// Inband: the fast path, where the zone allows one.
    fast: Option<FastSource>,
    domain: Domain,
    settings: Settings,
    max_ip_len: u16,
    own_reports_to: Option<SocketAddr>,
}

impl IfaSourceStage {
    pub fn new(
        zone: &IfaDomain,
        settings: &IfaSourceSettings,
        hop: &Hop,
        own_reports_to: Option<SocketAddr>,
        probes: Option<Clones>,
    ) -> Self {
        let settings_ = Settings {
            max_length: zone.max_length,
            hop_limit: zone.hop_limit,
            inband: zone.probe_one_in.is_none(),
            l4: zone.l4,
            ..Settings::default()
        };
        IfaSourceStage {
            write: Write {
                fast: FastSource::of(&zone.domain, &settings_, hop.max_ip_len),
                domain: zone.domain,
                settings: settings_,
                max_ip_len: hop.max_ip_len,
                own_reports_to,
            },
            hop: OwnHop::new(zone.device_id(hop.node_id), hop),
            watchlist: settings.watchlist.clone(),
            marked: settings.marked,
            flows: FlowTable::new(if probes.is_some() { settings.flow_capacity as usize } else { 1 }),
            probes,
            idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
            last_sweep_ns: 0,
            top: TopFlows::default(),
        }
    }

    /// A step of the ageing sweep of probe mode's flows (see
    /// [`crate::pipeline::int05::source::Source05Stage::age`]).
    #[inline]
    pub fn age(&mut self, now_ns: u64, counters: &mut Counters) {
        if self.probes.is_some() {
            let ageing =
                Ageing { last_sweep_ns: &mut self.last_sweep_ns, idle_timeout_ns: self.idle_timeout_ns };
            ageing.age(&mut self.flows, &mut self.top, now_ns, counters, |counted| *counted);
        }
    }

    /// Copies `from..to` of this poll did not leave: their flows' counts
    /// go back ([`Clones::unsent`]), so that the flow's next packet is
    /// copied in their place.
    #[cold]
    pub fn give_back_counts(&mut self, from: usize, to: usize) {
        let (Some(probes), flows) = (self.probes.as_ref(), &mut self.flows) else { return };
        for (flow, n) in probes.unsent(from, to) {
            if let Some((count, _)) =
                flows.get_or_insert_flow(FlowRef::Key(flow), self.last_sweep_ns, |_| false)
            {
                *count = n.wrapping_sub(1);
            }
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        if self.probes.is_some() {
            self.probe(burst, clock, counters);
            self.age(clock.now_ns(), counters);
            return;
        }
        let (write, watchlist, marked) = (self.write, self.watchlist.as_slice(), self.marked);
        self.hop.each(burst, clock, counters, |frame, hop, counters| {
            if let Some(counter) = write.instrument_fast(frame, watchlist, hop) {
                return counter;
            }
            match write.instrument(frame, watchlist, hop) {
                Counter::already_marked => at_edge(frame, &write, watchlist, hop, marked, counters),
                counter => counter,
            }
        });
    }
}

impl IfaSourceStage {
    /// Probe mode: every packet passes as it came (or by the `marked`
    /// policy); a copy of one packet in N of each watched flow is
    /// instrumented, I clear, and joins the copies sent after the burst.
    fn probe(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let figures = self.hop.begin(clock, burst.len());
        let mut drop = 0u32;
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            let counted = self.probe_one(burst, i, &figures, counters);
            if matches!(counted, Some(Counter::marked_dropped | Counter::malformed_dropped)) {
                drop |= 1 << i;
            }
        }
        self.hop.done(&figures);
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }

    /// Packet `i` in probe mode: its copy, if one is due. What it counted
    /// last, for the drops.
    #[inline(always)]
    fn probe_one(
        &mut self,
        burst: &mut Burst,
        i: usize,
        figures: &crate::pipeline::hop_figures::BurstFigures,
        counters: &mut Counters,
    ) -> Option<Counter> {
        let write = self.write;
        let frame = burst.data(i)?;
        let plan = match source::plan(frame, &write.domain, write.max_ip_len) {
            Ok(plan) => plan,
            Err(int_core::outcome::Skip::AlreadyMarked) => {
                let marked = self.marked;
                let counter = burst.with_frame(i, |f| guard(f, &write, marked, counters))?;
                counters.inc(counter);
                return Some(counter);
            }
            Err(skip) => {
                counters.inc(skip_counter(skip));
                return None;
            }
        };
        let flow = plan.flow(frame);
        if let Some(counter) = write.refuse(&flow, &self.watchlist) {
            counters.inc(counter);
            return None;
        }
        let n = next_number(&mut self.flows, FlowRef::Key(&flow), figures.burst_ns, counters)?;
        let probes = self.probes.as_mut()?;
        probes.copy_number(n)?;
        let hop = self.hop.of(burst, i, figures).with_ttl(frame, &plan.ip);
        let Some(j) = probes.copy(burst, i, (&flow, n), counters) else {
            self.give_back_count(&flow, n);
            return None;
        };
        match probes.out.with_frame(j, |f| source::insert(f, &plan, &write.domain, &write.settings, &hop)) {
            Some(Ok(_)) => {
                counters.inc(Counter::instrumented);
                counters.inc(Counter::cloned);
            }
            Some(Err(skip)) => {
                counters.inc(skip_counter(skip));
                probes.take_back();
                self.give_back_count(&flow, n);
            }
            None => counters.inc(Counter::shared_mbuf),
        }
        None
    }

    /// The flow's count back to before its `n`th packet, whose copy did
    /// not come about: the next packet is copied in its place.
    fn give_back_count(&mut self, flow: &int_core::flow::FlowKey, n: u32) {
        if let Some((count, _)) =
            self.flows.get_or_insert_flow(FlowRef::Key(flow), self.last_sweep_ns, |_| false)
        {
            if *count == n {
                *count = n.wrapping_sub(1);
            }
        }
    }
}

impl Write {
    /// The fast path: a fast-path frame the initiator takes, of a watched
    /// flow, instrumented; `None` leaves the frame (unchanged) to
    /// [`Write::instrument`], which decides and counts.
    #[inline(always)]
    fn instrument_fast(
        &self,
        frame: &mut FrameBuf<'_>,
        watchlist: &[Rule],
        hop: &HopRepr,
    ) -> Option<Counter> {
        let fast = self.fast.as_ref()?;
        let parts = FastFrame::read(frame.frame(), 0).filter(|parts| fast.takes(parts))?;
        if !fast_flow_watched(&parts, frame.frame(), watchlist, self.own_reports_to) {
            return None;
        }
        Some(if fast.insert(frame, &parts, hop) { Counter::instrumented } else { Counter::no_headroom })
    }

    /// IFA added to one frame of a watched flow; the counter that says
    /// what happened.
    #[inline(always)]
    fn instrument(&self, frame: &mut FrameBuf<'_>, watchlist: &[Rule], hop: &HopRepr) -> Counter {
        let plan = match source::plan(frame.frame(), &self.domain, self.max_ip_len) {
            Ok(plan) => plan,
            Err(skip) => return skip_counter(skip),
        };
        if let Some(counter) = self.refuse(&plan.flow(frame.frame()), watchlist) {
            return counter;
        }
        let hop = hop.with_ttl(frame.frame(), &plan.ip);
        match source::insert(frame, &plan, &self.domain, &self.settings, &hop) {
            Ok(_) => Counter::instrumented,
            Err(skip) => skip_counter(skip),
        }
    }
}

impl Write {
    /// Why a flow is not instrumented: not watched, or this node's reports.
    #[inline(always)]
    fn refuse(&self, flow: &int_core::flow::FlowKey, watchlist: &[Rule]) -> Option<Counter> {
        if !watchlist.is_empty() && !watchlist.iter().any(|rule| rule.matches(flow)) {
            return Some(Counter::not_watched);
        }
        if self.own_reports_to.is_some_and(|collector| to_collector(flow, collector)) {
            return Some(Counter::own_reports);
        }
        None
    }
}

/// Probe mode's edge: a packet that arrived with IFA of the zone passes
/// (`trust`), is dropped (`drop`) or passes with its IFA taken out
/// (`strip`; refused IFA is dropped), not copied.
fn guard(frame: &mut FrameBuf<'_>, write: &Write, marked: MarkedPolicy, counters: &mut Counters) -> Counter {
    match marked {
        MarkedPolicy::Trust => Counter::already_marked,
        MarkedPolicy::Drop => Counter::marked_dropped,
        MarkedPolicy::Strip => match sink::find(frame.frame(), &write.domain) {
            Ok(Some(found)) => match sink::strip(frame, &found, write.settings.l4) {
                Some(_) => Counter::foreign_int_stripped,
                None => Counter::malformed_dropped,
            },
            Ok(None) => Counter::already_marked,
            Err(refused) => {
                counters.inc(Counter::refused(refused.reason));
                Counter::malformed_dropped
            }
        },
    }
}

/// A packet that arrived with IFA of the zone, by the `marked` policy.
#[inline(never)]
fn at_edge(
    frame: &mut FrameBuf<'_>,
    write: &Write,
    watchlist: &[Rule],
    hop: &HopRepr,
    marked: MarkedPolicy,
    counters: &mut Counters,
) -> Counter {
    match marked {
        MarkedPolicy::Trust => Counter::already_marked,
        MarkedPolicy::Drop => Counter::marked_dropped,
        MarkedPolicy::Strip => match sink::find(frame.frame(), &write.domain) {
            Ok(Some(found)) => match sink::strip(frame, &found, write.settings.l4) {
                Some(_) => {
                    counters.inc(Counter::foreign_int_stripped);
                    write.instrument(frame, watchlist, hop)
                }
                None => Counter::malformed_dropped,
            },
            Ok(None) => Counter::already_marked,
            Err(refused) => {
                counters.inc(Counter::refused(refused.reason));
                Counter::malformed_dropped
            }
        },
    }
}
