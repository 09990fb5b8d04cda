//! The walk to IFA's parts: every carrier, and every lying length and
//! refused flag by its own reason.

use super::*;
use crate::craft::PacketSpec;

const MD: [u8; 4] = [238, 0xc0, 126, 16];

/// scapy's `tri_md` and `src_md` (pull request 4235, `test/contrib/ifa.uts`).
fn hops() -> Vec<u8> {
    let mut out = vec![0; 64];
    let tri = HopRepr {
        lns: 1,
        device_id: 2850,
        ip_ttl: 63,
        egress_port_speed: PortSpeed::G100,
        egress_system_port: 25,
        ingress_system_port: 24,
        ..HopRepr::default()
    };
    let src = HopRepr { lns: 0, device_id: 2577, egress_port_speed: PortSpeed::G10, ..tri };
    tri.emit(&mut out[..32]).unwrap();
    src.emit(&mut out[32..]).unwrap();
    out
}

/// `base` with IFA put in by hand: the IFA header after IP (its protocol
/// copied into Next Header), `md` and `stack` after the `l4_len` bytes of
/// L4 header, the IP length grown (the checksum is not the walk's concern).
fn with_ifa(base: &[u8], ifa_flags: u8, l4_len: usize, md: [u8; 4], stack: &[u8]) -> Vec<u8> {
    let ip = locate::ip(base).unwrap().unwrap();
    let mut out = base[..ip.l4].to_vec();
    out.extend_from_slice(&[0x2f, ip.protocol, ifa_flags, 0xff]);
    out.extend_from_slice(&base[ip.l4..ip.l4 + l4_len]);
    out.extend_from_slice(&md);
    out.extend_from_slice(stack);
    out.extend_from_slice(&base[ip.l4 + l4_len..]);
    out[ip.next_header_at] = DEFAULT_PROTOCOL;
    let grown = 8 + stack.len();
    let at = if ip.version == locate::IpVersion::V4 { ip.l3 + 2 } else { ip.l3 + 4 };
    let len = u16::from_be_bytes([out[at], out[at + 1]]) + grown as u16;
    out[at..at + 2].copy_from_slice(&len.to_be_bytes());
    out
}

fn udp4(dst_port: u16) -> Vec<u8> {
    PacketSpec::udp([198, 1, 1, 7].into(), [198, 1, 2, 8].into(), 1100, dst_port, 64).build()
}

fn tcp6() -> Vec<u8> {
    PacketSpec::tcp6("1000::7".parse().unwrap(), "1000::8".parse().unwrap(), 3300, 4400, 64).build()
}

/// An IPv4 packet whose 'UDP' payload is rewritten into GRE with a key.
fn gre4() -> Vec<u8> {
    let mut base = udp4(9);
    let ip = locate::ip(&base).unwrap().unwrap();
    base[ip.next_header_at] = gre::IP_PROTOCOL;
    base[ip.l4..ip.l4 + 8].copy_from_slice(&[0x20, 0x00, 0x86, 0xdd, 0, 0, 0, 7]);
    base
}

fn located(frame: &[u8]) -> Located {
    Domain::default().locate(frame).unwrap().unwrap()
}

#[test]
fn udp_over_ipv4_gives_every_offset_and_field() {
    let frame = with_ifa(&udp4(2200), 0x04, 8, MD, &hops());
    let found = located(&frame);
    assert_eq!(
        (found.header_at, found.l4_at, found.md_at, found.stack_at, found.payload_at),
        (34, 38, 46, 50, 114)
    );
    assert_eq!(
        found.header,
        IfaHeaderRepr { next_header: 17, flags: Flags::INBAND, ..IfaHeaderRepr::default() }
    );
    assert_eq!(found.carrier, Carrier::Udp { src_port: 1100, dst_port: 2200, length: 72 });
    assert_eq!(found.carrier.payload(), Payload::Data);
    assert_eq!(found.md, MdHeaderRepr::parse(&MD).unwrap());
    assert_eq!((found.hop_count(), found.ifa_len()), (2, 72));
    let devices: Vec<_> = found.stack(&frame).hops().map(|h| (h.lns, h.device_id)).collect();
    assert_eq!(devices, [(1, 2850), (0, 2577)]);
    assert_eq!(found.stack(&frame).hop_count(), 2);
}

#[test]
fn tcp_over_ipv6_and_the_tunnel_carriers() {
    let frame = with_ifa(&tcp6(), 0x04, 20, MD, &hops());
    let found = located(&frame);
    assert_eq!((found.header_at, found.md_at, found.payload_at), (54, 78, 146));
    assert_eq!(found.carrier, Carrier::Tcp { src_port: 3300, dst_port: 4400 });
    for (port, payload) in
        [(PORT_VXLAN, Payload::Vxlan), (PORT_VXLAN_GPE, Payload::VxlanGpe), (PORT_GENEVE, Payload::Geneve)]
    {
        assert_eq!(located(&with_ifa(&udp4(port), 0x04, 8, MD, &hops())).carrier.payload(), payload);
    }
}

