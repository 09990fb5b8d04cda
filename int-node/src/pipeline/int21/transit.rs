//! The transit stage of an INT 2.1 domain: pushes this node's metadata onto
//! INT-MD stacks (its hop latency and RX queue's depth as
//! [`crate::pipeline::hop_figures`] knows them; values a software node
//! cannot know are all ones), sets E or M where the rules say so, and
//! leaves INT-MX packets as they are.

use int_core::frame::FrameBuf;
use int_core::int21::fast_transit::FastTransit;
use int_core::int21::transit::{self, NotPushed, Outcome};
use int_core::int21::{Domain, HopMetadata};

use crate::clock::Clock;
use crate::dpdk::mbuf::{Burst, RxClock};
use crate::pipeline::hop_figures::HopFigures;
use crate::pipeline::report::tr20::Reporter21;
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

pub struct Transit21Stage {
    pub domain: Domain,
    pub max_ip_len: u16,
    pub node_id: u32,
    pub rx_int_port: u16,
    pub tx_int_port: u16,
    pub rx_timestamps: Option<RxClock>,
    /// INT-MX: this node's reports on the MX packets it forwards.
    pub reporter: Option<Reporter21>,
    figures: HopFigures,
    /// The fast path's plan of the last shape seen.
    fast: FastTransit,
}

impl Transit21Stage {
    /// `reporter`: an INT-MX domain's reports, where the node exports.
    pub fn new(domain: Domain, hop: &Hop, reporter: Option<Reporter21>) -> Self {
        Transit21Stage {
            domain,
            max_ip_len: hop.max_ip_len,
            node_id: hop.node_id,
            rx_int_port: hop.rx_int_port,
            tx_int_port: hop.tx_int_port,
            rx_timestamps: hop.rx_timestamps,
            reporter,
            figures: HopFigures::new(hop.rx_queue),
            fast: FastTransit::default(),
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let figures = self.figures.burst(clock.now_ns(), burst.len());
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            if let Some(counter) = crate::pipeline::frames::unwritable(burst, i) {
                counters.inc(counter);
                continue;
            }
            let ingress = burst.arrival_ns(i, self.rx_timestamps, figures.burst_ns);
            let now_ns = figures.egress_ns;
            let hop = HopMetadata {
                node_id: Some(self.node_id),
                l1_ingress_port: Some(self.rx_int_port),
                l1_egress_port: Some(self.tx_int_port),
                hop_latency: u32::try_from(now_ns.saturating_sub(ingress)).ok(),
                queue: figures.queue,
                ingress_timestamp: Some(ingress),
                egress_timestamp: Some(now_ns),
                ..HopMetadata::default()
            };
            let (domain, max_ip_len, fast) = (&self.domain, self.max_ip_len, &mut self.fast);
            let counter = match burst.with_frame(i, |f| push(fast, f, domain, max_ip_len, &hop)) {
                None => Counter::shared_mbuf,
                Some(Ok(Outcome::Pushed(_))) => Counter::pushed,
                Some(Ok(Outcome::MaxHopReached)) => Counter::max_hop_reached,
                Some(Ok(Outcome::MtuExceeded)) => Counter::mtu_exceeded,
                Some(Ok(Outcome::Mx)) => {
                    if let (Some(reporter), Some(frame)) = (self.reporter.as_mut(), burst.data(i)) {
                        crate::pipeline::report::tr20::report_mx(
                            reporter,
                            frame,
                            &self.domain,
                            hop,
                            now_ns,
                            counters,
                        );
                    }
                    Counter::mx_passed
                }
                Some(Err(why)) => Counter::not_pushed(why),
            };
            counters.inc(counter);
        }
        self.figures.done(&figures);
        if let Some(reporter) = self.reporter.as_mut() {
            reporter.flush(counters);
        }
    }
}

/// The fast path first; what it declines, the general path.
#[inline(always)]
fn push(
    fast: &mut FastTransit,
    frame: &mut FrameBuf<'_>,
    domain: &Domain,
    max_ip_len: u16,
    hop: &HopMetadata,
) -> Result<Outcome, NotPushed> {
    match fast.push(frame, domain, max_ip_len, hop) {
        Some(outcome) => Ok(outcome),
        None => transit::push(frame, domain, max_ip_len, hop),
    }
}
