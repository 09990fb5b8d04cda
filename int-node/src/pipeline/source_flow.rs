//! What a source of either INT version does beside inserting: counts why
//! it skips a packet, asks its watchlist on the fast path, numbers its
//! flows' packets and ages its numbered flows.

use std::net::SocketAddr;

use int_core::flow::FlowKey;

use int_core::fast::FastFrame;
use int_core::outcome::Skip;

use crate::config::Rule;
use crate::flow_table::{sweep_budget, Admission, FlowRef, FlowTable};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// The counter of a packet the source leaves as it came.
pub(crate) fn skip_counter(skip: Skip) -> Counter {
    match skip {
        Skip::NotIp => Counter::not_ip,
        Skip::NotTcpUdp => Counter::not_tcp_udp,
        Skip::Fragment | Skip::MarkedFragment => Counter::fragments,
        Skip::AlreadyMarked => Counter::already_marked,
        Skip::TooBig => Counter::too_big,
        Skip::NoHeadroom => Counter::no_headroom,
        Skip::Malformed(error) => Counter::malformed(error.drop_reason()),
    }
}

/// Whether a fast path instruments a flow without asking the general path:
/// watched, and not this node's own reports to `own_reports_to` (the
/// general path counts why it does not). `fast` was read from `frame`.
#[inline(always)]
pub(crate) fn fast_flow_watched(
    fast: &FastFrame,
    frame: &[u8],
    watchlist: &[Rule],
    own_reports_to: Option<SocketAddr>,
) -> bool {
    let flow = &fast.flow;
    if let Some(collector) = own_reports_to {
        // An IPv6 frame to the collector's port goes to the general path,
        // which reads its whole address.
        let to_collector = flow.dst_port() == collector.port()
            && match collector {
                SocketAddr::V4(v4) => flow.dst_v4() == Some(*v4.ip()),
                SocketAddr::V6(_) => fast.is_ipv6(),
            };
        if flow.protocol() == 17 && to_collector {
            return false;
        }
    }
    watchlist.is_empty()
        || fast.flow_key(frame).is_some_and(|key| watchlist.iter().any(|rule| rule.matches(&key)))
}

/// Whether a flow is UDP to the node's own collector: its reports, which
/// a source never instruments.
pub(crate) fn to_collector(flow: &FlowKey, collector: SocketAddr) -> bool {
    flow.protocol == 17 && flow.dst == collector.ip() && flow.dst_port == collector.port()
}

/// The flow's next packet number in `flows` (its first packet's is 1),
/// the flow admitted and counted if new; `None` when the table has no
/// slot for it. A flow that has numbered one packet may give its slot to
/// a new flow when the table is full.
pub(crate) fn next_number(
    flows: &mut FlowTable<u32>,
    flow: FlowRef<'_>,
    now_ns: u64,
    counters: &mut Counters,
) -> Option<u32> {
    let Some((number, admission)) = flows.get_or_insert_flow(flow, now_ns, |n| *n <= 1) else {
        counters.inc(Counter::flow_table_full);
        return None;
    };
    match admission {
        Admission::Existing { .. } => {}
        Admission::Created => counters.inc(Counter::flows_created),
        Admission::Evicted => {
            counters.inc(Counter::flows_created);
            counters.inc(Counter::flows_evicted);
        }
    }
    *number = number.wrapping_add(1);
    Some(*number)
}

/// A source's ageing of its numbered flows: a 64th of the table every
/// millisecond or so, paced for large tables ([`sweep_budget`]).
pub(crate) struct Ageing<'a> {
    pub last_sweep_ns: &'a mut u64,
    pub idle_timeout_ns: u64,
}

impl Ageing<'_> {
    /// One step: flows idle past the timeout go; the others are ranked in
    /// `top` by their `packets`.
    pub fn age<V: Copy + Default>(
        self,
        flows: &mut FlowTable<V>,
        top: &mut TopFlows,
        now_ns: u64,
        counters: &mut Counters,
        packets: impl Fn(&V) -> u32,
    ) {
        const STEP_NS: u64 = 1 << 20;
        if now_ns.wrapping_sub(*self.last_sweep_ns) < STEP_NS {
            return;
        }
        *self.last_sweep_ns = now_ns;
        let idle_limit = (self.idle_timeout_ns >> 20) as u32;
        let budget = sweep_budget(flows.slot_count(), STEP_NS);
        let expired = flows.sweep(budget, now_ns, |key, value, idle| {
            top.offer(packets(value), None, || Some((key.flow()?, 0)));
            idle > idle_limit
        });
        top.after_sweep(flows.passes());
        counters.add(Counter::flows_expired, expired as u64);
    }
}
