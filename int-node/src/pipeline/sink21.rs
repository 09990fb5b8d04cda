//! The sink stage of an INT 2.1 domain: strips INT from every INT 2.1
//! packet, restores it, and reports to the collector in Telemetry Report
//! 2.0.
//!
//! The rule that maps our latency events onto TR 2.0: a latency report is
//! one datagram with one individual report, RepType 1 (INT), InType 4
//! (IPv4), F set (D as well when the packet carried D), RepMdBits 0x4C00:
//! this node's level 1 ports and its ingress and egress timestamps (8
//! bytes, epoch ns; the node id is in the group header). The inner contents
//! are the packet as received from its IPv4 header through the INT block
//! (and, with NPT 2, the original L4 header's first bytes), so the
//! collector reads the whole stack; one-way latency is the report's
//! ingress timestamp minus the bottom hop's (the source's) ingress
//! timestamp. A report goes out when a flow's latency changes by the
//! sink's rule, as for INT 0.5. INT 2.1 carries no sequence number, so
//! this stage declares no loss. INT-MX packets are stripped and reported
//! with this node's metadata as every MX node reports (see [`super::report21`]).

use int_core::int21::{sink, Domain, HopMetadata};
use int_core::latency::LatencyConfig;

use super::report21::{Reporter21, Subject};
use super::sink::one_way_latency;
use crate::config::{MalformedPolicy, SinkSettings};
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::{Admission, FlowTable};
use crate::stats::{Counter, Counters};

/// The sink's metadata in a latency report: level 1 ports, ingress and
/// egress timestamps.
const LATENCY_MD_BITS: u16 = 0x4c00;

/// One flow's latency state at the sink.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flow21 {
    pub latency: int_core::latency::LatencyState,
    pub packets: u16,
}

pub struct Sink21Stage {
    pub domain: Domain,
    pub settings: SinkSettings,
    pub latency: LatencyConfig,
    pub int_port: u16,
    pub flows: FlowTable<Flow21>,
    pub reporter: Reporter21,
    pub rx_timestamps: Option<RxClock>,
    pub last_sweep_ns: u64,
}

impl Sink21Stage {
    /// Ages idle flows out: a 64th of the table every millisecond or so.
    pub fn sweep(&mut self, now_ns: u64, counters: &mut Counters) {
        if now_ns.wrapping_sub(self.last_sweep_ns) < 1 << 20 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let idle_limit = ((self.settings.idle_timeout_ms * 1_000_000) >> 20).min(u64::from(u32::MAX)) as u32;
        let budget = self.flows.slot_count().div_ceil(64);
        let expired = self.flows.sweep(budget, now_ns, |_, _, idle| idle > idle_limit);
        counters.add(Counter::flows_expired, expired as u64);
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, burst_ns: u64, counters: &mut Counters) {
        let mut drop = 0u32;
        for i in 0..burst.len() {
            let Some(frame) = super::frame_ahead(burst, i, counters) else { continue };
            let found = match sink::extract(frame, &self.domain) {
                Ok(Some(found)) => found,
                Ok(None) => {
                    counters.inc(Counter::not_int);
                    continue;
                }
                Err(error) => {
                    counters.inc(Counter::malformed(error.drop_reason()));
                    if self.settings.malformed == MalformedPolicy::Drop {
                        counters.inc(Counter::malformed_dropped);
                        drop |= 1 << i;
                    } else {
                        counters.inc(Counter::malformed_forwarded);
                    }
                    continue;
                }
            };
            let now_ns = self.rx_timestamps.and_then(|clock| burst.rx_time_ns(i, &clock)).unwrap_or(burst_ns);
            if self.track(&found, now_ns, counters) || found.is_mx {
                if let Some(frame) = burst.data(i) {
                    self.report(frame, &found, now_ns, counters);
                }
            }
            match burst.with_frame(i, |f| sink::strip(f, &found)) {
                Some(Some(_)) => counters.inc(Counter::stripped),
                _ => {
                    counters.inc(Counter::malformed(int_core::DropReason::PacketMalformed));
                    drop |= 1 << i;
                }
            }
            if found.discard {
                counters.inc(Counter::discarded);
                drop |= 1 << i;
            }
        }
        if drop != 0 {
            burst.retain(|i| drop & (1 << i) == 0);
        }
    }

    /// Updates the flow's latency state; says whether to report.
    fn track(&mut self, found: &sink::Extracted, now_ns: u64, counters: &mut Counters) -> bool {
        let admitted =
            self.flows.get_or_insert_hashed(&found.flow, found.flow.hash64(), now_ns, |f| f.packets <= 1);
        let Some((flow, admission)) = admitted else {
            counters.inc(Counter::flow_table_full);
            return false;
        };
        if !matches!(admission, Admission::Existing { .. }) {
            counters.inc(Counter::flows_created);
        }
        flow.packets = flow.packets.saturating_add(1);
        let Some(source_ns) = found.source_hop.and_then(|hop| hop.ingress_timestamp) else { return false };
        // 64-bit timestamps: the 32-bit split of INT 0.5 applies to the low
        // bits only when the difference is within its range.
        let difference = now_ns.wrapping_sub(source_ns) as i64;
        let latency = match one_way_latency(now_ns, source_ns as u32, self.settings.max_skew_ns) {
            Ok(latency) if difference >= 0 => latency,
            Ok(_) | Err(_) => {
                counters.inc(Counter::clock_skew);
                counters.raise(Counter::clock_skew_max_ns, difference.unsigned_abs());
                return false;
            }
        };
        counters.lower(Counter::latency_min_ns, u64::from(latency));
        counters.raise(Counter::latency_max_ns, u64::from(latency));
        flow.latency.observe(&self.latency, latency, now_ns).is_some()
    }

    /// This node's report on a packet: its ports and timestamps (and hop
    /// latency, zero at the sink), for a latency change or an INT-MX packet.
    fn report(&mut self, frame: &[u8], found: &sink::Extracted, now_ns: u64, counters: &mut Counters) {
        let inner = frame.get(found.ip.l3..found.report_end()).unwrap_or_default();
        let metadata = HopMetadata {
            l1_ingress_port: Some(self.int_port),
            l1_egress_port: Some(self.int_port),
            hop_latency: Some(0),
            ingress_timestamp: Some(now_ns),
            egress_timestamp: Some(now_ns),
            ..HopMetadata::default()
        };
        let (rep_md_bits, kind) = if found.is_mx {
            (found.instructions.bits(), Counter::reports_mx)
        } else {
            (LATENCY_MD_BITS, Counter::reports_latency)
        };
        let subject = Subject { packet: inner, rep_md_bits, metadata, dropped: found.discard };
        self.reporter.report(subject, now_ns, kind, counters);
    }
}
