//! The transit stage: pushes this node's metadata onto packets that already
//! carry INT 0.5 (its hop latency and RX queue's depth as
//! [`crate::pipeline::hop_figures`] knows them; values a software node
//! cannot know are 0xFFFFFFFF).

use int_core::int05::fast_transit::FastTransit;
use int_core::int05::transit::{self, Outcome, TransitConfig};
use int_core::int05::{Domain, HopMetadata, ShapeCache};
use int_core::FrameBuf;

use crate::clock::Clock;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::pipeline::hop_figures::HopFigures;
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

pub struct Transit05Stage {
    pub config: TransitConfig,
    pub node_id: u32,
    pub rx_int_port: u16,
    pub tx_int_port: u16,
    pub rx_timestamps: Option<RxClock>,
    /// The last INT block shape that passed the checks.
    pub shapes: ShapeCache,
    fast: FastTransit,
    figures: HopFigures,
}

impl Transit05Stage {
    pub fn new(domain: Domain, hop: &Hop) -> Self {
        Transit05Stage {
            config: TransitConfig { domain, max_ip_len: hop.max_ip_len },
            node_id: hop.node_id,
            rx_int_port: hop.rx_int_port,
            tx_int_port: hop.tx_int_port,
            rx_timestamps: hop.rx_timestamps,
            shapes: ShapeCache::default(),
            fast: FastTransit,
            figures: HopFigures::new(hop.rx_queue),
        }
    }

    #[inline]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let figures = self.figures.burst(clock.now_ns(), burst.len());
        // Queue id (8 bits) and occupancy (24), as INT 0.5's bit 3 asks.
        let queue = figures.queue.map(|(id, depth)| (u32::from(id) << 24) | depth.min(0x00ff_ffff));
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            let ingress = burst.arrival_ns(i, self.rx_timestamps, figures.burst_ns);
            let now_ns = figures.egress_ns;
            let hop = HopMetadata {
                switch_id: Some(self.node_id),
                ingress_port: Some(self.rx_int_port),
                egress_port: Some(self.tx_int_port),
                hop_latency: Some(now_ns.saturating_sub(ingress).min(u64::from(u32::MAX)) as u32),
                queue_occupancy: queue,
                ingress_timestamp: Some(ingress as u32),
                egress_timestamp: Some(now_ns as u32),
                ..HopMetadata::default()
            };
            let (config, shapes, fast) = (&self.config, &mut self.shapes, &mut self.fast);
            // Fast-path frames take the fast path; it leaves any
            // other to the general one untouched.
            let push = |f: &mut FrameBuf<'_>| {
                fast.push(f, config, &hop, shapes)
                    .unwrap_or_else(|| transit::push_with(f, config, &hop, shapes))
            };
            let counter = match burst.with_frame(i, push) {
                None => crate::pipeline::frames::unwritable(burst, i).unwrap_or(Counter::shared_mbuf),
                Some(Ok(Outcome::Pushed(_))) => Counter::pushed,
                Some(Ok(Outcome::MaxHopReached)) => Counter::max_hop_reached,
                Some(Ok(Outcome::DestinationOnly)) => Counter::destination_only,
                Some(Err(why)) => Counter::not_pushed(why),
            };
            counters.inc(counter);
        }
        self.figures.done(&figures);
    }
}
