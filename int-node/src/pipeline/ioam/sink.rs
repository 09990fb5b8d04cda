//! The decapsulating node of an IOAM domain: finds the namespace's trace
//! in every IPv6 packet ([`int_core::ioam::sink`]), tracks its flow by
//! every sink's rules ([`crate::pipeline::sink_core`]), reports in
//! Telemetry Report 2.0 as an INT 2.1 sink does, and gives back the packet
//! as it came ([`int_core::ioam::sink::strip`]).
//!
//! What the rules read of a trace: the oldest slot's node id and timestamp
//! as the source's (where the trace has no time, the Edge-to-Edge option's
//! entry time), every slot's node id, transit delay and queue depth for
//! the hop rule (only in the packets its `sink.hops.sample` takes, as at
//! an INT 2.1 sink; of the others, no slot but the oldest), the
//! Edge-to-Edge option's packet number (its low 32 bits) for loss and the
//! sample. Loss reports carry their figures under int-node's default
//! Domain Specific ID, which collect reads unless told another.
//!
//! The frame the encapsulating node writes takes the fast path
//! ([`int_core::ioam::fast_sink`]: one look at fixed offsets, the slots'
//! words read in place, both headers removed in one move); any other the
//! general one, which reads the same of the fast path's frames.

use int_core::fast::L3_AT;
use std::ops::Range;

use int_core::flow::FlowKey;
use int_core::frame::FrameBuf;
use int_core::hop_rule::{HopDigest, HopFigures, HopRule, Untold};
use int_core::ioam::fast_sink::FastSink;
use int_core::ioam::sink::{find, strip, Found};
use int_core::ioam::{Domain, TimestampFormat};
use int_core::report::tr20::InType;

use crate::config::INT21_DOMAIN_ID;
use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::int21::report::{Packet, SinkReporter21, LATENCY_MD_BITS};
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{restored, Seen, SinkCore};
use crate::stats::{Counter, Counters};

pub struct IoamSinkStage {
    namespace: u16,
    timestamps: TimestampFormat,
    pub core: SinkCore<SinkReporter21>,
}

impl IoamSinkStage {
    pub fn new(domain: &Domain, setup: SinkSetup) -> Self {
        IoamSinkStage {
            namespace: domain.namespace,
            timestamps: domain.timestamps,
            core: SinkCore::tr20(setup, INT21_DOMAIN_ID),
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        self.core.begin_burst(burst, burst_ns);
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frame_ahead(burst, i, counters) else { continue };
            let keep = match FastSink::find(frame, self.namespace) {
                Some(fast) => self.take_fast(burst, i, &fast, burst_ns, counters),
                None => self.take_general(burst, i, burst_ns, counters),
            };
            if !keep {
                drop |= 1 << i;
            }
        }
        self.core.end_burst(burst, drop, counters);
    }

    /// Packet `i`, of the fast path's shape: tracked, reported, and
    /// restored. Returns whether it goes on.
    #[inline(always)]
    fn take_fast(
        &mut self,
        burst: &mut Burst,
        i: usize,
        fast: &FastSink,
        burst_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let Some(frame) = burst.data(i) else { return true };
        let sequence = fast.sequence().map(|n| n as u32);
        let (source_node, source_ns) = fast.source(frame, self.timestamps);
        let seen = Seen {
            sequence,
            source_node,
            source_ns,
            hops: sampled(&self.core.rules.settings.hops, sequence, fast.flow.phase(), || fast.hops(frame)),
            is_mx: false,
        };
        let overflow = fast.trace.header.overflow();
        let traced = Traced { key: &fast.flow, seen, overflow, report: L3_AT..fast.report_end() };
        self.track_and_restore(burst, i, traced, now_ns, counters, |f| fast.strip(f))
    }

