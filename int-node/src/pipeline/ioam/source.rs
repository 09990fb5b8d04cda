//! The encapsulating node of an IOAM domain: [`int_core::ioam::source`] on
//! every packet of a burst, this node's element in the first slot; the
//! fast path ([`int_core::ioam::fast_source`]) first.
//!
//! Where the domain numbers packets, the encapsulating node numbers each
//! flow's packets from 1 in its flow table (as an INT 2.1 source does) and
//! carries the number in an Edge-to-Edge option; a flow the full table
//! has no slot for gets the trace alone (counted `flow_table_full`), never
//! a number the sink would misread as loss.
//!
//! The encapsulating node is the domain's edge: a packet that arrives
//! with a trace or number of the namespace came from outside (a node of
//! the domain is never before it), and its nodes and times would be read
//! as the domain's. `source.marked` says what it gets, as at an INT
//! source's edge: `strip` (the default) removes them as the decapsulating
//! node would and traces the packet as any other, `drop` drops it, `trust`
//! forwards it as it came (an encapsulating node behind another of the
//! domain).

use int_core::fast::FastFrame;
use int_core::ioam::fast_source::FastSource;
use int_core::ioam::node::NodeData;
use int_core::ioam::Domain;
use int_core::ioam::{
    sink,
    source::{self, Encapped, Plan},
};
use int_core::locate::IpLocation;
use int_core::FrameBuf;
use int_core::ParseError;

use super::element::Element;
use crate::clock::Clock;
use crate::config::{IoamSourceSettings, MarkedPolicy};
use crate::dpdk::mbuf::Burst;
use crate::flow_table::{FlowRef, FlowTable};
use crate::pipeline::setup::Hop;
use crate::pipeline::source_flow::{next_number, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// The encapsulating node: the trace added to every IPv6 packet, this
/// node's slot filled, the packet numbered where the domain says.
pub struct IoamSourceStage {
    plan: Plan,
    /// The fast path.
    fast: Option<FastSource>,
    element: Element,
    /// Per-flow last packet number, where the domain numbers packets.
    flows: FlowTable<u32>,
    idle_timeout_ns: u64,
    last_sweep_ns: u64,
    /// What a packet that arrives traced or numbered in the namespace gets.
    marked: MarkedPolicy,
    /// The flows with the most packets, ranked as the ageing sweep goes.
    pub top: TopFlows,
}

impl IoamSourceStage {
    pub fn new(domain: &Domain, hop: &Hop, settings: &IoamSourceSettings) -> Result<Self, &'static str> {
        let plan = domain.plan(usize::from(hop.max_ip_len));
        plan.check()?;
        let numbered = !plan.e2e.is_empty();
        Ok(IoamSourceStage {
            fast: FastSource::of(&plan),
            plan,
            element: Element::new(domain, hop),
            flows: FlowTable::new(if numbered { settings.flow_capacity as usize } else { 1 }),
            idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
            last_sweep_ns: 0,
            marked: settings.marked,
            top: TopFlows::default(),
        })
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let (plan, flows, now_ns, marked) = (&self.plan, &mut self.flows, clock.now_ns(), self.marked);
        let fast = self.fast.as_ref();
        self.element.each(burst, clock, counters, |frame, node, counters| {
            if let (Some(fast), Some(parts)) = (fast, FastFrame::read(frame.frame(), 0)) {
                // The flow's words name the slot its key names (a table
                // without IPv6 keys): the two paths number one flow as one.
                let number = |parts: &FastFrame| {
                    next_number(flows, FlowRef::Words(&parts.flow), now_ns, counters).map(u64::from)
                };
                if let Some(done) = fast.insert(frame, &parts, node, number) {
                    return counter_of(Ok(done));
                }
            }
            let counter = encap(frame, plan, node, flows, now_ns, counters);
            match (counter, marked) {
                (Counter::already_marked, MarkedPolicy::Drop) => Counter::marked_dropped,
                (Counter::already_marked, MarkedPolicy::Strip) => {
                    match sink::strip_foreign(frame, plan.header.namespace) {
                        Ok(true) => {
                            counters.inc(Counter::foreign_int_stripped);
                            encap(frame, plan, node, flows, now_ns, counters)
                        }
                        Ok(false) => counter,
                        // Not where a node of ours puts it, or lying: it
                        // cannot come out whole; counted, forwarded (less
                        // what came out whole before the lie was found:
                        // every node of the domain refuses the rest).
                        Err(error) => Counter::malformed(error.drop_reason()),
                    }
                }
                (counter, _) => counter,
            }
        });
        self.age(now_ns, counters);
    }

    /// A step of the ageing sweep of the numbered flows (see
    /// [`crate::pipeline::int05::source::Source05Stage::age`]).
    #[inline]
    pub fn age(&mut self, now_ns: u64, counters: &mut Counters) {
        if !self.plan.e2e.is_empty() {
            let ageing =
                Ageing { last_sweep_ns: &mut self.last_sweep_ns, idle_timeout_ns: self.idle_timeout_ns };
            ageing.age(&mut self.flows, &mut self.top, now_ns, counters, |numbered| *numbered);
        }
    }
}

/// Adds the trace (and the number, from `flows`) to one frame; the
/// counter that says what happened. The general path, out of line: the
/// fast path's loop stays short.
#[inline(never)]
fn encap(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    node: &NodeData,
    flows: &mut FlowTable<u32>,
    now_ns: u64,
    counters: &mut Counters,
) -> Counter {
    let number = |bytes: &[u8], ip: &IpLocation| {
        let key = sink::flow_of(bytes, ip);
        next_number(flows, FlowRef::Key(&key), now_ns, counters).map(u64::from)
    };
    counter_of(source::insert(frame, plan, node, number))
}

/// What the encapsulating node counts for what it did.
#[inline(always)]
fn counter_of(done: Result<Encapped, ParseError>) -> Counter {
    match done {
        Ok(Encapped::Added(_)) => Counter::instrumented,
        Ok(Encapped::NotIpv6) => Counter::not_ipv6,
        Ok(Encapped::AlreadyTraced) => Counter::already_marked,
        Ok(Encapped::TooBig) => Counter::too_big,
        Ok(Encapped::NoHeadroom) => Counter::no_headroom,
        // Headers that lie: forwarded as they came, counted.
        Err(error) => Counter::malformed(error.drop_reason()),
    }
}
