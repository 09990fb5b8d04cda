//! What this node writes in its element: its node id (short: the low 24
//! bits; wide: the id), its ports' INT port numbers as interface ids, the
//! time the packet arrived (the trace's timestamp: RFC 9197 has the
//! timestamp taken on arrival), the transit delay from arrival to the
//! burst's foretold departure, and the RX queue's depth where the driver
//! counts it ([`crate::pipeline::hop_figures`]). What a software node does
//! not know (buffer occupancy, namespace data, the checksum complement) is
//! all ones, "not populated". Hop_Lim is the packet's Hop Limit: this node
//! forwards without routing, so it does not lower it.

use int_core::ioam::node::NodeData;
use int_core::ioam::{Domain, TimestampFormat};
use int_core::FrameBuf;

use crate::clock::Clock;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::pipeline::hop_figures::{BurstFigures, HopFigures};
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

/// What every stage of the domain writes for this node.
pub(crate) struct Element {
    node_id: u32,
    rx_port: u16,
    tx_port: u16,
    timestamps: TimestampFormat,
    rx_timestamps: Option<RxClock>,
    figures: HopFigures,
}

impl Element {
    pub(crate) fn new(domain: &Domain, hop: &Hop) -> Self {
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
    pub(crate) fn each(
        &mut self,
        burst: &mut Burst,
        clock: &mut Clock,
        counters: &mut Counters,
        mut step: impl FnMut(&mut FrameBuf<'_>, &NodeData, &mut Counters) -> Counter,
    ) {
        let figures = self.figures.burst(clock.now_ns(), burst.len());
        let dropped = |counter| counter == Counter::marked_dropped;
        crate::pipeline::frames::rewrite_each(burst, counters, dropped, |burst, i, counters| {
            let node = self.of(burst, i, &figures);
            burst.with_frame(i, |f| step(f, &node, counters)).unwrap_or(Counter::shared_mbuf)
        });
        self.figures.done(&figures);
    }
}
