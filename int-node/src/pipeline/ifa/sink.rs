//! The terminator of an IFA zone: finds IFA in every packet (a packet of
//! the fast path's shape at fixed offsets, [`FastSink::find`], every
//! other by the walk, [`int_core::ifa::sink::find`]), tracks its flow by every sink's rules
//! ([`crate::pipeline::sink_core`]), reports in Telemetry Report 2.0 as
//! the INT 2.1 and IOAM sinks do (the packet as it came, with its IFA, as
//! inner contents), or under `int.report: ipfix` in IPFIX
//! with Broadcom's terminator template ([`IfaIpfixReporter`]), and gives
//! back the packet as it came ([`int_core::ifa::sink::strip`], under the
//! zone's L4 rule). A probe copy (I clear) is tracked and reported, then
//! dropped (counted `probes_dropped`): only the live packets go on.
//!
//! An IPFIX record carries the IFA headers and stack and the packet
//! without its IFA (Broadcom's `RX_PKT_NO_IFA`): the stack is copied into
//! the stage's own buffer before the strip removes it, the record made
//! from the stripped frame (a probe is stripped too, then dropped). A
//! packet that cannot be stripped (a shared mbuf) is not reported in IPFIX.
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

use int_core::hop_rule::HopFigures;
use int_core::ifa::fast_sink::FastSink;
use int_core::ifa::sink::{find, strip};
use int_core::ifa::{Domain, L4Rule, Located};
use int_core::report::ifa_ipfix::HEADERS_LEN;

use crate::dpdk::mbuf::Burst;
use crate::flow_table::FlowRef;
use crate::pipeline::report::ifa_ipfix::{self, IfaIpfixReporter, IfaIpfixSettings, Record, Terminated};
use crate::pipeline::report::tr20::{in_type_of, Packet, SinkReporter21, LATENCY_MD_BITS};
use crate::pipeline::report::NODE_DOMAIN_ID;
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{restored, Seen, SinkCore};
use crate::stats::{Counter, Counters};

pub struct IfaSinkStage {
    domain: Domain,
    rule: L4Rule,
    pub core: SinkCore<SinkReporter21>,
    /// Under `int.report: ipfix`: the reports on packets, queued on the
    /// TR 2.0 reporter's ring (its loss reports: none, IFA numbers no
    /// packet).
    ipfix: Option<Ipfix>,
}

/// The longest stack: Current Length is 8 bits of 4-byte words.
const STACK_MAX: usize = 255 * 4;

/// The IPFIX reporter and a packet's IFA kept while its frame is stripped.
struct Ipfix {
    reporter: IfaIpfixReporter,
    headers: [u8; HEADERS_LEN],
    stack: [u8; STACK_MAX],
    stack_len: usize,
}

impl Ipfix {
    /// Keeps `found`'s headers and stack, before the strip removes them.
    fn keep(&mut self, frame: &[u8], found: &Located) {
        self.headers = ifa_ipfix::headers(&found.header, &found.md);
        let stack = frame.get(found.stack_at..found.payload_at).unwrap_or_default();
        self.stack_len = stack.len().min(STACK_MAX);
        if let (Some(to), Some(from)) = (self.stack.get_mut(..self.stack_len), stack.get(..self.stack_len)) {
            to.copy_from_slice(from);
        }
    }
}

