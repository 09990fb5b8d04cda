//! The terminator of an IFA zone: finds IFA in every packet
//! ([`int_core::ifa::sink::find`]), tracks its flow by every sink's rules
//! ([`crate::pipeline::sink_core`]), reports in Telemetry Report 2.0 as
//! the INT 2.1 and IOAM sinks do, and gives back the packet as it came
//! ([`int_core::ifa::sink::strip`], under the zone's L4 rule). A probe
//! copy (I clear) is tracked and reported, then dropped (counted
//! `probes_dropped`): only the live packets go on.
//!
//! What the rules read of a stack: the oldest hop's (the initiator's)
//! Device ID and RX time as the source's (the time read near this node's
//! clock: a hop keeps 20 bits of seconds), every hop's Device ID,
//! residence time and congestion for the hop rule (in the packets its
//! `sink.hops.sample` takes). IFA numbers no packet: no loss is declared
//! (`no_sequence` counts the packets).
//!
//! A packet marked as IFA and refused (every [`int_core::ifa::Refusal`],
//! counted by reason) cannot be given back as it came: it is dropped
//! (`malformed_dropped`), never forwarded with IFA in it, never reported.

use int_core::flow::FlowKey;
use int_core::hop::Hop;
use int_core::hop_rule::HopFigures;
use int_core::ifa::sink::{find, strip};
use int_core::ifa::{Domain, L4Rule, Located};
use int_core::locate::IpVersion;

use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::report::tr20::{HopsPacket, SinkReporter21, REPORTED_HOPS};
use crate::pipeline::report::NODE_DOMAIN_ID;
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{restored, Seen, SinkCore};
use crate::stats::{Counter, Counters};

pub struct IfaSinkStage {
    domain: Domain,
    rule: L4Rule,
    pub core: SinkCore<SinkReporter21>,
}

impl IfaSinkStage {
    pub fn new(domain: Domain, rule: L4Rule, setup: SinkSetup) -> Self {
        IfaSinkStage { domain, rule, core: SinkCore::tr20(setup, NODE_DOMAIN_ID) }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        self.core.begin_burst(burst, burst_ns);
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            let keep = match find(frame, &self.domain) {
                Ok(Some(found)) => self.take(burst, i, &found, burst_ns, counters),
                Ok(None) => {
                    counters.inc(Counter::not_int);
                    true
                }
                Err(refused) => {
                    counters.inc(Counter::refused(refused.reason));
                    counters.inc(Counter::malformed_dropped);
                    false
                }
            };
            if !keep {
                drop |= 1 << i;
            }
        }
        self.core.end_burst(burst, drop, counters);
    }

    /// Packet `i`, IFA as `found` locates it: tracked, reported where the
    /// rules say, and restored (a live packet) or dropped (a probe).
    /// Returns whether it goes on.
    fn take(
        &mut self,
        burst: &mut Burst,
        i: usize,
        found: &Located,
        burst_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let now_ns = self.core.arrival_ns(burst, i, burst_ns);
        let Some(frame) = burst.data(i) else { return true };
        let key = found.flow(frame);
        let seen = self.seen(frame, found, &key, now_ns);
        if let Some(why) = self.core.track(FlowRef::Key(&key), &seen, now_ns, counters) {
            if let Some(frame) = burst.data(i) {
                self.report(frame, found, &key, now_ns, why, counters);
            }
        }
        if !found.inband() {
            counters.inc(Counter::probes_dropped);
            return false;
        }
        let rule = self.rule;
        let restored_whole = matches!(burst.with_frame(i, |f| strip(f, found, rule)), Some(Some(_)));
        restored(restored_whole, false, counters)
    }

    /// The report on a packet: its hops, newest first, in the shared
    /// shape ([`int_core::ifa::HopRepr::as_hop`], the RX times read near
    /// this node's clock), as [`SinkReporter21::on_hops`] carries them.
    fn report(
        &mut self,
        frame: &[u8],
        found: &Located,
        key: &FlowKey,
        now_ns: u64,
        why: Counter,
        counters: &mut Counters,
    ) {
        let mut hops = [Hop::default(); REPORTED_HOPS];
        let mut count = 0;
        for (slot, hop) in hops.iter_mut().zip(found.stack(frame).hops()) {
            *slot = hop.as_hop(now_ns);
            count += 1;
        }
        let l3 = found.ip.l3;
        let (tos, ttl) = match found.ip.version {
            IpVersion::V4 => (frame.get(l3 + 1), frame.get(l3 + 8)),
            IpVersion::V6 => (None, frame.get(l3 + 7)),
        };
        let tos = tos.copied().unwrap_or(found.ip.tos);
        let packet = HopsPacket {
            flow: key,
            tos,
            ttl: ttl.copied().unwrap_or(0),
            hops: hops.get(..count).unwrap_or_default(),
        };
        self.core.reports.on_hops(packet, now_ns, why, counters);
    }

    /// What the rules read of a stack: the oldest hop's Device ID and RX
    /// time, and, for a packet the hop rule's sample takes, every hop's
    /// figures newest first.
    fn seen(&self, frame: &[u8], found: &Located, key: &FlowKey, now_ns: u64) -> Seen {
        let stack = found.stack(frame);
        let oldest = stack.hops().last();
        let figures = || {
            stack.hops().map(|hop| {
                Some(HopFigures {
                    node: hop.device_id,
                    latency: Some(hop.residence_ns),
                    queue: Some(u32::from(hop.congestion)),
                })
            })
        };
        let rule = &self.core.rules.settings.reports.hops;
        Seen {
            sequence: None,
            source_node: oldest.map(|hop| hop.device_id),
            source_ns: oldest.map(|hop| hop.rx_ns(now_ns)),
            hops: rule.sampled(None, key.phase(), |rule| rule.digest(figures())),
            is_mx: false,
        }
    }
}
