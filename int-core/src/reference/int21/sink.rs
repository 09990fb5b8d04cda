//! The reference INT 2.1 sink: removes a DSCP-marked domain's INT-MD block,
//! restores the DSCP, and keeps each flow's last packet number and latency.
//! It reads the block with the sink's own fast-path reader
//! ([`crate::int21::fast_sink`]): what it measures against is the stage around
//! that reader (flow state with ageing, the loss and latency rules,
//! reports), not the reading.

use crate::fast::FastArrival;
use crate::frame::FrameBuf;
use crate::hop_rule::HopRule;
use crate::int21::fast_sink::FastSink;
use crate::int21::Domain;
use crate::reference::{key, FlowSlots};

/// What the reference INT 2.1 sink keeps per flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sink21Flow {
    pub last_sequence: u32,
    /// The last packet's one-way latency (ns, signed: clocks may disagree).
    pub latency_ns: i64,
}

pub struct Sink21 {
    domain: Domain,
    flows: FlowSlots<Sink21Flow>,
}

impl Sink21 {
    pub fn new(domain: Domain, flows: usize) -> Self {
        Sink21 { domain, flows: FlowSlots::new(flows) }
    }

    /// Strips the block, given the time now (ns); `Some(true)` when the
    /// packet's number followed its flow's last one. `None` (frame
    /// unchanged) for a frame of another shape, a block the fast reader
    /// leaves to the general path, or a full flow table.
    #[inline(always)]
    pub fn strip(&mut self, frame: &mut FrameBuf<'_>, now_ns: u64) -> Option<bool> {
        let FastArrival::Int(found) = FastSink::find(frame.frame(), &self.domain, &HopRule::default()) else {
            return None;
        };
        if found.frame.is_ipv6() {
            return None;
        }
        let flow = self.flows.entry(key(&found.frame))?;
        let sequence = found.sequence.unwrap_or(0);
        let in_order = sequence == flow.last_sequence.wrapping_add(1);
        let latency_ns = now_ns.wrapping_sub(found.source_ns.unwrap_or(now_ns)) as i64;
        *flow = Sink21Flow { last_sequence: sequence, latency_ns };
        found.strip(frame)?;
        Some(in_order)
    }

    /// The state of `key`'s flow (addresses, then protocol and ports), for
    /// tests.
    pub fn flow(&self, key: [u64; 2]) -> Option<Sink21Flow> {
        self.flows.get(key).copied()
    }
}
