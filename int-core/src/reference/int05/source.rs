//! The reference source: Host-INT's 36-byte block after the UDP header or
//! the TCP header, numbered per flow from 1.

use crate::fast::FastFrame;
use crate::frame::FrameBuf;
use crate::int05::fast_source::FastSource;
use crate::int05::source::{SourceConfig, Template};
use crate::int05::HopMetadata;
use crate::reference::{key, FlowSlots};

pub struct Source {
    block: FastSource,
    /// Each flow's last sequence number.
    flows: FlowSlots<u32>,
}

impl Source {
    /// The reference for `config`, which must be Host-INT's dialect (the
    /// DSCP value and mask, MTU and Max Hop Count are free).
    pub fn new(config: &SourceConfig, hop: &HopMetadata, flows: usize) -> Result<Source, &'static str> {
        let template = Template::new(config, hop).map_err(|_| "the source's block cannot be written")?;
        let block =
            FastSource::of(config, &template).ok_or("the reference source speaks Host-INT's dialect only")?;
        Ok(Source { block, flows: FlowSlots::new(flows) })
    }

    /// Instruments the frame with `time` in both timestamps; false (frame
    /// unchanged) for a frame of another shape, one already marked, one that
    /// would exceed the MTU, or when the flow table is full.
    #[inline(always)]
    pub fn instrument(&mut self, frame: &mut FrameBuf<'_>, time: u32) -> bool {
        let Some(parts) = FastFrame::read_ipv4(frame.frame(), 0) else { return false };
        if !self.block.takes(&parts) {
            return false;
        }
        let Some(last) = self.flows.entry(key(&parts)) else { return false };
        *last = last.wrapping_add(1);
        let sequence = *last;
        self.block.insert(frame, &parts, sequence, time)
    }

    /// Flows numbered so far.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
}
