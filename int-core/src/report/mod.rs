//! Telemetry reports: the Telemetry Report 0.5 headers and Host-INT's two
//! report kinds built on them (INT/IPv4 latency reports, NProto 4, and
//! Drop-Summary reports, NProto 3), and Telemetry Report 2.0 ([`tr20`]).
//! Builders write a UDP payload into a caller's buffer; [`parse`] reads
//! any of the 0.5 ones back, [`tr20::Report::parse`] the 2.0 ones.

pub mod drop_summary;
pub mod ifa_ipfix;
pub mod latency;
pub mod tr05;
pub mod tr05_flow;
pub mod tr20;
pub mod tr20_loss;

pub use drop_summary::{DropSummaryReport, DropSummaryRepr};
pub use latency::LatencyReport;
pub use tr05::{DropHeaderRepr, NextProto, ReportHeaderRepr, SwitchLocalRepr};

use zerocopy::FromBytes;

use crate::error::ParseError;

/// Host-INT's report destination port.
pub const DEFAULT_COLLECTOR_PORT: u16 = 32766;

/// The unit of the report header's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampUnit {
    /// Seconds since the epoch: what Host-INT writes.
    #[default]
    Seconds,
    /// Nanoseconds (low 32 bits): what Telemetry Report 0.5 specifies.
    Nanoseconds,
}

impl TimestampUnit {
    #[inline]
    pub fn from_ns(self, epoch_ns: u64) -> u32 {
        match self {
            TimestampUnit::Seconds => (epoch_ns / 1_000_000_000) as u32,
            TimestampUnit::Nanoseconds => epoch_ns as u32,
        }
    }
}

/// How reports are written: Host-INT's (NProto 4 latency and NProto 3
/// Drop-Summary reports, seconds, the sink id word after the header) or
/// plain Telemetry Report 0.5 ([`tr05_flow`]: NProto 2 flow reports,
/// nanoseconds, no loss reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportProfile {
    pub timestamp: TimestampUnit,
    pub sink_id_word: bool,
    pub hw_id: u8,
    pub form: ReportForm,
}

/// Which report kinds a profile sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportForm {
    /// Host-INT's NProto 4 and 3.
    HostInt,
    /// Telemetry Report 0.5's NProto 2.
    Tr05,
}

impl ReportProfile {
    pub const HOST_INT: ReportProfile = ReportProfile {
        timestamp: TimestampUnit::Seconds,
        sink_id_word: true,
        hw_id: 0,
        form: ReportForm::HostInt,
    };
    pub const TR05: ReportProfile = ReportProfile {
        timestamp: TimestampUnit::Nanoseconds,
        sink_id_word: false,
        hw_id: 0,
        form: ReportForm::Tr05,
    };
}

impl Default for ReportProfile {
    fn default() -> Self {
        ReportProfile::HOST_INT
    }
}

/// Whether a latency report carries the sink node id word after its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkIdWord {
    Present,
    Absent,
    /// Decide from the bytes: an IPv4 header (version 4, a plausible IHL and
    /// protocol) right after the report header means absent.
    Detect,
}

/// Any report this crate understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report<'a> {
    Latency(LatencyReport<'a>),
    DropSummary(DropSummaryReport),
    /// Telemetry Report 0.5 NProto 0, 1 or 2: optional drop or switch-local
    /// header, then the Ethernet frame.
    Tr05 {
        header: ReportHeaderRepr,
        drop: Option<DropHeaderRepr>,
        switch_local: Option<SwitchLocalRepr>,
        frame: &'a [u8],
    },
}

/// Parses a report (the UDP payload sent to a collector).
pub fn parse(payload: &[u8], sink_id: SinkIdWord) -> Result<Report<'_>, ParseError> {
    let header = ReportHeaderRepr::parse(payload)?;
    let rest = crate::bytes::after(payload, tr05::HEADER_LEN, crate::error::Layer::ReportHeader, 0)?;
    match header.next_proto {
        NextProto::Ipv4 => Ok(Report::Latency(LatencyReport::parse(payload, sink_id)?)),
        NextProto::DropSummary => Ok(Report::DropSummary(DropSummaryReport::parse(payload)?)),
        NextProto::Ethernet => {
            check_frame(rest, tr05::HEADER_LEN)?;
            Ok(Report::Tr05 { header, drop: None, switch_local: None, frame: rest })
        }
        NextProto::DropEthernet => {
            let drop = DropHeaderRepr::parse(rest).map_err(|e| e.shifted(tr05::HEADER_LEN))?;
            let frame = crate::bytes::after(rest, tr05::DROP_HEADER_LEN, crate::error::Layer::DropHeader, 0)
                .map_err(|e| e.shifted(tr05::HEADER_LEN))?;
            check_frame(frame, tr05::HEADER_LEN + tr05::DROP_HEADER_LEN)?;
            Ok(Report::Tr05 { header, drop: Some(drop), switch_local: None, frame })
        }
        NextProto::SwitchLocalEthernet => {
            let local = SwitchLocalRepr::parse(rest).map_err(|e| e.shifted(tr05::HEADER_LEN))?;
            let frame =
                crate::bytes::after(rest, tr05::SWITCH_LOCAL_LEN, crate::error::Layer::SwitchLocalHeader, 0)
                    .map_err(|e| e.shifted(tr05::HEADER_LEN))?;
            check_frame(frame, tr05::HEADER_LEN + tr05::SWITCH_LOCAL_LEN)?;
            Ok(Report::Tr05 { header, drop: None, switch_local: Some(local), frame })
        }
        NextProto::Unknown(value) => {
            Err(ParseError::UnknownType { layer: crate::error::Layer::ReportHeader, offset: 0, value })
        }
    }
}

/// The Ethernet frame a Telemetry Report 0.5 carries (at `offset` in the
/// report): a whole Ethernet header with an EtherType a switch reports
/// (IPv4, IPv6, 802.1Q, 802.1ad).
fn check_frame(frame: &[u8], offset: usize) -> Result<(), ParseError> {
    let (ethernet, _) = crate::wire::EthernetHeader::ref_from_prefix(frame).map_err(|_| {
        ParseError::truncated(crate::error::Layer::Ethernet, offset, 14, offset + frame.len())
    })?;
    let ethertype = ethernet.ethertype.get();
    if !matches!(ethertype, 0x0800 | 0x86dd | 0x8100 | 0x88a8) {
        return Err(ParseError::UnknownType {
            layer: crate::error::Layer::Ethernet,
            offset: offset + 12,
            value: (ethertype >> 8) as u8,
        });
    }
    Ok(())
}
