//! The Telemetry Report 2.0 reports of INT 2.1's stages and the IOAM and
//! IFA sinks: a group header with this node's id, then individual reports
//! of RepType 1 (INT), InType 4 or 5 (IPv4 or IPv6), F set, the metadata
//! this node provides, and the packet from its IP header through its
//! telemetry (INT block, IOAM trace, IFA stack) as inner contents. The
//! reports a burst (or a sweep step) makes are coalesced into one datagram,
//! up to [`DATAGRAM_MAX`] bytes, handed to the exporter at its end.
//! Rate-limited per report, never waited for.
//!
//! INT-MX (INT 2.1 section 5.9): every node that sees an MX packet reports
//! the metadata its bitmap asks for that a software node has, with
//! RepMdBits cleared of the rest: the node id rides in the group header
//! (bit 0), and queue, level 2 port, utilization and buffer metadata are
//! not known here. Reports of every MX packet go out, within the export
//! rate limit (counted `reports_suppressed` beyond it).

use int_core::hop_rule::HopRule;
use int_core::int21::{sink, HopMetadata, Instructions};
use int_core::report::tr20::{
    DropInfo, GroupHeaderRepr, InType, IndividualReport, IntContents, RepType, ReportFlags, DROP_BIT,
    DROP_INT_MALFORMED, GROUP_HEADER_LEN,
};
use int_core::report::tr20_loss::{self, LossReport};
use int_core::EmitError;

use crate::flow_table::FlowTable;
use crate::pipeline::export::{QueueError, ReportSender, REPORT_MAX};
use crate::pipeline::hop_figures::{BurstFigures, HopFigures};
use crate::pipeline::rate_limit::RateLimit;
use crate::pipeline::setup::SinkSetup;
use crate::pipeline::sink_core::{DeclaredLoss, SinkCore, SinkReports};
use crate::pipeline::sink_flow::LossReports;
use crate::stats::{Counter, Counters};

/// The metadata a software node provides: level 1 ports, hop latency,
/// ingress and egress timestamps.
pub const PROVIDED: u16 = 0x6c00;

/// The largest datagram reports are coalesced into: well inside a
/// 1500-byte MTU with the IPv4 and UDP headers.
pub const DATAGRAM_MAX: usize = if REPORT_MAX < 1400 { REPORT_MAX } else { 1400 };

/// What one report says: this node's metadata about a packet.
pub struct Subject<'a> {
    /// The packet from its IPv4 header through the INT block (InType 4),
    /// or, for a packet not read that far, its first bytes from the
    /// Ethernet header (InType 3).
    pub packet: &'a [u8],
    pub in_type: InType,
    /// The metadata asked for; bits this node cannot provide are cleared.
    pub rep_md_bits: u16,
    pub metadata: HopMetadata,
    /// This node dropped the packet (D, and RepMdBits bit 15 with the
    /// reason).
    pub drop: Option<DropInfo>,
}

/// The kinds of report, each counted once its datagram is queued.
const KINDS: [Counter; 8] = [
    Counter::reports_latency,
    Counter::reports_path_change,
    Counter::reports_hop_change,
    Counter::reports_queue,
    Counter::reports_mx,
    Counter::reports_xd,
    Counter::reports_loss,
    Counter::reports_drop,
];

/// The InType of a report whose inner contents start at the packet's IP
/// header: 4 for IPv4, 5 for IPv6.
pub fn in_type_of(version: int_core::locate::IpVersion) -> InType {
    match version {
        int_core::locate::IpVersion::V4 => InType::Ipv4,
        int_core::locate::IpVersion::V6 => InType::Ipv6,
    }
}

pub struct Reporter21 {
    sender: ReportSender,
    limit: RateLimit,
    node_id: u32,
    /// The datagram being filled: individual reports after room for the
    /// group header.
    datagram: Box<[u8; DATAGRAM_MAX]>,
    len: usize,
    /// Reports in it, by kind.
    pending: [u32; KINDS.len()],
}

