//! The decapsulating node (RFC 9197 section 4): having read every slot
//! ([`super::sink`]), it gives back the packet as it came, removing
//! exactly what the encapsulating node added (a header of its own, or the
//! option and its padding; the Edge-to-Edge option alike). At a domain's
//! edge it strips a foreign trace of the namespace the same way.

use super::sink::{find, find_e2e, E2eFound, Found};
use crate::bytes::{byte, put_u8};
use crate::error::ParseError;
use crate::frame::FrameBuf;
use crate::locate::{self};
use crate::wire::ipv6::set_payload_len;
use crate::wire::ipv6::{HEADER_LEN as IPV6_LEN, MAX_EXTENSIONS};

/// Removes what the encapsulating node added: the trace, then the
/// Edge-to-Edge option (the headers before it moved once, over fewer
/// bytes); the bytes removed, as INT's `strip` says them. `None`, changing
/// nothing, if the frame is not the one `found` was read from.
pub fn strip(frame: &mut FrameBuf<'_>, found: &Found) -> Option<usize> {
    if frame.frame().len() < found.ip.end {
        return None;
    }
    let removed = found.trace_removed_len();
    let removed_at = found.hbh + found.hbh_len - removed;
    let next_header = byte(frame.frame(), found.hbh);
    if !frame.close_gap(removed_at, removed) {
        return None;
    }
    let out = frame.frame_mut();
    match found.whole {
        true => put_u8(out, found.ip.l3 + 6, next_header),
        false => put_u8(out, found.hbh + 1, ((found.hbh_len - removed) / 8 - 1) as u8),
    }
    set_payload_len(out, found.ip.l3, (found.ip.ip_len() - IPV6_LEN - found.removed_len()) as u16);
    let Some(e2e) = &found.e2e else { return Some(found.removed_len()) };
    // Where the option's header and the Next Header naming it lie now.
    let moved = |offset: usize| if offset >= removed_at + removed { offset - removed } else { offset };
    let chain_at = match found.whole && e2e.chain_at == found.hbh {
        true => found.ip.l3 + 6, // the removed header's Next Header went there
        false => moved(e2e.chain_at),
    };
    remove_e2e(frame, e2e, moved(e2e.doh), chain_at).then_some(found.removed_len())
}

/// Removes the Edge-to-Edge option `e2e` whose Destination Options header
/// now lies at `doh`, named by the Next Header at `chain_at`: the header,
/// or the option and its padding at its end. Payload Length is the
/// caller's.
fn remove_e2e(frame: &mut FrameBuf<'_>, e2e: &E2eFound, doh: usize, chain_at: usize) -> bool {
    let gap = e2e.removed_len();
    let next_header = byte(frame.frame(), doh);
    if !frame.close_gap(doh + e2e.doh_len - gap, gap) {
        return false;
    }
    let out = frame.frame_mut();
    match e2e.whole {
        true => put_u8(out, chain_at, next_header),
        false => put_u8(out, doh + 1, ((e2e.doh_len - gap) / 8 - 1) as u8),
    }
    true
}

/// The edge's `strip` policy: removes what came from outside the domain
/// in the namespace's name, as the decapsulating node would (the trace
/// with its Edge-to-Edge option, or such an option alone), until none is
/// left; whether anything was removed. Refused, changing nothing, where
/// the first lies or lies where no encapsulating node of ours puts it.
pub fn strip_foreign(frame: &mut FrameBuf<'_>, namespace: u16) -> Result<bool, ParseError> {
    let mut stripped = false;
    // Each round removes a header's worth: the walk's headers bound them.
    for _ in 0..=MAX_EXTENSIONS {
        // A lie found after something came out whole is still a lie: what
        // is left would be taken as ours (fuzz: a second Edge-to-Edge
        // option of the namespace, not where a node of ours puts one).
        match strip_once(frame, namespace) {
            Ok(true) => stripped = true,
            Ok(false) => return Ok(stripped),
            Err(error) => return Err(error),
        }
    }
    Ok(stripped)
}

/// One round of [`strip_foreign`].
fn strip_once(frame: &mut FrameBuf<'_>, namespace: u16) -> Result<bool, ParseError> {
    if let Some(found) = find(frame.frame(), namespace)? {
        return Ok(strip(frame, &found).is_some());
    }
    let Some(ip) = locate::ipv6(frame.frame())? else { return Ok(false) };
    let Some(e2e) = find_e2e(frame.frame(), &ip, namespace)? else { return Ok(false) };
    if !remove_e2e(frame, &e2e, e2e.doh, e2e.chain_at) {
        return Ok(false);
    }
    set_payload_len(frame.frame_mut(), ip.l3, (ip.ip_len() - IPV6_LEN - e2e.removed_len()) as u16);
    Ok(true)
}