impl IfaSinkStage {
    /// `ipfix`: the zone's IPFIX settings under `int.report: ipfix`.
    pub fn new(domain: Domain, rule: L4Rule, setup: SinkSetup, ipfix: Option<IfaIpfixSettings>) -> Self {
        let ipfix = ipfix.map(|settings| Ipfix {
            reporter: IfaIpfixReporter::new(settings),
            headers: [0; HEADERS_LEN],
            stack: [0; STACK_MAX],
            stack_len: 0,
        });
        IfaSinkStage { domain, rule, core: SinkCore::tr20(setup, NODE_DOMAIN_ID), ipfix }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        self.core.begin_burst(burst, burst_ns);
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = crate::pipeline::frames::frame_ahead(burst, i, counters) else { continue };
            let found = match FastSink::find(frame, &self.domain) {
                Some(fast) => Ok(Some(fast.found)),
                None => find(frame, &self.domain),
            };
            let keep = match found {
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
        // An IPv4 flow goes by its words, as INT 2.1's fast path keys it:
        // no key built a packet.
        let (words, key);
        let (flow, phase) = match found.flow_words(frame) {
            Some(flow) => {
                words = flow;
                (FlowRef::Words(&words), words.phase())
            }
            None => {
                key = found.flow(frame);
                (FlowRef::Key(&key), key.phase())
            }
        };
        let seen = self.seen(frame, found, phase, now_ns);
        let why = self.core.track(flow, &seen, now_ns, counters);
        // In IPFIX, reported once stripped.
        let mut pending = None;
        if let (Some(why), Some(frame)) = (why, burst.data(i)) {
            match self.ipfix.as_mut() {
                Some(ipfix) => {
                    ipfix.keep(frame, found);
                    pending = Some(why);
                }
                None => self.report(frame, found, now_ns, why, counters),
            }
        }
        let stripped = if found.inband() || pending.is_some() {
            let rule = self.rule;
            matches!(burst.with_frame(i, |f| strip(f, found, rule)), Some(Some(_)))
        } else {
            false
        };
        if let (Some(why), true, Some(frame)) = (pending, stripped, burst.data(i)) {
            self.report_ipfix(frame, now_ns, why, counters);
        }
        if !found.inband() {
            counters.inc(Counter::probes_dropped);
            return false;
        }
        restored(stripped, false, counters)
    }

    /// The IPFIX record of a packet whose IFA [`Ipfix::keep`] kept,
    /// `stripped` the packet without it, under the reports' rate limit;
    /// counted by what became of it.
    fn report_ipfix(&mut self, stripped: &[u8], now_ns: u64, why: Counter, counters: &mut Counters) {
        let Some(ipfix) = self.ipfix.as_mut() else { return };
        let Some(sender) = self.core.reports.reporter.ring(now_ns, counters) else { return };
        let stack = ipfix.stack.get(..ipfix.stack_len).unwrap_or_default();
        let part = Terminated { headers: &ipfix.headers, stack, packet: stripped };
        let sent = ipfix.reporter.report(sender, now_ns, part);
        if sent.template {
            counters.inc(Counter::ifa_ipfix_templates);
        }
        match sent.record {
            Record::Queued => {
                counters.inc(why);
                counters.inc(Counter::ifa_ipfix_records);
            }
            Record::RingFull => counters.inc(Counter::reports_ring_full),
            Record::TooBig => counters.inc(Counter::reports_too_big),
        }
    }

    /// The report on a packet: the packet as it came, from its IP header
    /// through its stack (InType 4 or 5, cut as the other sinks cut it:
    /// after the telemetry), this node's ports and times, as the INT 2.1
    /// and IOAM sinks report. collect reads the IFA in it natively.
    fn report(&mut self, frame: &[u8], found: &Located, now_ns: u64, why: Counter, counters: &mut Counters) {
        let Some(bytes) = frame.get(found.ip.l3..found.report_end()) else { return };
        let in_type = in_type_of(found.ip.version);
        let packet = Packet { bytes, in_type, rep_md_bits: LATENCY_MD_BITS, drop: None };
        self.core.reports.on_packet(packet, now_ns, why, counters);
    }

    /// What the rules read of a stack: the oldest hop's Device ID and RX
    /// time, and, for a packet the hop rule's sample takes, every hop's
    /// figures newest first.
    /// `phase`: the flow's ([`int_core::flow::FlowKey::phase`]), for the rule's sample.
    fn seen(&self, frame: &[u8], found: &Located, phase: u32, now_ns: u64) -> Seen {
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
            hops: rule.sampled(None, phase, |rule| rule.digest(figures())),
            is_mx: false,
        }
    }
}