#[test]
fn an_ipv4_flows_words_name_its_key_and_an_ipv6_flow_has_none() {
    let tcp4 = PacketSpec::tcp([10, 0, 0, 1].into(), [10, 9, 0, 2].into(), 7, 80, 64).build();
    for (frame, l4_len) in [(udp4(2200), 8), (tcp4, 20), (gre4(), 8)] {
        let frame = with_ifa(&frame, 0x04, l4_len, MD, &hops());
        let found = located(&frame);
        let (words, key) = (found.flow_words(&frame).unwrap(), found.flow(&frame));
        assert_eq!(words.key_v4(), Some(key));
        assert_eq!((words.hash64(), words.phase()), (key.hash64(), key.phase()));
    }
    let frame = with_ifa(&tcp6(), 0x04, 20, MD, &hops());
    assert_eq!(located(&frame).flow_words(&frame), None);
}

#[test]
fn gre_carries_the_stack_after_its_optional_words() {
    let found = located(&with_ifa(&gre4(), 0x04, 8, MD, &hops()));
    assert_eq!(found.header.next_header, 47);
    assert_eq!(
        found.carrier,
        Carrier::Gre(GreRepr { key: Some(7), protocol: gre::PROTOCOL_IPV6, ..GreRepr::default() })
    );
    assert_eq!((found.md_at, found.carrier.payload()), (46, Payload::Ipv6));
}

#[test]
fn other_protocols_and_later_fragments_are_not_ifa() {
    assert_eq!(Domain::default().locate(&udp4(2200)), Ok(None));
    let frame = with_ifa(&udp4(2200), 0x04, 8, MD, &hops());
    assert_eq!(Domain { protocol: 131 }.locate(&frame), Ok(None));
    let mut later = frame.clone();
    later[20] = 0x00;
    later[21] = 0x10;
    assert_eq!(Domain::default().locate(&later), Ok(None));
    assert_eq!(Domain::default().locate(&[0; 10]).unwrap_err().reason, Refusal::Packet);
}

fn refusal(frame: &[u8]) -> Refused {
    Domain::default().locate(frame).unwrap_err()
}

#[test]
fn versions_name_spaces_and_unread_flags_are_refused_each_by_its_reason() {
    let frame = with_ifa(&udp4(2200), 0x04, 8, MD, &hops());
    let at = 34;
    let changed = |offset: usize, value: u8| {
        let mut f = frame.clone();
        f[offset] = value;
        f
    };
    let unknown = |offset, value| ParseError::UnknownType { layer: Layer::IfaHeader, offset, value };
    let version = ParseError::UnknownVersion { layer: Layer::IfaHeader, offset: at, value: 3 };
    assert_eq!(refusal(&changed(at, 0x3f)), Refused { reason: Refusal::Version, error: version });
    assert_eq!(
        refusal(&changed(at, 0x21)),
        Refused { reason: Refusal::GlobalNameSpace, error: unknown(at, 1) }
    );
    for (flags, reason, bit) in [
        (0x14, Refusal::MetadataFragment, 0x10),
        (0x0c, Refusal::TailStamp, 0x08),
        (0x05, Refusal::ChecksumHeader, 0x01),
        (0x1d, Refusal::MetadataFragment, 0x10),
    ] {
        assert_eq!(refusal(&changed(at + 2, flags)), Refused { reason, error: unknown(at + 2, bit) });
    }
    // Turn-around and a probe (I clear) are read.
    assert_eq!(located(&changed(at + 2, 0x02)).header.flags, Flags::TURN_AROUND);
    assert_eq!(
        refusal(&changed(at + 1, 1)),
        Refused { reason: Refusal::NextHeader, error: unknown(at + 1, 1) }
    );
}

#[test]
fn lying_current_lengths_are_refused_each_by_its_reason() {
    let md_at = 46;
    let length = |layer, value| ParseError::BadLength { layer, offset: md_at + 3, value };
    let frame = with_ifa(&udp4(2200), 0x04, 8, [0, 0, 1, 12], &hops());
    assert_eq!(
        refusal(&frame),
        Refused { reason: Refusal::LengthNotHops, error: length(Layer::IfaStack, 12) }
    );
    let mut past_max = with_ifa(&udp4(2200), 0x04, 8, MD, &hops());
    past_max[34 + 3] = 15;
    let error = length(Layer::IfaMetadataHeader, 16);
    assert_eq!(refusal(&past_max), Refused { reason: Refusal::LengthPastMax, error });
    // Four hops announced, two present and 64 bytes of payload: 128 needed, 128 there.
    assert!(Domain::default().locate(&with_ifa(&udp4(2200), 0x04, 8, [0, 0, 1, 32], &hops())).is_ok());
    let past_packet = with_ifa(&udp4(2200), 0x04, 8, [0, 0, 1, 40], &hops());
    let error =
        ParseError::Truncated { layer: Layer::IfaStack, offset: md_at + 4, needed: 160, available: 128 };
    assert_eq!(refusal(&past_packet), Refused { reason: Refusal::StackPastPacket, error });
}

