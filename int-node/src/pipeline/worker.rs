//! A pipeline and the worker lcore's loop that polls it: one RX queue to
//! one TX queue through its stage, run to completion, a burst at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::ifa::Ifa;
use super::int05::Int05;
use super::int21::Int21;
use super::ioam::Ioam;
use super::stage::Stage;
use super::{capture, reload};
use crate::clock::Clock;
use crate::dpdk::mbuf::Burst;
use crate::dpdk::port::{PortId, QueueId};
use crate::stats::{Counter, Counters, SharedCounters};

/// How often a generator offers a burst again before giving up on it
/// (about a millisecond): a stopped consumer costs drops, not a hang.
const GENERATOR_TX_ATTEMPTS: u32 = 20_000;

/// How often a cloning source offers its originals again when its copies
/// fill the TX queue (about 100 us): the consumer takes the copies' room,
/// and the originals are not refused for them.
const ORIGINAL_TX_ATTEMPTS: u32 = 2_000;

pub struct Pipeline {
    pub rx: (PortId, QueueId),
    pub tx: (PortId, QueueId),
    pub stage: Stage,
    pub counters: Counters,
    pub shared: Arc<SharedCounters>,
    /// New settings from a reload.
    pub inbox: reload::Inbox,
    /// Packet capture of the RX or TX port, where configured.
    pub taps: capture::Taps,
}

impl Pipeline {
    /// One burst: receive, transform, send. Returns packets received.
    #[inline]
    pub fn poll(&mut self, burst: &mut Burst, clock: &mut Clock) -> usize {
        let updates = self.inbox.apply(|update| self.stage.apply(update));
        self.counters.add(Counter::settings_updates, updates);
        let received = burst.rx(self.rx.0, self.rx.1);
        // The lcore's clock, shown by each of its pipelines.
        self.counters.set(Counter::clock_steps_back, clock.steps_back());
        // The sink reads the clock once per poll, for its sweep and burst.
        let sink_ns = if self.stage.is_sink() { clock.now_ns() } else { 0 };
        match &mut self.stage {
            // The sweep runs even when no packet came: losses are reported
            // on time for flows that went quiet.
            Stage::Int05(Int05::Sink(sink)) => sink.core.sweep(sink_ns, &mut self.counters),
            Stage::Int21(Int21::Sink(sink)) => sink.core.sweep(sink_ns, &mut self.counters),
            Stage::Ioam(Ioam::Sink(decap)) => decap.core.sweep(sink_ns, &mut self.counters),
            Stage::Ifa(Ifa::Sink(sink)) => sink.core.sweep(sink_ns, &mut self.counters),
            #[cfg(feature = "lab")]
            Stage::Impair(impair) if received == 0 => impair.release_due(clock, &mut self.counters),
            _ => {}
        }
        if received == 0 {
            self.counters.inc(Counter::empty_polls);
            self.age(clock);
            self.counters.publish(&self.shared);
            return 0;
        }
        self.counters.add(Counter::rx_packets, received as u64);
        let capture_ns = if self.taps.any() { clock.now_ns() } else { 0 };
        if let Some(tap) = &mut self.taps.rx {
            tap.take(burst, capture_ns, &mut self.counters);
        }
        self.process(burst, clock, sink_ns);
        if let Some(tap) = &mut self.taps.tx {
            tap.take(burst, capture_ns, &mut self.counters);
        }
        let (sent, dropped) = match &self.stage {
            // A generator goes at the pace of what it feeds.
            Stage::Generate(_) => burst.tx_patiently(self.tx.0, self.tx.1, GENERATOR_TX_ATTEMPTS),
            stage if stage.clones().is_some_and(|c| c.in_the_way()) => {
                burst.tx_patiently(self.tx.0, self.tx.1, ORIGINAL_TX_ATTEMPTS)
            }
            _ => burst.tx(self.tx.0, self.tx.1),
        };
        self.counters.add(Counter::tx_packets, sent as u64);
        self.counters.add(Counter::tx_dropped, dropped as u64);
        self.send_clones(dropped > 0, capture_ns);
        self.counters.publish(&self.shared);
        received
    }

    /// Sources age their flows on idle polls too (sinks sweep on every
    /// poll).
    #[inline]
    fn age(&mut self, clock: &mut Clock) {
        match &mut self.stage {
            Stage::Int05(Int05::Source(source)) => source.age(clock.now_ns(), &mut self.counters),
            Stage::Int21(Int21::Source(source)) => source.age(clock.now_ns(), &mut self.counters),
            Stage::Int21(Int21::Postcard(postcard)) => postcard.age(clock.now_ns(), &mut self.counters),
            Stage::Ioam(Ioam::Source(encap)) => encap.age(clock.now_ns(), &mut self.counters),
            Stage::Ifa(Ifa::Source(source)) => source.age(clock.now_ns(), &mut self.counters),
            _ => {}
        }
    }

