//! What a transit hop knows of its own figures, for either INT version:
//! how long a packet has been in this node and how deep its RX queue is.
//!
//! - Hop latency: from the packet's RX timestamp where the pipeline reads
//!   them (`clock: rx-timestamp`: the wait in the RX ring counts), else
//!   from the time its burst reached the stage; the egress time is that
//!   time plus the TSC's count since, read per packet (a few ns, where
//!   the system clock's call costs tens).
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
}

/// One burst's figures.
#[derive(Debug, Clone, Copy)]
pub struct BurstFigures {
    /// The host clock when the burst reached the stage.
    pub burst_ns: u64,
    start: u64,
    /// Queue id (the RX queue's, in 8 bits) and the packets waiting.
    pub queue: Option<(u8, u32)>,
}

impl HopFigures {
    pub fn new(rx_queue: Option<(PortId, QueueId)>) -> Self {
        HopFigures { stopwatch: Stopwatch::new(), rx_queue }
    }

    /// Read at a burst's start.
    #[inline]
    pub fn burst(&mut self, burst_ns: u64) -> BurstFigures {
        let start = self.stopwatch.map_or(0, |watch| watch.start());
        let queue = self.rx_queue.and_then(|(port, queue)| {
            let depth = port::rx_queue_depth(port, queue);
            if depth.is_none() {
                self.rx_queue = None;
            }
            Some((queue.0.min(u16::from(u8::MAX)) as u8, depth?))
        });
        BurstFigures { burst_ns, start, queue }
    }

    /// The time packet `i` leaves the stage.
    #[inline(always)]
    pub fn egress_ns(&self, burst: &BurstFigures) -> u64 {
        burst.burst_ns + self.stopwatch.map_or(0, |watch| watch.ns_since(burst.start))
    }
}
