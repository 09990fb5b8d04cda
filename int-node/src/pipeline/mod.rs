//! Pipelines: one RX queue to one TX queue through a stage, run to
//! completion on a worker lcore, a burst at a time. The stage is chosen once
//! at start (an enum, no dynamic dispatch in the loop).

pub mod export;
pub mod impair;
pub mod sink;
pub mod source;
pub mod transit;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::dpdk::clock::TscClock;
use crate::dpdk::mbuf::Burst;
use crate::dpdk::port::{PortId, QueueId};
use crate::stats::{Counter, Counters, SharedCounters};

pub enum Stage {
    Forward,
    Source(Box<source::SourceStage>),
    Transit(Box<transit::TransitStage>),
    Sink(Box<sink::SinkStage>),
    Impair(Box<impair::ImpairStage>),
}

pub struct Pipeline {
    pub rx: (PortId, QueueId),
    pub tx: (PortId, QueueId),
    pub stage: Stage,
    pub counters: Counters,
    pub shared: Arc<SharedCounters>,
}

impl Pipeline {
    /// One burst: receive, transform, send. Returns packets received.
    #[inline]
    pub fn poll(&mut self, burst: &mut Burst, clock: &mut TscClock) -> usize {
        let received = burst.rx(self.rx.0, self.rx.1);
        match &mut self.stage {
            // The sweep runs even when no packet came: losses are reported
            // on time for flows that went quiet.
            Stage::Sink(sink) => sink.sweep(clock, &mut self.counters),
            Stage::Impair(impair) if received == 0 => impair.release_due(clock, &mut self.counters),
            _ => {}
        }
        if received == 0 {
            self.counters.publish(&self.shared);
            return 0;
        }
        self.counters.add(Counter::rx_packets, received as u64);
        match &mut self.stage {
            Stage::Forward => {}
            Stage::Source(source) => source.process(burst, clock, &mut self.counters),
            Stage::Transit(transit) => transit.process(burst, clock, &mut self.counters),
            Stage::Sink(sink) => sink.process(burst, clock, &mut self.counters),
            Stage::Impair(impair) => impair.process(burst, clock, &mut self.counters),
        }
        let (sent, dropped) = burst.tx(self.tx.0, self.tx.1);
        self.counters.add(Counter::tx_packets, sent as u64);
        self.counters.add(Counter::tx_dropped, dropped as u64);
        self.counters.publish(&self.shared);
        received
    }
}

/// How far a stage looks ahead: packet i+N is parsed and its flow's slot
/// prefetched while packet i is worked on. While the live flows' slots fit
/// in cache one packet is enough, and deeper costs the copies through the
/// ring; once they spill to DRAM a miss takes several packets' time to
/// hide.
pub(crate) const SHALLOW: usize = 1;
pub(crate) const DEEP: usize = 8;

/// A stage that parses ahead of its work (source, sink).
pub(crate) trait LookaheadStage {
    /// Whether the live flows' state no longer fits in cache.
    fn spills_cache(&self) -> bool;
    /// One burst with a lookahead of `N` packets.
    fn process_ahead<const N: usize>(
        &mut self,
        burst: &mut Burst,
        clock: &mut TscClock,
        counters: &mut Counters,
    );
}

/// Runs `stage` on a burst looking [`SHALLOW`] packets ahead while its flows
/// fit in cache, [`DEEP`] once they spill to DRAM.
#[inline(always)]
pub(crate) fn process_adaptive<S: LookaheadStage>(
    stage: &mut S,
    burst: &mut Burst,
    clock: &mut TscClock,
    counters: &mut Counters,
) {
    if stage.spills_cache() {
        process_deep(stage, burst, clock, counters)
    } else {
        stage.process_ahead::<SHALLOW>(burst, clock, counters)
    }
}

/// Out of line: a call per burst is nothing next to a burst of DRAM misses,
/// and the shallow loop keeps the poll loop to itself.
#[inline(never)]
fn process_deep<S: LookaheadStage>(
    stage: &mut S,
    burst: &mut Burst,
    clock: &mut TscClock,
    counters: &mut Counters,
) {
    stage.process_ahead::<DEEP>(burst, clock, counters)
}

/// The parsed packets between "parsed" and "worked on": a ring of `N` on
/// the stack.
pub(crate) struct Lookahead<T, const N: usize> {
    ring: [Option<T>; N],
}

impl<T, const N: usize> Lookahead<T, N> {
    /// Parses packets 0..N with `parse`.
    #[inline]
    pub(crate) fn start(mut parse: impl FnMut(usize) -> Option<T>) -> Self {
        Lookahead { ring: core::array::from_fn(&mut parse) }
    }

    /// Packet `i`'s parse, leaving packet i+N's (`ahead`) in its place.
    #[inline]
    pub(crate) fn take(&mut self, i: usize, ahead: Option<T>) -> Option<T> {
        let slot = self.ring.get_mut(i % N)?;
        core::mem::replace(slot, ahead)
    }
}

/// Packet `i`'s frame for a stage's lookahead: `None` past the burst, and
/// for multi-segment mbufs (counted; stages leave them untouched). Starts
/// loading packet i+1 on the way.
#[inline]
pub(crate) fn frame_ahead<'a>(burst: &'a Burst, i: usize, counters: &mut Counters) -> Option<&'a [u8]> {
    if i >= burst.len() {
        return None;
    }
    burst.prefetch(i + 1);
    let frame = burst.data(i);
    if frame.is_none() {
        counters.inc(Counter::multi_segment);
    }
    frame
}

/// A worker lcore's loop: poll each of its pipelines until `quit`.
/// With `idle_sleep`, a loop that found no packet sleeps that long (for
/// labs and shared machines; production nodes busy-poll).
pub fn run_worker(
    mut pipelines: Vec<Pipeline>,
    quit: Arc<AtomicBool>,
    mut clock: TscClock,
    idle_sleep: Option<std::time::Duration>,
) -> i32 {
    let mut burst = Burst::default();
    crate::dpdk::os::on_packet_path(true);
    while !quit.load(Ordering::Relaxed) {
        let mut received = 0;
        for pipeline in pipelines.iter_mut() {
            received += pipeline.poll(&mut burst, &mut clock);
        }
        if let (0, Some(pause)) = (received, idle_sleep) {
            std::thread::sleep(pause);
        }
    }
    crate::dpdk::os::on_packet_path(false);
    for pipeline in pipelines.iter_mut() {
        match &mut pipeline.stage {
            Stage::Sink(sink) => sink.finish(&mut clock, &mut pipeline.counters),
            Stage::Impair(impair) => impair.finish(),
            _ => {}
        }
        pipeline.counters.publish(&pipeline.shared);
    }
    0
}