    /// The stage's work on a burst (one `match`, no dynamic dispatch);
    /// `sink_ns`: the clock read for a sink's burst (0 for other stages).
    #[inline(always)]
    fn process(&mut self, burst: &mut Burst, clock: &mut Clock, sink_ns: u64) {
        match &mut self.stage {
            Stage::Forward => {}
            Stage::Int05(Int05::Source(source)) => source.process(burst, clock, &mut self.counters),
            Stage::Int05(Int05::Transit(transit)) => transit.process(burst, clock, &mut self.counters),
            Stage::Int05(Int05::Sink(sink)) => sink.process(burst, sink_ns, &mut self.counters),
            Stage::Int21(Int21::Source(source)) => source.process(burst, clock, &mut self.counters),
            Stage::Int21(Int21::Transit(transit)) => transit.process(burst, clock, &mut self.counters),
            Stage::Int21(Int21::Sink(sink)) => sink.process(burst, sink_ns, &mut self.counters),
            Stage::Int21(Int21::Postcard(postcard)) => postcard.process(burst, clock, &mut self.counters),
            Stage::Ioam(Ioam::Source(encap)) => encap.process(burst, clock, &mut self.counters),
            Stage::Ioam(Ioam::Transit(transit)) => transit.process(burst, clock, &mut self.counters),
            Stage::Ioam(Ioam::Sink(decap)) => decap.process(burst, sink_ns, &mut self.counters),
            Stage::Ifa(Ifa::Source(source)) => source.process(burst, clock, &mut self.counters),
            Stage::Ifa(Ifa::Transit(transit)) => transit.process(burst, clock, &mut self.counters),
            Stage::Ifa(Ifa::Sink(sink)) => sink.process(burst, sink_ns, &mut self.counters),
            #[cfg(feature = "lab")]
            Stage::Impair(impair) => impair.process(burst, clock, &mut self.counters),
            Stage::Reference(reference) => reference.process(burst, sink_ns, &mut self.counters),
            Stage::Generate(generate) => generate.process(burst, clock, &mut self.counters),
        }
    }

    /// A cloning source's copies, sent after the burst of their originals
    /// (and captured as they leave, as the burst was), into the room the
    /// originals left: none where the queue refused an original
    /// (`originals_refused`) or copies filled it at the last poll
    /// ([`super::clones::Clones`]). Copies that do not leave give their
    /// numbers back.
    #[inline]
    fn send_clones(&mut self, originals_refused: bool, capture_ns: u64) {
        let Some(clones) = self.stage.clones_mut() else { return };
        let count = clones.out.len();
        let held = clones.hold_back(originals_refused);
        let (sent, dropped) = if held > 0 {
            (0, held)
        } else if count > 0 {
            if let Some(tap) = &mut self.taps.tx {
                tap.take(&clones.out, capture_ns, &mut self.counters);
            }
            let (sent, dropped) = clones.out.tx(self.tx.0, self.tx.1);
            clones.refused(dropped);
            (sent, dropped)
        } else {
            return;
        };
        // Copies that do not leave are counted apart: tx_dropped says
        // originals only.
        self.counters.add(Counter::tx_packets, sent as u64);
        self.counters.add(Counter::clones_dropped, dropped as u64);
        if dropped > 0 {
            self.stage.give_back(sent, count);
        }
    }
}

/// A worker lcore's loop: poll each of its pipelines until `quit`.
/// With `idle_sleep`, a loop that found no packet sleeps that long (for
/// labs and shared machines; production nodes busy-poll).
pub fn run_worker(
    mut pipelines: Vec<Pipeline>,
    quit: Arc<AtomicBool>,
    mut clock: Clock,
    idle_sleep: Option<std::time::Duration>,
) -> i32 {
    let mut burst = Burst::default();
    int_os::alloc::on_packet_path(true);
    while !quit.load(Ordering::Relaxed) {
        let mut received = 0;
        for pipeline in pipelines.iter_mut() {
            received += pipeline.poll(&mut burst, &mut clock);
        }
        if let (0, Some(pause)) = (received, idle_sleep) {
            std::thread::sleep(pause);
        }
    }
    int_os::alloc::on_packet_path(false);
    for pipeline in pipelines.iter_mut() {
        match &mut pipeline.stage {
            Stage::Int05(Int05::Sink(sink)) => sink.core.finish(&mut clock, &mut pipeline.counters),
            Stage::Int21(Int21::Sink(sink)) => sink.core.finish(&mut clock, &mut pipeline.counters),
            Stage::Ioam(Ioam::Sink(decap)) => decap.core.finish(&mut clock, &mut pipeline.counters),
            Stage::Ifa(Ifa::Sink(sink)) => sink.core.finish(&mut clock, &mut pipeline.counters),
            #[cfg(feature = "lab")]
            Stage::Impair(impair) => impair.finish(),
            _ => {}
        }
        pipeline.counters.publish(&pipeline.shared);
    }
    0
}
