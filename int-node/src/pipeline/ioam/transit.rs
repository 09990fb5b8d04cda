//! A transit node of an IOAM domain: [`int_core::ioam::transit`] on every
//! packet of a burst, this node's element in the next free slot; a frame
//! of the encapsulating node's shape located at fixed offsets first
//! ([`int_core::ioam::fast_transit::FastTransit`]).

use int_core::ioam::fast_transit::FastTransit;
use int_core::ioam::node::NodeData;
use int_core::ioam::transit::{self, Transited};
use int_core::ioam::Domain;
use int_core::{FrameBuf, ParseError};

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
    fast: FastTransit,
}

impl IoamTransitStage {
    pub fn new(domain: &Domain, hop: &Hop) -> Self {
        IoamTransitStage {
            namespace: domain.namespace,
            element: Element::new(domain, hop),
            fast: FastTransit,
        }
    }

    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let (namespace, fast) = (self.namespace, &mut self.fast);
        self.element.each(burst, clock, counters, |frame, node, _| {
            let pushed = match fast.push(frame, namespace, node) {
                Some(transited) => Ok(transited),
                None => general(frame, namespace, node),
            };
            match pushed {
                Ok(Transited::Filled) => Counter::slots_filled,
                Ok(Transited::Overflow) => Counter::trace_overflow,
                Ok(Transited::NotTraced) => Counter::not_int,
                Err(error) => Counter::malformed(error.drop_reason()),
            }
        });
    }
}

/// The general path, out of line: the fast path's loop stays short.
#[inline(never)]
fn general(frame: &mut FrameBuf<'_>, namespace: u16, node: &NodeData) -> Result<Transited, ParseError> {
    transit::push(frame, namespace, node)
}
