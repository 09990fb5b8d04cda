//! What a sink keeps of a flow and does with it, whichever protocol
//! carried the packets: the flow record, the packet numbers and the losses
//! they reveal, and the sweep that reports and ages flows (run by
//! [`crate::pipeline::sink_core`]).

use int_core::flow::FlowKey;
use int_core::latency::LatencyState;
use int_core::loss::{PendingLoss, SeqEvent, SequenceTracker};

use super::top_flows::TopFlows;
use crate::config::SinkSettings;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::{Align64, FlowTable};
use crate::stats::{Counter, Counters};

/// One flow's state at the sink: 44 bytes, so that with its key, tag and
/// ageing time the table slot is one 64-byte cache line. Per-flow counts
/// (duplicates, reordering, losses) go straight to the pipeline's counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct SinkFlow {
    pub sequence: SequenceTracker,
    pub latency: LatencyState,
    pub source_node: u32,
    /// INT 0.5: the source hop's ingress port (Host-INT's Drop-Summary
    /// names it). INT 2.1 and IOAM: the digest of the hops' path and classes
    /// ([`int_core::hop_rule::HopDigest::hops`]; 0: none told yet), for
    /// the path and hop rules. One halfword for both keeps the slot one
    /// line.
    pub port_or_hops: u16,
    /// INT 2.1 and IOAM: the path's own digest ([`int_core::hop_rule::HopDigest::path`]),
    /// which tells a path change from a hop's.
    pub path: u8,
    /// Packets seen, saturating: a flow of one packet may be evicted from
    /// a full table by a new one.
    pub packets: u16,
}

impl SinkFlow {
    pub(crate) fn evictable(&self) -> bool {
        self.packets <= 1
    }
}

/// Packet `i`'s arrival time ([`Burst::arrival_ns`]), and the sink's
/// offset from the host clock (`burst_ns`) kept in `offset`: the sweep's
/// timeouts run on the packets' clock.
#[inline(always)]
pub(crate) fn arrival(burst: &Burst, i: usize, rx: Option<RxClock>, burst_ns: u64, offset: &mut i64) -> u64 {
    let now_ns = burst.arrival_ns(i, rx, burst_ns);
    *offset = now_ns as i64 - burst_ns as i64;
    now_ns
}

/// Packets a flow can send per coarse ms (2^20 ns) at `max_flow_pps`,
/// rounded up: worked out once, so that the per-packet bound is a multiply.
pub(crate) fn packets_per_coarse_ms(max_flow_pps: u64) -> u64 {
    (u128::from(max_flow_pps) << 20).div_ceil(1_000_000_000).min(u128::from(u32::MAX)) as u64
}

/// The largest sequence jump a flow can make in `idle_ms` coarse ms (plus
/// the one under way), plus the reordering window.
#[inline]
pub(crate) fn plausible_jump(per_coarse_ms: u64, idle_ms: u32) -> u32 {
    let packets = per_coarse_ms.saturating_mul(u64::from(idle_ms) + 1);
    packets.saturating_add(u64::from(int_core::loss::WINDOW)).min(u64::from(int_core::loss::MAX_JUMP)) as u32
}

/// Records a packet number in the flow's loss state and counts what it
/// says (losses declared, duplicates, reordering, restarts).
pub(crate) fn record_sequence(
    flow: &mut SinkFlow,
    sequence: u32,
    max_jump: u32,
    now_ns: u64,
    counters: &mut Counters,
) {
    let recorded = flow.sequence.record(sequence, now_ns, max_jump);
    if recorded.declared_lost != 0 {
        counters.add(Counter::lost_packets, u64::from(recorded.declared_lost));
    }
    match recorded.event {
        SeqEvent::Duplicate => counters.inc(Counter::seq_duplicates),
        SeqEvent::Reordered => counters.inc(Counter::seq_reordered),
        SeqEvent::Late => counters.inc(Counter::seq_late),
        SeqEvent::Restart => counters.inc(Counter::seq_restarts),
        SeqEvent::Implausible => counters.inc(Counter::seq_implausible),
        SeqEvent::First | SeqEvent::InOrder | SeqEvent::Ahead { .. } => {}
    }
}

