//! The Telemetry Report 2.0 reports of an INT 2.1 domain's stages, one
//! datagram each: a group header with this node's id, one individual
//! report of RepType 1 (INT), InType 4 (IPv4), F set, the metadata this
//! node provides, and the packet from its IPv4 header through the INT block
//! as inner contents. Rate-limited per stage, never waited for.
//!
//! INT-MX (INT 2.1 section 5.9): every node that sees an MX packet reports
//! the metadata its bitmap asks for that a software node has, with
//! RepMdBits cleared of the rest: the node id rides in the group header
//! (bit 0), and queue, level 2 port, utilization and buffer metadata are
//! not known here. Reports of every MX packet go out, within the export
//! rate limit (counted `reports_suppressed` beyond it).

use int_core::int21::{HopMetadata, Instructions};
use int_core::report::tr20::{GroupHeaderRepr, InType, IndividualReport, IntContents, RepType, ReportFlags};

use super::export::{QueueError, ReportSender};
use super::sink::RateLimit;
use crate::stats::{Counter, Counters};

/// The metadata a software node provides: level 1 ports, hop latency,
/// ingress and egress timestamps.
pub const PROVIDED: u16 = 0x6c00;

/// What one report says: this node's metadata about a packet.
pub struct Subject<'a> {
    /// The packet from its IPv4 header through the INT block.
    pub packet: &'a [u8],
    /// The metadata asked for; bits this node cannot provide are cleared.
    pub rep_md_bits: u16,
    pub metadata: HopMetadata,
    /// The packet asked for a discard (D).
    pub dropped: bool,
}

pub struct Reporter21 {
    pub sender: ReportSender,
    pub limit: RateLimit,
    pub node_id: u32,
}

impl Reporter21 {
    /// Queues one report; counted as `kind` once queued.
    pub fn report(&mut self, subject: Subject<'_>, now_ns: u64, kind: Counter, counters: &mut Counters) {
        let Subject { packet, rep_md_bits, metadata, dropped } = subject;
        if !self.limit.allow(now_ns) {
            counters.inc(Counter::reports_suppressed);
            return;
        }
        let rep_md_bits = rep_md_bits & PROVIDED;
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type: InType::Ipv4,
            flags: ReportFlags { tracked_flow: true, dropped, ..ReportFlags::default() },
            int: Some(IntContents { rep_md_bits, metadata, ..IntContents::default() }),
            inner: packet,
            ..IndividualReport::default()
        };
        let group = GroupHeaderRepr { hw_id: 0, sequence: 0, node_id: self.node_id };
        let metadata_len = Instructions::from_bits_retain(rep_md_bits).words() * 4;
        let max_len = 8 + 4 + 8 + metadata_len + packet.len().next_multiple_of(4);
        let queued = self.sender.queue(max_len, |out| {
            let at = group.emit(out)?;
            Ok::<usize, int_core::EmitError>(at + report.emit(out.get_mut(at..).unwrap_or_default())?)
        });
        match queued {
            Ok(()) => counters.inc(kind),
            Err(QueueError::Full) => counters.inc(Counter::reports_ring_full),
            Err(QueueError::TooBig) => counters.inc(Counter::reports_too_big),
        }
    }
}
