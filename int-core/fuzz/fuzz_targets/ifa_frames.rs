//! What the IFA fuzz targets share: plain frames built from fuzz bytes
//! (Ethernet with or without a VLAN tag, IPv4 with options or IPv6 with a
//! hop-by-hop header, TCP with options, UDP, or GRE with its optional
//! words), every length and checksum computed here, by code int-core does
//! not share, so that the roles are judged by an independent reckoning.

#![allow(dead_code)]

use int_core::ifa::HopRepr;

/// Reads fuzz bytes one at a time; zeros once they run out.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&first, rest)) => {
                self.data = rest;
                first
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    pub fn rest(&self) -> &'a [u8] {
        self.data
    }
}

/// The one's complement sum of `bytes` as 16-bit words, added to `acc`.
pub fn sum(acc: u64, bytes: &[u8]) -> u64 {
    bytes.chunks(2).fold(acc, |acc, pair| {
        let word = u16::from_be_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]);
        acc + u64::from(word)
    })
}

/// `acc` folded to 16 bits.
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum to write over `acc`.
pub fn checksum(acc: u64) -> u16 {
    !fold(acc)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Tcp,
    Udp,
    Gre,
}

impl L4 {
    pub fn protocol(self) -> u8 {
        match self {
            L4::Tcp => 6,
            L4::Udp => 17,
            L4::Gre => 47,
        }
    }
}

/// A plain packet's shape.
#[derive(Debug, Clone)]
pub struct Spec {
    pub v6: bool,
    pub vlan: bool,
    pub l4: L4,
    /// IPv4 option words, or (IPv6) a hop-by-hop header.
    pub ip_options: usize,
    /// TCP option words; GRE's C, K, S bits (low three bits).
    pub l4_options: usize,
    pub udp_zero_checksum: bool,
    /// A first fragment: IPv4 More Fragments, or IPv6's Fragment header
    /// (offset 0, M set) after any hop-by-hop header.
    pub fragment: bool,
    pub payload: Vec<u8>,
    /// Ethernet bytes after the IP packet.
    pub padding: usize,
    /// The IPv4 Identification, unless `zero_ip_checksum`.
    pub ident: u16,
    /// An Identification that makes the IPv4 header checksum 0x0000.
    pub zero_ip_checksum: bool,
    /// The payload's first word chosen to make the L4 checksum come out
    /// 0x0000 (UDP writes it 0xffff): the edge of one's complement.
    pub zero_l4_checksum: bool,
}

/// Where a built packet's parts lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub v6: bool,
    pub l3: usize,
    pub l4: usize,
    pub l4_len: usize,
    pub end: usize,
    pub protocol: u8,
}

impl Layout {
    pub fn ip_len(&self) -> usize {
        self.end - self.l3
    }

    /// The IP length field's value as the frame carries it.
    pub fn length_field(&self, frame: &[u8]) -> usize {
        let at = if self.v6 { self.l3 + 4 } else { self.l3 + 2 };
        usize::from(u16::from_be_bytes([frame[at], frame[at + 1]]))
    }

    /// The IP length field a packet ending at `end` carries.
    pub fn length_for(&self, end: usize) -> usize {
        if self.v6 {
            end - self.l3 - 40
        } else {
            end - self.l3
        }
    }

    /// Whether the IPv4 header checksum verifies (IPv6: none, true).
    pub fn ipv4_checksum_right(&self, frame: &[u8]) -> bool {
        self.v6 || fold(sum(0, &frame[self.l3..self.l4])) == 0xffff
    }

    /// The byte naming the upper layer.
    pub fn protocol_at(&self) -> usize {
        match (self.v6, self.l4 - self.l3) {
            (false, _) => self.l3 + 9,
            (true, 40) => self.l3 + 6,
            (true, _) => self.l3 + 40,
        }
    }

