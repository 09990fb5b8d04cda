//! The reference INT 2.1 source: a DSCP-marked domain's INT-MD block, built
//! once, after the UDP header or the TCP header, numbered per flow from 1.

use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int21::fast_source::{FastSource, HopTimes};
use crate::int21::source::SourceConfig;
use crate::int21::HopMetadata;
use crate::reference::{key, FlowSlots};

pub struct Source21 {
    block: FastSource,
    /// Each flow's last packet number.
    flows: FlowSlots<u32>,
}

impl Source21 {
    /// The reference for `config`, an INT-MD source of a DSCP-marked domain
    /// that pushes its own `hop` (instructions, MTU and hop count are free).
    pub fn new(config: &SourceConfig, hop: &HopMetadata, flows: usize) -> Result<Source21, &'static str> {
        let block = FastSource::of(config, hop)
            .ok_or("the INT 2.1 reference source speaks INT-MD in a DSCP-marked domain only")?;
        Ok(Source21 { block, flows: FlowSlots::new(flows) })
    }

    /// Instruments the frame with `times` in its hop; false (frame
    /// unchanged) for a frame of another shape, one already marked, one that
    /// would exceed the MTU, or when the flow table is full.
    #[inline(always)]
    pub fn instrument(&mut self, frame: &mut FrameBuf<'_>, times: HopTimes) -> bool {
        let Some(parts) = FastFrame::read_ipv4(frame.frame(), 0) else { return false };
        if !self.block.takes(&parts) {
            return false;
        }
        let Some(last) = self.flows.entry(key(&parts)) else { return false };
        *last = last.wrapping_add(1);
        let sequence = *last;
        self.block.insert(frame, &parts, times, sequence)
    }
}
