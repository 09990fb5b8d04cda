//! The IFA initiator's fast path: a fast-path frame ([`FastFrame`]:
//! Ethernet without VLAN tags, IPv4 without options and not fragmented or
//! IPv6 without extension headers, UDP whose Length agrees with the IP
//! length or TCP without options) needs no walk: its [`Plan`] is read off
//! the fixed offsets [`FastFrame::read`] checked, and the insert is the
//! general path's ([`super::source::insert`], a few straight copies). Any
//! other frame (GRE, options, a fragment, past the MTU) is left to
//! [`super::source::plan`], which gives the frames this path takes the
//! same plan (`tests/fast_ifa.rs` holds the two together over every
//! one-byte change and cut of such frames).

use crate::fast::{FastFrame, L3_AT, L4_AT, L4_AT_V6};
use crate::frame::FrameBuf;
use crate::locate::{Fragment, IpLocation, IpVersion, PROTO_TCP, PROTO_UDP};

use super::source::{insert, Plan, Settings, INSERTED_LEN};
use super::{hop, Carrier, Domain, HopRepr};

/// What an initiator writes, checked once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSource {
    domain: Domain,
    settings: Settings,
    max_ip_len: u16,
}

impl FastSource {
    /// The fast path of an initiator of `domain` writing `settings`, no IP
    /// packet past `max_ip_len`; `None` where the general path must decide
    /// every packet (IFA announced by TCP's or UDP's own number, which a
    /// fast-path frame carries; a Max Length too small for a hop).
    pub fn of(domain: &Domain, settings: &Settings, max_ip_len: u16) -> Option<FastSource> {
        let fits = usize::from(settings.max_length) * 4 >= hop::HOP_LEN;
        let own = !matches!(domain.protocol, PROTO_TCP | PROTO_UDP);
        (fits && own).then_some(FastSource { domain: *domain, settings: *settings, max_ip_len })
    }

    /// Whether this path instruments the frame: within the MTU with IFA's
    /// bytes. For any other frame the general path decides, and counts why.
    #[inline(always)]
    pub fn takes(&self, frame: &FastFrame) -> bool {
        frame.ip_len() + INSERTED_LEN <= usize::from(self.max_ip_len)
    }

    /// The general path's plan for a frame [`FastSource::takes`], read off
    /// its fixed offsets.
    #[inline(always)]
    pub fn plan(&self, frame: &FastFrame) -> Plan {
        let (version, l4, next_header_at) = if frame.is_ipv6() {
            (IpVersion::V6, L4_AT_V6, L3_AT + 6)
        } else {
            (IpVersion::V4, L4_AT, L3_AT + 9)
        };
        let protocol = frame.flow.protocol();
        let ip = IpLocation {
            version,
            l3: L3_AT,
            l4,
            end: frame.end(),
            protocol,
            tos: frame.tos,
            fragment: Fragment::Whole,
            next_header_at,
        };
        let (src_port, dst_port) = ((frame.flow.rest >> 16) as u16, frame.flow.dst_port());
        let carrier = match protocol {
            PROTO_UDP => Carrier::Udp { src_port, dst_port, length: frame.carrier_len },
            _ => Carrier::Tcp { src_port, dst_port },
        };
        Plan { ip, carrier, l4_len: frame.payload_at() - l4 }
    }

    /// Inserts IFA with `hop` first, its IP TTL the packet's as it came
    /// ([`HopRepr::with_ttl`]), into a frame [`FastSource::takes`] (`parts`
    /// read from it). False (frame unchanged) when the headroom is too
    /// small.
    #[inline(always)]
    pub fn insert(&self, frame: &mut FrameBuf<'_>, parts: &FastFrame, hop: &HopRepr) -> bool {
        let plan = self.plan(parts);
        let hop = hop.with_ttl(frame.frame(), &plan.ip);
        insert(frame, &plan, &self.domain, &self.settings, &hop).is_ok()
    }
}
