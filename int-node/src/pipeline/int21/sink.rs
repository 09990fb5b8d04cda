//! The sink stage of an INT 2.1 domain: strips INT from every INT 2.1
//! packet, restores it, and reports to the collector in Telemetry Report
//! 2.0.
//!
//! The rule that maps our latency events onto TR 2.0: a latency report is
//! an individual report of RepType 1 (INT), InType 4 (IPv4) or 5 (IPv6), F set (D as
//! well when the packet carried D), RepMdBits 0x4C00: this node's level 1
//! ports and its ingress and egress timestamps (8 bytes, epoch ns; the node
//! id is in the group header). The inner contents are the packet as
//! received from its IP header through the INT block (and, with NPT 2,
//! the original L4 header's first bytes), so the collector reads the whole
//! stack; one-way latency is the report's ingress timestamp minus the
//! bottom hop's (the source's) ingress timestamp. A report goes out when a
//! flow's latency changes by the sink's rule, as for INT 0.5; when its
//! path (its hops' node ids) changes (`sink.path_changes`); when a hop's
//! latency or queue class changes, or a hop's queue is over the alert
//! threshold, within a quota (`sink.hops`): see [`int_core::hop_rule`].
//! The report is the same in every case; its counter says why.
//!
//! Losses: where the domain's sources number packets (source-only
//! metadata), the sink tracks each flow's numbers as an INT 0.5 sink tracks
//! Host-INT's, and reports the losses it declares by the rule of
//! [`int_core::report::tr20_loss`]. The reports of a burst or a sweep step
//! share one datagram. INT-MX packets are stripped and reported with this
//! node's metadata as every MX node reports (see [`crate::pipeline::report::tr20`]).
//! The flow table, the rules and the sweep are every sink's
//! ([`crate::pipeline::sink_core`]).

use int_core::flow::FlowKey;
use int_core::int21::fast_sink::{FastArrival, FastSink};
use int_core::int21::{sink, Arrival, Domain};
use int_core::report::tr20::{self, DropInfo};

use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::report::tr20::{in_type_of, Packet, SinkReporter21, LATENCY_MD_BITS};
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{restored, Seen, SinkCore};
use crate::stats::{Counter, Counters};

pub struct Sink21Stage {
    pub domain: Domain,
    pub core: SinkCore<SinkReporter21>,
}

impl Sink21Stage {
    pub fn new(domain: Domain, setup: SinkSetup) -> Self {
        Sink21Stage { domain, core: SinkCore::tr20(setup, domain.source_only.domain_id) }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        self.core.begin_burst(burst, burst_ns);
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            let keep = match FastSink::find(frame, &self.domain, &self.core.rules.settings.reports.hops) {
                FastArrival::Int(fast) => self.take_fast(burst, i, &fast, burst_ns, counters),
                FastArrival::NotInt => {
                    counters.inc(Counter::not_int);
                    true
                }
                FastArrival::Other => self.take_general(burst, i, burst_ns, counters),
            };
            if !keep {
                drop |= 1 << i;
            }
        }
        self.core.end_burst(burst, drop, counters);
    }

    /// Packet `i`, INT-MD of the fast path's shape ([`FastSink::find`]):
    /// tracked, reported when its flow's latency changed (read again by the
    /// general path for the report, a packet in a hundred or so) or when it
    /// carries D, and restored. Returns whether it goes on.
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
        let key = if fast.frame.is_ipv6() { ipv6_key(burst, i, fast) } else { None };
        let flow = key.as_ref().map_or(FlowRef::Words(&fast.frame.flow), FlowRef::Key);
        let seen = Seen {
            sequence: fast.sequence,
            source_node: fast.source_node,
            source_ns: fast.source_ns,
            hops: fast.hops,
            is_mx: false,
        };
        let why = self
            .core
            .track(flow, &seen, now_ns, counters)
            .or(fast.discard.then_some(Counter::reports_latency));
        if let Some(why) = why {
            let hops = &self.core.rules.settings.reports.hops;
            if let Some(Ok(Some(found))) = burst.data(i).map(|frame| sink::extract(frame, &self.domain, hops))
            {
                if let Some(frame) = burst.data(i) {
                    self.report(frame, &found, now_ns, why, counters);
                }
            }
        }
        let restored_whole = matches!(burst.with_frame(i, |f| fast.strip(f)), Some(Some(_)));
        restored(restored_whole, fast.discard, counters)
    }

    /// Packet `i`, read by the general path: not INT, malformed (dropped
    /// with a drop report, or forwarded, by policy), or INT 2.1 to track,
    /// report and restore. Returns whether it goes on.
    fn take_general(&mut self, burst: &mut Burst, i: usize, burst_ns: u64, counters: &mut Counters) -> bool {
        let Some(frame) = burst.data(i) else { return true };
        let found = match sink::classify(frame, &self.domain, &self.core.rules.settings.reports.hops) {
            Ok(Arrival::Int(found)) => found,
            Ok(Arrival::NotInt) => {
                counters.inc(Counter::not_int);
                return true;
            }
            Ok(Arrival::MarkedNotInt) => {
                counters.inc(Counter::marked_not_int);
                return true;
            }
            Err(error) => return self.core.malformed(frame, error, burst_ns, counters),
        };
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let seen = Seen {
            sequence: found.sequence,
            source_node: found.source_hop.and_then(|hop| hop.node_id),
            source_ns: found.source_hop.and_then(|hop| hop.ingress_timestamp),
            hops: found.hops,
            is_mx: found.is_mx,
        };
        // Probes (D) are reported every time: the report is their point.
        let always = (found.is_mx || found.discard).then_some(Counter::reports_latency);
        if let Some(why) = self.core.track(FlowRef::Key(&found.flow), &seen, now_ns, counters).or(always) {
            if let Some(frame) = burst.data(i) {
                self.report(frame, &found, now_ns, why, counters);
            }
        }
        let restored_whole = matches!(burst.with_frame(i, |f| sink::strip(f, &found)), Some(Some(_)));
        restored(restored_whole, found.discard, counters)
    }

    /// This node's report on a packet: its ports and timestamps (and hop
    /// latency to its burst's foretold departure), for a latency change or an INT-MX packet.
    fn report(
        &mut self,
        frame: &[u8],
        found: &sink::Extracted,
        now_ns: u64,
        why: Counter,
        counters: &mut Counters,
    ) {
        let Some(bytes) = frame.get(found.ip.l3..found.report_end()) else { return };
        let (rep_md_bits, kind) = if found.is_mx {
            (found.instructions.bits(), Counter::reports_mx)
        } else {
            (LATENCY_MD_BITS, why)
        };
        let drop = found.discard.then_some(DropInfo { queue_id: 0, reason: tr20::DROP_DISCARD_ASKED });
        let packet = Packet { bytes, in_type: in_type_of(found.ip.version), rep_md_bits, drop };
        self.core.reports.on_packet(packet, now_ns, kind, counters);
    }
}

/// The key of packet `i`'s IPv6 flow, read from the frame: the table keeps
/// an IPv6 flow's addresses beside its slot, so such a flow is named by
/// its key. Out of line, to keep IPv4's path as short as it was.
#[inline(never)]
fn ipv6_key(burst: &Burst, i: usize, fast: &FastSink) -> Option<FlowKey> {
    burst.data(i).and_then(|frame| fast.frame.flow_key(frame))
}