impl Reporter21 {
    pub fn new(sender: ReportSender, limit: RateLimit, node_id: u32) -> Self {
        Reporter21 {
            sender,
            limit,
            node_id,
            datagram: Box::new([0; DATAGRAM_MAX]),
            len: GROUP_HEADER_LEN,
            pending: [0; KINDS.len()],
        }
    }

    /// Adds one report on a packet; counted as `kind` once queued.
    pub fn report(&mut self, subject: Subject<'_>, now_ns: u64, kind: Counter, counters: &mut Counters) {
        let Subject { packet, in_type, rep_md_bits, metadata, drop } = subject;
        if !self.limit.allow(now_ns) {
            counters.inc(Counter::reports_suppressed);
            return;
        }
        let drop_bit = if drop.is_some() { DROP_BIT } else { 0 };
        let rep_md_bits = (rep_md_bits & PROVIDED) | drop_bit;
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type,
            // A packet read no further than its first bytes is no tracked
            // flow's.
            flags: ReportFlags {
                tracked_flow: matches!(in_type, InType::Ipv4 | InType::Ipv6),
                dropped: drop.is_some(),
                ..ReportFlags::default()
            },
            int: Some(IntContents { rep_md_bits, metadata, drop, ..IntContents::default() }),
            inner: packet,
            ..IndividualReport::default()
        };
        let metadata_len = Instructions::from_bits_retain(rep_md_bits).words() * 4;
        let max_len = 4 + 8 + metadata_len + packet.len().next_multiple_of(4);
        self.add(max_len, |out| report.emit(out), kind, counters);
    }

    /// Adds an individual report of up to `max_len` bytes that `build`
    /// writes (the caller kept to the rate limit); counted as `kind` once
    /// queued.
    pub fn add(
        &mut self,
        max_len: usize,
        build: impl FnOnce(&mut [u8]) -> Result<usize, EmitError>,
        kind: Counter,
        counters: &mut Counters,
    ) {
        if GROUP_HEADER_LEN + max_len > DATAGRAM_MAX {
            counters.inc(Counter::reports_too_big);
            return;
        }
        if self.len + max_len > DATAGRAM_MAX {
            self.flush(counters);
        }
        let Some(room) = self.datagram.get_mut(self.len..) else { return };
        match build(room) {
            Ok(written) => {
                self.len += written;
                if let Some(count) =
                    KINDS.iter().position(|k| *k == kind).and_then(|i| self.pending.get_mut(i))
                {
                    *count += 1;
                }
            }
            Err(_) => counters.inc(Counter::reports_too_big),
        }
    }

    /// Hands the datagram, if it holds any report, to the exporter (which
    /// stamps the group header's sequence number).
    pub fn flush(&mut self, counters: &mut Counters) {
        let reports: u32 = self.pending.iter().sum();
        if reports == 0 {
            return;
        }
        let group = GroupHeaderRepr { hw_id: 0, sequence: 0, node_id: self.node_id };
        let (datagram, len) = (&mut self.datagram, self.len);
        if group.emit(datagram.as_mut_slice()).is_ok() {
            let queued = self.sender.queue(len, |out| {
                let slot = out.get_mut(..len).ok_or(())?;
                slot.copy_from_slice(datagram.get(..len).ok_or(())?);
                Ok::<usize, ()>(len)
            });
            match queued {
                Ok(()) => {
                    counters.inc(Counter::report_datagrams);
                    for (kind, count) in KINDS.iter().zip(self.pending) {
                        counters.add(*kind, u64::from(count));
                    }
                }
                Err(QueueError::Full) => counters.add(Counter::reports_ring_full, u64::from(reports)),
                Err(QueueError::TooBig) => counters.add(Counter::reports_too_big, u64::from(reports)),
            }
        }
        self.len = GROUP_HEADER_LEN;
        self.pending = [0; KINDS.len()];
    }

    /// The report ring itself, for a sink whose reports on packets take
    /// another form (the IFA terminator's IPFIX), under the same rate
    /// limit: `None` when it holds the report back (counted).
    pub fn ring(&mut self, now_ns: u64, counters: &mut Counters) -> Option<&mut ReportSender> {
        if !self.limit.allow(now_ns) {
            counters.inc(Counter::reports_suppressed);
            return None;
        }
        Some(&mut self.sender)
    }

    /// Reports per second (0: no limit).
    pub fn rate_limit(&self) -> u32 {
        self.limit.per_second()
    }

    /// A new rate limit (0: none, as at shutdown); the allowance starts
    /// full again.
    pub fn set_rate_limit(&mut self, per_second: u32) {
        self.limit = RateLimit::new(per_second);
    }
}

