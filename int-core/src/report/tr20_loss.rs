//! int-node's loss report in Telemetry Report 2.0. TR 2.0 reports what a
//! node saw or dropped; packets lost between a source and a sink were seen
//! by nobody, so the text has no report for them. A sink of an INT 2.1
//! domain that numbers packets (source-only metadata, see
//! [`crate::int21::source_only`]) reports the losses it declared with this
//! rule:
//!
//! - one individual report, RepType 1 (INT), InType 4 (IPv4), F set (a
//!   tracked flow), D clear (this node dropped nothing);
//! - RepMdBits bit 4 only: the ingress timestamp word holds when the first
//!   of the losses was declared (8 bytes, epoch ns); the sink's node id is
//!   in the group header;
//! - domain specific metadata under the domain's Domain Specific ID,
//!   DSMdBits 0xE000, DSMdStatus 0: bit 0 the first packet number lost,
//!   bit 1 how many were lost from it on, bit 2 the source's node id
//!   (all ones when unknown), 4 bytes each;
//! - the inner packet names the flow as the flow's own packets would: a
//!   20-byte IPv4 header (Total Length 28, TTL 0, the checksum right) and
//!   the L4 header's first 8 bytes (its ports; for UDP a Length of 8 and no
//!   checksum, for TCP a sequence number of 0).

use crate::checksum;
use crate::error::EmitError;
use crate::flow::FlowKey;
use crate::int21::HopMetadata;

use super::tr20::{InType, IndividualReport, IntContents, RepType, ReportFlags};

/// RepMdBits of a loss report: the ingress timestamp word.
pub const REP_MD_BITS: u16 = 0x0800;
/// DSMdBits of a loss report: first number, count, source node.
pub const DS_MD_BITS: u16 = 0xe000;
/// The inner packet: an IPv4 header and 8 bytes of L4 header.
pub const INNER_LEN: usize = 28;
/// An individual report's bytes: header, main contents, inner packet.
pub const LEN: usize = 4 + 8 + 8 + 12 + INNER_LEN;

/// Losses a sink declared on one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossReport {
    pub flow: FlowKey,
    pub first_sequence: u32,
    pub count: u32,
    pub source_node: Option<u32>,
    /// When the first of them was declared (epoch ns).
    pub declared_ns: u64,
}

impl LossReport {
    /// Writes the individual report (no group header); returns its length.
    pub fn emit(&self, domain_id: u16, buf: &mut [u8]) -> Result<usize, EmitError> {
        let mut ds = [0u8; 12];
        let words = [self.first_sequence, self.count, self.source_node.unwrap_or(u32::MAX)];
        for (slot, word) in ds.chunks_exact_mut(4).zip(words) {
            slot.copy_from_slice(&word.to_be_bytes());
        }
        let inner = flow_headers(&self.flow);
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type: InType::Ipv4,
            flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
            int: Some(IntContents {
                rep_md_bits: REP_MD_BITS,
                domain_id,
                ds_md_bits: DS_MD_BITS,
                ds_md_status: 0,
                metadata: HopMetadata { ingress_timestamp: Some(self.declared_ns), ..HopMetadata::default() },
                drop: None,
                ds_metadata: &ds,
            }),
            inner: &inner,
            ..IndividualReport::default()
        };
        let len = report.emit(buf)?;
        debug_assert_eq!(len, LEN);
        Ok(len)
    }

    /// Reads a loss report of the domain with this Domain Specific ID;
    /// `None` for any other report, or one that strays from the rule.
    pub fn parse(report: &IndividualReport<'_>, domain_id: u16) -> Option<LossReport> {
        let int = report.int?;
        let shaped = report.rep_type == RepType::Int
            && report.in_type == InType::Ipv4
            && int.rep_md_bits == REP_MD_BITS
            && int.domain_id == domain_id
            && domain_id != 0
            && int.ds_md_bits == DS_MD_BITS
            && int.ds_md_status == 0
            && int.ds_metadata.len() == 12
            && report.inner.len() == INNER_LEN;
        if !shaped {
            return None;
        }
        let word = |i: usize| {
            int.ds_metadata
                .get(i * 4..i * 4 + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_be_bytes)
        };
        let flow = flow_of(report.inner)?;
        Some(LossReport {
            flow,
            first_sequence: word(0),
            count: word(1),
            source_node: Some(word(2)).filter(|&node| node != u32::MAX),
            declared_ns: int.metadata.ingress_timestamp?,
        })
    }
}