    /// Sets the IP length to end at `end` and fixes the IPv4 checksum.
    pub fn set_end(&self, frame: &mut [u8], end: usize) {
        let length = self.length_for(end) as u16;
        let at = if self.v6 { self.l3 + 4 } else { self.l3 + 2 };
        frame[at..at + 2].copy_from_slice(&length.to_be_bytes());
        if !self.v6 {
            frame[self.l3 + 10..self.l3 + 12].fill(0);
            let check = checksum(sum(0, &frame[self.l3..self.l4]));
            frame[self.l3 + 10..self.l3 + 12].copy_from_slice(&check.to_be_bytes());
        }
    }

    /// The sum of the L4 pseudo-header's addresses.
    pub fn addresses(&self, frame: &[u8]) -> u64 {
        match self.v6 {
            false => sum(0, &frame[self.l3 + 12..self.l3 + 20]),
            true => sum(0, &frame[self.l3 + 8..self.l3 + 40]),
        }
    }
}

/// Whether a TCP or UDP checksum over `segment` verifies with `protocol`
/// in the pseudo-header (a UDP checksum of 0 is none: true).
pub fn l4_checksum_right(addresses: u64, protocol: u8, segment: &[u8]) -> bool {
    if protocol == 17 && segment.get(6..8) == Some(&[0, 0]) {
        return true;
    }
    let pseudo = addresses + u64::from(protocol) + segment.len() as u64;
    fold(sum(pseudo, segment)) == 0xffff
}

impl Spec {
    /// A spec from fuzz bytes; `big` packets come near 65535 bytes of IP.
    pub fn read(bytes: &mut Bytes<'_>) -> Spec {
        let shape = bytes.byte();
        let options = bytes.byte();
        let size = bytes.u16();
        let (edges, ident) = (bytes.byte(), bytes.u16());
        let l4 = match shape & 3 {
            0 | 3 => L4::Udp,
            1 => L4::Tcp,
            _ => L4::Gre,
        };
        let mut spec = Spec {
            v6: shape & 4 != 0,
            vlan: shape & 8 != 0,
            l4,
            ip_options: usize::from(options & 0x0f) % 11,
            l4_options: usize::from(options >> 4) % 11,
            udp_zero_checksum: shape & 0x10 != 0,
            fragment: shape & 0xe0 == 0xe0,
            payload: Vec::new(),
            padding: usize::from(shape >> 6),
            ident,
            zero_ip_checksum: edges & 1 != 0,
            zero_l4_checksum: edges & 2 != 0,
        };
        let fill = bytes.rest();
        let len = if shape & 0x80 != 0 && shape & 0x40 == 0 {
            spec.max_payload().saturating_sub(usize::from(size & 0xff))
        } else {
            usize::from(size) % 1500
        };
        spec.payload =
            (0..len).map(|i| fill.get(i % fill.len().max(1)).copied().unwrap_or(i as u8)).collect();
        spec
    }

    fn ip_header_len(&self) -> usize {
        match (self.v6, self.ip_options) {
            (false, words) => 20 + 4 * words,
            (true, 0) => 40 + 8 * usize::from(self.fragment),
            (true, _) => 48 + 8 * usize::from(self.fragment),
        }
    }

    fn l4_header_len(&self) -> usize {
        match self.l4 {
            L4::Tcp => 20 + 4 * self.l4_options,
            L4::Udp => 8,
            L4::Gre => 4 + 4 * (self.l4_options & 7).count_ones() as usize,
        }
    }

    /// The most payload whose IP length field still fits 16 bits.
    fn max_payload(&self) -> usize {
        let counted = if self.v6 { self.ip_header_len() - 40 } else { self.ip_header_len() };
        65535 - counted - self.l4_header_len()
    }