/// An INT-MX node's report on a packet that carries an MX header (INT-MD
/// packets are reported by the sink alone).
pub(crate) fn report_mx(
    reporter: &mut Reporter21,
    frame: &[u8],
    domain: &int_core::int21::Domain,
    hop: HopMetadata,
    now_ns: u64,
    counters: &mut Counters,
) {
    let Ok(Some(found)) = sink::extract(frame, domain, &HopRule::default()) else { return };
    if !found.is_mx {
        return;
    }
    let Some(packet) = frame.get(found.ip.l3..found.report_end()) else { return };
    // A D packet is discarded by the sink, not here.
    let rep_md_bits = found.instructions.bits();
    let in_type = in_type_of(found.ip.version);
    let subject = Subject { packet, in_type, rep_md_bits, metadata: hop, drop: None };
    reporter.report(subject, now_ns, Counter::reports_mx, counters);
}

/// The reports of a sink that speaks Telemetry Report 2.0 (INT 2.1's sink
/// and IOAM's and IFA's sinks): this node's metadata on the packets it
/// reports, drop reports on the packets it drops for their lying headers,
/// and the losses its sweep declares ([`int_core::report::tr20_loss`]).
pub struct SinkReporter21 {
    pub reporter: Reporter21,
    /// This node's hop latency, as a transit's (hop_figures.rs): from a
    /// packet's arrival to its burst's foretold departure.
    figures: HopFigures,
    burst: Option<BurstFigures>,
    /// The Domain Specific ID loss reports carry their figures under.
    domain_id: u16,
    /// This node's INT port (the sink's RX port), in its metadata.
    int_port: u16,
}

impl SinkReporter21 {
    pub fn new(reporter: Reporter21, domain_id: u16, int_port: u16) -> Self {
        SinkReporter21 { reporter, figures: HopFigures::new(None), burst: None, domain_id, int_port }
    }

    /// This node's report on a packet it received (`packet`: from its IP
    /// header through the telemetry) at `arrival_ns`, for `kind`: its port,
    /// its times and its hop latency (the packet leaves with its burst).
    pub fn on_packet(&mut self, packet: Packet<'_>, arrival_ns: u64, kind: Counter, counters: &mut Counters) {
        let egress_ns = self.burst.map_or(arrival_ns, |burst| burst.egress_ns.max(arrival_ns));
        let metadata = HopMetadata {
            l1_ingress_port: Some(self.int_port),
            l1_egress_port: Some(self.int_port),
            hop_latency: u32::try_from(egress_ns - arrival_ns).ok(),
            ingress_timestamp: Some(arrival_ns),
            egress_timestamp: Some(egress_ns),
            ..HopMetadata::default()
        };
        let now_ns = arrival_ns;
        let Packet { bytes, in_type, rep_md_bits, drop } = packet;
        let subject = Subject { packet: bytes, in_type, rep_md_bits, metadata, drop };
        self.reporter.report(subject, now_ns, kind, counters);
    }

    /// A drop report on a packet this sink drops for its lying headers
    /// (`malformed: drop`): D, the reason [`DROP_INT_MALFORMED`], the
    /// sink's ingress port and time, and the packet's first bytes from its
    /// Ethernet header (InType 3: how far its headers can be believed is
    /// not known).
    pub fn drop_report(&mut self, frame: &[u8], now_ns: u64, counters: &mut Counters) {
        // Its first bytes, or the whole packet if it is shorter.
        let packet = frame.get(..DROPPED_BYTES).unwrap_or(frame);
        let metadata = HopMetadata {
            l1_ingress_port: Some(self.int_port),
            ingress_timestamp: Some(now_ns),
            ..HopMetadata::default()
        };
        let drop = Some(DropInfo { queue_id: 0, reason: DROP_INT_MALFORMED });
        let subject =
            Subject { packet, in_type: InType::Ethernet, rep_md_bits: DROP_MD_BITS, metadata, drop };
        self.reporter.report(subject, now_ns, Counter::reports_drop, counters);
    }
}

