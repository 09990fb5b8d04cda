#![allow(clippy::indexing_slicing)]
//! Builds well-formed Ethernet/IPv4|IPv6/TCP|UDP frames with correct
//! checksums: for `int-tools gen`, the benches and the tests. Not used on
//! the packet path (it allocates).

use core::net::{Ipv4Addr, Ipv6Addr};

use crate::checksum;
use crate::wire::{EtherType, EthernetRepr, IpProtocol, Ipv4Repr, Ipv6Repr, TcpRepr, UdpRepr};

/// What makes a [`PacketSpec`] an IPv6 packet: its addresses and the
/// extension headers in front of the L4 header (each a Next Header value
/// and its bytes, whose first byte the builder sets to the next one's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Spec {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub flow_label: u32,
    pub extensions: Vec<(u8, Vec<u8>)>,
}

impl Ipv6Spec {
    fn extensions_len(&self) -> usize {
        self.extensions.iter().map(|(_, bytes)| bytes.len()).sum()
    }
}

/// Options-header bytes (Hop-by-Hop or Destination Options) of
/// `(units + 1) * 8` bytes: a PadN option over the rest.
pub fn ipv6_options(units: u8) -> Vec<u8> {
    let mut bytes = vec![0u8; (usize::from(units) + 1) * 8];
    bytes[1] = units;
    bytes[2] = 1;
    bytes[3] = (bytes.len() - 4) as u8;
    bytes
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4Spec {
    Udp {
        src_port: u16,
        dst_port: u16,
        /// Send a checksum of 0 ("none"), as some senders do.
        zero_checksum: bool,
    },
    Tcp {
        src_port: u16,
        dst_port: u16,
        seq: u32,
        /// TCP option bytes (a multiple of 4, at most 40).
        options: Vec<u8>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub vlan: Option<u16>,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub tos: u8,
    pub ttl: u8,
    pub ident: u16,
    /// IPv4 option bytes (a multiple of 4, at most 40).
    pub ip_options: Vec<u8>,
    /// Set: an IPv6 packet (`src`, `dst`, `ident` and `ip_options` are
    /// unused; `tos` is the Traffic Class, `ttl` the Hop Limit).
    pub ipv6: Option<Ipv6Spec>,
    pub l4: L4Spec,
    pub payload: Vec<u8>,
}

impl PacketSpec {
    pub fn udp(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, payload_len: usize) -> Self {
        PacketSpec {
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            vlan: None,
            src,
            dst,
            tos: 0,
            ttl: 64,
            ident: 1,
            ip_options: Vec::new(),
            ipv6: None,
            l4: L4Spec::Udp { src_port, dst_port, zero_checksum: false },
            payload: (0..payload_len).map(|i| i as u8).collect(),
        }
    }

    pub fn tcp(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, payload_len: usize) -> Self {
        PacketSpec {
            l4: L4Spec::Tcp { src_port, dst_port, seq: 1, options: Vec::new() },
            ..PacketSpec::udp(src, dst, src_port, dst_port, payload_len)
        }
    }

    /// An IPv6 UDP packet.
    pub fn udp6(src: Ipv6Addr, dst: Ipv6Addr, src_port: u16, dst_port: u16, payload_len: usize) -> Self {
        let ipv6 = Ipv6Spec { src, dst, flow_label: 0, extensions: Vec::new() };
        PacketSpec {
            ipv6: Some(ipv6),
            ..PacketSpec::udp(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, src_port, dst_port, payload_len)
        }
    }

    /// An IPv6 TCP packet.
    pub fn tcp6(src: Ipv6Addr, dst: Ipv6Addr, src_port: u16, dst_port: u16, payload_len: usize) -> Self {
        PacketSpec {
            l4: L4Spec::Tcp { src_port, dst_port, seq: 1, options: Vec::new() },
            ..PacketSpec::udp6(src, dst, src_port, dst_port, payload_len)
        }
    }

    fn l4_header_len(&self) -> usize {
        match &self.l4 {
            L4Spec::Udp { .. } => 8,
            L4Spec::Tcp { options, .. } => 20 + options.len(),
        }
    }

    /// Frame length (without Ethernet padding).
    pub fn frame_len(&self) -> usize {
        14 + if self.vlan.is_some() { 4 } else { 0 }
            + self.ip_header_len()
            + self.l4_header_len()
            + self.payload.len()
    }

    fn ip_header_len(&self) -> usize {
        match &self.ipv6 {
            Some(v6) => 40 + v6.extensions_len(),
            None => 20 + self.ip_options.len().min(40),
        }
    }

    /// The frame, padded to the Ethernet minimum of 60 bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut frame = vec![0u8; self.frame_len().max(60)];
        let ethernet = EthernetRepr {
            dst: self.dst_mac,
            src: self.src_mac,
            vlans: [self.vlan.map(|tci| (0x8100, tci)), None],
            ethertype: if self.ipv6.is_some() { EtherType::Ipv6 } else { EtherType::Ipv4 },
        };
        let l3 = ethernet.emit(&mut frame).unwrap_or(14);
        let l4_len = self.l4_header_len() + self.payload.len();
        let protocol = match self.l4 {
            L4Spec::Udp { .. } => IpProtocol::Udp,
            L4Spec::Tcp { .. } => IpProtocol::Tcp,
        };
        let (l4, pseudo) = match &self.ipv6 {
            Some(v6) => self.emit_ipv6(&mut frame[l3..], v6, u8::from(protocol), l4_len),
            None => self.emit_ipv4(&mut frame[l3..], protocol, l4_len),
        };
        let l4 = l3 + l4;
        let payload_at = l4 + self.l4_header_len();
        frame[payload_at..payload_at + self.payload.len()].copy_from_slice(&self.payload);
        match &self.l4 {
            L4Spec::Udp { src_port, dst_port, zero_checksum } => {
                let udp =
                    UdpRepr { src_port: *src_port, dst_port: *dst_port, length: l4_len as u16, checksum: 0 };
                let _ = udp.emit(&mut frame[l4..]);
                if !zero_checksum {
                    let sum = match !checksum::fold(checksum::sum(pseudo, &frame[l4..l4 + l4_len])) {
                        0 => 0xffff,
                        value => value,
                    };
                    frame[l4 + 6..l4 + 8].copy_from_slice(&sum.to_be_bytes());
                }
            }
            L4Spec::Tcp { src_port, dst_port, seq, options } => {
                let mut option_bytes = [0u8; 40];
                let n = options.len().min(40);
                option_bytes[..n].copy_from_slice(&options[..n]);
                let tcp = TcpRepr {
                    src_port: *src_port,
                    dst_port: *dst_port,
                    seq: *seq,
                    ack: 0,
                    flags: 0x018,
                    window: 0xffff,
                    checksum: 0,
                    urgent: 0,
                    options: option_bytes,
                    options_len: n as u8,
                };
                let _ = tcp.emit(&mut frame[l4..]);
                let sum = !checksum::fold(checksum::sum(pseudo, &frame[l4..l4 + l4_len]));
                frame[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
            }
        }
        frame
    }

    /// The IPv4 header; returns its length and the pseudo-header's sum.
    fn emit_ipv4(&self, out: &mut [u8], protocol: IpProtocol, l4_len: usize) -> (usize, u32) {
        let mut options = [0u8; 40];
        let options_len = self.ip_options.len().min(40);
        options[..options_len].copy_from_slice(&self.ip_options[..options_len]);
        let ip = Ipv4Repr {
            tos: self.tos,
            total_len: (20 + options_len + l4_len) as u16,
            ident: self.ident,
            flags_frag: 0x4000,
            ttl: self.ttl,
            protocol,
            checksum: 0,
            src: self.src,
            dst: self.dst,
            options,
            options_len: options_len as u8,
        };
        let len = ip.emit(out, true).unwrap_or(20);
        (len, checksum::pseudo_header_sum(self.src, self.dst, u8::from(protocol), l4_len as u16))
    }

    /// The IPv6 header and its extension headers; returns their length
    /// and the pseudo-header's sum (RFC 8200 section 8.1).
    fn emit_ipv6(&self, out: &mut [u8], v6: &Ipv6Spec, protocol: u8, l4_len: usize) -> (usize, u32) {
        let header = Ipv6Repr {
            traffic_class: self.tos,
            flow_label: v6.flow_label,
            payload_len: (v6.extensions_len() + l4_len) as u16,
            next_header: v6.extensions.first().map_or(protocol, |(kind, _)| *kind),
            hop_limit: self.ttl,
            src: v6.src,
            dst: v6.dst,
        };
        let mut at = header.emit(out).unwrap_or(40);
        for (i, (_, bytes)) in v6.extensions.iter().enumerate() {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            out[at] = v6.extensions.get(i + 1).map_or(protocol, |(kind, _)| *kind);
            at += bytes.len();
        }
        let addresses = checksum::sum(checksum::sum(0, &v6.src.octets()), &v6.dst.octets());
        (at, addresses + u32::from(protocol) + l4_len as u32)
    }
}
