//! A transit node of an IFA zone: [`int_core::ifa::transit`] on every
//! packet of a burst, this node's hop on top of the stack; a packet of the
//! fast path's shape located at fixed offsets first
//! ([`int_core::ifa::fast_transit::FastTransit`]). A packet the
//! zone's IFA header and metadata header do not allow another hop (Hop
//! Limit 0, Max Length, the MTU) passes as it came, counted by reason; so
//! does one refused (counted by its [`int_core::ifa::Refusal`]): this
//! node did not corrupt it, and the terminator drops it.

use int_core::ifa::fast_transit::FastTransit;
use int_core::ifa::transit::{push_found, Outcome};
use int_core::ifa::{sink, Domain, HopRepr, L4Rule};
use int_core::FrameBuf;

use super::hop::OwnHop;
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
    fast: FastTransit,
}

impl IfaTransitStage {
    pub fn new(zone: &IfaDomain, hop: &Hop) -> Self {
        IfaTransitStage {
            domain: zone.domain,
            rule: zone.l4,
            max_ip_len: hop.max_ip_len,
            hop: OwnHop::new(zone.device_id(hop.node_id), hop),
            fast: FastTransit,
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let (domain, rule, max_ip_len, fast) = (self.domain, self.rule, self.max_ip_len, &mut self.fast);
        self.hop.each(burst, clock, counters, |frame, hop, _| {
            let pushed = match fast.push(frame, &domain, max_ip_len, hop, rule) {
                Some(outcome) => Ok(outcome),
                None => match general(frame, &domain, max_ip_len, hop, rule) {
                    Ok(pushed) => pushed,
                    Err(counter) => return counter,
                },
            };
            match pushed {
                Ok(Outcome::Pushed(_)) => Counter::pushed,
                Ok(Outcome::HopLimitReached) => Counter::hop_limit_reached,
                Ok(Outcome::MaxLengthReached) => Counter::max_length_reached,
                Ok(Outcome::MtuExceeded) => Counter::mtu_exceeded,
                Err(why) => Counter::not_pushed(why),
            }
        });
    }
}

/// The general path: the walk (a refusal counted by its reason), then the
/// push. `Err`: the counter of a packet not IFA of the zone, or refused.
#[inline(never)]
fn general(
    frame: &mut FrameBuf<'_>,
    domain: &Domain,
    max_ip_len: u16,
    hop: &HopRepr,
    rule: L4Rule,
) -> Result<Result<Outcome, int_core::outcome::NotPushed>, Counter> {
    let found = match sink::find(frame.frame(), domain) {
        Ok(Some(found)) => found,
        Ok(None) => return Err(Counter::not_int),
        Err(refused) => return Err(Counter::refused(refused.reason)),
    };
    let hop = hop.with_ttl(frame.frame(), &found.ip);
    Ok(push_found(frame, &found, max_ip_len, &hop, rule))
}
