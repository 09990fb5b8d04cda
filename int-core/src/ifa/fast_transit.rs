//! The IFA transit's fast path: a packet of the terminator's fast-path
//! shape ([`super::fast_sink::FastSink::find`]: no VLAN tags, no IPv4
//! options or IPv6 extension headers, UDP or TCP without options under
//! IFA) located at fixed offsets; the push is the general path's
//! ([`super::transit::push_found`]), the hop's IP TTL the packet's. Every
//! other frame, and a push the general path refuses, is left to
//! [`super::transit::push`], which gives the frames this path takes the
//! same bytes and outcome (`tests/fast_ifa.rs` holds the two together over
//! every one-byte change and cut of such frames).

use crate::frame::FrameBuf;

use super::fast_sink::FastSink;
use super::transit::{push_found, Outcome};
use super::{Domain, HopRepr, L4Rule};

/// The fast path of an IFA transit: no state between packets (IFA's hop
/// is one fixed layout, where INT 2.1's keeps a plan of its bitmap).
#[derive(Debug, Clone, Default)]
pub struct FastTransit;

impl FastTransit {
    /// Pushes `hop`, its IP TTL the packet's as it came
    /// ([`HopRepr::with_ttl`]), as [`super::transit::push`] would; `None`
    /// (frame unchanged) leaves the frame to the general path.
    #[inline(always)]
    pub fn push(
        &mut self,
        frame: &mut FrameBuf<'_>,
        domain: &Domain,
        max_ip_len: u16,
        hop: &HopRepr,
        rule: L4Rule,
    ) -> Option<Outcome> {
        let found = FastSink::find(frame.frame(), domain)?.found;
        let hop = hop.with_ttl(frame.frame(), &found.ip);
        push_found(frame, &found, max_ip_len, &hop, rule).ok()
    }
}
