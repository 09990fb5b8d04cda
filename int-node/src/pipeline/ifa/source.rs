//! The initiator of an IFA zone: [`int_core::ifa::source`] on the packets
//! of watched flows, this node's hop as the first. Inband, the live
//! packets carry IFA (I set).
//!
//! The initiator is the zone's edge: a packet that arrives with IFA of
//! the zone came from outside (no node of the zone is before it), and its
//! hops would be read as the zone's. `source.marked` says what it gets,
//! as at an INT source's edge: `strip` (the default) removes IFA as the
//! terminator would and treats the packet as any other, `drop` drops it,
//! `trust` forwards it as it came (an initiator behind another of the
//! zone). Under `strip`, IFA that cannot come out whole (refused, counted
//! by reason) is dropped: never forwarded into the zone.

use std::net::SocketAddr;

use int_core::ifa::source::{self, Settings};
use int_core::ifa::{sink, Domain, HopRepr};
use int_core::FrameBuf;

use super::hop::{with_ttl, OwnHop};
use crate::clock::Clock;
use crate::config::{IfaDomain, IfaSourceSettings, MarkedPolicy, Rule};
use crate::dpdk::mbuf::Burst;
use crate::pipeline::setup::Hop;
use crate::pipeline::source_flow::{skip_counter, to_collector};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

pub struct IfaSourceStage {
    write: Write,
    hop: OwnHop,
    pub watchlist: Vec<Rule>,
    /// What a packet that arrives with IFA of the zone gets.
    marked: MarkedPolicy,
    /// The flows with the most packets (none kept yet: no flow table).
    pub top: TopFlows,
}

/// What the initiator writes, and where it stops.
#[derive(Clone, Copy)]
struct Write {
    domain: Domain,
    settings: Settings,
    max_ip_len: u16,
    own_reports_to: Option<SocketAddr>,
}

impl IfaSourceStage {
    pub fn new(
        zone: &IfaDomain,
        settings: &IfaSourceSettings,
        hop: &Hop,
        own_reports_to: Option<SocketAddr>,
    ) -> Self {
        let settings_ = Settings {
            max_length: zone.max_length,
            hop_limit: zone.hop_limit,
            inband: zone.probe_one_in.is_none(),
            l4: zone.l4,
            ..Settings::default()
        };
        IfaSourceStage {
            write: Write {
                domain: zone.domain,
                settings: settings_,
                max_ip_len: hop.max_ip_len,
                own_reports_to,
            },
            hop: OwnHop::new(zone.device_id(hop.node_id), hop),
            watchlist: settings.watchlist.clone(),
            marked: settings.marked,
            top: TopFlows::default(),
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let (write, watchlist, marked) = (self.write, self.watchlist.as_slice(), self.marked);
        self.hop.each(burst, clock, counters, |frame, hop, counters| {
            match write.instrument(frame, watchlist, hop) {
                Counter::already_marked => at_edge(frame, &write, watchlist, hop, marked, counters),
                counter => counter,
            }
        });
    }
}

impl Write {
    /// IFA added to one frame of a watched flow; the counter that says
    /// what happened.
    #[inline(always)]
    fn instrument(&self, frame: &mut FrameBuf<'_>, watchlist: &[Rule], hop: &HopRepr) -> Counter {
        let plan = match source::plan(frame.frame(), &self.domain, self.max_ip_len) {
            Ok(plan) => plan,
            Err(skip) => return skip_counter(skip),
        };
        let flow = plan.flow(frame.frame());
        if !watchlist.is_empty() && !watchlist.iter().any(|rule| rule.matches(&flow)) {
            return Counter::not_watched;
        }
        if self.own_reports_to.is_some_and(|collector| to_collector(&flow, collector)) {
            return Counter::own_reports;
        }
        let hop = with_ttl(hop, frame.frame(), &plan.ip);
        match source::insert(frame, &plan, &self.domain, &self.settings, &hop) {
            Ok(_) => Counter::instrumented,
            Err(skip) => skip_counter(skip),
        }
    }
}

/// A packet that arrived with IFA of the zone, by the `marked` policy.
#[inline(never)]
fn at_edge(
    frame: &mut FrameBuf<'_>,
    write: &Write,
    watchlist: &[Rule],
    hop: &HopRepr,
    marked: MarkedPolicy,
    counters: &mut Counters,
) -> Counter {
    match marked {
        MarkedPolicy::Trust => Counter::already_marked,
        MarkedPolicy::Drop => Counter::marked_dropped,
        MarkedPolicy::Strip => match sink::find(frame.frame(), &write.domain) {
            Ok(Some(found)) => match sink::strip(frame, &found, write.settings.l4) {
                Some(_) => {
                    counters.inc(Counter::foreign_int_stripped);
                    write.instrument(frame, watchlist, hop)
                }
                None => Counter::malformed_dropped,
            },
            Ok(None) => Counter::already_marked,
            Err(refused) => {
                counters.inc(Counter::refused(refused.reason));
                Counter::malformed_dropped
            }
        },
    }
}
