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
//!   20-byte IPv4 header (Total Length 28, TTL 0, the checksum right;
//!   InType 4) or a 40-byte IPv6 header (Payload Length 8, Hop Limit 0;
//!   InType 5), then the L4 header's first 8 bytes (its ports; for UDP a
//!   Length of 8 and no checksum, for TCP a sequence number of 0).

use core::net::{IpAddr, Ipv6Addr};

use crate::checksum;
use crate::error::EmitError;
use crate::flow::FlowKey;
use crate::hop::Hop;

use super::tr20::{InType, IndividualReport, IntContents, RepType, ReportFlags};

/// RepMdBits of a loss report: the ingress timestamp word.
pub const REP_MD_BITS: u16 = 0x0800;
/// DSMdBits of a loss report: first number, count, source node.
pub const DS_MD_BITS: u16 = 0xe000;
/// The inner packet of an IPv4 flow: an IPv4 header and 8 bytes of L4.
pub const INNER_LEN: usize = 28;
/// The inner packet of an IPv6 flow: an IPv6 header and 8 bytes of L4.
pub const INNER_LEN_V6: usize = 48;
/// An individual report's bytes for an IPv4 flow: header, main contents,
/// inner packet.
pub const LEN: usize = 4 + 8 + 8 + 12 + INNER_LEN;
/// The same for an IPv6 flow: the most a loss report takes.
pub const MAX_LEN: usize = 4 + 8 + 8 + 12 + INNER_LEN_V6;

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
        let (headers, inner_len) = flow_headers(&self.flow);
        let inner = headers.get(..inner_len).ok_or(EmitError::no_room(
            crate::error::Layer::IndividualReport,
            inner_len,
            headers.len(),
        ))?;
        let in_type = if inner_len == INNER_LEN { InType::Ipv4 } else { InType::Ipv6 };
        let report = IndividualReport {
            rep_type: RepType::Int,
            in_type,
            flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
            int: Some(IntContents {
                rep_md_bits: REP_MD_BITS,
                domain_id,
                ds_md_bits: DS_MD_BITS,
                ds_md_status: 0,
                metadata: Hop { ingress_timestamp: Some(self.declared_ns), ..Hop::default() },
                drop: None,
                ds_metadata: &ds,
            }),
            inner,
            ..IndividualReport::default()
        };
        report.emit(buf)
    }

    /// Reads a loss report of the domain with this Domain Specific ID;
    /// `None` for any other report, or one that strays from the rule.
    pub fn parse(report: &IndividualReport<'_>, domain_id: u16) -> Option<LossReport> {
        let int = report.int?;
        let shaped = report.rep_type == RepType::Int
            && matches!(report.in_type, InType::Ipv4 | InType::Ipv6)
            && int.rep_md_bits == REP_MD_BITS
            && int.domain_id == domain_id
            && domain_id != 0
            && int.ds_md_bits == DS_MD_BITS
            && int.ds_md_status == 0
            && int.ds_metadata.len() == 12;
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

/// The IP header and L4 header start that name `flow`, and their length:
/// IPv4 (28 bytes) or IPv6 (48).
pub fn flow_headers(flow: &FlowKey) -> ([u8; INNER_LEN_V6], usize) {
    let mut out = [0u8; INNER_LEN_V6];
    let l4 = match (flow.src, flow.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            out[0] = 0x45;
            out[3] = INNER_LEN as u8;
            out[9] = flow.protocol;
            out[12..16].copy_from_slice(&src.octets());
            out[16..20].copy_from_slice(&dst.octets());
            let sum = checksum::fold(checksum::sum(0, &out[..20]));
            out[10..12].copy_from_slice(&(!sum).to_be_bytes());
            20
        }
        (src, dst) => {
            out[0] = 0x60;
            out[5] = 8;
            out[6] = flow.protocol;
            out[8..24].copy_from_slice(&as_v6(src).octets());
            out[24..40].copy_from_slice(&as_v6(dst).octets());
            40
        }
    };
    let mut put = |at: usize, word: u16| {
        if let Some(slot) = out.get_mut(l4 + at..l4 + at + 2) {
            slot.copy_from_slice(&word.to_be_bytes());
        }
    };
    put(0, flow.src_port);
    put(2, flow.dst_port);
    if flow.protocol != crate::locate::PROTO_TCP {
        put(4, 8);
    }
    (out, l4 + 8)
}

/// An address as IPv6 (an IPv4 one mapped, RFC 4291 section 2.5.5.2).
fn as_v6(addr: IpAddr) -> Ipv6Addr {
    match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// The flow [`flow_headers`] wrote, if these are its bytes.
fn flow_of(inner: &[u8]) -> Option<FlowKey> {
    let word = |at: usize| Some(u16::from_be_bytes(inner.get(at..at + 2)?.try_into().ok()?));
    let flow = match inner.first()? >> 4 {
        4 => FlowKey::v4(
            <[u8; 4]>::try_from(inner.get(12..16)?).ok()?.into(),
            <[u8; 4]>::try_from(inner.get(16..20)?).ok()?.into(),
            *inner.get(9)?,
            word(20)?,
            word(22)?,
        ),
        6 => FlowKey {
            src: IpAddr::V6(<[u8; 16]>::try_from(inner.get(8..24)?).ok()?.into()),
            dst: IpAddr::V6(<[u8; 16]>::try_from(inner.get(24..40)?).ok()?.into()),
            protocol: *inner.get(6)?,
            src_port: word(40)?,
            dst_port: word(42)?,
        },
        _ => return None,
    };
    let (headers, len) = flow_headers(&flow);
    (headers.get(..len)? == inner).then_some(flow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tr20::{GroupHeaderRepr, Report};

    fn sample() -> LossReport {
        LossReport {
            flow: FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 4000, 5000),
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
    fn an_ipv6_flow_is_named_by_an_ipv6_header() {
        let flow = FlowKey {
            src: IpAddr::V6("2001:db8::1".parse().unwrap()),
            dst: IpAddr::V6("2001:db8::2".parse().unwrap()),
            protocol: 6,
            src_port: 4000,
            dst_port: 5000,
        };
        let report = LossReport { flow, ..sample() };
        let mut out = [0u8; MAX_LEN];
        assert_eq!(report.emit(0x4944, &mut out), Ok(MAX_LEN));
        assert_eq!(out[0], 0x15, "RepType 1, InType 5");
        assert_eq!(out[32..40], [0x60, 0, 0, 0, 0, 8, 6, 0], "version 6, Payload Length 8, TCP");
        let (parsed, _) = IndividualReport::parse(&out, 0).unwrap();
        assert_eq!(LossReport::parse(&parsed, 0x4944), Some(report));
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
            EmitError::no_room(crate::error::Layer::IndividualReport, LEN, 10),
            sample().emit(1, &mut [0; 10]).unwrap_err()
        );
    }
}
