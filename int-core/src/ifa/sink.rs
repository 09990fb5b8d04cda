//! The IFA terminator: finds IFA ([`find`]) and removes every byte of it
//! ([`strip`]): the IFA header, the metadata header and the stack. The IP
//! protocol comes back from Next Header, the IP length and IPv4 checksum
//! follow, and the L4 header is given back what [`L4Rule`] says it counted:
//! under [`L4Rule::Cover`] its length and checksum lose the metadata
//! again; under [`L4Rule::Keep`] they are left as they came.

use crate::carrier;
use crate::checksum;
use crate::frame::FrameBuf;

use super::{covering, header, Domain, L4Rule, Located, Refused};

/// The IFA of a frame, checked: [`Domain::locate`], the sink's verb.
pub fn find(frame: &[u8], domain: &Domain) -> Result<Option<Located>, Refused> {
    domain.locate(frame)
}

/// The IFA of a packet a report carries from its IP header (a TR 2.0
/// report's InType 4 or 5, as int-node's terminator sends it: cut after
/// the stack), checked as [`find`] checks a frame's.
pub fn find_in_report(packet: &[u8], domain: &Domain) -> Result<Option<Located>, Refused> {
    match crate::locate::reported_ip(packet) {
        Ok(Some(ip)) => domain.locate_in(packet, ip),
        Ok(None) => Ok(None),
        Err(error) => Err(Refused { reason: super::Refusal::Packet, error }),
    }
}

/// Removes the IFA that `found` locates in `frame` (found on this frame as
/// it is); returns the bytes removed, `None` (the frame unchanged) if
/// `found` does not fit the frame.
pub fn strip(frame: &mut FrameBuf<'_>, found: &Located, rule: L4Rule) -> Option<usize> {
    let ip = found.ip;
    let removed = found.ifa_len();
    let in_order = found.header_at + header::HEADER_LEN == found.l4_at
        && found.l4_at <= found.md_at
        && found.md_at + header::HEADER_LEN == found.stack_at
        && found.stack_at <= found.payload_at
        && found.payload_at <= ip.end
        && ip.end <= frame.len()
        && ip.l3 <= found.header_at;
    if !in_order {
        return None;
    }
    let bytes = frame.frame_mut();
    if rule == L4Rule::Cover {
        if let Some((l4, old_len)) = covering(&found.carrier, found.l4_at, ip.end) {
            let metadata = checksum::sum(0, bytes.get(found.md_at..found.payload_at)?);
            let shrunk = (found.payload_at - found.md_at) as u16;
            l4.update(bytes, old_len, old_len.saturating_sub(shrunk), metadata, 0);
        }
    }
    // The L4 header moves over the IFA header; what lies between it and
    // the payload (the stale bytes and the metadata) is then one gap.
    bytes.copy_within(found.l4_at..found.md_at, found.header_at);
    let gap_at = found.md_at - header::HEADER_LEN;
    if !frame.close_gap(gap_at, removed) {
        return None;
    }
    carrier::rewrite_ip(
        frame.frame_mut(),
        &ip,
        ip.tos,
        ip.ip_len().saturating_sub(removed),
        found.header.next_header,
    );
    Some(removed)
}