    /// Packet `i`: not traced, malformed (by policy), or traced: tracked,
    /// reported, and restored. Returns whether it goes on.
    fn take_general(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some(frame) = burst.data(i) else { return true };
        let found = match find(frame, self.namespace) {
            Ok(Some(found)) => found,
            Ok(None) => {
                counters.inc(Counter::not_int);
                return true;
            }
            Err(error) => return self.core.malformed(frame, error, burst_ns, counters),
        };
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let Some(frame) = burst.data(i) else { return true };
        let key = found.flow(frame);
        let seen = self.seen(frame, &found, key.phase());
        let overflow = found.trace.header.overflow();
        let traced = Traced { key: &key, seen, overflow, report: found.ip.l3..found.report_end() };
        self.track_and_restore(burst, i, traced, now_ns, counters, |f| strip(f, &found))
    }

    /// What both paths do with a traced packet once read: count an
    /// Overflow, track its flow, report it where the rules say (the
    /// frame read again only then), and take the trace out with `strip`.
    /// Returns whether it goes on.
    #[inline(always)]
    fn track_and_restore(
        &mut self,
        burst: &mut Burst,
        i: usize,
        traced: Traced<'_>,
        now_ns: u64,
        counters: &mut Counters,
        strip: impl FnOnce(&mut FrameBuf<'_>) -> Option<usize>,
    ) -> bool {
        if traced.overflow {
            counters.inc(Counter::trace_overflow);
        }
        if let Some(why) = self.core.track(FlowRef::Key(traced.key), &traced.seen, now_ns, counters) {
            if let Some(bytes) = burst.data(i).and_then(|frame| frame.get(traced.report)) {
                let packet =
                    Packet { bytes, in_type: InType::Ipv6, rep_md_bits: LATENCY_MD_BITS, drop: None };
                self.core.reports.on_packet(packet, now_ns, why, counters);
            }
        }
        let restored_whole = matches!(burst.with_frame(i, strip), Some(Some(_)));
        restored(restored_whole, false, counters)
    }

    /// What the rules read of a trace: the oldest element's (the
    /// encapsulating node's) id and time, and, for a packet the hop rule's
    /// sample takes, every element's figures newest first.
    fn seen(&self, frame: &[u8], found: &Found, phase: u32) -> Seen {
        // A 64-bit number's low half: the loss count wraps as a 32-bit one does.
        let sequence = found.sequence().map(|n| n as u32);
        let oldest = found.nodes(frame).next_back().map(|node| node.as_hop(self.timestamps));
        let figures = || {
            found.nodes(frame).map(|node| {
                let hop = node.as_hop(self.timestamps);
                hop.node_id.map(|id| HopFigures {
                    node: id,
                    latency: hop.hop_latency,
                    queue: hop.queue.map(|(_, q)| q),
                })
            })
        };
        Seen {
            sequence,
            source_node: oldest.and_then(|hop| hop.node_id),
            source_ns: oldest.and_then(|hop| hop.ingress_timestamp).or(found.entered_ns(self.timestamps)),
            hops: sampled(&self.core.rules.settings.hops, sequence, phase, figures),
            is_mx: false,
        }
    }
}

/// A traced packet as both paths read it, for [`IoamSinkStage::track_and_restore`].
struct Traced<'a> {
    key: &'a FlowKey,
    seen: Seen,
    overflow: bool,
    /// The report's copy of the packet: its IPv6 header through the upper
    /// layer's first 8 bytes.
    report: Range<usize>,
}

/// The hop rule's digest of `hops` for a packet its sample takes
/// (`sequence`: the packet's number; `phase`: its flow's), as the INT 2.1
/// sink's; else
/// [`Untold::Skipped`], and `hops` is never called: a sampled-out packet
/// reads no element's figures.
#[inline(always)]
fn sampled<I: Iterator<Item = Option<HopFigures>>>(
    rule: &HopRule,
    sequence: Option<u32>,
    phase: u32,
    hops: impl FnOnce() -> I,
) -> Result<HopDigest, Untold> {
    if rule.sample.takes(sequence, phase) {
        rule.digest(hops())
    } else {
        Err(Untold::Skipped)
    }
}
