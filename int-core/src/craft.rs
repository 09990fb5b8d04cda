#![allow(clippy::indexing_slicing)]
//! Builds well-formed Ethernet/IPv4/TCP|UDP frames with correct checksums:
//! for `int-tools gen`, the benches and the tests. Not used on the packet
//! path (it allocates).

use core::net::Ipv4Addr;

use crate::checksum;
use crate::wire::{EtherType, EthernetRepr, IpProtocol, Ipv4Repr, TcpRepr, UdpRepr};

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

    fn l4_header_len(&self) -> usize {
        match &self.l4 {
            L4Spec::Udp { .. } => 8,
            L4Spec::Tcp { options, .. } => 20 + options.len(),
        }
    }

    /// Frame length (without Ethernet padding).
    pub fn frame_len(&self) -> usize {
        14 + if self.vlan.is_some() { 4 } else { 0 }
            + 20
            + self.ip_options.len()
            + self.l4_header_len()
            + self.payload.len()
    }

    /// The frame, padded to the Ethernet minimum of 60 bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut frame = vec![0u8; self.frame_len().max(60)];
        let ethernet = EthernetRepr {
            dst: self.dst_mac,
            src: self.src_mac,
            vlans: [self.vlan.map(|tci| (0x8100, tci)), None],
            ethertype: EtherType::Ipv4,
        };
        let l3 = ethernet.emit(&mut frame).unwrap_or(14);
        let l4_len = self.l4_header_len() + self.payload.len();
        let protocol = match self.l4 {
            L4Spec::Udp { .. } => IpProtocol::Udp,
            L4Spec::Tcp { .. } => IpProtocol::Tcp,
        };
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
        let l4 = l3 + ip.emit(&mut frame[l3..], true).unwrap_or(20);
        let payload_at = l4 + self.l4_header_len();
        frame[payload_at..payload_at + self.payload.len()].copy_from_slice(&self.payload);
        let pseudo = checksum::pseudo_header_sum(self.src, self.dst, u8::from(protocol), l4_len as u16);
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
}
