//! The decapsulating node of an IOAM domain: finds the namespace's trace
//! in every IPv6 packet ([`int_core::ioam::sink`]), tracks its flow by
//! every sink's rules ([`crate::pipeline::sink_core`]), reports in
//! Telemetry Report 2.0 as an INT 2.1 sink does, and gives back the packet
//! as it came ([`int_core::ioam::sink::strip`]).
//!
//! What the rules read of a trace: the oldest slot's node id and timestamp
//! as the source's (where the trace has no time, the Edge-to-Edge option's
//! entry time), every slot's node id, transit delay and queue depth for
//! the hop rule (only in the packets its `sink.hops.sample` takes,
//! decided by `HopRule::sampled` as at an INT 2.1 sink; of the others, no
//! slot but the oldest), the
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
use int_core::hop_rule::HopFigures;
use int_core::ioam::fast_sink::FastSink;
use int_core::ioam::sink::{find, strip, Found};
use int_core::ioam::{Domain, TimestampFormat};
use int_core::report::tr20::InType;

use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::report::tr20::{Packet, SinkReporter21, LATENCY_MD_BITS};
use crate::pipeline::report::NODE_DOMAIN_ID;
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
            core: SinkCore::tr20(setup, NODE_DOMAIN_ID),
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        self.core.begin_burst(burst, burst_ns);
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
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
        let rule = &self.core.rules.settings.reports.hops;
        let seen = Seen {
            sequence,
            source_node,
            source_ns,
            hops: rule.sampled(sequence, fast.flow.phase(), |rule| rule.digest(fast.hops(frame))),
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
            hops: self
                .core
                .rules
                .settings
                .reports
                .hops
                .sampled(sequence, phase, |rule| rule.digest(figures())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::sink_core::testing;
    use int_core::craft::PacketSpec;
    use int_core::hop_rule::{HopRule, Sample, Untold};
    use int_core::int21::source::SourceConfig;
    use int_core::int21::{self, HeaderType, HopMetadata, Instructions, Marking, SourceOnly};
    use int_core::ioam::e2e::E2eType;
    use int_core::ioam::node::NodeData;
    use int_core::ioam::source;
    use int_core::ioam::trace::TraceType;

    /// The INT 2.1 domain's UDP port, not the flow's (5001): its source
    /// moves the flow's port into the shim.
    const INT_PORT: u16 = 5000;

    /// One IPv6 UDP flow's packet, in a buffer with headroom; `f` runs on
    /// it; the frame after.
    fn traced(f: impl FnOnce(&mut FrameBuf<'_>)) -> Vec<u8> {
        let (a, b) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
        let frame = PacketSpec::udp6(a, b, 4000, 5001, 32).build();
        let mut buffer = vec![0u8; 256 + frame.len()];
        buffer[256..].copy_from_slice(&frame);
        let mut view = FrameBuf::new(&mut buffer, 256, frame.len()).unwrap();
        f(&mut view);
        view.frame().to_vec()
    }

    /// An IOAM domain that numbers packets, its source filling one of two
    /// slots with node 1.
    fn ioam_source(frame: &mut FrameBuf<'_>, domain: &Domain, n: u32) {
        let element = NodeData { node_id: Some(1), ..NodeData::default() };
        let added = source::insert(frame, &domain.plan(1500), &element, |_, _| Some(u64::from(n)));
        assert!(matches!(added, Ok(source::Encapped::Added(_))), "{added:?}");
    }

    fn int21_domain() -> int21::Domain {
        int21::Domain {
            marking: Marking::UdpPort(INT_PORT),
            tcp_placement: Default::default(),
            source_only: SourceOnly::sequence(crate::pipeline::report::NODE_DOMAIN_ID),
        }
    }

    /// An INT 2.1 source that numbers packets and pushes its own hop, node 1.
    fn int21_source(frame: &mut FrameBuf<'_>, domain: &int21::Domain, n: u32) {
        let config = SourceConfig {
            domain: *domain,
            header_type: HeaderType::Md,
            instructions: Instructions::NODE_ID,
            ds_words: 0,
            max_hops: 4,
            own_hop: true,
            domain_id: crate::pipeline::report::NODE_DOMAIN_ID,
            ds_instructions: int21::source_only::SEQUENCE,
            ds_flags: 0,
            discard: false,
            max_ip_len: 1500,
        };
        let hop = HopMetadata { node_id: Some(1), ..HopMetadata::default() };
        let plan = int21::source::plan(frame.frame(), &config).unwrap();
        int21::source::insert(frame, &plan, &config, &hop, n).unwrap();
    }

    /// Both protocols' sinks leave the sample to `HopRule::sampled`: for
    /// the same flow, packet numbers and samples, the INT 2.1 sink's hops
    /// and the IOAM sink's (general paths; each fast path is held to its
    /// general one by int-core's tests/fast_path21.rs and fast_ioam.rs) are
    /// what it gives, skipped for the same packets.
    #[test]
    fn both_sinks_decide_the_hop_sample_with_hop_rule_sampled() {
        let ioam = Domain {
            namespace: 123,
            trace_type: TraceType::HOP_LIM_NODE_ID,
            nodes: 2,
            timestamps: TimestampFormat::Posix,
            e2e: E2eType::SEQUENCE_32,
        };
        // Either packet carries one hop, node 1's: the digest both are to get.
        let one_hop = |rule: &HopRule| {
            rule.digest([Some(HopFigures { node: 1, latency: None, queue: None })].into_iter())
        };
        let int21 = int21_domain();
        let mut skipped = 0;
        for every in [1, 2, 3, 7, 16] {
            let rule = HopRule { sample: Sample::every(every), ..HopRule::default() };
            let (mut setup, _receiver) = testing::setup();
            setup.settings.reports.hops = rule;
            let sink = IoamSinkStage::new(&ioam, setup);
            for n in 1..=64u32 {
                let frame = traced(|f| ioam_source(f, &ioam, n));
                let found = find(&frame, ioam.namespace).unwrap().unwrap();
                let phase = found.flow(&frame).phase();
                let expected = rule.sampled(Some(n), phase, one_hop);
                assert_eq!(sink.seen(&frame, &found, phase).hops, expected, "IOAM, every {every}, n {n}");
                let frame = traced(|f| int21_source(f, &int21, n));
                let extracted = int21::sink::extract(&frame, &int21, &rule).unwrap().unwrap();
                assert_eq!((extracted.sequence, extracted.flow.phase()), (Some(n), phase), "the same inputs");
                assert_eq!(extracted.hops, expected, "INT 2.1, every {every}, n {n}");
                skipped += usize::from(expected == Err(Untold::Skipped));
            }
        }
        assert!((64..256).contains(&skipped), "{skipped} of 320 packets skipped");
    }
}
