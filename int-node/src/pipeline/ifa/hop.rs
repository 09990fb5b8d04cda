//! What this node writes in its IFA hop (Broadcom's LNS 1 layout,
//! [`int_core::ifa::hop`]): its Device ID, the packet's IP TTL or Hop
//! Limit as it arrived, its ports' INT port numbers as the system ports,
//! the RX queue's id, the time the packet arrived (its low 20 bits of
//! seconds and its nanoseconds, from the node's clock or the NIC's RX
//! timestamp) and its residence time, from arrival to the burst's
//! foretold departure ([`crate::pipeline::hop_figures`]). What a software
//! node does not know is 0: the egress port speed code (0 is 10G in the
//! peers' table; the draft has no "unknown"), congestion, the opaque words.

use int_core::ifa::hop::{LNS_BROADCOM, MAX_RX_SECONDS};
use int_core::ifa::HopRepr;
use int_core::FrameBuf;

use crate::clock::Clock;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::pipeline::hop_figures::{BurstFigures, HopFigures};
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

const NS: u64 = 1_000_000_000;

/// What every stage of the zone writes for this node.
pub(crate) struct OwnHop {
    device_id: u32,
    rx_port: u16,
    tx_port: u16,
    rx_timestamps: Option<RxClock>,
    figures: HopFigures,
}

impl OwnHop {
    pub(crate) fn new(device_id: u32, hop: &Hop) -> Self {
        OwnHop {
            device_id,
            rx_port: hop.rx_int_port,
            tx_port: hop.tx_int_port,
            rx_timestamps: hop.rx_timestamps,
            figures: HopFigures::new(hop.rx_queue),
        }
    }

    /// The burst's figures, read at its start ([`OwnHop::done`] at its end).
    #[inline(always)]
    pub(crate) fn begin(&mut self, clock: &mut Clock, packets: usize) -> BurstFigures {
        self.figures.burst(clock.now_ns(), packets)
    }

    #[inline(always)]
    pub(crate) fn done(&mut self, figures: &BurstFigures) {
        self.figures.done(figures);
    }

    /// Packet `i`'s hop, but for its IP TTL ([`HopRepr::with_ttl`]).
    #[inline(always)]
    pub(crate) fn of(&self, burst: &Burst, i: usize, figures: &BurstFigures) -> HopRepr {
        let arrival = burst.arrival_ns(i, self.rx_timestamps, figures.burst_ns);
        let residence = figures.egress_ns.saturating_sub(arrival);
        HopRepr {
            lns: LNS_BROADCOM,
            device_id: self.device_id,
            queue_id: figures.queue.map_or(0, |(queue, _)| queue & 0x3f),
            rx_seconds: ((arrival / NS) & u64::from(MAX_RX_SECONDS)) as u32,
            rx_nanoseconds: (arrival % NS) as u32,
            egress_system_port: self.tx_port,
            ingress_system_port: self.rx_port,
            residence_ns: u32::try_from(residence).unwrap_or(u32::MAX),
            ..HopRepr::default()
        }
    }

    /// `step` on every writable packet of the burst with this node's hop;
    /// counts what each step says, and drops the packets it says
    /// `marked_dropped` or `malformed_dropped` of.
    #[inline(always)]
    pub(crate) fn each(
        &mut self,
        burst: &mut Burst,
        clock: &mut Clock,
        counters: &mut Counters,
        mut step: impl FnMut(&mut FrameBuf<'_>, &HopRepr, &mut Counters) -> Counter,
    ) {
        let figures = self.begin(clock, burst.len());
        let dropped = |counter| matches!(counter, Counter::marked_dropped | Counter::malformed_dropped);
        crate::pipeline::frames::rewrite_each(burst, counters, dropped, |burst, i, counters| {
            let hop = self.of(burst, i, &figures);
            burst.with_frame(i, |f| step(f, &hop, counters)).unwrap_or(Counter::shared_mbuf)
        });
        self.done(&figures);
    }
}