/// One step of a sink's sweep over its flows: holes of flows silent for
/// the loss timeout are declared lost, declared losses are reported (in
/// whatever format the domain speaks), idle flows are aged out.
pub(crate) struct LossPass<'a> {
    pub now_ns: u64,
    /// At shutdown: every hole is lost, every flow goes.
    pub final_pass: bool,
    pub settings: &'a SinkSettings,
    /// Where the visited flows are ranked.
    pub top: &'a mut TopFlows,
}

/// Where a sink's loss reports go: the report ring, or a datagram being
/// filled for it. Losses wait in their flow while there is no room or the
/// rate limit says no.
pub(crate) trait LossReports {
    fn has_room(&self) -> bool;
    fn allow(&mut self, now_ns: u64) -> bool;
}

impl LossPass<'_> {
    /// Visits `budget` slots; `send` reports one flow's declared losses
    /// and counts what became of the report.
    pub fn sweep<R: LossReports, F>(
        self,
        flows: &mut FlowTable<SinkFlow, Align64>,
        budget: usize,
        reports: &mut R,
        counters: &mut Counters,
        mut send: F,
    ) where
        F: FnMut(&mut R, &FlowKey, &SinkFlow, PendingLoss, &mut Counters),
    {
        // Idle times come in coarse ms (ns >> 20), rounded up here.
        let coarse_ms = |ms: u64| (ms * 1_000_000).div_ceil(1 << 20).min(u64::from(u32::MAX)) as u32;
        let (loss_limit, idle_limit) =
            (coarse_ms(self.settings.loss_timeout_ms), coarse_ms(self.settings.idle_timeout_ms));
        let max_delay_ns = self.settings.max_report_delay_ms.saturating_mul(1_000_000);
        let (now_ns, final_pass, top) = (self.now_ns, self.final_pass, self.top);
        let removed = flows.sweep(budget, now_ns, |key, flow, idle| {
            let packets = flow.sequence.highest().unwrap_or(u32::from(flow.packets));
            let source_node = flow.source_node;
            top.offer(packets, flow.latency.last_reported(), || Some((key.flow()?, source_node)));
            let expire = final_pass || idle > idle_limit;
            let settled = expire || idle >= loss_limit;
            // Holes of a flow silent for the loss timeout will not fill.
            if flow.sequence.has_holes() && settled {
                counters.add(Counter::lost_packets, u64::from(flow.sequence.flush(now_ns)));
            }
            // Losses are coalesced: one report once the flow is silent, or
            // once the first of them has waited long enough.
            let due = flow.sequence.pending_count() > 0
                && (settled || flow.sequence.pending_age_ns(now_ns) >= max_delay_ns);
            // Losses wait in the flow (not lost) while the ring is full or
            // the rate limit says no; at shutdown a full ring is counted.
            if due && !reports.has_room() {
                if final_pass {
                    counters.inc(Counter::reports_ring_full);
                }
            } else if due {
                if !reports.allow(now_ns) {
                    counters.inc(Counter::reports_suppressed);
                } else if let Some(pending) = flow.sequence.take_pending(now_ns) {
                    // An IPv6 flow in a table that keeps no addresses
                    // (INT 0.5: no report has an IPv6 form): its losses
                    // are counted, and no report names it.
                    match key.flow() {
                        Some(key) => send(reports, &key, flow, pending, counters),
                        None => counters.inc(Counter::reports_unkeyed),
                    }
                }
            }
            // A flow with losses not yet reported stays until they are out;
            // at shutdown everything goes.
            expire && (final_pass || flow.sequence.pending_count() == 0)
        });
        counters.add(Counter::flows_expired, removed as u64);
    }
}