    /// The frame and where its parts lie.
    pub fn build(&self) -> (Vec<u8>, Layout) {
        let mut segment = self.l4_header();
        segment.extend_from_slice(&self.payload);
        let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
        if self.vlan {
            frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        frame.extend_from_slice(if self.v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        let l3 = frame.len();
        frame.extend_from_slice(&self.ip_header(segment.len()));
        let l4 = frame.len();
        let protocol = self.l4.protocol();
        let layout =
            Layout { v6: self.v6, l3, l4, l4_len: self.l4_header_len(), end: l4 + segment.len(), protocol };
        let addresses = layout.addresses(&frame);
        let (at, skip) = match self.l4 {
            L4::Tcp => (16, false),
            L4::Udp => (6, self.udp_zero_checksum),
            L4::Gre => (4, self.l4_options & 4 == 0),
        };
        if !skip {
            let acc = match self.l4 {
                L4::Gre => 0,
                _ => addresses + u64::from(protocol) + segment.len() as u64,
            };
            let first = layout.l4_len;
            if self.zero_l4_checksum && segment.len() >= first + 2 {
                segment[first..first + 2].fill(0);
                let word = !fold(sum(acc, &segment));
                segment[first..first + 2].copy_from_slice(&word.to_be_bytes());
            }
            let check = match checksum(sum(acc, &segment)) {
                0 if self.l4 == L4::Udp => 0xffff,
                other => other,
            };
            segment[at..at + 2].copy_from_slice(&check.to_be_bytes());
        }
        frame.extend_from_slice(&segment);
        frame.extend((0..self.padding).map(|i| 0xa0 + i as u8));
        (frame, layout)
    }

    fn l4_header(&self) -> Vec<u8> {
        let len = self.l4_header_len();
        match self.l4 {
            L4::Tcp => {
                let mut tcp =
                    vec![0x30, 0x39, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, (len as u8 / 4) << 4, 0x18];
                tcp.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
                tcp.resize(len, 0x01);
                tcp
            }
            L4::Udp => {
                let udp_len = (8 + self.payload.len()) as u16;
                let mut udp = vec![0x30, 0x39, 0x12, 0xb5];
                udp.extend_from_slice(&udp_len.to_be_bytes());
                udp.extend_from_slice(&[0, 0]);
                udp
            }
            L4::Gre => {
                let bits = self.l4_options & 7;
                let flags = (if bits & 4 != 0 { 0x80 } else { 0 })
                    | (if bits & 2 != 0 { 0x20 } else { 0 })
                    | (if bits & 1 != 0 { 0x10 } else { 0 });
                let mut gre = vec![flags, 0, 0x65, 0x58];
                gre.resize(len, 0x5a);
                gre
            }
        }
    }

    fn ip_header(&self, segment_len: usize) -> Vec<u8> {
        let protocol = self.l4.protocol();
        let len = self.ip_header_len();
        if self.v6 {
            let hbh = self.ip_options > 0;
            let after_hbh = if self.fragment { 44 } else { protocol };
            let payload = (segment_len + len - 40) as u16;
            let mut ip = vec![0x60, 0x00, 0x00, 0x00];
            ip.extend_from_slice(&payload.to_be_bytes());
            ip.extend_from_slice(&[if hbh { 0 } else { after_hbh }, 64]);
            ip.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            ip.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            if hbh {
                ip.extend_from_slice(&[after_hbh, 0, 1, 4, 0, 0, 0, 0]);
            }
            if self.fragment {
                ip.extend_from_slice(&[protocol, 0, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78]);
            }
            return ip;
        }
        let total = (len + segment_len) as u16;
        let mut ip = vec![0x40 | (len / 4) as u8, 0x00];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&self.ident.to_be_bytes());
        ip.extend_from_slice(&[if self.fragment { 0x20 } else { 0x40 }, 0, 64, protocol, 0, 0]);
        ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        ip.resize(len, 0x01);
        if self.zero_ip_checksum {
            ip[4..6].fill(0);
            let ident = !fold(sum(0, &ip));
            ip[4..6].copy_from_slice(&ident.to_be_bytes());
        }
        let check = checksum(sum(0, &ip));
        ip[10..12].copy_from_slice(&check.to_be_bytes());
        ip
    }
}

/// The hop a node numbered `n` writes.
pub fn hop(n: u32) -> HopRepr {
    HopRepr {
        lns: 1,
        device_id: n + 1,
        ip_ttl: 64 - (n as u8 & 63),
        residence_ns: n * 100,
        opaque: [n, !n, 0x5a5a_5a5a],
        ..HopRepr::default()
    }
}

/// The 32 bytes `hop` writes.
pub fn hop_bytes(hop: &HopRepr) -> [u8; 32] {
    let mut out = [0; 32];
    hop.emit(&mut out).expect("a representable hop");
    out
}
