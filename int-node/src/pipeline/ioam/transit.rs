//! A transit node of an IOAM domain: [`int_core::ioam::transit`] on every
//! packet of a burst, this node's element in the next free slot.

use int_core::ioam::transit::{self, Transited};
use int_core::ioam::Domain;

use super::element::Element;
use crate::clock::Clock;
use crate::dpdk::mbuf::Burst;
use crate::pipeline::setup::Hop;
use crate::stats::{Counter, Counters};

/// A transit node: the next slot of the namespace's trace filled, or
/// Overflow set; everything else passes as it is.
pub struct IoamTransitStage {
    namespace: u16,
    element: Element,
}

impl IoamTransitStage {
    pub fn new(domain: &Domain, hop: &Hop) -> Self {
        IoamTransitStage { namespace: domain.namespace, element: Element::new(domain, hop) }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let namespace = self.namespace;
        self.element.each(burst, clock, counters, |frame, node, _| {
            match transit::push(frame, namespace, node) {
                Ok(Transited::Filled) => Counter::slots_filled,
                Ok(Transited::Overflow) => Counter::trace_overflow,
                Ok(Transited::NotTraced) => Counter::not_int,
                Err(error) => Counter::malformed(error.drop_reason()),
            }
        });
    }
}