/// A packet a TR 2.0 sink reports on, as [`SinkReporter21::on_packet`]
/// puts it in the report.
pub struct Packet<'a> {
    /// From its IP header through the telemetry.
    pub bytes: &'a [u8],
    pub in_type: InType,
    /// This node's metadata in the report.
    pub rep_md_bits: u16,
    /// The packet asked to be discarded (D, with the reason).
    pub drop: Option<DropInfo>,
}

/// The sink's metadata in a latency report: level 1 ports, ingress and
/// egress timestamps.
pub const LATENCY_MD_BITS: u16 = 0x4c00;
/// Its metadata in a drop report: level 1 ports (the egress one unknown,
/// all ones) and the ingress timestamp; bit 15 is added with the reason.
const DROP_MD_BITS: u16 = 0x4800;
/// Bytes of a dropped packet a drop report carries.
const DROPPED_BYTES: usize = 128;

impl SinkCore<SinkReporter21> {
    /// A TR 2.0 sink's core: a table that keeps IPv6 flows' addresses,
    /// loss reports under `domain_id`.
    pub fn tr20(setup: SinkSetup, domain_id: u16) -> Self {
        let SinkSetup { settings, hop, reports } = setup;
        let reporter = Reporter21::new(reports, RateLimit::new(settings.reports.rate_limit), hop.node_id);
        let reports = SinkReporter21::new(reporter, domain_id, hop.rx_int_port);
        let flows = FlowTable::with_ipv6_keys(settings.flow_capacity as usize);
        SinkCore::new(settings, hop.rx_timestamps, flows, reports)
    }

    /// A packet whose headers lie: counted, then dropped with a drop
    /// report or forwarded, by policy. Returns whether it goes on.
    pub fn malformed(
        &mut self,
        frame: &[u8],
        error: int_core::ParseError,
        now_ns: u64,
        counters: &mut Counters,
    ) -> bool {
        let keep = self.rules.malformed(error, counters);
        if !keep {
            self.reports.drop_report(frame, now_ns, counters);
        }
        keep
    }
}

impl LossReports for SinkReporter21 {
    fn has_room(&self) -> bool {
        self.reporter.sender.has_room()
    }
    fn allow(&mut self, now_ns: u64) -> bool {
        self.reporter.limit.allow(now_ns)
    }
}

impl SinkReports for SinkReporter21 {
    /// The hop rule's digest.
    const HOP_DIGESTS: bool = true;
    fn send_loss(&mut self, loss: &DeclaredLoss<'_>, counters: &mut Counters) {
        let DeclaredLoss { key, flow, pending, .. } = *loss;
        let report = LossReport {
            flow: *key,
            first_sequence: pending.first_sequence,
            count: pending.count,
            source_node: (flow.source_node != 0).then_some(flow.source_node),
            declared_ns: pending.first_declared_ns,
        };
        let domain_id = self.domain_id;
        let build = |out: &mut [u8]| report.emit(domain_id, out);
        self.reporter.add(tr20_loss::LEN, build, Counter::reports_loss, counters);
    }
    #[inline(always)]
    fn begin(&mut self, burst_ns: u64, packets: usize) {
        self.burst = Some(self.figures.burst(burst_ns, packets));
    }
    fn flush(&mut self, counters: &mut Counters) {
        self.reporter.flush(counters);
        if let Some(burst) = self.burst.take() {
            self.figures.done(&burst);
        }
    }
    fn rate_limit(&self) -> u32 {
        self.reporter.rate_limit()
    }
    fn set_rate_limit(&mut self, per_second: u32) {
        self.reporter.set_rate_limit(per_second);
    }
}