#[test]
fn lying_l4_headers_under_ifa_are_refused() {
    let mut frame = with_ifa(&tcp6(), 0x04, 20, MD, &hops());
    frame[58 + 12] = 0x40;
    let error = ParseError::BadLength { layer: Layer::Tcp, offset: 70, value: 16 };
    assert_eq!(refusal(&frame), Refused { reason: Refusal::L4, error });
    let mut base = udp4(9);
    base[23] = gre::IP_PROTOCOL;
    base[34..38].copy_from_slice(&[0x00, 0x01, 0x08, 0x00]);
    assert_eq!(refusal(&with_ifa(&base, 0x04, 8, MD, &hops())).reason, Refusal::L4);
}

/// Every cut of IFA frames over UDP, TCP and GRE: refused, never a panic;
/// cut before the stack's end, by truncation of the part cut.
#[test]
fn every_cut_is_refused_by_a_counted_reason() {
    let mut gre_base = udp4(9);
    gre_base[23] = gre::IP_PROTOCOL;
    gre_base[34..42].copy_from_slice(&[0x20, 0x00, 0x65, 0x58, 0, 0, 0, 0]);
    for frame in [
        with_ifa(&udp4(2200), 0x04, 8, MD, &hops()),
        with_ifa(&tcp6(), 0x04, 20, MD, &hops()),
        with_ifa(&gre_base, 0x04, 8, MD, &hops()),
    ] {
        let found = located(&frame);
        for len in 0..frame.len() {
            let cut = &frame[..len];
            // The IP length now lies: the packet's fault.
            assert_eq!(Domain::default().locate(cut).map_err(|r| r.reason), Err(Refusal::Packet), "{len}");
        }
        // IP lengths that agree with each cut: the part cut is named.
        for end in found.header_at..found.payload_at {
            let mut shortened = frame[..end].to_vec();
            set_ip_end(&mut shortened, &found.ip, end);
            let refused = refusal(&shortened);
            let expected = if end >= found.stack_at { Refusal::StackPastPacket } else { Refusal::Truncated };
            assert_eq!(refused.reason, expected, "cut at {end}: {refused:?}");
        }
    }
}

fn set_ip_end(frame: &mut [u8], ip: &IpLocation, end: usize) {
    let (at, len) = match ip.version {
        locate::IpVersion::V4 => (ip.l3 + 2, end - ip.l3),
        locate::IpVersion::V6 => (ip.l3 + 4, end - ip.l3 - 40),
    };
    frame[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
}

#[test]
fn every_refusal_has_a_distinct_name() {
    let mut names: Vec<_> = Refusal::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Refusal::ALL.len());
}

/// A report's copy, from the IP header and cut after the stack as
/// int-node's terminator cuts it, is found as the frame's IFA is, shifted
/// by the Ethernet header; a copy cut inside the stack is refused by its
/// reason; a copy of a packet that is not IFA is no IFA.
#[test]
fn a_reports_copy_cut_after_the_stack_is_found_as_the_frame_is() {
    for (frame, l3) in
        [(with_ifa(&udp4(2200), 0x04, 8, MD, &hops()), 14), (with_ifa(&tcp6(), 0, 20, MD, &hops()), 14)]
    {
        let whole = located(&frame);
        let copy = &frame[l3..whole.report_end()];
        let found = sink::find_in_report(copy, &Domain::default()).unwrap().unwrap();
        assert_eq!((found.ip.l3, found.ip.end), (0, copy.len()));
        assert_eq!(
            (found.header_at, found.md_at, found.payload_at),
            (whole.header_at - l3, whole.md_at - l3, whole.payload_at - l3)
        );
        assert_eq!((found.header, found.carrier, found.md), (whole.header, whole.carrier, whole.md));
        assert_eq!(found.flow(copy), whole.flow(&frame));
        let hops: Vec<_> = found.stack(copy).hops().collect();
        assert_eq!(hops, whole.stack(&frame).hops().collect::<Vec<_>>());
        let cut = &copy[..copy.len() - 1];
        assert_eq!(
            sink::find_in_report(cut, &Domain::default()).unwrap_err().reason,
            Refusal::StackPastPacket
        );
    }
    assert_eq!(sink::find_in_report(&udp4(2200)[14..], &Domain::default()), Ok(None));
    assert_eq!(sink::find_in_report(&[0x45, 0, 0], &Domain::default()).unwrap_err().reason, Refusal::Packet);
    assert_eq!(sink::find_in_report(&[], &Domain::default()), Ok(None));
}
