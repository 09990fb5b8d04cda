//! The source stage: instruments packets of watched IPv4 TCP/UDP flows with
//! INT 0.5, with a per-flow sequence number from 1 (shim Type 3).
//! Everything it does not instrument leaves untouched and counted.

use int_core::int05::HopMetadata;
use int_core::source::{self, Skip, SourceConfig};

use crate::config::Rule;
use crate::dpdk::clock::TscClock;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::flow_table::FlowTable;
use crate::stats::{Counter, Counters};

pub struct SourceStage {
    pub config: SourceConfig,
    pub watchlist: Vec<Rule>,
    pub node_id: u32,
    pub rx_int_port: u16,
    pub tx_int_port: u16,
    /// Per-flow next sequence number (only for shim Type 3).
    pub flows: FlowTable<u32>,
    pub idle_timeout_ns: u64,
    pub rx_timestamps: Option<RxClock>,
}

impl SourceStage {
    #[inline]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut TscClock, counters: &mut Counters) {
        let now_ns = clock.now_ns();
        let with_sequence = self.config.shim_type.has_sequence();
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            let Some(frame) = burst.data(i) else {
                counters.inc(Counter::multi_segment);
                continue;
            };
            let plan = match source::plan(frame, &self.config) {
                Ok(plan) => plan,
                Err(skip) => {
                    counters.inc(skip_counter(skip));
                    continue;
                }
            };
            if !self.watchlist.is_empty() && !self.watchlist.iter().any(|rule| rule.matches(&plan.flow)) {
                counters.inc(Counter::not_watched);
                continue;
            }
            let sequence = if with_sequence {
                match self.flows.get_or_insert(&plan.flow, now_ns) {
                    Some((next, created)) => {
                        if created {
                            counters.inc(Counter::flows_created);
                        }
                        *next = next.wrapping_add(1);
                        *next
                    }
                    None => {
                        // Without a slot there is no honest sequence number:
                        // forward untouched rather than confuse the sink.
                        counters.inc(Counter::flow_table_full);
                        continue;
                    }
                }
            } else {
                0
            };
            let time =
                self.rx_timestamps.and_then(|clock| burst.rx_time_ns(i, &clock)).unwrap_or(now_ns) as u32;
            let hop = HopMetadata {
                switch_id: Some(self.node_id),
                ingress_port: Some(self.rx_int_port),
                egress_port: Some(self.tx_int_port),
                ingress_timestamp: Some(time),
                egress_timestamp: Some(time),
                ..HopMetadata::default()
            };
            let config = &self.config;
            match burst.with_frame(i, |f| source::insert(f, &plan, config, sequence, &hop)) {
                Some(Ok(_)) => counters.inc(Counter::instrumented),
                Some(Err(skip)) => counters.inc(skip_counter(skip)),
                None => counters.inc(Counter::multi_segment),
            }
        }
        if with_sequence {
            let idle_limit = (self.idle_timeout_ns >> 20) as u32;
            let expired = self.flows.sweep(64, now_ns, |_, _, idle| idle > idle_limit);
            counters.add(Counter::flows_expired, expired as u64);
        }
    }
}

fn skip_counter(skip: Skip) -> Counter {
    match skip {
        Skip::NotIpv4 => Counter::not_ipv4,
        Skip::NotTcpUdp => Counter::not_tcp_udp,
        Skip::LaterFragment => Counter::later_fragment,
        Skip::AlreadyMarked => Counter::already_marked,
        Skip::TooBig => Counter::too_big,
        Skip::NoHeadroom => Counter::no_headroom,
        Skip::Malformed(error) => Counter::malformed(error.drop_reason()),
    }
}
