//! The IOAM domain's encapsulating and transit stages (int-core's
//! [`int_core::ioam::encap`] and [`int_core::ioam::transit`] on every packet of a burst); the
//! decapsulating node is the INT 2.1 sink's stage reading IOAM
//! ([`crate::pipeline::int21::sink`]), so both report alike.
//!
//! What this node writes in its element: its node id (short: the low 24
//! bits; wide: the id), its ports' INT port numbers as interface ids, the
//! time the packet arrived (the trace's timestamp: RFC 9197 has the
//! timestamp taken on arrival), the transit delay from arrival to the
//! burst's foretold departure, and the RX queue's depth where the driver
//! counts it ([`crate::pipeline::hop_figures`]). What a software node does
//! not know (buffer occupancy, namespace data, the checksum complement) is
//! all ones, "not populated". Hop_Lim is the packet's Hop Limit: this node
//! forwards without routing, so it does not lower it.
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

use int_core::ioam::node::NodeData;
use int_core::ioam::{
    decap,
    encap::{self, Encapped, Plan},
    find,
    transit::{self, Transited},
};
use int_core::ioam::{Domain, TimestampFormat};
use int_core::locate::IpLocation;
use int_core::FrameBuf;

use crate::clock::Clock;
use crate::config::{IoamEncapSettings, MarkedPolicy};
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::{FlowRef, FlowTable};
use crate::pipeline::hop_figures::{BurstFigures, HopFigures};
use crate::pipeline::setup::Hop;
use crate::pipeline::source_flow::{next_number, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// What every stage of the domain writes for this node.
struct Element {
    node_id: u32,
    rx_port: u16,
    tx_port: u16,
    timestamps: TimestampFormat,
    rx_timestamps: Option<RxClock>,
    figures: HopFigures,
}

impl Element {
    fn new(domain: &Domain, hop: &Hop) -> Self {
        Element {
            node_id: hop.node_id,
            rx_port: hop.rx_int_port,
            tx_port: hop.tx_int_port,
            timestamps: domain.timestamps,
            rx_timestamps: hop.rx_timestamps,
            figures: HopFigures::new(hop.rx_queue),
        }
    }

    /// Packet `i`'s element.
    #[inline(always)]
    fn of(&self, burst: &Burst, i: usize, figures: &BurstFigures) -> NodeData {
        let arrival = burst.arrival_ns(i, self.rx_timestamps, figures.burst_ns);
        let (seconds, fraction) = self.timestamps.split(arrival);
        let delay = figures.egress_ns.saturating_sub(arrival);
        NodeData {
            node_id: Some(self.node_id & 0x00ff_ffff),
            ingress_if: Some(self.rx_port),
            egress_if: Some(self.tx_port),
            timestamp_seconds: Some(seconds),
            timestamp_fraction: Some(fraction),
            // Over 2^31 - 1 ns: the top bit says the delay overflowed.
            transit_delay: Some(u32::try_from(delay).ok().filter(|d| *d < 1 << 31).unwrap_or(1 << 31)),
            queue_depth: figures.queue.map(|(_, depth)| depth & 0x7fff_ffff),
            node_id_wide: Some(u64::from(self.node_id)),
            ingress_if_wide: Some(u32::from(self.rx_port)),
            egress_if_wide: Some(u32::from(self.tx_port)),
            ..NodeData::default()
        }
    }
}

impl Element {
    /// `step` on every writable packet of the burst with its element;
    /// counts what each step says, and drops the packets it says
    /// `marked_dropped` of.
    #[inline(always)]
    fn each(
        &mut self,
        burst: &mut Burst,
        clock: &mut Clock,
        counters: &mut Counters,
        mut step: impl FnMut(&mut FrameBuf<'_>, &NodeData, &mut Counters) -> Counter,
    ) {
        let figures = self.figures.burst(clock.now_ns(), burst.len());
        let mut drop = 0u32;
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            if let Some(counter) = crate::pipeline::unwritable(burst, i) {
                counters.inc(counter);
                continue;
            }
            let node = self.of(burst, i, &figures);
            let counter = burst.with_frame(i, |f| step(f, &node, counters)).unwrap_or(Counter::shared_mbuf);
            if counter == Counter::marked_dropped {
                drop |= 1 << i;
            }
            counters.inc(counter);
        }
        self.figures.done(&figures);
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }
}

/// The encapsulating node: the trace added to every IPv6 packet, this
/// node's slot filled, the packet numbered where the domain says.
pub struct IoamEncapStage {
    plan: Plan,
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

impl IoamEncapStage {
    pub fn new(domain: &Domain, hop: &Hop, settings: &IoamEncapSettings) -> Result<Self, &'static str> {
        let plan = domain.plan(usize::from(hop.max_ip_len));
        plan.check()?;
        let numbered = !plan.e2e.is_empty();
        Ok(IoamEncapStage {
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
        self.element.each(burst, clock, counters, |frame, node, counters| {
            let counter = encap(frame, plan, node, flows, now_ns, counters);
            match (counter, marked) {
                (Counter::already_marked, MarkedPolicy::Drop) => Counter::marked_dropped,
                (Counter::already_marked, MarkedPolicy::Strip) => {
                    match decap::strip_foreign(frame, plan.header.namespace) {
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
    /// [`crate::pipeline::int05::source::SourceStage::age`]).
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
/// counter that says what happened.
#[inline(always)]
fn encap(
    frame: &mut FrameBuf<'_>,
    plan: &Plan,
    node: &NodeData,
    flows: &mut FlowTable<u32>,
    now_ns: u64,
    counters: &mut Counters,
) -> Counter {
    let number = |bytes: &[u8], ip: &IpLocation| {
        let key = find::flow_of(bytes, ip);
        next_number(flows, FlowRef::Key(&key), now_ns, counters).map(u64::from)
    };
    match encap::encap(frame, plan, node, number) {
        Ok(Encapped::Added(_)) => Counter::instrumented,
        Ok(Encapped::NotIpv6) => Counter::not_ipv6,
        Ok(Encapped::AlreadyTraced) => Counter::already_marked,
        Ok(Encapped::TooBig) => Counter::too_big,
        Ok(Encapped::NoHeadroom) => Counter::no_headroom,
        // Headers that lie: forwarded as they came, counted.
        Err(error) => Counter::malformed(error.drop_reason()),
    }
}

/// A transit node: the next slot of the namespace's trace filled, or
/// Overflow set; everything else passes as it is.
pub struct IoamTransitStage {
    namespace: u16,
    element: Element,
}

impl IoamTransitStage {
    pub fn new(domain: &Domain, hop: &Hop) -> Self {
        IoamTransitStage { namespace: domain.namespace, element: Element::new(domain, hop) }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let namespace = self.namespace;
        self.element.each(burst, clock, counters, |frame, node, _| {
            match transit::transit(frame.frame_mut(), namespace, node) {
                Ok(Transited::Filled) => Counter::pushed,
                Ok(Transited::Overflow) => Counter::max_hop_reached,
                Ok(Transited::NotTraced) => Counter::not_int,
                Err(error) => Counter::malformed(error.drop_reason()),
            }
        });
    }
}
