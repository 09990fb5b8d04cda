//! What a transit hop knows of its own figures, for either INT version:
//! how long a packet stays in this node and how deep its RX queue is.
//!
//! - Hop latency: from the packet's RX timestamp where the pipeline reads
//!   them (`clock: rx-timestamp`: the wait in the RX ring counts), else
//!   from its burst's arrival at the stage, to the burst's TX: the packets
//!   of a burst leave together. The TX time is foretold from the last
//!   burst's time per packet (the TSC read twice a burst, not per packet:
//!   a reading per packet cost the transit a fifth of its rate). A
//!   worker's first burst has no last burst: its packets carry the wait
//!   in the RX ring only (0 without RX timestamps).
//! - Queue occupancy: the RX queue's id and the packets still waiting in
//!   it behind the burst, read once per burst, where the driver counts them
//!   (NIC drivers; none of the vdevs): otherwise all ones, as a value the
//!   node does not know.

use crate::dpdk::cycles::Stopwatch;
use crate::dpdk::port::{self, PortId, QueueId};

pub struct HopFigures {
    stopwatch: Option<Stopwatch>,
    /// `None` once the driver has said it does not count.
    rx_queue: Option<(PortId, QueueId)>,
    /// The last burst's time in the stage per packet.
    ns_per_packet: u64,
}

/// One burst's figures.
#[derive(Debug, Clone, Copy)]
pub struct BurstFigures {
    /// The host clock when the burst reached the stage.
    pub burst_ns: u64,
    /// When it leaves, foretold.
    pub egress_ns: u64,
    start: u64,
    packets: u64,
    /// Queue id (the RX queue's, in 8 bits) and the packets waiting.
    pub queue: Option<(u8, u32)>,
}

impl HopFigures {
    pub fn new(rx_queue: Option<(PortId, QueueId)>) -> Self {
        HopFigures { stopwatch: Stopwatch::new(), rx_queue, ns_per_packet: 0 }
    }

    /// Read at the start of a burst of `packets`.
    #[inline]
    pub fn burst(&mut self, burst_ns: u64, packets: usize) -> BurstFigures {
        let start = self.stopwatch.map_or(0, |watch| watch.start());
        let queue = self.rx_queue.and_then(|(port, queue)| {
            let depth = port::rx_queue_depth(port, queue);
            if depth.is_none() {
                self.rx_queue = None;
            }
            Some((queue.0.min(u16::from(u8::MAX)) as u8, depth?))
        });
        let packets = packets as u64;
        let egress_ns = burst_ns + self.ns_per_packet * packets;
        BurstFigures { burst_ns, egress_ns, start, packets, queue }
    }

    /// At the end of the burst: its time per packet, for the next one's.
    #[inline]
    pub fn done(&mut self, burst: &BurstFigures) {
        let Some(watch) = self.stopwatch else { return };
        if let Some(per_packet) = watch.ns_since(burst.start).checked_div(burst.packets) {
            // A burst held up (the worker descheduled) is not the rule.
            self.ns_per_packet = per_packet.min(10_000);
        }
    }
}
