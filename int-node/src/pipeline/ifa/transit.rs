//! A transit node of an IFA zone: [`int_core::ifa::transit`] on every
//! packet of a burst, this node's hop on top of the stack. A packet the
//! zone's IFA header and metadata header do not allow another hop (Hop
//! Limit 0, Max Length, the MTU) passes as it came, counted by reason; so
//! does one refused (counted by its [`int_core::ifa::Refusal`]): this
//! node did not corrupt it, and the terminator drops it.

use int_core::ifa::transit::{push_found, Outcome};
use int_core::ifa::{sink, Domain, L4Rule};

use super::hop::{with_ttl, OwnHop};
use crate::clock::Clock;
use crate::config::IfaDomain;
use crate::dpdk::mbuf::Burst;
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

pub struct IfaTransitStage {
    domain: Domain,
    rule: L4Rule,
    max_ip_len: u16,
    hop: OwnHop,
}

impl IfaTransitStage {
    pub fn new(zone: &IfaDomain, hop: &Hop) -> Self {
        IfaTransitStage {
            domain: zone.domain,
            rule: zone.l4,
            max_ip_len: hop.max_ip_len,
            hop: OwnHop::new(zone.device_id(hop.node_id), hop),
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let (domain, rule, max_ip_len) = (self.domain, self.rule, self.max_ip_len);
        self.hop.each(burst, clock, counters, |frame, hop, _| {
            let found = match sink::find(frame.frame(), &domain) {
                Ok(Some(found)) => found,
                Ok(None) => return Counter::not_int,
                Err(refused) => return Counter::refused(refused.reason),
            };
            let hop = with_ttl(hop, frame.frame(), &found.ip);
            match push_found(frame, &found, max_ip_len, &hop, rule) {
                Ok(Outcome::Pushed(_)) => Counter::pushed,
                Ok(Outcome::HopLimitReached) => Counter::hop_limit_reached,
                Ok(Outcome::MaxLengthReached) => Counter::max_length_reached,
                Ok(Outcome::MtuExceeded) => Counter::mtu_exceeded,
                Err(why) => Counter::not_pushed(why),
            }
        });
    }
}