/// The IPv4 header and L4 header start that name `flow`.
pub fn flow_headers(flow: &FlowKey) -> [u8; INNER_LEN] {
    let mut out = [0u8; INNER_LEN];
    out[0] = 0x45;
    out[3] = INNER_LEN as u8;
    out[9] = flow.protocol;
    out[12..16].copy_from_slice(&flow.src.octets());
    out[16..20].copy_from_slice(&flow.dst.octets());
    let sum = checksum::fold(checksum::sum(0, &out[..20]));
    out[10..12].copy_from_slice(&(!sum).to_be_bytes());
    out[20..22].copy_from_slice(&flow.src_port.to_be_bytes());
    out[22..24].copy_from_slice(&flow.dst_port.to_be_bytes());
    if flow.protocol != crate::locate::PROTO_TCP {
        out[24..26].copy_from_slice(&8u16.to_be_bytes());
    }
    out
}

/// The flow [`flow_headers`] wrote, if these are its bytes.
fn flow_of(inner: &[u8]) -> Option<FlowKey> {
    let flow = FlowKey {
        src: <[u8; 4]>::try_from(inner.get(12..16)?).ok()?.into(),
        dst: <[u8; 4]>::try_from(inner.get(16..20)?).ok()?.into(),
        protocol: *inner.get(9)?,
        src_port: u16::from_be_bytes(inner.get(20..22)?.try_into().ok()?),
        dst_port: u16::from_be_bytes(inner.get(22..24)?.try_into().ok()?),
    };
    (flow_headers(&flow)[..] == *inner).then_some(flow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Layer;
    use crate::report::tr20::{GroupHeaderRepr, Report};

    fn sample() -> LossReport {
        LossReport {
            flow: FlowKey {
                src: [10, 0, 0, 1].into(),
                dst: [10, 0, 0, 2].into(),
                protocol: 17,
                src_port: 4000,
                dst_port: 5000,
            },
            first_sequence: 10,
            count: 3,
            source_node: Some(7),
            declared_ns: 0x0123_4567_89ab_cdef,
        }
    }

    /// The bytes, written out by hand from the rule above.
    #[test]
    fn golden() {
        let mut out = [0u8; LEN];
        assert_eq!(sample().emit(0x4944, &mut out), Ok(LEN));
        let expected: [u8; LEN] = [
            0x14, 0x0e, 0x05,
            0x20, // RepType 1, InType 4, ReportLen 14 (after this word), MD Length 5, F
            0x08, 0x00, 0x49, 0x44, 0xe0, 0x00, 0x00, 0x00, // RepMdBits, DS ID, DSMdBits, DSMdStatus
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, // declared at
            0, 0, 0, 10, 0, 0, 0, 3, 0, 0, 0, 7, // first lost, count, source node
            0x45, 0, 0, 28, 0, 0, 0, 0, 0, 17, 0xa6, 0xcf, 10, 0, 0, 1, 10, 0, 0, 2, // IPv4
            0x0f, 0xa0, 0x13, 0x88, 0, 8, 0, 0, // UDP
        ];
        assert_eq!(out, expected);
        assert_eq!(checksum::fold(checksum::sum(0, &out[32..52])), 0xffff, "the IPv4 checksum verifies");
    }

    #[test]
    fn round_trip_in_a_datagram() {
        let mut datagram = [0u8; 8 + LEN];
        let group = GroupHeaderRepr { hw_id: 0, sequence: 5, node_id: 2 };
        let at = group.emit(&mut datagram).unwrap();
        sample().emit(0x4944, &mut datagram[at..]).unwrap();
        let report = Report::parse(&datagram).unwrap();
        let individual = report.reports().next().unwrap().unwrap();
        assert_eq!(LossReport::parse(&individual, 0x4944), Some(sample()));
        assert_eq!(LossReport::parse(&individual, 0x4945), None, "another domain's metadata");
        let unknown = LossReport { source_node: None, ..sample() };
        unknown.emit(0x4944, &mut datagram[at..]).unwrap();
        let individual = Report::parse(&datagram).unwrap().reports().next().unwrap().unwrap();
        assert_eq!(LossReport::parse(&individual, 0x4944), Some(unknown));
    }

    #[test]
    fn strays_from_the_rule_are_not_loss_reports() {
        let mut out = [0u8; LEN];
        sample().emit(0x4944, &mut out).unwrap();
        for (at, value) in [(1, 0x0d), (4, 0x0c), (8, 0xc0), (11, 1), (33, 1), (42, 0), (45, 7)] {
            let mut changed = out;
            changed[at] = value;
            let parsed = IndividualReport::parse(&changed, 0).map(|(r, _)| LossReport::parse(&r, 0x4944));
            assert!(!matches!(parsed, Ok(Some(_))), "byte {at}");
        }
        assert_eq!(
            EmitError::no_room(Layer::IndividualReport, LEN, 10),
            sample().emit(1, &mut [0; 10]).unwrap_err()
        );
    }
}
