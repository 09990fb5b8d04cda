//! The decapsulating node of an IOAM domain: finds the namespace's trace
//! in every IPv6 packet ([`int_core::ioam::find`]), tracks its flow by
//! every sink's rules ([`crate::pipeline::sink_core`]), reports in
//! Telemetry Report 2.0 as an INT 2.1 sink does, and gives back the packet
//! as it came ([`int_core::ioam::decap`]).
//!
//! What the rules read of a trace: the oldest slot's node id and timestamp
//! as the source's (where the trace has no time, the Edge-to-Edge option's
//! entry time), every slot's node id, transit delay and queue depth for
//! the hop rule, the Edge-to-Edge option's packet number (its low 32 bits)
//! for loss. Loss reports carry their figures under int-node's default
//! Domain Specific ID, which collect reads unless told another.
//!
//! The frame the encapsulating node writes takes the fast path
//! ([`int_core::ioam::fast_decap`]: one look at fixed offsets, the slots'
//! words read in place, both headers removed in one move); any other the
//! general one, which reads the same of the fast path's frames.

use int_core::fast::L3_AT;
use int_core::hop_rule::{HopDigest, HopFigures, Untold, MAX_HOPS};
use int_core::ioam::decap::strip;
use int_core::ioam::fast_decap::FastDecap;
use int_core::ioam::find::{find, Found};
use int_core::ioam::{Domain, TimestampFormat};
use int_core::report::tr20::InType;

use crate::config::INT21_DOMAIN_ID;
use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::int21::report::{Packet, SinkReporter21, LATENCY_MD_BITS};
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{restored, Seen, SinkCore};
use crate::stats::{Counter, Counters};

pub struct IoamDecapStage {
    namespace: u16,
    timestamps: TimestampFormat,
    pub core: SinkCore<SinkReporter21>,
}

impl IoamDecapStage {
    pub fn new(domain: &Domain, setup: SinkSetup) -> Self {
        IoamDecapStage {
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
            let keep = match FastDecap::read(frame, self.namespace) {
                Some(fast) => self.take_fast(burst, i, &fast, burst_ns, counters),
                None => self.take(burst, i, burst_ns, counters),
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
        fast: &FastDecap,
        burst_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let Some(frame) = burst.data(i) else { return true };
        let (source_node, source_ns) = fast.source(frame, self.timestamps);
        let seen = Seen {
            sequence: fast.sequence().map(|n| n as u32),
            source_node,
            source_ns,
            hops: self.core.rules.settings.hops.digest(fast.hops(frame)),
            is_mx: false,
        };
        if fast.trace.header.overflow() {
            counters.inc(Counter::trace_overflow);
        }
        if let Some(why) = self.core.track(FlowRef::Key(&fast.flow), &seen, now_ns, counters) {
            if let Some(bytes) = frame.get(L3_AT..fast.report_end()) {
                let packet =
                    Packet { bytes, in_type: InType::Ipv6, rep_md_bits: LATENCY_MD_BITS, drop: None };
                self.core.reports.on_packet(packet, now_ns, why, counters);
            }
        }
        let restored_whole = matches!(burst.with_frame(i, |f| fast.strip(f)), Some(Some(_)));
        restored(restored_whole, false, counters)
    }

    /// Packet `i`: not traced, malformed (by policy), or traced: tracked,
    /// reported, and restored. Returns whether it goes on.
    fn take(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
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
        let seen = self.seen(frame, &found);
        if found.trace.header.overflow() {
            counters.inc(Counter::trace_overflow);
        }
        if let Some(why) = self.core.track(FlowRef::Key(&key), &seen, now_ns, counters) {
            if let Some(bytes) = frame.get(found.ip.l3..found.report_end()) {
                let packet =
                    Packet { bytes, in_type: InType::Ipv6, rep_md_bits: LATENCY_MD_BITS, drop: None };
                self.core.reports.on_packet(packet, now_ns, why, counters);
            }
        }
        let restored_whole = matches!(burst.with_frame(i, |f| strip(f, &found)), Some(Some(_)));
        restored(restored_whole, false, counters)
    }

    /// What the rules read of a trace: every element read once, the hop
    /// rule's figures newest first, and the oldest's (the encapsulating
    /// node's) id and time.
    fn seen(&self, frame: &[u8], found: &Found) -> Seen {
        let (mut figures, mut count, mut oldest) = ([None; MAX_HOPS], 0, None);
        for node in found.nodes(frame) {
            let hop = node.as_hop(self.timestamps);
            let told = hop.node_id.map(|id| HopFigures {
                node: id,
                latency: hop.hop_latency,
                queue: hop.queue.map(|(_, q)| q),
            });
            if let Some(slot) = figures.get_mut(count) {
                *slot = told;
            }
            count += 1;
            oldest = Some(hop);
        }
        let hops: Result<HopDigest, Untold> = match figures.get(..count) {
            Some(told) => self.core.rules.settings.hops.digest(told.iter().copied()),
            None => Err(Untold::TooMany),
        };
        Seen {
            // A 64-bit number's low half: the loss count wraps as a 32-bit one does.
            sequence: found.sequence().map(|n| n as u32),
            source_node: oldest.and_then(|hop| hop.node_id),
            source_ns: oldest.and_then(|hop| hop.ingress_timestamp).or(found.entered_ns(self.timestamps)),
            hops,
            is_mx: false,
        }
    }
}
